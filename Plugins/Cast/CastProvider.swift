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

    /// How many receivers are checked at once (touched, so that the kernel learns their hardware addresses, or
    /// asked whether they answer as Cast receivers), and how many checks may wait: hundreds of announcements must
    /// neither hold up the listing nor queue without end.
    static let checksAtOnce = 4
    static let checkBacklog = 64

    /// The first listing waits until the announcements avahi-daemon already knows have resolved — no new one for
    /// `burstQuiet`, at most `burstLimit` after the first — so that two that claim one Cast id are seen together and
    /// a process that starts and casts by name at once cannot take whichever resolved first. Later ones are listed
    /// the moment they resolve.
    static let burstQuiet: Duration = .milliseconds(40)
    static let burstLimit: Duration = .milliseconds(300)

    /// Follows `_googlecast._tcp` on the shared DNS-SD service until cancelled. Each receiver is listed the
    /// moment it resolves (the first ones as a burst, `burstQuiet`); checks happen beside the listing, a few at a
    /// time, and list it again when they learn something: its hardware address (an identity a DLNA route of the same
    /// device shares), or, when two announcements claim one Cast id, which of them answers as a Cast receiver.
    /// - Throws: when DNS-SD is not among the context's services.
    public func run(_ context: ProviderContext) async throws {
        guard let dnssd = context.discovery.dnssd else { throw RouteError.unsupported(device: "Cast", what: "run without DNS-SD (mDNS)") }
        context.publish([])
        let table = CastServiceTable()
        let (checks, check) = AsyncStream<CastCheck>.makeStream(bufferingPolicy: .bufferingNewest(Self.checkBacklog))
        let directory = self.directory
        let burst = FirstBurst()
        let publish: @Sendable () -> Void = {
            guard !burst.holding else { return }
            let (routes, said, suspects) = table.routes()
            for line in said { context.log(.notice, line) }
            for suspect in suspects { check.yield(.verify(suspect)) }
            directory.update(routes)
            context.publish(routes)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // Ends the first burst (see `burstQuiet`).
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(10))
                    if burst.endIfQuiet() { publish(); return }
                }
            }
            group.addTask {
                await withTaskGroup(of: Void.self) { running in
                    var count = 0
                    for await job in checks {
                        if count >= Self.checksAtOnce, await running.next() != nil { count -= 1 }
                        running.addTask {
                            switch job {
                            case .touch(let service):
                                await CastReceiver.touch(service)
                                if NeighbourTable.mac(for: service.address) != nil { publish() }
                            case .verify(let service):
                                let answer = await CastReceiver.answers(at: CastAddress(host: service.address, port: UInt16(service.port)))
                                if case .cast(let fingerprint) = answer {
                                    table.verified(service, answers: true, fingerprint: fingerprint)
                                } else {
                                    table.verified(service, answers: false, fingerprint: nil)
                                }
                                publish()
                            }
                        }
                        count += 1
                    }
                }
            }
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
                    table.found(service)
                    burst.found()
                    if NeighbourTable.mac(for: service.address) == nil { check.yield(.touch(service)) }
                case .removed(let name, let type, let domain, let interface):
                    table.removed(DNSSDService.key(name: name, type: type, domain: domain, interface: interface))
                case .unavailable:
                    table.removeAll()
                case .available:
                    continue
                }
                publish()
            }
            check.finish()
            group.cancelAll()
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

/// The first burst of announcements (`CastProvider.burstQuiet`): held until it is quiet.
final class FirstBurst: Sendable {
    /// When its first and latest announcement came (nil before the first), and whether it is still held.
    private let state = Mutex<(first: ContinuousClock.Instant?, latest: ContinuousClock.Instant, holding: Bool)>((nil, .now, true))

    /// Whether listings are still held.
    var holding: Bool { state.withLock { $0.holding } }

    /// An announcement resolved.
    func found() {
        state.withLock { $0 = ($0.first ?? .now, .now, $0.holding) }
    }

    /// Ends the hold when the burst is over (quiet for `burstQuiet`, or `burstLimit` old); true when it ended now.
    func endIfQuiet() -> Bool {
        state.withLock { state in
            let now = ContinuousClock.now
            guard state.holding, let first = state.first,
                  now - state.latest >= CastProvider.burstQuiet || now - first >= CastProvider.burstLimit else { return false }
            state.holding = false
            return true
        }
    }
}

/// What the provider checks beside listing: a receiver to touch, or an announcement to ask whether it answers as a
/// Cast receiver (one of two that claim one id).
enum CastCheck: Sendable {
    case touch(DNSSDService)
    case verify(DNSSDService)
}

