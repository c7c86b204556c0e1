// SessionCommandTests: the one command vocabulary — every command is a session method that the service reads back as
// the same command, bad arguments are InvalidArgs, and `route WORD VALUE` says what a word takes.

import RouteClient
import RouteCore
import RouteGIO
import Testing

@Suite struct SessionCommandTests {
    static let commands: [SessionCommand] = [
        .play, .pause, .togglePause, .stop, .next, .seek(.absolute(90)), .seek(.relative(-10)), .seek(.relative(30)),
        .setVolume(0.4), .changeVolume(-0.05), .setMuted(true), .setMuted(false), .toggleMute,
    ]

    @Test(arguments: commands)
    func everyCommandIsAMethodThatComesBackAsItself(command: SessionCommand) throws {
        let (method, arguments) = command.dbusCall
        #expect(try SessionCommand(dbusMethod: method, arguments: arguments) == command)
        // A client's variant-wrapped argument is the same argument.
        #expect(try SessionCommand(dbusMethod: method, arguments: arguments.map { .variant($0) }) == command)
    }

    @Test func methodsThatAreNoPlaybackCommandAreLeftToTheSession() throws {
        #expect(try SessionCommand(dbusMethod: "Detach", arguments: []) == nil)
        #expect(try SessionCommand(dbusMethod: "Move", arguments: [.string("Kitchen")]) == nil)
    }

    @Test(arguments: [("Seek", [DBusValue.double(.nan)]), ("Seek", [.double(-1)]), ("SetVolume", [.double(1.5)]),
                      ("ChangeVolume", [.double(.infinity)]), ("SeekBy", []), ("SetVolume", [.string("loud")]), ("SetMuted", [.double(1)])])
    func aBadArgumentIsInvalidArgsNamingTheMethod(method: String, arguments: [DBusValue]) {
        do {
            _ = try SessionCommand(dbusMethod: method, arguments: arguments)
            Issue.record("\(method)(\(arguments)) was taken")
        } catch let error as DBusError {
            #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs" && error.message.hasPrefix(method), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func wordsSayTheCommandsOfTheCommandLine() throws {
        #expect(try SessionCommand(word: "pause", value: nil) == .pause)
        #expect(try SessionCommand(word: "seek", value: "1:30") == .seek(.absolute(90)))
        #expect(try SessionCommand(word: "seek", value: "-10") == .seek(.relative(-10)))
        #expect(try SessionCommand(word: "volume", value: "40") == .setVolume(0.4))
        #expect(try SessionCommand(word: "mute", value: "off") == .setMuted(false))
        for (word, value, says) in [("seek", "soon", "is not a position"), ("volume", "101", "from 0 to 100"), ("mute", nil, "on or off"),
                                    ("rewind", nil, "is not a command")] {
            #expect(throws: RouteError.self) { try SessionCommand(word: word, value: value) }
            do { _ = try SessionCommand(word: word, value: value) } catch {
                #expect(error.code == .badInput && error.description.contains(says), "\(error)")
            }
        }
    }
}
