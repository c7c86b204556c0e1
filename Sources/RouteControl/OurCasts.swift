// OurCasts: the casts of route's that play now, wherever they run — a `route cast` in a terminal (reached by its
// control socket) or a session of the route service (over D-Bus) — and the one question `route pause|status --to D`,
// an in-process cast, `route watch` and the service all ask: does one of ours play on this device?

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore

/// A cast of route's that plays now, and how a command reaches it.
package struct OurCast: Sendable {
    /// How a command reaches the cast.
    package enum Reach: Sendable {
        /// A `route cast` of this user's: its control socket.
        case socket(String)
        /// A session of the route service.
        case service(RemoteSession)
    }

    /// The device it plays on.
    package let device: MediaDevice
    package let reach: Reach
    /// A group's members as they play (a session of the service's: each with its own volume; a `route cast`'s: the
    /// devices alone); none for a cast on one device.
    package var members: [RouteServiceAPI.SessionMember] = []
    /// Whether it takes a command for one member alone (every service session; a `route cast` as new as this one).
    package var takesMemberCommands = true

    /// The cast on `device`, reached by `reach`, with a group's `members`.
    package init(device: MediaDevice, reach: Reach, members: [RouteServiceAPI.SessionMember] = [], takesMemberCommands: Bool = true) {
        self.device = device
        self.reach = reach
        self.members = members
        self.takesMemberCommands = takesMemberCommands
    }

    /// Sends `command` to the cast.
    /// - Throws: `RouteError` when the device refuses the command or the cast does not answer.
    package func perform(_ command: SessionCommand) async throws {
        switch reach {
        case .socket(let path): _ = try await ask(path, ControlRequest(command))
        case .service(let session): try await session.perform(command)
        }
    }

    /// Sets the volume or mute of the member on `member` alone (a group's cast).
    /// - Throws: `RouteError` when the cast refuses (the command is not a volume's; the member left).
    package func perform(_ command: SessionCommand, onMember member: MediaDevice) async throws {
        switch reach {
        case .socket(let path):
            guard takesMemberCommands else {
                throw RouteError(.unsupported, "the `route cast` playing on \(device.name) is older than this route: it sets only the whole group's volume (start the cast again to set one device's)",
                                 device: member.name, reason: "its `route cast` is older")
            }
            _ = try await ask(path, ControlRequest(command, member: member.id))
        case .service(let session): try await session.perform(command, onMember: member.id)
        }
    }

    /// What plays now (its position as of now).
    /// - Throws: `RouteError` when the cast does not answer.
    package func status() async throws -> (device: MediaDevice?, title: String?, status: PlaybackStatus) {
        switch reach {
        case .socket(let path):
            let reply = try await ask(path, ControlRequest())
            return (reply.device, reply.title, reply.status!.at(Date()))
        case .service(let session):
            let status = try await session.status()
            return (status.device, status.title, status.playback.at(Date()))
        }
    }

    private func ask(_ path: String, _ request: ControlRequest) async throws -> ControlReply {
        let reply = try await OurCasts.blocking { try ControlClient.send(request, to: path) }
        guard reply.ok, reply.status != nil else {
            throw RouteError.commandFailed(device: reply.device?.name ?? device.name, command: request.command?.word ?? "status",
                                           reason: reply.error ?? "failed")
        }
        return reply
    }

    /// Whether it plays on `device`: the same device, or one of its routes (a device merged since, or merged then); a
    /// group's cast plays on each of its members.
    package func plays(on device: MediaDevice) -> Bool {
        let routes = Set(device.routes.map(\.id))
        return ([self.device] + members.map(\.device)).contains { $0.id == device.id || !routes.isDisjoint(with: $0.routes.map(\.id)) }
    }
}

/// The casts of route's that play now.
package enum OurCasts {
    /// Socket I/O has timeouts (8 s for a cast that does not answer): never on the cooperative pool.
    private static let threads = BlockingThreads(name: "route-own-casts", count: 2)

    /// Every cast of route's that plays now: this user's `route cast`s (stale sockets removed, unless
    /// `removingStale` is false: a cast stopped with Ctrl-Z does not answer, and keeps its socket), and with
    /// `service` the route service's sessions, when it runs (it is not started to be asked).
    /// - Throws: `RouteError` (`notSetUp`) when the runtime directory is not private.
    package static func all(service: Bool, removingStale: Bool = true) async throws -> [OurCast] {
        var casts = try await blocking { try ControlClient.liveSessions(removingStale: removingStale) }
            .map { live in
                OurCast(device: live.device, reach: .socket(live.socket),
                        members: live.members.map { RouteServiceAPI.SessionMember(device: $0, playback: nil) }, takesMemberCommands: live.takesMember)
            }
        guard service, RouteServiceClient.sessionBusExists, let client = try? await RouteServiceClient.connect(),
              (try? await client.isRunning()) == true else { return casts }
        for session in (try? await client.sessions()) ?? [] {
            // A session that ended as it was asked is no longer there.
            guard let status = try? await session.status() else { continue }
            var cast = OurCast(device: status.device, reach: .service(session))
            if status.device.kind == .group { cast.members = (try? await session.members()) ?? [] }
            casts.append(cast)
        }
        return casts
    }

    /// Whether one of ours plays on `device`: a `route cast` whose socket is there counts even when it does not answer
    /// (stopped with Ctrl-Z, say); a service session that does not answer has ended. With `own`, the `route cast` in
    /// this process that plays on `own` does not count (a group's member back on the network: its socket lists it still).
    package static func play(on device: MediaDevice, service: Bool, besides own: MediaDevice? = nil) async -> Bool {
        let ownSocket = own.map(SessionDirectory.socket(for:))
        return ((try? await all(service: service, removingStale: false)) ?? []).contains { cast in
            if case .socket(let path) = cast.reach, path == ownSocket { return false }
            return cast.plays(on: device)
        }
    }

    /// Throws when one of ours plays on `device` already.
    /// - Throws: `RouteError`: `commandFailed` saying how to stop it; `notSetUp` when the runtime directory is not private.
    package static func checkFree(_ device: MediaDevice, service: Bool) async throws {
        guard try await all(service: service).contains(where: { $0.plays(on: device) }) else { return }
        throw taken(device)
    }

    /// The error for a device one of ours plays on already.
    package static func taken(_ device: MediaDevice) -> RouteError {
        RouteError.commandFailed(device: device.name, command: "cast",
                                 reason: "another `route cast` is already playing there; stop it first (`route stop --to \"\(device.name)\"`)")
    }

    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(timeout: .seconds(60), timedOut: { CancellationError() }, body)
    }
}
