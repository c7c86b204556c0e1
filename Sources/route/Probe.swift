// `route probe`: prints what a media file contains, as text or JSON.

import Foundation
import RouteCore
import RouteMedia

enum Probe {
    static func run(_ parsed: ParsedArguments) throws -> ExitCode {
        let info = try MediaProbe.probe(parsed.positionals[0])
        if parsed.has("json") {
            print(try JSONOutput.string(info))
            return .success
        }
        var lines = [
            "file:      \(info.path)",
            "size:      \(info.size) bytes",
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

/// JSON for `--json` output: pretty, keys sorted, so scripts and people can both read it.
enum JSONOutput {
    static func string<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
