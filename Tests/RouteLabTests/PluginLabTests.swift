// PluginLabTests: drop-in plugins in the lab — the MPD plugin against a real MPD (each step checked with mpc, not
// our code), faulty plugins (crash at start, mid-discovery and mid-cast, a hang, garbage on stdout, a newer
// protocol, a log flood, quarantine), and an installed route that finds its plugins.

import Foundation
import RouteCore
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct PluginLabTests {
        private static let kitchen = ["ROUTE_PROVIDERS": "mpd", "ROUTE_MPD_HOSTS": "Kitchen=10.77.0.2:6600"]
        private static let testPlugins = RouteBinary.packageRoot.appendingPathComponent("Tests/Plugins").path

        /// Casts a minute of sound to the faulty plugin's "Faulty Speaker", misbehaving as `fault` says, and returns once
        /// `route status` says it plays.
        private func castToFaultySpeaker(fault: String, in sandbox: Sandbox) async throws -> RouteProcess {
            let wav = try await sandbox.wav("song.wav", seconds: 60)
            let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": fault, "ROUTE_PROVIDERS": "faulty"]
            let casting = try sandbox.start(["cast", wav, "--to", "Faulty Speaker"], environment: environment)
            try await sandbox.poll(["status", "--to", "Faulty Speaker", "--json"], within: 10, "playing") { $0.stdout.contains("\"playing\"") }
            return casting
        }

        // MARK: MPD

        @Test func mpdServersAreFoundThroughTheHostsMDNSAndReportTheirDecoders() async throws {
            try await withMPD { sandbox in
                let found = try await sandbox.run(["devices", "--json", "--timeout", "3"], environment: ["ROUTE_PROVIDERS": "mpd"])
                let devices = try JSONDecoder().decode([MediaDevice].self, from: Data(found.stdout.utf8))
                let mpd = try #require(devices.first { $0.name.hasPrefix("Lab MPD") }, "\(found)")
                #expect(mpd.primary.provider == "mpd" && mpd.address == "10.77.0.2:6600" && mpd.kind == .speaker)
                #expect(mpd.primary.accepts.accepts(mimeType: "audio/flac") && mpd.primary.accepts.accepts(mimeType: "audio/mpeg"))
                let providers = try await sandbox.run(["providers", "--json", "--timeout", "2"], environment: ["ROUTE_PROVIDERS": "mpd"])
                let states = try JSONDecoder().decode([ProviderStatus].self, from: Data(providers.stdout.utf8))
                let state = try #require(states.first { $0.name == "mpd" }, "\(providers)")
                #expect(state.state == .running && state.version == "1.0" && state.path?.hasSuffix("/route-provider-mpd") == true, "\(state)")
            }
        }

        @Test func aCastPlaysOnMPDAndIsControlledFromBothSides() async throws {
            try await withMPD { sandbox in
                let wav = try await sandbox.wav("long.wav", seconds: 40)
                let casting = try sandbox.start(["cast", wav, "--to", "Kitchen"], environment: Self.kitchen)
                try await Lab.until("mpc says playing", within: 10) { try MPC.status().contains("[playing]") }
                #expect(try MPC.run("current").contains("http://10.77.0.1:"), "MPD plays route's served URL")

                #expect(try await sandbox.run(["pause", "--to", "Kitchen"]).status == 0)
                try await Lab.until("mpc says paused", within: 3) { try MPC.status().contains("[paused]") }
                #expect(try await sandbox.run(["seek", "20", "--to", "Kitchen"]).status == 0)
                try await Lab.until("mpc shows 0:20", within: 3) { try MPC.status().contains(" 0:20/") }
                #expect(try await sandbox.run(["volume", "40", "--to", "Kitchen"]).status == 0)
                try await Lab.until("mpc shows volume 40%", within: 3) { try MPC.status().contains("volume: 40%") }

                // Another client resumes: route's status follows MPD's idle.
                _ = try MPC.run("play")
                try await sandbox.poll(["status", "--to", "Kitchen", "--json"], within: 2, "playing after mpc play") {
                    $0.stdout.contains("\"playing\"")
                }
                #expect(try await sandbox.run(["stop", "--to", "Kitchen"]).status == 0)
                let result = await casting.finish(within: 10)
                #expect(result.status == 0, "\(result)")
                #expect(try MPC.status().contains("[playing]") == false)
                #expect(try MPC.run("playlist").contains("10.77.0.1") == false, "route takes its entries out of MPD's queue")
            }
        }

        @Test func anotherMPDClientStoppingTheCastEndsItAndRouteLeavesMPDAlone() async throws {
            try await withMPD { sandbox in
                let first = try await sandbox.wav("first.wav", seconds: 30), second = try await sandbox.wav("second.wav", seconds: 30)
                let casting = try sandbox.start(["cast", first, second, "--to", "Kitchen"], environment: Self.kitchen)
                try await Lab.until("mpc says playing", within: 10) { try MPC.status().contains("[playing]") }
                _ = try MPC.run("stop")
                let result = await casting.finish(within: 10)
                #expect(result.status != 0, "\(result)")
                #expect(result.stderr.contains("replaced by another controller (another MPD client stopped it)"), "\(result.stderr)")
                #expect(!result.stdout.contains("second"), "the second file is not loaded over the other client: \(result.stdout)")
                #expect(!(try MPC.status().contains("[playing]")))
            }
        }

        @Test func anMPDAddressIsCastToWithoutDiscoveryThroughThePlugin() async throws {
            try await withMPD { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 30)
                // Every provider: Cast and UPnP pass on the address, the plugin answers device/resolve.
                let every = ["ROUTE_PROVIDERS": "local,cast,upnp,mpd"]
                let casting = try sandbox.start(["cast", wav, "--to", "mpd://10.77.0.2"], environment: every)
                try await Lab.until("mpc says playing", within: 10) { try MPC.status().contains("[playing]") }
                #expect(try await sandbox.run(["stop", "--to", "MPD at 10.77.0.2:6600"]).status == 0)
                let result = await casting.finish(within: 10)
                #expect(result.status == 0, "\(result)")
                let nobody = try await sandbox.run(["cast", wav, "--to", "mpd://10.77.0.2:6601"], environment: every)
                #expect(nobody.status != 0 && nobody.stderr.contains("no MPD answers at 10.77.0.2:6601"), "\(nobody)")
            }
        }

        @Test func badAndUnreachableListedServersAreSkipped() async throws {
            try await withMPD { sandbox in
                let environment = ["ROUTE_PROVIDERS": "mpd", "ROUTE_MPD_HOSTS": "no port here=, Kitchen=10.77.0.2:6600, Gone=10.77.0.2:6601"]
                let found = try await sandbox.run(["devices", "--json", "--timeout", "2"], environment: environment)
                let names = try JSONDecoder().decode([MediaDevice].self, from: Data(found.stdout.utf8)).map(\.name)
                #expect(names.contains("Kitchen") && !names.contains("Gone"), "\(names)")
                #expect(found.stderr.contains("ROUTE_MPD_HOSTS: \"no port here=\" is not NAME=HOST:PORT; skipping it"), "\(found.stderr)")
                #expect(found.stderr.split(separator: "\n").count == 1, "one line for the bad entry, none for the unreachable one: \(found.stderr)")
            }
        }

        @Test func anMPDThatVanishesMidCastEndsTheCastWithAnError() async throws {
            try await withMPD { sandbox in
                let wav = try await sandbox.wav("long.wav", seconds: 60)
                let casting = try sandbox.start(["cast", wav, "--to", "Kitchen"], environment: Self.kitchen)
                try await Lab.until("mpc says playing", within: 10) { try MPC.status().contains("[playing]") }
                try Lab.control("stop-mpd")
                let result = await casting.finish(within: 20)
                #expect(result.status != 0, "\(result)")
                // Said by the status that ends the item or by the controller's error, whichever route reads first.
                #expect(result.stderr.contains("Kitchen") && result.stderr.contains("MPD at 10.77.0.2:6600 stopped answering"), "\(result.stderr)")
            }
        }

        @Test func twoFilesPlayAsMPDsOwnQueue() async throws {
            try await withMPD { sandbox in
                let first = try await sandbox.wav("first.wav", seconds: 3), second = try await sandbox.wav("second.wav", seconds: 3)
                let casting = try sandbox.start(["cast", first, second, "--to", "Kitchen"], environment: Self.kitchen)
                try await Lab.until("both files are in MPD's queue", within: 10) { try MPC.run("playlist").split(separator: "\n").count == 2 }
                let result = await casting.finish(within: 20)
                #expect(result.status == 0, "\(result)")
                #expect(result.stdout.contains("second") || result.stderr.contains("second"), "\(result)")
            }
        }

        // MARK: A plugin in Python, written from PROTOCOL.md alone

        @Test func aPythonPluginsDeviceIsListedAndControlled() async throws {
            try await inSandbox { sandbox in
                let log = sandbox.root + "/python.log"
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_PROVIDERS": "python",
                                   "ROUTE_TEST_PYTHON_ADDRESS": "10.77.0.2:9", "ROUTE_TEST_PYTHON_LOG": log]
                let found = try await sandbox.run(["devices", "--json", "--timeout", "1"], environment: environment)
                let devices = try JSONDecoder().decode([MediaDevice].self, from: Data(found.stdout.utf8))
                let speaker = try #require(devices.first { $0.name == "Python Speaker" }, "\(found)")
                #expect(speaker.primary.provider == "python" && speaker.kind == .speaker && speaker.volumeControl == .absolute)

                let wav = try await sandbox.wav("song.wav", seconds: 30)
                let size = try #require(try FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int)
                let casting = try sandbox.start(["cast", wav, "--to", "Python Speaker"], environment: environment)
                func logged() -> [[String: Any]] {
                    ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                        .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                }
                try await Lab.until("the plugin fetched the whole file route served", within: 10) {
                    logged().contains { $0["event"] as? String == "fetched" && $0["bytes"] as? Int == size }
                }
                #expect(try await sandbox.run(["pause", "--to", "Python Speaker"]).status == 0)
                try await sandbox.poll(["status", "--to", "Python Speaker", "--json"], within: 3, "paused") { $0.stdout.contains("\"paused\"") }
                #expect(try await sandbox.run(["seek", "12", "--to", "Python Speaker"]).status == 0)
                #expect(try await sandbox.run(["volume", "30", "--to", "Python Speaker"]).status == 0)
                let methods = logged().compactMap { $0["method"] as? String }
                for method in ["initialize", "session/open", "session/load", "session/pause", "session/seek", "session/volume"] {
                    #expect(methods.contains(method), "\(method) reached the plugin: \(methods)")
                }
                #expect(logged().contains { ($0["params"] as? [String: Any])?["position"] as? Double == 12 })
                #expect(try await sandbox.run(["stop", "--to", "Python Speaker"]).status == 0)
                let result = await casting.finish(within: 10)
                #expect(result.status == 0, "\(result)")
                #expect(logged().contains { $0["method"] as? String == "session/stop" })
            }
        }

        // MARK: Faults

        @Test(arguments: [
            ("crash-start", "exited with status 3; its last words: \"faulty: cannot start: the configuration is missing\""),
            ("crash-discovery", "was killed by signal 6"),
            ("hang", "did not answer discovery/start within 5 s"),
            ("garbage", "wrote garbage to its channel"),
            ("newer-version", "this plugin speaks protocol versions 2-3"),
        ])
        func aFaultyPluginIsReportedAndRouteGoesOn(fault: String, words: String) async throws {
            try await inSandbox { sandbox in
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": fault, "ROUTE_PROVIDERS": "faulty,local"]
                let result = try await sandbox.run(["providers", "--json", "--timeout", "7"], environment: environment)
                #expect(result.status == 0, "\(result)")
                let states = try JSONDecoder().decode([ProviderStatus].self, from: Data(result.stdout.utf8))
                let faulty = try #require(states.first { $0.name == "faulty" }, "\(result)")
                #expect(faulty.lastError?.contains(words) == true, "\(faulty)")
                #expect(faulty.restarts >= 1, "restarted with backoff: \(faulty)")
                #expect(faulty.path == Self.testPlugins + "/route-provider-faulty")
                #expect(states.first { $0.name == "local" }?.state == .running, "the other providers go on: \(states)")
                #expect(result.stderr.contains("faulty failed: the faulty plugin"), "\(result.stderr)")
            }
        }

        @Test func aPluginThatIgnoresTheEndOfItsInputDoesNotOutliveRoute() async throws {
            try await inSandbox { sandbox in
                let pidfile = sandbox.root + "/plugin.pid"
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": "immortal",
                                   "ROUTE_TEST_PLUGIN_PIDFILE": pidfile, "ROUTE_PROVIDERS": "faulty,local"]
                let result = try await sandbox.run(["devices", "--timeout", "1"], environment: environment)
                #expect(result.status == 0, "\(result)")
                let pid = try #require(Int32(try String(contentsOfFile: pidfile, encoding: .utf8)))
                try await Lab.until("the plugin is gone with route", within: 3) {
                    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                    return stat.isEmpty || stat.contains(") Z ")
                }
            }
        }

        @Test func aPluginsEndlessStderrLineIsCut() async throws {
            try await inSandbox { sandbox in
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": "longline", "ROUTE_PROVIDERS": "faulty,local"]
                let result = try await sandbox.run(["providers", "--json", "--timeout", "1"], environment: environment)
                let states = try JSONDecoder().decode([ProviderStatus].self, from: Data(result.stdout.utf8))
                #expect(states.first { $0.name == "faulty" }?.state == .running, "\(states)")
                let longest = result.stderrLines.map(\.count).max() ?? 0
                #expect(longest > 1000 && longest < 4200, "\(longest) characters")
            }
        }

        @Test func aPluginThatFloodsItsLogCannotFloodRoutes() async throws {
            try await inSandbox { sandbox in
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": "flood", "ROUTE_PROVIDERS": "faulty,local"]
                let result = try await sandbox.run(["providers", "--json", "--timeout", "3"], environment: environment)
                let states = try JSONDecoder().decode([ProviderStatus].self, from: Data(result.stdout.utf8))
                #expect(states.first { $0.name == "faulty" }?.state == .running, "\(states)")
                // 20000 lines written; at most a burst and a trickle pass.
                #expect(result.stderrLines.count < 400, "\(result.stderrLines.count) lines")
                #expect(result.stderr.contains("lines from the plugin were dropped: too many"))
            }
        }

        @Test func aPluginThatCrashesMidCastEndsThatCastWithAnError() async throws {
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 20)
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": "crash-cast", "ROUTE_PROVIDERS": "faulty"]
                let result = try await sandbox.run(["cast", wav, "--to", "Faulty Speaker"], environment: environment, timeout: 20)
                #expect(result.status != 0, "\(result)")
                #expect(result.stderr.contains("the faulty plugin exited with status 7"), "\(result)")
                #expect(result.elapsed < .seconds(15), "no hang: \(result.elapsed)")
            }
        }

        @Test func hugeNumbersFromAPluginNeitherCrashTheCastNorRouteStatus() async throws {
            try await inSandbox { sandbox in
                let casting = try await castToFaultySpeaker(fault: "huge-numbers", in: sandbox)
                let status = try await sandbox.run(["status", "--to", "Faulty Speaker"])
                #expect(status.status == 0 && !status.signaled && status.stdout.contains("playing"), "\(status)")
                #expect(casting.isRunning, "the cast lives on")
                casting.signal(SIGTERM)
                let result = await casting.finish(within: 15)
                #expect(result.status == 130 && !result.signaled, "\(result)")
            }
        }

        @Test func aNumberNoDoubleHoldsIsNamedInTheError() async throws {
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 20)
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_FAULT": "out-of-range", "ROUTE_PROVIDERS": "faulty"]
                let result = try await sandbox.run(["cast", wav, "--to", "Faulty Speaker"], environment: environment, timeout: 20)
                #expect(result.status != 0 && !result.signaled, "\(result)")
                #expect(result.stderr.contains("a number out of range (1e999)") && !result.stderr.contains("not valid JSON"), "\(result)")
            }
        }

        @Test(arguments: [SIGTERM, SIGHUP, SIGINT])
        func oneSignalEndsACastWithinSecondsWhenThePluginNeverConfirmsTheStop(signal: Int32) async throws {
            try await inSandbox { sandbox in
                let casting = try await castToFaultySpeaker(fault: "", in: sandbox)
                kill(casting.pid, signal)
                let signalled = ContinuousClock.now
                let result = await casting.finish(within: 20)
                #expect(ContinuousClock.now - signalled < .seconds(10), "ended \(ContinuousClock.now - signalled) after the signal")
                #expect(result.status == 130 && !result.signaled, "\(result)")
                #expect(result.stderr.contains("Faulty Speaker did not confirm the stop within 4 s"), "\(result)")
            }
        }

        @Test func thisAtThePickerMeansThisComputerAsItDoesAfterTo() async throws {
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 30)
                // A device on the network named "this", and This computer: the picker is asked, and "this" typed.
                let environment = ["ROUTE_PLUGIN_PATH": Self.testPlugins, "ROUTE_TEST_PLUGIN_DEVICE_NAME": "this", "ROUTE_PROVIDERS": "faulty,local",
                                   "ROUTE_AUDIO_SINK": "fakesink sync=true"]
                let run = try await sandbox.runInTerminal(["cast", wav, "--timeout", "1"], steps: ["wait:Number or name", "send:this\r", "wait:▶", "send:q"],
                                                          environment: environment)
                #expect(run.output.contains("▶ This computer"), "\(run.output)")
            }
        }

        @Test func aPluginThatHangsOnACallIsStoppedAndTheCastEndsWithAnError() async throws {
            try await inSandbox { sandbox in
                let casting = try await castToFaultySpeaker(fault: "hang-pause", in: sandbox)
                let pause = try await sandbox.run(["pause", "--to", "Faulty Speaker"], timeout: 20)
                #expect(pause.status != 0, "\(pause)")
                let result = await casting.finish(within: 20)
                #expect(result.status != 0, "\(result)")
                #expect((result.stderr + pause.stderr).contains("did not answer session/pause within 10 s"), "\(result)\n\(pause)")
            }
        }

        @Test func aPluginThatKeepsFailingIsQuarantinedUntilItsFileChanges() async throws {
            try await inSandbox { sandbox in
                let directory = sandbox.root + "/plugins"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let plugin = directory + "/route-provider-faulty"
                try FileManager.default.copyItem(atPath: Self.testPlugins + "/route-provider-faulty", toPath: plugin)
                let environment = ["ROUTE_PLUGIN_PATH": directory, "ROUTE_TEST_PLUGIN_FAULT": "crash-start", "ROUTE_PROVIDERS": "faulty,local"]
                let watching = try sandbox.start(["devices", "--timeout", "40"], environment: environment)
                try await Lab.until("route quarantines the plugin", within: 30) { watching.stderr.contains("not starting it again until it changes") }
                #expect(watching.stderr.contains("failed 5 times in 3 min"), "\(watching.stderr)")
                // A new version of the file lifts the quarantine.
                let text = try String(contentsOfFile: plugin, encoding: .utf8)
                try (text + "\n# repaired\n").write(toFile: plugin, atomically: false, encoding: .utf8)
                try await Lab.until("route starts it again", within: 10) { watching.stderr.contains("faulty changed; starting it again") }
                watching.signal(SIGTERM)
                _ = await watching.finish(within: 10)
            }
        }

        // MARK: Install

        @Test func anInstalledRouteFindsItsPluginsAndUninstallRemovesThem() async throws {
            try await inSandbox { sandbox in
                let prefix = sandbox.root + "/prefix"
                let install = try Lab.tool(RouteBinary.packageRoot.appendingPathComponent("scripts/install").path,
                                           ["--prefix", prefix, "--from", URL(fileURLWithPath: RouteBinary.path).deletingLastPathComponent().path])
                #expect(install.status == 0, "\(install.text)")
                for file in ["bin/route", "lib/route/route-full", "lib/route/plugins/route-provider-mpd", "share/man/man1/route.1", "share/bash-completion/completions/route",
                             "share/zsh/site-functions/_route", "share/fish/vendor_completions.d/route.fish",
                             "lib/systemd/user/route.service",
                             "share/dbus-1/services/io.github.route.Route1.service"] {
                    #expect(FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file) installed")
                }
                let unit = try String(contentsOfFile: prefix + "/lib/systemd/user/route.service", encoding: .utf8)
                #expect(unit.contains("ExecStart=\(prefix)/bin/route service"), "the unit runs the installed route: \(unit)")
                #expect(!FileManager.default.fileExists(atPath: prefix + "/lib/systemd/user/route-watch.service"), "the service replaced route-watch")
                if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") {
                    for unit in ["route.service"] {
                        let verified = try Lab.tool("/usr/bin/systemd-analyze", ["verify", "--user", prefix + "/lib/systemd/user/" + unit])
                        #expect(!verified.text.contains(unit + ":"), "systemd-analyze finds nothing wrong: \(verified.text)")
                    }
                }
                let installed = try Lab.tool("/usr/bin/env", ["-u", "ROUTE_PLUGIN_PATH", "HOME=" + sandbox.root, "ROUTE_PROVIDERS=mpd,local",
                                                              prefix + "/bin/route", "providers", "--json", "--timeout", "1"])
                let states = try JSONDecoder().decode([ProviderStatus].self, from: Data(installed.text.utf8))
                // The bundled plugin is a link to route-full, which serves it when started under its name.
                let mpd = states.first { $0.name == "mpd" }
                #expect(mpd?.path == prefix + "/lib/route/plugins/route-provider-mpd" && mpd?.state == .running, "\(installed.text)")
                #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: prefix + "/lib/route/plugins/route-provider-mpd")) == "../route-full")
                let completion = try String(contentsOfFile: prefix + "/share/bash-completion/completions/route", encoding: .utf8)
                #expect(completion.contains("complete -o filenames -F _route route") && completion.contains("--subtitles"))
                let uninstall = try Lab.tool(RouteBinary.packageRoot.appendingPathComponent("scripts/install").path, ["--prefix", prefix, "--uninstall"])
                #expect(uninstall.status == 0, "\(uninstall.text)")
                #expect(!FileManager.default.fileExists(atPath: prefix + "/bin/route")
                        && !FileManager.default.fileExists(atPath: prefix + "/lib/route/route-full")
                        && !FileManager.default.fileExists(atPath: prefix + "/lib/route/plugins/route-provider-mpd")
                        && !FileManager.default.fileExists(atPath: prefix + "/lib/systemd/user/route.service")
                        && !FileManager.default.fileExists(atPath: prefix + "/share/dbus-1/services/io.github.route.Route1.service"))
            }
        }

        private func withMPD(_ body: (Sandbox) async throws -> Void) async throws {
            try Lab.control("start-mpd")
            defer { try? Lab.control("stop-mpd") }
            _ = try? MPC.run("clear")
            try await inSandbox(body)
        }
    }
}

/// mpc, MPD's own command-line client, run in namespace B against the lab's MPD: what MPD says it does.
enum MPC {
    static func run(_ arguments: String...) throws -> String {
        let output = try Lab.tool(RouteBinary.packageRoot.appendingPathComponent("scripts/lab").path,
                                  ["exec-b", "mpc", "-h", "10.77.0.2", "-p", "6600"] + arguments)
        guard output.status == 0 else { throw ToolFailed(description: "mpc \(arguments.joined(separator: " ")): \(output.text)") }
        return output.text
    }

    static func status() throws -> String { try run("status") }
}
