// ServiceAPI: the names of route's D-Bus API (bus name, objects, interfaces, error names) and how route's values
// travel in it: each as the a{sv} dictionary of its JSON (a device is what `route devices --json` prints); the values
// themselves are in APIValues.swift.

import FoundationEssentials
import Glibc
import RouteCore
import RouteGIO

/// The names the route service and its clients agree on (Documentation/DBUS-API.md describes every one).
public enum RouteServiceAPI {
    /// The service's well-known name on the session bus.
    public static let busName = "io.github.route.Route1"
    /// The manager object: devices, casts, sessions.
    public static let managerPath = "/io/github/route/Route1"
    /// The manager's interface.
    public static let managerInterface = "io.github.route.Route1.Manager"
    /// Each session's interface (objects under `sessionPathPrefix`).
    public static let sessionInterface = "io.github.route.Route1.Session"
    /// Sessions are `…/session/N`.
    public static let sessionPathPrefix = "/io/github/route/Route1/session/"
    /// A PickDevice request's interface (objects under `requestPathPrefix`), as xdg-desktop-portal's Request.
    public static let requestInterface = "io.github.route.Route1.Request"
    /// Requests are `…/request/N`.
    public static let requestPathPrefix = "/io/github/route/Route1/request/"
    /// The version of the interfaces (the manager's `Version` property); a change that breaks a client makes `Route2`.
    public static let version: UInt32 = 1

    /// The D-Bus error names the service answers with, besides org.freedesktop.DBus.Error.* (InvalidArgs for a call
    /// that is malformed, AccessDenied, LimitsExceeded). Every `RouteError.Code` is a name too (`errorName(for:)`); a
    /// client treats a name it does not know as `failed`.
    public enum ErrorName {
        /// No device matches the name (`RouteError.Code.unknownDevice`; exit code 4).
        public static let noDevice = "io.github.route.Route1.Error.NoDevice"
        /// The device cannot be reached (`RouteError.Code.deviceUnreachable`; exit code 5).
        public static let unreachable = "io.github.route.Route1.Error.Unreachable"
        /// A file is missing, unreadable, empty, not a regular file, or not media (`RouteError.Code.badInput`; exit code 3).
        public static let badInput = "io.github.route.Route1.Error.BadInput"
        /// The session has ended (or never was).
        public static let unknownSession = "io.github.route.Route1.Error.UnknownSession"
        /// A failure of no particular kind (exit code 1).
        public static let failed = "io.github.route.Route1.Error.Failed"
        /// The device or session cannot do that at all (`RouteError.Code.unsupported`; exit code 1).
        public static let unsupported = "io.github.route.Route1.Error.Unsupported"
    }

    /// Where every error name of route's own is: `io.github.route.Route1.Error.<Code>`.
    static let errorPrefix = "io.github.route.Route1.Error."

    /// The codes that keep the names of the API's first release (apps may match them); every other code is its own
    /// name.
    private static let firstNames: [RouteError.Code: String] = [
        .unknownDevice: ErrorName.noDevice, .deviceUnreachable: ErrorName.unreachable, .badInput: ErrorName.badInput,
    ]

    /// The D-Bus error name of an error's kind: `io.github.route.Route1.Error.<Code>` (NoDevice, Unreachable and
    /// BadInput for the three codes that had those names first); `ErrorName.failed` for an error of no kind.
    public static func errorName(for code: RouteError.Code?) -> String {
        guard let code else { return ErrorName.failed }
        return firstNames[code] ?? errorPrefix + code.rawValue
    }

    /// The kind a D-Bus error name says: the code it was made from; nil for `Failed`, `UnknownSession` and names
    /// that are not route's.
    public static func errorCode(forName name: String) -> RouteError.Code? {
        if let code = firstNames.first(where: { $0.value == name })?.key { return code }
        guard name.hasPrefix(errorPrefix), name != ErrorName.failed, name != ErrorName.unknownSession else { return nil }
        let rest = name.dropFirst(errorPrefix.count)
        guard !rest.isEmpty, rest.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
        return RouteError.Code(rawValue: String(rest))
    }

    /// An error as the service sends it: the name of its kind and its words.
    public static func dbusError(_ error: any Error) -> DBusError {
        if let error = error as? DBusError { return error }
        if let error = error as? RouteServiceError { return DBusError(name: error.name, error.message) }
        let code = (error as? any RouteErrorCoded)?.routeErrorCode
        return DBusError(name: errorName(for: code), "\(error)")
    }

