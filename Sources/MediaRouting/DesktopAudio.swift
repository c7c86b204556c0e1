// DesktopAudio: what this machine plays, on a device or a group's members — a sink named for it on the sound server,
// its sound streamed live (L16 or WAV) through route's media server (to each member, delayed so that all sound
// together), each device started when sound plays and stopped after a quiet spell, the volume the same on both sides,
// and a "Desktop audio" session on the desktop's media controls.

import Foundation
import NowPlaying
import RouteCore
import RouteMedia
import RouteSound
import Synchronization

/// How desktop audio goes to a device.
public struct DesktopAudioSettings: Sendable {
    /// The sound server to make the sink on; nil: the one this session runs.
    public var server: SoundServer?
    /// How long without sound before the device is stopped.
    public var quietSpell: Duration = .seconds(30)
    /// The stream's format; nil: L16 when the device takes it, else WAV.
    public var format: LiveAudio.Format?
    /// Only routes of this protocol or provider.
    public var via: String?
    /// How long the device takes to start playing before route gives up on it.
    public var startTimeout: Duration = .seconds(20)

    /// Settings; the defaults suit a desktop.
    public init(server: SoundServer? = nil, quietSpell: Duration = .seconds(30), format: LiveAudio.Format? = nil, via: String? = nil) {
        self.server = server
        self.quietSpell = quietSpell
        self.format = format
        self.via = via
    }
}

/// What happens to desktop audio on a device, in order.
public enum DesktopAudioEvent: Sendable, Hashable {
    /// The sink exists (`sink` on the sound server, shown as the device's name); the device is sent the stream at `url`.
    case ready(sink: String, server: String, format: String, route: String, url: String)
    /// Sound plays into the sink: the device is started.
    case starting
    /// The device plays the sound.
    case playing
    /// No sound for the quiet spell: the device was stopped.
    case stopped(quietSeconds: Double)
    /// The device failed or went away; it is tried again when sound plays.
    case deviceFailed(String)
    /// Someone stopped the device, or played something else on it: it is started again only after a pause in the sound.
    case stoppedElsewhere
    /// The sound server dropped the sink; it is being made again.
    case sinkLost(String)
    /// Something else the session said.
    case notice(String)

    /// The event in words, for a person.
    public func words(device: String) -> String {
        switch self {
        case .ready(let sink, let server, let format, let route, _):
            return "what plays into \(sink) on \(server) plays on \(device) over \(route) as \(format)"
        case .starting: return "sound plays: starting \(device)"
        case .playing: return "\(device) plays the desktop's sound"
        case .stopped(let seconds):
            return "no sound for \(seconds == seconds.rounded() ? "\(Int(seconds))" : String(format: "%.1f", seconds)) s: stopped \(device); "
                + "it starts again when sound plays"
        case .deviceFailed(let reason): return "\(device) stopped playing: \(reason); trying again when sound plays"
        case .stoppedElsewhere:
            return "\(device) was stopped or given something else to play there; it starts again when sound plays after a pause"
        case .sinkLost(let reason): return "\(reason); making the sink again"
        case .notice(let words): return words
        }
    }

    /// A short name for JSON: ready, starting, playing, stopped, device-failed, sink-lost, notice.
    public var name: String {
        switch self {
        case .ready: return "ready"
        case .starting: return "starting"
        case .playing: return "playing"
        case .stopped: return "stopped"
        case .deviceFailed: return "device-failed"
        case .stoppedElsewhere: return "stopped-elsewhere"
        case .sinkLost: return "sink-lost"
        case .notice: return "notice"
        }
    }
}

/// One device that plays a sink's sound: the route and format it is sent over, and its own stream of the sink's sound
/// (in a group, started with as much silence as it holds sound back less than the slowest member, so all sound together).
public struct DesktopAudioMember: Sendable {
    /// The device.
    public let device: MediaDevice
    /// The route the sound goes over.
    public let route: MediaRoute
    /// The stream's format.
    public let format: LiveAudio.Format
    /// Its stream of the sink's sound.
    let audio: LiveAudio

    /// The silence its stream starts with (zero for one device alone, and for a group's slowest member).
    public var lead: Duration { audio.lead }
}

