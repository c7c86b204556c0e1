// CastProviderTests: what the Cast provider reads and writes without a network — frames (protobuf-c's
// CastMessage behind a length), malformed and oversized ones, announcements turned into routes, addresses, and
// replies awaited by id.

import Foundation
import RouteCore
import Testing
@testable import CastProvider

@Suite struct CastFrameTests {
    private let message = CastMessage(source: "sender-0", destination: "receiver-0", namespace: "urn:x-cast:com.google.cast.receiver",
                                      payload: #"{"type":"GET_STATUS","requestId":1,"name":"Wohnzimmer – TV"}"#)

    @Test func aFrameIsItsBigEndianLengthThenTheMessageAndReadsBackInAnyCuts() throws {
        let frame = try CastFrame.encode(message)
        let length = frame.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        #expect(length == frame.count - 4)
        // Field 1 (protocol_version, varint 0) comes first, then field 2 (source_id, a string).
        #expect(Array(frame[4..<8]) == [0x08, 0x00, 0x12, 8])
        let twice = frame + frame
        for cut in [0, 1, 3, 4, 5, frame.count - 1, frame.count, frame.count + 2, twice.count] {
            var decoder = CastFrameDecoder()
            decoder.append(twice.prefix(cut))
            var read: [CastMessage] = []
            while let next = try decoder.next() { read.append(next) }
            decoder.append(twice.dropFirst(cut))
            while let next = try decoder.next() { read.append(next) }
            #expect(read == [message, message], "cut at \(cut)")
        }
    }

    @Test func aFrameLongerThan64KiBIsRefusedBeforeItsBodyArrives() throws {
        var decoder = CastFrameDecoder()
        decoder.append([0x00, 0x01, 0x00, 0x01])
        #expect(throws: CastFrameError.tooLong(65537)) { try decoder.next() }
        var big = message
        big.payload = String(repeating: "x", count: 70_000)
        #expect(throws: CastFrameError.self) { try CastFrame.encode(big) }
    }

    @Test func bytesThatAreNoCastMessageAreMalformed() throws {
        for body: [UInt8] in [[0xFF, 0xFF, 0xFF, 0xFF, 0xFF], [0x08, 0x00], [0x12, 0x40, 0x41]] {
            var decoder = CastFrameDecoder()
            decoder.append([0, 0, 0, UInt8(body.count)] + body)
            #expect(throws: CastFrameError.self) { try decoder.next() }
        }
        // Every required field, but a source that is not UTF-8.
        let body: [UInt8] = [0x08, 0x00, 0x12, 0x01, 0xC3, 0x1A, 0x01, 0x41, 0x22, 0x01, 0x41, 0x28, 0x00]
        var decoder = CastFrameDecoder()
        decoder.append([0, 0, 0, UInt8(body.count)] + body)
        #expect(throws: CastFrameError.malformed("source_id is not UTF-8")) { try decoder.next() }
    }
}

@Suite struct CastAnnouncementTests {
    private func service(_ name: String, port: Int = 8009, _ txt: [String: String]) -> DNSSDService {
        DNSSDService(name: name, type: CastProvider.serviceType, host: "tv.local", address: "10.0.0.7", port: port, txt: txt, interface: 2)
    }

    @Test func txtRecordsBecomeRoutes() throws {
        let id = "4c61624361737452656365697665720a"
        let routes = CastReceiver.routes(from: [
            service("Chromecast-abc", ["id": id.uppercased(), "fn": "Living Room TV", "md": "Chromecast", "ca": "4101"]),
            service("Nest-Mini", ["id": "0123456789abcdef0123456789abcdef", "fn": "Kitchen speaker", "md": "Google Nest Mini", "ca": "2052"]),
            service("Group", port: 32187, ["id": "fedcba9876543210fedcba9876543210", "fn": "Downstairs", "md": "Google Cast Group", "ca": "2084"]),
            service("no id", ["fn": "Broken"]),
            service("short id", ["id": "1234", "fn": "Broken too"]),
        ]).routes
        #expect(routes.map(\.name) == ["Downstairs", "Kitchen speaker", "Living Room TV"])
        let tv = try #require(routes.first { $0.name == "Living Room TV" })
        #expect(tv.id == "cast:" + id && tv.kind == .tv && tv.capabilities == .all && tv.address == "10.0.0.7:8009")
        #expect(tv.deduplicationIDs.contains("cast:" + id) && tv.maxAudioChannels == 2 && tv.volumeControl == .absolute)
        #expect(tv.accepts.accepts(mimeType: "video/mp4") && tv.accepts.accepts(mimeType: "audio/flac") && !tv.accepts.accepts(mimeType: "video/x-matroska"))
        let speaker = try #require(routes.first { $0.name == "Kitchen speaker" })
        #expect(speaker.kind == .speaker && speaker.capabilities == .audio && !speaker.accepts.accepts(mimeType: "video/mp4"))
        let group = try #require(routes.first { $0.name == "Downstairs" })
        #expect(group.kind == .group && group.address == "10.0.0.7:32187")
    }

