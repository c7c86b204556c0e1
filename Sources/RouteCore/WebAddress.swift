// WebAddress: where an http(s) URL points, for the two rules about URLs — a device cannot fetch from this machine's
// loopback (route serves such a URL itself), and a playlist or page from the web may not make route fetch from this
// machine at all.

import FoundationEssentials
import Glibc

/// Checks the host of an http(s) URL against this machine.
public enum WebAddress {
    /// Whether `text` is an http(s) URL (anything else a cast is given is a path).
    public static func isWebURL(_ text: String) -> Bool {
        let lower = text.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// Why `url` points at this machine, in words ("127.0.0.1 is this machine's loopback"); nil when its host is
    /// elsewhere, or is a name that does not resolve (then nothing here could fetch it either). A URL whose host
    /// cannot be read is refused: another parser might read it as this machine. Without `resolving`, only numeric
    /// hosts and localhost are judged (no DNS: for code that must not block); otherwise it may block on the resolver,
    /// so async code calls `thisMachine(resolving:)`.
    public static func thisMachine(_ url: String, resolving: Bool = true) -> String? {
        guard let host = URLComponents(string: url)?.host?.lowercased(), !host.isEmpty else { return "its host cannot be read" }
        return thisMachine(host: host, resolving: resolving)
    }

    /// `thisMachine(url)` for a host alone ("127.0.0.1", "[::1]", "::1", a name).
    public static func thisMachine(host: String, resolving: Bool = true) -> String? {
        let host = host.lowercased()
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") { return "\(host) is this machine" }
        if !resolving, AnnouncedAddress.bytes(of: bare) == nil { return nil }
        for address in addresses(of: bare) {
            if let bytes = AnnouncedAddress.bytes(of: address) {
                if let special = AnnouncedAddress.special(bytes) { return "\(host) is \(special)" }
                if AnnouncedAddress.ownAddresses().contains(bytes) { return "\(host) is an address of this machine" }
            }
        }
        return nil
    }

    /// `thisMachine(url)` on a thread of its own: the resolver blocks, and the cooperative pool must not.
    public static func thisMachine(resolving url: String) async -> String? {
        (try? await threads.run(timeout: .seconds(10), timedOut: { CancellationError() }) { thisMachine(url) }) ?? nil
    }
    private static let threads = BlockingThreads(name: "route-resolve", count: 2)

    /// The numeric addresses `host` stands for: itself when numeric, else what the resolver says (none when it fails).
    private static func addresses(of host: String) -> [String] {
        if AnnouncedAddress.bytes(of: host) != nil { return [host] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var found: [String] = []
        var node = list
        while let current = node {
            var numeric = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = current.pointee.ai_addr,
               getnameinfo(address, current.pointee.ai_addrlen, &numeric, socklen_t(numeric.count), nil, 0, NI_NUMERICHOST) == 0 {
                found.append(String(cBuffer: numeric))
            }
            node = current.pointee.ai_next
        }
        return found
    }
}
