// MediaServer: the HTTP server devices fetch media from (libsoup-3, through RouteGLib's HTTPServer): per-item token
// URLs, Range/206, HEAD, DLNA headers, streamed from disk in fixed-size chunks so memory stays flat.

import RouteGIO
import RouteGLib
import DLNA
import Foundation
import RouteCore
import Synchronization

/// Serves offered items, and nothing else, on one local address.
///
/// Each offered item gets an unguessable URL (`/m/<32 hex>/<name>`); every other path is 404, and
/// methods other than GET and HEAD are too. A GET with `Range` answers 206 with just those bytes.
/// The port belongs to this process alone (no other program, not even another route, can share it);
/// connections are accepted by route, at most `ConnectionLimits.perClient` at a time from one address,
/// and a connection that has not sent a whole request within `ConnectionLimits.requestTimeout` is closed.
/// The libsoup servers live on `GLibLoop`s; offering and withdrawing are thread-safe.
public final class MediaServer: Sendable {
    /// `http://ADDRESS:PORT`, the prefix of every offered URL.
    public let baseURL: String
    private let offers = OfferTable()
    private let cores: [ServerCore]

    /// Starts listening on `address` (one local address, not a wildcard) and `port` (0: any free port); a conversion
    /// that fails while it is served is said to `log`.
    /// - Throws: `MediaError.server` when the address is not local or the port is taken.
    public init(address: String = "127.0.0.1", port: UInt16 = 0, log: RouteLog = .discard) throws {
        let listener = try ListeningSocket(address: address, port: port)
        defer { listener.close() }
        // One libsoup server per loop, each accepting from the same listening socket: the kernel hands
        // each new connection to one of them, so every core serves.
        let limits = ConnectionLimits()
        var cores: [ServerCore] = []
        do {
            for loop in GLibLoop.serverLoops {
                let core = ServerCore(loop: loop, offers: offers, limits: limits, log: log)
                try loop.perform { try core.start(listening: listener.fd) }
                cores.append(core)
            }
        } catch {
            for core in cores { core.close() }
            throw error
        }
        self.cores = cores
        let host = address.contains(":") ? "[\(address)]" : address
        baseURL = "http://\(host):\(listener.port)"
    }

    /// Offers a file to `audience`; returns its URL. The file is read on each request, so it must stay in place.
    public func offer(file path: String, mimeType: String, size: UInt64, for audience: Audience) -> String {
        add(Offer(path: path, mimeType: mimeType, source: .file(size: size), audience: audience))
    }

    /// Offers bytes held in memory (cover art) to `audience`; returns their URL.
    public func offer(data: Data, mimeType: String, for audience: Audience) -> String {
        add(Offer(path: "", mimeType: mimeType, source: .memory(data), audience: audience))
    }

    /// Offers a file converted on the fly by `profile` (to at most `maxChannels` of audio); returns its
    /// URL. Each GET runs its own pipeline, from the start or from the offset in
    /// `TimeSeekRange.dlna.org: npt=S-` or `?t=S`.
    public func offer(transcoding info: MediaInfo, to profile: TranscodeProfile, maxChannels: Int? = nil, for audience: Audience) -> String {
        add(Offer(path: info.path, mimeType: profile.mimeType(for: info),
                  source: .pipeline(Conversion(description: profile.pipeline(for: info, maxChannels: maxChannels),
                                               duration: info.duration, exactSeek: !profile.copiesStreams,
                                               pushed: MediaProbe.pullRaces(info.container))), audience: audience, isLive: info.isLive))
    }

    /// Offers subtitles as WebVTT: a `.vtt` file as it is; a `.srt` (or another format GStreamer's subparse
    /// reads) converted on each request; or, with `embedded`, the text stream inside a media file. Returns
    /// the URL.
    public func offer(subtitles path: String, embedded: Bool = false, for audience: Audience) -> String {
        if !embedded, path.lowercased().hasSuffix(".vtt") {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? nil
            return offer(file: path, mimeType: "text/vtt", size: size ?? 0, for: audience)
        }
        let description = embedded
            ? "parsebin name=route_demux route_demux. ! text/x-raw ! webvttenc ! identity name=route_out"
            : "subparse ! webvttenc ! identity name=route_out"
        return add(Offer(path: path, mimeType: "text/vtt", source: .pipeline(Conversion(description: description, duration: nil, exactSeek: false)),
                         audience: audience))
    }