    @Test func oneReceiverOnTwoInterfacesIsOneRoute() {
        var other = service("Chromecast-abc", ["id": "4c61624361737452656365697665720a", "fn": "TV"])
        other.interface = 3
        let (routes, conflicts) = CastReceiver.routes(from: [service("Chromecast-abc", ["id": "4c61624361737452656365697665720a", "fn": "TV"]), other])
        #expect(routes.count == 1 && conflicts.isEmpty)
    }

    @Test func anImpostorOfAnIdentityIsIgnoredWhateverItsNameAndTheConflictIsSaid() throws {
        let id = "4c61624361737452656365697665720a"
        let real = service("Lab-Cast", ["id": id, "fn": "Lab Cast"])
        var rogue = service("AAA-first-by-sort-order", ["id": id, "fn": "Lab Cast"])
        rogue.address = "10.0.0.66"
        // Whichever order they sort in, the one given first keeps the identity.
        let (routes, conflicts) = CastReceiver.routes(from: [real, rogue])
        #expect(routes.map(\.address) == ["10.0.0.7:8009"] && conflicts.count == 1)

        // The table: first seen first, asked about the conflict, then evidence first.
        let table = CastServiceTable()
        table.found(real)
        table.found(rogue)
        // Neither is listed until both were asked: a name is no proof.
        let first = table.routes()
        #expect(first.routes.isEmpty && first.said.isEmpty, "\(first)")
        #expect(Set(first.suspects) == [real, rogue], "both are asked whether they answer as Cast")
        #expect(table.routes().suspects.isEmpty, "asked once")
        // The rogue answers as Cast and the first announcement does not: evidence wins.
        table.verified(rogue, answers: true, fingerprint: "aa")
        table.verified(real, answers: false, fingerprint: nil)
        let evidence = table.routes()
        #expect(evidence.routes.map(\.address) == ["10.0.0.66:8009"])
        #expect(evidence.said.contains { $0.contains("which answers as a Cast receiver") }, "\(evidence.said)")
        // One announcement that moves is asked again; when both answer and route knows neither's certificate, neither
        // is listed, and the line says to cast by address.
        var moved = real
        moved.address = "10.0.0.8"
        table.found(moved)
        #expect(table.routes().routes.isEmpty, "the moved one has not answered yet")
        table.verified(moved, answers: true, fingerprint: "bb")
        let both = table.routes()
        #expect(both.routes.isEmpty && both.said.contains { $0.contains("knows neither's certificate") }, "\(both)")
        table.removed(moved.key)
        #expect(table.routes().routes.map(\.address) == ["10.0.0.66:8009"], "the other announcement is all that is left")
    }

    @Test func addressesAreIPsWithAnOptionalPort() {
        #expect(CastReceiver.address(parsing: "10.0.0.7") == CastAddress(host: "10.0.0.7", port: 8009))
        #expect(CastReceiver.address(parsing: "10.0.0.7:32187") == CastAddress(host: "10.0.0.7", port: 32187))
        for bad in ["tv.local", "10.0.0.7:0", "10.0.0.7:99999", "http://10.0.0.7:8009/", "10.0.0.7:8009:1", ""] {
            #expect(CastReceiver.address(parsing: bad) == nil, "\(bad)")
        }
    }
}

@Suite struct PendingCallsTests {
    @Test func anAnswerThatArrivesBeforeTheWaitIsKept() async throws {
        let calls = PendingCalls<String>()
        let id = calls.makeID()
        calls.expect(id)
        calls.resume(id, with: .success("early"))
        #expect(try await calls.wait(id, timeout: .seconds(1)) { CancellationError() } == "early")
    }

