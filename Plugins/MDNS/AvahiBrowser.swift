// AvahiBrowser: DNS-SD (mDNS) as a shared service over avahi-client — browses and resolves the types subscribers
// ask for, reports removals, says once when avahi-daemon is not there, and comes back when it returns.
// The one choke point for avahi-client: every call is made on its threaded poll, with its lock held.

import CAvahiClient
import Foundation
import RouteCore
import Synchronization

/// DNS-SD for the whole process, through the avahi-daemon on the system D-Bus (`DBUS_SYSTEM_BUS_ADDRESS`).
///
/// Threads: avahi-client runs on its own thread (AvahiThreadedPoll); its callbacks run there with the
/// poll's lock held, and every other call takes that lock. Subscribers get events on their streams.
public final class AvahiBrowser: DNSSDDiscovery, @unchecked Sendable {
    // Safety: everything below `lock` is touched only with the threaded poll's lock held (in avahi's
    // callbacks, or inside `locked`); `subscribers` has its own Mutex.
    private let log: RouteLog
    private let setup = Mutex<OpaquePointer?>(nil)  // the AvahiThreadedPoll, once started
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var browsers: [String: OpaquePointer] = [:]   // type → AvahiServiceBrowser
    private var resolvers: [String: OpaquePointer] = [:]  // DNSSDService.key → AvahiServiceResolver
    private var found: [String: DNSSDService] = [:]
    /// Services whose address or port route refuses (AnnouncedAddress), with why: said once each.
    private var refused: [String: String] = [:]
    private var running = false
    private var saidUnavailable = false
    private let subscribers = Mutex<(next: Int, all: [Int: (types: Set<String>, continuation: AsyncStream<DNSSDEvent>.Continuation)])>((0, [:]))

    /// A browser; it connects to avahi-daemon with the first subscription.
    public init(log: RouteLog = .discard) {
        self.log = log
    }

