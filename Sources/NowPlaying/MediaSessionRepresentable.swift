// The model an app gives NowPlaying: what plays (content), how far it is (a playback snapshot), and what a
// desktop may ask of it (commands); a remote session adds the devices it plays on and their state.

import Foundation
import Observation
import RouteCore

/// Where playback is: whether it moves, from where, how fast, and since when.
public struct PlaybackSnapshot: Sendable, Hashable {
    public var isPlaying: Bool
    /// Seconds into the item at `timestamp`.
    public var elapsed: Double
    /// How fast `elapsed` moves while playing (1: normal speed).
    public var rate: Double
    /// When `elapsed` was true.
    public var timestamp: Date

    /// A snapshot, true now unless told when.
    public init(isPlaying: Bool, elapsed: Double, rate: Double = 1, timestamp: Date = Date()) {
        self.isPlaying = isPlaying
        self.elapsed = elapsed
        self.rate = rate
        self.timestamp = timestamp
    }

    /// Nothing playing, at the start.
    public static let paused = PlaybackSnapshot(isPlaying: false, elapsed: 0, timestamp: .distantPast)

    /// The elapsed time at `date`, extrapolated while playing.
    public func elapsed(at date: Date) -> Double {
        guard isPlaying else { return elapsed }
        return max(0, elapsed + max(0, date.timeIntervalSince(timestamp)) * rate)
    }
}

/// A command a desktop may send: a closure, and whether it is offered now.
public struct MediaCommand<Argument: Sendable>: Sendable {
    /// Whether the command is offered (a desktop greys out one that is not); a command without a closure
    /// (`.disabled`) is never offered.
    public var isEnabled: Bool {
        get { enabled && handler != nil }
        set { enabled = newValue }
    }
    private var enabled: Bool
    private let handler: (@Sendable (Argument) async throws -> Void)?

    /// An enabled command that runs `handler`.
    public init(_ handler: @escaping @Sendable (Argument) async throws -> Void) {
        self.handler = handler
        enabled = true
    }

    private init(disabled: Void) {
        handler = nil
        enabled = false
    }

    /// A command that is not offered.
    public static var disabled: MediaCommand { MediaCommand(disabled: ()) }

    /// Runs the command; does nothing when it is not enabled.
    public func callAsFunction(_ argument: Argument) async throws {
        guard isEnabled, let handler else { return }
        try await handler(argument)
    }
}

extension MediaCommand where Argument == Void {
    /// Runs the command; does nothing when it is not enabled.
    public func callAsFunction() async throws { try await callAsFunction(()) }
}

/// Skipping forward or backward by an interval (seconds), with the intervals a display should offer.
public struct SkipCommand: Sendable {
    public var preferredIntervals: [Double]
    public var command: MediaCommand<Double>
    /// A skip command offering `preferredIntervals` (the first is the default).
    public init(preferredIntervals: [Double] = [10], _ command: MediaCommand<Double>) {
        self.preferredIntervals = preferredIntervals
        self.command = command
    }
    /// Not offered.
    public static var disabled: SkipCommand { SkipCommand(.disabled) }
}

/// Everything a desktop may ask of a session. Each command can be disabled (no seek on a live stream, no
/// next on the last item).
public struct MediaCommands: Sendable {
    public var play: MediaCommand<Void> = .disabled
    public var pause: MediaCommand<Void> = .disabled
    public var togglePlayPause: MediaCommand<Void> = .disabled
    public var stop: MediaCommand<Void> = .disabled
    public var next: MediaCommand<Void> = .disabled
    public var previous: MediaCommand<Void> = .disabled
    public var skipForward: SkipCommand = .disabled
    public var skipBackward: SkipCommand = .disabled
    /// Seeks to a position, in seconds from the start.
    public var seek: MediaCommand<Double> = .disabled
    /// Sets the volume, from 0 to 1.
    public var changeVolume: MediaCommand<Double> = .disabled
    /// Brings up what the session's app shows (MPRIS's Raise): for a cast, where it could move to.
    public var raise: MediaCommand<Void> = .disabled

