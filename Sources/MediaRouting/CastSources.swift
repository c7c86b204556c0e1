// CastSources: what a cast is given, made into its queue — files; folders (natural order, pictures beside music as
// its cover art, --recursive); playlists (.m3u/.m3u8, .pls, .xspf, on disk or on the web); media URLs; HLS and DASH
// streams; and web pages, resolved to their media by yt-dlp. One rule for URLs route did not get from a person: a
// playlist or page from the web never makes route fetch from this machine.

import Foundation
import RouteCore
import RouteGLib
import RouteMedia

/// One thing a queue plays, with what is known of it before it is probed.
public struct QueueEntry: Sendable, Hashable {
    /// A path, or an http(s) URL (for a web page: the page's own URL, its media in `formats`).
    public var location: String
    public var title: String?
    public var artist: String?
    /// Cover art: a URL on the web or a picture's path.
    public var artwork: String?
    /// Seconds, when the source says (a playlist's #EXTINF, a page).
    public var duration: Double?
    /// A live stream: no length, no seeking.
    public var isLive = false
    /// A web page's media, best first; empty for anything else.
    public var formats: [WebFormat] = []
    /// Whether a person named it (on the command line, in an app), rather than a folder or playlist holding it: a
    /// named item that cannot be played ends a cast that starts with it; one found in a folder is skipped.
    public var isNamed = false
    /// The playlist on the web that named it: it is looked at (redirects followed hop by hop, the rules for the web
    /// applied) when the queue reaches it.
    public var webPlaylist: String?

    /// An entry for `location`.
    public init(_ location: String, title: String? = nil, artwork: String? = nil, duration: Double? = nil) {
        self.location = location
        self.title = title
        self.artwork = artwork
        self.duration = duration
    }

    /// What the entry is called until it is probed.
    public var displayTitle: String { title ?? MediaInfo.defaultTitle(location) }
}

/// One way a web page offers its media (a yt-dlp format).
public struct WebFormat: Sendable, Hashable {
    public var url: String
    /// The type it is served as (`video/mp4`, `audio/mp4`, `application/vnd.apple.mpegurl` for HLS).
    public var mimeType: String
    public var hasVideo: Bool
    public var hasAudio: Bool
}

/// A queue made from what a cast was given, and what was left out on the way, in words (one line each).
public struct CastQueue: Sendable {
    public var entries: [QueueEntry]
    public var notices: [String]
}

/// Makes a cast's queue from paths and URLs.
public enum CastSources {
    /// How sources are read.
    public struct Options: Sendable {
        /// Whether folders inside a folder are played too.
        public var recursive = false
        /// The yt-dlp to run for web pages (`ROUTE_YTDLP`, else the one on PATH).
        public var ytDLP = ProcessInfo.processInfo.environment["ROUTE_YTDLP"] ?? "yt-dlp"
        /// How long a URL may take to answer, and yt-dlp to resolve a page.
        public var timeout: Duration = .seconds(15)
        public var pageTimeout: Duration = .seconds(120)
        public init() {}
    }

    /// The queue for `sources`, in order.
    /// - Throws: `MediaError` or `RouteError` naming the source and what is wrong: a missing path, an empty folder, a
    ///   URL that fails or is not media, a page without media. An entry inside a playlist or folder that is bad is not
    ///   thrown: the queue skips it with a line when it comes to it.
    public static func expand(_ sources: [String], options: Options = Options()) async throws -> CastQueue {
        var reader = SourceReader(options: options)
        for source in sources {
            try await reader.add(source, origin: .person)
        }
        if reader.entries.isEmpty {
            throw MediaError.nothingToPlay(sources.joined(separator: ", "), reason: reader.notices.last ?? "no media in it")
        }
        return CastQueue(entries: reader.entries, notices: reader.notices)
    }

    /// Playlist file extensions.
    public static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls", "xspf"]

