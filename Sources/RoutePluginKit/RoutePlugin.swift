// RoutePluginKit: writes the plugin side of Plugins/PROTOCOL.md for a provider written against RouteCore — the
// stdout redirect, framing, handshake and dispatch — so that a plugin is its RouteProvider and one call.

import Foundation
import RouteCore
@_exported import RoutePluginProtocol
import Synchronization

/// The entry point of a Swift plugin:
///
/// ```swift
/// @main enum Main {
///     static func main() async {
///         await RoutePlugin.serve(MyProvider(), version: "1.0", features: PluginFeatures(dnssd: ["_my._tcp"]))
///     }
/// }
/// ```
///
/// The provider is written as a built-in one is: `run(_:)` discovers (its context's DNS-SD and SSDP give what
/// the host resolves for the types in `features`) and publishes; `controller(for:context:)` opens a device.
/// Its routes carry its `name`, which should be the NAME of its file (`route-provider-NAME`): the host names
/// them after the file either way. Everything printed goes to stderr, which route logs.
public enum RoutePlugin {
    /// Serves the protocol on stdin and stdout until the host says `exit` or goes away; never returns.
    public static func serve(_ provider: any RouteProvider, version: String, features: PluginFeatures = PluginFeatures()) async -> Never {
        // The channel is a copy of stdout; stdout itself becomes stderr, so that a print cannot corrupt it.
        let channel = dup(STDOUT_FILENO)
        dup2(STDERR_FILENO, STDOUT_FILENO)
        signal(SIGPIPE, SIG_IGN)
        let server = PluginServer(provider: provider, version: version, features: features, writer: FrameWriter(fd: channel))
        await server.serve(FrameReader.messages(from: STDIN_FILENO, name: "route-plugin-channel"))
        exit(0)
    }
}

