// LiveAudio: sound as it is played on this machine (a sound-server sink's samples), served by the media server as an
// endless uncompressed stream — L16 or WAV — to the device that fetches it, from the moment it connects.

import CGIO
import Foundation
import RouteCore
import RouteGIO
import RouteGLib
import Synchronization

/// Samples pushed from a sound server, handed on to the listener (a device's GET) as they come, silence filling
/// the gaps when nothing plays so that devices keep their stream. One listener at a time: the desktop's sound is
/// never copied to two connections (a device that connects again takes the stream over from its connection before).
///
/// Threads: `push` runs on the sound server's thread; listeners append on their server loop's thread.
public final class LiveAudio: Sendable {
    /// How the stream is sent.
    public enum Format: String, Sendable, CaseIterable {
        /// Raw big-endian PCM (DLNA's LPCM), no header.
        case l16
        /// A WAV header of endless length, then little-endian PCM.
        case wav
    }

    public let rate: Int
    public let channels: Int
    /// The silence every connection's stream starts with: how much later than the sound a device plays it (a group's
    /// member that holds sound back less than the others waits this much for them).
    public let lead: Duration
    private let listeners = Mutex<[Int: Listener]>([:])
    private let nextListener = Atomic<Int>(0)
    /// Who waits for sound (`waitForSound`), resumed by the first `push` of sound.
    private let soundWaiters = Mutex<[Int: CheckedContinuation<Void, Never>]>([:])
    /// When anything was last pushed, and when something louder than silence was (monotonic nanoseconds; 0: never).
    private let lastPush = Atomic<UInt64>(0)
    private let lastSound = Atomic<UInt64>(0)
    /// Bytes handed to a listener and not yet written to its connection, at most: about 1 s of sound. Beyond it
    /// (a device reading slower than real time) new sound is dropped for that device rather than queued.
    static let maxInFlightBytes = 200_000
    /// A sample louder than this (of 32767) is sound, quieter is silence.
    static let soundThreshold: Int16 = 16

    /// A stream of `rate` Hz, `channels` channels, each connection's starting with `lead` of silence (at most 1 s:
    /// what a device may have in flight).
    public init(rate: Int = 44_100, channels: Int = 2, lead: Duration = .zero) {
        self.rate = rate
        self.channels = channels
        self.lead = min(max(lead, .zero), .seconds(1))
    }

    /// The MIME type of the stream in `format` (what the device is told, and the Content-Type).
    public func mimeType(_ format: Format) -> String {
        switch format {
        case .l16: return "audio/L16;rate=\(rate);channels=\(channels)"
        case .wav: return "audio/wav"
        }
    }

    /// Bytes of sound per second.
    public var bytesPerSecond: Int { rate * channels * 2 }

    /// Hands `samples` (interleaved signed 16-bit little-endian) to every listener. Any thread.
    public func push(_ samples: UnsafeRawBufferPointer) {
        let now = Self.now()
        lastPush.store(now, ordering: .relaxed)
        if samples.assumingMemoryBound(to: Int16.self).contains(where: { $0 > Self.soundThreshold || $0 < -Self.soundThreshold }) {
            lastSound.store(now, ordering: .relaxed)
            let waiting = soundWaiters.withLock { waiters in
                defer { waiters.removeAll() }
                return Array(waiters.values)
            }
            for waiter in waiting { waiter.resume() }
        }
        let current = listeners.withLock { Array($0.values) }
        for listener in current { listener.send(samples) }
    }

    /// How long since sound (not silence) was last pushed; nil when there has been none.
    public var quietFor: Duration? {
        let last = lastSound.load(ordering: .relaxed)
        guard last > 0 else { return nil }
        return .nanoseconds(Int64(Self.now() - last))
    }

    /// Waits until sound is pushed after this call, or cancellation (woken by `push`, not by polling).
    public func waitForSound() async {
        let id = nextListener.add(1, ordering: .relaxed).newValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = soundWaiters.withLock { waiters -> Bool in
                    if Task.isCancelled { return true }
                    waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            soundWaiters.withLock { $0.removeValue(forKey: id) }?.resume()
        }
    }

    /// Waits until no sound has been pushed for `pause` (or there has been none), or cancellation.
    public func waitForQuiet(_ pause: Duration, checkingEvery interval: Duration = .milliseconds(100)) async {
        while !Task.isCancelled, let quiet = quietFor, quiet < pause {
            try? await Task.sleep(for: interval)
        }
    }

    /// Fills silence into the stream whenever nothing has been pushed for 40 ms (a sound server that stops calling
    /// when nothing plays), from the last push on and at the real-time rate, until cancelled: the stream keeps time
    /// with the clock, as a device that plays it on a timeline of its own needs (the AirPlay plugin's). Looks every
    /// 50 ms while sound is pushed, every 20 ms while it fills, every 250 ms while no device listens.
    public func run() async {
        var filledSince: UInt64?
        var filledFrames = 0
        let silence = [UInt8](repeating: 0, count: bytesPerSecond / 10)
        while !Task.isCancelled {
            let listening = listeners.withLock { !$0.isEmpty }
            try? await Task.sleep(for: !listening ? .milliseconds(250) : filledSince == nil ? .milliseconds(50) : .milliseconds(20))
            guard listening else {
                filledSince = nil
                continue
            }
            let now = Self.now()
            let last = lastPush.load(ordering: .relaxed)
            let quiet = now - min(now, last) > 40_000_000
            if !quiet {
                filledSince = nil
                continue
            }
            // The stream's sound ended at the last push (of the last tenth of a second: longer ago, it is not made up).
            let since = filledSince ?? max(last, now - 100_000_000)
            if filledSince == nil {
                filledSince = since
                filledFrames = 0
            }
            let due = Int(Double(now - since) / 1e9 * Double(rate)) - filledFrames
            guard due > 0 else { continue }
            let frames = min(due, rate / 10)
            filledFrames += frames
            silence.withUnsafeBytes { bytes in
                let part = UnsafeRawBufferPointer(rebasing: bytes[0..<(frames * channels * 2)])
                let current = listeners.withLock { Array($0.values) }
                for listener in current { listener.send(part) }
            }
        }
    }

