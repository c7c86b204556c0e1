// Tools: running helper programs from tests with a deadline that holds when they hang (gst-launch-1.0 for sample
// media, curl, D-Bus clients, the lab's scripts), sample media made once per run, and blocking work kept off
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

extension Process {
    /// Runs the program with no signal blocked. Foundation hands a child the signal mask of the thread that starts it,
    /// and Swift's concurrency threads (libdispatch's workers) block nearly every signal: a child started from a test
    /// would never see terminate()'s SIGTERM (a paplay that plays on, a fake renderer that stays up after stop()).
    public func runUnblocked() throws {
        var none = sigset_t(), before = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &before)
        defer { pthread_sigmask(SIG_SETMASK, &before, nil) }
        try run()
    }
}

/// What a helper program did: its exit status (128 + N when signal N ended it) and its output and errors together.
public struct ToolOutput: Sendable {
    public let status: Int32
    public let text: String
}

/// Which of a helper program's streams `runTool` keeps.
public enum ToolStreams: Sendable {
    case both, output, errors
}

/// Runs `path ARGS` to its end, at most `seconds`, with its output and errors in a file rather than a pipe (a pipe
/// read to its end waits for every process that inherited it, deadline or not). Foundation starts the program as the
/// leader of a process group of its own, so at the deadline the whole group — gst-launch, a shell's children — is
/// killed with SIGKILL, which nothing ignores (children Foundation starts have SIGTERM blocked), and ToolFailed says
/// what it had printed. `outputs` says which of its streams the text holds (the other goes nowhere). Blocks the
/// calling thread: call it through `offThePool` from async code.
public func runTool(_ path: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
                    outputs: ToolStreams = .both, within seconds: Double = 30) throws -> ToolOutput {
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("route-tool-\(UUID().uuidString).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: log) }
    let output = try FileHandle(forWritingTo: log)
    func made() -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outputs == .errors ? FileHandle.nullDevice : output
        process.standardError = outputs == .output ? FileHandle.nullDevice : output
        return process
    }
    // A program written a moment ago (a copied binary, a script) may still be open for writing in a child another test
    // forked meanwhile, until that child execs: exec then fails with ETXTBSY for a moment, and is tried again.
    let started = ContinuousClock.now
    var process = made()
    while true {
        do {
            try process.runUnblocked()
            break
        } catch let error as NSError where (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == Int(ETXTBSY)
                                            && ContinuousClock.now - started < .seconds(5) {
            usleep(20_000)
            process = made()
        } catch {
            try? output.close()
            throw error
        }
    }
    // The child has its own copy; Foundation would keep this one open.
    try? output.close()
    waitForExit(process, seconds: seconds)
    let text = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    guard !process.isRunning else {
        // Its pid names its process group (Foundation's children lead one each).
        kill(-process.processIdentifier, SIGKILL)
        waitForExit(process, seconds: 5)
        throw ToolFailed(description: "\(path) \(arguments.joined(separator: " ")) did not finish within \(seconds) s; killed it. "
                         + "It printed: \(text().suffix(2000))")
    }
    let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    return ToolOutput(status: status, text: text())
}

/// Runs `gst-launch-1.0 -q PIPELINE` through the shell (which splits the description into arguments as gst-launch
/// expects), at most `seconds`; throws with its output when it fails or hangs.
public func gstLaunch(_ pipeline: String, within seconds: Double = 60) throws {
    let result = try runTool("/bin/sh", ["-c", "exec gst-launch-1.0 -q " + pipeline], within: seconds)
    guard result.status == 0 else {
        throw ToolFailed(description: "gst-launch-1.0 \(pipeline) failed (status \(result.status)): \(result.text)")
    }
}

/// Runs blocking work (a subprocess, GStreamer's synchronous discoverer) on a thread of its own.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Sample media made once per test run and shared by every test (and every test process) of it: a fixture is
/// built into a private directory, then renamed into place, so nobody sees half of one; tests get copies.
/// The run's cache is `ROUTE_TEST_FIXTURES` (make test empties it at the start of each run), else a directory
/// of this test process's own.
public enum Fixtures {
    private static let directory: String = {
        if let shared = ProcessInfo.processInfo.environment["ROUTE_TEST_FIXTURES"], shared.hasPrefix("/") { return shared }
        return FileManager.default.temporaryDirectory.appendingPathComponent("route-fixtures-\(getpid())").path
    }()

    /// The made copy of fixture `key` (a file or a directory, a name of letters, digits, `.`, `-` and `_`):
    /// `build(path)` makes it at `path` the first time anyone asks in this run.
    public static func shared(_ key: String, _ build: @escaping @Sendable (String) throws -> Void) async throws -> String {
        let made = directory + "/" + key
        if FileManager.default.fileExists(atPath: made) { return made }
        return try await offThePool {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let scratch = directory + "/.making-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            try build(scratch + "/" + key)
            // Two makers at once: the first rename wins and the other's copy goes with its scratch directory.
            if rename(scratch + "/" + key, made) != 0, !FileManager.default.fileExists(atPath: made) {
                throw ToolFailed(description: "could not put fixture \(key) at \(made): \(String(cString: strerror(errno)))")
            }
            return made
        }
    }

    /// Copies fixture `key` (made by `build` once per run) to `path`; returns `path`.
    @discardableResult
    public static func copy(_ key: String, to path: String, _ build: @escaping @Sendable (String) throws -> Void) async throws -> String {
        let made = try await shared(key, build)
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: made, toPath: path)
        return path
    }

    /// Copies to `path` what `gst-launch-1.0 PIPELINE` writes, the pipeline made once per run: PIPELINE names its
    /// output `filesink location=OUT`.
    @discardableResult
    public static func gst(_ pipeline: String, to path: String) async throws -> String {
        try await copy(key(for: pipeline, suffix: URL(fileURLWithPath: path).pathExtension), to: path) { out in
            try gstLaunch(pipeline.replacingOccurrences(of: "location=OUT", with: "location=" + q(out)))
        }
    }

    /// A key naming `text` (FNV-1a, 64 bits), with a file extension.
    private static func key(for text: String, suffix: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "gst-" + String(hash, radix: 16) + (suffix.isEmpty ? "" : "." + suffix)
    }
}
