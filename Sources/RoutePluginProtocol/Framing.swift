// Framing: JSON-RPC messages on a byte stream as LSP frames them — `Content-Length: N\r\n\r\n` and N bytes of
// UTF-8 JSON — with a size cap, read by the host from a plugin's stdout and by a plugin from its stdin.

import Foundation

/// The frame of one message: its header, then its body.
public enum PluginFraming {
    /// The largest message either side accepts (1 MiB): a device list or a status is a few KiB.
    public static let maxMessageBytes = 1 << 20
    /// The longest header block accepted before its blank line.
    static let maxHeaderBytes = 4096

    /// `message` framed.
    public static func frame(_ message: Data) -> Data {
        var framed = Data("Content-Length: \(message.count)\r\n\r\n".utf8)
        framed.append(message)
        return framed
    }
}

/// What is wrong with a stream of frames; the channel cannot be trusted after any of them.
public enum FramingError: Error, Equatable, CustomStringConvertible {
    /// The header block is not `Name: value` lines ending in a blank line, or has no usable Content-Length.
    case badHeader(String)
    /// A message is larger than the cap.
    case tooLarge(Int)

    public var description: String {
        switch self {
        case .badHeader(let why): return "wrote something that is not a Content-Length frame (\(why))"
        case .tooLarge(let size): return "sent a message of \(size) bytes (at most \(PluginFraming.maxMessageBytes))"
        }
    }
}

/// Cuts a byte stream into message bodies. Feed it bytes as they arrive; it returns every whole message.
public struct FrameDecoder: Sendable {
    private var buffer = Data()
    private var expected: Int?

    /// A decoder at the start of a stream.
    public init() {}

    /// Appends `bytes` and returns the bodies completed by them, in order.
    /// - Throws: `FramingError` at the first thing that is not a frame.
    public mutating func feed(_ bytes: Data) throws(FramingError) -> [Data] {
        buffer.append(bytes)
        // Cut from a slice (no copy per message); what is left is kept once, at the end.
        var rest = buffer[...]
        defer { buffer = Data(rest) }
        var bodies: [Data] = []
        while true {
            if let length = expected {
                guard rest.count >= length else { break }
                bodies.append(Data(rest.prefix(length)))
                rest = rest.dropFirst(length)
                expected = nil
                continue
            }
            guard let end = rest.range(of: Data("\r\n\r\n".utf8)) else {
                if rest.count > PluginFraming.maxHeaderBytes { throw .badHeader("no blank line after \(rest.count) bytes") }
                try Self.checkPartialHeader(Data(rest))
                break
            }
            let header = rest[rest.startIndex..<end.lowerBound]
            rest = rest[end.upperBound...]
            expected = try Self.contentLength(in: Data(header))
        }
        return bodies
    }

    /// Refuses a header block as soon as it cannot be one — a line that is not `Name: value` ending in CRLF, or
    /// a name with other than letters, digits and dashes — so that a stray print is caught at its first line,
    /// not when 4 KiB of it have piled up.
    private static func checkPartialHeader(_ buffer: Data) throws(FramingError) {
        let bytes = [UInt8](buffer)
        var start = 0
        while start < bytes.count {
            let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
            let line = bytes[start..<(newline ?? bytes.count)]
            let colon = line.firstIndex(of: UInt8(ascii: ":"))
            let name = line[line.startIndex..<(colon ?? line.endIndex)]
            let isToken = name.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D }
            if newline == nil, name.count == line.count, line.last == UInt8(ascii: "\r") || line.isEmpty { return }
            guard isToken else { throw .badHeader("it starts with \(sample(buffer))") }
            if let newline {
                guard colon != nil, !name.isEmpty, newline > start, bytes[newline - 1] == UInt8(ascii: "\r") else {
                    throw .badHeader("a header line that is not \"Name: value\" ending in CRLF: \(sample(Data(line)))")
                }
                start = newline + 1
            } else {
                return
            }
        }
    }

    /// The Content-Length of a header block (other headers, such as Content-Type, are allowed and ignored).
    private static func contentLength(in header: Data) throws(FramingError) -> Int {
        guard let text = String(data: header, encoding: .utf8) else { throw .badHeader("the header is not UTF-8") }
        var length: Int?
        for line in text.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { throw .badHeader("a header line without a colon: \(sample(Data(line.utf8)))") }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-length" {
                guard let number = Int(value), number >= 0 else { throw .badHeader("Content-Length \(sample(Data(value.utf8)))") }
                length = number
            }
        }
        guard let length else { throw .badHeader("no Content-Length") }
        guard length <= PluginFraming.maxMessageBytes else { throw .tooLarge(length) }
        return length
    }

    /// The first bytes of `data`, quoted and cleaned, for messages.
    static func sample(_ data: Data) -> String {
        let text = String(decoding: data.prefix(40), as: UTF8.self)
        return "\"" + text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "." : String($0) }.joined() + "\""
    }
}
