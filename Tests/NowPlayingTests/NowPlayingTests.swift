// NowPlayingTests: the model without a bus — bus names and track ids MPRIS accepts, what a remote session
// offers as its device allows, what MPRIS would show, and commands that are disabled.

import Foundation
@testable import NowPlaying
import RouteCore
import Synchronization
import Testing

@Suite struct MPRISNameTests {
    /// D-Bus: elements of [A-Za-z_][A-Za-z0-9_]*, at most 255 characters in all.
    private func isValidBusName(_ name: String) -> Bool {
        name.count <= 255 && name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy {
            $0.wholeMatch(of: /[A-Za-z_][A-Za-z0-9_]*/) != nil
        }
    }

    @Test(arguments: ["cast_4242", "upnp:uuid:0e9a4c1a-7a51-4b63-9d55-1abcde000001", "9lives", "", "Wohnzimmer-Fernseher ü",
                      "cast:" + String(repeating: "x", count: 400), "a.b.c"])
    func everyIdGivesAValidBusName(_ id: String) {
        let name = MediaSession.busName(for: id)
        #expect(name.hasPrefix("org.mpris.MediaPlayer2.route."))
        #expect(isValidBusName(name), "\(name)")
    }

    @Test func aPlainIdIsKeptAsItIs() {
        #expect(MediaSession.busName(for: "cast_4242") == "org.mpris.MediaPlayer2.route.cast_4242")
    }

    @Test func trackIDsAreObjectPathsStablePerItem() {
        let one = MPRISNames.trackID(for: "0:/music/a-b.flac"), again = MPRISNames.trackID(for: "0:/music/a-b.flac")
        #expect(one == again)
        #expect(one != MPRISNames.trackID(for: "1:/music/a-b.flac"))
        #expect(one.wholeMatch(of: /(\/[A-Za-z0-9_]+)+/) != nil, "\(one)")
    }
}

@MainActor @Suite struct RemotePlaybackTests {
    private func playback() -> RemotePlayback {
        RemotePlayback(id: "t", devices: [], controls: MediaCommands(
            play: MediaCommand {}, pause: MediaCommand {}, togglePlayPause: MediaCommand {},
            skipForward: SkipCommand(MediaCommand { _ in }), seek: MediaCommand { _ in }, changeVolume: MediaCommand { _ in }))
    }

    private func status(_ state: PlaybackStatus.State = .playing, duration: Double? = 60, allowed: PlaybackStatus.Commands = .all,
                        title: String? = "Song", artist: String? = nil) -> PlaybackStatus {
        var status = PlaybackStatus(state: state, position: 10, duration: duration, volume: 0.5, title: title)
        status.allowed = allowed
        status.artist = artist
        status.itemURL = "http://10.0.0.2/m/a"
        return status
    }

    @Test func seekIsOfferedOnlyWhenTheDeviceAllowsItAndTheItemHasALength() {
        let model = playback()
        model.update(status())
        #expect(model.commands.seek.isEnabled && model.commands.skipForward.command.isEnabled)
        model.update(status(duration: nil))
        #expect(!model.commands.seek.isEnabled, "a stream without a length (live) cannot be seeked")
        model.update(status(allowed: [.pause, .volume]))
        #expect(!model.commands.seek.isEnabled)
        #expect(model.commands.pause.isEnabled && model.commands.changeVolume.isEnabled)
        model.update(status(allowed: []))
        #expect(!model.commands.pause.isEnabled && !model.commands.togglePlayPause.isEnabled && !model.commands.changeVolume.isEnabled)
        #expect(model.commands.play.isEnabled, "play stays while the session exists")
        #expect(!model.commands.next.isEnabled, "not given: disabled")
    }

    @Test func theDevicesMetadataBecomesTheContentAndStaysOneItem() throws {
        let model = playback()
        model.update(status(artist: "Band"))
        let content = try #require(model.content)
        #expect(content.title == "Song" && content.artists == ["Band"] && content.duration == .finite(60))
        var later = status(artist: "Band")
        later.position = 30
        model.update(later)
        #expect(model.content?.identifier == content.identifier)
        #expect(model.playbackSnapshot.isPlaying && model.playbackSnapshot.elapsed == 30 && model.volume == 0.5)
        model.update(status(.paused, title: nil))
        #expect(model.content?.title == "Song", "a report without a title keeps the item's")
        #expect(!model.playbackSnapshot.isPlaying)
        var other = status(title: nil)
        other.itemURL = "http://10.0.0.2/music/Other%20Song.mp3"
        model.update(other)
        #expect(model.content?.title == "Other Song", "an item known only by its URL is named after it")
    }

    @Test func anOwnerThatKnowsItsItemsKeepsItsContent() {
        let model = playback()
        model.adoptsDeviceMetadata = false
        model.content = MusicContent(title: "Mine")
        model.update(status(title: "The device's"))
        #expect(model.content?.title == "Mine")
    }
}

