// Artwork: an item's cover art fetched from route's server (GStreamer's HTTP source), for the receiver's display.

import CGStreamer
import CGStreamerApp
import CRouteShim
import Foundation

/// A picture and its type.
struct Artwork: Sendable {
    var data: Data
    var mimeType: String

    /// The most a picture may weigh.
    static let limit = 1 << 20

    /// The picture at `url` (route's own served artwork), or nil when it is not a JPEG or PNG of at most 1 MiB.
    /// Blocking, at most 5 s.
    /// - Throws: `LocalFailure` when GStreamer cannot build the fetch.
    static func fetch(_ url: String) throws -> Artwork? {
        gst_init(nil, nil)
        var error: UnsafeMutablePointer<GError>?
        guard let pipeline = gst_parse_launch("souphttpsrc name=route_src timeout=5 ! appsink name=route_sink sync=false", &error), error == nil else {
            if let error { g_error_free(error) }
            throw LocalFailure(description: "GStreamer cannot fetch artwork")
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        guard let source = gst_bin_get_by_name(bin, "route_src"), let sink = gst_bin_get_by_name(bin, "route_sink") else { return nil }
        defer { gst_object_unref(sink) }
        route_object_set_string(source, "location", url)
        gst_object_unref(source)
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
        let appsink = UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstAppSink.self)
        let deadline = ContinuousClock.now + .seconds(5)
        var data = Data()
        while data.count <= limit, ContinuousClock.now < deadline,
              let sample = gst_app_sink_try_pull_sample(appsink, GstClockTime(1e9)) {
            if let buffer = gst_sample_get_buffer(sample) {
                var map = GstMapInfo()
                if gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 {
                    data.append(map.data, count: Int(map.size))
                    gst_buffer_unmap(buffer, &map)
                }
            }
            gst_sample_unref(sample)
        }
        guard data.count <= limit, gst_app_sink_is_eos(appsink) != 0 else { return nil }
        if data.starts(with: [0xFF, 0xD8, 0xFF]) { return Artwork(data: data, mimeType: "image/jpeg") }
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return Artwork(data: data, mimeType: "image/png") }
        return nil
    }
}
