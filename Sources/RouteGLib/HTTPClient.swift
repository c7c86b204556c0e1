// HTTPClient: GET requests to devices on the LAN over libsoup-3, with a cap on the body, a deadline, no
// redirects and no proxies — what a device answers is read no further than route will use; and a first look at a
// URL on the web (its status, type, where it redirects, its first bytes).

import CSoup
import RouteGIO
import Foundation
import Synchronization

/// A response whose body was read to its end.
public struct HTTPResponse: Sendable {
    /// The HTTP status code.
    public let status: Int
    /// The `Content-Type` header, if any.
    public let contentType: String?
    /// The whole body (the first bytes only, from `peek`).
    public let body: Data
    /// The `Location` header of a redirect, if any (redirects are never followed here).
    public var location: String? = nil
}

/// Why a request gave no usable response; `description` says so in words.
public enum HTTPError: Error, Equatable, CustomStringConvertible {
    /// The URL is not an http:// URL libsoup can request.
    case invalidURL(String)
    /// The body (or its announced length) is longer than the caller takes.
    case tooLarge(url: String, limit: Int)
    /// No complete answer within the deadline.
    case timedOut(url: String, seconds: Int)
    /// The connection failed or broke off; `reason` is libsoup's or GIO's.
    case failed(url: String, reason: String)
    /// The calling task was cancelled.
    case cancelled

    public var description: String {
        switch self {
        case .invalidURL(let url): return "\(url) is not an http(s) URL route can request"
        case .tooLarge(let url, let limit): return "\(url) sent more than \(limit / 1024) KiB"
        case .timedOut(let url, let seconds): return "\(url) did not answer within \(seconds) s"
        case .failed(let url, let reason): return "\(url): \(reason)"
        case .cancelled: return "the request was cancelled"
        }
    }
}

/// A libsoup session on a GLib loop of its own, for small requests to devices (descriptions, SCPDs).
///
/// Thread-safe: `get` may be called from any task. The session and every request object live on the
/// client's loop thread; a cancelled task cancels its request at once.
public final class HTTPClient: Sendable {
    /// The process-wide client.
    public static let shared = HTTPClient()

    private let loop = GLibLoop(name: "route-http-client")
    private nonisolated(unsafe) let session: UnsafeMutablePointer<SoupSession>

    private init() {
        struct Made: @unchecked Sendable { let session: UnsafeMutablePointer<SoupSession> }
        let made = try! loop.perform { () -> Made in
            let session = soup_session_new()!
            // Devices are on the LAN: a proxy configured for the web would only get in the way.
            soup_session_set_proxy_resolver(session, nil)
            soup_session_set_timeout(session, 10)
            return Made(session: session)
        }
        session = made.session
    }

    /// Fetches `url` and returns its status and body.
    /// - Throws: `HTTPError` when the URL is not http://, the body exceeds `limit` bytes, no complete
    ///   answer came within `timeout`, the connection failed, or the task was cancelled.
    public func get(_ url: String, limit: Int, timeout: Duration) async throws(HTTPError) -> HTTPResponse {
        guard url.lowercased().hasPrefix("http://") else { throw .invalidURL(url) }
        return try await send(Fetch(url: url, limit: limit, seconds: Int(timeout.components.seconds), truncates: false), timeout: timeout)
    }

    /// A look at an http(s) URL: its status, type and redirect, and the start of its body — what the first read
    /// brought, or with `whole` all of it — at most `bytes` (what is past them is not read). Redirects are not
    /// followed: the caller decides where it may go.
    /// - Throws: `HTTPError` when the URL is not http(s), no answer came within `timeout`, the connection failed,
    ///   or the task was cancelled.
    public func peek(_ url: String, bytes: Int, whole: Bool = false, timeout: Duration) async throws(HTTPError) -> HTTPResponse {
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { throw .invalidURL(url) }
        let fetch = Fetch(url: url, limit: bytes, seconds: Int(timeout.components.seconds), truncates: true)
        fetch.firstReadOnly = !whole
        return try await send(fetch, timeout: timeout)
    }

    private func send(_ fetch: Fetch, timeout: Duration) async throws(HTTPError) -> HTTPResponse {
        let url = fetch.url
        nonisolated(unsafe) let session = self.session
        let result: Result<HTTPResponse, HTTPError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                fetch.continuation.withLock { $0 = continuation }
                loop.async { fetch.start(session) }
                DispatchQueue.global().asyncAfter(deadline: .now() + Double(timeout.components.seconds)
                    + Double(timeout.components.attoseconds) / 1e18) { [loop] in
                    loop.async { fetch.cancel(because: .timedOut(url: url, seconds: Int(timeout.components.seconds))) }
                }
            }
        } onCancel: { [loop] in
            loop.async { fetch.cancel(because: .cancelled) }
        }
        return try result.get()
    }
}

