// CastFrame: the Cast v2 wire format — a 4-byte big-endian length, then a protobuf CastMessage packed and
// unpacked by protobuf-c's generated code (CCastMessage) — and the decoder that cuts a byte stream into messages.

import CCastMessage
import Foundation

/// One message on a Cast channel: who sends it to whom, on which namespace, with a JSON payload.
public struct CastMessage: Sendable, Hashable {
    /// `sender-0`, `receiver-0`, or an application's transportId.
    public var source: String
    public var destination: String
    /// `urn:x-cast:com.google.cast.media` and the like.
    public var namespace: String
    /// The JSON text (every namespace route speaks uses JSON; binary payloads arrive empty with `isBinary`).
    public var payload: String
    /// Whether the message carried a binary payload (device authentication), which route does not read.
    public var isBinary = false

    /// A JSON message.
    public init(source: String, destination: String, namespace: String, payload: String) {
        self.source = source
        self.destination = destination
        self.namespace = namespace
        self.payload = payload
    }
}

/// Why a Cast frame could not be read or written.
public enum CastFrameError: Error, Equatable, CustomStringConvertible {
    /// A frame announced more than `CastFrame.maxLength` bytes.
    case tooLong(Int)
    /// The bytes are not a CastMessage.
    case malformed(String)

    public var description: String {
        switch self {
        case .tooLong(let length): return "sent a frame of \(length) bytes (the limit is \(CastFrame.maxLength))"
        case .malformed(let what): return "sent a malformed frame (\(what))"
        }
    }
}

/// Packs and unpacks frames.
public enum CastFrame {
    /// The largest frame either side may send (the receivers' own limit): a longer one closes the connection.
    public static let maxLength = 65536

    /// The frame for `message`: its length, then its protobuf encoding.
    /// - Throws: `CastFrameError.tooLong` when it would not fit in a frame.
    public static func encode(_ message: CastMessage) throws -> [UInt8] {
        var packed: [UInt8] = []
        var size = 0
        message.source.withCString { source in
            message.destination.withCString { destination in
                message.namespace.withCString { namespace in
                    message.payload.withCString { payload in
                        var wire = Extensions__Api__CastChannel__CastMessage()
                        extensions__api__cast_channel__cast_message__init(&wire)
                        wire.protocol_version = EXTENSIONS__API__CAST_CHANNEL__CAST_MESSAGE__PROTOCOL_VERSION__CASTV2_1_0
                        // protobuf-c only reads the strings while packing.
                        wire.source_id = UnsafeMutablePointer(mutating: source)
                        wire.destination_id = UnsafeMutablePointer(mutating: destination)
                        wire.namespace_ = UnsafeMutablePointer(mutating: namespace)
                        wire.payload_type = EXTENSIONS__API__CAST_CHANNEL__CAST_MESSAGE__PAYLOAD_TYPE__STRING
                        wire.payload_utf8 = UnsafeMutablePointer(mutating: payload)
                        size = extensions__api__cast_channel__cast_message__get_packed_size(&wire)
                        guard size <= maxLength else { return }
                        packed = [UInt8](repeating: 0, count: 4 + size)
                        packed.withUnsafeMutableBufferPointer { out in
                            _ = extensions__api__cast_channel__cast_message__pack(&wire, out.baseAddress! + 4)
                        }
                    }
                }
            }
        }
        guard size <= maxLength else { throw CastFrameError.tooLong(size) }
        for index in 0..<4 { packed[index] = UInt8(truncatingIfNeeded: size >> (24 - 8 * index)) }
        return packed
    }

    /// The message in `body` (a frame without its length).
    /// - Throws: `CastFrameError.malformed` when it is not a CastMessage, or its strings are not UTF-8.
    public static func decode(_ body: UnsafeRawBufferPointer) throws -> CastMessage {
        let bytes = body.bindMemory(to: UInt8.self)
        guard let wire = extensions__api__cast_channel__cast_message__unpack(nil, bytes.count, bytes.baseAddress) else {
            throw CastFrameError.malformed("not a CastMessage")
        }
        defer { extensions__api__cast_channel__cast_message__free_unpacked(wire, nil) }
        func text(_ field: UnsafeMutablePointer<CChar>?, _ name: String) throws -> String {
            guard let field else { return "" }
            guard let value = String(validatingCString: field) else { throw CastFrameError.malformed("\(name) is not UTF-8") }
            return value
        }
        var message = CastMessage(source: try text(wire.pointee.source_id, "source_id"),
                                  destination: try text(wire.pointee.destination_id, "destination_id"),
                                  namespace: try text(wire.pointee.namespace_, "namespace"),
                                  payload: "")
        if wire.pointee.payload_type == EXTENSIONS__API__CAST_CHANNEL__CAST_MESSAGE__PAYLOAD_TYPE__BINARY {
            message.isBinary = true
        } else {
            message.payload = try text(wire.pointee.payload_utf8, "payload_utf8")
        }
        return message
    }
}

/// Cuts a byte stream into messages: feed it what the connection reads, take messages while there are whole ones.
public struct CastFrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    /// Where the next frame starts in `buffer` (consumed bytes are dropped in batches, not one frame at a time).
    private var start = 0

    /// An empty decoder.
    public init() {}

    /// Adds bytes read from the connection.
    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, or nil until more bytes arrive.
    /// - Throws: `CastFrameError` for a frame over the limit or one that is not a CastMessage; the stream
    ///   cannot be trusted after that (close the connection).
    public mutating func next() throws -> CastMessage? {
        guard buffer.count - start >= 4 else { return nil }
        let length = (0..<4).reduce(0) { $0 << 8 | Int(buffer[start + $1]) }
        guard length <= CastFrame.maxLength else { throw CastFrameError.tooLong(length) }
        guard buffer.count - start - 4 >= length else { return nil }
        let bodyStart = start + 4
        let message = try buffer.withUnsafeBytes { all in
            try CastFrame.decode(UnsafeRawBufferPointer(rebasing: all[bodyStart..<(bodyStart + length)]))
        }
        start = bodyStart + length
        return message
    }
}
