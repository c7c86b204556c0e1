// RemoteSession: one session of the route service as a client sees it — its status, its events in order (statuses,
// notices, its end), and its controls.

import FoundationEssentials
import Glibc
import RouteCore
import RouteGIO
import Synchronization

/// A session the service plays: its statuses and its controls.
public final class RemoteSession: SessionCommandTaker {
    private let bus: DBusConnection
    /// The session's object path.
    public let path: String
    /// The service's signals from before the session began (a cast's), for the first `events()`: then nothing it
    /// said is missed.
    private let signalsSinceItBegan: Mutex<AsyncStream<DBusSignal>?>

    init(bus: DBusConnection, path: String, signalsSinceItBegan: AsyncStream<DBusSignal>? = nil) {
        self.bus = bus
        self.path = path
        self.signalsSinceItBegan = Mutex(signalsSinceItBegan)
    }

    /// How a session ended: why (`finished`, `stopped`, `failed`, `client-left`, `service-stopped`) and, for a
    /// failure, its D-Bus error name and the line route would print; for a queue that played on past files it had to
    /// skip, the first of those files' error.
    public struct End: Sendable, Equatable {
        public var reason: String
        public var error: String
        public var message: String
        /// The failure as an error (a `RouteError` of the kind its name says, or `RouteServiceError`; the service
        /// stopping under the session is one); nil when the session did not fail.
        public var failure: (any Error)? {
            switch reason {
            case "failed": return RouteServiceAPI.error(name: error, message)
            case "service-stopped": return RouteServiceError(name: RouteServiceAPI.ErrorName.failed, message)
            default: return nil
            }
        }
        /// The error of the first file the queue skipped, when it finished or was stopped after skipping one.
        public var skipped: (any Error)? { failure == nil && !error.isEmpty ? RouteServiceAPI.error(name: error, message) : nil }
    }

    /// What a session's stream of events carries: a status, a notice (what the session did on its own, in words: a
    /// file skipped, an item sent again converted), or its end (the last element).
    public enum Event: Sendable {
        case status(QueueStatus)
        case notice(String)
        case ended(End)
    }

