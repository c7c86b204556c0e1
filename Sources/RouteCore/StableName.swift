// StableName: a short name that stays the same for the same text — for socket, file, bus and track names made
// from ids that are long or hold characters those names cannot (FNV-1a, 64 bits; not for security).

/// Short, stable names for long ids.
public enum StableName {
    /// The FNV-1a hash of `bytes`, as 16 hexadecimal digits.
    public static func of<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The name of a text's UTF-8.
    public static func of(_ text: String) -> String { of(text.utf8) }
}
