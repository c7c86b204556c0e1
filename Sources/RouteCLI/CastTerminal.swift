// CastTerminal: the terminal side of `route cast`, wherever the queue plays (in this process or in the route service) —
// the status line, the keys, the signals that stop it, its options, and the picker.

import CSignalForward
import FoundationEssentials
import Glibc
import RouteClient
import RouteCore
import Synchronization

/// Drives a cast from the terminal.
package enum CastTerminal {
    /// Drives a playing cast from the terminal — the status line, the keys, and the signals that stop it — while `run`
    /// plays it; returns `run`'s exit code, or 130 when a signal stopped it.
    /// A second Ctrl-C exits at once, after `beforeExit` (plugins this process runs go with it).
    package static func drive(_ session: some DrivenCast, device: MediaDevice, beforeExit: @escaping @Sendable () -> Void = {},
                      run: () async throws -> ExitCode) async throws -> ExitCode {
        let interrupted = InterruptFlag()
        let keys = KeyReader.isAvailable ? KeyReader() : nil
        // The first Ctrl-C stops the device and ends the cast; a second one exits at once (a device
        // that does not answer can hold the first for seconds).
        let signals = SignalHandlers.install {
            if interrupted.isSet {
                keys?.restore()
                printError("route cast: interrupted again; exiting without waiting for \(device.name)", overStatus: true)
                beforeExit()
                exit(ExitCode.interrupted.rawValue)
            }
            interrupted.set()
            Task { try? await session.controls.perform(.stop) }
        }
        defer { signals.cancel() }
        let keyTask = keys.map { reader in
            Task { for await key in reader.keys() { await press(key, on: session.controls) } }
        }
        let jobControl = keys.map { JobControl(keys: $0, onContinue: {}) }
        defer {
            keyTask?.cancel()
            jobControl?.cancel()
            keys?.restore()
        }
        let display = Task {
            let printer = StatusPrinter(live: isatty(STDERR_FILENO) == 1 && keys != nil)
            await withTaskGroup(of: Void.self) { group in
                if printer.live {
                    // The live line moves on by itself between the device's reports.
                    group.addTask {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: .seconds(1))
                            printer.redraw()
                        }
                    }
                }
                for await event in session.playbackEvents() {
                    switch event {
                    case .status(let status):
                        // Nobody reads our output any more (`| head -1`): stop the device rather than play on unseen.
                        if !printer.show(status), !interrupted.isSet {
                            interrupted.set()
                            Task { try? await session.controls.perform(.stop) }
                        }
                    case .notice(let words):
                        printError("route cast: \(words)", overStatus: true)
                    }
                }
                group.cancelAll()
            }
            printer.finish()
        }
        let code: ExitCode
        do {
            code = try await run()
        } catch {
            await display.value
            throw error
        }
        await display.value
        return interrupted.isSet ? .interrupted : code
    }

    private static func press(_ key: CastKey, on session: any SessionCommandTaker) async {
        do { try await session.perform(key.command) } catch { printError("\(error)", overStatus: true) }
    }

    /// Says which device a loosely matching query was taken to mean.
    package static func sayMeaning(of query: String, _ device: MediaDevice) {
        if let (match, _) = DeviceMatcher.candidates(for: query, in: [device]), match == .close {
            printError("route: \"\(query)\" is taken to mean \"\(device.name)\"")
        }
    }
}

/// What `route cast`'s terminal drives: a session in this process, or one the route service plays.
package protocol DrivenCast: Sendable {
    /// Statuses and notices in order, for one reader; ends with the cast.
    func playbackEvents() -> AsyncStream<QueueEvent>
    /// Where the keys and signals send their commands.
    var controls: any SessionCommandTaker { get }
}

/// The options of `cast` beyond the device: `--via`, `--subtitles`/`--no-subtitles`, `--image-duration`, and
/// `ROUTE_START_TIMEOUT` (seconds a device may take to start an item; default 20).
package struct CastOptions {
    package let settings: CastSettings
    /// Whether a folder's folders are played too.
    package let recursive: Bool
    /// Whether the queue plays in random order.
    package let shuffle: Bool

    package init(_ parsed: ParsedArguments) throws {
        var settings = CastSettings()
        let start = ProcessInfo.processInfo.environment["ROUTE_START_TIMEOUT"].flatMap(Double.init) ?? 20
        settings.startTimeout = .milliseconds(Int(min(3600, max(1, start)) * 1000))
        settings.via = parsed["via"]?.lowercased()
        if parsed.has("no-subtitles") {
            settings.subtitles = .off
        } else if let path = parsed["subtitles"] {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw UsageError(description: "--subtitles: cannot read \"\(path)\"")
            }
            settings.subtitles = .file(URL(fileURLWithPath: path).standardizedFileURL.path)
        }
        let text = parsed["image-duration"] ?? "5"
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 3600 else {
            throw UsageError(description: "--image-duration takes seconds from 0 to 3600, not \"\(text)\"")
        }
        settings.imageDuration = .milliseconds(Int(seconds * 1000))
        if let text = parsed["start"] {
            guard case .absolute(let seconds)? = SeekTarget(parsing: text), seconds.isFinite, seconds >= 0 else {
                throw UsageError(description: "--start takes a position (90, 1:30, 1:02:03), not \"\(text)\"")
            }
            settings.start = seconds
        }
        settings.loops = parsed.has("loop")
        settings.resumes = parsed.has("resume")
        self.settings = settings
        recursive = parsed.has("recursive")
        shuffle = parsed.has("shuffle")
    }
}

