// MediaProbeTests: MediaProbe.probe on real files made with GStreamer — duration, container, MIME type,
// streams, tags, kind — and the MediaError each kind of bad input gets.

import Foundation
import RouteCore
@testable import RouteMedia
import RouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct MediaProbeTests {
    @Test func wav() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        #expect(try abs(#require(info.duration) - 2.0) < 0.05)
        #expect(info.container == "audio/x-wav")
        #expect(info.mimeType == "audio/wav")
        #expect(info.kind == .audio)
        #expect(info.seekable)
        #expect(info.path == samples.wav)
        #expect(info.size == (try FileManager.default.attributesOfItem(atPath: samples.wav)[.size] as? UInt64))
        let stream = try #require(info.streams.first)
        #expect(info.streams.count == 1)
        #expect(stream.kind == .audio)
        #expect(stream.channels == 2)
        #expect(stream.sampleRate == 44100)
        #expect(info.title == nil)
        #expect(info.displayTitle == "tone")
    }

    @Test func taggedMP3() async throws {
        let info = try await probe(try await Samples.get().taggedMP3)
        // LAME adds encoder delay and pads the last frame (1152 samples), so allow ~0.15 s over 2 s.
        let duration = try #require(info.duration)
        #expect(duration >= 1.95 && duration < 2.15, "duration \(duration)")
        #expect(info.title == "Lab Song")
        #expect(info.artist == "Lab Artist")
        #expect(info.album == "Lab Album")
        #expect(info.displayTitle == "Lab Song")
        #expect(info.kind == .audio)
        #expect(info.streams.map(\.codec) == ["audio/mpeg"])
        #expect(info.streams.first?.channels == 2)
        #expect(info.streams.first?.sampleRate == 44100)
        // An ID3 tag in front of MP3 audio is still an MP3 file: served as audio/mpeg.
        #expect(info.mimeType == "audio/mpeg", "container \(info.container) served as \(info.mimeType)")
    }

    @Test func bareMP3() async throws {
        let info = try await probe(try await Samples.get().bareMP3)
        let duration = try #require(info.duration)
        #expect(duration >= 1.95 && duration < 2.15, "duration \(duration)")
        #expect(info.container == "audio/mpeg")
        #expect(info.mimeType == "audio/mpeg")
        #expect(info.title == nil && info.artist == nil && info.album == nil)
        #expect(info.displayTitle == "bare")
    }

    /// What the probe falls back on when the discoverer gives a bare stream no length (its parser had
    /// no estimate within the 0.1 s it waits, as on a busy machine): the stream parsed to its end.
    @Test func aBareStreamIsMeasuredToItsEnd() async throws {
        let samples = try await Samples.get()
        let measured = try await offThePool { (MediaProbe.measuredDuration(of: samples.bareMP3, within: 10),
                                               MediaProbe.measuredDuration(of: samples.longMP3, within: 10),
                                               MediaProbe.measuredDuration(of: samples.textMP3, within: 10)) }
        let bare = try #require(measured.0), long = try #require(measured.1)
        #expect(bare >= 1.95 && bare < 2.15, "duration \(bare)")
        #expect(long >= 5.95 && long < 6.15, "duration \(long)")
        #expect(measured.2 == nil, "a text file has no length")
    }

    @Test func oggVorbis() async throws {
        let info = try await probe(try await Samples.get().ogg)
        #expect(try abs(#require(info.duration) - 2.0) < 0.05)
        #expect(info.container == "audio/ogg" || info.container == "application/ogg")
        #expect(info.mimeType == "audio/ogg")
        #expect(info.kind == .audio)
        #expect(info.streams.map(\.codec) == ["audio/x-vorbis"])
        #expect(info.streams.first?.channels == 2)
        #expect(info.streams.first?.sampleRate == 44100)
    }

    @Test func m4aIsAudioMP4() async throws {
        let info = try await probe(try await Samples.get().m4a)
        // AAC adds 1024 samples of priming.
        #expect(try abs(#require(info.duration) - 2.0) < 0.06)
        #expect(info.kind == .audio)
        #expect(info.mimeType == "audio/mp4")
        #expect(info.streams.map(\.kind) == [.audio])
    }

    @Test func mp4Video() async throws {
        let info = try await probe(try await Samples.get().mp4)
        #expect(try abs(#require(info.duration) - 1.0) < 0.05)
        #expect(info.container == "video/quicktime")
        #expect(info.mimeType == "video/mp4")
        #expect(info.kind == .video)
        let video = try #require(info.streams.first { $0.kind == .video })
        #expect(video.codec == "video/x-h264")
        #expect(video.width == 320)
        #expect(video.height == 240)
        let audio = try #require(info.streams.first { $0.kind == .audio })
        #expect(audio.channels == 2)
        #expect(audio.sampleRate == 48000)
        #expect(info.streams.count == 2)
    }

    @Test func pngImage() async throws {
        let info = try await probe(try await Samples.get().png)
        #expect(info.kind == .image)
        #expect(info.mimeType == "image/png")
        let picture = try #require(info.streams.first)
        #expect(picture.kind == .image)
        #expect(picture.width == 64)
        #expect(picture.height == 48)
    }

    @Test func missingFile() async throws {
        let path = try await Samples.get().root + "/no such file.wav"
        await #expect(throws: MediaError.missingFile(path)) { try await probe(path) }
    }

    @Test func directory() async throws {
        let path = try await Samples.get().directory
        await #expect(throws: MediaError.directory(path)) { try await probe(path) }
    }

    @Test func emptyFile() async throws {
        let path = try await Samples.get().empty
        await #expect(throws: MediaError.emptyFile(path)) { try await probe(path) }
    }

    @Test func textFileNamedMP3IsNotMedia() async throws {
        let path = try await Samples.get().textMP3
        let error = try await #require(throws: MediaError.self) { try await probe(path) }
        guard case .notMedia(let named, let reason) = error else {
            Issue.record("expected notMedia, got \(error)")
            return
        }
        #expect(named == path)
        #expect(!reason.isEmpty)
        #expect(error.description.contains(path))
    }

    // Root reads any file whatever its mode, so this can only be seen as another user; when the tests
    // run as root, RouteCLITests checks it by running `route cast` as nobody.
    @Test(.enabled(if: getuid() != 0, "root can read a mode-000 file; covered in RouteCLITests as nobody"))
    func unreadableFile() async throws {
        let samples = try await Samples.get()
        let path = samples.root + "/unreadable.wav"
        try FileManager.default.copyItem(atPath: samples.wav, toPath: path)
        chmod(path, 0)
        defer { unlink(path) }
        await #expect(throws: MediaError.unreadable(path)) { try await probe(path) }
    }

    @Test func errorDescriptionsNameTheFile() {
        for error in [MediaError.missingFile("/x/a.wav"), .directory("/x/a.wav"), .unreadable("/x/a.wav"),
                      .emptyFile("/x/a.wav"), .notMedia("/x/a.wav", reason: "why")] {
            #expect(error.description.contains("/x/a.wav"), "\(error)")
            #expect(!error.description.contains("\n"))
        }
    }
}

