// MediaProbe: what a media file contains (container, streams, duration, tags, cover art), via GstDiscoverer.

import CGStreamer
import RouteGIO
import RouteGLib
import CGStreamerPbutils
import CRouteShim
import Foundation
import RouteCore

/// One elementary stream in a file.
public struct StreamInfo: Sendable, Hashable, Codable {
    /// What the stream carries.
    public enum Kind: String, Sendable, Codable { case audio, video, image, subtitles }
    public var kind: Kind
    /// The codec as a GStreamer caps name (`audio/mpeg`, `video/x-h264`, `audio/x-raw`).
    public var codec: String
    /// Full caps, for the curious (`audio/mpeg, mpegversion=(int)4, …`).
    public var caps: String
    public var channels: Int?
    public var sampleRate: Int?
    public var width: Int?
    public var height: Int?
}

/// Everything route needs to know about a file before casting it.
public struct MediaInfo: Sendable, Hashable, Codable {
    /// The real path of the file (symbolic links followed), or the http(s) URL of media on the web.
    public var path: String
    /// Size in bytes (0 for a URL: unknown).
    public var size: UInt64
    /// The container as a GStreamer caps name (`audio/x-wav`, `video/quicktime`), or the codec for a bare stream.
    public var container: String
    /// The MIME type to serve the file as (`audio/wav`, `video/mp4`).
    public var mimeType: String
    /// Seconds, if known.
    public var duration: Double?
    public var seekable: Bool
    public var streams: [StreamInfo]
    public var title: String?
    public var artist: String?
    public var album: String?
    /// Embedded cover art, if any.
    public var coverArt: CoverArt?
    /// Cover art on the web or beside the file (a page's thumbnail, a folder's cover.jpg), when none is embedded.
    public var artwork: ArtworkSource?
    /// Whether it is a live stream: no length, no seeking (a live HLS playlist, a radio stream).
    public var isLive = false

    /// Whether this is media on the web (an http(s) URL) rather than a file.
    public var isRemote: Bool { Self.isRemote(path) }

    /// Whether `path` is an http(s) URL.
    public static func isRemote(_ path: String) -> Bool { WebAddress.isWebURL(path) }

    /// Which of audio, video, image the file is (video wins over audio; a lone picture is an image).
    public var kind: MediaDevice.Capabilities {
        if streams.contains(where: { $0.kind == .video }) { return .video }
        if streams.contains(where: { $0.kind == .audio }) { return .audio }
        return .image
    }

    /// The title to show: the tag, else the file name without extension.
    public var displayTitle: String {
        title ?? Self.defaultTitle(path)
    }

    /// What a file or URL is called before anything is known of it: its name without the extension (a URL's last
    /// path segment, decoded; its host when the path is empty).
    public static func defaultTitle(_ path: String) -> String {
        guard isRemote(path), let url = URL(string: path) else {
            return URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        }
        let name = url.deletingPathExtension().lastPathComponent
        return name.isEmpty || name == "/" ? (url.host ?? path) : name
    }
}

/// An embedded picture.
public struct CoverArt: Sendable, Hashable, Codable {
    public var mimeType: String
    public var data: Data
}

/// Cover art that is not inside the file, and so who may have it read: a picture on this machine only when route found
/// it itself beside the file; a document from the web may name a URL, never a path (its "picture" could be a key).
public enum ArtworkSource: Sendable, Hashable, Codable {
    /// A URL on the web, handed to the device as it is: route does not fetch it.
    case web(String)
    /// A picture route found in the file's folder (cover.jpg), served from here.
    case besideFile(String)
}

/// Probes media files with GStreamer's discoverer.
public enum MediaProbe {
    /// Threads for probes from async code: the discoverer blocks, and the cooperative pool must not.
    private static let threads = BlockingThreads(name: "route-probe", count: 2)

    /// Inspects a file on one of route's probe threads; a cancelled caller stops waiting at once.
    /// - Throws: `MediaError`, as the blocking `probe`; `CancellationError` when the task is cancelled.
    public static func probe(_ path: String, timeout: Double = 10, followsRedirects: Bool = true) async throws -> MediaInfo {
        // The discoverer gives up after its attempts; the wait allows for its start-up on a loaded machine.
        let seconds = attempts(for: path, within: timeout).map(\.seconds).reduce(0, +)
        return try await threads.run(timeout: .milliseconds(Int(seconds * 1000) + 5000),
                                     timedOut: { MediaError.notMedia(path, reason: "GStreamer did not answer within \(Int(seconds) + 5) s") }) {
            try probe(path, timeout: timeout, followsRedirects: followsRedirects) as MediaInfo
        }
    }

