// RAOPStreamer: the UDP side of one AirPlay 1 session — audio packets sent in real time from a PCMSource, a sync
// packet each second, answers to the receiver's timing requests, packets resent when it asks — on threads of its own.

import Foundation
import RouteCore
import Synchronization

/// Streams one item to a receiver that SETUP gave `audioPort`, `controlPort` and `timingPort`.
final class RAOPStreamer: @unchecked Sendable {
    // Safety: `state` is guarded by `lock` (an NSCondition the sender thread waits on); sockets are set once.

    /// The UDP sockets route sends from and answers on.
    struct Sockets {
        let audio: Int32, control: Int32, timing: Int32
        let controlPort: UInt16, timingPort: UInt16
    }

    /// Where the receiver listens.
    struct Receiver {
        let host: String
        let audioPort: UInt16, controlPort: UInt16
    }

    /// What the sender thread does now.
    enum Phase { case sending, paused, ended, failed(String), closed }

    private struct State {
        var phase: Phase = .paused
        var sequence: UInt16 = UInt16.random(in: 0...UInt16.max)
        var timestamp: UInt32 = UInt32.random(in: 0...UInt32.max / 2)
        /// When sending (re)started, the frame then, and the item's position then.
        var resumedAt = ContinuousClock.now
        var packetsSinceResume = 0
        var positionAtResume = 0.0
        /// A marker bit and a first sync packet are owed after a start or a flush.
        var fresh = true
        /// When the last packet of the item was sent.
        var endedAt: ContinuousClock.Instant?
        var source: PCMSource?
        /// Recent packets by sequence number, for resend requests.
        var recent: [UInt16: Data] = [:]
        /// The receiver has asked the time (and been answered): before that, shairport-sync drops what it gets (the
        /// first 70 ms of every cast, in the lab).
        var timed = false
    }

    /// Silent packets sent first after a start, a seek or a resume: shairport-sync 3.3.8 drops the first 70 ms it is
    /// sent after a flush (in the lab, at every latency asked; pyatv's casts lose them too), and these are what it drops.
    static let leadIn = 12
    private static let silence = Data(count: PCMSource.framesPerPacket * PCMSource.bytesPerFrame)

    let sockets: Sockets
    private let receiver: Receiver
    private let ssrc = UInt32.random(in: 0...UInt32.max)
    /// Frames the sync packets put between a frame's sending and its playing.
    let latency: UInt32
    /// Frames between a frame's sending and its being heard: shairport-sync adds 11025 to what sync packets with
    /// flags 7 say (as AirPort Express and iTunes meant it), and so do receivers that follow Apple's.
    var heardAfter: UInt32 { latency + 11025 }
    private let lock = NSCondition()
    private nonisolated(unsafe) var state = State()
    /// The session's encryption, when the receiver took it.
    private let cipher: RAOPCipher?

