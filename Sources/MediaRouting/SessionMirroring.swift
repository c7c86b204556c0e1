// SessionMirroring: what another controller plays on the network's devices (a renderer another app started, a Cast
// receiver a phone casts to), mirrored on the desktop's media controls (MPRIS) with commands back to the device — as
// `route watch` and the route service run it.

import Foundation
import NowPlaying
import RouteCore

/// Mirrors every session on a discovered device that this user's route does not play, while it plays.
public struct SessionMirroring: Sendable {
    /// What mirroring does, as it happens.
    public enum Event: Sendable {
        /// A session is mirrored (`player` is its MPRIS bus name), or its mirror ended.
        case mirroring(device: MediaDevice, title: String?, player: String)
        case ended(device: MediaDevice?, title: String?, player: String)
        /// The desktop's controls cannot be reached (said once per mirror that fails; the caller says it once).
        case unavailable(String)
    }

    private let router: MediaRouter
    private let isOurs: @Sendable (MediaDevice) async -> Bool
    private let onEvent: @Sendable (Event) -> Void

    /// Mirrors through `router`'s controllers (run the router's discovery beside `run()`). `isOurs` tells whether a
    /// session on a device is one of this user's own casts (asked once per session: those are published already).
    public init(router: MediaRouter, isOurs: @escaping @Sendable (MediaDevice) async -> Bool,
                onEvent: @escaping @Sendable (Event) -> Void) {
        self.router = router
        self.isOurs = isOurs
        self.onEvent = onEvent
    }

    /// Follows every route of every device discovered, each in a task of its own, until cancelled. A route that
    /// leaves is let go; one that comes back, or moves (a renderer back on another port), is followed anew once
    /// its old follower has let go of the device and its player name.
    public func run() async {
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
                let follower = Follower(route: route, device: device, router: router, isOurs: isOurs, onEvent: onEvent)
                followed[route.id] = (route.address, Task {
                    await previous?.value
                    await follower.run()
                })
            }
        }
        for entry in followed.values { entry.task.cancel() }
        for task in followed.values.map(\.task) + leaving.values { await task.value }
    }
}

/// Follows what one route's device plays, and publishes a mirror while it plays a session that is not ours.
private struct Follower {
    let route: MediaRoute
    let device: MediaDevice
    let router: MediaRouter
    let isOurs: @Sendable (MediaDevice) async -> Bool
    let onEvent: @Sendable (SessionMirroring.Event) -> Void

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
        // Whether the session playing is a cast of ours, decided once per session.
        var decided: (session: String, ours: Bool)?
        for await status in controller.statusUpdates() {
            // A session is known once the device says what it plays (its first event may say PLAYING alone).
            let inSession = (status.state == .playing || status.state == .paused || status.state == .loading && mirror != nil)
                && status.sessionID != nil
            if inSession, let session = status.sessionID {
                if decided?.session != session {
                    decided = (session, await isOurs(device))
                }
                if decided?.ours == true {
                    await mirror?.end(onEvent)
                    mirror = nil
                } else if mirror == nil, status.state != .loading {
                    mirror = await Mirror.start(status, of: controller, on: device, onEvent: onEvent)
                }
            } else if !inSession, status.state != .loading, let ending = mirror {
                await ending.end(onEvent)
                mirror = nil
            }
            if let mirror { await mirror.model.update(status) }
        }
        await mirror?.end(onEvent)
    }
}

/// One mirrored session: its model and its publication.
private struct Mirror {
    let model: RemotePlayback
    let publication: Task<Void, Never>
    let player: String

    static func start(_ status: PlaybackStatus, of controller: any RouteController, on device: MediaDevice,
                      onEvent: @escaping @Sendable (SessionMirroring.Event) -> Void) async -> Mirror {
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
            do { try await MediaSession(model).run() } catch { onEvent(.unavailable("\(error)")) }
        }
        onEvent(.mirroring(device: device, title: await model.content?.title, player: player))
        return Mirror(model: model, publication: publication, player: player)
    }

    func end(_ onEvent: @Sendable (SessionMirroring.Event) -> Void) async {
        publication.cancel()
        await publication.value
        onEvent(.ended(device: await model.devices.first, title: await model.content?.title, player: player))
    }
}
