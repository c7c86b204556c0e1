// ErrorVocabularyTests: route's one error vocabulary across D-Bus — every RouteError code is an error name that a
// client turns back into the same code, the first release's names stay, and what is not route's stays the bus's.

import RouteClient
import RouteCore
import RouteGIO
import Testing

@Suite struct ErrorVocabularyTests {
    static let codes: [RouteError.Code] = [
        .unknownDevice, .ambiguousDevice, .deviceUnreachable, .unusableDevice, .commandFailed, .unsupported, .unknownAddress,
        .notCasting, .playbackFailed, .mediaRefused, .badInput, .notSetUp, RouteError.Code(rawValue: "SomethingNew"),
    ]

    @Test(arguments: codes)
    func everyCodeIsANameAndComesBackAsItself(code: RouteError.Code) throws {
        let sent = RouteServiceAPI.dbusError(RouteError(code, "what went wrong"))
        #expect(sent.name.hasPrefix("io.github.route.Route1.Error."))
        let received = try #require(RouteServiceAPI.error(name: sent.name, sent.message) as? RouteError)
        #expect(received.code == code && received.description == "what went wrong")
    }

    @Test func theFirstReleasesNamesStayAndEachOtherCodeHasItsOwn() {
        #expect(RouteServiceAPI.errorName(for: .unknownDevice) == "io.github.route.Route1.Error.NoDevice")
        #expect(RouteServiceAPI.errorName(for: .deviceUnreachable) == "io.github.route.Route1.Error.Unreachable")
        #expect(RouteServiceAPI.errorName(for: .badInput) == "io.github.route.Route1.Error.BadInput")
        #expect(RouteServiceAPI.errorName(for: nil) == "io.github.route.Route1.Error.Failed")
        #expect(RouteServiceAPI.errorName(for: .mediaRefused) == "io.github.route.Route1.Error.MediaRefused")
        #expect(Set(Self.codes.map { RouteServiceAPI.errorName(for: $0) }).count == Self.codes.count, "one name per code")
    }

    @Test func whatIsNotRoutesStaysTheBussOwn() {
        for name in ["io.github.route.Route1.Error.Failed", "io.github.route.Route1.Error.UnknownSession", "org.freedesktop.DBus.Error.InvalidArgs",
                     "io.github.route.Route1.Error.", "io.github.route.Route1.Error.Not.A.Code"] {
            #expect(RouteServiceAPI.errorCode(forName: name) == nil, "\(name)")
            let received = RouteServiceAPI.error(name: name, "words")
            #expect((received as? RouteServiceError)?.name == name, "\(name): \(received)")
        }
        // An error of no kind goes as Failed, with its words; a D-Bus error as it is.
        struct Other: Error, CustomStringConvertible { var description: String { "it broke" } }
        #expect(RouteServiceAPI.dbusError(Other()).name == "io.github.route.Route1.Error.Failed")
        #expect(RouteServiceAPI.dbusError(Other()).message == "it broke")
        let bus = DBusError(name: "org.freedesktop.DBus.Error.AccessDenied", "no")
        #expect(RouteServiceAPI.dbusError(bus).name == bus.name)
    }
}
