// MediaServer: the HTTP server devices fetch media from (libsoup-3): per-item token URLs, Range/206,
// HEAD, DLNA headers, streamed from disk in fixed-size chunks so memory stays flat.

import CRouteShim
import CSoup
import RouteGIO
import RouteGLib
import Foundation
import RouteCore
import Synchronization

/// Serves offered items, and nothing else, on one local address.
///
/// Each offered item gets an unguessable URL (`/m/<32 hex>/<name>`); every other path is 404, and
/// methods other than GET and HEAD are too. A GET with `Range` answers 206 with just those bytes.
/// The port belongs to this process alone (no other program, not even another route, can share it);
/// connections are accepted by route, at most `ConnectionLimits.perClient` at a time from one address,
/// and a connection that has not sent a whole request within `ConnectionLimits.requestTimeout` is closed.
/// The libsoup servers live on `GLibLoop`s; offering and withdrawing are thread-safe.
public final class MediaServer: Sendable {
    /// `http://ADDRESS:PORT`, the prefix of every offered URL.
    public let baseURL: String
    private let offers = OfferTable()
    private let cores: [ServerCore]

    /// Starts listening on `address` (one local address, not a wildcard) and `port` (0: any free port); a conversion
    /// that fails while it is served is said to `log`.
    /// - Throws: `MediaError.server` when the address is not local or the port is taken.
    public init(address: String = "127.0.0.1", port: UInt16 = 0, log: RouteLog = .discard) throws {
        let listener = try ListeningSocket(address: address, port: port)
        defer { listener.close() }
        // One libsoup server per loop, each accepting from the same listening socket: the kernel hands
        // each new connection to one of them, so every core serves.
        let limits = ConnectionLimits()
        var cores: [ServerCore] = []
        do {
            for loop in GLibLoop.serverLoops {
                let core = ServerCore(loop: loop, offers: offers, limits: limits, log: log)
                try loop.perform { try core.start(listening: listener.fd) }
                cores.append(core)
            }
        } catch {
            for core in cores { core.close() }
            throw error
        }
        self.cores = cores
        let host = address.contains(":") ? "[\(address)]" : address
        baseURL = "http://\(host):\(listener.port)"
    }

    /// Offers a file; returns its URL. The file is read on each request, so it must stay in place.
    public func offer(file path: String, mimeType: String, size: UInt64) -> String {
        add(Offer(path: path, mimeType: mimeType, source: .file(size: size)))
    }

    /// Offers bytes held in memory (cover art); returns their URL.
    public func offer(data: Data, mimeType: String) -> String {
        add(Offer(path: "", mimeType: mimeType, source: .memory(data)))
    }

    /// Offers a file converted on the fly by `profile` (to at most `maxChannels` of audio); returns its
    /// URL. Each GET runs its own pipeline, from the start or from the offset in
    /// `TimeSeekRange.dlna.org: npt=S-` or `?t=S`.
    public func offer(transcoding info: MediaInfo, to profile: TranscodeProfile, maxChannels: Int? = nil) -> String {
        add(Offer(path: info.path, mimeType: profile.mimeType(for: info),
                  source: .pipeline(Conversion(description: profile.pipeline(for: info, maxChannels: maxChannels),
                                               duration: info.duration, exactSeek: !profile.copiesStreams))))
    }

    /// Offers subtitles as WebVTT: a `.vtt` file as it is; a `.srt` (or another format GStreamer's subparse
    /// reads) converted on each request; or, with `embedded`, the text stream inside a media file. Returns
    /// the URL.
    public func offer(subtitles path: String, embedded: Bool = false) -> String {
        if !embedded, path.lowercased().hasSuffix(".vtt") {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? nil
            return offer(file: path, mimeType: "text/vtt", size: size ?? 0)
        }
        let description = embedded
            ? "parsebin name=route_demux route_demux. ! text/x-raw ! webvttenc ! identity name=route_out"
            : "subparse ! webvttenc ! identity name=route_out"
        return add(Offer(path: path, mimeType: "text/vtt", source: .pipeline(Conversion(description: description, duration: nil, exactSeek: false))))
    }

    /// Offers a file as `plan` says (direct or converted); returns its URL and MIME type.
    public func offer(_ info: MediaInfo, as plan: Delivery, maxChannels: Int? = nil) -> (url: String, mimeType: String)? {
        switch plan {
        case .direct: return (offer(file: info.path, mimeType: info.mimeType, size: info.size), info.mimeType)
        case .remux(let profile), .transcode(let profile):
            return (offer(transcoding: info, to: profile, maxChannels: maxChannels), profile.mimeType(for: info))
        case .unplayable: return nil
        }
    }

