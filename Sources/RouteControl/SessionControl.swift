// SessionControl: lets `route pause --to NAME` in another terminal reach the `route cast` that is
// playing on that device, over a Unix socket in the user's runtime directory (one JSON line each way).

import Dispatch
import FoundationEssentials
import Glibc
import RouteCore
import Synchronization

/// A request to a running cast: a command to do, or none to ask what it plays; it answers with its status either way.
package struct ControlRequest: Codable {
    /// The command, in the vocabulary every way in shares; nil asks what the cast plays.
    package var command: SessionCommand?
    /// The id of the group's member the command is for alone (a volume or mute); nil: the whole cast.
    package var member: String?

    /// A request to a running cast (for its member `member` alone, when given).
    package init(_ command: SessionCommand? = nil, member: String? = nil) {
        self.command = command
        self.member = member
    }
}

/// The answer of a running cast.
package struct ControlReply: Codable {
    package var ok: Bool
    package var error: String?
    package var device: MediaDevice?
    package var title: String?
    package var status: PlaybackStatus?
    /// A group cast's devices (none for a cast on one device): each is taken by the cast.
    package var members: [MediaDevice]?
    /// Whether the cast takes a request for one member alone (`ControlRequest.member`): a `route cast` older than that
    /// ignores the field and would apply the command to the whole group.
    package var takesMember: Bool?

    /// An answer of a running cast.
    package init(ok: Bool, error: String? = nil, device: MediaDevice? = nil, title: String? = nil, status: PlaybackStatus? = nil,
                 members: [MediaDevice]? = nil) {
        self.ok = ok
        self.error = error
        self.device = device
        self.title = title
        self.status = status
        self.members = members
        takesMember = members == nil ? nil : true
    }
}

/// Where sessions put their sockets: `$ROUTE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/route`, else
/// `${TMPDIR:-/tmp}/route-UID` — each used only when it is a real directory of this user's that nobody else
/// can enter (created 0700 when missing). Anything else (another user's, a symlink, mode 777) is refused:
/// a socket planted there would receive our commands and answer `route status`.
package enum SessionDirectory {
    /// The directory's path (not checked; `checked()` checks it).
    package static var path: String {
        let environment = ProcessInfo.processInfo.environment
        if let dir = environment["ROUTE_RUNTIME_DIR"], !dir.isEmpty { return dir }
        if let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return xdg + "/route" }
        let temporary = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return temporary + "/route-\(getuid())"
    }

    /// The directory, created 0700 if missing, once it is known to be private to this user.
    /// - Throws: `RouteError` (`notSetUp`) naming the directory and what is wrong with it.
    package static func checked() throws -> String {
        let path = self.path
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw RouteError(.notSetUp, "cannot make the runtime directory \(path): \(String(cString: strerror(errno))); "
                + "set ROUTE_RUNTIME_DIR to a private directory")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw RouteError(.notSetUp, "cannot use the runtime directory \(path): \(String(cString: strerror(errno)))")
        }
        let problem: String?
        if info.st_mode & S_IFMT == S_IFLNK { problem = "is a symbolic link" }
        else if info.st_mode & S_IFMT != S_IFDIR { problem = "is not a directory" }
        else if info.st_uid != getuid() { problem = "belongs to another user (uid \(info.st_uid))" }
        else if info.st_mode & 0o077 != 0 { problem = "is open to other users (mode \(String(info.st_mode & 0o777, radix: 8)))" }
        else { problem = nil }
        if let problem {
            throw RouteError(.notSetUp, "refusing the runtime directory \(path): it \(problem), so another user could "
                + "take over route's control sockets; remove it, or set XDG_RUNTIME_DIR or ROUTE_RUNTIME_DIR to a private directory")
        }
        return path
    }

    /// The socket of the session casting to a device: named by a hash of the device id (FNV-1a),
    /// since a socket path must fit in 108 bytes and ids (UPnP UDNs) are long.
    package static func socket(for device: MediaDevice) -> String {
        path + "/" + StableName.of(device.id) + ".sock"
    }

    /// Every session socket present (some may be stale), once the directory is known to be private.
    package static func sockets() throws -> [String] {
        let path = try checked()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { $0.hasSuffix(".sock") }.sorted().map { path + "/" + $0 }
    }
}