    /// Offers desktop audio as an endless stream in `format`; returns its URL. Each GET hears the sound from when it
    /// connects.
    public func offer(live audio: LiveAudio, as format: LiveAudio.Format, for audience: Audience) -> String {
        add(Offer(path: "", mimeType: audio.mimeType(format), source: .live(audio, format), audience: audience, isLive: true))
    }

    /// Offers a file as `plan` says (direct or converted) to `audience`; returns its URL and MIME type.
    public func offer(_ info: MediaInfo, as plan: Delivery, maxChannels: Int? = nil, for audience: Audience) -> (url: String, mimeType: String)? {
        switch plan {
        case .direct: return (offer(file: info.path, mimeType: info.mimeType, size: info.size, for: audience), info.mimeType)
        case .remux(let profile), .transcode(let profile):
            return (offer(transcoding: info, to: profile, maxChannels: maxChannels, for: audience), profile.mimeType(for: info))
        case .unplayable: return nil
        }
    }

    private func add(_ offer: Offer) -> String {
        let token = Self.newToken()
        let ext = URL(fileURLWithPath: offer.path).pathExtension
        let name: String
        switch offer.source {
        case .file: name = ext.isEmpty ? "media" : "media." + ext
        case .pipeline, .memory: name = "media." + (offer.mimeType.split(separator: "/").last.map(String.init) ?? "bin")
        case .live(_, let format): name = format == .wav ? "desktop-audio.wav" : "desktop-audio.pcm"
        }
        offers.items.withLock { $0[token] = offer }
        return "\(baseURL)/m/\(token)/\(name)"
    }

    /// What devices have done with an offered URL so far; nil when it is not one of ours.
    public func access(to url: String) -> MediaAccess? {
        guard let token = Self.token(in: url) else { return nil }
        let record = offers.access.withLock { $0[token] } ?? OfferTable.Access()
        return MediaAccess(requests: record.requests, problem: record.problem,
                           servedFrom: String(baseURL.dropFirst("http://".count)))
    }

    /// Stops serving an offered URL; later requests get 404.
    public func withdraw(_ url: String) {
        guard let token = Self.token(in: url) else { return }
        _ = offers.items.withLock { $0.removeValue(forKey: token) }
    }

    /// Stops listening and drops every offer. Idempotent.
    public func close() {
        offers.items.withLock { $0.removeAll() }
        for core in cores { core.close() }
    }

    static func token(in url: String) -> String? {
        let parts = url.split(separator: "/")
        guard let index = parts.firstIndex(of: "m"), index + 1 < parts.count else { return nil }
        return String(parts[index + 1])
    }

    private static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt32, radix: 16) }
            .map { String(repeating: "0", count: 8 - $0.count) + $0 }.joined()
    }
}

extension GLibLoop {
    /// One loop per core (at most 4) for the media server: each runs its own libsoup server on a
    /// shared port, as nginx runs a worker per core.
    static let serverLoops: [GLibLoop] = (0..<min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)))
        .map { GLibLoop(name: "route-http-\($0)") }
}

/// Who may fetch an offered URL. The URL is unguessable, but a device hands it to anyone who asks (UPnP's
/// GetMediaInfo, Cast's MEDIA_STATUS): an item is served to the device it was offered to, by its address.
public enum Audience: Sendable, Hashable, CustomStringConvertible {
    /// Any host (`route serve`: a person publishes a file on purpose).
    case anyone
    /// These addresses only: the device's (a group's members', each its own).
    case hosts(Set<String>)
    /// These addresses and this machine (a plugin's device: the plugin runs here, and may fetch on its behalf).
    case hostsAndThisMachine(Set<String>)

