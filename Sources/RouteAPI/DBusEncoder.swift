// DBusEncoder: an Encodable value straight into a D-Bus value tree, shaped as JSON would shape it (objects are a{sv},
// dates seconds since 1970), without writing and re-reading JSON — the service encodes every status it publishes.

import FoundationEssentials
import RouteGIO

/// Encodes values into `DBusValue`s: keyed containers are `a{sv}` (nil values left out), lists of strings `as`, lists
/// of objects `aa{sv}`, other lists `av`; integers `x`, floating point `d`, booleans `b`; a `Date` is its seconds since
/// 1970, a `URL` its absolute string, `Data` base64.
enum DBusEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> DBusValue {
        let slot = Slot()
        try slot.put(value, at: [])
        return slot.value ?? .dictionary([:])
    }

    /// One value being encoded: a primitive, or the children of a keyed or unkeyed container.
    final class Slot {
        var single: DBusValue?
        var keyed: [String: Slot]?
        var unkeyed: [Slot]?

        /// What was encoded here; nil when nothing (or nil) was.
        var value: DBusValue? {
            if let single { return single }
            if let keyed { return .dictionary(keyed.compactMapValues(\.value)) }
            guard let unkeyed else { return nil }
            // A nil inside a list keeps its place (as JSON's null does).
            let elements = unkeyed.map { $0.value ?? .strings([]) }
            if elements.allSatisfy({ if case .string = $0 { return true }; return false }) {
                return .strings(elements.compactMap { if case .string(let text) = $0 { return text }; return nil })
            }
            if !elements.isEmpty, elements.allSatisfy({ if case .dictionary = $0 { return true }; return false }) {
                return .array(elementType: "a{sv}", elements)
            }
            return .array(elementType: "v", elements.map { .variant($0) })
        }

        func put<T: Encodable>(_ value: T, at path: [any CodingKey]) throws {
            switch value {
            case let text as String: single = .string(text)
            case let flag as Bool: single = .boolean(flag)
            case let number as Double: single = try Self.finite(number, at: path)
            case let number as Float: single = try Self.finite(Double(number), at: path)
            case let number as any BinaryInteger:
                single = Int64(exactly: number).map { .int64($0) } ?? .double(Double(number))
            case let date as Date: single = .double(date.timeIntervalSince1970)
            case let url as URL: single = .string(url.absoluteString)
            case let data as Data: single = .string(data.base64EncodedString())
            default: try value.encode(to: SlotEncoder(slot: self, codingPath: path))
            }
        }

        private static func finite(_ number: Double, at path: [any CodingKey]) throws -> DBusValue {
            guard number.isFinite else {
                throw EncodingError.invalidValue(number, .init(codingPath: path, debugDescription: "\(number) is not a finite number"))
            }
            return .double(number)
        }

        func child(_ key: String) -> Slot {
            let slot = Slot()
            if keyed == nil { keyed = [:] }
            keyed![key] = slot
            return slot
        }

        func appended() -> Slot {
            let slot = Slot()
            if unkeyed == nil { unkeyed = [] }
            unkeyed!.append(slot)
            return slot
        }
    }

    private struct SlotEncoder: Encoder {
        let slot: Slot
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if slot.keyed == nil { slot.keyed = [:] }
            return KeyedEncodingContainer(Keyed(slot: slot, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if slot.unkeyed == nil { slot.unkeyed = [] }
            return Unkeyed(slot: slot, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { Single(slot: slot, codingPath: codingPath) }
    }

    private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws { _ = slot.child(key.stringValue) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try slot.child(key.stringValue).put(value, at: codingPath + [key])
        }
        mutating func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type, forKey key: Key) -> KeyedEncodingContainer<Nested> {
            SlotEncoder(slot: slot.child(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            SlotEncoder(slot: slot.child(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { SlotEncoder(slot: slot.child("super"), codingPath: codingPath) }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            SlotEncoder(slot: slot.child(key.stringValue), codingPath: codingPath + [key])
        }
    }

    private struct Unkeyed: UnkeyedEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]
        var count: Int { slot.unkeyed?.count ?? 0 }

        mutating func encodeNil() throws { _ = slot.appended() }
        mutating func encode<T: Encodable>(_ value: T) throws { try slot.appended().put(value, at: codingPath) }
        mutating func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type) -> KeyedEncodingContainer<Nested> {
            SlotEncoder(slot: slot.appended(), codingPath: codingPath).container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            SlotEncoder(slot: slot.appended(), codingPath: codingPath).unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { SlotEncoder(slot: slot.appended(), codingPath: codingPath) }
    }

    private struct Single: SingleValueEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { slot.single = nil }
        mutating func encode<T: Encodable>(_ value: T) throws { try slot.put(value, at: codingPath) }
    }
}
