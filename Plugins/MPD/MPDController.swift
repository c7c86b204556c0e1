// MPDController: plays route's served URLs on one MPD server — added to its queue (the user's queue is kept, and
// route's entries are removed when it is done), with pause, seek, volume and a status kept current with `idle`.

import Foundation
import RouteCore
import Synchronization

/// Control of one MPD server.
final class MPDController: RouteController {
    let route: MediaRoute
    private let host: String
    private let port: Int
    private let commands = Mutex<MPDConnection?>(nil)
    private let tracking = Mutex(Tracking())
    private let statuses = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    /// How long MPD may stay unreachable before the cast ends.
    static let unreachableAfter: Duration = .seconds(7)

    /// What route put in MPD's queue and what it last saw.
    private struct Tracking {
        /// Queue ids of route's entries, with their URLs.
        var ours: [UInt32: String] = [:]
        /// The entry route loaded last (or MPD moved on to).
        var current: UInt32?
        var stopRequested = false
        var started = false
        var sessionNumber = 0
        var last: MPDStatus?
        /// The level before a mute (MPD has no mute of its own).
        var mutedFrom: Int?
        var closed = false
        /// A load is being sent: what MPD says meanwhile is about neither the old item nor the new one.
        var loading = false
        /// Where route's entry was when last seen playing, and when.
        var lastPlaying: (elapsed: Double, duration: Double?, at: ContinuousClock.Instant)?

        /// Whether route's entry was at (or, by the clock, past) its last two seconds when last seen playing: a
        /// stop then is its natural end, not another client's doing. A stream without a length ends when it ends.
        var nearEnd: Bool {
            guard let seen = lastPlaying else { return false }
            guard let duration = seen.duration else { return true }
            let since = ContinuousClock.now - seen.at
            return seen.elapsed + Double(since.components.seconds) + Double(since.components.attoseconds) / 1e18 >= duration - 2
        }
    }

    init(route: MediaRoute, host: String, port: Int) {
        self.route = route
        self.host = host
        self.port = port
    }

    // MARK: status

