// GroupTests: `route group` and a group cast without the network — the groups file, its errors, a kept group listed
// as a device, and a cast to a group one of whose members is not there (This computer plays; the other is said).

import Foundation
import RouteCore
import RouteTestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct GroupTests {
    /// What `route group add` refuses, each in one line with its exit code, and an unknown action or group.
    @Test func aGroupNeedsSeveralDevicesThatAnswerAndANameOfItsOwn() async throws {
        try await inSandbox { sandbox in
            let one = try await sandbox.run(["group", "add", "Pair", "This computer", "--timeout", "0.5"])
            #expect(one.status == 3 && one.stderrLines.count == 1 && one.stderr.contains("name at least two"), "\(one)")
            let missing = try await sandbox.run(["group", "add", "Pair", "this", "Kitchen", "--timeout", "0.5"])
            #expect(missing.status == 4 && missing.stderrLines.count == 1 && missing.stderr.contains("no device matches \"Kitchen\""), "\(missing)")
            let taken = try await sandbox.run(["group", "add", "This computer", "this", "this", "--timeout", "0.5"])
            #expect(taken.status == 3 && taken.stderr.contains("a device is named \"This computer\""), "\(taken)")
            let action = try await sandbox.run(["group", "rename", "Pair"])
            #expect(action.status == 2 && action.stderr.contains("unknown action \"rename\""), "\(action)")
            let unknown = try await sandbox.run(["group", "remove", "Pair"])
            #expect(unknown.status == 4 && unknown.stderr.contains("no group is named \"Pair\" (none is kept)"), "\(unknown)")
            let none = try await sandbox.run(["group", "list"])
            #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.contains("no groups are kept"), "\(none)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.root + "/config/route/groups.json"), "nothing was kept")
        }
    }

    /// A kept group whose second member is not on the network: listed as a device and by `group list` (which says so),
    /// cast to by its name (This computer plays, the other is said once), and forgotten member by member.
    @Test func aKeptGroupIsListedCastToWithoutAMissingMemberAndForgotten() async throws {
        try await inSandbox { sandbox in
            let kept = DeviceGroup(name: "Pair", members: [DeviceGroup.Member(.thisComputer),
                                                          .init(id: "upnp:uuid:kitchen", name: "Kitchen")])
            try write([kept], sandbox)
            let list = try await sandbox.run(["group", "list", "--timeout", "0.5"])
            #expect(list.status == 0 && list.stdout == "Pair: This computer, Kitchen (not on the network)\n", "\(list)")
            let devices = try await sandbox.run(["devices", "--json", "--timeout", "0.5"])
            let listed = try JSONDecoder().decode([MediaDevice].self, from: Data(devices.stdout.utf8))
            let group = try #require(listed.first { $0.name == "Pair" }, "\(devices)")
            #expect(group.kind == .group && group.address == "This computer + Kitchen", "\(group)")
            let wav = try await sandbox.wav("tone.wav", seconds: 1)
            let cast = try await sandbox.run(["cast", wav, "--to", "Pair", "--timeout", "0.5"])
            #expect(cast.status == 0 && cast.stdoutLines.last == "ended: tone on Pair", "\(cast)")
            #expect(cast.stderrLines == ["route cast: Kitchen, of Pair, was not found; Pair plays without it"], "\(cast)")
            let less = try await sandbox.run(["group", "remove", "pair", "Kitchen"])
            #expect(less.status == 0 && less.stdout == "Pair: This computer\n", "\(less)")
            let gone = try await sandbox.run(["group", "remove", "Pair"])
            #expect(gone.status == 0 && gone.stdout == "Pair: forgotten\n", "\(gone)")
            #expect(try JSONDecoder().decode([String: [DeviceGroup]].self, from: Data(contentsOf: URL(fileURLWithPath: file(sandbox)))) == ["groups": []])
        }
    }

    /// A groups file that is not route's: `group list` says where it is and what to do; `devices` still lists the
    /// devices, and a cast to a device is not refused over it.
    @Test func aBrokenGroupsFileIsSaidAndStopsNothingElse() async throws {
        try await inSandbox { sandbox in
            try FileManager.default.createDirectory(atPath: sandbox.root + "/config/route", withIntermediateDirectories: true)
            try Data("{\"groups\": [{\"name\": 3}]}".utf8).write(to: URL(fileURLWithPath: file(sandbox)))
            let list = try await sandbox.run(["group", "list"])
            #expect(list.status == 3 && list.stderrLines.count == 1 && list.stderr.contains("groups.json does not hold route's groups")
                    && list.stderr.contains("remove it to start again"), "\(list)")
            let devices = try await sandbox.run(["devices", "--timeout", "0.5"])
            #expect(devices.status == 0 && devices.stdout.contains("This computer") && devices.stderr.contains("groups are not listed"), "\(devices)")
            let wav = try await sandbox.wav("tone.wav", seconds: 0.5)
            let cast = try await sandbox.run(["cast", wav, "--to", "this"])
            #expect(cast.status == 0 && cast.stderr.isEmpty, "\(cast)")
        }
    }

    /// A device's delay: what its protocol typically holds back until one is set, in milliseconds or seconds, and
    /// forgotten with `typical`; a delay that is none is a usage error.
    @Test func aDevicesDelayIsTypicalUntilSetAndForgotten() async throws {
        try await inSandbox { sandbox in
            func delay(_ words: String...) async throws -> RouteResult {
                try await sandbox.run(["group", "delay", "this"] + words + ["--timeout", "0.5"])
            }
            let typical = try await delay()
            #expect(typical.status == 0 && typical.stdout == "This computer: holds its sound back 0 ms (typical of local)\n", "\(typical)")
            let set = try await delay("0.12s")
            #expect(set.status == 0 && set.stdout == "This computer: holds its sound back 120 ms (set with route group delay)\n", "\(set)")
            let kept = try await delay()
            #expect(kept.stdout == set.stdout, "\(kept)")
            let negative = try await delay("-20")
            #expect(negative.stdout.contains("holds its sound back -20 ms (set"), "\(negative)")
            let forgotten = try await delay("typical")
            #expect(forgotten.stdout == typical.stdout, "\(forgotten)")
            let wrong = try await delay("soon")
            #expect(wrong.status == 2 && wrong.stderr.contains("\"soon\" is not a delay"), "\(wrong)")
        }
    }

    private func file(_ sandbox: Sandbox) -> String { sandbox.root + "/config/route/groups.json" }

    private func write(_ groups: [DeviceGroup], _ sandbox: Sandbox) throws {
        try FileManager.default.createDirectory(atPath: sandbox.root + "/config/route", withIntermediateDirectories: true)
        try JSONEncoder().encode(["groups": groups]).write(to: URL(fileURLWithPath: file(sandbox)))
    }
}
