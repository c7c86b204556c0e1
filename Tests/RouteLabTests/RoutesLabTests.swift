// RoutesLabTests: the "one device, many routes" contract in the lab — two renderers on one host are two devices,
// an embedded renderer is found with its own UDN and services, a renderer that never fetches is told, SIGHUP
// stops the renderer, a failing provider shows in `route providers`, and the shared mDNS service.

import Foundation
import RouteCore
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct RoutesLabTests {
        private let upnp = ["ROUTE_PROVIDERS": "upnp"]
        private static let second = "http://10.77.0.2:49496/description.xml"

        @Test func twoRenderersOnOneHostAreTwoDevicesEachCastTo() async throws {
            try Lab.control("start-second-renderer")
            defer { try? Lab.control("stop-second-renderer") }
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let result = try await sandbox.run(["devices", "--json", "--timeout", "3"], environment: upnp)
                let devices = try JSONDecoder().decode([MediaDevice].self, from: Data(result.stdout.utf8))
                let names = devices.map(\.name)
                #expect(names.contains(Lab.rendererName) && names.contains("Lab Renderer 2"), "\(names)")
                #expect(Set(devices.map(\.id)).count == devices.count)
                // They share the host's MAC, and so that identity merges nothing.
                let macs = devices.flatMap { $0.routes.flatMap(\.deduplicationIDs) }.filter { $0.hasPrefix("mac:") }
                #expect(macs.count >= 2 && Set(macs).count == 1, "\(macs)")
                let wav = try await sandbox.wav("short.wav", seconds: 2)
                let toSecond = try await sandbox.run(["cast", wav, "--to", "Lab Renderer 2"], environment: upnp, timeout: 20)
                #expect(toSecond.status == 0 && toSecond.stdoutLines.last == "ended: short on Lab Renderer 2", "\(toSecond)")
                let toFirst = try await sandbox.run(["cast", wav, "--to", "Lab Renderer"], environment: upnp, timeout: 20)
                #expect(toFirst.status == 0 && toFirst.stdoutLines.last == "ended: short on Lab Renderer", "\(toFirst)")
            }
        }

        @Test func anEmbeddedRendererIsFoundWithItsOwnUDNAndWhatItTakes() async throws {
            let fake = try await FakeRenderer(mode: "embedded", port: 49636, ssdp: true)
            defer { fake.stop() }
            try await inSandbox { sandbox in
                let result = try await sandbox.run(["devices", "--json", "--timeout", "3"], environment: upnp)
                let devices = try JSONDecoder().decode([MediaDevice].self, from: Data(result.stdout.utf8))
                let device = try #require(devices.first { $0.name.contains("embedded") }, "\(result)")
                let route = try #require(device.routes.first)
                #expect(route.nativeID.hasSuffix("-mr"), "the renderer's own UDN, not the root's: \(route.nativeID)")
                #expect(route.accepts.accepts(mimeType: "audio/wav"), "its own ConnectionManager, not the server's: \(route.accepts)")
                #expect(!devices.contains { $0.name.contains("Media (embedded)") }, "the MediaServer is no renderer")
                let wav = try await sandbox.wav("song.wav", seconds: 1)
                let cast = try await sandbox.run(["cast", wav, "--to", device.name], environment: upnp, timeout: 20)
                #expect(cast.stdoutLines.contains { $0.hasPrefix("playing: song") }, "\(cast)")
            }
        }

        @Test func aRendererThatCannotFetchOurURLIsToldWithinTenSeconds() async throws {
            try await Lab.stopRenderer()
            // Namespace B may not open connections to A: the renderer can neither fetch media nor send events,
            // while route's own requests to it (and their answers) still pass.
            let table = "routelab_never_fetched"
            try Lab.nft(["add", "table", "inet", table])
            defer { try? Lab.nft(["delete", "table", "inet", table]) }
            try Lab.nft(["add", "chain", "inet", table, "out", "{ type filter hook output priority 0 ; }"])
            try Lab.nft(["add", "rule", "inet", table, "out", "ip", "daddr", "10.77.0.1", "ct", "state", "new", "tcp", "dport", "1-65535", "drop"])
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("long.wav", seconds: 30)
                let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName], environment: upnp)
                let result = await cast.finish(within: 20)
                #expect(result.status == 1, "\(result)")
                #expect(result.elapsed < .seconds(12), "told after \(result.elapsed)")
                #expect(result.stderr.contains("has not fetched anything from route") && result.stderr.contains("10.77.0.1:")
                        && result.stderr.contains("firewall") && result.stderr.contains("ROUTE_UPNP_INTERFACE"), "\(result)")
            }
        }

        @Test func sighupStopsTheRenderer() async throws {
            try await Lab.stopRenderer()
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("long.wav", seconds: 20)
                let cast = try sandbox.start(["cast", wav, "--to", Lab.rendererName], environment: upnp)
                try await Lab.until("the renderer reports PLAYING", within: 5) { try Lab.transportState() == "PLAYING" }
                cast.signal(SIGHUP)
                let result = await cast.finish(within: 10)
                #expect(result.status == 130, "\(result)")
                #expect(try Lab.transportState() == "STOPPED", "the terminal closed, the renderer stopped")
            }
        }

        @Test func aProviderThatFailsShowsInProvidersAndIsRunAgain() async throws {
            try await inSandbox { sandbox in
                let result = try await sandbox.run(["providers", "--json", "--timeout", "2.5"],
                                                  environment: ["ROUTE_PROVIDERS": "local,upnp", "ROUTE_UPNP_INTERFACE": "nosuch0"])
                #expect(result.status == 0, "\(result)")
                let states = try JSONDecoder().decode([ProviderStatus].self, from: Data(result.stdout.utf8))
                let upnp = try #require(states.first { $0.name == "upnp" })
                #expect(upnp.state == .failed || upnp.state == .starting, "\(upnp)")
                #expect(upnp.lastError?.contains("nosuch0") == true, "\(upnp)")
                #expect(upnp.restarts >= 1, "run again after the backoff: \(upnp)")
                #expect(states.first { $0.name == "local" }?.state == .running, "the others go on")
                let text = try await sandbox.run(["providers", "--timeout", "0.5"], environment: ["ROUTE_PROVIDERS": "local,upnp", "ROUTE_UPNP_INTERFACE": "nosuch0"])
                #expect(text.stdout.contains("upnp") && text.stdout.contains("last error"), "\(text)")
            }
        }

        @Test func browseShowsAPublishedServiceAndItsRemoval() async throws {
            try await inSandbox { sandbox in
                let browse = try sandbox.start(["browse", "_routetest._tcp", "--timeout", "15"])
                let publisher = try Lab.start(["exec-b", "avahi-publish", "-s", "Lab Test Service", "_routetest._tcp", "4321", "a=1", "b=two"])
                try await Lab.until("the service is found", within: 8) { browse.stdout.contains("+ mdns _routetest._tcp \"Lab Test Service\"") }
                #expect(browse.stdout.contains("10.77.0.2:4321 a=1 b=two"), "\(browse.stdout)")
                kill(publisher.processIdentifier, SIGKILL) // a test process blocks SIGTERM for its children
                try await Lab.until("its removal is seen", within: 8) { browse.stdout.contains("- mdns _routetest._tcp \"Lab Test Service\"") }
                browse.signal(SIGINT)
                #expect(await browse.finish(within: 5).status == 0)
            }
        }

        @Test func withAvahiStoppedMidRunSSDPGoesOnAndItIsSaidOnce() async throws {
            defer { try? Lab.control("start-avahi", "a") }
            try await inSandbox { sandbox in
                let browse = try sandbox.start(["browse", "_routetest._tcp", "urn:schemas-upnp-org:device:MediaRenderer:1", "--timeout", "25"])
                try await Lab.until("the renderer answers", within: 5) { browse.stdout.contains("+ ssdp") }
                try Lab.control("stop-avahi", "a")
                try await Lab.until("mDNS is said to be off", within: 5) { browse.stderr.contains("avahi-daemon is not running") }
                let answered = browse.stdout.components(separatedBy: "+ ssdp").count
                // SSDP goes on: a later search reply or alive announcement still arrives.
                try await Lab.until("SSDP goes on", within: 14) { browse.stdout.components(separatedBy: "+ ssdp").count > answered }
                // With mDNS off, the UPnP renderer is still listed.
                let devices = try await sandbox.run(["devices", "--timeout", "2"], environment: ["ROUTE_PROVIDERS": "local,upnp"])
                #expect(devices.status == 0 && devices.stdout.contains(Lab.rendererName), "\(devices)")
                try Lab.control("start-avahi", "a")
                try await Lab.until("mDNS is back", within: 10) { browse.stderr.contains("mDNS discovery is on again") }
                browse.signal(SIGINT)
                let result = await browse.finish(within: 5)
                #expect(result.stderr.components(separatedBy: "avahi-daemon is not running").count == 2, "said once: \(result.stderr)")
            }
        }

        @Test func withNoAvahiAtAllItIsSaidOnceAndUPnPStillListsTheRenderer() async throws {
            try await inSandbox { sandbox in
                let result = try await sandbox.run(["browse", "_routetest._tcp", "--timeout", "2"],
                                                  environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/route-lab-bus"])
                #expect(result.status == 0, "\(result)")
                #expect(result.stderrLines.filter { $0.contains("mDNS discovery is off") }.count == 1, "\(result)")
                let devices = try await sandbox.run(["devices", "--timeout", "2"],
                                                   environment: ["ROUTE_PROVIDERS": "upnp", "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/route-lab-bus"])
                #expect(devices.stdout.contains(Lab.rendererName), "\(devices)")
            }
        }
    }
}