    private func add(_ offer: Offer) -> String {
        let token = Self.newToken()
        let ext = URL(fileURLWithPath: offer.path).pathExtension
        let name: String
        switch offer.source {
        case .file: name = ext.isEmpty ? "media" : "media." + ext
        case .pipeline, .memory: name = "media." + (offer.mimeType.split(separator: "/").last.map(String.init) ?? "bin")
        }
        offers.items.withLock { $0[token] = offer }
        return "\(baseURL)/m/\(token)/\(name)"
    }

    /// What devices have done with an offered URL so far; nil when it is not one of ours.
    public func access(to url: String) -> MediaAccess? {
        guard let token = Self.token(in: url) else { return nil }
        let record = offers.access.withLock { $0[token] } ?? OfferTable.Access()
        return MediaAccess(requests: record.requests, problem: record.problem,
                           servedFrom: String(baseURL.dropFirst("http://".count)))
    }

    /// Stops serving an offered URL; later requests get 404.
    public func withdraw(_ url: String) {
        guard let token = Self.token(in: url) else { return }
        _ = offers.items.withLock { $0.removeValue(forKey: token) }
    }

    /// Stops listening and drops every offer. Idempotent.
    public func close() {
        offers.items.withLock { $0.removeAll() }
        for core in cores { core.close() }
    }

    static func token(in url: String) -> String? {
        let parts = url.split(separator: "/")
        guard let index = parts.firstIndex(of: "m"), index + 1 < parts.count else { return nil }
        return String(parts[index + 1])
    }

    private static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt32, radix: 16) }
            .map { String(repeating: "0", count: 8 - $0.count) + $0 }.joined()
    }
}

extension GLibLoop {
    /// One loop per core (at most 4) for the media server: each runs its own libsoup server on a
    /// shared port, as nginx runs a worker per core.
    static let serverLoops: [GLibLoop] = (0..<min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)))
        .map { GLibLoop(name: "route-http-\($0)") }
}

/// One offered item: a file served as it is, or through a conversion pipeline.
struct Offer: Sendable {
    enum Source: Sendable {
        case file(size: UInt64)
        /// A GStreamer pipeline reading the file (see `TranscodeProfile.pipeline`).
        case pipeline(Conversion)
        /// Bytes in memory (cover art), served whole.
        case memory(Data)
    }
    let path: String
    let mimeType: String
    let source: Source
    var isImage: Bool { mimeType.hasPrefix("image/") }
}

/// The offered items by token, shared by every loop's server, and what devices did with them.
final class OfferTable: Sendable {
    struct Access {
        var requests = 0
        var problem: String?
    }
    let items = Mutex<[String: Offer]>([:])
    let access = Mutex<[String: Access]>([:])

    /// Counts a request for `token`, and what went wrong answering it, if anything.
    func record(_ token: String, problem: String? = nil) {
        access.withLock { table in
            table[token, default: Access()].requests += 1
            if let problem { table[token]?.problem = problem }
        }
    }
}

/// The bound, listening TCP socket of one media server, made with POSIX calls and never shared with another
/// process (no SO_REUSEPORT): each loop's server accepts from a duplicate of its descriptor.
private struct ListeningSocket {
    let fd: Int32
    let port: UInt16

    init(address: String, port: UInt16) throws {
        guard let numeric = SocketAddress(numericHost: address, port: port) else {
            throw MediaError.server("\"\(address)\" is not an IP address of this machine")
        }
        let fd = Glibc.socket(numeric.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw MediaError.server("cannot make a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard numeric.withSockaddr({ bind(fd, $0, $1) }) == 0, Glibc.listen(fd, 128) == 0 else {
            let reason = errno == EADDRINUSE ? "the port is in use by another program" : String(cString: strerror(errno))
            Glibc.close(fd)
            throw MediaError.server("cannot listen on \(address):\(port): \(reason)")
        }
        self.fd = fd
        self.port = SocketAddress(localOf: fd)?.port ?? port
    }

    /// Closes this descriptor (the loops keep their duplicates).
    func close() { Glibc.close(fd) }
}

/// How many connections route keeps open, from one client and in all, shared by every loop's server.
final class ConnectionLimits: Sendable {
    /// Connections at a time from one address (a renderer opens a few for ranges; a flood gets no more).
    static let perClient = 16
    /// Connections at a time in all.
    static let total = 512
    /// A connection that has not sent a whole request this long after it opened (or after its previous
    /// request) is closed: idle and slow clients do not hold descriptors.
    static let requestTimeout: Duration = .seconds(10)

