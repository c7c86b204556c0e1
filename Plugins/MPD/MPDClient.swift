// MPDClient: the one choke point for libmpdclient — a connection to one MPD server whose calls throw MPDError
// with MPD's own message, used from one thread at a time (under a lock), and an idle wait that can be woken.

import CMPDClient
import Foundation
import RouteCore
import Synchronization

/// An error from MPD or from reaching it, in words.
struct MPDError: Error, CustomStringConvertible {
    let description: String
    /// Whether the connection is broken (reconnect) rather than the command refused.
    let broken: Bool
}

/// What MPD reports in `status`.
struct MPDStatus: Sendable, Equatable {
    enum State: Sendable { case stopped, playing, paused, unknown }
    var state: State
    var elapsed: Double
    /// Seconds; nil when MPD does not know (a stream).
    var duration: Double?
    /// 0 to 100; nil when MPD has no mixer.
    var volume: Int?
    /// The current song's id in the queue, if any.
    var songID: UInt32?
    /// The error of the last song MPD could not play, if any.
    var error: String?
}

/// One connection to an MPD server. Blocking: call it from `MPDClient.threads`.
final class MPDConnection: Sendable {
    /// The threads every blocking MPD call runs on.
    static let threads = BlockingThreads(name: "mpd", count: 3)
    private let handle: Mutex<OpaquePointer?>
    let server: String

    /// Connects to `host:port` (at most `timeout` seconds for this and for every later reply).
    init(host: String, port: Int, timeout: Double = 5) throws {
        server = "\(host):\(port)"
        guard let connection = mpd_connection_new(host, UInt32(port), UInt32(timeout * 1000)) else {
            throw MPDError(description: "out of memory", broken: true)
        }
        if mpd_connection_get_error(connection) != MPD_ERROR_SUCCESS {
            let error = Self.error(of: connection)
            mpd_connection_free(connection)
            throw error
        }
        handle = Mutex(connection)
    }

    deinit {
        handle.withLock { connection in
            if let connection { mpd_connection_free(connection) }
        }
    }

    /// Runs `body` on the connection, and throws MPD's error when it reports one (clearing a refusal so that the
    /// connection goes on).
    func run<T>(_ body: (OpaquePointer) -> T) throws -> T {
        try handle.withLock { connection throws -> T in
            guard let connection else { throw MPDError(description: "the connection is closed", broken: true) }
            let result = body(connection)
            if mpd_connection_get_error(connection) != MPD_ERROR_SUCCESS {
                let error = Self.error(of: connection)
                if !mpd_connection_clear_error(connection) { throw MPDError(description: error.description, broken: true) }
                throw error
            }
            return result
        }
    }

    /// Runs `body`, which reports success as a Bool.
    func check(_ what: String, _ body: (OpaquePointer) -> Bool) throws {
        let ok = try run(body)
        if !ok { throw MPDError(description: "MPD refused \(what)", broken: false) }
    }

    private static func error(of connection: OpaquePointer) -> MPDError {
        let code = mpd_connection_get_error(connection)
        let message = mpd_connection_get_error_message(connection).map { String(cString: $0) } ?? "unknown error"
        let broken = code != MPD_ERROR_SERVER && code != MPD_ERROR_ARGUMENT && code != MPD_ERROR_STATE
        return MPDError(description: message, broken: broken)
    }

