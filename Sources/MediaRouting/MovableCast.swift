// MovableCast: a cast that can move to another device while it plays — the queue goes on there from the item and the
// position it had, the old device stops, and whoever follows the cast (its events, its MPRIS player) sees one cast
// whose device changed. If the new device cannot take it, the cast plays on where it was and the move says why.

import Foundation
import RouteCore
import RouteMedia
import Synchronization

/// A queue of probed files playing on one device at a time, movable to another device (`move(to:)`): each device in
/// turn plays it as a `QueuedCast` of its own (a leg); one leg is current, and a move's leg becomes current once the
/// new device plays.
public final class MovableCast: Sendable {
    /// The queue's files, probed ahead (shared by every leg).
    public let probes: ProbeAhead
    /// What the cast says, in order, across moves: the current leg's statuses and notices (a leg being started by a
    /// move is heard once it is current), and a notice for each move. Ends when `run()` returns.
    public let events: AsyncStream<QueueEvent>

    private let router: MediaRouter
    private let settings: CastSettings
    private let servers: MediaServers?
    private let resume: ResumePositions
    private let log: RouteLog
    private let said: AsyncStream<QueueEvent>.Continuation
    private let statuses = Broadcast<QueueStatus>()
    private let signals: (stream: AsyncStream<Signal>, continuation: AsyncStream<Signal>.Continuation)

    private struct Leg: Sendable {
        let number: Int
        let cast: QueuedCast
        /// How its session ended (nil: without an error), once it has.
        let outcome = AsyncStream<(any Error)?>.makeStream()
    }
    private enum Signal: Sendable {
        /// A move's leg starts playing.
        case start(Leg)
        /// A leg was moved from: its device is stopped (the move does not wait for a device that is slow to confirm).
        case retire(Leg)
        case ended(Int, (any Error)?)
    }
    private struct State {
        var current: Leg
        /// Whether a move is under way (from its first check to its end: one at a time).
        var moveUnderWay = false
        /// The leg a move is starting, until it plays or fails.
        var moving: Leg?
        var nextLeg = 1
        /// Each leg's latest status.
        var latest: [Int: QueueStatus] = [:]
        /// The legs whose session has ended.
        var endedLegs: Set<Int> = []
        /// The current leg ended (the cast is over), or the cast was asked to stop.
        var over = false
        var stopAsked = false
    }
    private let state: Mutex<State>

    /// A cast of `probes` to `device`, as `QueuedCast` makes one; nothing plays until `run()`.
    /// - Throws: `RouteError.unsupported` when `settings.via` names no route of the device.
    public init(_ probes: ProbeAhead, on device: MediaDevice, router: MediaRouter, settings: CastSettings,
                servers: MediaServers? = nil, resume: ResumePositions = .shared, log: RouteLog = .discard) throws {
        let first = try QueuedCast(probes, on: device, router: router, settings: settings, servers: servers, resume: resume, log: log)
        self.probes = probes
        self.router = router
        self.settings = settings
        self.servers = servers
        self.resume = resume
        self.log = log
        (events, said) = AsyncStream<QueueEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        signals = AsyncStream<Signal>.makeStream()
        state = Mutex(State(current: Leg(number: 0, cast: first)))
    }

    /// The session playing the queue now (commands go to it).
    public var session: QueueSession { state.withLock { $0.current.cast.session } }

    /// The device playing the queue now.
    public var device: MediaDevice { session.device }

    /// The devices the cast plays on now: the current one, and the one a move is starting.
    public var devices: [MediaDevice] {
        state.withLock { state in [state.current.cast.session.device] + (state.moving.map { [$0.cast.session.device] } ?? []) }
    }

    /// The current leg's statuses across moves, starting with the latest.
    public func statusUpdates() -> AsyncStream<QueueStatus> { statuses.subscribe() }

    /// Says `words` among the cast's notices.
    public func say(_ words: String) {
        said.yield(.notice(words))
    }

