// StandardRouterLabTests: the composition layer in an app's process — the README's MediaRouter.standard() example,
// as written, finds the lab's renderer; and the standard providers by name.

import Foundation
import MediaRouting
import RouteCore
import Testing

@Suite struct StandardProvidersTests {
    @Test func theBuiltInProvidersComeFirstInTheirOrderAndAnUnknownNameIsSaid() throws {
        #expect(Array(StandardProviders.names.prefix(3)) == ["local", "cast", "upnp"])
        #expect(try StandardProviders.make(["upnp", "local"]).map(\.name) == ["local", "upnp"], "in order of preference")
        #expect(throws: RouteError.self) { try StandardProviders.make(["nonsense"]) }
        #expect(!StandardProviders.discoverNetwork(try StandardProviders.make(["local"])))
    }

    @Test func aStandardRouterOfThisComputerAloneListsItWithoutDiscovery() async throws {
        let router = try MediaRouter.standard(providers: ["local"])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        #expect(try await router.waitForDevice(matching: "This computer", timeout: 2).primary.provider == "local")
    }
}

extension LabTests {
    @Suite struct StandardRouterLabTests {
        @Test func theReadmeExampleFindsTheLabsRendererInProcess() async throws {
            var lines: [String] = []
            func print(_ items: Any...) { lines.append(items.map { "\($0)" }.joined(separator: " ")) }

            // ---- as in README.md ("As a library", MediaRouter.standard()), with the lab's renderer for "Living Room"
            let router = try MediaRouter.standard()   // This computer, Cast, DLNA, and the plugins on the search path
            let discovery = Task { await router.run() }
            let tv = try await router.waitForDevice(matching: "Lab Renderer", timeout: 3)
            print(tv.name, tv.protocols)
            discovery.cancel()
            // ----

            #expect(lines == ["Lab Renderer [\"upnp\"]"], "\(lines)")
        }
    }
}
