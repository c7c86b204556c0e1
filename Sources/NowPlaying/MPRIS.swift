// MPRIS: one media session as an org.mpris.MediaPlayer2 player on the session bus — its properties, typed
// as the spec says (GNOME and KDE drop what is mistyped), PropertiesChanged and Seeked, and its methods
// turned into the session's commands.

import Foundation
import RouteGLib
import Synchronization

/// What MPRIS shows of a session at one moment.
struct MPRISState: Sendable, Equatable {
    var identity: String
    var trackID: String
    var title: String?
    var artists: [String]
    var album: String?
    /// Microseconds, only when the length is known.
    var length: Int64?
    var artworkID: String?
    var artURL: String?
    var snapshot: PlaybackSnapshot
    var volume: Double?
    var canPause: Bool
    var canSeek: Bool
    var canGoNext: Bool
    var canGoPrevious: Bool

    /// The values of org.mpris.MediaPlayer2.Player, Position aside (it is read, never signalled).
    var playerProperties: [String: DBusValue] {
        var metadata: [String: DBusValue] = ["mpris:trackid": .objectPath(trackID)]
        if let title { metadata["xesam:title"] = .string(title) }
        if !artists.isEmpty { metadata["xesam:artist"] = .strings(artists) }
        if let album { metadata["xesam:album"] = .string(album) }
        if let length, length > 0 { metadata["mpris:length"] = .int64(length) }
        if let artURL { metadata["mpris:artUrl"] = .string(artURL) }
        return [
            "PlaybackStatus": .string(snapshot.isPlaying ? "Playing" : "Paused"),
            "Rate": .double(snapshot.rate > 0 ? snapshot.rate : 1),
            "MinimumRate": .double(1),
            "MaximumRate": .double(1),
            "Metadata": .dictionary(metadata),
            "Volume": .double(volume ?? 1),
            "CanGoNext": .boolean(canGoNext),
            "CanGoPrevious": .boolean(canGoPrevious),
            // A desktop shows a player only while it can play: true for as long as the session exists.
            "CanPlay": .boolean(true),
            "CanPause": .boolean(canPause),
            "CanSeek": .boolean(canSeek),
            "CanControl": .boolean(true),
        ]
    }

    var rootProperties: [String: DBusValue] {
        ["Identity": .string(identity), "CanQuit": .boolean(false), "CanRaise": .boolean(false),
         "HasTrackList": .boolean(false), "SupportedUriSchemes": .strings([]), "SupportedMimeTypes": .strings([])]
    }

    /// Microseconds into the item at `date`.
    func position(at date: Date) -> Int64 { Int64((snapshot.elapsed(at: date) * 1_000_000).rounded()) }
}

/// A request from the desktop, for the session to carry out.
enum MPRISRequest: Sendable {
    case play, pause, playPause, stop, next, previous
    /// To an absolute position, in seconds.
    case seek(to: Double)
    case volume(Double)
}

/// The MPRIS object of one session; the GDBus side calls it on the D-Bus thread.
final class MPRISPlayer: DBusObjectHandler {
    static let path = "/org/mpris/MediaPlayer2"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// How far the device's position may stray from the extrapolated one before it counts as a jump (Seeked).
    static let jumpThreshold = 1.5

    private let bus: DBusConnection
    private let state: Mutex<MPRISState>
    private let perform: @Sendable (MPRISRequest) async throws -> Void

    init(bus: DBusConnection, state: MPRISState, perform: @escaping @Sendable (MPRISRequest) async throws -> Void) {
        self.bus = bus
        self.state = Mutex(state)
        self.perform = perform
    }

    /// Takes a new state: signals the properties that changed, and Seeked when the position jumped.
    func update(_ new: MPRISState) {
        var current = new
        let old = state.withLock { state -> MPRISState in
            let old = state
            // Artwork written for this picture stays until the picture changes.
            if current.artworkID == old.artworkID, current.artURL == nil { current.artURL = old.artURL }
            state = current
            return old
        }
        signalChanges(from: old, to: current)
        if old.trackID == current.trackID {
            let expected = old.snapshot.elapsed(at: current.snapshot.timestamp)
            if abs(current.snapshot.elapsed - expected) > Self.jumpThreshold { emitSeeked(current.position(at: Date())) }
        }
    }

    /// The artwork of `artworkID` is at `url` now (written to the cache).
    func setArtURL(_ url: String, for artworkID: String) {
        let change = state.withLock { state -> (MPRISState, MPRISState)? in
            guard state.artworkID == artworkID, state.artURL != url else { return nil }
            let old = state
            state.artURL = url
            return (old, state)
        }
        if let (old, new) = change { signalChanges(from: old, to: new) }
    }

    private func signalChanges(from old: MPRISState, to new: MPRISState) {
        for (interface, before, after) in [(Self.rootInterface, old.rootProperties, new.rootProperties),
                                           (Self.playerInterface, old.playerProperties, new.playerProperties)] {
            let changed = after.filter { before[$0.key] != $0.value }
            if !changed.isEmpty { bus.emitPropertiesChanged(path: Self.path, interface: interface, changed: changed) }
        }
    }

    private func emitSeeked(_ microseconds: Int64) {
        bus.emit(path: Self.path, interface: Self.playerInterface, signal: "Seeked", arguments: [.int64(microseconds)])
    }

