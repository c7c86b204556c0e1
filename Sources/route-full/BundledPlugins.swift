// BundledPlugins: the plugins route-full also serves, by the name it was started under — a package installs each as a
// link to route-full (PREFIX/lib/route/plugins/route-provider-NAME → ../route-full), so that Swift's runtime and
// Foundation, linked into every executable, are there once rather than once per plugin.

import AirPlayPlugin
import MPDPlugin

/// The plugins route-full carries.
enum BundledPlugins {
    /// Each bundled plugin's serving, by its executable's file name.
    private static let byName: [String: @Sendable () async -> Never] = [
        "route-provider-mpd": serveMPDPlugin,
        "route-provider-airplay": serveAirPlayPlugin,
    ]

    /// The plugin to serve when route-full was started as `argument0` (a path or a name), nil when it was started as
    /// itself.
    static func named(_ argument0: String?) -> (@Sendable () async -> Never)? {
        guard let argument0, let name = argument0.split(separator: "/").last else { return nil }
        return byName[String(name)]
    }
}
