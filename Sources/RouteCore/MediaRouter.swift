// MediaRouter: runs the providers, merges their devices into one list, and picks devices by name.

/// The router: one device list from every provider, deduplicated, and a way to reach each device.
///
/// Call `run()` in a task to discover; cancel the task to stop. Everything else can be called
/// from any task. A device seen by several providers (same id or a shared deduplication id)
/// appears once, from the provider listed first.
public actor MediaRouter {
    private let providers: [any RouteProvider]
    private var snapshots: [String: [MediaDevice]] = [:]
    private let changes = Broadcast<[MediaDevice]>(initial: [])

    /// Makes a router over these providers, in order of preference.
    public init(providers: [any RouteProvider]) {
        self.providers = providers
    }

    /// The merged device list now.
    public var devices: [MediaDevice] { changes.latest ?? [] }

    /// The merged list now, then again after every change.
    public nonisolated func deviceUpdates() -> AsyncStream<[MediaDevice]> { changes.subscribe() }

    /// Runs discovery on every provider until the calling task is cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers {
                group.addTask { [weak self] in
                    for await snapshot in provider.discover() {
                        await self?.receive(snapshot, from: provider.name)
                    }
                }
            }
        }
    }

    private func receive(_ snapshot: [MediaDevice], from provider: String) {
        // Whatever a provider (or a plugin) found on the network, names reach apps and terminals clean.
        snapshots[provider] = snapshot.map { device in
            var clean = device
            clean.name = DisplayText.clean(device.name)
            clean.address = device.address.map { DisplayText.clean($0, limit: DisplayText.messageLimit) }
            return clean
        }
        let merged = Self.merge(providers.map { snapshots[$0.name] ?? [] })
        if merged != devices { changes.send(merged) }
    }

    /// Merges provider lists in order: a device whose id or deduplication ids meet an earlier
    /// device's is folded into it (ids united), otherwise appended.
    public static func merge(_ lists: [[MediaDevice]]) -> [MediaDevice] {
        var merged: [MediaDevice] = []
        for device in lists.joined() {
            let keys = device.deduplicationIDs.union([device.id])
            if let index = merged.firstIndex(where: { !$0.deduplicationIDs.union([$0.id]).isDisjoint(with: keys) }) {
                merged[index].deduplicationIDs.formUnion(keys.subtracting([merged[index].id]))
            } else {
                merged.append(device)
            }
        }
        return merged
    }

    /// Waits until a device named exactly by `query` (its id, name or IP address) is known, or
    /// `timeout` seconds pass; then picks by unique prefix or close spelling among all found (a
    /// prefix cannot be known to be unique before discovery has had its time). Discovery must be running.
    /// - Throws: `RouteError.unknownDevice` or `.ambiguousDevice`, listing the devices found.
    public func waitForDevice(matching query: String, timeout: Double) async throws -> MediaDevice {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let updates = deviceUpdates()
        let found: MediaDevice? = await withTaskGroup(of: MediaDevice?.self) { group in
            group.addTask {
                for await list in updates {
                    if let (match, hits) = DeviceMatcher.candidates(for: query, in: list),
                       match <= .exactName, hits.count == 1 {
                        return hits[0]
                    }
                }
                return nil
            }
            group.addTask {
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

    /// Asks each provider in turn for the device at `address`, without discovery.
    /// - Throws: the provider's error when it speaks to the address but the device does not answer;
    ///   `RouteError.unknownAddress` when no provider speaks to it.
    public func device(at address: String) async throws -> MediaDevice {
        for provider in providers {
            if let device = try await provider.device(at: address) { return device }
        }
        throw RouteError.unknownAddress(address)
    }

    /// Opens a controller for a device through the provider that found it.
    public func controller(for device: MediaDevice) async throws -> any RouteController {
        guard let provider = providers.first(where: { $0.name == device.protocolName }) else {
            throw RouteError.deviceUnreachable(device: device.name, reason: "no \(device.protocolName) provider is running")
        }
        return try await provider.controller(for: device)
    }
}
