// MediaServer: the HTTP server devices fetch media from (libsoup-3): per-item token URLs, Range/206,
// HEAD, DLNA headers, streamed from disk in fixed-size chunks so memory stays flat.

import CRouteShim
import CSoup
import RouteGLib
import Foundation
import RouteCore
import Synchronization

/// Serves offered items, and nothing else, on one local address.
///
/// Each offered item gets an unguessable URL (`/m/<32 hex>/<name>`); every other path is 404, and
/// methods other than GET and HEAD are too. A GET with `Range` answers 206 with just those bytes.
/// The libsoup server lives on `GLibLoop`; offering and withdrawing are thread-safe.
public final class MediaServer: Sendable {
    /// `http://ADDRESS:PORT`, the prefix of every offered URL.
    public let baseURL: String
    private let offers = OfferTable()
    private let cores: [ServerCore]

    /// Starts listening on `address` (one local address, not a wildcard) and `port` (0: any free port).
    /// - Throws: `MediaError.server` when the address is not local or the port is taken.
    public init(address: String = "127.0.0.1", port: UInt16 = 0) throws {
        // One libsoup server per loop, each with its own listening socket on the same port
        // (SO_REUSEPORT): the kernel spreads connections across them, one core each.
        var cores: [ServerCore] = []
        var bound = port
        do {
            for loop in GLibLoop.serverLoops {
                let core = ServerCore(loop: loop, offers: offers)
                let wanted = bound
                bound = try loop.perform { try core.listen(address: address, port: wanted) }
                cores.append(core)
            }
        } catch {
            for core in cores { core.close() }
            throw error
        }
        self.cores = cores
        let host = address.contains(":") ? "[\(address)]" : address
        baseURL = "http://\(host):\(bound)"
    }

    /// Offers a file; returns its URL. The file is read on each request, so it must stay in place.
    public func offer(file path: String, mimeType: String, size: UInt64) -> String {
        add(Offer(path: path, mimeType: mimeType, source: .file(size: size)))
    }

    /// Offers bytes held in memory (cover art); returns their URL.
    public func offer(data: Data, mimeType: String) -> String {
        add(Offer(path: "", mimeType: mimeType, source: .memory(data)))
    }

    /// Offers a file converted on the fly by `profile`; returns its URL. Each GET runs its own
    /// pipeline, from the start or from the offset in `TimeSeekRange.dlna.org: npt=S-` or `?t=S`.
    public func offer(transcoding info: MediaInfo, to profile: TranscodeProfile) -> String {
        add(Offer(path: info.path, mimeType: profile.mimeType(for: info),
                  source: .pipeline(profile.pipeline(for: info), duration: info.duration)))
    }

    /// Offers a file as `plan` says (direct or converted); returns its URL and MIME type.
    public func offer(_ info: MediaInfo, as plan: Delivery) -> (url: String, mimeType: String)? {
        switch plan {
        case .direct: return (offer(file: info.path, mimeType: info.mimeType, size: info.size), info.mimeType)
        case .remux(let profile), .transcode(let profile):
            return (offer(transcoding: info, to: profile), profile.mimeType(for: info))
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
        /// A GStreamer pipeline description reading the file (see `TranscodeProfile.pipeline`).
        case pipeline(String, duration: Double?)
        /// Bytes in memory (cover art), served whole.
        case memory(Data)
    }
    let path: String
    let mimeType: String
    let source: Source
    var isImage: Bool { mimeType.hasPrefix("image/") }
}

/// The offered items by token, shared by every loop's server.
final class OfferTable: Sendable {
    let items = Mutex<[String: Offer]>([:])
}

/// The libsoup side: one SoupServer on one GLib loop, answering requests on that loop's thread.
final class ServerCore: @unchecked Sendable {
    // Safety: `server` is created, used and disconnected only on `loop`'s thread.
    let loop: GLibLoop
    let offers: OfferTable
    private var server: UnsafeMutablePointer<SoupServer>?

    /// Bytes read from disk and handed to libsoup at a time.
    static let chunkSize = 256 * 1024

    init(loop: GLibLoop, offers: OfferTable) {
        self.loop = loop
        self.offers = offers
    }

    /// Creates the server and listens on a SO_REUSEPORT socket; returns the port. Loop thread only.
    func listen(address: String, port: UInt16) throws -> UInt16 {
        guard let object = g_object_new_with_properties(soup_server_get_type(), 0, nil, nil) else {
            throw MediaError.server("libsoup could not create a server")
        }
        let server = UnsafeMutableRawPointer(object).assumingMemoryBound(to: SoupServer.self)
        route_object_set_string(object, "server-header", "route ")
        soup_server_add_handler(server, nil, { _, message, path, query, data in
            guard let message, let path, let data else { return }
            Unmanaged<ServerCore>.fromOpaque(data).takeUnretainedValue().answer(message, path: String(cString: path), query: query)
        }, Unmanaged.passRetained(self).toOpaque(), { data in
            Unmanaged<ServerCore>.fromOpaque(data!).release()
        })
        self.server = server
        let socket: UnsafeMutablePointer<GSocket>
        do {
            socket = try Self.listeningSocket(address: address, port: port)
        } catch {
            disconnect()
            throw error
        }
        defer { g_object_unref(UnsafeMutableRawPointer(socket)) }
        var error: UnsafeMutablePointer<GError>?
        guard soup_server_listen_socket(server, socket, SoupServerListenOptions(rawValue: 0), &error) != 0 else {
            disconnect()
            throw MediaError.server(GLibError("cannot serve on \(address):\(port)", error).description)
        }
        guard let local = g_socket_get_local_address(socket, nil) else { return port }
        defer { g_object_unref(UnsafeMutableRawPointer(local)) }
        return UInt16(g_inet_socket_address_get_port(UnsafeMutableRawPointer(local).assumingMemoryBound(to: GInetSocketAddress.self)))
    }

