// MPRISLabTests: a cast as the desktop sees it — a player on a private session bus, read and driven by real
// MPRIS clients (playerctl, gdbus, dbus-monitor), with the renderer's own SOAP answers as the truth.

import Foundation
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct MPRISLabTests {
        private let upnp = ["ROUTE_PROVIDERS": "upnp"]

        /// A tagged constant-bitrate MP3 of `seconds` of tone (title Tones, artist Oscillators, album Sines).
        /// Constant: GStreamer's length of an MP3 without a Xing header is an estimate from the frames read
        /// so far, which for a variable bitrate depends on how busy the machine is (a 6 s one read as 5.65 s).
        private func song(_ sandbox: Sandbox, _ name: String, seconds: Int) async throws -> String {
            let path = sandbox.root + "/" + name
            try await Fixtures.gst("audiotestsrc num-buffers=\(seconds * 43) samplesperbuffer=1024 ! audioconvert ! "
                + "taginject tags='title=Tones,artist=Oscillators,album=Sines' ! lamemp3enc target=bitrate cbr=true bitrate=128 "
                + "! id3v2mux ! filesink location=OUT", to: path)
            return path
        }

        @Test func aCastIsAPlayerThatPlayerctlShowsAndControls() async throws {
            try await Lab.stopRenderer()
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let mp3 = try await song(sandbox, "tones.mp3", seconds: 30)
                    let cast = try sandbox.start(["cast", mp3, "--to", Lab.rendererName], environment: upnp.merging(bus.environment) { $1 })
                    let player = try await bus.waitForPlayer(within: 8)
                    try await Lab.until("the renderer reports PLAYING", within: 5) { try Lab.transportState() == "PLAYING" }
                    try await Lab.until("playerctl says Playing", within: 2) { try bus.playerctl("-p", player, "status") == "Playing" }
                    let shown = try bus.playerctl("-p", player, "metadata", "--format", "{{title}}|{{artist}}|{{album}}|{{mpris:length}}")
                    let length = shown.split(separator: "|").last.flatMap { Double($0) }.map { $0 / 1_000_000 } ?? 0
                    #expect(shown.hasPrefix("Tones|Oscillators|Sines|") && abs(length - 29.95) < 0.2, "\(shown)")
                    #expect(try bus.get(player, "org.mpris.MediaPlayer2", "Identity").contains("'Lab Renderer (route)'"))
                    let position = try #require(Double(try bus.playerctl("-p", player, "position")))
                    #expect(abs(position - (try Lab.position())) < 2, "playerctl's position \(position) is the renderer's")

                    try await Lab.until("PropertiesChanged is watched", within: 1) { true }
                    let monitor = try bus.monitor()
                    defer { kill(monitor.process.processIdentifier, SIGKILL) }
                    _ = try bus.playerctl("-p", player, "pause")
                    try await Lab.until("the renderer is paused by playerctl", within: 3) { try Lab.transportState() == "PAUSED_PLAYBACK" }
                    try await Lab.until("PropertiesChanged said Paused", within: 2) {
                        let text = try String(contentsOfFile: monitor.output, encoding: .utf8)
                        return text.contains("PropertiesChanged") && text.contains("\"Paused\"")
                    }
                    _ = try bus.playerctl("-p", player, "play")
                    try await Lab.until("the renderer plays again", within: 3) { try Lab.transportState() == "PLAYING" }
                    _ = try bus.playerctl("-p", player, "position", "12")
                    try await Lab.until("the renderer is near 12 s (\((try? Lab.position()) ?? -1))", within: 4) { try (11.5...15).contains(Lab.position()) }
                    try await Lab.until("Seeked was emitted", within: 2) {
                        try String(contentsOfFile: monitor.output, encoding: .utf8).contains("member=Seeked")
                    }

                    // route checks its own seek took on its next poll (a renderer may drop one): the renderer plays on
                    // from there first, so that the other controller's jump below is not taken for a dropped seek.
                    try await Lab.until("the renderer plays on from 12 s", within: 4) { try Lab.position() >= 14 }
                    // Another controller pauses and plays: the desktop sees each within 1 s.
                    _ = try Lab.soap("AVTransport", "Pause")
                    try await Lab.until("playerctl shows the renderer's own pause", within: 1) { try bus.playerctl("-p", player, "status") == "Paused" }
                    _ = try Lab.soap("AVTransport", "Play", "<Speed>1</Speed>")
                    try await Lab.until("playerctl shows the renderer's own play", within: 1) { try bus.playerctl("-p", player, "status") == "Playing" }
                    // …and a jump it makes is a Seeked (the position strays from the extrapolated one).
                    let seekedBefore = try String(contentsOfFile: monitor.output, encoding: .utf8).components(separatedBy: "member=Seeked").count
                    _ = try Lab.soap("AVTransport", "Seek", "<Unit>REL_TIME</Unit><Target>0:00:25</Target>")
                    try await Lab.until("Seeked after the renderer's own jump", within: 3) {
                        try String(contentsOfFile: monitor.output, encoding: .utf8).components(separatedBy: "member=Seeked").count > seekedBefore
                    }

                    _ = try bus.playerctl("-p", player, "stop")
                    let result = await cast.finish(within: 8)
                    #expect(result.status == 0, "\(result)")
                    #expect(try Lab.transportState() == "STOPPED")
                    try await Lab.until("the player left the bus", within: 3) { try bus.routePlayers().isEmpty }
                }
            }
        }

        @Test func aFoldersCoverIsThePlayersArtAndAnUntaggedSongSaysWhereItPlays() async throws {
            try await Lab.stopRenderer()
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    // An album folder: a song with no picture inside, and the folder's cover.
                    let album = sandbox.root + "/album"
                    try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: true)
                    _ = try await sandbox.wav("album/song.wav", seconds: 20)
                    let cover = Data([0xFF, 0xD8, 0xFF, 0xE0] + Array("a folder's cover".utf8) + [0xFF, 0xD9])
                    try cover.write(to: URL(fileURLWithPath: album + "/cover.jpg"))
                    let cast = try sandbox.start(["cast", album, "--to", Lab.rendererName], environment: upnp.merging(bus.environment) { $1 })
                    let player = try await bus.waitForPlayer(within: 8)
                    try await Lab.until("the player shows art", within: 5) {
                        try bus.get(player, "org.mpris.MediaPlayer2.Player", "Metadata").contains("'mpris:artUrl': <'file://")
                    }
                    let metadata = try bus.get(player, "org.mpris.MediaPlayer2.Player", "Metadata")
                    let art = try #require(metadata.firstMatch(of: /'mpris:artUrl': <'file:\/\/([^']+)'>/)?.1, "\(metadata)")
                    #expect(FileManager.default.contents(atPath: String(art).removingPercentEncoding ?? String(art)) == cover, "\(art)")
                    // The song names no artist: where the shell shows one, it says where the song plays.
                    #expect(try bus.playerctl("-p", player, "metadata", "xesam:artist") == "on \(Lab.rendererName)")
                    _ = try bus.playerctl("-p", player, "stop")
                    #expect(await cast.finish(within: 8).status == 0)
                }
            }
        }

        @Test func watchMirrorsASessionAnotherControllerStartedAndLeavesRouteCastsAlone() async throws {
            try await Lab.stopRenderer()
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let watch = try sandbox.start(["watch"], environment: upnp.merging(bus.environment) { $1 })
                    let server = try sandbox.start(["serve", "--bind", "10.77.0.1", try await song(sandbox, "tones.mp3", seconds: 30)])
                    defer { server.signal(SIGTERM) }
                    try await Lab.until("the file is served", within: 15) { server.stdout.contains("http://") }
                    let url = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("http://") }.map(String.init))
                    // Plain SOAP, as any other control point: SetAVTransportURI and Play.
                    try Lab.playAsAnotherController(url)
                    let player = try await bus.waitForPlayer(within: 6)
                    #expect(player.hasPrefix("route.watch_"), "\(player)")
                    try await Lab.until("the mirror says Playing", within: 3) { try bus.playerctl("-p", player, "status") == "Playing" }
                    #expect(try bus.get(player, "org.mpris.MediaPlayer2", "Identity").contains("'Lab Renderer (route)'"))
                    _ = try bus.playerctl("-p", player, "pause")
                    try await Lab.until("playerctl pause paused the renderer", within: 3) { try Lab.transportState() == "PAUSED_PLAYBACK" }
                    _ = try Lab.soap("AVTransport", "Play", "<Speed>1</Speed>")
                    try await Lab.until("the mirror follows the renderer's own play", within: 1.5) { try bus.playerctl("-p", player, "status") == "Playing" }
                    _ = try Lab.soap("AVTransport", "Stop")
                    try await Lab.until("the mirror left the bus when the renderer stopped", within: 3) { try bus.routePlayers().isEmpty }
                    #expect(watch.stdout.contains("mirroring: ") && watch.stdout.contains("ended: "), "\(watch.stdout)")

                    // A `route cast` of this user's is published by the cast itself, not mirrored again.
                    let cast = try sandbox.start(["cast", try await sandbox.wav("mine.wav", seconds: 20), "--to", Lab.rendererName],
                                                 environment: upnp.merging(bus.environment) { $1 })
                    try await Lab.until("the cast plays", within: 6) { try Lab.transportState() == "PLAYING" && bus.routePlayers().count == 1 }
                    let deadline = ContinuousClock.now + .seconds(2.5)
                    while ContinuousClock.now < deadline {
                        #expect(try bus.routePlayers().allSatisfy { $0.hasPrefix("route.cast_") }, "watch mirrored route's own cast")
                        try await Task.sleep(for: .milliseconds(250))
                    }
                    try await sandbox.run(["stop", "--to", "lab"]).expectSuccess()
                    #expect(await cast.finish(within: 8).status == 0)
                    watch.signal(SIGTERM)
                    let ended = await watch.finish(within: 8)
                    #expect(ended.status == 130, "\(ended)")
                    server.signal(SIGTERM)
                    _ = await server.finish(within: 5)
                }
            }
        }

        @Test func routeStatusSaysWhatAnotherControllerPlays() async throws {
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let server = try sandbox.start(["serve", "--bind", "10.77.0.1", try await sandbox.wav("other.wav", seconds: 20)])
                try await Lab.until("the file is served", within: 15) { server.stdout.contains("http://") }
                let url = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("http://") }.map(String.init))
                try Lab.playAsAnotherController(url)
                try await Lab.until("the renderer plays", within: 5) { try Lab.transportState() == "PLAYING" }
                let status = try await sandbox.run(["status", "--to", Lab.rendererName], environment: upnp)
                #expect(status.status == 0 && status.stdout.hasPrefix("\(Lab.rendererName): playing") && status.stdout.contains("another controller"),
                        "\(status)")
                let json = try await sandbox.run(["status", "--json", "--to", Lab.rendererName], environment: upnp)
                #expect(json.stdout.contains("\"controller\" : \"another\"") || json.stdout.contains("\"controller\":\"another\""), "\(json)")
                try await Lab.stopRenderer()
                server.signal(SIGTERM)
                _ = await server.finish(within: 5)
            }
        }

        @Test func watchWithoutASessionBusFollowsOnAndSaysSoOnce() async throws {
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let watch = try sandbox.start(["watch", "--json"], environment: upnp)
                let server = try sandbox.start(["serve", "--bind", "10.77.0.1", try await sandbox.wav("other.wav", seconds: 20)])
                try await Lab.until("the file is served", within: 15) { server.stdout.contains("http://") }
                let url = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("http://") }.map(String.init))
                for round in 1...2 {
                    try Lab.playAsAnotherController(url)
                    try await Lab.until("mirror \(round) started", within: 6) { watch.stdout.components(separatedBy: "\"mirroring\"").count == round + 1 }
                    try await Lab.stopRenderer()
                    try await Lab.until("mirror \(round) ended", within: 4) { watch.stdout.components(separatedBy: "\"ended\"").count == round + 1 }
                }
                watch.signal(SIGTERM)
                let result = await watch.finish(within: 8)
                #expect(result.status == 130, "\(result)")
                #expect(result.stderr.components(separatedBy: "desktop media controls are off").count == 2, "said once: \(result.stderr)")
                let events = result.stdoutLines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
                #expect(events.count == 4 && events.allSatisfy { $0["device"] == Lab.rendererName }, "\(result.stdout)")
                server.signal(SIGTERM)
                _ = await server.finish(within: 5)
            }
        }

        @Test func everyPropertyHasTheTypeTheMPRISSpecGivesIt() async throws {
            try await Lab.stopRenderer()
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let first = try await song(sandbox, "one.mp3", seconds: 20)
                    let second = try await sandbox.wav("two.wav", seconds: 20)
                    let cast = try sandbox.start(["cast", first, second, "--to", Lab.rendererName], environment: upnp.merging(bus.environment) { $1 })
                    let player = try await bus.waitForPlayer(within: 8)
                    try await Lab.until("Playing", within: 5) { try bus.playerctl("-p", player, "status") == "Playing" }
                    // org.mpris.MediaPlayer2 and .Player, as https://specifications.freedesktop.org/mpris-spec types them.
                    #expect(try bus.propertyTypes(of: player, interface: "org.mpris.MediaPlayer2") == [
                        "CanQuit": "b", "CanRaise": "b", "HasTrackList": "b", "Identity": "s",
                        "SupportedUriSchemes": "as", "SupportedMimeTypes": "as",
                    ])
                    #expect(try bus.propertyTypes(of: player, interface: "org.mpris.MediaPlayer2.Player") == [
                        "PlaybackStatus": "s", "Rate": "d", "Metadata": "a{sv}", "Volume": "d", "Position": "x",
                        "MinimumRate": "d", "MaximumRate": "d", "CanGoNext": "b", "CanGoPrevious": "b", "CanPlay": "b",
                        "CanPause": "b", "CanSeek": "b", "CanControl": "b",
                    ])
                    let metadata = try bus.get(player, "org.mpris.MediaPlayer2.Player", "Metadata")
                    #expect(metadata.contains("'xesam:artist': <['Oscillators']>"), "an array of strings: \(metadata)")
                    #expect(metadata.contains("'xesam:title': <'Tones'>") && metadata.contains("'xesam:album': <'Sines'>"), "\(metadata)")
                    #expect(metadata.contains("'mpris:length': <int64 "), "\(metadata)")
                    let track = try #require(metadata.firstMatch(of: /'mpris:trackid': <objectpath '([^']+)'>/)?.1, "\(metadata)")
                    #expect(track.wholeMatch(of: /(\/[A-Za-z0-9_]+)+/) != nil, "a valid object path without '-': \(track)")
                    #expect(try bus.get(player, "org.mpris.MediaPlayer2.Player", "Position").contains("<int64 "))
                    // A queue of two: next is offered on the first item, and not on the last (nor previous at all).
                    #expect(try bus.get(player, "org.mpris.MediaPlayer2.Player", "CanGoNext").contains("<true>"))
                    #expect(try bus.get(player, "org.mpris.MediaPlayer2.Player", "CanGoPrevious").contains("<false>"))
                    let firstURI = try Lab.trackURI()
                    _ = try bus.playerctl("-p", player, "next")
                    try await Lab.until("the renderer plays the second file (its own TrackURI changed)", within: 5) {
                        let now = try Lab.trackURI()
                        return try !now.isEmpty && now != firstURI && Lab.transportState() == "PLAYING"
                    }
                    do {
                        try await Lab.until("the second file's title is shown", within: 3) {
                            try bus.playerctl("-p", player, "metadata", "title") == "two"
                        }
                    } catch {
                        Issue.record("players: \((try? bus.playerctl("-l")) ?? "?"); the cast \(cast.isRunning ? "runs" : "ended"): \(cast.stdout) \(cast.stderr)")
                        throw error
                    }
                    try await Lab.until("next is no longer offered on the last item", within: 3) {
                        try bus.get(player, "org.mpris.MediaPlayer2.Player", "CanGoNext").contains("<false>")
                    }
                    let trackAfter = try bus.get(player, "org.mpris.MediaPlayer2.Player", "Metadata")
                    #expect(!trackAfter.contains(String(track)), "a new item has a new trackid")
                    try await sandbox.run(["stop", "--to", "lab"]).expectSuccess()
                    #expect(await cast.finish(within: 8).status == 0)
                    try await Lab.until("the player left the bus", within: 3) { try bus.routePlayers().isEmpty }
                }
            }
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct NoSessionBusTests {
    /// At a terminal a person is told once; in a pipe (a script, a service) nothing is said.
    @Test func withoutASessionBusACastPlaysOnAndSaysSoOnceAtATerminal() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("short.wav", seconds: 2)
            let run = try await sandbox.runInTerminal(["cast", wav, "--to", "this"], steps: ["wait:▶"])
            #expect(run.exit == 0, "\(run.output)")
            #expect(run.output.components(separatedBy: "desktop media controls are off").count == 2, "said once: \(run.output)")
            let piped = try await sandbox.run(["cast", wav, "--to", "this"], timeout: 20)
            #expect(piped.status == 0 && !piped.stderr.contains("desktop media controls"), "\(piped)")
        }
    }
}
