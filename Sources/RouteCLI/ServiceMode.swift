// ServiceMode: whether a command goes through the route service or runs in-process (ROUTE_SERVICE, a session bus,
// --providers), and the connection that starts the service when needed.

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore

/// Whether a command goes through the route service, and the connection to it.
package enum ServiceMode {
    /// Through the service: a session bus exists, ROUTE_SERVICE is not `off`, and no providers were chosen (the
    /// service runs its own).
    package static func applies(_ parsed: ParsedArguments) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        if environment["ROUTE_SERVICE"]?.lowercased() == "off" { return false }
        if parsed["providers"] != nil || !(environment["ROUTE_PROVIDERS"] ?? "").isEmpty { return false }
        return RouteServiceClient.sessionBusExists
    }

    /// Whether the service may be asked about what it plays (it is not started to be asked): a session bus exists and
    /// ROUTE_SERVICE is not `off`. Chosen providers do not matter here: a cast of the service's is ours all the same.
    package static var mayAsk: Bool {
        ProcessInfo.processInfo.environment["ROUTE_SERVICE"]?.lowercased() != "off" && RouteServiceClient.sessionBusExists
    }

    /// A connection to the service, which is started (by the bus, or as `route service --background`) when it is not
    /// running.
    package static func connect() async throws -> RouteServiceClient {
        guard RouteServiceClient.sessionBusExists else {
            throw RouteError(.notSetUp, "the route service needs a session bus, and none answers (at DBUS_SESSION_BUS_ADDRESS, else "
                + "$XDG_RUNTIME_DIR/bus); route cast without --detach or --pick casts in-process")
        }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return try await RouteServiceClient.connect(starting: executable)
    }
}
