// `route devices`: lists devices as they are found, or as one JSON array.

import Foundation
import MediaRouting
import RouteClient
import RouteCore
import Synchronization

enum Devices {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        if ServiceMode.applies(parsed) { return try await throughService(parsed) }
        let (router, providers) = try Providers.router(parsed)
        let requested = try CommonOptions.timeout(parsed)
        let timeout = Providers.discoverNetwork(providers) ? requested : 0
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        let json = parsed.has("json")
        let updates = router.deviceUpdates()
        let deadline = Task { try await Task.sleep(for: .milliseconds(Int(timeout * 1000) + 50)) }
        let printer = Task {
            // A device is printed when found, and again when it gains a route (its line says by which protocols).
            var shown: [String: [String]] = [:]
            for await list in updates {
                for device in list where shown[device.id] != device.protocols {
                    shown[device.id] = device.protocols
                    if !json { printOutput(line(device)) }
                }
                if timeout == 0, !list.isEmpty { break }
            }
        }
        if timeout == 0 { await printer.value } else { _ = try? await deadline.value }
        printer.cancel()
        if json { print(try JSONOutput.string(router.devices)) }
        return .success
    }

    /// The same through the service: what it knows at once, then what it finds until it has listened for --timeout
    /// seconds (a service that has listened that long already answers at once).
    private static func throughService(_ parsed: ParsedArguments) async throws -> ExitCode {
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

    static func line(_ device: MediaDevice) -> String {
        let clean = DisplayText.clean(device.name)
        let name = clean.padding(toLength: max(24, clean.count), withPad: " ", startingAt: 0)
        return "\(name)  \(device.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))"
            + "\(device.protocols.joined(separator: ",").padding(toLength: 10, withPad: " ", startingAt: 0)) \(device.address.map { DisplayText.clean($0) } ?? "-")"
            + alsoNamed(device)
    }

    /// `  also "Lab Renderer"` for a device its other routes name otherwise (it answers to those names too).
    static func alsoNamed(_ device: MediaDevice) -> String {
        device.otherNames.isEmpty ? "" : "  also " + device.otherNames.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}
