// DBus: the one place route speaks D-Bus (GDBus, in gio) — the session bus connection, owning a name,
// exporting an object from introspection XML, signals, and calls to other objects (file descriptors included);
// the values it carries are DBusValue's (DBusValue.swift), and GVariant never leaves RouteGIO.

import CGIO
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// The answer to one method call, sent once (later calls do nothing): the reply's values, or an error
/// (`DBusError` keeps its name; any other becomes org.freedesktop.DBus.Error.Failed).
public final class DBusReply: Sendable {
    private let invocation: Mutex<Invocation?>
    /// The unique bus name of the caller (`:1.42`).
    public let sender: String

    fileprivate init(_ invocation: Invocation, sender: String) {
        self.invocation = Mutex(invocation)
        self.sender = sender
    }

    /// Answers the call.
    public func callAsFunction(_ result: Result<[DBusValue], any Error>) {
        guard let pending = invocation.withLock({ $0.take() }) else { return }
        switch result {
        case .success(let values):
            g_dbus_method_invocation_return_value(pending.pointer, values.isEmpty ? nil : DBusValue.tuple(values))
        case .failure(let error as DBusError):
            answer(pending.pointer, error: error.name, error.message)
        case .failure(let error):
            answer(pending.pointer, error: "org.freedesktop.DBus.Error.Failed", "\(error)")
        }
    }

    deinit { self(.failure(DBusError("the call was dropped"))) }
}

/// What an exported object does when it is called: GDBus calls these on the D-Bus loop's thread, in the
/// order the calls arrive, so each must return at once; `call` answers through `reply`, now or later.
public protocol DBusObjectHandler: Sendable {
    /// A method call; `reply` takes the reply's values (none for a method without out arguments).
    func call(interface: String, method: String, arguments: [DBusValue], reply: DBusReply)
    /// A property's current value; nil when there is none.
    func property(interface: String, name: String) -> DBusValue?
    /// Sets a writable property.
    func setProperty(interface: String, name: String, value: DBusValue) throws
}

/// A connection to the user's session bus.
///
/// Signals may be emitted from any thread; method calls and property reads of exported objects arrive on
/// `DBusConnection.loop`'s thread.
public final class DBusConnection: Sendable {
    private nonisolated(unsafe) let connection: OpaquePointer
    /// The loop exported objects' calls are dispatched on: D-Bus gets a thread of its own, so that a busy
    /// media server never delays the desktop's controls.
    static let loop = GLibLoop(name: "route-dbus")

    /// The session bus's address: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when it exists;
    /// nil when neither (GLib's own fallback, X11 autolaunch, would start a bus of its own).
    public static var sessionAddress: String? {
        let environment = ProcessInfo.processInfo.environment
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
           FileManager.default.fileExists(atPath: runtime + "/bus") {
            return "unix:path=\(runtime)/bus"
        }
        return nil
    }

    /// Whether the session bus's address leads to a bus that takes connections. An address left over from another
    /// login (an SSH or tmux session's, a container's) names a socket that is gone, or that nobody listens on: that is
    /// no bus. Only Unix sockets are tried (at once, without a bus handshake); other transports are taken as answering.
    public static var sessionBusAnswers: Bool {
        guard let address = sessionAddress else { return false }
        return address.split(separator: ";").contains { accepts(String($0)) }
    }

    /// A D-Bus address value with its %XX escapes decoded (GLib's URI unescaping: the same escapes); nil when one is
    /// malformed or the bytes are not UTF-8.
    private static func unescaped(_ value: String) -> String? {
        guard let decoded = g_uri_unescape_string(value, nil) else { return nil }
        defer { g_free(decoded) }
        return String(validatingCString: decoded)
    }

