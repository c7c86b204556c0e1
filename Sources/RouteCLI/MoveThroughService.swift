// MoveThroughService: `route move [--to NEW] [--from OLD]`, which asks the route service to move one of its casts to
// another device (without --to, the device picker asks where to), and says where it plays now.

import Foundation
import RouteClient
import RouteCore

package enum MoveThroughService {
    /// Moves the cast `--from` names (or the only or active one) to `--to`, or to the device chosen in the picker
    /// window; prints where it plays now.
    package static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
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
}
