// APIValues: the values route's D-Bus API carries besides devices and statuses — a cast's, a sink's and a picker's
// options, a mirror, a sink — each Codable, sent and read by DBusCoding alone (the service and its clients share them).

import FoundationEssentials
import RouteCore
import RouteGIO

extension RouteServiceAPI {
    /// Cast's options (DBUS-API.md): what the service does with a cast besides playing it.
    public struct CastOptions: Sendable, Equatable, Codable {
        /// Every item over this protocol (`cast`, `upnp`, `local`) even where another route plays it better.
        public var via: String?
        /// Subtitles for every video: nil for those found beside the file or inside it, `""` for none.
        public var subtitles: String?
        /// Seconds a picture shows (default 5).
        public var imageDuration: Double?
        /// Seconds a device may take to start an item (default 20).
        public var startTimeout: Double?
        /// Whether the session ends (the device stops) when this process leaves the bus; false leaves it playing,
        /// owned by the service.
        public var endsWithClient: Bool
        /// Whether folders inside a folder play too.
        public var recursive = false
        /// Whether the queue plays in random order.
        public var shuffle = false
        /// Whether the queue starts again after its last item.
        public var loop = false
        /// Seconds into the first item where it starts.
        public var start: Double?
        /// Whether each item starts where it stopped last time.
        public var resume = false
        /// More devices (names, ids, addresses or kept groups' names) that play the queue at once with the one named:
        /// a group for this cast (each found as the one named is; one not found fails the cast).
        public var also: [String]?

        /// Options; by default the session ends with this process.
        public init(via: String? = nil, subtitles: String? = nil, imageDuration: Double? = nil, startTimeout: Double? = nil,
                    endsWithClient: Bool = true) {
            self.via = via
            self.subtitles = subtitles
            self.imageDuration = imageDuration
            self.startTimeout = startTimeout
            self.endsWithClient = endsWithClient
        }

        /// Reads the options a client sent: each key of its type and within its range, and no other key.
        /// - Throws: `RouteServiceAPI.OptionError` naming the first option that is not one.
        public init(from decoder: any Decoder) throws {
            let flag = "a boolean"
            let options = try OptionReader(decoder, takes: [
                "via": "a protocol name", "subtitles": "a path or \"\"", "imageDuration": "seconds (a double), more than 0, at most 3600",
                "startTimeout": "seconds (a double) from 1 to 3600",
                "endsWithClient": flag, "recursive": flag, "shuffle": flag, "loop": flag, "resume": flag,
                "start": "seconds (a double), 0 or more", "also": "device names or ids (an array of strings), at most 16",
            ])
            via = try options.value("via")
            subtitles = try options.value("subtitles")
            imageDuration = try options.value("imageDuration") { $0 > 0 && $0 <= 3600 }
            startTimeout = try options.value("startTimeout") { (1...3600).contains($0) }
            endsWithClient = try options.value("endsWithClient") ?? true
            recursive = try options.value("recursive") ?? false
            shuffle = try options.value("shuffle") ?? false
            loop = try options.value("loop") ?? false
            start = try options.value("start") { $0 >= 0 && $0.isFinite }
            resume = try options.value("resume") ?? false
            also = try options.value("also") { (1...16).contains($0.count) && !$0.contains(where: \.isEmpty) }
        }
    }

    /// StartSink's options: how a sink plays (each nil: the service's default).
    public struct SinkOptions: Sendable, Equatable, Codable {
        /// Seconds without sound before the device is stopped (default 30).
        public var idle: Double?
        /// `l16` or `wav`.
        public var format: String?
        /// Only routes of this protocol.
        public var via: String?
        /// `pipewire` or `pulseaudio`.
        public var soundServer: String?
        /// More devices (names, ids, addresses or kept groups' names) that play the sink's sound with the one named: a
        /// group for this sink (each found as the one named is; one not found fails the sink).
        public var also: [String]?

        /// Options; nil means the default.
        public init(idle: Double? = nil, format: String? = nil, via: String? = nil, soundServer: String? = nil) {
            self.idle = idle
            self.format = format
            self.via = via
            self.soundServer = soundServer
        }

        /// Reads the options a client sent: each key of its type and within its range, and no other key.
        /// - Throws: `RouteServiceAPI.OptionError` naming the first option that is not one.
        public init(from decoder: any Decoder) throws {
            let options = try OptionReader(decoder, takes: [
                "idle": "seconds (a double) over 0", "format": "l16 or wav", "via": "a protocol name", "soundServer": "pipewire or pulseaudio",
                "also": "device names or ids (an array of strings), at most 16",
            ])
            idle = try options.value("idle") { $0 > 0 && $0 < 86_400 }
            format = try options.value("format") { ["l16", "wav"].contains($0.lowercased()) }
            via = try options.value("via")
            soundServer = try options.value("soundServer") { ["pipewire", "pulseaudio"].contains($0.lowercased()) }
            also = try options.value("also") { (1...16).contains($0.count) && !$0.contains(where: \.isEmpty) }
        }
    }

    /// PickDevice's options: what the window lists and where it opens.
    public struct PickOptions: Sendable, Equatable, Codable {
        /// `audio`, `video` or `image`: devices that cannot play it are listed but cannot be chosen.
        public var media: String?
        /// The window's title.
        public var title: String?
        /// The window moves a session instead: the one playing on the device this names (`""`: the only or active one).
        public var moveFrom: String?
        /// Where the window opens (X display, Wayland display, X authority file), when not the service's own.
        public var display: String?
        public var waylandDisplay: String?
        public var xauthority: String?

