// QueueSession: plays a queue on one device and takes commands while it plays — each item over the route
// that plays it best, gapless where the device can, with a deadline for starting, a set time for pictures,
// and items prepared only as the queue reaches them. No GStreamer here: an app with its own pipeline uses it.

import FoundationEssentials
import Glibc

/// Plays items one after another on a device, reports status, and accepts transport commands.
///
/// `run()` returns when the queue has played to its end or `stop()` was called, and throws when the
/// device fails an item, cannot be reached, or does not start an item in time. Commands may be sent
/// from any task while it runs. Items are prepared (probed, offered) only when the queue reaches them:
/// the first plays without waiting for the rest. Each prepared item names the route it goes over; the
/// session opens that route's controller (and runs its `run()`) while items go over it, and moves to
/// another route when an item needs one.
public actor QueueSession {
    /// An item made loadable, and the route it goes over.
    public struct Prepared: Sendable {
        public var route: MediaRoute
        public var item: MediaItem
        public init(route: MediaRoute, item: MediaItem) {
            self.route = route
            self.item = item
        }
    }
    /// Makes the item at an index of the queue loadable (a file URI, or a URL on our server) over a route.
    public typealias Preparer = @Sendable (Int) async throws -> Prepared
    /// Opens a controller for a route (the router's `controller(for:)`).
    public typealias Opener = @Sendable (MediaRoute) async throws -> any RouteController

    /// The device the queue plays on.
    public nonisolated let device: MediaDevice
    private let titles: [String]
    private let options: Options
    private let prepare: Preparer
    private let open: Opener
    /// The controller of the route playing now.
    private var controller: (any RouteController)?
    private let updates = Broadcast<QueueStatus>()
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
    /// The next item, prepared ahead (for another route, or one the device could not queue).
    private var ahead: Prepared?
    /// The next item, to be played over another route: the session moves there now.
    private var handoff: Prepared?
    private var triedQueueing = false
    /// When the current URL was loaded, and whether it has played (or paused) since.
    private var loadedAt = ContinuousClock.now
    private var started = false
    /// Since when the current picture has been shown (it first played).
    private var shownSince: ContinuousClock.Instant?
    /// For an item the device fetches from elsewhere: when it first said it plays, how many statuses it has sent
    /// since, and whether its position has moved — a device that cannot fetch a URL may say it plays at 0:00 forever.
    private var playingSince: ContinuousClock.Instant?
    private var reportsWhilePlaying = 0
    private var progressed = false
    /// The URL sent once more because the device stalled on it (fetched, PLAYING, 0:00): a second stall fails it.
    private var resentAfterStall: String?
    /// Whether the current item still has to be moved to where it starts (`Options.startPosition`).
    private var startPending = false
    /// Where the current item was moved to start, and the position its progress counts from.
    private var startedAt: Double?
    private var progressFrom = 0.0
    /// Where the current item starts when it is loaded again (its fallback): where it was moved to start before.
    private var startAgain: Double?
    private var finished = false
    /// Whether `Options.beforeFirstPlay` was awaited.
    private var passedFirstPlay = false
    /// Awaited, as `Options.beforeFirstPlay` is, by the next item this session loads (`next(playingOn:)`), once.
    private var nextGate: (@Sendable (MediaRoute) async -> PlayCue?)?
    /// When `stop()` was first called: the device has `stopDeadline` from then to confirm.
    private var stopAsked: ContinuousClock.Instant?
    private var errors: [(index: Int, error: any Error)] = []

    /// Makes a session over items with these titles (shown until an item is prepared); nothing is sent
    /// to the device until `run()`.
    public init(device: MediaDevice, titles: [String], options: Options = Options(), open: @escaping Opener,
                prepare: @escaping Preparer) {
        self.device = device
        self.titles = titles
        self.options = options
        self.open = open
        self.prepare = prepare
    }

    /// The route playing now, if any.
    public var route: MediaRoute? { controller?.route }

    /// The index of the item playing now (or being made ready).
    public var currentIndex: Int { min(max(0, index), max(0, titles.count - 1)) }

    /// Status after every change, starting with the latest.
    public nonisolated func statusUpdates() -> AsyncStream<QueueStatus> { updates.subscribe() }

    /// The latest status of the current item, its position extrapolated to now (devices report on changes,
    /// not as the position moves).
    public var playback: PlaybackStatus { latest.at(Date()) }

    /// The items that were skipped because they could not be prepared, and why.
    public var skipped: [(index: Int, error: any Error)] { errors }

    private enum Event: Sendable {
        case status(PlaybackStatus)
        case statusEnded
        case controllerFailed(String)
        case tick
    }

    /// Plays the queue to its end. Throws `RouteError` when an item fails.
    ///
    /// Once an item plays, the next one is queued on the device when it can play it without a gap
    /// (`setNext`); otherwise, or if the device stops anyway, the next item is loaded at the end.
    public func run() async throws {
        defer { updates.finish() }
        guard !titles.isEmpty, !stopping else { return }
        var next = try await preparedItem(from: min(max(0, options.firstItem), titles.count - 1), failFast: true)
        while let segment = next, !stopping {
            next = try await play(from: segment)
        }
    }

    /// Plays items over one route, from `first` on, with that route's controller open and running;
    /// returns the next item when it needs another route, nil at the end of the queue.
    private func play(from first: Prepared) async throws -> Prepared? {
        let controller = try await open(first.route)
        // Stopped while the route opened (a move called off): nothing is loaded.
        if stopping {
            await controller.close()
            return nil
        }
        self.controller = controller
        handoff = nil
        queued = nil
        triedQueueing = false
        // Bounded: a device that floods statuses waits in its controller's broadcast, which keeps the newest.
        let (events, sink) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingOldest(64))
        let statuses = controller.statusUpdates()
        do {
            let result = try await withThrowingTaskGroup(of: Void.self) { group -> Prepared? in
                group.addTask {
                    do { try await controller.run() } catch is CancellationError {} catch {
                        await sink.yieldWaiting(.controllerFailed("\(error)"))
                    }
                }
                group.addTask {
                    for await status in statuses { await sink.yieldWaiting(.status(status)) }
                    await sink.yieldWaiting(.statusEnded)
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(250))
                        sink.yield(.tick)
                    }
                }
                defer { group.cancelAll() }
                try await self.start(first.item)
                return try await self.follow(events)
            }
            await close(controller)
            return result
        } catch {
            // Leave the device quiet: it must not go on playing from a server that is about to close. But
            // not when another controller took it over (route does not fight it) or it is gone.
            if latest.endReason != .replaced, latest.endReason != .deviceGone, stopAsked == nil { try? await controller.stop() }
            await close(controller)
            throw error
        }
    }

    /// Closes `controller`, waiting for it at most `stopDeadline` once a stop was asked for (a device that
    /// does not answer must not hold a cast that is ending).
    private func close(_ controller: any RouteController) async {
        guard stopAsked != nil else { return await controller.close() }
        let limit = options.stopDeadline
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await controller.close() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Handles the route's events until its part of the queue is over.
    private func follow(_ events: AsyncStream<Event>) async throws -> Prepared? {
        for await event in events {
            switch event {
            case .tick: try await tick()
            case .status(let reported): try await handle(reported)
            case .controllerFailed(let reason):
                throw RouteError.playbackFailed(device: device.name, item: title, reason: reason)
            case .statusEnded:
                guard !finished, handoff == nil else { break }
                throw RouteError.playbackFailed(device: device.name, item: title,
                                                reason: "the connection to the device ended without a final state")
            }
            if finished { return nil }
            if let handoff { return handoff }
        }
        return finished ? nil : handoff
    }

    /// The title of the current item.
    private var title: String { current?.title ?? titles[min(index, titles.count - 1)] }

    /// Prepares the first item from `start` on that can be prepared, skipping (and reporting) the others;
    /// nil when none is left. With `failFast`, the first failure is thrown instead.
    private func preparedItem(from start: Int, failFast: Bool = false) async throws -> Prepared? {
        var next: Int? = start
        // A looping queue comes round again: each item is tried once per call, so a queue of bad items ends.
        for _ in 0..<titles.count {
            guard let candidate = next, candidate < titles.count else { break }
            do {
                let item = try await prepare(candidate)
                index = candidate
                return item
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if failFast { throw error }
                errors.append((candidate, error))
                options.onSkip(candidate, titles[candidate], error)
                next = following(candidate)
            }
        }
        index = titles.count
        return nil
    }

    /// The index after `index`: the next item, the first again in a looping queue, or nil at the end.
    private func following(_ index: Int) -> Int? {
        index + 1 < titles.count ? index + 1 : options.loops && !titles.isEmpty ? 0 : nil
    }

    private func handle(_ reported: PlaybackStatus) async throws {
        guard let item = current else { return }
        // Reports from before the load (idle: nothing loaded), or about something else the device
        // played before, are not about this queue.
        if reported.state == .idle { return }
        if let url = reported.itemURL, url != loadedURL, url != queued?.url { return }
        if let next = queued, reported.itemURL == next.url {
            // The device moved on to the queued item by itself.
            index = following(index) ?? index
            current = next
            loadedURL = next.url
            offset = 0
            queued = nil
            triedQueueing = false
            loadedAt = .now
            shownSince = nil
            arrived()
        }
        let status = mapped(reported, for: current ?? item)
        latest = status
        if status.state == .playing || status.state == .paused { started = true }
        if status.state == .playing, isImage, shownSince == nil { shownSince = .now }
        if status.state == .playing {
            if playingSince == nil { playingSince = .now } else { reportsWhilePlaying += 1 }
            if reported.position >= progressFrom + 1 { progressed = true }
        } else if status.state == .paused {
            // Time paused is no time playing at a standstill: the count starts again when it plays again (a pause
            // of 12 s in an item's first second made its resume look like a stall, and the item was sent again).
            playingSince = nil
            reportsWhilePlaying = 0
        }
        if startPending, status.state == .playing || status.state == .paused {
            startPending = false
            if let position = startAgain ?? options.startPosition(index), position > 0, !(current?.isLive ?? false) {
                // Moving there is not playing on: progress counts from there.
                progressFrom = position
                startedAt = position
                try? await seek(.absolute(position))
            }
            startAgain = nil
        }
        guard let controller else { return }
        let published = QueueStatus(device: device, route: controller.route, index: index, count: titles.count, title: title, playback: status)
        options.onStatus(published)
        updates.send(published)
        if status.state == .failed, status.endReason == .unplayable, !started, current?.fallingBack() != nil {
            return try await fallBack(because: status.error ?? "it could not play it")
        }
        if status.state == .failed {
            throw RouteError.playbackFailed(device: device.name, item: title, reason: status.error ?? "playback failed")
        }
        if status.state == .playing, !triedQueueing, !skipping, !stopping, let following = following(index),
           !isImage {
            // Best effort: if the next item cannot be prepared or queued now, it is loaded (and any error
            // reported) when the current one ends; the current one plays on. An item for another route
            // is kept for the move there.
            triedQueueing = true
            if let next = try? await prepare(following) {
                // The same URL again (a one-item loop, an item twice): the device could not tell it from this one.
                if next.route.id != controller.route.id || next.item.url == loadedURL || next.item.url == current?.url {
                    ahead = next
                } else if (try? await controller.setNext(next.item)) == true {
                    queued = next.item
                } else {
                    ahead = next
                }
            }
        }
        guard status.isFinal else { return }
        // A picture that ends by itself (this computer shows one frame) still stays for its time.
        if isImage, status.state == .ended, !skipping, !stopping, let since = shownSince,
           ContinuousClock.now - since < options.imageDuration { return }
        try await advance()
    }

    private var isImage: Bool { current?.kind.contains(.image) ?? false }

    /// The current item is over: on to the next one (the queued one, if any), or the end; an item for
    /// another route is handed over to `run()`.
    private func advance() async throws {
        guard !stopping, let following = following(index) else {
            finished = true
            return
        }
        let next: Prepared
        if let ready = queued, let route = controller?.route {
            // Queued on the device, which stopped anyway: load it.
            next = Prepared(route: route, item: ready)
            index = following
        } else if let ready = ahead {
            next = ready
            index = following
        } else if let prepared = try await preparedItem(from: following) {
            next = prepared
        } else {
            finished = true
            return
        }
        queued = nil
        ahead = nil
        triedQueueing = false
        guard next.route.id == controller?.route.id else {
            handoff = next
            return
        }
        try await start(next.item)
    }

    /// Four times a second: the deadline for starting, whether the device fetched what it says it plays,
    /// and how long a picture has been shown.
    private func tick() async throws {
        let now = ContinuousClock.now
        if let asked = stopAsked, !finished, now - asked >= options.stopDeadline {
            // The device answered the stop (or did not) but never said it stopped: end without it.
            finished = true
            options.onNotice("\(device.name) did not confirm the stop within \(Int(options.stopDeadline.components.seconds)) s; "
                             + "it may still be playing \(title)")
            return
        }
        guard let item = current, !stopping else { return }
        if item.isFetchedElsewhere, loadedURL == item.url, saysItPlaysAtZero(for: options.fetchDeadline, now: now) {
            let seconds = Int(options.fetchDeadline.components.seconds)
            guard item.fallingBack() != nil else {
                throw RouteError.playbackFailed(device: device.name, item: title, reason:
                    "\(device.name) says it plays \(item.url), but its position stayed at 0:00 for \(seconds) s: it cannot fetch it")
            }
            return try await fallBack(because: "its position stayed at 0:00 for \(seconds) s")
        }
        var loaded = item
        loaded.url = loadedURL ?? item.url
        if let access = options.access(loaded) {
            if let problem = access.problem {
                throw RouteError.playbackFailed(device: device.name, item: title,
                                                reason: "\(device.name) could not fetch it: \(problem)")
            }
            if access.requests == 0, latest.state == .playing, now - loadedAt > options.fetchDeadline {
                let seconds = Int(options.fetchDeadline.components.seconds)
                throw RouteError.playbackFailed(device: device.name, item: title, reason:
                    "\(device.name) says it is playing, but in \(seconds) s it has not fetched anything from route "
                    + "(served at \(access.servedFrom)); check that no firewall here blocks that port and that the device "
                    + "can reach this address (ROUTE_UPNP_INTERFACE picks the interface)")
            }
            // It fetched route's stream and says it plays, but its position does not move: its player stalled
            // (gmediarender's does when the error of the URL before reaches it after the new one). Sent once more;
            // stalled again, the item fails rather than "play" at 0:00 for ever.
            if access.requests > 0, latest.state == .playing, !isImage, !item.isLive,
               saysItPlaysAtZero(for: options.fetchDeadline * 2, now: now) {
                let seconds = Int((options.fetchDeadline * 2).components.seconds)
                guard resentAfterStall != loaded.url else {
                    throw RouteError.playbackFailed(device: device.name, item: title, reason:
                        "\(device.name) fetched it from route, but its position stayed at 0:00 for \(seconds) s, twice")
                }
                resentAfterStall = loaded.url
                options.onNotice("\(device.name) fetched \(title) from route, but its position stayed at 0:00 for \(seconds) s: "
                                 + "sending it again")
                // Loaded again as it is, without a stop first: the stop's report would be the item's end.
                return try await start(item)
            }
        }
        if !started, now - loadedAt > options.startTimeout {
            let seconds = Int(options.startTimeout.components.seconds)
            let reported = latest.deviceState.map { "it reported \($0)" } ?? "it reported nothing"
            throw RouteError.playbackFailed(device: device.name, item: title,
                                            reason: "it did not start playing within \(seconds) s; \(reported)")
        }
        guard isImage, let since = shownSince, now - since >= options.imageDuration else { return }
        if following(index) != nil {
            try await advance()
        } else {
            // The last picture has been shown: the queue is done, and the device is left at rest.
            finished = true
            try? await controller?.stop()
        }
    }

    /// Whether the device has said it plays, in three reports or more, for longer than `duration`, and its position has
    /// not moved: what a device that cannot fetch an item, or whose player stalled, says.
    private func saysItPlaysAtZero(for duration: Duration, now: ContinuousClock.Instant) -> Bool {
        guard !progressed, reportsWhilePlaying >= 3, let since = playingSince else { return false }
        return now - since > duration
    }

    /// Loads an item on the current route and makes it the current one.
    private func start(_ item: MediaItem) async throws {
        guard let controller else { return }
        current = item
        loadedURL = item.url
        offset = 0
        skipping = false
        started = false
        shownSince = nil
        loadedAt = .now
        arrived()
        let gate = nextGate ?? (passedFirstPlay ? nil : options.beforeFirstPlay)
        nextGate = nil
        do {
            try await controller.load(item, autoplay: gate == nil)
        } catch let error as RouteError where error.code == .mediaRefused && item.fallingBack() != nil {
            // The converted stream is the item now: it waits at the gate in its turn.
            return try await fallBack(because: error.reason ?? error.description)
        }
        if let gate {
            passedFirstPlay = true
            let cue = await gate(controller.route)
            // Waiting for the others is no time this device took to start.
            loadedAt = .now
            if let cue, !stopping { try await cue.play(controller, unless: { [weak self] in await self?.stopping ?? true }) }
        }
        // A stop asked for while the device took the item may have reached it before the item's play did, and the
        // device would play on with nobody to stop it: it is stopped again, now that it has the item.
        if stopping { try? await controller.stop() }
    }

    /// A new item is the current one: nothing known yet of how it plays; it is yet to be moved to where it starts.
    private func arrived() {
        playingSince = nil
        reportsWhilePlaying = 0
        progressed = false
        startPending = true
        progressFrom = 0
        startedAt = nil
    }

    /// Loads the current item's transcoded stream, once, after the device refused it as it was.
    private func fallBack(because reason: String) async throws {
        guard let item = current, let fallback = item.fallingBack() else { return }
        options.onNotice(item.isFetchedElsewhere
            ? "\(device.name) could not play \(title) from \(item.url) itself (\(reason)): route fetches it and serves it"
            : "\(device.name) refused \(title) as it is (\(reason)): sending it transcoded")
        if item.isFetchedElsewhere, started {
            // A device that says it plays what it could not fetch may take a new URL for more of the same (gmediarender
            // does: its player failed, its transport still says PLAYING): it is stopped first. Its reports of the
            // stop are about the old URL, which the session no longer follows.
            loadedURL = fallback.url
            try? await controller?.stop()
        }
        let start = startedAt
        try await self.start(fallback)
        startAgain = start
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

    /// The controller of the route playing now; throws when nothing is loaded yet.
    private func playing() throws -> any RouteController {
        guard let controller else { throw RouteError.commandFailed(device: device.name, command: "that", reason: "nothing is loaded yet") }
        return controller
    }

    /// Pauses when playing, plays when paused.
    public func togglePause() async throws {
        if latest.state == .playing || latest.state == .loading { try await playing().pause() } else { try await playing().play() }
    }

    public func play() async throws { try await playing().play() }
    /// Plays on `cue`, together with other sessions played on it (a group's members after a pause); not when stopped
    /// meanwhile.
    public func play(_ cue: PlayCue) async throws {
        try await cue.play(playing(), unless: { [weak self] in await self?.stopping ?? true })
    }
    public func pause() async throws { try await playing().pause() }

    /// Seeks within the current item (absolute or relative to the reported position). A converted
    /// stream is reloaded from the new position, since devices cannot seek in it by bytes: playing when `resuming`
    /// (nil: unless it was paused as last reported).
    public func seek(_ target: SeekTarget, resuming: Bool? = nil) async throws {
        let position = target.resolved(from: latest.position(at: Date()), duration: latest.duration)
        let controller = try playing()
        if current?.isLive == true {
            throw RouteError.commandFailed(device: device.name, command: "seek", reason: "\(title) is a live stream")
        }
        guard let current, current.isConverted else {
            try await controller.seek(to: position)
            return
        }
        let resume = resuming ?? (latest.state != .paused)
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
        try await playing().setVolume(min(1, max(0, level)))
    }

    /// Mutes or unmutes.
    public func setMuted(_ muted: Bool) async throws {
        try await playing().setMuted(muted)
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
        // The device's own queue moves on without a gap; its status then names the queued item. (The
        // controller knows best whether something is queued: queueing may still be on its way.)
        if let controller, (try? await controller.skipToNext()) == true { return }
        skipping = true
        try await playing().stop()
    }

    /// Skips to the next item, which is loaded, then waits at `gate` and plays on the cue it gives (nil: it is not
    /// played): several sessions moving on together (a group's `next`). The device's own queue is not used (it would
    /// move on at once).
    public func next(playingOn gate: @escaping @Sendable (MediaRoute) async -> PlayCue?) async throws {
        let controller = try playing()
        nextGate = gate
        skipping = true
        try await controller.stop()
    }

    /// Stops playback and ends `run()`: when the device confirms the stop, or after `stopDeadline` when it
    /// does not (then `onNotice` says so).
    public func stop() async throws {
        stopping = true
        if stopAsked == nil { stopAsked = .now }
        try await controller?.stop()
    }
}