/// Desktop audio on one device, or on a group's members at once, for as long as `run()` runs.
public final class DesktopAudio: Sendable {
    /// The device the sink is named and shown for: the one device, or the group.
    public let device: MediaDevice
    /// The devices that play the sink's sound: the device, or the group's members.
    public let members: [DesktopAudioMember]
    /// The sound server the sink is on.
    public let server: SoundServer
    /// The sink, named `route.<device id>` and shown with the device's name.
    public let sink: SoundSink
    private let router: MediaRouter
    private let servers: MediaServers
    private let settings: DesktopAudioSettings
    /// Where a person's volume goes, by member: its playing session's requests (one reader applies the newest, in
    /// order), or, while none plays there, the volume its next session starts with; and when a request was last made
    /// (the devices' reports lag behind it: they are not shown on the sink meanwhile).
    private let volume = Mutex(VolumeRequests())
    /// The members' playing sessions, by member: what the desktop's controls for a group act on.
    private let sessions = Mutex<[Int: QueueSession]>([:])
    /// Told when a member's session starts or ends (the desktop's player follows one).
    private let sessionsChanged = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    /// Desktop audio for `device` through `router`'s controllers, served by `servers`.
    /// - Throws: `RouteError.unsupported` for This computer (its sound would come back into the sink), for a device
    ///   whose routes take neither L16 nor WAV, or when `settings.via` names none of its routes;
    ///   `SoundSinkError` when no sound server runs.
    public convenience init(device: MediaDevice, router: MediaRouter, servers: MediaServers, settings: DesktopAudioSettings = DesktopAudioSettings()) throws {
        try self.init(group: device, members: [device], delays: [:], router: router, servers: servers, settings: settings)
    }

    /// Desktop audio for a group's `members` at once, through one sink named and shown for `group`. Each member's
    /// stream starts with as much silence as the member holds sound back less than the slowest member: what `delays`
    /// sets for it (seconds, by device id: `route group delay`), else what its protocol typically holds a live stream
    /// back (`LiveDelays`).
    /// - Throws: what a sink to one device refuses, for any member (a group plays on every member or not at all).
    public init(group: MediaDevice, members devices: [MediaDevice], delays: [String: Double], router: MediaRouter, servers: MediaServers,
                settings: DesktopAudioSettings = DesktopAudioSettings()) throws {
        let chosen = try devices.map { ($0, try Self.choose(for: $0, settings: settings)) }
        guard let server = settings.server ?? SoundServer.running() else {
            throw SoundSinkError("no sound server runs for this user (neither PipeWire's nor PulseAudio's socket is in "
                                 + "XDG_RUNTIME_DIR): desktop audio comes from one")
        }
        let lags = chosen.map { device, choice in delays[device.id] ?? LiveDelays.typical(of: choice.route) }
        let slowest = lags.max() ?? 0
        members = zip(chosen, lags).map { chosen, lag in
            let (device, (route, format)) = chosen
            return DesktopAudioMember(device: device, route: route, format: format, audio: LiveAudio(lead: .milliseconds(Int(((slowest - lag) * 1000).rounded()))))
        }
        device = group
        self.server = server
        self.router = router
        self.servers = servers
        self.settings = settings
        sink = SoundSink(server: server, name: "route." + group.id, description: group.name, rate: members[0].audio.rate,
                         channels: members[0].audio.channels)
    }

    /// The route to `device` that desktop audio goes over, and the stream's format: L16 where a route takes it, else WAV.
    private static func choose(for device: MediaDevice, settings: DesktopAudioSettings) throws -> (route: MediaRoute, format: LiveAudio.Format) {
        let routes = device.routes.filter { settings.via.map($0.isReached(via:)) ?? true }
        if let via = settings.via, routes.isEmpty {
            throw RouteError.unsupported(device: device.name, what: "be reached over \(via) (it has \(device.protocols.joined(separator: ", ")))")
        }
        let remote = routes.filter { $0.provider != MediaRoute.localProvider }
        if remote.isEmpty {
            throw RouteError.unsupported(device: device.name, what: "take desktop audio: this computer's sound would play into the sink again, "
                                         + "round and round; choose a device on the network")
        }
        let formats = settings.format.map { [$0] } ?? [.l16, .wav]
        let mimeTypes: [LiveAudio.Format: String] = [.l16: "audio/L16", .wav: "audio/wav"]
        guard let choice = formats.lazy.compactMap({ format in
            remote.first { $0.accepts.accepts(mimeType: mimeTypes[format]!) }.map { ($0, format) }
        }).first else {
            let wanted = settings.format.map { $0 == .l16 ? "L16" : "WAV" } ?? "uncompressed sound (L16 or WAV)"
            throw RouteError.unsupported(device: device.name, what: "play \(wanted), which desktop audio is sent as")
        }
        return choice
    }

