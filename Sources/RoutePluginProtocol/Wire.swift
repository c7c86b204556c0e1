// Wire: the parameters and results of every method of the plugin protocol (Plugins/PROTOCOL.md), and how
// they map to RouteCore's types and errors. Both the host and RoutePluginKit speak through these.

import Foundation
import RouteCore

/// The protocol versions this build speaks.
public let pluginProtocolVersions = VersionRange(min: 1, max: 1)

/// The method names.
public enum PluginMethod {
    public static let initialize = "initialize"
    public static let shutdown = "shutdown"
    public static let exit = "exit"
    public static let discoveryStart = "discovery/start"
    public static let discoveryStop = "discovery/stop"
    public static let dnssd = "discovery/dnssd"
    public static let ssdp = "discovery/ssdp"
    public static let resolve = "device/resolve"
    public static let devices = "devices"
    public static let log = "log"
    public static let open = "session/open"
    public static let load = "session/load"
    public static let play = "session/play"
    public static let pause = "session/pause"
    public static let seek = "session/seek"
    public static let stop = "session/stop"
    public static let volume = "session/volume"
    public static let mute = "session/mute"
    public static let next = "session/next"
    public static let skip = "session/skip"
    public static let close = "session/close"
    public static let status = "session/status"
}

/// An inclusive range of protocol versions.
public struct VersionRange: Codable, Sendable, Equatable, CustomStringConvertible {
    public var min: Int
    public var max: Int

    /// A range.
    public init(min: Int, max: Int) {
        self.min = min
        self.max = max
    }

    /// The highest version both ranges hold, if any.
    public func highestCommon(with other: VersionRange) -> Int? {
        let top = Swift.min(max, other.max)
        return top >= Swift.max(min, other.min) ? top : nil
    }

    public var description: String { min == max ? "\(min)" : "\(min)–\(max)" }
}

/// Who is at one end: a name and a version.
public struct PeerInfo: Codable, Sendable, Equatable {
    public var name: String
    public var version: String

    /// A peer.
    public init(name: String, version: String) {
        self.name = name
        self.version = version
    }
}

/// `initialize` parameters: the host's versions and name, and whether it wants `debug` log lines.
public struct InitializeParams: Codable, Sendable {
    public var protocolVersions: VersionRange
    public var host: PeerInfo
    /// Whether the user traces this plugin (`ROUTE_DEBUG=NAME`): only then are `debug` log lines shown, so a
    /// plugin may leave them unsent otherwise. Absent: false.
    public var trace: Bool?

    /// The host's offer.
    public init(protocolVersions: VersionRange, host: PeerInfo, trace: Bool = false) {
        self.protocolVersions = protocolVersions
        self.host = host
        self.trace = trace
    }
}

/// What a plugin can do and what it wants found for it.
public struct PluginFeatures: Codable, Sendable, Equatable {
    /// DNS-SD service types (`_mpd._tcp`) the host browses and resolves for it.
    public var dnssd: [String]
    /// SSDP search targets the host searches for it.
    public var ssdp: [String]
    /// Whether its devices queue the next item without a gap (`session/next`, `session/skip`).
    public var queue: Bool
    /// Whether its devices have a volume it can set.
    public var volume: Bool
    /// Whether its devices show WebVTT subtitles (items then carry `subtitlesURL`).
    public var subtitles: Bool
    /// Whether it answers `device/resolve`: a device at an address the user typed (`--to mpd://HOST`).
    public var resolve: Bool
    /// Whether its devices play at an instant they are told (`session/play` with `at`): several then play on one
    /// timeline (a group's members).
    public var timedPlay: Bool

