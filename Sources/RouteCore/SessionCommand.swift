// SessionCommand: the one vocabulary of playback commands. The terminal's keys, MPRIS, the service's session methods,
// `route pause|seek|… --to DEVICE` and a cast's control socket all say one of these to a session, which does it.

/// A command to a playing session.
public enum SessionCommand: Sendable, Hashable, Codable {
    case play, pause, togglePause
    /// Stops the device and ends the session.
    case stop
    /// Skips to the next item (ends the session after the last one).
    case next
    case seek(SeekTarget)
    /// Sets the volume (0…1).
    case setVolume(Double)
    /// Changes the volume by a step (-1…1; the arrow keys' is 0.05).
    case changeVolume(Double)
    case setMuted(Bool)
    case toggleMute

    /// Whether it changes only the volume or mute (not what plays, nor where).
    public var isVolume: Bool {
        switch self {
        case .setVolume, .changeVolume, .setMuted, .toggleMute: true
        default: false
        }
    }

    /// The command `route WORD [VALUE]` says: `play`, `pause`, `stop`, `next`, `seek 90|1:30|+30|-10`,
    /// `volume 0…100`, `mute on|off`.
    /// - Throws: `RouteError` (`badInput`) saying what the word takes, when it is unknown or its value is not one.
    public init(word: String, value: String?) throws(RouteError) {
        switch word {
        case "play": self = .play
        case "pause": self = .pause
        case "stop": self = .stop
        case "next": self = .next
        case "seek":
            guard let target = SeekTarget(parsing: value ?? "") else {
                throw RouteError(.badInput, "\"\(value ?? "")\" is not a position; use 90, 1:30, +30 or -10")
            }
            self = .seek(target)
        case "volume":
            guard let level = Double(value ?? ""), (0...100).contains(level) else {
                throw RouteError(.badInput, "volume takes a level from 0 to 100, not \"\(value ?? "")\"")
            }
            self = .setVolume(level / 100)
        case "mute":
            guard let value, ["on", "off"].contains(value) else {
                throw RouteError(.badInput, "mute takes on or off, not \"\(value ?? "")\"")
            }
            self = .setMuted(value == "on")
        default:
            throw RouteError(.badInput, "\"\(word)\" is not a command a cast takes (play, pause, stop, next, seek, volume, mute)")
        }
    }

    /// The word `route WORD` says the command with (a toggle or a step by its word: `pause`, `volume`, `mute`).
    public var word: String {
        switch self {
        case .play: "play"
        case .pause, .togglePause: "pause"
        case .stop: "stop"
        case .next: "next"
        case .seek: "seek"
        case .setVolume, .changeVolume: "volume"
        case .setMuted, .toggleMute: "mute"
        }
    }
}

/// What takes session commands: a session playing in this process, one the route service plays, a cast that moves.
public protocol SessionCommandTaker: Sendable {
    /// Does `command`.
    /// - Throws: `RouteError` when the device refuses it or cannot be reached.
    func perform(_ command: SessionCommand) async throws
}

/// What also takes a command for one of its devices alone: a group's cast (a member's volume and mute).
public protocol MemberCommandTaker: SessionCommandTaker {
    /// Does `command` on the member playing on `device` alone.
    /// - Throws: `RouteError` when the command acts on the whole group, `device` does not play in it, or the device
    ///   refuses it.
    func perform(_ command: SessionCommand, on device: MediaDevice) async throws
}

extension QueueSession: SessionCommandTaker {
    public func perform(_ command: SessionCommand) async throws {
        switch command {
        case .play: try await play()
        case .pause: try await pause()
        case .togglePause: try await togglePause()
        case .stop: try await stop()
        case .next: try await next()
        case .seek(let target): try await seek(target)
        case .setVolume(let level): try await setVolume(level)
        case .changeVolume(let step): try await changeVolume(by: step)
        case .setMuted(let muted): try await setMuted(muted)
        case .toggleMute: try await toggleMute()
        }
    }
}
