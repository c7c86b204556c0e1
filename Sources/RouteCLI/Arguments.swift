// Arguments: the hand-written, declarative command-line parser — commands declare options, this parses and prints help.

import FoundationEssentials

/// One option a command accepts: `--name VALUE` or a `--flag`.
package struct OptionSpec {
    package let name: String
    /// The placeholder shown in help (`NAME`); nil for a flag that takes no value.
    package let value: String?
    package let help: String
    /// Whether it may be given several times (`--to A --to B`); any other option given twice is refused.
    package var repeats = false
}

/// What a command declares: its name, options, positional arguments, help text and examples.
package struct CommandSpec {
    package let name: String
    package let summary: String
    /// Positional arguments as shown in the usage line, e.g. `FILE...`.
    package let positionals: String
    package let minPositionals: Int
    package let maxPositionals: Int
    package let options: [OptionSpec]
    package let details: String
    package let examples: [String]
}

/// The parsed command line of one command.
package struct ParsedArguments {
    package var values: [String: String] = [:]
    package var flags: Set<String> = []
    package var positionals: [String] = []
    /// Every value of an option that repeats, in order (its first is `values`' too).
    package var repeated: [String: [String]] = [:]

    /// The value of `--name`, if given (the first, for an option that repeats).
    package subscript(_ name: String) -> String? { values[name] }
    /// Every value `--name` was given, in order.
    package func all(_ name: String) -> [String] { repeated[name] ?? values[name].map { [$0] } ?? [] }
    /// Whether `--name` was given.
    package func has(_ name: String) -> Bool { flags.contains(name) || values[name] != nil }
}

/// A command line that does not fit the command's declaration; exit code 2.
package struct UsageError: Error, CustomStringConvertible {
    package let description: String
    /// The error that says `description`.
    package init(description: String) { self.description = description }
}

extension CommandSpec {
    /// Parses `arguments` (after the command name). `--help` is left to the caller as a flag.
    /// Accepts `--name value`, `--name=value`, and `--` to end options.
    package func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var result = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" || isNegativeNumber(argument) {
                result.positionals.append(argument)
                continue
            }
            if argument == "--" { optionsEnded = true; continue }
            if argument == "--help" || argument == "-h" { result.flags.insert("help"); continue }
            let body = argument.drop(while: { $0 == "-" })
            let parts = body.split(separator: "=", maxSplits: 1).map(String.init)
            guard let option = options.first(where: { $0.name == parts[0] }) else {
                throw UsageError(description: "unknown option \(argument); see `route \(name) --help`")
            }
            if option.value == nil {
                guard parts.count == 1 else { throw UsageError(description: "--\(option.name) takes no value") }
                result.flags.insert(option.name)
                continue
            }
            let value: String
            if parts.count == 2 {
                value = parts[1]
            } else {
                guard index < arguments.count else {
                    throw UsageError(description: "--\(option.name) needs a value (\(option.value!))")
                }
                value = arguments[index]
                index += 1
            }
            // The one before is never dropped unsaid (`--to A --to B` played on B alone).
            if option.repeats {
                result.repeated[option.name, default: []].append(value)
                if result.values[option.name] == nil { result.values[option.name] = value }
                continue
            }
            if let earlier = result.values[option.name] {
                throw UsageError(description: "--\(option.name) is given twice (\"\(earlier)\", then \"\(value)\"); it takes one \(option.value!)")
            }
            result.values[option.name] = value
        }
        if result.has("help") { return result }
        if result.positionals.count < minPositionals {
            throw UsageError(description: "missing \(positionals); usage: \(usage)")
        }
        if result.positionals.count > maxPositionals {
            let extra = result.positionals[maxPositionals...].joined(separator: " ")
            throw UsageError(description: "unexpected argument \(extra); usage: \(usage)")
        }
        return result
    }

    /// `-10` and `-1:30` are seek targets, not options.
    private func isNegativeNumber(_ text: String) -> Bool {
        text.count > 1 && text.dropFirst().allSatisfy { $0.isNumber || $0 == ":" || $0 == "." }
    }

    /// The one-line usage: `route cast FILE... [--to NAME] …`.
    package var usage: String {
        let opts = options.map { "[--\($0.name)\($0.value.map { " " + $0 } ?? "")]" }.joined(separator: " ")
        return ["route", name, positionals, opts].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// The full `--help` text.
    package var help: String {
        var lines = ["\(summary)", "", "Usage: \(usage)"]
        if !details.isEmpty { lines += ["", details] }
        if !options.isEmpty {
            lines += ["", "Options:"]
            let width = options.map { $0.name.count + ($0.value?.count ?? -1) + 1 }.max()! + 4
            for option in options {
                let left = "--\(option.name)\(option.value.map { " " + $0 } ?? "")"
                lines.append("  " + left.padded(to: width) + option.help)
            }
            lines.append("  " + "--help".padded(to: width) + "show this help")
        }
        if !examples.isEmpty { lines += ["", "Examples:"] + examples.map { "  " + $0 } }
        return lines.joined(separator: "\n")
    }
}
