// The `route` executable's entry point: hands the arguments to RouteCommandLine and exits with its code.
// (Kept tiny: closures written here would be main-actor isolated, which C callbacks must never be.)

import Foundation
import RoutePluginHost

let code = await RouteCommandLine.run(Array(CommandLine.arguments.dropFirst()))
// Plugins still lingering (or ignoring the end of their stdin) go with route.
PluginProvider.killAll()
exit(code.rawValue)