    /// Features; everything off by default.
    public init(dnssd: [String] = [], ssdp: [String] = [], queue: Bool = false, volume: Bool = false, subtitles: Bool = false,
                resolve: Bool = false, timedPlay: Bool = false) {
        self.dnssd = dnssd
        self.ssdp = ssdp
        self.queue = queue
        self.volume = volume
        self.subtitles = subtitles
        self.resolve = resolve
        self.timedPlay = timedPlay
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        dnssd = try c.decodeIfPresent([String].self, forKey: .dnssd) ?? []
        ssdp = try c.decodeIfPresent([String].self, forKey: .ssdp) ?? []
        queue = try c.decodeIfPresent(Bool.self, forKey: .queue) ?? false
        volume = try c.decodeIfPresent(Bool.self, forKey: .volume) ?? false
        subtitles = try c.decodeIfPresent(Bool.self, forKey: .subtitles) ?? false
        resolve = try c.decodeIfPresent(Bool.self, forKey: .resolve) ?? false
        timedPlay = try c.decodeIfPresent(Bool.self, forKey: .timedPlay) ?? false
    }
}

/// `initialize` result: the version chosen, the plugin's own range, name and features.
public struct InitializeResult: Codable, Sendable {
    public var protocolVersion: Int
    public var protocolVersions: VersionRange
    public var plugin: PeerInfo
    public var features: PluginFeatures

    /// A plugin's answer.
    public init(protocolVersion: Int, protocolVersions: VersionRange, plugin: PeerInfo, features: PluginFeatures) {
        self.protocolVersion = protocolVersion
        self.protocolVersions = protocolVersions
        self.plugin = plugin
        self.features = features
    }

    /// `features` may be left out (nothing asked for, nothing offered).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        protocolVersion = try c.decode(Int.self, forKey: .protocolVersion)
        protocolVersions = try c.decode(VersionRange.self, forKey: .protocolVersions)
        plugin = try c.decode(PeerInfo.self, forKey: .plugin)
        features = try c.decodeIfPresent(PluginFeatures.self, forKey: .features) ?? PluginFeatures()
    }
}

/// One device as a plugin describes it (a `MediaRoute` without its provider).
public struct WireDevice: Codable, Sendable, Equatable {
    /// The plugin's own stable id for it.
    public var id: String
    public var name: String
    /// computer, tv, speaker, receiver, group or other.
    public var kind: String
    public var address: String?
    /// Any of audio, video, image.
    public var capabilities: [String]
    /// none, relative or absolute.
    public var volume: String
    /// `"anything"` or MIME types.
    public var accepts: MediaAcceptance
    public var maxAudioChannels: Int?
    public var showsSubtitles: Bool?
    /// Identities shared with other protocols' routes to the same device (`mac:…`, a UPnP UDN).
    public var identities: [String]?
    /// The protocol's name as people read it (`AirPlay`); absent: the provider's name.
    public var `protocol`: String?

    /// The device of `route`.
    public init(_ route: MediaRoute) {
        id = route.nativeID
        name = route.name
        `protocol` = route.protocolName == route.provider ? nil : route.protocolName
        kind = route.kind.rawValue
        address = route.address
        capabilities = Self.capabilityNames.filter { route.capabilities.contains($0.1) }.map(\.0)
        volume = route.volumeControl.rawValue
        accepts = route.accepts
        maxAudioChannels = route.maxAudioChannels
        showsSubtitles = route.showsSubtitles
        identities = route.deduplicationIDs.isEmpty ? nil : route.deduplicationIDs.sorted()
    }

    /// The route it is, for `provider`. Unknown kinds and volume controls read as `other` and `none`, a
    /// channel count outside 1–64 as unknown; the name is cleaned for display.
    public func route(provider: String) -> MediaRoute {
        var route = MediaRoute(
            provider: provider, nativeID: id, name: DisplayText.clean(name), kind: MediaDevice.Kind(rawValue: kind) ?? .other,
            protocolName: `protocol`.map { String(DisplayText.clean($0).prefix(40)) }.flatMap { $0.isEmpty ? nil : $0 },
            address: address, capabilities: MediaDevice.Capabilities(Self.capabilityNames.filter { capabilities.contains($0.0) }.map(\.1)),
            volumeControl: MediaDevice.VolumeControl(rawValue: volume) ?? .none, accepts: accepts,
            maxAudioChannels: maxAudioChannels.flatMap { (1...64).contains($0) ? $0 : nil }, deduplicationIDs: Set(identities ?? []))
        route.showsSubtitles = showsSubtitles ?? false
        return route
    }

