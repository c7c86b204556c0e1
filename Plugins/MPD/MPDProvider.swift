// MPDProvider: finds MPD servers — `_mpd._tcp` through the host's mDNS, and ROUTE_MPD_HOSTS entries — and
// publishes each as an audio route that takes the MIME types MPD's decoders list.

import Foundation
import RouteCore
import Synchronization

/// MPD (Music Player Daemon) servers as routes.
final class MPDProvider: RouteProvider {
    let name = "mpd"
    /// How often servers named in ROUTE_MPD_HOSTS are asked again (one that went away goes from the list).
    static let recheck: Duration = .seconds(10)

    func run(_ context: ProviderContext) async throws {
        let listed = MPDServer.listed(in: ProcessInfo.processInfo.environment["ROUTE_MPD_HOSTS"] ?? "") { problem in
            context.log(.error, problem)
        }
        let table = ServerTable(context: context)
        table.publish()
        await withTaskGroup(of: Void.self) { group in
            if let dnssd = context.discovery.dnssd {
                let events = dnssd.subscribe(types: ["_mpd._tcp"])
                group.addTask {
                    for await event in events {
                        switch event {
                        case .found(let service):
                            let server = MPDServer(name: service.name, host: service.address, port: service.port, source: service.key)
                            table.found(server, route: await Self.probe(server, log: context.log))
                        case .removed(let name, let type, let domain, let interface):
                            table.removed(source: DNSSDService.key(name: name, type: type, domain: domain, interface: interface))
                        case .unavailable: table.removeAll { !$0.hasPrefix("listed:") }
                        case .available: break
                        }
                    }
                }
            }
            for server in listed {
                group.addTask {
                    while !Task.isCancelled {
                        table.found(server, route: await Self.probe(server, log: context.log))
                        try? await Task.sleep(for: Self.recheck)
                    }
                }
            }
            await group.waitForAll()
        }
    }

    /// The route of `server`, asked for its decoders and mixer; nil when it does not answer.
    static func probe(_ server: MPDServer, log: RouteLog) async -> MediaRoute? {
        do {
            return try await MPDConnection.threads.run(timeout: .seconds(4), timedOut: {
                MPDError(description: "no answer within 4 s", broken: true)
            }) {
                let connection = try MPDConnection(host: server.host, port: server.port, timeout: 3)
                let types = try connection.decoderMIMETypes()
                let status = try connection.status()
                // route serves media on the local address that reaches the device's: it needs an IPv4 address.
                let address = try connection.peerAddress() ?? server.host
                return MediaRoute(provider: "mpd", nativeID: "\(server.host):\(server.port)", name: server.name, kind: .speaker,
                                  address: "\(address):\(server.port)", capabilities: .audio,
                                  volumeControl: status.volume == nil ? .none : .absolute,
                                  accepts: .mimeTypes(Array(Set(types)).sorted()), maxAudioChannels: nil)
            }
        } catch {
            log(.debug, "\(server.name) (\(server.host):\(server.port)) does not answer: \(error)")
            return nil
        }
    }

    /// `mpd://HOST[:PORT]`, or `HOST:6600` (MPD's own port): asked directly, without discovery.
    func route(at address: String, context: ProviderContext) async throws -> MediaRoute? {
        let text: String
        if address.hasPrefix("mpd://") {
            text = String(address.dropFirst("mpd://".count)).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        } else if address.hasSuffix(":6600"), !address.contains("/") {
            text = address
        } else {
            return nil
        }
        guard var server = MPDServer(address: text) else { return nil }
        server.name = "MPD at \(server.host):\(server.port)"
        guard let route = await Self.probe(server, log: context.log) else {
            throw RouteError.deviceUnreachable(device: address, reason: "no MPD answers at \(server.host):\(server.port)")
        }
        return route
    }

    func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController {
        guard let server = MPDServer(address: route.nativeID) else {
            throw RouteError.unusableDevice(device: route.name, reason: "\"\(route.nativeID)\" is not HOST:PORT")
        }
        return MPDController(route: route, host: server.host, port: server.port)
    }
}

/// One MPD server to ask.
struct MPDServer: Sendable, Hashable {
    var name: String
    var host: String
    var port: Int
    /// What found it: `listed:NAME` or a DNS-SD key.
    var source: String

    init(name: String, host: String, port: Int, source: String) {
        self.name = name
        self.host = host
        self.port = port
        self.source = source
    }

    /// `HOST:PORT` (the port defaults to 6600).
    init?(address: String) {
        let parts = address.split(separator: ":", omittingEmptySubsequences: false)
        guard let host = parts.first, !host.isEmpty, parts.count <= 2, !host.contains(where: \.isWhitespace) else { return nil }
        let port = parts.count == 2 ? Int(parts[1]) : 6600
        guard let port, (1...65535).contains(port) else { return nil }
        self.init(name: String(host), host: String(host), port: port, source: "listed:\(address)")
    }

    /// The servers of ROUTE_MPD_HOSTS: `NAME=HOST:PORT` (or `HOST[:PORT]`), comma-separated; each entry that is
    /// neither is reported and skipped.
    static func listed(in text: String, problem: (String) -> Void) -> [MPDServer] {
        text.split(separator: ",").compactMap { entry in
            let entry = entry.trimmingCharacters(in: .whitespaces)
            let named = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard var server = MPDServer(address: named.last ?? ""), !(named.count == 2 && named[0].isEmpty) else {
                problem("ROUTE_MPD_HOSTS: \"\(entry)\" is not NAME=HOST:PORT; skipping it")
                return nil
            }
            if named.count == 2 { server.name = named[0] }
            server.source = "listed:" + entry
            return server
        }
    }
}

/// The servers found, by what found them, and their routes; publishes every change.
final class ServerTable: Sendable {
    private let context: ProviderContext
    private let routes = Mutex<[String: MediaRoute]>([:])

    init(context: ProviderContext) { self.context = context }

    func found(_ server: MPDServer, route: MediaRoute?) {
        let changed = routes.withLock { routes -> Bool in
            guard routes[server.source] != route else { return false }
            routes[server.source] = route
            return true
        }
        if changed { publish() }
    }

    func removed(source: String) {
        if routes.withLock({ $0.removeValue(forKey: source) }) != nil { publish() }
    }

    func removeAll(where matches: (String) -> Bool) {
        routes.withLock { routes in routes = routes.filter { !matches($0.key) } }
        publish()
    }

    /// One route per server (a server both listed and announced once), sorted by name.
    func publish() {
        let list = routes.withLock { routes -> [MediaRoute] in
            var byID: [String: MediaRoute] = [:]
            for (source, route) in routes.sorted(by: { $0.key < $1.key }) where byID[route.id] == nil || source.hasPrefix("listed:") {
                byID[route.id] = route
            }
            return byID.values.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
        }
        context.publish(list)
    }
}
