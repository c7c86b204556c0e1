// PickerLabTests: `route pick` in the route service's picker window, under Xvfb with the accessibility bus — the rows
// as a screen reader reads them (AT-SPI), the keyboard (xdotool: typing filters, Enter chooses, Escape cancels), a
// device that cannot play the kind asked for greyed; and the terminal picker where there is no display.

import Foundation
import RouteTestSupport
import Synchronization
import Testing

/// An X server (Xvfb) and the accessibility bus of a session bus, for GUI tests; `stop()` ends them.
final class GUISession: Sendable {
    let display: String
    private let xvfb: Process
    private let accessibility: Process
    private let bus: PrivateSessionBus

    init(bus: PrivateSessionBus) async throws {
        self.bus = bus
        // A display number of this test's own (Xvfb's socket is in /tmp/.X11-unix, shared with other tests).
        var number = 90 + Int(getpid() % 200)
        while FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") { number += 1 }
        display = ":\(number)"
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        server.arguments = [display, "-nolisten", "tcp", "-screen", "0", "800x600x24"]
        // Not the test's output: a server that outlived the test would hold it open.
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.runUnblocked()
        xvfb = server
        // The accessibility bus under the session's XDG_RUNTIME_DIR (a path socket, reachable from every namespace),
        // announced on Xvfb's display, not on any other.
        let launcher = Process()
        launcher.executableURL = URL(fileURLWithPath: "/usr/libexec/at-spi-bus-launcher")
        launcher.arguments = ["--launch-immediately"]
        launcher.environment = ProcessInfo.processInfo.environment.merging(bus.environment.merging(
            ["XDG_RUNTIME_DIR": bus.directory, "DISPLAY": display, "WAYLAND_DISPLAY": ""]) { $1 }) { $1 }
        launcher.standardOutput = FileHandle.nullDevice
        launcher.standardError = FileHandle.nullDevice
        accessibility = launcher
        do {
            let socket = "/tmp/.X11-unix/X\(number)"
            try await Lab.until("Xvfb listens on \(display)", within: 10) { FileManager.default.fileExists(atPath: socket) }
            try launcher.runUnblocked()
            try await Lab.until("the accessibility bus is on the session bus", within: 10) {
                try bus.tool("gdbus", ["call", "--session", "--dest", "org.a11y.Bus", "--object-path", "/org/a11y/bus",
                                       "--method", "org.a11y.Bus.GetAddress"]).status == 0
            }
        } catch {
            stop()
            throw error
        }
    }

    /// What a GTK app and an AT-SPI reader need: the display, the session bus, cairo drawing (no software GL).
    var environment: [String: String] {
        // Only Xvfb: not a Wayland display or an X authority the runner may have.
        bus.environment.merging(["DISPLAY": display, "WAYLAND_DISPLAY": "", "XAUTHORITY": "", "GSK_RENDERER": "cairo",
                                 "XDG_RUNTIME_DIR": bus.directory]) { $1 }
    }

    /// The picker's rows as Tests/LabTools/picker-rows reads them, once one names `text`.
    func rows(until text: String) throws -> [[String: Any]] {
        let tool = RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/picker-rows").path
        let output = try Lab.tool("/usr/bin/env", environment.map { "\($0.key)=\($0.value)" } + [tool, "--until", text, "--timeout", "15"])
        return output.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Keys to the picker window (found by its title), as a person types them.
    func keys(_ arguments: [String], window title: String = "^Play") throws {
        // Focused first, then typed as a keyboard types (XTEST), not sent to the window (synthetic events).
        let focus = try Lab.tool("/usr/bin/env", ["DISPLAY=\(display)", "timeout", "10", "xdotool", "search", "--sync", "--onlyvisible",
                                                  "--name", title, "windowfocus", "--sync"])
        let result = try Lab.tool("/usr/bin/env", ["DISPLAY=\(display)", "timeout", "10", "xdotool"] + arguments)
        if focus.status != 0 || result.status != 0 { Issue.record("xdotool \(arguments.joined(separator: " ")): \(focus.text) \(result.text)") }
    }

    func stop() {
        // at-spi2-registryd detaches from the launcher and outlives it: ended by the pid its bus (the accessibility
        // bus, whose address the session bus gives) says owns its name.
        if let reply = try? bus.tool("gdbus", ["call", "--session", "--dest", "org.a11y.Bus", "--object-path", "/org/a11y/bus",
                                              "--method", "org.a11y.Bus.GetAddress"]).text,
           let address = reply.split(separator: "'").dropFirst().first,
           let owner = try? Lab.tool("/usr/bin/gdbus", ["call", "--address", String(address), "--dest", "org.freedesktop.DBus",
                                                       "--object-path", "/org/freedesktop/DBus", "--method",
                                                       "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.a11y.atspi.Registry"]).text,
           let pid = Int32(owner.filter(\.isNumber).dropFirst(2)) {
            kill(pid, SIGKILL)
        }
        // SIGKILL: a child Foundation starts has SIGTERM blocked.
        for process in [accessibility, xvfb] where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            waitForExit(process, seconds: 5)
        }
    }
}