    static let capabilityNames: [(String, MediaDevice.Capabilities)] = [("audio", .audio), ("video", .video), ("image", .image)]
}

/// `device/resolve` parameters: an address the user gave (`--to ADDRESS`).
public struct ResolveParams: Codable, Sendable {
    public var address: String

    /// Parameters.
    public init(address: String) { self.address = address }
}

/// `device/resolve` result: the device at the address, or none when the address is not one the plugin speaks to.
public struct ResolveResult: Codable, Sendable {
    public var device: WireDevice?

    /// A result.
    public init(device: WireDevice?) { self.device = device }
}

/// `devices` parameters: the plugin's whole device list now.
public struct DevicesParams: Codable, Sendable {
    public var devices: [WireDevice]

    /// A snapshot.
    public init(devices: [WireDevice]) { self.devices = devices }
}

/// `discovery/dnssd` parameters: one DNS-SD event for a type the plugin asked for.
public struct DNSSDParams: Codable, Sendable, Equatable {
    /// found, removed, unavailable or available.
    public var event: String
    /// The service (found: resolved; removed: name, type, domain and interface only).
    public var service: DNSSDService?
    /// Why discovery is unavailable.
    public var reason: String?

    /// The parameters of `event`.
    public init(_ event: DNSSDEvent) {
        switch event {
        case .found(let service): self.event = "found"; self.service = service
        case .removed(let name, let type, let domain, let interface):
            self.event = "removed"
            service = DNSSDService(name: name, type: type, domain: domain, host: "", address: "", port: 0, interface: interface)
        case .unavailable(let reason): self.event = "unavailable"; self.reason = reason
        case .available: self.event = "available"
        }
    }

    /// The event they describe, if they describe one.
    public var dnssdEvent: DNSSDEvent? {
        switch event {
        case "found": return service.map { .found($0) }
        case "removed": return service.map { .removed(name: $0.name, type: $0.type, domain: $0.domain, interface: $0.interface) }
        case "unavailable": return .unavailable(reason: reason ?? "unavailable")
        case "available": return .available
        default: return nil
        }
    }
}

/// `discovery/ssdp` parameters: one SSDP reply or announcement for a target the plugin asked for.
public struct SSDPParams: Codable, Sendable, Equatable {
    /// alive or byebye.
    public var event: String
    public var udn: String
    public var target: String
    public var location: String
    public var maxAge: Int
    public var sender: String
    public var announced: Bool

    /// The parameters of `event`.
    public init(_ event: SSDPEvent) {
        self.event = event.kind.rawValue
        udn = event.udn
        target = event.target
        location = event.location
        maxAge = event.maxAge
        sender = event.sender
        announced = event.announced
    }

    /// The event they describe.
    public var ssdpEvent: SSDPEvent? {
        SSDPEvent.Kind(rawValue: event).map {
            SSDPEvent(kind: $0, udn: udn, target: target, location: location, maxAge: maxAge, sender: sender, announced: announced)
        }
    }
}

/// An item to play, as the host sends it.
public struct WireItem: Codable, Sendable, Equatable {
    /// route's served URL: the device fetches the media from here.
    public var url: String
    public var mimeType: String
    public var title: String?
    public var artist: String?
    public var album: String?
    public var duration: Double?
    public var artworkURL: String?
    public var subtitlesURL: String?
    /// audio, video or image.
    public var kind: String
    /// Whether `url` is converted on the fly (it cannot be seeked by bytes; see PROTOCOL.md).
    public var converted: Bool
    /// True for a live stream (desktop audio, a radio); absent (nil) means false.
    public var live: Bool?