    /// Where an entry a playlist on the web named really is: its redirects followed hop by hop, never to this machine;
    /// media, HLS or DASH only (a page or a playlist named there is not opened).
    /// - Throws: `MediaError` naming the URL and what is wrong with it.
    public static func followed(_ url: String, namedBy playlist: String, options: Options = Options()) async throws -> String {
        let reader = SourceReader(options: options)
        let (final, response) = try await reader.look(at: url, origin: .web(playlist), bytes: 4096)
        let type = (response.contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if type == "text/html" || type == "application/xhtml+xml" || PlaylistFile.kind(mimeType: type, extension: "") == "pls"
            || type == "application/xspf+xml" {
            throw MediaError.notMedia(url, reason: "it is \(type); route plays the media a playlist from the web names, not its pages or playlists")
        }
        return final
    }

    /// Orders names as people do: "2 b" before "10 c", case aside.
    public static func naturalOrder(_ a: String, _ b: String) -> Bool {
        let order = a.compare(b, options: [.numeric, .caseInsensitive])
        return order == .orderedSame ? a < b : order == .orderedAscending
    }
}

/// Where a source came from: a person (the command line, an app) may name anything; what a playlist or page on the
/// web names may not point at this machine.
enum SourceOrigin: Equatable {
    case person
    case localPlaylist(String)
    case web(String)

    var isWeb: Bool { if case .web = self { true } else { false } }
}

/// Reads sources into entries, one after another.
struct SourceReader {
    let options: CastSources.Options
    var entries: [QueueEntry] = []
    var notices: [String] = []
    /// Playlists being read (by real path or URL): one that names itself, or one that names it, is not read again.
    private var reading: [String] = []
    private static let maxDepth = 8
    /// Bytes of a playlist or HLS playlist read from the web.
    private static let playlistLimit = 1 << 20
    private static let maxRedirects = 5

    init(options: CastSources.Options) { self.options = options }

    /// Adds `source`; from a person, a problem is thrown; from a playlist, it becomes a line and the rest goes on.
    mutating func add(_ source: String, origin: SourceOrigin) async throws {
        do {
            if MediaInfo.isRemote(source) {
                try await addURL(source, origin: origin)
            } else {
                try await addPath(source, origin: origin)
            }
        } catch let error where origin != .person && !(error is CancellationError) {
            // Most errors name the source first already.
            let words = "\(error)"
            notices.append("skipping " + (words.hasPrefix(source) ? words : "\(source): \(words)"))
        }
    }

    // MARK: Paths

    private mutating func addPath(_ path: String, origin: SourceOrigin) async throws {
        if origin.isWeb {
            throw MediaError.fetchFailed(path, reason: "refused: a playlist or page from the web may not name files on this machine")
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            // A missing file is an entry all the same: the queue says so when it reaches it (as for files given).
            if origin == .person { _ = try MediaError.checkReadableFile(path) }
            entries.append(QueueEntry(path))
            return
        }
        if info.st_mode & S_IFMT == S_IFDIR { return try addFolder(path, origin: origin) }
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        if CastSources.playlistExtensions.contains(ext) {
            guard let data = FileManager.default.contents(atPath: path) else { throw MediaError.unreadable(path) }
            let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
            return try await addPlaylist(data, named: URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path,
                                         kind: ext, base: .directory(base), origin: origin == .person ? .localPlaylist(path) : origin)
        }
        if origin == .person { _ = try MediaError.checkReadableFile(path) }
        var entry = QueueEntry(path)
        entry.isNamed = origin == .person
        entries.append(entry)
    }

    private mutating func addFolder(_ folder: String, origin: SourceOrigin) throws {
        let before = entries.count
        var skipped: [String] = []
        collect(folder, skipped: &skipped)
        if !skipped.isEmpty {
            let shown = skipped.prefix(5).joined(separator: ", ") + (skipped.count > 5 ? ", …" : "")
            notices.append("skipped \(skipped.count) file\(skipped.count == 1 ? "" : "s") in \(folder) that \(skipped.count == 1 ? "is" : "are") not media: \(shown)")
        }
        if entries.count == before {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            let hasFolders = names.contains { name in
                var isFolder: ObjCBool = false
                return FileManager.default.fileExists(atPath: folder + "/" + name, isDirectory: &isFolder) && isFolder.boolValue
            }
            throw MediaError.nothingToPlay(folder, reason: "no media files in it" + (options.recursive || !hasFolders ? "" : "; --recursive plays the folders inside it"))
        }
    }

