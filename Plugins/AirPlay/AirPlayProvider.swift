// AirPlayProvider: finds AirPlay 1 receivers (`_raop._tcp`) through the host's mDNS and publishes each as an audio
// route; opens an AirPlayController on one.

import Foundation
import RouteCore
import Synchronization

/// AirPlay (RAOP) receivers as routes.
final class AirPlayProvider: RouteProvider {
    let name = "airplay"

    func run(_ context: ProviderContext) async throws {
        let table = ReceiverTable(context: context)
        table.publish()
        guard let dnssd = context.discovery.dnssd else { return }
        for await event in dnssd.subscribe(types: [RAOPService.type]) {
            switch event {
            case .found(let service):
                guard let receiver = RAOPService(service) else {
                    context.log(.debug, "\(service.name): not an AirPlay receiver's name (MAC@Name); left out")
                    continue
                }
                table.found(receiver)
            case .removed(let name, let type, let domain, let interface):
                table.removed(DNSSDService.key(name: name, type: type, domain: domain, interface: interface))
            case .unavailable: table.removeAll()
            case .available: break
            }
        }
    }

    /// Receivers are found by mDNS only: an address alone says nothing of a receiver's name or MAC.
    func route(at address: String, context: ProviderContext) async throws -> MediaRoute? { nil }

    func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController {
        guard let address = route.address, let receiver = RAOPService(id: route.nativeID, address: address) else {
            throw RouteError.unusableDevice(device: route.name, reason: "\"\(route.address ?? "")\" is not an AirPlay receiver's HOST:PORT")
        }
        return AirPlayController(route: route, receiver: receiver, log: context.log)
    }
}

/// One AirPlay 1 receiver as its `_raop._tcp` announcement describes it.
struct RAOPService: Sendable, Hashable {
    /// The DNS-SD type AirPlay 1 receivers announce.
    static let type = "_raop._tcp"

    /// The instance name, `MACHEX@Name`: the plugin's id for the device.
    var id: String
    /// The name after the `@`.
    var name: String
    /// The MAC address the instance names, `aa:bb:cc:dd:ee:ff`.
    var mac: String
    var host: String
    var port: Int
    /// The TXT record (`cn` codecs, `et` encryptions, `pw` password, `md` metadata, `am` model).
    var txt: [String: String]
    /// What found it (the DNS-SD key).
    var source: String

    /// The receiver a resolved `_raop._tcp` service describes; nil when its name is not `MACHEX@Name`.
    init?(_ service: DNSSDService) {
        guard let (mac, name) = Self.split(service.name) else { return nil }
        self.init(id: service.name, name: name, mac: mac, host: service.address, port: service.port, txt: service.txt, source: service.key)
    }

    /// The receiver a route names: its id (the instance name) and `HOST:PORT` (what `session/open` gives back).
    init?(id: String, address: String) {
        guard let (mac, name) = Self.split(id), let colon = address.lastIndex(of: ":"),
              let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        self.init(id: id, name: name, mac: mac, host: String(address[..<colon]), port: port, txt: [:], source: "")
    }

    private init(id: String, name: String, mac: String, host: String, port: Int, txt: [String: String], source: String) {
        self.id = id
        self.name = name
        self.mac = mac
        self.host = host
        self.port = port
        self.txt = txt
        self.source = source
    }

    /// `A623CA8A8EFA@Kitchen` → (`a6:23:ca:8a:8e:fa`, `Kitchen`).
    static func split(_ instance: String) -> (mac: String, name: String)? {
        guard let at = instance.firstIndex(of: "@") else { return nil }
        let hex = instance[..<at].lowercased(), name = String(instance[instance.index(after: at)...])
        guard hex.count == 12, hex.allSatisfy(\.isHexDigit), !name.isEmpty else { return nil }
        let pairs = stride(from: 0, to: 12, by: 2).map { offset -> String in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return String(hex[start..<hex.index(start, offsetBy: 2)])
        }
        return (pairs.joined(separator: ":"), name)
    }

    /// Its route; `sharesMAC`: another receiver announces the same MAC (instances on one host), which then
    /// identifies neither. It takes any audio (the plugin decodes it), and only audio: a video goes to a merged device's
    /// DLNA or Cast route, and among routes that take a file as it is, the built-in ones come first.
    func route(sharesMAC: Bool) -> MediaRoute {
        MediaRoute(provider: "airplay", nativeID: id, name: name, kind: .speaker, protocolName: "AirPlay",
                   address: "\(host):\(port)", capabilities: .audio, volumeControl: .absolute,
                   accepts: .mimeTypes(["audio/*"]), maxAudioChannels: 2, deduplicationIDs: sharesMAC ? [] : ["mac:\(mac)"])
    }
}

/// The receivers found, by DNS-SD key; publishes every change.
final class ReceiverTable: Sendable {
    private let context: ProviderContext
    private let receivers = Mutex<[String: RAOPService]>([:])

    init(context: ProviderContext) { self.context = context }

    func found(_ receiver: RAOPService) {
        let changed = receivers.withLock { receivers -> Bool in
            guard receivers[receiver.source] != receiver else { return false }
            receivers[receiver.source] = receiver
            return true
        }
        if changed { publish() }
    }

    func removed(_ source: String) {
        if receivers.withLock({ $0.removeValue(forKey: source) }) != nil { publish() }
    }

    func removeAll() {
        receivers.withLock { $0.removeAll() }
        publish()
    }

    /// One route per instance (an instance heard on two interfaces once), sorted by name.
    func publish() {
        let routes = receivers.withLock { receivers -> [MediaRoute] in
            var byID: [String: RAOPService] = [:]
            for receiver in receivers.values.sorted(by: { $0.source < $1.source }) where byID[receiver.id] == nil {
                byID[receiver.id] = receiver
            }
            let macs = Dictionary(grouping: byID.values, by: \.mac)
            return byID.values.map { $0.route(sharesMAC: (macs[$0.mac]?.count ?? 0) > 1) }
                .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
        }
        context.publish(routes)
    }
}
