// DisplayText: makes text that came from the network (device names, titles, reasons) safe to show on a
// terminal: no control characters, no escape sequences, no direction overrides, and a length cap.

/// Cleans untrusted text for display.
public enum DisplayText {
    /// Characters of a device name, title or address kept before it is cut with "…".
    public static let nameLimit = 120
    /// Characters of a longer message (an error reason) kept before it is cut.
    public static let messageLimit = 400

    /// `text` with every control character (C0, DEL, C1) and every invisible character (direction overrides,
    /// zero-width spaces: `isHidden`) removed, line breaks and tabs turned into spaces, runs of spaces collapsed, ends trimmed, and at
    /// most `limit` Unicode scalars (cut with "…"). For names and other short text from the network.
    public static func clean(_ text: String, limit: Int = nameLimit) -> String {
        var out = ""
        var count = 0
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            let value = scalar.value
            let isSpace = value == 0x20 || value == 0x09 || value == 0x0A || value == 0x0D || value == 0xA0
                || value == 0x2028 || value == 0x2029
            if isSpace { pendingSpace = !out.isEmpty; continue }
            if isHidden(scalar) { continue }
            if pendingSpace {
                if count + 1 >= limit { return out + "…" }
                out.unicodeScalars.append(" ")
                count += 1
                pendingSpace = false
            }
            if count >= limit { return out + "…" }
            out.unicodeScalars.append(scalar)
            count += 1
        }
        return out
    }

    /// A whole line made safe to print, its own spacing kept: control characters, escape sequences'
    /// introducers and direction overrides removed, line breaks and tabs turned into spaces, at most
    /// `limit` scalars.
    public static func line(_ text: String, limit: Int = 4000) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(limit) {
            let value = scalar.value
            if value == 0x09 || value == 0x0A || value == 0x0D { out.append(" "); continue }
            if isHidden(scalar) { continue }
            out.append(scalar)
        }
        return String(out) + (text.unicodeScalars.count > limit ? "…" : "")
    }

    /// Control characters (C0, DEL, C1) and every character Unicode says to draw as nothing (its
    /// Default_Ignorable_Code_Point set: zero-width spaces and joiners, direction marks, overrides and isolates,
    /// variation selectors, soft hyphens, tags, fillers): they reorder or hide text, and make a look-alike of a
    /// name ("Lab\u{200B} Renderer") that is another name.
    private static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || scalar.properties.isDefaultIgnorableCodePoint
    }
}
