// MediaPreparer: turns a probed file into what a device fetches — the file itself for local output,
// else a URL on a media server bound to the local address that reaches the device.

import Foundation
import RouteCore
import Synchronization

/// Prepares items for one device: picks the route that plays each file with the least conversion, and
/// serves it there, from the media server (of `servers`) on the local address that reaches the route.
public final class MediaPreparer: Sendable {
    private let device: MediaDevice
    private let via: String?
    private let servers: MediaServers
    /// Whether `servers` is this preparer's own (stopped when it closes) rather than shared.
    private let ownsServers: Bool
    /// What this preparer offered, withdrawn when it closes.
    private let offered = Mutex<[(server: MediaServer, url: String)]>([])

    /// A preparer for `device`; with `via`, only routes of that protocol or provider are used. Files are served by
    /// `servers` (shared with other preparers: one server per local address for every session), or by servers of
    /// its own when nil, which log to `log`.
    /// - Throws: `MediaError.unplayable`-free: `RouteError.unsupported` when `via` names no route of it.
    public init(device: MediaDevice, via: String? = nil, servers: MediaServers? = nil, log: RouteLog = .discard) throws {
        if let via, device.route(of: via) == nil {
            throw RouteError.unsupported(device: device.name, what: "be reached over \(via) (it has \(device.protocols.joined(separator: ", ")))")
        }
        self.device = device
        self.via = via
        self.servers = servers ?? MediaServers(log: log)
        ownsServers = servers == nil
    }

    /// The routes this preparer may use, preferred first.
    private var routes: [MediaRoute] {
        guard let via else { return device.routes }
        return device.routes.filter { $0.isReached(via: via) }
    }

    /// The route for `info` and how the file goes there: the route that plays it with the least
    /// conversion (as it is, then remuxed, then transcoded), the preferred one among equals.
    public func plan(_ info: MediaInfo, asIs: Bool = true) -> (route: MediaRoute, delivery: Delivery) {
        let planned = routes.map { route in
            (route, route.provider == MediaRoute.localProvider ? Delivery.direct
                : DeliveryPlanner.plan(info, for: route.accepts, maxChannels: route.maxAudioChannels, asIs: asIs))
        }
        return planned.min { $0.1.cost < $1.1.cost } ?? (device.primary, .unplayable("the device has no route"))
    }

