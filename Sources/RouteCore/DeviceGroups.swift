// DeviceGroups: the groups a person names and keeps (`route group add Downstairs Kitchen "Living Room"`), in
// $XDG_CONFIG_HOME/route/groups.json, and a group as the device that lists show and `--to` names.

import Foundation

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
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return config + "/route/groups.json"
    }

    private struct Stored: Codable {
        var groups: [DeviceGroup]
    }

    /// The groups kept, none when there is no file.
    /// - Throws: `RouteError` (`badInput`) when the file cannot be read or is not route's groups, saying where it is.
    public static func load() throws(RouteError) -> [DeviceGroup] {
        guard let data = FileManager.default.contents(atPath: file) else {
            guard FileManager.default.fileExists(atPath: file) else { return [] }
            throw RouteError(.notSetUp, "cannot read \(file); check its permissions")
        }
        do {
            return try JSONDecoder().decode(Stored.self, from: data).groups
        } catch {
            throw RouteError(.badInput, "\(file) does not hold route's groups (\(error.localizedDescription)); mend it, or remove it to start again")
        }
    }

    /// The kept group named `name` (any case), if there is one; nil as well when the groups cannot be read (a cast to
    /// a device is not refused over a broken groups file; `route group list` says what is wrong with it).
    public static func named(_ name: String) -> DeviceGroup? {
        (try? load())?.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Keeps `groups` in place of those kept, whole or not at all.
    /// - Throws: `RouteError` (`badInput`) when the file cannot be written.
    public static func save(_ groups: [DeviceGroup]) throws(RouteError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(Stored(groups: groups)), UserState.write(data, to: file) else {
            throw RouteError(.notSetUp, "cannot write \(file); check that its folder is writable")
        }
    }
}
