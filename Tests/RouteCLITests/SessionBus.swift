// SessionBus: a private D-Bus session bus for MPRIS tests (dbus-daemon on a path socket, reachable from the
// lab's namespaces), and the real MPRIS clients that read it: playerctl, gdbus and dbus-monitor.

import Foundation
import RouteTestSupport
import Testing

/// A session bus of the test's own, removed by `stop()`.
final class PrivateSessionBus: Sendable {
    let directory: String
    /// `unix:path=…`, for DBUS_SESSION_BUS_ADDRESS.
    let address: String
    private let daemon: Process

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-bus-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--address=\(address)", "--nofork", "--nopidfile"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Until the bus answers (its socket file exists a moment before it listens).
        let deadline = Date(timeIntervalSinceNow: 10)
        var answering = false
        while !answering, process.isRunning, Date() < deadline {
            if FileManager.default.fileExists(atPath: directory + "/bus") {
                answering = (try? Lab.tool("/usr/bin/dbus-send", ["--bus=\(address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                                               "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId"]))?.status == 0
            }
            if !answering { usleep(10_000) }
        }
        guard answering else {
            kill(process.processIdentifier, SIGKILL)
            throw ToolFailed(description: "dbus-daemon did not start a session bus at \(address)")
        }
        daemon = process
    }

    /// The environment of a `route` that publishes on this bus.
    var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }

    /// Ends the bus. SIGKILL: a child Foundation starts has SIGTERM blocked, and would never see one.
    func stop() {
        kill(daemon.processIdentifier, SIGKILL)
        waitForExit(daemon, seconds: 5)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a D-Bus client on this bus; its status and output.
    func tool(_ name: String, _ arguments: [String]) throws -> ToolOutput {
        try Lab.tool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(address)", name] + arguments)
    }

    /// `playerctl ARGS`'s output, trimmed.
    func playerctl(_ arguments: String...) throws -> String {
        try tool("playerctl", arguments).text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The players route publishes (`route.…` in `playerctl -l`).
    func routePlayers() throws -> [String] {
        try playerctl("-l").split(separator: "\n").map(String.init).filter { $0.hasPrefix("route.") }
    }

    /// Waits for a route player to appear; its playerctl name.
    func waitForPlayer(within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        try await Lab.until("a route player on the bus", within: seconds, sourceLocation: sourceLocation) { try !routePlayers().isEmpty }
        return try routePlayers()[0]
    }

    /// Each property of `interface` at MPRIS's object, with its D-Bus type, as `gdbus introspect` says.
    func propertyTypes(of player: String, interface: String) throws -> [String: String] {
        let text = try tool("gdbus", ["introspect", "--session", "--dest", "org.mpris.MediaPlayer2.\(player)",
                                      "--object-path", "/org/mpris/MediaPlayer2", "--only-properties"]).text
        guard let start = text.range(of: "interface \(interface) {") else { return [:] }
        var types: [String: String] = [:]
        for line in text[start.upperBound...].split(separator: "\n") {
            let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
            if words.first == "};" { break }
            guard words.count >= 3, words[0] == "readonly" || words[0] == "readwrite" else { continue }
            types[String(words[2])] = String(words[1])
        }
        return types
    }

    /// A property's value as gdbus prints it (`<'Playing'>`, `<{'xesam:artist': <['Someone']>, …}>`).
    func get(_ player: String, _ interface: String, _ property: String) throws -> String {
        try tool("gdbus", ["call", "--session", "--dest", "org.mpris.MediaPlayer2.\(player)", "--object-path", "/org/mpris/MediaPlayer2",
                           "--method", "org.freedesktop.DBus.Properties.Get", interface, property]).text
    }

    /// Starts `dbus-monitor` for MPRIS's signals on this bus; its output grows in the returned file. End it with
    /// `kill(process.processIdentifier, SIGKILL)` (SIGTERM is blocked in children Foundation starts).
    func monitor() throws -> (process: Process, output: String) {
        let output = directory + "/monitor-\(UUID().uuidString).txt"
        FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        process.arguments = ["--address", address, "type='signal',path='/org/mpris/MediaPlayer2'"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output)
    }
}

/// Runs `body` with a private session bus, stopped afterwards.
func withSessionBus(isolation: isolated (any Actor)? = #isolation, _ body: (PrivateSessionBus) async throws -> Void) async throws {
    let bus = try PrivateSessionBus()
    defer { bus.stop() }
    try await body(bus)
}

extension Sandbox {
    /// Starts `route service ARGUMENTS` on `bus` and waits until that very process owns io.github.route.Route1: a
    /// client that asked before then would start a service of its own (as route does when none runs), and this one
    /// would find the name taken and end.
    func startService(_ arguments: [String], on bus: PrivateSessionBus, environment: [String: String] = [:],
                      sourceLocation: SourceLocation = #_sourceLocation) async throws -> RouteProcess {
        let service = try start(["service"] + arguments, environment: bus.environment.merging(environment) { $1 })
        try await Lab.until("`route service` owns io.github.route.Route1", within: 15, meanwhile: { service.stderr },
                            sourceLocation: sourceLocation) {
            guard service.isRunning else { return false }
            let owner = try bus.tool("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                               "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "io.github.route.Route1"])
            return owner.status == 0 && owner.text.contains("(uint32 \(service.pid),)")
        }
        return service
    }
}
