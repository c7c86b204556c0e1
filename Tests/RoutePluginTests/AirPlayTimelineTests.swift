// AirPlayTimelineTests: the AirPlay plugin's timeline as a receiver reads it — an item started for an instant is heard
// at that instant by the first sync packet's reckoning (several receivers played for one instant play on one
// timeline), and an instant already past is taken as soon as it can be, never in the past.

@testable import AirPlayPlugin
import Foundation
import RouteCore
import Testing

@Suite struct AirPlayTimelineTests {
    @Test func anItemStartedForAnInstantIsHeardThenByTheSyncPacketsReckoning() async throws {
        try await withStreamer { streamer, receiver in
            let source = try await Self.silence()
            let asked = NTPTime.now().seconds(plus: 1.5), instant = ContinuousClock.now + .seconds(1.5)
            streamer.start(source, at: 0, soundAt: instant)
            let heard = try await receiver.firstItemFrameHeard()
            // Without the instant, it would be heard a third of a second from now, not in a second and a half.
            #expect(abs(heard - asked) < 0.002, "heard \(heard - asked) s from the instant asked")
        }
    }

    @Test func anInstantAlreadyPastIsTakenAsSoonAsItCanBe() async throws {
        try await withStreamer { streamer, receiver in
            let source = try await Self.silence()
            let now = NTPTime.now().seconds(plus: 0)
            streamer.start(source, at: 0, soundAt: .now - .seconds(1))
            let heard = try await receiver.firstItemFrameHeard()
            // The receiver's own latency (0.25 s) and the silent lead-in come first: nothing is due before it could be sent.
            #expect(heard - now > 0.34, "heard \(heard - now) s from now")
        }
    }

    @Test func aQueuedItemFollowsOnTheSameTimelineWithoutAGap() async throws {
        try await withStreamer { streamer, receiver in
            // Not a whole number of packets: the last packet of the first is topped up with the second's first frames.
            let first = 22050 + 100
            streamer.start(try await Self.wav("silent", frames: first, sample: 0), at: 0)
            #expect(streamer.queue(try await Self.wav("loud", frames: 8820, sample: 0x1000)))
            let packets = try await receiver.audioPackets { packets in packets.contains { $0.firstSound != nil } && packets.count >= 90 }
            // One timeline: consecutive RTP times, the marker on the first packet alone (no flush between the items).
            let times = packets.map { $0.bytes.big(at: 4) }
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 == $0 &+ 352 }, "\(times)")
            #expect(packets.dropFirst().allSatisfy { $0.bytes[1] & 0x80 == 0 } && packets[0].bytes[1] & 0x80 != 0)
            // The second item's first frame comes right after the first item's last: after the lead-in, `first` frames in.
            let loud = try #require(packets.firstIndex { $0.firstSound != nil })
            #expect(loud * 352 + packets[loud].firstSound! == RAOPStreamer.leadIn * 352 + first)
            // It is said to be the item heard once its first frame is (the receiver's latency after it is sent).
            let deadline = ContinuousClock.now + .seconds(5)
            while streamer.progress().item != 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(streamer.progress().item == 1)
        }
    }

    @Test func aQueuedItemThatCannotBeDecodedLetsTheItemBeforeItEndAsItShould() async throws {
        try await withStreamer { streamer, _ in
            streamer.start(try await Self.wav("short", frames: 13230, sample: 0), at: 0)
            let broken = FileManager.default.temporaryDirectory.appendingPathComponent("route-airplay-timeline-not-audio-\(getpid()).wav").path
            try Data("not a sound".utf8).write(to: URL(fileURLWithPath: broken))
            defer { try? FileManager.default.removeItem(atPath: broken) }
            #expect(streamer.queue(try PCMSource(url: URL(fileURLWithPath: broken).absoluteString, mimeType: "audio/wav")))
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                if case .sending = streamer.progress().phase { try await Task.sleep(for: .milliseconds(20)) } else { break }
            }
            // The first item ended (the queued one is loaded, and says what is wrong with it, in its own turn).
            guard case .ended = streamer.progress().phase else {
                Issue.record("the item before did not end: \(streamer.progress().phase)")
                return
            }
            #expect(streamer.progress().item == 0)
        }
    }

    /// A streamer toward a receiver made of three UDP sockets on 127.0.0.1, its clock asked once (as a receiver
    /// does before it heeds sync packets); closed after `body`.
    private func withStreamer(_ body: (RAOPStreamer, FakeReceiver) async throws -> Void) async throws {
        let receiver = try FakeReceiver()
        defer { receiver.close() }
        let sockets = try RAOPStreamer.openSockets(localAddress: "127.0.0.1")
        let streamer = RAOPStreamer(sockets: sockets, receiver: receiver.address, latency: 0, cipher: nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await streamer.run() }
            defer { streamer.close() }
            try await receiver.askTheTime(of: sockets.timingPort)
            try await body(streamer, receiver)
        }
    }

    /// Two seconds of silence, as the plugin decodes a file.
    private static func silence() async throws -> PCMSource { try await wav("silence", frames: 88200, sample: 0) }

    /// A WAV of `frames` stereo frames all at `sample`, as the plugin decodes a file (the file is left for the decoder:
    /// the temporary folder's). Made on a thread of its own: GStreamer's first start reads its registry for seconds,
    /// which would hold one of the few threads every other test's tasks run on.
    private static func wav(_ name: String, frames: Int, sample: Int16) async throws -> PCMSource {
        try await withCheckedThrowingContinuation { done in
            DetachedThread.start(name: "route-test-wav") { done.resume(with: Result { try makeWAV(name, frames: frames, sample: sample) }) }
        }
    }

    private static func makeWAV(_ name: String, frames: Int, sample: Int16) throws -> PCMSource {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("route-airplay-timeline-\(name)-\(frames).wav").path
        var wav = Data("RIFF".utf8)
        let bytes = frames * 4
        wav.appendLittle(UInt32(36 + bytes))
        wav.append(Data("WAVEfmt ".utf8))
        for value: UInt32 in [16, 0x0002_0001, 44100, 44100 * 4, 0x0010_0004] { wav.appendLittle(value) }
        wav.append(Data("data".utf8))
        wav.appendLittle(UInt32(bytes))
        for _ in 0..<frames * 2 { Swift.withUnsafeBytes(of: sample.littleEndian) { wav.append(contentsOf: $0) } }
        try wav.write(to: URL(fileURLWithPath: path), options: .atomic)
        return try PCMSource(url: URL(fileURLWithPath: path).absoluteString, mimeType: "audio/wav")
    }
}

