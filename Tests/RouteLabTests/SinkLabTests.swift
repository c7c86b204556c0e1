// SinkLabTests: `route sink` against real sound servers run headless in the lab (PipeWire with wireplumber and
// pipewire-pulse, and PulseAudio): the sink shows in pactl, sound played into it reaches the renderer's output (a
// click found in the PCM the lab's renderer writes as it plays) and the Cast receiver, the quiet spell stops the
// device, the volume goes both ways without scaling the sound twice, and the faults: This computer, no sound server,
// the sound server restarting, the renderer vanishing.

import Foundation
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct SinkLabTests {
        static var state: String { Lab.environment("ROUTE_LAB_STATE") ?? "/run/route-lab" }
        static var soundEnvironment: [String: String] {
            ["PIPEWIRE_RUNTIME_DIR": state + "/sound", "PULSE_SERVER": "unix:" + state + "/sound/pulse/native"]
        }

        /// `pactl ARGS` on the lab's sound server.
        static func pactl(_ arguments: String...) throws -> String {
            try Lab.tool("/usr/bin/env", ["PULSE_SERVER=unix:\(state)/sound/pulse/native", "pactl"] + arguments).text
        }

        /// The sound server `server` in the lab for `body`, stopped after it.
        func withSound(_ server: String, _ body: () async throws -> Void) async throws {
            try Lab.control("start-sound", server)
            defer { try? Lab.control("stop-sound") }
            try await body()
        }

        /// Starts `route sink ARGS --json` and waits for its "ready" line; returns the process and the sink's name.
        func startSink(_ sandbox: Sandbox, _ arguments: [String], providers: String = "upnp") async throws -> (RouteProcess, String) {
            let sink = try sandbox.start(["sink", "--json"] + arguments,
                                         environment: Self.soundEnvironment.merging(["ROUTE_PROVIDERS": providers]) { $1 })
            var name = ""
            try await Lab.until("route sink says its sink is ready", within: 20) {
                guard sink.isRunning else { throw ToolFailed(description: "route sink ended: \(sink.stdout) \(sink.stderr)") }
                name = Self.events(sink).first { $0["event"] == "ready" }?["sink"] ?? ""
                return !name.isEmpty
            }
            return (sink, name)
        }

        /// Noise played into `sink` (paplay of /dev/urandom) until `stop`: sound that goes on.
        static func noise(into sink: String) throws -> Process {
            let player = Process()
            player.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            player.arguments = ["PULSE_SERVER=unix:\(state)/sound/pulse/native", "paplay", "--device=\(sink)",
                                "--raw", "--format=s16le", "--rate=44100", "--channels=2", "/dev/urandom"]
            try player.runUnblocked()
            return player
        }

        static func stop(_ player: Process) {
            player.terminate()
            waitForExit(player, seconds: 5)
        }

        /// Interrupts `route sink` as Ctrl-C does: it ends with 130.
        static func interrupt(_ sink: RouteProcess, sourceLocation: SourceLocation = #_sourceLocation) async {
            sink.signal(SIGINT)
            let result = await sink.finish(within: 15)
            #expect(result.status == 130, "\(result)", sourceLocation: sourceLocation)
        }

        /// The JSON lines `route sink --json` printed so far.
        static func events(_ sink: RouteProcess) -> [[String: String]] {
            sink.stdout.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: String]
            }
        }

        /// Clicks played into `sink` (a quiet tone between them keeps the device playing), as Tests/LabTools/click
        /// heard them at the renderer's output (and in the output `also`, under "also").
        func clicks(into sink: String, count: Int, also: String? = nil) throws -> [String: Any] {
            let text = try Lab.tool("/usr/bin/env", ["PULSE_SERVER=unix:\(Self.state)/sound/pulse/native",
                                                     RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/click").path,
                                                     sink, Self.state + "/renderer.pcm", "--clicks", "\(count)", "--hum", "--json"]
                                                     + (also.map { ["--also", $0] } ?? [])).text
            let line = text.split(separator: "\n").last.map(String.init) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? ["output": text]
        }

        @Test(arguments: ["pipewire", "pulseaudio"])
        func soundPlayedIntoTheSinkReachesTheRendererAndTheVolumeGoesBothWays(server: String) async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-pcm-renderer")
            defer { try? Lab.control("start-renderer") }
            try await withSound(server) {
                try await inSandbox { sandbox in
                    let (sink, name) = try await startSink(sandbox, ["--to", Lab.rendererName, "--via", "upnp", "--idle", "3"])
                    #expect(name.hasPrefix("route."), "\(name)")
                    let listed = try Self.pactl("list", "sinks")
                    #expect(listed.contains("Name: \(name)") && listed.contains("Description: \(Lab.rendererName)"), "\(listed)")
                    #expect(try Lab.transportState() != "PLAYING", "the renderer plays before any sound does")

                    // The sink at 80 %: the renderer's volume follows (gmediarender makes 80 -8 dB: a full-scale click comes out
                    // at 0.40, 0.43–0.47 with its resampler's overshoot), and the sound it gets is not made quieter by the sink
                    // as well (80 % is another -6 dB on both servers' cubic scale: 0.22–0.24).
                    _ = try Self.pactl("set-sink-volume", name, "80%")
                    let heard = try clicks(into: name, count: 3)
                    #expect((heard["heard"] as? Int ?? 0) >= 2, "\(heard)")
                    let peak = heard["peak"] as? Double ?? 0
                    #expect(peak > 0.33 && peak < 0.7, "a full-scale click reached the renderer's output at \(peak): scaled twice, or not by the renderer")
                    let track = try Lab.trackURI()
                    #expect(track.contains("/desktop-audio."), "\(track)")
                    // The desktop's live sound (a call, a meeting) goes to the renderer, not to a neighbour it told the URL.
                    #expect(try Lab.statusForANeighbour(of: track) == "403")
                    #expect(try Lab.volume() == 80)

                    // Mute goes to the device too.
                    _ = try Self.pactl("set-sink-mute", name, "1")
                    try await Lab.until("the renderer is muted", within: 10) {
                        try Lab.soap("RenderingControl", "GetMute", "<Channel>Master</Channel>").contains("<CurrentMute>1<")
                    }
                    _ = try Self.pactl("set-sink-mute", name, "0")
                    try await Lab.until("the renderer is unmuted", within: 10) {
                        try Lab.soap("RenderingControl", "GetMute", "<Channel>Master</Channel>").contains("<CurrentMute>0<")
                    }

                    // A change on the device shows on the sink.
                    _ = try Lab.soap("RenderingControl", "SetVolume", "<Channel>Master</Channel><DesiredVolume>30</DesiredVolume>")
                    try await Lab.until("the sink shows the renderer's volume", within: 10) {
                        try Self.pactl("get-sink-volume", name).contains("30%")
                    }

                    // Quiet: the renderer is stopped after --idle.
                    try await Lab.until("the renderer is stopped after the quiet spell", within: 15) { try Lab.transportState() == "STOPPED" }
                    try await Lab.until("route sink says it stopped the renderer", within: 5) { Self.events(sink).contains { $0["event"] == "stopped" } }
                    #expect(Self.events(sink).contains { $0["event"] == "playing" })

                    await Self.interrupt(sink)
                    #expect(!(try Self.pactl("list", "short", "sinks")).contains(name), "the sink outlived route sink")
                }
            }
        }

        @Test func theCastReceiverPlaysTheSinkAsALiveWAV() async throws {
            try? Lab.control("stop-cast")
            try CastReceiverLab.start([])
            defer { try? Lab.control("stop-cast") }
            try await withSound("pipewire") {
                try await inSandbox { sandbox in
                    let (sink, name) = try await startSink(sandbox, ["--to", "Lab Cast", "--via", "cast"], providers: "cast")
                    let player = try Self.noise(into: name)
                    defer { Self.stop(player) }
                    try await Lab.until("the receiver plays desktop audio", within: 20) {
                        CastReceiverLab.events().contains { $0["playerState"] as? String == "PLAYING" && ($0["contentId"] as? String ?? "").contains("/desktop-audio.wav") }
                    }
                    let load = CastReceiverLab.events().first { $0["event"] as? String == "load" }
                    #expect(load?["contentType"] as? String == "audio/wav" && load?["streamType"] as? String == "LIVE", "\(String(describing: load))")
                    await Self.interrupt(sink)
                }
            }
        }

        @Test func aRendererThatRefusesL16GetsWAV() async throws {
            let fake = try await FakeRenderer(mode: "refuses-l16", port: 49620)
            defer { fake.stop() }
            try await withSound("pipewire") {
                try await inSandbox { sandbox in
                    let (sink, name) = try await startSink(sandbox, ["--to", fake.description])
                    let player = try Self.noise(into: name)
                    defer { Self.stop(player) }
                    try await Lab.until("the fake plays route's WAV after refusing L16", within: 20) {
                        fake.output.contains("refusing L16") && fake.output.contains("SetAVTransportURI http://10.77.0.1:")
                            && fake.output.contains("/desktop-audio.wav")
                    }
                    try await Lab.until("route sink says the device plays", within: 10) { Self.events(sink).contains { $0["event"] == "playing" } }
                    await Self.interrupt(sink)
                }
            }
        }

        @Test func anMPDServerPlaysTheSinkThroughItsPlugin() async throws {
            try Lab.control("start-mpd")
            defer { try? Lab.control("stop-mpd") }
            _ = try? MPC.run("clear")
            try await withSound("pipewire") {
                try await inSandbox { sandbox in
                    let (sink, name) = try await startSink(sandbox, ["--to", "Lab MPD"], providers: "mpd")
                    let player = try Self.noise(into: name)
                    defer { Self.stop(player) }
                    try await Lab.until("MPD plays route's stream", within: 20) {
                        try MPC.status().contains("[playing]") && MPC.run("current", "-f", "%file%").contains("/desktop-audio.")
                    }
                    await Self.interrupt(sink)
                    try await Lab.until("MPD is stopped", within: 10) { try !MPC.status().contains("[playing]") }
                }
            }
        }

        @Test func anAirPlayReceiverPlaysTheSinkThroughItsPlugin() async throws {
            try? Lab.control("stop-airplay")
            try Lab.control("start-airplay")
            defer { try? Lab.control("stop-airplay") }
            try await withSound("pipewire") {
                try await inSandbox { sandbox in
                    let (sink, name) = try await startSink(sandbox, ["--to", "Lab AirPlay"], providers: "airplay")
                    let player = try Self.noise(into: name)
                    defer { Self.stop(player) }
                    try await Lab.until("shairport-sync plays what the desktop plays", within: 20) { try AirPlayOutput.read().heardSeconds > 2 }
                    // The sink's volume is the receiver's (AirPlay's scale: 0 dB at 100 %, -21 dB at 30 %): a person's
                    // change is heard both ways. (The receiver starts at its own, shairport-sync's -18 dB: quiet.)
                    _ = try Self.pactl("set-sink-volume", name, "100%")
                    _ = try Self.pactl("set-sink-volume", name, "99%")
                    try await Lab.until("the receiver is loud", within: 10) { try AirPlayOutput.read().level(ofLast: 0.3) > 3000 }
                    _ = try Self.pactl("set-sink-volume", name, "30%")
                    try await Lab.until("the receiver is quiet", within: 10) { try AirPlayOutput.read().level(ofLast: 0.3) < 1000 }
                    await Self.interrupt(sink)
                }
            }
        }

        @Test func thisComputerAndAMissingSoundServerAreRefusedWithALine() async throws {
            try await inSandbox { sandbox in
                let local = try await sandbox.run(["sink", "--to", "This computer"], environment: Self.soundEnvironment, timeout: 20)
                #expect(local.status != 0 && local.stderr.contains("this computer's sound would play into the sink again"), "\(local)")
                let none = try await sandbox.run(["sink", "--to", Lab.rendererName],
                                                 environment: ["ROUTE_PROVIDERS": "upnp", "PIPEWIRE_RUNTIME_DIR": sandbox.root, "PULSE_SERVER": ""],
                                                 timeout: 30)
                #expect(none.status != 0 && none.stderr.contains("no sound server runs"), "\(none)")
                #expect(none.stderr.split(separator: "\n").count == 1, "\(none)")
            }
        }

        @Test func theServiceKeepsASinkWhileTheRendererIsOnTheNetworkAndTheDesktopShowsItsSession() async throws {
            try await Lab.stopRenderer()
            try await withSound("pipewire") {
                try await withSessionBus { bus in
                    try await inSandbox { sandbox in
                        let service = try await sandbox.startService(["--providers", "upnp"], on: bus, environment: Self.soundEnvironment)
                        let client = bus.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                        // The service may not have found the renderer yet: ask until it has (each answer "no such device").
                        var kept = try await sandbox.run(["sink", "--to", Lab.rendererName, "--detach", "--idle", "3", "--json"], environment: client)
                        let deadline = ContinuousClock.now + .seconds(20)
                        while kept.status == 4, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(200))
                            kept = try await sandbox.run(["sink", "--to", Lab.rendererName, "--detach", "--idle", "3", "--json"], environment: client)
                        }
                        #expect(kept.status == 0, "\(kept)")
                        let name = (try? JSONSerialization.jsonObject(with: Data(kept.stdout.utf8)) as? [String: Any])?["sink"] as? String ?? ""
                        #expect(name.hasPrefix("route."), "\(kept)")
                        try await Lab.until("the service's sink is on the sound server", within: 10) { try Self.pactl("list", "short", "sinks").contains(name) }

                        let player = try Self.noise(into: name)
                        defer { Self.stop(player) }
                        try await Lab.until("the renderer plays desktop audio", within: 20) {
                            try Lab.transportState() == "PLAYING" && Lab.trackURI().contains("/desktop-audio.")
                        }
                        // On the desktop's media controls, as "Desktop audio".
                        try await Lab.until("the desktop shows the session", within: 10) {
                            try bus.tool("playerctl", ["--all-players", "metadata", "title"]).text.contains("Desktop audio")
                        }

                        // The renderer leaves (it says byebye): its sink goes; it comes back: so does the sink.
                        try Lab.control("kill-renderer")
                        try await Lab.until("the sink goes with the renderer", within: 15) { try !Self.pactl("list", "short", "sinks").contains(name) }
                        try Lab.control("start-renderer")
                        try await Lab.until("the sink comes back with the renderer", within: 30) { try Self.pactl("list", "short", "sinks").contains(name) }
                        try await Lab.until("the renderer plays desktop audio again", within: 30) {
                            try Lab.transportState() == "PLAYING" && Lab.trackURI().contains("/desktop-audio.")
                        }

                        let removed = try await sandbox.run(["sink", "--to", Lab.rendererName, "--stop"], environment: client)
                        #expect(removed.status == 0, "\(removed)")
                        try await Lab.until("the sink is gone", within: 10) { try !Self.pactl("list", "short", "sinks").contains(name) }
                        try await Lab.until("the renderer is stopped", within: 10) { try Lab.transportState() != "PLAYING" }
                        let again = try await sandbox.run(["sink", "--to", Lab.rendererName, "--stop"], environment: client)
                        #expect(again.status == 4, "\(again)")
                        service.signal(SIGTERM)
                        _ = await service.finish(within: 15)
                    }
                }
            }
        }

        @Test func theSinkIsMadeAgainWhenTheSoundServerRestartsAndAVanishedRendererIsTriedAgain() async throws {
            try await Lab.stopRenderer()
            try await withSound("pipewire") {
                try await inSandbox { sandbox in
                    let (sink, name) = try await startSink(sandbox, ["--to", Lab.rendererName, "--via", "upnp"])
                    try Lab.control("stop-sound")
                    try Lab.control("start-sound", "pipewire")
                    try await Lab.until("the sink is there again", within: 20) { try Self.pactl("list", "short", "sinks").contains(name) }
                    #expect(Self.events(sink).contains { $0["event"] == "sink-lost" }, "\(sink.stdout)")

                    let first = try Self.noise(into: name)
                    try await Lab.until("the renderer plays desktop audio", within: 20) { try Lab.transportState() == "PLAYING" }
                    try Lab.control("kill-renderer", "--hard")
                    try await Lab.until("route sink says the renderer failed", within: 30) { Self.events(sink).contains { $0["event"] == "device-failed" } }
                    #expect(try Self.pactl("list", "short", "sinks").contains(name), "the sink left with the renderer")
                    try Lab.control("start-renderer")
                    try await Lab.until("the renderer plays desktop audio again", within: 30) {
                        try Lab.transportState() == "PLAYING" && Lab.trackURI().contains("/desktop-audio.")
                    }
                    Self.stop(first)
                    await Self.interrupt(sink)
                }
            }
        }
    }
}
