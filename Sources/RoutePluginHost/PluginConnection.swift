// PluginConnection: the host's end of one running plugin's channel — the handshake, calls with ids and deadlines,
// notifications in both directions, and what a broken plugin does to all of them (they fail with its reason).

import Foundation
import RouteCore
import RoutePluginProtocol
import Synchronization

/// One started plugin. Made and owned by `PluginSupervisor`; `pump()` must run for replies to arrive.
actor PluginConnection {
    let name: String
    let process: PluginProcess
    private let writer: FrameWriter
    private let log: RouteLog
    private var nextID = 1
    private var pending: [Int: (method: String, continuation: CheckedContinuation<Data?, any Error>)] = [:]
    private var failure: (any Error)?
    /// Whether it still works, readable without a hop onto the actor (the supervisor decides on it at once).
    private nonisolated let working = Mutex(true)
    private let alive = Broadcast<Bool>(initial: true)
    private var devicesSink: (@Sendable ([WireDevice]) -> Void)?
    private var sessions: [String: Broadcast<PlaybackStatus>] = [:]
    private var limiter = LogLimiter()
    /// The plugin's answer to `initialize`.
    private(set) var info: InitializeResult?

    init(name: String, process: PluginProcess, log: RouteLog) {
        self.name = name
        self.process = process
        self.log = log
        writer = FrameWriter(fd: process.input)
    }

    /// The deadlines of calls, by method: a load may wait for a device; nothing else should take long.
    static func timeout(for method: String) -> Duration {
        switch method {
        case PluginMethod.open, PluginMethod.load, PluginMethod.next: return .seconds(30)
        case PluginMethod.resolve: return .seconds(10)
        case PluginMethod.initialize, PluginMethod.discoveryStart, PluginMethod.discoveryStop: return .seconds(5)
        case PluginMethod.shutdown: return .seconds(1)
        default: return .seconds(10)
        }
    }

    // MARK: handshake and shutdown

    /// `initialize`: agrees on a version or fails with words that say which versions each side speaks.
    func initialize() async throws -> InitializeResult {
        let offer = InitializeParams(protocolVersions: pluginProtocolVersions, host: PeerInfo(name: "route", version: routeVersion),
                                     trace: log.tracing)
        let result: InitializeResult
        do {
            result = try await call(PluginMethod.initialize, offer)
        } catch let error as RPCError where error.code == RPCError.versionMismatch {
            throw fail(PluginError.protocolViolation(plugin: name, reason: "refused route's protocol versions \(pluginProtocolVersions): \(error.message)"))
        } catch let error as RPCError {
            throw fail(PluginError.protocolViolation(plugin: name, reason: "failed initialize: \(error.message)"))
        }
        guard pluginProtocolVersions.highestCommon(with: result.protocolVersions) != nil, result.protocolVersions.min <= result.protocolVersions.max,
              (pluginProtocolVersions.min...pluginProtocolVersions.max).contains(result.protocolVersion),
              (result.protocolVersions.min...result.protocolVersions.max).contains(result.protocolVersion) else {
            throw fail(PluginError.protocolViolation(
                plugin: name, reason: "speaks protocol versions \(result.protocolVersions), and route speaks \(pluginProtocolVersions); "
                    + "update route or the plugin"))
        }
        info = result
        return result
    }

    /// Asks it to stop (`shutdown`, then `exit`), and stops it if it does not within a second.
    func shutdown() async {
        if failure == nil {
            let _: Nothing? = try? await call(PluginMethod.shutdown, Nothing())
            try? notify(PluginMethod.exit, Nothing())
            _ = await process.waitForExit(timeout: .seconds(1))
        }
        _ = fail(PluginError.exited(plugin: name, how: "was stopped", lastWords: nil))
    }

    // MARK: calls

    /// Calls `method` and waits for its result, at most its deadline (`timeout(for:)`).
    /// - Throws: the plugin's `RPCError`; `PluginError` when it is broken, gone, or did not answer in time
    ///   (then it is stopped: a plugin that hangs on one call cannot be trusted with the next).
    func call<Result: Decodable & Sendable>(_ method: String, _ params: some Encodable & Sendable) async throws -> Result {
        if let failure { throw failure }
        let id = nextID
        nextID += 1
        let seconds = Int(Self.timeout(for: method).components.seconds)
        let timer = Task { [weak self] in
            try await Task.sleep(for: Self.timeout(for: method))
            await self?.timedOut(id, method: method, seconds: seconds)
        }
        defer { timer.cancel() }
        let raw: Data? = try await withCheckedThrowingContinuation { continuation in
            pending[id] = (method, continuation)
            write(.request(id: .number(id), method: method, params: RPCCoding.encode(params)))
        }
        do {
            return try RPCCoding.decode(Result.self, from: raw)
        } catch {
            throw fail(PluginError.protocolViolation(plugin: name, reason: "answered \(method) with a result that does not fit: \(error.message)"))
        }
    }

    /// Sends a notification.
    func notify(_ method: String, _ params: some Encodable & Sendable) throws {
        if let failure { throw failure }
        write(.notification(method: method, params: RPCCoding.encode(params)))
    }

    /// Writes on the writer's own queue (a plugin that does not read cannot block route's threads); a write that
    /// fails fails the connection.
    private func write(_ message: RPCMessage) {
        writer.enqueue(message) { [weak self, name] error in
            Task { await self?.failWriting(PluginError.protocolViolation(plugin: name, reason: "\(error)")) }
        }
    }

    private func failWriting(_ error: PluginError) { _ = fail(error) }

    private func timedOut(_ id: Int, method: String, seconds: Int) {
        guard pending[id] != nil else { return }
        _ = fail(PluginError.timedOut(plugin: name, method: method, seconds: seconds))
    }

    // MARK: what the plugin sends

    /// Reads the plugin's messages until its channel ends or breaks; then the connection has failed.
    func pump() async {
        do {
            for try await message in FrameReader.messages(from: process.output, name: "plugin-\(name)") {
                switch message {
                case .success(let message): receive(message)
                case .failure(let error): throw PluginError.protocolViolation(plugin: name, reason: "wrote garbage to its channel: \(error.message)")
                }
                if failure != nil { break }
            }
            let how = await process.waitForExit(timeout: .milliseconds(500)) ?? "closed its channel"
            _ = fail(PluginError.exited(plugin: name, how: how, lastWords: process.lastWords))
        } catch let error as PluginError {
            _ = fail(error)
        } catch {
            _ = fail(PluginError.protocolViolation(plugin: name, reason: "wrote garbage to its channel: \(error)"))
        }
        await process.terminate()
    }

    private func receive(_ message: RPCMessage) {
        switch message {
        case .response(.number(let id), let result):
            pending.removeValue(forKey: id)?.continuation.resume(returning: result)
        case .failure(.number(let id)?, let error):
            pending.removeValue(forKey: id)?.continuation.resume(throwing: error)
        case .failure(nil, let error):
            // JSON-RPC's answer to a message it could not read: route's own messages are well-formed, so say it.
            log(.error, "\(name): the plugin could not read a message from route: \(error.message)")
        case .response, .failure:
            _ = fail(PluginError.protocolViolation(plugin: name, reason: "answered a call route never made"))
        case .request(let id, let method, _):
            write(.failure(id: id, error: RPCError(code: RPCError.methodNotFound, message: "route has no method \(method)")))
        case .notification(let method, let params):
            do {
                try handle(method, params)
            } catch {
                _ = fail(PluginError.protocolViolation(plugin: name, reason: "sent \(method) that does not fit: \(error.message)"))
            }
        }
    }

    private func handle(_ method: String, _ params: Data?) throws(RPCError) {
        switch method {
        case PluginMethod.devices:
            let snapshot = try RPCCoding.decode(DevicesParams.self, from: params)
            devicesSink?(snapshot.devices)
        case PluginMethod.status:
            let report = try RPCCoding.decode(StatusParams.self, from: params)
            guard let status = report.status.status else {
                throw RPCError(code: RPCError.invalidParams, message: "unknown state \"\(report.status.state)\"")
            }
            sessions[report.session]?.send(status)
        case PluginMethod.log:
            let line = try RPCCoding.decode(LogParams.self, from: params)
            let level: RouteLog.Level = line.level == "debug" ? .debug : line.level == "error" ? .error : .notice
            let log = self.log
            let name = self.name
            limiter.pass(now: .now) { dropped in
                if dropped > 0 { log(.notice, "\(name): (\(dropped) log lines from the plugin were dropped: too many)") }
                log(level, "\(name): \(line.message)")
            }
        default:
            log(.debug, "ignoring the notification \(method)")
        }
    }

    // MARK: failure

    /// Marks the connection failed (once; later reasons are dropped), fails every waiting call, ends every
    /// session's statuses and stops the process. Returns the failure that holds.
    private func fail(_ error: any Error) -> any Error {
        if let failure { return failure }
        failure = error
        working.withLock { $0 = false }
        for (_, call) in pending { call.continuation.resume(throwing: error) }
        pending = [:]
        alive.send(false)
        alive.finish()
        devicesSink = nil
        let process = self.process
        Task { await process.terminate() }
        return error
    }

    /// Whether it still works.
    nonisolated var isAlive: Bool { working.withLock { $0 } }

    /// Returns when the connection has failed, throwing why; throws `CancellationError` when cancelled first.
    nonisolated func failed() async throws {
        for await up in alive.subscribe() where !up { break }
        try Task.checkCancellation()
        throw await failure ?? PluginError.exited(plugin: name, how: "ended", lastWords: nil)
    }

    // MARK: discovery and sessions

    /// Runs discovery on the plugin until cancelled (then `discovery/stop`) or until the plugin fails (then
    /// it throws why): its device snapshots go to `context`, and the discovery results it asked for go to it.
    func discover(_ context: ProviderContext) async throws {
        guard let info else { throw PluginError.protocolViolation(plugin: name, reason: "was not initialized") }
        context.report(version: info.plugin.version)
        let provider = name
        devicesSink = { devices in context.publish(devices.map { $0.route(provider: provider) }) }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                if !info.features.dnssd.isEmpty, let dnssd = context.discovery.dnssd {
                    let events = dnssd.subscribe(types: info.features.dnssd)
                    group.addTask { for await event in events { try await self.notify(PluginMethod.dnssd, DNSSDParams(event)) } }
                }
                if !info.features.ssdp.isEmpty, let ssdp = context.discovery.ssdp {
                    let events = ssdp.subscribe(targets: info.features.ssdp)
                    group.addTask { for await event in events { try await self.notify(PluginMethod.ssdp, SSDPParams(event)) } }
                }
                let _: Nothing = try await self.call(PluginMethod.discoveryStart, Nothing())
                // Until the plugin fails (throws why) or discovery is cancelled; the forwarding ends with it.
                try await self.failed()
            }
        } catch is CancellationError {
            devicesSink = nil
            let _: Nothing? = try? await call(PluginMethod.discoveryStop, Nothing())
            throw CancellationError()
        }
    }

    /// The device the plugin finds at `address`, when it answers `device/resolve` and speaks to that address.
    func resolve(_ address: String) async throws -> WireDevice? {
        guard info?.features.resolve == true else { return nil }
        let result: ResolveResult = try await call(PluginMethod.resolve, ResolveParams(address: address))
        return result.device
    }

    /// Opens a session on `route`'s device; its statuses go to `statuses`.
    func open(_ session: String, route: MediaRoute, statuses: Broadcast<PlaybackStatus>) async throws {
        sessions[session] = statuses
        do {
            let _: Nothing = try await call(PluginMethod.open, OpenParams(session: session, device: WireDevice(route)))
        } catch {
            sessions[session] = nil
            throw error
        }
    }

    /// Closes a session: no statuses reach it after this.
    func close(_ session: String) async {
        guard sessions.removeValue(forKey: session) != nil, failure == nil else { return }
        let _: Nothing? = try? await call(PluginMethod.close, SessionParams(session: session))
    }
}

/// The version of route the host reports to plugins.
let routeVersion = "0.9"
