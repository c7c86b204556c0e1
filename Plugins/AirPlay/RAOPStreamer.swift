// RAOPStreamer: the UDP side of one AirPlay 1 session — audio packets sent from a PCMSource on a timeline of route's
// (heard soon after a start, or at an instant chosen for several receivers at once; sent further ahead as it plays; a
// queued item following the one before on it without a gap), sync packets (ten a second in the first, then one),
// answers to the receiver's timing requests, packets resent when it asks — on threads of its own.

import Foundation
import RouteCore
import Synchronization

/// Streams one item at a time to a receiver that SETUP gave its audio, control and timing ports.
final class RAOPStreamer: @unchecked Sendable {
    // Safety: `state` is guarded by `lock` (an NSCondition the sender thread waits on), the source's decoding and
    // seeking by `decoding`; the sockets are set once, and closed once both threads have ended (or at deinit when
    // they never ran).

    /// The UDP sockets route sends from and answers on.
    struct Sockets {
        let audio: Int32, control: Int32, timing: Int32
        let controlPort: UInt16, timingPort: UInt16

        /// Closes all three.
        func close() { for fd in [audio, control, timing] { _ = Glibc.close(fd) } }
    }

    /// Where the receiver listens (and the ports it asks from).
    struct Receiver {
        let host: String
        let audioPort: UInt16, controlPort: UInt16, timingPort: UInt16?
    }

    /// What the sender thread does now.
    enum Phase { case sending, paused, ended, failed(String), closed }

    private struct State {
        var phase: Phase = .paused
        /// Changes with every start, pause and resume: a packet decoded for an older one is dropped.
        var generation = 0
        var sequence: UInt16 = UInt16.random(in: 0...UInt16.max)
        var timestamp: UInt32 = UInt32.random(in: 0...UInt32.max / 2)
        /// When sending (re)started, the RTP time of its first packet, and the item's position then.
        var resumedAt = ContinuousClock.now
        /// Whether `resumedAt` is an instant route chose (a group's members on one timeline), kept when the receiver
        /// has asked the time by then; else the timeline starts when the first packet goes.
        var scheduled = false
        var firstTimestamp: UInt32 = 0
        var packetsSinceResume = 0
        /// The packets since the resume that were the item's (its end decoded; silence follows them).
        var itemPackets: Int?
        /// The item's position at `itemStart`: where a resume started it, or for one that followed another 0, less the
        /// frames of the one before that its first packet holds.
        var positionAtResume = 0.0
        /// The packet since the resume that begins the item (after the silent lead-in, or where the one before ended).
        var itemStart = RAOPStreamer.leadIn
        /// Which of the session's items is sent now: counts up each time a queued one follows without a gap.
        var item = 0
        /// The source queued to follow the item's end without a gap (`queue(_:)`).
        var queued: PCMSource?
        /// Where the source is, when nothing was read from it since it was made or moved there (a play from there needs
        /// no seek first).
        var positioned: Double?
        /// The item before, while the first of this one is not heard yet: its source, first packet and position there
        /// (its end is still heard, and a pause goes back to it).
        var previous: (source: PCMSource?, start: Int, position: Double)?
        /// A marker bit and a first sync packet are owed after a start or a flush.
        var fresh = true
        var source: PCMSource?
        /// Recent packets by sequence number, for resend requests.
        var recent: [UInt16: Data] = [:]
        /// The receiver has asked the time and been answered: shairport-sync ignores sync packets until then.
        var timed = false
        /// A live source's backlog is to be dropped before the next sound sent (set at each start and resume).
        var dropBacklog = false
        var ran = false

        var isSending: Bool { if case .sending = phase { true } else { false } }
        var isPaused: Bool { if case .paused = phase { true } else { false } }
        var isEnded: Bool { if case .ended = phase { true } else { false } }
        var isClosed: Bool { if case .closed = phase { true } else { false } }
    }

