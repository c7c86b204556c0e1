// PluginProvider: a drop-in plugin as one provider in the router — started only while discovery or a session
// needs it (PluginSupervisor), restarted with backoff and quarantined by the router, and its sessions as
// RouteControllers (PluginController).

import Foundation
import RouteCore
import RoutePluginProtocol
import Synchronization

/// A provider whose protocol lives in a plugin executable (`route-provider-NAME`), spoken to over
/// Plugins/PROTOCOL.md. Its process runs while the router discovers or a controller is open, and a little
/// longer (`linger`), so that a cast chosen by discovery reuses it.
public final class PluginProvider: RouteProvider {
    public let name: String
    /// The plugin's executable.
    public let executable: String
    private let supervisor: PluginSupervisor

    /// A provider for the plugin at `path`, named `name` (what follows `route-provider-` in its file name).
    public init(name: String, path: String) {
        self.name = name
        executable = path
        supervisor = PluginSupervisor(name: name, path: path)
    }

    public var path: String? { executable }

    /// Kills every plugin process still running, at once: for a process about to exit, so that a plugin that
    /// ignores the end of its stdin cannot outlive it.
    public static func killAll() { PluginProcess.killAll() }

    /// From 1 s doubling to 5 min; after 5 failures in 3 minutes, not again until its file changes.
    public var restartPolicy: RestartPolicy {
        let path = executable
        return RestartPolicy(firstBackoff: .seconds(1), maxBackoff: .seconds(300),
                             quarantine: .init(failures: 5, window: .seconds(180)) { await FileIdentity.waitForChange(of: path) })
    }

    public func run(_ context: ProviderContext) async throws {
        let connection = try await supervisor.acquire(log: context.log)
        do {
            try await connection.discover(context)
        } catch {
            await supervisor.release()
            throw error
        }
        await supervisor.release()
    }

    /// Asks the plugin, when it answers `device/resolve` (starting it for that); nil from one that does not.
    public func route(at address: String, context: ProviderContext) async throws -> MediaRoute? {
        let connection: PluginConnection
        do {
            connection = try await supervisor.acquire(log: context.log)
        } catch {
            // A broken plugin is not a reason to fail an address other providers might have reached.
            context.log(.error, "\(error)")
            return nil
        }
        let result: Result<WireDevice?, any Error>
        do { result = .success(try await connection.resolve(address)) } catch { result = .failure(error) }
        await supervisor.release()
        switch result {
        case .success(let device): return device?.route(provider: name)
        case .failure(let error as RPCError): throw error.routeError(device: address, command: "resolve")
        case .failure(let error):
            context.log(.error, "\(error)")
            return nil
        }
    }

    public func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController {
        let connection: PluginConnection
        do {
            connection = try await supervisor.acquire(log: context.log)
        } catch {
            throw RouteError.deviceUnreachable(device: route.name, reason: "\(error)")
        }
        let controller = PluginController(route: route, connection: connection, supervisor: supervisor)
        do {
            try await controller.open()
        } catch {
            await controller.close()
            throw controller.mapped(error, command: "open")
        }
        return controller
    }
}

/// Starts the plugin's process on first need, shares it among discovery and sessions, and stops it `linger`
/// after the last one is done.
actor PluginSupervisor {
    let name: String
    let path: String
    /// How long an unused plugin keeps running.
    static let linger: Duration = .seconds(2)
    private var connection: PluginConnection?
    private var starting: Task<PluginConnection, any Error>?
    private var users = 0
    private var stopping: Task<Void, Never>?

    init(name: String, path: String) {
        self.name = name
        self.path = path
    }

    /// The running plugin, started (and initialized) if it is not; each call needs a `release()`.
    func acquire(log: RouteLog) async throws -> PluginConnection {
        stopping?.cancel()
        stopping = nil
        // No suspension between this check and counting the user: a stop that is due cannot slip in between.
        if let connection, connection.isAlive {
            users += 1
            return connection
        }
        if starting == nil {
            let (name, path) = (self.name, self.path)
            // Owned by this actor: it ends when the handshake does; the pump it starts ends with the process.
            starting = Task {
                let process = try PluginProcess.spawn(path: path, name: name, log: log)
                let connection = PluginConnection(name: name, process: process, log: log)
                Task { await connection.pump() }
                _ = try await connection.initialize()
                return connection
            }
        }
        let task = starting!
        do {
            let started = try await task.value
            if starting == task { starting = nil }
            connection = started
            users += 1
            return started
        } catch {
            if starting == task { starting = nil }
            throw error
        }
    }

    /// One user is done; the last one's release stops the plugin after `linger`.
    func release() {
        users = max(0, users - 1)
        guard users == 0, let connection else { return }
        stopping = Task {
            try? await Task.sleep(for: Self.linger)
            guard !Task.isCancelled else { return }
            await self.stop(connection)
        }
    }

    private func stop(_ stale: PluginConnection) async {
        guard users == 0, connection === stale else { return }
        connection = nil
        await stale.shutdown()
    }
}