    /// The wire form of `item`.
    public init(_ item: MediaItem) {
        url = item.url
        mimeType = item.mimeType
        title = item.title
        artist = item.artist
        album = item.album
        duration = item.duration
        artworkURL = item.artworkURL
        subtitlesURL = item.subtitlesURL
        kind = item.kind.contains(.image) ? "image" : item.kind.contains(.video) ? "video" : "audio"
        converted = item.isConverted
        live = item.isLive ? true : nil
    }

    /// The item.
    public var item: MediaItem {
        var item = MediaItem(url: url, mimeType: mimeType, title: title, artist: artist, album: album, duration: duration,
                             artworkURL: artworkURL, kind: kind == "image" ? .image : kind == "video" ? .video : .audio)
        item.subtitlesURL = subtitlesURL
        item.isConverted = converted
        item.isLive = live ?? false
        return item
    }
}

/// `session/open` parameters: the session id the host chose, and the device (as the plugin described it).
public struct OpenParams: Codable, Sendable {
    public var session: String
    public var device: WireDevice

    /// Parameters.
    public init(session: String, device: WireDevice) {
        self.session = session
        self.device = device
    }
}

/// Parameters of the session calls that take nothing else.
public struct SessionParams: Codable, Sendable {
    public var session: String

    /// Parameters.
    public init(session: String) { self.session = session }
}

/// `session/play` parameters.
public struct PlayParams: Codable, Sendable {
    public var session: String
    /// When its sound is to be heard, in seconds since 1970 (UTC, this machine's clock); absent: now. Sent only to a
    /// plugin with `features.timedPlay`.
    public var at: Double?

    /// Parameters.
    public init(session: String, at: Double? = nil) {
        self.session = session
        self.at = at
    }
}

/// `session/load` and `session/next` parameters.
public struct LoadParams: Codable, Sendable {
    public var session: String
    public var item: WireItem
    /// Whether to start playing at once (load only).
    public var autoplay: Bool?

    /// Parameters.
    public init(session: String, item: WireItem, autoplay: Bool? = nil) {
        self.session = session
        self.item = item
        self.autoplay = autoplay
    }
}

/// `session/seek` parameters: an absolute position in seconds.
public struct SeekParams: Codable, Sendable {
    public var session: String
    public var position: Double

    /// Parameters.
    public init(session: String, position: Double) {
        self.session = session
        self.position = position
    }
}

/// `session/volume` parameters: a level from 0 to 1.
public struct VolumeParams: Codable, Sendable {
    public var session: String
    public var level: Double

    /// Parameters.
    public init(session: String, level: Double) {
        self.session = session
        self.level = level
    }
}

/// `session/mute` parameters.
public struct MuteParams: Codable, Sendable {
    public var session: String
    public var muted: Bool

    /// Parameters.
    public init(session: String, muted: Bool) {
        self.session = session
        self.muted = muted
    }
}

/// `session/next` and `session/skip` results: whether the device did it (`null` or `{}` read as not done).
public struct DoneResult: Codable, Sendable {
    public var done: Bool

    /// A result.
    public init(done: Bool) { self.done = done }

    public init(from decoder: any Decoder) throws {
        let container = try? decoder.container(keyedBy: CodingKeys.self)
        done = (try? container?.decodeIfPresent(Bool.self, forKey: .done)) ?? false
    }
}

/// A device's playback status.
public struct WireStatus: Codable, Sendable, Equatable {
    /// idle, loading, playing, paused, stopped, ended or failed.
    public var state: String
    public var position: Double
    public var duration: Double?
    public var volume: Double?
    public var muted: Bool?
    public var title: String?
    public var error: String?
    public var itemURL: String?
    public var deviceState: String?
    public var sessionID: String?
    public var itemID: String?
    public var speed: Double?
    /// finished, stopped, replaced, deviceError, unplayable or deviceGone (final states only).
    public var endReason: String?
    /// Any of pause, seek, volume; absent: all.
    public var allowed: [String]?