/// The listening side, run by `route cast` for as long as it plays.
package final class SessionControlServer: @unchecked Sendable {
    // Safety: `fd` and `path` are set once in init; `closed` is atomic.
    private let fd: Int32
    private let path: String
    private let handler: @Sendable (ControlRequest) async -> ControlReply
    private let closed = Atomic<Bool>(false)

    /// Listens for `device` (answering starts with `run()`); a socket there is replaced, so ask
    /// `OurCasts.checkFree` first.
    package init(device: MediaDevice, handler: @escaping @Sendable (ControlRequest) async -> ControlReply) throws {
        _ = try SessionDirectory.checked()
        path = SessionDirectory.socket(for: device)
        self.handler = handler
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let address = try controlAddress(path)
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 8) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw RouteError.commandFailed(device: device.name, command: "cast", reason: "cannot listen on \(path): \(reason)")
        }
    }

    /// Answers requests, one at a time on a thread of its own, until the task is cancelled; then stops
    /// listening and removes the socket, returning once any reply being answered has been written (so
    /// `route stop` gets its answer before the cast process exits).
    package func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DetachedThread.start(name: "route-control") { [self] in
                    acceptLoop()
                    Glibc.close(fd)
                    unlink(path)
                    done.resume()
                }
            }
        } onCancel: {
            closed.store(true, ordering: .sequentiallyConsistent)
            // Wakes a waiting accept(); a request being answered is finished first.
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    private func acceptLoop() {
        while !closed.load(ordering: .sequentiallyConsistent) {
            let client = accept(fd, nil, nil)
            if client < 0 { if errno == EINTR { continue } else { return } }
            // Only this user controls this user's cast (the directory is private; this holds regardless).
            guard ControlClient.peerIsUs(client) else { Glibc.close(client); continue }
            ControlClient.setTimeouts(client, seconds: 2)
            let reply: ControlReply
            if let line = ControlClient.readLine(client),
               let request = try? JSONDecoder().decode(ControlRequest.self, from: line) {
                // This thread is route's own, not the cooperative pool's: it may wait for the answer.
                let box = ReplyBox()
                let done = DispatchSemaphore(value: 0)
                let handler = self.handler
                Task { box.reply = await handler(request); done.signal() }
                done.wait()
                reply = box.reply ?? ControlReply(ok: false, error: "no reply")
            } else {
                reply = ControlReply(ok: false, error: "malformed request")
            }
            do {
                try ControlClient.writeLine(client, reply)
            } catch {
                // Still an answer, and one naming the device: the asker must not take this cast for a stale socket.
                try? ControlClient.writeLine(client, ControlReply(ok: false, error: "route could not write its answer: \(error)",
                                                                  device: reply.device))
            }
            Glibc.close(client)
        }
    }
}

private final class ReplyBox: @unchecked Sendable {
    package var reply: ControlReply?
}

/// The asking side: one request, one reply.
package enum ControlClient {
    /// Sends a request to a session socket and returns its reply; throws when nobody listens.
    package static func send(_ request: ControlRequest, to path: String) throws -> ControlReply {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        // Longer than a device command may take (5 s for a renderer that does not answer).
        setTimeouts(fd, seconds: 8)
        let address = try controlAddress(path)
        guard address.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            throw RouteError.deviceUnreachable(device: path, reason: String(cString: strerror(errno)))
        }
        guard peerIsUs(fd) else {
            throw RouteError(.notSetUp, "the control socket \(path) is served by another user's process; refusing to talk to it")
        }
        try? writeLine(fd, request)
        guard let line = readLine(fd), let reply = try? JSONDecoder().decode(ControlReply.self, from: line) else {
            throw RouteError.deviceUnreachable(device: path, reason: "the session did not answer")
        }
        return reply
    }

    /// Live sessions and the devices they play on; stale sockets are removed unless `removingStale` is false
    /// (`route watch` only looks: a cast stopped with Ctrl-Z does not answer, and keeps its socket).
    /// - Throws: `RouteError` (`notSetUp`) when the runtime directory is not private.
    package static func liveSessions(removingStale: Bool = true) throws
        -> [(socket: String, device: MediaDevice, members: [MediaDevice], takesMember: Bool)] {
        try SessionDirectory.sockets().compactMap { path in
            guard let reply = try? send(ControlRequest(), to: path), let device = reply.device else {
                // Only a socket nobody listens on is stale: a cast that answered badly or late still plays, and
                // removing its socket would hide it from every `route status` after.
                if removingStale, nobodyListens(at: path) { unlink(path) }
                return nil
            }
            return (path, device, reply.members ?? [], reply.takesMember == true)
        }
    }

    /// Whether a connection to `path` is refused: the cast that made the socket has ended without removing it.
    private static func nobodyListens(at path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard let address = try? controlAddress(path) else { return false }
        if address.withSockaddr({ connect(fd, $0, $1) }) == 0 { return false }
        return errno == ECONNREFUSED || errno == ENOENT
    }

    /// Whether the process at the other end of a Unix socket runs as this user (SO_PEERCRED).
    package static func peerIsUs(_ fd: Int32) -> Bool {
        // struct ucred (pid, uid, gid): Glibc does not export it without _GNU_SOURCE.
        struct Credentials { var pid: pid_t = 0; var uid: uid_t = 0; var gid: gid_t = 0 }
        var credentials = Credentials()
        var length = socklen_t(MemoryLayout<Credentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return false }
        return credentials.uid == getuid()
    }

    /// Reads and writes on a control connection give up after `seconds`: a suspended `route cast`
    /// (Ctrl-Z) or a silent client must not hang the other side.
    package static func setTimeouts(_ fd: Int32, seconds: Int) {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes `value` as one line of JSON (a write the peer does not take is dropped: it hung up).
    /// - Throws: the encoder's error when `value` cannot be JSON (a number that is not finite).
    package static func writeLine<T: Encodable>(_ fd: Int32, _ value: T) throws {
        var data = try JSONEncoder().encode(value)
        data.append(10)
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }

    package static func readLine(_ fd: Int32) -> Data? {
        var data = Data()
        var byte: UInt8 = 0
        while data.count < 1 << 20, read(fd, &byte, 1) == 1 {
            if byte == 10 { return data }
            data.append(byte)
        }
        return data.isEmpty ? nil : data
    }
}

/// The Unix-domain address of a control socket.
/// - Throws: `RouteError` (`notSetUp`) when the path is too long for one.
private func controlAddress(_ path: String) throws -> SocketAddress {
    guard let address = SocketAddress(unixPath: path) else {
        throw RouteError(.notSetUp, "the control socket path \(path) is too long for a Unix socket; set ROUTE_RUNTIME_DIR to a shorter directory")
    }
    return address
}
