// ServiceSession: one cast the service plays — its object on the bus (methods, properties, the Ended signal, which
// `route pause|status --to DEVICE` reach too) and its MPRIS player, for as long as it plays, on one device after
// another when it is moved, or on a group's devices at once.

import Foundation
import MediaRouting
import RouteAPI
import RouteControl
import RouteCore
import RouteGIO
import RouteMedia
import Synchronization

/// A session of the service.
final class ServiceSession: Sendable, DBusObjectHandler {
    /// Why a session ends, as the Ended signal says it.
    enum Reason: String {
        case finished, stopped, failed
        case clientLeft = "client-left"
        case serviceStopped = "service-stopped"
    }

    /// What a session plays: one device at a time, movable, or a group's devices at once.
    private enum Played: Sendable {
        case movable(MovableCast)
        case group(GroupCast)

        var events: AsyncStream<QueueEvent> { switch self { case .movable(let cast): cast.events; case .group(let cast): cast.events } }
        var probes: ProbeAhead { switch self { case .movable(let cast): cast.probes; case .group(let cast): cast.probes } }
        /// The device it plays on (a group's: the group).
        var device: MediaDevice { switch self { case .movable(let cast): cast.device; case .group(let cast): cast.device } }
        var devices: [MediaDevice] { switch self { case .movable(let cast): cast.devices; case .group(let cast): cast.devices } }
        /// A group's members as they play (none for a session on one device).
        var members: [RouteServiceAPI.SessionMember] {
            guard case .group(let cast) = self else { return [] }
            return cast.members.map { RouteServiceAPI.SessionMember(device: $0.device, playback: $0.playback) }
        }
        var session: QueueSession { switch self { case .movable(let cast): cast.session; case .group(let cast): cast.session } }
        var published: any PlayingCast { switch self { case .movable(let cast): cast; case .group(let cast): cast } }
        func say(_ words: String) { switch self { case .movable(let cast): cast.say(words); case .group(let cast): cast.say(words) } }
        func run() async throws { switch self { case .movable(let cast): try await cast.run(); case .group(let cast): try await cast.run() } }
        func stop() async throws { switch self { case .movable(let cast): try await cast.stop(); case .group(let cast): try await cast.stop() } }
        func perform(_ command: SessionCommand) async throws {
            switch self { case .movable(let cast): try await cast.perform(command); case .group(let cast): try await cast.perform(command) }
        }
    }

