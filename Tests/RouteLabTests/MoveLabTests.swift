// MoveLabTests: `route move` through the route service — a cast moved from the DLNA renderer to the Cast receiver, on to
// This computer and back, and to an AirPlay receiver and back, each device's own account the judge (SOAP, the receiver's reports, the session's object): the
// position carried, the old device stopped, the same MPRIS player naming the new device; and the faults: a device that
// cannot be reached (the cast plays on where it was), nothing to move, a device that plays it already.
//
// The lab's renderer and receiver share a host, so discovery makes them one device with two routes (as a TV with DLNA
// and Cast is); here the receiver is not announced and is named by its address, a device of its own.

import Foundation
import RouteTestSupport
import Testing

extension LabTests {
    @Suite struct MoveLabTests {
        /// Clients reach the service: no providers of their own.
        private let client = ["ROUTE_PROVIDERS": ""]
        private static let castName = "Lab Cast"
        private static let castAddress = "10.77.0.2:8009"

        /// `gdbus call` on the bus: its exit status and output.
        private func gdbus(_ bus: PrivateSessionBus, dest: String = "io.github.route.Route1", _ path: String, _ method: String,
                           _ arguments: [String]) throws -> ToolOutput {
            try bus.tool("gdbus", ["call", "--session", "--dest", dest, "--object-path", path, "--method", method] + arguments)
        }

        /// The session's own position now (Position + elapsed × Rate), from its object on the bus.
        private func sessionPosition(_ bus: PrivateSessionBus) throws -> Double {
            func number(_ name: String) throws -> Double {
                let text = try gdbus(bus, "/io/github/route/Route1/session/1", "org.freedesktop.DBus.Properties.Get",
                                     ["io.github.route.Route1.Session", name]).text
                return Double(text.filter { "0123456789.e-".contains($0) }) ?? -1
            }
            let (position, time, rate) = (try number("Position"), try number("PositionTime"), try number("Rate"))
            return position + (Date().timeIntervalSince1970 - time) * rate
        }

        /// The MPRIS player's Identity.
        private func identity(_ bus: PrivateSessionBus, _ player: String) throws -> String {
            try gdbus(bus, dest: "org.mpris.MediaPlayer2.\(player)", "/org/mpris/MediaPlayer2", "org.freedesktop.DBus.Properties.Get",
                      ["org.mpris.MediaPlayer2", "Identity"]).text
        }

        /// The receiver's media reports since `count` of its reports.
        private func receiverMedia(after count: Int) -> [[String: Any]] {
            CastReceiverLab.events().dropFirst(count).filter { $0["event"] as? String == "media" }
        }

        @Test func aCastMovesFromTheRendererToAnAirPlayReceiverAndBack() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try? Lab.control("stop-airplay")
            try Lab.control("start-airplay")
            defer { try? Lab.control("stop-airplay") }
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    // Ten seconds at 440 Hz, then 1760 Hz: where the receiver starts is heard in the pitch.
                    let wav = try await sandbox.twoTones("two tones.wav", low: 10, high: 50)
                    let service = try await sandbox.startService(["--providers", "upnp,airplay"], on: bus)
                    let environment = bus.environment.merging(client) { $1 }
                    try await Lab.until("the service lists both", within: 12) {
                        let devices = try gdbus(bus, "/io/github/route/Route1", "org.freedesktop.DBus.Properties.Get",
                                                ["io.github.route.Route1.Manager", "Devices"]).text
                        return devices.contains("'\(Lab.rendererName)'") && devices.contains("'Lab AirPlay'")
                    }
                    let cast = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--detach"], environment: environment)
                    #expect(cast.status == 0, "\(cast)")
                    try await Lab.until("the renderer has played 11 s", within: 20) { try Lab.position() >= 11 }

