// TerminalTests: `route` at a real (pseudo-)terminal and in pipes — the live line never wider than the
// terminal, Ctrl-Z gives the terminal back, a closed terminal or pipe stops the cast — and the control
// sockets' directory, which must be this user's alone.

import Foundation
import RouteCore
import RouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct TerminalTests {
    /// Columns a terminal gives a string: wide characters take two.
    private static func columns(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { total, scalar in
            (0x1100...0x115F).contains(scalar.value) || (0x2E80...0xA4CF).contains(scalar.value) || (0xAC00...0xD7A3).contains(scalar.value)
                || (0xFF00...0xFF60).contains(scalar.value) || (0x1F300...0x1F9FF).contains(scalar.value) ? total + 2 : total + 1
        }
    }

    @Test func theLiveLineFitsANarrowTerminal() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("a rather long title for a narrow terminal 東京.wav", seconds: 6)
            let run = try await sandbox.runInTerminal(["cast", wav, "--to", "this"], columns: 40, steps: ["wait:▶", "sleep:1.2", "send:q"])
            #expect(run.exit == 0, "\(run.output)")
            // Each redraw starts with \r and clears the line: no drawn segment may wrap.
            let segments = run.output.replacingOccurrences(of: "\u{1B}[K", with: "").split(whereSeparator: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" })
            #expect(segments.contains { $0.contains("▶") }, "\(run.output)")
            // Notices ("route cast: …") are whole lines, which the terminal wraps; the live line never may.
            for segment in segments where !segment.hasPrefix("route cast:") { #expect(Self.columns(String(segment)) <= 40, "\(segment.unicodeScalars.map { String($0.value, radix: 16) }) is \(Self.columns(String(segment))) columns") }
        }
    }

    @Test func ctrlZGivesTheTerminalBackAndFgTakesItAgain() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let run = try await sandbox.runInTerminal(["cast", wav, "--to", "this"], steps: ["wait:▶", "suspend", "sleep:0.3", "send:q"])
            #expect(run.exit == 0, "\(run.output)")
            let suspended = try #require(run.modes["suspended"] ?? nil, "the cast stopped on Ctrl-Z")
            #expect(suspended.echo && suspended.canonical, "echo is back while route is stopped")
            let resumed = try #require(run.modes["resumed"] ?? nil)
            #expect(!resumed.echo && !resumed.canonical, "keys work again after fg")
            let after = try #require(run.modes["after"] ?? nil)
            #expect(after.echo && after.canonical)
        }
    }

    @Test func closingTheTerminalStopsTheCast() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let run = try await sandbox.runInTerminal(["cast", wav, "--to", "this"], steps: ["wait:▶", "hangup"], timeout: 10)
            #expect(run.exit == 130, "a hangup ends the cast as an interruption: \(run.output)")
            #expect(run.output.contains("■"), "the device was stopped: \(run.output)")
        }
    }

    @Test func aClosedPipeStopsTheCastInsteadOfKillingRoute() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: RouteBinary.path)
            process.arguments = ["cast", wav, "--to", "this"]
            process.environment = sandbox.environment()
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.runUnblocked()
            // Like `| head -1`: read the first line, then close our end.
            let reader = pipe.fileHandleForReading
            var first = Data()
            while !first.contains(10), let byte = try reader.read(upToCount: 1), !byte.isEmpty { first.append(byte) }
            try reader.close()
            let started = ContinuousClock.now
            while process.isRunning, ContinuousClock.now - started < .seconds(8) { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!process.isRunning, "route ended once nobody read it")
            #expect(process.terminationReason == .exit, "it exited, it was not killed by SIGPIPE")
            #expect(process.terminationStatus == 130)
            #expect(ContinuousClock.now - started < .seconds(4), "stopped, not played to the end")
        }
    }
}

/// The control sockets' directory must be this user's and private: a socket another user planted there
/// would receive `route seek` and answer `route status`.
@Suite(.timeLimit(.minutes(1)), .enabled(if: getuid() == 0, "needs root to make another user's directory"))
struct RuntimeDirectoryTests {
    @Test(arguments: ["other user's", "open to all"])
    func aDirectoryThatIsNotPrivateIsRefused(kind: String) async throws {
        try await inSandbox { sandbox in
            let directory = sandbox.root + "/planted"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            if kind == "other user's" {
                chown(directory, 65534, 65534)
                chmod(directory, 0o700)
            } else {
                chmod(directory, 0o777)
            }
            let wav = try await sandbox.wav("one.wav", seconds: 1)
            let cast = try await sandbox.run(["cast", wav, "--to", "this"], environment: ["ROUTE_RUNTIME_DIR": directory])
            #expect(cast.status == 1 && cast.stderr.contains("refusing the runtime directory"), "\(cast)")
            #expect(cast.stdout.isEmpty, "nothing played")
            let status = try await sandbox.run(["status"], environment: ["ROUTE_RUNTIME_DIR": directory])
            #expect(status.status == 1 && status.stderr.contains("refusing the runtime directory"), "\(status)")
        }
    }

    /// Without XDG_RUNTIME_DIR (ssh, cron), the fallback in TMPDIR is made private, or refused when planted.
    @Test func theFallbackIsMadePrivateOrRefused() async throws {
        try await inSandbox { sandbox in
            let temporary = sandbox.root + "/tmp"
            try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
            chmod(temporary, 0o1777)
            let wav = try await sandbox.wav("one.wav", seconds: 1)
            var environment = ["TMPDIR": temporary, "XDG_RUNTIME_DIR": "", "ROUTE_RUNTIME_DIR": ""]
            let fine = try await sandbox.run(["cast", wav, "--to", "this"], environment: environment, timeout: 20)
            #expect(fine.status == 0, "\(fine)")
            var made = stat()
            #expect(lstat(temporary + "/route-\(getuid())", &made) == 0 && made.st_mode & 0o777 == 0o700 && made.st_uid == getuid())

            try FileManager.default.removeItem(atPath: temporary + "/route-\(getuid())")
            try FileManager.default.createDirectory(atPath: temporary + "/route-\(getuid())", withIntermediateDirectories: false)
            chown(temporary + "/route-\(getuid())", 65534, 65534)
            chmod(temporary + "/route-\(getuid())", 0o777)
            environment["TMPDIR"] = temporary
            let planted = try await sandbox.run(["cast", wav, "--to", "this"], environment: environment)
            #expect(planted.status == 1 && planted.stderr.contains("belongs to another user"), "\(planted)")
        }
    }
}
