// UsageTests: the `route` executable's help, usage errors (exit 2), `probe` and `devices`, run as a subprocess.

import Foundation
import RouteCore
import RouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct UsageTests {
    static let commands = ["devices", "cast", "probe", "play", "pause", "stop", "status", "seek", "volume"]

    @Test func binaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: RouteBinary.path),
                "\(RouteBinary.path) is missing; run `swift build --build-tests` first")
    }

    /// The `route` people run links none of the providers' libraries; what it cannot answer through the service it hands
    /// to route-full, and says so plainly when route-full is missing.
    @Test func theThinRouteLinksNoProtocolAndHandsTheRestToRouteFull() async throws {
        let libraries = try runTool("/usr/bin/ldd", [RouteBinary.path], outputs: .output).text
        for heavy in ["libgstreamer", "libupnp", "libavahi", "libssl", "libsoup", "libprotobuf-c"] {
            #expect(!libraries.contains(heavy), "route links \(heavy)")
        }
        try await inSandbox { sandbox in
            // route-full answers what the thin route does not (probe needs GStreamer).
            let wav = try await sandbox.wav("tone.wav", seconds: 1)
            let probed = try await sandbox.run(["probe", wav])
            #expect(probed.status == 0 && probed.stdout.contains("audio/x-wav"), "\(probed)")
            // Alone, the thin route says what is missing (and still answers help itself).
            let alone = sandbox.root + "/bin/route"
            try FileManager.default.createDirectory(atPath: sandbox.root + "/bin", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: RouteBinary.path, toPath: alone)
            func runAlone(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
                let result = try runTool(alone, arguments, outputs: .errors)
                return (result.status, result.text)
            }
            #expect(try runAlone(["--help"]).status == 0)
            // The version too: the thin route answers it without route-full.
            let version = try runTool(alone, ["--version"], outputs: .output)
            #expect(version.status == 0 && version.text == "route \(RouteVersion.current) (D-Bus API 1)\n", "\(version)")
            let json = try runTool(alone, ["--version", "--json"], outputs: .output)
            #expect(json.status == 0 && json.text == "{\"version\":\"\(RouteVersion.current)\",\"dbusAPI\":1}\n", "\(json)")
            #expect(try runAlone(["--version", "--verbose"]).status == 2)
            let missing = try runAlone(["probe", wav])
            #expect(missing.status == 1 && missing.stderr.split(separator: "\n").count == 1
                    && missing.stderr.contains("route-full, which runs this command, is missing"), "\(missing)")
        }
    }

    @Test func topLevelHelpListsCommandsAndExitCodes() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["--help"])
            #expect(result.status == 0, "\(result)")
            for command in Self.commands {
                #expect(result.stdout.contains("\n  \(command) "), "help does not list \(command)")
            }
            #expect(result.stdout.contains("Exit codes:"))
            for code in ["0", "1", "2", "3", "4", "5", "130"] {
                #expect(result.stdout.contains("\n  \(code) "), "help does not document exit code \(code)")
            }
            #expect(result.stdout.contains("ROUTE_AUDIO_SINK"))
            #expect(result.stderr.isEmpty)
        }
    }

    @Test func completionsAndTheManPageCoverEveryCommandAndOption() async throws {
        try await inSandbox { sandbox in
            let help = try await sandbox.run(["--help"])
            let commands = help.stdout.split(separator: "\n").drop { !$0.hasPrefix("Commands:") }.dropFirst()
                .prefix { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
            #expect(commands.count >= 16, "\(commands)")
            let castOptions = try await sandbox.run(["cast", "--help"]).stdout.split(separator: "\n")
                .compactMap { line in line.hasPrefix("  --") ? line.dropFirst(2).split(separator: " ").first.map(String.init) : nil }
            for shell in ["bash", "zsh", "fish"] {
                let result = try await sandbox.run(["completion", shell])
                #expect(result.status == 0, "\(result)")
                for command in commands { #expect(result.stdout.contains(command), "\(shell) completes \(command)") }
                for option in castOptions where option != "--help" {
                    #expect(result.stdout.contains(shell == "fish" ? "-l " + option.dropFirst(2) : option), "\(shell) completes cast \(option)")
                }
            }
            let bash = try await sandbox.run(["completion", "bash"])
            let syntax = try runTool("/bin/bash", ["-n", "-c", bash.stdout])
            #expect(syntax.status == 0, "bash -n: \(syntax.text)")
            let page = try await sandbox.run(["manpage"])
            #expect(page.stdout.hasPrefix(".TH ROUTE 1"))
            for command in commands { #expect(page.stdout.contains(".SS \(command)"), "the man page has \(command)") }
            #expect(try await sandbox.run(["completion", "tcsh"]).status == 2)
        }
    }

    @Test func pluginsListsTheSearchPathAndWhatIsOnIt() async throws {
        try await inSandbox { sandbox in
            let tests = RouteBinary.packageRoot.appendingPathComponent("Tests/Plugins").path
            let result = try await sandbox.run(["plugins", "--json"], environment: ["ROUTE_PLUGIN_PATH": tests + ":/nonexistent"])
            #expect(result.status == 0, "\(result)")
            let listing = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let path = try #require(listing["searchPath"] as? [String])
            #expect(Array(path.prefix(2)) == [tests, "/nonexistent"])
            #expect(path.last == URL(fileURLWithPath: RouteBinary.path).deletingLastPathComponent().resolvingSymlinksInPath().path)
            let names = (listing["plugins"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(names == ["faulty", "python", "airplay", "mpd"], "\(names)")
        }
    }

    @Test func noArgumentsPrintsHelpAndIsAUsageError() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run([])
            #expect(result.status == 2, "\(result)")
            #expect(result.stdout.contains("Usage: route COMMAND"))
        }
    }

    @Test func castHelpShowsUsageOptionsAndExamples() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["cast", "--help"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("Usage: route cast FILE|FOLDER|PLAYLIST|URL..."))
            #expect(result.stdout.contains("--resume") && result.stdout.contains("--shuffle") && result.stdout.contains("yt-dlp"))
            #expect(result.stdout.contains("--to DEVICE"))
            #expect(result.stdout.contains("Examples:"))
            #expect(result.stdout.contains("route cast song.flac"))
            #expect(result.stdout.contains("route cast movie.mkv --to \"Living Room\""))
        }
    }

    @Test(arguments: commands)
    func everyCommandHasHelp(command: String) async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run([command, "--help"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("Usage: route \(command)"))
            #expect(result.stdout.contains("Examples:"))
            #expect(result.stdout.contains("--help"))
        }
    }

    @Test func unknownCommandIsAUsageError() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["frobnicate"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("frobnicate"))
            #expect(result.stderr.contains("cast"), "the error should list the commands")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func unknownOptionIsOneLineNamingIt() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["cast", "song.wav", "--bogus"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("--bogus"))
            #expect(result.stderr.contains("route cast --help"))
            #expect(!result.stderr.contains("route cast: route cast"), "the command is named once: \(result.stderr)")
        }
    }

    @Test func castWithoutAFileIsAUsageError() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["cast", "--to", "this"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("FILE"))
        }
    }

    @Test func optionWithoutItsValueIsAUsageError() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["cast", "song.wav", "--to"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("--to"))
        }
    }

    /// An option that takes one value, given twice: refused in one line, not the first dropped unsaid (`--to A
    /// --to B` played on B alone; a cast's --to repeats now, a control's does not).
    @Test func anOptionGivenTwiceIsAUsageError() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["pause", "--to", "Kitchen", "--to=Hall"])
            #expect(result.status == 2 && result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("--to is given twice (\"Kitchen\", then \"Hall\")"), "\(result)")
        }
    }

    @Test(arguments: [["seek", "abc", "--to", "this"], ["seek", "1:75"], ["volume", "150"], ["volume", "loud"],
                      ["probe", "a.wav", "b.wav"], ["devices", "--providers", "carrier-pigeon"], ["devices", "--json=yes"]])
    func badArgumentsAreUsageErrors(arguments: [String]) async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
        }
    }

    @Test func probePrintsWhatTheFileContains() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("tone.wav", seconds: 2)
            let result = try await sandbox.run(["probe", wav])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("file:      \(wav)"))
            #expect(result.stdout.contains("(served as audio/wav)"))
            #expect(result.stdout.contains("duration:  0:02 (2.000 s)"))
            #expect(result.stdout.contains("stream 0:  audio"))
            #expect(result.stdout.contains("2 ch, 44100 Hz"))
        }
    }

    @Test func probeJSON() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("tone.wav", seconds: 2)
            let result = try await sandbox.run(["probe", "--json", wav])
            #expect(result.status == 0, "\(result)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let duration = try #require(object["duration"] as? Double)
            #expect(abs(duration - 2) < 0.05)
            #expect(object["mimeType"] as? String == "audio/wav")
            #expect(object["path"] as? String == wav)
            let streams = try #require(object["streams"] as? [[String: Any]])
            #expect(streams.count == 1)
            #expect(streams.first?["kind"] as? String == "audio")
            #expect(streams.first?["channels"] as? Int == 2)
            #expect(streams.first?["sampleRate"] as? Int == 44100)
        }
    }

    /// Cover art is described (type and size), not embedded: a large picture made pages of base64.
    @Test func probeJSONDescribesTheCoverArt() async throws {
        try await inSandbox { sandbox in
            let mp3 = sandbox.root + "/plain.mp3", tagged = sandbox.root + "/with cover.mp3", png = sandbox.root + "/cover.png"
            try await Fixtures.gst("audiotestsrc num-buffers=20 ! audioconvert ! lamemp3enc ! filesink location=OUT", to: mp3)
            try await Fixtures.gst("videotestsrc num-buffers=1 ! video/x-raw,width=200,height=200 ! videoconvert ! pngenc ! filesink location=OUT", to: png)
            // An ID3v2.3 tag with one APIC frame holding the picture.
            let picture = try Data(contentsOf: URL(fileURLWithPath: png))
            var frame = Data("image/png".utf8)
            frame.insert(0, at: 0)
            frame += Data([0, 3, 0]) + picture
            var apic = Data("APIC".utf8)
            apic += withUnsafeBytes(of: UInt32(frame.count).bigEndian) { Data($0) } + Data([0, 0]) + frame
            let size = apic.count
            var tag = Data("ID3".utf8) + Data([3, 0, 0])
            tag += Data([UInt8((size >> 21) & 0x7F), UInt8((size >> 14) & 0x7F), UInt8((size >> 7) & 0x7F), UInt8(size & 0x7F)])
            try (tag + apic + (try Data(contentsOf: URL(fileURLWithPath: mp3)))).write(to: URL(fileURLWithPath: tagged))
            let result = try await sandbox.run(["probe", "--json", tagged])
            #expect(result.status == 0, "\(result)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let art = try #require(object["coverArt"] as? [String: Any], "\(result.stdout)")
            #expect(art["bytes"] as? Int == picture.count)
            #expect(art["mimeType"] as? String == "image/png")
            #expect(result.stdout.count < picture.count, "the picture is not in the output")
        }
    }

    @Test func probeOfAMissingFileIsBadInput() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["probe", sandbox.root + "/nothing.wav"])
            #expect(result.status == 3, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("nothing.wav"))
        }
    }

    @Test func devicesListsThisComputerQuickly() async throws {
        try await inSandbox { sandbox in
            // With only the local provider there is nothing to wait for: --timeout must not be waited out.
            let result = try await sandbox.run(["devices", "--providers", "local", "--timeout", "30"], timeout: 40)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdoutLines.count == 1, "\(result)")
            #expect(result.stdout.hasPrefix("This computer"))
            #expect(result.stdout.contains("computer"))
            #expect(result.stdout.contains("local"))
            #expect(result.elapsed < .seconds(10), "only the local provider ran, yet it took \(result.elapsed)")
        }
    }

    @Test func devicesJSONIsAnArrayWithThisComputer() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["devices", "--providers", "local", "--json", "--timeout", "30"], timeout: 40)
            #expect(result.status == 0, "\(result)")
            let array = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
            #expect(array.count == 1)
            #expect(array.first?["name"] as? String == "This computer")
            #expect(array.first?["id"] as? String == "local:local")
            let routes = try #require(array.first?["routes"] as? [[String: Any]], "a device lists its routes")
            #expect(routes.count == 1 && routes.first?["protocolName"] as? String == "local" && routes.first?["nativeID"] as? String == "local")
            #expect(result.elapsed < .seconds(10), "took \(result.elapsed) though --timeout should not apply")
        }
    }
}
