// MIMEType: maps GStreamer caps names to the MIME types devices speak, and back to muxers.

import RouteCore

/// Conversions between GStreamer's caps names and the MIME types devices accept.
public enum MIMEType {
    /// The MIME type to serve a file as, from its container (or bare codec) caps name and full caps: the
    /// contents decide, never the file's extension (an ADTS AAC stream is `audio/aac`, an MP3 `audio/mpeg`).
    public static func forContainer(_ name: String, caps: String = "", kind: RouteCoreKind) -> String {
        let video = kind.contains(.video)
        switch name {
        case "audio/x-wav", "audio/wav": return "audio/wav"
        case "audio/mpeg" where !video:
            // mpegversion 1 is MP1/2/3; 2 and 4 are AAC (ADTS or ADIF).
            return caps.contains("mpegversion=(int)2") || caps.contains("mpegversion=(int)4") ? "audio/aac" : "audio/mpeg"
        case "audio/mpeg": return "video/mpeg"
        case "video/mpeg": return "video/mpeg"
        case "audio/x-ac3": return "audio/ac3"
        case "audio/x-eac3": return "audio/eac3"
        case "audio/x-dts": return "audio/vnd.dts"
        case "audio/x-wavpack": return "audio/x-wavpack"
        case "audio/x-amr-nb-sh": return "audio/amr"
        case "video/x-ms-asf": return video ? "video/x-ms-wmv" : "audio/x-ms-wma"
        case "video/x-flv": return "video/x-flv"
        case "audio/x-flac": return "audio/flac"
        case "application/ogg", "audio/ogg", "video/ogg": return video ? "video/ogg" : "audio/ogg"
        case "audio/x-m4a": return "audio/mp4"
        case "video/quicktime" where caps.contains("variant=(string)3gpp"): return video ? "video/3gpp" : "audio/3gpp"
        case "video/quicktime": return video ? "video/mp4" : "audio/mp4"
        case "video/x-matroska": return video ? "video/x-matroska" : "audio/x-matroska"
        case "video/webm", "audio/webm": return video ? "video/webm" : "audio/webm"
        case "video/mpegts": return "video/mp2t"
        case "video/x-msvideo": return "video/x-msvideo"
        case "audio/x-aiff": return "audio/aiff"
        case "image/jpeg", "image/png", "image/gif", "image/webp": return name
        case "audio/x-opus": return "audio/ogg"
        case "application/x-hls": return "application/vnd.apple.mpegurl"
        case "application/dash+xml": return "application/dash+xml"
        default: return name.isEmpty ? "application/octet-stream" : name
        }
    }
}

/// Shorthand for the capabilities set used to say whether a file is audio, video or image.
public typealias RouteCoreKind = RouteCore.MediaDevice.Capabilities