    func property(interface: String, name: String) -> DBusValue? {
        let current = state.withLock { $0 }
        switch interface {
        case Self.rootInterface: return current.rootProperties[name]
        case Self.playerInterface:
            if name == "Position" { return .int64(current.position(at: Date())) }
            return current.playerProperties[name]
        default: return nil
        }
    }

    func setProperty(interface: String, name: String, value: DBusValue) throws {
        switch (name, value.unwrapped) {
        case ("Volume", .double(let level)):
            let perform = self.perform
            Task { try? await perform(.volume(min(1, max(0, level)))) }
        case ("Rate", .double):
            break // only 1 is supported (MinimumRate = MaximumRate = 1); the spec asks to ignore others
        default:
            throw DBusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) cannot be set")
        }
    }

    func call(interface: String, method: String, arguments: [DBusValue]) async throws -> [DBusValue] {
        let current = state.withLock { $0 }
        switch (interface, method) {
        case (Self.rootInterface, "Raise"), (Self.rootInterface, "Quit"):
            return [] // CanRaise and CanQuit are false: no effect, as the spec says
        case (Self.playerInterface, "Play"): try await run(.play)
        case (Self.playerInterface, "Pause"): try await run(.pause)
        case (Self.playerInterface, "PlayPause"): try await run(.playPause)
        case (Self.playerInterface, "Stop"): try await run(.stop)
        case (Self.playerInterface, "Next"): try await run(.next)
        case (Self.playerInterface, "Previous"): try await run(.previous)
        case (Self.playerInterface, "Seek"):
            guard case .int64(let offset)? = arguments.first, current.canSeek else { return [] }
            var target = current.snapshot.elapsed(at: Date()) + Double(offset) / 1_000_000
            if let length = current.length, target * 1_000_000 > Double(length) {
                // Past the end: the spec says to act as Next.
                if current.canGoNext { try await run(.next); return [] }
                target = Double(length) / 1_000_000
            }
            try await seek(to: max(0, target))
        case (Self.playerInterface, "SetPosition"):
            guard arguments.count == 2, case .objectPath(let track) = arguments[0], case .int64(let position) = arguments[1],
                  current.canSeek, track == current.trackID, position >= 0,
                  current.length.map({ position <= $0 }) ?? true else { return [] }
            try await seek(to: Double(position) / 1_000_000)
        case (Self.playerInterface, "OpenUri"):
            throw DBusError(name: "org.freedesktop.DBus.Error.NotSupported", "route plays what it casts; use `route cast` to play a URI")
        default:
            throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", "no method \(interface).\(method)")
        }
        return []
    }

    private func run(_ request: MPRISRequest) async throws {
        do {
            try await perform(request)
        } catch let error as DBusError {
            throw error
        } catch {
            throw DBusError("\(error)")
        }
    }

    private func seek(to seconds: Double) async throws {
        try await run(.seek(to: seconds))
        emitSeeked(Int64((seconds * 1_000_000).rounded()))
    }
}

/// Names on the bus.
enum MPRISNames {
    /// `org.mpris.MediaPlayer2.route.<id>`, with every character a bus name does not allow made `_` (and an
    /// element never starting with a digit).
    static func busName(for id: String) -> String {
        "org.mpris.MediaPlayer2.route." + element(id)
    }

    /// A track's object path, the same for as long as the item is the same.
    static func trackID(for identifier: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in identifier.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "/org/route/track/t" + String(hash, radix: 16)
    }

    private static func element(_ text: String) -> String {
        var clean = String(text.unicodeScalars.prefix(200).map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "_") ? Character(scalar) : "_"
        })
        if clean.isEmpty || clean.first!.isNumber { clean = "_" + clean }
        return clean
    }

    static let introspection = """
    <node>
      <interface name="org.mpris.MediaPlayer2">
        <method name="Raise"/>
        <method name="Quit"/>
        <property name="CanQuit" type="b" access="read"/>
        <property name="CanRaise" type="b" access="read"/>
        <property name="HasTrackList" type="b" access="read"/>
        <property name="Identity" type="s" access="read"/>
        <property name="SupportedUriSchemes" type="as" access="read"/>
        <property name="SupportedMimeTypes" type="as" access="read"/>
      </interface>
      <interface name="org.mpris.MediaPlayer2.Player">
        <method name="Next"/>
        <method name="Previous"/>
        <method name="Pause"/>
        <method name="PlayPause"/>
        <method name="Stop"/>
        <method name="Play"/>
        <method name="Seek"><arg direction="in" name="Offset" type="x"/></method>
        <method name="SetPosition"><arg direction="in" name="TrackId" type="o"/><arg direction="in" name="Position" type="x"/></method>
        <method name="OpenUri"><arg direction="in" name="Uri" type="s"/></method>
        <signal name="Seeked"><arg name="Position" type="x"/></signal>
        <property name="PlaybackStatus" type="s" access="read"/>
        <property name="Rate" type="d" access="readwrite"/>
        <property name="Metadata" type="a{sv}" access="read"/>
        <property name="Volume" type="d" access="readwrite"/>
        <property name="Position" type="x" access="read"/>
        <property name="MinimumRate" type="d" access="read"/>
        <property name="MaximumRate" type="d" access="read"/>
        <property name="CanGoNext" type="b" access="read"/>
        <property name="CanGoPrevious" type="b" access="read"/>
        <property name="CanPlay" type="b" access="read"/>
        <property name="CanPause" type="b" access="read"/>
        <property name="CanSeek" type="b" access="read"/>
        <property name="CanControl" type="b" access="read"/>
      </interface>
    </node>
    """
}