@Suite struct MPRISStateTests {
    private func state(length: Int64?, playing: Bool) -> MPRISState {
        MPRISState(identity: "TV (route)", trackID: "/org/route/track/t1", hasContent: true, title: "Song", artists: ["A", "B"], album: nil,
                   length: length, artworkID: nil, artURL: nil,
                   snapshot: PlaybackSnapshot(isPlaying: playing, elapsed: 5, rate: 1, timestamp: Date(timeIntervalSinceNow: -2)),
                   volume: nil, canPause: true, canSeek: false, canGoNext: false, canGoPrevious: false)
    }

    @Test func metadataIsTypedAsTheSpecSays() throws {
        let properties = state(length: 60_000_000, playing: true).playerProperties
        guard case .dictionary(let metadata)? = properties["Metadata"] else { Issue.record("no Metadata"); return }
        #expect(metadata["mpris:trackid"] == .objectPath("/org/route/track/t1"))
        #expect(metadata["xesam:artist"] == .strings(["A", "B"]))
        #expect(metadata["mpris:length"] == .int64(60_000_000))
        #expect(metadata["xesam:album"] == nil)
        #expect(properties["PlaybackStatus"] == .string("Playing") && properties["CanPlay"] == .boolean(true))
        #expect(properties["Position"] == nil, "Position is read, never signalled")
    }

    @Test func noLengthWhenItIsNotKnownAndRateOneWhilePaused() {
        let properties = state(length: nil, playing: false).playerProperties
        guard case .dictionary(let metadata)? = properties["Metadata"] else { Issue.record("no Metadata"); return }
        #expect(metadata["mpris:length"] == nil)
        #expect(properties["Rate"] == .double(1) && properties["PlaybackStatus"] == .string("Paused"))
    }

    @Test func timesNeverTrapAndStayWithinTheItem() {
        #expect(microseconds(.infinity) == 0 && microseconds(.nan) == 0 && microseconds(-3) == 0)
        #expect(microseconds(1e300) == 9_200_000_000_000_000_000)
        var long = state(length: 6_000_000, playing: true)
        long.snapshot = PlaybackSnapshot(isPlaying: true, elapsed: 5, timestamp: Date(timeIntervalSinceNow: -60))
        #expect(long.position(at: Date()) == 6_000_000, "never past the length")
    }

    @Test func withoutContentThePlayerIsStoppedButStillPlayable() {
        var empty = state(length: nil, playing: false)
        empty.hasContent = false
        #expect(empty.playerProperties["PlaybackStatus"] == .string("Stopped") && empty.playerProperties["CanPlay"] == .boolean(true))
    }

    @Test func positionIsExtrapolatedWhilePlayingOnly() {
        let now = Date()
        #expect(abs(Double(state(length: nil, playing: true).position(at: now)) - 7_000_000) < 50_000)
        #expect(state(length: nil, playing: false).position(at: now) == 5_000_000)
    }
}

@Suite struct MediaCommandTests {
    @Test func aDisabledCommandDoesNothingAndAnEnabledOneRuns() async throws {
        let calls = Mutex(0)
        let enabled = MediaCommand<Double> { _ in calls.withLock { $0 += 1 } }
        var disabled = enabled
        disabled.isEnabled = false
        try await disabled(1)
        try await MediaCommand<Double>.disabled(1)
        #expect(calls.withLock { $0 } == 0)
        try await enabled(1)
        #expect(calls.withLock { $0 } == 1)
    }
}

@Suite struct ArtworkCacheTests {
    @Test func picturesGoUnderTheCacheTheEnvironmentNames() {
        #expect(ArtworkCache.directory(in: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/home/a"]) == "/x/cache/route/artwork")
        // Unset, empty or relative: $HOME's .cache, as the XDG base directory rules say.
        #expect(ArtworkCache.directory(in: ["HOME": "/home/a"]) == "/home/a/.cache/route/artwork")
        #expect(ArtworkCache.directory(in: ["XDG_CACHE_HOME": "", "HOME": "/home/a"]) == "/home/a/.cache/route/artwork")
        #expect(ArtworkCache.directory(in: ["XDG_CACHE_HOME": "cache", "HOME": "/home/a"]) == "/home/a/.cache/route/artwork")
        #expect(ArtworkCache.directory(in: [:]).hasSuffix("/.cache/route/artwork"))
    }
}

@Suite struct WebArtworkTests {
    @Test func aPictureOnTheWebIsGivenToTheDesktopAsItsURL() async throws {
        let art = try #require(Artwork(webURL: "https://example.org/thumb.jpg"))
        #expect(try await ArtworkCache.file(for: art) == "https://example.org/thumb.jpg")
        #expect(Artwork(webURL: "file:///home/me/.ssh/id_rsa") == nil && Artwork(webURL: "/etc/passwd") == nil)
    }
}
