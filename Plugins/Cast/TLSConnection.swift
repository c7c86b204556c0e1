// TLSConnection: a TLS client connection over OpenSSL, the one place route calls libssl. It connects with a
// deadline, writes whole buffers, and reads on a thread of its own, turning OpenSSL's error codes into
// TLSError with words a person can act on.

import COpenSSL
import Foundation
import RouteCore
import Synchronization

/// Why a TLS connection failed.
public struct TLSError: Error, Equatable, CustomStringConvertible {
    /// What happened, in words (`connection refused`, `TLS handshake failed: …`).
    public var reason: String
    public var description: String { reason }
}

/// One TLS connection to a host, for a Cast channel.
///
/// Thread-safe: `send` and `close` may be called from any thread while `receive` blocks on another; one lock
/// serialises every call into the SSL object (OpenSSL does not allow two at once). The socket is
/// non-blocking: whoever must wait for it waits in `poll`, never inside OpenSSL.
final class TLSConnection: Sendable {
    /// The socket and SSL object, only touched under `handle`'s lock.
    private struct Handle: @unchecked Sendable {
        var ssl: OpaquePointer?
        var closed = false
    }
    private let handle: Mutex<Handle>
    private let fd: Int32
    /// The peer, `host:port`, for messages.
    let peer: String
    /// The SHA-256 of the peer's certificate (hex), what tells one receiver from another that claims its id.
    let fingerprint: String?