    /// The wire form of `status`.
    public init(_ status: PlaybackStatus) {
        state = status.state.rawValue
        position = status.position
        duration = status.duration
        volume = status.volume
        muted = status.muted
        title = status.title
        error = status.error
        itemURL = status.itemURL
        deviceState = status.deviceState
        sessionID = status.sessionID
        itemID = status.itemID
        speed = status.speed == 1 ? nil : status.speed
        endReason = status.endReason?.rawValue
        allowed = status.allowed == .all ? nil : Self.commandNames.filter { status.allowed.contains($0.1) }.map(\.0)
    }

    /// The status, true now; nil when the state is not one of the protocol's.
    public var status: PlaybackStatus? {
        guard let state = PlaybackStatus.State(rawValue: state) else { return nil }
        // Every number is checked where it enters: a position or duration out of range (negative, not finite,
        // past NetworkNumber.maxSeconds) is unknown, a volume is clamped, a speed outside the believable is 1.
        var status = PlaybackStatus(state: state, position: NetworkNumber.seconds(position) ?? 0,
                                    duration: NetworkNumber.seconds(duration),
                                    volume: volume.flatMap { $0.isFinite ? min(1, max(0, $0)) : nil }, title: title, error: error)
        status.muted = muted
        status.itemURL = itemURL
        status.deviceState = deviceState
        status.sessionID = sessionID
        status.itemID = itemID
        if let speed = NetworkNumber.value(speed, in: PlaybackStatus.speeds) { status.speed = speed }
        if let reason = endReason.flatMap(PlaybackStatus.EndReason.init(rawValue:)), status.isFinal { status.endReason = reason }
        if let allowed { status.allowed = PlaybackStatus.Commands(Self.commandNames.filter { allowed.contains($0.0) }.map(\.1)) }
        return status
    }

    static let commandNames: [(String, PlaybackStatus.Commands)] = [("pause", .pause), ("seek", .seek), ("volume", .volume)]
}

/// `session/status` parameters: a status report of one session.
public struct StatusParams: Codable, Sendable {
    public var session: String
    public var status: WireStatus

    /// Parameters.
    public init(session: String, status: WireStatus) {
        self.session = session
        self.status = status
    }
}

/// `log` parameters: a line for route's log.
public struct LogParams: Codable, Sendable {
    /// debug, info or error.
    public var level: String
    public var message: String

    /// Parameters.
    public init(level: String, message: String) {
        self.level = level
        self.message = message
    }
}

extension RPCError {
    /// The error a plugin sends for `error` thrown by its controller: the code of its kind and its reason.
    public init(_ error: any Error) {
        switch error {
        case let error as RPCError: self = error
        case let error as RouteError:
            let reason = error.reason ?? error.description
            switch error.code {
            case .deviceUnreachable: self.init(code: Self.unreachable, message: reason)
            case .commandFailed: self.init(code: Self.refused, message: reason)
            case .unsupported: self.init(code: Self.unsupported, message: reason)
            case .mediaRefused: self.init(code: Self.mediaRefused, message: reason)
            case .unusableDevice: self.init(code: Self.unusable, message: reason)
            default: self.init(code: Self.refused, message: error.description)
            }
        default: self.init(code: Self.refused, message: "\(error)")
        }
    }

    /// The RouteError the host throws for this reply to `command` on `device`.
    public func routeError(device: String, command: String) -> RouteError {
        switch code {
        case Self.unreachable: return .deviceUnreachable(device: device, reason: message)
        case Self.unsupported: return .unsupported(device: device, what: message)
        case Self.mediaRefused: return .mediaRefused(device: device, reason: message)
        case Self.unusable: return .unusableDevice(device: device, reason: message)
        default: return .commandFailed(device: device, command: command, reason: message)
        }
    }
}
