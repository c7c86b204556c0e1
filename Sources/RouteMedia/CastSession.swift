// CastSession: plays a queue on one device and takes commands while it plays — gapless where the device can,
// with a deadline for starting, a set time for pictures, and items prepared only as the queue reaches them.

import Foundation
import RouteCore

/// What a cast is doing: which item of how many, and the device's latest status.
public struct CastStatus: Sendable, Hashable {
    public var device: MediaDevice
    /// Index of the current item in the queue.
    public var index: Int
    public var count: Int
    public var title: String
    public var playback: PlaybackStatus
}

/// Plays items one after another on a device, reports status, and accepts transport commands.
///
/// `run()` returns when the queue has played to its end or `stop()` was called, and throws when the
/// device fails an item, cannot be reached, or does not start an item in time. Commands may be sent
/// from any task while it runs. Items are prepared (probed, offered) only when the queue reaches them:
/// the first plays without waiting for the rest.
public actor CastSession {
    /// Makes the item at an index of the queue loadable (a file URI, or a URL on our server).
    public typealias Preparer = @Sendable (Int) async throws -> MediaItem

    /// How the session paces the queue.
    public struct Options: Sendable {
        /// How long an item may take from being loaded to playing before the cast fails, saying what the
        /// device reported meanwhile.
        public var startTimeout: Duration
        /// How long a picture stays on the device before the queue moves on (devices never end them).
        public var imageDuration: Duration
        /// Hears about an item that could not be prepared and was skipped (after the first item has
        /// been prepared: a first item that fails ends the cast before anything plays).
        public var onSkip: @Sendable (_ index: Int, _ title: String, _ error: any Error) -> Void
        /// What the device has done with a served item (nil when route does not serve it): a device that
        /// says it plays but has not asked for the item within `fetchDeadline`, or asked for one route
        /// could not serve, ends the cast with a line that says so.
        public var access: @Sendable (MediaItem) -> MediaAccess?
        public var fetchDeadline: Duration

        /// Options; by default 20 s to start, 5 s a picture, 6 s to fetch.
        public init(startTimeout: Duration = .seconds(20), imageDuration: Duration = .seconds(5),
                    fetchDeadline: Duration = .seconds(6),
                    access: @escaping @Sendable (MediaItem) -> MediaAccess? = { _ in nil },
                    onSkip: @escaping @Sendable (Int, String, any Error) -> Void = { _, _, _ in }) {
            self.startTimeout = startTimeout
            self.imageDuration = imageDuration
            self.fetchDeadline = fetchDeadline
            self.access = access
            self.onSkip = onSkip
        }
    }

    public nonisolated let controller: any RouteController
    private let titles: [String]
    private let options: Options
    private let prepare: Preparer
    private let updates = Broadcast<CastStatus>()
    private var index = 0
    private var skipping = false
    private var stopping = false
    private var latest: PlaybackStatus = PlaybackStatus(state: .idle)
    /// The item playing now, as loaded (before any seek reload).
    private var current: MediaItem?
    /// Where the loaded stream starts in the item: non-zero after a converted stream was reloaded to seek.
    private var offset = 0.0
    /// The URL last loaded on the device (the item's, or the item's from an offset after a seek reload).
    private var loadedURL: String?
    /// The next item, queued on the device to follow without a gap.
    private var queued: MediaItem?
    private var triedQueueing = false
    /// When the current URL was loaded, and whether it has played (or paused) since.
    private var loadedAt = ContinuousClock.now
    private var started = false
    /// Since when the current picture has been shown (it first played).
    private var shownSince: ContinuousClock.Instant?
    private var finished = false
    private var errors: [(index: Int, error: any Error)] = []

    /// Makes a session over items with these titles (shown until an item is prepared); nothing is sent
    /// to the device until `run()`.
    public init(controller: any RouteController, titles: [String], options: Options = Options(), prepare: @escaping Preparer) {
        self.controller = controller
        self.titles = titles
        self.options = options
        self.prepare = prepare
    }

    /// Status after every change, starting with the latest.
    public nonisolated func statusUpdates() -> AsyncStream<CastStatus> { updates.subscribe() }

    /// The latest status of the current item.
    public var playback: PlaybackStatus { latest }

    /// The items that were skipped because they could not be prepared, and why.
    public var skipped: [(index: Int, error: any Error)] { errors }

    private enum Event: Sendable {
        case status(PlaybackStatus)
        case statusEnded
        case tick
    }

    /// Plays the queue to its end. Throws `RouteError` when an item fails.
    ///
    /// Once an item plays, the next one is queued on the device when it can play it without a gap
    /// (`setNext`); otherwise, or if the device stops anyway, the next item is loaded at the end.
    public func run() async throws {
        defer { updates.finish() }
        guard !titles.isEmpty, !stopping else { return }
        let (events, sink) = AsyncStream<Event>.makeStream()
        let statuses = controller.statusUpdates()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await status in statuses { sink.yield(.status(status)) }
                sink.yield(.statusEnded)
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    sink.yield(.tick)
                }
            }
            defer { group.cancelAll() }
            try await self.play(events)
        }
    }

    private func play(_ events: AsyncStream<Event>) async throws {
        guard let first = try await preparedItem(from: 0, failFast: true) else { return }
        try await start(first)
        for await event in events {
            switch event {
            case .tick: try await tick()
            case .status(let reported): try await handle(reported)
            case .statusEnded:
                guard !finished else { return }
                throw RouteError.playbackFailed(device: controller.device.name, item: title,
                                                reason: "the connection to the device ended without a final state")
            }
            if finished { return }
        }
    }

    /// The title of the current item.
    private var title: String { current?.title ?? titles[min(index, titles.count - 1)] }

    /// Prepares the first item from `start` on that can be prepared, skipping (and reporting) the others;
    /// nil when none is left. With `failFast`, the first failure is thrown instead.
    private func preparedItem(from start: Int, failFast: Bool = false) async throws -> MediaItem? {
        var next = start
        while next < titles.count {
            do {
                let item = try await prepare(next)
                index = next
                return item
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if failFast { throw error }
                errors.append((next, error))
                options.onSkip(next, titles[next], error)
                next += 1
            }
        }
        index = titles.count
        return nil
    }

    private func handle(_ reported: PlaybackStatus) async throws {
        guard let item = current else { return }
        // Reports from before the load (idle: nothing loaded), or about something else the device
        // played before, are not about this queue.
        if reported.state == .idle { return }
        if let url = reported.itemURL, url != loadedURL, url != queued?.url { return }
        if let next = queued, reported.itemURL == next.url {
            // The device moved on to the queued item by itself.
            index += 1
            current = next
            loadedURL = next.url
            offset = 0
            queued = nil
            triedQueueing = false
            loadedAt = .now
            shownSince = nil
        }
        let status = mapped(reported, for: current ?? item)
        latest = status
        if status.state == .playing || status.state == .paused { started = true }
        if status.state == .playing, isImage, shownSince == nil { shownSince = .now }
        updates.send(CastStatus(device: controller.device, index: index, count: titles.count, title: title, playback: status))
        if status.state == .failed {
            throw RouteError.playbackFailed(device: controller.device.name, item: title, reason: status.error ?? "playback failed")
        }
        if status.state == .playing, !triedQueueing, !skipping, !stopping, index + 1 < titles.count,
           !isImage {
            // Best effort: if the next item cannot be prepared or queued now, it is loaded (and any error
            // reported) when the current one ends; the current one plays on.
            triedQueueing = true
            if let next = try? await prepare(index + 1), (try? await controller.setNext(next)) == true {
                queued = next
            }
        }
        guard status.isFinal else { return }
        // A picture that ends by itself (this computer shows one frame) still stays for its time.
        if isImage, status.state == .ended, !skipping, !stopping, let since = shownSince,
           ContinuousClock.now - since < options.imageDuration { return }
        try await advance()
    }

    private var isImage: Bool { current?.kind.contains(.image) ?? false }

    /// The current item is over: on to the next one (the queued one, if any), or the end.
    private func advance() async throws {
        guard !stopping, index + 1 < titles.count else {
            finished = true
            return
        }
        let next: MediaItem
        if let ready = queued {
            // Queued on the device, which stopped anyway: load it.
            next = ready
            index += 1
        } else if let prepared = try await preparedItem(from: index + 1) {
            next = prepared
        } else {
            finished = true
            return
        }
        queued = nil
        triedQueueing = false
        try await start(next)
    }

    /// Four times a second: the deadline for starting, whether the device fetched what it says it plays,
    /// and how long a picture has been shown.
    private func tick() async throws {
        let now = ContinuousClock.now
        guard let item = current, !stopping else { return }
        var loaded = item
        loaded.url = loadedURL ?? item.url
        if let access = options.access(loaded) {
            if let problem = access.problem {
                throw RouteError.playbackFailed(device: controller.device.name, item: title,
                                                reason: "\(controller.device.name) could not fetch it: \(problem)")
            }
            if access.requests == 0, latest.state == .playing, now - loadedAt > options.fetchDeadline {
                let seconds = Int(options.fetchDeadline.components.seconds)
                throw RouteError.playbackFailed(device: controller.device.name, item: title, reason:
                    "\(controller.device.name) says it is playing, but in \(seconds) s it has not fetched anything from route "
                    + "(served at \(access.servedFrom)); check that no firewall here blocks that port and that the device "
                    + "can reach this address (ROUTE_UPNP_INTERFACE picks the interface)")
            }
        }
        if !started, now - loadedAt > options.startTimeout {
            let seconds = Int(options.startTimeout.components.seconds)
            let reported = latest.deviceState.map { "it reported \($0)" } ?? "it reported nothing"
            throw RouteError.playbackFailed(device: controller.device.name, item: title,
                                            reason: "it did not start playing within \(seconds) s; \(reported)")
        }
        guard isImage, let since = shownSince, now - since >= options.imageDuration else { return }
        if index + 1 < titles.count {
            try await advance()
        } else {
            // The last picture has been shown: the queue is done, and the device is left at rest.
            finished = true
            try? await controller.stop()
        }
    }

    /// Loads an item and makes it the current one.
    private func start(_ item: MediaItem) async throws {
        current = item
        loadedURL = item.url
        offset = 0
        skipping = false
        started = false
        shownSince = nil
        loadedAt = .now
        try await controller.load(item, autoplay: true)
    }

    /// A device's status as the session reports it: after a seek reload of a converted stream, the
    /// position counts from the item's start and the duration is the whole item's.
    private func mapped(_ reported: PlaybackStatus, for item: MediaItem) -> PlaybackStatus {
        guard offset > 0 else { return reported }
        var status = reported
        status.position += offset
        if let duration = item.duration { status.duration = duration }
        return status
    }

    /// Pauses when playing, plays when paused.
    public func togglePause() async throws {
        if latest.state == .playing || latest.state == .loading { try await controller.pause() } else { try await controller.play() }
    }

    public func play() async throws { try await controller.play() }
    public func pause() async throws { try await controller.pause() }

    /// Seeks within the current item (absolute or relative to the reported position). A converted
    /// stream is reloaded from the new position, since devices cannot seek in it by bytes.
    public func seek(_ target: SeekTarget) async throws {
        let position = target.resolved(from: latest.position, duration: latest.duration)
        guard let current, current.isConverted else {
            try await controller.seek(to: position)
            return
        }
        let resume = latest.state != .paused
        let reload = position > 0 ? current.starting(at: position) : current
        // The device's reports are about the reloaded URL from now on, even if starting it fails: the
        // session must follow them (a stop must still end the cast).
        offset = position
        loadedURL = reload.url
        loadedAt = .now
        started = false
        try await controller.load(reload, autoplay: resume)
    }

    /// Sets the volume (0…1).
    public func setVolume(_ level: Double) async throws {
        try await controller.setVolume(min(1, max(0, level)))
    }

    /// Mutes or unmutes.
    public func setMuted(_ muted: Bool) async throws {
        try await controller.setMuted(muted)
    }

    /// Mutes when unmuted, unmutes when muted.
    public func toggleMute() async throws {
        try await setMuted(!(latest.muted ?? false))
    }

    /// Changes the volume by a step (±0.05 for the arrow keys).
    public func changeVolume(by step: Double) async throws {
        try await setVolume((latest.volume ?? 1) + step)
    }

    /// Skips to the next item (ends the session after the last one).
    public func next() async throws {
        skipping = true
        try await controller.stop()
    }

    /// Stops playback and ends `run()`.
    public func stop() async throws {
        stopping = true
        try await controller.stop()
    }
}