    /// Silent packets sent first after a start, a seek or a resume: shairport-sync 3.3.8 drops the first 70 ms it is
    /// sent after a flush (in the lab, at every latency asked; pyatv's casts lose them too), and these are what it drops.
    static let leadIn = 12
    private static let silence = Data(count: PCMSource.framesPerPacket * PCMSource.bytesPerFrame)
    /// How far ahead of its time a packet may go (it saves a wake; the receiver holds far more).
    private static let sendAhead = Duration.milliseconds(10)
    /// Frames receivers that follow Apple's add to what sync packets with flags 7 ask (shairport-sync does, as
    /// AirPort Express and iTunes meant it): the soonest a frame sent now is played.
    static let receiverLatency: UInt32 = 11025
    /// How much faster than it plays an item is sent until it is `latency` ahead: a start is heard after the
    /// receiver's own latency, and the lead a lost packet's resends need is there 0.4 s later (a burst of 4x
    /// AirPlay's 1.4 Mbit/s; the receivers hold seconds).
    private static let catchUp = 4
    /// How far in the past a chosen timeline may begin: its first packets, sent at once, still reach the receiver before
    /// they are due (the first plays the receiver's latency, 0.25 s, after the timeline begins; the item's first frame
    /// after the lead-in, 0.35 s after). A group's instant leaves a command this long to reach the plugin.
    private static let scheduleSlack = Duration.milliseconds(150)
    /// How long after its last frame is heard an item is said to have ended.
    private static let endMargin = Duration.milliseconds(300)

    let sockets: Sockets
    private let receiver: Receiver
    private let ssrc = UInt32.random(in: 0...UInt32.max)
    /// Frames the sync packets ask the receiver to hold beyond its own latency: how far ahead of its time a packet
    /// is sent once caught up (a live item's cannot be: it is sent as it comes).
    let latency: UInt32
    private let lock = NSCondition()
    private nonisolated(unsafe) var state = State()
    /// Held while the source decodes or seeks (never with `lock`): a stalled decoder holds up no command.
    private let decoding = NSLock()
    /// The session's encryption, when the receiver took it.
    private let cipher: RAOPCipher?