/// The terminal's device picker: `cast` on a terminal when several devices exist, and `route pick` without a display.
package enum Picker {
    /// Asks on the terminal which device (by number or name), listed as the picker window lists them; `media`'s
    /// devices alone can be chosen. Nil when the answer is empty (Enter, Ctrl-D): nothing chosen.
    /// - Throws: `RouteError` for a name that matches no device (or several), one that cannot play `media`.
    package static func ask(_ heading: String, from devices: [MediaDevice], media: PickMedia? = nil) throws -> MediaDevice? {
        let entries = PickerList.entries(devices, media: media)
        printError(heading)
        for (index, entry) in entries.enumerated() {
            printError("  \(index + 1)) \(entry.name)  (\(entry.subtitle))")
        }
        writeStandardError("Number or name (Enter: none): ")
        guard let answer = readLine()?.trimmingSpaces, !answer.isEmpty else { return nil }
        let ordered = entries.compactMap { entry in devices.first { $0.id == entry.id } }
        let chosen: MediaDevice
        if let number = Int(answer), (1...ordered.count).contains(number) {
            chosen = ordered[number - 1]
        } else if let computer = DeviceMatcher.thisComputer(answer, in: devices.filter({ $0.routes.contains { $0.provider == MediaRoute.localProvider } })) {
            chosen = computer
        } else {
            chosen = try DeviceMatcher.pick(answer, in: devices)
        }
        if let media, !chosen.capabilities.contains(media.capability) {
            throw RouteError.unsupported(device: chosen.name, what: "play \(media.rawValue)")
        }
        return chosen
    }

    /// `cast`'s question: the device to cast to.
    /// - Throws: `UsageError` when none was chosen.
    package static func choose(from devices: [MediaDevice]) throws -> MediaDevice {
        guard let device = try ask("Cast to which device?", from: devices) else { throw UsageError(description: "no device chosen") }
        return device
    }
}

/// Set once by the signal handler; read at exit to choose exit code 130.
package final class InterruptFlag: Sendable {
    private let value = Atomic(false)
    /// A flag not set yet.
    package init() {}
    package func set() { value.store(true, ordering: .sequentiallyConsistent) }
    package var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// SIGINT, SIGTERM and SIGHUP (the terminal closed) handlers that run a closure instead of killing the
/// process, so a cast can stop the device and restore the terminal. One set at a time: a later install replaces the
/// closure.
///
/// A real handler, installed before `install` returns, writes each signal to a pipe, and a thread of its own reads it
/// and runs the closure. Not a dispatch signal source: libdispatch tells the kernel of one later, on its own thread,
/// and a signal in between met SIG_IGN and was lost (a SIGHUP sent when the cast's first line showed, under load).
/// The pipe and its thread are made once and kept for the process's life, so no descriptor is ever closed under a
/// handler that may be writing to it.
package final class SignalHandlers: Sendable {
    private static let numbers = [SIGINT, SIGTERM, SIGHUP]
    private struct Shared {
        var handler: (@Sendable () -> Void)?
        var installs = 0
        /// The pipe's write end, once made (-1 when it could not be).
        var writeEnd: Int32?
    }
    private static let shared = Mutex(Shared())
    /// Which install this is: only the latest one's cancel acts.
    private let install: Int

    private init(install: Int) { self.install = install }

    /// Catches the signals from now on and runs `handler` (on the signal thread) once per signal, until `cancel()`.
    package static func install(_ handler: @escaping @Sendable () -> Void) -> SignalHandlers {
        let (number, writeEnd) = shared.withLock { shared -> (Int, Int32) in
            if shared.writeEnd == nil { shared.writeEnd = startReader() }
            shared.handler = handler
            shared.installs += 1
            return (shared.installs, shared.writeEnd ?? -1)
        }
        // No pipe (no descriptors left): the signals keep their default action, and end route.
        if writeEnd >= 0 {
            _ = numbers.withUnsafeBufferPointer { route_signals_forward(writeEnd, $0.baseAddress, Int32($0.count)) }
        }
        return SignalHandlers(install: number)
    }

    /// Makes the pipe and the thread that reads it; returns the write end, or -1.
    private static func startReader() -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard route_signals_pipe(&ends) == 0 else { return -1 }
        let readEnd = ends[0]
        DetachedThread.start(name: "route-signals") {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    // A signal that came after cancel() finds no closure, and is dropped.
                    shared.withLock { $0.handler }?()
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        return ends[1]
    }

    /// Gives the signals their default action again; the closure runs no more. Once, and only for the latest install.
    package func cancel() {
        let latest = Self.shared.withLock { shared -> Bool in
            guard shared.installs == install, shared.handler != nil else { return false }
            shared.handler = nil
            return true
        }
        guard latest else { return }
        for number in Self.numbers { signal(number, SIG_DFL) }
    }
}
