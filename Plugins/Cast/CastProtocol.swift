// CastProtocol: the namespaces and JSON messages of Cast v2 that route speaks — connection, heartbeat,
// receiver and media — as Swift values, decoded leniently (a receiver may add fields; missing ones are nil).

import Foundation
import RouteCore

/// The namespaces route uses, and the ids of the two ends.
enum CastNamespace {
    static let connection = "urn:x-cast:com.google.cast.tp.connection"
    static let heartbeat = "urn:x-cast:com.google.cast.tp.heartbeat"
    static let receiver = "urn:x-cast:com.google.cast.receiver"
    static let media = "urn:x-cast:com.google.cast.media"
    /// What route reads; a message on any other namespace is logged and ignored (receivers also speak
    /// device authentication, multizone and app namespaces).
    static let known: Set<String> = [connection, heartbeat, receiver, media]

    static let receiverID = "receiver-0"
    /// The Default Media Receiver: plays a URL it is given.
    static let defaultMediaReceiver = "CC1AD845"
}

/// The type and request id every JSON payload carries.
struct CastEnvelope: Decodable {
    var type: String?
    /// 0 or absent for unsolicited messages.
    var requestId: Int?
}

/// A receiver's volume (each field read leniently).
struct CastVolume: Decodable, Sendable, Equatable {
    var level: Double?
    var muted: Bool?
    /// `attenuation`, `master` or `fixed` (a fixed one cannot be set).
    var controlType: String?
    var stepInterval: Double?

    private enum Keys: String, CodingKey { case level, muted, controlType, stepInterval }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        level = container.lenient(.level)
        muted = container.lenient(.muted)
        controlType = container.lenient(.controlType)
        stepInterval = container.lenient(.stepInterval)
    }
}

/// RECEIVER_STATUS: the running application and the volume.
struct ReceiverStatus: Decodable, Sendable, Equatable {
    struct Application: Decodable, Sendable, Equatable {
        var appId: String?
        var sessionId: String?
        var transportId: String?
        var displayName: String?
        /// The names of the namespaces the app speaks (from `namespaces: [{"name": …}]`).
        var namespaces: [String]?
        /// Whether the app plays media a sender can control (it speaks the media namespace).
        var playsMedia: Bool { transportId != nil && (namespaces ?? []).contains(CastNamespace.media) }

        private enum Keys: String, CodingKey { case appId, sessionId, transportId, displayName, namespaces }

        /// Field by field: one of another sender's apps with an odd field must not cost the whole status.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            appId = container.lenientString(.appId)
            sessionId = container.lenientString(.sessionId)
            transportId = container.lenientString(.transportId)
            displayName = container.lenientString(.displayName)
            namespaces = (try? container.decodeIfPresent([LenientNamespace].self, forKey: .namespaces))?.compactMap(\.name)
        }

        private struct LenientNamespace: Decodable {
            var name: String?
            init(from decoder: any Decoder) throws {
                name = (try? decoder.container(keyedBy: Keys.self))?.lenientString(.name)
            }
            private enum Keys: String, CodingKey { case name }
        }
    }
    var applications: [Application]?
    var volume: CastVolume?

    private enum Keys: String, CodingKey { case applications, volume }
    /// Leniently: an application that is not one, or a volume of another type, costs only itself.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        applications = (container.lenient(.applications) as [Lenient<Application>]?)?.compactMap(\.value)
        volume = container.lenient(.volume)
    }

    private struct Message: Decodable { var status: ReceiverStatus }
    /// The status in a RECEIVER_STATUS payload.
    static func decode(_ payload: String) -> ReceiverStatus? {
        try? JSONDecoder().decode(Message.self, from: Data(payload.utf8)).status
    }
}

/// One media session in MEDIA_STATUS. Every field but `mediaSessionId` is read leniently: a receiver's (or another
/// sender's) field of an unexpected type is left out, and the rest of the status still counts.
struct MediaSessionStatus: Decodable, Sendable, Equatable {
    struct Media: Decodable, Sendable, Equatable {
        var contentId: String?
        var contentType: String?
        var duration: Double?
        var metadata: Metadata?

        private enum Keys: String, CodingKey { case contentId, contentType, duration, metadata }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            contentId = container.lenient(.contentId)
            contentType = container.lenient(.contentType)
            duration = container.lenient(.duration)
            metadata = container.lenient(.metadata)
        }
        /// What the sender says of the media (any of its metadata types); a field of another type is left out,
        /// never the status with it.
        struct Metadata: Decodable, Sendable, Equatable {
            var title: String?
            var subtitle: String?
            var artist: String?
            var albumName: String?
            var seriesTitle: String?

