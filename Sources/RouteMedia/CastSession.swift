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
    public func run() async throws {
        defer { updates.finish() }
        while index < files.count, !stopping {
            let file = files[index]
            skipping = false
            let item = try await prepare(file)
            current = item
            offset = 0
            try await controller.load(item, autoplay: true)
            for await reported in controller.statusUpdates() {
                var status = reported
                if offset > 0 {
                    status.position += offset
                    if let duration = item.duration { status.duration = duration }
                }
                latest = status
                updates.send(CastStatus(device: controller.device, index: index, count: files.count,
                                        title: item.title ?? file.displayTitle, playback: status))
                if status.state == .failed {
                    throw RouteError.playbackFailed(device: controller.device.name, item: file.displayTitle,
                                                    reason: status.error ?? "playback failed")
                }
                if status.isFinal { break }
            }
            if stopping { break }
            index += 1
        }
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
        offset = position
        try await controller.load(position > 0 ? current.starting(at: position) : current, autoplay: resume)
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
