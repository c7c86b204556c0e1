// WhoAskedTests: what route reads, fetches and serves on the say of parties it never asks about (DESIGN.md, "Who
// asked") — a web page's picture, a looping folder, a playlist that expands without end, a pipe named .m3u, files
// named as subtitles, secrets in the resume file, control characters in titles, helpers that outlive their deadline.

import Foundation
@testable import MediaRouting
import RouteCore
@testable import RouteMedia
import Testing

@Suite struct WhoAskedTests {
    /// A fresh folder, removed after `body`.
    private func inFolder(_ body: (String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("who-asked-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await body(folder)
    }

    @Test func aPagesPictureIsAURLOnTheWebOrNothing() throws {
        let format: [String: Any] = ["url": "https://x.example/v.mp4", "ext": "mp4", "vcodec": "avc1", "acodec": "mp4a", "protocol": "https"]
        for local in ["/home/user/.ssh/id_rsa", "file:///home/user/.ssh/id_rsa", "~/.ssh/id_rsa", "ftp://x.example/p.jpg"] {
            let entry = try #require(WebPage.entry(page: "https://x.example/watch", ["thumbnail": local, "formats": [format]]))
            #expect(entry.artwork == nil, "a page's thumbnail \(local) became \(String(describing: entry.artwork))")
        }
        let entry = try #require(WebPage.entry(page: "https://x.example/watch", ["thumbnail": "https://x.example/p.jpg", "formats": [format]]))
        #expect(entry.artwork == .web("https://x.example/p.jpg"))
    }

    @Test func askersMayNameWhatTheTableSays() {
        #expect(Asker.person.refusesPath("/etc/hostname") == nil)
        #expect(Asker.app(sandboxed: false).refusesPath("/etc/hostname") == nil)
        #expect(Asker.app(sandboxed: true).refusesPath("/etc/hostname")?.contains("sandboxed app") == true)
        #expect(Asker.web("https://x.example/p.m3u").refusesPath("/etc/hostname")?.contains("https://x.example/p.m3u") == true)
        #expect(Asker.person.refusesURL("http://127.0.0.1:8000/a.mp3") == nil)
        #expect(Asker.app(sandboxed: true).refusesURL("http://127.0.0.1:8000/a.mp3")?.contains("loopback") == true)
        #expect(Asker.web("https://x.example/").refusesURL("http://[::1]:8000/a.mp3") != nil)
        #expect(Asker.web("https://x.example/").refusesURL("http://localhost:8000/a.mp3") != nil)
        #expect(Asker.web("https://x.example/").refusesURL("file:///etc/hostname") != nil)
        // This very process is no sandbox.
        #expect(Asker.app(processID: getpid()) == .app(sandboxed: false))
        #expect(Asker.app(processID: 999_999_999) == .app(sandboxed: true), "a process that cannot be looked at is taken for sandboxed")
    }

    @Test func aSandboxedAppsSourcesNameNoFileAndNoPlaceHere() async throws {
        var options = CastSources.Options()
        options.asker = .app(sandboxed: true)
        await #expect(throws: MediaError.self) { try await CastSources.expand(["/etc/hostname"], options: options) }
        do {
            _ = try await CastSources.expand(["http://127.0.0.1:9/a.mp3"], options: options)
            Issue.record("a sandboxed app made route look at this machine")
        } catch {
            #expect("\(error)".contains("refused"), "\(error)")
        }
    }

    @Test func aFolderThatLinksBackToItselfIsReadOnce() async throws {
        try await inFolder { folder in
            _ = FileManager.default.createFile(atPath: folder + "/song.mp3", contents: Data([1]))
            try FileManager.default.createSymbolicLink(atPath: folder + "/a", withDestinationPath: ".")
            try FileManager.default.createSymbolicLink(atPath: folder + "/b", withDestinationPath: folder)
            var options = CastSources.Options()
            options.recursive = true
            let queue = try await CastSources.expand([folder], options: options)
            #expect(queue.entries.map(\.location) == [folder + "/song.mp3"])
            #expect(queue.notices.contains { $0.contains("2 folders") && $0.contains("links") }, "\(queue.notices)")
        }
    }

    @Test func nestedPlaylistsStopAtTheBudgetAndSaySo() async throws {
        try await inFolder { folder in
            // Ten lines naming the next level, eight levels deep: 10^8 entries without a budget.
            for level in 0..<8 {
                let next = level == 7 ? "song.mp3" : "p\(level + 1).m3u"
                try String(repeating: next + "\n", count: 10).write(toFile: folder + "/p\(level).m3u", atomically: true, encoding: .utf8)
            }
            _ = FileManager.default.createFile(atPath: folder + "/song.mp3", contents: Data([1]))
            var options = CastSources.Options()
            options.limits.entries = 500
            let queue = try await CastSources.expand([folder + "/p0.m3u"], options: options)
            #expect(queue.entries.count == 500)
            #expect(queue.notices.contains { $0.hasPrefix("stopped reading sources: the queue holds 500 items") }, "\(queue.notices)")
            options.limits.entries = 10_000
            options.limits.time = .milliseconds(1)
            // Some entries read by then (on a loaded machine, none: then nothing is left to play, which says why).
            do {
                let timed = try await CastSources.expand([folder + "/p0.m3u"], options: options)
                #expect(timed.notices.contains { $0.contains("stopped reading sources: reading took") }, "\(timed.notices.suffix(2))")
            } catch {
                #expect("\(error)".contains("nothing to play (stopped reading sources: reading took"), "\(error)")
            }
        }
    }

    @Test func aPipeOrADeviceNamedAsAPlaylistIsSaidToBeOne() async throws {
        try await inFolder { folder in
            #expect(mkfifo(folder + "/fifo.m3u", 0o600) == 0)
            try FileManager.default.createSymbolicLink(atPath: folder + "/zero.m3u", withDestinationPath: "/dev/zero")
            for (name, words) in [("fifo.m3u", "named pipe"), ("zero.m3u", "a device")] {
                do {
                    _ = try await CastSources.expand([folder + "/" + name])
                    Issue.record("\(name) was read")
                } catch {
                    #expect("\(error)".contains(words) && !"\(error)".contains("permission"), "\(name): \(error)")
                }
            }
        }
    }

    @Test func onlySubtitlesGoOutAsSubtitles() async throws {
        try await inFolder { folder in
            try FileManager.default.createDirectory(atPath: folder + "/video", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: folder + "/elsewhere", withIntermediateDirectories: true)
            let key = folder + "/elsewhere/id_rsa"
            try "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n".write(toFile: key, atomically: true, encoding: .utf8)
            let srt = folder + "/elsewhere/real.srt"
            try "1\n00:00:01,000 --> 00:00:02,000\nHello\n".write(toFile: srt, atomically: true, encoding: .utf8)
            try "WEBVTT\n\n00:01.000 --> 00:02.000\nHello\n".write(toFile: folder + "/video/clip.vtt", atomically: true, encoding: .utf8)
            let video = folder + "/video/clip.mp4"
            #expect(SubtitleFile.refusal(folder + "/video/clip.vtt", video: video) == nil)
            #expect(SubtitleFile.refusal(srt) == nil)
            #expect(SubtitleFile.refusal(key)?.contains("not subtitles") == true)
            // A link beside the video to a file elsewhere: refused even when that file is subtitles.
            try FileManager.default.createSymbolicLink(atPath: folder + "/video/clip.srt", withDestinationPath: srt)
            #expect(SubtitleFile.refusal(folder + "/video/clip.srt", video: video)?.contains("outside its folder") == true)
            try FileManager.default.createSymbolicLink(atPath: folder + "/video/other.vtt", withDestinationPath: key)
            #expect(SubtitleFile.refusal(folder + "/video/other.vtt", video: video) != nil)
            // An HTML comment's arrow is no cue.
            try "<html><!-- a comment --></html>".write(toFile: folder + "/video/page.vtt", atomically: true, encoding: .utf8)
            #expect(SubtitleFile.refusal(folder + "/video/page.vtt", video: video) != nil)
        }
    }

    @Test func theResumeFileHoldsNoSecretAndOnlyItsOwnerReadsIt() async throws {
        try await inFolder { folder in
            let file = folder + "/state/route/positions.json"
            let store = ResumePositions(file: file)
            let signed = "https://user:hunter2@x.example/talk.mp4?Signature=SECRETSIG&Expires=1"
            store.note(signed, position: 120, duration: 3600, now: true)
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!text.contains("hunter2") && !text.contains("SECRETSIG") && text.contains("x.example"), "\(text)")
            #expect(ResumePositions(file: file).position(of: signed) == 120)
            #expect(ResumePositions(file: file).position(of: "https://user:hunter2@x.example/talk.mp4?Signature=OTHER&Expires=1") == nil)
            let mode = { (path: String) in ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? nil) ?? -1 }
            #expect(mode(file) == 0o600 && mode(folder + "/state/route") == 0o700, "\(String(mode(file), radix: 8)) \(String(mode(folder + "/state/route"), radix: 8))")
        }
    }

