// PipelineStream: one HTTP response fed by a GStreamer conversion pipeline (transcode or remux), with
// backpressure, started at a time offset when the device asked to seek.

import CGStreamer
import RouteGLib
import CGStreamerApp
import CRouteShim
import CSoup
import RouteGLib
import Foundation
import Synchronization

/// Runs a pipeline for one GET and streams its output as a chunked body.
///
/// Threads: `attach` runs on the server's GLib loop thread; a `route-transcode` thread builds the pipeline,
/// pulls from its appsink and hands each buffer to the loop thread, which appends it to the body and
/// resumes libsoup (libsoup pauses itself when the body runs dry). At most `window` chunks wait in
/// libsoup, so a slow client slows the pipeline instead of filling memory. When the client goes away
/// ("finished"), the thread stops the pipeline.
final class PipelineStream: @unchecked Sendable {
    // Safety: `message` is only touched on the loop thread; `finished` is an atomic shared with
    // the pull thread; the rest is immutable.
    private let loop: GLibLoop
    private let path: String
    private let description: String
    private let start: Double
    /// Chunks handed to libsoup and not yet written, guarded by `window`.
    private let window = NSCondition()
    private nonisolated(unsafe) var inFlight = 0
    private let finished = Atomic<Bool>(false)
    private nonisolated(unsafe) var message: OpaquePointer?
    private static let maxInFlight = 16

    init(loop: GLibLoop, path: String, description: String, start: Double) {
        self.loop = loop
        self.path = path
        self.description = description
        self.start = start
    }

    /// Takes over the response of `message` (loop thread).
    func attach(to message: OpaquePointer) {
        self.message = message
        g_object_ref(UnsafeMutableRawPointer(message))
        soup_message_body_set_accumulate(soup_server_message_get_response_body(message), 0)
        let me = Unmanaged.passRetained(self).toOpaque()
        let wroteChunk: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            guard let data else { return }
            Unmanaged<PipelineStream>.fromOpaque(data).takeUnretainedValue().chunkWritten()
        }
        let finishedSignal: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            guard let data else { return }
            let stream = Unmanaged<PipelineStream>.fromOpaque(data).takeRetainedValue()
            stream.finished.store(true, ordering: .sequentiallyConsistent)
            stream.chunkWritten()
        }
        route_signal_connect(UnsafeMutableRawPointer(message), "wrote-chunk", unsafeBitCast(wroteChunk, to: UnsafeRawPointer.self), me)
        route_signal_connect(UnsafeMutableRawPointer(message), "finished", unsafeBitCast(finishedSignal, to: UnsafeRawPointer.self), me)
        // Hold the response until the pipeline has produced data (or failed, which becomes a 500).
        soup_server_message_pause(message)
        let thread = Thread { [self] in pump() }
        thread.name = "route-transcode"
        thread.start()
    }

    private var isFinished: Bool { finished.load(ordering: .sequentiallyConsistent) }

    /// libsoup wrote a chunk (or the client left): room for one more.
    private func chunkWritten() {
        window.lock()
        inFlight = max(0, inFlight - 1)
        window.signal()
        window.unlock()
    }

    /// Blocks the pull thread until fewer than `maxInFlight` chunks wait in libsoup; false when the client left.
    private func waitForRoom() -> Bool {
        window.lock()
        defer { window.unlock() }
        while inFlight >= Self.maxInFlight, !isFinished { _ = window.wait(until: Date(timeIntervalSinceNow: 0.2)) }
        inFlight += 1
        return !isFinished
    }

    /// The pull thread: builds and runs the pipeline, forwarding buffers until EOS, error or hang-up.
    private func pump() {
        GStreamer.initialize()
        var failure: String?
        var sentAny = false
        defer { finishResponse(failure: failure, afterData: sentAny) }
        var error: UnsafeMutablePointer<GError>?
        let full = "filesrc name=route_src ! \(description) route_out. ! appsink name=route_sink sync=false max-buffers=8 drop=false"
        guard let pipeline = gst_parse_launch(full, &error), error == nil else {
            failure = GLibError("conversion pipeline", error).description
            return
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        guard let source = gst_bin_get_by_name(bin, "route_src"), let sink = gst_bin_get_by_name(bin, "route_sink") else {
            failure = "conversion pipeline lacks its source or sink"
            return
        }
        route_object_set_string(source, "location", path)
        gst_object_unref(source)
        defer { gst_object_unref(sink) }
        let appsink = UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self)
        if start > 0 {
            gst_element_set_state(pipeline, GST_STATE_PAUSED)
            gst_element_get_state(pipeline, nil, nil, GstClockTime(10 * GStreamer.second))
            let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
            gst_element_seek_simple(pipeline, GST_FORMAT_TIME, flags, gint64(start * GStreamer.second))
        }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
        let bus = gst_element_get_bus(pipeline)
        defer { if let bus { gst_object_unref(bus) } }
        while !isFinished {
            if let sample = gst_app_sink_try_pull_sample(appsink, GstClockTime(0.1 * GStreamer.second)) {
                defer { gst_mini_object_unref(UnsafeMutableRawPointer(sample).assumingMemoryBound(to: GstMiniObject.self)) }
                guard let buffer = gst_sample_get_buffer(sample) else { continue }
                let size = gst_buffer_get_size(buffer)
                guard size > 0, let bytes = g_malloc(size) else { continue }
                gst_buffer_extract(buffer, 0, bytes, size)
                guard waitForRoom() else { g_free(bytes); break }
                sentAny = true
                nonisolated(unsafe) let chunk = bytes
                loop.async { [self] in
                    guard let message, !isFinished else { g_free(chunk); return }
                    soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_TAKE, chunk, size)
                    soup_server_message_unpause(message)
                }
            } else if gst_app_sink_is_eos(appsink) != 0 {
                return
            } else if let bus, let message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR) {
                var gerror: UnsafeMutablePointer<GError>?
                gst_message_parse_error(message, &gerror, nil)
                failure = GLibError("conversion failed", gerror).description
                gst_mini_object_unref(UnsafeMutableRawPointer(message).assumingMemoryBound(to: GstMiniObject.self))
                return
            }
        }
    }

    /// Ends the response and drops the message (any thread). Success completes the body. A failure
    /// before any data becomes a 500; a failure after some data cuts the connection, so the device
    /// sees a broken transfer rather than a clean end (which it would take for the end of the item).
    private func finishResponse(failure: String?, afterData: Bool) {
        if let failure { FileHandle.standardError.write(Data("route: \(path): \(failure)\n".utf8)) }
        loop.async { [self] in
            guard let message else { return }
            if !isFinished {
                if failure != nil, afterData {
                    if let connection = soup_server_message_steal_connection(message) {
                        g_io_stream_close(connection, nil, nil)
                        g_object_unref(UnsafeMutableRawPointer(connection))
                    }
                } else {
                    if failure != nil {
                        let headers = soup_server_message_get_response_headers(message)
                        soup_server_message_set_status(message, 500, nil)
                        soup_message_headers_set_encoding(headers, SOUP_ENCODING_CONTENT_LENGTH)
                        soup_message_headers_set_content_length(headers, 0)
                    }
                    soup_message_body_complete(soup_server_message_get_response_body(message))
                    soup_server_message_unpause(message)
                }
            }
            g_object_unref(UnsafeMutableRawPointer(message))
            self.message = nil
        }
    }
}

