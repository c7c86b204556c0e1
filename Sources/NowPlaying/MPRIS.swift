// MPRIS: one media session as an org.mpris.MediaPlayer2 player on the session bus — its properties, typed
// as the spec says (GNOME and KDE drop what is mistyped), PropertiesChanged and Seeked, and its methods
// turned into the session's commands.

import Foundation
import RouteCore
import RouteGIO
import Synchronization

/// Microseconds, as MPRIS counts time: never negative, never past what an Int64 holds, 0 for what is not a number.
func microseconds(_ seconds: Double) -> Int64 {
    guard seconds.isFinite else { return 0 }
    return Int64(min(max(0, seconds * 1_000_000), 9.2e18).rounded())
}

/// What MPRIS shows of a session at one moment.
struct MPRISState: Sendable, Equatable {
    var identity: String
    var trackID: String
    var hasContent: Bool
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
    var canRaise = false

    /// The speed MPRIS reports: the device's own while it plays, 1 otherwise.
    private var rate: Double { snapshot.rate.isFinite && snapshot.rate > 0 ? snapshot.rate : 1 }

    /// The values of org.mpris.MediaPlayer2.Player, Position aside (it is read, never signalled).
    var playerProperties: [String: DBusValue] {
        var metadata: [String: DBusValue] = ["mpris:trackid": .objectPath(trackID)]
        if let title { metadata["xesam:title"] = .string(title) }
        if !artists.isEmpty { metadata["xesam:artist"] = .strings(artists) }
        if let album { metadata["xesam:album"] = .string(album) }
        if let length, length > 0 { metadata["mpris:length"] = .int64(length) }
        if let artURL { metadata["mpris:artUrl"] = .string(artURL) }
        return [
            "PlaybackStatus": .string(!hasContent ? "Stopped" : snapshot.isPlaying ? "Playing" : "Paused"),
            "Rate": .double(rate),
            "MinimumRate": .double(min(1, rate)),
            "MaximumRate": .double(max(1, rate)),
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
        ["Identity": .string(identity), "CanQuit": .boolean(false), "CanRaise": .boolean(canRaise),
         "HasTrackList": .boolean(false), "SupportedUriSchemes": .strings([]), "SupportedMimeTypes": .strings([])]
    }

    /// Microseconds into the item at `date`: extrapolated while playing, never past the length.
    func position(at date: Date) -> Int64 {
        let position = microseconds(snapshot.elapsed(at: date))
        return length.map { $0 > 0 ? min($0, position) : position } ?? position
    }
}

/// A request from the desktop, for the session to carry out.
enum MPRISRequest: Sendable {
    case play, pause, playPause, stop, next, previous
    /// To an absolute position, in seconds.
    case seek(to: Double)
    case volume(Double)
    case raise
}

/// The MPRIS object of one session; the GDBus side calls it on the D-Bus thread.
///
/// Requests are carried out one after another in the order they came (a volume slider's levels land in
/// order); once `retire()` has been called, none is carried out any more.
final class MPRISPlayer: DBusObjectHandler {
    static let path = "/org/mpris/MediaPlayer2"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// How far the device's position may stray from the extrapolated one before it counts as a jump (Seeked).
    static let jumpThreshold = 1.5

    private struct Shared {
        var state: MPRISState
        /// Artwork written to the cache, by artwork id.
        var artURLs: [String: String] = [:]
        /// The last Seeked sent for a Seek or SetPosition: the jump it causes is not signalled again.
        var seekedTo: (position: Double, at: Date)?
        /// The last request's work: the next one waits for it.
        var tail: Task<Void, Never>?
        /// Counts volume changes asked for: one superseded before it runs is skipped (a slider's drag sends many).
        var volumeTicket = 0
        var retired = false
    }

    private let bus: DBusConnection
    private let shared: Mutex<Shared>
    private let perform: @Sendable (MPRISRequest) async throws -> Void

    init(bus: DBusConnection, state: MPRISState, perform: @escaping @Sendable (MPRISRequest) async throws -> Void) {
        self.bus = bus
        self.shared = Mutex(Shared(state: state))
        self.perform = perform
    }

    /// Takes a new state: signals the properties that changed, and Seeked when the position jumped. Signals are
    /// sent under the lock, so they reach the bus in the order the states were taken.
    func update(_ new: MPRISState) {
        shared.withLock { shared in
            let old = shared.state
            var current = new
            if let id = current.artworkID { current.artURL = shared.artURLs[id] }
            shared.state = current
            signalChanges(from: old, to: current)
            guard old.trackID == current.trackID else { return }
            let expected = old.snapshot.elapsed(at: current.snapshot.timestamp)
            guard abs(current.snapshot.elapsed - expected) > Self.jumpThreshold else { return }
            if let seeked = shared.seekedTo, Date().timeIntervalSince(seeked.at) < 3,
               abs(current.snapshot.elapsed - seeked.position) < Self.jumpThreshold {
                return // the jump a Seek asked for, already signalled
            }
            emitSeeked(current.position(at: Date()))
        }
    }