    /// Inspects a file. Blocking (runs the discoverer synchronously, at most `timeout` seconds): from
    /// async code, use the async `probe`.
    /// - Throws: `MediaError` naming the file and the problem (missing, directory, unreadable,
    ///   empty, not media).
    /// A URL is probed where it is; without `followsRedirects`, a redirect is a failure (a URL route already followed
    /// hop by hop must not be sent elsewhere now).
    /// `pulling: false` reads a file only as the second try does (tests).
    public static func probe(_ path: String, timeout: Double = 10, followsRedirects: Bool = true, pulling: Bool = true) throws(MediaError) -> MediaInfo {
        // Links are followed first: the file itself is probed, served and sized, not the link. A URL is what it is.
        let remote = MediaInfo.isRemote(path)
        let (absolute, size) = remote ? (path, UInt64(0)) : try MediaError.checkReadableFile(path)
        GStreamer.initialize()
        var error: UnsafeMutablePointer<GError>?
        let guardMark = FetchGuard.mark()
        var info: OpaquePointer?
        let attempts = attempts(for: absolute, within: timeout, pulling: pulling)
        var pushed = false
        for attempt in attempts {
            if let info { g_object_unref(UnsafeMutableRawPointer(info)) }
            if let error { g_error_free(error) }
            error = nil
            pushed = attempt.uri.hasPrefix("pushfile:")
            info = try discover(attempt.uri, within: attempt.seconds, followsRedirects: followsRedirects, &error)
            // The race ends in a timeout, or in the parser's "Internal data stream error" when that reaches the
            // discoverer: either is tried again pushed (a file that is not media fails that way too, in milliseconds).
            let result = info.map { gst_discoverer_info_get_result($0) } ?? GST_DISCOVERER_ERROR
            guard result == GST_DISCOVERER_TIMEOUT || result == GST_DISCOVERER_ERROR else { break }
        }
        defer { if let info { g_object_unref(UnsafeMutableRawPointer(info)) } }
        let result = info.map { gst_discoverer_info_get_result($0) } ?? GST_DISCOVERER_ERROR
        guard let info, result == GST_DISCOVERER_OK || (result == GST_DISCOVERER_MISSING_PLUGINS && hasStreams(info)) else {
            let reason: String
            switch result {
            case GST_DISCOVERER_TIMEOUT:
                if remote { throw .fetchFailed(path, reason: "the server stalls: in \(Int(timeout)) s it sent too little to tell what it is") }
                reason = "GStreamer gave up after \(Int(attempts.map(\.seconds).reduce(0, +))) s"
            case GST_DISCOVERER_MISSING_PLUGINS: reason = "GStreamer lacks a plugin for it"
            default:
                let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
                if remote, let refusal = FetchGuard.refusal(since: guardMark) {
                    if let error { g_error_free(error) }
                    throw .fetchFailed(path, reason: refusal)
                }
                if remote, let error, error.pointee.domain == gst_resource_error_quark() {
                    g_error_free(error)
                    throw .fetchFailed(path, reason: Self.fetchFailure(message))
                }
                reason = message.contains("determine type") ? "its format is not recognised" : message
            }
            if let error { g_error_free(error) }
            throw .notMedia(path, reason: reason)
        }
        if let error { g_error_free(error) }

        var media = MediaInfo(path: absolute, size: size, container: "", mimeType: "application/octet-stream",
                              duration: GStreamer.seconds(UInt64(gst_discoverer_info_get_duration(info))),
                              // Pushed, wavparse calls itself unseekable; a file here can be read anywhere.
                              seekable: pushed || gst_discoverer_info_get_seekable(info) != 0, streams: [])
        media.isLive = gst_discoverer_info_get_live(info) != 0
        var tags = TagReader()
        var containerCaps = ""
        if let top = gst_discoverer_info_get_stream_info(info) {
            (media.container, containerCaps) = capsName(gst_discoverer_stream_info_get_caps(top))
            // The container's own tags first: they are the file's.
            tags.read(gst_discoverer_stream_info_get_tags(top))
            g_object_unref(UnsafeMutableRawPointer(top))
        }
        // Matroska and WebM give each track a name (a stream's title is "Audio" or "English"): there only
        // the container's title is the file's. Elsewhere (Ogg, FLAC, MP4, bare streams) a stream's tags are.
        let namesTracks = ["video/x-matroska", "audio/x-matroska", "video/webm", "audio/webm"].contains(media.container)
        let list = gst_discoverer_info_get_stream_list(info)
        defer { gst_discoverer_stream_info_list_free(list) }
        tags.read(gst_discoverer_info_get_tags(info), titles: !namesTracks)
        forEach(list) { stream in
            tags.read(gst_discoverer_stream_info_get_tags(stream), titles: !namesTracks)
            if let parsed = streamInfo(stream) { media.streams.append(parsed) }
        }
        guard !media.streams.isEmpty else { throw .notMedia(path, reason: "it has no audio, video or picture") }
        // An ID3 or APE tag in front of a bare stream (an MP3) is not a container: the stream is.
        if ["application/x-id3", "application/x-apetag"].contains(media.container), media.streams.count == 1 {
            media.container = media.streams[0].codec
            containerCaps = media.streams[0].caps
        }
        // A bare stream's parser (MP3, ADTS AAC) estimates its length only after some frames, and the
        // discoverer waits 0.1 s for that: on a busy machine it gives 0. Then the file is parsed here.
        if !remote, media.duration ?? 0 == 0, media.streams.count == 1, [.audio, .video].contains(media.streams[0].kind) {
            media.duration = measuredDuration(of: absolute, within: timeout)
        }
        media.title = tags.title
        media.artist = tags.artist
        media.album = tags.album
        media.coverArt = tags.cover
        media.mimeType = MIMEType.forContainer(media.container, caps: containerCaps, kind: media.kind)
        return media
    }

