// RTSPConnection: the RTSP/1.0 control connection to an AirPlay receiver — requests with the headers AirPlay
// senders send, answers read to their Content-Length, every read and write with a deadline. Blocking.

import Foundation
import RouteCore

/// An RTSP answer.
struct RTSPResponse: Sendable {
    var status: Int
    var reason: String
    /// Header names lower-cased.
    var headers: [String: String]
    var body: Data
}

/// What went wrong on the control connection, said for a person.
struct RTSPError: Error, CustomStringConvertible {
    var description: String
}

/// One TCP connection to a receiver's RTSP port. Requests are made one at a time (a lock); once one fails (a timeout,
/// a closed connection) the connection is broken for good, so that no later request reads an earlier one's answer.
final class RTSPConnection: @unchecked Sendable {
    // Safety: everything mutable is touched under `requests` only; `fd` is set once.
    private let fd: Int32
    private let requests = NSLock()
    private var cseq = 0
    private var buffered = Data()
    private var broken: String?
    /// The receiver's address and port, and the local address that reaches it (what the ANNOUNCE's SDP names).
    let host: String
    let port: Int
    let localAddress: String
    /// Headers every request carries (DACP-ID, Active-Remote, Client-Instance, Session once set up). Set before the
    /// session is shared.
    var common: [(String, String)] = []
    /// The `Authorization` header for a method and URI, once the receiver asked for a password. Set before the
    /// session is shared.
    var authorization: (@Sendable (String, String) -> String?)?
    /// Seconds a request may take.
    var timeout: Double = 5

    /// Connects to `host:port` within `timeout` seconds.
    /// - Throws: `RTSPError` saying what failed (refused, no answer).
    init(host: String, port: Int, timeout: Double = 5) throws {
        guard let address = SocketAddress(numericHost: host, port: UInt16(port)) else {
            throw RTSPError(description: "\(host) is not an IPv4 or IPv6 address")
        }
        let fd = socket(Int32(address.family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw RTSPError(description: "no socket: \(String(cString: strerror(errno)))") }
        var connected = address.withSockaddr { connect(fd, $0, $1) } == 0
        if !connected, errno == EINPROGRESS {
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if poll(&poller, 1, Int32(timeout * 1000)) == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 {
                connected = failure == 0
                errno = failure
            } else {
                errno = ETIMEDOUT
            }
        }
        guard connected else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw RTSPError(description: "cannot connect to \(host):\(port): \(reason)")
        }
        self.fd = fd
        self.host = host
        self.port = port
        var nodelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay, socklen_t(MemoryLayout<Int32>.size))
        localAddress = SocketAddress(localOf: fd)?.numericHost ?? "0.0.0.0"
        self.timeout = timeout
    }

    deinit { close(fd) }

    /// Whether the receiver has closed the connection (a receiver that quits or is killed does; one that is unplugged
    /// does not). Safe beside a request: it only peeks.
    var closedByPeer: Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR)
    }

    /// Sends a request and reads its answer.
    /// - Throws: `RTSPError` when the connection fails or the answer does not come within `timeout`.
    func request(_ method: String, _ uri: String, headers: [(String, String)] = [], body: Data = Data(),
                 contentType: String? = nil) throws -> RTSPResponse {
        try requests.withLock {
            if let broken { throw RTSPError(description: "\(method): the connection broke earlier (\(broken))") }
            do {
                return try exchange(method, uri, headers: headers, body: body, contentType: contentType)
            } catch let error as RTSPError {
                broken = error.description
                throw error
            }
        }
    }

    private func exchange(_ method: String, _ uri: String, headers: [(String, String)], body: Data, contentType: String?) throws -> RTSPResponse {
        cseq += 1
        var head = "\(method) \(uri) RTSP/1.0\r\nCSeq: \(cseq)\r\nUser-Agent: route/0.1\r\n"
        for (name, value) in common + headers { head += "\(name): \(value)\r\n" }
        if let authorization = authorization?(method, uri) { head += "Authorization: \(authorization)\r\n" }
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if !body.isEmpty || contentType != nil { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        try write(Data(head.utf8) + body, by: deadline, method: method)
        return try readResponse(by: deadline, method: method)
    }

    private func write(_ data: Data, by deadline: ContinuousClock.Instant, method: String) throws {
        var offset = 0
        while offset < data.count {
            try wait(for: Int16(POLLOUT), by: deadline, method: method)
            let sent = data.withUnsafeBytes { send(fd, $0.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EAGAIN || errno == EINTR { continue }
            guard sent > 0 else { throw RTSPError(description: "\(method): the receiver closed the connection (\(String(cString: strerror(errno))))") }
            offset += sent
        }
    }

    private func readResponse(by deadline: ContinuousClock.Instant, method: String) throws -> RTSPResponse {
        let separator = Data("\r\n\r\n".utf8)
        while buffered.range(of: separator) == nil {
            guard buffered.count < 65536 else { throw RTSPError(description: "\(method): the receiver's answer has no end of headers") }
            try fill(by: deadline, method: method)
        }
        let end = buffered.range(of: separator)!
        let head = String(decoding: buffered[buffered.startIndex..<end.lowerBound], as: UTF8.self)
        buffered = Data(buffered[end.upperBound...])
        var lines = head.components(separatedBy: "\r\n")
        let status = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard status.count >= 2, status[0].hasPrefix("RTSP/"), let code = Int(status[1]) else {
            throw RTSPError(description: "\(method): the receiver did not answer in RTSP (\"\(head.prefix(40))\")")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard (0...1_000_000).contains(length) else { throw RTSPError(description: "\(method): a body of \(length) bytes") }
        while buffered.count < length { try fill(by: deadline, method: method) }
        let body = Data(buffered.prefix(length))
        buffered = Data(buffered.dropFirst(length))
        return RTSPResponse(status: code, reason: status.count > 2 ? String(status[2]) : "", headers: headers, body: body)
    }

    private func fill(by deadline: ContinuousClock.Instant, method: String) throws {
        try wait(for: Int16(POLLIN), by: deadline, method: method)
        var chunk = [UInt8](repeating: 0, count: 8192)
        let count = recv(fd, &chunk, chunk.count, 0)
        if count < 0, errno == EAGAIN || errno == EINTR { return }
        guard count > 0 else { throw RTSPError(description: "\(method): the receiver closed the connection") }
        buffered.append(contentsOf: chunk[0..<count])
    }

    private func wait(for events: Int16, by deadline: ContinuousClock.Instant, method: String) throws {
        let left = deadline - ContinuousClock.now
        let milliseconds = Int32(max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
        var poller = pollfd(fd: fd, events: events, revents: 0)
        guard poll(&poller, 1, milliseconds) == 1 else {
            throw RTSPError(description: "\(method): no answer within \(Int(timeout)) s")
        }
    }
}
