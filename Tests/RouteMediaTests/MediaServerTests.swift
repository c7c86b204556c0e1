// MediaServerTests: the media HTTP server as a device sees it, through curl (an independent client):
// ranges, HEAD, DLNA headers, what is not offered, converted streams with time seek, and hang-ups.

import Foundation
import RouteCore
@testable import RouteMedia
import RouteTestSupport
import Synchronization
import Testing

/// One curl request: status, headers (lower-cased names), body.
private struct Fetched {
    let status: Int
    let headers: [String: String]
    let body: Data
}

private func curl(_ url: String, _ options: [String] = []) async throws -> Fetched {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-curl-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let headerFile = directory.appendingPathComponent("headers").path, bodyFile = directory.appendingPathComponent("body").path
    let status: Int32 = try await offThePool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "--max-time", "20", "-D", headerFile, "-o", bodyFile] + options + [url]
        try process.runUnblocked()
        waitForExit(process, seconds: 25)
        return process.terminationStatus
    }
    let headerText = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
    let lines = headerText.components(separatedBy: "\r\n")
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    let code = lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -Int(status)
    return Fetched(status: code, headers: headers, body: (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data())
}

@Suite struct MediaServerTests {
    @Test func servesTheWholeFileWithDLNAHeaders() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone)
        #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/media.wav"))
        let fetched = try await curl(url, ["-H", "getcontentFeatures.dlna.org: 1"])
        #expect(fetched.status == 200)
        #expect(fetched.body == (try Data(contentsOf: URL(fileURLWithPath: info.path))))
        #expect(fetched.headers["content-length"] == String(info.size))
        #expect(fetched.headers["content-type"] == "audio/wav")
        #expect(fetched.headers["accept-ranges"] == "bytes")
        #expect(fetched.headers["transfermode.dlna.org"] == "Streaming")
        #expect(fetched.headers["contentfeatures.dlna.org"]?.hasPrefix("DLNA.ORG_OP=01;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=0170") == true)
    }

    @Test func rangesGive206WithExactlyThoseBytes() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        let file = try Data(contentsOf: URL(fileURLWithPath: info.path))
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone)
        let middle = try await curl(url, ["-H", "Range: bytes=1000-1999"])
        #expect(middle.status == 206)
        #expect(middle.headers["content-range"] == "bytes 1000-1999/\(info.size)")
        #expect(middle.body == file[1000...1999])
        let tail = try await curl(url, ["-H", "Range: bytes=-100"])
        #expect(tail.status == 206)
        #expect(tail.body == file.suffix(100))
        let open = try await curl(url, ["-H", "Range: bytes=\(info.size - 10)-"])
        #expect(open.body == file.suffix(10))
        let beyond = try await curl(url, ["-H", "Range: bytes=\(info.size + 5)-"])
        #expect(beyond.status == 416)
        #expect(beyond.headers["content-range"] == "bytes */\(info.size)")
    }

    @Test func aFileThatGrowsIsServedAsFarAsItHasGrown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-growing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("recording.mp3").path
        try Data(repeating: 1, count: 1000).write(to: URL(fileURLWithPath: path))
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(file: path, mimeType: "audio/mpeg", size: 1000, for: .anyone)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 2, count: 500))
        try handle.close()
        let whole = try await curl(url)
        #expect(whole.status == 200 && whole.body.count == 1500 && whole.headers["content-length"] == "1500")
        let rest = try await curl(url, ["-H", "Range: bytes=1000-"])
        #expect(rest.status == 206 && rest.body == Data(repeating: 2, count: 500) && rest.headers["content-range"] == "bytes 1000-1499/1500")
    }

    @Test func castReceiversMayReadItemsAndTheirLengthsAcrossOrigins() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone)
        let ranged = try await curl(url, ["-H", "Origin: https://www.gstatic.com", "-H", "Range: bytes=0-99"])
        #expect(ranged.status == 206 && ranged.headers["access-control-allow-origin"] == "*")
        #expect(ranged.headers["access-control-expose-headers"]?.contains("Content-Range") == true
                && ranged.headers["access-control-expose-headers"]?.contains("Content-Length") == true, "\(ranged.headers)")
        let preflight = try await curl(url, ["-X", "OPTIONS", "-H", "Origin: https://www.gstatic.com",
                                             "-H", "Access-Control-Request-Method: GET", "-H", "Access-Control-Request-Headers: range"])
        #expect(preflight.status == 204 && preflight.headers["access-control-allow-headers"]?.contains("Range") == true)
        #expect(try await curl(server.baseURL + "/m/00000000000000000000000000000000/media.wav", ["-X", "OPTIONS"]).status == 404)
    }

    @Test func headDescribesWithoutABody() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        let server = try MediaServer()
        defer { server.close() }
        let fetched = try await curl(server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone), ["-I"])
        #expect(fetched.status == 200)
        #expect(fetched.headers["content-length"] == String(info.size))
        // curl -I writes the headers as its output: nothing else may follow them.
        #expect(String(decoding: fetched.body, as: UTF8.self).hasSuffix("\r\n\r\n"))
        #expect(!fetched.body.contains(Data("RIFF".utf8)))
    }

    @Test func onlyOfferedItemsAndOnlyGETAndHEAD() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone)
        #expect(try await curl(server.baseURL + "/").status == 404, "no listing")
        #expect(try await curl(server.baseURL + "/m/00000000000000000000000000000000/media.wav").status == 404)
        #expect(try await curl(server.baseURL + "/m/../../../../etc/passwd", ["--path-as-is"]).status == 404)
        #expect(try await curl(server.baseURL + info.path).status == 404, "no file paths")
        #expect(try await curl(url, ["-X", "POST", "-d", "x"]).status == 404)
        #expect(try await curl(url, ["-X", "PUT", "-d", "x"]).status == 404)
        server.withdraw(url)
        #expect(try await curl(url).status == 404, "withdrawn")
    }

    @Test func tokensAreUnguessable() throws {
        let server = try MediaServer()
        defer { server.close() }
        let urls = (0..<50).map { _ in server.offer(data: Data([1]), mimeType: "image/jpeg", for: .anyone) }
        let tokens = Set(urls.compactMap { MediaServer.token(in: $0) })
        #expect(tokens.count == 50)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }

    @Test func coverArtIsServedFromMemory() async throws {
        let server = try MediaServer()
        defer { server.close() }
        let art = Data((0..<5000).map { UInt8($0 % 251) })
        let fetched = try await curl(server.offer(data: art, mimeType: "image/jpeg", for: .anyone))
        #expect(fetched.status == 200)
        #expect(fetched.headers["content-type"] == "image/jpeg")
        #expect(fetched.headers["transfermode.dlna.org"] == "Interactive")
        #expect(fetched.body == art)
    }

    @Test func aConvertedStreamIsMP3AndRestartsAtATime() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.longWAV)
        let duration = try #require(info.duration)
        let server = try MediaServer()
        defer { server.close() }
        let plan = DeliveryPlanner.plan(info, for: .mimeTypes(["audio/mpeg"]))
        #expect(plan == .transcode(.mp3))
        let (url, mimeType) = try #require(server.offer(info, as: plan, for: .anyone))
        #expect(mimeType == "audio/mpeg")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-mp3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let whole = try await curl(url)
        #expect(whole.status == 200)
        #expect(whole.headers["transfer-encoding"] == "chunked")
        #expect(whole.headers["contentfeatures.dlna.org"]?.hasPrefix("DLNA.ORG_OP=10;DLNA.ORG_CI=1") == true)
        try whole.body.write(to: directory.appendingPathComponent("whole.mp3"))
        let wholeInfo = try await probe(directory.appendingPathComponent("whole.mp3").path)
        #expect(wholeInfo.mimeType == "audio/mpeg")
        #expect(abs((wholeInfo.duration ?? 0) - duration) < 0.2)

        let later = try await curl(url, ["-H", "TimeSeekRange.dlna.org: npt=2.0-"])
        #expect(later.headers["timeseekrange.dlna.org"]?.hasPrefix("npt=2.000-") == true)
        try later.body.write(to: directory.appendingPathComponent("later.mp3"))
        #expect(abs((try await probe(directory.appendingPathComponent("later.mp3").path).duration ?? 0) - (duration - 2)) < 0.2)

        let query = try await curl(url + "?t=4")
        try query.body.write(to: directory.appendingPathComponent("query.mp3"))
        #expect(abs((try await probe(directory.appendingPathComponent("query.mp3").path).duration ?? 0) - (duration - 4)) < 0.2)
    }

    @Test func clientsThatHangUpMidStreamLeaveTheServerServing() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.longWAV)
        let server = try MediaServer()
        defer { server.close() }
        let converted = try #require(server.offer(info, as: .transcode(.flac), for: .anyone)).url
        let file = server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone)
        for _ in 0..<4 {
            _ = try await curl(converted, ["--max-time", "0.05"])
            _ = try await curl(file, ["--max-time", "0.01", "--limit-rate", "10k"])
        }
        #expect(try await curl(converted).status == 200)
        #expect(try await curl(file).body.count == Int(info.size))
    }

    @Test func aConversionThatFailsIsA500() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-gone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let samples = try await Samples.get()
        let copy = directory.appendingPathComponent("going.wav").path
        try FileManager.default.copyItem(atPath: samples.wav, toPath: copy)
        let info = try await probe(copy)
        let server = try MediaServer()
        defer { server.close() }
        let url = try #require(server.offer(info, as: .transcode(.mp3), for: .anyone)).url
        try FileManager.default.removeItem(atPath: copy)
        #expect(try await curl(url).status == 500)
    }

    /// A converted stream carries none of its source's tags (a FLAC's or an Ogg's Vorbis comments, a WAV's INFO): what a device shows
    /// comes from route's metadata, which is cleaned of control characters; a tag passed on would not be.
    @Test(arguments: ["audio/flac", "audio/ogg", "audio/wav"])
    func aConvertedStreamCarriesNoTagOfItsSource(accepts: String) async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.taggedMP3)
        let server = try MediaServer()
        defer { server.close() }
        let url = try #require(server.offer(info, as: DeliveryPlanner.plan(info, for: .mimeTypes([accepts])), for: .anyone)).url
        let fetched = try await curl(url)
        #expect(fetched.status == 200 && fetched.body.count > 1000, "\(accepts): \(fetched.status), \(fetched.body.count) bytes")
        for tag in ["Lab Song", "Lab Artist", "Lab Album"] {
            #expect(fetched.body.range(of: Data(tag.utf8)) == nil, "\(accepts) carries \(tag)")
        }
    }

    /// Each way of converting seeks: the answer comes at once and holds the item from the offset on
    /// (FLAC and fMP4 used to never answer or send a header only; a remux with t >= 2 never answered).
    @Test(arguments: [
        ("longMP3", "audio/flac", "transcoded (flac)"), ("mkv", "video/mp2t", "remuxed (mpegTSCopy)"),
        ("mkv", "video/mp4", "remuxed (fragmentedMP4Copy)"), ("webm", "video/mp4", "transcoded (fragmentedMP4)"),
        ("webm", "video/mp2t", "transcoded (mpegTS)"), ("longMP3", "audio/wav", "transcoded (wav)"), ("longWAV", "audio/flac", "transcoded (flac)"),
        ("mkvAC3", "video/mp2t", "remuxed (mpegTSVideoCopy)"), ("mkvAC3", "video/mp4", "remuxed (fragmentedMP4VideoCopy)"),
    ])
    func convertedStreamsStartAtTheAskedTime(sample: String, accepts: String, plan: String) async throws {
        let samples = try await Samples.get()
        let path = ["longMP3": samples.longMP3, "longWAV": samples.longWAV, "mkv": samples.mkv, "webm": samples.webm, "mkvAC3": samples.mkvAC3][sample]!
        let info = try await probe(path)
        let duration = try #require(info.duration)
        let server = try MediaServer()
        defer { server.close() }
        let delivery = DeliveryPlanner.plan(info, for: .mimeTypes([accepts]))
        #expect(delivery.summary == plan)
        let url = try #require(server.offer(info, as: delivery, for: .anyone)).url
        let whole = try await curl(url)
        let started = ContinuousClock.now
        let later = try await curl(url + "?t=3")
        #expect(ContinuousClock.now - started < .seconds(10), "answered at once")
        #expect(whole.status == 200 && later.status == 200)
        // Less than the whole, and about the share of the item after 3 s (key frames are a second apart).
        let share = Double(later.body.count) / Double(max(1, whole.body.count))
        let expected = (duration - 3) / duration
        #expect(share > expected - 0.25 && share < expected + 0.2, "\(sample) as \(accepts): \(later.body.count) of \(whole.body.count) bytes")
        guard !accepts.hasSuffix("mp4") else { return } // fragmented MP4 states no overall length
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("route-seek-\(UUID().uuidString)")
        try later.body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let made = try await probe(file.path)
        #expect(abs((made.duration ?? 0) - (duration - 3)) < 1.2, "\(sample) as \(accepts): \(made.duration ?? -1) s from 3 s of \(duration) s")
    }

    /// Seek values from the network never reach arithmetic that traps (`?t=inf` used to kill route).
    @Test func absurdSeekValuesStartFromTheBeginningOrAre416() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.longWAV)
        let server = try MediaServer()
        defer { server.close() }
        let url = try #require(server.offer(info, as: .transcode(.mp3), for: .anyone)).url
        for t in ["inf", "1e300", "nan", "-5", "abc", "0x10", "99999999999"] {
            let fetched = try await curl(url + "?t=" + t)
            #expect(fetched.status == 200 && !fetched.body.isEmpty, "t=\(t): \(fetched.status)")
        }
        #expect(try await curl(url + "?t=6").status == 416, "at or past the end")
        #expect(try await curl(url, ["-H", "TimeSeekRange.dlna.org: npt=inf-"]).status == 200)
        #expect(try await curl(url, ["-H", "TimeSeekRange.dlna.org: npt=1:00:00-"]).status == 416)
        #expect(try await curl(url).status == 200, "still serving")
    }

    /// Every request whose client hangs up used to leave a socket in CLOSE-WAIT for ever (libsoup 3.2).
    @Test func requestsLeaveNoDescriptorsBehind() async throws {
        let (server, _, url, port) = try await servedWAV()
        defer { server.close() }
        for index in 0..<300 { _ = try await offThePool { try rawGET(port: port, path: index % 3 == 0 ? URL(string: url)!.path : "/x") } }
        // The server's side of every connection is gone: none left open, none in CLOSE-WAIT.
        try await waitUntil("the server closed every connection", within: 5) { serverConnections(port: port) == 0 }
        let after = try await curl(url)
        #expect(after.status == 200, "\(after.status) \(after.headers)")
    }

    /// One address gets at most `ConnectionLimits.perClient` connections, and idle ones are closed; other
    /// clients are served meanwhile.
    @Test func idleConnectionsAreBoundedPerClientAndClosed() async throws {
        let (server, _, url, port) = try await servedWAV()
        defer { server.close() }
        let idle = try (0..<(ConnectionLimits.perClient + 4)).map { _ in try IdleClient(port: port, from: "127.0.0.1") }
        try await waitUntil("the extra connections are refused", within: 3) { idle.filter(\.isClosed).count == 4 }
        #expect(try await curl(url, ["--interface", "127.0.0.2"]).status == 200, "another client is served")
        let seconds = Double(ConnectionLimits.requestTimeout.components.seconds)
        try await waitUntil("idle connections are closed", within: seconds + 4) { idle.allSatisfy(\.isClosed) }
    }

    @Test func aPortIsNeverSharedWithAnotherServer() throws {
        let first = try MediaServer()
        defer { first.close() }
        let port = try #require(URL(string: first.baseURL)?.port)
        #expect(throws: MediaError.self) { try MediaServer(port: UInt16(port)) }
    }

    @Test func rangesFollowTheSpec() async throws {
        let (server, info, url, _) = try await servedWAV()
        defer { server.close() }
        let size = Int(info.size)
        let clamped = try await curl(url, ["-H", "Range: bytes=100-99999999"])
        #expect(clamped.status == 206 && clamped.body.count == size - 100)
        #expect(clamped.headers["content-range"] == "bytes 100-\(size - 1)/\(size)")
        #expect(try await curl(url, ["-H", "Range: bytes=0-\(size)"]).status == 206)
        let suffix = try await curl(url, ["-H", "Range: bytes=-99999999"])
        #expect(suffix.status == 206 && suffix.body.count == size)
        for ignored in ["bytes=abc", "items=0-5", "bytes=5-1"] {
            let whole = try await curl(url, ["-H", "Range: \(ignored)"])
            #expect(whole.status == 200 && whole.body.count == size, "\(ignored)")
        }
        let beyond = try await curl(url, ["-H", "Range: bytes=\(size)-"])
        #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */\(size)")
    }

    @Test func anAddressThatIsNotLocalIsAClearError() {
        #expect(throws: MediaError.self) { try MediaServer(address: "192.0.2.1") }
        #expect(throws: MediaError.self) { try MediaServer(address: "not-an-address") }
    }
}

