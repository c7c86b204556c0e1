// SessionCommandDBus: SessionCommand as the session object's methods say it (Documentation/DBUS-API.md), both ways —
// what RemoteSession sends and what the service takes, written once so that the two cannot drift.

import RouteCore
import RouteGIO

extension SessionCommand {
    /// The session method that says this command, and its arguments.
    public var dbusCall: (method: String, arguments: [DBusValue]) {
        switch self {
        case .play: return ("Play", [])
        case .pause: return ("Pause", [])
        case .togglePause: return ("TogglePause", [])
        case .stop: return ("Stop", [])
        case .next: return ("Next", [])
        case .seek(.absolute(let position)): return ("Seek", [.double(position)])
        case .seek(.relative(let offset)): return ("SeekBy", [.double(offset)])
        case .setVolume(let level): return ("SetVolume", [.double(level)])
        case .changeVolume(let step): return ("ChangeVolume", [.double(step)])
        case .setMuted(let muted): return ("SetMuted", [.boolean(muted)])
        case .toggleMute: return ("ToggleMute", [])
        }
    }

    /// The command a call of the session's `method` says; nil for a method that is no playback command (Detach, Move).
    /// - Throws: `DBusError` InvalidArgs when its argument is missing, not a finite number or out of range.
    public init?(dbusMethod method: String, arguments: [DBusValue]) throws {
        let first = arguments.first?.unwrapped
        func number(_ range: ClosedRange<Double>) throws -> Double {
            guard case .double(let value)? = first, value.isFinite, range.contains(value) else {
                let given = if case .double(let value)? = first { ", not \(value)" } else { "" }
                throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs",
                                "\(method) takes a number from \(range.lowerBound) to \(range.upperBound)\(given)")
            }
            return value
        }
        switch method {
        case "Play": self = .play
        case "Pause": self = .pause
        case "TogglePause": self = .togglePause
        case "Stop": self = .stop
        case "Next": self = .next
        case "Seek": self = .seek(.absolute(try number(0...1e7)))
        case "SeekBy": self = .seek(.relative(try number(-1e7...1e7)))
        case "SetVolume": self = .setVolume(try number(0...1))
        case "ChangeVolume": self = .changeVolume(try number(-1...1))
        case "SetMuted":
            guard case .boolean(let muted)? = first else {
                throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "SetMuted takes true or false")
            }
            self = .setMuted(muted)
        case "ToggleMute": self = .toggleMute
        default: return nil
        }
    }
}
