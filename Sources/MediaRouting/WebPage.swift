// WebPage: the media on a web page, found by yt-dlp (run as a program: route embeds no site's extractor) — its
// title, thumbnail, length and formats; a page with a playlist gives each of its videos.

import Foundation
import RouteCore
import RouteMedia

/// Resolves web pages to their media with yt-dlp.
public enum WebPage {
    /// Threads that wait for yt-dlp: its output is read with blocking calls.
    private static let threads = BlockingThreads(name: "route-yt-dlp", count: 2)

    /// The entries of `page`: one per video (a playlist page gives several), each with its formats, best first.
    /// - Throws: `MediaError.fetchFailed` naming the page when yt-dlp is not installed, fails, finds nothing, or
    ///   takes longer than `timeout`.
    public static func resolve(_ page: String, ytDLP: String, timeout: Duration) async throws -> [QueueEntry] {
        let output = try await run(ytDLP, ["-J", "--no-warnings", "--no-progress", "--socket-timeout", "15", "--", page],
                                   page: page, timeout: timeout)
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
        var entry = QueueEntry(page, title: video["title"] as? String, artwork: video["thumbnail"] as? String,
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

    /// Runs yt-dlp; its standard output.
    private static func run(_ program: String, _ arguments: [String], page: String, timeout: Duration) async throws -> Data {
        let process = Process()
        if program.contains("/") {
            process.executableURL = URL(fileURLWithPath: program)
        } else {
            guard let found = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
                .map({ "\($0)/\(program)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                throw MediaError.fetchFailed(page, reason: "it is a web page, and route finds the media on pages with yt-dlp, "
                                             + "which is not installed (apt install yt-dlp, or pipx install yt-dlp)")
            }
            process.executableURL = URL(fileURLWithPath: found)
        }
        process.arguments = arguments
        let output = Pipe()
        // What yt-dlp says goes to a file: only its last error line is wanted, and a pipe nobody drains could fill.
        let said = FileManager.default.temporaryDirectory.appendingPathComponent("route-yt-dlp-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: said.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: said) }
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: said)
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw MediaError.fetchFailed(page, reason: "yt-dlp could not start: \(error.localizedDescription)")
        }
        // Read on a thread of route's own (blocking reads must not hold the cooperative pool); a deadline or a
        // cancelled task ends yt-dlp, which ends the read.
        let running = RunningProcess(process)
        let data = try await withTaskCancellationHandler {
            try await threads.run(timeout: timeout, timedOut: {
                running.process.terminate()
                return MediaError.fetchFailed(page, reason: "yt-dlp did not finish within \(timeout.components.seconds) s")
            }) {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                running.process.waitUntilExit()
                return data
            }
        } onCancel: {
            running.process.terminate()
        }
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOf: said, encoding: .utf8)) ?? ""
            let line = text.split(whereSeparator: \.isNewline).last { $0.contains("ERROR") }
                .map { $0.replacingOccurrences(of: "ERROR: ", with: "") } ?? "it exited with \(process.terminationStatus)"
            throw MediaError.nothingToPlay(page, reason: "yt-dlp found no media: \(line)")
        }
        return data
    }
}

/// A started process, handed to the thread that waits for it and to the deadline that may end it.
private final class RunningProcess: @unchecked Sendable {
    // Safety: Process's terminate, waitUntilExit and terminationStatus may be called from any thread.
    let process: Process
    init(_ process: Process) { self.process = process }
}
