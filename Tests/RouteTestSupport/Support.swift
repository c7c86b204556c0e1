// Support: runs the built `route` executable as a subprocess in a per-test sandbox (temp dir, private
// runtime dir, real-time fakesinks), makes sample WAVs with gst-launch-1.0, and checks that a test
// leaves no `route` process behind.

import Foundation
import Synchronization
import Testing

/// Where the package and its built `route` are, from this file's path.
public enum RouteBinary {
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    public static let path = packageRoot.appendingPathComponent(".build/debug/route").path
}

/// What one finished run of `route` did.
public struct RouteResult: CustomStringConvertible {
    /// The exit code; 128 + the signal number when `signaled`, as a shell reports it (-1: it would not die).
    public let status: Int32
    /// Whether a signal ended it (a crash, or our kill) rather than exit().
    public var signaled = false
    public let stdout: String
    public let stderr: String
    public let elapsed: Duration

    /// A run's result, as `finish` makes it (or a test makes it of a run's output so far).
    public init(status: Int32, signaled: Bool = false, stdout: String, stderr: String, elapsed: Duration) {
        self.status = status
        self.signaled = signaled
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
    }

    public var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    public var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    public var description: String {
        "\(signaled ? "killed by signal \(status - 128)" : "exit \(status)") after \(elapsed)\nstdout: \(stdout)\nstderr: \(stderr)"
    }
}

/// A `route` started in the background.
public final class RouteProcess: @unchecked Sendable {
    // Safety: every property is a constant; Process's isRunning, pid and terminationStatus are thread-safe.
    public let process: Process
    public let stdoutPath: String
    public let stderrPath: String
    public let started: ContinuousClock.Instant

    public init(process: Process, stdoutPath: String, stderrPath: String) {
        self.process = process
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
        started = .now
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Sends `number` while the process runs, never after: a run of the suite uses more pids than the kernel's
    /// 32768, so an ended process's pid soon belongs to another (a peer of another lab, say).
    public func signal(_ number: Int32) {
        if process.isRunning { kill(pid, number) }
    }
    public var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits until the process exits, at most `seconds`; kills it (and records an issue) when it does not.
    public func finish(within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation) async -> RouteResult {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        if process.isRunning {
            Issue.record("`route \(process.arguments?.joined(separator: " ") ?? "")` still ran after \(seconds) s; killed it",
                         sourceLocation: sourceLocation)
            kill(pid, SIGKILL)
            let killed = ContinuousClock.now
            while process.isRunning, ContinuousClock.now - killed < .seconds(5) {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        // No waitUntilExit: swift-corelibs-foundation's can hang in its run loop on a pool thread.
        // terminationStatus traps while the process runs; -1 stands for "would not die".
        let running = process.isRunning
        let signaled = !running && process.terminationReason == .uncaughtSignal
        let status = running ? -1 : signaled ? 128 + process.terminationStatus : process.terminationStatus
        return RouteResult(status: status, signaled: signaled, stdout: stdout, stderr: stderr, elapsed: .now - started)
    }
}

/// A private directory per test, the environment `route` runs with there, and the processes it started.
public final class Sandbox: Sendable {
    public let root: String
    /// ROUTE_RUNTIME_DIR for every `route` run here: where casts put their control sockets.
    public let runtimeDir: String
    private let launched = Mutex<[RouteProcess]>([])
    private let counter = Mutex(0)

    public init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("route-cli-tests-\(UUID().uuidString)").path
        runtimeDir = root + "/runtime"
        // 0755 so `nobody` can reach files in it (see the unreadable-file test).
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        // The sandbox has a cache of its own (artwork), but GStreamer's plugin registry is the user's: with
        // an empty one every `route` scans all plugins (0.4 s of CPU each), and dozens starting at once
        // starved the whole test process for seconds.
        try FileManager.default.createDirectory(atPath: Self.userGStreamerCache, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/cache", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/cache/gstreamer-1.0",
                                                   withDestinationPath: Self.userGStreamerCache)
    }

    /// Where GStreamer keeps the test process's own plugin registry ($XDG_CACHE_HOME/gstreamer-1.0).
    private static let userGStreamerCache: String = {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        return cache + "/gstreamer-1.0"
    }()

    /// The environment: the test process's, without any ROUTE_ setting, plus real-time fakesinks (so
    /// nothing is heard and playback takes real time) and the private runtime directory.
    public func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ROUTE_") }
        environment["ROUTE_AUDIO_SINK"] = "fakesink sync=true"
        environment["ROUTE_VIDEO_SINK"] = "fakesink sync=true"
        environment["ROUTE_RUNTIME_DIR"] = runtimeDir
        // Only "This computer" unless a test asks for more: nothing may discover on the host's network.
        environment["ROUTE_PROVIDERS"] = "local"
        // No desktop session bus unless a test brings its own (PrivateSessionBus); artwork into the sandbox.
        environment["DBUS_SESSION_BUS_ADDRESS"] = ""
        environment["XDG_RUNTIME_DIR"] = runtimeDir
        environment["XDG_CACHE_HOME"] = root + "/cache"
        // Where casts remember positions: the sandbox's, not the user's.
        environment["XDG_STATE_HOME"] = root + "/state"
        // Where groups and passwords are kept: the sandbox's.
        environment["XDG_CONFIG_HOME"] = root + "/config"
        environment.merge(extra) { $1 }
        return environment
    }

    /// Starts `route ARGS` with stdin from /dev/null (not a terminal); `prefix` runs it through
    /// another program (`setpriv …`).
    public func start(_ arguments: [String], environment extra: [String: String] = [:], prefix: [String] = []) throws -> RouteProcess {
        let n = counter.withLock { $0 += 1; return $0 }
        let stdoutPath = root + "/stdout-\(n).txt", stderrPath = root + "/stderr-\(n).txt"
        try Data().write(to: URL(fileURLWithPath: stdoutPath))
        try Data().write(to: URL(fileURLWithPath: stderrPath))
        let process = Process()
        if prefix.isEmpty {
            process.executableURL = URL(fileURLWithPath: RouteBinary.path)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: prefix[0])
            process.arguments = Array(prefix.dropFirst()) + [RouteBinary.path] + arguments
        }
        process.environment = environment(extra)
        process.currentDirectoryURL = URL(fileURLWithPath: root)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.runUnblocked()
        let running = RouteProcess(process: process, stdoutPath: stdoutPath, stderrPath: stderrPath)
        launched.withLock { $0.append(running) }
        return running
    }

