// Commands: what each `route` command runs in route-full (every command: through the route service where that applies,
// else in-process), and the providers it runs them with.

import Foundation
import RouteCLI
import MediaRouting
import RouteCore
import CastProvider
import MDNSDiscovery
import RouteMedia
import RoutePluginHost
import UPnPProvider

/// The commands route-full runs itself: all of them.
enum RouteCommands {
    static func perform(_ name: String, _ parsed: ParsedArguments) async throws -> ExitCode {
        switch name {
        case "devices": return try await Devices.run(parsed)
        case "cast": return try await Cast.run(parsed)
        case "probe": return try Probe.run(parsed)
        case "serve": return try await Serve.run(parsed)
        case "providers": return try await ProvidersCommand.run(parsed)
        case "browse": return try await Browse.run(parsed)
        case "watch": return try await Watch.run(parsed)
        case "sink" where parsed.has("detach") || parsed.has("stop"): return try await SinkThroughService.run(parsed)
        case "sink": return try await Sink.run(parsed)
        case "move": return try await MoveThroughService.run(parsed)
        case "pick" where ServiceMode.applies(parsed): return try await Pick.throughService(parsed)
        case "pick": return try await Pick.inTerminal(parsed, from: RouterDevices(try Providers.router(parsed)))
        case "group":
            return try await GroupCommand.run(parsed) {
                if ServiceMode.applies(parsed) { return ServiceDevices(try await ServiceMode.connect()) }
                return RouterDevices(try Providers.router(parsed))
            }
        case "service": return try await ServiceCommand.run(parsed)
        case "plugins": return try PluginsCommand.run(parsed)
        default: return try await Control.run(name, parsed, observe: ObservedStatus.report)
        }
    }
}

/// The CLI's log: one line on stderr per message, `route[SOURCE]: …` for traces (`ROUTE_DEBUG=upnp,mdns`)
/// and `route: …` for the rest.
enum CLILog {
    static let traced = Set((ProcessInfo.processInfo.environment["ROUTE_DEBUG"] ?? "").split(separator: ",").map(String.init))

    static let root = RouteLog(source: "route", traced: { traced.contains($0) || traced.contains("all") }) { level, source, message in
        let prefix = level == .debug ? "route[\(source)]" : "route"
        printError("\(prefix): \(message)", overStatus: true)
    }

    /// The log for `source`.
    static func named(_ source: String) -> RouteLog { root.named(source) }
}

/// The router from the provider names the user allows (`--providers`, `ROUTE_PROVIDERS`), through the composition
/// layer's standard providers.
enum Providers {
    /// The names of every provider, in order of preference; plugins a built-in provider shadows are said once.
    static let order: [String] = {
        for plugin in StandardProviders.shadowed {
            printError("route: ignoring the plugin \(plugin.path): \"\(plugin.name)\" is a built-in provider")
        }
        return StandardProviders.names
    }()

    /// The plugins on the search path route uses.
    static var plugins: [PluginFile] { StandardProviders.plugins }

    /// The provider names of `--providers`, else `ROUTE_PROVIDERS`, else nil (all).
    static func names(_ parsed: ParsedArguments) throws -> [String]? {
        let known = order  // first, so that a shadowed plugin is said whichever providers run
        let text = parsed["providers"] ?? ProcessInfo.processInfo.environment["ROUTE_PROVIDERS"] ?? ""
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        if let unknown = names.first(where: { !known.contains($0) }) {
            throw UsageError(description: "unknown provider \"\(unknown)\"; available: \(known.joined(separator: ", "))")
        }
        return names.isEmpty ? nil : names
    }

    /// The standard router (MediaRouter.standard()) over the selected providers, logging to stderr.
    static func router(_ parsed: ParsedArguments) throws -> MediaRouter {
        try MediaRouter.standard(providers: try names(parsed), log: CLILog.root)
    }

    /// Whether any of these providers discovers over the network.
    static func discoverNetwork(_ providers: [any RouteProvider]) -> Bool { StandardProviders.discoverNetwork(providers) }

    /// The process's shared SSDP and DNS-SD services (`route browse` reads them raw).
    static var ssdp: SSDPService { StandardProviders.sharedDiscovery(log: CLILog.root).ssdp }
    static var dnssd: AvahiBrowser { StandardProviders.sharedDiscovery(log: CLILog.root).dnssd }
}


/// A command that runs until interrupted (`route watch`, `route sink`): the first Ctrl-C, SIGTERM or SIGHUP cancels its
/// work, which ends cleanly (devices let go, sinks removed); a second exits at once.
enum UntilInterrupted {
    /// Waits for `work` to end, cancelling it at the first signal, which sets `stopped`.
    static func wait(for work: Task<Void, Never>, stopped: InterruptFlag) async {
        let signals = SignalHandlers.install {
            if stopped.isSet {
                PluginProvider.killAll()
                exit(ExitCode.interrupted.rawValue)
            }
            stopped.set()
            work.cancel()
        }
        defer { signals.cancel() }
        await work.value
    }
}