/// The desktop's notification server on a session bus (Tests/LabTools/notification-server): what it has been asked to
/// show; `stop()` ends it.
final class NotificationServer: Sendable {
    private let process: Process
    private let output: String
    private let taken = Mutex(0)

    init(bus: PrivateSessionBus, root: String) throws {
        output = root + "/notifications.txt"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/notification-server").path)
        server.environment = ProcessInfo.processInfo.environment.merging(bus.environment) { $1 }
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        server.standardError = server.standardOutput
        try server.runUnblocked()
        process = server
        let deadline = Date().addingTimeInterval(10)
        while lines().first != "ready" {
            guard Date() < deadline, server.isRunning else {
                stop()
                throw ToolFailed(description: "the notification server did not start: \(lines())")
            }
            usleep(50_000)
        }
    }

    private func lines() -> [String] {
        ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Every notification shown so far, oldest first.
    var received: [[String: Any]] {
        lines().dropFirst().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The next notification not yet returned, waiting for it up to `seconds`.
    func next(within seconds: Double) async throws -> [String: Any] {
        try await Lab.until("a notification", within: seconds) { received.count > taken.withLock { $0 } }
        return taken.withLock { count in
            count += 1
            return received[count - 1]
        }
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        waitForExit(process, seconds: 5)
    }
}

extension LabTests {
    @Suite struct PickerLabTests {
        /// One app's two PickDevice calls on one connection, then Close of the first request.
        private static let pickTwice = """
            from gi.repository import Gio, GLib
            bus = Gio.bus_get_sync(Gio.BusType.SESSION)
            def pick():
                return bus.call_sync("io.github.route.Route1", "/io/github/route/Route1", "io.github.route.Route1.Manager", "PickDevice",
                    GLib.Variant("(sa{sv})", ("", {})), None, Gio.DBusCallFlags.NONE, 10000, None).unpack()[0]
            first = pick()
            print("first", first)
            try:
                print("second opened", pick())
            except GLib.Error as error:
                print("second:", error.message)
            bus.call_sync("io.github.route.Route1", first, "io.github.route.Route1.Request", "Close", None, None, Gio.DBusCallFlags.NONE, 10000, None)
            print("closed")
            """

        @Test func theWindowListsTheLabsDevicesAndTheKeyboardChoosesOrCancels() async throws {
            try Lab.control("start-mpd")
            defer { try? Lab.control("stop-mpd") }
            try await withGUILab { bus, gui, sandbox in
                let environment = gui.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                let service = try sandbox.start(["service", "--providers", "upnp,mpd,local"], environment: gui.environment)
                try await Self.until(bus, lists: ["'Lab Renderer'", "'Lab MPD"])

                // A video: This computer first, then by name; MPD (sound only) shown but not choosable.
                let pick = try sandbox.start(["pick", "--media", "video"], environment: environment)
                let rows = try gui.rows(until: "Lab Renderer")
                let names = rows.compactMap { $0["name"] as? String }
                #expect(names.first?.hasPrefix("This computer, ") == true, "\(rows)")
                let renderer = try #require(rows.first { ($0["name"] as? String)?.hasPrefix("Lab Renderer, DLNA") == true }, "\(rows)")
                #expect(renderer["enabled"] as? Bool == true)
                let mpd = try #require(rows.first { ($0["name"] as? String)?.hasPrefix("Lab MPD") == true }, "\(rows)")
                #expect(mpd["enabled"] as? Bool == false && (mpd["name"] as? String)?.contains("cannot play video") == true, "\(mpd)")
                // Typing filters; Enter chooses the first that can be chosen.
                try gui.keys(["type", "--delay", "20", "renderer"])
                try gui.keys(["key", "Return"])
                let chosen = await pick.finish(within: 10)
                #expect(chosen.status == 0 && chosen.stdout == "Lab Renderer\tupnp:uuid:0e9a4c1a-7a51-4b63-9d55-1abcde000001\n", "\(chosen)\nthe service said: \(service.stderr)")

                // The arrows, and --json.
                let json = try sandbox.start(["pick", "--json"], environment: environment)
                _ = try gui.rows(until: "Lab MPD")
                try gui.keys(["key", "Down", "Down", "Return"])
                let listed = await json.finish(within: 10)
                #expect(listed.status == 0 && listed.stdout.contains("\"name\" : \"Lab Renderer\"") && listed.stdout.contains("\"id\" : "), "\(listed)")

                // Escape: nothing chosen, nothing printed, exit 1.
                let escaped = try sandbox.start(["pick"], environment: environment)
                _ = try gui.rows(until: "This computer")
                try gui.keys(["key", "Escape"])
                let cancelled = await escaped.finish(within: 10)
                #expect(cancelled.status == 1 && cancelled.stdout.isEmpty, "\(cancelled)")

                // An app in Python asks for the picker (PickDevice), and the device chosen plays its file.
                let wav = sandbox.root + "/tone.wav"
                try await Fixtures.gst("audiotestsrc num-buffers=\(20 * 43) samplesperbuffer=1024 ! audioconvert ! wavenc ! filesink location=OUT", to: wav)
                let app = Process()
                app.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                app.arguments = [RouteBinary.packageRoot.appendingPathComponent("examples/route-cast.py").path, wav]
                app.environment = ProcessInfo.processInfo.environment.merging(gui.environment) { $1 }
                // Its output in a file, not a pipe: a pipe is read to its end only once every process holding it has gone.
                let appLog = sandbox.root + "/app.txt"
                _ = FileManager.default.createFile(atPath: appLog, contents: nil)
                let appOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: appLog))
                app.standardOutput = appOutput
                app.standardError = appOutput
                app.standardInput = FileHandle.nullDevice
                try app.runUnblocked()
                try? appOutput.close()
                _ = try gui.rows(until: "Lab Renderer")
                try gui.keys(["type", "--delay", "20", "renderer"])
                try gui.keys(["key", "Return"])
                waitForExit(app, seconds: 30)
                if app.isRunning {
                    // SIGKILL: children Foundation starts have SIGTERM blocked.
                    kill(app.processIdentifier, SIGKILL)
                    waitForExit(app, seconds: 5)
                }
                let said = (try? String(contentsOfFile: appLog, encoding: .utf8)) ?? ""
                #expect(!app.isRunning && app.terminationStatus == 0 && said.contains(": playing"), "\(said)")
                try await Lab.until("the renderer plays the app's file", within: 5) { try Lab.transportState() == "PLAYING" }
                _ = try Lab.soap("AVTransport", "Stop")

                // No display: the terminal picker, which without a terminal says what it needs.
                let headless = try await sandbox.run(["pick"], environment: environment.merging(["DISPLAY": ""]) { $1 })
                #expect(headless.status == 1 && headless.stderr.contains("route pick needs a display"), "\(headless)")

                // A client that leaves takes its window with it; the service stops with a window open.
                let left = try sandbox.start(["pick"], environment: environment)
                _ = try gui.rows(until: "This computer")
                left.signal(SIGKILL)
                _ = await left.finish(within: 5)
                try await Lab.until("the window of a client that left is gone", within: 5) {
                    try Lab.tool("/usr/bin/pgrep", ["-P", String(service.pid), "-x", "route-picker"]).status != 0
                }
                // One open picker per app: its second PickDevice is refused while its first window is open.
                let twice = try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c", Self.pickTwice])
                #expect(twice.text.contains("first /io/github/route/Route1/request/"), "\(twice)")
                #expect(twice.text.contains("second: GDBus.Error:org.freedesktop.DBus.Error.LimitsExceeded: PickDevice: this app's picker"), "\(twice)")
                #expect(twice.text.contains("closed"), "\(twice)")
                try await Lab.until("the closed request's window is gone", within: 5) {
                    try Lab.tool("/usr/bin/pgrep", ["-P", String(service.pid), "-x", "route-picker"]).status != 0
                }
                let open = try sandbox.start(["pick"], environment: environment)
                _ = try gui.rows(until: "This computer")
                service.signal(SIGTERM)
                let stopped = await service.finish(within: 10)
                #expect(!stopped.signaled || stopped.status == 143, "\(stopped)")
                let answered = await open.finish(within: 10)
                #expect(answered.status != 0 && answered.stdout.isEmpty, "\(answered)")
                try await Lab.until("the window goes with the service", within: 5) {
                    try Lab.tool("/usr/bin/pgrep", ["-x", "route-picker"]).status != 0
                }
            }
        }

        @Test func playOnADeviceFromTheFileManagerCastsTheFilesAsAQueue() async throws {
            try await withGUILab { bus, gui, sandbox in
                // Installed as `make install` installs it; valid; what GIO (the file manager's Open With) lists.
                let prefix = sandbox.root + "/prefix"
                let install = try Lab.tool(RouteBinary.packageRoot.appendingPathComponent("scripts/install").path,
                                           ["--prefix", prefix, "--from", URL(fileURLWithPath: RouteBinary.path).deletingLastPathComponent().path])
                #expect(install.status == 0, "\(install.text)")
                let entry = prefix + "/share/applications/io.github.route.PlayOn.desktop"
                let validated = try Lab.tool("/usr/bin/desktop-file-validate", [entry])
                #expect(validated.status == 0 && validated.text.isEmpty, "\(validated.text)")
                let text = try String(contentsOfFile: entry, encoding: .utf8)
                #expect(text.contains("Exec=\"\(prefix)/bin/route\" cast --pick --detach %F") && text.contains("Name=Play on a device…"), "\(text)")
                for type in ["video/mp4", "audio/flac", "audio/x-wav", "image/jpeg"] {
                    let offered = try Lab.tool("/usr/bin/env", ["XDG_DATA_HOME=\(prefix)/share", "XDG_DATA_DIRS=/usr/share", "gio", "mime", type])
                    #expect(offered.text.contains("io.github.route.PlayOn.desktop"), "Open With offers it for \(type): \(offered.text)")
                }

                let service = try sandbox.start(["service", "--providers", "upnp,local"], environment: gui.environment)
                try await Self.until(bus, lists: ["'Lab Renderer'"])
                let notifications = try NotificationServer(bus: bus, root: sandbox.root)
                defer { notifications.stop() }

                // Two songs chosen in the file manager, opened with the entry as a file manager opens it (gio
                // launch): the picker asks, Enter chooses, the renderer plays them as a queue, the session on MPRIS.
                let first = sandbox.root + "/first song.wav", second = sandbox.root + "/second song.wav"
                for path in [first, second] {
                    try await Fixtures.gst("audiotestsrc num-buffers=\(30 * 43) samplesperbuffer=1024 ! audioconvert ! wavenc ! filesink location=OUT", to: path)
                }
                let launch = try Self.launch(entry, [first, second], sandbox: sandbox, gui: gui, prefix: prefix)
                let rows = try gui.rows(until: "Lab Renderer")
                #expect(rows.contains { ($0["name"] as? String)?.hasPrefix("This computer") == true }, "\(rows)")
                try gui.keys(["type", "--delay", "20", "renderer"])
                try gui.keys(["key", "Return"])
                try await Lab.until("the renderer plays the first song", within: 20) {
                    try Lab.transportState() == "PLAYING" && Lab.soap("AVTransport", "GetMediaInfo").contains("first song")
                }
                waitForExit(launch, seconds: 10)
                let said = (try? String(contentsOfFile: sandbox.root + "/launched.txt", encoding: .utf8)) ?? ""
                #expect(!launch.isRunning && launch.terminationStatus == 0, "gio launch: \(said)")
                try await Lab.until("route, started by the entry, has returned", within: 10) {
                    try Lab.tool("/usr/bin/pgrep", ["-f", prefix + "/bin/route cast"]).status != 0
                }
                #expect(said.contains("Lab Renderer plays \"first song\""), "\(said)")
                let player = try #require(try bus.routePlayers().first, "an MPRIS player for the session")
                #expect(try bus.playerctl("-p", player, "metadata", "title") == "first song")
                _ = try bus.playerctl("-p", player, "next")
                try await Lab.until("the queue goes on to the second song", within: 10) {
                    try Lab.transportState() == "PLAYING" && Lab.soap("AVTransport", "GetMediaInfo").contains("second song")
                }
                #expect(try bus.playerctl("-p", player, "metadata", "title") == "second song")
                _ = try bus.playerctl("-p", player, "stop")
                try await Lab.until("the renderer stops", within: 5) { try Lab.transportState() == "STOPPED" }

                // A file that is not media: no picker, a desktop notification says why (no terminal to say it on).
                let broken = try sandbox.file("broken.mp4", "")
                let failed = try Self.launch(entry, [broken], sandbox: sandbox, gui: gui, prefix: prefix)
                waitForExit(failed, seconds: 10)
                let notice = try await notifications.next(within: 10)
                #expect(notice["summary"] as? String == "Could not play \"broken.mp4\"" && (notice["body"] as? String)?.contains("empty") == true,
                        "\(notice)")
                #expect(try Lab.tool("/usr/bin/pgrep", ["-P", String(service.pid), "-x", "route-picker"]).status != 0, "no picker for a file that cannot play")

                // Closing the picker plays nothing and says nothing.
                let closed = try Self.launch(entry, [first], sandbox: sandbox, gui: gui, prefix: prefix)
                _ = try gui.rows(until: "Lab Renderer")
                try gui.keys(["key", "Escape"])
                waitForExit(closed, seconds: 10)
                try await Lab.until("route, started by the entry, has returned", within: 10) {
                    try Lab.tool("/usr/bin/pgrep", ["-f", prefix + "/bin/route cast"]).status != 0
                }
                #expect(try Lab.transportState() == "STOPPED")
                #expect(notifications.received.count == 1, "nothing more to say: \(notifications.received)")
                service.signal(SIGTERM)
                _ = await service.finish(within: 10)
            }
        }

