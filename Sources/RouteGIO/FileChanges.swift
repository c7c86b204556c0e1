// FileChanges: a file's changes as an AsyncStream, from GIO's file monitor (inotify), on a GLib loop of its own — a
// file that does not exist yet, or whose folder does not, is watched too (GLib looks for it again every few seconds).

import CGIO
import FoundationEssentials

/// The changes of one file.
public enum FileChanges {
    /// GIO's monitors report on the thread-default context they were made on: this loop's.
    private static let loop = GLibLoop(name: "route-files")

    /// A value each time the file at `path` is written, made, replaced (a file renamed over it) or removed, from now
    /// until the stream is dropped; changes close together may come as one. Nothing comes when GIO cannot watch it.
    public static func of(_ path: String) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let box = Unmanaged.passRetained(ChangeBox(continuation)).toOpaque()
        nonisolated(unsafe) let data = box
        // The monitor crosses threads as its address (0: none).
        let made: UInt = (try? loop.perform {
            guard let file = g_file_new_for_path(path) else { return 0 }
            defer { g_object_unref(UnsafeMutableRawPointer(file)) }
            guard let monitor = g_file_monitor_file(file, G_FILE_MONITOR_WATCH_MOVES, nil, nil) else { return 0 }
            g_signal_connect_data(monitor, "changed", unsafeBitCast(fileChanged, to: GCallback.self), data,
                                  { data, _ in Unmanaged<ChangeBox>.fromOpaque(data!).release() }, GConnectFlags(rawValue: 0))
            return UInt(bitPattern: monitor)
        }) ?? 0
        guard made != 0 else {
            Unmanaged<ChangeBox>.fromOpaque(box).release()
            continuation.finish()
            return stream
        }
        continuation.onTermination = { _ in
            // Unreferenced on the loop it reports on: the last reference releases the box (the handler's data).
            loop.async {
                let monitor = UnsafeMutablePointer<GFileMonitor>(bitPattern: made)
                g_file_monitor_cancel(monitor)
                g_object_unref(monitor)
            }
        }
        return stream
    }
}

/// Where a monitor's handler hands its changes.
private final class ChangeBox: Sendable {
    let continuation: AsyncStream<Void>.Continuation
    init(_ continuation: AsyncStream<Void>.Continuation) { self.continuation = continuation }
}

/// The monitor's "changed" handler: every change but a hint that changes are done, or an attribute's, is the file's.
private let fileChanged: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?,
                                        GFileMonitorEvent, UnsafeMutableRawPointer?) -> Void = { _, _, _, event, data in
    guard event != G_FILE_MONITOR_EVENT_ATTRIBUTE_CHANGED, event != G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT, let data else { return }
    Unmanaged<ChangeBox>.fromOpaque(data).takeUnretainedValue().continuation.yield()
}
