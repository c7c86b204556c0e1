// ProbeAhead: the items of a queue probed in order, a couple ahead of the one playing, so that a long queue starts
// at once and the next item is ready when its turn comes.

import Foundation
import RouteCore
import RouteMedia

/// Probes a queue's items in order, a couple ahead of the one asked for, off the cooperative pool (GstDiscoverer
/// blocks): a long queue starts playing as soon as its first item is probed.
public actor ProbeAhead {
    /// The queue's entries, in order.
    public nonisolated let entries: [QueueEntry]
    private var probes: [Int: Task<MediaInfo, any Error>] = [:]
    /// The cast is over: nothing more is probed.
    private var cancelled = false
    /// The device the queue plays on, once known: a web page's format is chosen for it.
    private var device: MediaDevice?
    /// How many items past the one asked for are probed meanwhile.
    public static let lookahead = 2

    /// What each item is called until it is probed.
    public nonisolated let titles: [String]

    /// A queue of `entries`; nothing is probed until `info(_:)`.
    public init(entries: [QueueEntry]) {
        self.entries = entries
        titles = entries.map(\.displayTitle)
    }

    /// A queue of `paths`, called `titles` until probed (by default the file names without their extensions): the
    /// titles then name files without a title tag (a descriptor's path names nothing).
    public init(paths: [String], titles: [String]? = nil) {
        self.init(entries: paths.enumerated().map { QueueEntry($0.element, title: titles?[$0.offset]) })
    }

    /// A queue of `entries` whose first item is probed now: leading items a folder or playlist held that cannot be
    /// played are left out (each told to `skip` with why); a named one that cannot be played is thrown, as is the last.
    /// A web page first is left to be probed once the device is known.
    public static func probingFirst(_ entries: [QueueEntry], skip: (String) -> Void) async throws -> ProbeAhead {
        var remaining = entries[...]
        while true {
            let probes = ProbeAhead(entries: Array(remaining))
            if probes.isPage(0) { return probes }
            do {
                _ = try await probes.info(0)
                return probes
            } catch let error where !remaining[remaining.startIndex].isNamed && remaining.count > 1 && !(error is CancellationError) {
                skip("skipping \(remaining[remaining.startIndex].displayTitle): \(error)")
                remaining = remaining.dropFirst()
            }
        }
    }

    /// The queue plays on `device`: a web page's media is the best format it takes as it is.
    public func playing(on device: MediaDevice) {
        self.device = device
        // A page's format chosen before the device was known is chosen again.
        for (index, probe) in probes where !entries[index].formats.isEmpty {
            probe.cancel()
            probes[index] = nil
        }
    }

    /// Whether item `index` is a web page, whose format is best chosen once the device is known.
    public nonisolated func isPage(_ index: Int) -> Bool { !entries[index].formats.isEmpty }

    /// Ends the probes under way or ahead and starts no more (the cast they were for is over): a probe of a slow URL
    /// or a page does not outlive its cast.
    public func cancel() {
        cancelled = true
        for probe in probes.values { probe.cancel() }
    }

    /// The probe of item `index`; starts the next ones.
    /// - Throws: `MediaError` when the item cannot be probed (missing, not media, a URL that fails);
    ///   `CancellationError` once `cancel()` was called.
    public func info(_ index: Int) async throws -> MediaInfo {
        if cancelled, probes[index] == nil { throw CancellationError() }
        for ahead in index...min(entries.count - 1, index + Self.lookahead) where probes[ahead] == nil && !cancelled {
            let entry = entries[ahead]
            let chosen = WebPage.choose(entry.formats, for: device)?.url ?? entry.location
            probes[ahead] = Task {
                // An entry a playlist on the web named is followed by route's rules first, and then probed where it is.
                var location = chosen
                if let playlist = entry.webPlaylist { location = try await CastSources.followed(chosen, namedBy: playlist) }
                var info = try await MediaProbe.probe(location, followsRedirects: entry.webPlaylist == nil)
                // A page's title is the page's; a playlist's or an app's names what has no tag.
                if !entry.formats.isEmpty || info.title == nil { info.title = entry.title ?? info.title }
                if info.artist == nil { info.artist = entry.artist }
                if info.duration == nil || info.duration == 0 { info.duration = entry.duration }
                if info.artwork == nil { info.artwork = entry.artwork }
                info.isLive = info.isLive || entry.isLive
                return info
            }
        }
        return try await probes[index]!.value
    }
}