    /// The session's object path.
    let path: String
    private let cast: Played
    /// Finds the device a `Move` names.
    private let find: @Sendable (String) async throws -> MediaDevice
    /// Whether one of route's casts other than the session at the path given plays on a device (a move there is refused).
    private let taken: @Sendable (MediaDevice, String) async -> Bool
    private let bus: DBusConnection
    /// Where the session's notices are said besides its Notice signal.
    private let log: RouteLog
    private let number: Int
    /// The descriptors of the files a client sent: open as long as the session plays them.
    private let descriptors: [DBusDescriptor]
    /// What lets GStreamer fetch the URLs on this machine the client named, as long as the session plays them.
    private let allowances: [FetchGuard.Allowance]
    /// The client that made the session (its unique name), and who a caller is: a sandboxed app controls only the
    /// sessions it made.
    private let startedBy: String
    private let asker: @Sendable (String) async -> Asker
    /// The calls of each client waiting for answers, shared with the manager.
    private let calls: CallLimit
    /// What the desktop's Raise on the session's player does: the picker that moves it.
    private let raise: @Sendable () throws -> Void
    private struct State {
        /// The client whose leaving ends the session (nil: it belongs to the service).
        var owner: String?
        var latest: QueueStatus?
        /// The device as last encoded: it rarely changes, and a renderer's list of the types it accepts is long.
        var encodedDevice: (device: MediaDevice, value: DBusValue)?
        /// The session's object on the bus, once published.
        var registration: DBusRegistration?
        /// Why the session was asked to end, when it was.
        var ending: Reason?
        /// When its device last started playing (the active session is the one that did last).
        var startedPlaying: ContinuousClock.Instant?
    }
    private let state: Mutex<State>
    /// What the session says before the device has reported: loading its first item.
    private let initial: QueueStatus
    /// A session of `probes` on `devices` (several: a group's, shown as `group`, each holding its sound back as `delays`
    /// say), made by the client `startedBy`; nothing plays until `run()`. `find` finds the device a move names, `taken`
    /// whether another of route's casts plays on it, `asker` who a caller is.
    init(number: Int, probes: ProbeAhead, devices: [MediaDevice], group: MediaDevice? = nil, delays: [String: Double] = [:],
         router: MediaRouter, settings: CastSettings, servers: MediaServers,
         descriptors: [DBusDescriptor], allowances: [FetchGuard.Allowance] = [], startedBy: String, owner: String?, notices: [String] = [],
         bus: DBusConnection, log: RouteLog, calls: CallLimit, asker: @escaping @Sendable (String) async -> Asker,
         raise: @escaping @Sendable () throws -> Void,
         find: @escaping @Sendable (String) async throws -> MediaDevice, taken: @escaping @Sendable (MediaDevice, String) async -> Bool) throws {
        path = RouteServiceAPI.sessionPathPrefix + String(number)
        self.number = number
        self.find = find
        self.taken = taken
        self.bus = bus
        self.log = log
        self.descriptors = descriptors
        self.allowances = allowances
        self.startedBy = startedBy
        self.asker = asker
        self.calls = calls
        self.raise = raise
        state = Mutex(State(owner: owner))
        let shown = group ?? devices[0]
        initial = QueueStatus(device: shown, route: devices[0].primary, index: 0, count: probes.entries.count, title: probes.titles.first ?? "",
                             playback: PlaybackStatus(state: .loading))
        let path = path
        let cast: Played = if let group {
            .group(try GroupCast(probes, on: devices, as: group, router: router, settings: settings, delays: delays, servers: servers,
                                 comesBack: { device in await DeviceLookup.listedAgain(device, by: router) { await !taken($0, path) } }))
        } else {
            .movable(try MovableCast(probes, on: devices[0], router: router, settings: settings, servers: servers))
        }
        for words in notices { cast.say(words) }
        self.cast = cast
    }

    /// The device playing the session now.
    var device: MediaDevice { cast.device }

    /// The devices the session plays on: its device, and the one a move is starting (a group's: its members).
    var devices: [MediaDevice] { cast.devices }

    /// The client whose leaving ends the session, if any.
    var owner: String? { state.withLock { $0.owner } }

    /// When the session's device last started playing, if it has.
    var startedPlaying: ContinuousClock.Instant? { state.withLock { $0.startedPlaying } }

    /// Whether the client `sender` made the session.
    func isStarted(by sender: String) -> Bool { sender == startedBy }

    /// Why `sender` may not control or move the session: a sandboxed app that did not make it; nil when it may.
    func refusal(to sender: String, _ method: String) async -> DBusError? {
        guard !isStarted(by: sender), !(await asker(sender)).actsForTheDesktop else { return nil }
        return DBusError(name: "org.freedesktop.DBus.Error.AccessDenied", "\(method): refused: a sandboxed app controls only the casts it started")
    }

    /// Moves the session to the device `query` names (MovableCast's `move(to:)`).
    /// - Throws: `RouteError` when no device answers to `query`, another cast plays there, or the device does not take
    ///   it; the session then plays on where it was, and the error's message ends saying so.
    func move(to query: String) async throws {
        guard case .movable(let cast) = cast else {
            throw RouteError(.unsupported, "cannot move \(self.device.name): a group's cast does not move; stop it and cast again",
                             device: self.device.name, reason: "a group's cast does not move")
        }
        let device: MediaDevice
        do {
            device = try await find(query)
            try cast.checkMove(to: device)
            if await taken(device, path) { throw OurCasts.taken(device) }
        } catch {
            throw MovableCast.stillPlaying(error, on: self.device)
        }
        try await cast.move(to: device)
    }

