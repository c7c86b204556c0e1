// RouteServiceClient: what an app links to use route — devices, casts and their sessions, all through the per-user
// route service over D-Bus. GIO is its only C library: no provider, GStreamer, libupnp, OpenSSL or Avahi.

// The API's values come with the client: an app imports RouteClient alone.
@_exported import RouteAPI
import FoundationEssentials
import Glibc
import RouteCore
import RouteGIO
import Synchronization

/// A connection to the route service on the user's session bus.
///
/// ```swift
/// let route = try await RouteServiceClient.connect()
/// let device = try await route.device(matching: "Living Room")
/// let session = try await route.cast([.path("/music/song.flac")], to: device.id)
/// for await status in session.statusUpdates() { print(status.playback.state) }
/// ```
public final class RouteServiceClient: Sendable {
    private let bus: DBusConnection

    private init(bus: DBusConnection) { self.bus = bus }

    /// Connects to the session bus (or the bus at `address`). The service itself starts with the first call: the bus
    /// activates it where route is installed; otherwise, when `starting` names a route executable, it is started
    /// as `ROUTE service` in the background (as gpg-agent is), and the call waits for it (up to 5 s).
    /// - Throws: `RouteServiceError` when there is no session bus, or the service is not running and cannot start.
    public static func connect(address: String? = nil, starting executable: String? = nil) async throws -> RouteServiceClient {
        let bus: DBusConnection
        do { bus = try DBusConnection.session(address: address) } catch let error as DBusError {
            throw RouteServiceError(name: "org.freedesktop.DBus.Error.NoServer", error.message)
        }
        let client = RouteServiceClient(bus: bus)
        if let executable { try await client.start(executable) }
        return client
    }

    /// Whether a session bus is there to reach a service on (an address that leads to no bus, one left from another
    /// login, is none).
    public static var sessionBusExists: Bool { DBusConnection.sessionBusAnswers }

    /// Whether the service runs now (asking it anything else would start it where the bus can).
    public func isRunning() async throws -> Bool {
        do { return try await bus.nameHasOwner(RouteServiceAPI.busName) } catch let error as DBusError { throw RouteServiceError.received(error) }
    }

