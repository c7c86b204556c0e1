// RendererController: controls one DLNA renderer over AVTransport and RenderingControl, and keeps its
// status from GENA LastChange events plus polling (position is never evented), extrapolated in between.

import CUPnP
import Foundation
import RouteXML
import RouteCore

/// A RouteController for a UPnP MediaRenderer.
///
/// Status: while `run()` runs, GENA events carry transport state and volume as they change, and
/// GetTransportInfo and GetPositionInfo are polled every second (a renderer silent for
/// `silenceBeforeGone`, or that says byebye and does not answer, ends the item as `.failed`, device gone); between polls the
/// position advances with the clock while playing. Each call gives up after `UPnPStack.callTimeout`.
actor RendererController: RouteController {
    nonisolated let route: MediaRoute
    private var device: MediaRoute { route }
    private let log: RouteLog
    private let renderer: Renderer
    private let stack: UPnPStack
    private let transport: ServiceInfo
    private let rendering: ServiceInfo?
    private var seekUnit = "REL_TIME"
    private var canQueueNext = false
    /// The item queued with SetNextAVTransportURI, until the renderer moves on to it.
    private var nextItem: MediaItem?
    /// The item route loaded last (what Play plays, when nothing moved on from it).
    private var loadedItem: MediaItem?
    private let updates = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    private var status = PlaybackStatus(state: .idle)
    private var positionAt = ContinuousClock.now
    private var subscriptions: Set<String> = []
    /// Reads the SCPD (seek modes, whether it queues) once; every command that needs it waits for it.
    private var describing: Task<Void, Never>?
    private var expectingStop = false
    private var sawPlaying = false
    /// When the renderer last answered a poll: silent for `silenceBeforeGone`, it is gone.
    private var lastAnswer = ContinuousClock.now
    private var badReplies = 0
    /// A seek the renderer answered, until a poll shows it took it (within 3 s): sent once more if not.
    private var pendingSeek: (target: Double, at: ContinuousClock.Instant)?
    /// Whether the renderer has reported the URI route loaded since the load: until it has, a report of
    /// another URI is an old one (the event a new subscription starts with), not a takeover.
    private var sawOurURI = false
    /// The renderer sent ssdp:byebye and has not announced itself since: the next failed poll means it left.
    private var saidByebye = false
    /// The loaded item's duration is route's own (probed): renderers report the previous track's for a
    /// while after a new URI (gmediarender does), so their report only fills in an unknown one.
    private var durationIsProbed = false
    /// Whether a NextURI of ours may be on the renderer (cleared on load, stop and close).
    private var mayHaveNext = true
    /// Counts loads: a poll answered for an earlier load must not change the status of this one.
    private var generation = 0
    /// Counts moves on to a queued item: a poll answered before one reports the item before, which is no takeover.
    private var advances = 0
    private var closed = false
    /// Set when the renderer stopped answering or left: no more requests are sent to it (each would only
    /// wait out its deadline, holding up the end of the cast).
    private var gone = false
    /// Following whatever the renderer plays (`observe()`), not an item route loaded.
    private var observing = false
    /// The DIDL-Lite metadata of the observed item, as last read.
    private var observedMetadata: String?
    /// Counts the observed renderer's stops: what plays after one is a new session, even the same URI.
    private var observedSessions = 0

    static let pollInterval: Duration = .seconds(1)
    /// A poll unanswered for this long counts as unanswered.
    static let pollTimeout: Duration = .seconds(2)
    /// A renderer that has answered no poll for this long (frozen, unplugged) ends the cast: with the
    /// poll's own timeout, that is noticed within 10 s.
    static let silenceBeforeGone: Duration = .seconds(6)
    static let badRepliesBeforeGone = 5

    /// A controller for `renderer`; nothing is sent to it until a command or `run()`.
    /// - Throws: `RouteError.unsupported` when the renderer has no AVTransport service.
    init(_ renderer: Renderer, stack: UPnPStack, log: RouteLog) throws {
        guard let transport = renderer.description.service("AVTransport") else {
            throw RouteError.unsupported(device: renderer.route.name, what: "play media (no AVTransport service)")
        }
        self.renderer = renderer
        self.route = renderer.route
        self.stack = stack
        self.log = log
        self.transport = transport
        self.rendering = renderer.description.service("RenderingControl")
    }

    /// Reads the SCPD once: the seek modes, and whether the renderer queues a next item.
    private func describe() async {
        if let describing { return await describing.value }
        let reading = Task { await self.readSCPD() }
        describing = reading
        await reading.value
    }

    private func readSCPD() async {
        if let root = try? await stack.fetchDocument(transport.scpdURL) {
            let modes = root.all("stateVariable").first { $0.value("name") == "A_ARG_TYPE_SeekMode" }?
                .all("allowedValue").map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) } ?? []
            if !modes.contains("REL_TIME"), modes.contains("ABS_TIME") { seekUnit = "ABS_TIME" }
            canQueueNext = root.all("action").contains { $0.value("name") == "SetNextAVTransportURI" }
        }
    }

    /// Subscribes to the renderer's events and polls it, until cancelled (then unsubscribes).
    func run() async throws {
        await describe()
        let events = stack.events.subscribe()
        for service in [transport, rendering].compactMap({ $0 }) where !service.eventURL.isEmpty {
            if let sid = try? await stack.subscribe(service.eventURL) { subscriptions.insert(sid) }
        }
        if let rendering, let reply = try? await call("GetVolume", on: rendering, ["InstanceID": "0", "Channel": "Master"]),
           let volume = NetworkNumber.double(reply["CurrentVolume"], in: 0...100) {
            status.volume = volume / 100
        }
        publish()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await event in events { await self.handle(event) } }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.pollInterval / 2)
                    await self.tick(poll: false)
                    try? await Task.sleep(for: Self.pollInterval / 2)
                    await self.tick(poll: true)
                }
            }
            await group.next()
            group.cancelAll()
        }
        if !gone { for sid in subscriptions { await stack.unsubscribe(sid) } }
        subscriptions.removeAll()
    }

    nonisolated func statusUpdates() -> AsyncStream<PlaybackStatus> { updates.subscribe() }

    /// From now on the status is whatever the renderer plays: its URI, the title its metadata gives, and a
    /// session id per URI; stopping is a state like any other, not an end.
    func observe() async throws -> Bool {
        observing = true
        loadedItem = nil
        // Whatever is queued on the renderer is another controller's: never taken back from here.
        mayHaveNext = false
        nextItem = nil
        return true
    }

    func load(_ item: MediaItem, autoplay: Bool) async throws {
        generation += 1
        status = PlaybackStatus(state: .loading, duration: item.duration, volume: status.volume, title: item.title)
        status.itemURL = item.url
        durationIsProbed = item.duration != nil
        nextItem = nil
        // A seek of the item before is not checked against this one (the polls would seek it there: a group's `next`
        // within 3 s of a seek played the next file from where the seek went, and it ended early).
        pendingSeek = nil
        positionAt = .now
        sawPlaying = false
        sawOurURI = false
        expectingStop = false
        lastAnswer = .now
        publish()
        // A NextURI left by an earlier cast (one that was killed, say) points at a server that is gone: the
        // renderer would jump there at the end of this item.
        await describe()
        await clearNext()
        loadedItem = item
        try await setURI(item)
        if autoplay { try await play() }
    }

    /// SetAVTransportURI: `item` is what the renderer plays from now on.
    private func setURI(_ item: MediaItem) async throws {
        try await command("load", "SetAVTransportURI", on: transport, [
            "InstanceID": "0", "CurrentURI": item.url, "CurrentURIMetaData": DIDLLite.metadata(for: item),
        ])
    }

    func play() async throws {
        if status.isFinal {
            status.state = .loading
            status.error = nil
            sawPlaying = false
        }
        expectingStop = false
        do {
            try await playSettingTheURIAgainOnFailure()
        } catch let error as RouteError where error.code == .commandFailed && (error.reason ?? "").contains("(701") {
            let reason = error.reason ?? ""
            // 701 "transition not available" from a renderer that is already playing (Rygel, after
            // SetAVTransportURI while it played something else) means it plays: that is success.
            let state = (try? await call("GetTransportInfo", on: transport, ["InstanceID": "0"], timeout: Self.pollTimeout))?["CurrentTransportState"]
            guard state == "PLAYING" || state == "TRANSITIONING" else { throw RouteError.commandFailed(device: device.name, command: "play", reason: reason) }
            applyTransportState(state ?? "PLAYING")
        }
    }

    /// Play; when the renderer answers 501 "action failed" to the Play of an item it has not played yet, the item's URI
    /// is set again (after a Stop) and Play asked once more. gmediarender 0.1 answers 501 whenever its player holds no URI
    /// at the moment of Play: the previous stream's about-to-finish (a second before its end, or when its server closed
    /// the connection) replaced the URI just set with its own empty next one. Nothing the renderer reports says when a
    /// Play would succeed, and Play alone fails for as long as the URI is gone (retries 0.3 s apart failed the same
    /// way); setting it again is what makes it play. Not done once something else was asked meanwhile (a Stop, another
    /// item loaded, the controller closed).
    private func playSettingTheURIAgainOnFailure() async throws {
        let asked = generation
        do {
            try await command("play", "Play", on: transport, ["InstanceID": "0", "Speed": "1"])
        } catch let error as RouteError where error.code == .commandFailed && (error.reason ?? "").contains("(501") {
            guard let item = loadedItem, !sawPlaying, generation == asked, !expectingStop, !closed else { throw error }
            // Stop puts the player at rest, so the URI set next is only taken, and Play starts it. Its STOPPED is not
            // the item's end: nothing played yet.
            try? await command("stop", "Stop", on: transport, ["InstanceID": "0"])
            guard generation == asked, !expectingStop, !closed else { throw error }
            try await setURI(item)
            guard generation == asked, !expectingStop, !closed else { throw error }
            try await command("play", "Play", on: transport, ["InstanceID": "0", "Speed": "1"])
        }
    }

    func pause() async throws {
        let asked = generation
        try await command("pause", "Pause", on: transport, ["InstanceID": "0"])
        // Calls on this actor interleave at each await: an item loaded meanwhile is not paused.
        guard generation == asked else { return }
        status.position = position()
        positionAt = .now
        if status.state == .playing { status.state = .paused }
        publish()
    }

    func seek(to seconds: Double) async throws {
        let asked = generation
        await describe()
        // As for pause: an item loaded meanwhile is not sought, nor given this one's position (the polls would seek it).
        guard generation == asked else { return }
        try await sendSeek(seconds)
        guard generation == asked else { return }
        // Some renderers (gmediarender just after a Play) answer a seek and drop it: the next polls check.
        pendingSeek = (seconds, .now)
        status.position = seconds
        positionAt = .now
        publish()
    }

    private func sendSeek(_ seconds: Double) async throws {
        try await command("seek", "Seek", on: transport, [
            "InstanceID": "0", "Unit": seekUnit, "Target": DIDLLite.durationString(seconds).components(separatedBy: ".")[0],
        ])
    }

    func stop() async throws {
        expectingStop = true
        let asked = generation
        try await command("stop", "Stop", on: transport, ["InstanceID": "0"])
        // The renderer's STOPPED event may come before the answer, and a skip load the next item on it: that
        // item is not stopped (the cast took it for its own end, and ended, on a busy machine).
        guard generation == asked else { return }
        status.state = .stopped
        publish()
        await clearNext()
    }

    /// Takes back a NextURI this controller (or an earlier cast) may have queued; best effort.
    private func clearNext() async {
        guard canQueueNext, !gone, !observing, mayHaveNext || nextItem != nil else { return }
        nextItem = nil
        mayHaveNext = false
        _ = try? await call("SetNextAVTransportURI", on: transport, ["InstanceID": "0", "NextURI": "", "NextURIMetaData": ""],
                            timeout: Self.pollTimeout)
    }

    func setVolume(_ level: Double) async throws {
        guard let rendering else { throw RouteError.unsupported(device: device.name, what: "change volume") }
        let clamped = min(1, max(0, level))
        try await command("set volume", "SetVolume", on: rendering, [
            "InstanceID": "0", "Channel": "Master", "DesiredVolume": String(Int((clamped * 100).rounded())),
        ])
        status.volume = clamped
        publish()
    }

    func setNext(_ item: MediaItem) async throws -> Bool {
        await describe()
        guard canQueueNext else { return false }
        try await command("queue the next item", "SetNextAVTransportURI", on: transport, [
            "InstanceID": "0", "NextURI": item.url, "NextURIMetaData": DIDLLite.metadata(for: item),
        ])
        nextItem = item
        mayHaveNext = true
        return true
    }

    func setMuted(_ muted: Bool) async throws {
        guard let rendering else { throw RouteError.unsupported(device: device.name, what: "mute") }
        try await command("mute", "SetMute", on: rendering, ["InstanceID": "0", "Channel": "Master", "DesiredMute": muted ? "1" : "0"])
        status.muted = muted
        publish()
    }

    func close() async {
        guard !closed else { return }
        closed = true
        // Nothing of ours may stay queued on the renderer once the server that serves it is gone.
        await clearNext()
        updates.finish()
    }

    // MARK: status

    private func handle(_ event: UPnPEvent) async {
        switch event {
        case .event(let sid, let variables) where subscriptions.contains(sid):
            guard let lastChange = variables["LastChange"] else { return }
            let changes = LastChange.parse(lastChange)
            // Events only move the status on to a queued item: libupnp may deliver them out of order (the
            // state a subscription starts with can come after a newer one), so only polls tell a takeover.
            if observing {
                // The track's own URI only (AVTransportURI may name a playlist); polls say the same in any case.
                if let uri = changes["CurrentTrackURI"] { observed(uri, metadata: changes["CurrentTrackMetaData"]) }
            } else if let uri = changes["CurrentTrackURI"] ?? changes["AVTransportURI"] {
                if let next = nextItem, TrackURI.isSame(uri, as: next.url) {
                    advance(to: next)
                } else if let loaded = status.itemURL, TrackURI.isSame(uri, as: loaded) {
                    sawOurURI = true
                }
            }
            let state = changes["TransportState"]
            let endsTheItem = state.map(wouldEndTheItem) ?? false
            if let state, !endsTheItem { applyTransportState(state) }
            if let volume = NetworkNumber.double(changes["Volume"], in: 0...100) { status.volume = volume / 100 }
            if let mute = changes["Mute"] { status.muted = mute == "1" || mute.lowercased() == "true" }
            adoptReported(duration: changes["CurrentTrackDuration"])
            publish()
            if let state, endsTheItem { await confirmEnd(reported: state) }
        case .byebye(let udn, _) where udn == renderer.description.udn:
            // A renderer says byebye when it leaves, but also when it starts announcing (GSSDP does, to flush
            // caches), and anyone on the LAN can send one: it is believed only once the renderer stops answering.
            saidByebye = true
            let asked = generation
            let answer = try? await call("GetTransportInfo", on: transport, ["InstanceID": "0"], timeout: Self.pollTimeout)
            guard generation == asked, !closed, !status.isFinal else { return }
            if answer == nil {
                gone = true
                fail(byebyeReason, because: .deviceGone)
            } else {
                log(.debug, "\(device.name) sent ssdp:byebye but still answers: playing on")
            }
        case .alive(let udn, _, _, _, _, _) where udn == renderer.description.udn:
            saidByebye = false
        case .subscriptionLost(let sid) where subscriptions.contains(sid):
            subscriptions.remove(sid)
        default:
            break
        }
    }

    /// Whether `state` says the cast's item ended: a stop route did not ask for, after the item played.
    private func wouldEndTheItem(_ state: String) -> Bool {
        !observing && !expectingStop && sawPlaying && !status.isFinal && (state == "STOPPED" || state == "NO_MEDIA_PRESENT")
    }

    /// An event's stop ends the item only when the renderer still says it: events arrive late and out of order,
    /// and the STOPPED of a skip's Stop came after the next item was playing on a busy machine — the cast ended
    /// there and left the renderer playing. A renderer that does not answer is believed.
    private func confirmEnd(reported state: String) async {
        let asked = generation
        let answer = try? await call("GetTransportInfo", on: transport, ["InstanceID": "0"], timeout: Self.pollTimeout)
        guard generation == asked, !closed else { return }
        applyTransportState(answer?["CurrentTransportState"] ?? state)
        publish()
    }

    /// Every half interval: publish the extrapolated position; every interval, poll the renderer.
    private func tick(poll: Bool) async {
        guard !closed, observing || !status.isFinal || status.state == .stopped else { return }
        if poll {
            let asked = generation, advanced = advances
            do {
                let info = try await call("GetTransportInfo", on: transport, ["InstanceID": "0"], timeout: Self.pollTimeout)
                guard generation == asked, advances == advanced else { return }
                if let state = info["CurrentTransportState"] { applyTransportState(state) }
                if status.state == .playing || status.state == .paused || status.state == .loading {
                    // Position is best effort: some renderers fault GetPositionInfo and play fine.
                    let position = (try? await call("GetPositionInfo", on: transport, ["InstanceID": "0"], timeout: Self.pollTimeout)) ?? [:]
                    guard generation == asked, advances == advanced else { return }
                    if let uri = position["TrackURI"] { follow(uri, metadata: position["TrackMetaData"]) }
                    if let rel = NetworkNumber.clock(position["RelTime"]), let (target, at) = pendingSeek {
                        pendingSeek = nil
                        // Where it plays had the seek taken; a dropped seek left it where it was (2 s: it reports whole
                        // seconds, a moment late). A short seek dropped was missed when judged against the target alone
                        // (a member joining a group 3 s in played 3 s behind it).
                        let since = ContinuousClock.now - at
                        let expected = target + (status.state == .playing ? since / .seconds(1) : 0)
                        if abs(rel - expected) > 2, since < .seconds(3) {
                            log(.debug, "the renderer is at \(rel) s after a seek to \(target) s: seeking again, to \(expected) s")
                            try? await sendSeek(expected)
                            return
                        }
                    }
                    if let rel = NetworkNumber.clock(position["RelTime"]), rel > 0 || status.state != .playing || status.position < 1 {
                        status.position = rel
                        positionAt = .now
                    }
                    adoptReported(duration: position["TrackDuration"])
                }
                lastAnswer = .now
                badReplies = 0
                // An observed renderer that was away and answers again is controllable again.
                if observing { gone = false }
            } catch let error as UPnPError where error.isUnreachable {
                if saidByebye || ContinuousClock.now - lastAnswer >= Self.silenceBeforeGone, status.state != .stopped {
                    gone = true
                    fail(saidByebye ? byebyeReason : "\(device.name) stopped answering (\(error))", because: .deviceGone)
                }
                return
            } catch {
                badReplies += 1
                if badReplies >= Self.badRepliesBeforeGone, status.state != .stopped {
                    fail("\(device.name) keeps answering with errors (\(error))")
                }
                return
            }
        }
        guard observing || !status.isFinal else { return }
        publish()
    }

    /// What the renderer says it plays: the queued item (the status is now that item's), ours, or
    /// something route did not send — another controller took over, and this cast ends.
    private func follow(_ uri: String, metadata: String? = nil) {
        if observing { return observed(uri, metadata: metadata) }
        guard !uri.isEmpty, uri != "NOT_IMPLEMENTED", !status.isFinal else { return }
        if let next = nextItem, TrackURI.isSame(uri, as: next.url) {
            advance(to: next)
        } else if let loaded = status.itemURL, TrackURI.isSame(uri, as: loaded) {
            sawOurURI = true
        } else if status.itemURL != nil, sawOurURI {
            fail("\(device.name) is now playing something route did not send (another controller took over)", because: .replaced)
        }
    }

    /// What an observed renderer plays: a new URI is a new session, described by its DIDL-Lite metadata (read
    /// again whenever it changes: an internet radio changes its title as it goes).
    private func observed(_ uri: String, metadata: String?) {
        guard !uri.isEmpty, uri != "NOT_IMPLEMENTED" else { return }
        // Renderers re-escape URIs: one item reported two ways is still one item.
        func plain(_ text: String?) -> String? { text.map { $0.removingPercentEncoding ?? $0 } }
        if plain(uri) != plain(status.itemURL) {
            status.itemURL = uri
            status.sessionID = "upnp-\(StableName.of(uri))-\(observedSessions)"
            status.itemID = status.sessionID
            status.title = nil
            status.artist = nil
            status.album = nil
            status.duration = nil
            durationIsProbed = false
            observedMetadata = nil
        }
        guard let metadata, !metadata.isEmpty, metadata != "NOT_IMPLEMENTED", metadata != observedMetadata else { return }
        observedMetadata = metadata
        guard let item = try? XMLNode.parse(metadata, limits: .message) else { return }
        func text(_ names: String...) -> String? {
            names.lazy.compactMap { item.all($0).first }.map { DisplayText.clean($0.text, limit: 200) }.first { !$0.isEmpty }
        }
        status.title = text("title") ?? status.title
        status.artist = text("artist", "creator")
        status.album = text("album")
    }

    private var byebyeReason: String { "\(device.name) left the network (it sent ssdp:byebye)" }

    /// A duration the renderer reported, kept only when route does not know the item's own.
    private func adoptReported(duration text: String?) {
        guard !durationIsProbed, let duration = NetworkNumber.clock(text), duration > 0 else { return }
        status.duration = duration
    }

    /// The renderer moved on to the queued item: the status is now that item's.
    private func advance(to next: MediaItem) {
        nextItem = nil
        advances += 1
        // As in load: a seek of the item before is not checked against this one.
        pendingSeek = nil
        let muted = status.muted
        status = PlaybackStatus(state: .playing, duration: next.duration, volume: status.volume, title: next.title)
        status.muted = muted
        status.itemURL = next.url
        durationIsProbed = next.duration != nil
        positionAt = .now
        sawPlaying = true
        expectingStop = false
    }

    private func applyTransportState(_ state: String) {
        status.deviceState = DisplayText.clean(state, limit: 40)
        // An observed renderer's stop is a state like any other; a cast's ends the item.
        guard observing || !status.isFinal || state == "PLAYING" && !expectingStop && status.state != .ended else { return }
        switch state {
        case "PLAYING":
            if status.state != .playing { status.position = position(); positionAt = .now }
            status.state = .playing
            sawPlaying = true
        case "PAUSED_PLAYBACK", "PAUSED_RECORDING":
            status.position = position()
            positionAt = .now
            status.state = .paused
        case "TRANSITIONING":
            status.state = .loading
        case "STOPPED" where observing, "NO_MEDIA_PRESENT" where observing:
            status.state = state == "STOPPED" ? .stopped : .idle
            // Whatever plays next (the same URI again, too) is a new session.
            if status.itemURL != nil { observedSessions += 1 }
            status.itemURL = nil
            status.sessionID = nil
        case "STOPPED", "NO_MEDIA_PRESENT":
            if expectingStop {
                status.state = .stopped
            } else if sawPlaying {
                status.state = .ended
                if let duration = status.duration { status.position = duration }
            }
        default:
            break
        }
    }

    /// The position now: the last report, plus the time since while playing.
    private func position() -> Double {
        guard status.state == .playing else { return status.position }
        let elapsed = ContinuousClock.now - positionAt
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let extrapolated = status.position + seconds
        return status.duration.map { min($0, extrapolated) } ?? extrapolated
    }

    private func publish() {
        var snapshot = status
        snapshot.position = position()
        // The position is extrapolated to now: so is the time it is true at (a desktop extrapolates from it).
        snapshot.timestamp = Date()
        updates.send(snapshot)
    }

    private func fail(_ reason: String, because why: PlaybackStatus.EndReason = .deviceError) {
        guard !status.isFinal else { return }
        status.end(.failed, because: why)
        status.error = reason
        publish()
    }

    // MARK: SOAP

    /// A command from the user: failures become RouteError with a readable reason.
    private func command(_ name: String, _ action: String, on service: ServiceInfo, _ arguments: KeyValuePairs<String, String>) async throws {
        if gone { throw RouteError.deviceUnreachable(device: device.name, reason: status.error ?? "it is gone") }
        do {
            _ = try await call(action, on: service, arguments)
        } catch let error as UPnPError {
            if error.isUnreachable {
                throw RouteError.deviceUnreachable(device: device.name, reason: error.reason)
            }
            if error.code == UPNP_E_BAD_RESPONSE || error.code == UPNP_E_BAD_HTTPMSG {
                throw RouteError.unusableDevice(device: device.name, reason: "its answer to \(name) was not valid UPnP")
            }
            // The renderer refuses the format it was sent (as a Cast LOAD_FAILED says): another format may play.
            if name == "load", error.code == 714 || error.code == 704 {
                throw RouteError.mediaRefused(device: device.name, reason: error.reason)
            }
            throw RouteError.commandFailed(device: device.name, command: name, reason: error.reason)
        }
    }

    /// One SOAP call, with the stack's deadline unless a shorter one is given.
    private func call(_ action: String, on service: ServiceInfo, _ arguments: KeyValuePairs<String, String>,
                      timeout: Duration = UPnPStack.callTimeout) async throws -> [String: String] {
        try await stack.sendAction(action, service: service, arguments: arguments, timeout: timeout)
    }
}

/// The track URIs renderers report, compared with what route sent.
package enum TrackURI {
    /// Whether a URI a renderer reports is the one route served: the same token (renderers may re-escape
    /// it or drop the query a seek reload adds).
    package static func isSame(_ reported: String, as ours: String) -> Bool {
        if reported == ours { return true }
        guard let token = ours.range(of: "/m/").map({ ours[$0.upperBound...].prefix { $0 != "/" } }), token.count >= 16 else { return false }
        return reported.contains("/m/\(token)/")
    }
}
