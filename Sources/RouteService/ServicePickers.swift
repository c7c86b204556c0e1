// ServicePickers: the device picker requests the route service answers (PickDevice), as xdg-desktop-portal answers
// its own: each call gets a request object whose Response signal carries the choice (0 and the device) or says it was
// cancelled (1) or failed (2). The window is route-picker, a process of its own: a fault in GTK never takes the
// service or its sessions down.

import Foundation
import RouteAPI
import RouteCore
import RouteGIO
import Synchronization

/// The picker requests under way.
final class ServicePickers: Sendable {
    private let bus: DBusConnection
    private let device: @Sendable (String) -> MediaDevice?
    private let requests = AsyncStream<PickRequest>.makeStream()
    private let state = Mutex<(next: Int, open: [String: PickRequest])>((1, [:]))
    /// Windows open at once for the whole service: each is a GTK process (~170 MiB); more wait for none of them.
    static let mostOpen = 4

    /// Requests on `bus`; `device` finds a device by id (the one the window reports).
    init(bus: DBusConnection, device: @escaping @Sendable (String) -> MediaDevice?) {
        self.bus = bus
        self.device = device
    }

    /// The window's program: route-picker beside this executable (a build), or beside it in PREFIX/lib/route.
    static var program: String {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("route-picker").path
    }

    /// Starts a request from `sender` for a window over `parent` with `options`; returns its object's path.
    /// - Throws: `DBusError` (LimitsExceeded) while this app's window or too many are open, or when the bus refuses the object.
    func start(parent: String, options: RouteServiceAPI.PickOptions, sender: String) throws -> String {
        var arguments: [String] = ["--close-on-hangup", "stdin"], environment = ProcessInfo.processInfo.environment
        // The caller's display, whole: none of the service's own (a Wayland display GTK would prefer, its X authority).
        if options.namesADisplay {
            for variable in ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "GDK_BACKEND"] { environment[variable] = nil }
        }
        environment["DISPLAY"] = options.display ?? environment["DISPLAY"]
        environment["WAYLAND_DISPLAY"] = options.waylandDisplay ?? environment["WAYLAND_DISPLAY"]
        environment["XAUTHORITY"] = options.xauthority ?? environment["XAUTHORITY"]
        if let media = options.media { arguments += ["--media", media] }
        if let title = options.title { arguments += ["--title", title] }
        if let moveFrom = options.moveFrom { arguments += ["--move-from", moveFrom] }
        if !parent.isEmpty { arguments += ["--parent", parent] }
        // One window per client (a person answers one at a time), a few for the service.
        let request = try state.withLock { state in
            if let mine = state.open.values.first(where: { $0.sender == sender }) {
                throw DBusError(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                "PickDevice: this app's picker (\(mine.path)) is open; its Response comes first (Close ends it)")
            }
            guard state.open.count < Self.mostOpen else {
                throw DBusError(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                "PickDevice: \(Self.mostOpen) pickers are open already, the most the route service shows at once")
            }
            defer { state.next += 1 }
            let request = PickRequest(path: RouteServiceAPI.requestPathPrefix + String(state.next), sender: sender, arguments: arguments,
                                      environment: environment)
            state.open[request.path] = request
            return request
        }
        do { try request.publish(on: bus) } catch {
            _ = state.withLock { $0.open.removeValue(forKey: request.path) }
            throw error
        }
        requests.continuation.yield(request)
        return request.path
    }

    /// Runs each request's window until it answers, until cancelled (then every window is closed).
    func run() async {
        await withDiscardingTaskGroup { group in
            for await request in requests.stream {
                group.addTask {
                    await request.run(on: self.bus, device: self.device)
                    _ = self.state.withLock { $0.open.removeValue(forKey: request.path) }
                }
            }
        }
    }

    /// Closes the windows a client that left the bus asked for.
    func clientLeft(_ name: String) {
        for request in state.withLock({ Array($0.open.values) }) where request.sender == name { request.close() }
    }

    /// No more requests; those under way end as their windows close.
    func shutDown() {
        requests.continuation.finish()
        for request in state.withLock({ Array($0.open.values) }) { request.close() }
    }
}