    @Test func anOldResumeFileLosesItsSecretsAndItsReadersWhenFirstRead() async throws {
        try await inFolder { folder in
            let file = folder + "/positions.json"
            let signed = "https://user:hunter2@x.example/talk.mp4?Signature=SECRETSIG&Expires=1"
            let old = #"{"\#(signed)":{"position":120,"updated":"2026-01-01T00:00:00Z"}}"#
            _ = FileManager.default.createFile(atPath: file, contents: Data(old.utf8), attributes: [.posixPermissions: 0o644])
            #expect(ResumePositions(file: file).position(of: signed) == 120, "the old file's position is kept")
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!text.contains("hunter2") && !text.contains("SECRETSIG"), "\(text)")
            let mode = ((try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) ?? nil) ?? -1
            #expect(mode == 0o600, "\(String(mode, radix: 8))")
        }
    }

    @Test func aDevicesMetadataHasNoControlCharacters() {
        var item = MediaItem(url: "http://10.0.0.1/m", mimeType: "audio/mpeg", title: "Song\u{1B}[31m\u{07} one\u{0}", artist: "\u{202E}Band")
        #expect(item.title == "Song[31m one" && item.artist == "Band")
        item.album = "\u{1B}\u{1B}"
        #expect(item.album == nil)
    }

    @Test func aHelperIsKilledWithWhatItStartedAtItsDeadline() async throws {
        try await inFolder { folder in
            let pidFile = folder + "/child.pid"
            let started = ContinuousClock.now
            do {
                _ = try await HelperProcess.run("/bin/sh", ["-c", "sleep 300 & echo $! > \(pidFile); wait"], errors: STDERR_FILENO, timeout: .seconds(1))
                Issue.record("a helper that sleeps finished")
            } catch HelperProcess.Failure.timedOut {}
            #expect(ContinuousClock.now - started < .seconds(10))
            let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            // Gone, or a zombie nobody has reaped yet: either way it runs no more.
            var gone = false
            for _ in 0..<100 where !gone {
                let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                gone = stat.isEmpty || stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") == true
                if !gone { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(gone, "the helper's own child \(pid) outlived it")
        }
    }

    @Test func aHelpersOutputAndMemoryAreBounded() async throws {
        await #expect(throws: HelperProcess.Failure.self) {
            _ = try await HelperProcess.run("/usr/bin/yes", [], errors: STDERR_FILENO, timeout: .seconds(20), maxOutput: 1 << 20)
        }
        let python = try await HelperProcess.run("/usr/bin/python3", ["-c", "x = bytearray(512 << 20)"], errors: STDERR_FILENO,
                                                 timeout: .seconds(20), maxMemory: 128 << 20)
        #expect(python.status != 0, "512 MiB fitted in a 128 MiB limit")
        let fine = try await HelperProcess.run("/bin/echo", ["hello"], errors: STDERR_FILENO, timeout: .seconds(20))
        #expect(fine.status == 0 && String(decoding: fine.output, as: UTF8.self) == "hello\n")
    }

    @Test func gstreamerFetchesNothingOnThisMachineThatNobodyNamed() throws {
        #expect(FetchGuard.isActive, "route's resolver is not GIO's default")
        #expect(FetchGuard.refusal("none://127.0.0.1:7777") != nil)
        #expect(FetchGuard.refusal("http://10.255.255.1:80") == nil)
        do {
            let allowance = FetchGuard.allow("http://127.0.0.1:7777/live.m3u8")
            #expect(FetchGuard.refusal("none://127.0.0.1:7777") == nil)
            #expect(FetchGuard.refusal("none://127.0.0.1:7778") != nil)
            withExtendedLifetime(allowance) {}
        }
        #expect(FetchGuard.refusal("none://127.0.0.1:7777") != nil, "an allowance outlived its cast")
    }

    @Test func whatIsOfferedForADeviceGoesToItAndToAPluginHereAlone() {
        func route(_ provider: String) -> MediaRoute {
            MediaRoute(provider: provider, nativeID: "x", name: "X", kind: .speaker, address: "http://10.77.0.2:49494/desc.xml",
                       capabilities: .audio, volumeControl: .none, accepts: .anything)
        }
        let renderer = Audience.route(route("upnp"), at: "http://10.77.0.2:49494/desc.xml")
        #expect(renderer.admits("10.77.0.2") && renderer.admits("::ffff:10.77.0.2"))
        #expect(!renderer.admits("10.77.0.3") && !renderer.admits("127.0.0.1"), "a UPnP renderer's URL is its own")
        // A plugin runs here and may fetch for its device (an AirPlay plugin streams what it fetched).
        let plugin = Audience.route(route("airplay"), at: "10.77.0.2:5000")
        #expect(plugin.admits("10.77.0.2") && plugin.admits("127.0.0.1") && plugin.admits("::1"))
        #expect(!plugin.admits("10.77.0.3"), "a neighbour of a plugin's device")
        #expect(plugin.description == "10.77.0.2, this machine")
    }
}
