// Output: how route writes — one clean line to stderr or stdout, JSON for scripts — and the options several commands share.

import FoundationEssentials
import Glibc
import RouteCore

/// Writes one line to stderr, cleaned of control characters (its text may hold device names and reasons
/// from the network). On a live status line, `overStatus` clears that line first.
package func printError(_ text: String, overStatus: Bool = false) {
    let line = DisplayText.line(text)
    let clear = overStatus && isatty(STDERR_FILENO) == 1 ? "\r\u{1B}[K" : ""
    writeStandardError(clear + line + "\n")
}

/// Writes one line to stdout, cleaned like `printError`; false when stdout is gone (a closed pipe).
@discardableResult
package func printOutput(_ text: String) -> Bool {
    print(DisplayText.line(text))
    return fflush(nil) == 0
}

/// JSON for `--json` output: pretty, keys sorted, so scripts and people can both read it.
package enum JSONOutput {
    package static func string<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// The option declarations shared by several commands.
package enum CommonOptions {
    package static let providers = OptionSpec(name: "providers", value: "LIST",
                                      help: "comma-separated providers to run (built in: local, cast, upnp; plus plugins, see `route providers`); default all")
    package static let timeout = OptionSpec(name: "timeout", value: "SECONDS", help: "how long to look for devices (default 3)")
    package static let to = OptionSpec(name: "to", value: "DEVICE",
                               help: "device name (exact, unique prefix or close), id, or address (IP, host:port, URL, mpd://HOST)")
    /// `--to` for what plays on several devices at once: given again, or naming a group (`route group`).
    package static let toEach = OptionSpec(name: "to", value: "DEVICE",
                                           help: "device name (exact, unique prefix or close), id, address (IP, host:port, URL, mpd://HOST), or a group's name (route group); again for several devices at once",
                                           repeats: true)
    package static let json = OptionSpec(name: "json", value: nil, help: "print JSON for scripts")

    package static func timeout(_ parsed: ParsedArguments) throws -> Double {
        guard let text = parsed["timeout"] else { return 3 }
        guard let value = Double(text), value >= 0, value <= 600 else {
            throw UsageError(description: "--timeout takes seconds from 0 to 600, not \"\(text)\"")
        }
        return value
    }
}
