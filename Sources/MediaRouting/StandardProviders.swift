// StandardProviders: the composition every app needs and only the CLI had — the built-in providers (This computer,
// Cast, UPnP/DLNA) and the drop-in plugins on the search path, over one SSDP and one DNS-SD service per process —
// and MediaRouter.standard(), which builds a router of them.

import CastProvider
import Foundation
import MDNSDiscovery
import RouteCore
import RouteMedia
import RoutePluginHost
import Synchronization
import UPnPProvider

/// The providers this build of route has, in their order of preference, and the discovery they share.
public enum StandardProviders {
    /// The built-in providers, in order: This computer, then Cast before UPnP (an address such as `HOST:8009` is
    /// tried as Cast first, and where one device has both, Cast plays a queue gaplessly).
    public static let builtIn = [MediaRoute.localProvider, "cast", "upnp"]

    /// The drop-in plugins on the search path (`PluginLocator`) whose names do not shadow a built-in provider.
    public static let plugins: [PluginFile] = PluginLocator.find().filter { !builtIn.contains($0.name) }

    /// The plugins on the search path that a built-in provider shadows (ignored; an app may say so).
    public static let shadowed: [PluginFile] = PluginLocator.find().filter { builtIn.contains($0.name) }

    /// Every provider's name, in order of preference: the built-in ones, then plugins in search-path order.
    public static let names = builtIn + plugins.map(\.name)

    /// New providers for `names` (every one when nil), in order of preference.
    /// - Throws: `RouteError.unsupported` naming the first name that is no provider's, and those there are.
    public static func make(_ names: [String]? = nil) throws -> [any RouteProvider] {
        let wanted = names.map { $0.map { $0.lowercased() } }
        if let unknown = wanted?.first(where: { !self.names.contains($0) }) {
            throw RouteError.unsupported(device: "route", what: "find a provider named \"\(unknown)\" (there are: \(self.names.joined(separator: ", ")))")
        }
        return self.names.filter { wanted?.contains($0) ?? true }.map(provider(named:))
    }

    private static func provider(named name: String) -> any RouteProvider {
        switch name {
        case MediaRoute.localProvider: return LocalProvider()
        case "cast": return CastProvider()
        case "upnp": return UPnPProvider()
        default:
            let plugin = plugins.first { $0.name == name }!
            return PluginProvider(name: plugin.name, path: plugin.path)
        }
    }

    /// Whether any of these providers discovers over the network (This computer alone multicasts nothing).
    public static func discoverNetwork(_ providers: [any RouteProvider]) -> Bool {
        providers.contains { $0.name != MediaRoute.localProvider }
    }

    /// The process's SSDP and DNS-SD services: one each, made on first use, logging to `log`'s `upnp` and `mdns`
    /// (the first caller's log is the one kept).
    public static func sharedDiscovery(log: RouteLog) -> (ssdp: SSDPService, dnssd: AvahiBrowser) {
        shared.withLock { shared in
            if let shared { return shared }
            let made = (ssdp: SSDPService(log: log.named("upnp")), dnssd: AvahiBrowser(log: log.named("mdns")))
            shared = made
            return made
        }
    }
    private static let shared = Mutex<(ssdp: SSDPService, dnssd: AvahiBrowser)?>(nil)

    /// How often SSDP searches while nobody wants a device list: devices announce themselves (ssdp:alive, at least
    /// every half of their max-age, 30 min at most), and avahi-daemon keeps mDNS's cache by itself.
    static let idleSearchInterval: Duration = .seconds(1800)

    /// Whether the shared discovery searches actively (SSDP every 10 s: someone looks at the device list) or seldom
    /// (every `idleSearchInterval`: a service nobody asks).
    public static func searchActively(_ wanted: Bool, log: RouteLog) {
        sharedDiscovery(log: log).ssdp.setSearchInterval(wanted ? SSDPService.researchInterval : idleSearchInterval)
    }

    /// The discovery `providers` need: the shared services when one of them discovers over the network, else none.
    public static func discovery(for providers: [any RouteProvider], log: RouteLog) -> DiscoveryServices {
        guard discoverNetwork(providers) else { return .none }
        let (ssdp, dnssd) = sharedDiscovery(log: log)
        return DiscoveryServices(ssdp: ssdp, dnssd: dnssd)
    }
}

extension MediaRouter {
    /// A router over the standard providers — This computer, Cast, UPnP/DLNA and the drop-in plugins, or those of
    /// them `providers` names — sharing the process's SSDP and DNS-SD services. Nothing runs until `run()`.
    /// - Throws: `RouteError.unsupported` for a name that is no provider's.
    public static func standard(providers names: [String]? = nil, log: RouteLog = .discard) throws -> MediaRouter {
        let providers = try StandardProviders.make(names)
        return MediaRouter(providers: providers, discovery: StandardProviders.discovery(for: providers, log: log), log: log)
    }
}
