// HTTPRanges: what a device asks for in `Range` (RFC 9110) and `TimeSeekRange.dlna.org` / `?t=` (DLNA), read
// strictly from untrusted text: a malformed header is ignored, an unsatisfiable one is a 416, nothing traps.

import Foundation
import RouteCore

/// What a `Range` header asks of a body of known size.
package enum ByteRangeRequest: Equatable, Sendable {
    /// The whole body (no Range, or one to ignore: another unit, or not valid syntax).
    case whole
    /// Bytes `start...end` (inclusive), within the body.
    case part(start: UInt64, end: UInt64)
    /// Valid, but no range overlaps the body: answer 416.
    case unsatisfiable

    /// More ranges than this in one header: ignored as a whole (it costs us, and no player sends it).
    static let maxRanges = 32

    /// Reads `header` for a body of `size` bytes. Ends past the body are clamped, a suffix longer than
    /// the body is the whole body, and several ranges are served as the one span that covers them all.
    package static func parse(_ header: String?, size: UInt64) -> ByteRangeRequest {
        guard let header, let equals = header.firstIndex(of: "=") else { return .whole }
        guard header[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == "bytes" else { return .whole }
        let specs = header[header.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count <= maxRanges else { return .whole }
        var span: (start: UInt64, end: UInt64)?
        var valid = 0
        for raw in specs {
            let spec = raw.trimmingCharacters(in: .whitespaces)
            if spec.isEmpty { continue }
            guard let dash = spec.firstIndex(of: "-") else { return .whole }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            let range: (UInt64, UInt64)?
            if first.isEmpty {
                // Suffix: the last N bytes (all of them when N is larger than the body).
                guard let length = number(last) else { return .whole }
                range = length == 0 || size == 0 ? nil : (size - min(length, size), size - 1)
            } else {
                guard let start = number(first) else { return .whole }
                let end: UInt64?
                if last.isEmpty { end = nil } else {
                    guard let value = number(last) else { return .whole }
                    guard value >= start else { return .whole }
                    end = value
                }
                range = start < size ? (start, min(end ?? (size - 1), size - 1)) : nil
            }
            valid += 1
            guard let (start, end) = range else { continue }
            span = span.map { (min($0.start, start), max($0.end, end)) } ?? (start, end)
        }
        guard valid > 0 else { return .whole }
        guard let span else { return .unsatisfiable }
        return .part(start: span.start, end: span.end)
    }

    /// Decimal digits only, as RFC 9110 writes them, that fit in 64 bits.
    private static func number(_ text: Substring) -> UInt64? {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }
}

/// Where a converted stream should start: DLNA's `TimeSeekRange.dlna.org: npt=30.5-` or route's `?t=30.5`.
package enum TimeSeekRequest: Equatable, Sendable {
    /// From the beginning.
    case start
    /// From this many seconds in.
    case from(Double)
    /// A time the item does not have (at or past its end): answer 416.
    case unsatisfiable

    /// Reads the query's `t` (preferred) or the header, for an item of `duration` seconds (nil: unknown).
    /// A value that is not a time is ignored (from the start), as an unknown Range is.
    package static func parse(query t: String?, header: String?, duration: Double?) -> TimeSeekRequest {
        let seconds: Double?
        if let t {
            seconds = NetworkNumber.clock(t)
        } else if let header {
            seconds = nptStart(header)
        } else {
            return .start
        }
        guard let seconds, seconds > 0 else { return .start }
        if let duration, duration > 0, seconds >= duration { return .unsatisfiable }
        return .from(seconds)
    }

    /// The start of `npt=START-[END]`; nil when the value is not that.
    private static func nptStart(_ header: String) -> Double? {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.count <= 80, value.lowercased().hasPrefix("npt=") else { return nil }
        let range = value.dropFirst(4)
        guard let dash = range.firstIndex(of: "-") else { return nil }
        return NetworkNumber.clock(String(range[..<dash]))
    }

    /// The reply header: `npt=START-END/DURATION`.
    package static func header(start: Double, duration: Double) -> String {
        String(format: "npt=%.3f-%.3f/%.3f", start, duration, duration)
    }
}