    /// Adds a folder's media in natural order (descending with `recursive`); collects the names of what is not media.
    private mutating func collect(_ folder: String, skipped: inout [String]) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            .filter { !$0.hasPrefix(".") }.sorted(by: CastSources.naturalOrder)
        var files: [(path: String, ext: String)] = []
        var folders: Set<String> = []
        for name in names {
            let path = folder.hasSuffix("/") ? folder + name : folder + "/" + name
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { continue }
            if isFolder.boolValue { folders.insert(path) }
            files.append((path, URL(fileURLWithPath: name).pathExtension.lowercased()))
        }
        // Pictures beside music are its cover art, not items: the one called cover/folder/front, else the first.
        let hasMusic = files.contains { MediaFileKind.audioExtensions.contains($0.ext) }
        let pictures = files.filter { MediaFileKind.imageExtensions.contains($0.ext) }.map(\.path)
        let art = hasMusic ? (pictures.first { Self.isCoverName($0) } ?? pictures.first) : nil
        for (path, ext) in files {
            if folders.contains(path) {
                if options.recursive { collect(path, skipped: &skipped) }
            } else if MediaFileKind.audioExtensions.contains(ext) || MediaFileKind.videoExtensions.contains(ext) {
                entries.append(QueueEntry(path, artwork: MediaFileKind.audioExtensions.contains(ext) ? art : nil))
            } else if MediaFileKind.imageExtensions.contains(ext) {
                if !hasMusic { entries.append(QueueEntry(path)) }
            } else {
                skipped.append(URL(fileURLWithPath: path).lastPathComponent)
            }
        }
    }

    private static func isCoverName(_ path: String) -> Bool {
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent.lowercased()
        return ["cover", "folder", "front", "albumart", "album"].contains { name == $0 || name.hasPrefix($0 + "_") || name.hasPrefix($0 + ".") }
    }

    // MARK: Playlists

    /// Where a playlist's relative entries are: a folder, or the URL it was fetched from.
    enum Base {
        case directory(String)
        case web(URL)

        var isWeb: Bool { if case .web = self { true } else { false } }
    }

    private mutating func addPlaylist(_ data: Data, named name: String, kind: String, base: Base, origin: SourceOrigin) async throws {
        if reading.contains(name) {
            notices.append("\(name) names itself (or a playlist that names it): not read again")
            return
        }
        guard reading.count < Self.maxDepth else {
            notices.append("skipping \(name): playlists nest deeper than \(Self.maxDepth)")
            return
        }
        reading.append(name)
        defer { reading.removeLast() }
        let items = try PlaylistFile.parse(data, kind: kind, name: name)
        if items.isEmpty { notices.append("\(name) is an empty playlist") }
        for item in items {
            guard let location = resolve(item.location, against: base) else {
                notices.append("skipping \"\(item.location)\" in \(name): " + (base.isWeb ? "a playlist from the web may name http(s) URLs only"
                                                                                        : "not a path or an http(s) URL"))
                continue
            }
            let count = entries.count
            try await add(location, origin: origin)
            // A playlist's title and length are the entry's until it is probed.
            if entries.count == count + 1 {
                if let title = item.title { entries[count].title = title }
                if let duration = item.duration { entries[count].duration = duration }
            }
        }
    }

    /// An entry's location, absolute: a URL as it is, a path or relative URL against `base`; nil for other schemes
    /// (file:// URLs are paths).
    private func resolve(_ location: String, against base: Base) -> String? {
        if MediaInfo.isRemote(location) { return location }
        // A playlist from the web names nothing on this machine's disk.
        if location.lowercased().hasPrefix("file:"), case .web = base { return nil }
        if location.lowercased().hasPrefix("file://") { return URL(string: location)?.path }
        if location.contains("://") { return nil }
        switch base {
        case .directory(let folder):
            return location.hasPrefix("/") ? location : URL(fileURLWithPath: folder).appendingPathComponent(location).standardizedFileURL.path
        case .web(let url):
            // Relative to a playlist on the web is on the web; an absolute path there is the web server's, not a file here.
            return URL(string: location, relativeTo: url)?.absoluteURL.absoluteString
        }
    }

    // MARK: URLs

