// MediaDevice: one physical player and the routes (one per provider) that reach it, and MediaAcceptance,
// the media a route takes.

import FoundationEssentials

/// One way of reaching a device: what one provider found, and how it plays.
///
/// A value, safe to pass anywhere. `id` is unique in the process (`upnp:uuid:…`): the provider's name and
/// its own id for the device (`nativeID`: a UPnP UDN, a Cast id, `local`), stable across runs.
public struct MediaRoute: Sendable, Hashable, Codable, Identifiable {
    /// `PROVIDER:NATIVEID`.
    public var id: String
    /// The provider's own id for it (a UPnP UDN, a Cast id).
    public var nativeID: String
    /// The provider that found it (`local`, `upnp`, `cast`, or a plugin's name).
    public var provider: String
    /// The protocol it speaks (usually the provider's name).
    public var protocolName: String
    /// The name this route gives the device, cleaned for display (DisplayText) where it is made.
    public var name: String
    public var kind: MediaDevice.Kind
    /// Where it is on the network (`10.0.0.5:8009`, a description URL), or nil for local output.
    public var address: String?
    public var capabilities: MediaDevice.Capabilities
    public var volumeControl: MediaDevice.VolumeControl
    /// The media it takes, or `.anything` when it decodes whatever GStreamer can.
    public var accepts: MediaAcceptance
    /// The most audio channels it plays, when it says (Cast: 2); nil when unknown.
    public var maxAudioChannels: Int?
    /// Whether it shows a WebVTT text track beside a video (Cast).
    public var showsSubtitles = false
    /// Ids that assert the device's identity: a UPnP UDN, a Cast id, `mac:…` from the neighbour table.
    /// Routes of different providers that share one are the same device. Never an address: two
    /// devices can share a host.
    public var deduplicationIDs: Set<String>

    /// The name of the provider of this computer's own output ("This computer"): the one provider that is not on
    /// the network.
    public static let localProvider = "local"

    /// This computer's own output: plays anything the local GStreamer decodes, with absolute volume (RouteMedia's
    /// LocalProvider plays it).
    public static let thisComputer = MediaRoute(provider: localProvider, nativeID: localProvider, name: "This computer", kind: .computer,
                                                capabilities: .all, volumeControl: .absolute, accepts: .anything)

    /// Makes a route; providers call this for each device they reach. `name` comes from the network: it is
    /// cleaned here (no control characters, escape sequences, direction overrides or invisible characters), so
    /// that every list, every match and the JSON of every provider show the same safe name.
    public init(provider: String, nativeID: String, name: String, kind: MediaDevice.Kind, protocolName: String? = nil,
                address: String? = nil, capabilities: MediaDevice.Capabilities, volumeControl: MediaDevice.VolumeControl,
                accepts: MediaAcceptance, maxAudioChannels: Int? = nil, deduplicationIDs: Set<String> = []) {
        self.id = provider + ":" + nativeID
        self.nativeID = nativeID
        self.provider = provider
        self.protocolName = protocolName ?? provider
        self.name = DisplayText.clean(name)
        self.kind = kind
        self.address = address
        self.capabilities = capabilities
        self.volumeControl = volumeControl
        self.accepts = accepts
        self.maxAudioChannels = maxAudioChannels
        self.deduplicationIDs = deduplicationIDs
    }
}

extension MediaRoute {
    /// Whether `--via NAME` names this route: its protocol (`AirPlay`) or its provider (`airplay`), in any case.
    public func isReached(via name: String) -> Bool {
        protocolName.equalsIgnoringCase(name) || provider.equalsIgnoringCase(name)
    }

    /// JSON with the identities in order (a set has none of its own: two runs would print them differently).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(nativeID, forKey: .nativeID)
        try container.encode(provider, forKey: .provider)
        try container.encode(protocolName, forKey: .protocolName)
        try container.encode(name, forKey: .name)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(address, forKey: .address)
        try container.encode(capabilities, forKey: .capabilities)
        try container.encode(volumeControl, forKey: .volumeControl)
        try container.encode(accepts, forKey: .accepts)
        try container.encodeIfPresent(maxAudioChannels, forKey: .maxAudioChannels)
        try container.encode(showsSubtitles, forKey: .showsSubtitles)
        try container.encode(deduplicationIDs.sorted(), forKey: .deduplicationIDs)
    }
}

/// One physical player a person points at: a TV, a speaker, a renderer, or this computer, with one route
/// per provider that reaches it (a TV with Cast and a DLNA renderer has two).
///
/// A value, safe to pass anywhere. `id` is its preferred route's id; `routes` are in the router's provider
/// order, preferred first, and never empty.
public struct MediaDevice: Sendable, Hashable, Codable, Identifiable {
    /// "This computer", with its one route.
    public static let thisComputer = MediaDevice(routes: [MediaRoute.thisComputer])

