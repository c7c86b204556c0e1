// NowPlayingLibraryTests: the README's library example — an app's own player published with MediaSession —
// as written, on a private session bus, read and driven by gdbus and playerctl. No network.

import Foundation
import NowPlaying
import Observation
import RouteTestSupport
import Synchronization
import Testing

// README: "As a library", the NowPlaying example, from here to the end of `Player`.
@MainActor @Observable final class Player: MediaSessionRepresentable {
    let id = "demo"
    var content: (any MediaContent)? = MusicContent(title: "Blue in Green", artist: "Miles Davis",
                                                    album: "Kind of Blue", duration: .finite(337))
    var playbackSnapshot = PlaybackSnapshot(isPlaying: true, elapsed: 0)
    var commands: MediaCommands {
        MediaCommands(play: MediaCommand { await self.setPlaying(true) },
                      pause: MediaCommand { await self.setPlaying(false) },
                      seek: MediaCommand { seconds in await self.jump(to: seconds) })
    }
    func setPlaying(_ playing: Bool) {
        playbackSnapshot = PlaybackSnapshot(isPlaying: playing, elapsed: playbackSnapshot.elapsed(at: Date()))
    }
    func jump(to seconds: Double) {
        playbackSnapshot = PlaybackSnapshot(isPlaying: playbackSnapshot.isPlaying, elapsed: seconds)
    }
}

