// AirPlayPlugin: AirPlay 1 (RAOP) receivers as a route provider, a drop-in plugin built on RoutePluginKit — served by
// its own executable (route-provider-airplay) or by route-full started under that name (a package's link to it).

import RoutePluginKit

/// Speaks the plugin protocol on stdin and stdout for the AirPlay provider until route closes stdin, then exits.
public func serveAirPlayPlugin() async -> Never {
    await RoutePlugin.serve(AirPlayProvider(), version: "0.1", features: PluginFeatures(dnssd: [RAOPService.type], volume: true, timedPlay: true))
}