    /// Plays the queue, on one device after another as it is moved; returns (or throws) as the current leg's session
    /// does: the queue ended, it was stopped, or the device playing it failed.
    public func run() async throws {
        defer {
            state.withLock { $0.over = true }
            said.finish()
            statuses.finish()
        }
        let first = state.withLock { $0.current }
        let failure: (any Error)? = await withDiscardingTaskGroup { group in
            var signals = self.signals.stream.makeAsyncIterator()
            var leg: Leg? = first
            while true {
                if let starting = leg {
                    group.addTask { await self.forward(starting) }
                    group.addTask {
                        var failure: (any Error)?
                        do { try await starting.cast.run() } catch { failure = error }
                        starting.cast.preparer.close()
                        // Decided under the lock, against a move's switch: the current leg's end is the cast's.
                        self.state.withLock { state in
                            state.endedLegs.insert(starting.number)
                            if state.current.number == starting.number { state.over = true }
                        }
                        starting.outcome.continuation.yield(failure)
                        starting.outcome.continuation.finish()
                        self.signals.continuation.yield(.ended(starting.number, failure))
                    }
                    leg = nil
                }
                switch await signals.next() {
                case .start(let next)?: leg = next
                case .retire(let old)?: group.addTask { try? await old.cast.session.stop() }
                case .ended(let number, let failure)?:
                    // A leg that was moved from, or a move's leg that failed to start: the cast goes on.
                    let (ending, moving) = state.withLock { ($0.over && $0.current.number == number, $0.moving) }
                    guard ending else { continue }
                    // The cast is over: a move under way is called off (its device stopped), and a device moved from
                    // a moment ago is stopped.
                    if let moving { try? await moving.cast.session.stop() }
                    await settle(&signals)
                    return failure
                case nil: return nil
                }
            }
        }
        // Items ahead of where the cast ended are probed no more.
        await probes.cancel()
        if let failure { throw failure }
    }

    /// What was asked of `run()` but not yet done when the cast ended: a device moved from is stopped, and a move's
    /// leg that never started says so (its move then fails).
    private func settle(_ signals: inout AsyncStream<Signal>.Iterator) async {
        self.signals.continuation.finish()
        while let signal = await signals.next() {
            switch signal {
            case .retire(let old): try? await old.cast.session.stop()
            case .start(let leg):
                leg.outcome.continuation.yield(Self.refused(leg.cast.session.device, "the cast ended while it was moving"))
                leg.outcome.continuation.finish()
            case .ended: break
            }
        }
    }

    /// Hands a leg's events on while it is the current one (a move's leg before it plays: its notices only).
    private func forward(_ leg: Leg) async {
        for await event in leg.cast.events {
            state.withLock { state in
                if case .status(let status) = event { state.latest[leg.number] = status }
                if state.current.number == leg.number {
                    said.yield(event)
                    if case .status(let status) = event { statuses.send(status) }
                } else if case .notice = event {
                    // A move's new device before it plays, a device moved from (one that did not confirm its stop).
                    said.yield(event)
                }
            }
        }
    }

    /// How long a move waits for the new device to play before it gives up.
    public static let moveTimeout: Duration = .seconds(15)

    /// Moves the cast to `device`: the item playing goes on there from its position (converted if the device needs
    /// it), then the old device stops; paused, it stays paused. The old device is paused meanwhile, and plays on if
    /// the new one fails.
    /// - Returns: the device the cast was on.
    /// - Throws: `RouteError` saying why the new device did not take the cast (the cast plays on where it was), that
    ///   it plays there already, that another move is under way, or that the cast is over.
    @discardableResult
    public func move(to device: MediaDevice, timeout: Duration = MovableCast.moveTimeout) async throws -> MediaDevice {
        let from = try state.withLock { state in
            try Self.check(state, moving: device)
            state.moveUnderWay = true
            return state.current
        }
        defer { state.withLock { $0.moveUnderWay = false } }
        let old = from.cast.session.device
        // One device at a time is heard: the old one waits, paused, for the new one to play; where it paused is where
        // the new one starts. A session paused by its person stays paused.
        let wasPaused = await from.cast.session.playback.state == .paused
        if !wasPaused { try? await from.cast.session.pause() }
        let playback = await from.cast.session.playback
        let index = await from.cast.session.currentIndex
        let live = (try? await probes.info(index))?.isLive ?? false
        var moved = settings
        moved.via = nil
        moved.firstItem = index
        moved.start = live || playback.position < 0.5 ? nil : playback.position
        await probes.playing(on: device)
        // Undoes the move's start: the new leg stopped, the old device as it was, unless the cast is over.
        func callOff(_ leg: Leg?, _ reason: any Error) async -> RouteError {
            let over = state.withLock { state in
                state.moving = nil
                return state.over || state.stopAsked
            }
            if let leg { try? await leg.cast.session.stop() }
            await probes.playing(on: old)
            if over { return Self.refused(device, "the cast ended while it was moving") }
            if !wasPaused { try? await from.cast.session.play() }
            return Self.refused(device, "\(Self.words(reason)); it still plays on \(old.name)",
                                code: (reason as? RouteError)?.code == .deviceUnreachable ? .deviceUnreachable : .commandFailed)
        }
        let leg: Leg
        do {
            let cast = try QueuedCast(probes, on: device, router: router, settings: moved, servers: servers, resume: resume, log: log)
            leg = try state.withLock { state in
                guard !state.over, !state.stopAsked else { throw Self.refused(device, "the cast has ended") }
                defer { state.nextLeg += 1 }
                let leg = Leg(number: state.nextLeg, cast: cast)
                state.moving = leg
                return leg
            }
        } catch {
            throw await callOff(nil, error)
        }
        let starting = leg.cast.session.statusUpdates()
        signals.continuation.yield(.start(leg))
        do {
            try await Self.started(starting, ending: leg.outcome.stream, at: moved.start, within: timeout, on: device)
        } catch {
            throw await callOff(leg, error)
        }
        // The switch, against the legs' ends and a stop (each decided under the lock): the old leg ended first (the
        // cast is over), or the new one did (the move failed), or neither has.
        let switched = state.withLock { state -> Bool in
            guard !state.over, !state.stopAsked, !state.endedLegs.contains(leg.number) else { return false }
            state.moving = nil
            state.current = leg
            if let status = state.latest[leg.number] {
                said.yield(.status(status))
                statuses.send(status)
            }
            return true
        }
        guard switched else { throw await callOff(leg, Self.refused(device, "it stopped before it played")) }
        let at = moved.start.map { " at \(formatClock($0))" } ?? ""
        said.yield(.notice("moved from \(old.name) to \(device.name)\(at)"))
        if wasPaused { try? await leg.cast.session.pause() }
        signals.continuation.yield(.retire(from))
        return old
    }

