// Playback vocabulary: what a device is doing, what to play on it, and where to seek.

import FoundationEssentials

/// What a device is doing right now, as reported by its controller.
public struct PlaybackStatus: Sendable, Hashable, Codable {
    /// The transport state.
    public enum State: String, Sendable, Codable {
        /// Nothing loaded.
        case idle
        /// Loading or buffering.
        case loading
        case playing
        case paused
        /// Stopped by a command.
        case stopped
        /// The item played to its natural end.
        case ended
        /// Playback failed; `error` says why.
        case failed
    }

    public var state: State {
        didSet { if !isFinal { reason = nil } }
    }
    /// Seconds from the start of the item.
    public var position: Double
    /// Seconds, or nil when unknown or live.
    public var duration: Double?
    /// From 0 to 1, or nil when unknown.
    public var volume: Double?
    /// Whether the output is muted, when known.
    public var muted: Bool?
    /// The item's title, if known.
    public var title: String?
    /// The item's artist and album, when the device says (metadata of a session another controller started).
    public var artist: String?
    public var album: String?
    /// What went wrong, when `state == .failed`.
    public var error: String?
    /// The URL of the item the device is playing (changes when it moves on to a queued next item).
    public var itemURL: String?
    /// The device's own word for its state (`TRANSITIONING`, `NO_MEDIA_PRESENT`, `BUFFERING`), for messages
    /// that say what a device did.
    public var deviceState: String?
    /// The device's id for the session playing (a Cast mediaSessionId), or one the route makes up: the same
    /// for as long as one controller plays one queue there, new when someone else's session replaces it.
    public var sessionID: String?
    /// The device's or the route's id for the item playing.
    public var itemID: String?
    /// When `position` was true.
    public var timestamp: Date
    /// How fast the device plays when it plays (1: normal speed).
    public var speed: Double = 1
    /// The speeds route believes a device reports (a 1/100 slow motion to 16 times fast forward); any other
    /// number from outside is not taken.
    public static let speeds: ClosedRange<Double> = 0.01...16
    /// How fast the position moves from `timestamp`: `speed` while playing, 0 otherwise.
    public var rate: Double { state == .playing ? speed : 0 }
    /// Why the item ended: nil until `isFinal`; by default what the state says (ended: finished, stopped:
    /// stopped here, failed: a device error), or what the controller knew better.
    public var endReason: EndReason? {
        get {
            guard isFinal else { return nil }
            return reason ?? (state == .ended ? .finished : state == .stopped ? .stopped : .deviceError)
        }
        set { reason = newValue }
    }
    private var reason: EndReason?
    /// What the device lets a controller do now.
    public var allowed: Commands

    /// Why an item stopped playing.
    public enum EndReason: String, Sendable, Codable {
        /// It played to its end.
        case finished
        /// Someone here stopped it (a command through this controller).
        case stopped
        /// Another controller took the device over (loaded something else, or stopped it).
        case replaced
        /// The device reported an error.
        case deviceError
        /// The device could not play the media it was sent (its format): a converted stream may play.
        case unplayable
        /// The device stopped answering or left the network.
        case deviceGone
    }

    /// The commands a device accepts at the moment.
    public struct Commands: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let pause = Commands(rawValue: 1)
        public static let seek = Commands(rawValue: 2)
        public static let volume = Commands(rawValue: 4)
        public static let all: Commands = [.pause, .seek, .volume]
    }

    /// Makes a status report, true now, with the rate of its state.
    public init(state: State, position: Double = 0, duration: Double? = nil, volume: Double? = nil,
                title: String? = nil, error: String? = nil) {
        self.state = state
        self.position = position
        self.duration = duration
        self.volume = volume
        self.title = title
        self.error = error
        timestamp = Date()
        allowed = .all
    }

    /// Whether this state ends the item (no more reports will follow for it).
    public var isFinal: Bool { state == .ended || state == .stopped || state == .failed }

    /// The position at `date`, extrapolated from `timestamp` at `rate` (never past the duration).
    public func position(at date: Date) -> Double {
        let moved = position + max(0, date.timeIntervalSince(timestamp)) * rate
        return duration.map { min($0, moved) } ?? moved
    }

    /// This status as true at `date`: its position extrapolated there, its timestamp moved there. What every
    /// reader that shows or computes with a position now (a status line, `route status`, a relative seek) uses.
    public func at(_ date: Date) -> PlaybackStatus {
        var copy = self
        copy.position = position(at: date)
        copy.timestamp = date
        return copy
    }

    /// Ends the item in a final `state` for `reason`.
    public mutating func end(_ state: State, because reason: EndReason) {
        self.state = state
        self.reason = reason
    }
}