    /// Runs `route ARGS` to its end (at most `timeout` seconds).
    public func run(_ arguments: [String], environment extra: [String: String] = [:], prefix: [String] = [],
             timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) async throws -> RouteResult {
        try await start(arguments, environment: extra, prefix: prefix).finish(within: timeout, sourceLocation: sourceLocation)
    }

    /// Runs `route ARGS` (with `environment` added) again and again until `condition` holds for its result, at most
    /// `seconds`.
    @discardableResult
    public func poll(_ arguments: [String], environment: [String: String] = [:], within seconds: Double = 10, _ what: String,
              sourceLocation: SourceLocation = #_sourceLocation,
              until condition: (RouteResult) -> Bool) async throws -> RouteResult {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var last: RouteResult
        repeat {
            last = try await run(arguments, environment: environment, timeout: 10, sourceLocation: sourceLocation)
            if condition(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        Issue.record("`route \(arguments.joined(separator: " "))` never showed \(what) within \(seconds) s; last: \(last)",
                     sourceLocation: sourceLocation)
        throw PollTimeout()
    }

    /// Ends the test: every `route` it started must have exited (stragglers are killed and reported),
    /// no other `route` process may be working in the sandbox, and the sandbox is removed.
    public func cleanUp(sourceLocation: SourceLocation = #_sourceLocation) {
        for process in launched.withLock({ $0 }) where process.isRunning {
            Issue.record("`route` (pid \(process.pid)) was left running; killing it. It said:\n\(process.stdout.suffix(2000))\n\(process.stderr.suffix(4000))",
                         sourceLocation: sourceLocation)
            process.signal(SIGKILL)
            waitForExit(process.process, seconds: 5)
        }
        let strays = routeProcesses(mentioning: root)
        for pid in strays {
            Issue.record("a `route` process (pid \(pid)) still works in \(root); killing it", sourceLocation: sourceLocation)
            kill(pid, SIGKILL)
        }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Writes a WAV of `seconds` (a multiple of 0.02) of stereo 44.1 kHz tone into the sandbox.
    public func wav(_ name: String, seconds: Double) async throws -> String {
        let path = root + "/" + name
        try await Fixtures.gst("audiotestsrc num-buffers=\(Int((seconds * 50).rounded())) samplesperbuffer=882 "
            + "! audio/x-raw,rate=44100,channels=2 ! audioconvert ! wavenc ! filesink location=OUT", to: path)
        return path
    }

    /// Writes a VP8 + Vorbis WebM of `seconds` (160x120) into the sandbox: a video most renderers need converted.
    public func webm(_ name: String, seconds: Int) async throws -> String {
        let path = root + "/" + name
        try await Fixtures.gst("videotestsrc num-buffers=\(seconds * 30) ! video/x-raw,width=160,height=120,framerate=30/1 "
            + "! vp8enc deadline=1 ! queue ! webmmux name=mux ! filesink location=OUT audiotestsrc num-buffers=\(seconds * 47) "
            + "samplesperbuffer=1024 ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! vorbisenc ! queue ! mux.", to: path)
        return path
    }

    /// Writes a 320x240 JPEG picture into the sandbox.
    public func jpeg(_ name: String) async throws -> String {
        let path = root + "/" + name
        try await Fixtures.gst("videotestsrc num-buffers=1 ! video/x-raw,width=320,height=240 ! jpegenc ! filesink location=OUT", to: path)
        return path
    }

    /// Writes a file with these contents into the sandbox.
    public func file(_ name: String, _ contents: String) throws -> String {
        let path = root + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The control socket a cast to "This computer" (id `local:local`) listens on: named by the FNV-1a
    /// hash of the device id, as SessionDirectory documents.
    public var localSocket: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "local:local".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return runtimeDir + "/" + String(repeating: "0", count: 16 - hex.count) + hex + ".sock"
    }
}

/// A condition a poll waited for did not come in time.
public struct PollTimeout: Error {
    public init() {}
}

/// Runs `body` in a fresh sandbox and cleans it up afterwards, also when `body` throws.
public func inSandbox(sourceLocation: SourceLocation = #_sourceLocation, _ body: (Sandbox) async throws -> Void) async throws {
    let sandbox = try Sandbox()
    defer { sandbox.cleanUp(sourceLocation: sourceLocation) }
    try await body(sandbox)
}

/// Pids of live processes running the `route` or `route-full` binary whose command line or environment mentions `text`.
public func routeProcesses(mentioning text: String) -> [Int32] {
    // `route` hands most commands to `route-full` by exec: a process may be either binary by now.
    let binaries = Set([RouteBinary.path, RouteBinary.path + "-full"].flatMap { [$0, URL(fileURLWithPath: $0).resolvingSymlinksInPath().path] })
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"),
              binaries.contains(exe) else { return false }
        let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
        return String(decoding: cmdline + environ, as: UTF8.self).contains(text)
    }
}

