// HTTPServer: libsoup's server side behind Swift — the one place route's media server touches libsoup. A server on one
// GLib loop accepts from a listening socket, admits each connection by its client's address, closes connections that
// send no request in time, and hands every request to a handler as an HTTPServerMessage.

import CSoup
import Foundation
import RouteGIO

/// Which connections a server keeps: asked for each client address as it connects, told when the connection is gone.
public struct HTTPAdmission: Sendable {
    /// Whether a new connection from this client address is taken (false: it is closed at once).
    public let admit: @Sendable (_ client: String) -> Bool
    /// A connection `admit` took is gone.
    public let release: @Sendable (_ client: String) -> Void
    /// How long a connection may wait before it has sent a whole request.
    public let requestTimeout: Duration

    /// An admission policy from its parts.
    public init(requestTimeout: Duration, admit: @escaping @Sendable (String) -> Bool, release: @escaping @Sendable (String) -> Void) {
        self.admit = admit
        self.release = release
        self.requestTimeout = requestTimeout
    }
}

/// One libsoup server on one GLib loop, answering requests on that loop's thread. `start` and every handler run on the
/// loop's thread; `close` may be called from any thread.
public final class HTTPServer: @unchecked Sendable {
    // Safety: everything mutable is created, used and released only on `loop`'s thread.
    private let loop: GLibLoop
    private let serverHeader: String
    private let admission: HTTPAdmission
    private let answer: (HTTPServerMessage) -> Void
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

    /// Whether libsoup may keep connections open between requests: before 3.3, a kept-alive connection that
    /// the client closes is never closed on our side (it stays in CLOSE-WAIT and holds its descriptor for
    /// ever; fixed by libsoup's d20c6601, in 3.3.0), so every response there says `Connection: close`.
    public static let keepAlive = soup_check_version(3, 3, 0) != 0

    /// A server that will answer on `loop` with `answer`, naming itself `serverHeader`; nothing happens until `start`.
    public init(loop: GLibLoop, serverHeader: String, admission: HTTPAdmission, answer: @escaping (HTTPServerMessage) -> Void) {
        self.loop = loop
        self.serverHeader = serverHeader
        self.admission = admission
        self.answer = answer
    }

