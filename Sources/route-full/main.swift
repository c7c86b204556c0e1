// route-full's entry point: a bundled plugin when started under its name (BundledPlugins), else every `route` command —
// through the route service where that applies, else in-process with the providers — as the thin `route` hands them
// over (or run directly). Exits with the command's code.
// (Kept tiny: closures written here would be main-actor isolated, which C callbacks must never be.)

import Foundation
import RouteCLI
import RoutePluginHost

// Started as a bundled plugin (through its link): that plugin, and nothing of route's command line.
if let plugin = BundledPlugins.named(CommandLine.arguments.first) { await plugin() }
let code = await RouteCommandLine.run(Array(CommandLine.arguments.dropFirst()), perform: RouteCommands.perform)
// Plugins still lingering (or ignoring the end of their stdin) go with route.
PluginProvider.killAll()
exit(code.rawValue)
