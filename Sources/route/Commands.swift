// RouteCommandLine: the `route` commands — what each declares, and how each runs.

import Foundation
import MediaRouting
import RouteCore
import CastProvider
import MDNSDiscovery
import RouteMedia
import RoutePluginHost
import UPnPProvider

/// Dispatches `route COMMAND …` and turns every error into one line on stderr and an exit code.
enum RouteCommandLine {
    static let commands: [CommandSpec] = [Specs.devices, Specs.cast, Specs.probe, Specs.serve, Specs.providers, Specs.plugins, Specs.browse, Specs.watch,
                                            Specs.service]
        + Specs.controls.map(\.spec) + [Specs.completion, Specs.manpage]

    static func run(_ arguments: [String]) async -> ExitCode {
        // A closed stdout (`| head -1`) must not kill route mid-cast: writes then fail, and a cast stops
        // its device and ends (StatusPrinter).
        signal(SIGPIPE, SIG_IGN)
        // A parent may have started us with signals blocked (the mask survives exec): the ones route
        // handles must arrive, or SIGTERM would never stop a cast.
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT] { sigaddset(&handled, number) }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
        guard let name = arguments.first, !["-h", "--help", "help"].contains(name) else {
            print(topHelp)
            return arguments.isEmpty ? .usage : .success
        }
        guard let spec = commands.first(where: { $0.name == name }) else {
            printError("route: unknown command \"\(name)\"; commands: \(commands.map(\.name).joined(separator: ", "))")
            return .usage
        }
        do {
            let parsed = try spec.parse(Array(arguments.dropFirst()))
            if parsed.has("help") { print(spec.help); return .success }
            switch name {
            case "devices": return try await Devices.run(parsed)
            case "cast": return try await Cast.run(parsed)
            case "probe": return try Probe.run(parsed)
            case "serve": return try await Serve.run(parsed)
            case "providers": return try await ProvidersCommand.run(parsed)
            case "browse": return try await Browse.run(parsed)
            case "watch": return try await Watch.run(parsed)
            case "service": return try await ServiceCommand.run(parsed)
            case "plugins": return try PluginsCommand.run(parsed)
            case "completion": return try Completion.run(parsed)
            case "manpage": print(ManPage.text); return .success
            default: return try await Control.run(name, parsed)
            }
        } catch {
            printError("route \(name): \(error)")
            return ExitCode(for: error)
        }
    }

    /// The environment variables route reads, one per line.
    static let environmentHelp = """
          ROUTE_PROVIDERS     providers to run, e.g. `local` (same as --providers)
          ROUTE_AUDIO_SINK    GStreamer sink for "This computer" audio, e.g. `fakesink sync=true`
          ROUTE_VIDEO_SINK    the same for video
          ROUTE_RUNTIME_DIR   where running casts put their control sockets (yours, mode 0700)
          ROUTE_UPNP_INTERFACE  network interface for UPnP discovery (default: the first one up)
          ROUTE_START_TIMEOUT seconds a device may take to start an item (default 20)
          ROUTE_PLUGIN_PATH   colon-separated directories searched first for route-provider-* plugins
          ROUTE_MPD_HOSTS     MPD servers for the mpd plugin: NAME=HOST:PORT, comma-separated
          ROUTE_SERVICE       off: every command in-process, never through the route service (default: `devices`,
                              `cast` and `watch` go through it when a session bus exists and no --providers is given;
                              probe, serve, providers, plugins and browse always run in-process, and pause, stop,
                              status… talk to the session that plays, wherever it runs)
          ROUTE_DEBUG         upnp, cast, mdns, a plugin's name, or all (comma-separated): trace protocol traffic on stderr
        """

    static var topHelp: String {
        let width = commands.map(\.name.count).max()! + 2
        let list = commands.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + $0.summary }
        return """
        route — cast media to any player on the network (DLNA renderers, Cast devices, this computer).

        Usage: route COMMAND [ARGS] [--help]

        Commands:
        \(list.joined(separator: "\n"))

        Environment:
        \(environmentHelp)

        \(ExitCode.documentation)

        Run `route COMMAND --help` for a command's options and examples.
        """
    }
}

/// Writes one line to stderr, cleaned of control characters (its text may hold device names and reasons
/// from the network). On a live status line, `overStatus` clears that line first.
func printError(_ text: String, overStatus: Bool = false) {
    let line = DisplayText.line(text)
    let clear = overStatus && isatty(STDERR_FILENO) == 1 ? "\r\u{1B}[K" : ""
    FileHandle.standardError.write(Data((clear + line + "\n").utf8))
}

/// Writes one line to stdout, cleaned like `printError`; false when stdout is gone (a closed pipe).
@discardableResult
func printOutput(_ text: String) -> Bool {
    print(DisplayText.line(text))
    return fflush(nil) == 0
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

    /// A router over the selected providers, logging to stderr, and those providers.
    static func router(_ parsed: ParsedArguments) throws -> (MediaRouter, [any RouteProvider]) {
        let providers = try StandardProviders.make(try names(parsed))
        return (MediaRouter(providers: providers, discovery: StandardProviders.discovery(for: providers, log: CLILog.root), log: CLILog.root),
                providers)
    }

    /// Whether any of these providers discovers over the network.
    static func discoverNetwork(_ providers: [any RouteProvider]) -> Bool { StandardProviders.discoverNetwork(providers) }

    /// The process's shared SSDP and DNS-SD services (`route browse` reads them raw).
    static var ssdp: SSDPService { StandardProviders.sharedDiscovery(log: CLILog.root).ssdp }
    static var dnssd: AvahiBrowser { StandardProviders.sharedDiscovery(log: CLILog.root).dnssd }
}

/// The option declarations shared by several commands.
enum CommonOptions {
    static let providers = OptionSpec(name: "providers", value: "LIST",
                                      help: "comma-separated providers to run (built in: local, cast, upnp; plus plugins, see `route providers`); default all")
    static let timeout = OptionSpec(name: "timeout", value: "SECONDS", help: "how long to look for devices (default 3)")
    static let to = OptionSpec(name: "to", value: "DEVICE",
                               help: "device name (exact, unique prefix or close), id, or address (IP, host:port, URL, mpd://HOST)")
    static let json = OptionSpec(name: "json", value: nil, help: "print JSON for scripts")

    static func timeout(_ parsed: ParsedArguments) throws -> Double {
        guard let text = parsed["timeout"] else { return 3 }
        guard let value = Double(text), value >= 0, value <= 600 else {
            throw UsageError(description: "--timeout takes seconds from 0 to 600, not \"\(text)\"")
        }
        return value
    }
}
