// DetachedProcess: starts a program that lives on its own — a session of its own, stdio /dev/null, default signals,
// nothing of route's descriptors — and reaps it when it ends (the route service, launched when the bus cannot start it).

import CPluginSpawn
import Glibc

/// Programs started to live on their own.
public enum DetachedProcess {
    /// Starts `path` with `arguments` (argv[0] is `path`); a thread of its own waits for it to end, so that it leaves
    /// no zombie.
    /// - Throws: `RouteError.commandFailed` naming the program and why, when it cannot be started.
    public static func start(_ path: String, _ arguments: [String]) throws {
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = route_detached_spawn(path, argv, &pid)
        guard result == 0 else {
            throw RouteError(.commandFailed, "cannot start `\(([path] + arguments).joined(separator: " "))`: \(String(cString: strerror(result)))")
        }
        let child = pid
        DetachedThread.start(name: "route-reap") {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
    }
}
