// Text: the few string operations route needs beyond the standard library, for the modules that link
// FoundationEssentials alone (the thin route and the picker: Foundation brings ICU, 46 MB in every static executable).

import Glibc

extension StringProtocol {
    /// Without spaces and tabs (any whitespace but line breaks) at either end.
    public var trimmingSpaces: String {
        func isSpace(_ character: Character) -> Bool { character.isWhitespace && !character.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }

    /// Exactly `width` characters: cut there, or filled up with spaces (columns of a table).
    public func padded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : String(self) + String(repeating: " ", count: width - count)
    }

    /// Whether this and `other` are the same text but for case.
    public func equalsIgnoringCase(_ other: some StringProtocol) -> Bool { lowercased() == other.lowercased() }

    /// Whether this comes before `other` in the order a file manager lists names in: letters without regard to case,
    /// runs of digits by their value ("Speaker 2" before "Speaker 10").
    public func sortsBefore(_ other: some StringProtocol) -> Bool {
        let (mine, theirs) = (Self.runs(of: lowercased()), Self.runs(of: other.lowercased()))
        for (left, right) in zip(mine, theirs) where left != right {
            switch (left.number, right.number) {
            case let (leftNumber?, rightNumber?):
                // By value: fewer digits once leading zeros are gone is smaller.
                if leftNumber.count != rightNumber.count { return leftNumber.count < rightNumber.count }
                if leftNumber != rightNumber { return leftNumber < rightNumber }
            case (.some, nil), (nil, .some):
                // Digits before anything else (a total order, whatever a run of other text starts with).
                return left.number != nil
            case (nil, nil):
                break
            }
            return left.text < right.text
        }
        return mine.count != theirs.count ? mine.count < theirs.count : String(self) < String(other)
    }

    /// `text` cut into runs of digits and of everything else; a run of digits also without its leading zeros.
    private static func runs(of text: String) -> [(text: Substring, number: Substring?)] {
        var runs: [(text: Substring, number: Substring?)] = []
        var start = text.startIndex
        while start < text.endIndex {
            let isDigit = text[start].isASCII && text[start].isNumber
            let end = text[start...].firstIndex { ($0.isASCII && $0.isNumber) != isDigit } ?? text.endIndex
            let run = text[start..<end]
            runs.append((run, isDigit ? run.drop { $0 == "0" } : nil))
            start = end
        }
        return runs
    }
}

/// `value` written with `decimals` digits (at most 9) after the point, rounded half to even, as printf's `%.Nf` writes
/// it in the C locale — always with a point, whatever locale GTK set (printf's would follow it); never "-0".
public func fixedPoint(_ value: Double, decimals: Int) -> String {
    let decimals = max(0, min(decimals, 9))
    let scale = (0..<decimals).reduce(UInt64(1)) { product, _ in product * 10 }
    let scaled = (abs(value) * Double(scale)).rounded(.toNearestOrEven)
    guard value.isFinite, scaled < 9e18 else { return "\(value)" }
    let units = UInt64(scaled)
    let sign = value < 0 && units > 0 ? "-" : ""
    guard decimals > 0 else { return sign + "\(units)" }
    let fraction = String(units % scale)
    return sign + "\(units / scale)." + String(repeating: "0", count: decimals - fraction.count) + fraction
}

/// Writes `text` to standard error whole (a short write goes on; a closed stderr drops the rest).
public func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}
