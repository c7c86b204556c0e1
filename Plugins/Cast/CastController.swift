// CastController: plays items on one Cast receiver through its Default Media Receiver — the TLS channel, its
// virtual connections and heartbeat, reconnection, and MEDIA_STATUS turned into PlaybackStatus.

import Foundation
import RouteCore

/// A RouteController for a Cast receiver.
///
/// `run()` holds the connection: it connects (TLS), opens the virtual connection to `receiver-0` (and to the
/// media app's transport once there is one), answers and sends heartbeats (PING every 5 s; a receiver
/// silent for three of them is dead), and reconnects with backoff, restoring both connections and their
/// statuses; a receiver that cannot be reached again within `reconnectWindow` ends the item as gone.
/// Commands wait for the connection, then for the receiver's answer, each for at most `callTimeout`.
/// Statuses come from the receiver's MEDIA_STATUS and RECEIVER_STATUS, unsolicited ones included: another
/// sender loading something, or another app launching, ends the item as replaced.
actor CastController: RouteController {
    nonisolated let route: MediaRoute
    private let log: RouteLog
    /// Where the receiver is now (a group's leader can move between connections).
    private let locate: @Sendable () -> CastAddress?
    private let updates = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    private var status = PlaybackStatus(state: .idle)
    private var connection: TLSConnection?
    /// Commands waiting for `run()` to connect.
    private let connectionWaiters = PendingCalls<TLSConnection>()
    private let replies = PendingCalls<CastReply>()
    /// The Default Media Receiver session route joined or launched.
    private var app: ReceiverStatus.Application?
    /// Whether route launched that session (then stopping it closes the app; one route joined is left running).
    private var launchedApp = false
    /// The transport route has a virtual connection to, on the current connection.
    private var connectedTransport: String?
    /// The media session of the item route loaded; nil until the receiver accepted a LOAD.
    private var mediaSessionID: Int?
    /// The URL of a LOAD in flight, until the receiver answers it.
    private var loading: String?
    /// How the receiver's volume may be changed (its controlType and stepInterval), as it last said.
    private var receiverVolume: CastVolume?
    /// Whether the item loaded last has played at all (an error before that is about its format).
    private var playedOnce = false
    /// The URL of the item queued after the current one, until the receiver plays it.
    private var queuedURL: String?
    private var expectingStop = false
    /// Loads begun: a stop answered after a load (the session heard the receiver say stopped and loaded the next item)
    /// leaves the next item's app and status alone.
    private var loads = 0
    private var lastHeard = ContinuousClock.now
    /// Whether the receiver has said anything but heartbeats on the current link (a link that only completed TLS, or
    /// answers PING and nothing else, proves nothing).
    private var heardOnLink = false
    /// The receiver GET_STATUS that proves the link carries requests, not only heartbeats, and when it was sent; nil
    /// once answered.
    private var statusAsked: (id: Int, at: ContinuousClock.Instant)?
    private var lastAnswered = ContinuousClock.now
    /// The certificate of the receiver on the current link: remembered as this Cast id's once it answers a request.
    private var linkFingerprint: String?
    /// Links made so far, and the count when the item was loaded: a media app gone after a new link is a receiver
    /// that restarted, not another controller.
    private var links = 0
    private var linksAtLoad = 0
    private var closed = false
    /// Why the receiver is lost for good, once it is.
    private var lost: RouteError?
    /// Following whatever media app and session the receiver runs (`observe()`), not a session route loaded.
    private var observing = false
    /// An observed media app appeared: its transport is to be joined.
    private var mustJoin = false

    static let heartbeatInterval: Duration = .seconds(5)
    static let heartbeatsMissedBeforeDead = 3
    /// A link whose receiver leaves a GET_STATUS unanswered this long is dead, however it answers PINGs.
    static let requestsAnsweredWithin: Duration = .seconds(10)
    /// How often a link that carries no other request is asked for a status, to prove it still carries requests.
    static let statusAskedEvery: Duration = .seconds(30)
    static let callTimeout: Duration = .seconds(5)
    /// How long the receiver may stay unreachable before the item ends: a killed receiver is told within 10 s.
    static let reconnectWindow: Duration = .seconds(7)
    static let senderID = "sender-0"
    /// The threads connects and sends wait on (never the cooperative pool).
    static let threads = BlockingThreads(name: "route-cast", count: 2)

    /// A controller for `route`; nothing is sent until a command or `run()`.
    init(route: MediaRoute, log: RouteLog, locate: @escaping @Sendable () -> CastAddress?) {
        self.route = route
        self.log = log
        self.locate = locate
    }

    // MARK: The connection

    func run() async throws {
        var backoff: Duration = .milliseconds(250)
        var failingSince: ContinuousClock.Instant?
        while !Task.isCancelled, !closed {
            var linkUp: ContinuousClock.Instant?
            do {
                let link = try await connect()
                linkUp = .now
                try await serve(link)
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled || closed { break }
                drop(because: error)
                let now = ContinuousClock.now
                // A connection that held for a while, the receiver answering on it, starts the count again; one that
                // breaks at once (a receiver that sends garbage to every connection) or on which the receiver never
                // said a word (it accepts, then is silent: three missed heartbeats) does not, so reconnecting gives up.
                if let linkUp, heardOnLink, now - linkUp >= Self.reconnectWindow {
                    failingSince = nil
                    backoff = .milliseconds(250)
                }
                let since = failingSince ?? now
                failingSince = since
                if now - since >= Self.reconnectWindow {
                    let gone = RouteError.deviceUnreachable(device: route.name, reason: "it stopped answering (\(error))")
                    lose(gone)
                    throw gone
                }
                log(.debug, "\(route.name): \(error); connecting again in \(backoff)")
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
        connection?.close()
    }

    private func connect() async throws -> TLSConnection {
        guard let address = locate() else { throw TLSError(reason: "it is no longer announced on the network") }
        return try await Self.threads.run(timeout: Self.callTimeout + .seconds(1),
                                          timedOut: { TLSError(reason: "no answer from \(address) within 5 s") }) {
            try TLSConnection.connect(host: address.host, port: address.port, timeout: Self.callTimeout)
        }
    }

    /// Speaks over `link` until it breaks: reads on its own thread, heartbeats on a timer.
    private func serve(_ link: TLSConnection) async throws {
        defer { link.close() }
        let messages = Self.messages(from: link)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await message in messages { try await self.handle(message) }
                throw TLSError(reason: "the receiver closed the connection")
            }
            group.addTask { try await self.heartbeat(on: link) }
            try await attach(link)
            try await group.next()
            group.cancelAll()
        }
    }

    /// Opens the virtual connections on a new link and asks for fresh statuses (after a reconnect, this is
    /// what restores them), then lets waiting commands go.
    private func attach(_ link: TLSConnection) async throws {
        lastHeard = .now
        heardOnLink = false
        linkFingerprint = link.fingerprint
        links += 1
        connectedTransport = nil
        try await send(on: link, CastNamespace.connection, to: CastNamespace.receiverID, CastJSON.connect())
        try await askStatus(on: link)
        if let transport = app?.transportId {
            try await openTransport(transport, on: link)
            try await send(on: link, CastNamespace.media, to: transport, ["type": "GET_STATUS", "requestId": replies.makeID()])
        }
        connection = link
        connectionWaiters.resumeAll(with: .success(link))
    }

    private func openTransport(_ transport: String, on link: TLSConnection) async throws {
        guard connectedTransport != transport else { return }
        try await send(on: link, CastNamespace.connection, to: transport, CastJSON.connect())
        connectedTransport = transport
    }

    /// Asks the receiver for its status, noting when: the link is alive while such requests are answered.
    private func askStatus(on link: TLSConnection) async throws {
        let id = replies.makeID()
        statusAsked = (id, .now)
        try await send(on: link, CastNamespace.receiver, to: CastNamespace.receiverID, ["type": "GET_STATUS", "requestId": id])
    }

    /// PING every `heartbeatInterval`; throws when the receiver has said nothing for three of them, or has left a
    /// status request unanswered for `requestsAnsweredWithin`.
    private func heartbeat(on link: TLSConnection) async throws {
        while true {
            try await Task.sleep(for: Self.heartbeatInterval)
            let now = ContinuousClock.now
            if now - lastHeard > Self.heartbeatInterval * Self.heartbeatsMissedBeforeDead {
                throw TLSError(reason: "it missed \(Self.heartbeatsMissedBeforeDead) heartbeats")
            }
            if let asked = statusAsked, now - asked.at > Self.requestsAnsweredWithin {
                throw TLSError(reason: "it answers heartbeats but not requests (no status within \(Self.requestsAnsweredWithin.components.seconds) s)")
            }
            if statusAsked == nil, now - lastAnswered >= Self.statusAskedEvery { try await askStatus(on: link) }
            try await send(on: link, CastNamespace.heartbeat, to: CastNamespace.receiverID, ["type": "PING"])
        }
    }

    /// The link broke: commands in flight fail; the next connection starts over.
    private func drop(because error: any Error) {
        connection = nil
        connectedTransport = nil
        replies.resumeAll(with: .failure(RouteError.deviceUnreachable(device: route.name, reason: "\(error)")))
    }

    /// The receiver is gone for good.
    private func lose(_ error: RouteError) {
        lost = error
        connectionWaiters.resumeAll(with: .failure(error))
        if !status.isFinal {
            status.end(.failed, because: .deviceGone)
            status.error = error.description
            publish()
        }
    }

    /// How many messages may wait for the handler before the reading thread waits too: a receiver that floods
    /// (MEDIA_STATUS as fast as it can send) fills its own TCP window instead of route's memory.
    static let backlog = 64

    /// Frames read on a thread of the connection's own, as messages; the stream ends with the connection.
    private static func messages(from link: TLSConnection) -> AsyncThrowingStream<CastMessage, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingOldest(backlog)) { continuation in
            continuation.onTermination = { _ in link.close() }
            DetachedThread.start(name: "route-cast-read") {
                var decoder = CastFrameDecoder()
                do {
                    while let bytes = try link.receive() {
                        decoder.append(bytes)
                        while let message = try decoder.next() {
                            guard continuation.yieldBlocking(message) else { return }
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }

    /// Sends one message; `payload` is the JSON object.
    private func send(on link: TLSConnection, _ namespace: String, to destination: String, _ payload: [String: Any]) async throws {
        let message = CastMessage(source: Self.senderID, destination: destination, namespace: namespace, payload: CastJSON.text(payload))
        if log.tracing { log(.debug, "→ \(destination) \(namespace.split(separator: ".").last ?? ""): \(message.payload)") }
        let frame = try CastFrame.encode(message)
        try await Self.threads.run(timeout: Self.callTimeout + .seconds(1), timedOut: { TLSError(reason: "sending took over 5 s") }) {
            try link.send(frame, timeout: Self.callTimeout)
        }
    }

    /// Waits for the connection (while `run()` makes it) for at most the reconnect window.
    private func connected() async throws -> TLSConnection {
        if let lost { throw lost }
        if closed { throw RouteError.deviceUnreachable(device: route.name, reason: "its controller is closed") }
        if let connection { return connection }
        let id = connectionWaiters.makeID()
        connectionWaiters.expect(id)
        let name = route.name
        return try await connectionWaiters.wait(id, timeout: Self.reconnectWindow) {
            RouteError.deviceUnreachable(device: name, reason: "no connection within 7 s")
        }
    }

    /// Sends a request and waits for the receiver's reply to it.
    private func request(_ namespace: String, to destination: String, _ payload: [String: Any]) async throws -> CastReply {
        let link = try await connected()
        let id = replies.makeID()
        var body = payload
        body["requestId"] = id
        replies.expect(id)
        try await send(on: link, namespace, to: destination, body)
        let (name, type) = (route.name, payload["type"] as? String ?? "a request")
        return try await replies.wait(id, timeout: Self.callTimeout) {
            RouteError.deviceUnreachable(device: name, reason: "no answer to \(type) within 5 s")
        }
    }

    // MARK: What the receiver says

    private func handle(_ message: CastMessage) async throws {
        lastHeard = .now
        if message.namespace != CastNamespace.heartbeat { heardOnLink = true }
        guard CastNamespace.known.contains(message.namespace) else {
            // Receivers speak namespaces route does not use (device authentication, multizone, apps' own).
            log(.debug, "\(route.name): ignored a message on \(message.namespace)")
            return
        }
        guard !message.isBinary, let envelope = try? JSONDecoder().decode(CastEnvelope.self, from: Data(message.payload.utf8)) else {
            throw CastFrameError.malformed("its \(message.namespace.split(separator: ".").last ?? "") message is not a JSON object")
        }
        if log.tracing { log(.debug, "← \(message.source) \(message.namespace.split(separator: ".").last ?? ""): \(message.payload)") }
        switch (message.namespace, envelope.type) {
        case (CastNamespace.heartbeat, "PING"):
            if let connection { try await send(on: connection, CastNamespace.heartbeat, to: message.source, ["type": "PONG"]) }
        case (CastNamespace.connection, "CLOSE"):
            if message.source == connectedTransport { connectedTransport = nil }
        case (CastNamespace.receiver, "RECEIVER_STATUS"):
            if let receiver = ReceiverStatus.decode(message.payload) { receiverChanged(receiver) }
            if mustJoin, let connection, let transport = app?.transportId {
                mustJoin = false
                try await openTransport(transport, on: connection)
                try await send(on: connection, CastNamespace.media, to: transport, ["type": "GET_STATUS", "requestId": replies.makeID()])
            }
        case (CastNamespace.media, "MEDIA_STATUS"):
            if let sessions = MediaSessionStatus.decode(message.payload) { mediaChanged(sessions, from: message.source) }
        default:
            break
        }
        if let asked = statusAsked, envelope.requestId == asked.id {
            statusAsked = nil
            lastAnswered = .now
            // The first time route meets this receiver, its certificate becomes what tells it from an impostor.
            if let fingerprint = linkFingerprint { CastCertificates.shared.remember(route.nativeID, fingerprint: fingerprint) }
        }
        if let id = envelope.requestId, id != 0 {
            replies.resume(id, with: .success(CastReply(type: envelope.type ?? "", payload: message.payload)))
        }
    }

    private func receiverChanged(_ receiver: ReceiverStatus) {
        if let volume = receiver.volume {
            status.volume = volume.level.map { min(1, max(0, $0)) } ?? status.volume
            status.muted = volume.muted ?? status.muted
            receiverVolume = volume
            if volume.controlType == "fixed" { status.allowed.remove(.volume) } else { status.allowed.insert(.volume) }
        }
        if observing {
            let media = receiver.applications?.first { $0.playsMedia }
            if media?.sessionId != app?.sessionId {
                app = media
                mediaSessionID = nil
                mustJoin = media != nil
                observedSessionEnded()
            }
            publish()
            return
        }
        if let app, mediaSessionID != nil, !status.isFinal,
           !(receiver.applications ?? []).contains(where: { $0.sessionId == app.sessionId }) {
            self.app = nil
            launchedApp = false
            let other = receiver.applications?.first?.displayName.map { DisplayText.clean($0) }
            if expectingStop {
                status.end(.stopped, because: .stopped)
            } else if other == nil, links > linksAtLoad {
                // The link broke and came back without the media app, and nothing else runs: the receiver restarted.
                status.end(.failed, because: .deviceGone)
                status.error = "\(route.name) restarted (its media app was gone when route connected again)"
            } else {
                status.end(.failed, because: .replaced)
                status.error = "replaced by another controller (\(route.name) " + (other.map { "now runs \($0))" } ?? "closed the media app)")
            }
        }
        publish()
    }

    /// A fresh status for an observed receiver with no session yet (the volume and what it allows are kept).
    private func observedSessionEnded() {
        status = PlaybackStatus(state: .idle, volume: status.volume)
        status.muted = receiverVolume?.muted
        if receiverVolume?.controlType == "fixed" { status.allowed.remove(.volume) }
    }

    private func mediaChanged(_ sessions: [MediaSessionStatus], from source: String) {
        if observing {
            // Only the joined app's statuses count (another app's transport may speak media too).
            guard source == app?.transportId else { return }
            guard let session = sessions.first else {
                // No media session any more: the app is idle.
                if mediaSessionID != nil {
                    mediaSessionID = nil
                    observedSessionEnded()
                    publish()
                }
                return
            }
            if session.mediaSessionId != mediaSessionID {
                mediaSessionID = session.mediaSessionId
                observedSessionEnded()
                status.state = .loading
            }
            apply(session)
            publish()
            return
        }
        if mediaSessionID == nil, let url = loading,
           let session = sessions.first(where: { $0.media?.contentId == url }) {
            // The receiver plays what route is loading before its reply to LOAD arrives: that is route's session.
            mediaSessionID = session.mediaSessionId
        }
        guard let mine = mediaSessionID, !status.isFinal else { return }
        guard let session = sessions.first(where: { $0.mediaSessionId == mine }) else {
            if !sessions.isEmpty {
                status.end(.failed, because: .replaced)
                status.error = "replaced by another controller (it loaded something else on \(route.name))"
                publish()
            }
            return
        }
        apply(session)
        publish()
    }

    /// Takes one MEDIA_STATUS entry of route's session into `status`.
    private func apply(_ session: MediaSessionStatus) {
        status.deviceState = session.playerState
        switch session.playerState {
        case "PLAYING":
            status.state = .playing
            playedOnce = true
        case "PAUSED": status.state = .paused
        case "BUFFERING", "LOADING": status.state = .loading
        case "IDLE" where observing:
            status.state = .idle
        case "IDLE":
            switch session.idleReason {
            case "FINISHED": status.end(.ended, because: .finished)
            case "CANCELLED" where expectingStop, "INTERRUPTED" where expectingStop: status.end(.stopped, because: .stopped)
            case "CANCELLED", "INTERRUPTED":
                status.end(.failed, because: .replaced)
                status.error = "replaced by another controller (\(route.name) was interrupted)"
            case "ERROR":
                // Before it played, most likely its format (the session may send it transcoded).
                status.end(.failed, because: playedOnce ? .deviceError : .unplayable)
                status.error = "\(route.name) could not play it (the receiver reported an error)"
            default: break
            }
        default: break
        }
        if let url = session.media?.contentId ?? session.items?.first(where: { $0.itemId == session.currentItemId })?.media?.contentId {
            if url != status.itemURL, url == queuedURL {
                // The receiver moved on to the queued item: a new item, with its own duration.
                queuedURL = nil
                status.duration = nil
            }
            status.itemURL = url
        }
        Self.take(session, into: &status, app: app?.sessionId)
    }

    /// What a MEDIA_STATUS entry says of position, duration, rate, text and commands, each checked where it enters:
    /// times within NetworkNumber's range, a rate among believable speeds, text cleaned for display.
    static func take(_ session: MediaSessionStatus, into status: inout PlaybackStatus, app: String?) {
        if let time = NetworkNumber.seconds(session.currentTime) {
            status.position = time
            status.timestamp = Date()
        }
        if let metadata = session.media?.metadata {
            status.title = (metadata.title ?? metadata.seriesTitle).map { DisplayText.clean($0, limit: 200) } ?? status.title
            status.artist = (metadata.artist ?? metadata.subtitle).map { DisplayText.clean($0, limit: 200) } ?? status.artist
            status.album = metadata.albumName.map { DisplayText.clean($0, limit: 200) } ?? status.album
        }
        if let duration = NetworkNumber.value(session.media?.duration, in: 0.001...NetworkNumber.maxSeconds) {
            status.duration = duration
        }
        if let rate = NetworkNumber.value(session.playbackRate, in: PlaybackStatus.speeds) { status.speed = rate }
        status.itemID = session.currentItemId.map(String.init)
        status.sessionID = [app, String(session.mediaSessionId)].compactMap { $0 }.joined(separator: "/")
        if let commands = session.supportedMediaCommands {
            status.allowed.remove([.pause, .seek])
            if commands & 1 != 0 { status.allowed.insert(.pause) }
            if commands & 2 != 0 { status.allowed.insert(.seek) }
        }
    }

    private func publish() {
        updates.send(status.at(Date()))
    }

    // MARK: Commands

    func load(_ item: MediaItem, autoplay: Bool) async throws {
        loads += 1
        let transport = try await mediaApp()
        linksAtLoad = links
        mediaSessionID = nil
        expectingStop = false
        playedOnce = false
        queuedURL = nil
        status = PlaybackStatus(state: .loading, duration: item.duration, volume: status.volume, title: item.title)
        status.muted = updates.latest?.muted
        status.itemURL = item.url
        publish()
        loading = item.url
        defer { loading = nil }
        let reply = try await request(CastNamespace.media, to: transport, [
            "type": "LOAD", "media": Self.media(for: item), "autoplay": autoplay, "currentTime": 0,
        ].merging(Self.activeTracks(for: item)) { $1 })
        guard reply.type == "MEDIA_STATUS", let session = MediaSessionStatus.decode(reply.payload)?.first else {
            if reply.type == "LOAD_FAILED" { throw RouteError.mediaRefused(device: route.name, reason: reply.failure) }
            if reply.type == "MEDIA_STATUS" {
                throw RouteError.unusableDevice(device: route.name, reason: "it answered LOAD with a MEDIA_STATUS that names no media session")
            }
            throw RouteError.commandFailed(device: route.name, command: "LOAD", reason: reply.failure)
        }
        mediaSessionID = session.mediaSessionId
        if item.duration != nil { status.duration = item.duration }
        apply(session)
        publish()
    }

    /// The Default Media Receiver's transport: joined when it runs, else launched; connected either way.
    private func mediaApp() async throws -> String {
        let reply = try await request(CastNamespace.receiver, to: CastNamespace.receiverID, ["type": "GET_STATUS"])
        var running = ReceiverStatus.decode(reply.payload)?.applications?.first { $0.appId == CastNamespace.defaultMediaReceiver }
        if running?.transportId == nil {
            let launched = try await request(CastNamespace.receiver, to: CastNamespace.receiverID,
                                             ["type": "LAUNCH", "appId": CastNamespace.defaultMediaReceiver])
            guard launched.type == "RECEIVER_STATUS" else {
                throw RouteError.commandFailed(device: route.name, command: "LAUNCH of the Default Media Receiver", reason: launched.failure)
            }
            running = ReceiverStatus.decode(launched.payload)?.applications?.first { $0.appId == CastNamespace.defaultMediaReceiver }
            launchedApp = true
        } else if running?.sessionId != app?.sessionId {
            launchedApp = false
        }
        guard let app = running, let transport = app.transportId else {
            throw RouteError.unusableDevice(device: route.name, reason: "it did not start the Default Media Receiver")
        }
        self.app = app
        try await openTransport(transport, on: try await connected())
        return transport
    }

    /// The `media` object of a LOAD.
    private static func media(for item: MediaItem) -> [String: Any] {
        var metadata: [String: Any] = ["metadataType": item.kind.contains(.video) ? 1 : item.kind == .audio ? 3 : 0]
        if let title = item.title { metadata["title"] = title }
        if let artist = item.artist { metadata["artist"] = artist }
        if let album = item.album { metadata["albumName"] = album }
        if let artwork = item.artworkURL { metadata["images"] = [["url": artwork]] }
        var media: [String: Any] = ["contentId": item.url, "contentType": item.mimeType, "streamType": item.isLive ? "LIVE" : "BUFFERED", "metadata": metadata]
        if let duration = item.duration { media["duration"] = duration }
        if let subtitles = item.subtitlesURL {
            media["tracks"] = [["trackId": Self.subtitlesTrack, "type": "TEXT", "subtype": "SUBTITLES", "name": "Subtitles",
                                "trackContentId": subtitles, "trackContentType": "text/vtt"]]
        }
        return media
    }

    /// The id of the one text track route sends.
    private static let subtitlesTrack = 1

    /// The fields of a LOAD besides `media`: the subtitles track on, when there is one.
    private static func activeTracks(for item: MediaItem) -> [String: Any] {
        item.subtitlesURL == nil ? [:] : ["activeTrackIds": [subtitlesTrack]]
    }

    /// A media command on route's session; its answer is the new MEDIA_STATUS.
    private func mediaCommand(_ name: String, _ extra: [String: Any] = [:]) async throws {
        guard let session = mediaSessionID, let transport = app?.transportId else {
            throw RouteError.commandFailed(device: route.name, command: name, reason: "nothing route loaded is playing there")
        }
        var payload = extra
        payload["type"] = name
        payload["mediaSessionId"] = session
        let reply = try await request(CastNamespace.media, to: transport, payload)
        guard reply.type == "MEDIA_STATUS" else {
            throw RouteError.commandFailed(device: route.name, command: name, reason: reply.failure)
        }
    }

    func play() async throws { try await mediaCommand("PLAY") }
    func pause() async throws { try await mediaCommand("PAUSE") }
    func seek(to seconds: Double) async throws { try await mediaCommand("SEEK", ["currentTime": seconds]) }

    /// Stops route's item. When route launched the media app, the app is stopped (the screen returns to the
    /// receiver's own, as catt stop does, and the media with it); one route joined is left running.
    func stop() async throws {
        guard mediaSessionID != nil, !status.isFinal else { return }
        expectingStop = true
        let asked = loads
        do {
            if launchedApp, let session = app?.sessionId {
                let reply = try await request(CastNamespace.receiver, to: CastNamespace.receiverID, ["type": "STOP", "sessionId": session])
                guard reply.type == "RECEIVER_STATUS" else {
                    throw RouteError.commandFailed(device: route.name, command: "STOP", reason: reply.failure)
                }
                guard loads == asked else { return }
                app = nil
                launchedApp = false
            } else {
                try await mediaCommand("STOP")
            }
        } catch where status.isFinal && status.endReason == .stopped {
            // The receiver's status said stopped before its reply came, and the session, done, closed the
            // connection the reply would have come on: it is stopped all the same.
            return
        }
        if !status.isFinal, loads == asked {
            status.end(.stopped, because: .stopped)
            publish()
        }
    }

    /// Sets the receiver's volume. A `fixed` one cannot be changed; a `master` one (a TV's or an amplifier's
    /// own volume, over CEC or IR) moves in whole steps of its stepInterval, so the level sent is the
    /// nearest whole number of steps from where it is (at least one step toward the target).
    func setVolume(_ level: Double) async throws {
        var target = min(1, max(0, level))
        switch receiverVolume?.controlType {
        case "fixed":
            throw RouteError.unsupported(device: route.name, what: "change its volume (the receiver says it is fixed)")
        case "master":
            if let step = receiverVolume?.stepInterval, step > 0.001, let current = status.volume, abs(target - current) > 0.0001 {
                var steps = ((target - current) / step).rounded()
                if steps == 0 { steps = target > current ? 1 : -1 }
                target = min(1, max(0, current + steps * step))
            }
        default:
            break
        }
        try await setReceiverVolume(["level": target])
    }

    func setMuted(_ muted: Bool) async throws {
        try await setReceiverVolume(["muted": muted])
    }

    private func setReceiverVolume(_ volume: [String: Any]) async throws {
        let reply = try await request(CastNamespace.receiver, to: CastNamespace.receiverID, ["type": "SET_VOLUME", "volume": volume])
        guard reply.type == "RECEIVER_STATUS" else {
            throw RouteError.commandFailed(device: route.name, command: "SET_VOLUME", reason: reply.failure)
        }
    }

    /// Queues `item` on the receiver (QUEUE_INSERT after the current item): it starts without a gap, and
    /// MEDIA_STATUS then names it.
    func setNext(_ item: MediaItem) async throws -> Bool {
        guard let session = mediaSessionID, let transport = app?.transportId else { return false }
        // Known as queued from now: a skip meanwhile goes out after this request, and the receiver takes
        // both in order.
        queuedURL = item.url
        do {
            let reply = try await request(CastNamespace.media, to: transport, [
                "type": "QUEUE_INSERT", "mediaSessionId": session,
                "items": [["media": Self.media(for: item), "autoplay": true, "preloadTime": 5]],
            ])
            guard reply.type == "MEDIA_STATUS" else {
                log(.debug, "\(route.name) did not queue the next item: \(reply.failure)")
                if queuedURL == item.url { queuedURL = nil }
                return false
            }
            return true
        } catch {
            if queuedURL == item.url { queuedURL = nil }
            throw error
        }
    }

    /// QUEUE_UPDATE with a jump of one: the receiver moves on to the item `setNext` queued.
    func skipToNext() async throws -> Bool {
        guard queuedURL != nil, status.itemURL != queuedURL else { return false }
        try await mediaCommand("QUEUE_UPDATE", ["jump": 1])
        return true
    }

    nonisolated func statusUpdates() -> AsyncStream<PlaybackStatus> { updates.subscribe() }

    /// From now on the status is whatever media session the receiver runs, whichever sender started it.
    func observe() async throws -> Bool {
        observing = true
        return true
    }

    func close() async {
        guard !closed else { return }
        closed = true
        if let connection, let transport = connectedTransport {
            try? await send(on: connection, CastNamespace.connection, to: transport, ["type": "CLOSE"])
        }
        connection?.close()
        connectionWaiters.resumeAll(with: .failure(RouteError.deviceUnreachable(device: route.name, reason: "its controller is closed")))
        updates.finish()
    }
}

/// Where a receiver listens.
struct CastAddress: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: UInt16
    var description: String { "\(host):\(port)" }
}

/// A receiver's reply to a request: its type and JSON.
struct CastReply: Sendable {
    var type: String
    var payload: String

    /// Words for a reply that is not the one asked for (LOAD_FAILED and the like).
    var failure: String {
        (try? JSONDecoder().decode(CastFailure.self, from: Data(payload.utf8)))?.summary ?? type
    }
}