/// A receiver's three UDP sockets, read by the test.
private struct FakeReceiver {
    let audio: Int32, control: Int32, timing: Int32
    let address: RAOPStreamer.Receiver

    init() throws {
        func bound() throws -> (Int32, UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0, let any = SocketAddress(numericHost: "127.0.0.1", port: 0), any.withSockaddr({ bind(fd, $0, $1) }) == 0,
                  let local = SocketAddress(localOf: fd) else { throw LocalFailure(description: "no UDP socket on 127.0.0.1") }
            return (fd, local.port)
        }
        let (audio, audioPort) = try bound(), (control, controlPort) = try bound(), (timing, timingPort) = try bound()
        (self.audio, self.control, self.timing) = (audio, control, timing)
        address = RAOPStreamer.Receiver(host: "127.0.0.1", audioPort: audioPort, controlPort: controlPort, timingPort: timingPort)
    }

    func close() { for fd in [audio, control, timing] { _ = Glibc.close(fd) } }

    /// Sends a timing request to the streamer and waits for its answer.
    func askTheTime(of port: UInt16) async throws {
        var request = Data([0x80, 0x80 | RAOPPackets.timingRequest, 0x00, 0x07])
        request.append(Data(count: 28))
        let to = SocketAddress(numericHost: "127.0.0.1", port: port)!
        _ = request.withUnsafeBytes { bytes in to.withSockaddr { sendto(timing, bytes.baseAddress, bytes.count, 0, $0, $1) } }
        _ = try await receive(on: timing) { $0.count >= 32 && $0[1] & 0x7F == RAOPPackets.timingReply }
    }

    /// When the item's first frame (after the streamer's silent lead-in) is heard, in seconds of the plugin's NTP clock:
    /// by the first sync packet (frame `p` due at `n`, heard 11025 frames later) and the first audio packet's RTP time.
    func firstItemFrameHeard() async throws -> Double {
        let sync = try await receive(on: control) { $0.count >= 20 && $0[1] & 0x7F == RAOPPackets.sync && $0[0] & 0x10 != 0 }
        let first = try await receive(on: audio) { $0.count >= 12 && $0[1] & 0x80 != 0 }
        let due = sync.big(at: 4), seconds = sync.big(at: 8), fraction = sync.big(at: 12)
        let itemFrame = first.big(at: 4) &+ UInt32(RAOPStreamer.leadIn * PCMSource.framesPerPacket)
        let frames = Double(Int32(bitPattern: itemFrame &- due))
        return Double(seconds) + Double(fraction) / 4_294_967_296 + (frames + Double(RAOPStreamer.receiverLatency)) / Double(PCMSource.sampleRate)
    }

    /// Audio packets as they come, until `enough` says so (within 5 s).
    func audioPackets(until enough: ([AudioPacket]) -> Bool) async throws -> [AudioPacket] {
        var packets: [AudioPacket] = []
        while !enough(packets) { packets.append(AudioPacket(bytes: try await receive(on: audio) { $0.count >= 12 && $0[1] & 0x7F == RAOPPackets.audio })) }
        return packets
    }

    /// The first datagram on `fd` that `matches`, within 5 s (looked for every 2 ms: the streamer's threads are
    /// started from the cooperative pool, which a blocking wait would hold).
    private func receive(on fd: Int32, _ matches: ([UInt8]) -> Bool) async throws -> [UInt8] {
        let deadline = ContinuousClock.now + .seconds(5)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else {
                try await Task.sleep(for: .milliseconds(2))
                continue
            }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0, matches(Array(buffer[0..<count])) { return Array(buffer[0..<count]) }
        }
        throw LocalFailure(description: "nothing came within 5 s")
    }
}

/// An audio packet as sent (clear, uncompressed ALAC).
private struct AudioPacket {
    let bytes: [UInt8]

    /// The first frame whose left sample is not silent, if any: the ALAC frame's samples follow its 23-bit header
    /// (a whole packet's, 352 frames), 16 bits each, left and right.
    var firstSound: Int? {
        // A short frame (an item's last, with its frame count) is not read.
        guard bytes.count >= 12 + (23 + 352 * 32 + 3 + 7) / 8 else { return nil }
        return (0..<352).first { frame in
            let bit = 12 * 8 + 23 + frame * 32
            let value = (0..<16).reduce(0) { value, offset in
                let at = bit + offset
                return value << 1 | Int(bytes[at / 8] >> (7 - UInt8(at % 8)) & 1)
            }
            return value != 0
        }
    }
}

private extension NTPTime {
    /// This time `extra` seconds on, in seconds.
    func seconds(plus extra: Double) -> Double { Double(seconds) + Double(fraction) / 4_294_967_296 + extra }
}

private extension [UInt8] {
    /// The big-endian 32-bit number at `offset`.
    func big(at offset: Int) -> UInt32 { self[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
}

private extension Data {
    mutating func appendLittle(_ value: UInt32) { Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) } }
}
