// route-picker: the device picker window, in a process of its own (the route service starts it for a PickDevice
// request, so that a fault in the window never takes the service down). It lists the service's devices live, with
// what each plays; prints the chosen device's id and exits 0, or exits 1 when closed or Escape is pressed, 3 without a
// display, 4 when the service cannot be reached or leaves, 5 when a window that only moves finds nothing to move. A
// row whose device plays a session of the service's offers to move it; the window moves it through the service. Options: --media audio|video|image, --parent WINDOW
// ("x11:XID", "wayland:HANDLE"), --title TEXT, --move-from DEVICE-ID (the window only moves that device's session, and
// prints where it went), --close-on-hangup stdin (the service keeps stdin's other end: the window goes with it).

import CPickerShim
import FoundationEssentials
import Glibc
import RouteCLI
import RouteClient
import RouteCore
import Synchronization

/// What the window reports, set once on GTK's thread.
final class PickerOutcome: Sendable {
    let chosen = Mutex<String?>(nil)
    /// The service could not be reached, or left.
    let lost = Mutex(false)
    /// A window that only moves found nothing of the service's playing where it was to move from.
    let nothingToMove = Mutex(false)
    /// For each row whose device plays a session of the service's: the device id the session knows it by (what Move's
    /// `from` finds it by).
    let sources = Mutex<[String: String]>([:])
    /// The service, once connected: the window's moves go through it.
    let client = Mutex<RouteServiceClient?>(nil)
    /// The window, once made.
    let window = Mutex<PickerWindow?>(nil)
    let started = Date()
}

// The service that starts us ignores and blocks the signals it handles itself, and a child keeps both across exec:
// SIGTERM must end the window (Close, a client that left, the service stopping).
for number in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { signal(number, SIG_DFL) }
var unblocked = sigset_t()
sigemptyset(&unblocked)
for number in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&unblocked, number) }
pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard name.hasPrefix("--"), let value = arguments.popFirst() else {
        printError("route-picker: usage: route-picker [--media audio|video|image] [--parent WINDOW] [--title TEXT] [--move-from DEVICE-ID]")
        exit(2)
    }
    options[String(name.dropFirst(2))] = value
}
let media: PickMedia?
do { media = try options["media"].map(PickMedia.init(option:)) } catch {
    printError("route-picker: \(error)")
    exit(2)
}
guard route_picker_init() else {
    printError("route-picker: no display to open a window on (DISPLAY and WAYLAND_DISPLAY)")
    exit(3)
}