/// How files reach devices: what the planner chooses from the file and the device's list.
@Suite struct DeliveryTests {
    static let gmediarender = MediaAcceptance.mimeTypes(["video/quicktime", "video/mpegts", "audio/x-flac", "audio/mpeg", "audio/x-wav"])

    @Test func mp4VideoGoesAsItIsToARendererThatListsQuickTime() async throws {
        let info = try await probe(try await Samples.get().mp4)
        #expect(DeliveryPlanner.plan(info, for: Self.gmediarender) == .direct, "not reduced to FLAC audio")
    }

    @Test func videoToASpeakerIsItsSoundAndSaysSo() async throws {
        let info = try await probe(try await Samples.get().mp4)
        let plan = DeliveryPlanner.plan(info, for: .mimeTypes(["audio/mpeg"]))
        #expect(plan.dropsPicture(of: info))
        #expect(!DeliveryPlanner.plan(info, for: Self.gmediarender).dropsPicture(of: info))
    }

    @Test func videoOnlyToASpeakerIsUnplayableNotNonMedia() async throws {
        let samples = try await Samples.get()
        let path = samples.root + "/picture only.mp4"
        try await offThePool { try gstLaunch("videotestsrc num-buffers=15 ! video/x-raw,width=160,height=120 ! x264enc ! mp4mux ! filesink location=\(q(path))") }
        let info = try await probe(path)
        #expect(DeliveryPlanner.plan(info, for: Self.gmediarender) == .direct)
        guard case .unplayable(let reason) = DeliveryPlanner.plan(info, for: .mimeTypes(["audio/mpeg"])) else {
            Issue.record("a video-only file was planned for a speaker"); return
        }
        #expect(reason.contains("video only"))
    }

