// DetachedThread: route's one way to start an OS thread of its own, named, for a blocking loop or C call — what
// Foundation's Thread gives, without Foundation: the thin route and the picker link FoundationEssentials alone
// (Foundation brings ICU, 46 MB in every statically linked executable). GLibLoop, below RouteCore, uses GLib's own.

import CPluginSpawn
import Glibc

/// What a new thread runs, handed to it through pthread_create's one pointer.
private final class ThreadStart {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

/// Threads that run until their body returns, nobody joining them.
public enum DetachedThread {
    /// Starts `body` on a new thread named `name` (its first 15 bytes: Linux keeps no more), and returns at once.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            let start = Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue()
            route_thread_name(start.name)
            start.body()
            return nil
        }, start)
        precondition(result == 0, "cannot start a thread for \(name): \(String(cString: strerror(result)))")
        pthread_detach(thread)
    }
}
