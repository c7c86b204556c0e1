// NetworkNumber: reads numbers that arrive from the network (positions, durations, volumes, sizes), refusing
// what is not finite or out of range instead of letting it reach arithmetic that traps.

import FoundationEssentials

/// Parses numbers from untrusted text; nil for anything malformed, infinite, NaN or out of range.
public enum NetworkNumber {
    /// The longest time route accepts as a position or duration: about 115 days. Anything longer is
    /// nonsense from a device, and keeps every conversion to nanoseconds far from overflow.
    public static let maxSeconds = 10_000_000.0

    /// An integer in `range`.
    public static func int(_ text: String?, in range: ClosedRange<Int>) -> Int? {
        guard let text, let value = Int(text.trimmingSpaces), range.contains(value) else { return nil }
        return value
    }

    /// A finite number in `range`.
    public static func double(_ text: String?, in range: ClosedRange<Double>) -> Double? {
        guard let text, let value = Double(text.trimmingSpaces), value.isFinite, range.contains(value) else {
            return nil
        }
        return value
    }

    /// `value` when it is a finite number in `range` (a number already decoded from JSON); nil otherwise.
    public static func value(_ value: Double?, in range: ClosedRange<Double>) -> Double? {
        guard let value, value.isFinite, range.contains(value) else { return nil }
        return value
    }

    /// A position or duration in seconds, from 0 to `maxSeconds`; nil for anything else.
    public static func seconds(_ value: Double?) -> Double? {
        self.value(value, in: 0...maxSeconds)
    }

    /// A time as `SECONDS(.fff)`, `M:SS(.fff)` or `H:MM:SS(.fff)` (UPnP's and DLNA's forms, an optional
    /// leading `+`), from 0 to `maxSeconds`.
    public static func clock(_ text: String?) -> Double? {
        guard var body = text?.trimmingSpaces, !body.isEmpty, body.count <= 32 else { return nil }
        if body.hasPrefix("+") { body.removeFirst() }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for (index, part) in parts.enumerated() {
            // Digits and one dot only: Double() also reads "inf", "nan", "1e300" and hex.
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                  part.filter({ $0 == "." }).count <= 1, let value = Double(part) else { return nil }
            if index > 0, value >= 60 { return nil }
            if index < parts.count - 1, part.contains(".") { return nil }
            total = total * 60 + value
        }
        return total <= maxSeconds ? total : nil
    }
}

extension Int {
    /// `value` rounded toward zero, saturating at `Int.min` and `Int.max` (0 for NaN): for formatters, which
    /// must never trap on a number that came from outside, however big.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.2e18 {
            self = .max
        } else if value <= -9.2e18 {
            self = .min
        } else {
            self = Int(value)
        }
    }
}
