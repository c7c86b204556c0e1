// TextTests: the string operations the FoundationEssentials-only modules use instead of Foundation's, held to what
// Foundation did (and to a locale-free point).

import Foundation
import RouteCore
import Testing

@Suite struct TextTests {
    @Test func fixedPointWritesWhatPrintfWritesInTheCLocale() {
        for (value, decimals) in [(0.0, 3), (1.25, 1), (12.3456, 3), (-1.5, 0), (-2.0005, 3), (1733.123456, 3), (999.9996, 3), (7.0, 0)] {
            #expect(fixedPoint(value, decimals: decimals) == String(format: "%.\(decimals)f", value), "\(value) to \(decimals)")
        }
        #expect(fixedPoint(.nan, decimals: 3) == "nan")
        #expect(fixedPoint(-0.0001, decimals: 2) == "0.00", "no minus sign on a value that rounds to zero (printf: -0.00)")
    }

    @Test func namesSortAsAFileManagerListsThem() {
        let names = ["speaker 10", "Speaker 2", "Den", "den 01", "Kitchen", "1️⃣ Speaker", "speaker 9", "Zebra", "attic"]
        let sorted = names.sorted { $0.sortsBefore($1) }
        #expect(sorted == ["1️⃣ Speaker", "attic", "Den", "den 01", "Kitchen", "Speaker 2", "speaker 9", "speaker 10", "Zebra"], "\(sorted)")
        // A strict weak ordering: never both ways, never itself.
        for first in names {
            #expect(!first.sortsBefore(first))
            for second in names where first != second { #expect(first.sortsBefore(second) != second.sortsBefore(first), "\(first) / \(second)") }
        }
    }

    @Test func paddingTrimmingAndCaseMatchFoundations() {
        for (text, width) in [("Lab", 6), ("Lab Renderer", 5), ("", 2), ("exact", 5)] {
            #expect(text.padded(to: width) == text.padding(toLength: width, withPad: " ", startingAt: 0))
        }
        for text in ["  a b \t", "\t", "", "x", " line\n"] {
            #expect(text.trimmingSpaces == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
        }
        #expect("Lab RENDERER".equalsIgnoringCase("lab renderer") && !"Lab".equalsIgnoringCase("Lab 2"))
    }
}