    /// The providers whose devices fetch what they are offered themselves (route's built-in UPnP and Cast). Any other
    /// provider is a plugin, which may fetch it here for its device (an AirPlay plugin streams what it fetched).
    static let devicesFetchThemselves: Set<String> = ["upnp", "cast"]

    /// Who may fetch what is offered for `route`, reached at `address` ("10.0.0.5", "10.0.0.5:8009",
    /// "http://10.0.0.5:49494/desc.xml"): its device's host; for a plugin's route, this machine too.
    public static func route(_ route: MediaRoute, at address: String) -> Audience {
        let device: Set = [AnnouncedAddress.host(of: address)]
        return devicesFetchThemselves.contains(route.provider) ? .hosts(device) : .hostsAndThisMachine(device)
    }

    /// The hosts in words, for the log.
    public var description: String {
        switch self {
        case .anyone: "anyone"
        case .hosts(let hosts): hosts.sorted().joined(separator: ", ")
        case .hostsAndThisMachine(let hosts): (hosts.sorted() + ["this machine"]).joined(separator: ", ")
        }
    }

    /// Whether a request from `client` (an address) is answered.
    func admits(_ client: String) -> Bool {
        let bare = client.hasPrefix("::ffff:") ? String(client.dropFirst(7)) : client
        switch self {
        case .anyone: return true
        case .hosts(let hosts): return hosts.contains(bare)
        case .hostsAndThisMachine(let hosts):
            return hosts.contains(bare) || WebAddress.thisMachine(host: bare, resolving: false) != nil
        }
    }
}

/// One offered item: a file served as it is, or through a conversion pipeline.
struct Offer: Sendable {
    enum Source: Sendable {
        case file(size: UInt64)
        /// A GStreamer pipeline reading the file (see `TranscodeProfile.pipeline`).
        case pipeline(Conversion)
        /// Bytes in memory (cover art), served whole.
        case memory(Data)
        /// Sound as it plays on this machine, endless.
        case live(LiveAudio, LiveAudio.Format)
    }
    let path: String
    let mimeType: String
    let source: Source
    /// Who may fetch it.
    let audience: Audience
    /// A live stream (no seeking: DLNA is told so).
    var isLive = false
    var isImage: Bool { mimeType.hasPrefix("image/") }
}

/// The offered items by token, shared by every loop's server, and what devices did with them.
final class OfferTable: Sendable {
    struct Access {
        var requests = 0
        var problem: String?
    }
    let items = Mutex<[String: Offer]>([:])
    let access = Mutex<[String: Access]>([:])

    /// Counts a request for `token`, and what went wrong answering it, if anything.
    func record(_ token: String, problem: String? = nil) {
        access.withLock { table in
            table[token, default: Access()].requests += 1
            if let problem { table[token]?.problem = problem }
        }
    }
}

/// The bound, listening TCP socket of one media server, made with POSIX calls and never shared with another
/// process (no SO_REUSEPORT): each loop's server accepts from a duplicate of its descriptor.
private struct ListeningSocket {
    let fd: Int32
    let port: UInt16

    init(address: String, port: UInt16) throws {
        guard let numeric = SocketAddress(numericHost: address, port: port) else {
            throw MediaError.server("\"\(address)\" is not an IP address of this machine")
        }
        let fd = Glibc.socket(numeric.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw MediaError.server("cannot make a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard numeric.withSockaddr({ bind(fd, $0, $1) }) == 0, Glibc.listen(fd, 128) == 0 else {
            let reason = errno == EADDRINUSE ? "the port is in use by another program" : String(cString: strerror(errno))
            Glibc.close(fd)
            throw MediaError.server("cannot listen on \(address):\(port): \(reason)")
        }
        self.fd = fd
        self.port = SocketAddress(localOf: fd)?.port ?? port
    }

    /// Closes this descriptor (the loops keep their duplicates).
    func close() { Glibc.close(fd) }
}

/// How many connections route keeps open, from one client and in all, shared by every loop's server.
final class ConnectionLimits: Sendable {
    /// Connections at a time from one address (a renderer opens a few for ranges; a flood gets no more).
    static let perClient = 16
    /// Connections at a time in all.
    static let total = 512
    /// A connection that has not sent a whole request this long after it opened (or after its previous
    /// request) is closed: idle and slow clients do not hold descriptors.
    static let requestTimeout: Duration = .seconds(10)

