// ObservedStatus: `route status --to D` when no cast of route's plays on D — D found on the network and what it plays
// read, whichever controller started it.

import Foundation
import RouteCLI
import RouteCore

/// `route status --to D` when no cast of ours plays on D: finds D on the network and reads what it plays, whichever
/// controller started it, through the same observation `route watch` uses.
enum ObservedStatus {
    /// How long a device may take to say what it plays before it is taken to play nothing.
    static let listen: Duration = .seconds(2)

    static func report(_ query: String, _ parsed: ParsedArguments) async throws -> ExitCode {
        let router = try Providers.router(parsed), providers = router.providers
        guard Providers.discoverNetwork(providers) else { throw RouteError.notCasting(query: query) }
        let timeout = try CommonOptions.timeout(parsed)
        let (device, observed) = try await router.discovering {
            let device = try await router.waitForDevice(matching: query, timeout: timeout)
            return (device, await observe(device, router: router))
        }
        guard let (route, status) = observed else { throw RouteError.notCasting(query: query) }
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
