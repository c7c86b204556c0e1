// `route sink --to DEVICE`: this computer's sound on a device (or a group's members: `--to A --to B`, a kept group),
// through a sink named for it on the sound server (MediaRouting's DesktopAudio), until interrupted; a line (or a JSON
// line) as each device starts and stops.

import Foundation
import MediaRouting
import RouteCLI
import RouteCore
import RouteMedia
import RouteService
import RouteSound

enum Sink {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        let settings = DesktopAudioSettings(try SinkThroughService.sinkOptions(parsed))
        let router = try Providers.router(parsed), providers = router.providers
        let servers = MediaServers(log: CLILog.root)
        defer { servers.close() }
        let desktop: DesktopAudio
        if let targets = GroupTargets(parsed) {
            let timeout = try CommonOptions.timeout(parsed)
            let (group, members) = try await router.discovering {
                try await DeviceLookup.findGroup(targets, router: router, providers: providers, timeout: timeout, via: settings.via,
                                                 say: { printError("route sink: \($0)") })
            }
            desktop = try DesktopAudio(group: group, members: members, delays: DeviceLookup.delays(of: members), router: router,
                                       servers: servers, settings: settings)
        } else {
            let device = try await DeviceChoice.resolve(parsed, router: router, providers: providers)
            desktop = try DesktopAudio(device: device, router: router, servers: servers, settings: settings)
        }
        let grouped = desktop.members.count > 1 || desktop.device.kind == .group
        let json = parsed.has("json")
        let stopped = InterruptFlag()
        let failure = FailureBox()
        let running = Task<Void, Never> {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await router.run() }
                group.addTask {
                    do {
                        try await desktop.run { event, member in say(event, on: member, of: grouped ? desktop.device : nil, json: json) }
                    } catch {
                        failure.set(error)
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        // The first signal removes the sink and stops the device; a second exits at once.
        await UntilInterrupted.wait(for: running, stopped: stopped)
        // Interrupted: what the ending threw on its way out (a cancelled wait) is not a failure.
        if let error = failure.error, !stopped.isSet || !(error is CancellationError) { throw error }
        return stopped.isSet ? .interrupted : .failure
    }

    /// Says `event`, which happened on `device` (a member of `group`, when the sink is a group's).
    private static func say(_ event: DesktopAudioEvent, on device: MediaDevice, of group: MediaDevice?, json: Bool) {
        if json {
            var fields: [String: String] = ["event": event.name, "device": device.name, "text": event.words(device: device.name)]
            if let group { fields["group"] = group.name }
            if case .ready(let sink, let server, let format, let route, let url) = event {
                fields["sink"] = sink
                fields["url"] = url
                fields["server"] = server
                fields["format"] = format
                fields["route"] = route
            }
            guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
            _ = printOutput(String(decoding: data, as: UTF8.self))
        } else {
            _ = printOutput(event.words(device: DisplayText.clean(device.name)))
        }
    }
}

/// The error that ended the sink, if one did.
private final class FailureBox: @unchecked Sendable {
    // Safety: guarded by `lock`.
    private let lock = NSLock()
    private var stored: (any Error)?

    func set(_ error: any Error) { lock.withLock { stored = error } }
    var error: (any Error)? { lock.withLock { stored } }
}
