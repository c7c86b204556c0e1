// DesktopAudioGroupTests: desktop audio to a group — each member's stream starts with the silence that lines it up with
// the slowest member (its protocol's typical live delay, or the delay set for it), and a member that cannot take the
// stream refuses the whole group, naming it.

import Foundation
import MediaRouting
import RouteCore
import RouteMedia
import RouteSound
import Testing

struct DesktopAudioGroupTests {
    private static func device(_ name: String, provider: String, accepts: [String] = ["audio/L16", "audio/wav"]) -> MediaDevice {
        MediaDevice(routes: [MediaRoute(provider: provider, nativeID: name.lowercased(), name: name, kind: .speaker,
                                        address: "http://10.77.0.2:49494/\(name).xml", capabilities: .audio, volumeControl: .absolute,
                                        accepts: .mimeTypes(accepts))])
    }

    private static let group = DeviceGroup(name: "Downstairs", members: []).device(among: [])
    private static let settings = DesktopAudioSettings(server: .pipewire)

    private static func audio(_ members: [MediaDevice], delays: [String: Double] = [:]) throws -> DesktopAudio {
        try DesktopAudio(group: group, members: members, delays: delays, router: MediaRouter(providers: []), servers: MediaServers(),
                         settings: settings)
    }

    @Test func eachMemberWaitsForTheSlowestByWhatItsProtocolTypicallyHoldsBack() throws {
        let kitchen = Self.device("Kitchen", provider: "upnp"), hall = Self.device("Hall", provider: "airplay")
        let tv = Self.device("TV", provider: "cast")
        let sink = try Self.audio([kitchen, hall, tv])
        #expect(sink.members.map(\.device.name) == ["Kitchen", "Hall", "TV"])
        #expect(sink.members.map(\.lead) == [.milliseconds(250), .zero, .milliseconds(214)])
        #expect(sink.members.map(\.format) == [.l16, .l16, .l16])
        #expect(sink.sink.name.hasPrefix("route.group") && sink.sink.description == "Downstairs")
    }

    @Test func aDelaySetForAMemberReplacesItsProtocols() throws {
        let kitchen = Self.device("Kitchen", provider: "upnp"), hall = Self.device("Hall", provider: "airplay")
        // Kitchen (a renderer with a deep buffer) is set to hold sound back 0.3 s: now AirPlay waits for it.
        let sink = try Self.audio([kitchen, hall], delays: [kitchen.id: 0.3])
        #expect(sink.members.map(\.lead) == [.zero, .milliseconds(50)])
        // Alone, a device has no lead.
        let alone = try DesktopAudio(device: hall, router: MediaRouter(providers: []), servers: MediaServers(), settings: Self.settings)
        #expect(alone.members.map(\.lead) == [.zero])
    }

    @Test func aMemberThatCannotTakeTheStreamRefusesTheGroupNamingIt() throws {
        let kitchen = Self.device("Kitchen", provider: "upnp"), radio = Self.device("Radio", provider: "upnp", accepts: ["audio/mpeg"])
        #expect(throws: RouteError.self) { try Self.audio([kitchen, radio]) }
        do {
            _ = try Self.audio([kitchen, radio])
        } catch {
            #expect("\(error)".contains("Radio") && "\(error)".contains("L16 or WAV"), "\(error)")
        }
        let here = MediaDevice(routes: [MediaRoute.thisComputer])
        do {
            _ = try Self.audio([kitchen, here])
            Issue.record("This computer in a group's sink was taken")
        } catch {
            #expect("\(error)".contains("round and round"), "\(error)")
        }
    }
}
