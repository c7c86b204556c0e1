// MediaDevice: what the router knows about one player, whichever protocol found it.

import Foundation

/// One player the router can cast to: a TV, a speaker, a renderer, or this computer.
///
/// A value, safe to pass anywhere. `id` is stable across runs for the same physical device
/// (a UPnP UDN, a Cast id, or a fixed name for local output); `deduplicationIDs` let the router
/// merge one device seen through several protocols.
public struct MediaDevice: Sendable, Hashable, Codable, Identifiable {
    /// What sort of thing the device is, for icons and sorting.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case computer, tv, speaker, receiver, other
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
    public enum VolumeControl: String, Sendable, Codable {
        /// The volume cannot be changed from here.
        case none
        /// Only up and down steps.
        case relative
        /// A level from 0 to 1.
        case absolute
    }

    /// Stable identifier: the same device has the same id across runs.
    public var id: String
    /// The name a person sees and types (`--to "Living Room"`).
    public var name: String
    /// What sort of device it is.
    public var kind: Kind
    /// The provider that speaks to it: `local`, `upnp`, `cast`, or a plugin's name.
    public var protocolName: String
    /// Where it is on the network (`10.0.0.5:8009`, a description URL), or nil for local output.
    public var address: String?
    /// Which media it can show.
    public var capabilities: Capabilities
    /// How its volume can be changed.
    public var volumeControl: VolumeControl
    /// The media it accepts, or `.anything` when it decodes whatever GStreamer can.
    public var accepts: MediaAcceptance
    /// Ids that name the same physical device in other protocols (UPnP UDN, Cast id, IP address).
    public var deduplicationIDs: Set<String>

    /// Makes a device description; providers call this for each device they find.
    public init(
        id: String, name: String, kind: Kind, protocolName: String, address: String? = nil,
        capabilities: Capabilities, volumeControl: VolumeControl, accepts: MediaAcceptance,
        deduplicationIDs: Set<String> = []
    ) {
        self.id = id
        self.name = name
        self.kind = kind
        self.protocolName = protocolName
        self.address = address
        self.capabilities = capabilities
        self.volumeControl = volumeControl
        self.accepts = accepts
        self.deduplicationIDs = deduplicationIDs
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
        return base.trimmingCharacters(in: .whitespaces).lowercased()
    }
}
