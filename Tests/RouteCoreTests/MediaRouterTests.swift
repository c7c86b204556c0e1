// MediaRouterTests: merging device lists from several providers, and the router's discovery, waiting and
// address lookup, driven by FixedProvider (a scripted in-test provider; the router is pure logic).

import Foundation
import RouteCore
import RouteTestSupport
import Testing

/// A provider that sends scripted snapshots, each after its delay, then keeps the stream open until
/// cancelled (as real providers do); answers `device(at:)` from a fixed table.
struct FixedProvider: RouteProvider {
    let name: String
    /// (seconds to wait before sending, snapshot), in order.
    var script: [(Double, [MediaDevice])]
    var addresses: [String: MediaDevice] = [:]

    func discover() -> AsyncStream<[MediaDevice]> {
        let script = self.script
        return AsyncStream { continuation in
            let task = Task {
                for (delay, snapshot) in script {
                    if delay > 0 { try? await Task.sleep(for: .seconds(delay)) }
                    if Task.isCancelled { return }
                    continuation.yield(snapshot)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func device(at address: String) async throws -> MediaDevice? { addresses[address] }

    func controller(for device: MediaDevice) async throws -> any RouteController {
        throw RouteError.unsupported(device: device.name, what: "be controlled in tests")
    }
}

@Suite struct MediaRouterMergeTests {
    @Test func sameDeviceFromTwoProvidersAppearsOnceWithIDsUnited() throws {
        let viaUPnP = device("Living Room", id: "uuid:living", dedup: ["10.0.0.5"])
        let viaCast = device("Living Room TV", id: "cast-1234", protocolName: "cast", dedup: ["10.0.0.5", "mac:aa"])
        let merged = MediaRouter.merge([[viaUPnP], [viaCast]])
        #expect(merged.count == 1)
        let only = try #require(merged.first)
        #expect(only.id == "uuid:living")
        #expect(only.name == "Living Room")
        #expect(only.protocolName == "upnp")
        #expect(only.deduplicationIDs == ["10.0.0.5", "cast-1234", "mac:aa"])
    }

    @Test func sameIDWithoutDeduplicationIDsIsMerged() {
        let a = device("Speaker", id: "same")
        let b = device("Speaker (again)", id: "same", protocolName: "cast")
        #expect(MediaRouter.merge([[a], [b]]).map(\.name) == ["Speaker"])
    }

    @Test func distinctDevicesAreAllKeptInOrder() {
        let a = device("A", id: "a", dedup: ["10.0.0.1"])
        let b = device("B", id: "b", dedup: ["10.0.0.2"])
        let c = device("C", id: "c", protocolName: "cast", dedup: ["10.0.0.3"])
        let d = device("D", id: "d", protocolName: "cast")
        let merged = MediaRouter.merge([[a, b], [c, d]])
        #expect(merged.map(\.id) == ["a", "b", "c", "d"])
        #expect(merged == [a, b, c, d])
    }

    @Test func aDuplicateKeepsTheFirstDevicesPosition() {
        let a = device("A", id: "a")
        let b = device("B", id: "b", dedup: ["10.0.0.2"])
        let c = device("C", id: "c", protocolName: "cast")
        let bAgain = device("B (cast)", id: "b-cast", protocolName: "cast", dedup: ["10.0.0.2"])
        #expect(MediaRouter.merge([[a, b], [c, bAgain]]).map(\.id) == ["a", "b", "c"])
    }

    @Test func emptyListsMergeToNothing() {
        #expect(MediaRouter.merge([]).isEmpty)
        #expect(MediaRouter.merge([[], []]).isEmpty)
    }
}

@Suite struct MediaRouterDiscoveryTests {
    let tv = device("Kitchen TV", id: "uuid:tv", dedup: ["10.0.0.7"])
    let speaker = device("Garden Speaker", id: "cast-garden", protocolName: "cast")

    @Test func deviceUpdatesReflectEveryProvidersSnapshots() async {
        let tvAgain = device("Kitchen TV (Cast)", id: "cast-tv", protocolName: "cast", dedup: ["10.0.0.7"])
        let router = MediaRouter(providers: [
            FixedProvider(name: "upnp", script: [(0, [tv])]),
            FixedProvider(name: "cast", script: [(0.05, [speaker]), (0.05, [speaker, tvAgain])]),
        ])
        let updates = router.deviceUpdates()
        let discovery = Task { await router.run() }
        let both = await firstValue(in: updates, within: 5) { list in
            list.contains { $0.id == "cast-garden" } && list.contains { $0.id == "uuid:tv" }
        }
        #expect(both != nil, "the router never listed both providers' devices")
        // The TV seen again through Cast stays one entry, the UPnP one, with the Cast id added.
        let merged = await firstValue(in: router.deviceUpdates(), within: 5) { list in
            list.first { $0.id == "uuid:tv" }?.deduplicationIDs.contains("cast-tv") == true
        }
        #expect(merged?.map(\.name) == ["Kitchen TV", "Garden Speaker"])
        #expect(await router.devices.count == 2)
        discovery.cancel()
        #expect(await finishes(discovery, within: 5), "run() did not return after its task was cancelled")
    }

    @Test func aNewSubscriberGetsTheCurrentListFirst() async {
        let router = MediaRouter(providers: [FixedProvider(name: "upnp", script: [(0, [tv])])])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        #expect(await firstValue(in: router.deviceUpdates(), within: 5) { !$0.isEmpty } == [tv])
        // Subscribed after the list was known: the first value is that list.
        #expect(await firstValue(in: router.deviceUpdates(), within: 5) == [tv])
    }

    @Test func waitForDeviceReturnsAsSoonAsTheDeviceAppears() async throws {
        let router = MediaRouter(providers: [
            FixedProvider(name: "upnp", script: [(0, [tv])]),
            FixedProvider(name: "cast", script: [(0.3, [speaker])]),
        ])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        let start = ContinuousClock.now
        let found = try await router.waitForDevice(matching: "GARDEN speaker", timeout: 20)
        let elapsed = ContinuousClock.now - start
        #expect(found.id == "cast-garden")
        #expect(elapsed < .seconds(5), "waited \(elapsed) for a device sent after 0.3 s; the timeout was 20 s")
    }

    @Test func aPrefixWaitsForDiscoverySoALaterNamesakeMakesItAmbiguous() async throws {
        let gardenLight = MediaDevice(id: "upnp-garden-light", name: "Garden Light", kind: .tv, protocolName: "upnp",
                                      capabilities: .video, volumeControl: .none, accepts: .anything)
        let router = MediaRouter(providers: [
            FixedProvider(name: "cast", script: [(0, [speaker])]),
            FixedProvider(name: "upnp", script: [(0.1, [gardenLight])]),
        ])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        await #expect(throws: RouteError.self) { try await router.waitForDevice(matching: "garden", timeout: 3) }
        #expect(try await router.waitForDevice(matching: "garden s", timeout: 0.5).id == "cast-garden")
    }

    @Test func waitForDeviceThrowsUnknownDeviceAfterTheTimeout() async {
        let router = MediaRouter(providers: [FixedProvider(name: "upnp", script: [(0, [tv])])])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        let start = ContinuousClock.now
        await #expect(throws: RouteError.unknownDevice(query: "Bedroom", candidates: ["Kitchen TV"])) {
            try await router.waitForDevice(matching: "Bedroom", timeout: 0.5)
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(450), "gave up after \(elapsed), before the 0.5 s timeout")
        #expect(elapsed < .seconds(5))
    }

    @Test func waitForDeviceSettlesForACloseSpellingAtTheTimeout() async throws {
        let router = MediaRouter(providers: [FixedProvider(name: "upnp", script: [(0, [tv])])])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        let found = try await router.waitForDevice(matching: "Kitchn TV", timeout: 0.3)
        #expect(found.id == "uuid:tv")
    }

    @Test func deviceAtAddressAsksEachProviderInTurn() async throws {
        let router = MediaRouter(providers: [
            FixedProvider(name: "upnp", script: [], addresses: [:]),
            FixedProvider(name: "cast", script: [], addresses: ["10.0.0.9:8009": speaker]),
        ])
        #expect(try await router.device(at: "10.0.0.9:8009") == speaker)
    }

    @Test func deviceAtAddressNoProviderAnswersIsUnknownAddress() async {
        let router = MediaRouter(providers: [
            FixedProvider(name: "upnp", script: [(0, [tv])]),
            FixedProvider(name: "cast", script: [], addresses: ["10.0.0.9:8009": speaker]),
        ])
        await #expect(throws: RouteError.unknownAddress("10.0.0.1:1234")) {
            try await router.device(at: "10.0.0.1:1234")
        }
    }

    @Test func controllerForADeviceWithoutItsProviderIsUnreachable() async {
        let router = MediaRouter(providers: [FixedProvider(name: "upnp", script: [])])
        await #expect(throws: RouteError.deviceUnreachable(device: "Garden Speaker", reason: "no cast provider is running")) {
            _ = try await router.controller(for: speaker)
        }
    }
}
