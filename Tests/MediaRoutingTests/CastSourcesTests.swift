// CastSourcesTests: the parts of making a queue that need no network — playlists of every kind, natural order, a web
// page's formats and the one chosen for a device, and where positions are remembered.

import Foundation
@testable import MediaRouting
import RouteCore
import Testing

@Suite struct CastSourcesTests {
    @Test func m3uGivesLocationsWithTheirTitlesAndLengths() throws {
        let text = "\u{FEFF}#EXTM3U\n#EXTINF:123,Artist - Song\nmusic/song.mp3\n\n# a comment\n#EXTINF:-1 tvg-name=\"x\",Radio\nhttp://radio.example/live\nplain.flac\r\n"
        let items = try PlaylistFile.parse(Data(text.utf8), kind: "m3u", name: "list.m3u")
        #expect(items == [PlaylistFile.Item(location: "music/song.mp3", title: "Artist - Song", duration: 123),
                          PlaylistFile.Item(location: "http://radio.example/live", title: "Radio", duration: nil),
                          PlaylistFile.Item(location: "plain.flac", title: nil, duration: nil)])
    }

    @Test func anM3UInLatin1IsRead() throws {
        let data = Data([0x23, 0x45, 0x58, 0x54, 0x49, 0x4E, 0x46, 0x3A, 0x31, 0x2C, 0x43, 0x61, 0x66, 0xE9, 0x0A, 0x63, 0x2E, 0x6D, 0x70, 0x33])
        #expect(try PlaylistFile.parse(data, kind: "m3u", name: "x").first?.title == "Café")
    }

    @Test func plsIsReadInItsNumbersOrder() throws {
        let text = "[playlist]\nFile2=b.mp3\nTitle2=Bee\nFile1=a.mp3\nLength1=61\nLength2=-1\nNumberOfEntries=2\nVersion=2\n"
        #expect(try PlaylistFile.parse(Data(text.utf8), kind: "pls", name: "x") == [
            PlaylistFile.Item(location: "a.mp3", title: nil, duration: 61), PlaylistFile.Item(location: "b.mp3", title: "Bee", duration: nil)])
    }

    @Test func xspfIsReadAndAnXSPFThatIsNotXMLIsNamed() throws {
        let text = """
            <?xml version="1.0"?><playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList>
            <track><location>file:///music/a.flac</location><title>A</title><duration>61000</duration></track>
            <track><title>no location</title></track><track><location>http://x.example/b.mp3</location></track></trackList></playlist>
            """
        #expect(try PlaylistFile.parse(Data(text.utf8), kind: "xspf", name: "x") == [
            PlaylistFile.Item(location: "file:///music/a.flac", title: "A", duration: 61),
            PlaylistFile.Item(location: "http://x.example/b.mp3", title: nil, duration: nil)])
        #expect(throws: (any Error).self) { try PlaylistFile.parse(Data("<playlist".utf8), kind: "xspf", name: "broken.xspf") }
    }

    @Test func namesAreInNaturalOrder() {
        #expect(["10 c", "2 b", "1 a", "B", "a"].sorted(by: CastSources.naturalOrder) == ["1 a", "2 b", "10 c", "a", "B"])
    }

    @Test func aPagesFormatIsTheBestTheDeviceTakesAsItIs() throws {
        let video = ["title": "Clip", "formats": [
            ["url": "https://x.example/low.mp4", "ext": "mp4", "vcodec": "avc1", "acodec": "mp4a", "protocol": "https"],
            ["url": "https://x.example/audio.m4a", "ext": "m4a", "vcodec": "none", "acodec": "mp4a", "protocol": "https"],
            ["url": "https://x.example/high.webm", "ext": "webm", "vcodec": "vp9", "acodec": "opus", "protocol": "https"],
            ["url": "rtmp://x.example/no", "ext": "flv", "protocol": "rtmp"],
        ]] as [String: Any]
        let entry = try #require(WebPage.entry(page: "https://x.example/watch", video))
        #expect(entry.formats.map(\.url) == ["https://x.example/high.webm", "https://x.example/low.mp4", "https://x.example/audio.m4a"])
        func device(_ types: [String], _ capabilities: MediaDevice.Capabilities) -> MediaDevice {
            MediaDevice(routes: [MediaRoute(provider: "upnp", nativeID: "t", name: "T", kind: .tv, capabilities: capabilities,
                                            volumeControl: .absolute, accepts: .mimeTypes(types))])
        }
        #expect(WebPage.choose(entry.formats, for: device(["video/mp4", "audio/mp4"], [.audio, .video]))?.url == "https://x.example/low.mp4")
        #expect(WebPage.choose(entry.formats, for: device(["audio/mp4"], .audio))?.url == "https://x.example/audio.m4a")
        // Nothing taken as it is: the best, to be converted.
        #expect(WebPage.choose(entry.formats, for: device(["video/mp2t"], [.audio, .video]))?.url == "https://x.example/high.webm")
    }

    @Test func positionsNearTheStartOrEndAreNotKeptAndAFinishedItemIsForgotten() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("positions-\(UUID().uuidString)/positions.json").path
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: file).deletingLastPathComponent().path) }
        let store = ResumePositions(file: file)
        store.note("/a.mp3", position: 3, duration: 300, now: true)
        #expect(store.position(of: "/a.mp3") == nil)
        store.note("/a.mp3", position: 120, duration: 300, now: true)
        #expect(ResumePositions(file: file).position(of: "/a.mp3") == 120)
        store.note("/a.mp3", position: 295, duration: 300, now: true)
        #expect(ResumePositions(file: file).position(of: "/a.mp3") == nil)
        store.note("https://x.example/b", position: 60, duration: nil, now: true)
        let recorder = ResumeRecorder(store: store, keys: ["https://x.example/b"])
        var status = PlaybackStatus(state: .ended)
        status.endReason = .finished
        recorder.hear(QueueStatus(device: .thisComputer, route: MediaRoute.thisComputer, index: 0, count: 1, title: "b", playback: status))
        #expect(ResumePositions(file: file).position(of: "https://x.example/b") == nil)
        let starts = StartPositions(first: 30, keys: ["/x", "/y"], store: store)
        #expect(starts.position(of: 0) == 30 && starts.position(of: 0) == nil)
    }
}
