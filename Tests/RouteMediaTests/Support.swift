// Support: sample media made once per test run with gst-launch-1.0, the test sink environment, and a
// status recorder that waits for conditions with deadlines.

import Foundation
import RouteTestSupport
import RouteMedia
import Synchronization
import Testing

/// Sample files generated into a private temporary directory on first use (removed at exit).
struct Samples: Sendable {
    /// 2.000 s of stereo 44.1 kHz PCM in WAV: 100 buffers of 882 samples.
    let wav: String
    /// 6.000 s WAV, for tests that need time to pause and seek.
    let longWAV: String
    /// MP3 (LAME) behind an ID3v2 tag with title, artist and album, 2.000 s of source audio.
    let taggedMP3: String
    /// MP3 with no tag at all.
    let bareMP3: String
    /// Ogg Vorbis, 2.000 s.
    let ogg: String
    /// AAC audio in MP4 (an .m4a), 2.000 s of source audio.
    let m4a: String
    /// 1.000 s of 320x240 H.264 at 30 fps with stereo 48 kHz AAC, in MP4.
    let mp4: String
    /// 6.000 s of 160x120 H.264 (a key frame every second) with AAC, in Matroska.
    let mkv: String
    /// The same picture with 5.1 AC-3 sound, in Matroska (what Cast takes only with the sound converted).
    let mkvAC3: String
    /// 4.000 s of 160x120 VP8 with Vorbis, in WebM (a device taking only H.264 needs it transcoded).
    let webm: String
    /// 6.000 s of MP3.
    let longMP3: String
    /// One 64x48 PNG picture.
    let png: String
    /// A text file named .mp3.
    let textMP3: String
    /// A 0-byte .wav.
    let empty: String
    /// A directory.
    let directory: String
    /// Where all of them are.
    let root: String

    /// The samples, made on first use; throws when gst-launch-1.0 failed.
    static func get() async throws -> Samples { try await made.value }

    private static let made = Task<Samples, any Error> {
        TestEnvironment.configure()
        return try await offThePool { try Samples.make() }
    }

    private static func make() throws -> Samples {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("route-media-tests-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        samplesRoot.withLock { $0 = root }
        atexit { if let root = samplesRoot.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: root) } }

        let stereo44 = "audio/x-raw,rate=44100,channels=2"
        let samples = Samples(
            wav: root + "/tone.wav", longWAV: root + "/six seconds.wav", taggedMP3: root + "/tagged.mp3",
            bareMP3: root + "/bare.mp3", ogg: root + "/tone.ogg", m4a: root + "/tone.m4a", mp4: root + "/clip.mp4",
            mkv: root + "/clip.mkv", mkvAC3: root + "/clip ac3.mkv", webm: root + "/clip.webm", longMP3: root + "/six seconds.mp3",
            png: root + "/picture.png", textMP3: root + "/notes.mp3", empty: root + "/empty.wav",
            directory: root + "/folder.wav", root: root)
        // audiotestsrc makes 882-sample buffers: 100 buffers at 44.1 kHz are exactly 2.000 s.
        try gstLaunch("audiotestsrc num-buffers=100 samplesperbuffer=882 ! \(stereo44) ! audioconvert ! wavenc ! filesink location=\(q(samples.wav))")
        try gstLaunch("audiotestsrc num-buffers=300 samplesperbuffer=882 ! \(stereo44) ! audioconvert ! wavenc ! filesink location=\(q(samples.longWAV))")
        try gstLaunch("""
            audiotestsrc num-buffers=100 samplesperbuffer=882 ! \(stereo44) ! audioconvert \
            ! taginject 'tags="title=\\"Lab Song\\",artist=\\"Lab Artist\\",album=\\"Lab Album\\""' \
            ! lamemp3enc ! id3v2mux ! filesink location=\(q(samples.taggedMP3))
            """)
        try gstLaunch("audiotestsrc num-buffers=100 samplesperbuffer=882 ! \(stereo44) ! audioconvert ! lamemp3enc ! filesink location=\(q(samples.bareMP3))")
        try gstLaunch("audiotestsrc num-buffers=100 samplesperbuffer=882 ! \(stereo44) ! audioconvert ! vorbisenc ! oggmux ! filesink location=\(q(samples.ogg))")
        try gstLaunch("audiotestsrc num-buffers=100 samplesperbuffer=882 ! \(stereo44) ! audioconvert ! avenc_aac ! mp4mux ! filesink location=\(q(samples.m4a))")
        try gstLaunch("""
            videotestsrc num-buffers=30 ! video/x-raw,width=320,height=240,framerate=30/1 ! videoconvert ! x264enc \
            ! mp4mux name=mux ! filesink location=\(q(samples.mp4)) \
            audiotestsrc num-buffers=47 samplesperbuffer=1024 ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! avenc_aac ! mux.
            """)
        try gstLaunch("""
            videotestsrc num-buffers=180 ! video/x-raw,width=160,height=120,framerate=30/1 ! x264enc speed-preset=ultrafast key-int-max=30 \
            ! h264parse ! queue ! matroskamux name=mux ! filesink location=\(q(samples.mkv)) \
            audiotestsrc num-buffers=282 samplesperbuffer=1024 ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! avenc_aac ! aacparse ! queue ! mux.
            """)
        try gstLaunch("""
            videotestsrc num-buffers=180 ! video/x-raw,width=160,height=120,framerate=30/1 ! x264enc speed-preset=ultrafast key-int-max=30 \
            ! h264parse ! queue ! matroskamux name=mux ! filesink location=\(q(samples.mkvAC3)) \
            audiotestsrc num-buffers=282 samplesperbuffer=1024 ! audio/x-raw,rate=48000,channels=6 ! audioconvert ! avenc_ac3 ! ac3parse ! queue ! mux.
            """)
        try gstLaunch("""
            videotestsrc num-buffers=120 ! video/x-raw,width=160,height=120,framerate=30/1 ! vp8enc deadline=1 ! queue ! webmmux name=mux \
            ! filesink location=\(q(samples.webm)) audiotestsrc num-buffers=188 samplesperbuffer=1024 ! audio/x-raw,rate=48000,channels=2 \
            ! audioconvert ! vorbisenc ! queue ! mux.
            """)
        try gstLaunch("audiotestsrc num-buffers=300 samplesperbuffer=882 ! \(stereo44) ! audioconvert ! lamemp3enc ! filesink location=\(q(samples.longMP3))")
        try gstLaunch("videotestsrc num-buffers=1 ! video/x-raw,width=64,height=48 ! videoconvert ! pngenc ! filesink location=\(q(samples.png))")
        try Data("These are notes, not music.\n".utf8).write(to: URL(fileURLWithPath: samples.textMP3))
        try Data().write(to: URL(fileURLWithPath: samples.empty))
        try FileManager.default.createDirectory(atPath: samples.directory, withIntermediateDirectories: true)
        // The first probe initialises GStreamer (and may scan its plugin registry): do it here, off the pool.
        _ = try MediaProbe.probe(samples.wav)
        return samples
    }
}