    private let open = Mutex<(byClient: [String: Int], total: Int)>(([:], 0))

    /// Counts a new connection from `client`; false (and nothing counted) when it is over a limit.
    func admit(_ client: String) -> Bool {
        open.withLock { state in
            let count = state.byClient[client, default: 0]
            guard count < Self.perClient, state.total < Self.total else { return false }
            state.byClient[client] = count + 1
            state.total += 1
            return true
        }
    }

    /// Forgets a connection from `client`.
    func release(_ client: String) {
        open.withLock { state in
            guard let count = state.byClient[client] else { return }
            state.byClient[client] = count > 1 ? count - 1 : nil
            state.total -= 1
        }
    }
}

/// One loop's server for the offers (libsoup itself is behind `HTTPServer`).
final class ServerCore: Sendable {
    private let server: HTTPServer

    init(loop: GLibLoop, offers: OfferTable, limits: ConnectionLimits, log: RouteLog) {
        let admission = HTTPAdmission(requestTimeout: ConnectionLimits.requestTimeout, admit: { limits.admit($0) },
                                      release: { limits.release($0) })
        let responder = OfferResponder(loop: loop, offers: offers, log: log)
        server = HTTPServer(loop: loop, serverHeader: "route ", admission: admission) { responder.answer($0) }
    }

    /// Starts accepting from a duplicate of `fd`. Loop thread only.
    /// - Throws: `MediaError.server` when the server cannot start.
    func start(listening fd: Int32) throws {
        do { try server.start(listening: fd) } catch { throw MediaError.server(String(describing: error)) }
    }

    /// Stops serving (any thread).
    func close() { server.close() }
}

/// What each request gets: the offer's bytes, a range of them, or a conversion's stream, with DLNA and CORS headers;
/// anything else is 404.
struct OfferResponder: Sendable {
    let loop: GLibLoop
    let offers: OfferTable
    /// Where a conversion that fails while it is served is said.
    let log: RouteLog

    /// Bytes read from disk and handed to libsoup at a time.
    static let chunkSize = 256 * 1024

