// NowPlayingLibraryTests: the README's library example — an app's own player published with MediaSession —
// as written, on a private session bus, read and driven by gdbus and playerctl. No network.

import Foundation
import NowPlaying
import Observation
import RouteTestSupport
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

@Suite struct NowPlayingLibraryTests {
    @MainActor @Test func anAppsOwnPlayerIsOnTheBusAndTakesTheDesktopsCommands() async throws {
        try await withSessionBus { bus in
            let player = Player()
            let publication = Task { @MainActor in try await MediaSession(player, busAddress: bus.address).run() }
            let name = try await bus.waitForPlayer(within: 5)
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
}
