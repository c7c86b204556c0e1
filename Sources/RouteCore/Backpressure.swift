// Backpressure: yields into a bounded stream that wait for room instead of dropping, so that a producer fed by the
// network slows to its consumer's pace (and the peer, its socket or pipe full, with it) rather than growing a queue.

import FoundationEssentials
import Glibc

extension AsyncStream.Continuation where Element: Sendable {
    /// Yields `value` into a `.bufferingOldest` stream, waiting while its buffer is full; false once the stream
    /// has ended or the calling task is cancelled.
    @discardableResult
    public func yieldWaiting(_ value: Element) async -> Bool {
        var pending = value
        while true {
            switch yield(pending) {
            case .enqueued: return true
            case .terminated: return false
            case .dropped(let back):
                pending = back
                try? await Task.sleep(for: .milliseconds(1))
                if Task.isCancelled { return false }
            @unknown default: return false
            }
        }
    }
}

extension AsyncThrowingStream.Continuation where Element: Sendable {
    /// Yields `value` into a `.bufferingOldest` stream from a thread of its own (a socket's or a pipe's reader),
    /// blocking that thread while the buffer is full; false once the stream has ended.
    @discardableResult
    public func yieldBlocking(_ value: Element) -> Bool {
        var pending = value
        while true {
            switch yield(pending) {
            case .enqueued: return true
            case .terminated: return false
            case .dropped(let back):
                pending = back
                usleep(1000)
            @unknown default: return false
            }
        }
    }
}
