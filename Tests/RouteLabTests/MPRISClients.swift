// MPRISClients: the real MPRIS clients that read a private session bus (RouteTestSupport's): playerctl, gdbus and
// dbus-monitor; and a `route service` started on one.

import Foundation
import RouteTestSupport
import Testing

extension PrivateSessionBus {
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
    /// `kill(process.processIdentifier, SIGKILL)`.
    func monitor() throws -> (process: Process, output: String) {
        let output = directory + "/monitor-\(UUID().uuidString).txt"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        process.arguments = ["--address", address, "type='signal',path='/org/mpris/MediaPlayer2'"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        try process.runUnblocked()
        return (process, output)
    }
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