    /// What sort of thing the device is, for icons and sorting.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case computer, tv, speaker, receiver
        /// Several speakers playing as one (a Cast group).
        case group
        case other
    }

    /// Which media the device can show.
    public struct Capabilities: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let audio = Capabilities(rawValue: 1)
        public static let video = Capabilities(rawValue: 2)
        public static let image = Capabilities(rawValue: 4)
        public static let all: Capabilities = [.audio, .video, .image]
    }

    /// How the device's volume can be changed.
    public enum VolumeControl: String, Sendable, Codable, Comparable {
        /// The volume cannot be changed from here.
        case none
        /// Only up and down steps.
        case relative
        /// A level from 0 to 1.
        case absolute

        private var order: Int { self == .none ? 0 : self == .relative ? 1 : 2 }
        public static func < (a: Self, b: Self) -> Bool { a.order < b.order }
    }

    /// Stable identifier: its preferred route's id.
    public var id: String
    /// The name a person sees and types (`--to "Living Room"`): its preferred route's.
    public var name: String
    public var kind: Kind
    /// Every route to it, preferred first.
    public var routes: [MediaRoute]

    /// A device reached by `routes` (at least one), named after the first.
    public init(routes: [MediaRoute]) {
        precondition(!routes.isEmpty, "a device has at least one route")
        self.routes = routes
        id = routes[0].id
        name = routes[0].name
        kind = routes[0].kind
    }

    /// The preferred route.
    public var primary: MediaRoute { routes[0] }
    /// Every name its routes give it, the preferred route's first, each once: a merged device (a TV's Cast name and
    /// its DLNA friendly name) answers to each of them.
    public var names: [String] {
        var seen = Set<String>()
        return routes.map(\.name).filter { seen.insert($0.lowercased()).inserted }
    }
    /// Its names besides `name`.
    public var otherNames: [String] { Array(names.dropFirst()) }

    /// The same device with `route` first: named and identified as that route shows it (a session observed over
    /// one of its routes is that route's).
    public func preferring(_ route: MediaRoute) -> MediaDevice {
        guard let index = routes.firstIndex(where: { $0.id == route.id }), index > 0 else { return self }
        var reordered = routes
        reordered.remove(at: index)
        reordered.insert(route, at: 0)
        return MediaDevice(routes: reordered)
    }
    /// The protocols that reach it, in order of preference, each once.
    public var protocols: [String] {
        var seen = Set<String>()
        return routes.map(\.protocolName).filter { seen.insert($0).inserted }
    }
    /// The preferred route's address.
    public var address: String? { primary.address }
    /// What any route can show.
    public var capabilities: Capabilities { routes.reduce([]) { $0.union($1.capabilities) } }
    /// The best volume control any route has.
    public var volumeControl: VolumeControl { routes.map(\.volumeControl).max() ?? .none }
    /// Every identity its routes assert.
    public var deduplicationIDs: Set<String> { routes.reduce(into: []) { $0.formUnion($1.deduplicationIDs) } }

    /// The route of `provider`, if it reaches the device.
    public func route(of provider: String) -> MediaRoute? { routes.first { $0.provider == provider || $0.protocolName == provider } }

    private enum CodingKeys: String, CodingKey { case id, name, names, kind, routes }

    /// JSON: id, name, its other names (`names`, every name with `name` first), kind and routes.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(names, forKey: .names)
        try container.encode(kind, forKey: .kind)
        try container.encode(routes, forKey: .routes)
    }

    /// Reads what `encode(to:)` wrote (`names` follows from the routes).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        kind = try container.decode(Kind.self, forKey: .kind)
        routes = try container.decode([MediaRoute].self, forKey: .routes)
    }
}

/// The media formats a device takes, as MIME types (what DLNA's GetProtocolInfo or Cast's docs list).
public enum MediaAcceptance: Sendable, Hashable, Codable {
    /// Anything the local GStreamer installation can decode.
    case anything
    /// Only these MIME types (`audio/mpeg`, `video/mp4`, …), compared without parameters.
    case mimeTypes([String])

    /// Whether a file of this MIME type can be sent as it is. Types compare without parameters,
    /// case-insensitively, with common aliases (`audio/wav` = `audio/x-wav`, `audio/mp3` = `audio/mpeg`, …)
    /// and wildcards (`*/*`, `audio/*`).
    public func accepts(mimeType: String) -> Bool {
        switch self {
        case .anything:
            return true
        case .mimeTypes(let types):
            let wanted = Self.canonical(mimeType)
            let family = wanted.split(separator: "/").first.map { $0 + "/*" } ?? ""
            return types.contains {
                let offered = Self.canonical($0)
                return offered == wanted || offered == "*" || offered == "*/*" || offered == family
            }
        }
    }