        @Test func thePickerMovesACastAndRouteMoveAsksItWhereTo() async throws {
            try await withGUILab { bus, gui, sandbox in
                let environment = gui.environment.merging(["ROUTE_PROVIDERS": ""]) { $1 }
                let service = try sandbox.start(["service", "--providers", "upnp,cast,local"], environment: gui.environment)
                try await Self.until(bus, lists: ["'Lab Renderer'"])
                let song = sandbox.root + "/moving song.wav"
                try await Fixtures.gst("audiotestsrc num-buffers=\(120 * 43) samplesperbuffer=1024 ! audioconvert ! wavenc ! filesink location=OUT", to: song)
                let cast = try await sandbox.run(["cast", song, "--to", Lab.rendererName, "--detach"], environment: environment, timeout: 30)
                #expect(cast.status == 0, "\(cast)")
                try await Lab.until("the renderer plays", within: 10) { try Lab.transportState() == "PLAYING" }

                // The picker says what plays where, and offers to move it.
                let pick = try sandbox.start(["pick"], environment: environment)
                let rows = try gui.rows(until: "playing moving song")
                let renderer = try #require(rows.first { ($0["name"] as? String)?.hasPrefix("Lab Renderer, DLNA · playing moving song") == true }, "\(rows)")
                #expect((renderer["buttons"] as? [String])?.first?.hasPrefix("Move “moving song” from Lab Renderer to another device") == true, "\(renderer)")
                #expect(rows.first { ($0["name"] as? String)?.hasPrefix("This computer") == true }?["buttons"] as? [String] == [], "\(rows)")
                // Ctrl+M on the renderer's row: the window asks where to, and the renderer is not a choice for it.
                try gui.keys(["type", "--delay", "20", "renderer"])
                try gui.keys(["key", "ctrl+m"])
                let asking = try gui.rows(until: "Move “moving song” from Lab Renderer to:")
                #expect(asking.first { ($0["name"] as? String)?.hasPrefix("Lab Renderer") == true }?["enabled"] as? Bool == false, "\(asking)")
                // This computer, with Enter: the cast moves there, the window says so, and goes on picking.
                try gui.keys(["type", "--delay", "20", "this"], window: "^Move")
                try gui.keys(["key", "Return"], window: "^Move")
                let moved = try gui.rows(until: "“moving song” plays on This computer now.")
                try await Lab.until("the renderer has stopped", within: 5) { try Lab.transportState() == "STOPPED" }
                let player = try await bus.waitForPlayer(within: 5)
                let identity = try bus.tool("gdbus", ["call", "--session", "--dest", "org.mpris.MediaPlayer2.\(player)", "--object-path", "/org/mpris/MediaPlayer2",
                                                      "--method", "org.freedesktop.DBus.Properties.Get", "org.mpris.MediaPlayer2", "Identity"]).text
                #expect(identity.contains("This computer"), "\(identity)")
                // Rows updated where they are: This computer plays it now, the renderer nothing.
                let updated = try gui.rows(until: "speakers · playing moving song")
                #expect(updated.contains { ($0["name"] as? String) == "Lab Renderer, DLNA" }, "\(updated) after \(moved)")
                try gui.keys(["key", "Escape"])
                let picked = await pick.finish(within: 10)
                #expect(picked.status == 1 && picked.stdout.isEmpty, "\(picked)")

                // `route move` without --to: the picker asks only where to, moves it, and route says where it plays.
                let move = try sandbox.start(["move"], environment: environment)
                let only = try gui.rows(until: "Move “moving song” from This computer to:")
                #expect(only.first { ($0["name"] as? String)?.hasPrefix("This computer") == true }?["enabled"] as? Bool == false, "\(only)")
                try gui.keys(["type", "--delay", "20", "renderer"], window: "^Move")
                try gui.keys(["key", "Return"], window: "^Move")
                let answered = await move.finish(within: 30)
                #expect(answered.status == 0 && answered.stdout.hasPrefix("moved: moving song plays on Lab Renderer at "), "\(answered)")
                #expect(try Lab.transportState() == "PLAYING")
                // Escape there moves nothing.
                let kept = try sandbox.start(["move"], environment: environment)
                _ = try gui.rows(until: "Move “moving song” from Lab Renderer to:")
                try gui.keys(["key", "Escape"], window: "^Move")
                let cancelled = await kept.finish(within: 10)
                #expect(cancelled.status == 1 && cancelled.stderr.contains("the cast plays on where it was"), "\(cancelled)")
                #expect(try Lab.transportState() == "PLAYING")

                // A click on the desktop's player (Raise: GNOME asks it of a player with no desktop entry) shows the
                // picker that moves this very cast.
                func root(_ property: String) throws -> String {
                    try bus.tool("gdbus", ["call", "--session", "--dest", "org.mpris.MediaPlayer2.\(player)", "--object-path", "/org/mpris/MediaPlayer2",
                                           "--method", "org.freedesktop.DBus.Properties.Get", "org.mpris.MediaPlayer2", property]).text
                }
                let canRaise = try root("CanRaise")
                #expect(canRaise.contains("true"), "\(canRaise)")
                let raised = try bus.tool("gdbus", ["call", "--session", "--dest", "org.mpris.MediaPlayer2.\(player)", "--object-path", "/org/mpris/MediaPlayer2",
                                                    "--method", "org.mpris.MediaPlayer2.Raise"])
                #expect(raised.status == 0, "\(raised)")
                _ = try gui.rows(until: "Move “moving song” from Lab Renderer to:")
                try gui.keys(["key", "Escape"], window: "^Move")
                try await Lab.until("the raised picker is gone", within: 5) {
                    try Lab.tool("/usr/bin/pgrep", ["-P", String(service.pid), "-x", "route-picker"]).status != 0
                }
                #expect(try Lab.transportState() == "PLAYING")

                // A device reached only by its address (a Cast receiver that does not announce itself) is in no list:
                // while it plays the cast, the picker shows it, not choosable, and moves the cast from it.
                try CastReceiverLab.start(["--no-publish"])
                defer { try? Lab.control("stop-cast") }
                let toReceiver = try await sandbox.run(["move", "--to", "10.77.0.2:8009"], environment: environment, timeout: 30)
                #expect(toReceiver.status == 0, "\(toReceiver)")
                try await Lab.until("the renderer has stopped", within: 5) { try Lab.transportState() == "STOPPED" }
                let back = try sandbox.start(["move"], environment: environment)
                // The heading and the row come separately (once the row came first, and the heading was not read): waited for each.
                _ = try gui.rows(until: "Move “moving song” from ")
                let fromAddress = try gui.rows(until: "reached by its address")
                let receiver = try #require(fromAddress.first { ($0["name"] as? String)?.contains("reached by its address") == true }, "\(fromAddress)")
                #expect(receiver["enabled"] as? Bool == false && (receiver["name"] as? String)?.contains("playing moving song") == true, "\(receiver)")
                #expect(fromAddress.contains { ($0["label"] as? String)?.hasPrefix("Move “moving song” from ") == true }, "\(fromAddress)")
                try gui.keys(["type", "--delay", "20", "renderer"], window: "^Move")
                try gui.keys(["key", "Return"], window: "^Move")
                let returned = await back.finish(within: 30)
                #expect(returned.status == 0 && returned.stdout.hasPrefix("moved: moving song plays on Lab Renderer at "), "\(returned)")
                try await Lab.until("the renderer plays again", within: 5) { try Lab.transportState() == "PLAYING" }
                _ = try bus.playerctl("-p", player, "stop")
                try await Lab.until("the renderer stops", within: 5) { try Lab.transportState() == "STOPPED" }
                // Nothing to move: no window, one line.
                try await Lab.until("the session has ended", within: 10) {
                    try bus.tool("gdbus", ["call", "--session", "--dest", "io.github.route.Route1", "--object-path", "/io/github/route/Route1", "--method",
                                           "org.freedesktop.DBus.Properties.Get", "io.github.route.Route1.Manager", "Sessions"]).text.contains("@ao []")
                }
                let nothing = try await sandbox.run(["move"], environment: environment)
                #expect(nothing.status == 4 && nothing.stderr.contains("nothing is being cast by the route service"), "\(nothing)")

                // Another app's cast (plain SOAP) is shown, mirrored, and offers no move: it is not route's.
                let server = try sandbox.start(["serve", "--bind", "10.77.0.1", song])
                defer { server.signal(SIGTERM) }
                try await Lab.until("the file is served", within: 15) { server.stdout.contains("http://") }
                let url = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("http://") }.map(String.init))
                try Lab.playAsAnotherController(url)
                let watching = try sandbox.start(["pick"], environment: environment)
                let mirrored = try gui.rows(until: "Lab Renderer, DLNA · another app plays ")
                #expect(mirrored.first { ($0["name"] as? String)?.hasPrefix("Lab Renderer") == true }?["buttons"] as? [String] == [], "\(mirrored)")
                try gui.keys(["key", "Escape"])
                let watched = await watching.finish(within: 10)
                #expect(watched.status == 1, "\(watched)")
                _ = try Lab.soap("AVTransport", "Stop")
                server.signal(SIGTERM)
                let served = await server.finish(within: 10)
                #expect(!served.stdout.isEmpty, "\(served)")
                service.signal(SIGTERM)
                _ = await service.finish(within: 10)
            }
        }

        /// Opens `files` with the desktop entry as a file manager does (`gio launch`), in the sandbox's environment with
        /// the GUI session's display and bus; gio's and route's output go to launched.txt.
        private static func launch(_ entry: String, _ files: [String], sandbox: Sandbox, gui: GUISession, prefix: String) throws -> Process {
            let output = sandbox.root + "/launched.txt"
            if !FileManager.default.fileExists(atPath: output) { _ = FileManager.default.createFile(atPath: output, contents: nil) }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            handle.seekToEndOfFile()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/gio")
            process.arguments = ["launch", entry] + files
            process.environment = sandbox.environment(gui.environment.merging(["ROUTE_PROVIDERS": "", "XDG_DATA_HOME": prefix + "/share"]) { $1 })
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = handle
            process.standardError = handle
            try process.runUnblocked()
            try handle.close()
            return process
        }

        /// Runs `body` with the lab's renderer started afresh, a private session bus, an X server with the accessibility
        /// bus on it, and a sandbox.
        private func withGUILab(_ body: (PrivateSessionBus, GUISession, Sandbox) async throws -> Void) async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try await withSessionBus { bus in
                let gui = try await GUISession(bus: bus)
                defer { gui.stop() }
                try await inSandbox { sandbox in try await body(bus, gui, sandbox) }
            }
        }

        /// Waits until the service's Devices property names every one of `names` (as gdbus prints them).
        private static func until(_ bus: PrivateSessionBus, lists names: [String]) async throws {
            try await Lab.until("the service lists \(names.joined(separator: ", "))", within: 15) {
                let listed = try bus.tool("gdbus", ["call", "--session", "--dest", "io.github.route.Route1", "--object-path", "/io/github/route/Route1",
                                                    "--method", "org.freedesktop.DBus.Properties.Get", "io.github.route.Route1.Manager", "Devices"]).text
                return names.allSatisfy { listed.contains($0) }
            }
        }
    }
}
