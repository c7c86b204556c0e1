// UPnPProvider: DLNA MediaRenderers as route devices — found by SSDP search and advertisements,
// described, asked what they accept, and dropped on byebye, expiry, or when they stop answering.

import Foundation
import RouteCore
import Synchronization

/// The UPnP/DLNA provider. Discovery runs while `discover()` is iterated.
public struct UPnPProvider: RouteProvider {
    public let name = "upnp"

    /// Makes the provider; libupnp starts on first use (`ROUTE_UPNP_INTERFACE` picks the interface).
    public init() {}

    public func discover() -> AsyncStream<[MediaDevice]> {
        AsyncStream { continuation in
            let task = Task {
                do {
                    try await RendererDiscovery(stack: try UPnPStack.shared()).run { continuation.yield($0) }
                } catch is CancellationError {
                } catch {
                    FileHandle.standardError.write(Data("route: UPnP discovery stopped: \(error)\n".utf8))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// A description URL is fetched directly; `host:port` tries the usual description paths.
    /// Returns nil for addresses that are no UPnP renderer's.
    public func device(at address: String) async throws -> MediaDevice? {
        let stack = try UPnPStack.shared()
        let candidates: [String]
        if address.hasPrefix("http://") {
            candidates = [address]
        } else if address.contains(":"), !address.contains("/") {
            candidates = ["/description.xml", "/rootDesc.xml", "/dmr.xml", "/DeviceDescription.xml", "/desc.xml"]
                .map { "http://\(address)\($0)" }
        } else {
            return nil
        }
        var lastError: (any Error)?
        for location in candidates {
            do {
                return try await Renderer.describe(location, stack: stack).device
            } catch let error as DocumentProblem where error.status != nil && candidates.count > 1 {
                // Not at this path (404): try the next usual one.
                lastError = error
                continue
            } catch let error as UPnPError where error.isUnreachable {
                // Refused or silent: no other path on the same host:port will do better.
                throw RouteError.deviceUnreachable(device: address, reason: UPnPError.explain(error.code))
            } catch {
                throw RouteError.unusableDevice(device: address, reason: "\(error)")
            }
        }
        if address.hasPrefix("http://") {
            throw RouteError.deviceUnreachable(device: address, reason: "\(lastError.map { "\($0)" } ?? "no answer")")
        }
        return nil
    }

    public func controller(for device: MediaDevice) async throws -> any RouteController {
        let stack = try UPnPStack.shared()
        guard let location = device.address else {
            throw RouteError.deviceUnreachable(device: device.name, reason: "no description URL")
        }
        let renderer: Renderer
        do {
            renderer = try await Renderer.describe(location, stack: stack)
        } catch let error as UPnPError where error.isUnreachable {
            throw RouteError.deviceUnreachable(device: device.name, reason: UPnPError.explain(error.code))
        } catch {
            throw RouteError.unusableDevice(device: device.name, reason: "\(error)")
        }
        return try await RendererController.open(renderer, stack: stack)
    }
}

/// A described renderer: its description, and the device built from it and its protocol info.
struct Renderer: Sendable {
    var description: DeviceDescription
    var device: MediaDevice

    /// Descriptions fetched in the last `cacheLifetime`, by location: opening a controller right
    /// after discovery (or `device(at:)`) does not fetch and ask again.
    private static let cache = Mutex<[String: (renderer: Renderer, at: ContinuousClock.Instant)]>([:])
    static let cacheLifetime: Duration = .seconds(30)

    /// Fetches and parses the description, then asks ConnectionManager what it accepts.
    /// - Throws: `UPnPError` when the device does not answer (in time); `DocumentProblem` or
    ///   `DeviceDescription.Problem` when its description is unusable.
    static func describe(_ location: String, stack: UPnPStack) async throws -> Renderer {
        if let cached = cache.withLock({ $0[location] }), ContinuousClock.now - cached.at < cacheLifetime {
            return cached.renderer
        }
        let description = try DeviceDescription.parse(try await stack.fetchDocument(location), location: location)
        guard description.service("AVTransport") != nil else {
            throw DeviceDescription.Problem.missing(location, "AVTransport service (not a media renderer)")
        }
        var sink = ""
        if let manager = description.service("ConnectionManager") {
            do {
                sink = try await stack.sendAction("GetProtocolInfo", service: manager, arguments: [:])["Sink"] ?? ""
            } catch let error as UPnPError where error.isUnreachable {
                throw error
            } catch {
                // A renderer that cannot say what it takes still plays MP3: mediaDevice assumes so.
            }
        }
        let renderer = Renderer(description: description, device: description.mediaDevice(sink: sink))
        cache.withLock { $0[location] = (renderer, .now) }
        return renderer
    }
}

/// Keeps the renderer list: SSDP replies and alive/byebye notifications, expiry by max-age, and a
/// re-search every `researchInterval` after which a device that did not answer is checked and dropped
/// if its description cannot be fetched.
actor RendererDiscovery {
    static let searchTarget = "urn:schemas-upnp-org:device:MediaRenderer:1"
    static let researchInterval: Duration = .seconds(10)

    private struct Entry {
        var renderer: Renderer?
        var expires: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
    }

    private let stack: UPnPStack
    private var entries: [String: Entry] = [:]
    /// When each device last said byebye: a search reply can arrive late (after the random MX
    /// delay) from a device that is shutting down, and must not bring it back.
    private var farewells: [String: ContinuousClock.Instant] = [:]
    /// Locations whose description was unusable or unanswered, and when: logged once, and not
    /// asked again for `rejectionBackoff`.
    private var rejected: [String: ContinuousClock.Instant] = [:]
    static let rejectionBackoff: Duration = .seconds(60)
    static let farewellQuarantine: Duration = .seconds(3)
    private var publish: (@Sendable ([MediaDevice]) -> Void)?

    init(stack: UPnPStack) {
        self.stack = stack
    }

    /// Runs until cancelled, calling `publish` with the full list after every change.
    func run(_ publish: @escaping @Sendable ([MediaDevice]) -> Void) async throws {
        self.publish = publish
        publish([])
        let events = stack.events.subscribe()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await event in events { await self.handle(event) }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    let searchedAt = ContinuousClock.now
                    try? self.stack.search(Self.searchTarget)
                    try await Task.sleep(for: Self.researchInterval)
                    await self.expire(notSeenSince: searchedAt)
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private func handle(_ event: UPnPEvent) async {
        switch event {
        case .alive(let udn, let deviceType, let location, let maxAge, let announced, let sender):
            let now = ContinuousClock.now
            if !announced, let farewell = farewells[udn], now - farewell < Self.farewellQuarantine { return }
            let expires = now + .seconds(max(maxAge, 30))
            if var entry = entries[udn] {
                entry.expires = max(entry.expires, expires)
                entry.lastSeen = now
                entries[udn] = entry
                return
            }
            guard deviceType.contains(":device:MediaRenderer:") else { return }
            if let rejectedAt = rejected[location], now - rejectedAt < Self.rejectionBackoff { return }
            // A device describes itself: a reply that points anywhere but at its own address (at this
            // machine's loopback services, say) is not fetched.
            guard SSDPReply.isOwnLocation(location, sender: sender) else {
                reject(location, "it came from \(sender.isEmpty ? "an unknown address" : sender) but points elsewhere")
                return
            }
            entries[udn] = Entry(renderer: nil, expires: expires, lastSeen: now)
            // Described off the event loop: one slow renderer must not hold up every other event.
            Task { await self.describe(udn: udn, location: location) }
        case .byebye(let udn):
            farewells[udn] = .now
            if entries.removeValue(forKey: udn) != nil { changed() }
        case .event, .subscriptionLost:
            break
        }
    }

    private func describe(udn: String, location: String) async {
        do {
            let renderer = try await Renderer.describe(location, stack: stack)
            guard entries[udn] != nil else { return }
            entries[udn]?.renderer = renderer
            rejected[location] = nil
            changed()
        } catch {
            entries[udn] = nil
            reject(location, "\(error)")
        }
    }

    /// Ignores a location for `rejectionBackoff`, saying why once.
    private func reject(_ location: String, _ reason: String) {
        if rejected.updateValue(.now, forKey: location) == nil {
            let line = "route: ignoring the renderer at \(location): \(reason)"
            FileHandle.standardError.write(Data((DisplayText.clean(line, limit: DisplayText.messageLimit) + "\n").utf8))
        }
    }


    /// Drops expired entries, and those that missed the last search and no longer serve their description.
    private func expire(notSeenSince searchedAt: ContinuousClock.Instant) async {
        let now = ContinuousClock.now
        var removed = false
        for (udn, entry) in entries {
            var gone = entry.expires < now
            if !gone, entry.lastSeen < searchedAt, let location = entry.renderer?.description.location {
                gone = (try? await stack.fetchDocument(location)) == nil
            }
            if gone, entries.removeValue(forKey: udn) != nil { removed = true }
        }
        if removed { changed() }
    }

    private func changed() {
        let devices = entries.values.compactMap { $0.renderer?.device }.sorted { $0.name < $1.name }
        publish?(devices)
    }
}

/// What route reads of an SSDP reply or announcement (libupnp parses the packet; these are its fields).
package enum SSDPReply {
    /// Whether a `location` is an http:// URL on the host the packet came from.
    package static func isOwnLocation(_ location: String, sender: String) -> Bool {
        guard let url = URL(string: location), url.scheme?.lowercased() == "http", let host = url.host, !sender.isEmpty else { return false }
        return host == sender
    }

    /// The device's UDN from a USN (`uuid:…::urn:…` → `uuid:…`).
    package static func udn(fromUSN usn: String) -> String {
        usn.components(separatedBy: "::").first ?? usn
    }
}
