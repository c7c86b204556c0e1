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
        case start(Leg)
        case ended(Int, (any Error)?)
    }
    private struct State {
        var current: Leg
        /// The leg a move is starting, until it plays or fails.
        var moving: Leg?
        var nextLeg = 1
        /// Each leg's latest status.
        var latest: [Int: QueueStatus] = [:]
        var over = false
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
                        starting.outcome.continuation.yield(failure)
                        starting.outcome.continuation.finish()
                        self.signals.continuation.yield(.ended(starting.number, failure))
                    }
                    leg = nil
                }
                switch await signals.next() {
                case .start(let next)?: leg = next
                case .ended(let number, let failure)?:
                    let (current, moving) = state.withLock { ($0.current.number, $0.moving) }
                    // A leg that was moved from, or a move's leg that failed to start: the cast goes on.
                    guard number == current else { continue }
                    state.withLock { $0.over = true }
                    // The cast is over: a move under way is called off (its device stopped).
                    if let moving { try? await moving.cast.session.stop() }
                    return failure
                case nil: return nil
                }
            }
        }
        if let failure { throw failure }
    }

    /// Hands a leg's events on while it is the current one (a move's leg before it plays: its notices only).
    private func forward(_ leg: Leg) async {
        for await event in leg.cast.events {
            state.withLock { state in
                if case .status(let status) = event { state.latest[leg.number] = status }
                if state.current.number == leg.number {
                    said.yield(event)
                    if case .status(let status) = event { statuses.send(status) }
                } else if case .notice = event, state.moving?.number == leg.number {
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
        try checkMove(to: device)
        let (from, latest) = state.withLock { ($0.current, $0.latest[$0.current.number]) }
        let old = from.cast.session.device
        let playback = await from.cast.session.playback
        let index = latest?.index ?? settings.firstItem
        let live = (try? await probes.info(index))?.isLive ?? false
        var moved = settings
        moved.via = nil
        moved.firstItem = index
        moved.start = live || playback.position < 0.5 ? nil : playback.position
        await probes.playing(on: device)
        let leg: Leg
        do {
            let cast = try QueuedCast(probes, on: device, router: router, settings: moved, servers: servers, resume: resume, log: log)
            leg = try state.withLock { state in
                guard !state.over else { throw Self.refused(device, "the cast has ended") }
                defer { state.nextLeg += 1 }
                let leg = Leg(number: state.nextLeg, cast: cast)
                state.moving = leg
                return leg
            }
        } catch {
            await probes.playing(on: old)
            throw error
        }
        let wasPlaying = playback.state == .playing || playback.state == .loading
        // One device at a time is heard: the old one waits, paused, for the new one to play.
        if wasPlaying { try? await from.cast.session.pause() }
        let starting = leg.cast.session.statusUpdates()
        signals.continuation.yield(.start(leg))
        do {
            guard try await Self.started(starting, at: moved.start, within: timeout, on: device) else {
                // Its session ended before it played: what ended it is the reason.
                var outcome = leg.outcome.stream.makeAsyncIterator()
                throw (await outcome.next() ?? nil) ?? Self.refused(device, "it did not take the cast")
            }
        } catch {
            state.withLock { $0.moving = nil }
            let reason = error
            try? await leg.cast.session.stop()
            await probes.playing(on: old)
            if wasPlaying { try? await from.cast.session.play() }
            throw Self.refused(device, "\(Self.words(reason)); it plays on on \(old.name)",
                               code: (reason as? RouteError)?.code == .deviceUnreachable ? .deviceUnreachable : .commandFailed)
        }
        let over = state.withLock { state -> Bool in
            state.moving = nil
            guard !state.over else { return true }
            state.current = leg
            if let status = state.latest[leg.number] {
                said.yield(.status(status))
                statuses.send(status)
            }
            return false
        }
        if over {
            try? await leg.cast.session.stop()
            throw Self.refused(device, "the cast ended while it was moving")
        }
        let at = moved.start.map { " at \(formatClock($0))" } ?? ""
        said.yield(.notice("moved from \(old.name) to \(device.name)\(at)"))
        if !wasPlaying { try? await leg.cast.session.pause() }
        try? await from.cast.session.stop()
        return old
    }

    /// Throws what `move(to:)` refuses at once: the cast has ended, is moving already, or plays on `device`.
    public func checkMove(to device: MediaDevice) throws {
        try state.withLock { state in
            guard !state.over else { throw Self.refused(device, "the cast has ended") }
            guard state.moving == nil else { throw Self.refused(device, "the cast is moving to another device already") }
            guard state.current.cast.session.device.id != device.id else { throw Self.refused(device, "the cast plays there already") }
        }
    }

    /// Waits until a move's session plays at `position` (within 2 s; anywhere when nil: a device reports playing
    /// before it has gone to a start position); false when its statuses end first.
    /// - Throws: `RouteError` when `timeout` passes first.
    private static func started(_ statuses: AsyncStream<QueueStatus>, at position: Double?, within timeout: Duration,
                                on device: MediaDevice) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await status in statuses where status.playback.state == .playing {
                    guard let position else { return true }
                    if abs(status.playback.position - position) < 2 { return true }
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Self.refused(device, "it did not play within \(Int(timeout.components.seconds)) s")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
    }

    /// An error as the words after "cannot move to DEVICE:": a RouteError's own reason, without the device's name again.
    private static func words(_ error: any Error) -> String {
        if let error = error as? RouteError { return error.reason ?? error.description }
        return "\(error)"
    }

    /// A move that cannot be made: `code` (the underlying error's kind), saying so about `device`.
    private static func refused(_ device: MediaDevice, _ words: String, code: RouteError.Code = .commandFailed) -> RouteError {
        RouteError(code, "cannot move to \(device.name): \(words)", device: device.name, reason: words)
    }
}
