// AnnouncedAddress: the one rule for addresses that reach route in announcements from the network (mDNS services,
// SSDP locations): nothing announced makes route connect to this machine itself — its loopback, or any address of its
// own — nor to an address or port no device can have. An address a person types is not announced, and not checked.

import FoundationEssentials
import Glibc
import Synchronization

/// Checks announced addresses before route connects to them.
public enum AnnouncedAddress {
    /// Why route refuses to connect to `host:port` because an announcement names it; nil when it may. `host` is a
    /// numeric IPv4 or IPv6 address (anything else is refused: announcements are resolved before they get here).
    public static func refusal(host: String, port: Int) -> String? {
        guard (1...65535).contains(port) else { return "port \(port) is not a port a device listens on" }
        guard let bytes = bytes(of: host) else { return "\(host) is not an IP address" }
        if let special = special(bytes) { return "\(host) is \(special)" }
        if ownAddresses().contains(bytes) { return "\(host) is an address of this machine" }
        return nil
    }

    /// The host of an address as routes give it (`10.0.0.5`, `10.0.0.5:8009`, `http://10.0.0.5:49494/x.xml`).
    public static func host(of address: String) -> String {
        if let url = URL(string: address), let urlHost = url.host, address.contains("://") { return urlHost }
        if let colon = address.lastIndex(of: ":"), !address.contains("]") { return String(address[..<colon]) }
        return address
    }

    /// What kind of address no device on the network can have, in words; nil for an ordinary one.
    static func special(_ bytes: [UInt8]) -> String? {
        if bytes.count == 4 {
            switch bytes[0] {
            case 127: return "this machine's loopback"
            case 0: return "not a host's address"
            case 224...239: return "a multicast address"
            case 255 where bytes == [255, 255, 255, 255]: return "the broadcast address"
            default: return nil
            }
        }
        // IPv4-mapped IPv6 (::ffff:a.b.c.d) is that IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return special(Array(bytes[12...])) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] == 1 ? "this machine's loopback" : bytes[15] == 0 ? "not a host's address" : nil }
        if bytes[0] == 0xFF { return "a multicast address" }
        return nil
    }

    /// The bytes of a numeric address (4 for IPv4, 16 for IPv6), the whole text as inet_pton reads it: nothing is
    /// cut off first (cutting a zone at `%` took "%%::e%%" for the address ::e — the fuzzer's find).
    static func bytes(of host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// This machine's addresses, read from its interfaces at most once a second (they change as links come and go).
    static func ownAddresses() -> Set<[UInt8]> {
        let now = ContinuousClock.now
        return cache.withLock { cache in
            if let read = cache.read, now - read < .seconds(1) { return cache.addresses }
            cache.addresses = interfaceAddresses()
            cache.read = now
            return cache.addresses
        }
    }
    private static let cache = Mutex<(read: ContinuousClock.Instant?, addresses: Set<[UInt8]>)>((nil, []))

    private static func interfaceAddresses() -> Set<[UInt8]> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var addresses: Set<[UInt8]> = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var raw = v4.pointee.sin_addr
                    addresses.insert(withUnsafeBytes(of: &raw) { Array($0) })
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    var raw = v6.pointee.sin6_addr
                    addresses.insert(withUnsafeBytes(of: &raw) { Array($0) })
                }
            default:
                continue
            }
        }
        return addresses
    }
}
