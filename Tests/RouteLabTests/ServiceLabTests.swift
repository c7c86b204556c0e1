// ServiceLabTests: the route service on a private session bus — warm device lists, casts it keeps after its client
// leaves, sessions that several clients control, malformed calls, an app in Python, a killed service, and the same
// output in-process and through the service. The renderer's own SOAP answers are the truth.

import Foundation
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct ServiceLabTests {
        /// Clients reach the service: no providers of their own (the sandbox's default, local, keeps commands in-process).
        private let client = ["ROUTE_PROVIDERS": ""]

        private func tone(_ sandbox: Sandbox, seconds: Int) async throws -> String {
            let path = sandbox.root + "/tone.wav"
            try await Fixtures.gst("audiotestsrc num-buffers=\(seconds * 43) samplesperbuffer=1024 ! audioconvert ! wavenc ! filesink location=OUT", to: path)
            return path
        }

        /// `gdbus call` on the bus to the service: its exit status and output.
        private func gdbus(_ bus: PrivateSessionBus, _ path: String, _ method: String, _ arguments: [String]) throws -> ToolOutput {
            try bus.tool("gdbus", ["call", "--session", "--dest", "io.github.route.Route1", "--object-path", path, "--method", method] + arguments)
        }

        private static let manager = "/io/github/route/Route1"

        /// Starts `route service --providers upnp` on the bus and waits until it lists the renderer and has listened 3 s.
        private func startService(_ sandbox: Sandbox, _ bus: PrivateSessionBus) async throws -> RouteProcess {
            let service = try await sandbox.startService(["--providers", "upnp"], on: bus)
            try await Lab.until("the service lists the renderer and has listened 3 s", within: 12) {
                let devices = try gdbus(bus, Self.manager, "org.freedesktop.DBus.Properties.Get", ["io.github.route.Route1.Manager", "Devices"])
                let listening = try gdbus(bus, Self.manager, "org.freedesktop.DBus.Properties.Get", ["io.github.route.Route1.Manager", "Listening"])
                let seconds = Double(listening.text.filter { "0123456789.".contains($0) }) ?? 0
                return devices.text.contains("Lab Renderer") && seconds > 3.1
            }
            return service
        }

        @Test func aWarmServiceAnswersAtOnceAndKeepsADetachedCastThatOtherClientsControl() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 40)
                    let service = try await startService(sandbox, bus)
                    let environment = bus.environment.merging(client) { $1 }

                    // Warm: the whole list without discovering again (the client's deadline, not a measurement).
                    let listed = try await sandbox.run(["devices", "--json"], environment: environment, timeout: 2)
                    #expect(listed.status == 0 && listed.stdout.contains("\"Lab Renderer\""), "\(listed)")
                    let inProcess = try await sandbox.run(["devices", "--json", "--providers", "upnp"], environment: bus.environment)
                    #expect(inProcess.stdout == listed.stdout, "in-process and service lists differ:\n\(inProcess.stdout)\n---\n\(listed.stdout)")

                    // Detached: the client returns once the renderer plays, and the service plays on without it.
                    let cast = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--detach"], environment: environment)
                    #expect(cast.status == 0 && cast.stderr.contains("the route service goes on with it"), "\(cast)")
                    #expect(try Lab.transportState() == "PLAYING")
                    try await Lab.until("the renderer plays on after the client left", within: 3) { try Lab.position() >= 2 }

                    // The session's player on the desktop is the service's.
                    let player = try await bus.waitForPlayer(within: 5)
                    #expect(player == "route.service_\(service.process.processIdentifier)_1", "\(player)")

                    // Two clients control one session, both over D-Bus: the CLI (the service's sessions open no control
                    // socket) and an app.
                    let sockets = ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.runtimeDir)) ?? []).filter { $0.hasSuffix(".sock") }
                    #expect(sockets.isEmpty, "a service session opened \(sockets)")
                    // So an in-process cast asks the service whether one of route's plays there.
                    let second = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--providers", "upnp"], environment: bus.environment, timeout: 20)
                    #expect(second.status == 1 && second.stderr.contains("another `route cast` is already playing there"), "\(second)")
                    // And the service refuses a second session there.
                    let secondDetached = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--detach"], environment: environment)
                    #expect(secondDetached.status == 1 && secondDetached.stderr.contains("another `route cast` is already playing there"), "\(secondDetached)")
                    #expect(try Lab.transportState() == "PLAYING")
                    let paused = try await sandbox.run(["pause", "--to", Lab.rendererName], environment: environment)
                    #expect(paused.status == 0, "\(paused)")
                    try await Lab.until("the renderer is paused by route pause", within: 3) { try Lab.transportState() == "PAUSED_PLAYBACK" }
                    let session = "/io/github/route/Route1/session/1"
                    #expect(try gdbus(bus, session, "io.github.route.Route1.Session.Play", []).status == 0)
                    try await Lab.until("the renderer plays again by D-Bus", within: 3) { try Lab.transportState() == "PLAYING" }
                    let state = try gdbus(bus, session, "org.freedesktop.DBus.Properties.Get", ["io.github.route.Route1.Session", "State"])
                    #expect(state.text.contains("'playing'"), "\(state)")

                    // Malformed calls: named errors, nothing else disturbed.
                    let wrongTypes = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.Cast", ["42", "[]", "[]", "{}"])
                    #expect(wrongTypes.status != 0 && wrongTypes.text.contains("InvalidArgs"), "\(wrongTypes)")
                    let loud = try gdbus(bus, session, "io.github.route.Route1.Session.SetVolume", ["5.0"])
                    #expect(loud.text.contains("InvalidArgs") && loud.text.contains("SetVolume takes a number from 0.0 to 1.0"), "\(loud)")
                    let missing = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.Cast", ["Lab Renderer", "['/nowhere.wav']", "@ah []", "{}"])
                    #expect(missing.text.contains("io.github.route.Route1.Error.BadInput") && missing.text.contains("/nowhere.wav: no such file"), "\(missing)")
                    let relative = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.Cast", ["Lab Renderer", "['tone.wav']", "@ah []", "{}"])
                    #expect(relative.text.contains("is neither an absolute path nor an http(s) URL"), "\(relative)")
                    let nobody = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.Cast", ["Nobody", "['\(wav)']", "@ah []", "{}"])
                    #expect(nobody.text.contains("io.github.route.Route1.Error.NoDevice") && nobody.text.contains("no device matches \"Nobody\""), "\(nobody)")
                    // Each kind of error has its own name (NotCasting was NoDevice in the API's first release).
                    let notThere = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.Move", ["This computer", "Nobody"])
                    #expect(notThere.text.contains("io.github.route.Route1.Error.NotCasting") && notThere.text.contains("plays on \"Nobody\""), "\(notThere)")
                    // A move that does not start says where the session still plays, as one the new device refused does.
                    let nowhere = try gdbus(bus, session, "io.github.route.Route1.Session.Move", ["Nobody"])
                    #expect(nowhere.text.contains("io.github.route.Route1.Error.NoDevice") && nowhere.text.contains("it still plays on \(Lab.rendererName)"), "\(nowhere)")
                    // A prefix only one device's name begins: that device at once, for a service that has listened (not after 60 s).
                    let prefix = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.FindDevice", ["Lab Ren", "60.0"])
                    #expect(prefix.status == 0 && prefix.text.contains("'Lab Renderer'"), "\(prefix)")
                    // What one app can make the service hold is bounded: its 17th watch of the devices is refused.
                    let watches = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c", Self.watchSeventeen])
                    #expect(watches.text.contains("16 watches, then: GDBus.Error:org.freedesktop.DBus.Error.LimitsExceeded: WatchDevices: this app holds 16 watches"),
                            "\(watches)")
                    // And so are its calls waiting for answers: of 40 slow FindDevice calls sent at once, 32 are taken and 8 refused.
                    let flood = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c", Self.findForty])
                    #expect(flood.text.contains("refused 8 of 40: FindDevice: this app has 32 calls waiting for answers"), "\(flood)")
                    let option = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.Cast", ["Lab Renderer", "['\(wav)']", "@ah []", "{'loud': <true>}"])
                    #expect(option.text.contains("there is no such option"), "\(option)")
                    // Descriptors that are no file: a pipe, a directory, a socket (python3-gi sends them, as an app would).
                    let descriptors = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c", Self.badDescriptors])
                    #expect(descriptors.text.contains("pipe: GDBus.Error:io.github.route.Route1.Error.BadInput: descriptor 1 is a pipe, not a file"), "\(descriptors)")
                    #expect(descriptors.text.contains("directory: GDBus.Error:io.github.route.Route1.Error.BadInput: descriptor 1 is a directory"), "\(descriptors)")
                    #expect(descriptors.text.contains("socket: GDBus.Error:io.github.route.Route1.Error.BadInput: descriptor 1 is a socket, not a file"), "\(descriptors)")
                    #expect(descriptors.text.contains("none: GDBus.Error:org.freedesktop.DBus.Error.InvalidArgs"), "\(descriptors)")
                    #expect(try Lab.transportState() == "PLAYING", "the session played on through every bad call")

                    // The service killed mid-cast: the renderer plays on; the next command starts a new service (no
                    // activation file here: route starts it itself), which finds the renderer again.
                    kill(service.process.processIdentifier, SIGKILL)
                    _ = await service.finish(within: 5)
                    try await Lab.until("the renderer plays on without the service", within: 3) { try Lab.transportState() == "PLAYING" }
                    let again = try await sandbox.run(["devices"], environment: environment, timeout: 15)
                    #expect(again.status == 0 && again.stdout.contains("Lab Renderer"), "\(again)")
                    let status = try await sandbox.run(["status", "--to", Lab.rendererName], environment: environment)
                    #expect(status.stdout.contains("playing") || status.stderr.contains("playing"), "\(status)")
                    _ = try Lab.soap("AVTransport", "Stop")
                    try await stopService(bus)
                }
            }
        }

        @Test func anInstalledServiceIsStartedByTheBusOnFirstUse() async throws {
            try await inSandbox { sandbox in
                let prefix = sandbox.root + "/prefix"
                let install = try Lab.tool(RouteBinary.packageRoot.appendingPathComponent("scripts/install").path,
                                           ["--prefix", prefix, "--from", URL(fileURLWithPath: RouteBinary.path).deletingLastPathComponent().path])
                #expect(install.status == 0, "\(install.text)")
                // A session bus whose only service directory is the prefix's (dbus-daemon's own activation, no systemd).
                let config = sandbox.root + "/bus.conf", address = "unix:path=\(sandbox.root)/bus"
                try """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig><type>session</type><listen>\(address)</listen>
                <servicedir>\(prefix)/share/dbus-1/services</servicedir>
                <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
                <allow receive_sender="*"/></policy></busconfig>
                """.write(toFile: config, atomically: true, encoding: .utf8)
                let daemon = Process()
                daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
                daemon.arguments = ["--config-file=\(config)", "--nofork", "--nopidfile"]
                daemon.environment = ["PATH": "/usr/bin:/bin", "ROUTE_PROVIDERS": "local", "XDG_RUNTIME_DIR": sandbox.runtimeDir,
                                      "HOME": sandbox.root]
                try daemon.runUnblocked()
                defer { kill(daemon.processIdentifier, SIGKILL) }
                let bus = ["DBUS_SESSION_BUS_ADDRESS": address, "ROUTE_PROVIDERS": ""]
                try await Lab.until("the bus listens", within: 5) { FileManager.default.fileExists(atPath: sandbox.root + "/bus") }
                let listed = try await sandbox.run(["devices", "--json", "--timeout", "1"], environment: bus, timeout: 10)
                #expect(listed.status == 0 && listed.stdout.contains("\"This computer\""), "\(listed)")
                let pid = try Self.servicePID(on: address)
                let command = try String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8).replacingOccurrences(of: "\0", with: " ")
                #expect(command.hasPrefix(prefix + "/bin/route service"), "the bus started the installed route: \(command)")
                kill(pid, SIGTERM)
                try await Lab.until("the service ended", within: 8) { kill(pid, 0) != 0 }
            }
        }

        /// The process that owns io.github.route.Route1 on the bus at `address`, as the bus says.
        private static func servicePID(on address: String) throws -> Int32 {
            let owner = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(address)", "gdbus", "call", "--session", "--dest",
                                                      "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                                                      "org.freedesktop.DBus.GetConnectionUnixProcessID", "io.github.route.Route1"])
            // "(uint32 1234,)"
            return try #require(Int32(owner.text.filter(\.isNumber).dropFirst(2)), "\(owner)")
        }

        /// The API page's transcript, run against the service as the page says it was (a file named song.wav, a fresh
        /// service): every command prints what the page shows. A read is asked again for up to 5 s until it does (the
        /// page shows each a moment after the call before it: a Cast answers before its device plays).
        @Test func theAPIPagesTranscriptIsWhatTheServicePrints() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            let page = try String(contentsOf: RouteBinary.packageRoot.appendingPathComponent("Documentation/DBUS-API.md"), encoding: .utf8)
            let steps = APIPageTranscript.steps(in: page, after: "## A session, from the shell")
            #expect(steps.count >= 8 && steps.filter(\.meanwhile).count == 1, "the page's transcript, as read: \(steps)")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    try await Fixtures.gst("audiotestsrc num-buffers=\(40 * 43) samplesperbuffer=1024 ! audioconvert ! wavenc ! filesink location=OUT",
                                           to: sandbox.root + "/song.wav")
                    _ = try await startService(sandbox, bus)
                    let here = { (text: String) in text.replacingOccurrences(of: "/home/me/", with: sandbox.root + "/") }
                    // What runs meanwhile starts first, in the background (at most 60 s, should the test hang), and is read at the end.
                    let log = sandbox.root + "/meanwhile.log"
                    let meanwhile = steps.first(where: \.meanwhile)
                    let watcher = Process()
                    if let meanwhile {
                        _ = FileManager.default.createFile(atPath: log, contents: nil)
                        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
                        watcher.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                        watcher.arguments = ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/bin/sh", "-c", "exec timeout 60 " + here(meanwhile.command)]
                        watcher.standardOutput = output
                        watcher.standardError = output
                        try watcher.runUnblocked()
                    }
                    defer { if watcher.isRunning { watcher.terminate() } }
                    for step in steps where !step.meanwhile {
                        let expected = step.expected.map(here)
                        var printed: [String] = []
                        let deadline = ContinuousClock.now + .seconds(step.command.contains("get-property") ? 5 : 0)
                        repeat {
                            let output = try bus.tool("/bin/sh", ["-c", here(step.command)])
                            printed = output.text.components(separatedBy: "\n").filter { !$0.isEmpty }
                            if APIPageTranscript.matches(expected, printed) { break }
                            try await Task.sleep(for: .milliseconds(100))
                        } while ContinuousClock.now < deadline
                        #expect(APIPageTranscript.matches(expected, printed),
                                "$ \(step.command)\nthe page says:\n\(expected.joined(separator: "\n"))\nthe service printed:\n\(printed.joined(separator: "\n"))")
                    }
                    if let meanwhile {
                        try await Lab.until("the session's end is heard meanwhile", within: 5) {
                            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("Ended")
                        }
                        let heard = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").components(separatedBy: "\n")
                        for line in meanwhile.expected.map(here) {
                            #expect(heard.contains { APIPageTranscript.matches(line, $0) }, "meanwhile, the page says:\n\(line)\nheard:\n\(heard.joined(separator: "\n"))")
                        }
                    }
                    try await stopService(bus)
                }
            }
        }

        /// Ends the service that owns the name (one a client started), as systemd would: SIGTERM, then its name is gone.
        private func stopService(_ bus: PrivateSessionBus) async throws {
            let pid = try Self.servicePID(on: bus.address)
            kill(pid, SIGTERM)
            try await Lab.until("the started service ended", within: 8) { kill(pid, 0) != 0 }
        }

        /// Sends a pipe, a directory, a socket and no descriptor at all to Cast; prints each answer's error.
        private static let badDescriptors = """
        import os, socket
        from gi.repository import Gio, GLib
        bus = Gio.bus_get_sync(Gio.BusType.SESSION)
        def cast(label, fd, index=0):
            fds = Gio.UnixFDList.new()
            if fd is not None: fds.append(fd)
            try:
                bus.call_with_unix_fd_list_sync("io.github.route.Route1", "/io/github/route/Route1", "io.github.route.Route1.Manager", "Cast",
                    GLib.Variant("(sasaha{sv})", ("Lab Renderer", [], [index], {})), None, Gio.DBusCallFlags.NONE, 10000, fds)
                print(label + ": accepted")
            except GLib.Error as e:
                print(label + ": " + e.message)
        r, w = os.pipe(); cast("pipe", r)
        cast("directory", os.open("/", os.O_RDONLY | os.O_DIRECTORY))
        s = socket.socket(); cast("socket", s.fileno())
        cast("none", None, 3)
        """

        @Test func aCastSaysTheSameInProcessAndThroughTheServiceAndStopsWithItsTerminal() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 3)
                    let notes = sandbox.root + "/notes.txt"
                    try "not media at all".write(toFile: notes, atomically: true, encoding: .utf8)
                    let service = try await startService(sandbox, bus)
                    let environment = bus.environment.merging(client) { $1 }
                    // A queue with a file that cannot play: the same lines, in the same order, and the same exit code.
                    let inProcess = try await sandbox.run(["cast", wav, notes, "--to", Lab.rendererName, "--providers", "upnp"],
                                                          environment: bus.environment)
                    let throughService = try await sandbox.run(["cast", wav, notes, "--to", Lab.rendererName], environment: environment)
                    #expect(inProcess.status == 3 && throughService.status == 3, "\(inProcess)\n\(throughService)")
                    #expect(inProcess.stderr == throughService.stderr && inProcess.stdout == throughService.stdout,
                            "in-process:\n\(inProcess.stderr)\nthrough the service:\n\(throughService.stderr)")
                    #expect(throughService.stderr.contains("skipping notes") && throughService.stdout.contains("ended: tone"), "\(throughService)")
                    // SIGTERM stops the device and exits 130, as in-process.
                    let long = try await tone(sandbox, seconds: 40)
                    let cast = try sandbox.start(["cast", long, "--to", Lab.rendererName], environment: environment)
                    try await Lab.until("the service's cast plays", within: 8) { cast.stdout.contains("playing: tone") }
                    let firstServer = URL(string: try Lab.trackURI())?.port
                    kill(cast.process.processIdentifier, SIGTERM)
                    let stopped = await cast.finish(within: 8)
                    #expect(stopped.status == 130 && stopped.stdout.contains("stopped: tone"), "\(stopped)")
                    #expect(try Lab.transportState() == "STOPPED")
                    // A client that dies without a word: its session ends with it (the service stops the device).
                    let killed = try sandbox.start(["cast", long, "--to", Lab.rendererName], environment: environment)
                    try await Lab.until("the cast plays again", within: 8) { killed.stdout.contains("playing: tone") }
                    #expect(try Lab.transportState() == "PLAYING")
                    let secondServer = URL(string: try Lab.trackURI())?.port
                    #expect(firstServer != nil && secondServer == firstServer, "one media server serves every session")
                    kill(killed.process.processIdentifier, SIGKILL)
                    _ = await killed.finish(within: 5)
                    try await Lab.until("the service stopped the renderer of the client that left", within: 5) { try Lab.transportState() == "STOPPED" }
                    kill(service.process.processIdentifier, SIGTERM)
                    let serviceEnded = await service.finish(within: 8)
                    #expect(serviceEnded.status == 0, "\(serviceEnded)")
                }
            }
        }

        /// A renderer unplugged mid-session (SIGKILL, no byebye): the session ends with the line and exit code an in-process
        /// cast gives, its object and its Ended reason say why, and the service goes on (another session plays).
        @Test func aRendererThatVanishesMidSessionEndsItAndNothingElse() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            defer { try? Lab.control("start-renderer") }
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 40)
                    let service = try await startService(sandbox, bus)
                    let environment = bus.environment.merging(client) { $1 }
                    // What the service says on the bus, as any client sees it.
                    let said = sandbox.root + "/monitor.txt"
                    _ = FileManager.default.createFile(atPath: said, contents: nil)
                    let monitor = Process()
                    monitor.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
                    monitor.arguments = ["-oL", "gdbus", "monitor", "--session", "--dest", "io.github.route.Route1"]
                    monitor.environment = ProcessInfo.processInfo.environment.merging(bus.environment) { $1 }
                    monitor.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: said))
                    monitor.standardError = FileHandle.nullDevice
                    try monitor.runUnblocked()
                    defer {
                        // SIGKILL: at once, whatever it is doing.
                        kill(monitor.processIdentifier, SIGKILL)
                        waitForExit(monitor, seconds: 5)
                    }
                    let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName], environment: environment)
                    try await Lab.until("the service's cast plays", within: 8) { cast.stdout.contains("playing: tone") }
                    try Lab.control("kill-renderer", "--hard")
                    let ended = await cast.finish(within: 25)
                    #expect(ended.status == 1, "\(ended)")
                    #expect(ended.stderrLines.count == 1 && ended.stderr.contains("Lab Renderer stopped answering"), "\(ended)")
                    try await Lab.until("the session's Ended signal says it failed", within: 5) {
                        (try? String(contentsOfFile: said, encoding: .utf8))?.contains("Session.Ended ('failed', 'io.github.route.Route1.Error.") == true
                    }
                    let sessions = try gdbus(bus, Self.manager, "org.freedesktop.DBus.Properties.Get", ["io.github.route.Route1.Manager", "Sessions"])
                    #expect(sessions.status == 0 && !sessions.text.contains("/session/"), "the ended session is gone: \(sessions.text)")
                    // Nothing else disturbed: the renderer back, a new session plays through the same service.
                    try Lab.control("start-renderer")
                    try await Lab.until("the service lists the renderer again", within: 15) {
                        try gdbus(bus, Self.manager, "org.freedesktop.DBus.Properties.Get", ["io.github.route.Route1.Manager", "Devices"])
                            .text.contains("Lab Renderer")
                    }
                    let again = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--detach"], environment: environment, timeout: 30)
                    #expect(again.status == 0, "\(again)")
                    #expect(try Lab.transportState() == "PLAYING")
                    _ = try await sandbox.run(["stop", "--to", Lab.rendererName], environment: environment)
                    kill(service.process.processIdentifier, SIGTERM)
                    let serviceEnded = await service.finish(within: 8)
                    #expect(serviceEnded.status == 0, "\(serviceEnded)")
                }
            }
        }

        @Test func theServiceCastsToEveryKindOfDeviceAndEachSaysItPlays() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            let rygel = try Lab.startRygel()
            try CastReceiverLab.start([])
            try Lab.control("start-mpd")
            _ = try? MPC.run("clear")
            defer {
                try? Lab.control("stop-rygel")
                try? Lab.control("stop-cast")
                try? Lab.control("stop-mpd")
            }
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 30)
                    let environment = bus.environment.merging(client) { $1 }
                    let service = try await sandbox.startService([], on: bus, environment: client)
                    // Warm: every device there at once.
                    let wanted = ["\"Lab Renderer\"", "\"\(Lab.rygelName)\"", "\"Lab Cast\"", "\"Lab MPD"]
                    var listed = ""
                    let deadline = ContinuousClock.now + .seconds(15)
                    while !wanted.allSatisfy({ listed.contains($0) }), ContinuousClock.now < deadline {
                        listed = try await sandbox.run(["devices", "--json", "--timeout", "0"], environment: environment).stdout
                        try await Task.sleep(for: .milliseconds(200))
                    }
                    #expect(wanted.allSatisfy { listed.contains($0) }, "the service lists the four devices: \(listed)")
                    // The address of a listed device's route finds that device, not one of its own named after the address.
                    let byAddress = try gdbus(bus, Self.manager, "io.github.route.Route1.Manager.FindDevice", ["10.77.0.2:8009", "3.0"])
                    #expect(byAddress.text.contains("'Lab Cast'") && !byAddress.text.contains("Cast receiver at"), "\(byAddress)")
                    let targets: [(name: String, plays: () throws -> Bool)] = [
                        (Lab.rendererName, { try Lab.transportState() == "PLAYING" }),
                        (Lab.rygelName, { try Lab.transportState(at: rygel) == "PLAYING" }),
                        ("Lab Cast", { CastReceiverLab.latestMedia()?["playerState"] as? String == "PLAYING" }),
                        ("Lab MPD", { try MPC.status().contains("[playing]") }),
                    ]
                    for target in targets {
                        let cast = try await sandbox.run(["cast", wav, "--to", target.name, "--detach"], environment: environment, timeout: 30)
                        #expect(cast.status == 0, "\(target.name): \(cast)")
                        try await Lab.until("\(target.name) says it plays", within: 5) { try target.plays() }
                        let stopped = try await sandbox.run(["stop", "--to", target.name], environment: environment)
                        #expect(stopped.status == 0, "\(target.name): \(stopped)")
                        try await Lab.until("\(target.name) stops", within: 8) { try !target.plays() }
                    }
                    kill(service.process.processIdentifier, SIGTERM)
                    let ended = await service.finish(within: 10)
                    #expect(ended.status == 0, "\(ended)")
                }
            }
        }

        @Test func theServiceMirrorsAnotherControllersSessionAndRouteWatchSaysSo() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let service = try await startService(sandbox, bus)
                    let environment = bus.environment.merging(client) { $1 }
                    let watch = try sandbox.start(["watch", "--json"], environment: environment)
                    let server = try sandbox.start(["serve", "--bind", "10.77.0.1", try await tone(sandbox, seconds: 30)])
                    try await Lab.until("the file is served", within: 15) { server.stdout.contains("http://") }
                    let url = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("http://") }.map(String.init))
                    // Another control point plays on the renderer: the service mirrors it (no route watch process of its own).
                    try Lab.playAsAnotherController(url)
                    let player = try await bus.waitForPlayer(within: 6)
                    #expect(player.hasPrefix("route.watch_"), "\(player)")
                    let owner = try bus.tool("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                                       "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.mpris.MediaPlayer2." + player])
                    #expect(owner.text.contains(" \(service.process.processIdentifier),"), "the mirror is the service's: \(owner.text)")
                    _ = try bus.playerctl("-p", player, "pause")
                    try await Lab.until("playerctl pause paused the renderer", within: 3) { try Lab.transportState() == "PAUSED_PLAYBACK" }
                    _ = try Lab.soap("AVTransport", "Stop")
                    try await Lab.until("the mirror left the bus when the renderer stopped", within: 3) { try bus.routePlayers().isEmpty }
                    try await Lab.until("route watch said both", within: 3) {
                        watch.stdout.contains("\"event\":\"mirroring\"") && watch.stdout.contains("\"event\":\"ended\"")
                    }
                    #expect(watch.stdout.contains("\"player\":\"org.mpris.MediaPlayer2.\(player)\""), "\(watch.stdout)")
                    kill(watch.process.processIdentifier, SIGTERM)
                    #expect(await watch.finish(within: 8).status == 130)
                    kill(server.process.processIdentifier, SIGTERM)
                    _ = await server.finish(within: 5)
                    kill(service.process.processIdentifier, SIGTERM)
                    let serviceEnded = await service.finish(within: 8)
                    #expect(serviceEnded.status == 0, "\(serviceEnded)")
                }
            }
        }

        @Test func theReadmesSwiftClientExampleRunsAsWritten() async throws {
            let root = RouteBinary.packageRoot
            let source = try String(contentsOf: root.appendingPathComponent("examples/RouteClientExample/main.swift"), encoding: .utf8)
            let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            let body = String(source.drop { $0 != "\n" }.dropFirst())
            #expect(readme.contains("```swift\n" + body + "```"), "the README shows examples/RouteClientExample/main.swift as it is")
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 20)
                    let service = try await startService(sandbox, bus)
                    let example = URL(fileURLWithPath: RouteBinary.path).deletingLastPathComponent().appendingPathComponent("route-client-example").path
                    let ran = try await offThePool {
                        try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", example, wav, Lab.rendererName])
                    }
                    #expect(ran.status == 0, "\(ran.text)")
                    #expect(ran.text.contains("Lab Renderer - upnp") && ran.text.contains("playing tone on Lab Renderer")
                            && ran.text.contains("ended: stopped"), "\(ran.text)")
                    #expect(try Lab.transportState() == "STOPPED")
                    kill(service.process.processIdentifier, SIGTERM)
                    let serviceEnded = await service.finish(within: 8)
                    #expect(serviceEnded.status == 0, "\(serviceEnded)")
                }
            }
        }

        @Test func anAppInPythonListsDevicesAndCastsAFileItOpened() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 20)
                    let service = try await startService(sandbox, bus)
                    let script = RouteBinary.packageRoot.appendingPathComponent("examples/route-cast.py").path
                    let listed = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", script])
                    #expect(listed.status == 0 && listed.text.contains("Lab Renderer") && listed.text.contains("upnp"), "\(listed)")
                    let cast = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", script, wav, Lab.rendererName])
                    #expect(cast.status == 0 && cast.text.contains("session/1: playing"), "\(cast)")
                    try await Lab.until("the renderer plays the file the app sent", within: 3) { try Lab.transportState() == "PLAYING" }
                    #expect(try Lab.trackURI().hasPrefix("http://10.77.0.1:"), "served by the service")
                    // The service's session, as any client sees it.
                    let status = try await sandbox.run(["status", "--to", Lab.rendererName], environment: bus.environment.merging(client) { $1 })
                    #expect(status.stdout.contains("tone"), "\(status)")
                    // Interrupted: the service stops its sessions' devices and ends.
                    kill(service.process.processIdentifier, SIGINT)
                    let ended = await service.finish(within: 8)
                    #expect(ended.status == 0, "\(ended)")
                    #expect(try Lab.transportState() == "STOPPED")
                }
            }
        }

        @Test func aSessionBusAddressThatLeadsNowhereListsDevicesInProcess() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await inSandbox { sandbox in
                // What an SSH or tmux session keeps from a login that has ended: a bus socket nobody listens on.
                let gone = sandbox.root + "/gone-bus"
                let made = try Lab.tool("/usr/bin/python3", ["-c", "import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()", gone])
                #expect(made.status == 0, "\(made)")
                let listed = try await sandbox.run(["devices", "--json", "--timeout", "3"],
                                                   environment: ["ROUTE_PROVIDERS": "", "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(gone)"])
                #expect(listed.status == 0 && listed.stdout.contains("\"Lab Renderer\""), "\(listed)")
            }
        }

        @Test func aStopWhileTheSessionLoadsStopsTheDeviceAndADetachIsSaid() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 20)
                    let service = try await startService(sandbox, bus)
                    func app(_ mode: String) throws -> ToolOutput {
                        try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c", Self.sessionCalls,
                                                      mode, Lab.rendererName, wav])
                    }
                    // Stop as soon as Cast answers, while the renderer is still taking the file: each time the device
                    // stops, and stays stopped.
                    for attempt in 1...4 {
                        let stopped = try app("stop")
                        #expect(stopped.status == 0 && stopped.text.contains("stopped /io/github/route/Route1/session/"), "try \(attempt): \(stopped)")
                        try await Lab.until("try \(attempt): the session has ended", within: 8) {
                            !(try gdbus(bus, Self.manager, "org.freedesktop.DBus.Properties.Get", ["io.github.route.Route1.Manager", "Sessions"]))
                                .text.contains("/session/")
                        }
                        let watched = ContinuousClock.now + .seconds(3)
                        while ContinuousClock.now < watched {
                            let state = try Lab.transportState()
                            guard state != "PLAYING" else {
                                Issue.record("try \(attempt): the renderer plays the stopped session's media, and no session is left to stop it")
                                _ = try Lab.soap("AVTransport", "Stop")
                                break
                            }
                            try await Task.sleep(for: .milliseconds(100))
                        }
                    }
                    // Detach says that the session no longer ends with its client.
                    let detached = try app("detach")
                    #expect(detached.status == 0 && detached.text.contains("EndsWithClient False"), "\(detached)")
                    kill(service.process.processIdentifier, SIGTERM)
                    let ended = await service.finish(within: 10)
                    #expect(ended.status == 0, "\(ended)")
                }
            }
        }

        /// An app's calls on a session, in Python: `stop` casts and stops at once; `detach` casts, detaches, and prints
        /// the EndsWithClient that PropertiesChanged says (within 5 s), then stops.
        private static let sessionCalls = """
            import sys
            from gi.repository import Gio, GLib
            mode, device, media = sys.argv[1:4]
            bus = Gio.bus_get_sync(Gio.BusType.SESSION)
            def call(path, interface, method, arguments=None):
                return bus.call_sync("io.github.route.Route1", path, interface, method, arguments, None, Gio.DBusCallFlags.NONE, 30000, None)
            options = {"endsWithClient": GLib.Variant("b", mode == "detach")}
            path = call("/io/github/route/Route1", "io.github.route.Route1.Manager", "Cast",
                        GLib.Variant("(sasaha{sv})", (device, [media], [], options))).unpack()[0]
            session = "io.github.route.Route1.Session"
            if mode == "detach":
                loop = GLib.MainLoop()
                def changed(connection, sender, path, interface, signal, parameters):
                    name, values, _ = parameters.unpack()
                    if name == session and "EndsWithClient" in values:
                        print("EndsWithClient", values["EndsWithClient"])
                        loop.quit()
                bus.signal_subscribe(None, "org.freedesktop.DBus.Properties", "PropertiesChanged", path, None, Gio.DBusSignalFlags.NONE, changed)
                call(path, session, "Detach")
                GLib.timeout_add_seconds(5, loop.quit)
                loop.run()
            call(path, session, "Stop")
            print("stopped", path)
            """

        /// A Cast call from an app in Python: `fd` sends the open file, `path` names it; `subtitles` names a subtitles file.
        private static let castCall = """
            import sys
            from gi.repository import Gio, GLib
            device, how, media, subtitles, then = sys.argv[1:6]
            options = {"endsWithClient": GLib.Variant("b", False)}
            if subtitles:
                options["subtitles"] = GLib.Variant("s", subtitles)
            descriptors = Gio.UnixFDList.new()
            opened = open(media, "rb")  # kept open until the call has sent it
            paths, handles = ([media], []) if how == "path" else ([], [descriptors.append(opened.fileno())])
            bus = Gio.bus_get_sync(Gio.BusType.SESSION)
            try:
                reply, _ = bus.call_with_unix_fd_list_sync("io.github.route.Route1", "/io/github/route/Route1", "io.github.route.Route1.Manager",
                    "Cast", GLib.Variant("(sasaha{sv})", (device, paths, handles, options)), None, Gio.DBusCallFlags.NONE, 30000, descriptors)
                print("cast", reply.unpack()[0])
                if then:  # a method of the session this very connection made
                    bus.call_sync("io.github.route.Route1", reply.unpack()[0], "io.github.route.Route1.Session", then, None, None,
                        Gio.DBusCallFlags.NONE, 30000, None)
                    print("then", then, "ok")
            except GLib.Error as error:
                sys.exit(error.message)
            """

        /// One app's 40 FindDevice calls for a device that is not there (each waits its 3 s), sent without waiting for any.
        private static let findForty = """
            from gi.repository import Gio, GLib
            bus = Gio.bus_get_sync(Gio.BusType.SESSION)
            loop, answers = GLib.MainLoop(), []
            def done(connection, result):
                try:
                    connection.call_finish(result)
                    answers.append(None)
                except GLib.Error as error:
                    answers.append(error.message)
                if len(answers) == 40:
                    loop.quit()
            for _ in range(40):
                bus.call("io.github.route.Route1", "/io/github/route/Route1", "io.github.route.Route1.Manager", "FindDevice",
                    GLib.Variant("(sd)", ("Nobody at all", 3.0)), None, Gio.DBusCallFlags.NONE, 30000, None, done)
            GLib.timeout_add_seconds(20, loop.quit)
            loop.run()
            refused = [a for a in answers if a and "LimitsExceeded" in a]
            print("refused %d of %d: %s" % (len(refused), len(answers), refused[0].split("LimitsExceeded: ")[-1] if refused else ""))
            """

        /// One app's WatchDevices calls on one connection until one is refused.
        private static let watchSeventeen = """
            from gi.repository import Gio, GLib
            bus = Gio.bus_get_sync(Gio.BusType.SESSION)
            for count in range(17):
                try:
                    bus.call_sync("io.github.route.Route1", "/io/github/route/Route1", "io.github.route.Route1.Manager", "WatchDevices",
                        None, None, Gio.DBusCallFlags.NONE, 10000, None)
                except GLib.Error as error:
                    print("%d watches, then: %s" % (count, error.message))
                    break
            """

        /// One call to the service: PATH INTERFACE METHOD SIGNATURE ARGUMENTS (a JSON list); prints "ok METHOD" or the error.
        private static let serviceCall = """
            import json, sys
            from gi.repository import Gio, GLib
            path, interface, method, signature, arguments = sys.argv[1:6]
            bus = Gio.bus_get_sync(Gio.BusType.SESSION)
            try:
                parameters = GLib.Variant(signature, tuple(json.loads(arguments))) if signature else None
                bus.call_sync("io.github.route.Route1", path, interface, method, parameters, None, Gio.DBusCallFlags.NONE, 30000, None)
                print("ok", method)
            except GLib.Error as error:
                sys.exit(error.message)
            """

        @Test func aSandboxedAppCastsWhatItOpensAndNamesNoFileOfTheHost() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = try await tone(sandbox, seconds: 20)
                    // The app's data: a "video" with "subtitles" beside it that are a link to a key of the host.
                    for folder in ["host", "app"] { try FileManager.default.createDirectory(atPath: sandbox.root + "/" + folder, withIntermediateDirectories: true) }
                    let key = try sandbox.file("host/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
                    try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/app/clip.vtt", withDestinationPath: key)
                    let info = try sandbox.file("flatpak-info", "[Application]\nname=org.example.Player\n")
                    let service = try await startService(sandbox, bus)
                    // A Flatpak-like sandbox: its own root, /.flatpak-info in it, the app's folder and the bus.
                    func call(_ how: String, _ media: String, subtitles: String = "", then: String = "", sandboxed: Bool) throws -> ToolOutput {
                        try run(["/usr/bin/python3", "-c", Self.castCall, Lab.rendererName, how, media, subtitles, then], sandboxed: sandboxed)
                    }
                    func run(_ python: [String], sandboxed: Bool) throws -> ToolOutput {
                        guard sandboxed else { return try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)"] + python) }
                        return try Lab.tool("/usr/bin/bwrap", [
                            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                            "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
                            "--ro-bind", info, "/.flatpak-info", "--bind", sandbox.root, sandbox.root, "--bind", bus.directory, bus.directory,
                            "--setenv", "DBUS_SESSION_BUS_ADDRESS", bus.address, "--"] + python)
                    }
                    let named = try call("path", wav, sandboxed: true)
                    #expect(named.status != 0 && named.text.contains("sandboxed app may not name files"), "\(named)")
                    let subtitled = try call("fd", wav, subtitles: sandbox.root + "/app/clip.vtt", sandboxed: true)
                    #expect(subtitled.status != 0 && subtitled.text.contains("sandboxed app"), "\(subtitled)")
                    // From an app outside a sandbox, "subtitles" must be subtitles.
                    let key2 = try call("path", wav, subtitles: sandbox.root + "/app/clip.vtt", sandboxed: false)
                    #expect(key2.status != 0 && key2.text.contains("id_rsa") && key2.text.contains("subtitles"), "\(key2)")
                    #expect(try Lab.transportState() != "PLAYING", "a refused cast played")
                    // What the sandboxed app opened and passed plays.
                    // What the sandboxed app opened and passed plays, and the app controls its own cast.
                    let opened = try call("fd", wav, then: "Detach", sandboxed: true)
                    #expect(opened.status == 0 && opened.text.contains("cast /io/github/route/Route1/session/"), "\(opened)")
                    #expect(opened.text.contains("then Detach ok"), "\(opened)")
                    try await Lab.until("the renderer plays the file the sandboxed app sent", within: 5) { try Lab.transportState() == "PLAYING" }
                    // What a sandboxed app may not do: control or move a cast it did not start, or send the desktop's sound.
                    let session = opened.text.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("/io/github/route/Route1/session/") }.map(String.init) ?? ""
                    let manager = "/io/github/route/Route1", managerInterface = "io.github.route.Route1.Manager"
                    for (path, interface, method, signature, arguments, error, refusal) in [
                        (session, "io.github.route.Route1.Session", "Pause", "", "[]", "AccessDenied", "controls only the casts it started"),
                        (session, "io.github.route.Route1.Session", "Move", "(s)", #"["This computer"]"#, "AccessDenied", "controls only the casts it started"),
                        // By the manager, another app's cast is not even found for it.
                        (manager, managerInterface, "Move", "(ss)", #"["This computer", "Lab Renderer"]"#, "NotCasting", "moves only the casts it started"),
                        (manager, managerInterface, "StartSink", "(sa{sv})", #"["Lab Renderer", {}]"#, "AccessDenied", "may not send the desktop's sound"),
                        (manager, managerInterface, "StopSink", "(s)", #"["Lab Renderer"]"#, "AccessDenied", "may not send the desktop's sound"),
                    ] {
                        let refused = try run(["/usr/bin/python3", "-c", Self.serviceCall, path, interface, method, signature, arguments], sandboxed: true)
                        #expect(refused.status != 0 && refused.text.contains(error) && refused.text.contains(refusal), "\(method): \(refused)")
                    }
                    #expect(try Lab.transportState() == "PLAYING", "a refused call reached the renderer")
                    // An app outside a sandbox controls every cast of the service (as the desktop's own controls do).
                    let paused = try run(["/usr/bin/python3", "-c", Self.serviceCall, session, "io.github.route.Route1.Session", "Pause", "", "[]"], sandboxed: false)
                    #expect(paused.status == 0 && paused.text.contains("ok Pause"), "\(paused)")
                    try await Lab.until("the renderer pauses for an app outside a sandbox", within: 5) { try Lab.transportState() == "PAUSED_PLAYBACK" }
                    kill(service.process.processIdentifier, SIGTERM)
                    let ended = await service.finish(within: 10)
                    #expect(ended.status == 0, "\(ended)")
                }
            }
        }
    }
}
