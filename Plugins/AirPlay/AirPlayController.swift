// AirPlayController: one AirPlay 1 session on a receiver — RTSP's OPTIONS, ANNOUNCE, SETUP and RECORD on the first
// load, FLUSH for pause and seek, SET_PARAMETER for volume, TEARDOWN at the end — with the audio streamed by an
// RAOPStreamer and a status reported twice a second.

import Foundation
import RouteCore
import Synchronization

/// Control of one AirPlay receiver.
final class AirPlayController: RouteController {
    let route: MediaRoute
    private let receiver: RAOPService
    private let log: RouteLog
    private let statuses = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    /// RTSP calls and other blocking work (GStreamer's set-up, an artwork fetch), off the cooperative pool; shared by
    /// every session of the plugin (a connection makes its requests one at a time itself).
    private static let rtspThreads = BlockingThreads(name: "route-airplay-rtsp", count: 4)
    private let session = Mutex<Session?>(nil)
    private let item = Mutex<Item?>(nil)
    /// The item queued on the streamer to follow the current one without a gap (`setNext`).
    private let following = Mutex<MediaItem?>(nil)
    private let volume = Mutex(Volume())
    /// The streamer, handed to `run()` once SETUP made it.
    private let (streamers, streamerReady) = AsyncStream<RAOPStreamer>.makeStream()
    /// What the receiver is to be told of each item, sent by `run()`: a load answers without waiting for it (an
    /// artwork fetch can take seconds).
    private let (descriptions, describe) = AsyncStream<Description>.makeStream(bufferingPolicy: .bufferingNewest(4))

    /// An item to describe to the receiver: on which session, from which RTP time and place.
    private struct Description: @unchecked Sendable {
        // Safety: Session's own reasoning; the rest are values.
        let session: Session
        let media: MediaItem
        let next: UInt32
        let position: Double
        /// The item's seeks then.
        let seeks: Int
    }
    /// Frames the sync packets ask the receiver to hold before it plays one: with the 11025 receivers add, 1.5 s
    /// (classic AirPlay senders ask for 2 s). A start is heard sooner all the same: the streamer's timeline plays it
    /// after the receiver's 0.25 s, and sends faster until it is this far ahead. The lead is what lets a lost packet
    /// be asked for again: shairport-sync 3.3.8 asks every 0.25 s while 0.3 s or more is left (0.1 s and its output's
    /// buffer: 0.2 s in the lab, 0.15 s with ALSA), so once at 0.5 s of latency, five times at 1.5 s.
    static let latency: UInt32 = 55125
    /// The same for a live stream (desktop audio): none, so 0.25 s with the receiver's own, as PipeWire's raop-sink
    /// asks (its sync packets' delay is 0) and shairport-sync plays; a live stream cannot be sent ahead.
    static let liveLatency: UInt32 = 0

    /// The RTSP connection and the streamer of a set-up session.
    private struct Session: @unchecked Sendable {
        // Safety: RTSPConnection serializes its requests; `closedByPeer` only peeks.
        let rtsp: RTSPConnection
        let streamer: RAOPStreamer
        let uri: String
    }

    /// The item loaded, as reported.
    private struct Item {
        var media: MediaItem
        var url: String { media.url }
        var title: String? { media.title }
        var duration: Double? { media.duration }
        /// The state reported last, and whether a final state was.
        var reported: PlaybackStatus.State = .loading
        var final = false
        var paused = false
        /// Where a paused item was when the receiver ended its session (play starts a new one there).
        var pausedAt: Double?
        /// How many times it was seeked: a description sent later tells no older place.
        var seeks = 0
        /// Which of the streamer's items it is (they count up as queued ones follow without a gap).
        var number = 0
    }

    /// The volume route set; the receiver keeps its own until route sets one (AirPlay has no way to ask it).
    private struct Volume {
        var level: Double?
        var muted = false
        /// What an unmute restores when route never set a level: -18 dB, what receivers assume of a silent sender.
        static let assumed = 0.4
    }

    init(route: MediaRoute, receiver: RAOPService, log: RouteLog) {
        self.route = route
        self.receiver = receiver
        self.log = log
    }

