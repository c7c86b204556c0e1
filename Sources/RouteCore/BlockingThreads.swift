// BlockingThreads: a fixed set of threads for blocking C calls (libupnp's SOAP, GStreamer's discoverer), so that
// they never block Swift's cooperative pool, with a deadline and prompt cancellation for whoever waits.

import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A bounded pool of threads that run blocking calls for async callers.
///
/// A caller waits at most its deadline and stops waiting at once when its task is cancelled; the call
/// itself then runs to its end on its thread (C calls cannot be interrupted) and its result is dropped.
/// A call whose caller stopped waiting before a thread took it up is not made at all.
public final class BlockingThreads: Sendable {
    private struct Job {
        let run: @Sendable () -> Void
    }
    /// The jobs waiting for a thread, and one signal for each.
    private let queue = Mutex<[Job]>([])
    private let waiting = DispatchSemaphore(value: 0)
    private let name: String
    private let count: Int
    private let started = Mutex(false)

    /// A pool of `count` threads named `name`; they start with the first call and live with the process.
    public init(name: String, count: Int) {
        self.name = name
        self.count = count
    }

    /// Runs `body` on one of the pool's threads and returns its result.
    /// - Throws: what `body` throws; `timedOut()` when `timeout` passes first; `CancellationError` when the
    ///   calling task is cancelled first.
    public func run<T: Sendable>(timeout: Duration, timedOut: @escaping @Sendable () -> any Error,
                                 _ body: @escaping @Sendable () throws -> T) async throws -> T {
        startThreads()
        let pending = Mutex<CheckedContinuation<T, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                pending.withLock { $0 = continuation }
                enqueue(Job {
                    // Nobody waits any more: do not make the call.
                    guard pending.withLock({ $0 != nil }) else { return }
                    let result = Result { try body() }
                    pending.withLock { $0.take() }?.resume(with: result)
                })
                let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                    pending.withLock { $0.take() }?.resume(throwing: timedOut())
                }
            }
        } onCancel: {
            pending.withLock { $0.take() }?.resume(throwing: CancellationError())
        }
    }

    private func enqueue(_ job: Job) {
        queue.withLock { $0.append(job) }
        waiting.signal()
    }

    private func startThreads() {
        let first = started.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        guard first else { return }
        for index in 0..<count {
            DetachedThread.start(name: "\(name)-\(index)") { [self] in
                while true {
                    waiting.wait()
                    queue.withLock { $0.removeFirst() }.run()
                }
            }
        }
    }
}
