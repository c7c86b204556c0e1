// swift-tools-version: 6.0
// route: a media router for Linux. One package: C system libraries at the bottom, then RouteCore
// (vocabulary, no C), RouteMedia (GStreamer and the media HTTP server), providers, and the `route` CLI.
import PackageDescription

/// A `.systemLibrary` target for one pkg-config library, with the Debian package that provides it.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let swift6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "route",
    products: [
        .executable(name: "route", targets: ["route"]),
        .library(name: "RouteCore", targets: ["RouteCore"]),
        .library(name: "RouteMedia", targets: ["RouteMedia"]),
        .library(name: "UPnPProvider", targets: ["UPnPProvider"]),
        .library(name: "MDNSDiscovery", targets: ["MDNSDiscovery"]),
    ],
    targets: [
        systemLibrary("CGStreamer", pkgConfig: "gstreamer-1.0", apt: ["libgstreamer1.0-dev"]),
        systemLibrary("CGStreamerPbutils", pkgConfig: "gstreamer-pbutils-1.0", apt: ["libgstreamer-plugins-base1.0-dev"]),
        systemLibrary("CGStreamerApp", pkgConfig: "gstreamer-app-1.0", apt: ["libgstreamer-plugins-base1.0-dev"]),
        systemLibrary("CSoup", pkgConfig: "libsoup-3.0", apt: ["libsoup-3.0-dev"]),
        systemLibrary("CAvahiClient", pkgConfig: "avahi-client", apt: ["libavahi-client-dev"]),
        systemLibrary("CUPnP", pkgConfig: "libupnp", apt: ["libupnp-dev"]),
        systemLibrary("CLibXML2", pkgConfig: "libxml-2.0", apt: ["libxml2-dev"]),
        .target(
            name: "CRouteShim",
            dependencies: ["CGStreamer", "CGStreamerPbutils", "CGStreamerApp", "CSoup"]
        ),
        .target(name: "RouteCore", swiftSettings: swift6),
        .target(name: "RouteGLib", dependencies: ["CSoup"], swiftSettings: swift6),
        .target(
            name: "RouteMedia",
            dependencies: ["RouteCore", "RouteGLib", "CRouteShim", "CGStreamer", "CGStreamerPbutils", "CGStreamerApp", "CSoup"],
            swiftSettings: swift6
        ),
        .target(name: "UPnPProvider", dependencies: ["RouteCore", "RouteGLib", "CUPnP", "CLibXML2"], path: "Plugins/UPnP", swiftSettings: swift6),
        .target(name: "MDNSDiscovery", dependencies: ["RouteCore", "CAvahiClient"], path: "Plugins/MDNS", swiftSettings: swift6),
        .executableTarget(name: "route", dependencies: ["RouteCore", "RouteMedia", "UPnPProvider", "MDNSDiscovery"], swiftSettings: swift6),
        .target(name: "RouteTestSupport", path: "Tests/RouteTestSupport", swiftSettings: swift6),
        // Fuzz targets for every parser of network input (`make fuzz`); a plain build replays the corpora.
        .executableTarget(name: "route-fuzz", dependencies: ["RouteCore", "RouteMedia", "UPnPProvider", "CUPnP"],
                          path: "Tests/Fuzz", exclude: ["Corpus", "lsan.supp"], swiftSettings: swift6),
        .testTarget(name: "RouteCoreTests", dependencies: ["RouteCore", "RouteTestSupport"], swiftSettings: swift6),
        .testTarget(name: "RouteMediaTests", dependencies: ["RouteMedia", "RouteTestSupport"], swiftSettings: swift6),
        .testTarget(name: "RouteCLITests", dependencies: ["RouteCore", "UPnPProvider", "RouteTestSupport"], swiftSettings: swift6),
        .testTarget(name: "UPnPProviderTests", dependencies: ["UPnPProvider", "RouteCore", "CUPnP"], swiftSettings: swift6),
    ]
)