    /// Whether one D-Bus address (`unix:path=…`, `unix:abstract=…`) accepts a connection.
    private static func accepts(_ address: String) -> Bool {
        guard address.hasPrefix("unix:") else { return true }
        var keys: [String: String] = [:]
        for pair in address.dropFirst(5).split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { keys[parts[0]] = unescaped(parts[1]) ?? parts[1] }
        }
        let name: [UInt8]
        if let path = keys["path"] { name = Array(path.utf8) } else if let abstract = keys["abstract"] { name = [0] + Array(abstract.utf8) } else { return true }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
        guard name.count < capacity else { return true }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: name) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return true }
        defer { close(descriptor) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        return withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) == 0 }
        }
    }

    /// Connects to the session bus (or the bus at `address`).
    /// - Throws: `DBusError` when there is none, or it refuses the connection.
    public static func session(address: String? = nil) throws -> DBusConnection {
        guard let address = address ?? sessionAddress else {
            throw DBusError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus)")
        }
        // Blocking, with no deadline of its own: the caller runs it on a thread it can give up on (never the D-Bus
        // loop's, which every exported object needs). `isClosed` tells when the bus has gone.
        // Made on the D-Bus loop (asynchronously, so the loop never blocks): GDBus tells a connection's end ("closed")
        // in the main context it was made in, holding a reference until then; made on a thread whose context nobody
        // runs, every connection ever closed would stay in memory (one per cast's MPRIS player, in a service).
        let made = ConnectionBox()
        let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
            | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        try loop.perform {
            g_dbus_connection_new_for_address(address, flags, nil, nil, { _, result, data in
                let made = Unmanaged<ConnectionBox>.fromOpaque(data!).takeRetainedValue()
                var error: UnsafeMutablePointer<GError>?
                let connection = g_dbus_connection_new_for_address_finish(result, &error)
                made.finish(connection.map { .success($0) } ?? .failure(GLibError("", error)))
            }, Unmanaged.passRetained(made).toOpaque())
        }
        switch made.wait() {
        case .success(let connection): return DBusConnection(connection)
        case .failure(let error):
            throw DBusError("cannot connect to the session bus at \(address)" + (error.description.isEmpty ? "" : error.description))
        }
    }

    /// Where the loop hands a new connection (or GLib's reason there is none) to the thread waiting for it.
    private final class ConnectionBox: @unchecked Sendable {
        // Safety: `result` is written once, before `done` is signalled, and read after it.
        private var result: Result<OpaquePointer, GLibError>?
        private let done = DispatchSemaphore(value: 0)

        func finish(_ result: Result<OpaquePointer, GLibError>) {
            self.result = result
            done.signal()
        }

        func wait() -> Result<OpaquePointer, GLibError> {
            done.wait()
            return result!
        }
    }

    private init(_ connection: OpaquePointer) {
        self.connection = connection
        g_dbus_connection_set_exit_on_close(connection, 0)
    }

    deinit {
        g_dbus_connection_close_sync(connection, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    /// Takes `name` on the bus, failing when someone else has it.
    public func requestName(_ name: String) throws {
        // DBUS_NAME_FLAG_DO_NOT_QUEUE (4); the answer 1 is DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER.
        let reply = try callBus("RequestName", [.string(name), .uint32(4)])
        guard case .uint32(1)? = reply.first else {
            throw DBusError("the bus name \(name) is taken by another process")
        }
    }

    /// Gives `name` back (best effort: the bus drops it anyway when the process ends).
    public func releaseName(_ name: String) {
        _ = try? callBus("ReleaseName", [.string(name)], timeout: 1000)
    }

    /// Whether the bus has gone (the daemon ended, or the connection broke).
    public var isClosed: Bool { g_dbus_connection_is_closed(connection) != 0 }

    /// The unique name of the connection (`:1.42`).
    public var uniqueName: String { g_dbus_connection_get_unique_name(connection).map { String(cString: $0) } ?? "" }

    private func callBus(_ method: String, _ arguments: [DBusValue], timeout: Int32 = 5000) throws -> [DBusValue] {
        var error: UnsafeMutablePointer<GError>?
        guard let reply = g_dbus_connection_call_sync(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                      "org.freedesktop.DBus", method, DBusValue.tuple(arguments), nil,
                                                      G_DBUS_CALL_FLAGS_NONE, timeout, nil, &error) else {
            throw DBusError(GLibError("the session bus refused \(method)", error).description)
        }
        defer { g_variant_unref(reply) }
        return values(of: reply) ?? []
    }

    /// Exports the interfaces of `introspectionXML` (a `<node>`) at `path`, answered by `handler`, until the
    /// registration is ended.
    /// - Throws: `DBusError` when the XML is not valid or the path is taken.
    public func export(path: String, introspectionXML: String, handler: any DBusObjectHandler) throws -> DBusRegistration {
        var error: UnsafeMutablePointer<GError>?
        guard let node = g_dbus_node_info_new_for_xml(introspectionXML, &error) else {
            throw DBusError(GLibError("invalid introspection XML", error).description)
        }
        defer { g_dbus_node_info_unref(node) }
        nonisolated(unsafe) let connection = self.connection
        nonisolated(unsafe) let interfaces = node.pointee.interfaces!
        let ids: [UInt32] = try Self.loop.perform {
            var ids: [UInt32] = []
            var index = 0
            while let interface = interfaces[index] {
                index += 1
                var vtable = GDBusInterfaceVTable(method_call: dbusMethodCall, get_property: dbusGetProperty,
                                                  set_property: dbusSetProperty, padding: (nil, nil, nil, nil, nil, nil, nil, nil))
                let box = Unmanaged.passRetained(HandlerBox(handler)).toOpaque()
                var error: UnsafeMutablePointer<GError>?
                let id = g_dbus_connection_register_object(connection, path, interface, &vtable, box, { data in
                    Unmanaged<HandlerBox>.fromOpaque(data!).release()
                }, &error)
                guard id != 0 else {
                    for id in ids { g_dbus_connection_unregister_object(connection, id) }
                    throw DBusError(GLibError("cannot export \(path)", error).description)
                }
                ids.append(id)
            }
            return ids
        }
        return DBusRegistration(connection: self, ids: ids)
    }

    fileprivate func unregister(_ ids: [UInt32]) {
        for id in ids { g_dbus_connection_unregister_object(connection, id) }
    }

    /// Emits a signal from `path` (to every listener).
    public func emit(path: String, interface: String, signal: String, arguments: [DBusValue]) {
        var error: UnsafeMutablePointer<GError>?
        if g_dbus_connection_emit_signal(connection, nil, path, interface, signal, DBusValue.tuple(arguments), &error) == 0 {
            g_clear_error(&error)
        }
    }

    /// Calls `method` of the object at `path` on `destination` and returns the reply's values. The bus starts an
    /// activatable destination that is not running (unless `autoStart` is false).
    /// - Throws: `DBusError` with the remote error's name and message (org.freedesktop.DBus.Error.ServiceUnknown when
    ///   nobody has the name, …NoReply when `timeout` passed), or Failed when the connection is gone.
    public func call(_ destination: String, path: String, interface: String, method: String, _ arguments: [DBusValue] = [],
                     timeout: Duration = .seconds(25), autoStart: Bool = true) async throws -> [DBusValue] {
        nonisolated(unsafe) let connection = self.connection
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await withCheckedThrowingContinuation { continuation in
            let pending = PendingCall(continuation)
            // The reply arrives on the loop's thread: the thread-default context where the call was made.
            Self.loop.async {
                let descriptors = g_unix_fd_list_new()
                defer { g_object_unref(UnsafeMutableRawPointer(descriptors)) }
                let parameters = DBusValue.tuple(arguments, descriptors: descriptors)
                let flags = autoStart ? G_DBUS_CALL_FLAGS_NONE : G_DBUS_CALL_FLAGS_NO_AUTO_START
                g_dbus_connection_call_with_unix_fd_list(connection, destination, path, interface, method, parameters, nil, flags,
                                                         milliseconds, g_unix_fd_list_get_length(descriptors) > 0 ? descriptors : nil,
                                                         nil, dbusCallFinished, Unmanaged.passRetained(pending).toOpaque())
            }
        }
    }

    /// The signals that match (each filter nil: any), from now until the stream is dropped; the newest 256 wait when
    /// the reader falls behind.
    public func signals(sender: String? = nil, path: String? = nil, interface: String? = nil, member: String? = nil,
                        arg0: String? = nil) -> AsyncStream<DBusSignal> {
        let (stream, continuation) = AsyncStream<DBusSignal>.makeStream(bufferingPolicy: .bufferingNewest(256))
        nonisolated(unsafe) let connection = self.connection
        let box = Unmanaged.passRetained(SignalBox(continuation)).toOpaque()
        nonisolated(unsafe) let data = box
        let id: UInt32? = try? Self.loop.perform {
            g_dbus_connection_signal_subscribe(connection, sender, interface, member, path, arg0, G_DBUS_SIGNAL_FLAGS_NONE,
                                               dbusSignalReceived, data, { Unmanaged<SignalBox>.fromOpaque($0!).release() })
        }
        guard let id else {
            Unmanaged<SignalBox>.fromOpaque(box).release()
            continuation.finish()
            return stream
        }
        continuation.onTermination = { _ in
            // Keeps the connection until the subscription is gone.
            Self.loop.async { withExtendedLifetime(self) { g_dbus_connection_signal_unsubscribe(connection, id) } }
        }
        return stream
    }

    /// The process of the connection `sender` (a unique name such as ":1.42"), as the bus daemon says.
    /// - Throws: `DBusError` when the bus does not say (the sender left, or the bus cannot tell).
    public func processID(of sender: String) async throws -> Int32 {
        let reply = try await call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                   method: "GetConnectionUnixProcessID", [.string(sender)], timeout: .seconds(5))
        guard case .uint32(let pid)? = reply.first else {
            throw DBusError(name: "org.freedesktop.DBus.Error.Failed", "the bus did not say which process \(sender) is")
        }
        return Int32(bitPattern: pid)
    }

    /// Whether someone owns `name` on the bus now.
    public func nameHasOwner(_ name: String) async throws -> Bool {
        let reply = try await call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                   method: "NameHasOwner", [.string(name)], timeout: .seconds(5))
        return reply.first == .boolean(true)
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for `interface`'s changed properties.
    public func emitPropertiesChanged(path: String, interface: String, changed: [String: DBusValue]) {
        emit(path: path, interface: "org.freedesktop.DBus.Properties", signal: "PropertiesChanged",
             arguments: [.string(interface), .dictionary(changed), .strings([])])
    }
}

