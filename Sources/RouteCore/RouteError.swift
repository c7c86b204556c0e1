// RouteError: the errors the router and its providers report, each with a message a person can act on.

/// An error from the router, a provider or a controller. `description` is one line that names
/// the problem and what to do.
public enum RouteError: Error, Equatable, CustomStringConvertible {
    /// No device matches the name; `candidates` are the names that exist. An empty query: no device was named,
    /// and none was found.
    case unknownDevice(query: String, candidates: [String])
    /// Several devices match the name equally well. An empty query: no device was named, and there are several.
    case ambiguousDevice(query: String, matches: [String])
    /// The device could not be reached or stopped answering.
    case deviceUnreachable(device: String, reason: String)
    /// The device answered, but with something route cannot use (a malformed description or reply).
    case unusableDevice(device: String, reason: String)
    /// The device refused or failed a command.
    case commandFailed(device: String, command: String, reason: String)
    /// The device cannot do this at all (seek a live stream, set volume on a fixed-volume device).
    case unsupported(device: String, what: String)
    /// No provider can reach this address.
    case unknownAddress(String)
    /// A control command found no `route cast` playing (on that device, when one was named).
    case notCasting(query: String?)
    /// The device stopped playing an item: it failed, vanished or refused it.
    case playbackFailed(device: String, item: String, reason: String)
    /// The device refused the media as it was sent (a Cast LOAD_FAILED): a converted stream may play.
    case mediaRefused(device: String, reason: String)

    public var description: String {
        switch self {
        case .unknownDevice("", _):
            return "no device was found; run `route devices` to see what answers, or give --to this for this computer"
        case .ambiguousDevice("", let matches):
            return "there are several devices (" + matches.map { "\"\($0)\"" }.joined(separator: ", ") + "); name one with --to NAME"
        case .unknownDevice(let query, let candidates):
            let list = candidates.isEmpty ? "none were found" : "found: " + candidates.map { "\"\($0)\"" }.joined(separator: ", ")
            return "no device matches \"\(query)\" (\(list)); run `route devices` to list them"
        case .ambiguousDevice(let query, let matches):
            return "\"\(query)\" matches several devices: " + matches.map { "\"\($0)\"" }.joined(separator: ", ")
                + "; give more of the name"
        case .deviceUnreachable(let device, let reason):
            return "\(device) cannot be reached: \(reason)"
        case .unusableDevice(let device, let reason):
            return "\(device) answered, but \(reason)"
        case .commandFailed(let device, let command, let reason):
            return "\(device) refused \(command): \(reason)"
        case .unsupported(let device, let what):
            return "\(device) cannot \(what)"
        case .notCasting(let query):
            return "nothing is being cast\(query.map { " to \"\($0)\"" } ?? "") by route on this machine; start one with `route cast FILE --to DEVICE`"
        case .playbackFailed(let device, let item, let reason):
            return "\(item) stopped on \(device): \(reason)"
        case .mediaRefused(let device, let reason):
            return "\(device) cannot play it as sent: \(reason)"
        case .unknownAddress(let address):
            return "no provider can reach \"\(address)\"; give host:port or a UPnP description URL, or a device's IP address or name"
        }
    }
}
