// PlaylistFile: reads the playlists people have — M3U and M3U8 (with #EXTINF titles and lengths), PLS and XSPF —
// into their entries, in order. Locations are returned as written; the caller resolves them.

import Foundation
import RouteMedia
import RouteXML

/// Parses playlist files.
public enum PlaylistFile {
    /// One entry of a playlist: where it is, as written, and the title and length the playlist gives it.
    public struct Item: Sendable, Equatable {
        public var location: String
        public var title: String?
        public var duration: Double?
    }

    /// The playlist kind (`m3u`, `pls`, `xspf`) of a response, by its type, else by its URL's extension; nil when it
    /// is not a playlist.
    public static func kind(mimeType: String, extension ext: String) -> String? {
        switch mimeType {
        case "audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl", "application/vnd.apple.mpegurl": return "m3u"
        case "audio/x-scpls", "application/pls+xml": return "pls"
        case "application/xspf+xml": return "xspf"
        default: return CastSources.playlistExtensions.contains(ext) ? ext : nil
        }
    }

    /// The entries of a playlist of `kind` (`m3u`, `m3u8`, `pls`, `xspf`); `name` names it in errors.
    /// - Throws: `MediaError.notMedia` when an XSPF is not XML.
    public static func parse(_ data: Data, kind: String, name: String) throws -> [Item] {
        switch kind {
        case "pls": return pls(text(data))
        case "xspf": return try xspf(data, name: name)
        default: return m3u(text(data))
        }
    }

    /// UTF-8 (a byte order mark dropped), else ISO-8859-1, as old .m3u files are written.
    static func text(_ data: Data) -> String {
        let body = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data[...]
        return String(data: body, encoding: .utf8) ?? String(data: body, encoding: .isoLatin1) ?? ""
    }

    static func m3u(_ text: String) -> [Item] {
        var items: [Item] = []
        var pending: (title: String?, duration: Double?)?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#EXTINF:") {
                let info = line.dropFirst("#EXTINF:".count)
                let comma = info.firstIndex(of: ",")
                // The length comes before any attributes (tvg-name="…"); -1 is unknown.
                let length = Double(info[..<(comma ?? info.endIndex)].split(separator: " ").first ?? "")
                let title = comma.map { info[info.index(after: $0)...].trimmingCharacters(in: .whitespaces) }
                pending = (title?.isEmpty == false ? title : nil, length.flatMap { $0 > 0 && $0.isFinite ? $0 : nil })
                continue
            }
            if line.hasPrefix("#") { continue }
            items.append(Item(location: line, title: pending?.title, duration: pending?.duration))
            pending = nil
        }
        return items
    }

    static func pls(_ text: String) -> [Item] {
        var files: [Int: String] = [:], titles: [Int: String] = [:], lengths: [Int: Double] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].lowercased(), value = String(line[line.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
            for (prefix, apply) in [("file", { (n: Int) in files[n] = value }), ("title", { titles[$0] = value }),
                                    ("length", { n in if let seconds = Double(value), seconds > 0, seconds.isFinite { lengths[n] = seconds } })] {
                if key.hasPrefix(prefix), let number = Int(key.dropFirst(prefix.count)) { apply(number) }
            }
        }
        // An empty FileN= names nothing (resolved, it would be the playlist itself).
        return files.filter { !$0.value.isEmpty }.keys.sorted().map { Item(location: files[$0]!, title: titles[$0], duration: lengths[$0]) }
    }

    static func xspf(_ data: Data, name: String) throws -> [Item] {
        let root: XMLNode
        do { root = try XMLNode.parse(data, limits: .document) } catch {
            throw MediaError.notMedia(name, reason: "it is not an XSPF playlist: \(error)")
        }
        return root.all("track").compactMap { track in
            guard let location = track.value("location"), !location.isEmpty else { return nil }
            let milliseconds = track.value("duration").flatMap(Double.init).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
            return Item(location: location, title: track.value("title"), duration: milliseconds.map { $0 / 1000 })
        }
    }
}
