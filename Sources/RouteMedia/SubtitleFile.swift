// SubtitleFile: whether a file handed over as subtitles is subtitles — route serves it to the network, so a key or a
// document named as "subtitles" (or reached by a link from beside a video) must never go out.

import Foundation

/// Checks subtitle files before they are served.
public enum SubtitleFile {
    /// Why `path` may not be served as the subtitles of `video`; nil when it may. Subtitles are text with cue timings
    /// (WebVTT's header, SRT's cue timings `00:00:01,000 --> …`, SubStation's `[Script Info]`) in their first 64 KiB;
    /// a link to them may not lead out of its own folder or the video's.
    public static func refusal(_ path: String, video: String? = nil) -> String? {
        var link = stat()
        guard lstat(path, &link) == 0 else { return "\(path) does not exist" }
        if link.st_mode & S_IFMT == S_IFLNK {
            guard let target = realpath(path, nil) else { return "\(path) is a link to nothing" }
            let resolved = String(cString: target)
            free(target)
            let folder = URL(fileURLWithPath: resolved).deletingLastPathComponent().path
            let allowed = [path, video].compactMap { $0 }.map { realFolder(of: $0) }
            guard allowed.contains(folder) else {
                return "\(path) is a link to \(resolved), outside its folder and the video's; route serves no subtitles from there"
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return "\(path) is not a regular file" }
        guard let handle = FileHandle(forReadingAtPath: path) else { return "\(path) cannot be read" }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 64 * 1024)) ?? Data()
        return isSubtitles(head) ? nil : "\(path) is not subtitles (no WebVTT header, SRT cue or SubStation script in it)"
    }

    /// Whether `head`, the start of a file, reads as subtitles.
    package static func isSubtitles(_ head: Data) -> Bool {
        guard !head.isEmpty, !head.contains(0) else { return false }
        var text = String(decoding: head, as: UTF8.self)
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        let start = text.drop { $0.isWhitespace }
        return start.hasPrefix("WEBVTT") || start.hasPrefix("[Script Info]") || text.split(whereSeparator: \.isNewline).contains(where: isCueTiming)
    }

    /// Whether `line` is a cue's timing, "00:00:01,000 --> 00:00:02,500" (SRT) and the like.
    private static func isCueTiming(_ line: Substring) -> Bool {
        guard let arrow = line.range(of: "-->") else { return false }
        let before = line[..<arrow.lowerBound].trimmingCharacters(in: .whitespaces)
        return before.contains(":") && before.allSatisfy { $0.isASCII && ($0.isNumber || ":.,".contains($0)) }
    }

    /// The real folder a path is in, its links resolved.
    private static func realFolder(of path: String) -> String {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard let real = realpath(folder, nil) else { return folder }
        defer { free(real) }
        return String(cString: real)
    }
}