/// Serialized: MediaSessions (published, active) is the process's, and these tests publish in this process.
@Suite(.serialized) struct NowPlayingLibraryTests {
    @MainActor @Test func anAppsOwnPlayerIsOnTheBusAndTakesTheDesktopsCommands() async throws {
        try await withSessionBus { bus in
            let player = Player()
            let publication = Task { @MainActor in try await MediaSession(player, busAddress: bus.address).run() }
            let name = try await bus.waitForPlayer(within: 8)
            #expect(name == "route.demo")
            #expect(try bus.playerctl("-p", name, "metadata", "--format", "{{title}}|{{artist}}|{{album}}|{{mpris:length}}")
                    == "Blue in Green|Miles Davis|Kind of Blue|337000000")
            #expect(try bus.playerctl("-p", name, "status") == "Playing")
            #expect(try bus.get(name, "org.mpris.MediaPlayer2.Player", "CanGoNext").contains("<false>"), "next is not offered")
            // playerctl waits for the reply, which the main actor gives: it must not be blocked meanwhile.
            _ = try await offThePool { try bus.playerctl("-p", name, "pause") }
            try await Lab.until("the model is paused", within: 3) { !player.playbackSnapshot.isPlaying }
            #expect(try bus.playerctl("-p", name, "status") == "Paused")
            _ = try await offThePool { try bus.playerctl("-p", name, "position", "100") }
            try await Lab.until("the model is at 100 s", within: 3) { abs(player.playbackSnapshot.elapsed - 100) < 0.5 }
            // Artwork is loaded when shown, written to the cache, and given as a file:// URL.
            let png = Data([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])
            player.content = MusicContent(title: "So What", artist: "Miles Davis", duration: .finite(545),
                                          artwork: Artwork(ArtworkImage(data: png, mimeType: "image/png")))
            try await Lab.until("the metadata has the artwork", within: 3) {
                try bus.get(name, "org.mpris.MediaPlayer2.Player", "Metadata").contains("'mpris:artUrl': <'file://")
            }
            let metadata = try bus.get(name, "org.mpris.MediaPlayer2.Player", "Metadata")
            let art = try #require(metadata.firstMatch(of: /'mpris:artUrl': <'file:\/\/([^']+)'>/)?.1, "\(metadata)")
            #expect(FileManager.default.contents(atPath: String(art)) == png)
            #expect(MediaSessions.published == ["demo"])
            publication.cancel()
            _ = await publication.result
            try await Lab.until("the player left the bus", within: 3) { try bus.routePlayers().isEmpty }
            #expect(MediaSessions.published.isEmpty)
        }
    }

    /// Whatever another D-Bus client sends — wrong types, absurd positions, stale track ids, methods that do not
    /// exist — is refused or ignored, and the player answers on.
    @MainActor @Test func malformedCallsAreRefusedAndThePlayerAnswersOn() async throws {
        try await withSessionBus { bus in
            let player = Player()
            let publication = Task { @MainActor in try await MediaSession(player, busAddress: bus.address).run() }
            let name = try await bus.waitForPlayer(within: 8)
            func call(_ method: String, _ arguments: String...) async throws -> ToolOutput {
                try await offThePool {
                    try bus.tool("gdbus", ["call", "--session", "--dest", "org.mpris.MediaPlayer2.\(name)", "--object-path",
                                           "/org/mpris/MediaPlayer2", "--method", method] + arguments)
                }
            }
            // dbus-send sends what it is told (gdbus would check the type first).
            let wrongType = try await offThePool {
                try bus.tool("dbus-send", ["--session", "--print-reply", "--dest=org.mpris.MediaPlayer2.\(name)", "/org/mpris/MediaPlayer2",
                                           "org.mpris.MediaPlayer2.Player.Seek", "string:ten"])
            }
            #expect(wrongType.status != 0 && wrongType.text.contains("InvalidArgs"), "\(wrongType.text)")
            // The largest offset there is: clamped to the length, never a trap.
            #expect(try await call("org.mpris.MediaPlayer2.Player.Seek", "9223372036854775807").status == 0)
            try await Lab.until("the model is at its end, not past it", within: 3) { abs(player.playbackSnapshot.elapsed - 337) < 0.5 }
            #expect(try await call("org.mpris.MediaPlayer2.Player.Seek", "--", "-9223372036854775808").status == 0)
            try await Lab.until("the model is at the start, not before it", within: 3) { player.playbackSnapshot.elapsed == 0 }
            #expect(try await call("org.mpris.MediaPlayer2.Player.SetPosition", "/org/route/track/stale", "5000000").status == 0)
            #expect(player.playbackSnapshot.elapsed == 0, "a stale track id changes nothing")
            // Two quick relative seeks add up: each starts where the one before it went.
            player.setPlaying(false)
            async let first = call("org.mpris.MediaPlayer2.Player.Seek", "10000000")
            async let second = call("org.mpris.MediaPlayer2.Player.Seek", "10000000")
            let (one, two) = try await (first, second)
            #expect(one.status == 0 && two.status == 0)
            try await Lab.until("the model is 20 s in", within: 3) { abs(player.playbackSnapshot.elapsed - 20) < 0.5 }
            let volume = try await call("org.freedesktop.DBus.Properties.Set", "org.mpris.MediaPlayer2.Player", "Volume", "<'loud'>")
            #expect(volume.status != 0, "\(volume.text)")
            let open = try await call("org.mpris.MediaPlayer2.Player.OpenUri", "'file:///etc/passwd'")
            #expect(open.status != 0 && open.text.contains("NotSupported"), "\(open.text)")
            let unknown = try await call("org.mpris.MediaPlayer2.Player.Explode")
            #expect(unknown.status != 0, "\(unknown.text)")
            #expect(try bus.playerctl("-p", name, "status") == "Paused", "still answering")
            publication.cancel()
            _ = await publication.result
        }
    }

    /// The session bus ends (the desktop session is over): the publication ends with an error that says so, and
    /// the app goes on.
    @MainActor @Test func aBusThatGoesAwayEndsThePublication() async throws {
        try await withSessionBus { bus in
            let player = Player()
            let ended = Mutex<String?>(nil)
            let publication = Task { @MainActor in
                do { try await MediaSession(player, busAddress: bus.address).run(); ended.withLock { $0 = "returned" } }
                catch { ended.withLock { $0 = "\(error)" } }
            }
            do {
                try await Lab.until("a route player on the bus", within: 8) { try !bus.routePlayers().isEmpty }
            } catch {
                Issue.record("the publication: \(ended.withLock { $0 } ?? "still running")")
                throw error
            }
            bus.stop()
            // Noticed without any change of the model (a paused cast changes nothing for minutes).
            try await Lab.until("the publication ended", within: 4) { ended.withLock { $0 } != nil }
            #expect(ended.withLock { $0 }?.contains("the session bus went away") == true, "\(String(describing: ended.withLock { $0 }))")
            publication.cancel()
        }
    }

    /// Two sessions at once: each its own player; the one that last started playing is the active one.
    @MainActor @Test func theSessionThatLastStartedPlayingIsTheActiveOne() async throws {
        try await withSessionBus { bus in
            let first = Player(), second = SecondPlayer()
            first.setPlaying(false)
            let one = Task { @MainActor in try await MediaSession(first, busAddress: bus.address).run() }
            let two = Task { @MainActor in try await MediaSession(second, busAddress: bus.address).run() }
            try await Lab.until("both on the bus", within: 8) { try bus.routePlayers().count == 2 }
            // The one playing is active once its first state is published (a moment after its name is on the bus).
            try await Lab.until("the playing one is active", within: 3) { MediaSessions.active == "second" }
            #expect(try bus.get("route.second", "org.mpris.MediaPlayer2.Player", "CanSeek").contains("<false>"), "a live broadcast is not seeked")
            first.setPlaying(true)
            try await Lab.until("the first is active once it plays", within: 3) { MediaSessions.active == "demo" }
            one.cancel()
            two.cancel()
            _ = await one.result
            _ = await two.result
            #expect(MediaSessions.active == nil && MediaSessions.published.isEmpty)
        }
    }
}

@MainActor @Observable final class SecondPlayer: MediaSessionRepresentable {
    let id = "second"
    var content: (any MediaContent)? = PodcastContent(title: "Episode 1", show: "A Show", duration: .live)
    var playbackSnapshot = PlaybackSnapshot(isPlaying: true, elapsed: 0)
    var commands: MediaCommands { MediaCommands(seek: MediaCommand { _ in }) }
}
