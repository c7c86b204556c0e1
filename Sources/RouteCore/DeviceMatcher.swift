// DeviceMatcher: turns what a person typed after `--to` into one device, or an error listing the candidates.

/// How a query matched a device, best first.
public enum DeviceMatch: Int, Sendable, Comparable {
    case id = 0, exactName, prefix, wordPrefix, close

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// Picks a device by id, exact name (any case), unique prefix, or close spelling — by any of its names (a merged
/// device answers to each of its routes' names).
public enum DeviceMatcher {
    /// The best-matching devices for `query` and how they matched; empty when nothing matches.
    public static func candidates(for query: String, in devices: [MediaDevice]) -> (DeviceMatch, [MediaDevice])? {
        let q = query.lowercased()
        guard !q.isEmpty else { return nil }
        let tiers: [(DeviceMatch, (MediaDevice) -> Bool)] = [
            (.id, { device in
                device.id == query || device.routes.contains { $0.id == query || $0.nativeID == query }
                    || device.deduplicationIDs.contains(query) || matchesAddress(query, of: device)
            }),
            (.exactName, { $0.names.contains { $0.lowercased() == q } }),
            (.prefix, { $0.names.contains { $0.lowercased().hasPrefix(q) } }),
            (.wordPrefix, { $0.names.contains { $0.lowercased().split(separator: " ").contains { $0.hasPrefix(q) } } }),
        ]
        for (match, predicate) in tiers {
            let found = devices.filter(predicate)
            if !found.isEmpty { return (match, found) }
        }
        // Close spelling: a typo or two (edit distance within a fifth of the query), best distance only.
        // Looser limits take "Fake Renderer" for "Lab Renderer".
        let limit = max(1, q.count / 5)
        let scored = devices.map { device in (device, device.names.map { editDistance(q, $0.lowercased()) }.min() ?? .max) }
            .filter { $0.1 <= limit }
        guard let best = scored.map(\.1).min() else { return nil }
        return (.close, scored.filter { $0.1 == best }.map(\.0))
    }

    /// Whether `query` is the address of one of the device's routes as a person would give it: the whole
    /// address (a description URL), its `host:port`, or its host alone.
    public static func matchesAddress(_ query: String, of device: MediaDevice) -> Bool {
        guard !query.isEmpty else { return false }
        return device.routes.contains { route in
            guard let address = route.address else { return false }
            if address == query { return true }
            var rest = Substring(address)
            if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
            let authority = rest.prefix { $0 != "/" }
            let host = authority.split(separator: ":").first.map(String.init) ?? String(authority)
            return query == String(authority) || query == host
        }
    }

    /// "This computer" when `query` names it: its name, its id, or a prefix of its name of three letters or more
    /// ("this"), which wins over any device on the network (`--to this` and the picker's `this` mean the same).
    public static func thisComputer(_ query: String, in local: [MediaDevice]) -> MediaDevice? {
        guard let (match, hits) = candidates(for: query, in: local), hits.count == 1,
              match <= .exactName || (match == .prefix && query.count >= 3) else { return nil }
        return hits[0]
    }

    /// The one device `query` names, or `RouteError.unknownDevice` / `.ambiguousDevice`.
    public static func pick(_ query: String, in devices: [MediaDevice]) throws(RouteError) -> MediaDevice {
        guard let (_, found) = candidates(for: query, in: devices) else {
            throw .unknownDevice(query: query, candidates: devices.map(\.name))
        }
        guard found.count == 1 else { throw .ambiguousDevice(query: query, matches: found.map(\.name)) }
        return found[0]
    }

    /// Levenshtein distance between two strings, by characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
