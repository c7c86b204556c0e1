// MovePickOfflineTests: `route move` and `route pick` where the route service is not in use (no session bus, or
// ROUTE_SERVICE=off): each says in one line what it needs, with its exit code, rather than waiting or guessing.

import Foundation
import RouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct MovePickOfflineTests {
    @Test(arguments: [["ROUTE_SERVICE": "off"], [:]])
    func withoutTheServiceMoveAndPickSayWhatTheyNeed(environment: [String: String]) async throws {
        try await inSandbox { sandbox in
            let move = try await sandbox.run(["move", "--to", "this"], environment: environment)
            #expect(move.status == 4 && move.stderr.contains("a cast made without it cannot be moved") && move.stdout.isEmpty, "\(move)")
            // No --to and no display for the picker to ask on: what it needs; with a display, the service is missing.
            let headless = environment.merging(["DISPLAY": "", "WAYLAND_DISPLAY": ""]) { $1 }
            let unnamed = try await sandbox.run(["move"], environment: headless)
            #expect(unnamed.status == 2 && unnamed.stderr.contains("route move needs --to DEVICE"), "\(unnamed)")
            let shown = try await sandbox.run(["move"], environment: environment.merging(["DISPLAY": ":99"]) { $1 })
            #expect(shown.status == 4 && shown.stderr.contains("a cast made without it cannot be moved"), "\(shown)")
            // In-process, no terminal to ask on and no display: one line, exit 1, nothing printed.
            let pick = try await sandbox.run(["pick"], environment: headless)
            #expect(pick.status == 1 && pick.stderr.contains("route pick needs a display") && pick.stdout.isEmpty, "\(pick)")
            // route cast --pick asks the service's picker: without the service, what it needs; --to beside it is refused.
            let wav = try await sandbox.wav("song.wav", seconds: 1)
            let picked = try await sandbox.run(["cast", wav, "--pick"], environment: environment)
            #expect(picked.status == 1 && picked.stderr.contains("the route service needs a session bus") && picked.stdout.isEmpty, "\(picked)")
            let both = try await sandbox.run(["cast", wav, "--pick", "--to", "this"], environment: environment)
            #expect(both.status == 2 && both.stderr.contains("--pick chooses the device: drop --to, or --pick"), "\(both)")
            let media = try await sandbox.run(["pick", "--media", "smell"], environment: environment)
            #expect(media.status == 2 && media.stderr.contains("--media takes audio, video or image"), "\(media)")
        }
    }

    /// An address left from another login (a socket nobody listens on, or none at all) is no bus: a command that needs
    /// the service says so at once.
    @Test func aSessionBusAddressThatLeadsNowhereIsNoBus() async throws {
        try await inSandbox { sandbox in
            let gone = sandbox.root + "/gone-bus"
            let made = try runTool("/usr/bin/python3", ["-c", "import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()", gone])
            #expect(made.status == 0, "\(made)")
            let wav = try await sandbox.wav("song.wav", seconds: 1)
            for address in ["unix:path=\(gone)", "unix:path=\(sandbox.root)/no-such-bus"] {
                let detached = try await sandbox.run(["cast", wav, "--detach"], environment: ["DBUS_SESSION_BUS_ADDRESS": address])
                #expect(detached.status == 1 && detached.stderr.contains("needs a session bus, and none answers"), "\(address): \(detached)")
            }
        }
    }
}