/// The plugin's end of the channel: answers the host's calls with the provider and its controllers.
actor PluginServer {
    private let provider: any RouteProvider
    private let version: String
    private let features: PluginFeatures
    private let writer: FrameWriter
    private var initialized = false
    /// Whether the host shows `debug` lines (else they are not sent).
    private var tracing = false
    private var discovery: Task<Void, Never>?
    private var sessions: [String: Session] = [:]
    private let dnssd = DNSSDRelay()
    private let ssdp = Broadcast<SSDPEvent>()

    private struct Session {
        let controller: any RouteController
        let work: Task<Void, Never>
    }

    init(provider: any RouteProvider, version: String, features: PluginFeatures, writer: FrameWriter) {
        self.provider = provider
        self.version = version
        self.features = features
        self.writer = writer
    }

    /// Handles messages until the stream ends or the host says `exit`. Calls on one session are answered one at a
    /// time, in order; calls on different sessions, and the rest, do not wait for each other (a slow load on one
    /// device must not hold a pause on another past its deadline).
    func serve(_ messages: AsyncThrowingStream<Result<RPCMessage, RPCError>, any Error>) async {
        await withTaskGroup(of: Void.self) { group in
            do {
                reading: for try await message in messages {
                    switch message {
                    case .failure(let error): send(.failure(id: nil, error: error))
                    case .success(.request(let id, let method, let params)):
                        if method.hasPrefix("session/"), let session = try? RPCCoding.decode(SessionParams.self, from: params).session {
                            queue(for: session, in: &group).yield((id, method, params))
                        } else if method == PluginMethod.initialize || method == PluginMethod.shutdown {
                            await respond(id, method, params)
                        } else {
                            group.addTask { await self.respond(id, method, params) }
                        }
                    case .success(.notification(let method, let params)):
                        if method == PluginMethod.exit { break reading }
                        notified(method, params)
                    case .success: break
                    }
                }
            } catch {
                log("error", "route's channel broke: \(error)")
            }
            for queue in queues.values { queue.finish() }
            queues = [:]
            group.cancelAll()
        }
        await closeAll()
    }

    /// A call waiting for its session's earlier calls.
    private typealias Call = (id: RPCID, method: String, params: Data?)
    private var queues: [String: AsyncStream<Call>.Continuation] = [:]

    /// The queue of `session`'s calls, started on its first call and ended after `session/close`.
    private func queue(for session: String, in group: inout TaskGroup<Void>) -> AsyncStream<Call>.Continuation {
        if let queue = queues[session] { return queue }
        let (calls, queue) = AsyncStream<Call>.makeStream()
        queues[session] = queue
        group.addTask {
            for await call in calls {
                await self.respond(call.id, call.method, call.params)
                if call.method == PluginMethod.close { await self.endQueue(session) }
            }
        }
        return queue
    }

    private func endQueue(_ session: String) {
        queues.removeValue(forKey: session)?.finish()
    }

    private func respond(_ id: RPCID, _ method: String, _ params: Data?) async {
        do {
            send(.response(id: id, result: try await answer(method, params)))
        } catch {
            send(.failure(id: id, error: RPCError(error)))
        }
    }

    private func answer(_ method: String, _ params: Data?) async throws -> Data {
        guard initialized || method == PluginMethod.initialize else {
            throw RPCError(code: RPCError.invalidRequest, message: "\(method) before initialize")
        }
        switch method {
        case PluginMethod.initialize:
            let offer = try RPCCoding.decode(InitializeParams.self, from: params)
            guard let common = pluginProtocolVersions.highestCommon(with: offer.protocolVersions) else {
                throw RPCError(code: RPCError.versionMismatch, message: "this plugin speaks protocol versions \(pluginProtocolVersions), "
                               + "route offered \(offer.protocolVersions)")
            }
            initialized = true
            tracing = offer.trace ?? false
            return RPCCoding.encode(InitializeResult(protocolVersion: common, protocolVersions: pluginProtocolVersions,
                                                     plugin: PeerInfo(name: provider.name, version: version), features: features))
        case PluginMethod.shutdown:
            await closeAll()
        case PluginMethod.discoveryStart:
            startDiscovery()
        case PluginMethod.discoveryStop:
            discovery?.cancel()
            discovery = nil
        case PluginMethod.resolve:
            let resolve = try RPCCoding.decode(ResolveParams.self, from: params)
            let route = try await provider.route(at: resolve.address, context: context)
            return RPCCoding.encode(ResolveResult(device: route.map(WireDevice.init)))
        case PluginMethod.open:
            let open = try RPCCoding.decode(OpenParams.self, from: params)
            try await self.open(open)
        case PluginMethod.close:
            let close = try RPCCoding.decode(SessionParams.self, from: params)
            if let session = sessions.removeValue(forKey: close.session) {
                session.work.cancel()
                await session.controller.close()
            }
        default:
            return try await control(method, params)
        }
        return RPCCoding.encode(Nothing())
    }

    /// The session calls.
    private func control(_ method: String, _ params: Data?) async throws -> Data {
        guard [PluginMethod.load, PluginMethod.play, PluginMethod.pause, PluginMethod.seek, PluginMethod.stop, PluginMethod.volume,
               PluginMethod.mute, PluginMethod.next, PluginMethod.skip].contains(method) else {
            throw RPCError(code: RPCError.methodNotFound, message: "no method \(method)")
        }
        let target = try RPCCoding.decode(SessionParams.self, from: params)
        guard let controller = sessions[target.session]?.controller else {
            throw RPCError(code: RPCError.unknownSession, message: "no open session \(target.session)")
        }
        switch method {
        case PluginMethod.load:
            let load = try RPCCoding.decode(LoadParams.self, from: params)
            try await controller.load(load.item.item, autoplay: load.autoplay ?? true)
        case PluginMethod.play:
            // A controller that cannot play at the instant asked plays now.
            if let at = try RPCCoding.decode(PlayParams.self, from: params).at,
               try await controller.play(at: Date(timeIntervalSince1970: at)) { break }
            try await controller.play()
        case PluginMethod.pause: try await controller.pause()
        case PluginMethod.stop: try await controller.stop()
        case PluginMethod.seek: try await controller.seek(to: try RPCCoding.decode(SeekParams.self, from: params).position)
        case PluginMethod.volume: try await controller.setVolume(try RPCCoding.decode(VolumeParams.self, from: params).level)
        case PluginMethod.mute: try await controller.setMuted(try RPCCoding.decode(MuteParams.self, from: params).muted)
        case PluginMethod.next:
            let next = try RPCCoding.decode(LoadParams.self, from: params)
            return RPCCoding.encode(DoneResult(done: try await controller.setNext(next.item.item)))
        case PluginMethod.skip:
            return RPCCoding.encode(DoneResult(done: try await controller.skipToNext()))
        default:
            throw RPCError(code: RPCError.methodNotFound, message: "no method \(method)")
        }
        return RPCCoding.encode(Nothing())
    }

    private func notified(_ method: String, _ params: Data?) {
        switch method {
        case PluginMethod.dnssd:
            if let event = (try? RPCCoding.decode(DNSSDParams.self, from: params))?.dnssdEvent { dnssd.deliver(event) }
        case PluginMethod.ssdp:
            if let event = (try? RPCCoding.decode(SSDPParams.self, from: params))?.ssdpEvent { ssdp.send(event) }
        default: break
        }
    }

    /// The context the provider runs in: publishing sends `devices`, its log sends `log`, and its discovery
    /// services are what the host forwards.
    private var context: ProviderContext {
        let writer = self.writer
        let tracing = self.tracing
        let log = RouteLog(source: provider.name, traced: { _ in tracing }) { level, _, message in
            let name = level == .debug ? "debug" : level == .error ? "error" : "info"
            try? writer.send(.notification(method: PluginMethod.log, params: RPCCoding.encode(LogParams(level: name, message: message))))
        }
        let services = DiscoveryServices(ssdp: features.ssdp.isEmpty ? nil : ForwardedSSDP(events: ssdp),
                                         dnssd: features.dnssd.isEmpty ? nil : dnssd)
        return ProviderContext(log: log, discovery: services, publish: { routes in
            try? writer.send(.notification(method: PluginMethod.devices, params: RPCCoding.encode(DevicesParams(devices: routes.map(WireDevice.init)))))
        })
    }

    private func startDiscovery() {
        guard discovery == nil else { return }
        let provider = self.provider
        let context = self.context
        discovery = Task {
            do {
                try await provider.run(context)
            } catch is CancellationError {
            } catch {
                // A provider that fails is the plugin failing: the host restarts it with backoff.
                FileHandle.standardError.write(Data("\(provider.name): discovery failed: \(error)\n".utf8))
                exit(1)
            }
        }
    }

    private func open(_ open: OpenParams) async throws {
        guard sessions[open.session] == nil else {
            throw RPCError(code: RPCError.invalidParams, message: "session \(open.session) is already open")
        }
        let route = open.device.route(provider: provider.name)
        let controller = try await provider.controller(for: route, context: context)
        let writer = self.writer
        let session = open.session
        let statuses = controller.statusUpdates()
        let work = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await status in statuses {
                        try? writer.send(.notification(method: PluginMethod.status,
                                                       params: RPCCoding.encode(StatusParams(session: session, status: WireStatus(status)))))
                    }
                }
                group.addTask {
                    do { try await controller.run() } catch is CancellationError {} catch {
                        var failed = PlaybackStatus(state: .failed, error: "\(error)")
                        failed.endReason = .deviceGone
                        try? writer.send(.notification(method: PluginMethod.status,
                                                       params: RPCCoding.encode(StatusParams(session: session, status: WireStatus(failed)))))
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        sessions[open.session] = Session(controller: controller, work: work)
    }

    private func closeAll() async {
        discovery?.cancel()
        discovery = nil
        for (_, session) in sessions {
            session.work.cancel()
            await session.controller.close()
        }
        sessions = [:]
    }

    private func send(_ message: RPCMessage) {
        try? writer.send(message)
    }

    private func log(_ level: String, _ message: String) {
        send(.notification(method: PluginMethod.log, params: RPCCoding.encode(LogParams(level: level, message: message))))
    }
}

/// DNS-SD as a plugin sees it: the events the host forwards, filtered by type; a new subscriber first gets
/// every service found so far.
final class DNSSDRelay: DNSSDDiscovery {
    private let services = Mutex<[String: DNSSDService]>([:])
    private let events = Broadcast<DNSSDEvent>()

    /// An event from the host.
    func deliver(_ event: DNSSDEvent) {
        services.withLock { services in
            switch event {
            case .found(let service): services[service.key] = service
            case .removed(let name, let type, let domain, let interface):
                services[DNSSDService.key(name: name, type: type, domain: domain, interface: interface)] = nil
            case .unavailable: services = [:]
            case .available: break
            }
        }
        events.send(event)
    }

    func subscribe(types: [String]) -> AsyncStream<DNSSDEvent> {
        let source = events.subscribe()
        let known = services.withLock { Array($0.values) }.filter { types.contains($0.type) }
        return AsyncStream { continuation in
            for service in known { continuation.yield(.found(service)) }
            let task = Task {
                for await event in source {
                    switch event {
                    case .found(let service) where !types.contains(service.type): continue
                    case .removed(_, let type, _, _) where !types.contains(type): continue
                    default: continuation.yield(event)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// SSDP as a plugin sees it: the events the host forwards, filtered by target.
struct ForwardedSSDP: SSDPDiscovery {
    let events: Broadcast<SSDPEvent>

    func subscribe(targets: [String]) -> AsyncStream<SSDPEvent> {
        let source = events.subscribe()
        return AsyncStream { continuation in
            let task = Task {
                for await event in source where targets.contains(event.target) || targets.contains("ssdp:all") {
                    continuation.yield(event)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
