// DeviceGroups: the groups a person names and keeps (`route group add Downstairs Kitchen "Living Room"`) and the delay
// set for a device (`route group delay`), in $XDG_CONFIG_HOME/route/groups.json; a group as the device that lists
// show and `--to` names; and the devices a group cast is asked for (GroupTargets).

import FoundationEssentials
import Glibc

/// Devices a person named together, to play as one (`--to Downstairs`).
public struct DeviceGroup: Sendable, Hashable, Codable {
    /// One device of a group: the id of the route it was found by (route ids are stable across runs and survive a
    /// device gaining other routes) and the name it had then, for lists and for a device whose id changed.
    public struct Member: Sendable, Hashable, Codable {
        public var id: String
        public var name: String
        /// The member `device` makes.
        public init(_ device: MediaDevice) {
            self.init(id: device.id, name: device.name)
        }
        /// The member of the route `id`, named `name`.
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// The name a person types after `--to`.
    public var name: String
    /// Its devices, in the order they were added.
    public var members: [Member]

    /// A group named `name` of `members`.
    public init(name: String, members: [Member]) {
        self.name = name
        self.members = members
    }

    /// The provider name of a group's one route: no provider plays it; a group cast plays each member.
    public static let provider = "group"

    /// Its device's id: `group:` and its name in lower case.
    public var id: String { Self.provider + ":" + name.lowercased() }

    /// The group as a device: kind `group`, one route of its own whose address names its members, able to show what any
    /// member shows (`among`: the devices heard now; a member not among them adds nothing but its name).
    public func device(among devices: [MediaDevice]) -> MediaDevice {
        let found = members.compactMap { member in devices.first { $0.routes.contains { $0.id == member.id } } }
        var capabilities: MediaDevice.Capabilities = found.reduce([]) { $0.union($1.capabilities) }
        if found.isEmpty { capabilities = .all }
        let route = MediaRoute(provider: Self.provider, nativeID: name.lowercased(), name: name, kind: .group,
                               address: members.map(\.name).joined(separator: " + "), capabilities: capabilities,
                               volumeControl: found.map(\.volumeControl).max() ?? .absolute, accepts: .anything)
        return MediaDevice(routes: [route])
    }
}

/// The user's groups, kept in `groups.json` in route's configuration folder.
public enum DeviceGroups {
    /// `$XDG_CONFIG_HOME/route/groups.json` (`~/.config/route/groups.json`).
    public static var file: String {
        let environment = ProcessInfo.processInfo.environment
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? UserState.home + "/.config"
        return config + "/route/groups.json"
    }

    private struct Stored: Codable {
        var groups: [DeviceGroup] = []
        /// Seconds of sound a device holds back beyond others, by route id (in place of what its protocol typically does).
        var delays: [String: Double]?
    }

    /// The groups kept, none when there is no file.
    /// - Throws: `RouteError` (`badInput`) when the file cannot be read or is not route's groups, saying where it is.
    public static func load() throws(RouteError) -> [DeviceGroup] { try stored().groups }

    /// The delays set with `route group delay`: seconds a device holds its sound back, by the id of a route of it.
    public static func delays() throws(RouteError) -> [String: Double] { try stored().delays ?? [:] }

    /// The delay set for `device` (by any of its routes), if any.
    public static func delay(of device: MediaDevice, in delays: [String: Double]) -> Double? {
        device.routes.lazy.compactMap { delays[$0.id] }.first
    }

    /// Keeps `seconds` as `device`'s delay (under its id; nil forgets it, under any of its routes).
    /// - Throws: `RouteError` when the file cannot be read or written.
    public static func setDelay(_ seconds: Double?, of device: MediaDevice) throws(RouteError) {
        var kept = try stored()
        var delays = kept.delays ?? [:]
        for route in device.routes { delays[route.id] = nil }
        delays[device.id] = seconds
        kept.delays = delays.isEmpty ? nil : delays
        try write(kept)
    }