    @Test func moreChannelsThanTheRoutePlaysAreEncodedAgainTheRestCopied() async throws {
        let samples = try await Samples.get()
        let path = samples.root + "/five one.mp4"
        try await offThePool { try gstLaunch("""
            videotestsrc num-buffers=30 ! video/x-raw,width=160,height=120,framerate=30/1 ! x264enc speed-preset=ultrafast ! mp4mux name=mux \
            ! filesink location=\(q(path)) audiotestsrc num-buffers=47 samplesperbuffer=1024 \
            ! 'audio/x-raw,channels=6,channel-mask=(bitmask)0x3f,rate=48000' ! audioconvert ! avenc_aac ! mux.
            """) }
        let info = try await probe(path)
        let cast = MediaAcceptance.mimeTypes(["video/mp4", "video/mp2t", "audio/mpeg"])
        #expect(DeliveryPlanner.plan(info, for: cast) == .direct, "a route that does not say how many channels it plays")
        #expect(DeliveryPlanner.plan(info, for: cast, maxChannels: 2) == .remux(.mpegTSVideoCopy), "picture copied, sound to stereo")
        #expect(DeliveryPlanner.plan(info, for: cast, maxChannels: 6) == .direct)
    }

    @Test func fiveOneIsKeptWhereTheFormatHoldsIt() async throws {
        let samples = try await Samples.get()
        let path = samples.root + "/six channels.wav"
        try await offThePool { try gstLaunch("audiotestsrc num-buffers=20 ! 'audio/x-raw,channels=6,channel-mask=(bitmask)0x3f,rate=48000' ! audioconvert ! wavenc ! filesink location=\(q(path))") }
        let info = try await probe(path)
        #expect(TranscodeProfile.flac.pipeline(for: info).contains("channels=6"))
        #expect(TranscodeProfile.mp3.pipeline(for: info).contains("channels=2"))
        #expect(TranscodeProfile.flac.pipeline(for: info, maxChannels: 2).contains("channels=2"))
    }
}

/// Probing decides by contents and follows links.
@Suite struct ProbeContentsTests {
    @Test func adtsAACIsAudioAACWhateverItsName() async throws {
        let samples = try await Samples.get()
        let path = samples.root + "/really aac.mp3"
        try await offThePool { try gstLaunch("audiotestsrc num-buffers=20 ! audioconvert ! avenc_aac ! aacparse ! audio/mpeg,stream-format=adts ! filesink location=\(q(path))") }
        #expect(try await probe(path).mimeType == "audio/aac")
        #expect(try await probe(samples.bareMP3).mimeType == "audio/mpeg")
    }

    @Test func aLinkIsFollowedToItsFile() async throws {
        let samples = try await Samples.get()
        let link = samples.root + "/link-\(UUID().uuidString).wav"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: samples.wav)
        let info = try await probe(link)
        #expect(info.path == URL(fileURLWithPath: samples.wav).resolvingSymlinksInPath().path)
        #expect(info.size == (try FileManager.default.attributesOfItem(atPath: samples.wav)[.size] as? UInt64))
        let broken = samples.root + "/broken-\(UUID().uuidString).wav"
        try FileManager.default.createSymbolicLink(atPath: broken, withDestinationPath: samples.root + "/gone.wav")
        await #expect(throws: MediaError.self) { try await probe(broken) }
    }

    @Test func aFIFOIsNotAFileNotAnEmptyOne() async throws {
        let samples = try await Samples.get()
        let fifo = samples.root + "/pipe-\(UUID().uuidString).mp3"
        #expect(mkfifo(fifo, 0o600) == 0)
        do {
            _ = try await probe(fifo)
            Issue.record("a FIFO was probed")
        } catch let error as MediaError {
            #expect(error.description.contains("named pipe"), "\(error)")
        }
    }

    /// A file that GStreamer's race leaves untyped is read again, pushed (3 s, then the whole timeout); a URL once.
    @Test func aFileThatTimesOutIsPushedOnceMoreAURLIsNot() async throws {
        let samples = try await Samples.get()
        let attempts = MediaProbe.attempts(for: samples.wav, within: 10)
        #expect(attempts.map(\.seconds) == [3, 10] && attempts.map(\.uri) == ["file://" + samples.wav, "pushfile://" + samples.wav])
        #expect(MediaProbe.attempts(for: "http://10.0.0.5/a.mp3", within: 10).map(\.seconds) == [10])
        #expect(MediaProbe.attempts(for: samples.wav, within: 2).map(\.seconds) == [2])
        // What the second try reads is what the first does.
        for path in [samples.wav, samples.taggedMP3, samples.m4a, samples.mkv] {
            let pulled = try await MediaProbe.probe(path), pushed = try MediaProbe.probe(path, pulling: false)
            #expect(pushed == pulled)
        }
    }

    @Test func aMatroskaTrackNameIsNotTheTitle() async throws {
        let samples = try await Samples.get()
        let path = samples.root + "/Concert.mka"
        try await offThePool { try gstLaunch("audiotestsrc num-buffers=20 ! audioconvert ! taginject 'tags=\"title=Audio\"' ! vorbisenc ! matroskamux ! filesink location=\(q(path))") }
        let info = try await probe(path)
        #expect(info.title == nil)
        #expect(info.displayTitle == "Concert")
    }
}