/// `Range` and `TimeSeekRange.dlna.org` as the server reads them.
@Suite struct RangeParsingTests {
    @Test func byteRanges() {
        let size: UInt64 = 239_958
        #expect(ByteRangeRequest.parse(nil, size: size) == .whole)
        #expect(ByteRangeRequest.parse("bytes=0-99", size: size) == .part(start: 0, end: 99))
        #expect(ByteRangeRequest.parse("bytes=0-239958", size: size) == .part(start: 0, end: size - 1))
        #expect(ByteRangeRequest.parse("bytes=100-99999999", size: size) == .part(start: 100, end: size - 1))
        #expect(ByteRangeRequest.parse("bytes=100-", size: size) == .part(start: 100, end: size - 1))
        #expect(ByteRangeRequest.parse("bytes=-500", size: size) == .part(start: size - 500, end: size - 1))
        #expect(ByteRangeRequest.parse("bytes=-99999999", size: size) == .part(start: 0, end: size - 1))
        #expect(ByteRangeRequest.parse("bytes=0-9, 100-199", size: size) == .part(start: 0, end: 199))
        #expect(ByteRangeRequest.parse("BYTES = 5-6", size: size) == .part(start: 5, end: 6))
        #expect(ByteRangeRequest.parse("bytes=239958-", size: size) == .unsatisfiable)
        #expect(ByteRangeRequest.parse("bytes=-0", size: size) == .unsatisfiable)
        for ignored in ["bytes=abc", "items=0-5", "bytes=5-1", "bytes=", "bytes=1-2-3", "bytes=99999999999999999999-",
                        "bytes=+1-2", "bytes=0x10-20", "bytes=" + Array(repeating: "1-2", count: 40).joined(separator: ",")] {
            #expect(ByteRangeRequest.parse(ignored, size: size) == .whole, "\(ignored)")
        }
    }

