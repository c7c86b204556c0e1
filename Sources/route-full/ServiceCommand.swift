// `route service`: the service in the foreground, or with --background as route starts it on first use.

import Foundation
import RouteCLI
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
