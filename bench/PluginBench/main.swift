// route-plugin-bench: measures the plugin host — plugin start to first device snapshot, and a control call's round
// trip (call to reply) through the host — against a plugin given by path, or against itself as a trivial Swift
// plugin built on RoutePluginKit (when started with ROUTE_BENCH_SERVE=1, which it sets for the copy it starts; with
// ROUTE_BENCH_TIMED=1 too, it plays at an instant it is told, and says which as the title of its status).
// No discovery runs: nothing is sent on any network.

import Foundation
import RouteCore
import RoutePluginHost
import RoutePluginKit

/// A provider that publishes one device at once and whose controller answers every command at once.
final class EchoProvider: RouteProvider {
    let name = "echo"
    static let route = MediaRoute(provider: "echo", nativeID: "echo-1", name: "Echo", kind: .speaker, address: "127.0.0.1:9",
                                  capabilities: .audio, volumeControl: .absolute, accepts: .anything)

    func run(_ context: ProviderContext) async throws {
        // A stray print, as plugin authors write them: RoutePluginKit must keep it off the channel.
        print("echo: discovering")
        fflush(nil)
        context.publish([Self.route])
        try await Task.sleep(for: .seconds(86400))
    }

    func route(at address: String, context: ProviderContext) async throws -> MediaRoute? { nil }
    func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController { EchoController(route: route) }
}

final class EchoController: RouteController {
    let route: MediaRoute
    private let statuses = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    init(route: MediaRoute) { self.route = route }
    func run() async throws { try await Task.sleep(for: .seconds(86400)) }
    func load(_ item: MediaItem, autoplay: Bool) async throws {}
    func play() async throws { statuses.send(PlaybackStatus(state: .playing, title: "now")) }
    func play(at instant: Date) async throws -> Bool {
        statuses.send(PlaybackStatus(state: .playing, title: "at \(instant.timeIntervalSince1970)"))
        return true
    }
    func pause() async throws {}
    func seek(to seconds: Double) async throws {}
    func stop() async throws {}
    func setVolume(_ level: Double) async throws {}
    func setMuted(_ muted: Bool) async throws {}
    func setNext(_ item: MediaItem) async throws -> Bool { false }
    func statusUpdates() -> AsyncStream<PlaybackStatus> { statuses.subscribe() }
    func close() async {}
}

if ProcessInfo.processInfo.environment["ROUTE_BENCH_SERVE"] == "1" {
    await RoutePlugin.serve(EchoProvider(), version: "bench",
                            features: PluginFeatures(timedPlay: ProcessInfo.processInfo.environment["ROUTE_BENCH_TIMED"] == "1"))
}

/// `route-plugin-bench [--runs N] [--calls N] [PLUGIN [NAME]]`
var arguments = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
    arguments.removeSubrange(index...index + 1)
    return value
}
let runs = option("--runs", 50)
let calls = option("--calls", 1000)
setenv("ROUTE_BENCH_SERVE", "1", 1)
let path = arguments.first ?? (try! FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
let name = arguments.count > 1 ? arguments[1] : "echo"

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

// Start to first snapshot: a new provider (so a new process) each run.
var starts: [Double] = []
var firstRoute: MediaRoute?
for _ in 0..<runs {
    let provider = PluginProvider(name: name, path: path)
    let (snapshots, sink) = AsyncStream<[MediaRoute]>.makeStream()
    let context = ProviderContext(log: .discard, discovery: .none, publish: { sink.yield($0) })
    let started = ContinuousClock.now
    let discovery = Task { try await provider.run(context) }
    for await routes in snapshots {
        starts.append(milliseconds(.now - started))
        firstRoute = firstRoute ?? routes.first
        break
    }
    discovery.cancel()
    _ = await discovery.result
}

// Round trips: one provider, one open controller, `calls` volume changes (an error reply, from a plugin with nothing
// loaded, is a round trip too).
let provider = PluginProvider(name: name, path: path)
let context = ProviderContext(log: .discard, discovery: .none, publish: { _ in })
guard let route = firstRoute else {
    print("route-plugin-bench: \(path) published no device; a round trip needs one")
    exit(1)
}
let controller = try await provider.controller(for: route, context: context)
var trips: [Double] = []
for _ in 0..<calls {
    let started = ContinuousClock.now
    try? await controller.setVolume(0.5)
    trips.append(milliseconds(.now - started))
}
await controller.close()
print(String(format: "%@: start to first snapshot median %.2f ms (min %.2f, %d runs); round trip median %.3f ms (p90 %.3f, %d calls)",
             URL(fileURLWithPath: path).lastPathComponent, median(starts), starts.min() ?? 0, runs, median(trips),
             trips.sorted()[Int(Double(trips.count) * 0.9)], calls))
exit(0)
