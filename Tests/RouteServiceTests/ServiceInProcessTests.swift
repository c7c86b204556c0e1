// ServiceInProcessTests: the route service as a library — RouteService on a private session bus in this process, with
// This computer alone (no network), asked through RouteClient and raw D-Bus as an app would.

import Foundation
import MediaRouting
import RouteClient
import RouteCore
import RouteGIO
import RouteService
import RouteTestSupport
import Testing

@Suite struct ServiceInProcessTests {
    /// Runs a service over This computer alone on a private bus while `body` runs; then shuts it down and waits for it.
    private func withService(_ body: (PrivateSessionBus, RouteServiceClient) async throws -> Void) async throws {
        try await withSessionBus { bus in
            let connection = try DBusConnection.session(address: bus.address)
            let service = RouteService(bus: connection, router: try MediaRouter.standard(providers: [MediaRoute.localProvider], log: .discard),
                                       log: .discard)
            let running = Task { try await service.run() }
            defer { running.cancel() }
            let client = try await RouteServiceClient.connect(address: bus.address)
            let deadline = ContinuousClock.now + .seconds(10)
            while try await !client.isRunning(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(try await client.isRunning(), "the service did not take its name within 10 s")
            try await body(bus, client)
            service.shutDown()
            _ = await running.result
        }
    }

    @Test func anAppFindsThisComputerThroughTheService() async throws {
        try await withService { _, client in
            let deadline = ContinuousClock.now + .seconds(10)
            var devices = try await client.devices()
            while devices.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                devices = try await client.devices()
            }
            #expect(devices.map(\.id) == [MediaDevice.thisComputer.id], "\(devices.map(\.name))")
        }
    }

    @Test func optionsThatAreNotOnesAreRefusedInTheirOwnWords() async throws {
        try await withService { bus, _ in
            // gdbus waits for the service, which runs in this process: never on the cooperative pool's threads (two
            // here), or the service can find none free to answer (a run once timed out so, 25 s, beside other tests).
            let loud = try await offThePool {
                try bus.tool("gdbus", ["call", "--session", "--dest", RouteServiceAPI.busName, "--object-path", RouteServiceAPI.managerPath,
                                       "--method", "io.github.route.Route1.Manager.StartSink", "This computer", "{'loud': <true>}"])
            }
            #expect(loud.text.contains("InvalidArgs") && loud.text.contains("StartSink: the option loud takes nothing: there is no such option"),
                    "\(loud.text)")
            let idle = try await offThePool {
                try bus.tool("gdbus", ["call", "--session", "--dest", RouteServiceAPI.busName, "--object-path", RouteServiceAPI.managerPath,
                                       "--method", "io.github.route.Route1.Manager.StartSink", "This computer", "{'idle': <'soon'>}"])
            }
            #expect(idle.text.contains("StartSink: the option idle takes seconds (a double) over 0"), "\(idle.text)")
        }
    }

    @Test func aSecondServiceOnTheBusSaysOneRunsAndEnds() async throws {
        try await withService { bus, _ in
            let second = RouteService(bus: try DBusConnection.session(address: bus.address),
                                      router: try MediaRouter.standard(providers: [MediaRoute.localProvider], log: .discard), log: .discard)
            do {
                try await second.run()
                Issue.record("a second service ran beside the first")
            } catch let error as RouteError {
                #expect(error.code == .notSetUp && "\(error)".contains("another route service already runs"), "\(error)")
            }
        }
    }
}
