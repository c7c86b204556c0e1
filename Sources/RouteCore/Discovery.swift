// Discovery: the shared services that find things on the network — SSDP and DNS-SD (mDNS) — as providers see
// them. Each runs once per process; providers subscribe with their interests and receive resolved results.

import FoundationEssentials

/// An SSDP search reply or announcement for a target someone subscribed to.
public struct SSDPEvent: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// A search reply or an ssdp:alive.
        case alive
        /// An ssdp:byebye.
        case byebye
    }
    public var kind: Kind
    /// The device's UDN (`uuid:…`), from the USN.
    public var udn: String
    /// The search target or notification type (`urn:schemas-upnp-org:device:MediaRenderer:1`).
    public var target: String
    /// The description URL (alive only).
    public var location: String
    /// Seconds the announcement holds (alive only).
    public var maxAge: Int
    /// The address the packet came from.
    public var sender: String
    /// Whether it was announced (ssdp:alive) rather than a reply to our search.
    public var announced: Bool

    /// An event, as the SSDP service reports it.
    public init(kind: Kind, udn: String, target: String, location: String = "", maxAge: Int = 0, sender: String = "", announced: Bool = false) {
        self.kind = kind
        self.udn = udn
        self.target = target
        self.location = location
        self.maxAge = maxAge
        self.sender = sender
        self.announced = announced
    }
}

/// SSDP, run once per process: searches for the subscribed targets and reports what answers.
public protocol SSDPDiscovery: Sendable {
    /// Search replies and announcements for `targets` (a device type, `upnp:rootdevice`, `ssdp:all`),
    /// searched for at once and again every few seconds, until the stream is dropped.
    func subscribe(targets: [String]) -> AsyncStream<SSDPEvent>
}

/// A service found by DNS-SD, resolved.
public struct DNSSDService: Sendable, Hashable, Codable {
    /// The instance name (`Living Room TV`).
    public var name: String
    /// The service type (`_googlecast._tcp`).
    public var type: String
    public var domain: String
    /// The host name it runs on (`living-room.local`).
    public var host: String
    /// Its address (IPv4).
    public var address: String
    public var port: Int
    /// The TXT record's `key=value` pairs.
    public var txt: [String: String]
    /// The network interface index it was found on.
    public var interface: Int32

    /// A resolved service.
    public init(name: String, type: String, domain: String = "local", host: String, address: String, port: Int,
                txt: [String: String] = [:], interface: Int32 = -1) {
        self.name = name
        self.type = type
        self.domain = domain
        self.host = host
        self.address = address
        self.port = port
        self.txt = txt
        self.interface = interface
    }

    /// What names one instance across resolutions: name, type, domain and interface.
    public var key: String { Self.key(name: name, type: type, domain: domain, interface: interface) }

    /// The key of the instance with these names (what a `removed` event names).
    public static func key(name: String, type: String, domain: String, interface: Int32) -> String {
        "\(interface)/\(type)/\(domain)/\(name)"
    }
}

/// What DNS-SD reports to a subscriber.
public enum DNSSDEvent: Sendable, Hashable {
    /// A service appeared (or changed: the same `key`, new address, port or TXT).
    case found(DNSSDService)
    /// A service went away.
    case removed(name: String, type: String, domain: String, interface: Int32)
    /// Discovery cannot run; `reason` says why in words (once, when it stops; services already found
    /// are then reported removed).
    case unavailable(reason: String)
    /// Discovery runs again after being unavailable.
    case available
}

/// DNS-SD (mDNS through avahi-daemon), run once per process: browses and resolves the subscribed types.
public protocol DNSSDDiscovery: Sendable {
    /// Resolved services of `types` as they come and go, until the stream is dropped.
    func subscribe(types: [String]) -> AsyncStream<DNSSDEvent>
}

/// The discovery services a router hands its providers; either may be absent (not built, turned off).
public struct DiscoveryServices: Sendable {
    public var ssdp: (any SSDPDiscovery)?
    public var dnssd: (any DNSSDDiscovery)?

    /// The services to share.
    public init(ssdp: (any SSDPDiscovery)? = nil, dnssd: (any DNSSDDiscovery)? = nil) {
        self.ssdp = ssdp
        self.dnssd = dnssd
    }

    /// No discovery at all (local output only).
    public static let none = DiscoveryServices()
}