    /// Starts sending to `message` (its loop thread): a header first for WAV; ends when the client leaves, or when
    /// another connection attaches (the stream before it ends there).
    func attach(_ message: HTTPServerMessage, loop: GLibLoop, format: Format) {
        let before = listeners.withLock { listeners in
            defer { listeners.removeAll() }
            return Array(listeners.values)
        }
        for listener in before { listener.end() }
        let id = nextListener.add(1, ordering: .relaxed).newValue
        // The lead's silence goes before any sound pushed from now on (both reach the loop in order), on top of what a
        // device may have in flight.
        let frames = Int(Double(lead.components.attoseconds) / 1e18 * Double(rate)) + Int(lead.components.seconds) * rate
        let listener = Listener(loop: loop, message: message, bigEndian: format == .l16, allowance: Self.maxInFlightBytes + frames * channels * 2)
        message.stream(wroteChunk: { listener.wrote() }, finished: { [weak self] in
            listener.finish()
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        })
        if format == .wav {
            let header = Self.wavHeader(rate: rate, channels: channels)
            header.withUnsafeBytes { message.append(copying: $0) }
        }
        if frames > 0 { [UInt8](repeating: 0, count: frames * channels * 2).withUnsafeBytes { listener.send($0) } }
        listeners.withLock { $0[id] = listener }
    }

    /// A WAV header for 16-bit PCM whose length is unknown: the largest sizes the fields hold.
    static func wavHeader(rate: Int, channels: Int) -> Data {
        var data = Data()
        func put(_ text: String) { data.append(contentsOf: Array(text.utf8)) }
        func put32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        func put16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        put("RIFF"); put32(UInt32.max); put("WAVE")
        put("fmt "); put32(16); put16(1); put16(UInt16(channels)); put32(UInt32(rate))
        put32(UInt32(rate * channels * 2)); put16(UInt16(channels * 2)); put16(16)
        put("data"); put32(UInt32.max - 36)
        return data
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// One device's connection to the live stream.
private final class Listener: @unchecked Sendable {
    // Safety: `message` is only touched on `loop`'s thread; `inFlight` and `done` are atomics.
    private let loop: GLibLoop
    private nonisolated(unsafe) var message: HTTPServerMessage?
    private let bigEndian: Bool
    private let inFlight = Atomic<Int>(0)
    /// Bytes it may have handed to libsoup and not yet written (LiveAudio.maxInFlightBytes, and its lead).
    private let allowance: Int
    private let done = Atomic<Bool>(false)
    /// Sizes of the chunks handed to libsoup, oldest first (loop thread).
    private nonisolated(unsafe) var sizes: [Int] = []

    init(loop: GLibLoop, message: HTTPServerMessage, bigEndian: Bool, allowance: Int) {
        self.loop = loop
        self.message = message
        self.bigEndian = bigEndian
        self.allowance = allowance
    }

    /// Copies `samples` (little-endian) and appends them on the loop thread; dropped when the device is a second
    /// behind. Any thread.
    func send(_ samples: UnsafeRawBufferPointer) {
        guard !done.load(ordering: .relaxed), samples.count > 0,
              inFlight.load(ordering: .relaxed) + samples.count <= allowance,
              let copy = g_malloc(gsize(samples.count)) else { return }
        copy.copyMemory(from: samples.baseAddress!, byteCount: samples.count)
        if bigEndian {
            let words = copy.bindMemory(to: UInt16.self, capacity: samples.count / 2)
            for index in 0..<(samples.count / 2) { words[index] = words[index].byteSwapped }
        }
        let count = samples.count
        inFlight.add(count, ordering: .relaxed)
        nonisolated(unsafe) let chunk = copy
        loop.async { [self] in
            guard let message, !done.load(ordering: .relaxed) else {
                g_free(chunk)
                inFlight.subtract(count, ordering: .relaxed)
                return
            }
            sizes.append(count)
            message.append(taking: chunk, count: count)
            message.unpause()
        }
    }

    /// libsoup wrote a chunk (loop thread).
    func wrote() {
        guard !sizes.isEmpty else { return }
        inFlight.subtract(sizes.removeFirst(), ordering: .relaxed)
    }

    /// Ends the stream as a complete response: another connection has it now. Any thread.
    func end() {
        loop.async { [self] in
            guard let message, !done.exchange(true, ordering: .relaxed) else { return }
            message.completeBody()
            message.unpause()
        }
    }

    /// The client left (loop thread).
    func finish() {
        done.store(true, ordering: .relaxed)
        message = nil
    }
}
