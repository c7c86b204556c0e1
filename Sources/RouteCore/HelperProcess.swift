// HelperProcess: a program route runs to do a job for it (yt-dlp) — in its own process group, killed when route ends
// however it ends, its memory and its output bounded, ended at its deadline or when the task that waits is cancelled.

import CPluginSpawn
import FoundationEssentials
import Glibc
import Synchronization

/// Runs helper programs.
public enum HelperProcess {
    /// What a helper did.
    public struct Result: Sendable {
        /// Its exit status; for one killed by a signal, 128 + the signal.
        public var status: Int32
        /// Its standard output.
        public var output: Data
    }

    /// Why a helper did not finish.
    public enum Failure: Error, Sendable {
        /// It could not start (the errno's words).
        case notStarted(String)
        /// It ran past its deadline and was killed.
        case timedOut
        /// It wrote more than the output limit and was killed.
        case tooMuchOutput(Int)
    }

    /// Threads that start helpers and wait for them. They live as long as route: a helper's parent-death signal is
    /// tied to the thread that started it.
    private static let threads = BlockingThreads(name: "route-helper", count: 2)

    /// Runs `program` (a path) with `arguments`; its standard error goes to `errors` (a descriptor the caller keeps).
    /// Standard output is read up to `maxOutput` bytes, data memory is limited to `maxMemory` bytes.
    /// - Throws: `Failure`; `CancellationError` when the task is cancelled (the helper is killed either way).
    public static func run(_ program: String, _ arguments: [String], errors: Int32, timeout: Duration,
                           maxOutput: Int = 64 << 20, maxMemory: Int = 1 << 30) async throws -> Result {
        let running = Running()
        return try await withTaskCancellationHandler {
            try await threads.run(timeout: timeout, timedOut: { running.kill(); return Failure.timedOut }) {
                try start(program, arguments, errors: errors, maxMemory: maxMemory, running: running, maxOutput: maxOutput)
            }
        } onCancel: {
            running.kill()
        }
    }

    /// Starts the helper and waits for it, on a pool thread.
    private static func start(_ program: String, _ arguments: [String], errors: Int32, maxMemory: Int, running: Running,
                              maxOutput: Int) throws -> Result {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw Failure.notStarted(String(cString: strerror(errno))) }
        // Neither end goes to another child route starts meanwhile (the helper gets its end as standard output).
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let reading = ends[0]
        defer { close(reading) }
        var pid: pid_t = 0
        let failure = withCStrings([program] + arguments) { argv in
            route_helper_spawn(program, argv, ends[1], errors, UInt64(maxMemory), &pid)
        }
        close(ends[1])
        guard failure == 0 else { throw Failure.notStarted(String(cString: strerror(failure))) }
        running.started(pid)
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var overflow = false
        while true {
            let count = read(reading, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            output.append(contentsOf: buffer[0..<count])
            if output.count > maxOutput {
                overflow = true
                running.kill()
                break
            }
        }
        // Ended but not reaped, its pid still names its group: what it started in the group is killed with it.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        running.ended()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        if overflow { throw Failure.tooMuchOutput(maxOutput) }
        let signal = status & 0x7f
        return Result(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, output: output)
    }

    /// `body` with `strings` as a NULL-terminated array of C strings.
    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }

    /// A helper's process group, once it is started, for whoever ends it first.
    private final class Running: Sendable {
        private struct State {
            var pid: pid_t?
            var killed = false
            /// Whether it ended: its pid may soon be another process's.
            var reaped = false
        }
        private let state = Mutex(State())

        /// Records the helper; one asked to end before it started is killed now.
        func started(_ pid: pid_t) {
            let killNow = state.withLock { state in
                state.pid = pid
                return state.killed
            }
            if killNow { Glibc.kill(-pid, SIGKILL) }
        }

        /// Kills the helper's process group (at once, or when it starts).
        func kill() {
            state.withLock { state in
                state.killed = true
                // Never a reaped pid: it may be another process's by now.
                if let pid = state.pid, !state.reaped { Glibc.kill(-pid, SIGKILL) }
            }
        }

        /// The helper ended (not yet reaped): its group is killed, and nothing kills its pid after this.
        func ended() {
            state.withLock { state in
                if let pid = state.pid, !state.reaped { Glibc.kill(-pid, SIGKILL) }
                state.reaped = true
            }
        }
    }
}
