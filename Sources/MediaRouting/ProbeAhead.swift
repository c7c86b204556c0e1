// ProbeAhead: the files of a queue probed in order, a couple ahead of the one playing, so that a long queue starts
// at once and the next item is ready when its turn comes.

import Foundation
import RouteMedia

/// Probes a queue's files in order, a couple ahead of the one asked for, off the cooperative pool (GstDiscoverer
/// blocks): a long queue starts playing as soon as its first file is probed.
public actor ProbeAhead {
    /// The files, in queue order.
    public nonisolated let paths: [String]
    private var probes: [Int: Task<MediaInfo, any Error>] = [:]
    /// How many files past the one asked for are probed meanwhile.
    public static let lookahead = 2

    /// A queue of `paths`; nothing is probed until `info(_:)`.
    public init(paths: [String]) { self.paths = paths }

    /// The file names without their extensions, shown until each file is probed.
    public nonisolated var titles: [String] { paths.map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent } }

    /// The probe of file `index`; starts the next ones.
    /// - Throws: `MediaError` when the file cannot be probed (missing, not media).
    public func info(_ index: Int) async throws -> MediaInfo {
        for ahead in index...min(paths.count - 1, index + Self.lookahead) where probes[ahead] == nil {
            let path = paths[ahead]
            probes[ahead] = Task { try await MediaProbe.probe(path) }
        }
        return try await probes[index]!.value
    }
}
