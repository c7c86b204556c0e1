// ThinRoute: which commands the thin `route` runs itself — those the route service (its sessions too) or a `route
// cast`'s control socket answers — and the hand-over of every other one to route-full.

import FoundationEssentials
import Glibc
import RouteCLI
import RouteCore

/// The commands `route` runs without route-full.
enum ThinRoute {
    /// Runs `name` through the service when it applies and its files are plain, or, for a control command, through the
    /// service's session or the `route cast`'s control socket it names; anything else becomes route-full (which says what is wrong with a file exactly as it always has).
    static func perform(_ name: String, _ parsed: ParsedArguments) async throws -> ExitCode {
        switch name {
        case "devices" where ServiceMode.applies(parsed):
            return try await DeviceList.run(parsed, from: ServiceDevices(try await ServiceMode.connect()))
        case "cast" where CastThroughService.applies(parsed) && parsed.positionals.allSatisfy(CastSourceKinds.serviceTakes):
            return try await CastThroughService.run(parsed, options: try CastOptions(parsed), detach: parsed.has("detach"))
        case "sink" where parsed.has("detach") || parsed.has("stop"):
            return try await SinkThroughService.run(parsed)
        case "move":
            return try await MoveThroughService.run(parsed)
        case "pick" where ServiceMode.applies(parsed):
            return try await Pick.throughService(parsed)
        case _ where Specs.controls.contains(where: { $0.command == name }):
            // The service's session or a `route cast`'s control socket answers; a device no cast of route's plays is observed by route-full.
            return try await Control.run(name, parsed) { _, _ in FullRoute.exec(CommandLine.arguments) }
        default:
            FullRoute.exec(CommandLine.arguments)
        }
    }
}

/// route-full: beside this executable in a build, in `../lib/route/` once installed (beside the plugins).
enum FullRoute {
    /// Replaces this process with route-full running `arguments` (argv, the program's name first).
    static func exec(_ arguments: [String]) -> Never {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let directory = URL(fileURLWithPath: me).deletingLastPathComponent().path
        let candidates = [directory + "/route-full", directory + "/../lib/route/route-full"]
        guard let path = candidates.first(where: { access($0, X_OK) == 0 }) else {
            printError("route: route-full, which runs this command, is missing (looked for \(candidates.joined(separator: " and "))); "
                       + "reinstall route")
            exit(ExitCode.failure.rawValue)
        }
        fflush(nil)
        var argv = arguments.map { strdup($0) } + [nil]
        execv(path, &argv)
        printError("route: cannot run \(path): \(String(cString: strerror(errno)))")
        exit(ExitCode.failure.rawValue)
    }
}