    private mutating func addURL(_ url: String, origin: SourceOrigin) async throws {
        if origin.isWeb, let why = await WebAddress.thisMachine(resolving: url) {
            throw MediaError.fetchFailed(url, reason: "refused: \(why), and a playlist or page from the web may not make route fetch from this machine")
        }
        let ext0 = URL(string: url).map { $0.pathExtension.lowercased() } ?? ""
        if origin != .person, !CastSources.playlistExtensions.contains(ext0) {
            // A playlist's entry is looked at when the queue reaches it (a list of thousands of streams starts at
            // once); what it is not — a page, a 404 — is said then.
            var entry = QueueEntry(url)
            if case .web(let playlist) = origin { entry.webPlaylist = playlist }
            return entries.append(entry)
        }
        let (final, response) = try await look(at: url, origin: origin, bytes: 64 * 1024)
        let type = (response.contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let ext = URL(string: final).map { $0.pathExtension.lowercased() } ?? ""
        let text = String(decoding: response.body.prefix(4096), as: UTF8.self)
        if text.hasPrefix("#EXTM3U") && text.contains("#EXT-X-") {
            // An HLS stream; live while its playlist has no end.
            var entry = QueueEntry(final)
            entry.isLive = text.contains("#EXT-X-TARGETDURATION") && !text.contains("#EXT-X-ENDLIST") && !text.contains("PLAYLIST-TYPE:VOD")
            return entries.append(entry)
        }
        if type == "application/dash+xml" || ext == "mpd" {
            var entry = QueueEntry(final)
            entry.isLive = text.contains("type=\"dynamic\"")
            return entries.append(entry)
        }
        if let kind = PlaylistFile.kind(mimeType: type, extension: ext) {
            let (_, whole) = try await look(at: final, origin: origin, bytes: Self.playlistLimit, whole: true)
            guard let base = URL(string: final) else { throw MediaError.fetchFailed(url, reason: "not a URL") }
            return try await addPlaylist(whole.body, named: final, kind: kind, base: .web(base), origin: .web(final))
        }
        if type == "text/html" || type == "application/xhtml+xml" {
            return try await addPage(final, origin: origin)
        }
        if type.hasPrefix("audio/") || type.hasPrefix("video/") || type.hasPrefix("image/") || type.isEmpty
            || ["application/octet-stream", "application/ogg", "application/mp4", "binary/octet-stream"].contains(type) {
            var entry = QueueEntry(final)
            entry.isNamed = origin == .person
            return entries.append(entry)
        }
        throw MediaError.notMedia(url, reason: "the server says it is \(type), not media, a playlist or a web page")
    }

    /// The first `bytes` of `url`, following redirects (at most five, none in a loop, none from elsewhere to this
    /// machine), and the URL finally answered.
    func look(at url: String, origin: SourceOrigin, bytes: Int, whole: Bool = false) async throws -> (String, HTTPResponse) {
        var current = url
        var seen: Set<String> = [url]
        // A person may name a URL on this machine; a redirect from elsewhere to it is the web's doing.
        let startsHere = await WebAddress.thisMachine(resolving: url) != nil
        for _ in 0...Self.maxRedirects {
            let response: HTTPResponse
            do {
                response = try await HTTPClient.shared.peek(current, bytes: bytes, whole: whole, timeout: options.timeout)
            } catch HTTPError.timedOut(_, let seconds) {
                throw MediaError.fetchFailed(url, reason: "the server stalls: in \(seconds) s it sent too little to tell what it is")
            } catch {
                throw MediaError.fetchFailed(url, reason: "\(error)".replacingOccurrences(of: current + ": ", with: ""))
            }
            switch response.status {
            case 200..<300: return (current, response)
            case 300..<400:
                guard let location = response.location, let next = URL(string: location, relativeTo: URL(string: current))?.absoluteURL.absoluteString,
                      MediaInfo.isRemote(next) else {
                    throw MediaError.fetchFailed(url, reason: "the server redirects (\(response.status)) to no http(s) URL")
                }
                guard !seen.contains(next) else { throw MediaError.fetchFailed(url, reason: "its redirects go round in a loop (\(next) again)") }
                if !startsHere, let why = await WebAddress.thisMachine(resolving: next) {
                    throw MediaError.fetchFailed(url, reason: "refused: it redirects to \(next) (\(why))")
                }
                seen.insert(next)
                current = next
            default:
                throw MediaError.fetchFailed(url, reason: "the server answered \(response.status) \(Self.reason(response.status))")
            }
        }
        throw MediaError.fetchFailed(url, reason: "it redirects more than \(Self.maxRedirects) times")
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 410: "Gone"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: ""
        }
    }

    // MARK: Pages

    private mutating func addPage(_ page: String, origin: SourceOrigin) async throws {
        let found = try await WebPage.resolve(page, ytDLP: options.ytDLP, timeout: options.pageTimeout)
        let pageHere = await WebAddress.thisMachine(resolving: page) != nil
        for var entry in found {
            // The page's own media may be anywhere it says, except this machine when the page is not on it.
            var allowed: [WebFormat] = []
            for format in entry.formats {
                let here = await WebAddress.thisMachine(resolving: format.url) != nil
                if !here || origin == .person && pageHere { allowed.append(format) }
            }
            entry.formats = allowed
            guard !entry.formats.isEmpty else {
                notices.append("skipping \(entry.displayTitle) on \(page): its media is on this machine, which a page from the web may not make route fetch")
                continue
            }
            entries.append(entry)
        }
    }
}
