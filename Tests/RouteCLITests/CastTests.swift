// CastTests: `route cast` end to end as a subprocess — bad input and unknown devices, playing on
// "This computer" into a real-time fakesink, and control of a running cast from other `route` processes.

import Foundation
import RouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct CastBadInputTests {
    enum Bad: String, CaseIterable { case missing, directory, empty, notMedia }

    @Test(arguments: Bad.allCases)
    func badFileIsExitThreeWithOneLineNamingIt(kind: Bad) async throws {
        try await inSandbox { sandbox in
            let path: String
            switch kind {
            case .missing: path = sandbox.root + "/missing.wav"
            case .directory:
                path = sandbox.root + "/album"
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            case .empty: path = try sandbox.file("empty.wav", "")
            case .notMedia: path = try sandbox.file("notes.mp3", "shopping list: milk, eggs\n")
            }
            let result = try await sandbox.run(["cast", path, "--to", "This computer"])
            #expect(result.status == 3, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains(path), "\(result)")
            #expect(result.stdout.isEmpty, "\(result)")
        }
    }

    @Test func oneBadFileStopsTheCastBeforeAnythingPlays() async throws {
        try await inSandbox { sandbox in
            let good = try await sandbox.wav("good.wav", seconds: 2)
            let result = try await sandbox.run(["cast", good, sandbox.root + "/typo.wav", "--to", "this"])
            #expect(result.status == 3, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("typo.wav"))
            #expect(result.stdout.isEmpty, "something played: \(result)") // a cast prints "loading: …" first
        }
    }

    // Root reads any file, so the unreadable case runs `route` as nobody (uid 65534) via setpriv;
    // the file is root's with mode 600 (its directory is open to nobody, the file is not).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv"))
    func unreadableFileIsExitThreeCannotBeRead() async throws {
        try await inSandbox { sandbox in
            let path = try await sandbox.wav("private.wav", seconds: 2)
            let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            if getuid() == 0 {
                chmod(path, 0o600)
            } else {
                chmod(path, 0) // not root: the file is ours, so taking our own permission away is enough
            }
            let prefix = getuid() == 0 ? nobody : []
            // nobody must be able to run the binary itself, or the test would prove nothing.
            let help = try await sandbox.run(["--help"], prefix: prefix)
            try #require(help.status == 0, "`route --help` as nobody failed (is \(RouteBinary.path) reachable by nobody?): \(help)")
            let result = try await sandbox.run(["cast", path, "--to", "This computer"], prefix: prefix)
            #expect(result.status == 3, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains(path))
            #expect(result.stderr.contains("cannot be read"))
        }
    }

    @Test func aThousandFilesAreNotAUsageError() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("f.wav", seconds: 1)
            let result = try await sandbox.run(["cast"] + Array(repeating: wav, count: 1001) + ["--to", "Nonexistent", "--providers", "local"])
            #expect(result.status == 4, "the device is what is wrong, not the count: \(result)")
        }
    }

    /// Later files are probed while the first plays: a bad one at the end is found when the queue gets
    /// there (skipped with a line, exit 3), not before anything plays.
    @Test func laterFilesAreProbedWhileTheFirstPlays() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("first.wav", seconds: 1)
            let bad = try sandbox.file("notes.mp3", "shopping list: milk, eggs\n")
            let result = try await sandbox.run(["cast", wav, bad, "--to", "this"], timeout: 20)
            #expect(result.status == 3, "\(result)")
            #expect(result.stdoutLines.contains("ended: first [1/2] on This computer"), "the first file played: \(result)")
            #expect(result.stderrLines.count == 1 && result.stderr.contains("skipping notes") && result.stderr.contains("not a media file"), "\(result)")
        }
    }

    @Test func unknownDeviceIsExitFourListingTheDevices() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("f.wav", seconds: 2)
            let result = try await sandbox.run(["cast", wav, "--to", "Nonexistent", "--providers", "local"])
            #expect(result.status == 4, "\(result)")
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("Nonexistent"))
            #expect(result.stderr.contains("\"This computer\""))
            #expect(result.stdout.isEmpty)
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct CastPlaybackTests {
    @Test func anInvalidSinkDescriptionIsOneClearLine() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("sample.wav", seconds: 1)
            let result = try await sandbox.run(["cast", wav, "--to", "this"], environment: ["ROUTE_AUDIO_SINK": "nosuchsink x=1"])
            #expect(result.status == 1, "\(result)")
            #expect(result.stderrLines.count == 1)
            #expect(result.stderr.contains("ROUTE_AUDIO_SINK") && result.stderr.contains("nosuchsink"))
        }
    }

    @Test func castToThisComputerPlaysToTheEnd() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("sample.wav", seconds: 2)
            let result = try await sandbox.run(["cast", wav, "--to", "this"], timeout: 20)
            #expect(result.status == 0, "\(result)")
            let lines = result.stdoutLines
            #expect(lines.first == "loading: sample on This computer", "\(result)")
            #expect(lines.contains("playing: sample on This computer"), "\(result)")
            #expect(lines.last == "ended: sample on This computer", "\(result)")
            #expect(lines.firstIndex { $0.hasPrefix("playing:") }! < lines.firstIndex { $0.hasPrefix("ended:") }!)
            #expect(result.elapsed >= .milliseconds(1900), "a 2 s file finished in \(result.elapsed)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.localSocket), "the control socket was left behind")
        }
    }

    @Test func castPlaysAQueueInOrder() async throws {
        try await inSandbox { sandbox in
            let first = try await sandbox.wav("first.wav", seconds: 1)
            let second = try await sandbox.wav("second.wav", seconds: 1)
            let result = try await sandbox.run(["cast", first, second, "--to", "this"], timeout: 20)
            #expect(result.status == 0, "\(result)")
            let lines = result.stdoutLines
            let firstEnded = lines.firstIndex(of: "ended: first [1/2] on This computer")
            let secondPlaying = lines.firstIndex(of: "playing: second [2/2] on This computer")
            #expect(firstEnded != nil && secondPlaying != nil, "\(result)")
            if let firstEnded, let secondPlaying { #expect(firstEnded < secondPlaying) }
            #expect(lines.last == "ended: second [2/2] on This computer", "\(result)")
            #expect(result.elapsed >= .milliseconds(1900))
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct RemoteControlTests {
    @Test func controlARunningCastFromOtherProcesses() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let cast = try sandbox.start(["cast", wav, "--to", "this"])

            try await sandbox.poll(["status", "--to", "this"], "playing") { $0.status == 0 && $0.stdout.contains(": playing six") }
            #expect(FileManager.default.fileExists(atPath: sandbox.localSocket))

            let pause = try await sandbox.run(["pause", "--to", "this"])
            #expect(pause.status == 0, "\(pause)")
            try await sandbox.poll(["status", "--to", "this"], "paused") { $0.stdout.contains(": paused six") }

            // A second cast to the same device is refused while this one runs.
            let second = try await sandbox.run(["cast", wav, "--to", "this"])
            #expect(second.status == 1, "\(second)")
            #expect(second.stderr.contains("route stop"), "\(second)")

            let seek = try await sandbox.run(["seek", "3", "--to", "this"])
            #expect(seek.status == 0, "\(seek)")
            let volume = try await sandbox.run(["volume", "40", "--to", "this"])
            #expect(volume.status == 0, "\(volume)")
            let status = try await sandbox.poll(["status", "--json", "--to", "this"], "volume 40 at 0:03") { result in
                guard let reply = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else { return false }
                return reply["volume"] as? Int == 40 && abs((reply["position"] as? Double ?? 0) - 3) < 0.25
            }
            let reply = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
            #expect((reply["device"] as? [String: Any])?["name"] as? String == "This computer")
            #expect(reply["state"] as? String == "paused")
            // Brief: no accepted-types list, numbers as people read them.
            #expect(status.stdoutLines.count < 25, "\(status.stdout)")
            #expect(!status.stdout.contains("accepts"))
            try await sandbox.poll(["status", "--to", "this"], "vol 40%") { $0.stdout.contains(": paused six 0:0") && $0.stdout.contains(" / 0:06  vol 40%") }

            let stop = try await sandbox.run(["stop", "--to", "this"])
            #expect(stop.status == 0, "\(stop)")
            let stopped = ContinuousClock.now
            let ended = await cast.finish(within: 5)
            #expect(ended.status == 0, "\(ended)")
            #expect(ContinuousClock.now - stopped < .seconds(3), "the cast took \(ContinuousClock.now - stopped) to exit after stop")
            #expect(ended.stdoutLines.last == "stopped: six on This computer", "\(ended)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.localSocket), "the control socket was left behind")
        }
    }

    @Test func stopWhilePlayingEndsWithStopped() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let cast = try sandbox.start(["cast", wav, "--to", "this"])
            try await sandbox.poll(["status", "--to", "this"], "playing") { $0.stdout.contains(": playing six") }
            let stopping = ContinuousClock.now
            let stop = try await sandbox.run(["stop"]) // without --to: the only running cast
            #expect(stop.status == 0, "\(stop)")
            let ended = await cast.finish(within: 5)
            #expect(ended.status == 0, "\(ended)")
            #expect(ContinuousClock.now - stopping < .seconds(3), "the 6 s cast was not stopped promptly: \(ended)")
            #expect(ended.stdoutLines.last == "stopped: six on This computer", "\(ended)")
            #expect(!ended.stdoutLines.contains("paused: six on This computer"), "a stop is no pause on its way down: \(ended)")
        }
    }

    @Test func sigtermStopsACastWithExit130() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let cast = try sandbox.start(["cast", wav, "--to", "this"])
            try await sandbox.poll(["status", "--to", "this"], "playing") { $0.stdout.contains(": playing six") }
            let stopping = ContinuousClock.now
            cast.signal(SIGTERM)
            let ended = await cast.finish(within: 5)
            #expect(ended.status == 130, "\(ended)")
            #expect(ContinuousClock.now - stopping < .seconds(3), "the 6 s cast was not stopped promptly: \(ended)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.localSocket), "the control socket was left behind")
        }
    }

    // A refused cast has already opened its player; it must still exit with one line and code 1.
    // Tried several times because what goes wrong after the refusal is a race.
    @Test func refusedSecondCastExitsCleanly() async throws {
        try await inSandbox { sandbox in
            // Long enough that the first cast is still playing after every attempt.
            let wav = try await sandbox.wav("long.wav", seconds: 30)
            let cast = try sandbox.start(["cast", wav, "--to", "this"])
            try await sandbox.poll(["status", "--to", "this"], "playing") { $0.stdout.contains(": playing long") }
            for attempt in 1...5 {
                let second = try await sandbox.run(["cast", wav, "--to", "this"], timeout: 10)
                #expect(second.status == 1, "attempt \(attempt): \(second)")
                #expect(second.stderrLines.count == 1, "attempt \(attempt): \(second)")
                #expect(second.stderr.contains("already playing"), "attempt \(attempt): \(second)")
            }
            #expect(cast.isRunning, "the first cast should be unaffected")
            cast.signal(SIGTERM)
            _ = await cast.finish(within: 5)
        }
    }

    @Test func controlWithoutARunningCastFails() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["pause", "--to", "this"])
            #expect(result.status == 4, "\(result)") // "no device matches"
            #expect(result.stderrLines.count == 1, "\(result)")
            #expect(result.stderr.contains("\"this\""), "\(result)")
        }
    }

    // The message should say what is wrong: nothing is casting there. Today it says no *device*
    // matches and suggests `route devices`, which does list "This computer" — a contradiction.
    @Test func controlWithoutARunningCastSaysNothingIsCasting() async throws {
        try await inSandbox { sandbox in
            let result = try await sandbox.run(["pause", "--to", "this"])
            #expect(result.stderr.contains("route cast"), "message: \(result.stderr)")
            #expect(!result.stderr.contains("route devices"), "message: \(result.stderr)")
        }
    }

    @Test func staleSocketDoesNotBlockANewCast() async throws {
        try await inSandbox { sandbox in
            // A socket file nobody listens on, as a crashed cast leaves behind.
            try FileManager.default.createDirectory(atPath: sandbox.runtimeDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let (fd, bound) = boundSocket(at: sandbox.localSocket)
            close(fd)
            try #require(bound == 0)
            #expect(FileManager.default.fileExists(atPath: sandbox.localSocket))

            let status = try await sandbox.run(["status", "--to", "this"])
            #expect(status.status != 0, "\(status)")

            let wav = try await sandbox.wav("short.wav", seconds: 1)
            let result = try await sandbox.run(["cast", wav, "--to", "this"], timeout: 20)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdoutLines.last == "ended: short on This computer", "\(result)")
        }
    }
}