    private let open = Mutex<(byClient: [String: Int], total: Int)>(([:], 0))

    /// Counts a new connection from `client`; false (and nothing counted) when it is over a limit.
    func admit(_ client: String) -> Bool {
        open.withLock { state in
            let count = state.byClient[client, default: 0]
            guard count < Self.perClient, state.total < Self.total else { return false }
            state.byClient[client] = count + 1
            state.total += 1
            return true
        }
    }

    /// Forgets a connection from `client`.
    func release(_ client: String) {
        open.withLock { state in
            guard let count = state.byClient[client] else { return }
            state.byClient[client] = count > 1 ? count - 1 : nil
            state.total -= 1
        }
    }
}

/// The libsoup side: one SoupServer on one GLib loop, answering requests on that loop's thread.
final class ServerCore: @unchecked Sendable {
    // Safety: everything mutable is created, used and released only on `loop`'s thread.
    let loop: GLibLoop
    let offers: OfferTable
    let limits: ConnectionLimits
    /// Where a conversion that fails while it is served is said.
    let log: RouteLog
    private var server: UnsafeMutablePointer<SoupServer>?
    private var listener: UnsafeMutablePointer<GSocket>?
    private var sources: [UnsafeMutablePointer<GSource>] = []
    /// The connections this loop accepted, by the client's `address:port`.
    private var connections: [String: Connection] = [:]

    private struct Connection {
        /// Our own reference to the connection's socket, to notice when libsoup has closed it.
        let socket: UnsafeMutablePointer<GSocket>
        let client: String
        /// Since when a request is awaited on it (nil while one is being answered).
        var awaitingSince: ContinuousClock.Instant?
    }

    /// Bytes read from disk and handed to libsoup at a time.
    static let chunkSize = 256 * 1024

    /// Whether libsoup may keep connections open between requests: before 3.3, a kept-alive connection that
    /// the client closes is never closed on our side (it stays in CLOSE-WAIT and holds its descriptor for
    /// ever; fixed by libsoup's d20c6601, in 3.3.0), so every response there says `Connection: close`.
    static let keepAlive = soup_check_version(3, 3, 0) != 0

    init(loop: GLibLoop, offers: OfferTable, limits: ConnectionLimits, log: RouteLog) {
        self.loop = loop
        self.offers = offers
        self.limits = limits
        self.log = log
    }