    /// Resolved services of `types` as they come and go, until the stream is dropped; `.unavailable`
    /// when avahi-daemon is not running (said once), `.available` when it is back.
    public func subscribe(types: [String]) -> AsyncStream<DNSSDEvent> {
        let (stream, continuation) = AsyncStream<DNSSDEvent>.makeStream(bufferingPolicy: .bufferingNewest(512))
        let id = subscribers.withLock { state -> Int in
            defer { state.next += 1 }
            state.all[state.next] = (Set(types), continuation)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.all.removeValue(forKey: id) }
        }
        guard let poll = start() else {
            continuation.yield(.unavailable(reason: "mDNS discovery is off: avahi-client could not start its event loop"))
            return stream
        }
        locked(poll) {
            // What is already known, then browsing for any new type.
            if !running, saidUnavailable { continuation.yield(.unavailable(reason: Self.offLine)) }
            for service in found.values where types.contains(service.type) { continuation.yield(.found(service)) }
            if running { for type in types { browse(type) } }
        }
        return stream
    }

    /// The line said when avahi-daemon is not there.
    static let offLine = "mDNS discovery is off: avahi-daemon is not running"

    /// Starts the threaded poll and the client (once); nil when avahi cannot start at all.
    private func start() -> OpaquePointer? {
        setup.withLock { poll -> OpaquePointer? in
            if let poll { return poll }
            guard let made = avahi_threaded_poll_new() else { return nil }
            poll = made
            self.poll = made
            locked(made) { connect(made) }
            avahi_threaded_poll_start(made)
            return made
        }
    }

    /// Runs `body` with the poll's lock held (any thread but avahi's own).
    private func locked(_ poll: OpaquePointer, _ body: () -> Void) {
        avahi_threaded_poll_lock(poll)
        body()
        avahi_threaded_poll_unlock(poll)
    }

    /// Makes a client that waits for the daemon when it is not there (poll lock held).
    private func connect(_ poll: OpaquePointer) {
        var error: Int32 = 0
        let me = Unmanaged.passUnretained(self).toOpaque()
        client = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, { client, state, data in
            guard let data else { return }
            Unmanaged<AvahiBrowser>.fromOpaque(data).takeUnretainedValue().changed(client, state)
        }, me, &error)
        if client == nil { log(.error, "mDNS discovery is off: \(String(cString: avahi_strerror(error)))") }
    }

    /// The client's state changed (avahi's thread).
    private func changed(_ current: OpaquePointer?, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            client = current
            running = true
            if saidUnavailable {
                saidUnavailable = false
                log(.notice, "mDNS discovery is on again")
                deliver(.available) { _ in true }
            }
            let types = subscribers.withLock { Set($0.all.values.flatMap(\.types)) }
            for type in types { browse(type) }
        case AVAHI_CLIENT_CONNECTING:
            goOffline()
        case AVAHI_CLIENT_FAILURE:
            // The daemon went away (or restarts): everything it resolved is gone; wait for it again.
            goOffline()
            if let current { avahi_client_free(current) }
            client = nil
            if let poll { connect(poll) }
        default:
            break
        }
    }

    /// Forgets browsers, resolvers and what they found, and says once that mDNS is off (avahi's thread).
    private func goOffline() {
        running = false
        for resolver in resolvers.values { avahi_service_resolver_free(resolver) }
        for browser in browsers.values { avahi_service_browser_free(browser) }
        resolvers.removeAll()
        browsers.removeAll()
        refused.removeAll()
        for service in found.values {
            deliver(.removed(name: service.name, type: service.type, domain: service.domain, interface: service.interface)) {
                $0.contains(service.type)
            }
        }
        found.removeAll()
        guard !saidUnavailable else { return }
        saidUnavailable = true
        log(.notice, Self.offLine)
        deliver(.unavailable(reason: Self.offLine)) { _ in true }
    }

    /// Browses for `type` (IPv4), once (poll lock held).
    private func browse(_ type: String) {
        guard let client, browsers[type] == nil else { return }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let browser = avahi_service_browser_new(client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), type, nil, AvahiLookupFlags(rawValue: 0), {
            _, interface, protocolFamily, event, name, type, domain, _, data in
            guard let data, let name, let type, let domain else { return }
            Unmanaged<AvahiBrowser>.fromOpaque(data).takeUnretainedValue()
                .browsed(event, interface: interface, protocolFamily: protocolFamily,
                         name: String(cString: name), type: String(cString: type), domain: String(cString: domain))
        }, me)
        if let browser { browsers[type] = browser } else {
            log(.error, "cannot browse \(type): \(String(cString: avahi_strerror(avahi_client_errno(client))))")
        }
    }

    /// A browser's event (avahi's thread): resolve what is new, report what left.
    private func browsed(_ event: AvahiBrowserEvent, interface: AvahiIfIndex, protocolFamily: AvahiProtocol,
                         name: String, type: String, domain: String) {
        let key = "\(interface)/\(type)/\(domain)/\(name)"
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let client, resolvers[key] == nil else { return }
            let me = Unmanaged.passUnretained(self).toOpaque()
            // The resolver stays: it reports again when the service moves (a Cast group's leader changes).
            let resolver = avahi_service_resolver_new(client, interface, protocolFamily, name, type, domain, AvahiProtocol(AVAHI_PROTO_INET),
                                                      AvahiLookupFlags(rawValue: 0), {
                _, interface, _, event, name, type, domain, host, address, port, txt, _, data in
                guard let data, event == AVAHI_RESOLVER_FOUND, let name, let type, let domain, let host, let address else { return }
                var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
                avahi_address_snprint(&text, text.count, address)
                let service = DNSSDService(name: String(cString: name), type: String(cString: type), domain: String(cString: domain),
                                           host: String(cString: host), address: String(cBuffer: text), port: Int(port),
                                           txt: AvahiBrowser.pairs(txt), interface: Int32(interface))
                Unmanaged<AvahiBrowser>.fromOpaque(data).takeUnretainedValue().resolved(service)
            }, me)
            if let resolver { resolvers[key] = resolver }
        case AVAHI_BROWSER_REMOVE:
            if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
            refused[key] = nil
            guard found.removeValue(forKey: key) != nil else { return }
            deliver(.removed(name: name, type: type, domain: domain, interface: Int32(interface))) { $0.contains(type) }
        case AVAHI_BROWSER_FAILURE:
            log(.error, "browsing \(type) failed: \(String(cString: avahi_strerror(avahi_client_errno(client))))")
        default:
            break
        }
    }

    /// A service was resolved, or resolved again with something changed (avahi's thread). One that points at
    /// this machine itself, or at no port, is not passed on (and, if it moved there, is gone).
    private func resolved(_ service: DNSSDService) {
        if let refusal = AnnouncedAddress.refusal(host: service.address, port: service.port) {
            if refused.updateValue(refusal, forKey: service.key) != refusal {
                log(refused.count <= 8 ? .notice : .debug,
                    "ignoring \(service.type) \"\(DisplayText.clean(service.name))\" at \(service.address):\(service.port): \(refusal)")
            }
            if found.removeValue(forKey: service.key) != nil {
                deliver(.removed(name: service.name, type: service.type, domain: service.domain, interface: service.interface)) {
                    $0.contains(service.type)
                }
            }
            return
        }
        refused[service.key] = nil
        guard found[service.key] != service else { return }
        found[service.key] = service
        log(.debug, "found \(service.type) \"\(service.name)\" at \(service.address):\(service.port)")
        deliver(.found(service)) { $0.contains(service.type) }
    }

    /// Hands an event to every subscriber whose types `wants`.
    private func deliver(_ event: DNSSDEvent, to wants: (Set<String>) -> Bool) {
        let targets = subscribers.withLock { $0.all.values.filter { wants($0.types) }.map(\.continuation) }
        for continuation in targets { continuation.yield(event) }
    }

    /// A TXT record's `key=value` pairs (keys without a value map to "").
    package static func pairs(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String: String] {
        var result: [String: String] = [:]
        var entry = list
        while let current = entry, result.count < 64 {
            var key: UnsafeMutablePointer<CChar>?
            var value: UnsafeMutablePointer<CChar>?
            var size = 0
            if avahi_string_list_get_pair(current, &key, &value, &size) == 0, let key {
                result[String(cString: key)] = value.map { String(cString: $0) } ?? ""
                avahi_free(key)
                avahi_free(value)
            }
            entry = avahi_string_list_get_next(current)
        }
        return result
    }
}
