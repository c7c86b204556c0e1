// MIMEType: maps GStreamer caps names to the MIME types devices speak, and back to muxers.

import RouteCore

/// Conversions between GStreamer's caps names and the MIME types devices accept.
public enum MIMEType {
    /// The MIME type to serve a file with this container (or bare codec) as.
    public static func forContainer(_ caps: String, kind: RouteCoreKind) -> String {
        let video = kind.contains(.video)
        switch caps {
        case "audio/x-wav", "audio/wav": return "audio/wav"
        case "audio/mpeg": return video ? "video/mpeg" : "audio/mpeg"
        case "audio/x-flac": return "audio/flac"
        case "application/ogg", "audio/ogg", "video/ogg": return video ? "video/ogg" : "audio/ogg"
        case "audio/x-m4a": return "audio/mp4"
        case "video/quicktime": return video ? "video/mp4" : "audio/mp4"
        case "video/x-matroska": return video ? "video/x-matroska" : "audio/x-matroska"
        case "video/webm", "audio/webm": return video ? "video/webm" : "audio/webm"
        case "video/mpegts": return "video/mp2t"
        case "video/x-msvideo": return "video/x-msvideo"
        case "audio/x-aiff": return "audio/aiff"
        case "image/jpeg", "image/png", "image/gif", "image/webp": return caps
        case "audio/x-opus": return "audio/ogg"
        default: return caps.isEmpty ? "application/octet-stream" : caps
        }
    }
}

/// Shorthand for the capabilities set used to say whether a file is audio, video or image.
public typealias RouteCoreKind = RouteCore.MediaDevice.Capabilities
