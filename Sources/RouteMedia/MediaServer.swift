// MediaServer: the HTTP server devices fetch media from (libsoup-3): per-item token URLs, Range/206,
// HEAD, DLNA headers, streamed from disk in fixed-size chunks so memory stays flat.

import CRouteShim
import CSoup
import Foundation
import Synchronization

/// Serves offered items, and nothing else, on one local address.
///
/// Each offered item gets an unguessable URL (`/m/<32 hex>/<name>`); every other path is 404, and
/// methods other than GET and HEAD are too. A GET with `Range` answers 206 with just those bytes.
/// The libsoup server lives on `GLibLoop`; offering and withdrawing are thread-safe.
public final class MediaServer: Sendable {
    /// `http://ADDRESS:PORT`, the prefix of every offered URL.
    public let baseURL: String
    private let core: ServerCore

    /// Starts listening on `address` (one local address, not a wildcard) and `port` (0: any free port).
    /// - Throws: `MediaError.server` when the address is not local or the port is taken.
    public init(address: String = "127.0.0.1", port: UInt16 = 0) throws {
        let core = ServerCore()
        let bound = try GLibLoop.shared.perform { try core.listen(address: address, port: port) }
        self.core = core
        let host = address.contains(":") ? "[\(address)]" : address
        baseURL = "http://\(host):\(bound)"
    }

    /// Offers a file; returns its URL. The file is read on each request, so it must stay in place.
    public func offer(file path: String, mimeType: String, size: UInt64) -> String {
        add(Offer(path: path, mimeType: mimeType, source: .file(size: size)))
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
        case .pipeline: name = "media." + (offer.mimeType.split(separator: "/").last.map(String.init) ?? "bin")
        }
        core.offers.withLock { $0[token] = offer }
        return "\(baseURL)/m/\(token)/\(name)"
    }

    /// Stops serving an offered URL; later requests get 404.
    public func withdraw(_ url: String) {
        guard let token = Self.token(in: url) else { return }
        _ = core.offers.withLock { $0.removeValue(forKey: token) }
    }

    /// Stops listening and drops every offer. Idempotent.
    public func close() {
        core.offers.withLock { $0.removeAll() }
        let core = self.core
        _ = try? GLibLoop.shared.perform { core.disconnect() }
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

/// One offered item: a file served as it is, or through a conversion pipeline.
struct Offer: Sendable {
    enum Source: Sendable {
        case file(size: UInt64)
        /// A GStreamer pipeline description reading the file (see `TranscodeProfile.pipeline`).
        case pipeline(String, duration: Double?)
    }
    let path: String
    let mimeType: String
    let source: Source
    var isImage: Bool { mimeType.hasPrefix("image/") }
}

/// The libsoup side: owns the SoupServer, answers requests on the GLib loop thread.
final class ServerCore: @unchecked Sendable {
    // Safety: `server` is created, used and disconnected only on the GLib loop thread.
    let offers = Mutex<[String: Offer]>([:])
    private var server: UnsafeMutablePointer<SoupServer>?

    /// Bytes read from disk and handed to libsoup at a time.
    static let chunkSize = 256 * 1024

    /// Creates the server and listens; returns the port. Loop thread only.
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
        guard let socketAddress = g_inet_socket_address_new_from_string(address, guint(port)) else {
            g_object_unref(object)
            throw MediaError.server("\"\(address)\" is not an IP address of this machine")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(socketAddress)) }
        var error: UnsafeMutablePointer<GError>?
        guard soup_server_listen(server, socketAddress, SoupServerListenOptions(rawValue: 0), &error) != 0 else {
            g_object_unref(object)
            throw MediaError.server(GLibError("cannot listen on \(address):\(port)", error).description)
        }
        self.server = server
        var bound = port
        if let listeners = soup_server_get_listeners(server) {
            if let socket = listeners.pointee.data,
               let local = g_socket_get_local_address(socket.assumingMemoryBound(to: GSocket.self), nil) {
                bound = UInt16(g_inet_socket_address_get_port(UnsafeMutableRawPointer(local).assumingMemoryBound(to: GInetSocketAddress.self)))
                g_object_unref(UnsafeMutableRawPointer(local))
            }
            g_slist_free(listeners)
        }
        return bound
    }

    func disconnect() {
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
              let offer = offers.withLock({ $0[String(parts[1])] }) else {
            soup_server_message_set_status(message, 404, nil)
            return
        }
        let response = soup_server_message_get_response_headers(message)
        soup_message_headers_set_content_type(response, offer.mimeType, nil)
        soup_message_headers_replace(response, "transferMode.dlna.org", offer.isImage ? "Interactive" : "Streaming")
        switch offer.source {
        case .file(let size):
            answerFile(message, offer: offer, size: size, head: method == "HEAD")
        case .pipeline(let description, let duration):
            soup_message_headers_replace(response, "contentFeatures.dlna.org", DLNA.contentFeatures(transcoded: true))
            let start = TimeSeek.start(headers: soup_server_message_get_request_headers(message), query: query)
            if let start, let duration {
                soup_message_headers_replace(response, "TimeSeekRange.dlna.org", TimeSeek.header(start: start, duration: duration))
            }
            soup_message_headers_set_encoding(response, SOUP_ENCODING_CHUNKED)
            soup_server_message_set_status(message, 200, nil)
            guard method == "GET" else { return }
            PipelineStream(path: offer.path, description: description, start: start ?? 0).attach(to: message)
        }
    }

    private func answerFile(_ message: OpaquePointer, offer: Offer, size: UInt64, head: Bool) {
        let request = soup_server_message_get_request_headers(message)
        let response = soup_server_message_get_response_headers(message)
        soup_message_headers_replace(response, "Accept-Ranges", "bytes")
        soup_message_headers_replace(response, "contentFeatures.dlna.org", DLNA.contentFeatures(transcoded: false))
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

/// DLNA header values.
enum DLNA {
    /// `contentFeatures.dlna.org`: OP=01 (byte seek) for files, OP=10 (time seek) and CI=1 for transcoded
    /// streams; flags: streaming transfer, background and connection stalling.
    static func contentFeatures(transcoded: Bool) -> String {
        "DLNA.ORG_OP=\(transcoded ? "10" : "01");DLNA.ORG_CI=\(transcoded ? 1 : 0);DLNA.ORG_FLAGS=01700000000000000000000000000000"
    }
}