private let samplesRoot = Mutex<String?>(nil)

/// MediaProbe.probe, off the cooperative pool.
func probe(_ path: String) async throws -> MediaInfo {
    try await MediaProbe.probe(path)
}

/// The process environment every media test runs with, set once before any player exists:
/// fakesinks that consume in real time (sync=true), so "playing" takes as long as the media.
enum TestEnvironment {
    static let sink = "fakesink sync=true"

    static func configure() { _ = configured }

    private static let configured: Bool = {
        setenv("ROUTE_AUDIO_SINK", sink, 1)
        setenv("ROUTE_VIDEO_SINK", sink, 1)
        return true
    }()
}

/// Records every value of a stream with the time it arrived, and waits for conditions on them.
final class Recorder<Value: Sendable>: Sendable {
    struct Entry: Sendable {
        /// Position in the recording.
        let index: Int
        let time: ContinuousClock.Instant
        let value: Value
    }

    private final class Storage: Sendable {
        let entries = Mutex<[Entry]>([])
        let ended = Mutex(false)
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Value>) {
        let storage = self.storage
        task = Task {
            for await value in stream { storage.entries.withLock { $0.append(Entry(index: $0.count, time: .now, value: value)) } }
            storage.ended.withLock { $0 = true }
        }
    }

    deinit { task.cancel() }

    var all: [Entry] { storage.entries.withLock { $0 } }
    var values: [Value] { all.map(\.value) }
    var hasEnded: Bool { storage.ended.withLock { $0 } }

    /// The first entry (at index `from` or later) that satisfies `predicate`, waiting at most `seconds`.
    @discardableResult
    func wait(for seconds: Double = 10, from start: Int = 0, _ what: String,
              sourceLocation: SourceLocation = #_sourceLocation,
              until predicate: (Value) -> Bool) async throws -> Entry {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let endedNow = hasEnded // read first: once it is true, every value has been recorded
            let snapshot = all
            if start < snapshot.count, let hit = snapshot[start...].first(where: { predicate($0.value) }) { return hit }
            if endedNow || ContinuousClock.now >= deadline {
                Issue.record("\(endedNow ? "the stream ended" : "timed out after \(seconds) s") waiting for \(what); saw \(snapshot.map(\.value))",
                             sourceLocation: sourceLocation)
                throw RecorderTimeout()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits until the stream has ended.
    func waitForEnd(within seconds: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !hasEnded {
            if ContinuousClock.now >= deadline {
                Issue.record("the stream did not end within \(seconds) s; saw \(values)", sourceLocation: sourceLocation)
                throw RecorderTimeout()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

struct RecorderTimeout: Error {}
