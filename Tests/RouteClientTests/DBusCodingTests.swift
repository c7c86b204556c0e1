// DBusCodingTests: route's values as D-Bus values — the shapes DBusEncoder gives them, and that what it encodes comes
// back equal through DBusCoding.decode (a session's status with a renderer's long list of accepted types).

import Foundation
import RouteClient
import RouteCore
import RouteGIO
import Testing

@Suite struct DBusCodingTests {
    struct Sample: Codable, Equatable {
        var name = "Lab Renderer"
        var count = 3
        var whole = 3.0
        var flag = true
        var missing: String? = nil
        var tags = ["a", "b"]
        var empty: [String] = []
        var items = [Item(id: 1), Item(id: 2)]
        var numbers = [1.5, 2]
        var when = Date(timeIntervalSince1970: 1_796_000_000.25)
        struct Item: Codable, Equatable { var id: Int }
    }

    @Test func valuesTakeTheShapesTheAPIPageGives() throws {
        guard case .dictionary(let entries) = try DBusCoding.encode(Sample()) else {
            Issue.record("an object is not a{sv}")
            return
        }
        #expect(entries["name"] == .string("Lab Renderer"))
        #expect(entries["count"] == .int64(3))
        #expect(entries["whole"] == .double(3), "a whole floating-point number stays d")
        #expect(entries["flag"] == .boolean(true))
        #expect(entries["missing"] == nil, "nil is no entry")
        #expect(entries["tags"] == .strings(["a", "b"]))
        #expect(entries["empty"] == .strings([]))
        #expect(entries["items"] == .array(elementType: "a{sv}", [.dictionary(["id": .int64(1)]), .dictionary(["id": .int64(2)])]))
        #expect(entries["numbers"] == .array(elementType: "v", [.variant(.double(1.5)), .variant(.double(2))]))
        #expect(entries["when"] == .double(1_796_000_000.25), "a date is seconds since 1970")
        #expect(try DBusCoding.decode(Sample.self, from: .variant(.dictionary(entries))) == Sample())
    }

    @Test func aSessionStatusComesBackEqual() throws {
        let types = (0..<200).map { "audio/x-type-\($0)" }
        let renderer = MediaRoute(provider: "upnp", nativeID: "uuid:lab", name: "Lab Renderer", kind: .tv, address: "10.77.0.2",
                                  capabilities: [.audio, .video], volumeControl: .absolute, accepts: .mimeTypes(types),
                                  deduplicationIDs: ["mac:aa:bb:cc:dd:ee:ff", "uuid:lab"])
        let cast = MediaRoute(provider: "cast", nativeID: "lab-cast", name: "Lab Renderer", kind: .tv, capabilities: [.audio],
                              volumeControl: .none, accepts: .anything, maxAudioChannels: 2)
        var playback = PlaybackStatus(state: .playing, position: 12.5, duration: nil, volume: 0.4, title: "long")
        playback.timestamp = Date(timeIntervalSince1970: 1_796_000_000.5)
        let status = QueueStatus(device: MediaDevice(routes: [renderer, cast]), route: renderer, index: 1, count: 3, title: "long",
                                 playback: playback)
        #expect(try DBusCoding.decode(QueueStatus.self, from: DBusCoding.encode(status)) == status)
    }

    @Test func aNumberJSONCannotWriteIsAnError() {
        struct Bad: Encodable { var value = Double.nan }
        #expect(throws: EncodingError.self) { try DBusCoding.encode(Bad()) }
    }
}
