// Pick: `route pick` — a person chooses a device: in the route service's picker window where there is a display, else
// at the terminal; the choice is printed (name and id, or JSON), and nothing when none was chosen (exit 1).

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore

package enum Pick {
    /// Whether the picker is a window: a display (DISPLAY, WAYLAND_DISPLAY), the route service in use, and no --terminal.
    package static func inWindow(_ parsed: ParsedArguments) -> Bool {
        displayExists && !parsed.has("terminal") && ServiceMode.applies(parsed)
    }

    /// Whether there is a display to show a window on (DISPLAY or WAYLAND_DISPLAY).
    package static var displayExists: Bool {
        let environment = ProcessInfo.processInfo.environment
        return !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
    }

    /// `route pick` through the service: its window, or (no display) the terminal with the devices it has heard.
    package static func throughService(_ parsed: ParsedArguments) async throws -> ExitCode {
        let media = try parsed["media"].map(PickMedia.init(option:))
        let client = try await ServiceMode.connect()
        if inWindow(parsed) { return say(try await client.pickDevice(media: media), parsed) }
        return try await inTerminal(parsed, from: ServiceDevices(client))
    }

    /// The terminal picker over the devices `source` hears within --timeout (asked only once there is a terminal to ask on).
    /// - Throws: `RouteError` (`notSetUp`) when there is no terminal to ask on either.
    package static func inTerminal(_ parsed: ParsedArguments, from source: some DeviceSource) async throws -> ExitCode {
        let media = try parsed["media"].map(PickMedia.init(option:))
        guard KeyReader.isAvailable else {
            throw RouteError(.notSetUp, "route pick needs a display (DISPLAY, WAYLAND_DISPLAY) with the route service, or a terminal to ask on")
        }
        let devices = try await source.devices(within: try CommonOptions.timeout(parsed))
        if devices.isEmpty { throw RouteError.unknownDevice(query: "", candidates: []) }
        return say(try Picker.ask("Which device?", from: devices, media: media), parsed)
    }

    /// Prints the choice — `NAME<tab>ID`, or the device as `route devices --json` gives it — and its exit code: 0, or 1
    /// with nothing printed when none was chosen.
    private static func say(_ device: MediaDevice?, _ parsed: ParsedArguments) -> ExitCode {
        guard let device else { return .failure }
        if parsed.has("json"), let text = try? JSONOutput.string(device) {
            print(text)
        } else {
            // Each part cleaned on its own: the tab between them stays.
            print(DisplayText.clean(device.name) + "\t" + DisplayText.clean(device.id))
        }
        fflush(nil)
        return .success
    }
}
