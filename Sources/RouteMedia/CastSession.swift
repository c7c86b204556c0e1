// CastSession: plays a queue of probed files on one device and takes commands while it plays.

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

/// Plays files one after another on a device, reports status, and accepts transport commands.
///
/// `run()` returns when the queue has played to its end or `stop()` was called, and throws when
/// the device fails an item or cannot be reached. Commands may be sent from any task while it runs.
public actor CastSession {
    /// How an item becomes something the device can fetch (a file URI, or a URL on our server).
    public typealias Preparer = @Sendable (MediaInfo) async throws -> MediaItem

    public nonisolated let controller: any RouteController
    private let files: [MediaInfo]
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

    /// Makes a session; nothing is sent to the device until `run()`.
    public init(controller: any RouteController, files: [MediaInfo], prepare: @escaping Preparer) {
        self.controller = controller
        self.files = files
        self.prepare = prepare
    }

    /// Status after every change, starting with the latest.
    public nonisolated func statusUpdates() -> AsyncStream<CastStatus> { updates.subscribe() }

    /// The latest status of the current item.
    public var playback: PlaybackStatus { latest }

    /// Plays the queue to its end. Throws `RouteError` when an item fails.
    ///
    /// Once an item plays, the next one is queued on the device when it can play it without a gap
    /// (`setNext`); otherwise, or if the device stops anyway, the next item is loaded at the end.
    public func run() async throws {
        defer { updates.finish() }
        guard !files.isEmpty, !stopping else { return }
        let statuses = controller.statusUpdates()
        try await start(try await prepare(files[index]))
        var queued: MediaItem?
        var triedQueueing = false
        for await reported in statuses {
            guard let item = current else { break }
            // Reports from before the load (idle: nothing loaded), or about something else the device
            // played before, are not about this queue.
            if reported.state == .idle { continue }
            if let url = reported.itemURL, url != loadedURL, url != queued?.url { continue }
            if let next = queued, reported.itemURL == next.url {
                // The device moved on to the queued item by itself.
                index += 1
                current = next
                loadedURL = next.url
                offset = 0
                queued = nil
                triedQueueing = false
            }
            let status = mapped(reported, for: current ?? item)
            latest = status
            updates.send(CastStatus(device: controller.device, index: index, count: files.count,
                                    title: current?.title ?? files[index].displayTitle, playback: status))
            if status.state == .failed {
                throw RouteError.playbackFailed(device: controller.device.name, item: files[index].displayTitle,
                                                reason: status.error ?? "playback failed")
            }
            if status.state == .playing, !triedQueueing, !skipping, !stopping, index + 1 < files.count {
                // Best effort: if the next item cannot be prepared or queued now, it is loaded (and
                // any error reported) when the current one ends; the current one plays on.
                triedQueueing = true
                if let next = try? await prepare(files[index + 1]), (try? await controller.setNext(next)) == true {
                    queued = next
                }
            }
            guard status.isFinal else { continue }
            index += 1
            guard !stopping, index < files.count else { break }
            let next: MediaItem
            if let queued { next = queued } else { next = try await prepare(files[index]) }
            queued = nil
            triedQueueing = false
            try await start(next)
        }
    }

    /// Loads an item and makes it the current one.
    private func start(_ item: MediaItem) async throws {
        current = item
        loadedURL = item.url
        offset = 0
        skipping = false
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
        let (previousOffset, previousURL) = (offset, loadedURL)
        offset = position
        loadedURL = reload.url
        do {
            try await controller.load(reload, autoplay: resume)
        } catch {
            (offset, loadedURL) = (previousOffset, previousURL)
            throw error
        }
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
