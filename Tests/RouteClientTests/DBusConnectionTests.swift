// DBusConnectionTests: connections to a private session bus (a dbus-daemon of the test's own) are given back whole when
// dropped — a long-lived service makes one per cast's MPRIS player.

import Foundation
import RouteGIO
import Testing

@Suite struct DBusConnectionTests {
    /// Resident memory of this process, in KiB.
    private func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func droppedConnectionsAreFreed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-dbus-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let address = "unix:path=\(directory)/bus"
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--session", "--address=" + address, "--nofork", "--nopidfile"]
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer { daemon.terminate() }
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: directory + "/bus"), ContinuousClock.now < deadline { usleep(20_000) }
        func cycle(_ count: Int) throws {
            for _ in 0..<count {
                let connection = try DBusConnection.session(address: address)
                #expect(!connection.uniqueName.isEmpty)
            }
        }
        try cycle(200)  // warm-up: GLib's and the loop's own
        let before = residentKiB()
        try cycle(1000)
        let grown = residentKiB() - before
        #expect(grown < 2048, "1000 connections made and dropped kept \(grown) KiB")
    }
}