    /// A bound, listening TCP socket with SO_REUSEPORT, so every loop's server can share the port.
    /// Made with POSIX calls: g_socket_bind turns SO_REUSEPORT off again for TCP sockets.
    private static func listeningSocket(address: String, port: UInt16) throws -> UnsafeMutablePointer<GSocket> {
        guard let (numeric, length, family) = socketAddress(address, port: port) else {
            throw MediaError.server("\"\(address)\" is not an IP address of this machine")
        }
        var storage = numeric
        let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard fd >= 0, bound == 0, Glibc.listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { Glibc.close(fd) }
            throw MediaError.server("cannot listen on \(address):\(port): \(reason)")
        }
        var error: UnsafeMutablePointer<GError>?
        guard let socket = g_socket_new_from_fd(fd, &error) else {
            Glibc.close(fd)
            throw MediaError.server(GLibError("cannot use the listening socket", error).description)
        }
        return socket
    }

    /// A numeric IPv4 or IPv6 address and port as a sockaddr, its length and family; nil when not numeric.
    private static func socketAddress(_ address: String, port: UInt16) -> (sockaddr_storage, socklen_t, Int32)? {
        var storage = sockaddr_storage()
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, address, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeBytes(of: v4) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size), AF_INET)
        }
        if inet_pton(AF_INET6, address, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            withUnsafeBytes(of: v6) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
            return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size), AF_INET6)
        }
        return nil
    }

    /// Stops serving (any thread).
    func close() {
        _ = try? loop.perform { self.disconnect() }
    }

    private func disconnect() {
        guard let server else { return }
        soup_server_disconnect(server)
        g_object_unref(UnsafeMutableRawPointer(server))
        self.server = nil
    }

    /// Answers one request (loop thread).
    private func answer(_ message: OpaquePointer, path: String, query: OpaquePointer?) {
        let method = String(cString: soup_server_message_get_method(message))
        let parts = path.split(separator: "/")
        guard method == "GET" || method == "HEAD", parts.count >= 2, parts.count <= 3, parts[0] == "m",
              let offer = offers.items.withLock({ $0[String(parts[1])] }) else {
            soup_server_message_set_status(message, 404, nil)
            return
        }
        let response = soup_server_message_get_response_headers(message)
        soup_message_headers_set_content_type(response, offer.mimeType, nil)
        soup_message_headers_replace(response, "transferMode.dlna.org", offer.isImage ? "Interactive" : "Streaming")
        switch offer.source {
        case .file(let size):
            answerFile(message, offer: offer, size: size, head: method == "HEAD")
        case .memory(let data):
            soup_message_headers_set_content_length(response, goffset(data.count))
            soup_server_message_set_status(message, 200, nil)
            guard method == "GET", !data.isEmpty else { return }
            data.withUnsafeBytes { bytes in
                soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_COPY,
                                         bytes.baseAddress, gsize(bytes.count))
            }
        case .pipeline(let description, let duration):
            soup_message_headers_replace(response, "contentFeatures.dlna.org", MediaItem.dlnaFeatures(converted: true))
            let start = TimeSeek.start(headers: soup_server_message_get_request_headers(message), query: query)
            if let start, let duration {
                soup_message_headers_replace(response, "TimeSeekRange.dlna.org", TimeSeek.header(start: start, duration: duration))
            }
            soup_message_headers_set_encoding(response, SOUP_ENCODING_CHUNKED)
            soup_server_message_set_status(message, 200, nil)
            guard method == "GET" else { return }
            PipelineStream(loop: loop, path: offer.path, description: description, start: start ?? 0).attach(to: message)
        }
    }

    private func answerFile(_ message: OpaquePointer, offer: Offer, size: UInt64, head: Bool) {
        let request = soup_server_message_get_request_headers(message)
        let response = soup_server_message_get_response_headers(message)
        soup_message_headers_replace(response, "Accept-Ranges", "bytes")
        soup_message_headers_replace(response, "contentFeatures.dlna.org", MediaItem.dlnaFeatures(converted: false))
        var start: UInt64 = 0
        var length = size
        if soup_message_headers_get_one(request, "Range") != nil {
            var ranges: UnsafeMutablePointer<SoupRange>?
            var count: Int32 = 0
            guard soup_message_headers_get_ranges(request, goffset(size), &ranges, &count) != 0, let ranges, count > 0,
                  ranges[0].start >= 0, ranges[0].start <= ranges[0].end, ranges[0].end < goffset(size) else {
                if let ranges { soup_message_headers_free_ranges(request, ranges) }
                soup_message_headers_replace(response, "Content-Range", "bytes */\(size)")
                soup_server_message_set_status(message, 416, nil)
                return
            }
            // Several ranges in one request are rare from media players: the first one is served.
            start = UInt64(ranges[0].start)
            length = UInt64(ranges[0].end) - start + 1
            soup_message_headers_set_content_range(response, ranges[0].start, ranges[0].end, goffset(size))
            soup_message_headers_free_ranges(request, ranges)
            soup_server_message_set_status(message, 206, nil)
        } else {
            soup_server_message_set_status(message, 200, nil)
        }
        soup_message_headers_set_content_length(response, goffset(length))
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
