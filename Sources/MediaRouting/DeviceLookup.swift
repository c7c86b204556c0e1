// DeviceLookup: the device a person names — by address (a listed device's, else asked directly), "This computer", or
// by name once discovery has found it and its other routes have had a moment to arrive — and a group cast's devices,
// as `route cast --to` and the service find them.

import Foundation
import RouteCore
import RouteMedia

/// Finds the device a query names among a router's devices.
public enum DeviceLookup {
    /// The device `query` names through a router whose discovery runs: by address (a listed device's, else asked
    /// directly), This computer, or by name, waiting up to `timeout` seconds for it to be found and then for its other
    /// routes (`settled`).
    /// With `via` naming a provider that runs, a device found by name is awaited (within `timeout`) until it has a route
    /// of that protocol: a plugin's route to a merged device comes after the built-in ones.
    public static func find(_ query: String, router: MediaRouter, providers: [any RouteProvider], timeout: Double,
                            via: String? = nil) async throws -> MediaDevice {
        let found = try await find(query, router: router, providers: providers, timeout: timeout)
        // Only a protocol one of the providers speaks is awaited: another is refused at once by whoever plays.
        guard let via, !found.routes.contains(where: { $0.isReached(via: via) }),
              providers.contains(where: { $0.name.caseInsensitiveCompare(via) == .orderedSame }) else { return found }
        return await router.settled(found, within: .milliseconds(Int(timeout * 1000))) { $0.routes.contains { $0.isReached(via: via) } }
    }

    private static func find(_ query: String, router: MediaRouter, providers: [any RouteProvider], timeout: Double) async throws -> MediaDevice {
        if looksLikeAddress(query) {
            // The address of a listed device's route is that device, with its id and all its routes; asked directly,
            // it would be a device of its own, named after the address, that no list has.
            let listed = router.devices.filter { DeviceMatcher.matchesAddress(query, of: $0) }
            if listed.count == 1 { return await settled(listed[0], router: router, providers: providers) }
            return try await router.device(at: query)
        }
        let local = providers.contains { $0.name == MediaRoute.localProvider } ? [LocalProvider.device] : []
        if let computer = DeviceMatcher.thisComputer(query, in: local) { return computer }
        let found: MediaDevice
        do {
            found = try await router.waitForDevice(matching: query, timeout: timeout)
        } catch let error as RouteError where error.code == .unknownDevice && isBareIP(query) {
            // Nothing announced at that address: ask it directly at each protocol's default port, as `catt -d IP`
            // does (a receiver on another network segment, or with mDNS blocked, still answers there).
            return try await router.device(at: query)
        }
        return await settled(found, router: router, providers: providers)
    }

    /// The device as it is once its other routes had a moment to arrive (`MediaRouter.settled`): the built-in
    /// network providers assert identities across protocols (UDN, Cast id, MAC); a plugin's routes rarely merge, and
    /// waiting for every plugin would cost every cast the whole window.
    public static func settled(_ device: MediaDevice, router: MediaRouter, providers: [any RouteProvider]) async -> MediaDevice {
        let network = Set(providers.map(\.name).filter { StandardProviders.builtIn.contains($0) && $0 != MediaRoute.localProvider })
        return await router.settled(device, waitingFor: network, within: mergeWindow)
    }

    /// Whether `text` is an IPv4 or IPv6 address alone (no port, no scheme).
    public static func isBareIP(_ text: String) -> Bool { SocketAddress(numericHost: text, port: 0) != nil }

    /// How long a device found by name may take to gain the routes of other providers: 60 ms, or ROUTE_MERGE_WINDOW
    /// milliseconds (at most a minute). The wait ends as soon as every network provider has a route there, so a longer
    /// window costs only the casts to devices that one protocol alone reaches; a short one may choose a device's Cast
    /// route while its DLNA route, which would play the file as it is, is still being read (seen on a loaded machine).
    public static let mergeWindow: Duration = {
        guard let text = ProcessInfo.processInfo.environment["ROUTE_MERGE_WINDOW"], let milliseconds = Int(text),
              (0...60_000).contains(milliseconds) else { return .milliseconds(60) }
        return .milliseconds(milliseconds)
    }()

