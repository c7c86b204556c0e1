// DBusValue: the values route sends and receives over D-Bus, and their GVariant form (made and read here and in
// DBus.swift alone: GVariant never leaves RouteGIO); descriptors that travel with a message; a D-Bus error.

import CGIO
import FoundationEssentials
import Glibc

/// A D-Bus value of the types route speaks.
public enum DBusValue: Sendable, Equatable {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    case int32(Int32)
    case int64(Int64)
    case uint32(UInt32)
    case double(Double)
    /// `as`
    case strings([String])
    /// `a{sv}`
    case dictionary([String: DBusValue])
    /// Any other array: its element's signature (`o`, `a{sv}`, `h`) and the elements.
    indirect case array(elementType: String, [DBusValue])
    /// `h`: a file descriptor passed with the message (received: owned by the `DBusDescriptor`).
    case fileDescriptor(DBusDescriptor)
    /// A `v` received (a property's new value in `Set`).
    indirect case variant(DBusValue)

    /// A new floating GVariant holding the value; descriptors are appended to `descriptors` (a GUnixFDList) and
    /// stand for their index in it.
    func makeVariant(_ descriptors: UnsafeMutablePointer<GUnixFDList>? = nil) -> OpaquePointer {
        switch self {
        case .string(let text): return g_variant_new_string(text)
        // An invalid path would give NULL (and a critical): "/" stands in for it.
        case .objectPath(let path): return g_variant_new_object_path(g_variant_is_object_path(path) != 0 ? path : "/")
        case .boolean(let flag): return g_variant_new_boolean(flag ? 1 : 0)
        case .int32(let number): return g_variant_new_int32(gint32(number))
        case .int64(let number): return g_variant_new_int64(gint64(number))
        case .uint32(let number): return g_variant_new_uint32(number)
        case .double(let number): return g_variant_new_double(number)
        case .strings(let list):
            var pointers = list.map { strdup($0) }
            defer { pointers.forEach { free($0) } }
            return pointers.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: max(1, buffer.count)) {
                    g_variant_new_strv(buffer.isEmpty ? nil : $0, gssize(buffer.count))
                }
            }
        case .dictionary(let entries):
            let type = g_variant_type_new("a{sv}")
            defer { g_variant_type_free(type) }
            let builder = g_variant_builder_new(type)
            defer { g_variant_builder_unref(builder) }
            for key in entries.keys.sorted() {
                let entry = g_variant_new_dict_entry(g_variant_new_string(key), g_variant_new_variant(entries[key]!.makeVariant(descriptors)))
                g_variant_builder_add_value(builder, entry)
            }
            return g_variant_builder_end(builder)
        case .array(let elementType, let elements):
            let type = g_variant_type_new(g_variant_type_string_is_valid(elementType) != 0 ? elementType : "s")
            defer { g_variant_type_free(type) }
            var children: [OpaquePointer?] = elements.map { $0.makeVariant(descriptors) }
            return children.withUnsafeMutableBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
        case .fileDescriptor(let descriptor):
            // An index into the message's descriptors (-1, "none", when the message carries none).
            guard let descriptors else { return g_variant_new_handle(-1) }
            return g_variant_new_handle(g_unix_fd_list_append(descriptors, descriptor.descriptor, nil))
        case .variant(let inner): return g_variant_new_variant(inner.makeVariant(descriptors))
        }
    }

    /// The value a GVariant holds, for the types above; nil for any other (or a handle to a descriptor the message
    /// does not carry). Handles are taken from `descriptors` (a GUnixFDList), duplicated.
    init?(_ variant: OpaquePointer, descriptors: UnsafeMutablePointer<GUnixFDList>? = nil) {
        let type = String(cString: g_variant_get_type_string(variant))
        switch type {
        case "s": self = .string(String(cString: g_variant_get_string(variant, nil)))
        case "o": self = .objectPath(String(cString: g_variant_get_string(variant, nil)))
        case "b": self = .boolean(g_variant_get_boolean(variant) != 0)
        case "i": self = .int32(Int32(g_variant_get_int32(variant)))
        case "x": self = .int64(Int64(g_variant_get_int64(variant)))
        case "u": self = .uint32(g_variant_get_uint32(variant))
        case "d": self = .double(g_variant_get_double(variant))
        case "h":
            let index = g_variant_get_handle(variant)
            guard let descriptors, index >= 0, index < g_unix_fd_list_get_length(descriptors) else { return nil }
            let descriptor = g_unix_fd_list_get(descriptors, index, nil)
            guard descriptor >= 0 else { return nil }
            self = .fileDescriptor(DBusDescriptor(owning: descriptor))
        case "v":
            let inner = g_variant_get_variant(variant)!
            defer { g_variant_unref(inner) }
            guard let value = DBusValue(inner, descriptors: descriptors) else { return nil }
            self = .variant(value)
        case "as":
            var strings: [String] = []
            for index in 0..<g_variant_n_children(variant) {
                let child = g_variant_get_child_value(variant, index)!
                defer { g_variant_unref(child) }
                strings.append(String(cString: g_variant_get_string(child, nil)))
            }
            self = .strings(strings)
        case "a{sv}":
            var entries: [String: DBusValue] = [:]
            for index in 0..<g_variant_n_children(variant) {
                let entry = g_variant_get_child_value(variant, index)!
                defer { g_variant_unref(entry) }
                let key = g_variant_get_child_value(entry, 0)!, boxed = g_variant_get_child_value(entry, 1)!
                defer { g_variant_unref(key); g_variant_unref(boxed) }
                let inner = g_variant_get_variant(boxed)!
                defer { g_variant_unref(inner) }
                guard let value = DBusValue(inner, descriptors: descriptors) else { return nil }
                entries[String(cString: g_variant_get_string(key, nil))] = value
            }
            self = .dictionary(entries)
        case _ where type.hasPrefix("a") && !type.hasPrefix("a{"):
            var elements: [DBusValue] = []
            for index in 0..<g_variant_n_children(variant) {
                let child = g_variant_get_child_value(variant, index)!
                defer { g_variant_unref(child) }
                guard let value = DBusValue(child, descriptors: descriptors) else { return nil }
                elements.append(value)
            }
            self = .array(elementType: String(type.dropFirst()), elements)
        default: return nil
        }
    }

    /// The dictionary's entries, the strings, or the array's elements, whichever the value holds (empty for others).
    public var elements: [DBusValue] {
        switch unwrapped {
        case .array(_, let elements): return elements
        case .strings(let strings): return strings.map { .string($0) }
        default: return []
        }
    }

    /// The value itself, without a `variant` wrapper.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// A tuple of values, as method arguments and signal bodies are; descriptors go to `descriptors`.
    static func tuple(_ values: [DBusValue], descriptors: UnsafeMutablePointer<GUnixFDList>? = nil) -> OpaquePointer {
        var children: [OpaquePointer?] = values.map { $0.makeVariant(descriptors) }
        return children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }
}

