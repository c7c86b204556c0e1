// MediaRouter: runs the providers (each with a lifecycle: started, restarted with backoff when it fails),
// merges their routes into physical devices by identity, and picks devices by name.

import FoundationEssentials
import Glibc
import Synchronization

/// The router: one device list from every provider, each device with its routes, and a way to reach them.
///
/// Call `run()` in a task to discover; cancel the task to stop. Everything else can be called from any
/// task. Routes of different providers that share a deduplication id are one device; two routes of one
/// provider never are (two renderers on one host are two devices).
public actor MediaRouter {
    /// The providers it runs, in order of preference.
    public nonisolated let providers: [any RouteProvider]
    private let discovery: DiscoveryServices
    private let log: RouteLog
    private nonisolated let table: RouteTable

    /// Makes a router over these providers, in order of preference, sharing `discovery` among them and
    /// logging to `log` (nothing is written anywhere else).
    public init(providers: [any RouteProvider], discovery: DiscoveryServices = .none, log: RouteLog = .discard) {
        self.providers = providers
        self.discovery = discovery
        self.log = log
        table = RouteTable(order: providers.map(\.name), paths: providers.map(\.path))
    }

    /// The merged device list now.
    public nonisolated var devices: [MediaDevice] { table.devices.latest ?? [] }

    /// The merged list now, then again after every change.
    public nonisolated func deviceUpdates() -> AsyncStream<[MediaDevice]> { table.devices.subscribe() }

    /// Every provider's state now.
    public nonisolated var providerStates: [ProviderStatus] { table.statuses.latest ?? [] }

    /// Every provider's state now, then again after every change.
    public nonisolated func providerUpdates() -> AsyncStream<[ProviderStatus]> { table.statuses.subscribe() }

    /// The context `provider` runs in (its log, the shared discovery), for direct calls outside `run()`.
    public nonisolated func context(for provider: any RouteProvider) -> ProviderContext {
        ProviderContext(log: log.named(provider.name), discovery: discovery) { _ in }
    }

    /// Runs every provider until the calling task is cancelled; a provider that fails is run again
    /// after a backoff (its `restartPolicy`; built-in ones 1 s, doubling to 60 s), its routes dropped
    /// meanwhile, and set aside when its policy says it failed too often.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers {
                group.addTask { await self.keepRunning(provider) }
            }
        }
    }

    private nonisolated func keepRunning(_ provider: any RouteProvider) async {
        let policy = provider.restartPolicy
        var delay = policy.firstBackoff
        var restarts = 0
        var failures: [ContinuousClock.Instant] = []
        let log = self.log.named(provider.name)
        while !Task.isCancelled {
            let generation = table.start(provider.name, restarts: restarts)
            let context = ProviderContext(log: log, discovery: discovery, publish: { [table] routes in
                table.publish(routes, from: provider.name, generation: generation)
            }, version: { [table] version in table.setVersion(version, of: provider.name) })
            let started = ContinuousClock.now
            do {
                try await provider.run(context)
                table.end(provider.name, state: .stopped, error: nil)
                return
            } catch {
                if Task.isCancelled || error is CancellationError {
                    table.end(provider.name, state: .stopped, error: nil)
                    return
                }
                let now = ContinuousClock.now
                if now - started > policy.maxBackoff { delay = policy.firstBackoff }
                restarts += 1
                if let quarantine = policy.quarantine {
                    failures = failures.filter { now - $0 < quarantine.window } + [now]
                    if failures.count >= quarantine.failures {
                        log(.error, "\(provider.name) failed \(failures.count) times in \(Self.words(quarantine.window)): \(error); "
                            + "not starting it again until it changes")
                        table.end(provider.name, state: .quarantined, error: "\(error)")
                        await quarantine.release()
                        guard !Task.isCancelled else { break }
                        log(.notice, "\(provider.name) changed; starting it again")
                        failures = []
                        delay = policy.firstBackoff
                        continue
                    }
                }
                log(.error, "\(provider.name) failed: \(error); trying again in \(Self.words(delay))")
                table.end(provider.name, state: .failed, error: "\(error)")
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, policy.maxBackoff)
            }
        }
        table.end(provider.name, state: .stopped, error: nil)
    }

    /// `1 s`, `2 min`.
    private static func words(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        return seconds >= 60 && seconds % 60 == 0 ? "\(seconds / 60) min" : "\(seconds) s"
    }

    /// Merges routes, listed in provider order, into devices: routes of different providers that share a
    /// deduplication id are one device. An identity that more than one route of one provider asserts
    /// identifies nothing (it merges none of them), and no device ever gets two routes of one provider.
    public static func merge(_ lists: [[MediaRoute]]) -> [MediaDevice] {
        var routes: [MediaRoute] = []
        var seen = Set<String>()
        for route in lists.joined() where seen.insert(route.id).inserted { routes.append(route) }
        var parent = Array(routes.indices)
        var members = routes.indices.map { [$0] }
        func root(_ index: Int) -> Int {
            var at = index
            while parent[at] != at { at = parent[at] }
            return at
        }
        var holders: [String: [Int]] = [:]
        var keys: [String] = []
        for (index, route) in routes.enumerated() {
            for key in route.deduplicationIDs.sorted() {
                if holders[key] == nil { keys.append(key) }
                holders[key, default: []].append(index)
            }
        }
        for key in keys {
            guard let holding = holders[key], holding.count > 1 else { continue }
            let providers = holding.map { routes[$0].provider }
            guard Set(providers).count == providers.count else { continue }
            for other in holding.dropFirst() {
                let a = root(holding[0]), b = root(other)
                guard a != b else { continue }
                let aProviders = Set(members[a].map { routes[$0].provider })
                guard aProviders.isDisjoint(with: members[b].map { routes[$0].provider }) else { continue }
                let (keep, fold) = a < b ? (a, b) : (b, a)
                parent[fold] = keep
                members[keep] = (members[keep] + members[fold]).sorted()
            }
        }
        return routes.indices.filter { root($0) == $0 }.map { MediaDevice(routes: members[$0].map { routes[$0] }) }
    }

    /// How long discovery listens before a name that only begins a device's name (or is spelled close to it) is
    /// taken for that device: time for a network's devices to answer a search (SSDP's MX is 1 to 3 s; mDNS answers
    /// within a second). A service that has listened longer answers such a name at once.
    public static let hearingTime: Duration = .seconds(3)

    /// Waits until a device named exactly by `query` (its id, name or address) is known, or a device is the only one
    /// `query` begins (or spells closely) once discovery has listened for `hearing`, or `timeout` seconds pass; then
    /// picks by unique prefix or close spelling among all found (a prefix cannot be known to be unique before
    /// discovery has had its time). Discovery must be running.
    /// - Throws: `RouteError.unknownDevice` or `.ambiguousDevice`, listing the devices found.
    public func waitForDevice(matching query: String, timeout: Double, hearing: Duration = MediaRouter.hearingTime) async throws -> MediaDevice {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let updates = deviceUpdates()
        let table = self.table
        /// The one device `list` has for `query`: named exactly, or only by prefix or spelling once discovery has listened.
        @Sendable func unique(in list: [MediaDevice]) -> MediaDevice? {
            guard let (match, hits) = DeviceMatcher.candidates(for: query, in: list), hits.count == 1 else { return nil }
            return match <= .exactName || (table.listened() ?? .zero) >= hearing ? hits[0] : nil
        }
        let found: MediaDevice? = await withTaskGroup(of: MediaDevice?.self) { group in
            group.addTask {
                for await list in updates {
                    if let hit = unique(in: list) { return hit }
                }
                return nil
            }
            group.addTask {
                // Discovery may fall quiet before it has listened long enough: the list is asked again then.
                let listened = table.listened() ?? .zero
                if listened < hearing, ContinuousClock.now + (hearing - listened) < deadline {
                    try? await Task.sleep(for: hearing - listened)
                    if !Task.isCancelled, let hit = unique(in: table.devices.latest ?? []) { return hit }
                }
                try? await Task.sleep(until: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let found { return found }
        return try DeviceMatcher.pick(query, in: devices)
    }

    /// `device` as it is once its routes of `providers` had a moment to arrive: two providers find one TV at nearly
    /// the same time, and a file should go over the route that plays it best, not the one that answered first. Waits
    /// at most `window` from when the device was first listed, and not at all when those providers already reach it or
    /// fewer than two are asked for.
    /// Discovery must be running.
    public nonisolated func settled(_ device: MediaDevice, waitingFor providers: Set<String>, within window: Duration) async -> MediaDevice {
        let ids = Set(device.routes.map(\.id))
        // A device listed for a while has had its moment: a warm service answers at once.
        let known = table.age(ofOldest: ids) ?? .zero
        guard providers.count > 1, known < window else { return current(device) }
        return await settled(device, within: window - known) { providers.isSubset(of: Set($0.routes.map(\.provider))) }
    }

    /// `device` as listed once `complete` holds for it (it gained the routes wanted), or as it is after `window`.
    /// Discovery must be running.
    public nonisolated func settled(_ device: MediaDevice, within window: Duration,
                                    until complete: @escaping @Sendable (MediaDevice) -> Bool) async -> MediaDevice {
        let ids = Set(device.routes.map(\.id))
        guard !complete(device) else { return current(device) }
        let updates = deviceUpdates()
        let latest = await withTaskGroup(of: MediaDevice?.self) { group -> MediaDevice? in
            group.addTask {
                var latest: MediaDevice?
                for await list in updates {
                    guard let now = list.first(where: { !ids.isDisjoint(with: $0.routes.map(\.id)) }) else { continue }
                    latest = now
                    if complete(now) { return now }
                }
                return latest
            }
            group.addTask {
                try? await Task.sleep(for: window)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return latest ?? current(device)
    }

    /// The device as listed now (a route of it may have joined another's), else as it was.
    private nonisolated func current(_ device: MediaDevice) -> MediaDevice {
        let ids = Set(device.routes.map(\.id))
        return devices.first { !ids.isDisjoint(with: $0.routes.map(\.id)) } ?? device
    }

    /// Asks each provider in turn for the device at `address`, without discovery. A bare IP address is tried at
    /// each protocol's default port (Cast's 8009), as `catt -d IP` does.
    /// - Throws: the provider's error when it speaks to the address but the device does not answer;
    ///   `RouteError.deviceUnreachable` when a `host:port` answers but as no provider's device (something is
    ///   there, and it is not a player route knows); `RouteError.unknownAddress` when no provider speaks to it.
    public func device(at address: String) async throws -> MediaDevice {
        for provider in providers {
            if let route = try await provider.route(at: address, context: context(for: provider)) {
                return MediaDevice(routes: [route])
            }
        }
        if Self.namesAPort(address) {
            throw RouteError.deviceUnreachable(device: address, reason: "no player route knows answers there (\(providers.map(\.name).filter { $0 != MediaRoute.localProvider }.joined(separator: ", ")) asked)")
        }
        throw RouteError.unknownAddress(address)
    }

    /// Whether `address` is `host:port` (or `[v6]:port`, or a URL with a port): a service, not only a host.
    static func namesAPort(_ address: String) -> Bool {
        var rest = Substring(address)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        let authority = rest.prefix { $0 != "/" }
        if authority.hasPrefix("[") { return authority.contains("]:") }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 2 && UInt16(parts[1]) != nil
    }

    /// Opens a controller for a route through the provider that found it.
    public func controller(for route: MediaRoute) async throws -> any RouteController {
        guard let provider = providers.first(where: { $0.name == route.provider }) else {
            throw RouteError.deviceUnreachable(device: route.name, reason: "no \(route.provider) provider is running")
        }
        return try await provider.controller(for: route, context: context(for: provider))
    }
}

/// The routes each provider published and the states of the providers, merged as they change. Thread-safe:
/// providers publish from any task; merging happens under one lock, so updates go out in order.
final class RouteTable: Sendable {
    private struct State {
        var routes: [String: [MediaRoute]] = [:]
        var statuses: [String: ProviderStatus] = [:]
        var generations: [String: Int] = [:]
        /// When each listed route (by id) was first published.
        var firstSeen: [String: ContinuousClock.Instant] = [:]
        /// When the first provider started: discovery listens from then on.
        var listeningSince: ContinuousClock.Instant?
        /// The id of the device each listed route (by id) belongs to, and since when that id has been listed.
        var identities: [String: (id: String, since: ContinuousClock.Instant)] = [:]
    }
    let order: [String]
    private let state = Mutex(State())
    let devices = Broadcast<[MediaDevice]>(initial: [])
    let statuses = Broadcast<[ProviderStatus]>()

    init(order: [String], paths: [String?]) {
        self.order = order
        let initial = zip(order, paths).map { ProviderStatus(name: $0, state: .stopped, path: $1) }
        state.withLock { state in
            for status in initial { state.statuses[status.name] = status }
        }
        statuses.send(initial)
    }

    /// The version a provider reported.
    func setVersion(_ version: String, of name: String) {
        update { $0.statuses[name]?.version = version }
    }

    /// A provider (re)starts: its routes so far are dropped; returns the generation its publishes carry.
    func start(_ name: String, restarts: Int) -> Int {
        update { state in
            if state.listeningSince == nil { state.listeningSince = .now }
            state.generations[name, default: 0] += 1
            state.routes[name] = []
            var status = state.statuses[name] ?? ProviderStatus(name: name, state: .starting)
            status.state = .starting
            status.routes = 0
            status.restarts = restarts
            state.statuses[name] = status
            return state.generations[name]!
        }
    }

    /// A provider's snapshot; ignored when it comes from a run that has ended.
    func publish(_ routes: [MediaRoute], from name: String, generation: Int) {
        update { state in
            guard state.generations[name] == generation else { return }
            state.routes[name] = routes
            let now = ContinuousClock.now
            for route in routes where state.firstSeen[route.id] == nil { state.firstSeen[route.id] = now }
            state.statuses[name]?.state = .running
            state.statuses[name]?.routes = routes.count
        }
    }

    /// A provider's run ended (returned or failed): its routes are dropped.
    func end(_ name: String, state newState: ProviderStatus.State, error: String?) {
        update { state in
            state.generations[name, default: 0] += 1
            state.routes[name] = []
            state.statuses[name]?.state = newState
            state.statuses[name]?.routes = 0
            if let error { state.statuses[name]?.lastError = error }
        }
    }

    /// `devices` with the ids they have had: a device keeps the id it was first listed with for as long as any of its
    /// routes stays listed, whichever route is preferred now (a Cast route that joins a renderer's device, or the
    /// first route leaving, changes no id). A device new to the list is named after its preferred route; two devices
    /// never share an id (a device split in two keeps its id in one part).
    static func identified(_ devices: [MediaDevice],
                           _ identities: inout [String: (id: String, since: ContinuousClock.Instant)]) -> [MediaDevice] {
        let now = ContinuousClock.now
        var used = Set<String>()
        var next: [String: (id: String, since: ContinuousClock.Instant)] = [:]
        let known = identities
        let result = devices.map { device -> MediaDevice in
            var device = device
            let had = device.routes.compactMap { known[$0.id] }.sorted { $0.since < $1.since }
            guard let identity = (had + device.routes.map { (id: $0.id, since: now) }).first(where: { !used.contains($0.id) }) else {
                return device
            }
            device.id = identity.id
            used.insert(identity.id)
            for route in device.routes { next[route.id] = identity }
            return device
        }
        identities = next
        return result
    }

    /// How long discovery has listened (since the first provider started); nil before it has started.
    func listened() -> Duration? {
        state.withLock { state in state.listeningSince.map { ContinuousClock.now - $0 } }
    }

    /// How long the earliest listed of these routes has been listed; nil when none is.
    func age(ofOldest ids: Set<String>) -> Duration? {
        state.withLock { state in
            ids.compactMap { state.firstSeen[$0] }.min().map { ContinuousClock.now - $0 }
        }
    }

    private func update<T>(_ change: (inout State) -> T) -> T {
        state.withLock { state in
            let result = change(&state)
            let listed = Set(state.routes.values.joined().map(\.id))
            state.firstSeen = state.firstSeen.filter { listed.contains($0.key) }
            let merged = Self.identified(MediaRouter.merge(order.map { state.routes[$0] ?? [] }), &state.identities)
            if merged != devices.latest { devices.send(merged) }
            let list = order.compactMap { state.statuses[$0] }
            if list != statuses.latest { statuses.send(list) }
            return result
        }
    }
}

extension MediaRouter {
    /// Runs `body` while the router discovers (`run()`), then ends discovery and waits until every provider has
    /// stopped: a command that looks for devices for a while leaves nothing running behind it.
    public nonisolated func discovering<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
            group.addTask { await self.run() }
            defer { group.cancelAll() }
            return try await body()
        }
    }
}