/// The receivers' live announcements, in the order they were first seen, with what checking them showed; and which
/// conflicts have been said and checked.
final class CastServiceTable: Sendable {
    private struct Entry {
        var order: Int
        var service: DNSSDService
        /// Whether it answered as a Cast receiver when asked (nil: not asked).
        var answers: Bool?
        /// The certificate it showed then.
        var fingerprint: String?
    }
    private struct State {
        var entries: [String: Entry] = [:]
        var next = 0
        /// What was said and checked, so that each is done once (bounded, whatever a network announces).
        var said: Set<String> = []
        var asked: Set<DNSSDService> = []
        /// The announcement each Cast id was listed at, to say when that moves to another one.
        var listed: [String: DNSSDService] = [:]
    }
    private let state = Mutex(State())

    /// A service resolved, or resolved again (then it keeps its place, and is asked again if it moved: a moved
    /// leader is the same announcement).
    func found(_ service: DNSSDService) {
        state.withLock { state in
            var entry = state.entries[service.key] ?? Entry(order: state.next, service: service)
            if entry.order == state.next { state.next += 1 }
            if entry.service.address != service.address || entry.service.port != service.port { entry.answers = nil }
            entry.service = service
            state.entries[service.key] = entry
        }
    }

    func removed(_ key: String) { state.withLock { _ = $0.entries.removeValue(forKey: key) } }

    func removeAll() { state.withLock { $0.entries.removeAll() } }

    /// What asking `service` whether it is a Cast receiver showed.
    func verified(_ service: DNSSDService, answers: Bool, fingerprint: String?) {
        state.withLock { state in
            guard state.entries[service.key]?.service == service else { return }
            state.entries[service.key]?.answers = answers
            state.entries[service.key]?.fingerprint = fingerprint
        }
    }

    /// The routes of the live announcements; lines to log, each once (conflicts, and a name that moved to another
    /// announcement); and announcements in a conflict that have not been asked yet whether they answer as Cast.
    ///
    /// Two announcements of one Cast id at different addresses: neither is listed until both were asked; then the one
    /// whose certificate route met before under that id is the receiver, else the only one that answers as Cast; when
    /// both answer and neither is known, route lists neither and says how to cast to one by its address (a name is
    /// no proof: anyone on the network can announce it).
    func routes() -> (routes: [MediaRoute], said: [String], suspects: [DNSSDService]) {
        state.withLock { state in
            // Ids more than one live announcement claims, and the certificate route knows for each.
            var addressesByID: [String: Set<String>] = [:]
            for entry in state.entries.values {
                if let id = CastReceiver.id(of: entry.service) { addressesByID[id, default: []].insert("\(entry.service.address):\(entry.service.port)") }
            }
            let contested = Set(addressesByID.filter { $0.value.count > 1 }.keys)
            let known = Dictionary(uniqueKeysWithValues: contested.map { ($0, CastCertificates.shared.known($0)) })
            func isKnown(_ entry: Entry) -> Bool {
                guard let id = CastReceiver.id(of: entry.service), let fingerprint = entry.fingerprint else { return false }
                return known[id] == fingerprint
            }
            let preferred = state.entries.values.sorted { a, b in
                let (knownA, knownB) = (isKnown(a), isKnown(b))
                if knownA != knownB { return knownA }
                let (rankA, rankB) = (Self.rank(a.answers), Self.rank(b.answers))
                return rankA != rankB ? rankA < rankB : a.order < b.order
            }
            var (routes, conflicts) = CastReceiver.routes(from: preferred.map(\.service))
            if state.said.count > 512 { state.said.removeAll() }
            if state.asked.count > 512 { state.asked.removeAll() }
            var said: [String] = []
            var suspects: [DNSSDService] = []
            var withheld: Set<String> = []
            for conflict in conflicts {
                let (kept, ignored) = (state.entries[conflict.kept.key], state.entries[conflict.ignored.key])
                for service in [conflict.kept, conflict.ignored] where state.entries[service.key]?.answers == nil {
                    if state.asked.insert(service).inserted { suspects.append(service) }
                }
                let line: String
                if kept?.answers == nil || ignored?.answers == nil {
                    withheld.insert(conflict.id)
                    continue
                } else if kept.map(isKnown) == true {
                    line = "two announcements claim Cast id \(conflict.id): keeping \(Self.named(conflict.kept, kept?.answers)), the receiver route "
                        + "met before (its certificate); ignoring \(Self.named(conflict.ignored, ignored?.answers))"
                } else if kept?.answers == true, ignored?.answers == true {
                    withheld.insert(conflict.id)
                    line = "two receivers claim Cast id \(conflict.id) (\(Self.named(conflict.kept, nil)) and \(Self.named(conflict.ignored, nil))), and route "
                        + "knows neither's certificate: it lists neither; cast to the right one by its address "
                        + "(--to \(conflict.kept.address):\(conflict.kept.port)), and route will know it from then on"
                } else {
                    line = "two announcements claim Cast id \(conflict.id): keeping \(Self.named(conflict.kept, kept?.answers)); "
                        + "ignoring \(Self.named(conflict.ignored, ignored?.answers))"
                }
                if state.said.insert(line).inserted { said.append(line) }
            }
            routes.removeAll { withheld.contains($0.nativeID) }
            // A name does not move to another announcement silently (one announcement moving, a group's leader, does).
            var winners: [String: DNSSDService] = [:]
            for entry in preferred {
                if let id = CastReceiver.id(of: entry.service), winners[id] == nil, !withheld.contains(id) { winners[id] = entry.service }
            }
            for (id, service) in winners {
                if let before = state.listed[id], before.key != service.key {
                    said.append("\"\(DisplayText.clean(service.txt["fn"] ?? service.name))\" (Cast id \(id)) is now the announcement at "
                                + "\(service.address):\(service.port), no longer the one at \(before.address):\(before.port)")
                }
            }
            state.listed = winners
            return (routes, said, suspects)
        }
    }