    private static func stored() throws(RouteError) -> Stored {
        guard let data = FileManager.default.contents(atPath: file) else {
            guard FileManager.default.fileExists(atPath: file) else { return Stored() }
            throw RouteError(.notSetUp, "cannot read \(file); check its permissions")
        }
        do {
            return try JSONDecoder().decode(Stored.self, from: data)
        } catch {
            throw RouteError(.badInput, "\(file) does not hold route's groups (\(error)); mend it, or remove it to start again")
        }
    }

    /// The kept group named `name` (any case) or of that id (`group:NAME`, as its device has), if there is one; nil as
    /// well when the groups cannot be read (a cast to a device is not refused over a broken groups file; `route group
    /// list` says what is wrong with it).
    public static func named(_ name: String) -> DeviceGroup? {
        (try? load())?.first { $0.name.equalsIgnoringCase(name) || $0.id == name }
    }

    /// `devices` and, after them, the kept groups as devices (none when the groups cannot be read).
    public static func listed(with devices: [MediaDevice]) -> [MediaDevice] {
        devices + ((try? load()) ?? []).map { $0.device(among: devices) }
    }

    /// Keeps `groups` in place of those kept, whole or not at all.
    /// - Throws: `RouteError` (`badInput`) when the file cannot be written.
    public static func save(_ groups: [DeviceGroup]) throws(RouteError) {
        var kept = try stored()
        kept.groups = groups
        try write(kept)
    }

    private static func write(_ kept: Stored) throws(RouteError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(kept), UserState.write(data, to: file) else {
            throw RouteError(.notSetUp, "cannot write \(file); check that its folder is writable")
        }
    }
}

/// What a device of each protocol typically holds back between being played and its sound, beyond a DLNA renderer
/// (gmediarender, the reference): measured in the lab with bench/multiroom, at each protocol's first play after a load,
/// as heard (shairport-sync's output is taken 0.2 s after it writes it: the buffer a sound card holds).
public enum StartDelays {
    /// AirPlay (route's plugin to shairport-sync): bench/multiroom heard it 353 ms after gmediarender, with both
    /// played at one instant (155 ms of it written 0.2 s ahead by shairport-sync's stdout output).
    public static let airPlay = 0.355

    /// The seconds `route`'s protocol typically holds sound back (0 but for AirPlay: the Cast receiver played 5 ms
    /// ahead of gmediarender, which is within what a group is asked to hold).
    public static func typical(of route: MediaRoute) -> Double {
        route.isReached(via: "airplay") ? airPlay : 0
    }
}

/// What a device of each protocol typically holds desktop audio's live stream back beyond a DLNA renderer (gmediarender,
/// the reference), as heard: bench/sink's click into the sink to the device's output, in the lab — gmediarender
/// 0.042 s, the Cast receiver 0.066 s, shairport-sync through route's AirPlay plugin 0.27–0.29 s — then set so that
/// bench/multiroom's sink pairs sound together. (Not StartDelays: a live stream is played as it comes, without the
/// start a file's first play waits for.)
public enum LiveDelays {
    /// AirPlay: the plugin's timeline plays sound 0.25 s after it reaches the plugin.
    public static let airPlay = 0.25
    /// Cast: the lab's receiver buffers a little more than gmediarender.
    public static let cast = 0.036

    /// The seconds `route`'s protocol typically holds a live stream back beyond a DLNA renderer.
    public static func typical(of route: MediaRoute) -> Double {
        route.isReached(via: "airplay") ? airPlay : route.isReached(via: "cast") ? cast : 0
    }
}

/// The devices a group cast is asked to play on, before any is found.
public struct GroupTargets: Sendable {
    /// One device asked for: as a person typed it after `--to`, or as a kept group holds it.
    public enum Member: Sendable {
        case query(String)
        case kept(DeviceGroup.Member, group: String)
    }

    /// The group's name: a kept group's, else the names given, joined ("Kitchen + Hall").
    public let name: String
    /// What is asked for, in order, each device once.
    public let members: [Member]
    /// Whether it is a group the person keeps and named alone (its members that cannot be found are left out; a
    /// device named with `--to` must be found).
    public let isKept: Bool

    /// The targets `queries` name (each a device, or a kept group's name); nil when they name one device or none.
    public init?(queries: [String]) {
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
}