            private enum Keys: String, CodingKey { case title, subtitle, artist, albumName, seriesTitle }
            init(from decoder: any Decoder) throws {
                let container = try? decoder.container(keyedBy: Keys.self)
                title = container?.lenientString(.title)
                subtitle = container?.lenientString(.subtitle)
                artist = container?.lenientString(.artist)
                albumName = container?.lenientString(.albumName)
                seriesTitle = container?.lenientString(.seriesTitle)
            }
        }
    }
    struct Item: Decodable, Sendable, Equatable {
        var itemId: Int?
        var media: Media?

        private enum Keys: String, CodingKey { case itemId, media }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            itemId = container.lenient(.itemId)
            media = container.lenient(.media)
        }
    }
    var mediaSessionId: Int
    /// IDLE, BUFFERING, LOADING, PLAYING, PAUSED.
    var playerState: String?
    /// With IDLE: FINISHED, CANCELLED, INTERRUPTED, ERROR.
    var idleReason: String?
    var currentTime: Double?
    var playbackRate: Double?
    var media: Media?
    var volume: CastVolume?
    var currentItemId: Int?
    var items: [Item]?
    /// Bit field: 1 pause, 2 seek, 4 stream volume, 8 stream mute.
    var supportedMediaCommands: Int?

    private enum Keys: String, CodingKey {
        case mediaSessionId, playerState, idleReason, currentTime, playbackRate, media, volume, currentItemId, items, supportedMediaCommands
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        mediaSessionId = try container.decode(Int.self, forKey: .mediaSessionId)
        playerState = container.lenient(.playerState)
        idleReason = container.lenient(.idleReason)
        currentTime = container.lenient(.currentTime)
        playbackRate = container.lenient(.playbackRate)
        media = container.lenient(.media)
        volume = container.lenient(.volume)
        currentItemId = container.lenient(.currentItemId)
        // One odd item costs that item.
        items = (container.lenient(.items) as [Lenient<Item>]?)?.compactMap(\.value)
        supportedMediaCommands = container.lenient(.supportedMediaCommands)
    }

    private struct Message: Decodable { var status: [Lenient<MediaSessionStatus>] }
    /// The sessions in a MEDIA_STATUS payload (empty when nothing plays; an entry without a media session id is
    /// left out).
    static func decode(_ payload: String) -> [MediaSessionStatus]? {
        (try? JSONDecoder().decode(Message.self, from: Data(payload.utf8)).status)?.compactMap(\.value)
    }
}

/// An element of a JSON array that may not be one: nil then, instead of failing the array.
struct Lenient<Wrapped: Decodable>: Decodable {
    var value: Wrapped?
    init(from decoder: any Decoder) throws { value = try? Wrapped(from: decoder) }
}

/// The reason in LOAD_FAILED, INVALID_REQUEST, LAUNCH_ERROR and the like.
struct CastFailure: Decodable {
    var type: String?
    var reason: String?
    var detailedErrorCode: Int?

    /// Words for it: `LOAD_FAILED`, `LAUNCH_ERROR (NOT_FOUND)`.
    var summary: String {
        [type ?? "an error", reason.map { "(\($0))" }, detailedErrorCode.map { "code \($0)" }].compactMap { $0 }.joined(separator: " ")
    }
}

/// JSON text for an outgoing payload.
enum CastJSON {
    /// Serialises a payload built of strings, numbers, booleans, arrays and dictionaries.
    static func text(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
              let text = String(data: data, encoding: .utf8) else { return "{}" }
        return text
    }

    /// The CONNECT that opens a virtual connection (to `receiver-0` or an app's transport).
    static func connect() -> [String: Any] { ["type": "CONNECT", "origin": [String: Any](), "userAgent": "route"] }
}

/// The status decoders, for the fuzz target (their types stay internal).
package enum CastStatuses {
    /// Whether `payload` decodes as RECEIVER_STATUS, and its application count.
    package static func receiver(_ payload: String) -> Int? { ReceiverStatus.decode(payload).map { $0.applications?.count ?? 0 } }
    /// Whether `payload` decodes as MEDIA_STATUS, and its session count.
    package static func media(_ payload: String) -> Int? { MediaSessionStatus.decode(payload)?.count }
    /// What route takes of each session in a MEDIA_STATUS payload (its numbers checked as they enter).
    package static func playback(_ payload: String) -> [PlaybackStatus] {
        (MediaSessionStatus.decode(payload) ?? []).map { session in
            var status = PlaybackStatus(state: .playing)
            CastController.take(session, into: &status, app: nil)
            return status
        }
    }
    /// The words route makes of a failure reply (LOAD_FAILED, INVALID_REQUEST, LAUNCH_ERROR).
    package static func failure(_ payload: String) -> String { CastReply(type: "LOAD_FAILED", payload: payload).failure }
}

extension KeyedDecodingContainer {
    /// The string at `key`; nil when it is absent or of another type (another sender's fields can be anything).
    func lenientString(_ key: Key) -> String? { lenient(key) }

    /// The value at `key`; nil when it is absent or of another type: one mistyped field costs that field, never
    /// the status it came in.
    func lenient<Value: Decodable>(_ key: Key) -> Value? { (try? decodeIfPresent(Value.self, forKey: key)) ?? nil }
}
