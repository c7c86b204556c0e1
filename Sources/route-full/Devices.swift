// `route devices`: lists devices as they are found, or as one JSON array.

import Foundation
import RouteCLI
import MediaRouting
import RouteCore

enum Devices {
    /// The devices discovery finds within --timeout, in-process (the terminal picker's list).
    static func heard(_ parsed: ParsedArguments) async throws -> [MediaDevice] {
        let (router, providers) = try Providers.router(parsed)
        let timeout = Providers.discoverNetwork(providers) ? try CommonOptions.timeout(parsed) : 0
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        try? await Task.sleep(for: .milliseconds(Int(timeout * 1000) + 100))
        return router.devices
    }

    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if ServiceMode.applies(parsed) { return try await DeviceList.throughService(parsed) }
        let (router, providers) = try Providers.router(parsed)
        let requested = try CommonOptions.timeout(parsed)
        let timeout = Providers.discoverNetwork(providers) ? requested : 0
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        let json = parsed.has("json")
        let updates = router.deviceUpdates()
        let deadline = Task { try await Task.sleep(for: .milliseconds(Int(timeout * 1000) + 50)) }
        let printer = Task {
            // A device is printed when found, and again when it gains a route (its line says by which protocols).
            var shown: [String: [String]] = [:]
            for await list in updates {
                for device in list where shown[device.id] != device.protocols {
                    shown[device.id] = device.protocols
                    if !json { printOutput(DeviceList.line(device)) }
                }
                if timeout == 0, !list.isEmpty { break }
            }
        }
        if timeout == 0 { await printer.value } else { _ = try? await deadline.value }
        printer.cancel()
        if json { print(try JSONOutput.string(router.devices)) }
        return .success
    }
}