        /// Options; nil means the default.
        public init(media: String? = nil, title: String? = nil, moveFrom: String? = nil) {
            self.media = media
            self.title = title
            self.moveFrom = moveFrom
        }

        /// Reads the options a client sent: each key of its type, and no other key.
        /// - Throws: `RouteServiceAPI.OptionError` naming the first option that is not one.
        public init(from decoder: any Decoder) throws {
            let options = try OptionReader(decoder, takes: [
                "media": "audio, video or image", "title": "a string", "moveFrom": "a device (a string; \"\" for the active cast)",
                "display": "an X display (:0)", "waylandDisplay": "a Wayland display (wayland-0)", "xauthority": "a path",
            ])
            media = try options.value("media") { ["audio", "video", "image"].contains($0) }
            title = try options.value("title")
            moveFrom = try options.value("moveFrom")
            display = try options.value("display")
            waylandDisplay = try options.value("waylandDisplay")
            xauthority = try options.value("xauthority")
        }

        /// Whether the caller said where the window opens (then none of the service's own display is used).
        public var namesADisplay: Bool { display != nil || waylandDisplay != nil || xauthority != nil }
    }

    /// An option a client sent that is not one: an unknown key, or a value of the wrong type or out of range.
    public struct OptionError: Error, CustomStringConvertible {
        /// The option's key.
        public var key: String
        /// What the option takes ("nothing: there is no such option" for an unknown key).
        public var takes: String
        public var description: String { "the option \(key) takes \(takes)" }
    }

    /// `type` read from the options dictionary a method was called with.
    /// - Throws: `DBusError` (InvalidArgs) that says which option is not one, as "METHOD: the option KEY takes …".
    public static func options<T: Decodable>(_ type: T.Type, from options: [String: DBusValue], method: String) throws -> T {
        do {
            return try DBusCoding.decode(type, from: .dictionary(options))
        } catch let error as OptionError {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "\(method): \(error)")
        } catch {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "\(method): the options are not a dictionary of options")
        }
    }

    /// A session another controller plays (a renderer another app started, a Cast receiver a phone casts to), which
    /// the service mirrors on the desktop's media controls as the MPRIS player `player`.
    public struct Mirror: Sendable, Codable {
        public var device: MediaDevice
        public var title: String?
        public var player: String
        /// Whether the mirror has ended (the device stopped, or a cast of route's took it over).
        public var ended: Bool

        /// A mirror of `device`'s session as the MPRIS player `player`.
        public init(device: MediaDevice, title: String?, player: String, ended: Bool) {
            self.device = device
            self.title = title
            self.player = player
            self.ended = ended
        }
    }

    /// A desktop-audio sink the service keeps for a device (StartSink): the sink's name on the sound server, and what
    /// it last said.
    public struct Sink: Sendable, Codable, Equatable {
        /// The device's id and name.
        public var deviceID: String
        public var device: String
        /// The sink's name on the sound server (`route.…`); apps play into it.
        public var sink: String
        /// Whether the device is on the network now (the sink exists only while it is).
        public var present: Bool
        /// The last event (`ready`, `playing`, `stopped`, `device-failed`, …; DesktopAudioEvent's names) and its words.
        public var event: String?
        public var text: String?

        /// A sink of `device`.
        public init(deviceID: String, device: String, sink: String, present: Bool, event: String? = nil, text: String? = nil) {
            self.deviceID = deviceID
            self.device = device
            self.sink = sink
            self.present = present
            self.event = event
            self.text = text
        }
    }

    /// A device playing in a group's session (the session's `Members`), with its own volume and mute.
    public struct SessionMember: Sendable, Codable, Equatable {
        public var device: MediaDevice
        /// How it plays: `playing`, `paused`, … (`loading` until it has said).
        public var state: String
        /// Its own volume, 0–1 (−1 unknown).
        public var volume: Double
        public var muted: Bool

        /// A member on `device` playing as `playback` says (nil: it has not said yet).
        public init(device: MediaDevice, playback: PlaybackStatus?) {
            self.device = device
            state = (playback?.state ?? .loading).rawValue
            volume = playback?.volume ?? -1
            muted = playback?.muted ?? false
        }
    }
}

/// One options dictionary being read: each key of the type asked for and within its range, and no key it does not know.
private struct OptionReader {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private let container: KeyedDecodingContainer<Key>
    private let takes: [String: String]

    /// The options in `decoder`, whose keys are `takes`' (each with what it takes, in words).
    /// - Throws: `OptionError` for a key that is not among them.
    init(_ decoder: any Decoder, takes: [String: String]) throws {
        container = try decoder.container(keyedBy: Key.self)
        self.takes = takes
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { takes[$0] == nil }) {
            throw RouteServiceAPI.OptionError(key: unknown, takes: "nothing: there is no such option")
        }
    }

    /// The option `key`, nil when it was not given.
    /// - Throws: `OptionError` when it is not a `T`, or `valid` says no.
    func value<T: Decodable>(_ key: String, valid: (T) -> Bool = { _ in true }) throws -> T? {
        let refusal = RouteServiceAPI.OptionError(key: key, takes: takes[key] ?? "nothing: there is no such option")
        let value: T?
        do { value = try container.decodeIfPresent(T.self, forKey: Key(stringValue: key)) } catch { throw refusal }
        if let value, !valid(value) { throw refusal }
        return value
    }
}
