// The `route` executable people run: a thin front that links no provider, GStreamer, libupnp, OpenSSL or Avahi. It
// answers through the route service when it can (the device list, a cast) and hands every other command to route-full,
// with the same arguments in the same process. (Kept tiny: closures written here would be main-actor isolated.)

import FoundationEssentials
import Glibc
import RouteCLI

exit(await RouteCommandLine.run(Array(CommandLine.arguments.dropFirst()), perform: ThinRoute.perform).rawValue)
