// route-provider-airplay: AirPlay 1 (RAOP) receivers as a route provider, as a drop-in plugin built on RoutePluginKit.

import RoutePluginKit

await RoutePlugin.serve(AirPlayProvider(), version: "0.1", features: PluginFeatures(dnssd: [RAOPService.type], volume: true))
