// Channel: the two ends of a plugin pipe — FrameWriter writes whole frames to a descriptor, FrameReader reads
// one on a thread of its own and hands the messages on as an AsyncSequence, in order.

import Foundation
import RouteCore
import Synchronization

/// Writes messages, framed, to a pipe. Thread-safe: a frame is written whole before the next one starts.
public final class FrameWriter: Sendable {
    private let fd: Int32
    private let lock = Mutex(())
    /// How long a write may wait for the reader to make room in the pipe.
    private let timeout: Duration
    private let queue = DispatchQueue(label: "route.plugin.writer")

    /// A writer on `fd` (made non-blocking here, so that a reader that never reads cannot hang a writer).
    public init(fd: Int32, timeout: Duration = .seconds(5)) {
        self.fd = fd
        self.timeout = timeout
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Writes `message` as one frame on the writer's own queue, in order, without blocking the caller; a failure
    /// (the other end gone, or not reading for `timeout`) goes to `failed`.
    public func enqueue(_ message: RPCMessage, failed: @escaping @Sendable (ChannelError) -> Void) {
        queue.async { [self] in
            do { try send(message) } catch let error as ChannelError { failed(error) } catch {}
        }
    }

    /// Writes `message` as one frame.
    /// - Throws: `ChannelError` when the other end is gone or does not read for `timeout`.
    public func send(_ message: RPCMessage) throws {
        let frame = PluginFraming.frame(message.encoded())
        try lock.withLock { _ in
            let deadline = ContinuousClock.now + timeout
            try frame.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                var offset = 0
                while offset < buffer.count {
                    let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if written > 0 { offset += written; continue }
                    guard written < 0, errno == EAGAIN || errno == EINTR else { throw ChannelError.closed(String(cString: strerror(errno))) }
                    let left = deadline - ContinuousClock.now
                    guard left > .zero else { throw ChannelError.stalled }
                    var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
                }
            }
        }
    }
}

/// Why the channel cannot be used.
public enum ChannelError: Error, Equatable, CustomStringConvertible {
    /// The other end closed it.
    case closed(String)
    /// The other end stopped reading.
    case stalled

    public var description: String {
        switch self {
        case .closed(let why): return "closed its channel (\(why))"
        case .stalled: return "stopped reading its channel"
        }
    }
}

/// Reads framed messages from a pipe.
public enum FrameReader {
    /// How many parsed messages may wait for the consumer before the reading thread waits too (and the writer,
    /// its pipe full, with it): a plugin that floods cannot grow route's memory.
    static let backlog = 64

    /// The messages on `fd` (read on a thread named `name` until end of file, which finishes the stream), each
    /// parsed, or the reason a body is not a JSON-RPC message. The stream throws at the first thing that is not
    /// a frame: nothing after it can be trusted. The thread closes `fd` when it ends, and ends when the consumer
    /// stops listening.
    public static func messages(from fd: Int32, name: String) -> AsyncThrowingStream<Result<RPCMessage, RPCError>, any Error> {
        let (stream, sink) = AsyncThrowingStream<Result<RPCMessage, RPCError>, any Error>.makeStream(bufferingPolicy: .bufferingOldest(backlog))
        let listening = Mutex(true)
        sink.onTermination = { _ in listening.withLock { $0 = false } }
        DetachedThread.start(name: name) {
            defer { close(fd) }
            var decoder = FrameDecoder()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while listening.withLock({ $0 }) {
                let count = read(fd, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { sink.finish(); return }
                do {
                    for body in try decoder.feed(Data(buffer[0..<count])) {
                        // A full backlog: wait for the consumer rather than drop a message.
                        guard sink.yieldBlocking(Result { () throws(RPCError) in try RPCMessage(parsing: body) }) else { return }
                    }
                } catch {
                    sink.finish(throwing: error)
                    return
                }
            }
        }
        return stream
    }
}
