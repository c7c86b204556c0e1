// SocketAddress: the one place route builds and reads POSIX socket addresses (IPv4, IPv6, Unix paths), so the
// sockaddr casts and lengths the socket calls need are written once.

import Glibc

/// An IPv4, IPv6 or Unix-domain socket address, as the socket calls take it.
public struct SocketAddress: @unchecked Sendable {
    // Safety: a plain C struct of integers and bytes, copied by value.
    private var storage = sockaddr_storage()
    /// How many bytes of the storage the address takes (what `bind` and `connect` are given).
    public private(set) var length: socklen_t = 0

    /// The address family: `AF_INET`, `AF_INET6` or `AF_UNIX`.
    public var family: Int32 { Int32(storage.ss_family) }

    /// A numeric IPv4 or IPv6 address (`10.0.0.5`, `fe80::1`) and port; nil when `host` is not numeric.
    public init?(numericHost host: String, port: UInt16) {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            store(v4)
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            store(v6)
        } else {
            return nil
        }
    }

    /// The Unix-domain address of `path`; nil when the path does not fit in one (108 bytes with its NUL).
    public init?(unixPath path: String) {
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: unix.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &unix.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        store(unix)
    }

    /// A copy of an address that C code handed over (libupnp's request and discovery callbacks); nil for none.
    public init?(copying address: UnsafePointer<sockaddr_storage>?) {
        guard let address else { return nil }
        storage = address.pointee
        switch Int32(storage.ss_family) {
        case AF_INET: length = socklen_t(MemoryLayout<sockaddr_in>.size)
        case AF_INET6: length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        default: return nil
        }
    }

    /// The local address a socket is bound to (`getsockname`); nil when it has none.
    public init?(localOf fd: Int32) {
        var size = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let code = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) }
        }
        guard code == 0 else { return nil }
        length = size
    }

    /// The numeric host (`10.0.0.5`, `fe80::1`); "" for a Unix-domain address.
    public var numericHost: String {
        guard family == AF_INET || family == AF_INET6 else { return "" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let code = withSockaddr { getnameinfo($0, $1, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) }
        return code == 0 ? String(cBuffer: host) : ""
    }

    /// The port of an IP address; 0 for a Unix-domain one.
    public var port: UInt16 {
        switch family {
        case AF_INET: UInt16(bigEndian: withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self).sin_port })
        case AF_INET6: UInt16(bigEndian: withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self).sin6_port })
        default: 0
        }
    }

    /// Calls `body` with the address as the socket calls take it: a sockaddr pointer and its length.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        try withUnsafePointer(to: storage) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }

    private mutating func store<Address>(_ address: Address) {
        withUnsafeBytes(of: address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
        length = socklen_t(MemoryLayout<Address>.size)
    }
}