    /// Receivers' certificates are self-signed by the device (Google signs a separate device-authentication
    /// challenge that route does not use), so nothing is verified: the channel is encrypted, not
    /// authenticated. One context serves every connection.
    private struct Context: @unchecked Sendable { let context: OpaquePointer? }
    private static let shared: Context = {
        let context = SSL_CTX_new(TLS_client_method())
        if let context { SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil) }
        return Context(context: context)
    }()

    private init(fd: Int32, ssl: OpaquePointer, peer: String) {
        self.fd = fd
        self.peer = peer
        fingerprint = Self.fingerprint(of: ssl)
        handle = Mutex(Handle(ssl: ssl))
    }

    /// The SHA-256 of the certificate the peer presented in the handshake, as hex.
    private static func fingerprint(of ssl: OpaquePointer) -> String? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else { return nil }
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    deinit {
        handle.withLock { h in
            if let ssl = h.ssl { SSL_free(ssl) }
            h.ssl = nil
        }
        Glibc.close(fd)
    }

    /// Connects to `host` (an IPv4 or IPv6 address) and completes the TLS handshake, within `timeout`.
    /// Blocks the calling thread: call it from `BlockingThreads`.
    static func connect(host: String, port: UInt16, timeout: Duration) throws -> TLSConnection {
        let peer = "\(host):\(port)"
        let deadline = ContinuousClock.now + timeout
        let fd = try openTCP(host: host, port: port, until: deadline)
        var ownsFD = true
        defer { if ownsFD { Glibc.close(fd) } }
        guard let context = shared.context, let ssl = SSL_new(context) else {
            throw TLSError(reason: "OpenSSL could not start a session: " + openSSLErrors())
        }
        guard SSL_set_fd(ssl, fd) == 1 else {
            SSL_free(ssl)
            throw TLSError(reason: "OpenSSL could not take the socket: " + openSSLErrors())
        }
        while true {
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let code = SSL_get_error(ssl, result)
            do {
                switch code {
                case SSL_ERROR_WANT_READ: try wait(fd, for: Int16(POLLIN), until: deadline, doing: "in the TLS handshake")
                case SSL_ERROR_WANT_WRITE: try wait(fd, for: Int16(POLLOUT), until: deadline, doing: "in the TLS handshake")
                default: throw TLSError(reason: "TLS handshake failed: " + describe(code, result: result))
                }
            } catch {
                SSL_free(ssl)
                throw error
            }
        }
        ownsFD = false
        return TLSConnection(fd: fd, ssl: ssl, peer: peer)
    }

    /// A connected, non-blocking TCP socket to `host:port`, made before `deadline`. Blocks the calling thread.
    static func openTCP(host: String, port: UInt16, until deadline: ContinuousClock.Instant) throws -> Int32 {
        guard let address = SocketAddress(numericHost: host, port: port) else {
            throw TLSError(reason: "\(host) is not an IP address")
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TLSError(reason: "no socket: " + String(cString: strerror(errno))) }
        do {
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
                guard errno == EINPROGRESS else { throw TLSError(reason: String(cString: strerror(errno))) }
                try wait(fd, for: Int16(POLLOUT), until: deadline, doing: "connecting")
                var failure: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
                guard failure == 0 else { throw TLSError(reason: String(cString: strerror(failure))) }
            }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Writes all of `bytes` within `timeout`. Blocks the calling thread while the socket is full.
    /// - Throws: `TLSError` when the connection is closed or broken, or the peer reads nothing for `timeout`.
    func send(_ bytes: [UInt8], timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        try handle.withLock { h in
            guard !h.closed, let ssl = h.ssl else { throw TLSError(reason: "the connection is closed") }
            // Without partial writes, SSL_write takes the whole buffer or nothing, and a retry must pass
            // the same buffer.
            try bytes.withUnsafeBytes { buffer in
                while true {
                    ERR_clear_error()
                    let result = SSL_write(ssl, buffer.baseAddress, Int32(buffer.count))
                    if result > 0 { return }
                    let code = SSL_get_error(ssl, result)
                    switch code {
                    case SSL_ERROR_WANT_WRITE: try Self.wait(fd, for: Int16(POLLOUT), until: deadline, doing: "sending")
                    case SSL_ERROR_WANT_READ: try Self.wait(fd, for: Int16(POLLIN), until: deadline, doing: "sending")
                    default: throw TLSError(reason: "sending failed: " + Self.describe(code, result: result))
                    }
                }
            }
        }
    }

    /// Blocks until bytes arrive and returns them; nil when `close()` was called (here or meanwhile).
    /// - Throws: `TLSError` when the peer closed the connection or it broke, or `deadline` passed first.
    func receive(until deadline: ContinuousClock.Instant? = nil) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            enum Outcome { case bytes(Int), wantRead, wantWrite, closedHere, failed(TLSError) }
            let outcome: Outcome = handle.withLock { h in
                guard !h.closed, let ssl = h.ssl else { return .closedHere }
                ERR_clear_error()
                let result = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if result > 0 { return .bytes(Int(result)) }
                let code = SSL_get_error(ssl, result)
                switch code {
                case SSL_ERROR_WANT_READ: return .wantRead
                case SSL_ERROR_WANT_WRITE: return .wantWrite
                case SSL_ERROR_ZERO_RETURN: return .failed(TLSError(reason: "closed the connection"))
                default: return .failed(TLSError(reason: Self.describe(code, result: result)))
                }
            }
            switch outcome {
            case .bytes(let count): return Array(buffer[0..<count])
            case .closedHere: return nil
            case .failed(let error): throw error
            case .wantRead: try waitWithoutLock(for: Int16(POLLIN), until: deadline)
            case .wantWrite: try waitWithoutLock(for: Int16(POLLOUT), until: deadline)
            }
        }
    }

    /// Waits for the socket with the lock free, so that sends go on; close() wakes it by shutting the socket down.
    private func waitWithoutLock(for events: Int16, until deadline: ContinuousClock.Instant?) throws {
        if let deadline { return try Self.wait(fd, for: events, until: deadline, doing: "waiting for an answer") }
        var entry = pollfd(fd: fd, events: events, revents: 0)
        if poll(&entry, 1, -1) < 0, errno != EINTR { throw TLSError(reason: String(cString: strerror(errno))) }
    }

    /// Closes the connection: a blocked `receive` returns nil, later calls fail. Safe to call twice.
    func close() {
        handle.withLock { h in
            guard !h.closed else { return }
            h.closed = true
            if let ssl = h.ssl {
                ERR_clear_error()
                SSL_shutdown(ssl)
            }
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    /// Waits until `fd` is ready for `events`, or throws when `deadline` passes first.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant, doing what: String) throws {
        while true {
            let left = deadline - ContinuousClock.now
            let milliseconds = max(0, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            guard milliseconds > 0 else { throw TLSError(reason: "no answer within the deadline while \(what)") }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw TLSError(reason: String(cString: strerror(errno))) }
        }
    }

    /// Words for an SSL_get_error code (and the error queue or errno behind it).
    private static func describe(_ code: Int32, result: Int32) -> String {
        switch code {
        case SSL_ERROR_SYSCALL:
            let queued = openSSLErrors()
            if !queued.isEmpty { return queued }
            return result == 0 || errno == 0 ? "closed the connection" : String(cString: strerror(errno))
        case SSL_ERROR_SSL:
            let queued = openSSLErrors()
            return queued.isEmpty ? "a TLS protocol error" : queued
        default:
            return "OpenSSL error \(code)"
        }
    }

    /// Empties this thread's OpenSSL error queue into one line.
    private static func openSSLErrors() -> String {
        var lines: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            lines.append(String(cBuffer: text))
        }
        return lines.joined(separator: "; ")
    }
}
