// `route play|pause|stop|status|seek|volume --to DEVICE`: control a running cast from another terminal — the asking
// side, and the answering side inside the cast.

import Foundation
import RouteCore

package enum Control {
    /// The asking side: finds the session for `--to` and sends it the command. `route status --to D` when no cast of
    /// route's plays on D is `observe`'s (it finds D on the network and reads what it plays).
    package static func run(_ command: String, _ parsed: ParsedArguments,
                    observe: (_ query: String, _ parsed: ParsedArguments) async throws -> ExitCode) async throws -> ExitCode {
        var request = ControlRequest(command: command, value: parsed.positionals.first)
        if command == "seek", SeekTarget(parsing: request.value ?? "") == nil {
            throw UsageError(description: "\"\(request.value ?? "")\" is not a position; use 90, 1:30, +30 or -10")
        }
        if command == "volume" {
            guard let level = Double(request.value ?? ""), (0...100).contains(level) else {
                throw UsageError(description: "volume takes a level from 0 to 100, not \"\(request.value ?? "")\"")
            }
            request.value = String(level)
        }
        if command == "mute" {
            guard let value = request.value, ["on", "off"].contains(value) else {
                throw UsageError(description: "mute takes on or off, not \"\(request.value ?? "")\"")
            }
        }
        let sessions = try ControlClient.liveSessions()
        if command == "status", let query = parsed["to"], DeviceMatcher.thisComputer(query, in: [MediaDevice.thisComputer]) == nil,
           DeviceMatcher.candidates(for: query, in: sessions.map(\.device)) == nil {
            // No cast of ours there: say what the device plays, whoever started it (as `route watch` knows).
            return try await observe(query, parsed)
        }
        guard !sessions.isEmpty else {
            throw RouteError.notCasting(query: parsed["to"])
        }
        let socket: String
        if let query = parsed["to"] {
            let device = try DeviceMatcher.pick(query, in: sessions.map(\.device))
            socket = sessions.first { $0.device.id == device.id }!.socket
        } else {
            guard sessions.count == 1 else {
                throw RouteError.ambiguousDevice(query: "", matches: sessions.map(\.device.name))
            }
            socket = sessions[0].socket
        }
        let reply = try ControlClient.send(request, to: socket)
        guard reply.ok else {
            throw RouteError.commandFailed(device: reply.device?.name ?? "device", command: command, reason: reply.error ?? "failed")
        }
        if command == "status", let status = reply.status {
            if parsed.has("json") {
                print(try JSONOutput.string(StatusReport(device: reply.device, title: reply.title, status: status)))
            } else {
                printOutput(statusLine(device: reply.device?.name ?? "", title: reply.title, status: status))
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

    /// The answering side, inside `route cast`: applies a request to the session (a stop through `stop` when given:
    /// a movable cast stops a move under way too).
    package static func handle(_ request: ControlRequest, session: QueueSession,
                               stop: (@Sendable () async throws -> Void)? = nil) async -> ControlReply {
        do {
            switch request.command {
            case "describe", "status": break
            case "play": try await session.play()
            case "pause": try await session.pause()
            case "stop": try await (stop ?? session.stop)()
            case "next": try await session.next()
            case "seek":
                guard let target = SeekTarget(parsing: request.value ?? "") else { throw UsageError(description: "bad position") }
                try await session.seek(target)
            case "volume":
                guard let level = Double(request.value ?? "") else { throw UsageError(description: "bad volume") }
                try await session.setVolume(level / 100)
            case "mute":
                try await session.setMuted(request.value == "on")
            default:
                throw UsageError(description: "unknown command \(request.command)")
            }
            let status = await session.playback
            return ControlReply(ok: true, device: session.device, title: status.title, status: status)
        } catch {
            return ControlReply(ok: false, error: "\(error)", device: session.device)
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