    /// Creates the libsoup server and starts accepting from a duplicate of `fd` (loop thread only).
    /// - Throws: `GLibError` when libsoup cannot make a server or GIO cannot use the socket.
    public func start(listening fd: Int32) throws {
        guard let object = g_object_new_with_properties(soup_server_get_type(), 0, nil, nil) else {
            throw GLibError("libsoup could not create a server", nil)
        }
        let server = UnsafeMutableRawPointer(object).assumingMemoryBound(to: SoupServer.self)
        self.server = server
        route_soup_set_string(object, "server-header", serverHeader)
        let me = Unmanaged.passUnretained(self).toOpaque()
        soup_server_add_handler(server, nil, { _, message, path, query, data in
            guard let message, let path, let data else { return }
            let server = Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue()
            server.answer(HTTPServerMessage(message, path: String(cString: path), query: HTTPServerMessage.dictionary(query)))
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            Unmanaged<HTTPServer>.fromOpaque(data!).release()
        })
        let started: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, message, data in
            guard let message, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().requestStarted(message)
        }
        let read: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, message, data in
            guard let message, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().requestRead(message)
        }
        let finished: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, message, data in
            guard let message, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().requestFinished(message)
        }
        route_soup_signal_connect(object, "request-started", unsafeBitCast(started, to: UnsafeRawPointer.self), me)
        route_soup_signal_connect(object, "request-read", unsafeBitCast(read, to: UnsafeRawPointer.self), me)
        route_soup_signal_connect(object, "request-finished", unsafeBitCast(finished, to: UnsafeRawPointer.self), me)
        route_soup_signal_connect(object, "request-aborted", unsafeBitCast(finished, to: UnsafeRawPointer.self), me)

        var error: UnsafeMutablePointer<GError>?
        let copy = dup(fd)
        guard copy >= 0, let listener = g_socket_new_from_fd(copy, &error) else {
            if copy >= 0 { Glibc.close(copy) }
            disconnect()
            throw GLibError("cannot use the listening socket", error)
        }
        self.listener = listener
        g_socket_set_blocking(listener, 0)
        let context = g_main_context_get_thread_default()
        let accept: @convention(c) (UnsafeMutablePointer<GSocket>?, GIOCondition, UnsafeMutableRawPointer?) -> gboolean = { _, _, data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().acceptAll()
            return 1 // G_SOURCE_CONTINUE
        }
        let acceptSource = g_socket_create_source(listener, G_IO_IN, nil)!
        g_source_set_callback(acceptSource, unsafeBitCast(accept, to: GSourceFunc.self), me, nil)
        g_source_attach(acceptSource, context)
        let sweep: @convention(c) (UnsafeMutableRawPointer?) -> gboolean = { data in
            Unmanaged<HTTPServer>.fromOpaque(data!).takeUnretainedValue().sweep()
            return 1
        }
        let sweepSource = g_timeout_source_new(1000)!
        g_source_set_callback(sweepSource, sweep, me, nil)
        g_source_attach(sweepSource, context)
        sources = [acceptSource, sweepSource]
    }

    /// Stops serving and closes every connection (any thread).
    public func close() {
        _ = try? loop.perform { self.disconnect() }
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
            guard let remote, let local, admission.admit(client) else {
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
            } else if let since = connection.awaitingSince, now - since > admission.requestTimeout {
                g_socket_shutdown(connection.socket, 1, 1, nil)
                connections[key]?.awaitingSince = nil
            }
        }
    }

    private func forget(_ key: String, _ connection: Connection) {
        connections[key] = nil
        admission.release(connection.client)
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
    fileprivate static func describe(_ address: UnsafeMutablePointer<GSocketAddress>?) -> (client: String, key: String) {
        guard let address, g_type_check_instance_is_a(UnsafeMutablePointer<GTypeInstance>(OpaquePointer(address)), g_inet_socket_address_get_type()) != 0 else {
            return ("?", "?")
        }
        let inet = UnsafeMutableRawPointer(address).assumingMemoryBound(to: GInetSocketAddress.self)
        let host = g_inet_socket_address_get_address(inet).flatMap { g_inet_address_to_string($0) }
        defer { g_free(host) }
        let client = host.map { String(cString: $0) } ?? "?"
        return (client, "\(client):\(g_inet_socket_address_get_port(inet))")
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
}

/// One request and its response. Used on the server loop's thread only; holds its own reference to libsoup's message,
/// so a response may be finished later (a body streamed as it is made).
public final class HTTPServerMessage: @unchecked Sendable {
    // Safety: every method touches libsoup and is called on the server loop's thread only.
    private let message: OpaquePointer
    /// The request's method (`GET`, `HEAD`, …).
    public let method: String
    /// The request's path, without its query.
    public let path: String
    /// The request's query parameters.
    public let query: [String: String]

    init(_ message: OpaquePointer, path: String, query: [String: String]) {
        g_object_ref(UnsafeMutableRawPointer(message))
        self.message = message
        self.path = path
        self.query = query
        method = String(cString: soup_server_message_get_method(message))
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(message)) }

    static func dictionary(_ table: OpaquePointer?) -> [String: String] {
        guard let table else { return [:] }
        var entries: [String: String] = [:]
        var iterator = GHashTableIter()
        g_hash_table_iter_init(&iterator, table)
        var key: gpointer?
        var value: gpointer?
        while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
            guard let key, let value else { continue }
            entries[String(cString: key.assumingMemoryBound(to: CChar.self))] = String(cString: value.assumingMemoryBound(to: CChar.self))
        }
        return entries
    }

    /// The address the request came from ("10.0.0.5"; "?" when libsoup does not say).
    public var client: String { HTTPServer.describe(soup_server_message_get_remote_address(message)).client }

    /// A request header's value, if the request has it.
    public func requestHeader(_ name: String) -> String? {
        soup_message_headers_get_one(soup_server_message_get_request_headers(message), name).map { String(cString: $0) }
    }

    /// Sets a response header, replacing any value it had.
    public func setHeader(_ name: String, _ value: String) {
        soup_message_headers_replace(soup_server_message_get_response_headers(message), name, value)
    }

    /// Sets the response's `Content-Type`.
    public func setContentType(_ type: String) {
        soup_message_headers_set_content_type(soup_server_message_get_response_headers(message), type, nil)
    }

    /// The body is `length` bytes long (`Content-Length`).
    public func setContentLength(_ length: UInt64) {
        let headers = soup_server_message_get_response_headers(message)
        soup_message_headers_set_encoding(headers, SOUP_ENCODING_CONTENT_LENGTH)
        soup_message_headers_set_content_length(headers, goffset(length))
    }

    /// The body is bytes `first` to `last` (inclusive) of `size` (`Content-Range`).
    public func setContentRange(first: UInt64, last: UInt64, size: UInt64) {
        soup_message_headers_set_content_range(soup_server_message_get_response_headers(message), goffset(first), goffset(last), goffset(size))
    }

    /// The body is sent in chunks as it is made, its length unknown.
    public func setChunked() {
        soup_message_headers_set_encoding(soup_server_message_get_response_headers(message), SOUP_ENCODING_CHUNKED)
    }

    /// Sets the response's status code.
    public func setStatus(_ code: Int) {
        soup_server_message_set_status(message, guint(code), nil)
    }

    /// Appends a copy of `bytes` to the body.
    public func append(copying bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_COPY, base, gsize(bytes.count))
    }

    /// Appends `count` bytes at `buffer` (from `g_malloc`) to the body; libsoup frees them once written.
    public func append(taking buffer: UnsafeMutableRawPointer, count: Int) {
        soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_TAKE, buffer, gsize(count))
    }

    /// Appends up to `count` bytes of the file `fd` from `offset` to the body; returns how many were read (0 or less: the
    /// file ended or could not be read, and nothing was appended).
    public func append(readingFrom fd: Int32, offset: UInt64, count: Int) -> Int {
        guard count > 0, let buffer = g_malloc(gsize(count)) else { return 0 }
        let got = pread(fd, buffer, count, off_t(offset))
        guard got > 0 else {
            g_free(buffer)
            return got
        }
        append(taking: buffer, count: got)
        return got
    }

    /// The body has no more to come.
    public func completeBody() {
        soup_message_body_complete(soup_server_message_get_response_body(message))
    }

    /// Holds the response until `unpause` (a body not made yet).
    public func pause() { soup_server_message_pause(message) }

    /// Lets libsoup go on with the response.
    public func unpause() { soup_server_message_unpause(message) }

    /// Streams the body: libsoup keeps no copy of what it wrote, calls `wroteChunk` after each appended chunk is written
    /// and `finished` once when the response is done or the client left. Both closures (and what they hold) live until then.
    public func stream(wroteChunk: @escaping () -> Void, finished: @escaping () -> Void) {
        soup_message_body_set_accumulate(soup_server_message_get_response_body(message), 0)
        let handlers = Unmanaged.passRetained(StreamHandlers(wroteChunk: wroteChunk, finished: finished)).toOpaque()
        let wrote: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            guard let data else { return }
            Unmanaged<StreamHandlers>.fromOpaque(data).takeUnretainedValue().wroteChunk()
        }
        let done: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            guard let data else { return }
            Unmanaged<StreamHandlers>.fromOpaque(data).takeRetainedValue().finished()
        }
        route_soup_signal_connect(UnsafeMutableRawPointer(message), "wrote-chunk", unsafeBitCast(wrote, to: UnsafeRawPointer.self), handlers)
        route_soup_signal_connect(UnsafeMutableRawPointer(message), "finished", unsafeBitCast(done, to: UnsafeRawPointer.self), handlers)
    }

    /// Cuts the connection under the response: the client sees a broken transfer, not an end.
    public func closeConnection() {
        guard let connection = soup_server_message_steal_connection(message) else { return }
        g_io_stream_close(connection, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    private final class StreamHandlers {
        let wroteChunk: () -> Void
        let finished: () -> Void
        init(wroteChunk: @escaping () -> Void, finished: @escaping () -> Void) {
            self.wroteChunk = wroteChunk
            self.finished = finished
        }
    }
}
