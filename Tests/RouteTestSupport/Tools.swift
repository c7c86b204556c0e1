// Tools: running helper programs from tests — gst-launch-1.0 for sample media, and blocking work kept off
// Swift's cooperative pool (two threads on two cores: blocking one stalls every other test's timings).

import Foundation

/// A helper program failed; the description has its output.
public struct ToolFailed: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// Quotes a path for the shell.
public func q(_ path: String) -> String { "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" }

/// Blocks until `process` has exited, at most `seconds` (polls; Foundation's waitUntilExit can hang).
public func waitForExit(_ process: Process, seconds: Double) {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while process.isRunning, Date() < deadline { usleep(10_000) }
}

/// Runs `gst-launch-1.0 -q PIPELINE` through the shell (which splits the description into arguments
/// as gst-launch expects); throws with its stderr when it fails.
public func gstLaunch(_ pipeline: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "exec gst-launch-1.0 -q " + pipeline]
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let output = errors.fileHandleForReading.readDataToEndOfFile()
    // Foundation does not close a Pipe's descriptors when it goes.
    try? errors.fileHandleForReading.close()
    waitForExit(process, seconds: 60)
    guard !process.isRunning, process.terminationStatus == 0 else {
        throw ToolFailed(description: "gst-launch-1.0 \(pipeline) failed: \(String(decoding: output, as: UTF8.self))")
    }
}

/// Runs blocking work (a subprocess, GStreamer's synchronous discoverer) on a thread of its own.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
