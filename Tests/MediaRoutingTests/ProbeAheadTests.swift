// ProbeAheadTests: a queue's items probed a couple ahead, and no more once its cast is over.

import Foundation
import MediaRouting
import RouteTestSupport
import Testing

@Suite struct ProbeAheadTests {
    @Test func aQueueProbesAheadAndNoMoreOnceItsCastIsOver() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("probe-ahead-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var paths: [String] = []
        for name in ["a", "b", "c", "d"] {
            paths.append(try await Fixtures.gst("audiotestsrc num-buffers=50 samplesperbuffer=882 ! audio/x-raw,rate=44100,channels=2 "
                                                + "! audioconvert ! wavenc ! filesink location=OUT", to: folder + "/\(name).wav"))
        }
        let probes = ProbeAhead(paths: paths)
        #expect(try await probes.info(0).duration != nil)
        await probes.cancel()
        // What was probed stays known; what was not is probed no more.
        #expect(try await probes.info(0).path.hasSuffix("a.wav"))
        await #expect(throws: CancellationError.self) { try await probes.info(3) }
    }
}