    /// The artwork of `artworkID` is at `url` now (written to the cache).
    func setArtURL(_ url: String, for artworkID: String) {
        shared.withLock { shared in
            shared.artURLs[artworkID] = url
            guard shared.state.artworkID == artworkID, shared.state.artURL != url else { return }
            let old = shared.state
            shared.state.artURL = url
            signalChanges(from: old, to: shared.state)
        }
    }

    /// No request is carried out from now on (the session has left the bus).
    func retire() {
        shared.withLock { $0.retired = true }
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
        let current = shared.withLock { $0.state }
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
        case ("Volume", .double(let level)) where level.isFinite:
            let ticket = shared.withLock { $0.volumeTicket += 1; return $0.volumeTicket }
            enqueue(reply: nil) { shared in shared.volumeTicket == ticket ? .volume(min(1, max(0, level))) : nil }
        case ("Rate", .double(let rate)):
            // The spec: a Rate of 0 is a Pause; other speeds than the device's own are not offered.
            if rate == 0 { enqueue(.pause, reply: nil) }
        default:
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "\(name) cannot be set to that")
        }
    }

    func call(interface: String, method: String, arguments: [DBusValue], reply: DBusReply) {
        let current = shared.withLock { $0.state }
        switch (interface, method) {
        case (Self.rootInterface, "Raise"): current.canRaise ? enqueue(.raise, reply: reply) : reply(.success([])) // no effect, as the spec says
        case (Self.rootInterface, "Quit"): reply(.success([])) // CanQuit is false
        case (Self.playerInterface, "Play"): enqueue(.play, reply: reply)
        case (Self.playerInterface, "Pause"): enqueue(.pause, reply: reply)
        case (Self.playerInterface, "PlayPause"): enqueue(.playPause, reply: reply)
        case (Self.playerInterface, "Stop"): enqueue(.stop, reply: reply)
        case (Self.playerInterface, "Next"): enqueue(.next, reply: reply)
        case (Self.playerInterface, "Previous"): enqueue(.previous, reply: reply)
        case (Self.playerInterface, "Seek"):
            guard case .int64(let offset)? = arguments.first, current.canSeek else { return reply(.success([])) }
            // From where the player is when the seek runs: two quick Seek(+10 s) move it 20 s.
            enqueue(reply: reply) { shared in
                let state = shared.state
                var from = Double(state.position(at: Date())) / 1_000_000
                if let seeked = shared.seekedTo, Date().timeIntervalSince(seeked.at) < 3 {
                    from = seeked.position + (state.snapshot.isPlaying ? Date().timeIntervalSince(seeked.at) : 0)
                }
                var target = from + Double(offset) / 1_000_000
                if let length = state.length, target * 1_000_000 > Double(length) {
                    // Past the end: the spec says to act as Next.
                    if state.canGoNext { return .next }
                    target = Double(length) / 1_000_000
                }
                return .seek(to: max(0, target))
            }
        case (Self.playerInterface, "SetPosition"):
            guard arguments.count == 2, case .objectPath(let track) = arguments[0], case .int64(let position) = arguments[1],
                  current.canSeek, track == current.trackID, position >= 0,
                  current.length.map({ position <= $0 }) ?? true else { return reply(.success([])) }
            enqueue(.seek(to: Double(position) / 1_000_000), reply: reply)
        case (Self.playerInterface, "OpenUri"):
            reply(.failure(DBusError(name: "org.freedesktop.DBus.Error.NotSupported", "route plays what it casts; use `route cast` to play a URI")))
        default:
            reply(.failure(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", "no method \(interface).\(method)")))
        }
    }

    /// Carries out `request` after those before it; answers `reply` when done.
    private func enqueue(_ request: MPRISRequest, reply: DBusReply?) {
        enqueue(reply: reply) { _ in request }
    }

    /// Carries out what `resolve` makes of the player's state when its turn comes (nothing, when it gives nil),
    /// after the requests before it; answers `reply` when done.
    private func enqueue(reply: DBusReply?, _ resolve: @escaping @Sendable (borrowing Shared) -> MPRISRequest?) {
        let perform = self.perform
        shared.withLock { shared in
            let previous = shared.tail
            shared.tail = Task {
                await previous?.value
                let (retired, resolved) = self.shared.withLock { ($0.retired, resolve($0)) }
                guard !retired else {
                    reply?(.failure(DBusError("the player has left the bus")))
                    return
                }
                guard let request = resolved else {
                    reply?(.success([]))
                    return
                }
                do {
                    try await perform(request)
                    if case .seek(let seconds) = request { self.seeked(to: seconds) }
                    reply?(.success([]))
                } catch {
                    reply?(.failure(error))
                }
            }
        }
    }

    /// Signals Seeked after a Seek or SetPosition, and remembers it so that the jump is not signalled twice.
    private func seeked(to seconds: Double) {
        shared.withLock { shared in
            shared.seekedTo = (seconds, Date())
            emitSeeked(microseconds(seconds))
        }
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
        "/org/route/track/t" + StableName.of(identifier)
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
        <property name="Position" type="x" access="read">
          <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
        </property>
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
