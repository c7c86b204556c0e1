// MemberCommandTests: a command for one device of a group cast that plays in a terminal (`route volume 40 --to MEMBER`)
// — what the control socket says it takes, and a `route cast` too old to take it is not sent it.

import Foundation
import RouteControl
import RouteCore
import Testing

@Suite struct MemberCommandTests {
    private let member = Self.device("upnp", "uuid:kitchen", "Kitchen", .speaker)
    private let group = Self.device("group", "both", "Both", .group)

    private static func device(_ provider: String, _ id: String, _ name: String, _ kind: MediaDevice.Kind) -> MediaDevice {
        MediaDevice(routes: [MediaRoute(provider: provider, nativeID: id, name: name, kind: kind, capabilities: .all,
                                        volumeControl: .absolute, accepts: .anything)])
    }

    @Test func aGroupCastsReplySaysItTakesAMembersCommandAndAnOlderOnesDoesNot() throws {
        let reply = ControlReply(ok: true, device: group, members: [member])
        #expect(reply.takesMember == true)
        #expect(ControlReply(ok: true, device: member).takesMember == nil, "a cast on one device has no members")
        // What a `route cast` from before member commands answers: no such field.
        var old = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(reply)) as! [String: Any]
        old["takesMember"] = nil
        let decoded = try JSONDecoder().decode(ControlReply.self, from: try JSONSerialization.data(withJSONObject: old))
        #expect(decoded.takesMember == nil && decoded.members?.count == 1)
    }

    @Test func aRequestNamesTheMemberItIsFor() throws {
        let request = try JSONDecoder().decode(ControlRequest.self, from: try JSONEncoder().encode(ControlRequest(.setVolume(0.4), member: member.id)))
        #expect(request.member == member.id)
        // What an older `route` sends: no such field.
        var old = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(ControlRequest(.pause))) as! [String: Any]
        old["member"] = nil
        #expect(try JSONDecoder().decode(ControlRequest.self, from: try JSONSerialization.data(withJSONObject: old)).member == nil)
    }

    @Test func anOlderRouteCastIsNotSentAMembersVolume() async throws {
        // An older cast would apply it to the whole group: refused before anything is sent (the socket is not there).
        let cast = OurCast(device: group, reach: .socket("/nonexistent/route-test.sock"), takesMemberCommands: false)
        await #expect {
            try await cast.perform(SessionCommand.setVolume(0.4), onMember: member)
        } throws: { error in
            "\(error)".contains("older than this route") && "\(error)".contains("start the cast again")
        }
    }
}
