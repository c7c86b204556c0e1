// PickerListTests: the rows the picker shows (PickerList, the CLI's and the window's): This computer cannot be
// imitated, and devices of one name are told apart.

import RouteCLI
import RouteCore
import Testing

@Suite struct PickerListTests {
    @Test func noDeviceOnTheNetworkLooksLikeThisComputerOrAnother() {
        func device(_ provider: String, _ id: String, _ name: String, at address: String, kind: MediaDevice.Kind = .tv) -> MediaDevice {
            MediaDevice(routes: [MediaRoute(provider: provider, nativeID: id, name: name, kind: kind, address: address,
                                            capabilities: .audio, volumeControl: .absolute, accepts: .anything)])
        }
        let rows = PickerList.entries([device("upnp", "a", "This computer", at: "10.0.0.66:49494", kind: .computer), .thisComputer,
                                       device("cast", "b", "Kitchen", at: "10.0.0.7:8009"), device("upnp", "c", "kitchen", at: "10.0.0.8:49494"),
                                       device("upnp", "d", "Hall", at: "10.0.0.9:49494")])
        #expect(rows.first?.id == MediaDevice.thisComputer.id && rows.first?.name == "This computer")
        #expect(Set(rows.map(\.name)) == ["This computer", "Hall", "Kitchen (Google Cast at 10.0.0.7)", "kitchen (DLNA at 10.0.0.8)",
                                          "This computer (DLNA at 10.0.0.66)"], "\(rows.map(\.name))")
        #expect(rows.filter { $0.icon == "computer" }.map(\.id) == [MediaDevice.thisComputer.id])
    }
}