    /// The item to load for `info`, and its route: a file URI for local output; otherwise a served URL,
    /// direct or converted as `DeliveryPlanner` decides. `notice` hears, in words, what the device will
    /// not get of the file (the picture of a video sent to a speaker).
    /// - Throws: `MediaError.unplayable` when nothing any route takes can be made from the file;
    ///   `MediaError.server` when no local address reaches the device.
    public func prepare(_ info: MediaInfo, subtitles: Subtitles = .automatic,
                        notice: (String) -> Void = { _ in }) throws -> (route: MediaRoute, item: MediaItem) {
        var item = MediaItem(url: URL(fileURLWithPath: info.path).absoluteString, mimeType: info.mimeType,
                             title: info.displayTitle, artist: info.artist, album: info.album,
                             duration: info.duration, size: info.size, kind: info.kind)
        item.isLive = info.isLive
        if info.isLive { item.duration = nil }
        // A URL on this machine's loopback (or any address of its own) is no use to a device: route fetches it.
        // (No DNS here: a name for this machine goes to the device, which cannot fetch it and gets route's stream then.)
        let deviceFetches = info.isRemote && WebAddress.thisMachine(info.path, resolving: false) == nil
        let (route, plan) = self.plan(info, asIs: !info.isRemote || deviceFetches)
        if info.isRemote { item.url = info.path }
        guard route.provider != MediaRoute.localProvider else { return (route, item) }
        guard let address = route.address else {
            throw MediaError.server("\(route.name) has no network address (its \(route.provider) provider gave none), so route cannot tell "
                                    + "which local address reaches it")
        }
        let server = try servers.server(on: try LocalAddress.toward(address))
        // Served to this route's device alone: it hands its URLs to anyone who asks it.
        let audience = Audience.route(route, at: address)
        if info.isRemote, case .direct = plan {
            return (route, fetchedByDevice(item, info: info, on: route, server: server, for: audience))
        }
        guard let (url, mimeType) = remember(server.offer(info, as: plan, maxChannels: route.maxAudioChannels, for: audience), on: server) else {
            if case .unplayable(let reason) = plan { throw MediaError.unplayable(info.path, device: device.name, reason: reason) }
            throw MediaError.unplayable(info.path, device: device.name, reason: "route has no way to send it there")
        }
        if plan.dropsPicture(of: info) {
            notice("\(device.name) takes no video format route can make: sending only the sound of \(info.displayTitle)")
        }
        item.url = url
        // In the device's own words: some compare the text of the type with what they listed.
        item.mimeType = route.accepts.spelling(of: mimeType)
        if let art = info.coverArt {
            item.artworkURL = remember(server.offer(data: art.data, mimeType: art.mimeType, for: audience), on: server)
        } else {
            item.artworkURL = artwork(of: info, on: server, for: audience)
        }
        if route.showsSubtitles, info.kind == .video, let (path, embedded) = subtitles.source(for: info) {
            // What goes out as subtitles is subtitles, whoever named the file or the link beside the video.
            if !embedded, let refusal = SubtitleFile.refusal(path, video: info.isRemote ? nil : info.path) {
                notice("no subtitles for \(info.displayTitle): \(refusal)")
            } else {
                item.subtitlesURL = remember(server.offer(subtitles: path, embedded: embedded, for: audience), on: server)
            }
        }
        if case .direct = plan {} else {
            item.size = nil
            item.isConverted = true
        }
        // A device may still refuse what its list says it takes (a codec or profile it lacks): a transcoded
        // stream to fall back on, served only if it is asked for.
        if plan.cost < Delivery.transcode(.mp3).cost, let profile = DeliveryPlanner.fallback(for: info, on: route.accepts),
           let (fallback, fallbackType) = remember(server.offer(info, as: .transcode(profile), maxChannels: route.maxAudioChannels, for: audience), on: server) {
            item.fallbackURL = fallback
            item.fallbackMimeType = route.accepts.spelling(of: fallbackType)
        }
        return (route, item)
    }

    /// `item` for a URL on the web that the device takes as it is and can reach: the device fetches it itself, and route
    /// keeps its own stream of it (remuxed or converted) to load instead when the device cannot (a 404 it keeps quiet
    /// about, an address it cannot reach).
    private func fetchedByDevice(_ item: MediaItem, info: MediaInfo, on route: MediaRoute, server: MediaServer, for audience: Audience) -> MediaItem {
        var item = item
        item.isFetchedElsewhere = true
        item.size = nil
        item.mimeType = route.accepts.spelling(of: info.mimeType)
        item.artworkURL = info.coverArt.map { remember(server.offer(data: $0.data, mimeType: $0.mimeType, for: audience), on: server) }
            ?? artwork(of: info, on: server, for: audience)
        let served = DeliveryPlanner.plan(info, for: route.accepts, maxChannels: route.maxAudioChannels, asIs: false)
        if let (fallback, fallbackType) = remember(server.offer(info, as: served, maxChannels: route.maxAudioChannels, for: audience), on: server) {
            item.fallbackURL = fallback
            item.fallbackMimeType = route.accepts.spelling(of: fallbackType)
        }
        return item
    }

    /// Cover art that is not inside the file: a URL on the web as it is (the device fetches it), a picture beside the
    /// file served from here.
    private func artwork(of info: MediaInfo, on server: MediaServer, for audience: Audience) -> String? {
        switch info.artwork {
        case nil: return nil
        case .web(let art): return WebAddress.thisMachine(art, resolving: false) == nil ? art : nil
        case .besideFile(let art): return pictureBesideFile(art, on: server, for: audience)
        }
    }

