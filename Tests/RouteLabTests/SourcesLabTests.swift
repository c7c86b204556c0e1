// SourcesLabTests: what people point route at besides files — media URLs, HLS, a web page (yt-dlp), folders and
// playlists as queues, resume — served by nginx in the devices' namespace (scripts/lab start-web), each cast to
// gmediarender and the test Cast receiver, judged by the device's own account (SOAP, the receiver's log, nginx's log);
// and every bad source, each one line.

import Foundation
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct SourcesLabTests {
        private let upnp = ["ROUTE_PROVIDERS": "upnp"]
        private let cast = ["ROUTE_PROVIDERS": "cast"]
        private static let web = "http://10.77.0.2:8088"

        /// A web root in the sandbox (an MP3, an H.264/AAC MP4, HLS made from it, a page with a <video>,
        /// playlists, a text file) served by the lab's nginx for the test.
        private func withWeb(_ body: (Sandbox, String) async throws -> Void) async throws {
            try await inSandbox { sandbox in
                let root = sandbox.root + "/web"
                try await Fixtures.copy("web-media", to: root, Self.makeWebMedia)
                _ = try sandbox.file("web/page.html", """
                    <!DOCTYPE html><html><head><title>Lab Clip Page</title></head>
                    <body><video controls src="clip.mp4" poster="poster.jpg"></video></body></html>
                    """)
                _ = try sandbox.file("web/two.html", """
                    <html><head><title>Two Songs</title></head><body><audio src="tone.mp3"></audio><audio src="tone2.mp3"></audio></body></html>
                    """)
                // (Sounds, not videos: gmediarender 0.0.9 stops fetching when it moves gaplessly from one video to the next.)
                try FileManager.default.copyItem(atPath: root + "/tone.mp3", toPath: root + "/tone2.mp3")
                _ = try sandbox.file("web/notes.txt", "not media\n")
                _ = try sandbox.file("web/empty.html", "<html><head><title>Nothing</title></head><body><p>No media here.</p></body></html>")
                // The same stream as a live one: a playlist with no end.
                let vod = try String(contentsOfFile: root + "/hls/playlist.m3u8", encoding: .utf8)
                _ = try sandbox.file("web/hls/live.m3u8", vod.replacingOccurrences(of: "#EXT-X-ENDLIST", with: ""))
                try FileManager.default.copyItem(atPath: root + "/tone.mp3", toPath: root + "/stall.mp3")
                _ = try sandbox.file("web/sneaky.m3u", "#EXTM3U\nhttp://127.0.0.1:8088/tone.mp3\nfile:///etc/hostname\ntone.mp3\n")
                try Lab.control("start-web", root)
                defer { try? Lab.control("stop-web") }
                try await body(sandbox, root)
            }
        }

        /// The web root's media, made once per run: an MP3, an H.264/AAC MP4, HLS made from it, a poster.
        @Sendable private static func makeWebMedia(_ root: String) throws {
            try FileManager.default.createDirectory(atPath: root + "/hls", withIntermediateDirectories: true)
            try gstLaunch("audiotestsrc num-buffers=130 samplesperbuffer=1024 ! audioconvert ! lamemp3enc ! filesink location=\(q(root + "/tone.mp3"))")
            try gstLaunch("videotestsrc num-buffers=120 ! video/x-raw,width=160,height=120,framerate=30/1 ! x264enc key-int-max=30 "
                + "! h264parse ! queue ! mp4mux name=m ! filesink location=\(q(root + "/clip.mp4")) audiotestsrc num-buffers=172 "
                + "samplesperbuffer=1024 ! audioconvert ! avenc_aac ! aacparse ! queue ! m.")
            // HLS by mpegtsmux and hlssink (cut at key frames), not hlssink2: qtdemux into hlssink2 hung in 3 of 30 runs
            // here (GStreamer 1.22), unbounded queues or not; this in none of 80. Unbounded queues: the clip is 4 s.
            let unbounded = "queue max-size-time=0 max-size-bytes=0 max-size-buffers=0"
            try gstLaunch("filesrc location=\(q(root + "/clip.mp4")) ! qtdemux name=dm dm.video_0 ! \(unbounded) ! h264parse ! mux. "
                + "dm.audio_0 ! \(unbounded) ! aacparse ! mux. mpegtsmux name=mux ! hlssink target-duration=1 playlist-length=0 max-files=0 "
                + "location=\(q(root + "/hls/seg%05d.ts")) playlist-location=\(q(root + "/hls/playlist.m3u8"))", within: 30)
            try gstLaunch("videotestsrc num-buffers=1 ! video/x-raw,width=64,height=64 ! jpegenc ! filesink location=\(q(root + "/poster.jpg"))")
        }

        /// What nginx served, one line per request ("10.77.0.2 GET /tone.mp3 200").
        private func served() -> [String] {
            guard let state = Lab.environment("ROUTE_LAB_STATE"),
                  let text = try? String(contentsOfFile: state + "/web/access.log", encoding: .utf8) else { return [] }
            return text.split(separator: "\n").map { line in
                let fields = line.split(separator: " ")
                return fields.count > 8 ? "\(fields[0]) \(fields[5].dropFirst()) \(fields[6]) \(fields[8])" : String(line)
            }
        }

        /// The titles a cast without a terminal said it plays, in order ("playing: TITLE [2/3] on DEVICE").
        private func playedTitles(_ result: RouteResult) -> [String] {
            var titles: [String] = []
            for line in result.stdoutLines + result.stderrLines {
                guard line.hasPrefix("playing: "), let on = line.range(of: " on ", options: .backwards) else { continue }
                let text = line[line.index(line.startIndex, offsetBy: 9)..<on.lowerBound]
                let title = String(text.components(separatedBy: " [").first ?? String(text))
                if titles.last != title { titles.append(title) }
            }
            return titles
        }

        @Test func aMediaURLIsFetchedByTheDeviceItself() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, _ in
                let url = Self.web + "/tone.mp3"
                let playing = try sandbox.start(["cast", url, "--to", Lab.rendererName], environment: upnp)
                try await Lab.until("the renderer plays the URL itself", within: 10) { try Lab.trackURI() == url && Lab.transportState() == "PLAYING" }
                let result = await playing.finish(within: 20)
                #expect(result.status == 0, "\(result)")
                #expect(served().contains("10.77.0.2 GET /tone.mp3 200"), "the renderer fetched nothing itself: \(served())")

                try? Lab.control("stop-cast")
                try CastReceiverLab.start([])
                defer { try? Lab.control("stop-cast") }
                let clip = Self.web + "/clip.mp4"
                let toReceiver = try await sandbox.run(["cast", clip, "--to", "Lab Cast"], environment: cast, timeout: 30)
                #expect(toReceiver.status == 0, "\(toReceiver)")
                let events = CastReceiverLab.events()
                #expect(events.contains { $0["event"] as? String == "load" && $0["contentId"] as? String == clip && $0["contentType"] as? String == "video/mp4" }, "\(events)")
                #expect(events.contains { $0["playerState"] as? String == "PLAYING" && $0["contentId"] as? String == clip })
            }
        }

        @Test func hlsGoesAsItIsToTheReceiverAndConvertedToTheRenderer() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, _ in
                let hls = Self.web + "/hls/playlist.m3u8"
                let toRenderer = try sandbox.start(["cast", hls, "--to", Lab.rendererName], environment: upnp)
                // gmediarender lists no HLS type: route fetches the stream and serves it as MPEG-TS.
                try await Lab.until("the renderer plays route's stream of the HLS", within: 15) {
                    try Lab.trackURI().hasPrefix("http://10.77.0.1:") && Lab.transportState() == "PLAYING"
                }
                // A seek in the converted stream: route's server starts it again from there, fetching from the web server.
                let seek = try await sandbox.run(["seek", "0:02", "--to", Lab.rendererName], environment: upnp)
                #expect(seek.status == 0, "\(seek)\nthe cast said so far: \(toRenderer.stderr)")
                try await Lab.until("the renderer plays the stream from 2 s", within: 10, meanwhile: { "the cast said: \(toRenderer.stderr)" }) {
                    try Lab.trackURI().contains("t=2.000")
                }
                let rendered = await toRenderer.finish(within: 25)
                #expect(rendered.status == 0, "\(rendered)")
                #expect(served().contains { $0.hasPrefix("10.77.0.1 GET /hls/seg") }, "\(served())")

                try? Lab.control("stop-cast")
                try CastReceiverLab.start([])
                defer { try? Lab.control("stop-cast") }
                let result = try await sandbox.run(["cast", hls, "--to", "Lab Cast"], environment: cast, timeout: 30)
                #expect(result.status == 0, "\(result)")
                #expect(CastReceiverLab.events().contains {
                    $0["event"] as? String == "load" && $0["contentId"] as? String == hls && $0["contentType"] as? String == "application/vnd.apple.mpegurl"
                }, "\(CastReceiverLab.events())")
                #expect(CastReceiverLab.events().contains { $0["playerState"] as? String == "PLAYING" && $0["contentId"] as? String == hls })
            }
        }

        @Test func aLiveStreamIsLiveOnTheReceiverAndCannotBeSeeked() async throws {
            try await withWeb { sandbox, _ in
                try? Lab.control("stop-cast")
                try CastReceiverLab.start([])
                defer { try? Lab.control("stop-cast") }
                let live = Self.web + "/hls/live.m3u8"
                let playing = try sandbox.start(["cast", live, "--to", "Lab Cast"], environment: cast)
                try await Lab.until("the receiver plays the live stream", within: 15) {
                    CastReceiverLab.events().contains { $0["playerState"] as? String == "PLAYING" && $0["contentId"] as? String == live }
                }
                let load = CastReceiverLab.events().first { $0["event"] as? String == "load" }
                #expect(load?["streamType"] as? String == "LIVE", "\(String(describing: load))")
                let seek = try await sandbox.run(["seek", "+5", "--to", "Lab Cast"], environment: cast)
                #expect(seek.status != 0 && seek.stderr.contains("is a live stream"), "\(seek)")
                _ = try await sandbox.run(["stop", "--to", "Lab Cast"], environment: cast)
                let result = await playing.finish(within: 10)
                #expect(result.status == 0, "\(result)")
            }
        }

        @Test func aWebPageIsResolvedByYtDlpAndAMissingYtDlpIsNamed() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, _ in
                let page = Self.web + "/page.html"
                try? Lab.control("stop-cast")
                try CastReceiverLab.start([])
                defer { try? Lab.control("stop-cast") }
                let result = try await sandbox.run(["cast", page, "--to", "Lab Cast"], environment: cast, timeout: 40)
                #expect(result.status == 0, "\(result)")
                let load = CastReceiverLab.events().first { $0["event"] as? String == "load" }
                #expect(load?["contentId"] as? String == Self.web + "/clip.mp4", "\(String(describing: load))")
                let metadata = load?["metadata"] as? [String: Any]
                #expect((metadata?["title"] as? String)?.hasPrefix("Lab Clip Page") == true, "\(String(describing: metadata))")
                #expect((metadata?["images"] as? [[String: Any]])?.first?["url"] as? String == Self.web + "/poster.jpg")

                let toRenderer = try await sandbox.run(["cast", page, "--to", Lab.rendererName], environment: upnp, timeout: 40)
                #expect(toRenderer.status == 0 && playedTitles(toRenderer).first?.hasPrefix("Lab Clip Page") == true, "\(toRenderer)")
                // A page with two sounds is a queue of two.
                let two = try await sandbox.run(["cast", Self.web + "/two.html", "--to", Lab.rendererName], environment: upnp, timeout: 40)
                #expect(two.status == 0 && playedTitles(two) == ["Two Songs (1)", "Two Songs (2)"], "\(two)")

                let without = try await sandbox.run(["cast", page, "--to", Lab.rendererName],
                                                    environment: upnp.merging(["ROUTE_YTDLP": "/nonexistent/yt-dlp"]) { $1 })
                #expect(without.status == 3 && without.stderrLines.count == 1 && without.stderr.contains(page)
                        && without.stderr.contains("yt-dlp"), "\(without)")
            }
        }

        @Test func foldersAndPlaylistsAreQueuesInTheirOrder() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, _ in
                let album = sandbox.root + "/album"
                try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: true)
                for name in ["10 c", "2 b", "1 a"] {
                    try await Fixtures.gst("audiotestsrc num-buffers=40 samplesperbuffer=1024 ! audioconvert ! lamemp3enc ! filesink location=OUT",
                                           to: album + "/" + name + ".mp3")
                }
                _ = try await sandbox.jpeg("album/cover.jpg")
                _ = try sandbox.file("album/notes.txt", "liner notes")
                let folder = try await sandbox.run(["cast", album, "--to", Lab.rendererName], environment: upnp, timeout: 30)
                #expect(folder.status == 0 && playedTitles(folder) == ["1 a", "2 b", "10 c"], "\(folder)")
                #expect(folder.stderr.contains("skipped 1 file in \(album) that is not media: notes.txt"), "\(folder)")
                // The folder's picture is its music's cover art: the receiver shows it (it fetched it), and it is no item.
                try? Lab.control("stop-cast")
                try CastReceiverLab.start([])
                defer { try? Lab.control("stop-cast") }
                let toReceiver = try await sandbox.run(["cast", album, "--to", "Lab Cast"], environment: cast, timeout: 30)
                #expect(toReceiver.status == 0 && playedTitles(toReceiver) == ["1 a", "2 b", "10 c"], "\(toReceiver)")
                #expect(CastReceiverLab.events().contains { $0["event"] as? String == "image" && $0["error"] == nil }, "\(CastReceiverLab.events())")

                let m3u = try sandbox.file("list.m3u", "#EXTM3U\n#EXTINF:1,First From M3U\nalbum/2 b.mp3\n#EXTINF:3,Second From M3U\n\(Self.web)/tone.mp3\n")
                let pls = try sandbox.file("list.pls", "[playlist]\nFile1=\(Self.web)/tone.mp3\nTitle1=PLS One\nFile2=album/1 a.mp3\nTitle2=PLS Two\nNumberOfEntries=2\n")
                let xspf = try sandbox.file("list.xspf", """
                    <?xml version="1.0" encoding="UTF-8"?><playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList>
                    <track><location>file://\(album)/10%20c.mp3</location><title>XSPF One</title></track>
                    <track><location>\(Self.web)/tone.mp3</location><title>XSPF Two</title></track></trackList></playlist>
                    """)
                for (list, titles) in [(m3u, ["First From M3U", "Second From M3U"]), (pls, ["PLS One", "PLS Two"]), (xspf, ["XSPF One", "XSPF Two"])] {
                    let result = try await sandbox.run(["cast", list, "--to", Lab.rendererName], environment: upnp, timeout: 30)
                    #expect(result.status == 0 && playedTitles(result) == titles, "\(list): \(result)")
                }
            }
        }

        @Test func everyBadSourceEndsWithOneLineAndAQueueGoesOnPastIt() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, _ in
                let cases: [(String, String)] = [
                    (Self.web + "/nothere.mp3", "could not be fetched: the server answered 404 Not Found"),
                    (Self.web + "/forbidden.mp3", "could not be fetched: the server answered 403 Forbidden"),
                    (Self.web + "/loop-a", "its redirects go round in a loop"),
                    (Self.web + "/to-loopback", "refused: it redirects to http://127.0.0.1:8088/tone.mp3"),
                    (Self.web + "/notes.txt", "the server says it is text/plain, not media"),
                    (Self.web + "/empty.html", "nothing to play (yt-dlp found no media"),
                    (sandbox.root + "/nowhere.mp3", "no such file"),
                    (Self.web + "/stall.mp3", "the server stalls: in 15 s it sent too little to tell what it is"),
                ]
                for (source, words) in cases {
                    let result = try await sandbox.run(["cast", source, "--to", Lab.rendererName], environment: upnp)
                    #expect(result.status == 3 && result.stderrLines.count == 1 && result.stderr.contains(source) && result.stderr.contains(words),
                            "\(source): \(result)")
                }
                let empty = sandbox.root + "/empty"
                try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
                let nothing = try await sandbox.run(["cast", empty, "--to", Lab.rendererName], environment: upnp)
                #expect(nothing.status == 3 && nothing.stderr.contains("\(empty): nothing to play (no media files in it)"), "\(nothing)")

                // A playlist from the web naming this machine: that entry is refused with a line, the next one plays.
                let sneaky = try await sandbox.run(["cast", Self.web + "/sneaky.m3u", "--to", Lab.rendererName], environment: upnp, timeout: 30)
                #expect(sneaky.status == 0 && sneaky.stderr.contains("skipping http://127.0.0.1:8088/tone.mp3")
                        && sneaky.stderr.contains("a document from the web (\(Self.web)/sneaky.m3u) may not make route fetch from this machine")
                        && sneaky.stderr.contains("skipping \"file:///etc/hostname\"") && sneaky.stderr.contains("may name http(s) URLs only")
                        && playedTitles(sneaky) == ["tone"], "\(sneaky)")
                #expect(!served().contains { $0.hasPrefix("127.") }, "\(served())")

                // A playlist that names itself is read once; a bad entry is skipped when the queue reaches it.
                let looping = try sandbox.file("self.m3u", "self.m3u\nmissing.mp3\n\(Self.web)/tone.mp3\n")
                let once = try await sandbox.run(["cast", looping, "--to", Lab.rendererName], environment: upnp, timeout: 30)
                #expect(once.stderr.contains("names itself") && once.stderr.contains("missing.mp3: no such file") && playedTitles(once) == ["tone"],
                        "\(once)")

                // A playlist on the web whose ten lines each name it again (8 levels deep: 10^8 fetches unbounded) stops at
                // the fetch budget, and says so.
                _ = try sandbox.file("web/bomb.m3u", (1...10).map { "bomb.m3u?\($0)" }.joined(separator: "\n") + "\n")
                let bomb = try await sandbox.run(["cast", Self.web + "/bomb.m3u", "--to", Lab.rendererName], environment: upnp, timeout: 60)
                let fetched = served().filter { $0.contains("GET /bomb.m3u") }.count
                #expect(bomb.status != 0 && bomb.stderr.contains("it fetched 100 playlists and pages from the web, the most one cast may"), "\(bomb)")
                #expect(fetched <= 101, "the web server was asked for the playlist \(fetched) times")
            }
        }

        @Test func anHLSStreamFromTheWebNeverMakesRouteFetchFromThisMachine() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, root in
                // Its segments on route's own loopback, where a listener (this namespace's, as route's) notes every connection.
                let playlist = try String(contentsOfFile: root + "/hls/playlist.m3u8", encoding: .utf8)
                _ = try sandbox.file("web/hls/here.m3u8", playlist.split(separator: "\n").map {
                    $0.hasSuffix(".ts") ? "http://127.0.0.1:7777/hls/\($0)" : String($0)
                }.joined(separator: "\n") + "\n")
                let listener = try await Lab.listen(on: ["127.0.0.1"], port: 7777, log: sandbox.root + "/knocks")
                defer { listener.stop() }
                let before = listener.knocks
                // gmediarender takes no HLS: route would convert it, fetching every segment itself.
                let result = try await sandbox.run(["cast", Self.web + "/hls/here.m3u8", "--to", Lab.rendererName], environment: upnp, timeout: 40)
                #expect(result.status != 0 && result.stderr.contains("refused"), "\(result)")
                #expect(listener.knocks == before, "route connected to its own loopback \(listener.knocks - before) times")
            }
        }

        @Test func webURLsGoThroughTheDesktopsProxy() async throws {
            try await withWeb { sandbox, _ in
                // The desktop's proxy as GNOME's settings say it (a keyfile stands for dconf): every fetch of route's asks
                // it, as any GIO app's does, once FetchGuard has let the URL through.
                let config = sandbox.root + "/config"
                try FileManager.default.createDirectory(atPath: config + "/glib-2.0/settings", withIntermediateDirectories: true)
                _ = try sandbox.file("config/glib-2.0/settings/keyfile", "[system/proxy]\nmode='manual'\n\n[system/proxy/http]\nhost='10.77.0.1'\nport=3128\n")
                let proxy = try await Lab.listen(on: ["10.77.0.1"], port: 3128, log: sandbox.root + "/proxy-knocks")
                defer { proxy.stop() }
                let before = proxy.knocks
                let desktop = ["XDG_CURRENT_DESKTOP": "GNOME", "GSETTINGS_BACKEND": "keyfile", "XDG_CONFIG_HOME": config]
                let result = try await sandbox.run(["probe", Self.web + "/tone.mp3"], environment: desktop, timeout: 30)
                #expect(proxy.knocks > before, "route fetched around the desktop's proxy: \(result)")
                #expect(result.status != 0, "the proxy answers nothing, so nothing can have been fetched: \(result)")
            }
        }

        @Test func aHelperDiesWithRoute() async throws {
            try await withWeb { sandbox, _ in
                // A yt-dlp that never ends, and says who it is.
                let pidFile = sandbox.root + "/yt-dlp.pid"
                let fake = try sandbox.file("yt-dlp", "#!/bin/sh\necho $$ > \(pidFile)\nexec sleep 300\n")
                chmod(fake, 0o755)
                let cast = try sandbox.start(["cast", Self.web + "/page.html", "--to", Lab.rendererName],
                                             environment: upnp.merging(["ROUTE_YTDLP": fake]) { $1 })
                try await Lab.until("route runs yt-dlp", within: 15) { FileManager.default.fileExists(atPath: pidFile) }
                let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
                kill(cast.process.processIdentifier, SIGTERM)
                _ = await cast.finish(within: 10)
                // Gone, or a zombie nobody has reaped yet: either way it runs no more.
                try await Lab.until("yt-dlp (\(pid)) ended with route", within: 5) {
                    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                    return stat.isEmpty || stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") == true
                }
            }
        }

        @Test func aRendererThatCannotFetchAURLGetsItFromRoute() async throws {
            try await Lab.stopRenderer()
            try await withWeb { sandbox, _ in
                // The renderer's own connections to the web server go unanswered (dropped, as a firewall does); route's
                // (from A) are not. gmediarender then says PLAYING at 0:00 forever. Not refused: a refusal's error can
                // reach gmediarender's playbin after the next Play, which then never fetches anything again (a fresh-clone
                // run, once: route's stream was asked for once, and route's second try was never fetched at all).
                try Lab.nft(["add", "table", "ip", "routetest"])
                defer { try? Lab.nft(["delete", "table", "ip", "routetest"]) }
                try Lab.nft(["add", "chain", "ip", "routetest", "out", "{ type filter hook output priority 0; }"])
                try Lab.nft(["add", "rule", "ip", "routetest", "out", "ip", "daddr", "10.77.0.2", "tcp", "dport", "8088", "drop"])
                let playing = try sandbox.start(["cast", Self.web + "/tone.mp3", "--to", Lab.rendererName], environment: upnp)
                // The renderer is given 6 s to fetch it, then route serves it: ~10 s on an idle machine, twice that beside the suite.
                try await Lab.until("the renderer plays route's stream of the URL", within: 40,
                                    meanwhile: { "route said \(playing.stderr); the renderer plays \((try? Lab.trackURI()) ?? "?")" }) {
                    try Lab.trackURI().hasPrefix("http://10.77.0.1:") && Lab.transportState() == "PLAYING" && Lab.position() >= 1
                }
                let result = await playing.finish(within: 20)
                #expect(result.status == 0 && result.stderr.contains("could not play tone from \(Self.web)/tone.mp3 itself (its position stayed at 0:00"),
                        "\(result)")
            }
        }

        @Test func anInterruptedCastResumesWhereItStoppedAndStartPicksThePlace() async throws {
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("talk.wav", seconds: 40)
                let state = ["XDG_STATE_HOME": sandbox.root + "/state"].merging(upnp) { $1 }
                let first = try sandbox.start(["cast", wav, "--to", Lab.rendererName], environment: state)
                try await Lab.until("the renderer is 12 s in", within: 20) { try Lab.transportState() == "PLAYING" && Lab.position() >= 12 }
                first.signal(SIGTERM)
                _ = await first.finish(within: 10)
                let positions = try String(contentsOfFile: sandbox.root + "/state/route/positions.json", encoding: .utf8)
                #expect(positions.contains("talk.wav"), "\(positions)")

                let resumed = try sandbox.start(["cast", wav, "--to", Lab.rendererName, "--resume"], environment: state)
                try await Lab.until("the renderer plays on from about 12 s", within: 10) {
                    try Lab.transportState() == "PLAYING" && (11...17).contains(Lab.position())
                }
                resumed.signal(SIGTERM)
                _ = await resumed.finish(within: 10)

                let started = try sandbox.start(["cast", wav, "--to", Lab.rendererName, "--start", "0:25"], environment: state)
                try await Lab.until("the renderer plays from 25 s", within: 10) { try Lab.transportState() == "PLAYING" && (25...30).contains(Lab.position()) }
                started.signal(SIGTERM)
                _ = await started.finish(within: 10)
            }
        }

        @Test func aLoopingQueueComesRoundAndAShuffledOnePlaysEveryItemOnce() async throws {
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let a = try await sandbox.wav("a.wav", seconds: 1), b = try await sandbox.wav("b.wav", seconds: 1), c = try await sandbox.wav("c.wav", seconds: 1)
                let looping = try sandbox.start(["cast", a, b, "--to", Lab.rendererName, "--loop"], environment: upnp)
                try await Lab.until("the queue comes round to its first item again", within: 20) {
                    playedTitles(RouteResult(status: 0, stdout: looping.stdout, stderr: looping.stderr, elapsed: .zero)).count >= 3
                }
                looping.signal(SIGTERM)
                let looped = await looping.finish(within: 10)
                #expect(Array(playedTitles(looped).prefix(3)) == ["a", "b", "a"], "\(looped)")

                let shuffled = try await sandbox.run(["cast", a, b, c, "--to", Lab.rendererName, "--shuffle"], environment: upnp, timeout: 30)
                #expect(shuffled.status == 0 && playedTitles(shuffled).sorted() == ["a", "b", "c"], "\(shuffled)")
            }
        }

        @Test func theServiceCastsAURLAndAFolder() async throws {
            try await Lab.stopRenderer()
            try await withSessionBus { bus in
                try await withWeb { sandbox, _ in
                    let service = try await sandbox.startService(["--providers", "upnp"], on: bus)
                    defer { service.signal(SIGTERM) }
                    let client = bus.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                    let url = Self.web + "/tone.mp3"
                    let detached = try await sandbox.run(["cast", url, "--to", Lab.rendererName, "--detach"], environment: client, timeout: 30)
                    #expect(detached.status == 0 && detached.stderr.contains("the route service goes on with it"), "\(detached)")
                    #expect(try Lab.trackURI() == url)
                    _ = try await sandbox.run(["stop", "--to", Lab.rendererName], environment: client)

                    let album = sandbox.root + "/album"
                    try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: true)
                    _ = try await sandbox.wav("album/2 two.wav", seconds: 1)
                    _ = try await sandbox.wav("album/10 ten.wav", seconds: 1)
                    let folder = try await sandbox.run(["cast", album, "--to", Lab.rendererName], environment: client, timeout: 30)
                    #expect(folder.status == 0 && playedTitles(folder) == ["2 two", "10 ten"], "\(folder)")

                    // A bad source says the same, with the same exit code, through the service and in-process.
                    for bad in [Self.web + "/nothere.mp3", Self.web + "/loop-a", sandbox.root + "/empty"] {
                        try? FileManager.default.createDirectory(atPath: sandbox.root + "/empty", withIntermediateDirectories: true)
                        let through = try await sandbox.run(["cast", bad, "--to", Lab.rendererName], environment: client)
                        let inProcess = try await sandbox.run(["cast", bad, "--to", Lab.rendererName], environment: upnp)
                        #expect(through.status == 3 && through.status == inProcess.status && through.stderr == inProcess.stderr,
                                "\(bad): through the service \(through)\nin-process \(inProcess)")
                    }
                    service.signal(SIGTERM)
                    _ = await service.finish(within: 10)
                }
            }
        }
    }
}