    /// An error as a client receives it: the same `RouteError` (its kind and words) for a name of route's vocabulary,
    /// else a `RouteServiceError` (Failed, UnknownSession, the bus's own errors).
    public static func error(name: String, _ message: String) -> any Error {
        guard let code = errorCode(forName: name) else { return RouteServiceError(name: name, message) }
        return RouteError(code, message)
    }
}

/// An error the service answered with: its D-Bus name and its message (the words route would have printed).
public struct RouteServiceError: Error, CustomStringConvertible, Sendable {
    /// The D-Bus error name (`RouteServiceAPI.ErrorName`, or org.freedesktop.DBus.Error.* from the bus).
    public var name: String
    /// One line that says what went wrong.
    public var message: String

    /// An error of `name`.
    public init(name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    /// What a call's D-Bus error stands for: a `RouteError` for a name of route's vocabulary, else this type.
    package static func received(_ error: DBusError) -> any Error {
        RouteServiceAPI.errorCode(forName: error.name) == nil ? RouteServiceError(error) : RouteServiceAPI.error(name: error.name, error.message)
    }

    /// A D-Bus error as the service's error (a missing or dead service is said in words).
    init(_ error: DBusError) {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            self.init(name: error.name, "the route service is not running and could not be started: \(error.message)")
        case "org.freedesktop.DBus.Error.NoReply":
            self.init(name: error.name, "the route service did not answer in time (it may have stopped): \(error.message)")
        default:
            self.init(name: error.name, error.message)
        }
    }

    public var description: String { message }
}

/// Route's values as D-Bus values and back: a value goes as the D-Bus form of its JSON — objects as a{sv}, arrays of
/// strings as `as`, arrays of objects as aa{sv}, integers as `x`, floating point as `d`, no entry for null (DBusEncoder);
/// it comes back through JSON.
public enum DBusCoding {
    /// `value` as a D-Bus value.
    public static func encode<T: Encodable>(_ value: T) throws -> DBusValue { try DBusEncoder.encode(value) }

    /// A value of `type` from what `encode` made (a variant is unwrapped).
    /// - Throws: `DecodingError` when the value does not hold one.
    public static func decode<T: Decodable>(_ type: T.Type, from value: DBusValue) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(type, from: try JSONEncoder().encode(json(value)))
    }

    private static func json(_ value: DBusValue) -> JSONValue {
        switch value {
        case .string(let text), .objectPath(let text): return .string(text)
        case .boolean(let flag): return .bool(flag)
        case .int32(let number): return .integer(Int64(number))
        case .int64(let number): return .integer(number)
        case .uint32(let number): return .integer(Int64(number))
        case .double(let number): return .number(number)
        case .strings(let list): return .array(list.map { .string($0) })
        case .dictionary(let entries): return .object(entries.mapValues(json))
        case .array(_, let elements): return .array(elements.map(json))
        case .fileDescriptor: return .null
        case .variant(let inner): return json(inner)
        }
    }
}

/// A D-Bus value as the JSON document a decoder reads.
private enum JSONValue: Encodable {
    case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let number): try container.encode(number)
        case .number(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let list): try container.encode(list)
        case .object(let entries): try container.encode(entries)
        }
    }
}

