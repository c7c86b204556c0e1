// route-provider-mpd: MPD servers as a route provider, as a drop-in plugin built on RoutePluginKit.

import RoutePluginKit

await RoutePlugin.serve(MPDProvider(), version: "1.0", features: PluginFeatures(dnssd: ["_mpd._tcp"], queue: true, volume: true, resolve: true))
