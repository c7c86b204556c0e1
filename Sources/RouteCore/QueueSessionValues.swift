// QueueSessionValues: what a queue session is given (its Options, a PlayCue for playing together with others) and
// what it says (QueueStatus).

import FoundationEssentials

/// What a cast is doing: which item of how many, over which route, and the device's latest status.
public struct QueueStatus: Sendable, Hashable, Codable {
    public var device: MediaDevice
    /// The route playing the current item.
    public var route: MediaRoute
    /// Index of the current item in the queue.
    public var index: Int
    public var count: Int
    public var title: String
    public var playback: PlaybackStatus

    /// A status of the queue's item `index` of `count`.
    public init(device: MediaDevice, route: MediaRoute, index: Int, count: Int, title: String, playback: PlaybackStatus) {
        self.device = device
        self.route = route
        self.index = index
        self.count = count
        self.title = title
        self.playback = playback
    }
}

extension QueueSession {
    /// How the session paces the queue.
    public struct Options: Sendable {
        /// How long an item may take from being loaded to playing before the cast fails, saying what the
        /// device reported meanwhile.
        public var startTimeout: Duration
        /// How long a picture stays on the device before the queue moves on (devices never end them).
        public var imageDuration: Duration
        /// Hears about an item that could not be prepared and was skipped (after the first item has
        /// been prepared: a first item that fails ends the cast before anything plays).
        public var onSkip: @Sendable (_ index: Int, _ title: String, _ error: any Error) -> Void
        /// What the device has done with a served item (nil when route does not serve it): a device that
        /// says it plays but has not asked for the item within `fetchDeadline`, or asked for one route
        /// could not serve, ends the cast with a line that says so.
        public var access: @Sendable (MediaItem) -> MediaAccess?
        public var fetchDeadline: Duration
        /// Hears, in words, what the session did on its own (a refused item sent again transcoded).
        public var onNotice: @Sendable (String) -> Void = { _ in }
        /// Hears every status as it is published, in order with `onSkip` and `onNotice` (`statusUpdates()` delivers
        /// later, on the reader's task). Called on the session's actor: return at once.
        public var onStatus: @Sendable (QueueStatus) -> Void = { _ in }
        /// How long `stop()` waits for the device to confirm (its final state) before the session ends
        /// without it, saying so through `onNotice`; closing the route afterwards gets as long again. A peer
        /// that answers nothing must not hold a cast that a signal asked to end.
        public var stopDeadline: Duration = .seconds(4)
        /// Whether the queue starts again from its first item after its last (`--loop`).
        public var loops = false
        /// The item the session begins with (0: the first).
        public var firstItem = 0
        /// Where an item starts (seconds in), asked once per item as it first plays: `--start` for the first item, a
        /// remembered position (`--resume`); nil or 0 from the start.
        public var startPosition: @Sendable (_ index: Int) -> Double? = { _ in nil }
        /// Awaited once, with the route it is on, when the first item is loaded on the device (not playing yet) and
        /// before it is played: several devices playing one queue (a group cast) start together, each played on its
        /// cue. Nil from it: it is not played (the cast is stopping). Nil: the first item plays as it loads.
        public var beforeFirstPlay: (@Sendable (MediaRoute) async -> PlayCue?)?

        /// Options; by default 20 s to start, 5 s a picture, 6 s to fetch.
        public init(startTimeout: Duration = .seconds(20), imageDuration: Duration = .seconds(5),
                    fetchDeadline: Duration = .seconds(6),
                    access: @escaping @Sendable (MediaItem) -> MediaAccess? = { _ in nil },
                    onSkip: @escaping @Sendable (Int, String, any Error) -> Void = { _, _, _ in }) {
            self.startTimeout = startTimeout
            self.imageDuration = imageDuration
            self.fetchDeadline = fetchDeadline
            self.access = access
            self.onSkip = onSkip
        }
    }
}

/// When a device is to play, so that several play together (a group's start, or its play after a pause or a seek):
/// a device that is played when it is told is played at `playAt`, as much before the group's instant as it holds its
/// sound back (`StartDelays`); one that can be told when to play (`RouteController.play(at:)`) is told the instant
/// itself, `soundAt`, less what it holds back beyond its protocol's typical (the reference, gmediarender, is heard within
/// 5 ms of being played: bench/multiroom).
public struct PlayCue: Sendable, Equatable {
    /// When the sound is to be heard (this machine's clock).
    public let soundAt: Date
    /// When to play a device that plays when it is told.
    public let playAt: Date

    /// The cue of a device that holds its sound back `holdsBack` seconds, `beyondProtocol` of them more than its
    /// protocol's typical (`route group delay`), for a group heard from `instant`.
    public init(at instant: Date, holdsBack: Double, beyondProtocol: Double = 0) {
        soundAt = instant.addingTimeInterval(-beyondProtocol)
        playAt = instant.addingTimeInterval(-holdsBack)
    }

    /// Plays `controller` on this cue: told the instant when it can be, else played at `playAt` (at once when that
    /// has passed) unless `cancelled` says so by then.
    /// - Throws: the device's error; `CancellationError` when cancelled while it waits.
    public func play(_ controller: any RouteController, unless cancelled: @Sendable () async -> Bool) async throws {
        if try await controller.play(at: soundAt) { return }
        let wait = playAt.timeIntervalSinceNow
        if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
        if await cancelled() { return }
        try await controller.play()
    }
}