    @Test func aWaitEndsAtItsDeadlineAndAnUnexpectedAnswerIsDropped() async throws {
        struct Late: Error {}
        let calls = PendingCalls<String>()
        calls.resume(99, with: .success("nobody asked"))
        let id = calls.makeID()
        calls.expect(id)
        let started = ContinuousClock.now
        await #expect(throws: Late.self) { try await calls.wait(id, timeout: .milliseconds(100)) { Late() } }
        // It ends (does not hang): the bound is loose, since the suite's start stalls a loaded machine for seconds.
        #expect(ContinuousClock.now - started < .seconds(15), "a 100 ms deadline, on a busy machine")
    }
}

/// Statuses of sessions other senders started (what `route watch` reads): an odd field is left out, never the
/// whole status.
@Suite struct ForeignStatusTests {
    @Test func aMistypedFieldCostsThatFieldOnly() throws {
        let payload = """
        {"type":"MEDIA_STATUS","status":[{"mediaSessionId":3,"playerState":"PLAYING","currentTime":"12.5","playbackRate":"fast",
         "volume":"loud","supportedMediaCommands":"all","items":[{"itemId":"one"},7,{"itemId":2}],
         "media":{"contentId":"http://x/a.wav","duration":"long","contentType":3}},{"playerState":"IDLE"}]}
        """
        let sessions = try #require(MediaSessionStatus.decode(payload))
        #expect(sessions.count == 1, "an entry without a media session id is left out")
        let session = try #require(sessions.first)
        #expect(session.mediaSessionId == 3 && session.playerState == "PLAYING" && session.currentTime == nil && session.volume == nil)
        #expect(session.media?.contentId == "http://x/a.wav" && session.media?.duration == nil && session.items?.map(\.itemId) == [nil, 2])
        let receiver = try #require(ReceiverStatus.decode(#"{"type":"RECEIVER_STATUS","status":{"volume":{"level":"max","muted":true},"applications":[3,{"appId":"CC1AD845"}]}}"#))
        #expect(receiver.volume?.muted == true && receiver.volume?.level == nil && receiver.applications?.map(\.appId) == ["CC1AD845"])
    }

    @Test func metadataOfAnotherTypeIsLeftOutAndTheRestIsRead() throws {
        let payload = """
        {"type":"MEDIA_STATUS","status":[{"mediaSessionId":3,"playerState":"PLAYING","currentTime":12.5,
         "media":{"contentId":"http://10.0.0.2/a.mp3","duration":200,
                  "metadata":{"metadataType":3,"title":"A Song","artist":"A Band","albumName":7,"subtitle":null}}}]}
        """
        let session = try #require(MediaSessionStatus.decode(payload)?.first)
        #expect(session.media?.metadata?.title == "A Song" && session.media?.metadata?.artist == "A Band")
        #expect(session.media?.metadata?.albumName == nil && session.media?.duration == 200)
        let notAnObject = payload.replacingOccurrences(of: #"{"metadataType":3,"title":"A Song","artist":"A Band","albumName":7,"subtitle":null}"#, with: #""text""#)
        #expect(MediaSessionStatus.decode(notAnObject)?.first?.media?.contentId == "http://10.0.0.2/a.mp3")
    }

    @Test func anAppWithOddNamespacesIsStillSeenAndItsMediaNamespaceCounts() throws {
        let payload = """
        {"type":"RECEIVER_STATUS","status":{"applications":[
          {"appId":"CC1AD845","sessionId":"s1","transportId":"t1","displayName":"Default Media Receiver",
           "namespaces":[{"name":"urn:x-cast:com.google.cast.media"},{"name":5},"odd"]},
          {"appId":"E8C28D3C","sessionId":"s2","transportId":"t2","namespaces":"none"}],"volume":{"level":0.5}}}
        """
        let apps = try #require(ReceiverStatus.decode(payload)?.applications)
        #expect(apps.count == 2)
        #expect(apps[0].playsMedia && !apps[1].playsMedia)
    }
}
