// ProbeAheadTests: a queue's items probed a couple ahead, and no more once its cast is over.

import Foundation
import MediaRouting
import RouteTestSupport
import Testing

@Suite struct ProbeAheadTests {
    @Test func aQueueProbesAheadAndNoMoreOnceItsCastIsOver() async throws {
        try await inSandbox { sandbox in
            var paths: [String] = []
            for name in ["a", "b", "c", "d"] { paths.append(try await sandbox.wav("\(name).wav", seconds: 1)) }
            let probes = ProbeAhead(paths: paths)
            #expect(try await probes.info(0).duration != nil)
            await probes.cancel()
            // What was probed stays known; what was not is probed no more.
            #expect(try await probes.info(0).path.hasSuffix("a.wav"))
            await #expect(throws: CancellationError.self) { try await probes.info(3) }
        }
    }
}