    /// Answers one request (loop thread).
    func answer(_ message: HTTPServerMessage) {
        let method = message.method
        if !HTTPServer.keepAlive { message.setHeader("Connection", "close") }
        let parts = message.path.split(separator: "/")
        guard method == "GET" || method == "HEAD" || method == "OPTIONS", parts.count >= 2, parts.count <= 3, parts[0] == "m",
              let offer = offers.items.withLock({ $0[String(parts[1])] }) else {
            message.setStatus(404)
            return
        }
        guard offer.audience.admits(message.client) else {
            // A neighbour that asked the device for its URL; or a device that fetches from another address than the
            // one it is reached at (a proxy), which the log names.
            log(.notice, "refused \(message.method) \(message.path) from \(message.client): it is served to \(offer.audience) only")
            message.setStatus(403)
            return
        }
        // Cast receivers are web pages on another origin: their players read items (and text tracks)
        // through CORS, and seek only when they may read Content-Length and Content-Range.
        message.setHeader("Access-Control-Allow-Origin", "*")
        message.setHeader("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges")
        if method == "OPTIONS" {
            message.setHeader("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
            message.setHeader("Access-Control-Allow-Headers", "Range, Content-Type")
            message.setHeader("Access-Control-Max-Age", "86400")
            message.setStatus(204)
            return
        }
        let token = String(parts[1])
        message.setContentType(offer.mimeType)
        message.setHeader("transferMode.dlna.org", offer.isImage ? "Interactive" : "Streaming")
        switch offer.source {
        case .file(let size):
            answerFile(message, offer: offer, token: token, size: size, head: method == "HEAD")
        case .memory(let data):
            offers.record(token)
            message.setContentLength(UInt64(data.count))
            message.setStatus(200)
            guard method == "GET" else { return }
            data.withUnsafeBytes { message.append(copying: $0) }
        case .pipeline(let conversion):
            let duration = conversion.duration
            message.setHeader("contentFeatures.dlna.org", DLNAContentFeatures.of(mimeType: offer.mimeType, converted: true, live: offer.isLive))
            var start = 0.0
            let gone = !MediaInfo.isRemote(offer.path) && access(offer.path, R_OK) != 0
            offers.record(token, problem: gone ? "\(offer.path) is gone" : nil)
            switch TimeSeekRequest.parse(query: message.query["t"], header: message.requestHeader("TimeSeekRange.dlna.org"), duration: duration) {
            case .start: break
            case .from(let seconds): start = seconds
            case .unsatisfiable:
                message.setStatus(416)
                return
            }
            if start > 0, let duration {
                message.setHeader("TimeSeekRange.dlna.org", TimeSeekRequest.header(start: start, duration: duration))
            }
            message.setChunked()
            message.setStatus(200)
            guard method == "GET" else { return }
            PipelineStream(loop: loop, path: offer.path, conversion: conversion, start: start, log: log).attach(to: message)
        case .live(let audio, let format):
            offers.record(token)
            message.setHeader("contentFeatures.dlna.org", DLNAContentFeatures.of(mimeType: offer.mimeType, converted: true, live: true))
            message.setChunked()
            message.setStatus(200)
            guard method == "GET" else { return }
            audio.attach(message, loop: loop, format: format)
        }
    }

    private func answerFile(_ message: HTTPServerMessage, offer: Offer, token: String, size offered: UInt64, head: Bool) {
        // The length now, not when it was offered: a file still being written (a recording) is served as far as it
        // has grown by each request.
        var now = stat()
        let size = stat(offer.path, &now) == 0 ? max(offered, UInt64(max(0, now.st_size))) : offered
        message.setHeader("Accept-Ranges", "bytes")
        message.setHeader("contentFeatures.dlna.org", DLNAContentFeatures.of(mimeType: offer.mimeType, converted: false))
        var start: UInt64 = 0
        var length = size
        switch ByteRangeRequest.parse(message.requestHeader("Range"), size: size) {
        case .whole:
            message.setStatus(200)
        case .part(let first, let last):
            start = first
            length = last - first + 1
            message.setContentRange(first: first, last: last, size: size)
            message.setStatus(206)
        case .unsatisfiable:
            message.setHeader("Content-Range", "bytes */\(size)")
            message.setStatus(416)
            return
        }
        message.setContentLength(length)
        guard access(offer.path, R_OK) == 0 else {
            // The file went away after it was offered: the device cannot have it.
            offers.record(token, problem: "\(offer.path) is gone")
            message.setContentLength(0)
            message.setStatus(404)
            return
        }
        offers.record(token)
        guard !head, length > 0 else { return }
        let fd = open(offer.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            message.setContentLength(0)
            message.setStatus(404)
            return
        }
        FileStream(fd: fd, offset: start, remaining: length, message: message).start()
    }
}

/// Feeds one response body from a file, a chunk at a time: the next chunk is read when libsoup
/// reports the previous one written, so at most two chunks are in memory.
private final class FileStream {
    let fd: Int32
    var offset: UInt64
    var remaining: UInt64
    let message: HTTPServerMessage

    init(fd: Int32, offset: UInt64, remaining: UInt64, message: HTTPServerMessage) {
        self.fd = fd
        self.offset = offset
        self.remaining = remaining
        self.message = message
    }

    /// Starts streaming; the stream lives until the response is done or the client left, then closes its file.
    func start() {
        message.stream(wroteChunk: { self.appendChunk() }, finished: { close(self.fd) })
        appendChunk()
    }

    private func appendChunk() {
        guard remaining > 0 else { return }
        let got = message.append(readingFrom: fd, offset: offset, count: Int(min(UInt64(OfferResponder.chunkSize), remaining)))
        guard got > 0 else {
            // The file shrank or vanished under us: end the body short; the client sees a short read.
            remaining = 0
            message.completeBody()
            return
        }
        offset += UInt64(got)
        remaining -= UInt64(got)
        if remaining == 0 { message.completeBody() }
    }
}
