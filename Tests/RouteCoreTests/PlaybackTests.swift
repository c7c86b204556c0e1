// PlaybackTests: the small playback vocabulary — SeekTarget parsing and clamping, formatClock,
// PlaybackStatus.isFinal, and MediaAcceptance's MIME matching.

import Foundation
import RouteCore
import Testing

@Suite struct SeekTargetTests {
    @Test(arguments: [
        ("90", SeekTarget.absolute(90)),
        ("0", .absolute(0)),
        ("1:30", .absolute(90)),
        ("01:30", .absolute(90)),
        ("1:02:03", .absolute(3723)),
        ("1:02:03.5", .absolute(3723.5)),
        ("90:00", .absolute(5400)),
        (" 45 ", .absolute(45)),
        ("+30", .relative(30)),
        ("-10", .relative(-10)),
        ("+1:00", .relative(60)),
        ("-1:30", .relative(-90)),
    ])
    func parses(text: String, expected: SeekTarget) {
        #expect(SeekTarget(parsing: text) == expected)
    }

    @Test(arguments: ["abc", "1:75", "", "1:2:3:4", "+", "-", "1:", ":30", "1::2", "1:-5", "--10", "+-3", "1:60", "inf", "nan", "3s"])
    func rejects(text: String) {
        #expect(SeekTarget(parsing: text) == nil)
    }

    @Test func resolvedClampsToZero() {
        #expect(SeekTarget.relative(-10).resolved(from: 4, duration: 100) == 0)
        #expect(SeekTarget.relative(-10).resolved(from: 4, duration: nil) == 0)
        #expect(SeekTarget.relative(-10).resolved(from: 25, duration: 100) == 15)
    }

    @Test func resolvedClampsToTheDuration() {
        #expect(SeekTarget.absolute(500).resolved(from: 0, duration: 100) == 100)
        #expect(SeekTarget.relative(30).resolved(from: 90, duration: 100) == 100)
        #expect(SeekTarget.relative(30).resolved(from: 10, duration: 100) == 40)
        #expect(SeekTarget.absolute(42).resolved(from: 99, duration: 100) == 42)
    }

    @Test func resolvedWithoutAKnownDurationDoesNotClampAbove() {
        #expect(SeekTarget.absolute(500).resolved(from: 0, duration: nil) == 500)
        #expect(SeekTarget.relative(30).resolved(from: 90, duration: 0) == 120)
    }
}

@Suite struct FormatClockTests {
    @Test(arguments: [
        (0.0, "0:00"), (5, "0:05"), (59.9, "0:59"), (60, "1:00"), (90, "1:30"), (599, "9:59"), (600, "10:00"),
        (3599, "59:59"), (3600, "1:00:00"), (3723, "1:02:03"), (36000, "10:00:00"),
        (-5, "0:00"), (.infinity, "0:00"), (.nan, "0:00"),
    ])
    func formats(seconds: Double, expected: String) {
        #expect(formatClock(seconds) == expected)
    }
}

@Suite struct PlaybackStatusTests {
    @Test func onlyEndedStoppedAndFailedAreFinal() {
        let final: Set<PlaybackStatus.State> = [.ended, .stopped, .failed]
        for state in [PlaybackStatus.State.idle, .loading, .playing, .paused, .stopped, .ended, .failed] {
            #expect(PlaybackStatus(state: state).isFinal == final.contains(state), "\(state)")
        }
    }
}

@Suite struct MediaAcceptanceTests {
    let mp3AndWav = MediaAcceptance.mimeTypes(["audio/mpeg", "audio/wav"])

    @Test func anythingAcceptsEveryType() {
        #expect(MediaAcceptance.anything.accepts(mimeType: "video/x-matroska"))
        #expect(MediaAcceptance.anything.accepts(mimeType: "application/octet-stream"))
    }

    @Test func listedTypesOnly() {
        #expect(mp3AndWav.accepts(mimeType: "audio/mpeg"))
        #expect(mp3AndWav.accepts(mimeType: "audio/wav"))
        #expect(!mp3AndWav.accepts(mimeType: "audio/flac"))
        #expect(!mp3AndWav.accepts(mimeType: "video/mp4"))
        #expect(!MediaAcceptance.mimeTypes([]).accepts(mimeType: "audio/mpeg"))
    }

