// CastCertificates: the certificate each Cast receiver showed the first time route met it, kept in the user's state
// ($XDG_STATE_HOME/route/cast-certificates.json; the route service keeps it too): when two announcements claim one Cast
// id, the one with the known certificate is that receiver; with neither known, route does not choose by name.

import Foundation
import RouteCore
import Synchronization

/// Certificates of Cast receivers by Cast id, remembered on first use.
final class CastCertificates: Sendable {
    /// The user's store.
    static let shared = CastCertificates(file: UserState.folder + "/cast-certificates.json")
    /// The most receivers remembered (a network may announce thousands of ids): the oldest go first.
    static let capacity = 512

    private struct Record: Codable {
        var fingerprint: String
        var seen: Date
    }
    private let file: String
    /// Serialises this process's reads and writes (other route processes write the same file: each write merges).
    private let lock = Mutex(())

    init(file: String) { self.file = file }

    /// The certificate `id` showed when route first met it; nil when it never did.
    func known(_ id: String) -> String? {
        lock.withLock { _ in read()[id]?.fingerprint }
    }

    /// Remembers `fingerprint` as `id`'s, unless another is known for it already.
    func remember(_ id: String, fingerprint: String) {
        lock.withLock { _ in
            var records = read()
            guard records[id] == nil else { return }
            records[id] = Record(fingerprint: fingerprint, seen: Date())
            if records.count > Self.capacity {
                records = Dictionary(uniqueKeysWithValues: records.sorted { $0.value.seen > $1.value.seen }.prefix(Self.capacity).map { ($0.key, $0.value) })
            }
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.sortedKeys]
            if let data = try? encoder.encode(records) { UserState.write(data, to: file) }
        }
    }

    /// The file's records, as another route process may have left them.
    private func read() -> [String: Record] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return FileManager.default.contents(atPath: file).flatMap { try? decoder.decode([String: Record].self, from: $0) } ?? [:]
    }
}