    /// Opens the control and timing sockets on `localAddress` (their ports go into SETUP).
    /// - Throws: `RTSPError` when a socket cannot be opened.
    static func openSockets(localAddress: String) throws -> Sockets {
        func udp(bound: Bool) throws -> (Int32, UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw RTSPError(description: "no UDP socket: \(String(cString: strerror(errno)))") }
            guard bound else { return (fd, 0) }
            guard let address = SocketAddress(numericHost: localAddress, port: 0), address.withSockaddr({ bind(fd, $0, $1) }) == 0,
                  let local = SocketAddress(localOf: fd) else {
                let reason = String(cString: strerror(errno))
                closeDescriptor(fd)
                throw RTSPError(description: "cannot listen on UDP at \(localAddress): \(reason)")
            }
            return (fd, local.port)
        }
        let audio = try udp(bound: false), control = try udp(bound: true), timing = try udp(bound: true)
        return Sockets(audio: audio.0, control: control.0, timing: timing.0, controlPort: control.1, timingPort: timing.1)
    }

    init(sockets: Sockets, receiver: Receiver, latency: UInt32, cipher: RAOPCipher?) {
        self.sockets = sockets
        self.receiver = receiver
        self.latency = latency
        self.cipher = cipher
    }

    /// The sequence number and RTP time of the next packet (RECORD's and FLUSH's RTP-Info).
    var next: (sequence: UInt16, timestamp: UInt32) {
        lock.withLock { (state.sequence, state.timestamp) }
    }

    /// Runs the sender and the responder until `close()`; returns when both have stopped.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.onThread("route-raop-send") { self.sendLoop() } }
            group.addTask { await Self.onThread("route-raop-answer") { self.answerLoop() } }
        }
    }

    /// Plays `source` from `position` seconds (its own position: a seek has been made there).
    func start(_ source: PCMSource, at position: Double) {
        lock.withLock {
            state.source = source
            state.endedAt = nil
            resume(at: position)
        }
        lock.broadcast()
    }

    /// Stops sending (the receiver is flushed by the caller); returns the position playing now, where a resume starts.
    func pause() -> Double {
        lock.withLock {
            let position = positionLocked(at: .now)
            switch state.phase {
            case .sending, .ended:
                state.phase = .paused
                state.positionAtResume = position
            default: break
            }
            return position
        }
    }

    /// Moves the source to `seconds` while paused: what was sent and not heard was flushed, so a resume decodes it
    /// again from there.
    /// - Throws: `RTSPError` when the media cannot seek.
    func reposition(to seconds: Double) throws {
        try lock.withLock {
            try state.source?.seek(to: seconds)
            state.positionAtResume = seconds
        }
    }

    /// Stays paused, at `seconds`.
    func hold(at seconds: Double) {
        lock.withLock {
            state.phase = .paused
            state.positionAtResume = seconds
        }
    }

    /// Sends again from `position` (the source has been moved there).
    func resume(from position: Double) {
        lock.withLock { resume(at: position) }
        lock.broadcast()
    }

    private func resume(at position: Double) {
        state.phase = .sending
        state.resumedAt = .now
        state.packetsSinceResume = 0
        state.positionAtResume = position
        state.fresh = true
        state.endedAt = nil
    }

    /// Ends the threads and closes the sockets.
    func close() {
        lock.withLock { state.phase = .closed; state.source = nil }
        lock.broadcast()
    }

    /// Where the item is now, whether sound has reached the receiver's output yet, and what the sender does (ended
    /// only once the last frame sent has been heard).
    func progress() -> (position: Double, audible: Bool, phase: Phase) {
        lock.withLock {
            let now = ContinuousClock.now
            let delay = Duration.milliseconds(Int(heardAfter) * 1000 / PCMSource.sampleRate)
            let position = positionLocked(at: now)
            if case .ended = state.phase, let endedAt = state.endedAt, now - endedAt < delay {
                return (position, true, .sending)
            }
            let lead = Duration.microseconds(Self.leadIn * PCMSource.framesPerPacket * 1_000_000 / PCMSource.sampleRate)
            return (position, now - state.resumedAt >= delay + lead, state.phase)
        }
    }

    /// The position heard at `now`: from the resume point, what was sent less what the receiver still holds.
    private func positionLocked(at now: ContinuousClock.Instant) -> Double {
        let delay = Double(heardAfter) / Double(PCMSource.sampleRate)
        let lead = Double(Self.leadIn * PCMSource.framesPerPacket) / Double(PCMSource.sampleRate)
        let sent = Double(state.packetsSinceResume * PCMSource.framesPerPacket) / Double(PCMSource.sampleRate)
        let elapsed = (now - state.resumedAt) / .seconds(1)
        if case .paused = state.phase { return state.positionAtResume }
        return state.positionAtResume + max(0, min(sent, elapsed - delay) - lead)
    }

    // MARK: threads

    private static func onThread(_ name: String, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                body()
                done.resume()
            }
            thread.name = name
            thread.start()
        }
    }

    /// Sends each packet when its time comes, and a sync packet each second.
    private func sendLoop() {
        guard let destination = SocketAddress(numericHost: receiver.host, port: receiver.audioPort),
              let control = SocketAddress(numericHost: receiver.host, port: receiver.controlPort) else { return }
        var lastSync = ContinuousClock.now - .seconds(2)
        while true {
            lock.lock()
            while case .paused = state.phase { lock.wait() }
            while case .ended = state.phase { lock.wait() }
            while case .failed = state.phase { lock.wait() }
            if case .closed = state.phase { lock.unlock(); return }
            if !state.timed, state.packetsSinceResume == 0 {
                // Wait for the receiver's first timing request (at most a second), and count the item from then.
                if ContinuousClock.now - state.resumedAt < .seconds(1) {
                    lock.unlock()
                    Thread.sleep(forTimeInterval: 0.005)
                    continue
                }
            }
            if state.packetsSinceResume == 0 { state.resumedAt = .now }
            let due = state.resumedAt + .microseconds(state.packetsSinceResume * PCMSource.framesPerPacket * 1_000_000 / PCMSource.sampleRate)
            let now = ContinuousClock.now
            if due > now {
                lock.unlock()
                Thread.sleep(forTimeInterval: min(0.05, (due - now) / .seconds(1)))
                continue
            }
            if state.fresh || now - lastSync >= .seconds(1) {
                let packet = RAOPPackets.syncPacket(first: state.fresh, timestamp: state.timestamp, latency: latency, now: .now())
                send(packet, to: control, from: sockets.control)
                lastSync = now
            }
            guard let source = state.source else { state.phase = .ended; lock.unlock(); continue }
            let samples: Data?
            do {
                samples = state.packetsSinceResume < Self.leadIn ? Self.silence : try source.nextPacket()
            } catch {
                state.phase = .failed("\(error)")
                lock.unlock()
                continue
            }
            guard let samples else {
                state.phase = .ended
                state.endedAt = now
                lock.unlock()
                continue
            }
            let packet = RAOPPackets.audioPacket(sequence: state.sequence, timestamp: state.timestamp, ssrc: ssrc, marker: state.fresh,
                                                 payload: cipher.map { $0.encrypt(RAOPPackets.alacFrame(samples)) } ?? RAOPPackets.alacFrame(samples))
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

    /// Answers timing requests (timing socket) and resend requests (control socket) until closed.
    private func answerLoop() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            if lock.withLock({ if case .closed = state.phase { return true } else { return false } }) {
                for fd in [sockets.audio, sockets.control, sockets.timing] { closeDescriptor(fd) }
                return
            }
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
                // Only the receiver is answered: anyone else on the network could otherwise have packets sent where
                // it likes (a forged resend request asks for hundreds).
                guard let sender = withUnsafePointer(to: &from, { SocketAddress(copying: $0) }), sender.numericHost == receiver.host else { continue }
                if poller.fd == sockets.timing, let reply = RAOPPackets.timingReply(to: request, received: received, now: .now()) {
                    send(reply, to: sender, from: sockets.timing)
                    lock.withLock { state.timed = true }
                } else if poller.fd == sockets.control, let (first, count) = RAOPPackets.resendRange(request) {
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

/// `close(2)`, named apart from the streamer's own `close()`.
private func closeDescriptor(_ fd: Int32) { _ = Glibc.close(fd) }
