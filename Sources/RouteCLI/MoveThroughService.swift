// MoveThroughService: `route move [--to NEW] [--from OLD]`, which asks the route service to move one of its casts to
// another device (without --to, the device picker asks where to), and says where it plays now.

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore

package enum MoveThroughService {
    /// Moves the cast `--from` names (or the only or active one) to `--to`, or to the device chosen in the picker
    /// window; prints where it plays now.
    package static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if parsed["add"] != nil || parsed["remove"] != nil { return try await changeGroup(parsed) }
        let target = parsed["to"]
        guard target.map({ !$0.isEmpty }) ?? Pick.displayExists else {
            throw UsageError(description: "route move needs --to DEVICE: the device the cast moves to (with a display, the picker asks)")
        }
        guard ServiceMode.applies(parsed) else {
            throw RouteError(.notCasting, "route move moves the route service's casts, and the service is not in use here "
                + "(no session bus, or ROUTE_SERVICE=off): a cast made without it cannot be moved")
        }
        let client = try await ServiceMode.connect()
        let session: RemoteSession
        if let target {
            session = try await client.move(to: target, from: parsed["from"])
        } else {
            // The picker moves it, and says where.
            guard let device = try await client.pickDeviceToMove(from: parsed["from"]) else {
                printError("route move: no device was chosen; the cast plays on where it was")
                return .failure
            }
            var moved: RemoteSession?
            for candidate in try await client.sessions() where (try? await candidate.status())?.device.id == device.id { moved = candidate }
            guard let moved else { throw RouteError(.notCasting, "the cast moved to \(device.name) has ended there already") }
            session = moved
        }
        let status = try await session.status()
        let position = status.playback.state == .playing || status.playback.state == .paused ? status.playback.position(at: Date()) : nil
        if parsed.has("json") {
            struct Moved: Encodable { var event = "moved"; var device: MediaDevice; var title: String; var position: Double?; var session: String }
            let data = try JSONEncoder().encode(Moved(device: status.device, title: status.title, position: position, session: session.path))
            _ = printOutput(String(decoding: data, as: UTF8.self))
        } else {
            _ = printOutput("moved: \(status.title) plays on \(status.device.name)" + (position.map { " at \(formatClock($0))" } ?? ""))
        }
        return .success
    }

    /// `--add DEVICE` or `--remove DEVICE`: the group's cast `--from` names (else the only group's cast) takes it in or
    /// out; prints what it did.
    private static func changeGroup(_ parsed: ParsedArguments) async throws -> ExitCode {
        guard parsed["to"] == nil, (parsed["add"] == nil) != (parsed["remove"] == nil) else {
            throw UsageError(description: "route move takes one of --to, --add and --remove")
        }
        guard ServiceMode.applies(parsed) else {
            throw RouteError(.notCasting, "route move changes the route service's casts, and the service is not in use here "
                + "(no session bus, or ROUTE_SERVICE=off)")
        }
        let client = try await ServiceMode.connect()
        var groups: [(session: RemoteSession, device: MediaDevice)] = []
        for session in try await client.sessions() {
            if let device = try? await session.status().device, device.kind == .group || parsed["from"] != nil { groups.append((session, device)) }
        }
        let chosen: (session: RemoteSession, device: MediaDevice)
        if let from = parsed["from"] {
            let device = try DeviceMatcher.pick(from, in: groups.map(\.device))
            chosen = groups.first { $0.device.id == device.id }!
        } else {
            guard let only = groups.first, groups.count == 1 else {
                throw groups.isEmpty ? RouteError(.notCasting, "no group's cast plays (route cast FILE --to A --to B makes one)")
                    : RouteError.ambiguousDevice(query: "", matches: groups.map(\.device.name))
            }
            chosen = only
        }
        let adding = parsed["add"] != nil
        let query = parsed["add"] ?? parsed["remove"]!
        if adding { try await chosen.session.addDevice(query) } else { try await chosen.session.removeDevice(query) }
        let event = adding ? "added" : "removed"
        if parsed.has("json") {
            struct Changed: Encodable { var event: String; var device: String; var group: MediaDevice; var session: String }
            let data = try JSONEncoder().encode(Changed(event: event, device: query, group: chosen.device, session: chosen.session.path))
            _ = printOutput(String(decoding: data, as: UTF8.self))
        } else {
            _ = printOutput(adding ? "added: \(query) plays with \(chosen.device.name)" : "removed: \(query) left \(chosen.device.name)")
        }
        return .success
    }
}