    /// Creates the server and starts accepting from a duplicate of `fd`. Loop thread only.
    func start(listening fd: Int32) throws {
        guard let object = g_object_new_with_properties(soup_server_get_type(), 0, nil, nil) else {
            throw MediaError.server("libsoup could not create a server")
        }
        let server = UnsafeMutableRawPointer(object).assumingMemoryBound(to: SoupServer.self)
        self.server = server
        route_object_set_string(object, "server-header", "route ")
        let me = Unmanaged.passUnretained(self).toOpaque()
        soup_server_add_handler(server, nil, { _, message, path, query, data in
            guard let message, let path, let data else { return }
            Unmanaged<ServerCore>.fromOpaque(data).takeUnretainedValue().answer(message, path: String(cString: path), query: query)
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            Unmanaged<ServerCore>.fromOpaque(data!).release()
        })
        let started: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, message, data in
            guard let message, let data else { return }
            Unmanaged<ServerCore>.fromOpaque(data).takeUnretainedValue().requestStarted(message)
        }
        let read: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, message, data in
            guard let message, let data else { return }
            Unmanaged<ServerCore>.fromOpaque(data).takeUnretainedValue().requestRead(message)
        }
        let finished: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, message, data in
            guard let message, let data else { return }
            Unmanaged<ServerCore>.fromOpaque(data).takeUnretainedValue().requestFinished(message)
        }
        route_signal_connect(object, "request-started", unsafeBitCast(started, to: UnsafeRawPointer.self), me)
        route_signal_connect(object, "request-read", unsafeBitCast(read, to: UnsafeRawPointer.self), me)
        route_signal_connect(object, "request-finished", unsafeBitCast(finished, to: UnsafeRawPointer.self), me)
        route_signal_connect(object, "request-aborted", unsafeBitCast(finished, to: UnsafeRawPointer.self), me)

        var error: UnsafeMutablePointer<GError>?
        let copy = dup(fd)
        guard copy >= 0, let listener = g_socket_new_from_fd(copy, &error) else {
            if copy >= 0 { Glibc.close(copy) }
            disconnect()
            throw MediaError.server(GLibError("cannot use the listening socket", error).description)
        }
        self.listener = listener
        g_socket_set_blocking(listener, 0)
        let context = g_main_context_get_thread_default()
        let accept: @convention(c) (UnsafeMutablePointer<GSocket>?, GIOCondition, UnsafeMutableRawPointer?) -> gboolean = { _, _, data in
            Unmanaged<ServerCore>.fromOpaque(data!).takeUnretainedValue().acceptAll()
            return 1 // G_SOURCE_CONTINUE
        }
        let acceptSource = g_socket_create_source(listener, G_IO_IN, nil)!
        g_source_set_callback(acceptSource, unsafeBitCast(accept, to: GSourceFunc.self), me, nil)
        g_source_attach(acceptSource, context)
        let sweep: @convention(c) (UnsafeMutableRawPointer?) -> gboolean = { data in
            Unmanaged<ServerCore>.fromOpaque(data!).takeUnretainedValue().sweep()
            return 1
        }
        let sweepSource = g_timeout_source_new(1000)!
        g_source_set_callback(sweepSource, sweep, me, nil)
        g_source_attach(sweepSource, context)
        sources = [acceptSource, sweepSource]
    }

    /// Accepts every pending connection and hands it to libsoup, or closes it when its client is over
    /// the limit (loop thread).
    private func acceptAll() {
        guard let listener, let server else { return }
        while let socket = g_socket_accept(listener, nil, nil) {
            let remote = g_socket_get_remote_address(socket, nil)
            let local = g_socket_get_local_address(socket, nil)
            defer {
                if let remote { g_object_unref(UnsafeMutableRawPointer(remote)) }
                if let local { g_object_unref(UnsafeMutableRawPointer(local)) }
            }
            let (client, key) = Self.describe(remote)
            guard let remote, let local, limits.admit(client) else {
                g_socket_close(socket, nil)
                g_object_unref(UnsafeMutableRawPointer(socket))
                continue
            }
            // Recorded first: libsoup may read and answer a request that is already waiting before
            // accept_iostream returns, and the record must be there when it finishes.
            if let old = connections[key] { forget(key, old) }
            connections[key] = Connection(socket: g_object_ref(UnsafeMutableRawPointer(socket)).assumingMemoryBound(to: GSocket.self),
                                          client: client, awaitingSince: .now)
            let stream = g_socket_connection_factory_create_connection(socket)!
            g_object_unref(UnsafeMutableRawPointer(socket))
            var error: UnsafeMutablePointer<GError>?
            let accepted = soup_server_accept_iostream(server, UnsafeMutableRawPointer(stream).assumingMemoryBound(to: GIOStream.self),
                                                       local, remote, &error)
            g_object_unref(UnsafeMutableRawPointer(stream))
            if accepted == 0 {
                _ = GLibError("", error)
                if let connection = connections[key] {
                    g_socket_close(connection.socket, nil)
                    forget(key, connection)
                }
            }
        }
    }

    /// Every second: forgets connections libsoup has closed, and closes those that waited too long for a
    /// request (loop thread). Closing the socket ends libsoup's read, and libsoup then releases the rest.
    private func sweep() {
        let now = ContinuousClock.now
        for (key, connection) in connections {
            if g_socket_is_closed(connection.socket) != 0 {
                forget(key, connection)
            } else if let since = connection.awaitingSince, now - since > ConnectionLimits.requestTimeout {
                g_socket_shutdown(connection.socket, 1, 1, nil)
                connections[key]?.awaitingSince = nil
            }
        }
    }

    private func forget(_ key: String, _ connection: Connection) {
        connections[key] = nil
        limits.release(connection.client)
        g_object_unref(UnsafeMutableRawPointer(connection.socket))
    }

    private func requestStarted(_ message: OpaquePointer) {
        let key = Self.describe(soup_server_message_get_remote_address(message)).key
        connections[key]?.awaitingSince = .now
    }

    private func requestRead(_ message: OpaquePointer) {
        let key = Self.describe(soup_server_message_get_remote_address(message)).key
        connections[key]?.awaitingSince = nil
    }

    /// Without keep-alive, libsoup closes the connection right after its one request: it stops counting
    /// against its client now, not at the next sweep (a client fetching in quick succession would hit
    /// the limit meanwhile).
    private func requestFinished(_ message: OpaquePointer) {
        guard !Self.keepAlive else { return }
        let key = Self.describe(soup_server_message_get_remote_address(message)).key
        if let connection = connections[key] { forget(key, connection) }
    }

    /// The client's address alone, and `address:port` (one connection's key).
    private static func describe(_ address: UnsafeMutablePointer<GSocketAddress>?) -> (client: String, key: String) {
        guard let address, g_type_check_instance_is_a(UnsafeMutablePointer<GTypeInstance>(OpaquePointer(address)), g_inet_socket_address_get_type()) != 0 else {
            return ("?", "?")
        }
        let inet = UnsafeMutableRawPointer(address).assumingMemoryBound(to: GInetSocketAddress.self)
        let host = g_inet_socket_address_get_address(inet).flatMap { g_inet_address_to_string($0) }
        defer { g_free(host) }
        let client = host.map { String(cString: $0) } ?? "?"
        return (client, "\(client):\(g_inet_socket_address_get_port(inet))")
    }

    /// Stops serving (any thread).
    func close() {
        _ = try? loop.perform { self.disconnect() }
    }

    private func disconnect() {
        for source in sources {
            g_source_destroy(source)
            g_source_unref(source)
        }
        sources = []
        if let server {
            soup_server_disconnect(server)
            g_object_unref(UnsafeMutableRawPointer(server))
            self.server = nil
        }
        for (key, connection) in connections { forget(key, connection) }
        if let listener {
            g_socket_close(listener, nil)
            g_object_unref(UnsafeMutableRawPointer(listener))
            self.listener = nil
        }
    }

    /// Answers one request (loop thread).
    private func answer(_ message: OpaquePointer, path: String, query: OpaquePointer?) {
        let method = String(cString: soup_server_message_get_method(message))
        let response = soup_server_message_get_response_headers(message)
        if !Self.keepAlive { soup_message_headers_replace(response, "Connection", "close") }
        let parts = path.split(separator: "/")
        guard method == "GET" || method == "HEAD" || method == "OPTIONS", parts.count >= 2, parts.count <= 3, parts[0] == "m",
              let offer = offers.items.withLock({ $0[String(parts[1])] }) else {
            soup_server_message_set_status(message, 404, nil)
            return
        }
        // Cast receivers are web pages on another origin: their players read items (and text tracks)
        // through CORS, and seek only when they may read Content-Length and Content-Range.
        soup_message_headers_replace(response, "Access-Control-Allow-Origin", "*")
        soup_message_headers_replace(response, "Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges")
        if method == "OPTIONS" {
            soup_message_headers_replace(response, "Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
            soup_message_headers_replace(response, "Access-Control-Allow-Headers", "Range, Content-Type")
            soup_message_headers_replace(response, "Access-Control-Max-Age", "86400")
            soup_server_message_set_status(message, 204, nil)
            return
        }
        let token = String(parts[1])
        soup_message_headers_set_content_type(response, offer.mimeType, nil)
        soup_message_headers_replace(response, "transferMode.dlna.org", offer.isImage ? "Interactive" : "Streaming")
        switch offer.source {
        case .file(let size):
            answerFile(message, offer: offer, token: token, size: size, head: method == "HEAD")
        case .memory(let data):
            offers.record(token)
            soup_message_headers_set_content_length(response, goffset(data.count))
            soup_server_message_set_status(message, 200, nil)
            guard method == "GET", !data.isEmpty else { return }
            data.withUnsafeBytes { bytes in
                soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_COPY,
                                         bytes.baseAddress, gsize(bytes.count))
            }
        case .pipeline(let conversion):
            let duration = conversion.duration
            soup_message_headers_replace(response, "contentFeatures.dlna.org", MediaItem.dlnaFeatures(converted: true))
            let t = query.flatMap { g_hash_table_lookup($0, "t") }.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
            let header = soup_message_headers_get_one(soup_server_message_get_request_headers(message), "TimeSeekRange.dlna.org")
                .map { String(cString: $0) }
            var start = 0.0
            offers.record(token, problem: access(offer.path, R_OK) == 0 ? nil : "\(offer.path) is gone")
            switch TimeSeekRequest.parse(query: t, header: header, duration: duration) {
            case .start: break
            case .from(let seconds): start = seconds
            case .unsatisfiable:
                soup_server_message_set_status(message, 416, nil)
                return
            }
            if start > 0, let duration {
                soup_message_headers_replace(response, "TimeSeekRange.dlna.org", TimeSeekRequest.header(start: start, duration: duration))
            }
            soup_message_headers_set_encoding(response, SOUP_ENCODING_CHUNKED)
            soup_server_message_set_status(message, 200, nil)
            guard method == "GET" else { return }
            PipelineStream(loop: loop, path: offer.path, conversion: conversion, start: start, log: log).attach(to: message)
        }
    }

    private func answerFile(_ message: OpaquePointer, offer: Offer, token: String, size offered: UInt64, head: Bool) {
        // The length now, not when it was offered: a file still being written (a recording) is served as far as it
        // has grown by each request.
        var now = stat()
        let size = stat(offer.path, &now) == 0 ? max(offered, UInt64(max(0, now.st_size))) : offered
        let request = soup_server_message_get_request_headers(message)
        let response = soup_server_message_get_response_headers(message)
        soup_message_headers_replace(response, "Accept-Ranges", "bytes")
        soup_message_headers_replace(response, "contentFeatures.dlna.org", MediaItem.dlnaFeatures(converted: false))
        var start: UInt64 = 0
        var length = size
        switch ByteRangeRequest.parse(soup_message_headers_get_one(request, "Range").map { String(cString: $0) }, size: size) {
        case .whole:
            soup_server_message_set_status(message, 200, nil)
        case .part(let first, let last):
            start = first
            length = last - first + 1
            soup_message_headers_set_content_range(response, goffset(first), goffset(last), goffset(size))
            soup_server_message_set_status(message, 206, nil)
        case .unsatisfiable:
            soup_message_headers_replace(response, "Content-Range", "bytes */\(size)")
            soup_server_message_set_status(message, 416, nil)
            return
        }
        soup_message_headers_set_content_length(response, goffset(length))
        guard access(offer.path, R_OK) == 0 else {
            // The file went away after it was offered: the device cannot have it.
            offers.record(token, problem: "\(offer.path) is gone")
            soup_message_headers_set_content_length(response, 0)
            soup_server_message_set_status(message, 404, nil)
            return
        }
        offers.record(token)
        guard !head, length > 0 else { return }
        let fd = open(offer.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            soup_message_headers_set_content_length(response, 0)
            soup_server_message_set_status(message, 404, nil)
            return
        }
        FileStream(fd: fd, offset: start, remaining: length).attach(to: message)
    }
}

