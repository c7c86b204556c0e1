// LibraryExampleTests: the README's "As a library" example, as written there, plays a file to its end on
// "This computer" — so the example keeps compiling and working as the API moves.

import Foundation
import RouteCore
import RouteMedia
import Synchronization
import Testing

@Suite struct LibraryExampleTests {
    @Test func theReadmeExamplePlaysAFileToItsEnd() async throws {
        TestEnvironment.configure()
        let path = try await Samples.get().wav
        let states = States()
        @Sendable func print(_ state: PlaybackStatus.State) { states.seen.withLock { $0.append(state) } }

        // ---- as in README.md ("As a library"), with the sample's path for "song.flac"
        let router = MediaRouter(providers: [LocalProvider()])
        let song = try await MediaProbe.probe(path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await router.run() }                     // discovery, until cancelled
            let device = try await router.waitForDevice(matching: "This computer", timeout: 2)
            let preparer = try MediaPreparer(device: device)          // serves and converts for that device
            defer { preparer.close() }
            let session = QueueSession(device: device, titles: [song.displayTitle],
                                      open: { try await router.controller(for: $0) }) { _ in
                let (route, item) = try preparer.prepare(song)
                return QueueSession.Prepared(route: route, item: item)
            }
            group.addTask { for await status in session.statusUpdates() { print(status.playback.state) } }
            try await session.run()    // returns at the end of the queue; session.pause(), seek(_:)… meanwhile
            group.cancelAll()
        }
        // ----

        let seen = states.seen.withLock { $0 }
        #expect(seen.contains(.playing), "\(seen)")
        #expect(seen.last == .ended, "\(seen)")
    }
}

/// What the example printed.
private final class States: Sendable {
    let seen = Mutex<[PlaybackStatus.State]>([])
}
