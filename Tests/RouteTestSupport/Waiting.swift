// Waiting: deadline-bounded helpers for reading AsyncStreams in tests, so no test sleeps and hopes.

import Foundation
import Synchronization

/// The first element of `stream` that satisfies `predicate`, or nil when the stream ends or
/// `seconds` pass first.
public func firstValue<T: Sendable>(
    in stream: AsyncStream<T>, within seconds: Double, where predicate: @escaping @Sendable (T) -> Bool = { _ in true }
) async -> T? {
    await withDeadline(seconds) {
        for await value in stream where predicate(value) { return value }
        return nil
    }
}

/// Every element of `stream` until it ends, or nil when it has not ended after `seconds`.
public func allValues<T: Sendable>(of stream: AsyncStream<T>, within seconds: Double) async -> [T]? {
    await withDeadline(seconds) {
        var values: [T] = []
        for await value in stream { values.append(value) }
        // Cancellation also ends the loop; that is the timeout, not the stream's end.
        return Task.isCancelled ? nil : values
    }
}

/// What `body` returns, or nil when `seconds` pass first (`body` is then cancelled).
public func withDeadline<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Whether `task` finishes within `seconds` (polled every 10 ms; awaiting a task's value
/// cannot be cancelled, so it is not raced in a task group).
public func finishes<T: Sendable>(_ task: Task<T, Never>, within seconds: Double) async -> Bool {
    let done = Mutex(false)
    let watcher = Task { _ = await task.value; done.withLock { $0 = true } }
    _ = watcher
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if done.withLock({ $0 }) { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return done.withLock { $0 }
}