    /// Spellings of one format that devices and GStreamer use interchangeably, mapped to one. Learned from
    /// what renderers list in GetProtocolInfo: gmediarender (GStreamer's names: `video/quicktime`,
    /// `video/mpegts`, `audio/x-flac`), Rygel, Kodi, Samsung (`video/x-mkv`, `video/vnd.dlna.mpeg-tts`,
    /// `audio/x-ms-wma`) and LG (`video/x-matroska`, `audio/vnd.dlna.adts`) TVs.
    private static let aliases: [String: String] = [
        // WAV
        "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav", "audio/x-pn-wav": "audio/wav",
        // MP3
        "audio/mp3": "audio/mpeg", "audio/x-mp3": "audio/mpeg", "audio/mpeg3": "audio/mpeg", "audio/x-mpeg": "audio/mpeg",
        "audio/mpg": "audio/mpeg", "audio/x-mpeg-3": "audio/mpeg",
        // FLAC, AAC, MP4 audio, AIFF, Ogg, WMA, AC-3
        "audio/x-flac": "audio/flac", "audio/x-aac": "audio/aac", "audio/aacp": "audio/aac", "audio/vnd.dlna.adts": "audio/aac",
        "audio/aac-adts": "audio/aac", "audio/x-hx-aac-adts": "audio/aac",
        "audio/x-m4a": "audio/mp4", "audio/m4a": "audio/mp4", "audio/x-aiff": "audio/aiff",
        "application/ogg": "audio/ogg", "audio/x-ogg": "audio/ogg", "audio/x-vorbis+ogg": "audio/ogg", "audio/vorbis": "audio/ogg",
        "audio/x-vorbis": "audio/ogg", "audio/wma": "audio/x-ms-wma", "audio/x-ac3": "audio/ac3", "audio/vnd.dolby.dd-raw": "audio/ac3",
        // Matroska, AVI
        "video/x-mkv": "video/x-matroska", "video/mkv": "video/x-matroska", "video/matroska": "video/x-matroska",
        "video/avi": "video/x-msvideo", "video/msvideo": "video/x-msvideo", "video/x-avi": "video/x-msvideo",
        // MPEG transport streams
        "video/mpeg2ts": "video/mp2t", "video/vnd.dlna.mpeg-tts": "video/mp2t", "video/mpegts": "video/mp2t",
        "video/mp2ts": "video/mp2t", "video/x-mpegts": "video/mp2t", "video/x-mpeg-ts": "video/mp2t",
        // MP4 (a renderer built on GStreamer lists QuickTime, whose demuxer plays MP4)
        "video/x-mp4": "video/mp4", "video/quicktime": "video/mp4", "video/x-m4v": "video/mp4", "video/m4v": "video/mp4",
        // MPEG program streams, WMV, FLV, JPEG
        "video/mpeg2": "video/mpeg", "video/x-mpeg": "video/mpeg", "video/mpg": "video/mpeg", "video/x-mpeg2": "video/mpeg",
        "video/wmv": "video/x-ms-wmv", "video/flv": "video/x-flv", "image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg",
    ]

    /// The device's own spelling of a type it accepts (`video/quicktime` for a file route calls
    /// `video/mp4`), for what route tells it: some devices compare the text of the type.
    public func spelling(of mimeType: String) -> String {
        guard case .mimeTypes(let types) = self else { return mimeType }
        let wanted = Self.canonical(mimeType)
        return types.first { Self.canonical($0) == wanted } ?? mimeType
    }

    /// JSON: `"anything"`, or the array of MIME types.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let types = try? container.decode([String].self) { self = .mimeTypes(types); return }
        guard try container.decode(String.self) == "anything" else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected \"anything\" or an array of MIME types")
        }
        self = .anything
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .anything: try container.encode("anything")
        case .mimeTypes(let types): try container.encode(types)
        }
    }

    private static func canonical(_ type: String) -> String {
        let bare = bare(type)
        return aliases[bare] ?? bare
    }

    /// Whether any accepted type is one of these.
    public func acceptsAny(of mimeTypes: [String]) -> Bool {
        mimeTypes.contains { accepts(mimeType: $0) }
    }

    private static func bare(_ type: String) -> String {
        let base = type.split(separator: ";", maxSplits: 1).first.map(String.init) ?? type
        return base.trimmingSpaces.lowercased()
    }
}