/// A process's end, waited for once: whether it came before or after the wait began.
private final class Exit: Sendable {
    private let state = Mutex<(ended: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func happened() {
        let waiter = state.withLock { state in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { waiter in
            let ended = state.withLock { state in
                if !state.ended { state.waiter = waiter }
                return state.ended
            }
            if ended { waiter.resume() }
        }
    }
}

/// One PickDevice request: its object on the bus and its window's process.
final class PickRequest: Sendable, DBusObjectHandler {
    let path: String
    /// The client that asked.
    let sender: String
    private let arguments: [String]
    private let environment: [String: String]
    private struct State {
        var registration: DBusRegistration?
        var process: Process?
        /// Closed by its client (Close) or the service: no Response.
        var closed = false
        /// Its answer is decided (a Close after it changes nothing).
        var answered = false
    }
    private let state = Mutex(State())

    init(path: String, sender: String, arguments: [String], environment: [String: String]) {
        self.path = path
        self.sender = sender
        self.arguments = arguments
        self.environment = environment
    }

    /// Puts the request's object on the bus (before its path is handed out).
    func publish(on bus: DBusConnection) throws {
        let registration = try bus.export(path: path, introspectionXML: RouteServiceAPI.requestIntrospection, handler: self)
        state.withLock { $0.registration = registration }
    }

    /// Runs the window until it answers, then says what it answered (Response) unless closed, and leaves the bus.
    func run(on bus: DBusConnection, device: @Sendable (String) -> MediaDevice?) async {
        let (response, results) = await withTaskCancellationHandler {
            await answer(device: device)
        } onCancel: {
            close()
        }
        let (closed, registration) = state.withLock { state in
            state.answered = true
            return (state.closed, state.registration)
        }
        if !closed {
            bus.emit(path: path, interface: RouteServiceAPI.requestInterface, signal: "Response",
                     arguments: [.uint32(response), .dictionary(results)])
        }
        registration?.end()
    }

    /// The window's answer: 0 and the device chosen, 1 (closed, Escape), or 2 and why it failed.
    private func answer(device: @Sendable (String) -> MediaDevice?) async -> (UInt32, [String: DBusValue]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServicePickers.program)
        process.arguments = arguments
        process.environment = environment
        // Its stdin's other end stays here until it has answered: if the service dies, the window goes with it.
        let lifeline = Pipe()
        process.standardInput = lifeline
        let output = Pipe()
        process.standardOutput = output
        let exited = Exit()
        process.terminationHandler = { _ in exited.happened() }
        defer {
            try? lifeline.fileHandleForWriting.close()
            try? lifeline.fileHandleForReading.close()
        }
        do {
            let launched = try state.withLock { state -> Bool in
                guard !state.closed else { return false }
                try process.run()
                state.process = process
                return true
            }
            guard launched else { return (1, [:]) }
        } catch {
            try? output.fileHandleForReading.close()
            try? output.fileHandleForWriting.close()
            return (2, ["error": .string("the picker window could not be started (\(ServicePickers.program)): \(error)")])
        }
        // Its one line, read on a thread of its own (not the cooperative pool's), and its end.
        let data: Data = await withCheckedContinuation { done in
            DetachedThread.start(name: "route-picker-out") {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                try? output.fileHandleForReading.close()
                try? output.fileHandleForWriting.close()
                done.resume(returning: data)
            }
        }
        // Not cancellable: a window being closed (SIGTERM, then SIGKILL) ends soon, and only an ended one has a status.
        await exited.wait()
        let status = process.terminationStatus
        let id = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        switch (status, process.terminationReason) {
        case (0, .exit) where !id.isEmpty:
            guard let chosen = device(id), let value = try? DBusCoding.encode(chosen) else {
                return (2, ["error": .string("the device chosen (\(id)) has gone from the network")])
            }
            return (0, ["device": value])
        case (1, .exit): return (1, [:])
        case (3, .exit): return (2, ["error": .string("there is no display to show the picker on (DISPLAY, WAYLAND_DISPLAY)")])
        case (4, .exit): return (2, ["error": .string("the picker window could not reach the route service")])
        case (5, .exit): return (2, ["error": .string("what was to move no longer plays")])
        default:
            return (2, ["error": .string("the picker window ended with \(process.terminationReason == .uncaughtSignal ? "signal" : "status") \(status)")])
        }
    }

    /// Ends the window, without a Response (unless its answer is decided already): SIGTERM, then SIGKILL after 2 s.
    func close() {
        let process = state.withLock { state -> Process? in
            if !state.answered { state.closed = true }
            return state.process
        }
        guard let process, process.isRunning else { return }
        process.terminate()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) { if process.isRunning { kill(pid, SIGKILL) } }
    }

    func call(interface: String, method: String, arguments: [DBusValue], reply: DBusReply) {
        guard method == "Close" else {
            reply(.failure(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", "no method \(method)")))
            return
        }
        close()
        reply(.success([]))
    }

    func property(interface: String, name: String) -> DBusValue? { nil }

    func setProperty(interface: String, name: String, value: DBusValue) throws {
        throw DBusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) is read-only")
    }
}