    /// Sorts announcements that answered as Cast first, those not asked next, those that did not answer last.
    private static func rank(_ answers: Bool?) -> Int { answers == true ? 0 : answers == nil ? 1 : 2 }

    private static func named(_ service: DNSSDService, _ answers: Bool?) -> String {
        let evidence = answers == true ? ", which answers as a Cast receiver" : answers == false ? ", which does not answer as a Cast receiver" : ""
        return "\"\(DisplayText.clean(service.txt["fn"] ?? service.name))\" at \(service.address):\(service.port)\(evidence)"
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
    static let videoTypes = ["video/mp4", "video/webm", "video/mp2t", "application/vnd.apple.mpegurl", "application/x-mpegurl", "application/dash+xml"]
    static let imageTypes = ["image/jpeg", "image/png", "image/gif", "image/webp", "image/bmp"]

    /// The receiver's Cast id (32 hex digits, lower case) from its TXT record; nil when it has none
    /// (pychromecast ignores those too).
    package static func id(of service: DNSSDService) -> String? {
        guard let id = service.txt["id"]?.lowercased().replacingOccurrences(of: "-", with: ""),
              id.count == 32, id.allSatisfy(\.isHexDigit) else { return nil }
        return id
    }

    /// The routes for the resolved services, given in order of preference (CastServiceTable's: those that answered
    /// as Cast receivers, then those not asked, then those that did not answer; each group in the order announced):
    /// one per Cast id (a receiver seen on two interfaces is listed once). When two live announcements claim one id
    /// at different addresses, the first keeps it and `conflicts` names both; one announcement that moves (a group's
    /// leader changing) simply moves.
    package static func routes(from services: [DNSSDService]) -> (routes: [MediaRoute], conflicts: [Conflict]) {
        var byID: [String: (route: MediaRoute, service: DNSSDService)] = [:]
        var conflicts: [Conflict] = []
        for service in services {
            guard let id = id(of: service), let port = UInt16(exactly: service.port) else { continue }
            if let kept = byID[id] {
                if kept.service.address != service.address || kept.service.port != service.port {
                    conflicts.append(Conflict(id: id, kept: kept.service, ignored: service))
                }
                continue
            }
            byID[id] = (route(id: id, name: service.txt["fn"] ?? service.name, model: service.txt["md"],
                              capabilityBits: service.txt["ca"].flatMap { Int($0) },
                              address: CastAddress(host: service.address, port: port)), service)
        }
        return (byID.values.map(\.route).sorted { $0.name < $1.name }, conflicts)
    }

    /// Two live announcements of one Cast id at different addresses: which one route keeps, and which it ignores.
    package struct Conflict: Sendable, Hashable {
        var id: String
        var kept: DNSSDService
        var ignored: DNSSDService
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
        /// A Cast receiver, with its certificate's fingerprint.
        case cast(fingerprint: String?)
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
                        if message.namespace == CastNamespace.receiver, ReceiverStatus.decode(message.payload) != nil {
                            return .cast(fingerprint: link.fingerprint)
                        }
                    }
                }
            } catch {}
            return .notCast
        }
        return result ?? .unreachable("no answer within 3 s")
    }
}
