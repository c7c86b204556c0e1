// CastThroughService: `route cast` when the route service plays the queue — the same status line, keys, signals and
// exit codes as in-process, with the session in the service; and `--detach`, which leaves it there.

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore
import Synchronization

package enum CastThroughService {
    /// Whether `route cast` goes through the service: --detach and --pick always do (the service keeps the queue, or
    /// shows the picker), any other cast where the service is in use.
    package static func applies(_ parsed: ParsedArguments) -> Bool {
        parsed.has("detach") || parsed.has("pick") || ServiceMode.applies(parsed)
    }

    /// Casts the files through the service: until the queue ends (the session ends with this process), or with
    /// `detach` until the device plays.
    package static func run(_ parsed: ParsedArguments, options: CastOptions, detach: Bool) async throws -> ExitCode {
        if parsed["providers"] != nil {
            throw UsageError(description: "--\(parsed.has("pick") ? "pick" : "detach") casts through the route service, which runs its own providers; drop --providers")
        }
        if parsed.has("pick"), parsed["to"] != nil { throw UsageError(description: "--pick chooses the device: drop --to, or --pick") }
        let client = try await ServiceMode.connect()
        guard let device = try await deviceQuery(parsed, client: client) else {
            printError("route cast: no device was chosen; nothing plays")
            return .failure
        }
        let settings = options.settings
        let subtitles: String? = switch settings.subtitles { case .off: ""; case .file(let path): path; case .automatic: nil }
        var castOptions = RouteServiceClient.CastOptions(via: settings.via, subtitles: subtitles, imageDuration: settings.imageDuration / .seconds(1),
                                                         startTimeout: settings.startTimeout / .seconds(1), endsWithClient: !detach)
        castOptions.recursive = options.recursive
        castOptions.shuffle = options.shuffle
        castOptions.loop = settings.loops
        castOptions.start = settings.start
        castOptions.resume = settings.resumes
        // More than one --to: a group for this cast, which the service finds as it finds the first.
        let more = Array(parsed.all("to").dropFirst())
        castOptions.also = more.isEmpty ? nil : more
        let files = parsed.positionals.map { CastSourceKinds.isURL($0) ? RouteServiceClient.File.url($0) : .path($0) }
        let remote = try await client.cast(files, to: device, options: castOptions)
        let status = try await remote.status()
        if let query = parsed["to"] { CastTerminal.sayMeaning(of: query, status.device) }
        // Started from the desktop (no terminal): a queue whose every item was skipped ends as an error, which the
        // desktop is told of as well.
        if detach { return try await leave(remote, nothingPlayedIsAnError: parsed.has("pick") && isatty(STDERR_FILENO) == 0) }
        let cast = ServiceCast(remote)
        return try await CastTerminal.drive(cast, device: status.device) { try await cast.run() }
    }

    /// What names the device for the service: `--to` as given (the service finds it as `route cast` would); with
    /// `--pick` the one chosen in the picker window (nil: none was); else the only device, or the one chosen at the
    /// terminal's picker.
    private static func deviceQuery(_ parsed: ParsedArguments, client: RouteServiceClient) async throws -> String? {
        if let query = parsed["to"] { return query }
        if parsed.has("pick"), Pick.displayExists {
            return try await client.pickDevice(media: PickMedia(askedBy: parsed.positionals))?.id
        }
        return try await ServiceDevices(client).onlyOrChosen(within: try CommonOptions.timeout(parsed)).id
    }

    /// `--detach`: returns once the device plays (or the queue has ended already), the session left to the service.
    private static func leave(_ session: RemoteSession, nothingPlayedIsAnError: Bool) async throws -> ExitCode {
        for await event in session.events() {
            switch event {
            case .status(let status):
                guard status.playback.state == .playing || status.playback.state == .paused else { continue }
                printError("route cast: \(status.device.name) plays \"\(status.title)\"; the route service goes on with it "
                           + "(`route stop --to \"\(status.device.name)\"` ends it)")
                return .success
            case .notice(let words):
                printError("route cast: \(words)")
            case .ended(let end):
                if let failure = end.failure { throw failure }
                if nothingPlayedIsAnError, let skipped = end.skipped { throw skipped }
                return end.skipped.map { ExitCode(for: $0) } ?? .success
            }
        }
        return .success
    }
}

/// A session the service plays, driven from this terminal: its statuses and notices for the status line, its end as
/// an exit code.
package final class ServiceCast: DrivenCast {
    private let session: RemoteSession
    private let events: AsyncStream<QueueEvent>
    private let said: AsyncStream<QueueEvent>.Continuation

    package init(_ session: RemoteSession) {
        self.session = session
        (events, said) = AsyncStream<QueueEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    package func playbackEvents() -> AsyncStream<QueueEvent> { events }

    /// Follows the session to its end: the exit code of a queue that played to its end or was stopped (the first
    /// skipped file's, if any).
    /// - Throws: the session's failure (a `RouteError` of its kind), or `RouteServiceError` when the service stopped under it.
    package func run() async throws -> ExitCode {
        defer { said.finish() }
        for await event in session.events() {
            switch event {
            case .status(let status): said.yield(.status(status))
            case .notice(let words): said.yield(.notice(words))
            case .ended(let end):
                if let failure = end.failure { throw failure }
                return end.skipped.map { ExitCode(for: $0) } ?? .success
            }
        }
        return .success
    }

    package var controls: any SessionCommandTaker { session }
}