/// One thing to play: a URL the device can fetch, and metadata for its display.
public struct MediaItem: Sendable, Hashable, Codable {
    /// Where the device fetches the media (an `http://` URL on our server, or `file://` for local output).
    public var url: String
    /// The MIME type of what `url` serves.
    public var mimeType: String
    /// The title, artist and album a device shows: text from a page, a playlist or a file's tags, cleaned of control
    /// and invisible characters wherever it is set (XML forbids most of them, and a device's screen is a terminal too).
    public var title: String? { didSet { title = Self.deviceText(title) } }
    public var artist: String? { didSet { artist = Self.deviceText(artist) } }
    public var album: String? { didSet { album = Self.deviceText(album) } }
    /// Seconds, if known.
    public var duration: Double?
    /// Size in bytes of what `url` serves, if known (unknown while transcoding).
    public var size: UInt64?
    /// A URL of cover art, if any.
    public var artworkURL: String?
    /// Which of audio, video, image this item is.
    public var kind: MediaDevice.Capabilities
    /// Whether `url` is a stream converted on the fly: devices cannot seek in it by bytes, so a seek
    /// reloads it from `url?t=SECONDS`, where the server restarts the conversion.
    public var isConverted: Bool = false
    /// A transcoded stream of the same item, with its MIME type, to load once when the device refuses
    /// `url` (as VLC does after a Cast LOAD_FAILED); nil when `url` is already transcoded.
    public var fallbackURL: String?
    public var fallbackMimeType: String?
    /// A WebVTT text track for the item (subtitles beside the file, chosen, or inside it), for devices
    /// that show text tracks (`MediaRoute.showsSubtitles`).
    public var subtitlesURL: String?
    /// Whether it is a live stream (no length, no seeking): Cast loads it as LIVE, DLNA offers no seek, MPRIS says live.
    public var isLive = false

    /// Whether the device fetches `url` from elsewhere (a URL on the web handed over as it is), not from route's server
    /// or a file: route sees no request for it, and judges by the position whether the device could fetch it.
    public var isFetchedElsewhere = false

    /// The item as its transcoded fallback stream, if it has one.
    public func fallingBack() -> MediaItem? {
        guard let fallbackURL, let fallbackMimeType else { return nil }
        var copy = self
        copy.url = fallbackURL
        copy.mimeType = fallbackMimeType
        copy.size = nil
        copy.isConverted = true
        copy.fallbackURL = nil
        copy.fallbackMimeType = nil
        copy.isFetchedElsewhere = false
        return copy
    }

    /// The same item starting `seconds` in (for a converted stream).
    public func starting(at seconds: Double) -> MediaItem {
        var copy = self
        copy.url += (url.contains("?") ? "&" : "?") + "t=" + fixedPoint(seconds, decimals: 3)
        return copy
    }

    /// Makes an item to load on a device.
    public init(url: String, mimeType: String, title: String? = nil, artist: String? = nil, album: String? = nil,
                duration: Double? = nil, size: UInt64? = nil, artworkURL: String? = nil,
                kind: MediaDevice.Capabilities = .audio) {
        self.url = url
        self.mimeType = mimeType
        self.title = Self.deviceText(title)
        self.artist = Self.deviceText(artist)
        self.album = Self.deviceText(album)
        self.duration = duration
        self.size = size
        self.artworkURL = artworkURL
        self.kind = kind
    }

    /// Text for a device's metadata: no control or invisible characters, at most 256 characters; nil when nothing is left.
    private static func deviceText(_ text: String?) -> String? {
        guard let text else { return nil }
        let clean = DisplayText.clean(text, limit: 256)
        return clean.isEmpty ? nil : clean
    }
}

/// What a device has done with an item route serves it: whether it asked for it at all, and what went
/// wrong serving it. A device that says PLAYING but never asked is not playing (a firewall, a wrong
/// interface); one that asked for a file that is gone will not play it either.
public struct MediaAccess: Sendable, Hashable {
    /// Requests the server answered for the item (any method, any range).
    public var requests: Int
    /// Why serving the item failed, when it did (the file is gone, a conversion failed).
    public var problem: String?
    /// Where the item is served from (`10.0.0.2:41234`), for messages.
    public var servedFrom: String

    /// An access record.
    public init(requests: Int, problem: String? = nil, servedFrom: String) {
        self.requests = requests
        self.problem = problem
        self.servedFrom = servedFrom
    }
}

/// A seek request as a person types it: `90`, `1:30`, `1:02:03` (absolute) or `+30`, `-10` (relative).
public enum SeekTarget: Sendable, Hashable, Codable {
    case absolute(Double)
    case relative(Double)

    /// Parses `90`, `1:30`, `1:02:03.5`, `+30`, `-10`; nil when the text is none of these.
    public init?(parsing text: String) {
        var body = Substring(text.trimmingSpaces)
        var sign: Double? = nil
        if body.first == "+" { sign = 1; body.removeFirst() } else if body.first == "-" { sign = -1; body.removeFirst() }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var seconds = 0.0
        for (index, part) in parts.enumerated() {
            guard let value = Double(part), value >= 0, value.isFinite else { return nil }
            if index > 0, value >= 60 { return nil }
            seconds = seconds * 60 + value
        }
        if let sign { self = .relative(sign * seconds) } else { self = .absolute(seconds) }
    }

    /// The absolute position this target means, from the current position, never below 0
    /// and, when the duration is known, never past it.
    public func resolved(from position: Double, duration: Double?) -> Double {
        let raw: Double
        switch self {
        case .absolute(let s): raw = s
        case .relative(let d): raw = position + d
        }
        var clamped = max(0, raw)
        if let duration, duration > 0 { clamped = min(clamped, duration) }
        return clamped
    }
}

/// Formats seconds as `m:ss` or `h:mm:ss` (anything not finite as 0:00; anything huge saturates).
public func formatClock(_ seconds: Double) -> String {
    let total = Int(saturating: max(0, seconds.isFinite ? seconds : 0))
    let h = total / 3600, m = (total % 3600) / 60, s = total % 60
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return h > 0 ? "\(h):\(two(m)):\(two(s))" : "\(m):\(two(s))"
}
