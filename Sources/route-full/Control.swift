// `route play|pause|stop|status|seek|volume --to DEVICE`: control a running cast from another terminal.

import Foundation
import RouteCLI
import MediaRouting
import RouteCore
import RouteMedia

enum Control {
    /// The asking side: finds the session for `--to` and sends it the command.
    static func run(_ command: String, _ parsed: ParsedArguments) async throws -> ExitCode {
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
        if command == "status", let query = parsed["to"], DeviceMatcher.thisComputer(query, in: [LocalProvider.device]) == nil,
           DeviceMatcher.candidates(for: query, in: sessions.map(\.device)) == nil {
            // No cast of ours there: say what the device plays, whoever started it (as `route watch` knows).
            return try await ObservedStatus.report(query, parsed)
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
    static func statusLine(device: String, title: String?, status: PlaybackStatus) -> String {
        let duration = status.duration.map { " / " + formatClock($0) } ?? ""
        let volume = status.volume.map { "  vol \(Int(($0 * 100).rounded()))%" } ?? ""
            + (status.muted == true ? " (muted)" : "")
        return "\(DisplayText.clean(device)): \(status.state.rawValue) \(title.map { DisplayText.clean($0) } ?? "") \(formatClock(status.position))\(duration)\(volume)"
    }

    /// The answering side, inside `route cast`: applies a request to the session.
    static func handle(_ request: ControlRequest, session: QueueSession) async -> ControlReply {
        do {
            switch request.command {
            case "describe", "status": break
            case "play": try await session.play()
            case "pause": try await session.pause()
            case "stop": try await session.stop()
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

/// `route status --to D` when no cast of ours plays on D: finds D on the network and reads what it plays, whichever
/// controller started it, through the same observation `route watch` uses.
enum ObservedStatus {
    /// How long a device may take to say what it plays before it is taken to play nothing.
    static let listen: Duration = .seconds(2)

    static func report(_ query: String, _ parsed: ParsedArguments) async throws -> ExitCode {
        let (router, providers) = try Providers.router(parsed)
        guard Providers.discoverNetwork(providers) else { throw RouteError.notCasting(query: query) }
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        let device = try await router.waitForDevice(matching: query, timeout: try CommonOptions.timeout(parsed))
        guard let (route, status) = await observe(device, router: router) else { throw RouteError.notCasting(query: query) }
        let shown = device.preferring(route)
        if parsed.has("json") {
            var report = StatusReport(device: shown, title: status.title, status: status)
            report.controller = status.state == .idle ? nil : "another"
            print(try JSONOutput.string(report))
        } else {
            printOutput(Control.statusLine(device: shown.name, title: status.title, status: status)
                        + (status.state == .idle ? "" : "  (another controller's session)"))
        }
        return .success
    }

    /// The first route of `device` that can be observed, and what it plays (idle when it says nothing of a session
    /// within `listen`); nil when no route can be observed.
    static func observe(_ device: MediaDevice, router: MediaRouter) async -> (MediaRoute, PlaybackStatus)? {
        for route in device.routes where route.provider != MediaRoute.localProvider {
            guard let controller = try? await router.controller(for: route) else { continue }
            guard (try? await controller.observe()) == true else {
                await controller.close()
                continue
            }
            let updates = controller.statusUpdates()
            let heard = await withTaskGroup(of: PlaybackStatus?.self) { group -> PlaybackStatus? in
                group.addTask {
                    try? await controller.run()
                    return nil
                }
                group.addTask {
                    for await status in updates where status.state != .idle { return status }
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: listen)
                    return PlaybackStatus(state: .idle)
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            await controller.close()
            if let heard { return (route, heard.at(Date())) }
        }
        return nil
    }
}

/// What `status --json` prints: the device in brief and its playback, with numbers rounded as people read
/// them (seconds to the millisecond, volume in percent as `route volume` takes it).
struct StatusReport: Encodable {
    struct Device: Encodable {
        let id: String
        let name: String
        let protocols: [String]
        let address: String?
    }
    let device: Device?
    let state: String
    let title: String?
    let position: Double
    let duration: Double?
    let volume: Int?
    let muted: Bool?
    let error: String?
    /// `another` when the session is another controller's (route only reads it); absent for a cast of route's.
    var controller: String?

    init(device: MediaDevice?, title: String?, status: PlaybackStatus) {
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