    /// Keeps the sink and plays what sounds in it on every member until cancelled; says what happens to `say`, with
    /// the member it happened on (the sink's own device for what happened to the sink). The sink is made again when
    /// the sound server restarts; a member that fails or vanishes is tried again when sound plays, the others play on.
    /// - Throws: `SoundSinkError` when the sink cannot be made at the start; `MediaError.server` when no local address
    ///   reaches a member.
    public func run(say: @escaping @Sendable (DesktopAudioEvent, _ on: MediaDevice) -> Void) async throws {
        let streams = try members.map { try stream(to: $0) }
        defer { for stream in streams { stream.withdraw() } }
        let (ready, madeIt) = AsyncStream<Void>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for member in members { group.addTask { await member.audio.run() } }
            group.addTask {
                defer { madeIt.finish() }
                try await self.keepSink(say: { say($0, self.device) }, ready: { madeIt.yield() })
            }
            // Nothing plays before the sink exists; when it cannot be made, the group ends with why.
            var made = false
            for await _ in ready {
                made = true
                break
            }
            guard made else {
                try await group.next()
                group.cancelAll()
                return
            }
            group.addTask { await self.publish() }
            for (index, (member, stream)) in zip(members, streams).enumerated() {
                say(.ready(sink: sink.name, server: server.displayName, format: member.format == .l16 ? "L16" : "WAV",
                           route: member.route.protocolName, url: stream.item.url), member.device)
                group.addTask { await self.playWhileSounding(stream.item, member: index, say: { say($0, member.device) }) }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// A member's stream offered by the media server toward it: the item its device is sent, and how to withdraw it.
    private func stream(to member: DesktopAudioMember) throws -> (item: MediaItem, withdraw: @Sendable () -> Void) {
        let route = member.route, audio = member.audio
        let address = route.address ?? member.device.address ?? ""
        let server = try servers.server(on: try LocalAddress.toward(address))
        // The desktop's sound (a call, a meeting) goes to the device alone, never to a neighbour it told the URL.
        let audience = Audience.route(route, at: address)
        let url = server.offer(live: audio, as: member.format, for: audience)
        // A device that lists L16 but refuses it gets WAV, when it takes that.
        let fallback = member.format == .l16 && settings.format == nil && route.accepts.accepts(mimeType: "audio/wav")
            ? server.offer(live: audio, as: .wav, for: audience) : nil
        var item = MediaItem(url: url, mimeType: audio.mimeType(member.format), title: "Desktop audio", artist: Self.hostName, kind: .audio)
        item.isLive = true
        item.isConverted = true
        item.fallbackURL = fallback
        item.fallbackMimeType = fallback.map { _ in route.accepts.spelling(of: audio.mimeType(.wav)) }
        return (item, {
            server.withdraw(url)
            if let fallback { server.withdraw(fallback) }
        })
    }

    /// The sink, made again (with a growing pause, while the sound server is away) whenever the sound server drops
    /// it; a failure to make it the first time is thrown.
    private func keepSink(say: @escaping @Sendable (DesktopAudioEvent) -> Void, ready: @escaping @Sendable () -> Void) async throws {
        var pause: Duration = .milliseconds(500)
        let made = Flag()
        let streams = members.map(\.audio)
        while !Task.isCancelled {
            do {
                try await sink.run(audio: { samples in for stream in streams { stream.push(samples) } },
                                   volume: { [weak self] in self?.personChanged(level: $0, muted: $1) },
                                   ready: {
                                       made.set()
                                       ready()
                                   })
                return
            } catch let error as SoundSinkError {
                guard error.sinkExisted || made.isSet else { throw error }
                if error.sinkExisted {
                    say(.sinkLost(error.description))
                    pause = .milliseconds(500)
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// Starts member `index` when sound plays, stops it after the quiet spell; again and again.
    private func playWhileSounding(_ item: MediaItem, member index: Int, say: @escaping @Sendable (DesktopAudioEvent) -> Void) async {
        let audio = members[index].audio
        while !Task.isCancelled {
            await audio.waitForSound()
            if Task.isCancelled { return }
            say(.starting)
            let outcome = await playOnce(item, member: index, say: say)
            switch outcome {
            case .quiet:
                say(.stopped(quietSeconds: Double(settings.quietSpell.components.seconds) + Double(settings.quietSpell.components.attoseconds) / 1e18))
            case .failed(let error):
                say(.deviceFailed("\(error)"))
                // A device that is gone is not asked again at once: a few seconds, unless sound keeps playing anyway.
                try? await Task.sleep(for: .seconds(3))
            case .elsewhere:
                say(.stoppedElsewhere)
                await audio.waitForQuiet(Self.pauseAfterElsewhere)
            case .cancelled:
                return
            }
        }
    }

    private enum Outcome { case quiet, failed(any Error), elsewhere, cancelled }

    /// After the device was stopped or taken over there, how long the sound must pause before route starts it again
    /// (a person who stopped it while music plays meant it).
    static let pauseAfterElsewhere: Duration = .seconds(2)

    /// One session on member `index`, until the quiet spell (stopped), a failure, or cancellation.
    private func playOnce(_ item: MediaItem, member index: Int, say: @escaping @Sendable (DesktopAudioEvent) -> Void) async -> Outcome {
        let member = members[index]
        var options = QueueSession.Options(startTimeout: settings.startTimeout)
        options.onNotice = { say(.notice($0)) }
        let route = member.route
        let session = QueueSession(device: member.device.preferring(route), titles: ["Desktop audio"], options: options,
                                   open: { [router] in try await router.controller(for: $0) }) { _ in
            QueueSession.Prepared(route: route, item: item)
        }
        let (requests, request) = AsyncStream<VolumeRequest>.makeStream(bufferingPolicy: .bufferingNewest(1))
        volume.withLock { state in
            state.requests[index] = request
            if let pending = state.pending.removeValue(forKey: index) { request.yield(pending) }
        }
        sessions.withLock { $0[index] = session }
        sessionsChanged.continuation.yield()
        defer {
            volume.withLock { _ = $0.requests.removeValue(forKey: index) }
            sessions.withLock { _ = $0.removeValue(forKey: index) }
            sessionsChanged.continuation.yield()
        }
        let (played, didPlay) = AsyncStream<Void>.makeStream()
        // A group sounds when its slowest members (those without lead) do: their delay is the group's.
        sink.report(delay: members.filter { $0.lead == .zero }.map { Self.delay(of: $0.route) }.max() ?? .zero)
        let stoppedForQuiet = QuietStop()
        let sink = self.sink, audio = member.audio, quietSpell = settings.quietSpell
        var failure: (any Error)?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                // A person's volume, in order, once the device plays.
                group.addTask {
                    for await _ in played { break }
                    for await wanted in requests {
                        try? await session.setVolume(wanted.level)
                        try? await session.setMuted(wanted.muted)
                    }
                }
                group.addTask {
                    var shown: (Double?, Bool?) = (nil, nil)
                    var saidPlaying = false
                    for await update in session.statusUpdates() {
                        let playback = update.playback
                        if let reason = playback.endReason { stoppedForQuiet.endReason.withLock { $0 = reason } }
                        if !saidPlaying, playback.state == .playing {
                            saidPlaying = true
                            say(.playing)
                            didPlay.finish()
                        }
                        // The sink shows the volume of the first member that plays (a group's members are set alike from it).
                        guard self.sessions.withLock({ $0.keys.min() }) == index else { continue }
                        let asked = self.volume.withLock { $0.lastRequest }
                        if let asked, ContinuousClock.now - asked < Self.requestSettles { continue }
                        if let level = playback.volume, shown.0 != level || shown.1 != playback.muted {
                            shown = (level, playback.muted)
                            sink.show(volume: level, muted: playback.muted ?? false)
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(250))
                        if let quiet = audio.quietFor, quiet >= quietSpell {
                            stoppedForQuiet.happened.withLock { $0 = true }
                            try? await session.stop()
                            return
                        }
                    }
                }
                defer { group.cancelAll() }
                try await session.run()
            }
        } catch {
            failure = error
        }
        if Task.isCancelled {
            try? await session.stop()
            return .cancelled
        }
        if stoppedForQuiet.happened.withLock({ $0 }) { return .quiet }
        if failure == nil, [.replaced, .stopped].contains(stoppedForQuiet.endReason.withLock({ $0 })) { return .elsewhere }
        return .failed(failure ?? RouteError.unsupported(device: member.device.name, what: "keep playing the stream: it ended it"))
    }

    /// The desktop's controls: one "Desktop audio" player, for the device or the group, showing the first member that
    /// plays (another once it stops), until cancelled.
    private func publish() async {
        var changes = sessionsChanged.stream.makeAsyncIterator()
        var shown: QueueSession?
        while !Task.isCancelled {
            // None plays, or the one shown has ended and is not yet gone: until the members' sessions change.
            guard let session = sessions.withLock({ $0.min { $0.key < $1.key }?.value }), session !== shown else {
                guard await changes.next() != nil else { return }
                continue
            }
            shown = session
            await DesktopAudioPublication.run(session, device: device, perform: members.count == 1 ? session.perform : performOnAll)
        }
    }

    /// A command from the group's desktop controls, on every member that plays now.
    /// - Throws: a member's error, when none of them took it.
    @Sendable private func performOnAll(_ command: SessionCommand) async throws {
        let playing = sessions.withLock { Array($0.values) }
        let errors = await withTaskGroup(of: (any Error)?.self) { group in
            for session in playing {
                group.addTask {
                    do { try await session.perform(command) } catch { return error }
                    return nil
                }
            }
            var errors: [any Error] = []
            for await case let error? in group { errors.append(error) }
            return errors
        }
        if errors.count == playing.count, let first = errors.first { throw first }
    }

    /// A person (or an app) moved the sink's volume or mute: every member follows; one with no session, its next one.
    private func personChanged(level: Double, muted: Bool) {
        let wanted = VolumeRequest(level: level, muted: muted)
        volume.withLock { state in
            state.lastRequest = .now
            for index in members.indices {
                if let requests = state.requests[index] { requests.yield(wanted) } else { state.pending[index] = wanted }
            }
        }
    }

    /// How long after a person's change the device's own reports of its volume are not shown on the sink (they lag).
    static let requestSettles: Duration = .milliseconds(1500)

    /// What a device of this protocol adds after route's stream (its buffer), told to the sound server so that players
    /// can keep a picture in step: a figure per protocol, not a measurement of this device (route cannot hear its
    /// output). The lab's gmediarender and test receiver add 20–45 ms (bench/sink); hardware renderers and Cast
    /// devices buffer more, so these lean long.
    static func delay(of route: MediaRoute) -> Duration {
        switch route.protocolName.lowercased() {
        case "dlna", "upnp": return .milliseconds(300)
        case "cast": return .milliseconds(800)
        // The plugin's timeline plays sound 0.25 s after it reaches the plugin, and route's capture and HTTP come
        // before: in bench/airplay shairport-sync writes a click 0.065-0.09 s after the sink takes it, its output set
        // to write 0.2 s before a frame plays, so 0.27-0.29 s in all.
        case "airplay": return .milliseconds(300)
        default: return .milliseconds(500)
        }
    }

    private static let hostName = ProcessInfo.processInfo.hostName
}

/// Where a person's volume goes, by member index (DesktopAudio's `volume`).
private struct VolumeRequests {
    var requests: [Int: AsyncStream<VolumeRequest>.Continuation] = [:]
    var pending: [Int: VolumeRequest] = [:]
    var lastRequest: ContinuousClock.Instant?
}

/// A volume and mute a person chose on the sink.
private struct VolumeRequest: Sendable {
    let level: Double
    let muted: Bool
}

/// A flag set once, from any thread.
private final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// Whether a session was stopped for the quiet spell (rather than ended by the device), and why the device said it ended.
private final class QuietStop: Sendable {
    let happened = Mutex(false)
    let endReason = Mutex<PlaybackStatus.EndReason?>(nil)
}

/// The "Desktop audio" session on the desktop's media controls (MPRIS) while a device plays it.
enum DesktopAudioPublication {
    /// Publishes `session` as playing on `device` until cancelled or its statuses end, its controls going to
    /// `perform` (for a group: every member's session); without a session bus, nothing.
    @MainActor
    static func run(_ session: QueueSession, device: MediaDevice, perform: @escaping @Sendable (SessionCommand) async throws -> Void) async {
        // One player per device (the service may play several at once).
        let id = "desktop_audio_\(getpid())_" + String(device.id.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) && $0.isASCII ? Character($0) : "_" })
        let model = RemotePlayback(id: id, devices: [device], controls: MediaCommands(speaking: perform, live: true),
                                   adoptsDeviceMetadata: false)
        model.content = MusicContent(title: "Desktop audio", artist: "This computer's sound on \(device.name)", duration: .live,
                                     identifier: "desktop-audio")
        let publication = MediaSession(model)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await publication.run() }
            for await status in session.statusUpdates() { model.update(status.playback) }
            group.cancelAll()
        }
    }
}