extension RemoteControlTests {
    /// A cast whose answer went wrong (it could not encode one, it was busy) still plays: `route status` must not take
    /// its socket for a crashed cast's and remove it, which hid the cast from every question after (two lab runs saw a
    /// playing cast answer "nothing is being cast" for 10 s).
    @Test func aSocketThatIsListenedOnIsNotRemovedWhenItsAnswerFails() async throws {
        try await inSandbox { sandbox in
            try FileManager.default.createDirectory(atPath: sandbox.runtimeDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let (fd, bound) = boundSocket(at: sandbox.localSocket)
            try #require(bound == 0 && listen(fd, 4) == 0)
            // Takes every connection and hangs up without a word.
            let acceptor = Thread {
                while true {
                    let client = accept(fd, nil, nil)
                    if client < 0 { return }
                    close(client)
                }
            }
            acceptor.start()
            defer {
                shutdown(fd, Int32(SHUT_RDWR))
                close(fd)
            }
            let status = try await sandbox.run(["status", "--to", "this"])
            #expect(status.status != 0, "\(status)")
            #expect(FileManager.default.fileExists(atPath: sandbox.localSocket), "route status removed a socket that is listened on")
        }
    }
}

/// What /proc says of `pid` (its executable, state and command line), to explain a process the leftover check missed.
private func procEntry(_ pid: Int32) -> String {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? "(no exe)"
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "(no stat)"
    let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0, as: UTF8.self) } ?? "(no cmdline)"
    return "exe \(exe), stat \(stat.prefix(80)), cmdline \(cmdline.replacingOccurrences(of: "\0", with: " "))"
}

/// A Unix socket bound at `path` (not listening yet), and bind's result.
private func boundSocket(at path: String) -> (fd: Int32, result: Int32) {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: bytes); raw[bytes.count] = 0 }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    return (fd, result)
}

@Suite(.timeLimit(.minutes(1))) struct LeftoverCheckTests {
    // The check every sandbox runs at its end must really see a running `route`, or it proves nothing.
    @Test func leftoverCheckSeesARunningCast() async throws {
        try await inSandbox { sandbox in
            let wav = try await sandbox.wav("six.wav", seconds: 6)
            let cast = try sandbox.start(["cast", wav, "--to", "this"])
            let deadline = ContinuousClock.now + .seconds(5)
            while !routeProcesses(mentioning: sandbox.root).contains(cast.pid), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(routeProcesses(mentioning: sandbox.root) == [cast.pid],
                    "running: \(cast.isRunning); /proc/\(cast.pid): \(procEntry(cast.pid)); it said: \(cast.stdout) \(cast.stderr)")
            cast.signal(SIGKILL) // it may not have installed its handlers yet; only its end matters here
            _ = await cast.finish(within: 5)
            #expect(routeProcesses(mentioning: sandbox.root).isEmpty)
        }
    }
}