    /// What the discoverer is given for `path` (a file's real path, or a URL), and for how long, in turn while the one
    /// before times out or fails. A file is read as GStreamer reads by default for 3 s, then pushed (`pushfile://`) for all of
    /// `timeout`: pulling, GStreamer 1.22's decodebin can lose a race with a parser's own thread, which pushes data
    /// before decodebin has exposed the parser's pad (aiffparse and wavparse: "streaming stopped, reason not-linked"),
    /// and the discoverer then waits out its whole timeout for a file of milliseconds, or, when the error reaches it,
    /// calls the file unplayable ("Internal data stream error") — in a process where it happens, it tends to again. Pushed, the parser's pad comes and
    /// its data flows on one thread: no race. A file that takes more than 3 s (a slow disk) is read in the second
    /// try. A URL is tried once: a second fetch is another request to a server, and a stall is the server's.
    static func attempts(for path: String, within timeout: Double, pulling: Bool = true) -> [(uri: String, seconds: Double)] {
        guard !MediaInfo.isRemote(path) else { return [(path, timeout)] }
        let uri = GStreamer.uri(forPath: path)
        guard uri.hasPrefix("file://") else { return [(uri, timeout)] }
        guard pulling else { return [("push" + uri, timeout)] }
        return timeout > 3 ? [(uri, 3), ("push" + uri, timeout)] : [(uri, timeout)]
    }

    /// Whether GStreamer 1.22's decodebin can lose the race above when it pulls a file of this container (the parsers
    /// that add their pad and push from their own thread at once: wavparse, aiffparse; an AIFF converted for a Cast
    /// receiver served nothing, once, that way). Conversions push such files (`pushfilesrc`).
    static func pullRaces(_ container: String) -> Bool { ["audio/x-wav", "audio/x-aiff"].contains(container) }