    /// Opens the control and timing sockets on `localAddress` (their ports go into SETUP), and the audio socket.
    /// - Throws: `LocalFailure` when a socket cannot be opened (none is left open).
    static func openSockets(localAddress: String) throws -> Sockets {
        var opened: [Int32] = []
        func udp(bound: Bool) throws -> (Int32, UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw LocalFailure(description: "no UDP socket: \(String(cString: strerror(errno)))") }
            opened.append(fd)
            guard bound else { return (fd, 0) }
            guard let address = SocketAddress(numericHost: localAddress, port: 0), address.withSockaddr({ bind(fd, $0, $1) }) == 0,
                  let local = SocketAddress(localOf: fd) else {
                throw LocalFailure(description: "cannot listen on UDP at \(localAddress): \(String(cString: strerror(errno)))")
            }
            return (fd, local.port)
        }
        do {
            let audio = try udp(bound: false), control = try udp(bound: true), timing = try udp(bound: true)
            return Sockets(audio: audio.0, control: control.0, timing: timing.0, controlPort: control.1, timingPort: timing.1)
        } catch {
            for fd in opened { _ = Glibc.close(fd) }
            throw error
        }
    }

    init(sockets: Sockets, receiver: Receiver, latency: UInt32, cipher: RAOPCipher?) {
        self.sockets = sockets
        self.receiver = receiver
        self.latency = latency
        self.cipher = cipher
    }

    deinit { if !state.ran { sockets.close() } }

    /// The sequence number and RTP time of the next packet (RECORD's and FLUSH's RTP-Info).
    var next: (sequence: UInt16, timestamp: UInt32) {
        lock.withLock { (state.sequence, state.timestamp) }
    }

    /// Runs the sender and the responder until `close()`; returns when both have stopped, the sockets closed.
    func run() async {
        lock.withLock { state.ran = true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.onThread("route-raop-send") { self.sendLoop() } }
            group.addTask { await Self.onThread("route-raop-answer") { self.answerLoop() } }
        }
        sockets.close()
    }

    /// Plays `source` from `position` seconds (its own position: a seek has been made there); its sound heard at
    /// `soundAt` when given (as soon as it can be when that is too soon).
    func start(_ source: PCMSource, at position: Double, soundAt: ContinuousClock.Instant? = nil) {
        lock.withLock {
            guard !state.isClosed else { return }
            state.source = source
            state.queued = nil
            state.previous = nil
            resume(at: position, soundAt: soundAt)
            state.positioned = position
        }
        lock.broadcast()
    }

    /// Stops sending (the receiver is flushed by the caller); returns the position heard now, where a resume starts.
    /// Paused before the first of an item that followed another was heard, it is the one before that is paused (where
    /// it was heard), and the one that followed is forgotten (whoever queued it loads it when that one ends).
    func pause() -> Double {
        lock.withLock {
            let now = ContinuousClock.now
            let position = positionLocked(at: now)
            switch state.phase {
            case .sending, .ended:
                if let previous = state.previous, now < playsAt(state.itemStart) {
                    state.source = previous.source
                    state.item -= 1
                    state.itemStart = previous.start
                }
                state.previous = nil
                state.phase = .paused
                state.generation += 1
                state.positionAtResume = position
            default: break
            }
            return position
        }
    }

    /// Queues `source` to follow the item without a gap, on the same timeline (a paused item's too); false when the
    /// item has ended already or another is queued (the caller then loads it when the item ends).
    func queue(_ source: PCMSource) -> Bool {
        lock.withLock {
            guard state.isSending || state.isPaused, state.queued == nil else { return false }
            state.queued = source
            return true
        }
    }

    /// Whether an item is queued to follow (a pause just after one followed forgets it).
    var hasQueued: Bool { lock.withLock { state.queued != nil } }

    /// The RTP time of the current item's first frame (its place on the receiver's clock, for its progress).
    var itemTimestamp: UInt32 {
        lock.withLock { state.firstTimestamp &+ UInt32(truncatingIfNeeded: state.itemStart * PCMSource.framesPerPacket) }
    }

    /// Whether it is sending now (not paused, ended, failed or closed).
    var isSending: Bool { lock.withLock { state.isSending } }

    /// Moves the source to `seconds` while paused: what was sent and not heard was flushed, so a resume decodes it
    /// again from there.
    /// - Throws: `LocalFailure` when the media cannot seek.
    /// Nothing is done when it plays again, or has another source, by then (a play that came first).
    func reposition(to seconds: Double) throws {
        let source = lock.withLock { state.source }
        let still = { self.lock.withLock { (self.state.isPaused || self.state.isEnded) && self.state.source === source } }
        try decoding.withLock {
            guard still() else { return }
            try source?.seek(to: seconds)
            lock.withLock {
                guard state.isPaused || state.isEnded, state.source === source else { return }
                state.positionAtResume = seconds
                state.positioned = seconds
            }
        }
    }

    /// Whether the source is at `seconds`: made or moved there, and not read since.
    func isPositioned(at seconds: Double) -> Bool { lock.withLock { state.positioned == seconds } }

    /// Sends again from `position` (the source has been moved there, or a live one goes on); its sound heard at
    /// `soundAt` when given (as soon as it can be when that is too soon).
    func resume(from position: Double, soundAt: ContinuousClock.Instant? = nil) {
        lock.withLock {
            guard !state.isClosed else { return }
            resume(at: position, soundAt: soundAt)
        }
        lock.broadcast()
    }

    /// Stays paused, at `seconds`.
    func hold(at seconds: Double) {
        lock.withLock {
            guard case .paused = state.phase else { return }
            state.positionAtResume = seconds
        }
    }

    private func resume(at position: Double, soundAt: ContinuousClock.Instant?) {
        state.dropBacklog = true
        state.previous = nil
        state.phase = .sending
        state.generation += 1
        // The timeline that plays the item's first frame (after the silent lead-in) at `soundAt`; one that would have
        // begun more than the slack ago starts now (its first packets would come too late to be played).
        let now = ContinuousClock.now
        let begins = soundAt.map { $0 - Self.duration(ofFrames: Int(Self.receiverLatency)) - Self.duration(ofPackets: Self.leadIn) }
        state.scheduled = begins.map { $0 >= now - Self.scheduleSlack } ?? false
        state.resumedAt = state.scheduled ? begins ?? now : now
        state.firstTimestamp = state.timestamp
        state.packetsSinceResume = 0
        state.itemPackets = nil
        state.itemStart = Self.leadIn
        state.positionAtResume = position
        state.fresh = true
    }

    /// Ends the threads (the sockets close when both have).
    func close() {
        lock.withLock {
            state.phase = .closed
            state.source = nil
            state.queued = nil
            state.previous = nil
        }
        lock.broadcast()
    }

    /// Which item is heard now (`item` counts the items that followed one another without a gap), where, whether
    /// sound has reached the receiver's output yet, and what the sender does (ended only once the last frame sent has
    /// been heard).
    func progress() -> (item: Int, position: Double, audible: Bool, phase: Phase) {
        lock.withLock {
            let now = ContinuousClock.now
            let position = positionLocked(at: now)
            let item = state.previous != nil && now < playsAt(state.itemStart) ? state.item - 1 : state.item
            // Ended once the last frame has been heard, and a moment more: a receiver's output runs a little behind
            // its clock, and a TEARDOWN then would cut the end.
            if case .ended = state.phase, let end = state.itemPackets, now < playsAt(end) + Self.endMargin {
                return (item, position, true, .sending)
            }
            return (item, position, now >= playsAt(Self.leadIn), state.phase)
        }
    }

    /// The position heard at `now`: from the item's first packet (after the silent lead-in at a resume), the time since
    /// it played, within what was sent; the item before's while this one is not heard yet.
    private func positionLocked(at now: ContinuousClock.Instant) -> Double {
        if case .paused = state.phase { return state.positionAtResume }
        if let previous = state.previous, now < playsAt(state.itemStart) {
            let heard = (now - playsAt(previous.start)) / .seconds(1)
            return previous.position + max(0, min(Self.duration(ofPackets: state.itemStart - previous.start) / .seconds(1), heard))
        }
        let heard = (now - playsAt(state.itemStart)) / .seconds(1)
        let sent = Self.duration(ofPackets: (state.itemPackets ?? state.packetsSinceResume) - state.itemStart) / .seconds(1)
        // An item that followed another mid-packet begins a few frames into its first packet.
        return max(0, state.positionAtResume + max(0, min(sent, heard)))
    }

    /// Whether a packet is to go: the item's, or after its end silence until its last packet has played — a receiver
    /// looks for lost packets, and asks for them again, only as later ones come (without, a loss in an item's last
    /// second or so went unmended).
    private func hasPacketsLocked() -> Bool {
        switch state.phase {
        case .sending: true
        case .ended: state.itemPackets.map { sendsAt(state.packetsSinceResume) < playsAt($0) } ?? false
        default: false
        }
    }

    /// When the receiver plays the `index`th packet since the resume: route's timeline, which the sync packets tell it.
    private func playsAt(_ index: Int) -> ContinuousClock.Instant {
        state.resumedAt + Self.duration(ofFrames: Int(Self.receiverLatency)) + Self.duration(ofPackets: index)
    }

    /// When the `index`th packet since the resume is due to go: `latency` ahead of its playing, and until then
    /// (after a start, a seek or a resume) `catchUp` times faster than it plays.
    private func sendsAt(_ index: Int) -> ContinuousClock.Instant {
        max(playsAt(index) - Self.duration(ofFrames: Int(latency + Self.receiverLatency)),
            state.resumedAt + Self.duration(ofPackets: index) / Self.catchUp)
    }

    /// The RTP time of the frame due at `instant` (the receiver plays it its own latency later); before the timeline
    /// begins (a first packet goes a little ahead of a timeline route chose), one counted back from its first.
    private func timestampDue(at instant: ContinuousClock.Instant) -> UInt32 {
        let since = instant - state.resumedAt
        let frames = since / .seconds(1) * Double(PCMSource.sampleRate)
        return state.firstTimestamp &+ UInt32(truncatingIfNeeded: Int(frames.rounded()))
    }

    private static func duration(ofPackets count: Int) -> Duration { duration(ofFrames: count * PCMSource.framesPerPacket) }

    private static func duration(ofFrames count: Int) -> Duration {
        .microseconds(count * 1_000_000 / PCMSource.sampleRate)
    }

    // MARK: threads

    private static func onThread(_ name: String, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DetachedThread.start(name: name) {
                body()
                done.resume()
            }
        }
    }

    /// Sends each packet when its time comes, and a sync packet each second; decodes outside the state lock.
    private func sendLoop() {
        guard let destination = SocketAddress(numericHost: receiver.host, port: receiver.audioPort),
              let control = SocketAddress(numericHost: receiver.host, port: receiver.controlPort) else { return }
        var lastSync = ContinuousClock.now - .seconds(2)
        while true {
            lock.lock()
            while !hasPacketsLocked(), !state.isClosed { lock.wait() }
            if state.isClosed { lock.unlock(); return }
            if state.packetsSinceResume == 0 {
                // The receiver's first timing request is awaited (at most 3 s: a busy receiver asks late, and drops
                // what comes before), and the item counted from then.
                if !state.timed, ContinuousClock.now - state.resumedAt < .seconds(3) {
                    lock.unlock()
                    Thread.sleep(forTimeInterval: 0.005)
                    continue
                }
                // A timeline route chose is kept unless the receiver's clock was asked too late for it.
                if !state.scheduled || ContinuousClock.now - state.resumedAt > Self.scheduleSlack { state.resumedAt = .now }
            }
            let due = sendsAt(state.packetsSinceResume)
            let now = ContinuousClock.now
            // Packets go a little ahead of their time, two or so at a wake (a wake per packet, 125 a second, was most
            // of the plugin's CPU): when one plays is the timeline's, not its sending's. But the first sound after a
            // start goes no earlier than its time: for a live source that is where the newest sound is taken up, and
            // anything earlier would delay the stream by as much, for as long as it plays.
            let early = state.packetsSinceResume >= Self.leadIn && state.dropBacklog ? .zero : Self.sendAhead
            if due > now + early {
                lock.unlock()
                Thread.sleep(forTimeInterval: min(0.05, (due - early - now) / .seconds(1)))
                continue
            }
            // Ten a second in the first second after a start: shairport-sync ignores a sync packet that comes before
            // it has read the answer to its first timing request, which can follow route's answer by much on a busy
            // receiver; the first sync ignored, the next (a second later) found the first packet late, and it flushed
            // the whole first second (a lab run, under load, 1 in 10).
            let syncEvery: Duration = now - state.resumedAt < .seconds(1) ? .milliseconds(100) : .seconds(1)
            if state.fresh || now - lastSync >= syncEvery {
                let stamp = ContinuousClock.now, ntp = NTPTime.now()
                send(RAOPPackets.syncPacket(first: state.fresh, playing: timestampDue(at: stamp), latency: latency, now: ntp),
                     to: control, from: sockets.control)
                lastSync = now
            }
            let generation = state.generation, source = state.source, silent = state.packetsSinceResume < Self.leadIn || state.isEnded
            let queued = state.queued
            if !silent { state.positioned = nil }
            let dropBacklog = !silent && state.dropBacklog
            if dropBacklog { state.dropBacklog = false }
            lock.unlock()

            let decoded: Result<(samples: Data, following: Int)?, any Error> = silent ? .success((Self.silence, 0)) : decoding.withLock {
                if dropBacklog { source?.dropBacklog() }
                return Result { try Self.packet(from: source, then: queued) }
            }

            lock.lock()
            // Paused, moved or closed while it decoded: that packet is not this resume's (nor, when it began the queued
            // item, is that item whole any more: it is loaded when this one ends).
            guard state.generation == generation, state.isSending || state.isEnded else {
                if case .success(let packet?) = decoded, packet.following > 0, state.queued === queued { state.queued = nil }
                lock.unlock()
                continue
            }
            switch decoded {
            case .failure(let error):
                state.phase = .failed("\(error)")
                lock.unlock()
            case .success(nil):
                state.phase = .ended
                state.itemPackets = state.packetsSinceResume
                lock.unlock()
            case .success(let (samples, following)?):
                if following > 0 {
                    // The queued item follows in this packet, on the same timeline: no flush, no lead-in, no gap. Its
                    // first frame is the packet's (352 - following)th.
                    state.previous = (source: state.source, start: state.itemStart, position: state.positionAtResume)
                    state.source = queued
                    state.queued = nil
                    state.item += 1
                    state.itemStart = state.packetsSinceResume
                    state.positionAtResume = -Double(PCMSource.framesPerPacket - following) / Double(PCMSource.sampleRate)
                }
                let frame = RAOPPackets.alacFrame(samples)
                let packet = RAOPPackets.audioPacket(sequence: state.sequence, timestamp: state.timestamp, ssrc: ssrc, marker: state.fresh,
                                                     payload: cipher.map { $0.encrypt(frame) } ?? frame)
                state.recent[state.sequence] = packet
                state.recent[state.sequence &- 512] = nil
                state.fresh = false
                state.sequence &+= 1
                state.timestamp &+= UInt32(PCMSource.framesPerPacket)
                state.packetsSinceResume += 1
                lock.unlock()
                send(packet, to: destination, from: sockets.audio)
            }
        }
    }

    /// The next packet of `source`; when it ends and `queued` follows, a short last packet topped up with the first of
    /// `queued` (or, at its end, the first of `queued`), with how many frames of it the packet holds; nil at the end.
    private static func packet(from source: PCMSource?, then queued: PCMSource?) throws -> (samples: Data, following: Int)? {
        let full = PCMSource.framesPerPacket * PCMSource.bytesPerFrame
        let samples = try source?.nextPacket()
        guard let queued, (samples?.count ?? 0) < full else { return samples.map { ($0, 0) } }
        // A queued item that cannot be decoded does not fail this one: it ends, and the other is loaded (and fails) then.
        guard let rest = try? queued.nextPacket(bytes: full - (samples?.count ?? 0)) else { return samples.map { ($0, 0) } }
        return ((samples ?? Data()) + rest, rest.count / PCMSource.bytesPerFrame)
    }

    /// Answers timing requests (timing socket) and resend requests (control socket) until closed.
    private func answerLoop() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !lock.withLock({ state.isClosed }) {
            var pollers = [pollfd(fd: sockets.timing, events: Int16(POLLIN), revents: 0), pollfd(fd: sockets.control, events: Int16(POLLIN), revents: 0)]
            guard poll(&pollers, 2, 200) > 0 else { continue }
            for poller in pollers where poller.revents & Int16(POLLIN) != 0 {
                var from = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(poller.fd, &buffer, buffer.count, 0, $0, &length) }
                }
                guard count > 0 else { continue }
                let received = NTPTime.now()
                let request = Data(buffer[0..<count])
                // Only the receiver's own ports are answered: anyone else on the network could otherwise have packets
                // sent where it likes (a forged resend request asks for a hundred).
                guard let sender = withUnsafePointer(to: &from, { SocketAddress(copying: $0) }), sender.numericHost == receiver.host else { continue }
                if poller.fd == sockets.timing, receiver.timingPort.map({ $0 == sender.port }) ?? true,
                   let reply = RAOPPackets.timingReply(to: request, received: received, now: .now()) {
                    send(reply, to: sender, from: sockets.timing)
                    lock.withLock { state.timed = true }
                } else if poller.fd == sockets.control, sender.port == receiver.controlPort, let (first, count) = RAOPPackets.resendRange(request) {
                    let packets = lock.withLock { (0..<min(count, 128)).compactMap { state.recent[first &+ $0] } }
                    for packet in packets { send(RAOPPackets.resentPacket(packet), to: sender, from: sockets.control) }
                }
            }
        }
    }

    private func send(_ packet: Data, to address: SocketAddress, from fd: Int32) {
        _ = packet.withUnsafeBytes { bytes in address.withSockaddr { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, $1) } }
    }
}

/// A failure on this machine (GStreamer, OpenSSL, a socket), not the receiver's.
struct LocalFailure: Error, CustomStringConvertible {
    var description: String
}
