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

    /// What each item is called until it is probed.
    public nonisolated let titles: [String]
    /// Whether `titles` were given: they then name files without a title tag (a descriptor's path names nothing).
    private let named: Bool

    /// A queue of `paths`, called `titles` until probed (by default the file names without their extensions); nothing
    /// is probed until `info(_:)`.
    public init(paths: [String], titles: [String]? = nil) {
        self.paths = paths
        self.titles = titles ?? paths.map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent }
        named = titles != nil
    }

    /// The probe of file `index`; starts the next ones.
    /// - Throws: `MediaError` when the file cannot be probed (missing, not media).
    public func info(_ index: Int) async throws -> MediaInfo {
        for ahead in index...min(paths.count - 1, index + Self.lookahead) where probes[ahead] == nil {
            let path = paths[ahead], title = named ? titles[ahead] : nil
            probes[ahead] = Task {
                var info = try await MediaProbe.probe(path)
                if info.title == nil { info.title = title }
                return info
            }
        }
        return try await probes[index]!.value
    }
}
