// GroupCast: one queue playing on several devices at once (a group a person keeps, or `--to A --to B`): each member
// plays it as a QueuedCast of its own, all started together; every command reaches every member; a member that fails
// or leaves is said once, and the others play on.

import Foundation
import RouteCore
import RouteMedia
import Synchronization

/// A queue of probed files on several devices at once, started together: each member loads the first item, and
/// once all have it (or failed), all are played at one instant. The cast's statuses are its lead's (the first member still
/// playing), shown as the group's; it ends when every member has ended.
public final class GroupCast: Sendable {
    /// The queue's files, probed ahead (shared by every member).
    public let probes: ProbeAhead
    /// The group as one device (kind `group`): what statuses and the desktop's controls name.
    public let device: MediaDevice
    /// The lead's statuses (as the group's) and every member's notices, each said once; ends when `run()` returns.
    public let events: AsyncStream<QueueEvent>

    private let members: [QueuedCast]
    /// The servers made for the members when none were given (closed when the cast ends).
    private let ownServers: MediaServers?
    /// Holds each member's first play until every member has its first item loaded.
    private let start: StartTogether
    private let said: AsyncStream<QueueEvent>.Continuation
    private let statuses = Broadcast<QueueStatus>()
    private struct State {
        /// The members whose session has ended.
        var ended: Set<Int> = []
        /// Notices said already (every member skips a file that cannot be played; it is said once).
        var noticed: Set<String> = []
    }
    private let state = Mutex(State())

    /// A cast of `probes` to each of `devices` (at least one), shown as `group`, each member made as `QueuedCast`
    /// makes one, all served by `servers` (else by servers of the group's own); nothing plays until `run()`.
    /// `delays` are the seconds of sound a device of that id holds back beyond others (`route group delay`); a device
    /// without one holds back what its protocol typically does (`StartDelays`).
    /// - Throws: `RouteError.unsupported` when `settings.via` names no route of a member.
    public init(_ probes: ProbeAhead, on devices: [MediaDevice], as group: MediaDevice, router: MediaRouter, settings: CastSettings,
                delays: [String: Double] = [:], servers: MediaServers? = nil, resume: ResumePositions = .shared,
                log: RouteLog = .discard) throws {
        precondition(!devices.isEmpty, "a group cast has a member")
        let shared = servers ?? MediaServers(log: log)
        ownServers = servers == nil ? shared : nil
        let start = StartTogether(members: devices.count)
        self.start = start
        members = try devices.indices.map { index in
            try QueuedCast(probes, on: devices[index], router: router, settings: settings, servers: shared, resume: resume, log: log,
                           beforeFirstPlay: { route in await start.arrive(index, holdingBack: delays[devices[index].id] ?? StartDelays.typical(of: route)) })
        }
        self.probes = probes
        device = group
        (events, said) = AsyncStream<QueueEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// The devices of the group that play (or start) the queue.
    public var devices: [MediaDevice] { members.map(\.session.device) }

    /// The lead's session: the first member still playing (the first member once all have ended).
    public var session: QueueSession { members[lead ?? 0].session }

    private var lead: Int? {
        state.withLock { state in members.indices.first { !state.ended.contains($0) } }
    }

    /// The lead's statuses as the group's, starting with the latest.
    public func statusUpdates() -> AsyncStream<QueueStatus> { statuses.subscribe() }

    /// Says `words` among the cast's notices.
    public func say(_ words: String) {
        said.yield(.notice(words))
    }

    /// Plays the queue on every member at once; returns when every member's session has ended. A member that fails
    /// while others play is said once ("… left the group …").
    /// - Throws: what ended the first member's session, when every member failed.
    public func run() async throws {
        defer {
            said.finish()
            statuses.finish()
        }
        let failures = await withTaskGroup(of: (Int, (any Error)?)?.self) { group in
            for index in members.indices {
                group.addTask {
                    await self.forward(index)
                    return nil
                }
                group.addTask {
                    let member = self.members[index]
                    var failure: (any Error)?
                    do { try await member.run() } catch { failure = error }
                    member.preparer.close()
                    return (index, failure)
                }
            }
            var failures: [Int: any Error] = [:]
            for await case let (index, failure)? in group {
                start.leave(index)
                let others = state.withLock { state in
                    state.ended.insert(index)
                    return members.indices.filter { !state.ended.contains($0) }
                }
                guard let failure else { continue }
                failures[index] = failure
                if !others.isEmpty {
                    say("\(members[index].session.device.name) left the group: \(failure); \(others.map { members[$0].session.device.name }.joined(separator: ", ")) play on")
                }
            }
            return failures
        }
        await probes.cancel()
        close()
        if failures.count == members.count, let first = failures[0] { throw first }
    }

    /// Stops every member (none plays that has not started yet).
    public func stop() async throws { try await perform(.stop) }

    /// Stops serving the queue's files (`run()` does when it ends; a cast that never ran is closed by its maker).
    public func close() {
        for member in members { member.preparer.close() }
        ownServers?.close()
    }

    /// Hands a member's events on: its statuses while it leads (as the group's), its notices once each.
    private func forward(_ index: Int) async {
        for await event in members[index].events {
            switch event {
            case .status(var status):
                guard lead == index else { continue }
                status.device = device
                said.yield(.status(status))
                statuses.send(status)
            case .notice(let words):
                if state.withLock({ $0.noticed.insert(words).inserted }) { said.yield(event) }
            }
        }
    }

    /// Does `command` on every member still playing, at once (a stop before they play: none of them plays). A toggle, a step and a relative seek are decided by the
    /// lead (so that the members stay alike): pause or play, a level, a position.
    /// - Throws: the first member's error, when no member took it; a member that refuses while others take it is said.
    public func perform(_ command: SessionCommand) async throws {
        let playing = state.withLock { state in members.indices.filter { !state.ended.contains($0) } }
        guard let lead = playing.first else { return try await members[0].session.perform(command) }
        if command == .stop { start.callOff() }
        let decided = try await alike(command, lead: members[lead].session)
        let errors = await withTaskGroup(of: (Int, (any Error)?).self) { group in
            for index in playing {
                group.addTask {
                    do { try await self.members[index].session.perform(decided) } catch { return (index, error) }
                    return (index, nil)
                }
            }
            var errors: [(Int, any Error)] = []
            for await case let (index, error?) in group { errors.append((index, error)) }
            return errors.sorted { $0.0 < $1.0 }
        }
        if errors.count == playing.count, let first = errors.first { throw first.1 }
        for (index, error) in errors { say("\(members[index].session.device.name) did not \(command.word): \(error)") }
    }

    /// `command` as every member is to do it: a toggle, a volume step or a relative seek as the lead decides it.
    private func alike(_ command: SessionCommand, lead: QueueSession) async throws -> SessionCommand {
        let playback = await lead.playback
        switch command {
        case .togglePause: return playback.state == .playing ? .pause : .play
        case .toggleMute: return .setMuted(!(playback.muted ?? false))
        case .changeVolume(let step):
            guard let volume = playback.volume else { return command }
            return .setVolume(min(1, max(0, volume + step)))
        case .seek(.relative(let delta)): return .seek(.absolute(max(0, playback.position + delta)))
        default: return command
        }
    }
}

extension GroupCast: PlayingCast {}

/// The members' first plays, held until every member has its first item loaded (or has ended), then let go together:
/// the one that holds its sound back longest first, each other later by as much less as it holds back.
private final class StartTogether: Sendable {
    private struct State {
        var arrived: Set<Int> = []
        /// What each member that arrived holds back, in seconds.
        var holdsBack: [Int: Double] = [:]
        var left: Set<Int> = []
        var waiting: [CheckedContinuation<Bool, Never>] = []
        /// Once let go: whether to play (false: the cast was stopped first).
        var outcome: Bool?
    }
    private let count: Int
    private let state = Mutex(State())

