// SessionBus: a private D-Bus session bus of a test's own (dbus-daemon on a path socket, reachable from the lab's
// namespaces), for the service's and MPRIS's tests.

import Foundation

/// A session bus of the test's own, removed by `stop()`.
public final class PrivateSessionBus: Sendable {
    /// The folder of its socket, removed by `stop()`.
    public let directory: String
    /// `unix:path=…`, for DBUS_SESSION_BUS_ADDRESS.
    public let address: String
    private let daemon: Process

    /// Starts dbus-daemon on a socket in a fresh folder and waits until it answers.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-bus-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--address=\(address)", "--nofork", "--nopidfile"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.runUnblocked() } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        // Until the bus answers (its socket file exists a moment before it listens).
        let deadline = Date(timeIntervalSinceNow: 10)
        var answering = false
        while !answering, process.isRunning, Date() < deadline {
            if FileManager.default.fileExists(atPath: directory + "/bus") {
                answering = (try? runTool("/usr/bin/dbus-send", ["--bus=\(address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                                               "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId"]))?.status == 0
            }
            if !answering { usleep(10_000) }
        }
        guard answering else {
            kill(process.processIdentifier, SIGKILL)
            try? FileManager.default.removeItem(atPath: directory)
            throw ToolFailed(description: "dbus-daemon did not start a session bus at \(address)")
        }
        daemon = process
    }

    /// The environment of a `route` that publishes on this bus.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }

    /// Ends the bus. SIGKILL: a child Foundation starts has SIGTERM blocked, and would never see one.
    public func stop() {
        kill(daemon.processIdentifier, SIGKILL)
        waitForExit(daemon, seconds: 5)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a D-Bus client on this bus; its status and output.
    public func tool(_ name: String, _ arguments: [String]) throws -> ToolOutput {
        try runTool("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(address)", name] + arguments)
    }
}

/// Runs `body` with a private session bus, stopped afterwards.
public func withSessionBus(isolation: isolated (any Actor)? = #isolation, _ body: (PrivateSessionBus) async throws -> Void) async throws {
    let bus = try PrivateSessionBus()
    defer { bus.stop() }
    try await body(bus)
}
