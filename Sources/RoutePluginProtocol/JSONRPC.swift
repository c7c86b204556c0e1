// JSONRPC: the JSON-RPC 2.0 messages of the plugin channel — requests, notifications, responses and errors —
// parsed from and written to frame bodies, with typed parameters and results.

import Foundation

/// A request id: the host sends numbers; a plugin's may be numbers or strings.
public enum RPCID: Hashable, Sendable, CustomStringConvertible {
    case number(Int)
    case string(String)

    var json: Any {
        switch self {
        case .number(let n): return n
        case .string(let s): return s
        }
    }

    public var description: String {
        switch self {
        case .number(let n): return String(n)
        case .string(let s): return s
        }
    }
}

/// A JSON-RPC error object. `message` is one line a person can read.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String

    /// An error to send.
    public init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    // JSON-RPC's own codes.
    public static let parseError = -32700
    public static let invalidRequest = -32600
    public static let methodNotFound = -32601
    public static let invalidParams = -32602
    public static let internalError = -32603
    // route's codes (PROTOCOL.md, "Errors").
    /// The device cannot be reached.
    public static let unreachable = 1
    /// The device refused or failed the command.
    public static let refused = 2
    /// The device cannot do this at all.
    public static let unsupported = 3
    /// The device cannot play the media as sent (a converted stream may play).
    public static let mediaRefused = 4
    /// The device answered with something the plugin cannot use.
    public static let unusable = 5
    /// No such session (never opened, or closed).
    public static let unknownSession = 6
    /// No protocol version both sides speak.
    public static let versionMismatch = 10
}

/// One message of the channel.
public enum RPCMessage: Sendable {
    /// A call that wants a reply with the same id; `params` is its raw JSON (nil when absent).
    case request(id: RPCID, method: String, params: Data?)
    /// A call that wants no reply.
    case notification(method: String, params: Data?)
    /// A successful reply; `result` is its raw JSON.
    case response(id: RPCID, result: Data)
    /// A failed reply (id nil when the request could not be read).
    case failure(id: RPCID?, error: RPCError)

    /// Parses a frame body.
    /// - Throws: `RPCError` with `parseError` or `invalidRequest` when it is not a JSON-RPC 2.0 message.
    public init(parsing body: Data) throws(RPCError) {
        guard let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else {
            if let number = Self.numberOutOfRange(in: body) {
                throw RPCError(code: RPCError.parseError, message: "a number out of range (\(number)) in \(FrameDecoder.sample(body))")
            }
            throw RPCError(code: RPCError.parseError, message: "not JSON: \(FrameDecoder.sample(body))")
        }
        guard let fields = object as? [String: Any], fields["jsonrpc"] as? String == "2.0" else {
            throw RPCError(code: RPCError.invalidRequest, message: "not a JSON-RPC 2.0 object: \(FrameDecoder.sample(body))")
        }
        let id = try Self.id(fields["id"])
        if let method = fields["method"] as? String {
            let params = try Self.raw(fields["params"])
            self = id.map { .request(id: $0, method: method, params: params) } ?? .notification(method: method, params: params)
        } else if let error = fields["error"] as? [String: Any] {
            let code = (error["code"] as? NSNumber)?.intValue ?? RPCError.internalError
            self = .failure(id: id, error: RPCError(code: code, message: error["message"] as? String ?? "(no message)"))
        } else if let id, fields.keys.contains("result") {
            self = .response(id: id, result: try Self.raw(fields["result"]) ?? Data("null".utf8))
        } else {
            throw RPCError(code: RPCError.invalidRequest, message: "neither a call nor a reply: \(FrameDecoder.sample(body))")
        }
    }

    /// The first number in `body` that no Double holds (`1e999`: JSON allows it, the parser refuses it), cut to 40
    /// characters, so that the message says what was wrong rather than "not JSON".
    package static func numberOutOfRange(in body: Data) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        var index = text.startIndex
        while index < text.endIndex {
            guard text[index] == "-" || text[index].isASCII && text[index].isNumber else {
                index = text.index(after: index)
                continue
            }
            let end = text[index...].firstIndex { !($0.isASCII && ($0.isNumber || "+-.eE".contains($0))) } ?? text.endIndex
            let literal = text[index..<end]
            if let value = Double(literal), value.isInfinite { return String(literal.prefix(40)) }
            index = end == index ? text.index(after: index) : end
        }
        return nil
    }

    private static func id(_ value: Any?) throws(RPCError) -> RPCID? {
        switch value {
        case nil, is NSNull: return nil
        case let text as String: return .string(text)
        case let number as NSNumber where Int(exactly: number.doubleValue) != nil:
            return .number(Int(exactly: number.doubleValue)!)
        default: throw RPCError(code: RPCError.invalidRequest, message: "an id that is neither a string nor an integer")
        }
    }

    private static func raw(_ value: Any?) throws(RPCError) -> Data? {
        guard let value, !(value is NSNull) else { return nil }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) else {
            throw RPCError(code: RPCError.invalidRequest, message: "params that cannot be read")
        }
        return data
    }

    /// Parameters as JSON-RPC allows them: an object or array, else left out (`Nothing` encodes as null).
    private static func structured(_ params: Data?) -> Any? {
        guard let params, let value = try? JSONSerialization.jsonObject(with: params, options: [.fragmentsAllowed]) else { return nil }
        return value is [String: Any] || value is [Any] ? value : nil
    }

    /// The message as a frame body.
    public func encoded() -> Data {
        var object: [String: Any] = ["jsonrpc": "2.0"]
        switch self {
        case .request(let id, let method, let params):
            object["id"] = id.json
            object["method"] = method
            object["params"] = Self.structured(params)
        case .notification(let method, let params):
            object["method"] = method
            object["params"] = Self.structured(params)
        case .response(let id, let result):
            object["id"] = id.json
            object["result"] = (try? JSONSerialization.jsonObject(with: result, options: [.fragmentsAllowed])) ?? NSNull()
        case .failure(let id, let error):
            object["id"] = id?.json ?? NSNull()
            object["error"] = ["code": error.code, "message": error.message]
        }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }
}

/// The JSON of typed parameters and results.
public enum RPCCoding {
    /// `value` as JSON.
    public static func encode<T: Encodable>(_ value: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data("null".utf8)
    }

    /// Decodes `raw` (nil: absent) as `T`.
    /// - Throws: `RPCError` with `invalidParams`, saying what did not fit.
    public static func decode<T: Decodable>(_ type: T.Type, from raw: Data?) throws(RPCError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: raw ?? Data("{}".utf8))
        } catch let error as DecodingError {
            throw RPCError(code: RPCError.invalidParams, message: "\(T.self): \(describe(error))")
        } catch {
            throw RPCError(code: RPCError.invalidParams, message: "\(T.self): \(error)")
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \"\([path(context), key.stringValue].filter { !$0.isEmpty }.joined(separator: "."))\""
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\"\(path(context))\": \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}

/// A result or parameters with nothing in them (`null` or `{}`).
public struct Nothing: Codable, Sendable {
    /// Nothing.
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encodeNil()
    }
}