    /// Starts `executable service` when nobody has the service's name and the bus cannot activate it.
    private func start(_ executable: String) async throws {
        if try await bus.nameHasOwner(RouteServiceAPI.busName) { return }
        let activatable = try await call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                         method: "ListActivatableNames")
        if activatable.first?.elements.contains(.string(RouteServiceAPI.busName)) == true { return }
        try ServiceLauncher.launch(executable)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if try await bus.nameHasOwner(RouteServiceAPI.busName) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed,
                                "started `\(executable) service`, but it did not take \(RouteServiceAPI.busName) within 5 s; "
                                + "run it in a terminal to see why")
    }

    /// The devices the service knows now, in its order (This computer first).
    public func devices() async throws -> [MediaDevice] {
        try Self.devices(from: try await manager("GetDevices").first)
    }

    /// The device list as it changes: the service searches the network actively while the stream is read (a
    /// lease that ends when it is dropped or this process leaves the bus). The first element is the list now, with
    /// how many seconds the service has been listening (a list after 3 s of listening holds what answers).
    /// It ends with an error when the service leaves the bus.
    public func deviceUpdates() -> AsyncThrowingStream<(devices: [MediaDevice], listening: Double), any Error> {
        let signals = bus.signals(sender: nil, path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface)
        let owners = bus.signals(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                 arg0: RouteServiceAPI.busName)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let reply = try await manager("WatchDevices")
                    let started = ContinuousClock.now
                    let listening = reply.count > 1 ? { if case .double(let seconds) = reply[1] { return seconds }; return 0 }() : 0
                    continuation.yield((try Self.devices(from: reply.first), listening))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await signal in signals where signal.name.hasPrefix("Device") {
                                let elapsed = (ContinuousClock.now - started) / .seconds(1)
                                continuation.yield((try await self.devices(), listening + elapsed))
                            }
                        }
                        group.addTask {
                            for await signal in owners where signal.arguments.count == 3 && signal.arguments[2] == .string("") {
                                throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the route service stopped")
                            }
                        }
                        defer { group.cancelAll() }
                        try await group.next()
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in
                task.cancel()
                Task { _ = try? await self.manager("UnwatchDevices") }
            }
        }
    }

    /// The device `query` names (a name, a prefix, an id, an address), as `route cast --to` finds it; waits up to
    /// `timeout` seconds for it to be found.
    /// - Throws: `RouteError` (`unknownDevice`, `ambiguousDevice`, `deviceUnreachable`), or `RouteServiceError`.
    public func device(matching query: String, timeout: Double = 3) async throws -> MediaDevice {
        let reply = try await manager("FindDevice", [.string(query), .double(timeout)], timeout: .seconds(Int(timeout) + 25))
        guard let value = reply.first else { throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the service sent no device") }
        return try DBusCoding.decode(MediaDevice.self, from: value)
    }

    /// What to cast: a path the service opens (absolute, or relative to this process's directory: a file, a folder,
    /// a playlist), an http(s) URL (media, HLS or DASH, a playlist, a web page), or a descriptor this process opened
    /// (a sandboxed app that sees no paths), sent with the call.
    public enum File: Sendable {
        case path(String)
        case url(String)
        case descriptor(Int32)
    }

    /// What the service does with a cast besides playing it.
    public typealias CastOptions = RouteServiceAPI.CastOptions

    /// Casts `files` as a queue to the device `device` names (its id, or any query `device(matching:)` takes) and
    /// returns the session once the service has checked the files and found the device (before the device plays).
    /// - Throws: `RouteError` of the failure's kind (`badInput` for a file, `unknownDevice`, `deviceUnreachable`, …), or
    ///   `RouteServiceError` (`Failed`, the bus's own errors).
    public func cast(_ files: [File], to device: String, options: CastOptions = CastOptions()) async throws -> RemoteSession {
        let directory = FileManager.default.currentDirectoryPath
        let paths = files.compactMap { file -> String? in
            switch file {
            case .url(let url): return url
            case .path(let path):
                return path.hasPrefix("/") ? path : URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: directory)).standardizedFileURL.path
            case .descriptor: return nil
            }
        }
        let descriptors = files.compactMap { file -> DBusValue? in
            guard case .descriptor(let descriptor) = file else { return nil }
            return .fileDescriptor(DBusDescriptor(sending: descriptor))
        }
        // The service's signals, followed from before the call: the session plays as soon as the service has answered,
        // and a short first item can play and end before a subscription made after the answer (by events()) would
        // be heard by the bus — `route cast` through the service then never said it played.
        let early = bus.signals(sender: RouteServiceAPI.busName)
        let reply = try await manager("Cast", [.string(device), .strings(paths), .array(elementType: "h", descriptors),
                                               try DBusCoding.encode(options)], timeout: .seconds(60))
        guard case .objectPath(let path)? = reply.first else {
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the service answered the cast without a session")
        }
        return RemoteSession(bus: bus, path: path, signalsSinceItBegan: early)
    }

    /// A session another controller plays, mirrored on the desktop's media controls.
    public typealias Mirror = RouteServiceAPI.Mirror

    /// The mirrors the service publishes now, then each one that starts or ends, until the stream is dropped (or
    /// ends with an error when the service leaves the bus).
    public func mirrorEvents() -> AsyncThrowingStream<Mirror, any Error> {
        let signals = bus.signals(sender: nil, path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface, member: "Mirror")
        let owners = bus.signals(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                 arg0: RouteServiceAPI.busName)
        return AsyncThrowingStream { continuation in
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await signal in owners where signal.arguments.count == 3 && signal.arguments[1] != .string("") {
                            continuation.finish(throwing: RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the route service stopped"))
                            return
                        }
                    }
                    group.addTask {
                        do {
                            let reply = try await self.call(RouteServiceAPI.busName, path: RouteServiceAPI.managerPath,
                                                            interface: "org.freedesktop.DBus.Properties", method: "Get",
                                                            [.string(RouteServiceAPI.managerInterface), .string("Mirrors")])
                            for value in reply.first?.unwrapped.elements ?? [] {
                                continuation.yield(try DBusCoding.decode(Mirror.self, from: value))
                            }
                        } catch {
                            continuation.finish(throwing: error)
                            return
                        }
                        for await signal in signals {
                            guard let value = signal.arguments.first, let mirror = try? DBusCoding.decode(Mirror.self, from: value) else { continue }
                            continuation.yield(mirror)
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// A desktop-audio sink the service keeps for a device (`startSink`).
    public typealias Sink = RouteServiceAPI.Sink

    /// How a sink plays (each nil: the service's default).
    public typealias SinkOptions = RouteServiceAPI.SinkOptions

    /// Asks the service to keep a desktop-audio sink for `device` (a name, id or address, as for casts): it is on the
    /// sound server while the device is on the network, plays there when sound plays into it, and stays until
    /// `stopSink`. Asking again for the same device returns the sink it has.
    public func startSink(for device: String, options: SinkOptions = SinkOptions()) async throws -> Sink {
        let reply = try await manager("StartSink", [.string(device), try DBusCoding.encode(options)])
        guard let value = reply.first else { throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "StartSink returned nothing") }
        return try DBusCoding.decode(Sink.self, from: value)
    }

    /// Removes the service's sink for `device` (its name or id).
    public func stopSink(for device: String) async throws {
        _ = try await manager("StopSink", [.string(device)])
    }

    /// The sinks the service keeps.
    public func sinks() async throws -> [Sink] {
        let reply = try await call(RouteServiceAPI.busName, path: RouteServiceAPI.managerPath, interface: "org.freedesktop.DBus.Properties",
                                   method: "Get", [.string(RouteServiceAPI.managerInterface), .string("Sinks")])
        return try (reply.first?.unwrapped.elements ?? []).map { try DBusCoding.decode(Sink.self, from: $0) }
    }

    /// Moves a session to `device` (a name, id or address): the session playing on the device `from` names, or (nil)
    /// the only session, else the one that last started playing. The session goes on there from where it was and its
    /// old device stops; if the new device does not take it, it plays on where it was and this throws why.
    /// - Returns: the session moved.
    @discardableResult
    public func move(to device: String, from: String? = nil) async throws -> RemoteSession {
        // A move that fails may take its whole 15 s, after finding the device and before the old one plays again.
        let reply = try await manager("Move", [.string(device), .string(from ?? "")], timeout: .seconds(60))
        guard case .objectPath(let path)? = reply.first else {
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "Move returned no session")
        }
        return RemoteSession(bus: bus, path: path)
    }

    /// Shows the service's device picker — a window of its own, over `parentWindow` ("x11:XID") when given — for a
    /// person to choose a device that can play `media`; returns it, or nil when they closed the picker. The window
    /// opens on this process's display (DISPLAY, WAYLAND_DISPLAY).
    /// - Throws: `RouteServiceError` when there is no display, the picker cannot start, or the service stops meanwhile.
    public func pickDevice(media: PickMedia? = nil, parentWindow: String = "", title: String? = nil) async throws -> MediaDevice? {
        try await pick(RouteServiceAPI.PickOptions(media: media?.rawValue, title: title), parentWindow: parentWindow)
    }

    /// Shows the service's device picker to move a session: the one playing on the device `from` names, or (nil) the
    /// only or active one, as `move(to:from:)` finds it. The session moves to the device the person chooses, in the
    /// window, which says so and closes; returns that device, or nil when they closed the picker before choosing one
    /// (nothing moved; a window closed while the move is under way answers once it has).
    /// - Throws: `RouteError` (`notCasting` when nothing plays), or as `pickDevice(media:)` otherwise.
    public func pickDeviceToMove(from: String? = nil, parentWindow: String = "") async throws -> MediaDevice? {
        try await pick(RouteServiceAPI.PickOptions(moveFrom: from ?? ""), parentWindow: parentWindow)
    }

    /// A PickDevice request with `options`, and the device its Response gives.
    private func pick(_ given: RouteServiceAPI.PickOptions, parentWindow: String) async throws -> MediaDevice? {
        // Listening before asking: the answer may come at once.
        let responses = bus.signals(interface: RouteServiceAPI.requestInterface, member: "Response")
        let owners = bus.signals(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                 arg0: RouteServiceAPI.busName)
        var options = given
        // The window opens on this process's display.
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        options.display = environment["DISPLAY"]
        options.waylandDisplay = environment["WAYLAND_DISPLAY"]
        options.xauthority = environment["XAUTHORITY"]
        let reply = try await manager("PickDevice", [.string(parentWindow), try DBusCoding.encode(options)])
        guard case .objectPath(let handle)? = reply.first else {
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "PickDevice returned no request")
        }
        let answer: (UInt32, [String: DBusValue])? = await withTaskCancellationHandler {
            await withTaskGroup(of: (UInt32, [String: DBusValue])?.self) { group in
                group.addTask {
                    for await signal in responses where signal.path == handle && signal.arguments.count == 2 {
                        guard case .uint32(let code) = signal.arguments[0], case .dictionary(let results) = signal.arguments[1].unwrapped else { continue }
                        return (code, results)
                    }
                    return nil
                }
                group.addTask {
                    for await signal in owners where signal.arguments.count == 3 && signal.arguments[2] == .string("") { return nil }
                    return nil
                }
                defer { group.cancelAll() }
                return await group.next() ?? nil
            }
        } onCancel: {
            Task { [bus] in _ = try? await bus.call(RouteServiceAPI.busName, path: handle, interface: RouteServiceAPI.requestInterface, method: "Close") }
        }
        try Task.checkCancellation()
        guard let (code, results) = answer else {
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the route service stopped before the picker answered")
        }
        switch code {
        case 0:
            guard let value = results["device"] else { throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the picker chose no device") }
            return try DBusCoding.decode(MediaDevice.self, from: value)
        case 1: return nil
        default:
            let words = results["error"].flatMap { if case .string(let text) = $0.unwrapped { return text }; return nil }
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, words ?? "the picker failed")
        }
    }

    /// What a device plays now: a session of the service's (which `move(to:from:)` can move), or another controller's
    /// that the service mirrors.
    public struct Playing: Sendable, Equatable {
        /// The device it plays on, as its session knows it (a device named by address is in no device list).
        public var device: MediaDevice
        /// The item's title.
        public var title: String
        /// The service's own session (nil: another controller's, mirrored).
        public var session: String?

        /// `title` on `device`, played by the service's session at path `session`, or mirrored when nil.
        public init(device: MediaDevice, title: String, session: String?) {
            self.device = device
            self.title = title
            self.session = session
        }
    }

    /// What plays on each device (by device id) now, then again each time that changes — a session starts, ends, moves
    /// or plays another item, a mirror starts or ends — until the stream is dropped; it ends with an error when the
    /// service leaves the bus. A device playing in a session of the service's and mirrored shows the session.
    public func playingUpdates() -> AsyncThrowingStream<[String: Playing], any Error> {
        let changes = bus.signals(sender: RouteServiceAPI.busName, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
        let mirrors = bus.signals(path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface, member: "Mirror")
        let owners = bus.signals(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                 arg0: RouteServiceAPI.busName)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        // Each change wakes the reader; bursts (a session's several properties) make one reading.
                        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                        // Only what changes who plays what: not a session's position, which changes all the time.
                        group.addTask {
                            for await signal in changes where signal.path.hasPrefix(RouteServiceAPI.managerPath) && signal.arguments.count > 1 {
                                guard case .dictionary(let changed) = signal.arguments[1].unwrapped else { continue }
                                if !changed.keys.filter(["Sessions", "Item", "Device"].contains).isEmpty { wake.yield() }
                            }
                        }
                        group.addTask { for await _ in mirrors { wake.yield() } }
                        group.addTask {
                            for await signal in owners where signal.arguments.count == 3 && signal.arguments[2] == .string("") {
                                throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the route service stopped")
                            }
                        }
                        group.addTask {
                            var last: [String: Playing]?
                            wake.yield()
                            var failures = 0
                            for await _ in wakes {
                                // A reading that fails (a session ending as it is read) is tried again in a moment; the
                                // fifth failure in a row ends the stream with its error, as the service leaving does.
                                let now: [String: Playing]
                                do {
                                    now = try await self.playingNow()
                                    failures = 0
                                } catch {
                                    failures += 1
                                    if failures == 5 { throw error }
                                    try await Task.sleep(for: .milliseconds(500))
                                    wake.yield()
                                    continue
                                }
                                if now != last { continuation.yield(now) }
                                last = now
                            }
                        }
                        defer { group.cancelAll() }
                        try await group.next()
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// What plays on each device now: the service's sessions over the mirrors of other controllers' sessions.
    private func playingNow() async throws -> [String: Playing] {
        var playing: [String: Playing] = [:]
        let reply = try await call(RouteServiceAPI.busName, path: RouteServiceAPI.managerPath, interface: "org.freedesktop.DBus.Properties",
                                   method: "Get", [.string(RouteServiceAPI.managerInterface), .string("Mirrors")])
        for value in reply.first?.unwrapped.elements ?? [] {
            guard let mirror = try? DBusCoding.decode(Mirror.self, from: value), !mirror.ended else { continue }
            playing[mirror.device.id] = Playing(device: mirror.device, title: mirror.title ?? "something", session: nil)
        }
        for session in try await sessions() {
            // A session that ended between the two calls is no longer there to ask.
            guard let status = try? await session.status() else { continue }
            playing[status.device.id] = Playing(device: status.device, title: status.title, session: session.path)
        }
        return playing
    }

    /// The sessions the service plays now.
    public func sessions() async throws -> [RemoteSession] {
        let reply = try await call(RouteServiceAPI.busName, path: RouteServiceAPI.managerPath, interface: "org.freedesktop.DBus.Properties",
                                   method: "Get", [.string(RouteServiceAPI.managerInterface), .string("Sessions")])
        return (reply.first?.unwrapped.elements ?? []).compactMap {
            guard case .objectPath(let path) = $0 else { return nil }
            return RemoteSession(bus: bus, path: path)
        }
    }

    private func manager(_ method: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        try await call(RouteServiceAPI.busName, path: RouteServiceAPI.managerPath, interface: RouteServiceAPI.managerInterface,
                       method: method, arguments, timeout: timeout)
    }

    private func call(_ destination: String, path: String, interface: String, method: String, _ arguments: [DBusValue] = [],
                      timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        do {
            return try await bus.call(destination, path: path, interface: interface, method: method, arguments, timeout: timeout)
        } catch let error as DBusError {
            throw RouteServiceError.received(error)
        }
    }

    private static func devices(from value: DBusValue?) throws -> [MediaDevice] {
        try (value?.elements ?? []).map { try DBusCoding.decode(MediaDevice.self, from: $0) }
    }
}

/// Starts the service in the background when the bus cannot (route not installed): a process of its own, in a
/// session of its own, its output in the runtime directory's `service.log`.
enum ServiceLauncher {
    static func launch(_ executable: String) throws {
        do { try DetachedProcess.start(executable, ["service", "--background"]) } catch {
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "\(error)")
        }
    }
}
