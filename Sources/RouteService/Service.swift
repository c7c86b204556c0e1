// RouteService: the per-user route service on the session bus — one router that listens all the time, the
// manager object apps ask for devices and casts, and the sessions it plays (Documentation/DBUS-API.md).

import Foundation
import MediaRouting
import RouteAPI
import RouteControl
import RouteCore
import RouteGIO
import RouteMedia
import RouteSound
import Synchronization

/// The service: owns `io.github.route.Route1`, exports the manager, runs discovery and the sessions. `route service`
/// runs one; so can any program that wants to be the service.
package final class RouteService: Sendable {
    let bus: DBusConnection
    let router: MediaRouter
    let providers: [any RouteProvider]
    /// Where the service says what happens (a session's notices, desktop controls that are off).
    let log: RouteLog
    private struct State {
        var devices: [MediaDevice] = []
        var sessions: [String: ServiceSession] = [:]
        var nextSession = 1
        /// Devices claimed by casts being made (their first item is probed before their session exists).
        var claims: [UUID: MediaDevice] = [:]
        /// Clients that want the device list, by unique name, and how many streams each reads.
        var watchers: [String: Int] = [:]
        /// The sessions of other controllers mirrored on the desktop, by MPRIS player name.
        var mirrors: [String: RouteServiceAPI.Mirror] = [:]
    }
    private let state = Mutex(State())
    private let started = ContinuousClock.now
    private let newSessions = AsyncStream<ServiceSession>.makeStream()
    /// One media server per local address serves every session.
    private let servers: MediaServers
    /// The desktop-audio sinks kept on request.
    private let sinks: ServiceSinks
    /// The device picker's windows asked for.
    private let pickers: ServicePickers
    /// The calls of each client waiting for answers (the manager's and its sessions').
    let calls = CallLimit()

    /// A service on `bus` over `router` (MediaRouter.standard(), say), saying what happens to `log`; nothing runs
    /// until `run()`.
    package init(bus: DBusConnection, router: MediaRouter, log: RouteLog) {
        self.bus = bus
        self.router = router
        providers = router.providers
        self.log = log.named("service")
        servers = MediaServers(log: log)
        pickers = ServicePickers(bus: bus) { id in DeviceGroups.listed(with: router.devices).first { $0.id == id } }
        sinks = ServiceSinks(router: router, servers: servers, emit: { event in
            bus.emit(path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface, signal: "SinkEvent", arguments: [event])
        }, changed: { sinks in
            bus.emitPropertiesChanged(path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface, changed: ["Sinks": sinks])
        })
    }

    /// Serves until `shutDown()` or the bus goes away; then ends every session (their devices stop, each within its
    /// stop deadline) and returns.
    /// - Throws: `RouteError` (`notSetUp`) when another service has the name.
    package func run() async throws {
        let registration = try bus.export(path: RouteServiceAPI.managerPath, introspectionXML: RouteServiceAPI.managerIntrospection,
                                          handler: ManagerObject(service: self))
        defer { registration.end() }
        do { try bus.requestName(RouteServiceAPI.busName) } catch {
            throw RouteError(.notSetUp, "another route service already runs on this session bus (\(RouteServiceAPI.busName) is taken)")
        }
        defer { bus.releaseName(RouteServiceAPI.busName) }
        searchesChanged()
        let sessions = newSessions.stream
        await withDiscardingTaskGroup { group in
            group.addTask { await self.router.run() }
            group.addTask { await self.followDevices() }
            group.addTask { await self.followClients() }
            group.addTask { await self.mirror() }
            group.addTask { await self.sinks.run() }
            group.addTask { await self.pickers.run() }
            group.addTask {
                while !Task.isCancelled, !self.bus.isClosed { try? await Task.sleep(for: .seconds(1)) }
                self.shutDown()
            }
            // Sessions are not cancelled: each ends by stopping its device.
            await withDiscardingTaskGroup { running in
                for await session in sessions { running.addTask { await self.play(session) } }
                for session in state.withLock({ Array($0.sessions.values) }) { session.end(.serviceStopped) }
            }
            group.cancelAll()
        }
        servers.close()
    }

    /// Ends the service: no new sessions, every session ends, `run()` returns.
    package func shutDown() {
        newSessions.continuation.finish()
        sinks.shutDown()
        pickers.shutDown()
    }

    // MARK: Devices

    /// Tells clients of every change to the device list: the router's, and the groups kept (`route group add`, or
    /// groups.json edited by hand).
    private func followDevices() async {
        // One reader: each change is told whole before the next (nil: the groups changed, not the router's list).
        // Bounded: a network that floods changes waits as its newest lists (the last of them is the list now).
        let (changes, change) = AsyncStream<[MediaDevice]?>.makeStream(bufferingPolicy: .bufferingNewest(16))
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await found in self.router.deviceUpdates() { change.yield(found) }
                change.finish()
            }
            group.addTask { for await _ in FileChanges.of(DeviceGroups.file) { change.yield(nil) } }
            // The router's list as last read here (not as it is now: a newer one waiting in the stream would come
            // after, and the list would step back for a moment).
            var latest = router.devices
            for await found in changes {
                if let found { latest = found }
                devicesChanged(latest)
            }
            group.cancelAll()
        }
    }

    private func devicesChanged(_ found: [MediaDevice]) {
        // The groups the user keeps are devices too (kind group), after the others.
        let list = DeviceGroups.listed(with: found)
        let previous = state.withLock { state in
            defer { state.devices = list }
            return Dictionary(state.devices.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        }
        let now = Set(list.map(\.id))
        for device in list where previous[device.id] != device {
            guard let value = try? DBusCoding.encode(device) else { continue }
            emit(previous[device.id] == nil ? "DeviceFound" : "DeviceChanged", [value])
        }
        for id in previous.keys where !now.contains(id) { emit("DeviceLost", [.string(id)]) }
        sinks.devicesChanged(found)
        bus.emitPropertiesChanged(path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface,
                                  changed: ["Devices": devicesValue(list)])
    }

    private func devicesValue(_ devices: [MediaDevice]) -> DBusValue {
        .array(elementType: "a{sv}", devices.compactMap { try? DBusCoding.encode($0) })
    }

    /// Searches actively while a client holds a lease on the device list, else seldom (StandardProviders.searchActively).
    private func searchesChanged() {
        guard StandardProviders.discoverNetwork(providers) else { return }
        StandardProviders.searchActively(state.withLock { !$0.watchers.isEmpty }, log: log)
    }

    /// Seconds since discovery started.
    private var listening: Double { (ContinuousClock.now - started) / .seconds(1) }

    /// Ends what belongs to clients that leave the bus: their device-list leases and the sessions that end with them.
    private func followClients() async {
        let changes = bus.signals(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged")
        for await change in changes {
            guard change.arguments.count == 3, case .string(let name) = change.arguments[0], name.hasPrefix(":"),
                  change.arguments[2] == .string("") else { continue }
            let owned = state.withLock { state in
                state.watchers[name] = nil
                return state.sessions.values.filter { $0.owner == name }
            }
            for session in owned { session.end(.clientLeft) }
            pickers.clientLeft(name)
            searchesChanged()
        }
    }

    // MARK: Other controllers' sessions

    /// Mirrors what other controllers play on the desktop (as `route watch` did), and says so (Mirror, Mirrors).
    private func mirror() async {
        let mirroring = SessionMirroring(router: router, isOurs: { await self.plays(on: $0) }) { event in
            let mirror: RouteServiceAPI.Mirror
            switch event {
            case .mirroring(let device, let title, let player):
                mirror = RouteServiceAPI.Mirror(device: device, title: title, player: player, ended: false)
                self.state.withLock { $0.mirrors[player] = mirror }
            case .ended(let device, let title, let player):
                guard let known = self.state.withLock({ $0.mirrors.removeValue(forKey: player) }) else { return }
                mirror = RouteServiceAPI.Mirror(device: device ?? known.device, title: title, player: player, ended: true)
            case .unavailable(let reason):
                self.log(.notice, reason)
                return
            }
            guard let value = try? DBusCoding.encode(mirror) else { return }
            self.emit("Mirror", [value])
        }
        await mirroring.run()
    }

    /// Whether one of the service's sessions (on its device, or moving to one), a cast being made or a `route cast`
    /// plays on `device`; the session at `except` is not counted (a move between two routes of the device it plays on
    /// is its own).
    private func plays(on device: MediaDevice, except: String? = nil) async -> Bool {
        if state.withLock({ Self.holds($0, device, except: except) }) { return true }
        return await OurCasts.play(on: device, service: false)
    }

    /// Claims `device` for a cast being made, in one step with the question whether one of the service's plays there
    /// (two Casts to one device at once: one is refused); `release` ends the claim once the session holds the device.
    /// - Throws: `RouteError` when one of route's casts plays there.
    private func claim(_ device: MediaDevice) async throws -> UUID {
        let token = UUID()
        let claimed = state.withLock { state in
            guard !Self.holds(state, device, except: nil) else { return false }
            state.claims[token] = device
            return true
        }
        guard claimed, !(await OurCasts.play(on: device, service: false)) else {
            release(token)
            throw OurCasts.taken(device)
        }
        return token
    }

    private func release(_ claim: UUID) { _ = state.withLock { $0.claims.removeValue(forKey: claim) } }

    private static func holds(_ state: State, _ device: MediaDevice, except: String?) -> Bool {
        let routes = Set(device.routes.map(\.id))
        let held = state.sessions.values.filter { $0.path != except }.flatMap(\.devices) + state.claims.values
        return held.contains { $0.id == device.id || !routes.isDisjoint(with: $0.routes.map(\.id)) }
    }

    // MARK: Calls

    /// Answers a call to the manager.
    func handle(_ method: String, _ arguments: [DBusValue], sender: String) async throws -> [DBusValue] {
        switch method {
        case "GetDevices":
            return [devicesValue(DeviceGroups.listed(with: router.devices))]
        case "WatchDevices":
            // What one client can make the service hold is bounded: a few watches (each a reply with every device).
            try state.withLock { state in
                guard state.watchers[sender, default: 0] < Self.watchesPerClient else {
                    throw DBusError(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                    "WatchDevices: this app holds \(Self.watchesPerClient) watches, the most one app may (UnwatchDevices ends one)")
                }
                state.watchers[sender, default: 0] += 1
            }
            searchesChanged()
            return [devicesValue(DeviceGroups.listed(with: router.devices)), .double(listening)]
        case "UnwatchDevices":
            state.withLock { state in
                if let count = state.watchers[sender] { state.watchers[sender] = count > 1 ? count - 1 : nil }
            }
            searchesChanged()
            return []
        case "FindDevice":
            guard arguments.count == 2, case .string(let query) = arguments[0], case .double(let timeout) = arguments[1] else { throw invalid(method) }
            if let group = DeviceGroups.named(query) { return [try DBusCoding.encode(group.device(among: router.devices))] }
            return [try DBusCoding.encode(try await find(query, timeout: timeout))]
        case "Cast":
            return [.objectPath(try await cast(arguments, sender: sender, asker: await asker(sender)))]
        case "StartSink":
            try await refuseSandboxed(sender, method)
            guard arguments.count == 2, case .string(let query) = arguments[0], case .dictionary(let given) = arguments[1] else { throw invalid(method) }
            let options = try RouteServiceAPI.options(RouteServiceAPI.SinkOptions.self, from: given, method: method)
            let settings = DesktopAudioSettings(options)
            // A group: the device named and `also`'s, or a kept group's members (one of those missing is left out).
            if let targets = GroupTargets(queries: [query] + (options.also ?? [])) {
                let said = Mutex<[String]>([])
                let (group, members) = try await DeviceLookup.findGroup(targets, router: router, providers: providers, timeout: 3,
                                                                        via: settings.via, say: { words in said.withLock { $0.append(words) } })
                let sink = try sinks.start(group, members: members, settings: settings)
                for words in said.withLock({ $0 }) { sinks.tell(words, about: group) }
                return [try DBusCoding.encode(sink)]
            }
            let sink = try sinks.start(try await find(query, timeout: 3, via: settings.via), settings: settings)
            return [try DBusCoding.encode(sink)]
        case "PickDevice":
            guard arguments.count == 2, case .string(let parent) = arguments[0], case .dictionary(let given) = arguments[1] else { throw invalid(method) }
            var options = try RouteServiceAPI.options(RouteServiceAPI.PickOptions.self, from: given, method: method)
            // A picker that moves a session: the session found as Move finds it, its device handed to the window.
            if let query = options.moveFrom {
                let session = try await session(playingOn: query, movedBy: sender)
                if let refusal = await session.refusal(to: sender, "PickDevice") { throw refusal }
                options.moveFrom = session.device.id
            }
            return [.objectPath(try pickers.start(parent: parent, options: options, sender: sender))]
        case "Move":
            guard arguments.count == 2, case .string(let to) = arguments[0], case .string(let from) = arguments[1] else { throw invalid(method) }
            let session = try await self.session(playingOn: from, movedBy: sender)
            if let refusal = await session.refusal(to: sender, method) { throw refusal }
            try await session.move(to: to)
            return [.objectPath(session.path)]
        case "StopSink":
            try await refuseSandboxed(sender, method)
            guard arguments.count == 1, case .string(let query) = arguments[0] else { throw invalid(method) }
            guard sinks.stop(query) else {
                throw RouteError(.unknownDevice, "the route service keeps no sink for \"\(query)\" (route sink --to DEVICE --detach makes one)", device: query)
            }
            return []
        default:
            throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", "no method \(method)")
        }
    }

    /// A property of the manager.
    func property(_ name: String) -> DBusValue? {
        switch name {
        case "Version": return .uint32(RouteServiceAPI.version)
        case "Devices": return devicesValue(DeviceGroups.listed(with: router.devices))
        case "Sessions": return .array(elementType: "o", state.withLock { $0.sessions.keys.sorted() }.map { .objectPath($0) })
        case "Listening": return .double(listening)
        case "Sinks": return sinks.value
        case "Mirrors":
            let mirrors = state.withLock { $0.mirrors.values.sorted { $0.player < $1.player } }
            return .array(elementType: "a{sv}", mirrors.compactMap { try? DBusCoding.encode($0) })
        default: return nil
        }
    }

    private func find(_ query: String, timeout: Double, via: String? = nil) async throws -> MediaDevice {
        guard timeout.isFinite, (0...600).contains(timeout) else { throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs",
                                                                                   "the timeout is seconds from 0 to 600, not \(timeout)") }
        guard !query.isEmpty else { throw RouteError.unknownDevice(query: "", candidates: router.devices.map(\.name)) }
        return try await DeviceLookup.find(query, router: router, providers: providers, timeout: timeout, via: via)
    }

    /// The most device watches one client holds at once.
    static let watchesPerClient = 16

    /// The most files one cast takes.
    static let maxFiles = 10_000

    /// The picker that moves the session at `path` (the desktop's Raise on its player): as PickDevice's with moveFrom,
    /// for the desktop rather than an app.
    private func showMovePicker(for path: String) throws {
        guard let session = state.withLock({ $0.sessions[path] }) else { return }
        _ = try pickers.start(parent: "", options: RouteServiceAPI.PickOptions(moveFrom: session.device.id), sender: "desktop")
    }

    /// Refuses `method` to a sandboxed app: a sink sends the whole desktop's sound to a device, which only a person (or
    /// an app that is not sandboxed) may ask for.
    private func refuseSandboxed(_ sender: String, _ method: String) async throws {
        guard !(await asker(sender)).actsForTheDesktop else { return }
        throw DBusError(name: "org.freedesktop.DBus.Error.AccessDenied",
                        "\(method): refused: a sandboxed app may not send the desktop's sound to a device or stop it (route sink does, for a person)")
    }

    /// Who `sender` is, for what it may name: an app, sandboxed or not (one the bus cannot place is taken for sandboxed).
    private func asker(_ sender: String) async -> Asker {
        guard let pid = try? await bus.processID(of: sender) else { return .app(sandboxed: true) }
        return Asker.app(processID: pid)
    }

    /// Checks a cast's files and finds its device, then starts its session; returns the session's path.
    private func cast(_ arguments: [DBusValue], sender: String, asker: Asker) async throws -> String {
        guard arguments.count == 4, case .string(let query) = arguments[0], case .strings(let paths) = arguments[1],
              case .dictionary(let given) = arguments[3] else { throw invalid("Cast") }
        let options = try RouteServiceAPI.options(RouteServiceAPI.CastOptions.self, from: given, method: "Cast")
        let settings = try Self.settings(options, asker: asker)
        let descriptors = arguments[2].elements.compactMap { value -> DBusDescriptor? in
            if case .fileDescriptor(let descriptor) = value { return descriptor }
            return nil
        }
        let count = paths.count + descriptors.count
        guard count > 0 else { throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "Cast: no files were given") }
        guard count <= Self.maxFiles else {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "Cast: \(count) files; one cast takes at most \(Self.maxFiles)")
        }
        if let relative = paths.first(where: { !$0.hasPrefix("/") && !MediaInfo.isRemote($0) }) {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "Cast: \"\(relative)\" is neither an absolute path nor an http(s) URL")
        }
        if let path = paths.first(where: { !MediaInfo.isRemote($0) }), let refusal = asker.refusesPath(path) {
            throw DBusError(name: "org.freedesktop.DBus.Error.AccessDenied", "Cast: \(path): \(refusal)")
        }
        var entries: [QueueEntry] = [], notices: [String] = [], allowances: [FetchGuard.Allowance] = []
        if !paths.isEmpty {
            var reading = CastSources.Options()
            reading.recursive = options.recursive
            reading.asker = asker
            let queue = try await CastSources.expand(paths, options: reading)
            entries = queue.entries
            notices = queue.notices
            allowances = queue.allowances
        }
        for (number, descriptor) in descriptors.enumerated() {
            var entry = QueueEntry("/proc/self/fd/\(descriptor.descriptor)", title: try Self.check(descriptor, number: number + 1))
            entry.isNamed = true
            entries.append(entry)
        }
        guard entries.count <= Self.maxFiles else {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "Cast: \(entries.count) items; one cast takes at most \(Self.maxFiles)")
        }
        let probes = try await ProbeAhead.probingFirst(options.shuffle ? entries.shuffled() : entries) { notices.append($0) }
        let claims: [UUID], session: ServiceSession
        do {
            // A group: the device named and `also`'s, or a kept group's members (one of those missing is said).
            let devices: [MediaDevice], group: MediaDevice?
            if let targets = GroupTargets(queries: [query] + (options.also ?? [])) {
                let said = Mutex<[String]>([])
                (group, devices) = try await DeviceLookup.findGroup(targets, router: router, providers: providers, timeout: 3, via: options.via,
                                                                    say: { words in said.withLock { $0.append(words) } })
                notices += said.withLock { $0 }
            } else {
                (group, devices) = (nil, [try await find(query, timeout: 3, via: options.via)])
            }
            var claimed: [UUID] = []
            do {
                for device in devices { claimed.append(try await self.claim(device)) }
            } catch {
                claimed.forEach(release)
                throw error
            }
            claims = claimed
            do {
                await probes.playing(on: devices[0])
                _ = try await probes.info(0)
                let number = state.withLock { state in defer { state.nextSession += 1 }; return state.nextSession }
                session = try ServiceSession(number: number, probes: probes, devices: devices, group: group,
                                             delays: group == nil ? [:] : DeviceLookup.delays(of: devices), router: router, settings: settings, servers: servers,
                                             descriptors: descriptors, allowances: allowances, startedBy: sender, owner: options.endsWithClient ? sender : nil,
                                             notices: notices, bus: bus, log: log, calls: calls, asker: { await self.asker($0) },
                                             raise: { [path = RouteServiceAPI.sessionPathPrefix + String(number)] in try self.showMovePicker(for: path) },
                                             find: { try await self.find($0, timeout: 3) },
                                             taken: { await self.plays(on: $0, except: $1) })
            } catch {
                claims.forEach(release)
                throw error
            }
        } catch {
            // The items probed ahead (a slow URL, a page) end with the cast that was not made.
            await probes.cancel()
            throw error
        }
        // The devices are the session's once it is among the sessions.
        defer { claims.forEach(release) }
        // Published before its path is returned; run either way, so that a session the bus refused lets its device go.
        let published = Result { try session.publish() }
        state.withLock { $0.sessions[session.path] = session }
        newSessions.continuation.yield(session)
        sessionsChanged()
        try published.get()
        return session.path
    }

    /// The descriptor's file, when it is one route can play; its name for titles.
    private static func check(_ descriptor: DBusDescriptor, number: Int) throws -> String {
        var info = stat()
        let which = "descriptor \(number)"
        guard fstat(descriptor.descriptor, &info) == 0 else { throw MediaError.unreadable(which) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw MediaError.directory(which)
        case S_IFIFO: throw MediaError.notAFile(which, kind: "a pipe")
        case S_IFSOCK: throw MediaError.notAFile(which, kind: "a socket")
        default: throw MediaError.notAFile(which, kind: "not a regular file")
        }
        guard fcntl(descriptor.descriptor, F_GETFL) & O_ACCMODE != O_WRONLY else { throw MediaError.unreadable("\(which) (open for writing only)") }
        if info.st_size == 0 { throw MediaError.emptyFile(which) }
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor.descriptor)")) ?? which
        return URL(fileURLWithPath: target).deletingPathExtension().lastPathComponent
    }

    /// A cast's settings from its options; subtitles only from a file `asker` may name.
    private static func settings(_ options: RouteServiceAPI.CastOptions, asker: Asker) throws -> CastSettings {
        var settings = CastSettings()
        settings.via = options.via?.lowercased()
        if let path = options.subtitles {
            if !path.isEmpty, let refusal = asker.refusesPath(path) ?? SubtitleFile.refusal(path) {
                throw DBusError(name: "org.freedesktop.DBus.Error.AccessDenied", "Cast: subtitles \(refusal)")
            }
            settings.subtitles = path.isEmpty ? .off : .file(path)
        }
        if let seconds = options.imageDuration { settings.imageDuration = .milliseconds(Int(seconds * 1000)) }
        if let seconds = options.startTimeout { settings.startTimeout = .milliseconds(Int(seconds * 1000)) }
        settings.loops = options.loop
        settings.resumes = options.resume
        settings.start = options.start
        return settings
    }

    private func invalid(_ method: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "\(method): wrong arguments")
    }

    // MARK: Sessions

    /// The session a move takes: the one playing on the device `query` names, or (no query) the only one, else the
    /// active one (whose device last started playing).
    /// The session `query` names for `sender` to move: among every session, or for a sandboxed app among its own
    /// (the only or active one of its own, for `""`).
    private func session(playingOn query: String, movedBy sender: String) async throws -> ServiceSession {
        let own = await asker(sender).actsForTheDesktop ? nil : sender
        return try session(playingOn: query, startedBy: own)
    }

    private func session(playingOn query: String, startedBy owner: String?) throws -> ServiceSession {
        // Each with its device as it is now: a session may move meanwhile.
        let playing = state.withLock { Array($0.sessions.values) }.filter { owner.map($0.isStarted(by:)) ?? true }
            .map { (session: $0, device: $0.device) }
        // A sandboxed app's own casts are all it may move: the others are not said to it.
        let own = owner == nil ? "" : " (a sandboxed app moves only the casts it started)"
        guard !playing.isEmpty else {
            throw RouteError(.notCasting, owner == nil
                ? "nothing is being cast by the route service, so there is nothing to move; start a cast with `route cast`"
                : "this app has no cast of the route service's to move\(own)")
        }
        let names = playing.map(\.device.name).sorted()
        let playingOn = names.map { "\"\($0)\"" }.joined(separator: ", ")
        if !query.isEmpty {
            guard let device = try? DeviceMatcher.pick(query, in: playing.map(\.device)),
                  let found = playing.first(where: { $0.device.id == device.id }) else {
                throw RouteError(.notCasting, "no cast of the route service plays on \"\(query)\" (casts play on \(playingOn))\(own)", names: names)
            }
            return found.session
        }
        if playing.count == 1 { return playing[0].session }
        let started = playing.compactMap { entry in entry.session.startedPlaying.map { (entry.session, $0) } }
        guard let active = started.max(by: { $0.1 < $1.1 }) else {
            throw RouteError(.ambiguousDevice, "casts play on \(playingOn); say which to move with --from NAME", names: names)
        }
        return active.0
    }

    private func play(_ session: ServiceSession) async {
        await session.run()
        state.withLock { $0.sessions[session.path] = nil }
        sessionsChanged()
    }

    private func sessionsChanged() {
        bus.emitPropertiesChanged(path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface,
                                  changed: ["Sessions": property("Sessions")!])
    }

    private func emit(_ signal: String, _ arguments: [DBusValue]) {
        bus.emit(path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface, signal: signal, arguments: arguments)
    }
}

