// `route service`: the service (the RouteService library) in the foreground, or with --background as route starts
// it on first use.

import Foundation
import RouteCLI
import RouteClient
import RouteControl
import RouteCore
import RouteGIO
import RouteService

enum ServiceCommand {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if parsed.has("background") { try leaveTerminal() }
        let bus: DBusConnection
        do { bus = try DBusConnection.session() } catch {
            throw RouteError(.notSetUp, "the route service needs a session bus: \(error)")
        }
        let service = RouteService(bus: bus, router: try Providers.router(parsed), log: CLILog.root)
        let stopping = InterruptFlag()
        // The first signal ends the sessions (their devices stop); a second one exits at once.
        let signals = SignalHandlers.install {
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
