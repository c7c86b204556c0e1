// MPDPlugin: MPD servers as a route provider, a drop-in plugin built on RoutePluginKit — served by its own executable
// (route-provider-mpd) or by route-full started under that name (a package's link to it).

import RoutePluginKit

/// Speaks the plugin protocol on stdin and stdout for the MPD provider until route closes stdin, then exits.
public func serveMPDPlugin() async -> Never {
    await RoutePlugin.serve(MPDProvider(), version: "1.0", features: PluginFeatures(dnssd: ["_mpd._tcp"], queue: true, volume: true, resolve: true))
}