    @Test func timeSeeks() {
        #expect(TimeSeekRequest.parse(query: nil, header: nil, duration: 60) == .start)
        #expect(TimeSeekRequest.parse(query: "12.5", header: nil, duration: 60) == .from(12.5))
        #expect(TimeSeekRequest.parse(query: nil, header: "npt=0:00:30.000-", duration: 60) == .from(30))
        #expect(TimeSeekRequest.parse(query: nil, header: "npt=10-20/60", duration: 60) == .from(10))
        #expect(TimeSeekRequest.parse(query: "60", header: nil, duration: 60) == .unsatisfiable)
        #expect(TimeSeekRequest.parse(query: "600", header: nil, duration: nil) == .from(600))
        for bad in ["inf", "nan", "1e300", "-1", "", "1:2:3:4"] {
            #expect(TimeSeekRequest.parse(query: bad, header: nil, duration: 60) == .start, "\(bad)")
            #expect(TimeSeekRequest.parse(query: nil, header: "npt=\(bad)-", duration: 60) == .start, "npt=\(bad)-")
        }
        #expect(TimeSeekRequest.parse(query: nil, header: "bytes=0-", duration: 60) == .start)
    }
}

/// A new server offering the 2 s sample WAV as it is: the server (the caller closes it), the probe, the
/// URL and the port.
private func servedWAV() async throws -> (MediaServer, MediaInfo, String, Int) {
    let info = try await probe(try await Samples.get().wav)
    let server = try MediaServer()
    let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size, for: .anyone)
    return (server, info, url, URL(string: url)?.port ?? 0)
}