                    // Renderer → AirPlay: the receiver plays on from there (the high tone), the renderer stops.
                    let toAirPlay = try await sandbox.run(["move", "--to", "Lab AirPlay"], environment: environment)
                    #expect(toAirPlay.status == 0, "\(toAirPlay)")
                    try await Lab.until("shairport-sync plays on from where the renderer was", within: 10) {
                        let output = try AirPlayOutput.read()
                        return output.heardSeconds > 1 && output.pitch(ofLast: 0.2) > 1500
                    }
                    try await Lab.until("the renderer is stopped", within: 5) { try Lab.transportState() == "STOPPED" }

                    // AirPlay → the renderer: it plays again, and the receiver goes quiet.
                    let back = try await sandbox.run(["move", "--to", Lab.rendererName, "--from", "Lab AirPlay"], environment: environment)
                    #expect(back.status == 0, "\(back)")
                    try await Lab.until("the renderer plays again", within: 10) { try Lab.transportState() == "PLAYING" && Lab.position() >= 12 }
                    let heard = try AirPlayOutput.read().heardSeconds
                    try await Task.sleep(for: .seconds(1.5))
                    #expect(try AirPlayOutput.read().heardSeconds - heard < 0.6, "the receiver stopped (what it held plays out)")
                    #expect(try await sandbox.run(["stop", "--to", Lab.rendererName], environment: environment).status == 0)
                    service.signal(SIGTERM)
                    _ = await service.finish(within: 10)
                }
            }
        }

        @Test func aCastMovesFromTheRendererToTheReceiverToThisComputerAndBackWithItsPosition() async throws {
            try await Lab.stopRenderer()
            try Lab.control("start-renderer")
            try CastReceiverLab.start(["--no-publish"])
            defer { try? Lab.control("stop-cast") }
            try await withSessionBus { bus in
                try await inSandbox { sandbox in
                    let wav = sandbox.root + "/tone.wav"
                    try await Fixtures.gst("audiotestsrc num-buffers=\(90 * 43) samplesperbuffer=1024 ! audioconvert ! wavenc ! filesink location=OUT", to: wav)
                    let service = try await sandbox.startService(["--providers", "upnp,cast,local"], on: bus)
                    let environment = bus.environment.merging(client) { $1 }
                    // The renderer, a device of its own: a receiver an earlier test announced (on the renderer's host) may
                    // linger in avahi's cache for a moment after its goodbye, and would merge with it.
                    try await Lab.until("the service lists the renderer, and no announced receiver", within: 12) {
                        let devices = try gdbus(bus, "/io/github/route/Route1", "org.freedesktop.DBus.Properties.Get",
                                                ["io.github.route.Route1.Manager", "Devices"]).text
                        return devices.contains("'\(Lab.rendererName)'") && !devices.contains("'\(Self.castName)'")
                    }

                    // Nothing to move yet.
                    let nothing = try await sandbox.run(["move", "--to", Self.castAddress], environment: environment)
                    #expect(nothing.status == 4 && nothing.stderr.contains("nothing is being cast"), "\(nothing)")

                    let cast = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--detach"], environment: environment)
                    #expect(cast.status == 0, "\(cast)")
                    try await Lab.until("the renderer has played 4 s", within: 10) { try Lab.position() >= 4 }
                    let player = try await bus.waitForPlayer(within: 5)
                    #expect(try identity(bus, player).contains(Lab.rendererName))

                    // Renderer → Cast receiver: the receiver plays from where the renderer was; the renderer stops.
                    let before = CastReceiverLab.events().count
                    let from = try Lab.position()
                    let toCast = try await sandbox.run(["move", "--to", Self.castAddress, "--json"], environment: environment)
                    #expect(toCast.status == 0 && toCast.stdout.contains("\"event\":\"moved\""), "\(toCast)")
                    let slack = toCast.elapsed / .seconds(1) + 1
                    let played = receiverMedia(after: before).filter { $0["playerState"] as? String == "PLAYING" }
                    let at = played.compactMap { $0["currentTime"] as? Double }.max() ?? -1
                    #expect(at >= from - 1 && at <= from + slack, "the receiver plays at \(at) s; the renderer was at \(from) s")
                    try await Lab.until("the renderer is stopped", within: 5) { try Lab.transportState() == "STOPPED" }
                    // The same player, naming the new device.
                    #expect(try bus.routePlayers() == [player])
                    let castName = try #require(toCast.stdout.firstMatch(of: /"name":"([^"]+)"/)?.1).description
                    #expect(try identity(bus, player).contains(castName))
                    let onCast = try sessionPosition(bus)
                    #expect(onCast >= from - 1 && onCast <= from + slack + 1, "the session says \(onCast) s")

                    // A device that plays it already; a device that is gone (killed, still announced): it plays on there.
                    let same = try await sandbox.run(["move", "--to", Self.castAddress], environment: environment)
                    #expect(same.status == 1 && same.stderr.contains("plays there already"), "\(same)")

                    // Cast receiver → This computer, and back to the renderer.
                    let toThis = try await sandbox.run(["move", "--to", "this"], environment: environment)
                    #expect(toThis.status == 0 && toThis.stdout.contains("plays on This computer"), "\(toThis)")
                    try await Lab.until("the receiver's media is stopped", within: 5) {
                        (CastReceiverLab.latestMedia()?["playerState"] as? String) == "IDLE"
                    }
                    #expect(try identity(bus, player).contains("This computer"))
                    let onThis = try sessionPosition(bus)
                    #expect(onThis >= onCast - 1 && onThis <= onCast + toThis.elapsed / .seconds(1) + 2, "This computer at \(onThis) s after \(onCast) s")

                    let fromThis = try sessionPosition(bus)
                    let back = try await sandbox.run(["move", "--to", Lab.rendererName, "--from", "this"], environment: environment)
                    #expect(back.status == 0, "\(back)")
                    #expect(try Lab.transportState() == "PLAYING")
                    // The renderer's own position may lag its seek for a moment.
                    var again = 0.0
                    try await Lab.until("the renderer plays from where This computer was", within: 3) {
                        again = try Lab.position()
                        return again >= fromThis - 1
                    }
                    #expect(again <= fromThis + back.elapsed / .seconds(1) + 2, "the renderer at \(again) s after \(fromThis) s")
                    #expect(try bus.routePlayers() == [player])

                    // A receiver that takes the cast and never plays it: after 15 s the move gives up, and the renderer,
                    // paused meanwhile, plays on.
                    try Lab.control("stop-cast")
                    try CastReceiverLab.start(["--no-publish", "--misbehave", "silent-after-load"])
                    let silent = try await sandbox.run(["move", "--to", Self.castAddress], environment: environment, timeout: 40)
                    #expect(silent.status == 1, "\(silent)")
                    #expect(silent.stderr.contains("cannot move to") && silent.stderr.contains("it did not play within 15 s")
                            && silent.stderr.contains("it still plays on \(Lab.rendererName)"), "\(silent)")
                    try await Lab.until("the renderer plays on", within: 5) { try Lab.transportState() == "PLAYING" }
                    let still = try Lab.position()
                    try await Lab.until("its position moves on", within: 5) { try Lab.position() > still }
                    #expect(try bus.routePlayers() == [player])
                    // No receiver there at all: said at once.
                    try Lab.control("stop-cast", "--hard")
                    let gone = try await sandbox.run(["move", "--to", Self.castAddress], environment: environment)
                    #expect(gone.status == 5 && gone.stderr.contains("cannot be reached"), "\(gone)")
                    #expect(try Lab.transportState() == "PLAYING")

                    let stop = try await sandbox.run(["stop", "--to", Lab.rendererName], environment: environment)
                    #expect(stop.status == 0, "\(stop)")
                    service.signal(SIGTERM)
                    _ = await service.finish(within: 10)
                }
            }
        }
    }
}