/// One GET in flight: libsoup's send, then reads until the end of the body, on the client's loop thread.
private final class Fetch: @unchecked Sendable {
    // Safety: `message`, `stream`, `body` and the cancellable's cancelling happen only on the loop thread;
    // `continuation` and `reason` are behind Mutexes; `cancellable` is freed with the Fetch.
    let url: String
    let limit: Int
    let seconds: Int
    /// Whether a body longer than `limit` is cut there (a peek) rather than refused.
    let truncates: Bool
    /// Whether the body ends with what the first read brought (a peek at a stream that may never end). Set before start.
    var firstReadOnly = false
    let continuation = Mutex<CheckedContinuation<Result<HTTPResponse, HTTPError>, Never>?>(nil)
    private let reason = Mutex<HTTPError?>(nil)
    private let cancellable = g_cancellable_new()!
    private var message: OpaquePointer?
    private var stream: UnsafeMutablePointer<GInputStream>?
    private var body = Data()
    private var status = 0
    private var contentType: String?
    private var location: String?
    private static let chunk = 64 * 1024

    init(url: String, limit: Int, seconds: Int, truncates: Bool) {
        self.url = url
        self.limit = limit
        self.seconds = seconds
        self.truncates = truncates
    }

    /// Cancels the request (loop thread: libsoup's handlers of the cancellable run in the thread that cancels, and a
    /// cancel from another thread raced the loop's own work on the message — route crashed in libsoup so, on a thread
    /// of the pool, when discovery ended with a description fetch in flight); the first reason given is the one reported.
    func cancel(because why: HTTPError) {
        reason.withLock { if $0 == nil { $0 = why } }
        g_cancellable_cancel(cancellable)
    }

    /// Sends the request (loop thread).
    func start(_ session: UnsafeMutablePointer<SoupSession>) {
        guard let message = soup_message_new("GET", url) else { finish(.failure(.invalidURL(url))); return }
        self.message = message
        // A redirect could send route anywhere (the user's own localhost): devices answer where they are.
        soup_message_set_flags(message, SOUP_MESSAGE_NO_REDIRECT)
        soup_session_send_async(session, message, G_PRIORITY_DEFAULT, cancellable, { source, result, data in
            let fetch = Unmanaged<Fetch>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let stream = soup_session_send_finish(OpaquePointer(source).map { UnsafeMutablePointer<SoupSession>($0) }, result, &error)
            fetch.sent(stream, error)
        }, Unmanaged.passRetained(self).toOpaque())
    }

    private func sent(_ stream: UnsafeMutablePointer<GInputStream>?, _ error: UnsafeMutablePointer<GError>?) {
        guard let stream else { finish(.failure(failure(error))); return }
        self.stream = stream
        status = Int(soup_message_get_status(message).rawValue)
        let headers = soup_message_get_response_headers(message)
        if let type = soup_message_headers_get_one(headers, "Content-Type") { contentType = String(cString: type) }
        if let target = soup_message_headers_get_one(headers, "Location") { location = String(cString: target) }
        if !truncates, soup_message_headers_get_content_length(headers) > goffset(limit) {
            finish(.failure(.tooLarge(url: url, limit: limit)))
            return
        }
        readNext()
    }

    private func readNext() {
        g_input_stream_read_bytes_async(stream, gsize(Self.chunk), G_PRIORITY_DEFAULT, cancellable, { source, result, data in
            let fetch = Unmanaged<Fetch>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let bytes = g_input_stream_read_bytes_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: GInputStream.self), result, &error)
            fetch.read(bytes, error)
        }, Unmanaged.passRetained(self).toOpaque())
    }

    private func read(_ bytes: OpaquePointer?, _ error: UnsafeMutablePointer<GError>?) {
        guard let bytes else { finish(.failure(failure(error))); return }
        defer { g_bytes_unref(bytes) }
        var size: gsize = 0
        let pointer = g_bytes_get_data(bytes, &size)
        let response = { HTTPResponse(status: self.status, contentType: self.contentType, body: self.body, location: self.location) }
        guard size > 0, let pointer else {
            finish(.success(response()))
            return
        }
        guard body.count + Int(size) <= limit else {
            guard truncates else { return finish(.failure(.tooLarge(url: url, limit: limit))) }
            body.append(pointer.assumingMemoryBound(to: UInt8.self), count: limit - body.count)
            return finish(.success(response()))
        }
        body.append(pointer.assumingMemoryBound(to: UInt8.self), count: Int(size))
        if firstReadOnly { return finish(.success(response())) }
        readNext()
    }

    /// The error to report for a GError (freed here): the cancel reason when one was given.
    private func failure(_ error: UnsafeMutablePointer<GError>?) -> HTTPError {
        let message = GLibError("", error).description.dropFirst(2)
        return reason.withLock { $0 } ?? .failed(url: url, reason: message.isEmpty ? "no answer" : String(message))
    }

    /// Reports the outcome once and releases the request (loop thread).
    private func finish(_ result: Result<HTTPResponse, HTTPError>) {
        if let stream {
            g_input_stream_close(stream, nil, nil)
            g_object_unref(UnsafeMutableRawPointer(stream))
            self.stream = nil
        }
        if let message {
            g_object_unref(UnsafeMutableRawPointer(message))
            self.message = nil
        }
        continuation.withLock { $0.take() }?.resume(returning: result)
    }

    deinit {
        // Here, not in finish: a deadline or a cancelled task may still cancel after the end.
        g_object_unref(UnsafeMutableRawPointer(cancellable))
    }
}