/// TCP connections whose local end is `port` (the server's side), from the kernel's table: established,
/// closing or in CLOSE-WAIT — everything but the listening socket and TIME-WAIT remnants.
private func serverConnections(port: Int) -> Int {
    let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
    let local = String(format: ":%04X", port)
    return table.split(separator: "\n").dropFirst().filter { line in
        let fields = line.split(separator: " ")
        guard fields.count > 3, fields[1].hasSuffix(local) else { return false }
        return fields[3] != "0A" && fields[3] != "06" // LISTEN, TIME_WAIT
    }.count
}

/// Polls `condition` every 50 ms until it holds; records an issue and throws after `seconds`.
private func waitUntil(_ what: String, within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation,
                       _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("\(what): not within \(seconds) s", sourceLocation: sourceLocation)
    throw ToolFailed(description: what)
}

/// One HTTP/1.1 GET over a fresh connection, read until the server closes it; the status line.
private func rawGET(port: Int, path: String) throws -> String {
    let client = try IdleClient(port: port, from: "127.0.0.1")
    let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    _ = request.withCString { send(client.fd, $0, strlen($0), 0) }
    var response = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(client.fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        response.append(contentsOf: buffer[0..<n])
        // A whole header and a body the server ends by closing (Connection: close) or by its length.
        if response.count > 1 << 20 { break }
    }
    return String(decoding: response.prefix(while: { $0 != 13 }), as: UTF8.self)
}

