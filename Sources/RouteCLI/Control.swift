// `route play|pause|stop|status|seek|volume --to DEVICE`: control a running cast from another terminal — the asking
// side, and the answering side inside the cast.

import FoundationEssentials
import RouteClient
import RouteControl
import RouteCore

package enum Control {
    /// The asking side: finds the cast for `--to` — a `route cast`'s socket, or a session of the service's — and sends
    /// it the command. `route status --to D` when no cast of route's plays on D is `observe`'s (it finds D on the
    /// network and reads what it plays).
    package static func run(_ command: String, _ parsed: ParsedArguments,
                    observe: (_ query: String, _ parsed: ParsedArguments) async throws -> ExitCode) async throws -> ExitCode {
        var said: SessionCommand?
        if command != "status" {
            do { said = try SessionCommand(word: command, value: parsed.positionals.first) } catch { throw UsageError(description: "\(error)") }
        }
        let casts = try await OurCasts.all(service: ServiceMode.mayAsk)
        let members = casts.flatMap { cast in cast.members.map(\.device) }
        if command == "status", let query = parsed["to"], DeviceMatcher.thisComputer(query, in: [MediaDevice.thisComputer]) == nil,
           DeviceMatcher.candidates(for: query, in: casts.map(\.device) + members) == nil {
            // No cast of ours there: say what the device plays, whoever started it (as `route watch` knows).
            return try await observe(query, parsed)
        }
        guard !casts.isEmpty else {
            throw RouteError.notCasting(query: parsed["to"])
        }
        let cast: OurCast
        // A device playing in a group's session, named rather than its group: its volume and mute are its own.
        var member: RouteServiceAPI.SessionMember?
        if let query = parsed["to"] {
            // A member when it matches better than any cast's own device does ("Kitchen" is a member's name and a prefix
            // of the group "Kitchen and Hall").
            let ownTier = DeviceMatcher.candidates(for: query, in: casts.map(\.device))?.0
            if let memberTier = DeviceMatcher.candidates(for: query, in: members)?.0, ownTier.map({ memberTier < $0 }) ?? true {
                let device = try DeviceMatcher.pick(query, in: members)
                cast = casts.first { $0.members.contains { $0.device.id == device.id } }!
                member = cast.members.first { $0.device.id == device.id }
            } else {
                let device = try DeviceMatcher.pick(query, in: casts.map(\.device))
                cast = casts.first { $0.device.id == device.id }!
            }
        } else {
            guard casts.count == 1 else {
                throw RouteError.ambiguousDevice(query: "", matches: casts.map(\.device.name))
            }
            cast = casts[0]
        }
        if let said, let member {
            switch said {
            case .setVolume, .setMuted: try await cast.perform(said, onMember: member.device)
            default:
                printError("\(member.device.name) plays in the group \(cast.device.name): \(said.word) acts on all of it")
                try await cast.perform(said)
            }
        } else if let said {
            try await cast.perform(said)
        } else {
            var (device, title, status) = try await cast.status()
            if let member {
                device = member.device
                // A service's member says its own state, volume and mute (a `route cast`'s group knows only its devices);
                // where it is in the queue is the group's.
                if case .service = cast.reach, let state = PlaybackStatus.State(rawValue: member.state), state != .loading {
                    status.state = state
                    status.volume = member.volume >= 0 ? member.volume : nil
                    status.muted = member.muted
                }
            }
            if parsed.has("json") {
                print(try JSONOutput.string(StatusReport(device: device, title: title, status: status)))
            } else {
                printOutput(statusLine(device: device?.name ?? "", title: title, status: status))
            }
        }
        return .success
    }

    /// `Living Room: playing Song 1:02 / 3:30  vol 40%`.
    package static func statusLine(device: String, title: String?, status: PlaybackStatus) -> String {
        let duration = status.duration.map { " / " + formatClock($0) } ?? ""
        let volume = status.volume.map { "  vol \(Int(($0 * 100).rounded()))%" } ?? ""
            + (status.muted == true ? " (muted)" : "")
        return "\(DisplayText.clean(device)): \(status.state.rawValue) \(title.map { DisplayText.clean($0) } ?? "") \(formatClock(status.position))\(duration)\(volume)"
    }

    /// The answering side, inside `route cast`: applies a request to the session.
    /// `commands` take the command (the session by default; a group cast's reach every member, or the one a request
    /// names), `device` is the one the reply names (the session's by default; a group's), `members` a group's devices
    /// (each taken by the cast).
    package static func handle(_ request: ControlRequest, session: QueueSession, commands: (any SessionCommandTaker)? = nil,
                               device: MediaDevice? = nil, members: [MediaDevice] = []) async -> ControlReply {
        let device = device ?? session.device
        do {
            if let command = request.command, let id = request.member {
                // A group's member alone (its volume, its mute).
                guard let group = commands as? any MemberCommandTaker, let member = members.first(where: { $0.id == id }) else {
                    throw RouteError(.commandFailed, "no device of that id plays in \(device.name)", device: device.name, reason: "not a member")
                }
                try await group.perform(command, on: member)
            } else if let command = request.command {
                try await (commands ?? session).perform(command)
            }
            let status = await session.playback
            return ControlReply(ok: true, device: device, title: status.title, status: status, members: members.isEmpty ? nil : members)
        } catch {
            return ControlReply(ok: false, error: "\(error)", device: device)
        }
    }
}

/// What `status --json` prints: the device in brief and its playback, with numbers rounded as people read
/// them (seconds to the millisecond, volume in percent as `route volume` takes it).
package struct StatusReport: Encodable {
    package struct Device: Encodable {
        package let id: String
        package let name: String
        package let protocols: [String]
        package let address: String?
    }
    package let device: Device?
    package let state: String
    package let title: String?
    package let position: Double
    package let duration: Double?
    package let volume: Int?
    package let muted: Bool?
    package let error: String?
    /// `another` when the session is another controller's (route only reads it); absent for a cast of route's.
    package var controller: String?

    package init(device: MediaDevice?, title: String?, status: PlaybackStatus) {
        self.device = device.map { Device(id: $0.id, name: $0.name, protocols: $0.protocols, address: $0.address) }
        state = status.state.rawValue
        self.title = title
        position = (status.position * 1000).rounded() / 1000
        duration = status.duration.map { ($0 * 1000).rounded() / 1000 }
        volume = status.volume.map { Int(($0 * 100).rounded()) }
        muted = status.muted
        error = status.error
    }
}
