// LocalPlayerTests: "This computer" playing real files through playbin into a real-time fakesink
// (ROUTE_AUDIO_SINK="fakesink sync=true"): states, timing, pause, seek, volume, stop, failures, close.

import Foundation
import RouteCore
import RouteMedia
import RouteTestSupport
import Testing

/// A file:// URL for a path, as the cast preparer makes it.
func fileURL(_ path: String) -> String { URL(fileURLWithPath: path).absoluteString }

/// What a provider is handed when a test calls it directly: no discovery, nothing logged.
let testContext = ProviderContext(log: .discard, discovery: .none) { _ in }

/// Runs `body` with a fresh local player (its `run()` running) and its status recorder, and closes the
/// player afterwards.
func withLocalPlayer(_ body: (any RouteController, Recorder<PlaybackStatus>) async throws -> Void) async throws {
    TestEnvironment.configure()
    let player = try await LocalProvider().controller(for: LocalProvider.route, context: testContext)
    let running = Task { try? await player.run() }
    let recorder = Recorder(player.statusUpdates())
    do {
        try await body(player, recorder)
    } catch {
        running.cancel()
        await player.close()
        throw error
    }
    running.cancel()
    await player.close()
}

@Suite(.timeLimit(.minutes(1))) struct LocalPlayerTests {
    @Test func providerListsThisComputer() async throws {
        let provider = LocalProvider()
        #expect(provider.name == "local")
        #expect(LocalProvider.device.name == "This computer")
        #expect(LocalProvider.device.protocols == ["local"])
        let router = MediaRouter(providers: [provider])
        let discovery = Task { await router.run() }
        defer { discovery.cancel() }
        #expect(await firstValue(in: router.deviceUpdates(), within: 5) { !$0.isEmpty } == [LocalProvider.device])
        #expect(try await provider.route(at: "10.0.0.1:8009", context: testContext) == nil)
    }

    @Test func playsAWAVToItsEndInRealTime() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            #expect(player.route == LocalProvider.route)
            let start = ContinuousClock.now
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav", title: "tone", duration: 2),
                                  autoplay: true)
            let playing = try await status.wait(for: 10, "playing") { $0.state == .playing }
            let ended = try await status.wait(for: 15, "ended") { $0.state == .ended }
            #expect(playing.time < ended.time)
            let elapsed = ended.time - start
            #expect(elapsed >= .milliseconds(1800), "a 2 s file ended after \(elapsed)")
            #expect(ended.value.title == "tone")
            #expect(abs(ended.value.position - 2) < 0.1, "position at the end: \(ended.value.position)")
            #expect(try abs(#require(ended.value.duration) - 2) < 0.05)
            // Loading comes first, and nothing is reported as playing after the end.
            let states = status.values.map(\.state)
            #expect(states.firstIndex(of: .loading).map { $0 < states.firstIndex(of: .playing)! } == true, "\(states)")
            #expect(!states.drop(while: { $0 != .ended }).contains(.playing))
        }
    }

    @Test func positionAdvancesWhilePlaying() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            try await player.load(MediaItem(url: fileURL(samples.longWAV), mimeType: "audio/wav"), autoplay: true)
            try await status.wait(for: 10, "playing") { $0.state == .playing }
            // The bus thread reports the position every 0.5 s while playing.
            let later = try await status.wait(for: 10, "a position past 1 s") { $0.state == .playing && $0.position >= 1 }
            #expect(later.value.position < 6)
            #expect(try abs(#require(later.value.duration) - 6) < 0.05)
        }
    }

    @Test func pauseHoldsThePosition() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            let start = ContinuousClock.now
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav"), autoplay: true)
            try await status.wait(for: 10, "playing") { $0.state == .playing }
            try await player.pause()
            let paused = try await status.wait(for: 5, "paused") { $0.state == .paused }
            // Hold the pause for 1 s on purpose: if the position kept running, the file would end
            // sooner than 2 s of play plus this second.
            try await Task.sleep(for: .seconds(1))
            let during = status.values.dropFirst(paused.index).map(\.state)
            #expect(!during.contains(.playing) && !during.contains(.ended), "while paused: \(during)")
            let resumeMark = status.values.count
            try await player.play()
            let resumed = try await status.wait(for: 5, from: resumeMark, "playing again") { $0.state == .playing }
            #expect(abs(resumed.value.position - paused.value.position) < 0.3,
                    "paused at \(paused.value.position), resumed at \(resumed.value.position)")
            let ended = try await status.wait(for: 15, "ended") { $0.state == .ended }
            let elapsed = ended.time - start
            #expect(elapsed >= .milliseconds(2750), "2 s of audio with a 1 s pause ended after \(elapsed)")
        }
    }

    @Test func seekMovesThePosition() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav"), autoplay: false)
            try await status.wait(for: 10, "paused after loading without autoplay") { $0.state == .paused }
            try await player.seek(to: 1.0)
            let playMark = status.values.count
            try await player.play()
            try await status.wait(for: 10, from: playMark, "playing") { $0.state == .playing }
            try await status.wait(for: 10, "ended") { $0.state == .ended }
            // Every position reported while playing comes from the pipeline; none may be before the seek target.
            let positions = status.values.dropFirst(playMark).filter { $0.state == .playing }.map(\.position)
            #expect(!positions.isEmpty)
            #expect(positions.allSatisfy { $0 >= 0.95 && $0 <= 2.05 }, "positions after seeking to 1.0: \(positions)")
        }
    }

    @Test func seekWhilePlayingSkipsAhead() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            let start = ContinuousClock.now
            try await player.load(MediaItem(url: fileURL(samples.longWAV), mimeType: "audio/wav"), autoplay: true)
            try await status.wait(for: 10, "playing") { $0.state == .playing }
            try await player.seek(to: 5.0)
            let ended = try await status.wait(for: 15, "ended") { $0.state == .ended }
            // Without the seek, 6 s of audio would take 6 s.
            #expect(ended.time - start < .seconds(4.5), "ended after \(ended.time - start)")
        }
    }

    @Test func setVolumeIsReflectedAndClamped() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav"), autoplay: false)
            try await player.setVolume(0.3)
            try await status.wait(for: 5, "volume 0.3") { $0.volume == 0.3 }
            try await player.setVolume(1.7)
            try await status.wait(for: 5, "volume clamped to 1") { $0.volume == 1 }
            try await player.setVolume(-2)
            try await status.wait(for: 5, "volume clamped to 0") { $0.volume == 0 }
            // A new load keeps the volume.
            let volumeMark = status.values.count
            try await player.setVolume(0.3)
            try await status.wait(for: 5, from: volumeMark, "volume 0.3 again") { $0.volume == 0.3 }
            let mark = status.values.count
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav"), autoplay: false)
            let loaded = try await status.wait(for: 5, from: mark, "loading") { $0.state == .loading }
            #expect(loaded.value.volume == 0.3)
        }
    }

    @Test func muteIsReflectedAndKeepsTheVolume() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav"), autoplay: false)
            try await player.setVolume(0.6)
            try await player.setMuted(true)
            let muted = try await status.wait(for: 5, "muted") { $0.muted == true }
            #expect(muted.value.volume == 0.6)
            try await player.setMuted(false)
            try await status.wait(for: 5, "unmuted") { $0.muted == false }
        }
    }

    @Test func stopReportsStopped() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            try await player.load(MediaItem(url: fileURL(samples.longWAV), mimeType: "audio/wav"), autoplay: true)
            try await status.wait(for: 10, "playing") { $0.state == .playing }
            try await player.stop()
            let stopped = try await status.wait(for: 5, "stopped") { $0.state == .stopped }
            #expect(stopped.value.isFinal)
        }
    }

    @Test func playAfterTheEndStartsAgain() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            try await player.load(MediaItem(url: fileURL(samples.wav), mimeType: "audio/wav"), autoplay: true)
            try await status.wait(for: 15, "ended") { $0.state == .ended }
            let mark = status.values.count
            let again = ContinuousClock.now
            try await player.play()
            try await status.wait(for: 10, from: mark, "playing again") { $0.state == .playing }
            let ended = try await status.wait(for: 15, from: mark, "ended again") { $0.state == .ended }
            #expect(ended.time - again >= .milliseconds(1800), "replay ended after \(ended.time - again)")
        }
    }

    @Test func loadingAMissingFileFails() async throws {
        let samples = try await Samples.get()
        try await withLocalPlayer { player, status in
            let missing = fileURL(samples.root + "/gone.wav")
            // load may already refuse (the file source cannot open); either way the status says why.
            do {
                try await player.load(MediaItem(url: missing, mimeType: "audio/wav"), autoplay: true)
            } catch let error as RouteError {
                guard error.code == .commandFailed else {
                    Issue.record("load threw \(error)")
                    return
                }
            }
            let failed = try await status.wait(for: 10, "failed") { $0.state == .failed }
            let message = try #require(failed.value.error)
            #expect(!message.isEmpty)
            #expect(failed.value.isFinal)
        }
    }

    @Test func closeEndsStatusAndRefusesCommands() async throws {
        TestEnvironment.configure()
        let player = try await LocalProvider().controller(for: LocalProvider.route, context: testContext)
        let status = Recorder(player.statusUpdates())
        await player.close()
        try await status.waitForEnd(within: 5)
        await #expect(throws: RouteError.deviceUnreachable(device: "This computer", reason: "the player was closed")) {
            try await player.play()
        }
        await player.close() // a second close is harmless
        #expect(await allValues(of: player.statusUpdates(), within: 5) != nil, "a stream opened after close never ended")
    }
}