/// One session on a plugin's device.
final class PluginController: RouteController {
    let route: MediaRoute
    private let connection: PluginConnection
    private let supervisor: PluginSupervisor
    private let session: String
    private let statuses = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    private let closed = Mutex(false)
    private static let counter = Mutex(0)

    init(route: MediaRoute, connection: PluginConnection, supervisor: PluginSupervisor) {
        self.route = route
        self.connection = connection
        self.supervisor = supervisor
        session = Self.counter.withLock { count in
            count += 1
            return "s\(count)"
        }
    }

    func open() async throws {
        try await connection.open(session, route: route, statuses: statuses)
    }

    /// Until the plugin fails: then the device is as good as gone, and its status says so.
    func run() async throws {
        do {
            try await connection.failed()
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            var status = statuses.latest ?? PlaybackStatus(state: .idle)
            if !status.isFinal {
                status.error = "\(error)"
                status.end(.failed, because: .deviceGone)
                status.timestamp = Date()
                statuses.send(status)
            }
            throw RouteError.deviceUnreachable(device: route.name, reason: "\(error)")
        }
    }

    func load(_ item: MediaItem, autoplay: Bool) async throws {
        try await call(PluginMethod.load, LoadParams(session: session, item: WireItem(item), autoplay: autoplay), command: "load")
    }

    func play() async throws { try await call(PluginMethod.play, PlayParams(session: session), command: "play") }

    func play(at instant: Date) async throws -> Bool {
        guard await connection.info?.features.timedPlay == true else { return false }
        try await call(PluginMethod.play, PlayParams(session: session, at: instant.timeIntervalSince1970), command: "play")
        return true
    }
    func pause() async throws { try await call(PluginMethod.pause, SessionParams(session: session), command: "pause") }
    func stop() async throws { try await call(PluginMethod.stop, SessionParams(session: session), command: "stop") }

    func seek(to seconds: Double) async throws {
        try await call(PluginMethod.seek, SeekParams(session: session, position: seconds), command: "seek")
    }

    func setVolume(_ level: Double) async throws {
        try await call(PluginMethod.volume, VolumeParams(session: session, level: min(1, max(0, level))), command: "volume")
    }

    func setMuted(_ muted: Bool) async throws {
        try await call(PluginMethod.mute, MuteParams(session: session, muted: muted), command: "mute")
    }

    func setNext(_ item: MediaItem) async throws -> Bool {
        let result: DoneResult = try await ask(PluginMethod.next, LoadParams(session: session, item: WireItem(item)), command: "next")
        return result.done
    }

    func skipToNext() async throws -> Bool {
        let result: DoneResult = try await ask(PluginMethod.skip, SessionParams(session: session), command: "next")
        return result.done
    }

    func statusUpdates() -> AsyncStream<PlaybackStatus> { statuses.subscribe() }

    func close() async {
        let first = closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        await connection.close(session)
        statuses.finish()
        await supervisor.release()
    }

    private func call(_ method: String, _ params: some Encodable & Sendable, command: String) async throws {
        let _: Nothing = try await ask(method, params, command: command)
    }

    private func ask<Result: Decodable & Sendable>(_ method: String, _ params: some Encodable & Sendable, command: String) async throws -> Result {
        guard !closed.withLock({ $0 }) else {
            throw RouteError.deviceUnreachable(device: route.name, reason: "its session is closed")
        }
        do {
            return try await connection.call(method, params)
        } catch {
            throw mapped(error, command: command)
        }
    }

    /// The RouteError for what a call threw.
    func mapped(_ error: any Error, command: String) -> any Error {
        switch error {
        case let error as RPCError: return error.routeError(device: route.name, command: command)
        case is CancellationError, is RouteError: return error
        default: return RouteError.deviceUnreachable(device: route.name, reason: "\(error)")
        }
    }
}

/// A file's identity as far as a quarantine cares: it changes when the file is replaced or rewritten.
enum FileIdentity {
    static func of(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [Int(info.st_ino), Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_mode)]
    }

    /// Returns when the file at `path` is not what it was when this was called (checked every 2 s), or when
    /// the task is cancelled.
    static func waitForChange(of path: String) async {
        let before = of(path)
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            if of(path) != before { return }
        }
    }
}