    /// Adds the device `query` names to a group's session (`GroupCast.add`), or takes it out.
    /// - Throws: `RouteError` when the session is not a group's, no device answers to `query`, another of route's casts
    ///   plays there, or the group refuses (it plays there already; the last device cannot be taken out).
    func change(adding: Bool, _ query: String) async throws {
        guard case .group(let group) = cast else {
            throw RouteError(.unsupported, "\(device.name) plays alone: only a group's cast takes devices in and out (cast to several with --to, or to a group)",
                             device: device.name, reason: "it plays alone")
        }
        let device = try await find(query)
        if adding {
            if await taken(device, path) { throw OurCasts.taken(device) }
            try group.add(device)
        } else {
            try await group.remove(device)
        }
    }

    /// Sets the volume or mute of the group's member `query` names alone (`GroupCast.perform(_:on:)`).
    /// - Throws: `RouteError` when the session is not a group's or no member answers to `query`; the member's own error.
    func perform(_ command: SessionCommand, onMember query: String) async throws {
        guard case .group(let group) = cast else {
            throw RouteError(.unsupported, "\(device.name) plays alone: its volume is the session's (SetVolume, SetMuted)",
                             device: device.name, reason: "it plays alone")
        }
        let members = group.members.map(\.device)
        guard let (_, found) = DeviceMatcher.candidates(for: query, in: members) else {
            throw RouteError(.commandFailed, "\(query) does not play in the group (\(members.map(\.name).joined(separator: ", ")) do)",
                             device: query, reason: "it does not play in the group")
        }
        guard found.count == 1 else { throw RouteError.ambiguousDevice(query: query, matches: found.map(\.name)) }
        try await group.perform(command, on: found[0])
    }

    /// Puts the session's object on the bus: before its path is handed out, since a client asks it at once.
    /// - Throws: `DBusError` when the bus refuses it (`run()` then stops the device and ends).
    func publish() throws {
        let registration = try bus.export(path: path, introspectionXML: RouteServiceAPI.sessionIntrospection, handler: self)
        state.withLock { $0.registration = registration }
    }

    /// Plays the queue with its object (`publish()` first) and player; returns when it has ended and
    /// said so.
    func run() async {
        guard let registration = state.withLock({ $0.registration }) else {
            try? await cast.session.stop()
            return
        }
        defer { registration.end() }
        // Statuses and notices go out in the order they happened, every one before Ended (the stream ends with the
        // cast); a notice is in the service's log too.
        let forwarded = Task {
            // Only what changed goes out: a status is many properties, and most of them stay as they were.
            var sent = properties(of: initial)
            for await event in cast.events {
                switch event {
                case .status(let status):
                    state.withLock { state in
                        if status.playback.state == .playing, state.latest?.playback.state != .playing || state.latest?.device.id != status.device.id {
                            state.startedPlaying = .now
                        }
                        state.latest = status
                    }
                    let now = properties(of: status)
                    let changed = now.filter { sent[$0.key] != $0.value }
                    sent = now
                    if !changed.isEmpty {
                        bus.emitPropertiesChanged(path: path, interface: RouteServiceAPI.sessionInterface, changed: changed)
                    }
                case .notice(let words):
                    log(.notice, "\(device.name): \(words)")
                    bus.emit(path: path, interface: RouteServiceAPI.sessionInterface, signal: "Notice", arguments: [.string(words)])
                }
            }
        }
        var failure: (any Error)?
        await withDiscardingTaskGroup { group in
            let cast = cast, probes = cast.probes, id = "service_\(getpid())_\(number)", raise = raise
            group.addTask {
                await CastPublication.run(cast.published, probes: probes, id: id, raise: raise) { _ in }
            }
            do { try await cast.run() } catch { failure = error }
            group.cancelAll()
        }
        await forwarded.value
        let reason = failure == nil ? state.withLock { $0.ending } ?? .finished : .failed
        // A failure, or else the first file the queue had to skip: a client's exit code comes from it.
        let skipped = await cast.session.skipped.first?.error
        let error = (failure ?? skipped).map { RouteServiceAPI.dbusError($0) }
        bus.emit(path: path, interface: RouteServiceAPI.sessionInterface, signal: "Ended",
                 arguments: [.string(reason.rawValue), .string(error?.name ?? ""), .string(error?.message ?? "")])
    }

