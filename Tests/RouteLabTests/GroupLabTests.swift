// GroupLabTests: one cast on two renderers at once in the lab — a group kept, listed, cast to by name, paused, played,
// sought (paused and playing), moved to its next file and stopped on both, and forgotten; a member that vanishes
// mid-cast leaves the other playing and plays again once it is back; and through the route service, a group as one
// session (detached, each member's volume and the group's, paused and stopped, not moved), --to twice, and a group
// kept or forgotten told to clients at once.

import Foundation
import RouteCore
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct GroupLabTests {
        private let upnp = ["ROUTE_PROVIDERS": "upnp"]
        private static let second = "http://10.77.0.2:49496/description.xml"
        private static let secondName = "Lab Renderer 2"

        /// Both renderers' transport states, the first's first.
        private func states() throws -> [String] { [try Lab.transportState(), try Lab.transportState(at: Self.second)] }

        /// Both renderers' volumes (0–100), the first's first.
        private func volumes() throws -> [Int?] { [try Lab.volume(), try Lab.volume(at: Self.second)] }

        /// `route status --to NAME`'s line once it says `words` (within 5 s: a member's volume reaches the service with
        /// the renderer's next report); the last line when it never does (and the test fails).
        private func status(of name: String, saying words: String, in sandbox: Sandbox, _ environment: [String: String]) async throws -> String {
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                let line = try await sandbox.run(["status", "--to", name], environment: environment).stdout
                if line.contains(words) || ContinuousClock.now > deadline {
                    #expect(line.contains(words), "route status --to \(name): \(line)")
                    return line
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        /// The service's `Devices` property, as gdbus prints it.
        private func serviceDevices(_ bus: PrivateSessionBus) throws -> String {
            try bus.tool("gdbus", ["call", "--session", "--dest", "io.github.route.Route1", "--object-path", "/io/github/route/Route1",
                                   "--method", "org.freedesktop.DBus.Properties.Get", "io.github.route.Route1.Manager", "Devices"]).text
        }

        /// Both renderers' states and positions, for a failure to show.
        private func positions() -> String {
            "\((try? states()) ?? []) at \((try? Lab.position()) ?? -1) s and \((try? Lab.position(at: Self.second)) ?? -1) s"
        }

        @Test func aKeptGroupPlaysOnEveryMemberAndEveryCommandReachesThemAll() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let added = try await sandbox.run(["group", "add", "Both", Lab.rendererName, Self.secondName], environment: upnp)
                #expect(added.status == 0 && added.stdout == "Both: \(Lab.rendererName), \(Self.secondName)\n", "\(added)")
                let listed = try await sandbox.run(["devices", "--timeout", "2"], environment: upnp)
                #expect(listed.stdoutLines.contains { $0.hasPrefix("Both ") && $0.contains("group") && $0.hasSuffix("\(Lab.rendererName) + \(Self.secondName)") },
                        "\(listed)")
                let wav = try await sandbox.wav("long.wav", seconds: 60)
                let after = try await sandbox.wav("after.wav", seconds: 30)
                let cast = try sandbox.start(["cast", wav, after, "--to", "Both"], environment: upnp)
                try await Lab.until("both renderers play", within: 10, meanwhile: { cast.stdout + cast.stderr }) { try states() == ["PLAYING", "PLAYING"] }
                #expect(cast.stdout.contains("playing: long [1/2] on Both"), "\(cast.stdout)")
                let paused = try await sandbox.run(["pause", "--to", "Both"], environment: upnp)
                #expect(paused.status == 0, "\(paused)")
                try await Lab.until("both renderers are paused", within: 5) { try states() == ["PAUSED_PLAYBACK", "PAUSED_PLAYBACK"] }
                let sought = try await sandbox.run(["seek", "12", "--to", "Both"], environment: upnp)
                #expect(sought.status == 0, "\(sought)")
                let played = try await sandbox.run(["play", "--to", "Both"], environment: upnp)
                #expect(played.status == 0, "\(played)")
                try await Lab.until("both renderers play from 12 s", within: 5) {
                    try states() == ["PLAYING", "PLAYING"] && Lab.position() >= 12 && Lab.position(at: Self.second) >= 12
                }
                // A seek while playing: every member paused, sought, and played together again.
                let moved = try await sandbox.run(["seek", "20", "--to", "Both"], environment: upnp)
                #expect(moved.status == 0, "\(moved)")
                try await Lab.until("both renderers play from 20 s", within: 5, meanwhile: positions) {
                    try states() == ["PLAYING", "PLAYING"] && Lab.position() >= 20 && Lab.position(at: Self.second) >= 20
                }
                // Next, at once: every member moves to the second file, from its start, together (and stays there: a
                // renderer's check that the seek before took once sought the new file to where the seek went).
                let first = [try Lab.trackURI(), try Lab.trackURI(at: Self.second)]
                let skipped = try await sandbox.run(["next", "--to", "Both"], environment: upnp)
                #expect(skipped.status == 0, "\(skipped)")
                try await Lab.until("both renderers play the second file from its start", within: 10, meanwhile: { positions() + "\n" + cast.stdout + cast.stderr }) {
                    try states() == ["PLAYING", "PLAYING"] && Lab.trackURI() != first[0] && Lab.trackURI(at: Self.second) != first[1]
                        && Lab.position() < 10 && Lab.position(at: Self.second) < 10
                }
                #expect(cast.stdout.contains("playing: after [2/2] on Both"), "\(cast.stdout)")
                // Its members are taken: a cast of their own is refused; one member's volume is its own to set.
                let other = try await sandbox.run(["cast", wav, "--to", Self.secondName], environment: upnp)
                #expect(other.status != 0 && other.stderr.contains("already playing there"), "\(other)")
                let firstVolume = try Lab.volume()
                #expect(firstVolume != 40, "the first renderer's volume must differ from the one set on the second")
                let alone = try await sandbox.run(["volume", "40", "--to", Self.secondName], environment: upnp)
                #expect(alone.status == 0, "\(alone)")
                try await Lab.until("the second renderer alone is at 40", within: 5, meanwhile: { "\((try? volumes()) ?? [])" }) {
                    try volumes() == [firstVolume, 40]
                }
                #expect(try states() == ["PLAYING", "PLAYING"] && Lab.position() < 15 && Lab.position(at: Self.second) < 15, "\(positions())")
                cast.signal(SIGTERM)
                let stopped = await cast.finish(within: 10)
                #expect(stopped.status == 130 && stopped.stdout.contains("stopped: after [2/2] on Both"), "\(stopped)")
                #expect(try states() == ["STOPPED", "STOPPED"])
                let removed = try await sandbox.run(["group", "remove", "Both"], environment: upnp)
                #expect(removed.status == 0 && removed.stdout == "Both: forgotten\n", "\(removed)")
            }
        }

        /// A member that strays from the group (paused and played again on the renderer itself: 5 s behind) is sought
        /// back to where the group plays, and that is said.
        @Test func aMemberThatStraysFromTheGroupIsSoughtBackIntoStep() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("long.wav", seconds: 60)
                let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName, "--to", Self.secondName], environment: upnp)
                try await Lab.until("both renderers play", within: 10, meanwhile: { cast.stdout + cast.stderr }) { try states() == ["PLAYING", "PLAYING"] }
                _ = try Lab.soap("AVTransport", "Pause", at: Self.second)
                try await Lab.until("the second renderer is 5 s behind", within: 10, meanwhile: positions) {
                    try Lab.position() - Lab.position(at: Self.second) >= 5
                }
                _ = try Lab.soap("AVTransport", "Play", "<Speed>1</Speed>", at: Self.second)
                try await Lab.until("the cast says it sought the second renderer back", within: 15, meanwhile: { cast.stderr }) {
                    cast.stderr.contains("\(Self.secondName) played") && cast.stderr.contains("behind the group: sought to where the group plays")
                }
                try await Lab.until("both renderers play in step again", within: 10, meanwhile: positions) {
                    try states() == ["PLAYING", "PLAYING"] && abs(Lab.position() - Lab.position(at: Self.second)) <= 2
                }
                #expect(cast.stderr.components(separatedBy: "sought to where").count == 2, "sought back once: \(cast.stderr)")
                cast.signal(SIGTERM)
                _ = await cast.finish(within: 10)
            }
        }

        /// The renderer, a member of `cast`'s group with the second, vanishes (killed hard: no goodbye): said once, the
        /// second plays on; started again, it plays again from where the group is.
        private func theRendererLeavesAndComesBack(_ cast: RouteProcess) async throws {
            try Lab.control("kill-renderer", "--hard")
            try await Lab.until("the cast says the renderer left", within: 20, meanwhile: { cast.stderr }) {
                cast.stderr.contains("\(Lab.rendererName) left the group:") && cast.stderr.contains("\(Self.secondName) play on")
            }
            #expect(try Lab.transportState(at: Self.second) == "PLAYING")
            #expect(cast.isRunning, "the cast plays on: \(cast.stdout)")
            try Lab.control("start-renderer")
            try await Lab.until("the renderer is back in the group", within: 40, meanwhile: { cast.stderr }) {
                cast.stderr.contains("\(Lab.rendererName) is back: it plays again") && (try? Lab.transportState()) == "PLAYING"
            }
            // It starts the item where the group is, once it plays (gmediarender reports a seek a moment late).
            try await Lab.until("it plays where the group is", within: 10, meanwhile: { positions() }) {
                let (first, second) = (try Lab.position(), try Lab.position(at: Self.second))
                return abs(first - second) <= 2 && first >= 3
            }
            #expect(cast.stderr.components(separatedBy: "left the group").count == 2, "said once: \(cast.stderr)")
        }

        /// Without the service, the cast's own discovery runs while the group plays: a member that vanishes leaves the
        /// other playing, and plays again once it answers.
        @Test func aMemberThatVanishesMidCastLeavesTheOtherPlayingAndPlaysAgainWhenBack() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            defer { try? Lab.control("start-renderer") }
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("long.wav", seconds: 60)
                let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName, "--to", Self.secondName], environment: upnp)
                try await Lab.until("both renderers play", within: 10, meanwhile: { cast.stdout + cast.stderr }) { try states() == ["PLAYING", "PLAYING"] }
                #expect(cast.stdout.contains("playing: long on \(Lab.rendererName) + \(Self.secondName)"), "\(cast.stdout)")
                try await theRendererLeavesAndComesBack(cast)
                let stopped = try await sandbox.run(["stop"], environment: upnp)
                #expect(stopped.status == 0, "\(stopped)")
                let ended = await cast.finish(within: 10)
                #expect(ended.status == 0, "\(ended)")
                #expect(try states() == ["STOPPED", "STOPPED"])
            }
        }

        @Test func throughTheServiceAGroupIsOneSessionThatEveryCommandReachesAndThatDoesNotMove() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let service = try await sandbox.startService(["--providers", "upnp"], on: bus)
                    // Clients reach the service: no providers of their own.
                    let client = bus.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                    let added = try await sandbox.run(["group", "add", "Both", Lab.rendererName, Self.secondName], environment: client)
                    #expect(added.status == 0, "\(added)")
                    // A device wherever devices are: the service's Devices (an app's list, the picker's) and FindDevice.
                    let devices = try serviceDevices(bus)
                    #expect(devices.contains("'group:both'") && devices.contains("<'group'>"), "\(devices)")
                    let found = try bus.tool("gdbus", ["call", "--session", "--dest", "io.github.route.Route1", "--object-path", "/io/github/route/Route1",
                                                       "--method", "io.github.route.Route1.Manager.FindDevice", "both", "1.0"]).text
                    #expect(found.contains("'group:both'"), "\(found)")
                    let listed = try await sandbox.run(["devices", "--timeout", "1"], environment: client)
                    #expect(listed.stdoutLines.filter { $0.hasPrefix("Both ") }.count == 1, "listed once: \(listed)")
                    let wav = try await sandbox.wav("long.wav", seconds: 30)
                    let detached = try await sandbox.run(["cast", wav, "--to", "Both", "--detach"], environment: client, timeout: 30)
                    #expect(detached.status == 0 && detached.stderr.contains("Both plays \"long\""), "\(detached)")
                    try await Lab.until("both renderers play", within: 10) { try states() == ["PLAYING", "PLAYING"] }
                    let moved = try await sandbox.run(["move", "--to", "this"], environment: client)
                    #expect(moved.status != 0 && moved.stderr.contains("a group's cast does not move"), "\(moved)")
                    #expect(try states() == ["PLAYING", "PLAYING"])
                    // Each member's volume on its own; the group's is its loudest member's, and setting it keeps the balance.
                    for (level, name) in [("60", Lab.rendererName), ("30", Self.secondName)] {
                        let set = try await sandbox.run(["volume", level, "--to", name], environment: client)
                        #expect(set.status == 0, "\(set)")
                    }
                    try await Lab.until("each renderer has its own volume", within: 5) { try volumes() == [60, 30] }
                    let member = try await status(of: Self.secondName, saying: "vol 30%", in: sandbox, client)
                    #expect(member.hasPrefix("\(Self.secondName): playing long"), "\(member)")
                    _ = try await status(of: "Both", saying: "vol 60%", in: sandbox, client)
                    let scaled = try await sandbox.run(["volume", "30", "--to", "Both"], environment: client)
                    #expect(scaled.status == 0, "\(scaled)")
                    try await Lab.until("the loudest renderer at the group's volume, the other as much quieter", within: 5) { try volumes() == [30, 15] }
                    // Down to nothing and up again: the balance comes back.
                    for level in ["0", "30"] {
                        let set = try await sandbox.run(["volume", level, "--to", "Both"], environment: client)
                        #expect(set.status == 0, "\(set)")
                        let wanted: [Int?] = level == "0" ? [0, 0] : [30, 15]
                        try await Lab.until("the renderers at \(wanted)", within: 5) { try volumes() == wanted }
                    }
                    // A member named for what acts on the whole group: the group does it, and says so.
                    let paused = try await sandbox.run(["pause", "--to", Self.secondName], environment: client)
                    #expect(paused.status == 0 && paused.stderr.contains("\(Self.secondName) plays in the group Both: pause acts on all of it"), "\(paused)")
                    try await Lab.until("both renderers are paused", within: 5) { try states() == ["PAUSED_PLAYBACK", "PAUSED_PLAYBACK"] }
                    let stopped = try await sandbox.run(["stop", "--to", "Both"], environment: client)
                    #expect(stopped.status == 0, "\(stopped)")
                    try await Lab.until("both renderers stop", within: 5) { try states() == ["STOPPED", "STOPPED"] }
                    // --to twice, a session that ends with its client.
                    let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName, "--to", Self.secondName], environment: client)
                    try await Lab.until("both renderers play again", within: 10, meanwhile: { cast.stdout + cast.stderr }) {
                        try states() == ["PLAYING", "PLAYING"]
                    }
                    #expect(cast.stdout.contains("playing: long on \(Lab.rendererName) + \(Self.secondName)"), "\(cast.stdout)")
                    // A member out and in again while it plays: the other plays on; back in, it plays from where the group is.
                    let removed = try await sandbox.run(["move", "--remove", Self.secondName], environment: client)
                    #expect(removed.status == 0 && removed.stdout == "removed: \(Self.secondName) left \(Lab.rendererName) + \(Self.secondName)\n", "\(removed)")
                    try await Lab.until("the second renderer stops, the first plays on", within: 5) { try states() == ["PLAYING", "STOPPED"] }
                    let last = try await sandbox.run(["move", "--remove", Lab.rendererName], environment: client)
                    #expect(last.status != 0 && last.stderr.contains("the last device of the group"), "\(last)")
                    try await Task.sleep(for: .seconds(3))
                    let back = try await sandbox.run(["move", "--add", Self.secondName], environment: client)
                    #expect(back.status == 0 && back.stdout.hasPrefix("added: \(Self.secondName) plays with"), "\(back)")
                    try await Lab.until("the second renderer plays again where the first is", within: 10, meanwhile: { positions() }) {
                        try states() == ["PLAYING", "PLAYING"] && abs(Lab.position() - Lab.position(at: Self.second)) <= 2 && Lab.position(at: Self.second) >= 3
                    }
                    let twice = try await sandbox.run(["move", "--add", Self.secondName], environment: client)
                    #expect(twice.status != 0 && twice.stderr.contains("plays in the group already"), "\(twice)")
                    cast.signal(SIGTERM)
                    let ended = await cast.finish(within: 10)
                    #expect(ended.status == 130, "\(ended)")
                    try await Lab.until("both renderers stop again", within: 5) { try states() == ["STOPPED", "STOPPED"] }
                    kill(service.process.processIdentifier, SIGTERM)
                    let serviceEnded = await service.finish(within: 8)
                    #expect(serviceEnded.status == 0, "\(serviceEnded)")
                }
            }
        }

        /// The service tells its clients of a group kept or forgotten while it runs (it watches groups.json), though no
        /// device changed: DeviceFound and DeviceLost, as a picker hears them.
        @Test func theServiceTellsItsClientsOfAGroupKeptAndForgotten() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let service = try await sandbox.startService(["--providers", "upnp"], on: bus)
                    let client = bus.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                    try await Lab.until("the service lists both renderers", within: 12) {
                        let devices = try serviceDevices(bus)
                        return devices.contains("'\(Lab.rendererName)'") && devices.contains(Self.secondName)
                    }
                    // gdbus monitor, started the way the sandbox starts processes (sh ignores route's path after it).
                    let monitor = try sandbox.start([], environment: bus.environment, prefix: [
                        "/bin/sh", "-c", "exec stdbuf -oL gdbus monitor --session --dest io.github.route.Route1", "sh",
                    ])
                    try await Lab.until("gdbus monitor listens", within: 5, meanwhile: { monitor.stdout + monitor.stderr }) {
                        monitor.stdout.contains("Monitoring signals")
                    }
                    let added = try await sandbox.run(["group", "add", "Kept", Lab.rendererName, Self.secondName], environment: client)
                    #expect(added.status == 0, "\(added)")
                    try await Lab.until("the service says the group was found", within: 10, meanwhile: { monitor.stdout }) {
                        monitor.stdout.contains("Manager.DeviceFound") && monitor.stdout.contains("group:kept")
                    }
                    let removed = try await sandbox.run(["group", "remove", "Kept"], environment: client)
                    #expect(removed.status == 0, "\(removed)")
                    try await Lab.until("the service says the group was lost", within: 10, meanwhile: { monitor.stdout }) {
                        monitor.stdout.contains("Manager.DeviceLost ('group:kept',)")
                    }
                    monitor.signal(SIGTERM)
                    _ = await monitor.finish(within: 5)
                    kill(service.process.processIdentifier, SIGTERM)
                    _ = await service.finish(within: 8)
                }
            }
        }

        /// Through the service (whose discovery runs all along), a member that vanishes plays again once it answers.
        @Test func throughTheServiceAMemberThatLeftTheNetworkPlaysAgainWhenItIsBack() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            defer { try? Lab.control("start-renderer") }
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let service = try await sandbox.startService(["--providers", "upnp"], on: bus)
                    let client = bus.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                    let wav = try await sandbox.wav("long.wav", seconds: 60)
                    let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName, "--to", Self.secondName], environment: client)
                    try await Lab.until("both renderers play", within: 10, meanwhile: { cast.stdout + cast.stderr }) { try states() == ["PLAYING", "PLAYING"] }
                    try await theRendererLeavesAndComesBack(cast)
                    cast.signal(SIGTERM)
                    let ended = await cast.finish(within: 10)
                    #expect(ended.status == 130, "\(ended)")
                    try await Lab.until("both renderers stop", within: 5) { try states() == ["STOPPED", "STOPPED"] }
                    kill(service.process.processIdentifier, SIGTERM)
                    _ = await service.finish(within: 8)
                }
            }
        }

        /// `route sink` to two renderers at once: one sink, shown with the group's name; a click heard on both; its
        /// volume both's; a member that leaves mid-sound said, the other playing on, and playing again once it is back.
        @Test func theDesktopsSoundPlaysOnEveryMemberAndAMemberThatLeavesPlaysAgainWhenBack() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-pcm-renderer")
            defer { try? Lab.control("start-renderer") }
            try Lab.control("start-second-renderer", "--pcm")
            defer { try? Lab.control("stop-second-renderer") }
            let sinks = SinkLabTests()
            try await sinks.withSound("pipewire") {
                try await inSandbox { sandbox in
                    let (sink, name) = try await sinks.startSink(sandbox, ["--to", Lab.rendererName, "--to", Self.secondName, "--via", "upnp", "--idle", "3"])
                    let events = { SinkLabTests.events(sink) }
                    let ready = events().filter { $0["event"] == "ready" }
                    #expect(Set(ready.compactMap { $0["device"] }) == [Lab.rendererName, Self.secondName] && ready.allSatisfy { $0["sink"] == name },
                            "\(sink.stdout)")
                    let listed = try SinkLabTests.pactl("list", "sinks")
                    #expect(listed.contains("Name: \(name)") && listed.contains("Description: \(Lab.rendererName) + \(Self.secondName)"), "\(listed)")

                    let heard = try sinks.clicks(into: name, count: 3, also: SinkLabTests.state + "/renderer2.pcm")
                    #expect((heard["heard"] as? Int ?? 0) >= 2 && ((heard["also"] as? [String: Any])?["heard"] as? Int ?? 0) >= 2,
                            "a click is heard on both renderers: \(heard)")
                    do {
                        let player = try SinkLabTests.noise(into: name)
                        defer { SinkLabTests.stop(player) }
                        try await Lab.until("both renderers play", within: 15) { try states() == ["PLAYING", "PLAYING"] }
                        _ = try SinkLabTests.pactl("set-sink-volume", name, "70%")
                        try await Lab.until("both renderers follow the sink's volume", within: 10) { try volumes() == [70, 70] }
                        try Lab.control("stop-second-renderer")
                        try await Lab.until("route sink says the second renderer failed", within: 30, meanwhile: { sink.stdout }) {
                            events().contains { $0["event"] == "device-failed" && $0["device"] == Self.secondName }
                        }
                        #expect(try Lab.transportState() == "PLAYING", "the first renderer plays on")
                        #expect(!events().contains { $0["event"] == "device-failed" && $0["device"] == Lab.rendererName }, "\(sink.stdout)")
                        try Lab.control("start-second-renderer", "--pcm")
                        try await Lab.until("the second renderer plays again", within: 30, meanwhile: { sink.stdout }) {
                            try Lab.transportState(at: Self.second) == "PLAYING" && Lab.trackURI(at: Self.second).contains("/desktop-audio.")
                        }
                    }
                    try await Lab.until("both renderers are stopped after the quiet spell", within: 15) { try states() == ["STOPPED", "STOPPED"] }
                    await SinkLabTests.interrupt(sink)
                    #expect(!(try SinkLabTests.pactl("list", "short", "sinks")).contains(name), "the sink outlived route sink")
                }
            }
        }

        /// The route service keeps a sink for a kept group: both renderers play what plays into it, until --stop.
        @Test func theServiceKeepsASinkForAKeptGroup() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            defer { try? Lab.control("start-renderer") }
            let sinks = SinkLabTests()
            try await sinks.withSound("pipewire") {
                try await withSessionBus { bus in
                    try await inSandbox { sandbox in
                        let added = try await sandbox.run(["group", "add", "Both", Lab.rendererName, Self.secondName], environment: upnp)
                        #expect(added.status == 0, "\(added)")
                        let service = try await sandbox.startService(["--providers", "upnp"], on: bus, environment: SinkLabTests.soundEnvironment)
                        let client = bus.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                        // A kept group's member the service has not found yet is left out: both are found first.
                        try await Lab.until("the service lists both renderers", within: 15) {
                            let devices = try serviceDevices(bus)
                            return devices.contains("'\(Lab.rendererName)'") && devices.contains("'\(Self.secondName)'")
                        }
                        let kept = try await sandbox.run(["sink", "--to", "Both", "--detach", "--idle", "3", "--json"], environment: client)
                        #expect(kept.status == 0, "\(kept)")
                        let name = (try? JSONSerialization.jsonObject(with: Data(kept.stdout.utf8)) as? [String: Any])?["sink"] as? String ?? ""
                        try await Lab.until("the group's sink is on the sound server", within: 10) {
                            try SinkLabTests.pactl("list", "short", "sinks").contains(name)
                        }
                        do {
                            let player = try SinkLabTests.noise(into: name)
                            defer { SinkLabTests.stop(player) }
                            try await Lab.until("both renderers play desktop audio", within: 20) {
                                try states() == ["PLAYING", "PLAYING"] && Lab.trackURI().contains("/desktop-audio.")
                                    && Lab.trackURI(at: Self.second).contains("/desktop-audio.")
                            }
                            // One player on the desktop's media controls, for the group.
                            try await Lab.until("the desktop shows one Desktop audio player for the group", within: 10) {
                                let artists = try bus.tool("playerctl", ["--all-players", "metadata", "artist"]).text
                                return artists.components(separatedBy: "This computer's sound on Both").count == 2
                                    && !artists.contains("sound on \(Lab.rendererName)")
                            }
                        }
                        let removed = try await sandbox.run(["sink", "--to", "Both", "--stop"], environment: client)
                        #expect(removed.status == 0, "\(removed)")
                        try await Lab.until("the sink is gone", within: 10) { try !SinkLabTests.pactl("list", "short", "sinks").contains(name) }
                        try await Lab.until("both renderers are stopped", within: 10) { try !states().contains("PLAYING") }
                        service.signal(SIGTERM)
                        _ = await service.finish(within: 15)
                    }
                }
            }
        }
    }
}