/// A signal received.
public struct DBusSignal: Sendable {
    /// The unique name of the connection that sent it.
    public var sender: String
    public var path: String
    public var interface: String
    public var name: String
    public var arguments: [DBusValue]
}

/// A call waiting for its reply.
private final class PendingCall: @unchecked Sendable {
    // Safety: resumed once, by the reply's callback on the D-Bus loop's thread.
    let continuation: CheckedContinuation<[DBusValue], any Error>
    init(_ continuation: CheckedContinuation<[DBusValue], any Error>) { self.continuation = continuation }
}

/// A signal subscription's stream.
private final class SignalBox {
    let continuation: AsyncStream<DBusSignal>.Continuation
    init(_ continuation: AsyncStream<DBusSignal>.Continuation) { self.continuation = continuation }
}

/// The error of a failed call: the remote error's name and its message alone.
private func remoteError(_ error: UnsafeMutablePointer<GError>?) -> DBusError {
    guard let error else { return DBusError("the call failed") }
    defer { g_error_free(error) }
    let name = g_dbus_error_get_remote_error(error)
    defer { g_free(name) }
    g_dbus_error_strip_remote_error(error)
    return DBusError(name: name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed", String(cString: error.pointee.message))
}

// Called on the D-Bus loop's thread with a call's reply.
private let dbusCallFinished: GAsyncReadyCallback = { source, result, data in
    let pending = Unmanaged<PendingCall>.fromOpaque(data!).takeRetainedValue()
    var error: UnsafeMutablePointer<GError>?
    var descriptors: UnsafeMutablePointer<GUnixFDList>?
    guard let reply = g_dbus_connection_call_with_unix_fd_list_finish(OpaquePointer(source), &descriptors, result, &error) else {
        return pending.continuation.resume(throwing: remoteError(error))
    }
    defer {
        g_variant_unref(reply)
        if let descriptors { g_object_unref(UnsafeMutableRawPointer(descriptors)) }
    }
    guard let values = values(of: reply, descriptors: descriptors) else {
        return pending.continuation.resume(throwing: DBusError("the reply holds a value of a type route does not read"))
    }
    pending.continuation.resume(returning: values)
}

// Called on the D-Bus loop's thread with a signal that matched a subscription.
private let dbusSignalReceived: GDBusSignalCallback = { _, sender, path, interface, name, parameters, data in
    let box = Unmanaged<SignalBox>.fromOpaque(data!).takeUnretainedValue()
    box.continuation.yield(DBusSignal(sender: sender.map { String(cString: $0) } ?? "", path: String(cString: path!),
                                      interface: String(cString: interface!), name: String(cString: name!),
                                      arguments: values(of: parameters) ?? []))
}

/// An exported object; `end()` (or dropping it) takes it off the bus.
public final class DBusRegistration: Sendable {
    private let connection: DBusConnection
    private let ids: Mutex<[UInt32]>

    fileprivate init(connection: DBusConnection, ids: [UInt32]) {
        self.connection = connection
        self.ids = Mutex(ids)
    }

    /// Takes the object off the bus; safe to call twice.
    public func end() {
        let ids = self.ids.withLock { ids in defer { ids = [] }; return ids }
        if !ids.isEmpty { connection.unregister(ids) }
    }

    deinit { end() }
}

private final class HandlerBox {
    let handler: any DBusObjectHandler
    init(_ handler: any DBusObjectHandler) { self.handler = handler }
}

/// A pending method invocation, handed to the task that answers it.
private struct Invocation: @unchecked Sendable {
    // Safety: GDBusMethodInvocation may be answered from any thread, exactly once (the return consumes it).
    let pointer: OpaquePointer
}

private func handler(_ data: gpointer?) -> any DBusObjectHandler {
    Unmanaged<HandlerBox>.fromOpaque(data!).takeUnretainedValue().handler
}

/// The values of a tuple (a call's arguments, a reply), in order, handles taken from `descriptors`; nil when one is of
/// a type route does not read.
private func values(of parameters: OpaquePointer?, descriptors: UnsafeMutablePointer<GUnixFDList>? = nil) -> [DBusValue]? {
    guard let parameters else { return [] }
    var values: [DBusValue] = []
    for index in 0..<g_variant_n_children(parameters) {
        let child = g_variant_get_child_value(parameters, index)!
        defer { g_variant_unref(child) }
        guard let value = DBusValue(child, descriptors: descriptors) else { return nil }
        values.append(value)
    }
    return values
}

/// Answers a call with an error, under a valid D-Bus error name (an invalid one would leave it unanswered).
private func answer(_ invocation: OpaquePointer, error name: String, _ message: String) {
    g_dbus_method_invocation_return_dbus_error(invocation, validErrorName(name), message)
}

/// `name` when it is a valid D-Bus error name, else org.freedesktop.DBus.Error.Failed.
private func validErrorName(_ name: String) -> String {
    g_dbus_is_error_name(name) != 0 ? name : "org.freedesktop.DBus.Error.Failed"
}

/// Sets a GError to a D-Bus error of `name` (for property reads and writes).
private func fail(_ failure: UnsafeMutablePointer<UnsafeMutablePointer<GError>?>?, _ name: String, _ message: String) {
    withVaList([]) { g_dbus_error_set_dbus_error_valist(failure, validErrorName(name), message, nil, $0) }
}

// Called on the D-Bus loop's thread (the thread-default context when the object was exported).
private let dbusMethodCall: GDBusInterfaceMethodCallFunc = { _, _, _, interface, method, parameters, invocation, data in
    let target = handler(data)
    let interface = String(cString: interface!), method = String(cString: method!)
    let sender = g_dbus_method_invocation_get_sender(invocation).map { String(cString: $0) } ?? ""
    let descriptors = g_dbus_message_get_unix_fd_list(g_dbus_method_invocation_get_message(invocation))
    let reply = DBusReply(Invocation(pointer: invocation!), sender: sender)
    guard let arguments = values(of: parameters, descriptors: descriptors) else {
        return reply(.failure(DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs",
                                        "\(method): an argument of a type route does not read, or a descriptor the call did not carry")))
    }
    target.call(interface: interface, method: method, arguments: arguments, reply: reply)
}

private let dbusGetProperty: GDBusInterfaceGetPropertyFunc = { _, _, _, interface, name, failure, data in
    let interface = String(cString: interface!), name = String(cString: name!)
    guard let value = handler(data).property(interface: interface, name: name) else {
        fail(failure, "org.freedesktop.DBus.Error.UnknownProperty", "no property \(name)")
        return nil
    }
    return value.makeVariant()
}

private let dbusSetProperty: GDBusInterfaceSetPropertyFunc = { _, _, _, interface, name, value, failure, data in
    let interface = String(cString: interface!), name = String(cString: name!)
    guard let value, let decoded = DBusValue(value) else {
        fail(failure, "org.freedesktop.DBus.Error.InvalidArgs", "\(name): unexpected type")
        return 0
    }
    do {
        try handler(data).setProperty(interface: interface, name: name, value: decoded)
        return 1
    } catch let error as DBusError {
        fail(failure, error.name, error.message)
        return 0
    } catch {
        fail(failure, "org.freedesktop.DBus.Error.Failed", "\(error)")
        return 0
    }
}