let outcome = PickerOutcome()
let context = Unmanaged.passRetained(outcome).toOpaque()
let title = options["title"] ?? media.map { "Play \($0.rawValue == "audio" ? "sound" : $0 == .image ? "pictures" : "a video") on…" } ?? "Play on a device"
/// The window, for the tasks that follow the devices and make its moves.
final class PickerWindow: @unchecked Sendable {
    // Safety: route_picker_set_rows, route_picker_move_finished and route_picker_cancel may be called from any thread
    // (they copy what they are given and hand it to GTK's).
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
let picker = route_picker_new(title, options["parent"] ?? "", { context, id in
    let outcome = Unmanaged<PickerOutcome>.fromOpaque(context!).takeUnretainedValue()
    outcome.chosen.withLock { $0 = id.map { String(cString: $0) } }
}, { context in
    let outcome = Unmanaged<PickerOutcome>.fromOpaque(context!).takeUnretainedValue()
    let now = Date()
    printError("route-picker: first device shown at \(fixedPoint(now.timeIntervalSince1970, decimals: 3)), "
               + "\(fixedPoint(now.timeIntervalSince(outcome.started) * 1000, decimals: 0)) ms after start")
}, { context, from, to in
    // The person chose where a session goes: the service moves it, and the window hears how that went.
    let outcome = Unmanaged<PickerOutcome>.fromOpaque(context!).takeUnretainedValue()
    guard let window = outcome.window.withLock({ $0 }) else { return }
    guard let from, let to, let client = outcome.client.withLock({ $0 }) else {
        return route_picker_move_finished(window.pointer, "the route service is not connected")
    }
    let row = String(cString: from), target = String(cString: to)
    let source = outcome.sources.withLock { $0[row] } ?? row
    Task.detached {
        do {
            _ = try await client.move(to: target, from: source)
            route_picker_move_finished(window.pointer, nil)
        } catch {
            route_picker_move_finished(window.pointer, "\(error)")
        }
    }
}, context)
let window = PickerWindow(picker!)
outcome.window.withLock { $0 = window }
if options["close-on-hangup"] == "stdin" { route_picker_close_on_hangup(picker, STDIN_FILENO) }

/// Hands the rows to the window (copied there).
func show(_ entries: [PickerEntry], in window: PickerWindow) {
    var strings: [UnsafeMutablePointer<CChar>?] = []
    defer { strings.forEach { free($0) } }
    func keep(_ text: String) -> UnsafePointer<CChar>? {
        let copy = strdup(text)
        strings.append(copy)
        return UnsafePointer(copy)
    }
    let rows = entries.map { entry in
        RoutePickerRow(id: keep(entry.id), name: keep(entry.name), subtitle: keep(entry.subtitle), icon: keep(entry.icon),
                       search: keep(entry.search), choosable: entry.choosable, session_title: entry.sessionTitle.flatMap(keep))
    }
    rows.withUnsafeBufferPointer { route_picker_set_rows(window.pointer, $0.baseAddress, Int32($0.count)) }
}

/// A window that only moves found nothing of the service's playing on the device it was to move from.
struct NothingToMove: Error, CustomStringConvertible {
    var from: String
    var description: String { "nothing of the route service's plays on \(from) any more" }
}

/// What the window shows: the devices and what plays on them, each as the service last said.
enum PickerNews: Sendable {
    case devices([MediaDevice])
    case playing([String: RouteServiceClient.Playing])
}

/// Follows the service's devices and what plays on them, and shows them (once both are known); when the service cannot
/// be reached or leaves, the window closes (exit 4) and says why on stderr (the service's log).
let following = Task.detached { [window, media, moveFrom = options["move-from"]] in
    do {
        let client = try await RouteServiceClient.connect(starting: nil)
        outcome.client.withLock { $0 = client }
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (news, tell) = AsyncStream<PickerNews>.makeStream()
            group.addTask {
                for try await update in client.deviceUpdates() { tell.yield(.devices(update.devices)) }
                throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the route service left the bus")
            }
            group.addTask {
                for try await playing in client.playingUpdates() { tell.yield(.playing(playing)) }
                throw RouteServiceError(name: RouteServiceAPI.ErrorName.failed, "the route service left the bus")
            }
            group.addTask {
                var devices: [MediaDevice]?, playing: [String: RouteServiceClient.Playing]?
                var moveFrom = moveFrom
                for await item in news {
                    switch item {
                    case .devices(let list): devices = list
                    case .playing(let now): playing = now
                    }
                    guard let devices, let playing else { continue }
                    let entries = PickerList.entries(devices, playing: playing, media: media)
                    // What each row's session is known by to the service (the row may be the device under another id).
                    outcome.sources.withLock { sources in
                        sources = [:]
                        for (key, now) in playing where now.session != nil {
                            sources[PickerList.device(key, in: devices)?.id ?? key] = key
                        }
                    }
                    if let from = moveFrom {
                        // A window that only moves: the row of the device its session plays on (the service names it by
                        // the session's device, whose id may be another of the listed device's routes), before the rows.
                        moveFrom = nil
                        let row = PickerList.device(from, in: devices)?.id ?? from
                        guard entries.contains(where: { $0.id == row && $0.sessionTitle != nil }) else { throw NothingToMove(from: from) }
                        route_picker_move_only(window.pointer, row)
                    }
                    show(entries, in: window)
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    } catch let error as NothingToMove {
        printError("route-picker: \(error)")
        outcome.nothingToMove.withLock { $0 = true }
        route_picker_cancel(window.pointer, "because there is nothing to move")
        return
    } catch {
        // The window has answered (its end cancels this), or the service has gone.
        if Task.isCancelled { return }
        printError("route-picker: \(error)")
    }
    outcome.lost.withLock { $0 = true }
    route_picker_cancel(window.pointer, "because the route service could not be reached")
}

route_picker_run(picker)
following.cancel()
guard let chosen = outcome.chosen.withLock({ $0 }) else {
    exit(outcome.nothingToMove.withLock { $0 } ? 5 : outcome.lost.withLock { $0 } ? 4 : 1)
}
print(chosen)
fflush(nil)
exit(0)
