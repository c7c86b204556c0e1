// ResumePositions: where each file or URL stopped, kept in the user's state directory ($XDG_STATE_HOME/route/
// positions.json, 0600 in a 0700 folder), so that `--resume` starts there; an item played to its end is forgotten. A
// URL's password and query (a signed link's signature) are not written: the key holds a hash of them.

import Foundation
import RouteCore
import Synchronization

/// Remembers where items stopped, by path or URL. Thread-safe; written at most every few seconds while an item plays,
/// and at once when it stops.
public final class ResumePositions: Sendable {
    /// The user's store.
    public static let shared = ResumePositions(file: ResumePositions.defaultFile)

    /// `$XDG_STATE_HOME/route/positions.json` (`~/.local/state/route/positions.json`).
    public static var defaultFile: String { UserState.folder + "/positions.json" }

    /// Positions closer than this to an item's start or end are not worth resuming: the item starts over.
    public static let margin = 10.0
    /// The most items remembered: the oldest are forgotten first.
    public static let capacity = 1000

    private struct Record: Codable {
        var position: Double
        var updated: Date
    }

    private let file: String
    private let records = Mutex<(loaded: Bool, table: [String: Record], written: ContinuousClock.Instant?)>((false, [:], nil))

    /// A store kept in `file`.
    public init(file: String) { self.file = file }

    /// Where `key` stopped, if it is worth resuming.
    public func position(of key: String) -> Double? {
        records.withLock { state in
            load(&state)
            return state.table[Self.storedKey(key)]?.position
        }
    }

    /// The key kept for a path or URL: a path as it is; a URL with a password or a query as its scheme, host and path
    /// and a hash of the whole ("https://host/a.mp4#3f0c…"), so that no secret is written and two links stay two.
    static func storedKey(_ key: String) -> String {
        guard WebAddress.isWebURL(key), var parts = URLComponents(string: key),
              parts.user != nil || parts.password != nil || parts.query != nil else { return key }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return (parts.string ?? "") + "#" + StableName.of(key)
    }

    /// Notes `position` of `key` (of `duration`, when known): near the end it is forgotten, as a finished item;
    /// near the start it is not kept. `now` writes at once; otherwise at most every 5 s.
    public func note(_ key: String, position: Double, duration: Double?, now: Bool = false) {
        let key = Self.storedKey(key)
        records.withLock { state in
            load(&state)
            if position < Self.margin || duration.map({ position > $0 - Self.margin }) == true {
                guard state.table.removeValue(forKey: key) != nil else { return }
            } else {
                state.table[key] = Record(position: position, updated: Date())
            }
            if !now, let written = state.written, ContinuousClock.now - written < .seconds(5) { return }
            save(&state)
        }
    }

    /// Forgets `key` (it played to its end).
    public func forget(_ key: String) {
        let key = Self.storedKey(key)
        records.withLock { state in
            load(&state)
            guard state.table.removeValue(forKey: key) != nil else { return }
            save(&state)
        }
    }

    private func load(_ state: inout (loaded: Bool, table: [String: Record], written: ContinuousClock.Instant?)) {
        guard !state.loaded else { return }
        state.loaded = true
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        if let data = FileManager.default.contents(atPath: file), let table = try? decoder.decode([String: Record].self, from: data) {
            state.table = Dictionary(table.map { (Self.storedKey($0.key), $0.value) }, uniquingKeysWith: { $0.updated > $1.updated ? $0 : $1 })
            // A file written before keys were hashed, or that others may read: written again at once, its secrets gone.
            var info = stat()
            let open = stat(file, &info) == 0 && info.st_mode & 0o077 != 0
            if open || table.keys.contains(where: { Self.storedKey($0) != $0 }) { save(&state) }
        }
    }

    /// Writes the table (newest `capacity` items) to a temporary file renamed over the old one.
    private func save(_ state: inout (loaded: Bool, table: [String: Record], written: ContinuousClock.Instant?)) {
        if state.table.count > Self.capacity {
            let kept = state.table.sorted { $0.value.updated > $1.value.updated }.prefix(Self.capacity)
            state.table = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        state.written = .now
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(state.table) else { return }
        UserState.write(data, to: file)
    }
}

/// Follows one queue's statuses into a `ResumePositions`: the position of each item while it plays, kept when it
/// stops, forgotten when it ends by itself.
public final class ResumeRecorder: Sendable {
    private let store: ResumePositions
    private let keys: [String?]
    /// The last status seen playing or paused, by queue index.
    private let playing = Mutex<[Int: PlaybackStatus]>([:])

    /// A recorder for a queue whose items are `keys` (paths and URLs; nil for one with no place to come back to, a
    /// live stream), in order.
    public init(store: ResumePositions, keys: [String?]) {
        self.store = store
        self.keys = keys
    }

    /// Hears one of the queue's statuses.
    public func hear(_ status: QueueStatus) {
        guard keys.indices.contains(status.index), let key = keys[status.index] else { return }
        let playback = status.playback
        switch playback.state {
        case .playing, .paused:
            playing.withLock { $0[status.index] = playback }
            store.note(key, position: playback.position, duration: playback.duration)
        default:
            guard playback.isFinal else { return }
            let last = playing.withLock { $0.removeValue(forKey: status.index) }
            if playback.state == .ended && playback.endReason == .finished {
                store.forget(key)
            } else if let last {
                // The stopped device's own position is often 0: where it stopped is the last status seen playing, carried
                // on to now (a Cast receiver says nothing while it plays on).
                store.note(key, position: last.position(at: Date()), duration: last.duration, now: true)
            }
        }
    }
}

/// Where each item of a queue starts: `--start` for the first item (once: not again when a loop comes round), else
/// where it stopped last time (`--resume`), else its beginning.
public final class StartPositions: Sendable {
    private let first: Mutex<Double?>
    private let firstItem: Int
    private let keys: [String]
    private let store: ResumePositions?

    /// Starts for a queue of `keys`: item `firstItem` (the one a cast begins with) at `first` the first time it
    /// plays, each item at its remembered place when `store` is given.
    public init(first: Double?, firstItem: Int = 0, keys: [String], store: ResumePositions?) {
        self.first = Mutex(first)
        self.firstItem = firstItem
        self.keys = keys
        self.store = store
    }

    /// Where item `index` starts (nil: at its beginning).
    public func position(of index: Int) -> Double? {
        if index == firstItem, let start = first.withLock({ $0.take() }) { return start }
        guard let store, keys.indices.contains(index) else { return nil }
        return store.position(of: keys[index])
    }
}
