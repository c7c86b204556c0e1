// `route service`, and how the other commands reach it: whether a command goes through the service or runs
// in-process (ROUTE_SERVICE, a session bus, --providers), and the connection that starts the service when needed.

import Foundation
import RouteClient
import RouteGIO

enum ServiceCommand {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if parsed.has("background") { try leaveTerminal() }
        let bus: DBusConnection
        do { bus = try DBusConnection.session() } catch {
            throw SetupError(description: "the route service needs a session bus: \(error)")
        }
        let (router, providers) = try Providers.router(parsed)
        let service = RouteService(bus: bus, router: router, providers: providers)
        let stopping = InterruptFlag()
        // The first signal ends the sessions (their devices stop); a second one exits at once.
        let signals = SignalHandlers {
            if stopping.isSet { exit(ExitCode.interrupted.rawValue) }
            stopping.set()
            service.shutDown()
        }
        defer { signals.cancel() }
        try await service.run()
        return .success
    }

    /// A session of its own (the terminal closing does not end it) and messages to the runtime directory's
    /// service.log.
    private static func leaveTerminal() throws {
        setsid()
        let log = try SessionDirectory.checked() + "/service.log"
        let descriptor = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        dup2(descriptor, STDERR_FILENO)
        close(descriptor)
    }
}

/// Whether a command goes through the route service, and the connection to it.
enum ServiceMode {
    /// Through the service: a session bus exists, ROUTE_SERVICE is not `off`, and no providers were chosen (the
    /// service runs its own).
    static func applies(_ parsed: ParsedArguments) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        if environment["ROUTE_SERVICE"]?.lowercased() == "off" { return false }
        if parsed["providers"] != nil || !(environment["ROUTE_PROVIDERS"] ?? "").isEmpty { return false }
        return RouteServiceClient.sessionBusExists
    }

    /// A connection to the service, which is started (by the bus, or as `route service --background`) when it is not
    /// running.
    static func connect() async throws -> RouteServiceClient {
        guard RouteServiceClient.sessionBusExists else {
            throw SetupError(description: "the route service needs a session bus (DBUS_SESSION_BUS_ADDRESS is not set and there is "
                + "no $XDG_RUNTIME_DIR/bus); without --detach, route casts in-process")
        }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return try await RouteServiceClient.connect(starting: executable)
    }
}