extension RouteServiceAPI {
    /// The introspection of the manager and of a session: the contract, exported by the service as it is written here.
    public static let managerIntrospection = """
    <node>
      <interface name="io.github.route.Route1.Manager">
        <method name="GetDevices"><arg name="devices" type="aa{sv}" direction="out"/></method>
        <method name="WatchDevices">
          <arg name="devices" type="aa{sv}" direction="out"/><arg name="listening" type="d" direction="out"/>
        </method>
        <method name="UnwatchDevices"/>
        <method name="FindDevice">
          <arg name="query" type="s" direction="in"/><arg name="timeout" type="d" direction="in"/>
          <arg name="device" type="a{sv}" direction="out"/>
        </method>
        <method name="Cast">
          <arg name="device" type="s" direction="in"/><arg name="paths" type="as" direction="in"/>
          <arg name="descriptors" type="ah" direction="in"/><arg name="options" type="a{sv}" direction="in"/>
          <arg name="session" type="o" direction="out"/>
        </method>
        <method name="StartSink">
          <arg name="device" type="s" direction="in"/><arg name="options" type="a{sv}" direction="in"/>
          <arg name="sink" type="a{sv}" direction="out"/>
        </method>
        <method name="StopSink"><arg name="device" type="s" direction="in"/></method>
        <method name="PickDevice">
          <arg name="parent_window" type="s" direction="in"/><arg name="options" type="a{sv}" direction="in"/>
          <arg name="handle" type="o" direction="out"/>
        </method>
        <method name="Move">
          <arg name="device" type="s" direction="in"/><arg name="from" type="s" direction="in"/>
          <arg name="session" type="o" direction="out"/>
        </method>
        <signal name="DeviceFound"><arg name="device" type="a{sv}"/></signal>
        <signal name="DeviceChanged"><arg name="device" type="a{sv}"/></signal>
        <signal name="DeviceLost"><arg name="id" type="s"/></signal>
        <signal name="Mirror"><arg name="mirror" type="a{sv}"/></signal>
        <signal name="SinkEvent"><arg name="event" type="a{sv}"/></signal>
        <property name="Version" type="u" access="read"/>
        <property name="Devices" type="aa{sv}" access="read"/>
        <property name="Sessions" type="ao" access="read"/>
        <property name="Listening" type="d" access="read"/>
        <property name="Mirrors" type="aa{sv}" access="read"/>
        <property name="Sinks" type="aa{sv}" access="read"/>
      </interface>
    </node>
    """

    /// The introspection of a PickDevice request's object.
    public static let requestIntrospection = """
    <node>
      <interface name="io.github.route.Route1.Request">
        <method name="Close"/>
        <signal name="Response"><arg name="response" type="u"/><arg name="results" type="a{sv}"/></signal>
      </interface>
    </node>
    """

    /// The introspection of a session object.
    public static let sessionIntrospection = """
    <node>
      <interface name="io.github.route.Route1.Session">
        <method name="Play"/>
        <method name="Pause"/>
        <method name="TogglePause"/>
        <method name="Stop"/>
        <method name="Next"/>
        <method name="Seek"><arg name="position" type="d" direction="in"/></method>
        <method name="SeekBy"><arg name="offset" type="d" direction="in"/></method>
        <method name="SetVolume"><arg name="level" type="d" direction="in"/></method>
        <method name="ChangeVolume"><arg name="step" type="d" direction="in"/></method>
        <method name="SetMuted"><arg name="muted" type="b" direction="in"/></method>
        <method name="ToggleMute"/>
        <method name="Detach"/>
        <method name="Move"><arg name="device" type="s" direction="in"/></method>
        <method name="AddDevice"><arg name="device" type="s" direction="in"/></method>
        <method name="RemoveDevice"><arg name="device" type="s" direction="in"/></method>
        <method name="SetMemberVolume"><arg name="device" type="s" direction="in"/><arg name="level" type="d" direction="in"/></method>
        <method name="SetMemberMuted"><arg name="device" type="s" direction="in"/><arg name="muted" type="b" direction="in"/></method>
        <signal name="Notice"><arg name="message" type="s"/></signal>
        <signal name="Ended"><arg name="reason" type="s"/><arg name="error" type="s"/><arg name="message" type="s"/></signal>
        <property name="Status" type="a{sv}" access="read"/>
        <property name="State" type="s" access="read"/>
        <property name="Position" type="d" access="read"/>
        <property name="PositionTime" type="d" access="read"/>
        <property name="Rate" type="d" access="read"/>
        <property name="Duration" type="d" access="read"/>
        <property name="Item" type="s" access="read"/>
        <property name="QueueIndex" type="u" access="read"/>
        <property name="QueueLength" type="u" access="read"/>
        <property name="Device" type="a{sv}" access="read"/>
        <property name="Volume" type="d" access="read"/>
        <property name="Muted" type="b" access="read"/>
        <property name="AllowedCommands" type="as" access="read"/>
        <property name="EndsWithClient" type="b" access="read"/>
        <property name="MprisName" type="s" access="read"/>
        <property name="Members" type="aa{sv}" access="read"/>
      </interface>
    </node>
    """
}

/// The kind of media a device is picked for (`pickDevice(media:)`, PickDevice's option `media`): devices that cannot
/// play it are listed but cannot be chosen.
public typealias PickMedia = MediaFileKind
