// DeviceList: where the CLI hears devices — the route service or a router in this process, one interface — and what
// is written once over it: `route devices`, the devices a terminal picker offers, the device a cast without --to plays on.

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore
import Synchronization

/// The device list as it changes, with the seconds discovery has listened (infinity: nothing more will be heard).
package typealias DeviceListUpdate = (devices: [MediaDevice], listening: Double)

/// Where devices are heard: the route service (`ServiceDevices`) or a router in this process (route-full's).
package protocol DeviceSource: Sendable {
    /// Runs `body` while discovery runs, over the device list as it changes: the list now first, then each change.
    func listen<T: Sendable>(_ body: (AsyncThrowingStream<DeviceListUpdate, any Error>) async throws -> T) async throws -> T
}

/// The route service's devices: what it knows at once, then what it finds while this client watches.
package struct ServiceDevices: DeviceSource {
    let client: RouteServiceClient

    /// The devices of the service `client` speaks to.
    package init(_ client: RouteServiceClient) { self.client = client }

    package func listen<T: Sendable>(_ body: (AsyncThrowingStream<DeviceListUpdate, any Error>) async throws -> T) async throws -> T {
        try await body(client.deviceUpdates())
    }
}

extension DeviceSource {
    /// Follows the list until discovery has listened `timeout` seconds (at once when it has already), handing each
    /// list to `each` as it comes; returns the last (none when no list came within `timeout`, or a second).
    /// - Throws: what ended the list before its first (the route service left the bus).
    package func devices(within timeout: Double, each: @escaping @Sendable ([MediaDevice]) -> Void = { _ in }) async throws -> [MediaDevice] {
        try await listen { updates in
            let latest = Mutex<[MediaDevice]>([])
            let (listened, listening) = AsyncStream<Double>.makeStream()
            let follower = Task {
                defer { listening.finish() }
                for try await update in updates {
                    latest.withLock { $0 = update.devices }
                    each(update.devices)
                    listening.yield(update.listening)
                }
            }
            defer { follower.cancel() }
            // A source that hears nothing at all sends no list: the wait for the first one has a deadline too.
            let deadline = Task {
                try? await Task.sleep(for: .milliseconds(Int(max(timeout, 1) * 1000)))
                listening.finish()
            }
            defer { deadline.cancel() }
            var iterator = listened.makeAsyncIterator()
            guard let already = await iterator.next() else {
                follower.cancel()
                try await follower.value
                return latest.withLock { $0 }
            }
            if already < timeout { try? await Task.sleep(for: .milliseconds(Int((timeout - already) * 1000) + 50)) }
            return latest.withLock { $0 }
        }
    }

    /// The device a cast without --to plays on: the only one heard within `timeout`, else the one a person chooses at
    /// the terminal.
    /// - Throws: `RouteError` when none is heard, or several and there is no terminal to ask on.
    package func onlyOrChosen(within timeout: Double) async throws -> MediaDevice {
        let devices = try await devices(within: timeout)
        if devices.isEmpty { throw RouteError.unknownDevice(query: "", candidates: []) }
        if devices.count == 1 { return devices[0] }
        guard KeyReader.isAvailable else { throw RouteError.ambiguousDevice(query: "", matches: devices.map(\.name)) }
        return try Picker.choose(from: devices)
    }
}

/// Devices as `route devices` lists them.
package enum DeviceList {
    /// `route devices`: each device as it is found (again when it gains a route: its line says by which protocols),
    /// for --timeout seconds of listening; with --json, one array at the end.
    package static func run(_ parsed: ParsedArguments, from source: some DeviceSource) async throws -> ExitCode {
        let json = parsed.has("json")
        let shown = Mutex<[String: [String]]>([:])
        let devices = try await source.devices(within: try CommonOptions.timeout(parsed)) { list in
            guard !json else { return }
            let fresh = shown.withLock { shown in
                let fresh = list.filter { shown[$0.id] != $0.protocols }
                for device in fresh { shown[device.id] = device.protocols }
                return fresh
            }
            for device in fresh { printOutput(line(device)) }
        }
        // The groups the person keeps, as devices: after the list, for which of their members answer (the route service
        // lists them itself).
        let groups: [MediaDevice]
        do {
            groups = try DeviceGroups.load().map { $0.device(among: devices) }.filter { group in !devices.contains { $0.id == group.id } }
        } catch {
            groups = []
            printError("route devices: groups are not listed: \(error)")
        }
        if json { print(try JSONOutput.string(devices + groups)) } else { for group in groups { printOutput(line(group)) } }
        return .success
    }

    /// A device's line: its name, kind, protocols and address, and the names its other routes give it.
    package static func line(_ device: MediaDevice) -> String {
        let clean = DisplayText.clean(device.name)
        let name = clean.padded(to: max(24, clean.count))
        return "\(name)  \(device.kind.rawValue.padded(to: 9))"
            + "\(device.protocols.joined(separator: ",").padded(to: 10)) \(device.address.map { DisplayText.clean($0) } ?? "-")"
            + alsoNamed(device)
    }

    /// `  also "Lab Renderer"` for a device its other routes name otherwise (it answers to those names too).
    package static func alsoNamed(_ device: MediaDevice) -> String {
        device.otherNames.isEmpty ? "" : "  also " + device.otherNames.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}
