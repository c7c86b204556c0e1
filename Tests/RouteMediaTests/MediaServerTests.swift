// MediaServerTests: the media HTTP server as a device sees it, through curl (an independent client):
// ranges, HEAD, DLNA headers, what is not offered, converted streams with time seek, and hang-ups.

import Foundation
import RouteCore
@testable import RouteMedia
import RouteTestSupport
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
        try process.run()
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
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size)
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
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size)
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

    @Test func headDescribesWithoutABody() async throws {
        let samples = try await Samples.get()
        let info = try await probe(samples.wav)
        let server = try MediaServer()
        defer { server.close() }
        let fetched = try await curl(server.offer(file: info.path, mimeType: info.mimeType, size: info.size), ["-I"])
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
        let url = server.offer(file: info.path, mimeType: info.mimeType, size: info.size)
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
        let urls = (0..<50).map { _ in server.offer(data: Data([1]), mimeType: "image/jpeg") }
        let tokens = Set(urls.compactMap { MediaServer.token(in: $0) })
        #expect(tokens.count == 50)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }

    @Test func coverArtIsServedFromMemory() async throws {
        let server = try MediaServer()
        defer { server.close() }
        let art = Data((0..<5000).map { UInt8($0 % 251) })
        let fetched = try await curl(server.offer(data: art, mimeType: "image/jpeg"))
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
        let (url, mimeType) = try #require(server.offer(info, as: plan))
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
        let converted = try #require(server.offer(info, as: .transcode(.flac))).url
        let file = server.offer(file: info.path, mimeType: info.mimeType, size: info.size)
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
        let url = try #require(server.offer(info, as: .transcode(.mp3))).url
        try FileManager.default.removeItem(atPath: copy)
        #expect(try await curl(url).status == 500)
    }

    @Test func anAddressThatIsNotLocalIsAClearError() {
        #expect(throws: MediaError.self) { try MediaServer(address: "192.0.2.1") }
        #expect(throws: MediaError.self) { try MediaServer(address: "not-an-address") }
    }
}
