// `route watch`: mirrors on the desktop (MPRIS) every session on a device that no `route cast` of this user
// plays — a renderer another controller started, a Cast receiver a phone casts to — with commands routed
// back to the device. Runs until interrupted; the systemd user unit runs it for a session.

import Foundation
import NowPlaying
import RouteCore
import Synchronization

enum Watch {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        let (router, providers) = try Providers.router(parsed)
        guard Providers.discoverNetwork(providers) else {
            throw UsageError(description: "route watch follows network devices; --providers names none (local is this computer's own output)")
        }
        let output = WatchOutput(json: parsed.has("json"))
        let watching = Task { await watch(router, output: output) }
        let signals = SignalHandlers { watching.cancel() }
        defer { signals.cancel() }
        await watching.value
        return .interrupted
    }

    /// Discovers, and follows each route that can be observed, until cancelled.
    private static func watch(_ router: MediaRouter, output: WatchOutput) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await router.run() }
            group.addTask {
                var followed: [String: Task<Void, Never>] = [:]
                for await devices in router.deviceUpdates() {
                    let routes = devices.flatMap { device in device.routes.filter { $0.provider != "local" }.map { (device, $0) } }
                    let present = Set(routes.map(\.1.id))
                    for (id, task) in followed where !present.contains(id) {
                        task.cancel()
                        followed[id] = nil
                    }
                    for (device, route) in routes where followed[route.id] == nil {
                        followed[route.id] = Task { await follow(route, on: device, router: router, output: output) }
                    }
                }
                for task in followed.values { task.cancel() }
                for task in followed.values { await task.value }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Follows what one route's device plays, publishing a mirror while a session no cast of ours owns plays there.
    private static func follow(_ route: MediaRoute, on device: MediaDevice, router: MediaRouter, output: WatchOutput) async {
        guard let controller = try? await router.controller(for: route) else { return }
        guard (try? await controller.observe()) == true else {
            await controller.close()
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await controller.run() }
            group.addTask { await mirror(controller.statusUpdates(), of: controller, on: device, output: output) }
            await group.next()
            group.cancelAll()
        }
        await controller.close()
    }

    /// Publishes a mirror while the device plays (or pauses) a session that is not a `route cast` of this user's.
    private static func mirror(_ statuses: AsyncStream<PlaybackStatus>, of controller: any RouteController, on device: MediaDevice,
                               output: WatchOutput) async {
        var mirror: Mirror?
        for await status in statuses {
            // A session is known once the device says what it plays (its first event may say PLAYING alone).
            let inSession = (status.state == .playing || status.state == .paused) && status.sessionID != nil
            if inSession, mirror == nil || mirror?.sessionID != status.sessionID {
                await mirror?.end(output)
                mirror = nil
                if await !OwnCasts.play(on: device) {
                    mirror = await Mirror.start(status, of: controller, on: device, output: output)
                }
            } else if !inSession, status.state != .loading, let ending = mirror {
                await ending.end(output)
                mirror = nil
            }
            if let mirror { await mirror.model.update(status) }
        }
        await mirror?.end(output)
    }
}

/// One mirrored session: its model and its publication.
private struct Mirror {
    let sessionID: String?
    let model: RemotePlayback
    let publication: Task<Void, Never>
    let player: String

    static func start(_ status: PlaybackStatus, of controller: any RouteController, on device: MediaDevice,
                      output: WatchOutput) async -> Mirror {
        let id = "watch_" + controller.route.id
        let model = await RemotePlayback(id: id, devices: [device], controls: MediaCommands(
            play: MediaCommand { try await controller.play() },
            pause: MediaCommand { try await controller.pause() },
            stop: MediaCommand { try await controller.stop() },
            seek: MediaCommand { try await controller.seek(to: $0) },
            changeVolume: MediaCommand { try await controller.setVolume($0) }))
        await model.update(status)
        let player = MediaSession.busName(for: id)
        let publication = Task { @MainActor in
            do { try await MediaSession(model).run() } catch { output.unavailable("\(error)") }
        }
        output.event("mirroring", device: device, title: await model.content?.title, player: player)
        return Mirror(sessionID: status.sessionID, model: model, publication: publication, player: player)
    }

    func end(_ output: WatchOutput) async {
        publication.cancel()
        await publication.value
        output.event("ended", device: await model.devices.first, title: await model.content?.title, player: player)
    }
}

/// Whether a `route cast` of this user plays on a device (its control socket answers for one of its routes).
private enum OwnCasts {
    static func play(on device: MediaDevice) async -> Bool {
        let routes = Set(device.routes.map(\.id))
        let sessions = (try? await offThePool { (try? ControlClient.liveSessions()) ?? [] }) ?? []
        return sessions.contains { $0.device.id == device.id || !routes.isDisjoint(with: $0.device.routes.map(\.id)) }
    }

    private static func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async throws -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
    }
}

/// What `route watch` prints: a line per mirror that starts or ends (JSON lines with --json), and once that
/// desktop controls are off.
private final class WatchOutput: Sendable {
    let json: Bool
    private let saidUnavailable = Atomic<Bool>(false)
    init(json: Bool) { self.json = json }

    func event(_ event: String, device: MediaDevice?, title: String?, player: String) {
        if json {
            let line: [String: String] = ["event": event, "device": device?.name ?? "", "title": title ?? "", "player": player]
            if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
                _ = printOutput(String(decoding: data, as: UTF8.self))
            }
        } else {
            _ = printOutput("\(event): \(title.map { DisplayText.clean($0) } ?? "?") on \(DisplayText.clean(device?.name ?? "?"))  (\(player))")
        }
    }

    func unavailable(_ reason: String) {
        if !saidUnavailable.exchange(true, ordering: .relaxed) { printError("route watch: \(reason)") }
    }
}