/// Feeds one response body from a file, a chunk at a time: the next chunk is read when libsoup
/// reports the previous one written ("wrote-chunk"), so at most two chunks are in memory.
private final class FileStream {
    let fd: Int32
    var offset: UInt64
    var remaining: UInt64

    init(fd: Int32, offset: UInt64, remaining: UInt64) {
        self.fd = fd
        self.offset = offset
        self.remaining = remaining
    }

    /// Starts streaming into `message`; the stream frees itself when the message finishes.
    func attach(to message: OpaquePointer) {
        let body = soup_server_message_get_response_body(message)
        soup_message_body_set_accumulate(body, 0)
        let me = Unmanaged.passRetained(self).toOpaque()
        let wroteChunk: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { message, data in
            guard let message, let data else { return }
            Unmanaged<FileStream>.fromOpaque(data).takeUnretainedValue().appendChunk(to: message)
        }
        let finished: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            guard let data else { return }
            let stream = Unmanaged<FileStream>.fromOpaque(data).takeRetainedValue()
            close(stream.fd)
        }
        route_signal_connect(UnsafeMutableRawPointer(message), "wrote-chunk", unsafeBitCast(wroteChunk, to: UnsafeRawPointer.self), me)
        route_signal_connect(UnsafeMutableRawPointer(message), "finished", unsafeBitCast(finished, to: UnsafeRawPointer.self), me)
        appendChunk(to: message)
    }

    private func appendChunk(to message: OpaquePointer) {
        guard remaining > 0 else { return }
        let body = soup_server_message_get_response_body(message)
        let want = Int(min(UInt64(ServerCore.chunkSize), remaining))
        guard let buffer = g_malloc(gsize(want)) else { return }
        let got = pread(fd, buffer, want, off_t(offset))
        guard got > 0 else {
            // The file shrank or vanished under us: end the body short; the client sees a short read.
            g_free(buffer)
            remaining = 0
            soup_message_body_complete(body)
            return
        }
        offset += UInt64(got)
        remaining -= UInt64(got)
        soup_message_body_append(body, SOUP_MEMORY_TAKE, buffer, gsize(got))
        if remaining == 0 { soup_message_body_complete(body) }
    }
}
