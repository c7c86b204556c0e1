// RouteCommandLine: route's commands as declared (help, man page, completion) and the dispatch both route executables
// share — signals set up, help, parsing, and one line and an exit code for every error.

import FoundationEssentials
import Glibc
import RouteAPI
import RouteClient
import RouteCore

/// route's commands and their dispatch: help, parsing, and every error as one line on stderr and an exit code.
package enum RouteCommandLine {
    /// Every command, in the order `route --help` lists them.
    package static let commands: [CommandSpec] = [Specs.devices, Specs.cast, Specs.probe, Specs.serve, Specs.providers, Specs.plugins, Specs.browse, Specs.watch,
                                            Specs.sink, Specs.pick, Specs.move, Specs.group, Specs.service]
        + Specs.controls.map(\.spec) + [Specs.completion, Specs.manpage]

    /// Runs `route ARGUMENTS`: help, completion and the man page here, every other command by `perform` (the
    /// executable's own commands); returns the exit code.
    package static func run(_ arguments: [String], perform: (_ name: String, _ parsed: ParsedArguments) async throws -> ExitCode) async -> ExitCode {
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
        if name == "--version" {
            guard arguments.count == 1 || arguments.dropFirst() == ["--json"] else {
                printError("route --version takes only --json")
                return .usage
            }
            print(arguments.count == 1 ? "route \(RouteVersion.current) (D-Bus API \(RouteServiceAPI.version))"
                  : "{\"version\":\"\(RouteVersion.current)\",\"dbusAPI\":\(RouteServiceAPI.version)}")
            return .success
        }
        guard let spec = commands.first(where: { $0.name == name }) else {
            printError("route: unknown command \"\(name)\"; commands: \(commands.map(\.name).joined(separator: ", "))")
            return .usage
        }
        var parsed: ParsedArguments?
        do {
            parsed = try spec.parse(Array(arguments.dropFirst()))
            guard let parsed else { return .usage }
            if parsed.has("help") { print(spec.help); return .success }
            switch name {
            case "completion": return try Completion.run(parsed)
            case "manpage": print(ManPage.text); return .success
            default: return try await perform(name, parsed)
            }
        } catch {
            printError("route \(name): \(error)")
            if let parsed, parsed.has("pick"), isatty(STDERR_FILENO) == 0 { await notify(error, of: name, parsed) }
            return ExitCode(for: error)
        }
    }

    /// Shows a failed command's error as a desktop notification: started from the desktop (`route cast --pick` by
    /// "Play on a device…"), route has no terminal to say it on. Best effort: the line on stderr stays.
    private static func notify(_ error: any Error, of name: String, _ parsed: ParsedArguments) async {
        let what = parsed.positionals.count == 1 ? "\"\(URL(fileURLWithPath: parsed.positionals[0]).lastPathComponent)\""
            : "\(parsed.positionals.count) items"
        do {
            try await DesktopNotification.show(summary: "Could not play \(what)", body: "\(error)")
        } catch {
            printError("route \(name): the desktop's notifications could not be reached either: \(error)")
        }
    }

    /// The environment variables route reads, one per line.
    package static let environmentHelp = """
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

    /// `route --help`.
    package static var topHelp: String {
        let width = commands.map(\.name.count).max()! + 2
        let list = commands.map { "  " + $0.name.padded(to: width) + $0.summary }
        return """
        route — cast media to any player on the network (DLNA renderers, Cast devices, this computer).

        Usage: route COMMAND [ARGS] [--help]
               route --version [--json]   route's version and its D-Bus API's

        Commands:
        \(list.joined(separator: "\n"))

        Environment:
        \(environmentHelp)

        \(ExitCode.documentation)

        Run `route COMMAND --help` for a command's options and examples.
        """
    }
}
