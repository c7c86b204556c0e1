// ExitCodeTests: one table gives an error's exit code from its kind, whether the error happened in this process or
// came back from the route service by its D-Bus name.

import RouteClient
import RouteCLI
import RouteCore
import RouteMedia
import Testing

@Suite struct ExitCodeTests {
    @Test func anErrorHasTheSameExitCodeInProcessAndThroughTheService() {
        let errors: [(any Error, ExitCode)] = [
            (RouteError.unknownDevice(query: "Nobody", candidates: []), .noDevice),
            (RouteError.ambiguousDevice(query: "Lab", matches: ["Lab A", "Lab B"]), .noDevice),
            (RouteError.notCasting(query: "Lab"), .noDevice),
            (RouteError.unknownAddress("x:1"), .noDevice),
            (RouteError.deviceUnreachable(device: "Lab", reason: "gone"), .unreachable),
            (RouteError.commandFailed(device: "Lab", command: "pause", reason: "(701)"), .failure),
            (RouteError.mediaRefused(device: "Lab", reason: "LOAD_FAILED"), .failure),
            (MediaError.missingFile("/nowhere.wav"), .badInput),
            (MediaError.notMedia("/etc/passwd", reason: "text"), .badInput),
            (MediaError.pipeline("it broke"), .failure),
        ]
        for (error, code) in errors {
            #expect(ExitCode(for: error) == code, "\(error)")
            let sent = RouteServiceAPI.dbusError(error)
            let received = RouteServiceAPI.error(name: sent.name, sent.message)
            #expect(ExitCode(for: received) == code, "\(error), through the service as \(sent.name)")
            #expect("\(received)" == "\(error)", "the same words")
        }
        #expect(ExitCode(for: RouteServiceError(name: "org.freedesktop.DBus.Error.InvalidArgs", "bad call")) == .usage)
        #expect(ExitCode(for: RouteServiceError(name: "io.github.route.Route1.Error.Failed", "it failed")) == .failure)
    }
}
