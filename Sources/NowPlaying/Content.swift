// Content: what a media session plays — title, who made it, audio or video, how long, and artwork loaded
// only when someone shows it.

import Foundation
import RouteCore

/// Whether an item is heard or watched.
public enum MediaKind: String, Sendable, Hashable {
    case audio
    case video
}

/// How long an item lasts.
public enum MediaDuration: Sendable, Hashable {
    /// A known length, in seconds.
    case finite(Double)
    /// A stream with no end and no known length, that can be paused (an internet radio).
    case continuous
    /// A live broadcast: it cannot be seeked.
    case live

    /// The length in seconds, when it is finite and positive.
    public var seconds: Double? {
        if case .finite(let seconds) = self, seconds.isFinite, seconds > 0 { return seconds }
        return nil
    }
}

/// The size artwork is wanted at, in pixels.
public struct ArtworkSize: Sendable, Hashable {
    public var width: Int
    public var height: Int
    /// A size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// An encoded picture (PNG, JPEG) and its MIME type.
public struct ArtworkImage: Sendable, Hashable {
    public var data: Data
    public var mimeType: String
    /// A picture.
    public init(data: Data, mimeType: String) {
        self.data = data
        self.mimeType = mimeType
    }
}

/// Cover art, loaded lazily for the size a display asks for, or a picture on the web the desktop fetches itself.
public struct Artwork: Sendable {
    /// Names the picture: the same id is not loaded twice.
    public var id: String
    /// An http(s) URL the desktop is given as it is (nothing is loaded here).
    public private(set) var url: String?
    private let load: @Sendable (ArtworkSize) async throws -> ArtworkImage?

    /// Artwork `id`, produced by `load` when it is first shown.
    public init(id: String, load: @escaping @Sendable (ArtworkSize) async throws -> ArtworkImage?) {
        self.id = id
        self.load = load
    }

    /// Artwork of bytes already at hand.
    public init(_ image: ArtworkImage) {
        self.init(id: StableName.of(image.data)) { _ in image }
    }

    /// A picture at an http(s) URL, which the desktop fetches itself (as a device does); nil for any other URL.
    public init?(webURL: String) {
        guard let scheme = URL(string: webURL)?.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        self.init(id: webURL) { _ in nil }
        url = webURL
    }

    /// The picture for `size` (nil when there is none).
    public func image(for size: ArtworkSize) async throws -> ArtworkImage? { try await load(size) }
}

/// What a session plays now. Adopt one of the concrete kinds below, or make your own.
public protocol MediaContent: Sendable {
    /// Stays the same for one item of a queue, and changes with the item (a desktop resets its position
    /// display when it changes).
    var identifier: String { get }
    var title: String { get }
    /// The line under the title: the artist, the show, the episode.
    var subtitle: String? { get }
    /// The people who made it (the first is the subtitle when there is no other).
    var artists: [String] { get }
    var album: String? { get }
    var mediaType: MediaKind { get }
    var duration: MediaDuration { get }
    var artwork: Artwork? { get }
}

extension MediaContent {
    public var artists: [String] { subtitle.map { [$0] } ?? [] }
    public var album: String? { nil }
}

/// Content with nothing but a title and a line under it.
public struct GenericContent: MediaContent {
    public var identifier: String
    public var title: String
    public var subtitle: String?
    public var mediaType: MediaKind
    public var duration: MediaDuration
    public var artwork: Artwork?

    /// Generic content; its identifier is its title unless given.
    public init(title: String, subtitle: String? = nil, mediaType: MediaKind = .audio, duration: MediaDuration = .continuous,
                artwork: Artwork? = nil, identifier: String? = nil) {
        self.identifier = identifier ?? title
        self.title = title
        self.subtitle = subtitle
        self.mediaType = mediaType
        self.duration = duration
        self.artwork = artwork
    }
}

/// A song.
public struct MusicContent: MediaContent {
    public var identifier: String
    public var title: String
    public var artist: String?
    public var album: String?
    public var duration: MediaDuration
    public var artwork: Artwork?
    public var subtitle: String? { artist }
    public var artists: [String] { artist.map { [$0] } ?? [] }
    public var mediaType: MediaKind { .audio }

    /// A song; its identifier is its title unless given.
    public init(title: String, artist: String? = nil, album: String? = nil, duration: MediaDuration = .continuous,
                artwork: Artwork? = nil, identifier: String? = nil) {
        self.identifier = identifier ?? title
        self.title = title
        self.artist = artist
        self.album = album
        self.duration = duration
        self.artwork = artwork
    }
}

/// An episode of a podcast.
public struct PodcastContent: MediaContent {
    public var identifier: String
    public var title: String
    /// The show the episode belongs to (shown as its album and under its title).
    public var show: String?
    public var host: String?
    public var mediaType: MediaKind
    public var duration: MediaDuration
    public var artwork: Artwork?
    public var subtitle: String? { show }
    public var artists: [String] { host.map { [$0] } ?? [] }
    public var album: String? { show }

    /// An episode; its identifier is its title unless given.
    public init(title: String, show: String? = nil, host: String? = nil, mediaType: MediaKind = .audio,
                duration: MediaDuration = .continuous, artwork: Artwork? = nil, identifier: String? = nil) {
        self.identifier = identifier ?? title
        self.title = title
        self.show = show
        self.host = host
        self.mediaType = mediaType
        self.duration = duration
        self.artwork = artwork
    }
}

/// A film or any other video.
public struct MovieContent: MediaContent {
    public var identifier: String
    public var title: String
    public var subtitle: String?
    public var duration: MediaDuration
    public var artwork: Artwork?
    public var mediaType: MediaKind { .video }

    /// A video; its identifier is its title unless given.
    public init(title: String, subtitle: String? = nil, duration: MediaDuration = .continuous, artwork: Artwork? = nil,
                identifier: String? = nil) {
        self.identifier = identifier ?? title
        self.title = title
        self.subtitle = subtitle
        self.duration = duration
        self.artwork = artwork
    }
}