/// A file descriptor that came with a D-Bus message (a duplicate, closed when the last reference goes), or one to send
/// (borrowed: the message carries a duplicate of it).
public final class DBusDescriptor: Sendable, Equatable, CustomStringConvertible {
    /// The descriptor.
    public let descriptor: Int32
    private let owned: Bool

    /// A descriptor received: closed with this object.
    init(owning descriptor: Int32) {
        self.descriptor = descriptor
        owned = true
    }

    /// A descriptor to send; the caller keeps it open until the call is answered and closes it.
    public init(sending descriptor: Int32) {
        self.descriptor = descriptor
        owned = false
    }

    /// A duplicate the caller owns (it outlives this object); -1 when the process is out of descriptors.
    public func duplicate() -> Int32 { fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }

    deinit { if owned { close(descriptor) } }

    public static func == (a: DBusDescriptor, b: DBusDescriptor) -> Bool { a.descriptor == b.descriptor }
    public var description: String { "fd \(descriptor)" }
}

/// A D-Bus error to answer a method call with: its name (`org.freedesktop.DBus.Error.NotSupported`) and words.
public struct DBusError: Error, CustomStringConvertible {
    public var name: String
    public var message: String
    /// An error reply.
    public init(name: String = "org.freedesktop.DBus.Error.Failed", _ message: String) {
        self.name = name
        self.message = message
    }
    public var description: String { message }
}
