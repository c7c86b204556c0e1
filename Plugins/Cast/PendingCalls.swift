// PendingCalls: answers awaited by id — a Cast request's reply, a command waiting for the connection — that
// another task delivers, with cancellation and deadlines honoured.

import RouteCore
import Synchronization

/// Continuations keyed by id, resumed from anywhere.
///
/// `expect(id)` before the request goes out, so that an answer arriving before `wait(id)` is kept, not lost.
/// Thread-safe; each continuation is resumed exactly once (answer, failure, cancellation or deadline).
final class PendingCalls<Value: Sendable>: Sendable {
    private enum Slot {
        case expected
        case waiting(CheckedContinuation<Value, any Error>)
        case answered(Result<Value, any Error>)
    }
    private let slots = Mutex<[Int: Slot]>([:])
    private let counter = Mutex(0)

    /// A fresh id.
    func makeID() -> Int { counter.withLock { $0 += 1; return $0 } }

    /// Keeps a place for the answer to `id`.
    func expect(_ id: Int) { slots.withLock { $0[id] = .expected } }

    /// Waits for the answer to `id` (expected first) for at most `timeout`.
    /// - Throws: what the answer carries; `timedOut()` when the deadline passes; `CancellationError`.
    func wait(_ id: Int, timeout: Duration, timedOut: @escaping @Sendable () -> any Error) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await self.answer(id) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let value = try await group.next() ?? nil else {
                resume(id, with: .failure(timedOut()))
                throw timedOut()
            }
            return value
        }
    }

    private func answer(_ id: Int) async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Value, any Error>? = slots.withLock { slots in
                    switch slots[id] {
                    case .answered(let result):
                        slots[id] = nil
                        return result
                    case .expected, .waiting, nil:
                        slots[id] = .waiting(continuation)
                        return nil
                    }
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            resume(id, with: .failure(CancellationError()))
        }
    }

    /// Delivers the answer to `id`; ignored when nobody expects it.
    func resume(_ id: Int, with result: Result<Value, any Error>) {
        let waiting: CheckedContinuation<Value, any Error>? = slots.withLock { slots in
            switch slots[id] {
            case .waiting(let continuation):
                slots[id] = nil
                return continuation
            case .expected:
                slots[id] = .answered(result)
                return nil
            case .answered, nil:
                return nil
            }
        }
        waiting?.resume(with: result)
    }

    /// Delivers `result` to everyone waiting or expected (a connection is up, or lost).
    func resumeAll(with result: Result<Value, any Error>) {
        let ids = slots.withLock { Array($0.keys) }
        for id in ids { resume(id, with: result) }
    }
}