    // MARK: status

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [streamers] in
                for await streamer in streamers {
                    await withTaskCancellationHandler { await streamer.run() } onCancel: { streamer.close() }
                }
            }
            group.addTask { [descriptions] in
                // What it is, for the receiver's display: a receiver that shows nothing of it still plays it.
                for await told in descriptions {
                    do {
                        try await self.tell(told.session, about: told.media, next: told.next, position: told.position, seeks: told.seeks)
                    } catch is CancellationError {
                        return
                    } catch {
                        self.log(.debug, "\(self.route.name) took no metadata: \(error)")
                    }
                }
            }
            group.addTask {
                while true {
                    if let gone = self.lost() { throw gone }
                    self.report()
                    try await Task.sleep(for: .milliseconds(500))
                }
            }
            group.addTask {
                // A receiver unplugged or hung closes nothing: it is asked every two seconds whether it is there.
                while true {
                    try await Task.sleep(for: .seconds(2))
                    guard let current = self.session.withLock({ $0 }) else { continue }
                    do {
                        _ = try await self.rtsp { try current.rtsp.request("OPTIONS", "*") }
                    } catch is CancellationError {
                        throw CancellationError()
                    } catch {
                        // Closed rather than silent: a paused session the receiver ended is set up again on play.
                        if current.rtsp.closedByPeer {
                            if let gone = self.lost() { throw gone }
                            continue
                        }
                        throw self.end(current, because: "it stopped answering (\(error))")
                    }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// The error that ends the session when the receiver has closed its connection (it quit or was killed); nil while
    /// it holds, or when it closed a paused one.
    private func lost() -> RouteError? {
        guard let current = session.withLock({ $0 }), current.rtsp.closedByPeer else { return nil }
        // A receiver ends a session that has sent it nothing for a while (shairport-sync after 120 s, its
        // session_timeout): a paused item stays paused, and play sets up a new session from where it was.
        let paused = item.withLock { $0.map { $0.paused && !$0.final } ?? false }
        guard paused else { return end(current, because: "it closed its AirPlay connection (it quit or restarted)") }
        // The status loop, the keepalive and a command may all see it: the one that takes the session notes where the
        // item was (its streamer still open, so still paused there), and the others find no session.
        let position = session.withLock { session -> Double? in
            guard session?.uri == current.uri else { return nil }
            session = nil
            let position = current.streamer.progress().position
            item.withLock { $0?.pausedAt = position }
            return position
        }
        guard let position else { return nil }
        current.streamer.close()
        log(.debug, "\(route.name) ended the paused session at \(position) s; play sets up another")
        return nil
    }

    /// Ends the session on a receiver that is gone: the streamer stops, a final status says why, and the error is
    /// what `run()` throws.
    private func end(_ current: Session, because reason: String) -> RouteError {
        current.streamer.close()
        let status = item.withLock { item -> PlaybackStatus? in
            guard var playing = item, !playing.final else { return nil }
            playing.final = true
            item = playing
            var status = PlaybackStatus(state: .failed, duration: playing.duration, title: playing.title, error: reason)
            status.itemURL = playing.url
            status.end(.failed, because: .deviceGone)
            return status
        }
        if let status { statuses.send(status) }
        return RouteError.deviceUnreachable(device: route.name, reason: reason)
    }

    /// Sends the status the streamer's progress means for the item, when it changed or while it plays.
    private func report() {
        // Paused without a session (the receiver ended it): where it was paused.
        let streamer = session.withLock { $0?.streamer }
        guard let progress = streamer?.progress()
                ?? item.withLock({ $0?.pausedAt }).map({ (item: 0, position: $0, audible: false, phase: RAOPStreamer.Phase.paused) }) else { return }
        let level = volume.withLock { $0 }
        adoptFollowing(heard: progress.item)
        let status = item.withLock { item -> PlaybackStatus? in
            // A progress read before the queued item was adopted is not about the item now.
            guard var current = item, !current.final, streamer == nil || progress.item == current.number else { return nil }
            var status = PlaybackStatus(state: .loading, position: progress.position, duration: current.duration,
                                        volume: level.level, title: current.title)
            status.muted = level.level == nil ? nil : level.muted
            status.itemURL = current.url
            status.timestamp = Date()
            switch progress.phase {
            case .sending: status.state = progress.audible ? .playing : .loading
            case .paused: status.state = current.paused ? .paused : .loading
            case .ended: status.end(.ended, because: .finished)
            case .failed(let reason):
                status.error = reason
                status.end(.failed, because: .unplayable)
            case .closed: return nil
            }
            current.final = status.isFinal
            current.reported = status.state
            item = current
            return status
        }
        if let status { statuses.send(status) }
    }

    func statusUpdates() -> AsyncStream<PlaybackStatus> { statuses.subscribe() }

    // MARK: commands

    func load(_ media: MediaItem, autoplay: Bool) async throws {
        let current = try await setUp(live: media.isLive)
        let source = try await rtsp { try PCMSource(url: media.url, mimeType: media.mimeType, live: media.isLive) }
        // What an earlier item left in the receiver goes first.
        if item.withLock({ $0 != nil }) {
            _ = current.streamer.pause()
            try await flush(current)
        }
        let first = current.streamer.next.timestamp
        following.withLock { $0 = nil }
        current.streamer.start(source, at: 0)
        item.withLock { $0 = Item(media: media, paused: !autoplay, number: current.streamer.progress().item) }
        if !autoplay { try await pause() }
        report()
        describe.yield(Description(session: current, media: media, next: first, position: 0, seeks: 0))
    }

    /// Sends the item's title, artist and album (DMAP), its length and place as AirPlay's progress (`next`: the RTP
    /// time of the packet that plays `position`), and its artwork.
    /// Its place is not told when the item was seeked since (`seeks` no longer the item's): the seek told its own.
    private func tell(_ current: Session, about media: MediaItem, next: UInt32, position: Double, seeks: Int) async throws {
        let info = [("RTP-Info", "rtptime=\(next)")]
        let tags = RAOPPackets.dmapItem(title: media.title, artist: media.artist, album: media.album)
        try await rtsp { [name = route.name] in
            try Self.check(try current.rtsp.request("SET_PARAMETER", current.uri, headers: info, body: tags, contentType: "application/x-dmap-tagged"),
                           "SET_PARAMETER metadata", device: name)
        }
        if item.withLock({ $0?.seeks }) == seeks {
            try await sendProgress(current, next: next, position: position, duration: media.duration)
        }
        // The artwork last: fetching it may take seconds.
        guard let url = media.artworkURL, let artwork = try await rtsp({ try Artwork.fetch(url) }) else { return }
        try await rtsp { [name = route.name] in
            try Self.check(try current.rtsp.request("SET_PARAMETER", current.uri, headers: info, body: artwork.data, contentType: artwork.mimeType),
                           "SET_PARAMETER artwork", device: name)
        }
    }

    func play() async throws { try await play(soundAt: nil) }

    /// Plays with its sound heard at `instant`: the receiver is told that instant's time for the first frame (route's
    /// sync packets), so receivers played at one instant play on one timeline.
    func play(at instant: Date) async throws -> Bool {
        try await play(soundAt: instant)
        return true
    }

    private func play(soundAt instant: Date?) async throws {
        // A receiver that ended the paused session a moment ago is noticed now, not at the next status.
        if let gone = lost() { throw gone }
        if let ended = item.withLock({ $0.flatMap { $0.pausedAt != nil && !$0.final ? $0 : nil } }) {
            return try await playInNewSession(ended, soundAt: instant)
        }
        let current = try requireSession()
        guard !current.streamer.isSending else { return }
        let (live, over) = item.withLock { ($0?.duration == nil, $0?.final ?? true) }
        if over { throw RouteError.commandFailed(device: route.name, command: "play", reason: "nothing is loaded") }
        let position = current.streamer.progress().position
        // What was sent and not heard was flushed: it is decoded again from where it was heard. A live stream
        // cannot go back, and goes on.
        if !live, !current.streamer.isPositioned(at: position) { try await rtsp { try current.streamer.reposition(to: position) } }
        item.withLock { $0?.paused = false }
        current.streamer.resume(from: position, soundAt: instant.map(Self.onClock))
        report()
    }

    /// `date` on the clock the streamer's timeline runs on (within a day of now: `at` comes from the wire).
    private static func onClock(_ date: Date) -> ContinuousClock.Instant {
        let seconds = date.timeIntervalSinceNow
        return .now + .seconds(seconds.isFinite ? min(86400, max(-86400, seconds)) : 0)
    }

    /// Plays a paused item whose session the receiver ended: a new session, the item decoded again from where it
    /// was paused (a live one goes on), and what it is told again; heard at `instant` when given.
    private func playInNewSession(_ paused: Item, soundAt instant: Date?) async throws {
        let current = try await setUp(live: paused.media.isLive)
        let position = paused.duration == nil ? 0 : paused.pausedAt ?? 0
        let source: PCMSource
        do {
            source = try await rtsp {
                let source = try PCMSource(url: paused.url, mimeType: paused.media.mimeType, live: paused.media.isLive)
                if position > 0 { try source.seek(to: position) }
                return source
            }
        } catch {
            // The item stays paused without a session, as it was: the new one goes.
            await tearDown { $0.uri == current.uri }
            throw error
        }
        let first = current.streamer.next.timestamp
        following.withLock { $0 = nil }
        current.streamer.start(source, at: position, soundAt: instant.map(Self.onClock))
        item.withLock {
            $0?.paused = false
            $0?.pausedAt = nil
            $0?.number = current.streamer.progress().item
        }
        report()
        describe.yield(Description(session: current, media: paused.media, next: first, position: position, seeks: item.withLock { $0?.seeks ?? 0 }))
    }

    func pause() async throws {
        if let gone = lost() { throw gone }
        if item.withLock({ $0?.pausedAt != nil }) { return }
        let current = try requireSession()
        let position = pauseStreamer(current)
        item.withLock { $0?.paused = true }
        try await flush(current)
        // The source is moved back to where it was heard now (unless nothing was read from it: a load paused), so that a
        // play (at an instant a group chose) need not wait for the seek; a play tries again when this fails.
        if item.withLock({ $0?.duration != nil }), !current.streamer.isPositioned(at: position) {
            try? await rtsp { try current.streamer.reposition(to: position) }
        }
        report()
    }

    /// The queued item is the item from here on once the streamer says it is heard (`heard`: the streamer's item
    /// heard now); the receiver is told what it is.
    private func adoptFollowing(heard: Int) {
        let followed = item.withLock { item -> MediaItem? in
            guard let current = item, !current.final, heard > current.number, let next = following.withLock({ $0 }) else { return nil }
            following.withLock { $0 = nil }
            item = Item(media: next, paused: current.paused, number: heard)
            return next
        }
        if let followed, let current = session.withLock({ $0 }) {
            describe.yield(Description(session: current, media: followed, next: current.streamer.itemTimestamp, position: 0, seeks: 0))
        }
    }

    /// Pauses the streamer, returning where it was heard. A queued item already heard is the item from now on; one it
    /// forgot (paused just as it followed, before it was heard) is forgotten here too: it is loaded when the item ends.
    @discardableResult
    private func pauseStreamer(_ current: Session) -> Double {
        let position = current.streamer.pause()
        adoptFollowing(heard: current.streamer.progress().item)
        let adopted = item.withLock { $0?.number } == current.streamer.progress().item
        if adopted, !current.streamer.hasQueued { following.withLock { $0 = nil } }
        return position
    }

    func seek(to seconds: Double) async throws {
        if let gone = lost() { throw gone }
        if let duration = item.withLock({ item in item?.pausedAt != nil ? .some(item?.duration) : nil }) {
            // Paused without a session: the place is kept for play, if the item has it.
            guard let duration, seconds >= 0, seconds < duration else {
                throw RouteError.commandFailed(device: route.name, command: "seek",
                                               reason: duration == nil ? "a live stream cannot seek" : "it is \(Int(duration ?? 0)) s long")
            }
            item.withLock {
                $0?.pausedAt = seconds
                $0?.seeks += 1
            }
            return report()
        }
        let current = try requireSession()
        let position = pauseStreamer(current)
        let playing = item.withLock { $0?.paused } == false
        try await flush(current)
        do {
            try await rtsp { try current.streamer.reposition(to: seconds) }
        } catch {
            // It cannot go there: it goes on from where it was.
            if playing { current.streamer.resume(from: position) }
            throw error
        }
        let next = current.streamer.next.timestamp
        item.withLock { $0?.seeks += 1 }
        if playing {
            current.streamer.resume(from: seconds)
        } else {
            current.streamer.hold(at: seconds)
        }
        report()
        // The receiver's progress bar goes there too (a receiver that shows none still plays).
        do {
            try await sendProgress(current, next: next, position: seconds, duration: item.withLock { $0?.duration })
        } catch {
            log(.debug, "\(route.name) took no progress: \(error)")
        }
    }

    /// Tells the receiver AirPlay's progress for an item at `position` s of `duration` whose packet at `position` has
    /// RTP time `next`: its start, that place and its end, on the RTP clock (a live item's end is its place).
    private func sendProgress(_ current: Session, next: UInt32, position: Double, duration: Double?) async throws {
        let rate = Double(PCMSource.sampleRate)
        let start = next &- UInt32(min(max(position, 0), 86400) * rate)
        let end = duration.map { start &+ UInt32(min($0, 86400) * rate) } ?? next
        let line = Data("progress: \(start)/\(next)/\(end)\r\n".utf8)
        try await rtsp { [name = route.name] in
            try Self.check(try current.rtsp.request("SET_PARAMETER", current.uri, body: line, contentType: "text/parameters"),
                           "SET_PARAMETER progress", device: name)
        }
    }

    func stop() async throws {
        // A session the receiver closed a moment ago has nothing to flush.
        _ = lost()
        following.withLock { $0 = nil }
        if let current = session.withLock({ $0 }) {
            _ = current.streamer.pause()
            do {
                try await flush(current)
            } catch where current.rtsp.closedByPeer {
                // Closed by the receiver: it holds nothing to flush, and the item stops all the same.
            }
        }
        let status = item.withLock { item -> PlaybackStatus? in
            guard var current = item, !current.final else { return nil }
            current.final = true
            item = current
            var status = PlaybackStatus(state: .stopped, duration: current.duration, title: current.title)
            status.itemURL = current.url
            status.end(.stopped, because: .stopped)
            return status
        }
        if let status { statuses.send(status) }
    }

    func setVolume(_ level: Double) async throws {
        volume.withLock { $0.level = min(1, max(0, level)) }
        try await sendVolume()
    }

    func setMuted(_ muted: Bool) async throws {
        let unmuting = volume.withLock { volume -> Bool in
            defer { volume.muted = muted }
            return volume.muted && !muted
        }
        try await sendVolume(unmuting: unmuting)
    }

    /// Queues `media` to follow the item on the same timeline, without a gap (as an album plays); false for a live
    /// item, or when nothing plays or the item has ended (it is then loaded).
    func setNext(_ media: MediaItem) async throws -> Bool {
        func playing(_ item: Item?) -> (url: String, number: Int)? {
            item.flatMap { !$0.final && $0.duration != nil && $0.pausedAt == nil ? ($0.url, $0.number) : nil }
        }
        guard !media.isLive, let current = session.withLock({ $0 }), following.withLock({ $0 == nil }),
              let before = item.withLock({ playing($0) }) else { return false }
        let source = try await rtsp { try PCMSource(url: media.url, mimeType: media.mimeType) }
        // Loaded, stopped or moved on while the source was made: it is not this item's to follow.
        return item.withLock { item in
            guard let now = playing(item), now == before, session.withLock({ $0?.uri }) == current.uri, following.withLock({ $0 == nil }),
                  current.streamer.queue(source) else { return false }
            following.withLock { $0 = media }
            return true
        }
    }

    func observe() async throws -> Bool { false }

    func close() async {
        await tearDown { _ in true }
        streamerReady.finish()
        describe.finish()
        statuses.finish()
    }

    // MARK: the RTSP session

    /// Ends the session, when `which` is it: it is no longer the controller's, its streamer stops, and the receiver is
    /// told (TEARDOWN; a receiver that does not answer is left).
    private func tearDown(_ which: (Session) -> Bool) async {
        let ending = session.withLock { session -> Session? in
            guard let current = session, which(current) else { return nil }
            session = nil
            return current
        }
        guard let ending else { return }
        ending.streamer.close()
        _ = try? await rtsp { try ending.rtsp.request("TEARDOWN", ending.uri) }
    }

    private func requireSession() throws -> Session {
        guard let current = session.withLock({ $0 }) else {
            throw RouteError.commandFailed(device: route.name, command: "AirPlay", reason: "nothing is loaded")
        }
        return current
    }

    /// The session, set up on first use: OPTIONS, ANNOUNCE, SETUP, RECORD and the volume.
    /// The latency is the first item's: a live one's is lower (a session carries one kind of item, as route uses it).
    private func setUp(live: Bool) async throws -> Session {
        if let current = session.withLock({ $0 }) { return current }
        let receiver = receiver, name = route.name, log = log
        let made = try await rtsp { () -> Session in
            let rtsp = try RTSPConnection(host: receiver.host, port: receiver.port)
            let dacp = String(format: "%016llX", UInt64.random(in: 0...UInt64.max))
            rtsp.common = [("DACP-ID", dacp), ("Active-Remote", String(UInt32.random(in: 0...UInt32.max))), ("Client-Instance", dacp)]
            var options = try rtsp.request("OPTIONS", "*")
            try Self.refusePairing(options, device: name)
            if options.status == 401 {
                try Self.authorize(rtsp, challenge: options.headers["www-authenticate"] ?? "", receiver: receiver)
                options = try rtsp.request("OPTIONS", "*")
                if options.status == 401 {
                    throw RouteError.unusableDevice(device: name, reason: "it refused the password in \(AirPlayPasswords.path)")
                }
            }
            try Self.check(options, "OPTIONS", device: name)
            let uri = "rtsp://\(rtsp.localAddress)/\(UInt32.random(in: 0...UInt32.max))"
            // Encrypted as Apple's senders do (every AirPlay 1 receiver decrypts it, and some take nothing else); a
            // receiver that refuses it gets the audio clear.
            var cipher: RAOPCipher? = try RAOPCipher()
            var announced = try rtsp.request("ANNOUNCE", uri, body: Data(Self.sdp(local: rtsp.localAddress, remote: receiver.host, cipher: cipher).utf8),
                                             contentType: "application/sdp")
            try Self.refusePairing(announced, device: name)
            if announced.status == 453 {
                throw RouteError.unusableDevice(device: name, reason: "it is playing another sender's audio, and takes none while it does")
            }
            if announced.status != 200, announced.status != 401 {
                log(.debug, "\(name) refused encrypted audio (\(announced.status)); sending it clear")
                cipher = nil
                announced = try rtsp.request("ANNOUNCE", uri, body: Data(Self.sdp(local: rtsp.localAddress, remote: receiver.host, cipher: nil).utf8),
                                             contentType: "application/sdp")
            }
            try Self.check(announced, "ANNOUNCE", device: name)
            log(.debug, "\(name): ANNOUNCE taken, audio \(cipher == nil ? "clear" : "encrypted (AES, the key RSA-wrapped)")")
            let sockets = try RAOPStreamer.openSockets(localAddress: rtsp.localAddress)
            let streamer: RAOPStreamer
            do {
                let setup = try rtsp.request("SETUP", uri, headers: [("Transport",
                    "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=\(sockets.controlPort);timing_port=\(sockets.timingPort)")])
                try Self.check(setup, "SETUP", device: name)
                let transport = Self.transport(setup.headers["transport"] ?? "")
                guard let server = transport["server_port"].flatMap(UInt16.init), let control = transport["control_port"].flatMap(UInt16.init) else {
                    throw RouteError.deviceUnreachable(device: name, reason: "its SETUP answer names no ports (\(setup.headers["transport"] ?? "none"))")
                }
                if let id = setup.headers["session"] { rtsp.common.append(("Session", id)) }
                streamer = RAOPStreamer(sockets: sockets, receiver: .init(host: receiver.host, audioPort: server, controlPort: control,
                                                                          timingPort: transport["timing_port"].flatMap(UInt16.init)),
                                        latency: live ? Self.liveLatency : Self.latency, cipher: cipher)
            } catch {
                sockets.close()
                throw error
            }
            let next = streamer.next
            try Self.check(try rtsp.request("RECORD", uri, headers: [("Range", "npt=0-"), ("RTP-Info", "seq=\(next.sequence);rtptime=\(next.timestamp)")]),
                           "RECORD", device: name)
            return Session(rtsp: rtsp, streamer: streamer, uri: uri)
        }
        session.withLock { $0 = made }
        streamerReady.yield(made.streamer)
        try await sendVolume()
        return made
    }

    /// Answers the receiver's password challenge on every request from now on, with the password the user gave it.
    /// - Throws: `RouteError` saying where to put a password when there is none, or why the one there is not used.
    private static func authorize(_ rtsp: RTSPConnection, challenge: String, receiver: RAOPService) throws {
        let password: String?
        do {
            password = try AirPlayPasswords.password(for: receiver)
        } catch {
            throw RouteError.unusableDevice(device: receiver.name, reason: "it wants a password, and \(error)")
        }
        guard let password else {
            throw RouteError.unusableDevice(device: receiver.name, reason: "it wants a password: put a line \"\(receiver.name) = PASSWORD\" in "
                + "\(AirPlayPasswords.path), readable by you alone")
        }
        guard AirPlayPasswords.digest(challenge: challenge, method: "OPTIONS", uri: "*", password: password) != nil else {
            throw RouteError.unusableDevice(device: receiver.name, reason: "it asks for a password in a way route does not speak (\(challenge.prefix(40)))")
        }
        rtsp.authorization = { method, uri in AirPlayPasswords.digest(challenge: challenge, method: method, uri: uri, password: password) }
    }

    /// Tells the receiver to drop what it holds (pause, seek, a new item).
    private func flush(_ current: Session) async throws {
        let next = current.streamer.next
        try await rtsp { [name = route.name] in
            try Self.check(try current.rtsp.request("FLUSH", current.uri, headers: [("RTP-Info", "seq=\(next.sequence);rtptime=\(next.timestamp)")]),
                           "FLUSH", device: name)
        }
    }

    /// The volume, on AirPlay's scale: -30 dB (quietest) to 0 dB, and -144 for silence; nothing until route set one.
    private func sendVolume(unmuting: Bool = false) async throws {
        guard let current = session.withLock({ $0 }) else { return }
        let level = volume.withLock { $0 }
        guard level.level != nil || level.muted || unmuting else { return }
        let decibels = level.muted || level.level == 0 ? -144 : -30 + 30 * (level.level ?? Volume.assumed)
        log(.debug, "\(route.name): volume \(decibels) dB")
        try await rtsp { [name = route.name] in
            try Self.check(try current.rtsp.request("SET_PARAMETER", current.uri, body: Data(String(format: "volume: %.6f\r\n", decibels).utf8),
                                                    contentType: "text/parameters"), "SET_PARAMETER volume", device: name)
        }
        report()
    }

    /// Runs `body` on the RTSP thread, within 15 s.
    private func rtsp<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        // Within the host's 10 s for a command: a receiver's request has 5 s, and one may wait behind another.
        try await Self.rtspThreads.run(timeout: .seconds(8), timedOut: { [name = route.name] in
            RouteError.deviceUnreachable(device: name, reason: "its RTSP connection did not answer within 8 s")
        }) {
            do {
                return try body()
            } catch let error as RTSPError {
                throw RouteError.deviceUnreachable(device: self.route.name, reason: error.description)
            } catch let error as LocalFailure {
                throw RouteError.commandFailed(device: self.route.name, command: "AirPlay", reason: error.description)
            }
        }
    }

    /// Throws when the receiver takes only senders paired with it: AirPlay 2's pairing (HomePods and Apple TVs set to
    /// "require pairing" or "only people sharing this home" answer 470 Connection Authorization Required, or 403).
    private static func refusePairing(_ response: RTSPResponse, device: String) throws {
        guard [403, 470].contains(response.status) else { return }
        throw RouteError.unusableDevice(device: device, reason: "it plays only for senders paired with it (AirPlay 2's pairing, "
            + "answered \(response.status)), which route does not do; allow everyone to AirPlay to it in its settings")
    }

    /// Throws unless `response` is a 200.
    private static func check(_ response: RTSPResponse, _ method: String, device: String) throws {
        guard response.status != 200 else { return }
        throw RouteError.commandFailed(device: device, command: method, reason: "the receiver answered \(response.status) \(response.reason)")
    }

    /// The ANNOUNCE's description: ALAC at 44.1 kHz, 16-bit stereo, 352 frames a packet; with `cipher`, its key and IV.
    static func sdp(local: String, remote: String, cipher: RAOPCipher?) -> String {
        let session = UInt32.random(in: 0...UInt32.max)
        return (["v=0", "o=iTunes \(session) 0 IN IP4 \(local)", "s=iTunes", "c=IN IP4 \(remote)", "t=0 0",
                 "m=audio 0 RTP/AVP 96", "a=rtpmap:96 AppleLossless", "a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100"]
                + (cipher?.sdpLines ?? []) + [""])
            .joined(separator: "\r\n")
    }

    /// A Transport header's `key=value` parts.
    static func transport(_ header: String) -> [String: String] {
        var parts: [String: String] = [:]
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { parts[String(pair[0])] = String(pair[1]) }
        }
        return parts
    }
}
