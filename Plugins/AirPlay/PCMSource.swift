// PCMSource: what an AirPlay receiver plays, decoded from route's served URL by GStreamer into 44.1 kHz 16-bit
// stereo (or, for route's desktop audio, fetched as it is), in packets of 352 frames, as the sender takes them. Blocking.

import CGStreamer
import CGStreamerApp
import CRouteShim
import Foundation

/// Decodes one URL to big-endian 16-bit stereo at 44.1 kHz (RAOP's audio), a packet at a time.
final class PCMSource: @unchecked Sendable {
    // Safety: used by one thread at a time (under RAOPStreamer's lock, or before the streamer has it).
    /// Frames in one RTP packet.
    static let framesPerPacket = 352
    static let bytesPerFrame = 4
    static let sampleRate = 44100

    private let pipeline: UnsafeMutablePointer<GstElement>
    private let sink: UnsafeMutablePointer<GstElement>
    private var pending = Data()
    /// The stream ended: what is left in `pending` is the last packet.
    private(set) var ended = false
    /// A live stream (desktop audio): what piles up while nothing is sent is old, and dropped.
    private let live: Bool

    /// Starts decoding `url`, served as `mimeType`; `live`: a live stream, of which only the newest 8 buffers are kept
    /// while unread. A live stream of RAOP's own samples (route's desktop audio, L16 at 44.1 kHz stereo) is only
    /// fetched and cut into whole frames: no type finding, buffering or conversion, which were most of its CPU.
    /// - Throws: `LocalFailure` when GStreamer cannot build the pipeline.
    init(url: String, mimeType: String, live: Bool = false) throws {
        gst_init(nil, nil)
        self.live = live
        let sink = "appsink name=route_sink sync=false " + (live ? "max-buffers=8 drop=true" : "max-buffers=16 drop=false")
        // Whole frames into the sink, which drops whole buffers of a live stream while it is not read: an HTTP read
        // ends where it likes, and a dropped piece of a frame would shift every sample after it.
        let raw = live && Self.isRAOPSamples(mimeType)
        let description = raw
            ? "souphttpsrc name=route_src ! rawaudioparse use-sink-caps=false format=pcm pcm-format=s16be "
                + "sample-rate=\(Self.sampleRate) num-channels=2 ! " + sink
            : "uridecodebin name=route_src ! audioconvert ! audioresample ! "
                + "audio/x-raw,format=S16BE,rate=\(Self.sampleRate),channels=2,layout=interleaved ! " + sink
        var error: UnsafeMutablePointer<GError>?
        guard let pipeline = gst_parse_launch(description, &error), error == nil else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown"
            if let error { g_error_free(error) }
            throw LocalFailure(description: "GStreamer cannot decode for AirPlay: \(message)")
        }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        guard let source = gst_bin_get_by_name(bin, "route_src"), let sink = gst_bin_get_by_name(bin, "route_sink") else {
            gst_object_unref(pipeline)
            throw LocalFailure(description: "GStreamer's decoding pipeline lacks its elements")
        }
        route_object_set_string(source, raw ? "location" : "uri", url)
        gst_object_unref(source)
        self.pipeline = pipeline
        self.sink = sink
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
    }

    /// Whether `mimeType` is big-endian 16-bit stereo at 44.1 kHz (`audio/L16;rate=44100;channels=2`).
    static func isRAOPSamples(_ mimeType: String) -> Bool {
        let parts = mimeType.lowercased().split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        return parts.first == "audio/l16" && Set(parts.dropFirst()) == ["rate=\(sampleRate)", "channels=2"]
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(sink)
        gst_object_unref(pipeline)
    }

    /// The next packet's samples (352 frames, or `bytes` of them; the last one may be shorter), nil at the end. Waits
    /// at most `timeout` seconds for the decoder, looking at GStreamer's messages every 0.2 s (a URL that fails fails at
    /// once).
    /// - Throws: `LocalFailure` with GStreamer's words when decoding fails or stalls.
    func nextPacket(bytes size: Int = framesPerPacket * bytesPerFrame, timeout: Double = 10) throws -> Data? {
        let appsink = UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self)
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        // A live stream that came faster than it plays (the sound server's pushes and the silence filling a pause in
        // them overlap a little) would otherwise be heard later and later: beyond a tenth of a second, the oldest goes.
        if live {
            take(waitingFor: 0, upTo: .max)
            if pending.count > Self.sampleRate / 10 * Self.bytesPerFrame { dropBacklog(keeping: 0.02) }
        }
        while pending.count < size, !ended {
            if take(waitingFor: 0.2, upTo: size) {
                continue
            } else if gst_app_sink_is_eos(appsink) != 0 {
                ended = true
            }
            if let failure = failure() { throw LocalFailure(description: failure) }
            if pending.count < size, !ended, ContinuousClock.now >= deadline {
                throw LocalFailure(description: "the media did not decode within \(Int(timeout)) s")
            }
        }
        guard !pending.isEmpty else { return nil }
        let packet = Data(pending.prefix(size))
        pending = Data(pending.dropFirst(packet.count))
        return packet
    }

    /// Moves decoded samples waiting in the sink to `pending` until it holds `limit` bytes or the sink is empty,
    /// waiting at most `seconds` for the first; whether there were any.
    @discardableResult
    private func take(waitingFor seconds: Double, upTo limit: Int) -> Bool {
        let appsink = UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self)
        var took = false
        var wait = GstClockTime(seconds * 1e9)
        while pending.count < limit, let sample = gst_app_sink_try_pull_sample(appsink, wait) {
            defer { gst_sample_unref(sample) }
            wait = 0
            took = true
            if let buffer = gst_sample_get_buffer(sample) {
                var map = GstMapInfo()
                if gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 {
                    pending.append(map.data, count: Int(map.size))
                    gst_buffer_unmap(buffer, &map)
                }
            }
        }
        return took
    }

    /// For a live stream: drops what arrived and was not sent but the newest `cushion` seconds. What piled up while
    /// the receiver was asked the time, or while paused, would otherwise delay the stream for as long as it plays.
    func dropBacklog(keeping cushion: Double = 0) {
        guard live else { return }
        take(waitingFor: 0, upTo: .max)
        let keep = Int(cushion * Double(Self.sampleRate)) * Self.bytesPerFrame
        if pending.count > keep { pending = Data(pending.suffix(keep)) }
    }

    /// Jumps to `seconds` from the start; what was decoded before is dropped.
    /// - Throws: `LocalFailure` when the media cannot seek.
    func seek(to seconds: Double) throws {
        pending = Data()
        ended = false
        // A pipeline just made has not prerolled yet, and cannot seek until it has (at once for one that plays); one
        // that failed says why, rather than that it cannot seek.
        _ = gst_element_get_state(pipeline, nil, nil, GstClockTime(5e9))
        if let failure = failure() { throw LocalFailure(description: failure) }
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
        guard gst_element_seek_simple(pipeline, GST_FORMAT_TIME, flags, gint64(seconds * 1e9)) != 0 else {
            throw LocalFailure(description: "the media cannot seek to \(seconds) s")
        }
    }

    /// The length in seconds, once known.
    var duration: Double? {
        var nanoseconds: gint64 = 0
        guard gst_element_query_duration(pipeline, GST_FORMAT_TIME, &nanoseconds) != 0, nanoseconds > 0 else { return nil }
        return Double(nanoseconds) / 1e9
    }

    /// The error GStreamer posted, if any; every other message is dropped (a stream's buffering and tags would pile
    /// up on the bus for as long as it plays).
    private func failure() -> String? {
        guard let bus = gst_element_get_bus(pipeline) else { return nil }
        defer { gst_object_unref(bus) }
        while let message = gst_bus_pop(bus) {
            defer { gst_message_unref(message) }
            guard message.pointee.type == GST_MESSAGE_ERROR else { continue }
            var error: UnsafeMutablePointer<GError>?
            gst_message_parse_error(message, &error, nil)
            defer { if let error { g_error_free(error) } }
            return "the media cannot be decoded: " + (error.map { String(cString: $0.pointee.message) } ?? "GStreamer says no more")
        }
        return nil
    }
}
