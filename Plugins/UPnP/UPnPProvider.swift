// UPnPProvider: DLNA MediaRenderers as routes — found through the shared SSDP service, described (embedded
// renderers too, each its own route), asked what they accept, and dropped on byebye, expiry, or silence.

import Foundation
import RouteCore
import Synchronization

/// The UPnP/DLNA provider.
public struct UPnPProvider: RouteProvider {
    public let name = "upnp"

    /// Makes the provider; libupnp starts on first use (`ROUTE_UPNP_INTERFACE` picks the interface).
    public init() {}

    /// Follows the shared SSDP service's MediaRenderer replies and announcements until cancelled.
    /// - Throws: when SSDP is not among the context's services, or libupnp cannot start.
    public func run(_ context: ProviderContext) async throws {
        guard let ssdp = context.discovery.ssdp else { throw RouteError.unsupported(device: "UPnP", what: "run without SSDP") }
        let stack = try UPnPStack.shared(log: context.log)
        try await RendererDiscovery(stack: stack, log: context.log).run(ssdp.subscribe(targets: [RendererDiscovery.searchTarget]),
                                                                       publish: context.publish)
    }

    /// A description URL is fetched directly; `host:port` tries the usual description paths.
    /// Returns nil for addresses that are no UPnP renderer's.
    public func route(at address: String, context: ProviderContext) async throws -> MediaRoute? {
        let stack = try UPnPStack.shared(log: context.log)
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
                guard let first = try await Renderer.describeAll(location, stack: stack).first else {
                    throw DeviceDescription.Problem.missing(location, "MediaRenderer device (not a media renderer)")
                }
                return first.route
            } catch let error as DocumentProblem where error.status != nil && candidates.count > 1 {
                // Not at this path (404): try the next usual one.
                lastError = error
                continue
            } catch let error as UPnPError where error.isUnreachable {
                // Refused or silent: no other path on the same host:port will do better.
                throw RouteError.deviceUnreachable(device: address, reason: error.reason)
            } catch {
                throw RouteError.unusableDevice(device: address, reason: "\(error)")
            }
        }
        if address.hasPrefix("http://") {
            throw RouteError.deviceUnreachable(device: address, reason: "\(lastError.map { "\($0)" } ?? "no answer")")
        }
        return nil
    }

    public func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController {
        let stack = try UPnPStack.shared(log: context.log)
        guard let location = route.address else {
            throw RouteError.deviceUnreachable(device: route.name, reason: "no description URL")
        }
        let renderer: Renderer
        do {
            let all = try await Renderer.describeAll(location, stack: stack)
            guard let found = all.first(where: { $0.description.udn == route.nativeID }) ?? all.first else {
                throw DeviceDescription.Problem.missing(location, "MediaRenderer device (not a media renderer)")
            }
            renderer = found
        } catch let error as UPnPError where error.isUnreachable {
            throw RouteError.deviceUnreachable(device: route.name, reason: error.reason)
        } catch {
            throw RouteError.unusableDevice(device: route.name, reason: "\(error)")
        }
        return try RendererController(renderer, stack: stack, log: context.log)
    }
}

/// A described renderer: its part of the description, and the route built from it and its protocol info.
struct Renderer: Sendable {
    var description: DeviceDescription
    var route: MediaRoute

    /// Descriptions fetched in the last `cacheLifetime`, by location: opening a controller right
    /// after discovery (or `route(at:)`) does not fetch and ask again.
    private static let cache = Mutex<[String: (renderers: [Renderer], at: ContinuousClock.Instant)]>([:])
    static let cacheLifetime: Duration = .seconds(30)

    /// Fetches and parses the description at `location`, and asks each MediaRenderer in it (the root or
    /// an embedded one) what it accepts: one renderer each, with its own UDN and services.
    /// - Throws: `UPnPError` when the device does not answer (in time); `DocumentProblem` or
    ///   `DeviceDescription.Problem` when its description is unusable or holds no renderer.
    static func describeAll(_ location: String, stack: UPnPStack) async throws -> [Renderer] {
        if let cached = cache.withLock({ $0[location] }), ContinuousClock.now - cached.at < cacheLifetime {
            return cached.renderers
        }
        let devices = try DeviceDescription.parseAll(try await stack.fetchDocument(location), location: location)
        var renderers: [Renderer] = []
        let mac = URL(string: location)?.host.flatMap { NeighbourTable.mac(for: $0) }
        for description in devices where description.isRenderer || (devices.count == 1 && description.service("AVTransport") != nil) {
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
                    // A renderer that cannot say what it takes still plays MP3: route(sink:) assumes so.
                }
            }
            renderers.append(Renderer(description: description, route: description.route(sink: sink, mac: mac)))
        }
        guard !renderers.isEmpty else {
            throw DeviceDescription.Problem.missing(location, "AVTransport service (not a media renderer)")
        }
        cache.withLock { $0[location] = (renderers, .now) }
        return renderers
    }
}

