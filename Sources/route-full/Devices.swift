// `route devices` in-process: the devices a router in this process hears (DeviceList writes the command once, for
// this and for the route service).

import Foundation
import RouteCLI
import MediaRouting
import RouteCore

enum Devices {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if ServiceMode.applies(parsed) { return try await DeviceList.run(parsed, from: ServiceDevices(try await ServiceMode.connect())) }
        return try await DeviceList.run(parsed, from: RouterDevices(try Providers.router(parsed)))
    }
}

/// The devices a router in this process hears while it discovers: from the first list that holds a device (an empty
/// one before it is only providers that have not started yet), every list, empty ones too (the last device gone).
/// With no provider that discovers over the network (This computer alone), the first such list is all there will be.
struct RouterDevices: DeviceSource {
    let router: MediaRouter

    init(_ router: MediaRouter) { self.router = router }

    func listen<T: Sendable>(_ body: (AsyncThrowingStream<DeviceListUpdate, any Error>) async throws -> T) async throws -> T {
        let networked = Providers.discoverNetwork(router.providers), router = router
        return try await router.discovering {
            let started = ContinuousClock.now
            let lists = router.deviceUpdates()
            let (updates, continuation) = AsyncThrowingStream<DeviceListUpdate, any Error>.makeStream()
            let relay = Task {
                var heard = false
                for await list in lists {
                    heard = heard || !list.isEmpty
                    guard heard else { continue }
                    continuation.yield((list, networked ? (ContinuousClock.now - started) / .seconds(1) : .infinity))
                }
                continuation.finish()
            }
            defer { relay.cancel() }
            return try await body(updates)
        }
    }
}
