// PipelineStream: one HTTP response fed by a GStreamer conversion pipeline (transcode or remux), with
// backpressure, started at a time offset when the device asked to seek.

import CGStreamer
import RouteGIO
import RouteGLib
import CGStreamerApp
import CRouteShim
import Foundation
import RouteCore
import Synchronization

/// How an offered file is converted: the pipeline after the file source, the item's length, how a start offset is
/// reached (exactly, when the pipeline decodes; at the key frame before, when it copies), and whether the file is
/// pushed into it rather than pulled (MediaProbe.pullRaces).
struct Conversion: Sendable {
    let description: String
    let duration: Double?
    let exactSeek: Bool
    var pushed = false
}

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
    private let conversion: Conversion
    private let start: Double
    /// Chunks handed to libsoup and not yet written, guarded by `window`.
    private let window = NSCondition()
    private nonisolated(unsafe) var inFlight = 0
    private let finished = Atomic<Bool>(false)
    private nonisolated(unsafe) var message: HTTPServerMessage?
    private static let maxInFlight = 16
    private let log: RouteLog

    init(loop: GLibLoop, path: String, conversion: Conversion, start: Double, log: RouteLog) {
        self.log = log
        self.loop = loop
        self.path = path
        self.conversion = conversion
        self.start = start
    }

    /// Takes over the response of `message` (loop thread).
    func attach(to message: HTTPServerMessage) {
        self.message = message
        message.stream(wroteChunk: { self.chunkWritten() }, finished: {
            self.finished.store(true, ordering: .sequentiallyConsistent)
            self.chunkWritten()
        })
        // Hold the response until the pipeline has produced data (or failed, which becomes a 500).
        message.pause()
        DetachedThread.start(name: "route-transcode") { [self] in pump() }
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
        let guardMark = FetchGuard.mark()
        let source = conversion.pushed && !MediaInfo.isRemote(path) ? "pushfilesrc" : GStreamer.sourceElement(for: path)
        let full = "\(source) name=route_src ! \(conversion.description) route_out. ! appsink name=route_sink sync=false max-buffers=8 drop=false"
        guard let pipeline = gst_parse_launch(full, &error), error == nil else {
            failure = GLibError("conversion pipeline", error).description
            return
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        // The source's tags (a web stream's, a file's) are not passed on: control characters in them would reach the device.
        route_bin_drop_source_tags(bin)
        guard let source = gst_bin_get_by_name(bin, "route_src"), let sink = gst_bin_get_by_name(bin, "route_sink") else {
            failure = "conversion pipeline lacks its source or sink"
            return
        }
        route_object_set_string(source, "location", path)
        gst_object_unref(source)
        defer { gst_object_unref(sink) }
        let appsink = UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self)
        let gates = SeekGates(bin: bin)
        if start > 0 {
            gates.hold(remaining: conversion.duration.map { max(0, $0 - start) })
            gst_element_set_state(pipeline, GST_STATE_PAUSED)
            if let problem = gates.seek(to: start, exact: conversion.exactSeek, giveUp: { self.isFinished }) {
                failure = problem
                return
            }
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
                    message.append(taking: chunk, count: Int(size))
                    message.unpause()
                }
            } else if gst_app_sink_is_eos(appsink) != 0 {
                return
            } else if let bus, let message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR) {
                var gerror: UnsafeMutablePointer<GError>?
                gst_message_parse_error(message, &gerror, nil)
                let described = GLibError("conversion failed", gerror).description
                failure = FetchGuard.refusal(since: guardMark).map { "conversion failed: \($0)" } ?? described
                gst_mini_object_unref(UnsafeMutableRawPointer(message).assumingMemoryBound(to: GstMiniObject.self))
                return
            }
        }
    }

    /// Ends the response and drops the message (any thread). Success completes the body. A failure
    /// before any data becomes a 500; a failure after some data cuts the connection, so the device
    /// sees a broken transfer rather than a clean end (which it would take for the end of the item).
    private func finishResponse(failure: String?, afterData: Bool) {
        if let failure { log(.error, "\(path): \(failure)") }
        loop.async { [self] in
            guard let message else { return }
            if !isFinished {
                if failure != nil, afterData {
                    message.closeConnection()
                } else {
                    if failure != nil {
                        message.setStatus(500)
                        message.setContentLength(0)
                    }
                    message.completeBody()
                    message.unpause()
                }
            }
            self.message = nil
        }
    }
}

/// The `route_gate_…` elements of a conversion pipeline (see `TranscodeProfile.pipeline`), used to start the
/// stream at an offset without the encoders and muxers ever seeing what comes before it.
///
/// Threads: the probes run on GStreamer's streaming threads; `seek` waits on the pull thread.
private final class SeekGates: @unchecked Sendable {
    // Safety: `gates` is set in init; the probe state is behind `lock`.
    private var gates: [(element: UnsafeMutablePointer<GstElement>, dropsRepeats: Bool)] = []
    private let lock = NSCondition()
    private var waiting: Set<Int> = []
    private var seeked = false
    private var lastTimes: [Int: GstClockTime] = [:]

