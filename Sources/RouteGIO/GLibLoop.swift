// GLibLoop: a thread that runs a GLib main loop, where libsoup objects (the media server, the HTTP client)
// live; and GLibError, the one place a GError becomes a Swift error.

import CGIO
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A dedicated thread running a GMainLoop on its own GMainContext.
///
/// GLib-based objects (a libsoup server and its messages) are created and touched only on their
/// loop's thread; `perform` runs a closure there and returns its result to the caller. A loop's
/// thread starts with its first `perform` or `async` and lives as long as the process.
public final class GLibLoop: Sendable {
    private nonisolated(unsafe) let context: OpaquePointer
    private let name: String
    private let started = Mutex(false)

    /// A loop whose thread will be named `name`. Loops are meant to live as long as the process: make
    /// them once (a `static let`), not per request.
    public init(name: String) {
        context = g_main_context_new()
        self.name = name
    }

    /// Starts the loop's thread the first time; returns once the thread owns the context.
    private func startIfNeeded() {
        started.withLock { started in
            guard !started else { return }
            started = true
            nonisolated(unsafe) let context = self.context
            let ready = DispatchSemaphore(value: 0)
            let body = LoopThread {
                g_main_context_push_thread_default(context)
                // Own the context before anyone may call `perform`: g_main_context_invoke runs a
                // function inline, on the caller's thread, when no thread owns the context yet.
                g_main_context_acquire(context)
                let loop = g_main_loop_new(context, 0)
                ready.signal()
                g_main_loop_run(loop)
            }
            // GLib's own thread (named, as Foundation's Thread would be; FoundationEssentials has none).
            g_thread_unref(g_thread_new(name, { data in
                Unmanaged<LoopThread>.fromOpaque(data!).takeRetainedValue().body()
                return nil
            }, Unmanaged.passRetained(body).toOpaque()))
            ready.wait()
        }
    }

    /// Whether the caller is on the loop's thread.
    public var isCurrent: Bool { g_main_context_is_owner(context) != 0 }

    /// Runs `body` on the loop thread and waits for its result. Safe to call from the loop thread
    /// itself (runs inline). Keep `body` short: it blocks every other GLib callback while it runs.
    public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        if isCurrent { return try body() }
        startIfNeeded()
        let box = ResultBox<T>(body)
        let unmanaged = Unmanaged.passRetained(box)
        g_main_context_invoke_full(context, G_PRIORITY_DEFAULT, { data in
            let box = Unmanaged<AnyObject>.fromOpaque(data!).takeUnretainedValue() as! any Runnable
            box.run()
            return 0 // G_SOURCE_REMOVE
        }, unmanaged.toOpaque(), { data in
            Unmanaged<AnyObject>.fromOpaque(data!).release()
        })
        box.done.wait()
        return try box.result.withLock { $0! }.get()
    }

    /// Schedules `body` on the loop thread without waiting.
    public func async(_ body: @escaping @Sendable () -> Void) {
        startIfNeeded()
        let box = ResultBox<Void>(body)
        g_main_context_invoke_full(context, G_PRIORITY_DEFAULT, { data in
            (Unmanaged<AnyObject>.fromOpaque(data!).takeUnretainedValue() as! any Runnable).run()
            return 0
        }, Unmanaged.passRetained(box).toOpaque(), { data in
            Unmanaged<AnyObject>.fromOpaque(data!).release()
        })
    }
}

/// What a loop's thread runs, handed to it through g_thread_new's one pointer.
private final class LoopThread: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

private protocol Runnable { func run() }

private final class ResultBox<T: Sendable>: Runnable, Sendable {
    let body: @Sendable () throws -> T
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    init(_ body: @escaping @Sendable () throws -> T) { self.body = body }
    func run() {
        let value = Result { try body() }
        result.withLock { $0 = value }
        done.signal()
    }
}

/// A GError turned into a Swift error: GLib's message, prefixed with what we were doing.
public struct GLibError: Error, CustomStringConvertible {
    /// What failed and GLib's reason.
    public let description: String

    /// Takes ownership of `error` (frees it) and describes it.
    public init(_ what: String, _ error: UnsafeMutablePointer<GError>?) {
        if let error {
            description = "\(what): \(String(cString: error.pointee.message))"
            g_error_free(error)
        } else {
            description = what
        }
    }
}
