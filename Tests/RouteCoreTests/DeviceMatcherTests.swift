// DeviceMatcherTests: how `--to NAME` picks one device, and the errors (with candidates) when it cannot.

import Foundation
import RouteCore
import Testing

/// A route with just the fields matching and merging look at; `id` is the provider's own id.
func route(_ name: String, id: String, provider: String = "upnp", dedup: Set<String> = [], address: String? = nil) -> MediaRoute {
    MediaRoute(provider: provider, nativeID: id, name: name, kind: .other, address: address, capabilities: .all,
               volumeControl: .absolute, accepts: .anything, deduplicationIDs: dedup)
}

/// A device reached by one such route.
func device(_ name: String, id: String, protocolName: String = "upnp", dedup: Set<String> = []) -> MediaDevice {
    MediaDevice(routes: [route(name, id: id, provider: protocolName, dedup: dedup)])
}

@Suite struct DeviceMatcherTests {
    let devices = [
        device("This computer", id: "local", protocolName: "local"),
        device("Living Room", id: "uuid:living", dedup: ["10.0.0.5"]),
        device("Kitchen TV", id: "uuid:kitchen-tv"),
        device("Kitchen Speaker", id: "cast-kitchen-speaker", protocolName: "cast"),
    ]

    @Test(arguments: ["Living Room", "living room", "LIVING ROOM", "lIvInG rOoM"])
    func exactNameInAnyCase(query: String) throws {
        #expect(try DeviceMatcher.pick(query, in: devices).primary.nativeID == "uuid:living")
    }

    @Test func byIDAndByDeduplicationID() throws {
        #expect(try DeviceMatcher.pick("cast-kitchen-speaker", in: devices).name == "Kitchen Speaker")
        #expect(try DeviceMatcher.pick("10.0.0.5", in: devices).name == "Living Room")
    }

    @Test func uniquePrefix() throws {
        #expect(try DeviceMatcher.pick("this", in: devices).name == "This computer")
        #expect(try DeviceMatcher.pick("Liv", in: devices).name == "Living Room")
        #expect(try DeviceMatcher.pick("kitchen s", in: devices).name == "Kitchen Speaker")
    }

    @Test func exactNameBeatsALongerNameItPrefixes() throws {
        let list = devices + [device("Living Room Speaker", id: "uuid:lrs")]
        #expect(try DeviceMatcher.pick("living room", in: list).primary.nativeID == "uuid:living")
        #expect(try DeviceMatcher.pick("living room s", in: list).primary.nativeID == "uuid:lrs")
    }

    @Test func ambiguousPrefixListsEveryMatch() {
        #expect(throws: RouteError.ambiguousDevice(query: "kit", matches: ["Kitchen TV", "Kitchen Speaker"])) {
            try DeviceMatcher.pick("kit", in: devices)
        }
    }

    @Test(arguments: [("Livng Room", "Living Room"), ("kitchen tb", "Kitchen TV"), ("This compuetr", "This computer")])
    func closeSpelling(query: String, expected: String) throws {
        #expect(try DeviceMatcher.pick(query, in: devices).name == expected)
        #expect(DeviceMatcher.candidates(for: query, in: devices)?.0 == .close)
    }

    @Test func unknownNameListsTheCandidates() {
        #expect(throws: RouteError.unknownDevice(query: "Garage", candidates: devices.map(\.name))) {
            try DeviceMatcher.pick("Garage", in: devices)
        }
    }

    @Test func emptyQueryOrNoDevicesIsUnknown() {
        #expect(throws: RouteError.unknownDevice(query: "", candidates: devices.map(\.name))) {
            try DeviceMatcher.pick("", in: devices)
        }
        #expect(throws: RouteError.unknownDevice(query: "tv", candidates: [])) {
            try DeviceMatcher.pick("tv", in: [])
        }
    }

    @Test func unknownDeviceDescriptionNamesCandidatesAndRouteDevices() {
        let text = RouteError.unknownDevice(query: "Garage", candidates: ["This computer", "Living Room"]).description
        #expect(text.contains("\"Garage\""))
        #expect(text.contains("\"This computer\""))
        #expect(text.contains("\"Living Room\""))
        #expect(text.contains("route devices"))
        #expect(!text.contains("\n"))
        let none = RouteError.unknownDevice(query: "Garage", candidates: []).description
        #expect(none.contains("none were found"))
        #expect(none.contains("route devices"))
    }

    @Test func ambiguousDescriptionNamesEveryMatch() {
        let text = RouteError.ambiguousDevice(query: "kit", matches: ["Kitchen TV", "Kitchen Speaker"]).description
        #expect(text.contains("\"kit\""))
        #expect(text.contains("\"Kitchen TV\""))
        #expect(text.contains("\"Kitchen Speaker\""))
        #expect(!text.contains("\n"))
    }
}

/// Text from the network is made safe for a terminal before anyone prints it.
@Suite struct DisplayTextTests {
    @Test func controlsEscapesAndOverridesGoAndLinesJoin() {
        #expect(DisplayText.clean("Living\nRoom\r\n2) This computer") == "Living Room 2) This computer")
        #expect(DisplayText.clean("\u{1B}[2J\u{1B}]0;title\u{07}TV\u{9B}31m") == "[2J]0;titleTV31m")
        #expect(DisplayText.clean("abc\u{202E}fed\u{2066}x") == "abcfedx")
        #expect(DisplayText.clean("  a \t  b  ") == "a b")
        #expect(DisplayText.clean("Café 東京 🎵") == "Café 東京 🎵")
    }

