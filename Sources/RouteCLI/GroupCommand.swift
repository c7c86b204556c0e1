// GroupCommand: `route group add|list|remove` — the groups a person keeps (DeviceGroups), their devices found through
// whichever source the CLI hears devices from (the route service, or a router in this process).

import FoundationEssentials
import Glibc
import RouteCore

/// `route group`: keeps, lists and forgets groups of devices.
package enum GroupCommand {
    /// Runs `route group ACTION …`; `source` is asked for devices only by the actions that need them.
    package static func run(_ parsed: ParsedArguments, devices source: () async throws -> any DeviceSource) async throws -> ExitCode {
        let words = parsed.positionals
        // The devices heard, without the kept groups the route service lists among them (a group holds devices).
        func heard() async throws -> [MediaDevice] {
            try await source().devices(within: try CommonOptions.timeout(parsed)).filter { $0.primary.provider != DeviceGroup.provider }
        }
        switch words[0] {
        case "add":
            guard words.count >= 3 else { throw UsageError(description: "group add needs a NAME and at least one DEVICE; usage: \(Specs.group.usage)") }
            let devices = try await heard()
            let group = try add(Array(words[2...]), to: words[1], heard: devices)
            printOutput(line(group, heard: devices))
        case "list":
            guard words.count == 1 else { throw UsageError(description: "group list takes no NAME; usage: \(Specs.group.usage)") }
            let groups = try DeviceGroups.load()
            if parsed.has("json") {
                print(try JSONOutput.string(groups))
            } else if groups.isEmpty {
                printError("route group: no groups are kept; make one with `route group add NAME DEVICE DEVICE…`")
            } else {
                let devices = try await heard()
                for group in groups { printOutput(line(group, heard: devices)) }
            }
        case "remove":
            guard words.count >= 2 else { throw UsageError(description: "group remove needs a NAME; usage: \(Specs.group.usage)") }
            if let left = try remove(Array(words[2...]), from: words[1]) {
                printOutput(line(left, heard: nil))
            } else {
                printOutput("\(words[1]): forgotten")
            }
        case "delay":
            guard (2...3).contains(words.count) else { throw UsageError(description: "group delay needs a DEVICE, and a delay to set; usage: \(Specs.group.usage)") }
            let seconds = try words.count == 3 ? delay(words[2]) : nil
            let device = try DeviceMatcher.pick(words[1], in: try await heard())
            if let seconds { try DeviceGroups.setDelay(seconds, of: device) }
            printOutput(delayLine(device, set: DeviceGroups.delay(of: device, in: try DeviceGroups.delays())))
        default:
            throw UsageError(description: "unknown action \"\(words[0])\": add, list, remove or delay; usage: \(Specs.group.usage)")
        }
        return .success
    }

    /// Keeps `queries` (each naming one of the devices `heard`) in the group `name`, made if it is new.
    /// - Throws: `RouteError` when a device is not heard or is ambiguous, names a group, the name is a device's, or
    ///   the group would have fewer than two devices.
    static func add(_ queries: [String], to name: String, heard: [MediaDevice]) throws -> DeviceGroup {
        let trimmed = name.trimmingSpaces
        guard !trimmed.isEmpty, DisplayText.clean(trimmed) == trimmed else {
            throw RouteError(.badInput, "\"\(name)\" cannot be a group's name: give it letters a person can type")
        }
        if let device = heard.first(where: { $0.names.contains { $0.equalsIgnoringCase(trimmed) } }) {
            throw RouteError(.badInput, "a device is named \"\(device.name)\": --to would not know which is meant; give the group another name")
        }
        var groups = try DeviceGroups.load()
        let index = groups.firstIndex { $0.name.equalsIgnoringCase(trimmed) }
        var group = index.map { groups[$0] } ?? DeviceGroup(name: trimmed, members: [])
        for query in queries {
            if let other = groups.first(where: { $0.name.equalsIgnoringCase(query) }) {
                throw RouteError(.badInput, "\"\(other.name)\" is a group; a group holds devices, not groups")
            }
            let device = try DeviceMatcher.pick(query, in: heard)
            if !group.members.contains(where: { $0.id == device.id }) { group.members.append(DeviceGroup.Member(device)) }
        }
        guard group.members.count >= 2 else {
            throw RouteError(.badInput, "a group plays on several devices; name at least two (\(group.members.map(\.name).joined(separator: ", ")) so far)")
        }
        if let index { groups[index] = group } else { groups.append(group) }
        try DeviceGroups.save(groups)
        return group
    }

    /// Forgets the group `name`, or only the members `queries` name (by name, any case); returns what is left of it,
    /// nil when it is forgotten whole (no member left).
    /// - Throws: `RouteError` when no group or member is so named.
    static func remove(_ queries: [String], from name: String) throws -> DeviceGroup? {
        var groups = try DeviceGroups.load()
        guard let index = groups.firstIndex(where: { $0.name.equalsIgnoringCase(name) }) else {
            let kept = groups.isEmpty ? "none is kept" : "kept: " + groups.map { "\"\($0.name)\"" }.joined(separator: ", ")
            throw RouteError(.unknownDevice, "no group is named \"\(name)\" (\(kept)); `route group list` shows them")
        }
        for query in queries {
            guard let member = groups[index].members.firstIndex(where: { $0.name.equalsIgnoringCase(query) || $0.id == query }) else {
                throw RouteError(.unknownDevice, "\(groups[index].name) has no device named \"\(query)\" (it has \(groups[index].members.map { "\"\($0.name)\"" }.joined(separator: ", ")))")
            }
            groups[index].members.remove(at: member)
        }
        let left: DeviceGroup? = queries.isEmpty || groups[index].members.isEmpty ? nil : groups[index]
        if left == nil { groups.remove(at: index) } else if let left { groups[index] = left }
        try DeviceGroups.save(groups)
        return left
    }

    /// The seconds `text` says (`120ms`, `0.12s`, `-20`: milliseconds when it names no unit); nil for `typical` (the
    /// protocol's own, the delay set forgotten).
    static func delay(_ text: String) throws(UsageError) -> Double?? {
        if text == "typical" { return .some(nil) }
        let lowered = text.lowercased()
        let (number, scale) = lowered.hasSuffix("ms") ? (lowered.dropLast(2), 0.001) : lowered.hasSuffix("s") ? (lowered.dropLast(), 1.0) : (Substring(lowered), 0.001)
        guard let value = Double(number.hasPrefix("+") ? number.dropFirst() : number), value.isFinite, abs(value * scale) <= 5 else {
            throw UsageError(description: "\"\(text)\" is not a delay: give milliseconds (120ms, -20ms) or seconds (0.12s) within 5 s, or typical")
        }
        return .some(value * scale)
    }

    /// `Lab AirPlay: holds its sound back 355 ms (typical of AirPlay)`, or `… 120 ms (set with route group delay)`.
    static func delayLine(_ device: MediaDevice, set: Double?) -> String {
        let seconds = set ?? StartDelays.typical(of: device.primary)
        let why = set == nil ? "typical of \(device.protocols.first ?? "its protocol")" : "set with route group delay"
        return "\(DisplayText.clean(device.name)): holds its sound back \(Int((seconds * 1000).rounded())) ms (\(why))"
    }

    /// `Downstairs: Kitchen, Living Room (not on the network)`; without `heard`, the members alone.
    static func line(_ group: DeviceGroup, heard: [MediaDevice]?) -> String {
        let members = group.members.map { member in
            let found = heard.map { list in list.contains { $0.routes.contains { $0.id == member.id } } } ?? true
            return DisplayText.clean(member.name) + (found ? "" : " (not on the network)")
        }
        return "\(DisplayText.clean(group.name)): \(members.joined(separator: ", "))"
    }
}
