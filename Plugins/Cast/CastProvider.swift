// CastProvider: Cast receivers (Chromecasts, Google TVs, Nest speakers, Cast groups) as routes — found through the
// shared DNS-SD service as `_googlecast._tcp`, listed the moment they resolve, and controlled by CastController.

import Foundation
import RouteCore
import Synchronization

/// The Cast v2 provider.
public struct CastProvider: RouteProvider {
    public let name = "cast"
    /// The DNS-SD type receivers announce.
    public static let serviceType = "_googlecast._tcp"
    /// Where each receiver (by Cast id) is now: a controller asks again when it reconnects, so that a route to
    /// a group follows its leader when it moves.
    private let directory = CastDirectory()

    /// Makes the provider; nothing runs until `run`.
    public init() {}

    /// Follows `_googlecast._tcp` on the shared DNS-SD service until cancelled.
    /// - Throws: when DNS-SD is not among the context's services.
    public func run(_ context: ProviderContext) async throws {
        guard let dnssd = context.discovery.dnssd else { throw RouteError.unsupported(device: "Cast", what: "run without DNS-SD (mDNS)") }
        context.publish([])
        var services: [String: DNSSDService] = [:]
        var ignored = Set<String>()
        for await event in dnssd.subscribe(types: [Self.serviceType]) {
            switch event {
            case .found(let service):
                guard CastReceiver.id(of: service) != nil else {
                    if ignored.insert(service.key).inserted {
                        context.log(.notice, "ignoring the Cast service \"\(DisplayText.clean(service.name))\": its TXT record has no id of 32 hex digits")
                    }
                    continue
                }
                services[service.key] = service
                // The kernel learns the receiver's hardware address (an identity a DLNA route of the same
                // device shares) once something has talked to it.
                if NeighbourTable.mac(for: service.address) == nil { await CastReceiver.touch(service) }
            case .removed(let name, let type, let domain, let interface):
                services[DNSSDService.key(name: name, type: type, domain: domain, interface: interface)] = nil
            case .unavailable:
                services = [:]
            case .available:
                continue
            }
            let routes = CastReceiver.routes(from: Array(services.values))
            directory.update(routes)
            context.publish(routes)
        }
    }

    /// `HOST:PORT` (or a bare host, port 8009) of something that answers as a Cast receiver; nil when it
    /// does not speak Cast there.
    public func route(at address: String, context: ProviderContext) async throws -> MediaRoute? {
        guard let target = CastReceiver.address(parsing: address) else { return nil }
        switch await CastReceiver.answers(at: target) {
        case .cast: break
        case .notCast: return nil
        case .unreachable(let reason):
            // Only an address that names the Cast port is surely meant for Cast.
            guard target.port == 8009, address.contains(":") else { return nil }
            throw RouteError.deviceUnreachable(device: address, reason: reason)
        }
        let id = "addr-" + target.host.replacingOccurrences(of: ":", with: "-") + "-\(target.port)"
        let route = CastReceiver.route(id: id, name: "Cast receiver at \(target)", model: nil, capabilityBits: nil, address: target)
        directory.update([route])
        return route
    }

    public func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController {
        guard let first = route.address.flatMap(CastReceiver.address(parsing:)) else {
            throw RouteError.deviceUnreachable(device: route.name, reason: "no address")
        }
        let directory = self.directory
        let id = route.nativeID
        return CastController(route: route, log: context.log, locate: { directory.address(of: id) ?? first })
    }
}

/// The latest address of each receiver the provider has listed.
final class CastDirectory: Sendable {
    private let addresses = Mutex<[String: CastAddress]>([:])

    func update(_ routes: [MediaRoute]) {
        addresses.withLock { table in
            for route in routes {
                if let address = route.address.flatMap(CastReceiver.address(parsing:)) { table[route.nativeID] = address }
            }
        }
    }

    func address(of id: String) -> CastAddress? { addresses.withLock { $0[id] } }
}