    /// The IPv4 address the connection reached (a host name resolved), if it is IPv4.
    func peerAddress() throws -> String? {
        try run { connection -> String? in
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let ok = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(mpd_connection_get_fd(connection), $0, &length) == 0 }
            }
            guard ok, storage.ss_family == sa_family_t(AF_INET) else { return nil }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                    var raw = address.pointee.sin_addr
                    return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)).map { _ in String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
                }
            }
        }
    }

    // MARK: commands

    func status() throws -> MPDStatus {
        let status = try run { connection -> MPDStatus? in
            guard let status = mpd_run_status(connection) else { return nil }
            defer { mpd_status_free(status) }
            let state: MPDStatus.State
            switch mpd_status_get_state(status) {
            case MPD_STATE_PLAY: state = .playing
            case MPD_STATE_PAUSE: state = .paused
            case MPD_STATE_STOP: state = .stopped
            default: state = .unknown
            }
            let total = mpd_status_get_total_time(status)
            let volume = mpd_status_get_volume(status)
            let song = mpd_status_get_song_id(status)
            return MPDStatus(state: state, elapsed: Double(mpd_status_get_elapsed_ms(status)) / 1000,
                             duration: total > 0 ? Double(total) : nil, volume: volume >= 0 ? Int(volume) : nil,
                             songID: song >= 0 ? UInt32(song) : nil, error: mpd_status_get_error(status).map { String(cString: $0) })
        }
        guard let status else { throw MPDError(description: "MPD sent no status", broken: true) }
        return status
    }

    /// The URI of the queue entry `id`, or nil when it is not in the queue (MPD answers "No such song").
    func uri(ofSong id: UInt32) throws -> String? {
        do {
            return try run { connection -> String? in
                guard let song = mpd_run_get_queue_song_id(connection, id) else { return nil }
                defer { mpd_song_free(song) }
                return String(cString: mpd_song_get_uri(song))
            }
        } catch let error as MPDError where !error.broken {
            return nil
        }
    }

    /// The MIME types of every decoder MPD has.
    func decoderMIMETypes() throws -> [String] {
        try run { connection -> [String] in
            guard route_mpd_send_decoders(connection) else { return [] }
            var types: [String] = []
            while let pair = mpd_recv_pair(connection) {
                if String(cString: pair.pointee.name) == "mime_type" { types.append(String(cString: pair.pointee.value)) }
                mpd_return_pair(connection, pair)
            }
            _ = mpd_response_finish(connection)
            return types
        }
    }

    /// Appends `uri` to the queue; its id.
    func add(_ uri: String) throws -> UInt32 {
        let id = try run { mpd_run_add_id($0, uri) }
        guard id >= 0 else { throw MPDError(description: "MPD did not add \(uri)", broken: false) }
        return UInt32(id)
    }

    func play(id: UInt32) throws { try check("play") { mpd_run_play_id($0, id) } }
    func pause(_ paused: Bool) throws { try check(paused ? "pause" : "play") { mpd_run_pause($0, paused) } }
    func stop() throws { try check("stop") { mpd_run_stop($0) } }
    func next() throws { try check("next") { mpd_run_next($0) } }
    func seek(to seconds: Double) throws { try check("seek") { mpd_run_seek_current($0, Float(seconds), false) } }
    func setVolume(_ percent: Int) throws { try check("volume") { mpd_run_set_volume($0, UInt32(percent)) } }
    func delete(id: UInt32) throws { try check("delete") { mpd_run_delete_id($0, id) } }

    /// Waits for a change of the player, mixer or queue (MPD's `idle`), at most `timeout` seconds (nil: no limit)
    /// and until `wake` becomes readable; true when something changed.
    func idle(wake: Int32, timeout: Double?) throws -> Bool {
        try run { connection -> Bool in
            let mask = mpd_idle(MPD_IDLE_PLAYER.rawValue | MPD_IDLE_MIXER.rawValue | MPD_IDLE_QUEUE.rawValue)
            guard mpd_send_idle_mask(connection, mask) else { return false }
            var fds = [pollfd(fd: mpd_connection_get_fd(connection), events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            while poll(&fds, 2, timeout.map { Int32($0 * 1000) } ?? -1) < 0, errno == EINTR {}
            if fds[0].revents == 0 {
                _ = mpd_send_noidle(connection)
                _ = mpd_recv_idle(connection, false)
                return false
            }
            return mpd_recv_idle(connection, false).rawValue != 0
        }
    }
}
