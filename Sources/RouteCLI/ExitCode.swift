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
      1    playback failed or the device refused a command
      2    the command line is wrong
      3    a file is missing, unreadable, empty, a directory, or not media
      4    no device matches the name, or several do
      5    the device cannot be reached
      130  interrupted (Ctrl-C, SIGTERM, the terminal closed, or the output pipe closed)
    """

    /// The exit code for an error.
    package init(for error: any Error) {
        switch error {
        case is UsageError: self = .usage
        case is SetupError: self = .failure
        case let error as any ExitCoded: self = error.exitCode
        case let error as RouteError:
            switch error.code {
            case .unknownDevice, .ambiguousDevice, .unknownAddress, .notCasting: self = .noDevice
            case .deviceUnreachable: self = .unreachable
            default: self = .failure
            }
        case let error as RouteServiceError:
            switch error.name {
            case RouteServiceAPI.ErrorName.noDevice: self = .noDevice
            case RouteServiceAPI.ErrorName.unreachable: self = .unreachable
            case RouteServiceAPI.ErrorName.badInput: self = .badInput
            case "org.freedesktop.DBus.Error.InvalidArgs": self = .usage
            default: self = .failure
            }
        default: self = .failure
        }
    }
}

/// An error of a library below the CLI that knows its exit code (RouteMedia's: a bad file is 3).
package protocol ExitCoded: Error {
    var exitCode: ExitCode { get }
}