    /// Ends the session for `reason`: its device stops.
    func end(_ reason: Reason) {
        state.withLock { if $0.ending == nil { $0.ending = reason } }
        let cast = cast
        Task { try? await cast.stop() }
    }

    // MARK: The object

    func call(interface: String, method: String, arguments: [DBusValue], reply: DBusReply) {
        let text = arguments.first.flatMap { if case .string(let value) = $0 { return value }; return nil }
        calls.answer(method, reply) { [self] in
            if let refusal = await refusal(to: reply.sender, method) { throw refusal }
            if let command = try SessionCommand(dbusMethod: method, arguments: arguments) {
                if command == .stop { state.withLock { if $0.ending == nil { $0.ending = .stopped } } }
                try await cast.perform(command)
                return []
            }
            switch method {
            case "Detach":
                state.withLock { $0.owner = nil }
                bus.emitPropertiesChanged(path: path, interface: RouteServiceAPI.sessionInterface, changed: ["EndsWithClient": .boolean(false)])
            case "Move", "AddDevice", "RemoveDevice":
                guard let query = text, !query.isEmpty else {
                    throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "\(method) takes a device's name or id")
                }
                if method == "Move" { try await move(to: query) } else { try await change(adding: method == "AddDevice", query) }
            case "SetMemberVolume", "SetMemberMuted":
                // The member, then the level or mute as SetVolume and SetMuted take them.
                let alone = String(method.replacing("Member", with: ""))
                guard let query = text, !query.isEmpty, let command = try SessionCommand(dbusMethod: alone, arguments: Array(arguments.dropFirst())) else {
                    throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "\(method) takes a member's name or id, then what \(alone) takes")
                }
                try await perform(command, onMember: query)
            default: throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", "no method \(method)")
            }
            return []
        }
    }

    func property(interface: String, name: String) -> DBusValue? {
        let (latest, owner) = state.withLock { ($0.latest, $0.owner) }
        if name == "EndsWithClient" { return .boolean(owner != nil) }
        if name == "MprisName" { return .string("org.mpris.MediaPlayer2.route.service_\(getpid())_\(number)") }
        return properties(of: latest ?? initial)[name]
    }

    func setProperty(interface: String, name: String, value: DBusValue) throws {
        throw DBusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) is read-only")
    }

    /// The properties a status gives (all but EndsWithClient and MprisName).
    private func properties(of status: QueueStatus) -> [String: DBusValue] {
        let playback = status.playback
        var allowed: [String] = ["stop"]
        if playback.allowed.contains(.pause) { allowed += ["play", "pause"] }
        if playback.allowed.contains(.seek) { allowed.append("seek") }
        if playback.allowed.contains(.volume) { allowed += ["volume", "mute"] }
        if status.index + 1 < status.count { allowed.append("next") }
        var values: [String: DBusValue] = [
            "State": .string(playback.state.rawValue), "Position": .double(playback.position),
            "PositionTime": .double(playback.timestamp.timeIntervalSince1970), "Rate": .double(playback.rate),
            "Duration": .double(playback.duration ?? -1), "Item": .string(status.title),
            "QueueIndex": .uint32(UInt32(clamping: status.index)), "QueueLength": .uint32(UInt32(clamping: status.count)),
            "Volume": .double(playback.volume ?? -1), "Muted": .boolean(playback.muted ?? false), "AllowedCommands": .strings(allowed),
        ]
        if let value = try? DBusCoding.encode(status) { values["Status"] = value }
        if let value = encoded(status.device) { values["Device"] = value }
        values["Members"] = .array(elementType: "a{sv}", cast.members.compactMap { try? DBusCoding.encode($0) })
        return values
    }

    /// `device` as a D-Bus value, encoded again only when it changed.
    private func encoded(_ device: MediaDevice) -> DBusValue? {
        if let cached = state.withLock({ $0.encodedDevice }), cached.device == device { return cached.value }
        guard let value = try? DBusCoding.encode(device) else { return nil }
        state.withLock { $0.encodedDevice = (device, value) }
        return value
    }
}