    /// Stops the cast: the device playing it, and a move's new device if one is starting (the move then fails).
    public func stop() async throws {
        let (current, moving) = state.withLock { state in
            state.stopAsked = true
            return (state.current, state.moving)
        }
        if let moving { try? await moving.cast.session.stop() }
        try await current.cast.session.stop()
    }

    /// Does `command` on the session playing now; a stop is `stop()`, which stops a move under way too.
    public func perform(_ command: SessionCommand) async throws {
        if command == .stop { try await stop() } else { try await session.perform(command) }
    }

    /// Throws what `move(to:)` refuses at once: the cast has ended, is moving already, or plays on `device`.
    public func checkMove(to device: MediaDevice) throws {
        try state.withLock { try Self.check($0, moving: device) }
    }

    private static func check(_ state: State, moving device: MediaDevice) throws {
        guard !state.over, !state.stopAsked else { throw Self.refused(device, "the cast has ended") }
        guard !state.moveUnderWay else { throw Self.refused(device, "the cast is moving to another device already") }
        guard state.current.cast.session.device.id != device.id else { throw Self.refused(device, "the cast plays there already") }
    }

    /// Waits until a move's session plays at `position` (within 2 s; anywhere when nil: a device reports playing
    /// before it has gone to a start position).
    /// - Throws: what ended the session first (`ending`), or `RouteError` when `timeout` passes first.
    private static func started(_ statuses: AsyncStream<QueueStatus>, ending: AsyncStream<(any Error)?>, at position: Double?,
                                within timeout: Duration, on device: MediaDevice) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await status in statuses where status.playback.state == .playing {
                    guard let position else { return true }
                    if abs(status.playback.position - position) < 2 { return true }
                }
                return false
            }
            group.addTask {
                var outcome = ending.makeAsyncIterator()
                throw (await outcome.next() ?? nil) ?? Self.refused(device, "it stopped before it played")
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Self.refused(device, "it did not play within \(Int(timeout.components.seconds)) s")
            }
            defer { group.cancelAll() }
            // Statuses that end without playing: the session's end says why.
            while let played = try await group.next() {
                if played { return }
            }
        }
    }

    /// An error as the words after "cannot move to DEVICE:": a RouteError's own reason, without the device's name again.
    private static func words(_ error: any Error) -> String {
        if let error = error as? RouteError { return error.reason ?? error.description }
        return "\(error)"
    }

    /// A move that cannot be made: `code` (the underlying error's kind), saying so about `device`.
    /// `error`, for a move that did not start, ending as every failed move's message does: where the cast still plays.
    public static func stillPlaying(_ error: any Error, on device: MediaDevice) -> RouteError {
        let ending = "; it still plays on \(device.name)"
        guard let error = error as? RouteError else {
            return RouteError(.commandFailed, "cannot move: \(error)\(ending)", device: device.name, reason: "\(error)\(ending)")
        }
        return RouteError(error.code, error.description + ending, device: error.device, reason: error.reason.map { $0 + ending },
                          names: error.names)
    }

    private static func refused(_ device: MediaDevice, _ words: String, code: RouteError.Code = .commandFailed) -> RouteError {
        RouteError(code, "cannot move to \(device.name): \(words)", device: device.name, reason: words)
    }
}