    /// A URL or `host:port`: asked directly, without discovery. (A bare IP address names no service:
    /// it is matched against the addresses of the devices discovery finds.)
    public static func looksLikeAddress(_ text: String) -> Bool {
        // http(s):// is a UPnP description; another scheme (mpd://) is a plugin's address.
        if text.contains("://"), !text.contains(" ") { return true }
        return text.contains(":") && Int(text.split(separator: ":").last ?? "") != nil && !text.contains(" ")
    }
}

extension DeviceLookup {
    /// The devices of a group cast, all found at once within `timeout` (discovery must be running): each device
    /// `targets` names as a cast to it alone finds it (`found` hears which it was), a kept group's members by the route
    /// id they were kept with (one not found is said through `say`, and the group plays without it); each device once.
    /// - Returns: the group as a device, and its members that were found, in order.
    /// - Throws: what finding a named device threw; `RouteError.unknownDevice` when no member was found.
    public static func findGroup(_ targets: GroupTargets, router: MediaRouter, providers: [any RouteProvider], timeout: Double,
                                 via: String?, say: @escaping @Sendable (String) -> Void,
                                 found: @escaping @Sendable (_ query: String, MediaDevice) -> Void = { _, _ in })
        async throws -> (group: MediaDevice, members: [MediaDevice]) {
        let devices: [MediaDevice?] = try await withThrowingTaskGroup(of: (Int, MediaDevice?).self) { group in
            for (index, member) in targets.members.enumerated() {
                group.addTask {
                    switch member {
                    case .query(let query):
                        let device = try await find(query, router: router, providers: providers, timeout: timeout, via: via)
                        found(query, device)
                        return (index, device)
                    case .kept(let kept, let name):
                        do {
                            return (index, try await find(kept.id, router: router, providers: providers, timeout: timeout, via: via))
                        } catch let error as RouteError where error.code == .unknownDevice {
                            say("\(kept.name), of \(name), was not found; \(name) plays without it")
                            return (index, nil)
                        }
                    }
                }
            }
            var devices = [MediaDevice?](repeating: nil, count: targets.members.count)
            for try await (index, device) in group { devices[index] = device }
            return devices
        }
        var seen = Set<String>()
        let members = devices.compactMap { $0 }.filter { seen.insert($0.id).inserted }
        guard !members.isEmpty else {
            throw RouteError(.unknownDevice, "none of \(targets.name)'s devices was found; run `route devices` to see what answers")
        }
        return (DeviceGroup(name: targets.name, members: members.map(DeviceGroup.Member.init)).device(among: members), members)
    }

    /// `device` as the router lists it again and `free` says no other cast of route's plays there (at once when it is
    /// listed still: a device unplugged without a word stays listed until its announcement expires, and the group's next
    /// try finds whether it answers): a group's member that left the network (`GroupCast`'s `comesBack`). Nil when the
    /// router's list ends.
    public static func listedAgain(_ device: MediaDevice, by router: MediaRouter,
                                   free: @Sendable (MediaDevice) async -> Bool) async -> MediaDevice? {
        let ids = Set(device.routes.map(\.id))
        for await list in router.deviceUpdates() {
            if let now = list.first(where: { !ids.isDisjoint(with: $0.routes.map(\.id)) }), await free(now) { return now }
        }
        return nil
    }

    /// The delays set for `members` (`route group delay`), by device id; none when the groups file cannot be read (a
    /// broken file is said by `route group list`; the members then hold back what their protocols typically do).
    public static func delays(of members: [MediaDevice]) -> [String: Double] {
        let set = (try? DeviceGroups.delays()) ?? [:]
        return members.reduce(into: [String: Double]()) { $0[$1.id] = DeviceGroups.delay(of: $1, in: set) }
    }
}
