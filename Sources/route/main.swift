// The `route` executable's entry point: hands the arguments to RouteCommandLine and exits with its code.
// (Kept tiny: closures written here would be main-actor isolated, which C callbacks must never be.)

import Foundation

let code = await RouteCommandLine.run(Array(CommandLine.arguments.dropFirst()))
exit(code.rawValue)