/// What route makes of a receiver's announcement.
package enum CastReceiver {
    /// The media the Default Media Receiver plays (Google's list of supported media): MP4, WebM, MPEG-TS, MP3,
    /// Ogg, WAV, FLAC, AAC (ADTS and MP4); JPEG, PNG, GIF, WebP, BMP pictures.
    static let audioTypes = ["audio/mpeg", "audio/mp4", "audio/aac", "audio/ogg", "audio/webm", "audio/wav", "audio/flac"]
    static let videoTypes = ["video/mp4", "video/webm", "video/mp2t"]
    static let imageTypes = ["image/jpeg", "image/png", "image/gif", "image/webp", "image/bmp"]

    /// The receiver's Cast id (32 hex digits, lower case) from its TXT record; nil when it has none
    /// (pychromecast ignores those too).
    package static func id(of service: DNSSDService) -> String? {
        guard let id = service.txt["id"]?.lowercased().replacingOccurrences(of: "-", with: ""),
              id.count == 32, id.allSatisfy(\.isHexDigit) else { return nil }
        return id
    }

    /// The routes for the resolved services: one per Cast id (a receiver seen on two interfaces is listed once).
    package static func routes(from services: [DNSSDService]) -> [MediaRoute] {
        var byID: [String: MediaRoute] = [:]
        for service in services.sorted(by: { $0.key < $1.key }) {
            guard let id = id(of: service), byID[id] == nil, let port = UInt16(exactly: service.port) else { continue }
            byID[id] = route(id: id, name: service.txt["fn"] ?? service.name, model: service.txt["md"],
                             capabilityBits: service.txt["ca"].flatMap { Int($0) },
                             address: CastAddress(host: service.address, port: port))
        }
        return byID.values.sorted { $0.name < $1.name }
    }

    /// One receiver's route. `capabilityBits` is TXT `ca`: bit 0 (1) means it shows video; without it, a
    /// speaker. A group is an instance of model "Google Cast Group", or on a port other than 8009.
    static func route(id: String, name: String, model: String?, capabilityBits: Int?, address: CastAddress) -> MediaRoute {
        let group = model == "Google Cast Group" || address.port != 8009
        let video = !group && (capabilityBits.map { $0 & 1 != 0 } ?? true)
        var ids: Set<String> = ["cast:\(id)"]
        if let mac = NeighbourTable.mac(for: address.host) { ids.insert("mac:\(mac)") }
        var route = MediaRoute(provider: "cast", nativeID: id, name: name, kind: group ? .group : video ? .tv : .speaker,
                          address: address.description,
                          capabilities: video ? .all : .audio, volumeControl: .absolute,
                          accepts: .mimeTypes(video ? videoTypes + audioTypes + imageTypes : audioTypes),
                          maxAudioChannels: 2, deduplicationIDs: ids)
        route.showsSubtitles = video
        return route
    }

    /// `HOST:PORT` or `HOST` (port 8009), HOST an IP address; nil for anything else.
    static func address(parsing text: String) -> CastAddress? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), SocketAddress(numericHost: String(parts[0]), port: 0) != nil else { return nil }
        let port = parts.count == 2 ? UInt16(parts[1]) : 8009
        guard let port, port > 0 else { return nil }
        return CastAddress(host: String(parts[0]), port: port)
    }

    /// Opens and closes a TCP connection to the receiver, so that the kernel learns its hardware address.
    static func touch(_ service: DNSSDService) async {
        guard let port = UInt16(exactly: service.port) else { return }
        _ = try? await CastController.threads.run(timeout: .milliseconds(600), timedOut: { TLSError(reason: "timed out") }) {
            Glibc.close(try TLSConnection.openTCP(host: service.address, port: port, until: .now + .milliseconds(500)))
        }
    }

    /// What is at an address.
    enum Answer: Equatable {
        case cast
        case notCast
        case unreachable(String)
    }

    /// Whether a Cast receiver answers at `address`: TLS, then RECEIVER_STATUS to a GET_STATUS, within 3 s.
    static func answers(at address: CastAddress) async -> Answer {
        let result = try? await CastController.threads.run(timeout: .seconds(4), timedOut: { TLSError(reason: "no answer within 3 s") }) {
            () -> Answer in
            let deadline = ContinuousClock.now + .seconds(3)
            let link: TLSConnection
            do {
                link = try TLSConnection.connect(host: address.host, port: address.port, timeout: .seconds(3))
            } catch let error as TLSError where error.reason.hasPrefix("TLS handshake failed") {
                return .notCast
            } catch {
                return .unreachable("\(error)")
            }
            defer { link.close() }
            do {
                for message in [
                    CastMessage(source: CastController.senderID, destination: CastNamespace.receiverID, namespace: CastNamespace.connection,
                                payload: CastJSON.text(CastJSON.connect())),
                    CastMessage(source: CastController.senderID, destination: CastNamespace.receiverID, namespace: CastNamespace.receiver,
                                payload: CastJSON.text(["type": "GET_STATUS", "requestId": 1])),
                ] {
                    try link.send(CastFrame.encode(message), timeout: .seconds(3))
                }
                var decoder = CastFrameDecoder()
                while let bytes = try link.receive(until: deadline) {
                    decoder.append(bytes)
                    while let message = try decoder.next() {
                        if message.namespace == CastNamespace.receiver, ReceiverStatus.decode(message.payload) != nil { return .cast }
                    }
                }
            } catch {}
            return .notCast
        }
        return result ?? .unreachable("no answer within 3 s")
    }
}
