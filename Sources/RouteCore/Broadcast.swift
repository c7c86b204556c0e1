// Broadcast: one value stream fanned out to any number of AsyncStream subscribers.

import Synchronization

/// Sends each value to every current subscriber; a new subscriber first gets the latest value.
///
/// Thread-safe: `send` may be called from any thread, including C library callback threads. Values reach
/// every subscriber in the order `latest` took them (they are handed over under the same lock).
/// `finish` ends every stream exactly once; later subscribers get an already-finished stream.
public final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var latest: Element?
        var subscribers: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }
    private let state: Mutex<State>
    /// Held while values are handed to subscribers, so that they arrive in the order `latest` took them.
    /// It is not `state`'s lock: handing a value over can wait for a task's lock, and a task being
    /// cancelled holds that one while its stream's termination takes `state`'s.
    private let delivery = Mutex(())

    /// Makes a broadcast, optionally with a first value for early subscribers.
    public init(initial: Element? = nil) {
        state = Mutex(State(latest: initial))
    }

    /// The latest value sent, if any.
    public var latest: Element? { state.withLock { $0.latest } }

    /// Sends a value to every subscriber and keeps it as the latest.
    public func send(_ value: Element) {
        delivery.withLock { _ in
            let targets = state.withLock { s -> [AsyncStream<Element>.Continuation] in
                guard !s.finished else { return [] }
                s.latest = value
                return Array(s.subscribers.values)
            }
            for continuation in targets { continuation.yield(value) }
        }
    }

    /// A new stream of values: the latest one first, then each one sent.
    public func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let (finished, id) = delivery.withLock { _ in
            state.withLock { s -> (Bool, Int) in
                let id = s.nextID
                s.nextID += 1
                // The latest value first (the stream is new: nobody waits on it yet), and no value sent
                // meanwhile can overtake it.
                if let latest = s.latest { continuation.yield(latest) }
                if !s.finished { s.subscribers[id] = continuation }
                return (s.finished, id)
            }
        }
        if finished {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// Ends every stream. Idempotent.
    public func finish() {
        let targets = state.withLock { s -> [AsyncStream<Element>.Continuation] in
            guard !s.finished else { return [] }
            s.finished = true
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for continuation in targets { continuation.finish() }
    }
}
