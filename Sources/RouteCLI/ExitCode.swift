// ExitCode: route's documented exit codes, and which error maps to which.

import RouteClient
import RouteCore

/// The process exit codes `route` uses; listed in `route --help`.
package enum ExitCode: Int32 {
    case success = 0
    /// Playback failed or a device refused a command.
    case failure = 1
    /// The command line is wrong.
    case usage = 2
    /// A file is missing, unreadable, empty, a directory, or not media.
    case badInput = 3
    /// No device matches, or the name is ambiguous.
    case noDevice = 4
    /// The device cannot be reached.
    case unreachable = 5
    /// Stopped by Ctrl-C, SIGTERM or SIGHUP, or because nobody reads the output any more.
    case interrupted = 130

    /// The text for `route --help`.
    package static let documentation = """
    Exit codes:
      0    done (a cast played to its end, or a command succeeded)
      1    playback failed, the device refused a command, or this machine is not set up for it (its runtime
           directory not private, no session bus for the service, no display or terminal for the picker)
      2    the command line is wrong
      3    a file is missing, unreadable, empty, a directory, or not media
      4    no device matches the name, or several do
      5    the device cannot be reached
      130  interrupted (Ctrl-C, SIGTERM, the terminal closed, or the output pipe closed)
    """

    /// The exit code of each kind of error; a kind not listed (or an error of no kind) is a failure.
    package static let byCode: [RouteError.Code: ExitCode] = [
        .unknownDevice: .noDevice, .ambiguousDevice: .noDevice, .unknownAddress: .noDevice, .notCasting: .noDevice,
        .deviceUnreachable: .unreachable, .badInput: .badInput,
    ]

    /// The exit code for an error: from its kind (`RouteError.Code`, which the route service's errors carry too).
    package init(for error: any Error) {
        switch error {
        case is UsageError: self = .usage
        case let error as any RouteErrorCoded: self = error.routeErrorCode.flatMap { Self.byCode[$0] } ?? .failure
        case let error as RouteServiceError where error.name == "org.freedesktop.DBus.Error.InvalidArgs": self = .usage
        default: self = .failure
        }
    }
}
