// GroupTargets: what `--to` names when a cast plays on several devices at once — `--to` given again, or the name of a
// group the person keeps (`route group`).

import RouteCore

/// The devices a group cast is asked to play on, before any is found.
package struct GroupTargets: Sendable {
    /// One device asked for: as a person typed it after `--to`, or as a kept group holds it.
    package enum Member: Sendable {
        case query(String)
        case kept(DeviceGroup.Member, group: String)
    }

    /// The group's name: a kept group's, else the names given, joined ("Kitchen + Hall").
    package let name: String
    /// What is asked for, in order, each device once.
    package let members: [Member]
    /// Whether it is a group the person keeps and named alone (its members that cannot be found are left out; a
    /// device named with `--to` must be found).
    package let isKept: Bool

    /// The targets of `parsed`'s `--to`; nil when it names one device or none.
    package init?(_ parsed: ParsedArguments) {
        let queries = parsed.all("to")
        if queries.count == 1, let group = DeviceGroups.named(queries[0]) {
            name = group.name
            members = group.members.map { .kept($0, group: group.name) }
            isKept = true
            return
        }
        guard queries.count > 1 else { return nil }
        var members: [Member] = []
        var names: [String] = []
        for query in queries {
            if let group = DeviceGroups.named(query) {
                members += group.members.map { .kept($0, group: group.name) }
                names.append(group.name)
            } else {
                members.append(.query(query))
                names.append(query)
            }
        }
        var seen = Set<String>()
        self.members = members.filter { member in
            switch member {
            case .query(let query): seen.insert("q:" + query.lowercased()).inserted
            case .kept(let kept, _): seen.insert("id:" + kept.id).inserted
            }
        }
        name = names.joined(separator: " + ")
        isKept = false
    }

    /// Whether `parsed` casts to a group (several `--to`, or a kept group's name).
    package static func apply(to parsed: ParsedArguments) -> Bool { GroupTargets(parsed) != nil }
}