    /// The picture at `art`, found beside a file, served from here.
    private func pictureBesideFile(_ art: String, on server: MediaServer, for audience: Audience) -> String? {
        guard let data = FileManager.default.contents(atPath: art) else { return nil }
        return remember(server.offer(data: data, mimeType: art.lowercased().hasSuffix(".png") ? "image/png" : "image/jpeg", for: audience), on: server)
    }

    /// What the device has done with a prepared item's URL (nil for local output, which reads files).
    public func access(to item: MediaItem) -> MediaAccess? {
        offered.withLock { offered in offered.lazy.compactMap { $0.url == item.url ? $0.server.access(to: item.url) : nil }.first }
    }

    /// Withdraws what this preparer offered; stops its servers when they are its own.
    public func close() {
        let withdrawn = offered.withLock { offered in defer { offered = [] }; return offered }
        if ownsServers { servers.close() } else { for (server, url) in withdrawn { server.withdraw(url) } }
    }

    private func remember(_ url: String, on server: MediaServer) -> String {
        offered.withLock { $0.append((server, url)) }
        return url
    }

    private func remember(_ offer: (url: String, mimeType: String)?, on server: MediaServer) -> (url: String, mimeType: String)? {
        if let offer { _ = remember(offer.url, on: server) }
        return offer
    }
}

/// Media servers by local address, made on first need: one per address, shared by every preparer given the same
/// `MediaServers` (the route service serves every session from one).
public final class MediaServers: Sendable {
    private let servers = Mutex<[String: MediaServer]>([:])
    private let log: RouteLog

    /// No servers yet; those made log to `log`.
    public init(log: RouteLog = .discard) { self.log = log }

    /// The server on `local`, started on first need.
    /// - Throws: `MediaError.server` when it cannot listen there.
    public func server(on local: String) throws -> MediaServer {
        try servers.withLock { table in
            if let existing = table[local] { return existing }
            let created = try MediaServer(address: local, log: log)
            table[local] = created
            return created
        }
    }

    /// Stops every server.
    public func close() {
        servers.withLock { table in
            for server in table.values { server.close() }
            table.removeAll()
        }
    }
}

extension Subtitles {
    /// The subtitles for `info`: a path, and whether they are a stream inside that file.
    func source(for info: MediaInfo) -> (path: String, embedded: Bool)? {
        switch self {
        case .off: return nil
        case .file(let path): return (path, false)
        case .automatic:
            let base = URL(fileURLWithPath: info.path).deletingPathExtension()
            let directory = base.deletingLastPathComponent().path
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for ext in ["vtt", "srt"] {
                if let name = names.first(where: { $0.lowercased() == (base.lastPathComponent + "." + ext).lowercased() }) {
                    return (directory + "/" + name, false)
                }
            }
            let text = info.streams.contains { $0.kind == .subtitles && $0.codec.hasPrefix("text/") }
            return text ? (info.path, true) : nil
        }
    }
}

/// Which local address the machine uses to reach a host — the one to advertise and bind, rather
/// than a guess among interfaces (VPNs and docker bridges break guesses).
public enum LocalAddress {
    /// The local IPv4 address of the route to `address` (`10.0.0.5`, `10.0.0.5:8009`, `http://10.0.0.5:49494/x.xml`).
    /// Uses a connected UDP socket, which sends nothing.
    public static func toward(_ address: String) throws -> String {
        let host = AnnouncedAddress.host(of: address)
        guard let remote = SocketAddress(numericHost: host, port: 9), remote.family == AF_INET else {
            throw MediaError.server("\"\(host)\" is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        guard remote.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            throw MediaError.server("no route to \(host): \(String(cString: strerror(errno)))")
        }
        guard let local = SocketAddress(localOf: fd) else {
            throw MediaError.server("no local address toward \(host): \(String(cString: strerror(errno)))")
        }
        return local.numericHost
    }
}