    @Test func parametersAreIgnoredOnEitherSide() {
        #expect(mp3AndWav.accepts(mimeType: "audio/mpeg; rate=44100"))
        #expect(mp3AndWav.accepts(mimeType: "audio/mpeg;rate=44100;channels=2"))
        #expect(MediaAcceptance.mimeTypes(["audio/L16;rate=44100;channels=2"]).accepts(mimeType: "audio/L16"))
        #expect(!mp3AndWav.accepts(mimeType: "audio/flac; rate=44100"))
    }

    @Test func caseAndSurroundingSpaceAreIgnored() {
        #expect(mp3AndWav.accepts(mimeType: "AUDIO/MPEG"))
        #expect(mp3AndWav.accepts(mimeType: " Audio/Wav "))
        #expect(MediaAcceptance.mimeTypes(["Video/MP4"]).accepts(mimeType: "video/mp4"))
    }

    @Test func wildcardsAcceptEverything() {
        #expect(MediaAcceptance.mimeTypes(["*"]).accepts(mimeType: "video/x-matroska"))
        #expect(MediaAcceptance.mimeTypes(["*/*"]).accepts(mimeType: "audio/flac"))
        #expect(MediaAcceptance.mimeTypes(["audio/mpeg", "*/*"]).accepts(mimeType: "image/png"))
    }

    @Test func acceptsAnyOf() {
        #expect(mp3AndWav.acceptsAny(of: ["audio/flac", "audio/wav"]))
        #expect(!mp3AndWav.acceptsAny(of: ["audio/flac", "video/mp4"]))
        #expect(!mp3AndWav.acceptsAny(of: []))
    }
}

@Suite struct MediaAcceptanceAliasTests {
    @Test func aliasesAndWildcardsMatch() {
        let accepts = MediaAcceptance.mimeTypes(["audio/x-wav", "AUDIO/MP3", "video/*"])
        #expect(accepts.accepts(mimeType: "audio/wav"))
        #expect(accepts.accepts(mimeType: "audio/mpeg"))
        #expect(accepts.accepts(mimeType: "video/x-matroska"))
        #expect(!accepts.accepts(mimeType: "audio/flac"))
    }

    @Test func jsonIsAStringOrAList() throws {
        let encoded = try JSONEncoder().encode([MediaAcceptance.anything, .mimeTypes(["audio/mpeg"])])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["anything",["audio\/mpeg"]]"#)
        #expect(try JSONDecoder().decode([MediaAcceptance].self, from: encoded) == [.anything, .mimeTypes(["audio/mpeg"])])
    }
}

/// The types renderers really list: what route makes must be found in them under their spellings.
@Suite struct RendererSpellingTests {
    /// From the lab's gmediarender (GStreamer's caps names), trimmed.
    static let gmediarender = MediaAcceptance.mimeTypes(["video/quicktime", "video/mpegts", "audio/x-flac", "audio/mpeg",
                                                         "audio/x-wav", "video/x-matroska", "audio/x-m4a", "image/jpeg"])
    /// Samsung and LG TVs, as their GetProtocolInfo lists them.
    static let samsung = MediaAcceptance.mimeTypes(["video/x-mkv", "video/vnd.dlna.mpeg-tts", "video/mp4", "audio/x-ms-wma",
                                                    "audio/mpeg", "audio/L16", "image/jpeg"])
    static let lg = MediaAcceptance.mimeTypes(["video/x-matroska", "video/mp2t", "audio/vnd.dlna.adts", "audio/x-flac", "image/jpg"])

    @Test func mp4AndTransportStreamsReachGStreamerRenderers() {
        #expect(Self.gmediarender.accepts(mimeType: "video/mp4"))
        #expect(Self.gmediarender.accepts(mimeType: "video/mp2t"))
        #expect(Self.gmediarender.spelling(of: "video/mp4") == "video/quicktime")
        #expect(Self.gmediarender.spelling(of: "video/mp2t") == "video/mpegts")
        #expect(Self.gmediarender.spelling(of: "audio/flac") == "audio/x-flac")
    }

    @Test func tvSpellings() {
        #expect(Self.samsung.accepts(mimeType: "video/x-matroska") && Self.samsung.spelling(of: "video/x-matroska") == "video/x-mkv")
        #expect(Self.samsung.spelling(of: "video/mp2t") == "video/vnd.dlna.mpeg-tts")
        #expect(Self.lg.accepts(mimeType: "audio/aac") && Self.lg.spelling(of: "audio/aac") == "audio/vnd.dlna.adts")
        #expect(Self.lg.accepts(mimeType: "image/jpeg"))
        #expect(!Self.lg.accepts(mimeType: "audio/mpeg"))
        #expect(MediaAcceptance.anything.spelling(of: "audio/aac") == "audio/aac")
    }
}
