// QueueSessionStallTests: the rule that a device which fetched an item and says it plays at its start for twice
// `fetchDeadline` has stalled, against a device driven status by status.

import Foundation
import RouteCore
import Synchronization
import Testing

/// A device whose statuses the test sends, and which records what it was asked.
final class ScriptedController: RouteController {
    let route = RouteCoreTests.route("Scripted", id: "scripted-1")
    private let updates = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    private let asked = Mutex<[String]>([])

    /// What it was asked, in order (`load`, `play`, `pause`, `stop`).
    var commands: [String] { asked.withLock { $0 } }

    func send(_ status: PlaybackStatus) { updates.send(status) }

    func run() async throws {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
    func load(_ item: MediaItem, autoplay: Bool) async throws {
        asked.withLock { $0.append("load") }
        send(PlaybackStatus(state: .loading))
    }
    func play() async throws { asked.withLock { $0.append("play") } }
    func pause() async throws { asked.withLock { $0.append("pause") } }
    func seek(to seconds: Double) async throws {}
    func stop() async throws {
        asked.withLock { $0.append("stop") }
        send(PlaybackStatus(state: .stopped))
    }
    func setVolume(_ level: Double) async throws {}
    func setMuted(_ muted: Bool) async throws {}
    func setNext(_ item: MediaItem) async throws -> Bool { false }
    func statusUpdates() -> AsyncStream<PlaybackStatus> { updates.subscribe() }
    func close() async { updates.finish() }
}

@Suite(.timeLimit(.minutes(1))) struct QueueSessionStallTests {
    /// Waits until `condition` holds, at most 5 s.
    private func until(_ what: String, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !(await condition()) {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(what) did not happen within 5 s")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aLongPauseInAnItemsFirstSecondIsNoStall() async throws {
        let device = ScriptedController()
        let notices = Mutex<[String]>([])
        // Fetched by the device (one request), so the stall rule applies after twice 0.3 s at its start.
        var options = QueueSession.Options(fetchDeadline: .milliseconds(300), access: { _ in
            MediaAccess(requests: 1, problem: nil, servedFrom: "10.0.0.1:1")
        })
        options.onNotice = { notice in notices.withLock { $0.append(notice) } }
        let session = QueueSession(device: MediaDevice(routes: [device.route]), titles: ["tone"], options: options,
                                   open: { _ in device }) { _ in
            QueueSession.Prepared(route: device.route, item: MediaItem(url: "http://10.0.0.1:1/m/a/tone.wav", mimeType: "audio/x-wav", title: "tone"))
        }
        let run = Task { try await session.run() }
        defer { run.cancel() }
        try await until("the item is loaded") { device.commands.contains("load") }
        for position in [0.0, 0.1, 0.2, 0.3] { device.send(PlaybackStatus(state: .playing, position: position)) }
        // Paused by its person in its first second, for longer than the rule's 0.6 s.
        try await session.pause()
        device.send(PlaybackStatus(state: .paused, position: 0.3))
        try await Task.sleep(for: .seconds(1))
        try await session.play()
        for _ in 0..<4 { device.send(PlaybackStatus(state: .playing, position: 0.3)) }
        // Within 0.6 s of playing again it is no stall (ticks come every 0.25 s).
        try await Task.sleep(for: .milliseconds(400))
        #expect(device.commands.filter { $0 == "load" }.count == 1, "the item was sent again: \(device.commands), \(notices.withLock { $0 })")
        // Still at its start 0.6 s after it plays again: that is a stall, and the item is sent once more.
        try await until("the stalled item is sent again") { device.commands.filter { $0 == "load" }.count == 2 }
        #expect(notices.withLock { $0 }.contains { $0.contains("sending it again") })
        try await session.stop()
        _ = try? await run.value
    }
}