/// The calls each client has waiting for an answer, bounded: a client that sends thousands without waiting (or
/// without reading the answers) gets LimitsExceeded beyond the bound, rather than the service holding a task and an
/// answer for each (10,000 unread GetDevices took the service from 43 to 141 MB).
final class CallLimit: Sendable {
    /// The most calls one client has waiting at once.
    static let perClient = 32
    private let waiting = Mutex<[String: Int]>([:])

    /// Runs `answer` for a call of `method` from `reply`'s sender in a task of its own (the D-Bus thread never waits),
    /// or refuses the call when the sender has `perClient` waiting.
    func answer(_ method: String, _ reply: DBusReply, _ answer: @escaping @Sendable () async throws -> [DBusValue]) {
        let sender = reply.sender
        let admitted = waiting.withLock { waiting in
            guard waiting[sender, default: 0] < Self.perClient else { return false }
            waiting[sender, default: 0] += 1
            return true
        }
        guard admitted else {
            return reply(.failure(DBusError(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                            "\(method): this app has \(Self.perClient) calls waiting for answers, the most one app may")))
        }
        Task {
            defer { waiting.withLock { waiting in waiting[sender] = waiting[sender].flatMap { $0 > 1 ? $0 - 1 : nil } } }
            do { reply(.success(try await answer())) } catch {
                reply(.failure(RouteServiceAPI.dbusError(error)))
            }
        }
    }
}

/// The manager object's calls, answered by the service.
private struct ManagerObject: DBusObjectHandler {
    let service: RouteService

    func call(interface: String, method: String, arguments: [DBusValue], reply: DBusReply) {
        service.calls.answer(method, reply) { try await service.handle(method, arguments, sender: reply.sender) }
    }

    func property(interface: String, name: String) -> DBusValue? { service.property(name) }

    func setProperty(interface: String, name: String, value: DBusValue) throws {
        throw DBusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) is read-only")
    }
}