/// DLNA time-based seeking for converted streams: `TimeSeekRange.dlna.org: npt=30.5-` (or `?t=30.5`).
enum TimeSeek {
    /// The requested start in seconds, if the request asks for one.
    static func start(headers: OpaquePointer?, query: OpaquePointer?) -> Double? {
        if let query, let raw = g_hash_table_lookup(query, "t") {
            return parseClock(String(cString: raw.assumingMemoryBound(to: CChar.self)))
        }
        guard let headers, let raw = soup_message_headers_get_one(headers, "TimeSeekRange.dlna.org") else { return nil }
        return parse(String(cString: raw))
    }

    /// Parses `npt=30.5-`, `npt=00:01:02.5-00:02:00`; the start only.
    static func parse(_ value: String) -> Double? {
        guard let range = value.split(separator: "=", maxSplits: 1).last, value.lowercased().hasPrefix("npt=") else { return nil }
        guard let first = range.split(separator: "-", omittingEmptySubsequences: false).first else { return nil }
        return parseClock(String(first))
    }

    /// `30.5` or `H:MM:SS.sss` to seconds.
    static func parseClock(_ text: String) -> Double? {
        var total = 0.0
        for part in text.split(separator: ":", omittingEmptySubsequences: false) {
            guard let value = Double(part), value >= 0 else { return nil }
            total = total * 60 + value
        }
        return total
    }

    /// The reply header: `npt=START-END/DURATION`.
    static func header(start: Double, duration: Double) -> String {
        String(format: "npt=%.3f-%.3f/%.3f", start, duration, duration)
    }
}
