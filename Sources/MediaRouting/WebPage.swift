// WebPage: the media on a web page, found by yt-dlp (run as a program: route embeds no site's extractor) — its
// title, thumbnail, length and formats; a page with a playlist gives each of its videos.

import Foundation
import RouteCore
import RouteMedia

/// Resolves web pages to their media with yt-dlp.
public enum WebPage {
    /// The entries of `page`: one per video (a playlist page gives several), each with its formats, best first.
    /// - Throws: `MediaError.fetchFailed` naming the page when yt-dlp is not installed, fails, finds nothing, or
    ///   takes longer than `timeout`.
    public static func resolve(_ page: String, ytDLP: String, timeout: Duration) async throws -> [QueueEntry] {
        let output = try await run(ytDLP, ["-J", "--no-warnings", "--no-progress", "--socket-timeout", "15", "--", page],
                                   page: page, timeout: timeout)
        return try entries(page: page, json: output)
    }

    /// The entries of yt-dlp's JSON for `page` (`-J`): its video, or each video of its playlist.
    /// - Throws: `MediaError` when it is not JSON or holds no media route can fetch.
    package static func entries(page: String, json output: Data) throws -> [QueueEntry] {
        guard let json = try? JSONSerialization.jsonObject(with: output) as? [String: Any] else {
            throw MediaError.fetchFailed(page, reason: "yt-dlp said something that is not JSON")
        }
        let videos = (json["_type"] as? String) == "playlist" ? (json["entries"] as? [[String: Any]] ?? []) : [json]
        let entries = videos.compactMap { entry(page: page, $0) }
        guard !entries.isEmpty else { throw MediaError.nothingToPlay(page, reason: "yt-dlp found no media on the page") }
        return entries
    }

    /// An entry for one of yt-dlp's videos; nil when it has no format route can fetch.
    static func entry(page: String, _ video: [String: Any]) -> QueueEntry? {
        let candidates = (video["formats"] as? [[String: Any]]) ?? [video]
        let formats = candidates.compactMap(format).enumerated().sorted { rank($0.element, $0.offset) > rank($1.element, $1.offset) }.map(\.element)
        guard !formats.isEmpty else { return nil }
        // The page's picture is a URL on the web or nothing: a page names no file here, whatever yt-dlp passes on.
        let thumbnail = (video["thumbnail"] as? String).flatMap { WebAddress.isWebURL($0) ? ArtworkSource.web($0) : nil }
        var entry = QueueEntry(page, title: video["title"] as? String, artwork: thumbnail,
                               duration: (video["duration"] as? NSNumber)?.doubleValue)
        entry.artist = (video["artist"] as? String) ?? (video["uploader"] as? String)
        entry.isLive = (video["is_live"] as? Bool) ?? false
        entry.formats = formats
        return entry
    }

    /// A format route can hand on or fetch: over plain HTTP or HLS, with sound or picture.
    static func format(_ format: [String: Any]) -> WebFormat? {
        guard let url = format["url"] as? String, MediaInfo.isRemote(url) else { return nil }
        let proto = (format["protocol"] as? String) ?? "https"
        let vcodec = (format["vcodec"] as? String) ?? "unknown", acodec = (format["acodec"] as? String) ?? "unknown"
        let hasVideo = vcodec != "none", hasAudio = acodec != "none"
        guard hasVideo || hasAudio else { return nil }
        let ext = ((format["ext"] as? String) ?? "").lowercased()
        let mimeType: String
        if proto.hasPrefix("m3u8") { mimeType = "application/vnd.apple.mpegurl" }
        else if ["http", "https"].contains(proto) {
            switch ext {
            case "mp4", "m4v", "mov": mimeType = hasVideo ? "video/mp4" : "audio/mp4"
            case "m4a": mimeType = "audio/mp4"
            case "webm": mimeType = hasVideo ? "video/webm" : "audio/webm"
            case "mp3": mimeType = "audio/mpeg"
            case "ogg", "oga", "opus": mimeType = "audio/ogg"
            case "flac": mimeType = "audio/flac"
            case "wav": mimeType = "audio/wav"
            case "ts": mimeType = "video/mp2t"
            default: mimeType = "application/octet-stream"
            }
        } else { return nil }
        return WebFormat(url: url, mimeType: mimeType, hasVideo: hasVideo, hasAudio: hasAudio)
    }

    /// Better formats first: sound and picture together, then picture, then yt-dlp's own order (worst to best).
    private static func rank(_ format: WebFormat, _ order: Int) -> Int {
        (format.hasAudio && format.hasVideo ? 2_000_000 : format.hasVideo ? 1_000_000 : 0) + order
    }

    /// The best format of `formats` that some route of `device` takes as it is, else the best (to be converted).
    public static func choose(_ formats: [WebFormat], for device: MediaDevice?) -> WebFormat? {
        guard let device else { return formats.first }
        let wanted = device.routes.contains { $0.capabilities.contains(.video) } ? formats : formats.filter { $0.hasAudio }
        return wanted.first { format in device.routes.contains { $0.accepts.accepts(mimeType: format.mimeType) } } ?? wanted.first ?? formats.first
    }

    /// Runs yt-dlp; its standard output. It dies with route, its data memory is at most 1 GiB and what it says at most
    /// 64 MiB: a page that never ends (or a playlist of millions) stops there, with a line that says so.
    private static func run(_ program: String, _ arguments: [String], page: String, timeout: Duration) async throws -> Data {
        let path: String
        if program.contains("/") {
            path = program
        } else {
            guard let found = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
                .map({ "\($0)/\(program)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                throw MediaError.fetchFailed(page, reason: "it is a web page, and route finds the media on pages with yt-dlp, "
                                             + "which is not installed (apt install yt-dlp, or pipx install yt-dlp)")
            }
            path = found
        }
        // What yt-dlp says goes to a file: only its last error line is wanted.
        let said = FileManager.default.temporaryDirectory.appendingPathComponent("route-yt-dlp-\(UUID().uuidString).log").path
        let errors = open(said, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard errors >= 0 else { throw MediaError.fetchFailed(page, reason: "yt-dlp could not start: \(String(cString: strerror(errno)))") }
        defer { close(errors); unlink(said) }
        let result: HelperProcess.Result
        do {
            result = try await HelperProcess.run(path, arguments, errors: errors, timeout: timeout)
        } catch HelperProcess.Failure.notStarted(let why) {
            throw MediaError.fetchFailed(page, reason: "yt-dlp could not start: \(why)")
        } catch HelperProcess.Failure.timedOut {
            throw MediaError.fetchFailed(page, reason: "yt-dlp did not finish within \(timeout.components.seconds) s")
        } catch HelperProcess.Failure.tooMuchOutput(let bytes) {
            throw MediaError.fetchFailed(page, reason: "yt-dlp said more than \(bytes >> 20) MiB about it, more than route reads")
        }
        guard result.status == 0 else {
            let text = (try? String(contentsOfFile: said, encoding: .utf8)) ?? ""
            let memory = text.contains("MemoryError") ? "it ran out of the 1 GiB route gives it" : nil
            let line = text.split(whereSeparator: \.isNewline).last { $0.contains("ERROR") }
                .map { $0.replacingOccurrences(of: "ERROR: ", with: "") } ?? memory ?? "it exited with \(result.status)"
            throw MediaError.nothingToPlay(page, reason: "yt-dlp found no media: \(line)")
        }
        return result.output
    }
}
