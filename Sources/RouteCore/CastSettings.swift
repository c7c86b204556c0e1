// CastSettings: how a cast plays its queue (start timeout, picture time, a forced route, subtitles), and QueueEvent:
// what a playing queue says, in order — shared by route's terminal, its service and their clients.

import FoundationEssentials

/// How a cast plays its queue.
public struct CastSettings: Sendable {
    /// How long a device may take to start an item.
    public var startTimeout: Duration
    /// How long a picture shows before the queue moves on.
    public var imageDuration: Duration
    /// The protocol or provider every item must go over, when one is forced.
    public var via: String?
    /// Which subtitles go with videos.
    public var subtitles: Subtitles
    /// Whether the queue starts again after its last item (`--loop`).
    public var loops = false
    /// The queue's item the cast begins with (0: the first); earlier ones are not played (a session moved to
    /// another device goes on there from the item it was playing).
    public var firstItem = 0
    /// Where the item the cast begins with starts, in seconds (`--start`).
    public var start: Double?
    /// Whether each item starts where it last stopped (`--resume`).
    public var resumes = false

    /// Settings; by default 20 s to start, 5 s a picture, any route, subtitles found beside or inside the file.
    public init(startTimeout: Duration = .seconds(20), imageDuration: Duration = .seconds(5), via: String? = nil,
                subtitles: Subtitles = .automatic) {
        self.startTimeout = startTimeout
        self.imageDuration = imageDuration
        self.via = via
        self.subtitles = subtitles
    }
}

/// Which subtitles go with a video.
public enum Subtitles: Sendable, Equatable {
    /// A `.srt` or `.vtt` beside the file with its base name, else a text stream inside the file.
    case automatic
    /// This file (`--subtitles`).
    case file(String)
    /// None (`--no-subtitles`).
    case off
}

/// What a queue's session says: a status, or in words what it did on its own (a file skipped, an item sent again
/// converted), in the order they happened.
public enum QueueEvent: Sendable {
    case status(QueueStatus)
    case notice(String)
}
