// `route devices`: lists devices as they are found, or as one JSON array.

import Foundation
import RouteCLI
import MediaRouting
import RouteCore

enum Devices {
    /// The devices discovery finds within --timeout, in-process (the terminal picker's list).
    static func heard(_ parsed: ParsedArguments) async throws -> [MediaDevice] {
        let router = try Providers.router(parsed), providers = router.providers
        let timeout = Providers.discoverNetwork(providers) ? try CommonOptions.timeout(parsed) : 0
        return try await router.discovering {
            try? await Task.sleep(for: .milliseconds(Int(timeout * 1000) + 100))
            return router.devices
        }
    }

    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if ServiceMode.applies(parsed) { return try await DeviceList.throughService(parsed) }
        let router = try Providers.router(parsed), providers = router.providers
        let requested = try CommonOptions.timeout(parsed)
        let timeout = Providers.discoverNetwork(providers) ? requested : 0
        let json = parsed.has("json")
        let updates = router.deviceUpdates()
        let devices = try await router.discovering {
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
            if timeout == 0 { await printer.value } else { try? await Task.sleep(for: .milliseconds(Int(timeout * 1000) + 50)) }
            printer.cancel()
            await printer.value
            // Read while discovery runs: once it has ended, every route is gone.
            return router.devices
        }
        if json { print(try JSONOutput.string(devices)) }
        return .success
    }
}
