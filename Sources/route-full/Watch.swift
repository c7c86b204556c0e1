// `route watch`: mirrors on the desktop (MPRIS) every session on a device that no `route cast` of this user
// plays — a renderer another controller started, a Cast receiver a phone casts to — with commands routed
// back to the device (SessionMirroring). Runs until interrupted; through the route service, which mirrors them
// itself, it says what the service mirrors.

import Foundation
import RouteCLI
import NowPlaying
import MediaRouting
import RouteControl
import RouteCore
import Synchronization

enum Watch {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if ServiceMode.applies(parsed) { return try await throughService(parsed) }
        let router = try Providers.router(parsed), providers = router.providers
        guard Providers.discoverNetwork(providers) else {
            throw UsageError(description: "route watch follows network devices; --providers names none (local is this computer's own output)")
        }
        let stopped = InterruptFlag()
        let output = WatchOutput(json: parsed.has("json"))
        let mirroring = SessionMirroring(router: router, isOurs: { await OurCasts.play(on: $0, service: ServiceMode.mayAsk) }) { output.say($0) }
        let watching = Task<Void, Never> {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await router.run() }
                group.addTask { await mirroring.run() }
                await group.next()
                group.cancelAll()
            }
        }
        return await watch(watching, output: output, stopped: stopped)
    }

    /// The same through the service, which mirrors the sessions itself: what it mirrors now, then each mirror that
    /// starts or ends, until interrupted.
    private static func throughService(_ parsed: ParsedArguments) async throws -> ExitCode {
        let client = try await ServiceMode.connect()
        let output = WatchOutput(json: parsed.has("json"))
        let mirrors = client.mirrorEvents()
        let watching = Task<Void, Never> {
            do {
                for try await mirror in mirrors {
                    output.say(mirror.ended ? .ended(device: mirror.device, title: mirror.title, player: mirror.player)
                                            : .mirroring(device: mirror.device, title: mirror.title, player: mirror.player))
                }
            } catch {
                printError("route watch: \(error)")
            }
        }
        return await watch(watching, output: output, stopped: InterruptFlag())
    }

    /// Runs `watching` until a signal (130) or a closed output (0); anything else ending it is a failure.
    private static func watch(_ watching: Task<Void, Never>, output: WatchOutput, stopped: InterruptFlag) async -> ExitCode {
        // Nobody reads the output any more (`route watch --json | head -1`): the watch ends.
        let closed = InterruptFlag()
        output.onClosed = {
            closed.set()
            watching.cancel()
        }
        // The first signal ends the watch (mirrors leave the bus, devices are let go); a second exits at once.
        await UntilInterrupted.wait(for: watching, stopped: stopped)
        // Discovery does not end by itself: anything but a signal or a closed output is a failure.
        return stopped.isSet ? .interrupted : closed.isSet ? .success : .failure
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

    /// Says what mirroring did.
    func say(_ event: SessionMirroring.Event) {
        switch event {
        case .mirroring(let device, let title, let player): self.event("mirroring", device: device, title: title, player: player)
        case .ended(let device, let title, let player): self.event("ended", device: device, title: title, player: player)
        case .unavailable(let reason): unavailable(reason)
        }
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