    func run() async throws {
        let wake = WakePipe()
        var lostSince: ContinuousClock.Instant?
        while !Task.isCancelled {
            do {
                let idler = try await blocking { [host, port] in try MPDConnection(host: host, port: port) }
                try await refresh(on: idler)
                lostSince = nil
                while !Task.isCancelled {
                    // While it plays, once a second anyway: the position reported stays current. Otherwise the
                    // wait is bounded too, so that no call outlives its deadline's timer by long.
                    let playing = tracking.withLock { $0.last?.state == .playing }
                    let changed = try await withTaskCancellationHandler {
                        try await MPDConnection.threads.run(timeout: .seconds(40), timedOut: { MPDError(description: "idle", broken: true) }) {
                            try idler.idle(wake: wake.read, timeout: playing ? 1 : 30)
                        }
                    } onCancel: { wake.ring() }
                    if changed || playing { try await refresh(on: idler) }
                }
            } catch is CancellationError {
                break
            } catch {
                let since = lostSince ?? .now
                lostSince = since
                if ContinuousClock.now - since > Self.unreachableAfter {
                    let reason = "MPD at \(host):\(port) stopped answering: \(error)"
                    var status = statuses.latest ?? PlaybackStatus(state: .idle)
                    status.error = reason
                    status.end(.failed, because: .deviceGone)
                    status.timestamp = Date()
                    statuses.send(status)
                    throw RouteError.deviceUnreachable(device: route.name, reason: reason)
                }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    /// Reads MPD's status and reports what it means for route's entries.
    private func refresh(on connection: MPDConnection) async throws {
        let (status, currentURI) = try await blocking { () -> (MPDStatus, String?) in
            let status = try connection.status()
            return (status, try status.songID.flatMap { try connection.uri(ofSong: $0) })
        }
        let ourCurrentGone: Bool = try await {
            guard let current = tracking.withLock({ $0.current }) else { return false }
            return try await blocking { try connection.uri(ofSong: current) == nil }
        }()
        if let report = tracking.withLock({ report(status, uri: currentURI, currentGone: ourCurrentGone, tracking: &$0) }) {
            statuses.send(report)
        }
    }

    /// The status route reports for what MPD says; nil when it is not about route's entries.
    private func report(_ status: MPDStatus, uri: String?, currentGone: Bool, tracking: inout Tracking) -> PlaybackStatus? {
        defer { tracking.last = status }
        guard let current = tracking.current, !tracking.loading else { return nil }
        var state: PlaybackStatus.State
        var reason: PlaybackStatus.EndReason?
        var error: String?
        let song = status.songID
        if let song, song != current, tracking.ours[song] != nil, status.state != .stopped {
            // MPD moved on to the entry queued next.
            tracking.current = song
        }
        let ours = song.map { tracking.ours[$0] != nil } ?? false
        switch status.state {
        case .playing, .paused:
            if ours {
                state = status.state == .playing ? .playing : .paused
                tracking.started = true
                if status.state == .playing { tracking.lastPlaying = (status.elapsed, status.duration, .now) }
            } else if tracking.nearEnd {
                // MPD went on past route's entry (repeat, or songs queued after it): route's item is over.
                state = .ended
            } else {
                // As the other providers say it: the cast ends, and route leaves the device to the other client.
                state = .failed
                reason = .replaced
                error = "replaced by another controller (another MPD client plays something else on \(route.name))"
            }
        case .stopped, .unknown:
            if tracking.stopRequested {
                state = .stopped
            } else if let failure = status.error, ours || (song == nil && Self.isAbout(failure, tracking.ours[current])) {
                // (An error about another client's song is not route's item failing.)
                state = .failed
                error = "MPD: \(failure)"
                reason = tracking.started ? .deviceError : .unplayable
            } else if !tracking.started, !currentGone {
                state = .loading
            } else if tracking.nearEnd {
                // Its natural end (in consume mode MPD also takes the entry out of the queue).
                state = .ended
            } else {
                state = .failed
                reason = .replaced
                error = "replaced by another controller (another MPD client " + (currentGone ? "took route's entry out of the queue)" : "stopped it)")
            }
        }
        var report = PlaybackStatus(state: state, position: ours ? status.elapsed : 0, duration: ours ? status.duration : nil,
                                    volume: (tracking.mutedFrom ?? status.volume).map { Double($0) / 100 }, error: error)
        if let reason { report.endReason = reason }
        report.muted = tracking.mutedFrom != nil
        report.itemURL = tracking.current.flatMap { tracking.ours[$0] }
        report.itemID = tracking.current.map(String.init)
        report.sessionID = "mpd-\(tracking.sessionNumber)"
        report.deviceState = "\(status.state)"
        if status.volume == nil { report.allowed.remove(.volume) }
        if state == .loading, !tracking.started, uri == nil, tracking.last == nil { return nil }
        return report
    }

    /// Whether MPD's error text is about `url` (MPD names the URI it failed on), or names no URI at all.
    private static func isAbout(_ error: String, _ url: String?) -> Bool {
        guard error.contains("://") else { return true }
        return url.map { error.contains($0) } ?? false
    }

    func statusUpdates() -> AsyncStream<PlaybackStatus> { statuses.subscribe() }

    // MARK: commands

    func load(_ item: MediaItem, autoplay: Bool) async throws {
        let stale = tracking.withLock { tracking -> [UInt32] in
            tracking.loading = true
            return Array(tracking.ours.keys)
        }
        defer { tracking.withLock { $0.loading = false } }
        // MPD may fetch the URL's start while adding it: more time than other commands.
        let id = try await command("load", timeout: .seconds(25)) { connection in
            for old in stale { try? connection.delete(id: old) }
            let id = try connection.add(item.url)
            try connection.play(id: id)
            if !autoplay { try connection.pause(true) }
            return id
        }
        tracking.withLock {
            $0.ours = [id: item.url]
            $0.current = id
            $0.stopRequested = false
            $0.started = false
            $0.lastPlaying = nil
            $0.sessionNumber += 1
            $0.loading = false
        }
        statuses.send(loading(item))
    }

    private func loading(_ item: MediaItem) -> PlaybackStatus {
        var status = PlaybackStatus(state: .loading, duration: item.duration, title: item.title)
        status.itemURL = item.url
        status.sessionID = tracking.withLock { "mpd-\($0.sessionNumber)" }
        return status
    }

    func play() async throws {
        let current = tracking.withLock { $0.current }
        try await command("play") { connection in
            if try connection.status().state == .stopped, let current { try connection.play(id: current) } else { try connection.pause(false) }
        }
    }

    func pause() async throws { try await command("pause") { try $0.pause(true) } }

    func seek(to seconds: Double) async throws { try await command("seek") { try $0.seek(to: seconds) } }

    func stop() async throws {
        tracking.withLock { $0.stopRequested = true }
        try await command("stop") { try $0.stop() }
    }

    /// While muted, the level is kept for the unmute (a volume change does not unmute).
    func setVolume(_ level: Double) async throws {
        let percent = Int((min(1, max(0, level)) * 100).rounded())
        let muted = tracking.withLock { tracking -> Bool in
            guard tracking.mutedFrom != nil else { return false }
            tracking.mutedFrom = percent
            return true
        }
        if !muted { try await command("volume") { try $0.setVolume(percent) } }
    }

    func setMuted(_ muted: Bool) async throws {
        let mutedFrom = tracking.withLock { $0.mutedFrom }
        if muted, mutedFrom == nil {
            let level = try await command("mute") { connection -> Int in
                let level = try connection.status().volume ?? 0
                try connection.setVolume(0)
                return level
            }
            tracking.withLock { $0.mutedFrom = level }
        } else if !muted, let level = mutedFrom {
            try await command("unmute") { try $0.setVolume(level) }
            tracking.withLock { $0.mutedFrom = nil }
        }
    }

    /// MPD plays its queue without a gap: the next item goes after route's current entry.
    func setNext(_ item: MediaItem) async throws -> Bool {
        let id = try await command("queue") { try $0.add(item.url) }
        tracking.withLock { $0.ours[id] = item.url }
        return true
    }

    func skipToNext() async throws -> Bool {
        try await command("next") { try $0.next() }
        return true
    }

    /// Takes route's entries out of MPD's queue and closes the connections.
    func close() async {
        let ours = tracking.withLock { tracking -> [UInt32] in
            guard !tracking.closed else { return [] }
            tracking.closed = true
            return Array(tracking.ours.keys)
        }
        if !ours.isEmpty { try? await command("close") { connection in for id in ours { try? connection.delete(id: id) } } }
        commands.withLock { $0 = nil }
        statuses.finish()
    }

    /// Runs `body` on the command connection (connected on first use, and again once when MPD closed it: MPD
    /// drops connections idle for a minute), as `what` in errors.
    private func command<T: Sendable>(_ what: String, timeout: Duration = .seconds(6),
                                      _ body: @escaping @Sendable (MPDConnection) throws -> T) async throws -> T {
        let (host, port, name) = (self.host, self.port, route.name)
        do {
            return try await blocking(timeout: timeout) { [self] in
                for attempt in 0..<2 {
                    let connection = try commands.withLock { held -> MPDConnection in
                        if let held { return held }
                        let made = try MPDConnection(host: host, port: port)
                        held = made
                        return made
                    }
                    do {
                        return try body(connection)
                    } catch let error as MPDError where error.broken && attempt == 0 {
                        commands.withLock { $0 = nil }
                    }
                }
                throw MPDError(description: "the connection broke twice", broken: true)
            }
        } catch let error as MPDError {
            throw error.broken ? RouteError.deviceUnreachable(device: name, reason: "MPD at \(host):\(port): \(error)")
                : RouteError.commandFailed(device: name, command: what, reason: error.description)
        }
    }

    private func blocking<T: Sendable>(timeout: Duration = .seconds(6), _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let seconds = timeout.components.seconds
        return try await MPDConnection.threads.run(timeout: timeout, timedOut: { MPDError(description: "no answer within \(seconds) s", broken: true) }, body)
    }
}

/// A pipe whose ring wakes an idle wait; closed when the last user is done with it.
final class WakePipe: Sendable {
    let read: Int32
    private let write: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        read = fds[0]
        write = fds[1]
    }

    func ring() {
        var byte: UInt8 = 1
        _ = Glibc.write(write, &byte, 1)
    }

    deinit {
        close(read)
        close(write)
    }
}