    init(bin: UnsafeMutablePointer<GstBin>) {
        for name in ["route_gate_audio", "route_gate_video", "route_gate_raw_video"] {
            if let element = gst_bin_get_by_name(bin, name) { gates.append((element, name == "route_gate_raw_video")) }
        }
    }

    deinit {
        for gate in gates { gst_object_unref(gate.element) }
    }

    /// Blocks every gate at its first buffer, until `seek` opens them. With `remaining`, the gates also
    /// answer duration queries from downstream with it: encoders that write a length into their header
    /// (flacenc) must describe the stream they make, which starts at the offset.
    func hold(remaining: Double?) {
        for (index, gate) in gates.enumerated() {
            if let remaining, let source = gst_element_get_static_pad(gate.element, "src") {
                let nanoseconds = Box(gint64(remaining * GStreamer.second))
                gst_pad_add_probe(source, GST_PAD_PROBE_TYPE_QUERY_UPSTREAM, { _, info, data in
                    guard let query = gst_pad_probe_info_get_query(info), query.pointee.type == GST_QUERY_DURATION else { return GST_PAD_PROBE_OK }
                    var format = GST_FORMAT_UNDEFINED
                    gst_query_parse_duration(query, &format, nil)
                    guard format == GST_FORMAT_TIME else { return GST_PAD_PROBE_OK }
                    gst_query_set_duration(query, GST_FORMAT_TIME, Unmanaged<Box<gint64>>.fromOpaque(data!).takeUnretainedValue().value)
                    return GST_PAD_PROBE_HANDLED
                }, Unmanaged.passRetained(nanoseconds).toOpaque(), { data in Unmanaged<Box<gint64>>.fromOpaque(data!).release() })
                gst_object_unref(source)
            }
            guard let pad = gst_element_get_static_pad(gate.element, "sink") else { continue }
            defer { gst_object_unref(pad) }
            lock.withLock { _ = waiting.insert(index) }
            let context = Unmanaged.passRetained(GateProbe(gates: self, index: index)).toOpaque()
            let mask = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BLOCK.rawValue | GST_PAD_PROBE_TYPE_BUFFER.rawValue
                                        | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
            gst_pad_add_probe(pad, mask, { _, info, data in
                let probe = Unmanaged<GateProbe>.fromOpaque(data!).takeUnretainedValue()
                return probe.gates.arrived(at: probe.index, info: info)
            }, context, { data in Unmanaged<GateProbe>.fromOpaque(data!).release() })
        }
    }

    /// Waits (at most 10 s, or until `giveUp`) until every gate holds data, then seeks upstream of the
    /// first gate and lets the data from the new position through. Returns a problem, or nil.
    func seek(to seconds: Double, exact: Bool, giveUp: () -> Bool) -> String? {
        let deadline = Date(timeIntervalSinceNow: 10)
        lock.lock()
        while !waiting.isEmpty, Date() < deadline, !giveUp() { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.1)) }
        seeked = true
        lock.unlock()
        guard let first = gates.first, let pad = gst_element_get_static_pad(first.element, "sink") else {
            return "the conversion pipeline has no seek gate"
        }
        defer { gst_object_unref(pad) }
        // Exact: decoders clip to the very frame. Copied streams can only start at a key frame: the one before.
        let how = exact ? GST_SEEK_FLAG_ACCURATE.rawValue : GST_SEEK_FLAG_KEY_UNIT.rawValue | GST_SEEK_FLAG_SNAP_BEFORE.rawValue
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | how)
        let event = gst_event_new_seek(1.0, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, gint64(seconds * GStreamer.second),
                                       GST_SEEK_TYPE_NONE, -1)
        // Upstream from the gate's sink pad: the seek reaches the demuxer without passing a muxer (mp4mux
        // cannot take a time seek on its byte stream).
        guard gst_pad_push_event(pad, event) != 0 else { return "the file cannot be read from \(formatClock(seconds))" }
        return nil
    }

    /// A buffer reached gate `index` (streaming thread): held before the seek; after it, let through,
    /// except a raw video frame that does not move time forward.
    fileprivate func arrived(at index: Int, info: UnsafeMutablePointer<GstPadProbeInfo>?) -> GstPadProbeReturn {
        lock.lock()
        defer { lock.unlock() }
        guard seeked else {
            waiting.remove(index)
            lock.broadcast()
            return GST_PAD_PROBE_OK
        }
        guard gates[index].dropsRepeats else { return GST_PAD_PROBE_REMOVE }
        guard let buffer = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_PASS }
        let time = buffer.pointee.pts
        if time != route_gst_clock_time_none() {
            if let last = lastTimes[index], time <= last { return GST_PAD_PROBE_DROP }
            lastTimes[index] = time
        }
        return GST_PAD_PROBE_PASS
    }
}

/// A value handed to a C callback.
private final class Box<Value> {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// What one gate's probe needs: its gates and its index.
private final class GateProbe {
    let gates: SeekGates
    let index: Int
    init(gates: SeekGates, index: Int) {
        self.gates = gates
        self.index = index
    }
}
