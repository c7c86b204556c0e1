// PluginProcess: one running plugin executable — spawned with its stdin/stdout as the channel and its stderr
// read into route's log (rate-limited), in a process group of its own, and stopped or reaped here.

import CPluginSpawn
import Foundation
import RouteCore
import Synchronization

/// A plugin's process. Made by `spawn`; `terminate()` ends it; `exit` says how it ended.
final class PluginProcess: Sendable {
    let pid: pid_t
    /// Where the host writes to the plugin (its stdin).
    let input: Int32
    /// Where the plugin writes to the host (its stdout).
    let output: Int32
    private let state = Mutex<State>(State())
    private let name: String

    private struct State {
        var status: Int32?
        var lastWords: String?
        var terminating = false
    }

    private init(pid: pid_t, input: Int32, output: Int32, name: String) {
        self.pid = pid
        self.input = input
        self.output = output
        self.name = name
    }

    /// Starts `path` with pipes for stdin, stdout and stderr, default signal handling (route ignores SIGPIPE) and
    /// its own process group (a Ctrl-C in route's terminal reaches route, which then stops the device through it).
    /// Its stderr lines go to `log` until it closes it.
    static func spawn(path: String, name: String, log: RouteLog) throws -> PluginProcess {
        var input: Int32 = -1, output: Int32 = -1, errors: Int32 = -1
        var pid: pid_t = 0
        var result = route_plugin_spawn(path, &input, &output, &errors, &pid)
        // A file still open for writing somewhere cannot be run yet (ETXTBSY): one being installed or replaced, or one
        // just written while another thread forked (the child holds the descriptor until it closes it). Tried again
        // for up to a second.
        for _ in 0..<50 where result == ETXTBSY {
            usleep(20_000)
            result = route_plugin_spawn(path, &input, &output, &errors, &pid)
        }
        guard result == 0 else { throw PluginError.cannotStart(path: path, reason: String(cString: strerror(result))) }
        let process = PluginProcess(pid: pid, input: input, output: output, name: name)
        live.withLock { _ = $0.insert(pid) }
        process.readErrors(from: errors, into: log)
        return process
    }

    /// Reads the plugin's stderr line by line into the log, at most `LogLimiter`'s rate and `maxLine` bytes a
    /// line (a longer one is cut), on a thread that ends when the plugin closes it.
    private func readErrors(from fd: Int32, into log: RouteLog) {
        DetachedThread.start(name: "plugin-\(name)-stderr") { [self] in
            defer { close(fd) }
            var limiter = LogLimiter()
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            func emit(_ bytes: some Collection<UInt8>) {
                let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard !text.isEmpty else { return }
                state.withLock { $0.lastWords = text }
                limiter.pass(now: .now) { dropped in
                    if dropped > 0 { log(.notice, "\(name): (\(dropped) lines from the plugin were dropped: too many)") }
                    log(.notice, "\(name): \(text)")
                }
            }
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                for byte in buffer[0..<count] {
                    if byte == UInt8(ascii: "\n") {
                        emit(pending)
                        pending.removeAll(keepingCapacity: true)
                    } else if pending.count < Self.maxLine {
                        pending.append(byte)
                    }
                }
            }
            emit(pending)
        }
    }

    /// The longest stderr line kept (the rest of a longer one is dropped).
    static let maxLine = 4000

    /// The last line it wrote to stderr, if any (a crash's last words).
    var lastWords: String? { state.withLock { $0.lastWords } }

    /// How it ended, once it has: "exited with status 3", "was killed by signal 11 (Segmentation fault)";
    /// nil while it runs.
    func ended() -> String? {
        state.withLock { state -> String? in
            if state.status == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { state.status = status }
            }
            return state.status.map(Self.describe)
        }
    }

    /// Waits up to `timeout` for it to end by itself; its exit then, or nil.
    func waitForExit(timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let how = ended() { return how }
            // A cancelled task's sleep returns at once: do not spin.
            if (try? await Task.sleep(for: .milliseconds(10))) == nil { usleep(10_000) }
        }
        return ended()
    }

    /// Ends it now: SIGTERM to its group, SIGKILL after `grace` (at once when the calling task is cancelled);
    /// reaps it and closes its stdin. Safe to call more than once, from any task: only the first does it. (Its
    /// stdout is closed by the thread that reads it.)
    func terminate(grace: Duration = .milliseconds(500)) async {
        let first = state.withLock { state -> Bool in
            defer { state.terminating = true }
            return !state.terminating
        }
        guard first else { return }
        if ended() == nil {
            kill(-pid, SIGTERM)
            let gone = Task.isCancelled ? nil : await waitForExit(timeout: grace)
            if gone == nil {
                kill(-pid, SIGKILL)
                _ = await waitForExit(timeout: .seconds(2))
            }
        }
        // Whatever is left of its group (a shell plugin's children) goes too.
        kill(-pid, SIGKILL)
        close(input)
        PluginProcess.live.withLock { _ = $0.remove(pid) }
    }

    /// The process groups of plugins started and not yet terminated.
    static let live = Mutex<Set<pid_t>>([])

    /// Kills every plugin still running, at once (route is exiting: a plugin that ignores the end of its
    /// stdin must not outlive it).
    static func killAll() {
        for pid in live.withLock({ $0 }) { kill(-pid, SIGKILL) }
    }

    private static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        if signal == 0 { return "exited with status \((status >> 8) & 0xff)" }
        return "was killed by signal \(signal) (\(String(cString: strsignal(signal))))"
    }
}

/// Lets lines through at a steady rate with a burst, counting the ones it drops; a plugin that floods its
/// log cannot flood route's.
struct LogLimiter {
    /// Lines a second, once the burst is spent.
    static let rate = 20.0
    static let burst = 100.0
    private var tokens = burst
    private var last: ContinuousClock.Instant?
    private var dropped = 0

    /// Calls `write` with how many lines were dropped before this one, when this one may pass.
    mutating func pass(now: ContinuousClock.Instant, _ write: (Int) -> Void) {
        if let last {
            let elapsed = now - last
            tokens = min(Self.burst, tokens + Self.rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        }
        last = now
        guard tokens >= 1 else { dropped += 1; return }
        tokens -= 1
        write(dropped)
        dropped = 0
    }
}

/// What goes wrong with a plugin, in words that say which plugin and what to do.
public enum PluginError: Error, Equatable, CustomStringConvertible {
    /// The executable could not be started.
    case cannotStart(path: String, reason: String)
    /// The plugin broke the protocol: garbage, a bad reply, no common version.
    case protocolViolation(plugin: String, reason: String)
    /// It did not answer a call in time (it is taken to hang, and stopped).
    case timedOut(plugin: String, method: String, seconds: Int)
    /// Its process ended while it was needed.
    case exited(plugin: String, how: String, lastWords: String?)

    public var description: String {
        switch self {
        case .cannotStart(let path, let reason): return "cannot start \(path): \(reason)"
        case .protocolViolation(let plugin, let reason): return "the \(plugin) plugin \(reason)"
        case .timedOut(let plugin, let method, let seconds):
            return "the \(plugin) plugin did not answer \(method) within \(seconds) s (stopped it)"
        case .exited(let plugin, let how, let lastWords):
            return "the \(plugin) plugin \(how)" + (lastWords.map { "; its last words: \"\(DisplayText.clean($0, limit: 200))\"" } ?? "")
        }
    }
}