/// A TCP connection that sends nothing (unless asked), and knows when the server has closed it.
private final class IdleClient: @unchecked Sendable {
    let fd: Int32

    init(port: Int, from source: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = UInt16(port).bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard bound == 0, connected == 0 else { close(fd); throw ToolFailed(description: "cannot connect to port \(port)") }
    }

    /// Whether the server has closed its end (a read sees the end, without waiting).
    var isClosed: Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    deinit { close(fd) }
}

/// Desktop audio as the media server streams it (LiveAudio): what a device reads from the moment it connects, in each
/// format, and the silence that keeps the stream going while nothing plays.
@Suite struct LiveAudioTests {
    /// Fetches `url` from `server` for `seconds` with curl (an endless body: curl gives up at its --max-time), running
    /// `during` once the server has had curl's request (what is pushed before a device connects is not for it).
    /// Fetches a live stream with curl while `during` runs (from when the request reached the server), until `bytes`
    /// of body have come (or 10 s); curl ends with the call. A loaded machine delays the request and the stream, never
    /// what it must carry. `elapsed`: from the request's arrival to the end.
    private func listen(_ url: String, on server: MediaServer, bytes: Int,
                        during: @escaping @Sendable () async -> Void) async throws -> (fetched: Fetched, elapsed: Duration) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-listen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let headerFile = directory.appendingPathComponent("headers").path, bodyFile = directory.appendingPathComponent("body").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "--max-time", "20", "-D", headerFile, "-o", bodyFile, url]
        try process.runUnblocked()
        defer {
            kill(process.processIdentifier, SIGKILL)
            waitForExit(process, seconds: 5)
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while (server.access(to: url)?.requests ?? 0) == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect((server.access(to: url)?.requests ?? 0) > 0, "curl did not connect within 10 s")
        let arrived = ContinuousClock.now
        await during()
        func received() -> Int { ((try? FileManager.default.attributesOfItem(atPath: bodyFile))?[.size] as? Int) ?? 0 }
        while received() < bytes, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = ContinuousClock.now - arrived
        let lines = ((try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "").components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let status = lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        return (Fetched(status: status, headers: headers, body: (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data()), elapsed)
    }

    /// Pushes 20 ms of frames whose left sample is 0x0102 and right 0x0304, every 20 ms, `count` times.
    private static func pushPattern(_ audio: LiveAudio, count: Int) async {
        let frames = [Int16](repeating: 0, count: 882 * 2).enumerated().map { $0.offset % 2 == 0 ? Int16(0x0102) : Int16(0x0304) }
        for _ in 0..<count {
            frames.withUnsafeBytes { audio.push($0) }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func wavHasAnEndlessHeaderThenLittleEndianSamples() async throws {
        let audio = LiveAudio()
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(live: audio, as: .wav, for: .anyone)
        #expect(url.hasSuffix("/desktop-audio.wav"))
        let (fetched, _) = try await listen(url, on: server, bytes: 44 + 4 * 882 * 10 + 4) { await Self.pushPattern(audio, count: 20) }
        #expect(fetched.status == 200)
        #expect(fetched.headers["content-type"] == "audio/wav")
        #expect(fetched.headers["transfer-encoding"] == "chunked" && fetched.headers["content-length"] == nil)
        #expect(fetched.headers["contentfeatures.dlna.org"]?.hasPrefix("DLNA.ORG_OP=00;") == true)
        let body = [UInt8](fetched.body)
        #expect(body.count > 44 + 4 * 882 * 10, "\(body.count) bytes")
        #expect(Array(body.prefix(4)) == Array("RIFF".utf8) && Array(body[8..<16]) == Array("WAVEfmt ".utf8) && Array(body[36..<40]) == Array("data".utf8))
        // 44100 Hz, 2 channels, 16 bits.
        #expect(body[24] == 0x44 && body[25] == 0xAC && body[22] == 2 && body[34] == 16)
        #expect(Array(body[44..<48]) == [0x02, 0x01, 0x04, 0x03])
    }

    @Test func l16IsBigEndianAndSaysLPCMToDLNA() async throws {
        let audio = LiveAudio()
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(live: audio, as: .l16, for: .anyone)
        let (fetched, _) = try await listen(url, on: server, bytes: 4 * 882 * 10) { await Self.pushPattern(audio, count: 20) }
        #expect(fetched.headers["content-type"] == "audio/L16;rate=44100;channels=2")
        #expect(fetched.headers["contentfeatures.dlna.org"]?.hasPrefix("DLNA.ORG_PN=LPCM;DLNA.ORG_OP=00;") == true)
        let body = [UInt8](fetched.body)
        #expect(body.count >= 4 * 882 * 10 && body.count % 4 == 0, "\(body.count) bytes")
        #expect(Array(body.prefix(8)) == [0x01, 0x02, 0x03, 0x04, 0x01, 0x02, 0x03, 0x04])
    }

    @Test func aSecondConnectionTakesTheStreamOverAndTheFirstEnds() async throws {
        let audio = LiveAudio()
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(live: audio, as: .l16, for: .anyone)
        let filling = Task { await audio.run() }
        defer { filling.cancel() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("route-two-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func fetch(_ name: String) throws -> (Process, String) {
            let body = directory.appendingPathComponent(name).path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-s", "--max-time", "20", "-o", body, url]
            try process.runUnblocked()
            return (process, body)
        }
        func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }
        func until(_ what: String, _ condition: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(condition(), "\(what) did not happen within 10 s")
        }
        let (first, firstBody) = try fetch("first")
        defer { kill(first.processIdentifier, SIGKILL); waitForExit(first, seconds: 5) }
        try await until("the first connection gets sound") { size(firstBody) > 0 }
        let (taker, takerBody) = try fetch("taker")
        defer { kill(taker.processIdentifier, SIGKILL); waitForExit(taker, seconds: 5) }
        try await until("the first connection's stream ends once another takes it") { !first.isRunning }
        #expect(first.terminationStatus == 0, "the first stream ended as a complete response (curl \(first.terminationStatus))")
        let had = size(takerBody)
        try await until("the connection that took it over goes on getting sound") { size(takerBody) > had + audio.bytesPerSecond / 4 }
        #expect(taker.isRunning)
    }

    @Test func silenceKeepsTheStreamGoingWhileNothingPlaysAndSoundIsNoticed() async throws {
        let audio = LiveAudio()
        let server = try MediaServer()
        defer { server.close() }
        let url = server.offer(live: audio, as: .l16, for: .anyone)
        let filling = Task { await audio.run() }
        defer { filling.cancel() }
        #expect(audio.quietFor == nil)
        // Nothing is pushed: the device still gets sound, all of it silence, at the pace it plays (never ahead of it).
        let (fetched, elapsed) = try await listen(url, on: server, bytes: audio.bytesPerSecond / 2) {}
        let body = [UInt8](fetched.body)
        let seconds = elapsed / .seconds(1)
        #expect(body.count >= audio.bytesPerSecond / 2, "\(body.count) bytes of silence in \(seconds) s")
        #expect(Double(body.count) < Double(audio.bytesPerSecond) * (seconds + 0.5), "\(body.count) bytes in \(seconds) s: ahead of real time")
        #expect(body.allSatisfy { $0 == 0 })
        // Sound ends a wait for sound (pushed until it has: the waiter may not have
        // registered yet).
        let woken = Mutex(false)
        let waiting = Task {
            await audio.waitForSound()
            woken.withLock { $0 = true }
        }
        [Int16](repeating: 0, count: 64).withUnsafeBytes { audio.push($0) }
        #expect(audio.quietFor == nil)
        let deadline = ContinuousClock.now + .seconds(5)
        while !woken.withLock({ $0 }), ContinuousClock.now < deadline {
            [Int16](repeating: 5000, count: 64).withUnsafeBytes { audio.push($0) }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(woken.withLock { $0 }, "a wait for sound was not ended by sound within 5 s")
        waiting.cancel()
        #expect(try #require(audio.quietFor) < .seconds(1))
    }
}
