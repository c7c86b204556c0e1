// MediaFileKind: what kind of media a file is by its name alone (sound, video, picture) — for a folder's files before
// they are probed, and for what a person asks a picker to play.

import FoundationEssentials

/// A kind of media file, judged by the file's extension.
public enum MediaFileKind: String, CaseIterable, Sendable {
    case audio, video, image

    /// File extensions of each kind (lower case, no dot).
    public static let audioExtensions: Set<String> = ["mp3", "flac", "ogg", "oga", "opus", "m4a", "aac", "wav", "aif", "aiff",
                                                      "wma", "ape", "wv", "mka", "alac", "mp2", "ac3", "dsf"]
    public static let videoExtensions: Set<String> = ["mp4", "m4v", "mkv", "webm", "avi", "mov", "mpg", "mpeg", "ts", "m2ts",
                                                      "wmv", "flv", "3gp", "ogv", "vob"]
    public static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "gif", "webp", "bmp"]

    /// The kind of the file at `path`, or nil when its extension names none.
    public init?(path: String) {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        if Self.audioExtensions.contains(ext) { self = .audio }
        else if Self.videoExtensions.contains(ext) { self = .video }
        else if Self.imageExtensions.contains(ext) { self = .image }
        else { return nil }
    }

    /// The capability a device needs to play it.
    public var capability: MediaDevice.Capabilities {
        switch self {
        case .audio: .audio
        case .video: .video
        case .image: .image
        }
    }
}
