// RouteError: the errors the router and its providers report, each with a message a person can act on, and a code
// that names its kind — kinds can be added without breaking anyone who reads them (a switch has a default).

/// An error from the router, a provider or a controller. `description` is one line that names the problem and what
/// to do; `code` says what kind of problem it is.
public struct RouteError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The kind of a `RouteError`, by a stable name. More may come: read it with a `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No device matches the name (or none was named, and none was found).
        public static let unknownDevice = Code(rawValue: "UnknownDevice")
        /// Several devices match the name equally well (or none was named, and there are several).
        public static let ambiguousDevice = Code(rawValue: "AmbiguousDevice")
        /// The device could not be reached or stopped answering.
        public static let deviceUnreachable = Code(rawValue: "DeviceUnreachable")
        /// The device answered, but with something route cannot use (a malformed description or reply).
        public static let unusableDevice = Code(rawValue: "UnusableDevice")
        /// The device refused or failed a command.
        public static let commandFailed = Code(rawValue: "CommandFailed")
        /// The device cannot do this at all (seek a live stream, set volume on a fixed-volume device).
        public static let unsupported = Code(rawValue: "Unsupported")
        /// No provider can reach this address.
        public static let unknownAddress = Code(rawValue: "UnknownAddress")
        /// A control command found no cast of route's playing (on that device, when one was named).
        public static let notCasting = Code(rawValue: "NotCasting")
        /// The device stopped playing an item: it failed, vanished or refused it.
        public static let playbackFailed = Code(rawValue: "PlaybackFailed")
        /// The device refused the media as it was sent (a Cast LOAD_FAILED): a converted stream may play.
        public static let mediaRefused = Code(rawValue: "MediaRefused")
        /// What was given to play cannot be played as given: a file that is missing, unreadable, empty, a directory,
        /// a pipe or socket, or not media.
        public static let badInput = Code(rawValue: "BadInput")
        /// This machine is not set up so that route can work, or work safely: its runtime directory, a session bus,
        /// a display, the service's name taken by another.
        public static let notSetUp = Code(rawValue: "NotSetUp")
    }

    /// What kind of problem it is.
    public let code: Code
    /// One line that names the problem and what to do.
    public let description: String
    /// The device it concerns, when there is one.
    public let device: String?
    /// The device's or the protocol's own reason, when there is one (what a caller may look into: "(701)").
    public let reason: String?
    /// The names of the devices that match (ambiguous) or exist (unknown).
    public let names: [String]

    /// An error of `code` saying `description`.
    public init(_ code: Code, _ description: String, device: String? = nil, reason: String? = nil, names: [String] = []) {
        self.code = code
        self.description = description
        self.device = device
        self.reason = reason
        self.names = names
    }

    /// No device matches `query`; `candidates` are the names that exist. An empty query: no device was named, and
    /// none was found.
    public static func unknownDevice(query: String, candidates: [String]) -> RouteError {
        guard !query.isEmpty else {
            return RouteError(.unknownDevice, "no device was found; run `route devices` to see what answers, or give --to this for this computer",
                              names: candidates)
        }
        let list = candidates.isEmpty ? "none were found" : "found: " + candidates.map { "\"\($0)\"" }.joined(separator: ", ")
        return RouteError(.unknownDevice, "no device matches \"\(query)\" (\(list)); run `route devices` to list them", names: candidates)
    }

    /// Several devices match `query` equally well. An empty query: no device was named, and there are several.
    public static func ambiguousDevice(query: String, matches: [String]) -> RouteError {
        let quoted = matches.map { "\"\($0)\"" }.joined(separator: ", ")
        guard !query.isEmpty else {
            return RouteError(.ambiguousDevice, "there are several devices (\(quoted)); name one with --to NAME", names: matches)
        }
        return RouteError(.ambiguousDevice, "\"\(query)\" matches several devices: \(quoted); give more of the name", names: matches)
    }

    /// `device` could not be reached or stopped answering.
    public static func deviceUnreachable(device: String, reason: String) -> RouteError {
        RouteError(.deviceUnreachable, "\(device) cannot be reached: \(reason)", device: device, reason: reason)
    }

    /// `device` answered, but with something route cannot use.
    public static func unusableDevice(device: String, reason: String) -> RouteError {
        RouteError(.unusableDevice, "\(device) answered, but \(reason)", device: device, reason: reason)
    }

    /// `device` refused or failed `command`.
    public static func commandFailed(device: String, command: String, reason: String) -> RouteError {
        RouteError(.commandFailed, "\(device) refused \(command): \(reason)", device: device, reason: reason)
    }

    /// `device` cannot do `what` at all.
    public static func unsupported(device: String, what: String) -> RouteError {
        RouteError(.unsupported, "\(device) cannot \(what)", device: device, reason: what)
    }

    /// No provider can reach `address`.
    public static func unknownAddress(_ address: String) -> RouteError {
        RouteError(.unknownAddress, "no provider can reach \"\(address)\"; give host:port or a UPnP description URL, or a device's IP "
                   + "address or name")
    }

    /// A control command found no cast of route's playing (on the device `query` names, when one was named).
    public static func notCasting(query: String?) -> RouteError {
        RouteError(.notCasting, "nothing is being cast\(query.map { " to \"\($0)\"" } ?? "") by route on this machine; "
                   + "start one with `route cast FILE --to DEVICE`")
    }

    /// `device` stopped playing `item`.
    public static func playbackFailed(device: String, item: String, reason: String) -> RouteError {
        RouteError(.playbackFailed, "\(item) stopped on \(device): \(reason)", device: device, reason: reason)
    }

    /// `device` refused the media as it was sent: a converted stream may play.
    public static func mediaRefused(device: String, reason: String) -> RouteError {
        RouteError(.mediaRefused, "\(device) cannot play it as sent: \(reason)", device: device, reason: reason)
    }
}

/// An error that says its kind in route's one vocabulary, `RouteError.Code`: the service's D-Bus error name and the
/// CLI's exit code are derived from it.
public protocol RouteErrorCoded: Error {
    /// The error's kind; nil for a failure of no particular kind.
    var routeErrorCode: RouteError.Code? { get }
}

extension RouteError: RouteErrorCoded {
    public var routeErrorCode: Code? { code }
}
