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
    /// Cover art: a URL on the web, or a picture found beside the file in its folder.
    public var artwork: ArtworkSource?
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
    public init(_ location: String, title: String? = nil, artwork: ArtworkSource? = nil, duration: Double? = nil) {
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
    /// What lets GStreamer fetch the URLs on this machine that were named by one who may name them: keep it as long as
    /// the queue plays.
    public var allowances: [FetchGuard.Allowance] = []
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
        /// Who named the sources: what they may name follows from it (`Asker`).
        public var asker: Asker = .person
        /// What reading the sources may cost at most.
        public var limits = Limits()
        /// Hears, about once a second while sources take long to read, how far reading has got ("1,200 items, 14
        /// playlists fetched").
        public var progress: (@Sendable (String) -> Void)?
        public init() {}
    }

    /// What one cast's sources may cost to read. A playlist may name playlists, to a depth of 8, each of any length:
    /// without a budget a few lines on the web expand to millions of fetches. Reaching a limit ends reading with a
    /// line that says so; what was read by then is played.
    public struct Limits: Sendable {
        /// Items in the queue: the most a cast takes (the service's limit for files an app names too).
        public var entries = 10_000
        /// Playlists and pages fetched from the web.
        public var fetches = 100
        /// Reading everything (folders, playlists, fetches, pages).
        public var time: Duration = .seconds(120)
        /// Bytes of one playlist file on this machine.
        public var playlistBytes = 16 << 20
        public init() {}
    }

    /// The queue for `sources`, in order.
    /// - Throws: `MediaError` or `RouteError` naming the source and what is wrong: a missing path, an empty folder, a
    ///   URL that fails or is not media, a page without media. An entry inside a playlist or folder that is bad is not
    ///   thrown: the queue skips it with a line when it comes to it.
    public static func expand(_ sources: [String], options: Options = Options()) async throws -> CastQueue {
        var reader = SourceReader(options: options)
        for source in sources where !reader.isSpent {
            try await reader.add(source, origin: .named(options.asker))
        }
        if reader.entries.isEmpty {
            throw MediaError.nothingToPlay(sources.joined(separator: ", "), reason: reader.notices.last ?? "no media in it")
        }
        return CastQueue(entries: reader.entries, notices: reader.notices, allowances: reader.allowances)
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

/// Where a source came from: named by a person or an app, in a playlist file on this machine (read on the say of one
/// that may name files), or in a document from the web.
enum SourceOrigin: Equatable {
    case named(Asker)
    case localPlaylist(String)
    case web(String)

    /// Who is taken to have asked for what this origin names.
    var asker: Asker {
        switch self {
        case .named(let asker): asker
        case .localPlaylist: .person
        case .web(let document): .web(document)
        }
    }

    /// Whether a person or an app named it, rather than a folder or playlist holding it.
    var isNamed: Bool { if case .named = self { true } else { false } }
}

/// Reads sources into entries, one after another, within the options' limits.
struct SourceReader {
    let options: CastSources.Options
    private(set) var entries: [QueueEntry] = []
    var notices: [String] = []
    /// Playlists being read (by real path or URL): one that names itself, or one that names it, is not read again.
    private var reading: [String] = []
    private static let maxDepth = 8
    /// Bytes of a playlist or HLS playlist read from the web.
    private static let playlistLimit = 1 << 20
    private static let maxRedirects = 5
    /// Threads that read folders: a big or looping tree must not hold the cooperative pool (the service's other
    /// clients wait on it).
    private static let folderThreads = BlockingThreads(name: "route-folders", count: 2)
    private let started = ContinuousClock.now
    private var fetches = 0
    private var lastProgress = ContinuousClock.now
    /// The limit reached, in words, once one is: nothing more is read.
    private(set) var spent: String?
    /// URLs on this machine that GStreamer may fetch, named by one who may name them.
    private(set) var allowances: [FetchGuard.Allowance] = []
    private var allowedOrigins: Set<String> = []

    init(options: CastSources.Options) { self.options = options }

    /// Whether a limit was reached, so that nothing more is read.
    var isSpent: Bool { spent != nil }

    /// Adds `source`; from a person or an app, a problem is thrown; from a playlist, it becomes a line and the rest goes on.
    mutating func add(_ source: String, origin: SourceOrigin) async throws {
        guard checkBudget() else { return }
        do {
            if MediaInfo.isRemote(source) {
                try await addURL(source, origin: origin)
            } else {
                try await addPath(source, origin: origin)
            }
        } catch let error where !origin.isNamed && !(error is CancellationError) {
            // Most errors name the source first already.
            let words = "\(error)"
            notices.append("skipping " + (words.hasPrefix(source) ? words : "\(source): \(words)"))
        }
    }

    // MARK: Limits

    /// Whether reading may go on: false (said once) when the queue is full or the time is up; says the progress about
    /// once a second.
    private mutating func checkBudget() -> Bool {
        guard spent == nil else { return false }
        let limits = options.limits
        if entries.count >= limits.entries {
            spend("the queue holds \(limits.entries) items, the most one cast takes")
        } else if ContinuousClock.now - started > limits.time {
            spend("reading took \(limits.time.components.seconds) s, the most route gives it")
        } else if let progress = options.progress, ContinuousClock.now - lastProgress >= .seconds(1) {
            lastProgress = .now
            progress("reading sources: \(entries.count) item\(entries.count == 1 ? "" : "s") so far"
                     + (fetches > 0 ? ", \(fetches) fetched from the web" : ""))
        }
        return spent == nil
    }

    private mutating func spend(_ why: String) {
        spent = why
        notices.append("stopped reading sources: \(why); playing the \(entries.count) read by then")
    }

    /// Counts a fetch from the web; throws when the budget has none left.
    private mutating func countFetch(of url: String) throws {
        guard fetches < options.limits.fetches else {
            if spent == nil { spend("it fetched \(options.limits.fetches) playlists and pages from the web, the most one cast may") }
            throw MediaError.fetchFailed(url, reason: "not fetched: \(spent ?? "")")
        }
        fetches += 1
    }

    /// Adds an entry unless the queue is full.
    private mutating func append(_ entry: QueueEntry) {
        guard checkBudget() else { return }
        entries.append(entry)
    }

    // MARK: Paths

    private mutating func addPath(_ path: String, origin: SourceOrigin) async throws {
        if let refusal = origin.asker.refusesPath(path) { throw MediaError.fetchFailed(path, reason: refusal) }
        var info = stat()
        guard stat(path, &info) == 0 else {
            // A missing file is an entry all the same: the queue says so when it reaches it (as for files given).
            if origin.isNamed { _ = try MediaError.checkReadableFile(path) }
            append(QueueEntry(path))
            return
        }
        if info.st_mode & S_IFMT == S_IFDIR { return try await addFolder(path, origin: origin) }
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        if CastSources.playlistExtensions.contains(ext) {
            // A pipe or a device named .m3u is not a playlist (and reading it would never end).
            _ = try MediaError.checkReadableFile(path)
            let data = try Self.readPlaylist(path, limit: options.limits.playlistBytes)
            let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
            return try await addPlaylist(data, named: URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path,
                                         kind: ext, base: .directory(base), origin: origin.isNamed ? .localPlaylist(path) : origin)
        }
        if origin.isNamed { _ = try MediaError.checkReadableFile(path) }
        var entry = QueueEntry(path)
        entry.isNamed = origin.isNamed
        append(entry)
    }

    /// A playlist file's bytes, at most `limit` of them.
    private static func readPlaylist(_ path: String, limit: Int) throws -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw MediaError.unreadable(path) }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: limit + 1) else { throw MediaError.unreadable(path) }
        guard data.count <= limit else {
            throw MediaError.fetchFailed(path, reason: "a playlist of more than \(limit >> 20) MiB, more than route reads")
        }
        return data
    }

    private mutating func addFolder(_ folder: String, origin: SourceOrigin) async throws {
        let before = entries.count
        let recursive = options.recursive, room = options.limits.entries - entries.count
        let deadline = started + options.limits.time
        let found = try await Self.folderThreads.run(timeout: .seconds(3600), timedOut: { CancellationError() }) {
            FolderReader(recursive: recursive, room: room, deadline: deadline).read(folder)
        }
        for entry in found.entries { append(entry) }
        if found.looped > 0 {
            notices.append("\(found.looped) folder\(found.looped == 1 ? "" : "s") in \(folder) \(found.looped == 1 ? "is a link" : "are links") "
                           + "back to a folder already read: not read again")
        }
        // The queue's own checks word a limit reached inside the folder.
        if found.stopped != nil { _ = checkBudget() }
        let skipped = found.skipped
        if !skipped.isEmpty {
            let shown = skipped.prefix(5).joined(separator: ", ") + (skipped.count > 5 ? ", …" : "")
            notices.append("skipped \(skipped.count) file\(skipped.count == 1 ? "" : "s") in \(folder) that \(skipped.count == 1 ? "is" : "are") not media: \(shown)")
        }
        if entries.count == before, spent == nil {
            throw MediaError.nothingToPlay(folder, reason: "no media files in it" + (options.recursive || !found.hasFolders ? "" : "; --recursive plays the folders inside it"))
        }
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
        if let refusal = await origin.asker.refusesURL(resolving: url) { throw MediaError.fetchFailed(url, reason: refusal) }
        await allowIfHere(url, by: origin.asker)
        let ext0 = URL(string: url).map { $0.pathExtension.lowercased() } ?? ""
        if !origin.isNamed, !CastSources.playlistExtensions.contains(ext0) {
            // A playlist's entry is looked at when the queue reaches it (a list of thousands of streams starts at
            // once); what it is not — a page, a 404 — is said then.
            var entry = QueueEntry(url)
            if case .web(let playlist) = origin { entry.webPlaylist = playlist }
            return append(entry)
        }
        try countFetch(of: url)
        // What is named as a playlist is read whole at once when it is short (one request, not two); anything else,
        // a live stream above all, only as far as its first read.
        let peek = 64 * 1024, namedAsPlaylist = CastSources.playlistExtensions.contains(ext0)
        let (final, response) = try await look(at: url, origin: origin, bytes: peek, whole: namedAsPlaylist)
        if final != url { await allowIfHere(final, by: origin.asker) }
        let type = (response.contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let ext = URL(string: final).map { $0.pathExtension.lowercased() } ?? ""
        let text = String(decoding: response.body.prefix(4096), as: UTF8.self)
        if text.hasPrefix("#EXTM3U") && text.contains("#EXT-X-") {
            // An HLS stream; live while its playlist has no end.
            var entry = QueueEntry(final)
            entry.isLive = text.contains("#EXT-X-TARGETDURATION") && !text.contains("#EXT-X-ENDLIST") && !text.contains("PLAYLIST-TYPE:VOD")
            return append(entry)
        }
        if type == "application/dash+xml" || ext == "mpd" {
            var entry = QueueEntry(final)
            entry.isLive = text.contains("type=\"dynamic\"")
            return append(entry)
        }
        if let kind = PlaylistFile.kind(mimeType: type, extension: ext) {
            let whole = namedAsPlaylist && response.body.count < peek
                ? response : try await look(at: final, origin: origin, bytes: Self.playlistLimit, whole: true).1
            guard let base = URL(string: final) else { throw MediaError.fetchFailed(url, reason: "not a URL") }
            return try await addPlaylist(whole.body, named: final, kind: kind, base: .web(base), origin: .web(final))
        }
        if type == "text/html" || type == "application/xhtml+xml" {
            return try await addPage(final, origin: origin)
        }
        if type.hasPrefix("audio/") || type.hasPrefix("video/") || type.hasPrefix("image/") || type.isEmpty
            || ["application/octet-stream", "application/ogg", "application/mp4", "binary/octet-stream"].contains(type) {
            var entry = QueueEntry(final)
            entry.isNamed = origin.isNamed
            return append(entry)
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

    /// Lets GStreamer fetch `url` while the queue plays, when it is on this machine and `asker` may name this machine.
    private mutating func allowIfHere(_ url: String, by asker: Asker) async {
        // Once per host and port: a playlist of thousands of streams names few hosts.
        guard asker.mayFetchThisMachine, let parts = URLComponents(string: url), let host = parts.host else { return }
        let origin = "\(parts.scheme ?? ""):\(host):\(parts.port ?? 0)"
        guard !allowedOrigins.contains(origin) else { return }
        allowedOrigins.insert(origin)
        guard await WebAddress.thisMachine(resolving: url) != nil, let allowance = FetchGuard.allow(url) else { return }
        allowances.append(allowance)
    }

    // MARK: Pages

    private mutating func addPage(_ page: String, origin: SourceOrigin) async throws {
        let found = try await WebPage.resolve(page, ytDLP: options.ytDLP, timeout: options.pageTimeout)
        // What the page names is asked for by the page — unless it is on this machine and named by one who may name
        // this machine, whose page may name this machine too.
        let pageHere = await WebAddress.thisMachine(resolving: page) != nil
        let asker: Asker = pageHere && origin.asker.mayFetchThisMachine ? origin.asker : .web(page)
        for var entry in found {
            var allowed: [WebFormat] = []
            for format in entry.formats where await asker.refusesURL(resolving: format.url) == nil {
                allowed.append(format)
                await allowIfHere(format.url, by: asker)
            }
            entry.formats = allowed
            guard !entry.formats.isEmpty else {
                notices.append("skipping \(entry.displayTitle) on \(page): its media is on this machine, which a page from the web may not make route fetch")
                continue
            }
            if case .web(let picture)? = entry.artwork, await asker.refusesURL(resolving: picture) != nil { entry.artwork = nil }
            append(entry)
        }
    }
}
