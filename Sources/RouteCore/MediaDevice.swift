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

    /// Whether a file of this MIME type can be sent as it is.
    public func accepts(mimeType: String) -> Bool {
        switch self {
        case .anything:
            return true
        case .mimeTypes(let types):
            let wanted = Self.bare(mimeType)
            return types.contains { Self.bare($0) == wanted || Self.bare($0) == "*" || Self.bare($0) == "*/*" }
        }
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
