// MediaPreparer: turns a probed file into what a device fetches — the file itself for local output,
// else a URL on a media server bound to the local address that reaches the device.

import Foundation
import RouteCore
import Synchronization

/// Prepares items for one device, starting the media server on first need and closing it at the end.
public final class MediaPreparer: Sendable {
    private let device: MediaDevice
    private let server = Mutex<MediaServer?>(nil)

    /// A preparer for `device`.
    public init(device: MediaDevice) {
        self.device = device
    }

    /// The item to load for `info`: a file URI for local output; otherwise a served URL, direct or
    /// converted as `DeliveryPlanner` decides. `notice` hears, in words, what the device will not get of
    /// the file (the picture of a video sent to a speaker).
    /// - Throws: `MediaError.unplayable` when nothing the device takes can be made from the file;
    ///   `MediaError.server` when no local address reaches the device.
    public func prepare(_ info: MediaInfo, notice: (String) -> Void = { _ in }) throws -> MediaItem {
        var item = MediaItem(url: URL(fileURLWithPath: info.path).absoluteString, mimeType: info.mimeType,
                             title: info.displayTitle, artist: info.artist, album: info.album,
                             duration: info.duration, size: info.size, kind: info.kind)
        guard device.protocolName != "local" else { return item }
        let plan = DeliveryPlanner.plan(info, for: device.accepts)
        let server = try self.server.withLock { current -> MediaServer in
            if let current { return current }
            let created = try MediaServer(address: try LocalAddress.toward(device.address ?? ""))
            current = created
            return created
        }
        guard let (url, mimeType) = server.offer(info, as: plan) else {
            if case .unplayable(let reason) = plan { throw MediaError.unplayable(info.path, device: device.name, reason: reason) }
            throw MediaError.unplayable(info.path, device: device.name, reason: "route has no way to send it there")
        }
        if plan.dropsPicture(of: info) {
            notice("\(device.name) takes no video format route can make: sending only the sound of \(info.displayTitle)")
        }
        item.url = url
        // In the device's own words: some compare the text of the type with what they listed.
        item.mimeType = device.accepts.spelling(of: mimeType)
        if let art = info.coverArt {
            item.artworkURL = server.offer(data: art.data, mimeType: art.mimeType)
        }
        if case .direct = plan {} else {
            item.size = nil
            item.isConverted = true
        }
        return item
    }

    /// What the device has done with a prepared item's URL (nil for local output, which reads files).
    public func access(to item: MediaItem) -> MediaAccess? {
        server.withLock { $0?.access(to: item.url) }
    }

    /// Stops the media server, if one was started.
    public func close() {
        server.withLock { $0?.close(); $0 = nil }
    }
}

/// Which local address the machine uses to reach a host — the one to advertise and bind, rather
/// than a guess among interfaces (VPNs and docker bridges break guesses).
public enum LocalAddress {
    /// The local IPv4 address of the route to `address` (`10.0.0.5`, `10.0.0.5:8009`, `http://10.0.0.5:49494/x.xml`).
    /// Uses a connected UDP socket, which sends nothing.
    public static func toward(_ address: String) throws -> String {
        var host = address
        if let url = URL(string: address), let urlHost = url.host, address.contains("://") { host = urlHost }
        else if let colon = host.lastIndex(of: ":"), !host.contains("]") { host = String(host[..<colon]) }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(9).bigEndian
        guard inet_pton(AF_INET, host, &remote.sin_addr) == 1 else {
            throw MediaError.server("\"\(host)\" is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            throw MediaError.server("no route to \(host): \(String(cString: strerror(errno)))")
        }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &local.sin_addr, &text, socklen_t(INET_ADDRSTRLEN))
        return String(cString: text)
    }
}
