// `route cast`: make the queue (files, folders, playlists, URLs, pages), pick the device, and play it with live status
// and keys.

import Foundation
import RouteCLI
import RouteControl
import RouteCore
import RouteMedia
import MediaRouting
import RouteClient
import RoutePluginHost

enum Cast {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        // Every source is checked before any device is touched, so a typo costs nothing; the first item is probed
        // now (a bad first file ends the cast before anything plays), the rest while the queue plays. A web page's
        // media is probed once the device is known: its format is chosen for the device.
        let options = try CastOptions(parsed)
        // What goes out as subtitles is subtitles, even when a person names it.
        if case .file(let path) = options.settings.subtitles, let refusal = SubtitleFile.refusal(path) {
            throw UsageError(description: "--subtitles: \(refusal)")
        }
        if CastThroughService.applies(parsed) {
            for path in parsed.positionals where !CastSourceKinds.isURL(path) && !CastSourceKinds.isFolderOrPlaylist(path) {
                _ = try MediaError.checkReadableFile(path)
            }
            return try await CastThroughService.run(parsed, options: options, detach: parsed.has("detach"))
        }
        var reading = CastSources.Options()
        reading.recursive = options.recursive
        reading.progress = { printError("route cast: \($0)") }
        let queue = try await CastSources.expand(parsed.positionals, options: reading)
        for notice in queue.notices { printError("route cast: \(notice)") }
        // What it lets GStreamer fetch on this machine holds while the queue plays.
        defer { withExtendedLifetime(queue.allowances) {} }
        let probes = try await ProbeAhead.probingFirst(options.shuffle ? queue.entries.shuffled() : queue.entries) {
            printError("route cast: \($0)")
        }
        do {
            let router = try Providers.router(parsed)
            let code: ExitCode
            if let targets = GroupTargets(parsed) {
                let timeout = try CommonOptions.timeout(parsed), via = parsed["via"]
                // Discovery runs while the group plays: a member that left the network plays again once it is listed
                // again (and no other cast of ours took it meanwhile).
                code = try await router.discovering {
                    let (group, members) = try await DeviceLookup.findGroup(
                        targets, router: router, providers: router.providers, timeout: timeout, via: via,
                        say: { printError("route cast: \($0)") }, found: { CastTerminal.sayMeaning(of: $0, $1) })
                    await probes.playing(on: members[0])
                    _ = try await probes.info(0)
                    let cast = try GroupCast(probes, on: members, as: group, router: router, settings: options.settings,
                                             delays: DeviceLookup.delays(of: members), log: CLILog.root, comesBack: { device in
                                                 await DeviceLookup.listedAgain(device, by: router) {
                                                     await !OurCasts.play(on: $0, service: ServiceMode.mayAsk, besides: group)
                                                 }
                                             })
                    return try await play(cast, on: members, shownAs: group, probes: probes)
                }
            } else {
                let device = try await DeviceChoice.resolve(parsed, router: router, providers: router.providers)
                await probes.playing(on: device)
                _ = try await probes.info(0)
                let cast = try QueuedCast(probes, on: device, router: router, settings: options.settings, log: CLILog.root)
                code = try await play(cast, on: [device], shownAs: device, probes: probes)
            }
            await probes.cancel()
            return code
        } catch {
            // Items probed ahead (a slow URL, a page) do not outlive the cast.
            await probes.cancel()
            throw error
        }
    }

    /// Plays the queue in this process with status, keys, the control socket and the desktop's controls, on `devices`
    /// (one, or a group's members) shown as `device`; the exit code (interrupted by a signal, or the code of the first
    /// file that had to be skipped).
    private static func play(_ cast: some CastHere, on devices: [MediaDevice], shownAs device: MediaDevice,
                             probes: ProbeAhead) async throws -> ExitCode {
        defer { cast.close() }
        for member in devices { try await OurCasts.checkFree(member, service: ServiceMode.mayAsk) }
        let control = try SessionControlServer(device: device) { request in
            await Control.handle(request, session: cast.session, commands: cast.controls, device: device, members: device.kind == .group ? devices : [])
        }
        // Ends with this function, after any reply being written.
        async let _ = control.run()
        // On the desktop's media controls while it plays; off the bus when the cast ends. Without a session bus,
        // a person at a terminal is told once; a script or a service is not (it has no desktop to miss).
        let saysUnavailable = isatty(STDERR_FILENO) == 1
        let published = Task { @MainActor in
            await CastPublication.run(cast.published, probes: probes) { reason in
                if saysUnavailable { printError("route cast: \(reason)", overStatus: true) }
            }
        }
        defer { published.cancel() }
        return try await CastTerminal.drive(cast, device: device, beforeExit: { PluginProvider.killAll() }) {
            try await cast.run()
            return await cast.session.skipped.first.map { ExitCode(for: $0.error) } ?? .success
        }
    }
}

/// A cast `route cast` plays in this process: on one device (`QueuedCast`) or on a group's (`GroupCast`).
protocol CastHere: DrivenCast {
    /// The session whose playback answers `route status` (a group's lead).
    var session: QueueSession { get }
    /// What the desktop's media controls show and command.
    var published: any PlayingCast { get }
    /// Plays the queue until it ends.
    func run() async throws
    /// Stops serving its files.
    func close()
}

extension QueuedCast: CastHere {
    var published: any PlayingCast { session }
    func close() { preparer.close() }
}

extension GroupCast: CastHere {
    package func playbackEvents() -> AsyncStream<QueueEvent> { events }
    package var controls: any SessionCommandTaker { self }
    var published: any PlayingCast { self }
}

extension QueuedCast: DrivenCast {
    package func playbackEvents() -> AsyncStream<QueueEvent> { events }
    package var controls: any SessionCommandTaker { session }
}

/// Chooses the device for `cast`: by address (no discovery), by name (local first, then discovery),
/// or with the picker.
enum DeviceChoice {
    static func resolve(_ parsed: ParsedArguments, router: MediaRouter, providers: [any RouteProvider]) async throws -> MediaDevice {
        let local = providers.contains { $0.name == MediaRoute.localProvider } ? [LocalProvider.device] : []
        if let query = parsed["to"] {
            if DeviceLookup.looksLikeAddress(query) { return try await router.device(at: query) }
            // "This computer" by its name, its id, or a prefix of its name ("this") needs no discovery.
            if let computer = DeviceMatcher.thisComputer(query, in: local) { return computer }
            guard Providers.discoverNetwork(providers) else { return try DeviceMatcher.pick(query, in: local) }
            let timeout = try CommonOptions.timeout(parsed)
            let device = try await router.discovering {
                try await DeviceLookup.find(query, router: router, providers: providers, timeout: timeout, via: parsed["via"])
            }
            CastTerminal.sayMeaning(of: query, device)
            return device
        }
        // The only device heard, or the one chosen at the terminal (This computer alone: at once).
        return try await RouterDevices(router).onlyOrChosen(within: try CommonOptions.timeout(parsed))
    }
}
