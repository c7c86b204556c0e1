// `route watch`: mirrors on the desktop (MPRIS) every session on a device that no `route cast` of this user
// plays — a renderer another controller started, a Cast receiver a phone casts to — with commands routed
// back to the device. Runs until interrupted; the systemd user unit runs it for a session.

import Foundation
import NowPlaying
import RoutePluginHost
import MediaRouting
import RouteCore
import Synchronization

enum Watch {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        let (router, providers) = try Providers.router(parsed)
        guard Providers.discoverNetwork(providers) else {
            throw UsageError(description: "route watch follows network devices; --providers names none (local is this computer's own output)")
        }
        let stopped = InterruptFlag()
        let output = WatchOutput(json: parsed.has("json"))
        let watching = Task<Void, Never> {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await router.run() }
                group.addTask { await follow(router, output: output) }
                await group.next()
                group.cancelAll()
            }
        }
        // Nobody reads the output any more (`route watch --json | head -1`): the watch ends.
        let closed = InterruptFlag()
        output.onClosed = {
            closed.set()
            watching.cancel()
        }
        // The first signal ends the watch (mirrors leave the bus, devices are let go); a second exits at once.
        let signals = SignalHandlers {
            if stopped.isSet {
                PluginProvider.killAll()
                exit(ExitCode.interrupted.rawValue)
            }
            stopped.set()
            watching.cancel()
        }
        defer { signals.cancel() }
        await watching.value
        // Discovery does not end by itself: anything but a signal or a closed output is a failure.
        return stopped.isSet ? .interrupted : closed.isSet ? .success : .failure
    }

    /// Follows every route of every device discovered, each in a task of its own, until cancelled. A route that
    /// leaves is let go; one that comes back, or moves (a renderer back on another port), is followed anew once
    /// its old follower has let go of the device and its player name.
    private static func follow(_ router: MediaRouter, output: WatchOutput) async {
        var followed: [String: (address: String?, task: Task<Void, Never>)] = [:]
        var leaving: [String: Task<Void, Never>] = [:]
        for await devices in router.deviceUpdates() {
            let routes = devices.flatMap { device in device.routes.filter { $0.provider != MediaRoute.localProvider }.map { (device, $0) } }
            let present = Dictionary(routes.map { ($0.1.id, $0.1.address) }, uniquingKeysWith: { first, _ in first })
            for (id, entry) in followed where present[id] != entry.address {
                entry.task.cancel()
                leaving[id] = entry.task
                followed[id] = nil
            }
            for (device, route) in routes where followed[route.id] == nil {
                let previous = leaving.removeValue(forKey: route.id)
                followed[route.id] = (route.address, Task {
                    await previous?.value
                    await Follower(route: route, device: device, router: router, output: output).run()
                })
            }
        }
        for entry in followed.values { entry.task.cancel() }
        for task in followed.values.map(\.task) + leaving.values { await task.value }
    }
}

/// Follows what one route's device plays, and publishes a mirror while it plays a session that no `route cast`
/// of this user's plays.
private struct Follower {
    let route: MediaRoute
    let device: MediaDevice
    let router: MediaRouter
    let output: WatchOutput

    /// Until cancelled: a device that cannot be reached, or is lost, is tried again with backoff (1 s doubling
    /// to 30 s); one whose controller cannot observe is left alone.
    func run() async {
        var backoff: Duration = .seconds(1)
        while !Task.isCancelled {
            guard let controller = try? await router.controller(for: route) else {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(30))
                continue
            }
            guard (try? await controller.observe()) == true else {
                await controller.close()
                return
            }
            let started = ContinuousClock.now
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await controller.run() }
                group.addTask { await mirror(controller) }
                await group.next()
                group.cancelAll()
            }
            await controller.close()
            if ContinuousClock.now - started > .seconds(60) { backoff = .seconds(1) }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(30))
        }
    }

    /// Mirrors the controller's sessions: one publication for as long as the device plays something not ours (a
    /// new item of another controller's updates it), gone when the device stops or a cast of ours takes over.
    private func mirror(_ controller: any RouteController) async {
        var mirror: Mirror?
        // Whether the session playing is a `route cast` of ours, decided once per session.
        var decided: (session: String, ours: Bool)?
        for await status in controller.statusUpdates() {
            // A session is known once the device says what it plays (its first event may say PLAYING alone).
            let inSession = (status.state == .playing || status.state == .paused || status.state == .loading && mirror != nil)
                && status.sessionID != nil
            if inSession, let session = status.sessionID {
                if decided?.session != session {
                    decided = (session, await OwnCasts.play(on: device))
                }
                if decided?.ours == true {
                    await mirror?.end(output)
                    mirror = nil
                } else if mirror == nil, status.state != .loading {
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
    let model: RemotePlayback
    let publication: Task<Void, Never>
    let player: String

    static func start(_ status: PlaybackStatus, of controller: any RouteController, on device: MediaDevice,
                      output: WatchOutput) async -> Mirror {
        let id = "watch_" + controller.route.id
        // Named as the route that plays it (gmediarender's session on a TV that is also a Cast receiver is the
        // renderer's, not the Cast name's).
        let device = device.preferring(controller.route)
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
        return Mirror(model: model, publication: publication, player: player)
    }

    func end(_ output: WatchOutput) async {
        publication.cancel()
        await publication.value
        output.event("ended", device: await model.devices.first, title: await model.content?.title, player: player)
    }
}

/// Whether a `route cast` of this user plays on a device (its control socket answers for one of its routes).
private enum OwnCasts {
    private static let threads = BlockingThreads(name: "route-watch-casts", count: 1)

    static func play(on device: MediaDevice) async -> Bool {
        let routes = Set(device.routes.map(\.id))
        // Socket I/O with timeouts (8 s for a cast that does not answer): never on the cooperative pool.
        let sessions = (try? await threads.run(timeout: .seconds(60), timedOut: { CancellationError() }) {
            (try? ControlClient.liveSessions(removingStale: false)) ?? []
        }) ?? []
        return sessions.contains { $0.device.id == device.id || !routes.isDisjoint(with: $0.device.routes.map(\.id)) }
    }
}

/// What `route watch` prints: a line per mirror that starts or ends (JSON lines with --json), and once that
/// desktop controls are off.
private final class WatchOutput: Sendable {
    let json: Bool
    private let saidUnavailable = Atomic<Bool>(false)
    private let closedHandler = Mutex<(@Sendable () -> Void)?>(nil)
    init(json: Bool) { self.json = json }

    /// Called once stdout is closed.
    var onClosed: (@Sendable () -> Void)? {
        get { closedHandler.withLock { $0 } }
        set { closedHandler.withLock { $0 = newValue } }
    }

    func event(_ event: String, device: MediaDevice?, title: String?, player: String) {
        let line: String
        if json {
            let fields: [String: String] = ["event": event, "device": device?.name ?? "", "title": title ?? "", "player": player]
            guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
            line = String(decoding: data, as: UTF8.self)
        } else {
            line = "\(event): \(title.map { DisplayText.clean($0) } ?? "?") on \(DisplayText.clean(device?.name ?? "?"))  (\(player))"
        }
        if !printOutput(line) { onClosed?() }
    }

    func unavailable(_ reason: String) {
        if !saidUnavailable.exchange(true, ordering: .relaxed) { printError("route watch: \(reason)") }
    }
}