    /// One run of a fresh discoverer on `uri`, at most `seconds`; nil when it gave no result (then `error` says why).
    private static func discover(_ uri: String, within seconds: Double, followsRedirects: Bool,
                                 _ error: inout UnsafeMutablePointer<GError>?) throws(MediaError) -> OpaquePointer? {
        guard let discoverer = gst_discoverer_new(GstClockTime(seconds * GStreamer.second), &error) else {
            throw .pipeline(GLibError("GStreamer's discoverer could not start", error).description)
        }
        defer { g_object_unref(discoverer) }
        if !followsRedirects {
            let noRedirects: @convention(c) (gpointer?, UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = { _, source, _ in
                guard let source, let factory = gst_element_get_factory(source),
                      let name = gst_object_get_name(UnsafeMutableRawPointer(factory).assumingMemoryBound(to: GstObject.self)) else { return }
                defer { g_free(name) }
                guard String(cString: name) == "souphttpsrc" else { return }
                route_object_set_bool(source, "automatic-redirect", 0)
            }
            route_signal_connect(discoverer, "source-setup", unsafeBitCast(noRedirects, to: UnsafeRawPointer.self), nil)
        }
        return gst_discoverer_discover_uri(discoverer, uri, &error)
    }

    /// Souphttpsrc's words for a failed fetch, as a person reads them ("File not found" is its name for a 404).
    static func fetchFailure(_ message: String) -> String {
        switch message {
        case "File not found": return "the server answered 404 Not Found"
        case "Not authorized to access resource", "Forbidden": return "the server refused it (403 Forbidden)"
        default: return message
        }
    }

    /// The length of a single-stream file, from a parser run through it as fast as it reads: exact once
    /// it has read to the end, else its latest estimate after `seconds`; nil when it never had one.
    /// Blocking.
    static func measuredDuration(of path: String, within seconds: Double) -> Double? {
        var error: UnsafeMutablePointer<GError>?
        guard let pipeline = gst_parse_launch("filesrc name=route_src ! parsebin ! fakesink sync=false", &error), error == nil else {
            if let error { g_error_free(error) }
            return nil
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        guard let source = gst_bin_get_by_name(bin, "route_src") else { return nil }
        route_object_set_string(source, "location", path)
        gst_object_unref(source)
        guard gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE,
              let bus = gst_element_get_bus(pipeline) else { return nil }
        defer { gst_object_unref(bus) }
        let deadline = ContinuousClock.now + .seconds(seconds)
        var latest: Double?
        while ContinuousClock.now < deadline {
            let message = gst_bus_timed_pop_filtered(bus, GstClockTime(0.02 * GStreamer.second),
                                                     GstMessageType(GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue))
            latest = GStreamer.duration(of: pipeline) ?? latest
            guard let message else { continue }
            gst_mini_object_unref(UnsafeMutableRawPointer(message).assumingMemoryBound(to: GstMiniObject.self))
            break
        }
        return latest
    }

    private static func hasStreams(_ info: OpaquePointer) -> Bool {
        let list = gst_discoverer_info_get_stream_list(info)
        defer { gst_discoverer_stream_info_list_free(list) }
        return list != nil
    }

    private static func forEach(_ list: UnsafeMutablePointer<GList>?, _ body: (OpaquePointer) -> Void) {
        var node = list
        while let current = node {
            if let data = current.pointee.data { body(OpaquePointer(data)) }
            node = current.pointee.next
        }
    }

    private static func streamInfo(_ stream: OpaquePointer) -> StreamInfo? {
        let nick = String(cString: gst_discoverer_stream_info_get_stream_type_nick(stream))
        let caps = capsName(gst_discoverer_stream_info_get_caps(stream))
        var result = StreamInfo(kind: .audio, codec: caps.name, caps: caps.full)
        switch nick {
        case "audio":
            result.channels = Int(gst_discoverer_audio_info_get_channels(stream))
            result.sampleRate = Int(gst_discoverer_audio_info_get_sample_rate(stream))
        case "video", "video(image)":
            result.kind = nick == "video" ? .video : .image
            result.width = Int(gst_discoverer_video_info_get_width(stream))
            result.height = Int(gst_discoverer_video_info_get_height(stream))
        case "subtitles":
            result.kind = .subtitles
        default:
            return nil
        }
        return result
    }

    /// The structure name and full text of caps (and releases them).
    private static func capsName(_ caps: UnsafeMutablePointer<GstCaps>?) -> (name: String, full: String) {
        guard let caps else { return ("", "") }
        defer { gst_mini_object_unref(UnsafeMutableRawPointer(caps).assumingMemoryBound(to: GstMiniObject.self)) }
        var full = ""
        if let text = gst_caps_to_string(caps) {
            full = String(cString: text)
            g_free(text)
        }
        guard gst_caps_get_size(caps) > 0, let structure = gst_caps_get_structure(caps, 0) else { return ("", full) }
        return (String(cString: gst_structure_get_name(structure)), full)
    }
}

/// Collects the first title, artist, album and picture found in a series of tag lists.
private struct TagReader {
    var title: String?
    var artist: String?
    var album: String?
    var cover: CoverArt?

    /// Reads what is not known yet from `tags`; the title only when `titles` (not from track names).
    mutating func read(_ tags: UnsafePointer<GstTagList>?, titles: Bool = true) {
        guard let list = tags else { return }
        if titles { title = title ?? string(list, GST_TAG_TITLE) }
        artist = artist ?? string(list, GST_TAG_ARTIST)
        album = album ?? string(list, GST_TAG_ALBUM)
        if cover == nil { cover = picture(list) }
    }

    private func string(_ list: UnsafePointer<GstTagList>, _ tag: String) -> String? {
        var value: UnsafeMutablePointer<gchar>?
        guard gst_tag_list_get_string(list, tag, &value) != 0, let value else { return nil }
        defer { g_free(value) }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    private func picture(_ list: UnsafePointer<GstTagList>) -> CoverArt? {
        var sample: OpaquePointer?
        guard gst_tag_list_get_sample(list, GST_TAG_IMAGE, &sample) != 0, let sample else { return nil }
        defer { gst_mini_object_unref(UnsafeMutableRawPointer(sample).assumingMemoryBound(to: GstMiniObject.self)) }
        guard let buffer = gst_sample_get_buffer(sample) else { return nil }
        let size = Int(gst_buffer_get_size(buffer))
        var data = Data(count: size)
        data.withUnsafeMutableBytes { _ = gst_buffer_extract(buffer, 0, $0.baseAddress, gsize(size)) }
        var mime = "image/jpeg"
        if let caps = gst_sample_get_caps(sample), gst_caps_get_size(caps) > 0, let s = gst_caps_get_structure(caps, 0) {
            let name = String(cString: gst_structure_get_name(s))
            if name.hasPrefix("image/") { mime = name }
        }
        return CoverArt(mimeType: mime, data: data)
    }
}
