// APIPageTranscript: the shell transcript of Documentation/DBUS-API.md ("A session, from the shell") read as steps —
// each command and what it printed — and compared with what the service prints now, so that the page cannot drift.

import Foundation

/// The page's transcript, as steps, and how an output line is held against the page's.
enum APIPageTranscript {
    /// One command of the transcript and the lines the page says it printed.
    struct Step: CustomStringConvertible {
        var command: String
        var expected: [String]
        /// A command the page runs beside the others (`# meanwhile`): its lines come while the rest runs.
        var meanwhile: Bool
        var description: String { "$ \(command)\n" + expected.joined(separator: "\n") }
    }

    /// The steps of the first code block after `heading`: a line `$ COMMAND` (continued by lines after a trailing `\`)
    /// begins one, and the lines up to a blank line are what it printed.
    static func steps(in page: String, after heading: String) -> [Step] {
        guard let start = page.range(of: heading) else { return [] }
        let lines = page[start.upperBound...].components(separatedBy: "\n")
        guard let open = lines.firstIndex(where: { $0.hasPrefix("```") }) else { return [] }
        var steps: [Step] = []
        var index = open + 1
        while index < lines.count, !lines[index].hasPrefix("```") {
            let line = lines[index]
            index += 1
            guard line.hasPrefix("$ ") else {
                if !line.isEmpty, !steps.isEmpty { steps[steps.count - 1].expected.append(line) }
                continue
            }
            var command = String(line.dropFirst(2))
            while command.hasSuffix("\\"), index < lines.count {
                command = String(command.dropLast()).trimmingCharacters(in: .whitespaces) + " "
                    + lines[index].trimmingCharacters(in: .whitespaces)
                index += 1
            }
            var meanwhile = false
            if let comment = command.range(of: "# meanwhile") {
                meanwhile = true
                command = String(command[..<comment.lowerBound]).trimmingCharacters(in: .whitespaces)
            }
            steps.append(Step(command: command, expected: [], meanwhile: meanwhile))
        }
        return steps
    }

    /// Whether `actual` is the page's `expected` line: the same but for numbers (positions, pids, times differ from
    /// run to run), and only as far as the page shows where it cut the line (`…`).
    static func matches(_ expected: String, _ actual: String) -> Bool {
        let page = numbersBlurred(expected), now = numbersBlurred(actual)
        if page.hasSuffix("…") { return now.hasPrefix(String(page.dropLast())) }
        return now == page
    }

    /// Whether the lines printed are the page's, one for one.
    static func matches(_ expected: [String], _ actual: [String]) -> Bool {
        expected.count == actual.count && zip(expected, actual).allSatisfy { matches($0, $1) }
    }

    /// The line with every number (`42`, `3.5`, `8.796e-06`) as `#`.
    private static func numbersBlurred(_ line: String) -> String {
        line.replacingOccurrences(of: #"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?"#, with: "#", options: .regularExpression)
    }
}