    init(members count: Int) { self.count = count }

    /// Member `member` has its first item loaded, and holds its sound back `seconds` once played; returns when every
    /// member has and it is its moment (true: play it now), or when the cast was stopped or its task cancelled first
    /// (false).
    func arrive(_ member: Int, holdingBack seconds: Double) async -> Bool {
        let go = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let outcome = state.withLock { state -> Bool? in
                    if let outcome = state.outcome { return outcome }
                    state.arrived.insert(member)
                    state.holdsBack[member] = seconds
                    state.waiting.append(continuation)
                    return nil
                }
                if let outcome { continuation.resume(returning: outcome) } else { letGoIfAllArrived() }
            }
        } onCancel: {
            letGo(false)
        }
        let longest = state.withLock { $0.holdsBack.values.max() ?? 0 }
        if go, longest - seconds > 0.001 { try? await Task.sleep(for: .milliseconds(Int(((longest - seconds) * 1000).rounded()))) }
        return go && !Task.isCancelled
    }

    /// Member `member` will not arrive (its session ended): the others need not wait for it.
    func leave(_ member: Int) {
        state.withLock { _ = $0.left.insert(member) }
        letGoIfAllArrived()
    }

    /// The cast stops: whoever waits does not play, and nobody waits any more.
    func callOff() { letGo(false) }

    private func letGoIfAllArrived() {
        let all = state.withLock { $0.arrived.union($0.left).count >= count }
        if all { letGo(true) }
    }

    private func letGo(_ play: Bool) {
        let waiting = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            if state.outcome == nil { state.outcome = play }
            defer { state.waiting = [] }
            return state.waiting
        }
        let outcome = state.withLock { $0.outcome ?? play }
        for continuation in waiting { continuation.resume(returning: outcome) }
    }
}