    @Test func invisibleCharactersGoSoThatNoLookAlikeOfANameIsAnotherName() {
        for invisible in ["\u{200B}", "\u{200C}", "\u{200D}", "\u{2060}", "\u{00AD}", "\u{FE0F}", "\u{180E}", "\u{E0041}", "\u{3164}"] {
            #expect(DisplayText.clean("Lab\(invisible) Renderer") == "Lab Renderer", "U+\(String(invisible.unicodeScalars.first!.value, radix: 16))")
        }
        #expect(DisplayText.line("a\u{200B}b") == "ab")
        // Names are cleaned where routes are made, whichever provider makes them.
        #expect(route("Lab\u{200B} Renderer\u{1B}[2J", id: "x").name == "Lab Renderer[2J")
    }

    @Test func aWholeLineKeepsItsSpacingButLosesControls() {
        #expect(DisplayText.line("name      kind  \u{1B}[31mred\u{9B}x\nnext") == "name      kind  [31mredx next")
    }

    @Test func longTextIsCut() {
        let cut = DisplayText.clean(String(repeating: "x", count: 200_000))
        #expect(cut.unicodeScalars.count == DisplayText.nameLimit + 1)
        #expect(cut.hasSuffix("…"))
        #expect(DisplayText.clean(String(repeating: "y", count: 50), limit: 10) == "yyyyyyyyyy…")
    }
}

/// A device with a Cast route and a DLNA route (one TV) answers to both names.
@Suite struct MergedNameTests {
    static let tv = MediaDevice(routes: [route("Lab Cast", id: "cast-1", provider: "cast"), route("Lab Renderer", id: "uuid:1"),
                                         route("lab cast", id: "mpd-1", provider: "mpd")])

    @Test(arguments: ["Lab Cast", "Lab Renderer", "lab renderer", "Lab Rend", "renderer", "Lab Rendrer"])
    func aMergedDeviceAnswersToEachOfItsNames(query: String) throws {
        #expect(try DeviceMatcher.pick(query, in: [Self.tv, device("Kitchen", id: "k")]).id == Self.tv.id)
    }

    @Test func itsOtherNamesAreListedOnceAndSeenThroughARouteItIsThatRoutes() throws {
        #expect(Self.tv.names == ["Lab Cast", "Lab Renderer"] && Self.tv.otherNames == ["Lab Renderer"])
        let json = try JSONEncoder().encode(Self.tv)
        #expect(String(decoding: json, as: UTF8.self).contains(#""names":["Lab Cast","Lab Renderer"]"#))
        #expect(try JSONDecoder().decode(MediaDevice.self, from: json) == Self.tv)
        let renderer = Self.tv.preferring(Self.tv.routes[1])
        #expect(renderer.name == "Lab Renderer" && renderer.routes.count == 3 && renderer.otherNames == ["Lab Cast"])
    }

    @Test func aRoutesIdentitiesAreInTheSameOrderInEveryRunsJSON() throws {
        var route = Self.tv.routes[0]
        route.deduplicationIDs = ["uuid:b", "mac:02:00:00:00:00:01", "cast:a", "uuid:a"]
        let text = String(decoding: try JSONEncoder().encode(route), as: UTF8.self)
        #expect(text.contains(#""deduplicationIDs":["cast:a","mac:02:00:00:00:00:01","uuid:a","uuid:b"]"#), "\(text)")
        #expect(try JSONDecoder().decode(MediaRoute.self, from: Data(text.utf8)) == route)
    }
}

@Suite struct AddressMatchTests {
    static let renderer = MediaDevice(routes: [route("Lab Renderer", id: "uuid:1", address: "http://10.77.0.2:49494/description.xml")])

    @Test(arguments: ["http://10.77.0.2:49494/description.xml", "10.77.0.2:49494", "10.77.0.2"])
    func aDeviceIsFoundByTheAddressACastWasStartedWith(query: String) throws {
        #expect(try DeviceMatcher.pick(query, in: [Self.renderer]).primary.nativeID == "uuid:1")
    }

    @Test func otherAddressesDoNotMatch() {
        #expect(!DeviceMatcher.matchesAddress("10.77.0.20", of: Self.renderer))
        #expect(!DeviceMatcher.matchesAddress("10.77.0.2:4949", of: Self.renderer))
        #expect(!DeviceMatcher.matchesAddress("", of: Self.renderer))
    }
}

@Suite struct RouteErrorTests {
    @Test func anErrorSaysItsKindByCodeAndItsWordsAsBefore() {
        let error = RouteError.deviceUnreachable(device: "Lab Cast", reason: "missed 3 heartbeats")
        #expect(error.code == .deviceUnreachable && error.device == "Lab Cast" && error.reason == "missed 3 heartbeats")
        #expect(error.description == "Lab Cast cannot be reached: missed 3 heartbeats")
        #expect(RouteError.unknownDevice(query: "Kitchen", candidates: ["Lab Cast"]).description
                == "no device matches \"Kitchen\" (found: \"Lab Cast\"); run `route devices` to list them")
    }

    @Test func aKindAddedLaterIsReadByWhatAlreadyReadsCodes() {
        // A kind this code never heard of: it reads as any other error (a switch over codes has a default).
        let later = RouteError(RouteError.Code(rawValue: "DeviceAsleep"), "Lab Cast is asleep")
        let kind: String = switch later.code {
        case .deviceUnreachable: "unreachable"
        default: "other: \(later.code)"
        }
        #expect(kind == "other: DeviceAsleep" && later.description == "Lab Cast is asleep")
    }
}