/// Keeps the renderer list from SSDP events (search replies, alive and byebye), with expiry by max-age,
/// and after each search period drops a renderer that did not answer and no longer serves its description.
actor RendererDiscovery {
    static let searchTarget = "urn:schemas-upnp-org:device:MediaRenderer:1"

    private struct Entry {
        var renderer: Renderer?
        var expires: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
    }

    private let stack: UPnPStack
    private let log: RouteLog
    private var entries: [String: Entry] = [:]
    /// When each device last said byebye: a search reply can arrive late (after the random MX
    /// delay) from a device that is shutting down, and must not bring it back.
    private var farewells: [String: ContinuousClock.Instant] = [:]
    /// Locations whose description was unusable or unanswered, and when: logged once, and not
    /// asked again for `rejectionBackoff`.
    private var rejected: [String: ContinuousClock.Instant] = [:]
    static let rejectionBackoff: Duration = .seconds(60)
    static let farewellQuarantine: Duration = .seconds(3)
    private var publish: (@Sendable ([MediaRoute]) -> Void)?

    init(stack: UPnPStack, log: RouteLog) {
        self.stack = stack
        self.log = log
    }

    /// Runs until cancelled, calling `publish` with the full list after every change.
    func run(_ events: AsyncStream<SSDPEvent>, publish: @escaping @Sendable ([MediaRoute]) -> Void) async throws {
        self.publish = publish
        publish([])
        // Renderers are described beside the event loop (one slow renderer must not hold up every other event), in
        // tasks of this run: they end with it.
        let (describes, describe) = AsyncStream<(udn: String, location: String)>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await event in events {
                    if let wanted = await self.handle(event) { describe.yield(wanted) }
                }
                describe.finish()
            }
            group.addTask { [self] in
                await withDiscardingTaskGroup { describing in
                    for await wanted in describes {
                        describing.addTask { await self.describe(udn: wanted.udn, location: wanted.location) }
                    }
                }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    let period = ContinuousClock.now
                    try await Task.sleep(for: SSDPService.researchInterval)
                    await self.expire(notSeenSince: period)
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Takes an event in; returns the renderer to describe when it is a new one.
    private func handle(_ event: SSDPEvent) -> (udn: String, location: String)? {
        switch event.kind {
        case .alive:
            let now = ContinuousClock.now
            if !event.announced, let farewell = farewells[event.udn], now - farewell < Self.farewellQuarantine { return nil }
            let expires = now + .seconds(max(event.maxAge, 30))
            if var entry = entries[event.udn] {
                entry.expires = max(entry.expires, expires)
                entry.lastSeen = now
                entries[event.udn] = entry
                return nil
            }
            guard event.target.contains(":device:MediaRenderer:") else { return nil }
            if let rejectedAt = rejected[event.location], now - rejectedAt < Self.rejectionBackoff { return nil }
            // A device describes itself: a reply that points anywhere but at its own address (at this
            // machine's loopback services, say) is not fetched.
            guard SSDPReply.isOwnLocation(event.location, sender: event.sender) else {
                reject(event.location, "it came from \(event.sender.isEmpty ? "an unknown address" : event.sender) but points elsewhere")
                return nil
            }
            if let refusal = AnnouncedAddress.refusal(host: event.sender, port: URL(string: event.location)?.port ?? 80) {
                reject(event.location, refusal)
                return nil
            }
            entries[event.udn] = Entry(renderer: nil, expires: expires, lastSeen: now)
            return (event.udn, event.location)
        case .byebye:
            farewells[event.udn] = .now
            if entries.removeValue(forKey: event.udn) != nil { changed() }
            return nil
        }
    }

    private func describe(udn: String, location: String) async {
        do {
            let renderers = try await Renderer.describeAll(location, stack: stack)
            guard entries[udn] != nil else { return }
            // The renderer this UDN names: the root, or one embedded in it (its location is the root's).
            guard let renderer = renderers.first(where: { $0.description.udn == udn }) else {
                entries[udn] = nil
                return
            }
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
            log(.notice, "ignoring the renderer at \(location): \(reason)")
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
        publish?(entries.values.compactMap { $0.renderer?.route }.sorted { $0.name < $1.name })
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
