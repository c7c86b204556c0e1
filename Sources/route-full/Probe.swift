// `route probe`: prints what a media file contains, as text or JSON.

import Foundation
import RouteCLI
import RouteCore
import RouteMedia

enum Probe {
    static func run(_ parsed: ParsedArguments) throws -> ExitCode {
        let given = parsed.positionals[0]
        // A person named it: a URL on this machine may be fetched (a page it points to may not point back here).
        let allowance = MediaInfo.isRemote(given) ? FetchGuard.allow(given) : nil
        defer { withExtendedLifetime(allowance) {} }
        let info = try MediaProbe.probe(given)
        if parsed.has("json") {
            print(try JSONOutput.string(ProbeReport(info)))
            return .success
        }
        let via = info.isRemote || URL(fileURLWithPath: given).standardizedFileURL.path == info.path ? "" : " (via \(given))"
        var lines = [
            info.isRemote ? "url:       \(info.path)\(info.isLive ? " (live)" : "")" : "file:      \(info.path)\(via)",
            info.isRemote ? "size:      unknown (on the web)" : "size:      \(info.size) bytes",
            "container: \(info.container) (served as \(info.mimeType))",
            "duration:  \(info.duration.map { formatClock($0) + String(format: " (%.3f s)", $0) } ?? "unknown")",
        ]
        if let title = info.title { lines.append("title:     \(title)") }
        if let artist = info.artist { lines.append("artist:    \(artist)") }
        if let album = info.album { lines.append("album:     \(album)") }
        if let art = info.coverArt { lines.append("cover art: \(art.mimeType), \(art.data.count) bytes") }
        for (index, stream) in info.streams.enumerated() {
            var detail = "\(stream.kind.rawValue) \(stream.codec)"
            if let channels = stream.channels { detail += ", \(channels) ch" }
            if let rate = stream.sampleRate, rate > 0 { detail += ", \(rate) Hz" }
            if let width = stream.width, let height = stream.height { detail += ", \(width)x\(height)" }
            lines.append("stream \(index):  \(detail)")
        }
        print(lines.joined(separator: "\n"))
        return .success
    }
}

/// What `probe --json` prints: the probe, with the cover art described (type and size) rather than embedded.
struct ProbeReport: Encodable {
    let info: MediaInfo

    init(_ info: MediaInfo) { self.info = info }

    private struct Art: Encodable {
        let mimeType: String
        let bytes: Int
    }

    private enum Keys: String, CodingKey {
        case path, size, container, mimeType, duration, seekable, streams, title, artist, album, coverArt
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(info.path, forKey: .path)
        try container.encode(info.size, forKey: .size)
        try container.encode(info.container, forKey: .container)
        try container.encode(info.mimeType, forKey: .mimeType)
        try container.encodeIfPresent(info.duration, forKey: .duration)
        try container.encode(info.seekable, forKey: .seekable)
        try container.encode(info.streams, forKey: .streams)
        try container.encodeIfPresent(info.title, forKey: .title)
        try container.encodeIfPresent(info.artist, forKey: .artist)
        try container.encodeIfPresent(info.album, forKey: .album)
        if let art = info.coverArt {
            try container.encode(Art(mimeType: art.mimeType, bytes: art.data.count), forKey: .coverArt)
        }
    }
}