    /// The session's status now, then every change, then its end; the stream finishes after `.ended` (or at once,
    /// with `.ended(service-stopped)`, when the session is gone or the service leaves the bus). The first call on a
    /// session `cast` returned starts from the session's beginning instead: every status it had, in order.
    public func events() -> AsyncStream<Event> {
        let early = signalsSinceItBegan.withLock { stream in
            defer { stream = nil }
            return stream
        }
        let path = self.path
        let changes = early ?? bus.signals(sender: nil, path: path)
        let owners = bus.signals(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                 arg0: RouteServiceAPI.busName)
        return AsyncStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // The name's owner gone (a new owner is another service, which does not know this session).
                        for await signal in owners where signal.arguments.count == 3 && signal.arguments[1] != .string("") {
                            continuation.yield(.ended(End(reason: "service-stopped", error: "", message: "the route service stopped")))
                            continuation.finish()
                        }
                    }
                    group.addTask {
                        // Followed from its beginning, its statuses come as signals; else the one it has now comes first.
                        if early == nil {
                            if let status = try? await self.status() { continuation.yield(.status(status)) } else {
                                continuation.yield(.ended(End(reason: "service-stopped", error: "", message: "the session has ended")))
                                continuation.finish()
                                return
                            }
                        }
                        for await signal in changes where signal.path == path {
                            if signal.name == "Notice", case .string(let words)? = signal.arguments.first {
                                continuation.yield(.notice(words))
                                continue
                            }
                            if signal.name == "Ended" {
                                let words = signal.arguments.map { if case .string(let text) = $0 { return text }; return "" }
                                continuation.yield(.ended(End(reason: words.first ?? "", error: words.count > 1 ? words[1] : "",
                                                             message: words.count > 2 ? words[2] : "")))
                                continuation.finish()
                                return
                            }
                            guard signal.name == "PropertiesChanged", signal.arguments.count > 1,
                                  case .dictionary(let changed) = signal.arguments[1], let value = changed["Status"],
                                  let status = try? DBusCoding.decode(QueueStatus.self, from: value) else { continue }
                            continuation.yield(.status(status))
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The session's status now.
    public func status() async throws -> QueueStatus {
        let reply = try await call("org.freedesktop.DBus.Properties", "Get",
                                   [.string(RouteServiceAPI.sessionInterface), .string("Status")])
        guard let value = reply.first else { throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "no status") }
        return try DBusCoding.decode(QueueStatus.self, from: value.unwrapped)
    }

    /// Sends `command` to the session (the method that says it: `SessionCommand.dbusCall`).
    public func perform(_ command: SessionCommand) async throws {
        let (method, arguments) = command.dbusCall
        _ = try await session(method, arguments)
    }

    public func play() async throws { try await perform(.play) }
    public func pause() async throws { try await perform(.pause) }
    public func togglePause() async throws { try await perform(.togglePause) }
    /// Stops the device and ends the session.
    public func stop() async throws { try await perform(.stop) }
    public func next() async throws { try await perform(.next) }
    /// Seeks to `position` seconds.
    public func seek(to position: Double) async throws { try await perform(.seek(.absolute(position))) }
    /// Seeks by `offset` seconds (negative: back).
    public func seek(by offset: Double) async throws { try await perform(.seek(.relative(offset))) }
    /// Seeks to a position or by an offset.
    public func seek(_ target: SeekTarget) async throws { try await perform(.seek(target)) }
    /// Sets the volume (0…1).
    public func setVolume(_ level: Double) async throws { try await perform(.setVolume(level)) }
    public func changeVolume(by step: Double) async throws { try await perform(.changeVolume(step)) }
    public func setMuted(_ muted: Bool) async throws { try await perform(.setMuted(muted)) }
    public func toggleMute() async throws { try await perform(.toggleMute) }
    /// Leaves the session to the service: it no longer ends when this process leaves the bus.
    public func detach() async throws { _ = try await session("Detach") }
    /// Moves the session to `device` (a name, id or address), as `RouteServiceClient.move(to:from:)` does.
    public func move(to device: String) async throws { _ = try await call(RouteServiceAPI.sessionInterface, "Move", [.string(device)], timeout: .seconds(60)) }
    /// Adds `device` (a name, id or address) to the session's devices: a group's session takes it in, playing from where
    /// the group is; a session on one device refuses (`Unsupported`).
    public func addDevice(_ device: String) async throws { _ = try await call(RouteServiceAPI.sessionInterface, "AddDevice", [.string(device)], timeout: .seconds(60)) }
    /// Takes `device` out of a group's session: it stops, the others play on.
    public func removeDevice(_ device: String) async throws { _ = try await call(RouteServiceAPI.sessionInterface, "RemoveDevice", [.string(device)], timeout: .seconds(60)) }

    /// The devices of a group's session, each with its own volume and mute (empty for a session on one device).
    public func members() async throws -> [RouteServiceAPI.SessionMember] {
        let reply = try await call("org.freedesktop.DBus.Properties", "Get",
                                   [.string(RouteServiceAPI.sessionInterface), .string("Members")])
        guard let value = reply.first?.unwrapped else { return [] }
        return try DBusCoding.decode([RouteServiceAPI.SessionMember].self, from: value)
    }

    /// Sets the volume (`setVolume`) or mute (`setMuted`) of the member of a group's session `device` names, alone
    /// (SetMemberVolume, SetMemberMuted); the group's volume is then its loudest member's.
    /// - Throws: `RouteServiceError` (`Unsupported` for any other command, or a session on one device; `CommandFailed`
    ///   when no member answers to `device`).
    public func perform(_ command: SessionCommand, onMember device: String) async throws {
        let (method, arguments) = command.dbusCall
        guard method == "SetVolume" || method == "SetMuted" else {
            throw RouteServiceError(name: RouteServiceAPI.ErrorName.unsupported, "\(command.word) acts on the whole group, not on \(device) alone")
        }
        _ = try await session(method.replacing("Set", with: "SetMember"), [.string(device)] + arguments)
    }

    private func session(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await call(RouteServiceAPI.sessionInterface, method, arguments)
    }

    private func call(_ interface: String, _ method: String, _ arguments: [DBusValue], timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        do {
            return try await bus.call(RouteServiceAPI.busName, path: path, interface: interface, method: method, arguments, timeout: timeout)
        } catch let error as DBusError {
            throw RouteServiceError.received(error)
        }
    }
}
