// GStreamer: the one place that initialises GStreamer and wraps the C calls the rest of RouteMedia shares.

import CGStreamer
import RouteGIO
import RouteGLib
import CRouteShim
import RouteCore
import Foundation

/// Process-wide GStreamer set-up and small typed helpers over the C API.
enum GStreamer {
    private static let initialized: Bool = {
        gst_init(nil, nil)
        preferLegacyAdaptiveDemuxers()
        // Every connection GStreamer opens asks route first (unless http_proxy names a proxy of the person's own).
        _ = FetchGuard.isActive
        return true
    }()

    /// GStreamer 1.22.0 to 1.22.6's adaptive demuxers (hlsdemux2, dashdemux2, mssdemux2: Debian 12 has 1.22.0) race a
    /// seek against a fragment download already queued: the stale download completes into the restarted stream, and
    /// the process aborts ("download_request_set_uri: assertion failed: (request->in_use == FALSE)") or the stream
    /// stalls. Converting an HLS stream from a position hit it now and then. Fixed in 1.22.7 ("adaptivedemux2: Do not
    /// submit_transfer when cancelled"); before that, decodebin is made to choose the older demuxer of each kind
    /// (gst-plugins-bad's), where one is installed.
    private static func preferLegacyAdaptiveDemuxers() {
        let registry = gst_registry_get()
        for (demuxer, legacy) in [("hlsdemux2", "hlsdemux"), ("dashdemux2", "dashdemux"), ("mssdemux2", "mssdemux")] {
            guard let feature = gst_registry_lookup_feature(registry, demuxer) else { continue }
            defer { gst_object_unref(UnsafeMutableRawPointer(feature)) }
            guard gst_plugin_feature_check_version(feature, 1, 22, 7) == 0,
                  let older = gst_registry_lookup_feature(registry, legacy) else { continue }
            gst_object_unref(UnsafeMutableRawPointer(older))
            gst_plugin_feature_set_rank(feature, guint(GST_RANK_NONE.rawValue))
        }
    }

    /// Initialises GStreamer once; cheap to call again.
    static func initialize() { _ = initialized }

    /// Nanoseconds per second (GST_SECOND).
    static let second = Double(route_gst_second())

    /// Converts a GstClockTime to seconds; nil for GST_CLOCK_TIME_NONE.
    static func seconds(_ time: UInt64) -> Double? {
        time == UInt64(route_gst_clock_time_none()) ? nil : Double(time) / second
    }

    /// What `element` (a pipeline) answers to a duration query, in seconds; nil when it does not know yet.
    static func duration(of element: UnsafeMutablePointer<GstElement>) -> Double? {
        var value: gint64 = 0
        guard gst_element_query_duration(element, GST_FORMAT_TIME, &value) != 0, value > 0 else { return nil }
        return Double(value) / second
    }

    /// Builds an element from a pipeline description (`fakesink sync=true`, `pulsesink`), with
    /// ghost pads so it can be used as a sink.
    static func bin(from description: String, purpose: String) throws -> UnsafeMutablePointer<GstElement> {
        var error: UnsafeMutablePointer<GError>?
        guard let element = gst_parse_bin_from_description(description, 1, &error), error == nil else {
            throw MediaError.pipeline("\(purpose) \"\(description)\" is not a valid GStreamer pipeline: "
                + GLibError("", error).description.dropFirst(2))
        }
        return UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstElement.self)
    }

    /// The element that reads `path`: HTTP for an http(s) URL, else the file.
    static func sourceElement(for path: String) -> String {
        MediaInfo.isRemote(path) ? "souphttpsrc" : "filesrc"
    }

    /// The file:// URI of a path.
    static func uri(forPath path: String) -> String {
        guard let raw = route_filename_to_uri(path) else { return "file://" + path }
        defer { g_free(raw) }
        return String(cString: raw)
    }
}

/// Errors from the media layer, each with a message that names the file or pipeline and what to do.
public enum MediaError: Error, Equatable, CustomStringConvertible {
    /// The path does not exist.
    case missingFile(String)
    /// The path is a directory.
    case directory(String)
    /// The file exists but cannot be read.
    case unreadable(String)
    /// The file is empty.
    case emptyFile(String)
    /// The path is a FIFO, socket or device: route needs a file it can read from any offset.
    case notAFile(String, kind: String)
    /// GStreamer cannot make sense of the file.
    case notMedia(String, reason: String)
    /// Nothing the device takes can be made from the file.
    case unplayable(String, device: String, reason: String)
    /// A URL could not be fetched (an HTTP error, no answer, a refused address); `reason` says which.
    case fetchFailed(String, reason: String)
    /// A folder, playlist or page that holds nothing to play; `reason` says what it holds.
    case nothingToPlay(String, reason: String)
    /// A pipeline failed to build or run.
    case pipeline(String)
    /// The media server could not start.
    case server(String)

    public var description: String {
        switch self {
        case .missingFile(let path): return "\(path): no such file; check the path"
        case .directory(let path): return "\(path) is a directory; give the media files inside it"
        case .unreadable(let path): return "\(path) cannot be read (permission denied); check its permissions"
        case .emptyFile(let path): return "\(path) is empty (0 bytes); it is not a media file"
        case .notAFile(let path, let kind): return "\(path) is \(kind), not a file; route plays files it can read from any point"
        case .notMedia(let path, let reason): return "\(path) is not a media file route can play (\(reason))"
        case .unplayable(let path, let device, let reason): return "\(path) cannot be played on \(device): \(reason)"
        case .fetchFailed(let url, let reason): return "\(url) could not be fetched: \(reason)"
        case .nothingToPlay(let source, let reason): return "\(source): nothing to play (\(reason))"
        case .pipeline(let message): return message
        case .server(let message): return "the media server could not start: \(message)"
        }
    }

    /// Checks that `path` names a readable, non-empty regular file (after following symbolic links);
    /// returns the file's real path and size. A descriptor's path (`/proc/self/fd/N`, a file a client sent) is kept as
    /// it is: what it was opened as may not be visible from here.
    public static func checkReadableFile(_ path: String) throws(MediaError) -> (path: String, size: UInt64) {
        var link = stat()
        guard lstat(path, &link) == 0 else { throw .missingFile(path) }
        var info = stat()
        let descriptor = path.hasPrefix("/proc/self/fd/")
        guard stat(path, &info) == 0, let real = descriptor ? strdup(path) : realpath(path, nil) else {
            // A link whose target is gone.
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
            throw .missingFile("\(path) (a link to \(target), which does not exist)")
        }
        let resolved = String(cString: real)
        free(real)
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .directory(path)
        case S_IFIFO: throw .notAFile(path, kind: "a named pipe (FIFO)")
        case S_IFSOCK: throw .notAFile(path, kind: "a socket")
        case S_IFCHR, S_IFBLK: throw .notAFile(path, kind: "a device")
        default: throw .notAFile(path, kind: "not a regular file")
        }
        guard access(resolved, R_OK) == 0 else { throw .unreadable(path) }
        if info.st_size == 0 { throw .emptyFile(path) }
        return (resolved, UInt64(info.st_size))
    }
}

extension MediaError: RouteErrorCoded {
    /// A file or source route cannot use is bad input; GStreamer, the media server or a device failing to play it is
    /// a failure of no particular kind.
    public var routeErrorCode: RouteError.Code? {
        switch self {
        case .pipeline, .server, .unplayable: return nil
        default: return .badInput
        }
    }
}