    /// Commands; every one not given is disabled.
    public init(play: MediaCommand<Void> = .disabled, pause: MediaCommand<Void> = .disabled,
                togglePlayPause: MediaCommand<Void> = .disabled, stop: MediaCommand<Void> = .disabled,
                next: MediaCommand<Void> = .disabled, previous: MediaCommand<Void> = .disabled,
                skipForward: SkipCommand = .disabled, skipBackward: SkipCommand = .disabled,
                seek: MediaCommand<Double> = .disabled, changeVolume: MediaCommand<Double> = .disabled) {
        self.play = play
        self.pause = pause
        self.togglePlayPause = togglePlayPause
        self.stop = stop
        self.next = next
        self.previous = previous
        self.skipForward = skipForward
        self.skipBackward = skipBackward
        self.seek = seek
        self.changeVolume = changeVolume
    }
}

extension MediaCommands {
    /// The commands of a session that takes `SessionCommand`s, each saying one: play, pause, play/pause, stop and
    /// volume; unless it is `live`, also next, skips of 10 s and seek.
    public init(speaking perform: @escaping @Sendable (SessionCommand) async throws -> Void, live: Bool = false) {
        self.init(play: MediaCommand { try await perform(.play) }, pause: MediaCommand { try await perform(.pause) },
                  togglePlayPause: MediaCommand { try await perform(.togglePause) }, stop: MediaCommand { try await perform(.stop) },
                  changeVolume: MediaCommand { try await perform(.setVolume($0)) })
        guard !live else { return }
        next = MediaCommand { try await perform(.next) }
        skipForward = SkipCommand(preferredIntervals: [10], MediaCommand { try await perform(.seek(.relative($0))) })
        skipBackward = SkipCommand(preferredIntervals: [10], MediaCommand { try await perform(.seek(.relative(-$0))) })
        seek = MediaCommand { try await perform(.seek(.absolute($0))) }
    }
}

/// A player an app publishes to the desktop. Make it an `@Observable` class: `MediaSession` publishes every
/// change of these properties as it happens.
@MainActor
public protocol MediaSessionRepresentable: AnyObject, Observable, Sendable {
    /// Stable for the whole session (not per item): the desktop's player is named after it.
    var id: String { get }
    /// What plays now; nil before anything does.
    var content: (any MediaContent)? { get }
    var playbackSnapshot: PlaybackSnapshot { get }
    var commands: MediaCommands { get }
    /// The volume from 0 to 1, when known.
    var volume: Double? { get }
    /// The player's name on the desktop (by default the program's).
    var displayName: String { get }
    /// Where it plays, in words, for an item with no artist: a desktop that shows a title and an artist only (GNOME's
    /// media controls) then shows this instead of "Unknown artist". Nil by default.
    var placeName: String? { get }
}

extension MediaSessionRepresentable {
    public var volume: Double? { nil }
    public var displayName: String { ProcessInfo.processInfo.processName }
    public var placeName: String? { nil }
}

/// A session that plays on other devices (a TV, a speaker): its state arrives from them.
@MainActor
public protocol RemoteMediaSessionRepresentable: MediaSessionRepresentable {
    /// The devices playing the session, with how their volume can be controlled.
    var devices: [MediaDevice] { get }
    /// Takes state that arrived from the device.
    func update(_ state: PlaybackStatus)
}

extension RemoteMediaSessionRepresentable {
    /// The device's name, marked as route's: "Living Room TV (route)".
    public var displayName: String {
        (devices.isEmpty ? "route" : devices.map(\.name).joined(separator: " + ")) + " (route)"
    }

    /// "on Living Room TV": said where the artist goes when the item names none.
    public var placeName: String? { devices.isEmpty ? nil : "on " + devices.map(\.name).joined(separator: " + ") }
}
