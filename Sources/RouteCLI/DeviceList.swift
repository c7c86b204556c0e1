// DeviceList: `route devices` through the route service — what it knows at once, then what it finds — and the line
// each device is listed with (in-process too).

import Foundation
import RouteClient
import RouteCore
import Synchronization

/// Devices as `route devices` lists them.
package enum DeviceList {
    /// The same through the service: what it knows at once, then what it finds until it has listened for --timeout
    /// seconds (a service that has listened that long already answers at once).
    package static func throughService(_ parsed: ParsedArguments) async throws -> ExitCode {
        let timeout = try CommonOptions.timeout(parsed)
        let json = parsed.has("json")
        let client = try await ServiceMode.connect()
        let seen = Mutex<(shown: [String: [String]], latest: [MediaDevice])>(([:], []))
        let (firstListening, listened) = AsyncStream<Double>.makeStream()
        let follower = Task {
            defer { listened.finish() }
            for try await update in client.deviceUpdates() {
                let fresh = seen.withLock { seen in
                    seen.latest = update.devices
                    let fresh = update.devices.filter { seen.shown[$0.id] != $0.protocols }
                    for device in fresh { seen.shown[device.id] = device.protocols }
                    return fresh
                }
                if !json { for device in fresh { printOutput(line(device)) } }
                listened.yield(update.listening)
            }
        }
        var listening = firstListening.makeAsyncIterator()
        guard let already = await listening.next() else {
            try await follower.value
            return .success
        }
        if already < timeout { try? await Task.sleep(for: .milliseconds(Int((timeout - already) * 1000) + 50)) }
        follower.cancel()
        if json { print(try JSONOutput.string(seen.withLock { $0.latest })) }
        return .success
    }

    /// The devices the service knows once it has listened for `timeout` seconds (at once when it has already).
    package static func heard(by client: RouteServiceClient, within timeout: Double) async throws -> [MediaDevice] {
        for try await update in client.deviceUpdates() {
            if update.listening >= timeout { return update.devices }
            try await Task.sleep(for: .milliseconds(Int((timeout - update.listening) * 1000)))
            return try await client.devices()
        }
        return []
    }

    /// A device's line: its name, kind, protocols and address, and the names its other routes give it.
    package static func line(_ device: MediaDevice) -> String {
        let clean = DisplayText.clean(device.name)
        let name = clean.padding(toLength: max(24, clean.count), withPad: " ", startingAt: 0)
        return "\(name)  \(device.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))"
            + "\(device.protocols.joined(separator: ",").padding(toLength: 10, withPad: " ", startingAt: 0)) \(device.address.map { DisplayText.clean($0) } ?? "-")"
            + alsoNamed(device)
    }

    /// `  also "Lab Renderer"` for a device its other routes name otherwise (it answers to those names too).
    package static func alsoNamed(_ device: MediaDevice) -> String {
        device.otherNames.isEmpty ? "" : "  also " + device.otherNames.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}
