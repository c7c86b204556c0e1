// GroupCast: one queue playing on several devices at once (a group a person keeps, or `--to A --to B`): each member
// plays it as a QueuedCast of its own, all started together; every command reaches every member; a member that fails
// or leaves is said once and the others play on; a play, a seek while playing and a next start every member together;
// a member can be added or removed while it plays, and one that left the network plays again once it answers; a member
// whose position strays from the lead's is sought back.

import Foundation
import RouteCore
import RouteMedia
import Synchronization

/// A queue of probed files on several devices at once, started together: each member loads the first item, and
/// once all have it (or failed), all are played at one instant. The cast's statuses are its lead's (the first member still
/// playing), shown as the group's, with the group's volume (its loudest member's) and mute (all muted); it ends when
/// every member has ended.
public final class GroupCast: Sendable {
    /// A member of the group as it plays now.
    public struct MemberStatus: Sendable, Equatable {
        /// The member's device.
        public let device: MediaDevice
        /// How it plays (nil until it has said).
        public let playback: PlaybackStatus?
    }

    /// The queue's files, probed ahead (shared by every member).
    public let probes: ProbeAhead
    /// The group as one device (kind `group`): what statuses and the desktop's controls name.
    public let device: MediaDevice
    /// The lead's statuses (as the group's) and every member's notices, each said once; ends when `run()` returns.
    public let events: AsyncStream<QueueEvent>

    /// What a member is made with besides its device.
    private struct Making: Sendable {
        let router: MediaRouter
        let settings: CastSettings
        let servers: MediaServers
        let resume: ResumePositions
        let log: RouteLog
        /// The seconds a device of that id holds its sound back (`route group delay`).
        let delays: [String: Double]
    }
    private let making: Making
    /// The servers made for the members when none were given (closed when the cast ends).
    private let ownServers: MediaServers?
    /// Holds each first member's first play until every first member has its first item loaded.
    private let start: StartTogether
    /// Where the group plays: a member that joins, or that loaded too late to start with the others, starts there.
    private let place = Place()
    /// Waits until a device that left the network is listed again (the device as it is then; nil: never).
    private let comesBack: (@Sendable (MediaDevice) async -> MediaDevice?)?
    private let said: AsyncStream<QueueEvent>.Continuation
    private let statuses = Broadcast<QueueStatus>()
    private let signals = AsyncStream<Signal>.makeStream()

    private struct Member: Sendable {
        let number: Int
        let cast: QueuedCast
        /// How many times it tried to come back after leaving the network (0: it never left).
        let returns: Int
        /// Whether it joined while the group played (it was not there at the start).
        var joined: Bool { returns > 0 || number >= firstCount }
        let firstCount: Int
        var device: MediaDevice { cast.session.device }
    }
    private enum Signal: Sendable {
        case join(Member)
        case ended(Member, (any Error)?)
    }
    private struct State {
        /// Every member made, in order; the first still playing leads.
        var members: [Member]
        var nextNumber: Int
        /// The members whose session has ended.
        var ended: Set<Int> = []
        /// The members that have played, and those removed on purpose (their end is not a leaving).
        var played: Set<Int> = []
        var removed: Set<Int> = []
        /// How many members' sessions run (the cast is over when none does).
        var running: Int
        /// The devices of members that left the network and are waited for, by member number.
        var returning: [Int: MediaDevice] = [:]
        /// Each member's latest status (the new lead's is the group's at once when the lead changes).
        var last: [Int: QueueStatus] = [:]
        /// Notices said already (every member skips a file that cannot be played; it is said once).
        var noticed: Set<String> = []
        /// Each member's volume as a share of the loudest's, as it was when the group was last set while it sounded: the
        /// balance a group turned down to nothing gets back when it is turned up.
        var balance: [Int: Double] = [:]
        /// The cast has ended or was stopped: no member joins any more.
        var over = false
        /// Whether the last status said was a final one (the group's end).
        var saidEnd = false
        /// The latest final status a member reported (how the group ended, when no member is left to lead).
        var lastEnd: QueueStatus?
        /// When each member was last sought back into step (it is left alone for a while after).
        var corrected: [Int: ContinuousClock.Instant] = [:]
        /// The members a seek while playing paused (not the group's pause: unsaid) until each says it plays again.
        var regrouping: Set<Int> = []
        /// Counts the commands to the group but volumes: a seek plays its members again only when none came meanwhile.
        var commands = 0
        /// Since when each member plays without a break (a device that just started or resumed may not take a seek yet,
        /// and its first reports lag).
        var playingSince: [Int: ContinuousClock.Instant] = [:]
    }
    private let state: Mutex<State>

    /// A cast of `probes` to each of `devices` (at least one), shown as `group`, each member made as `QueuedCast`
    /// makes one, all served by `servers` (else by servers of the group's own); nothing plays until `run()`.
    /// `delays` are the seconds of sound a device of that id holds back beyond others (`route group delay`); a device
    /// without one holds back what its protocol typically does (`StartDelays`). `comesBack`, when given, waits until a
    /// device that left the network is listed again, and the member plays again from where the group is.
    /// - Throws: `RouteError.unsupported` when `settings.via` names no route of a member.
    public init(_ probes: ProbeAhead, on devices: [MediaDevice], as group: MediaDevice, router: MediaRouter, settings: CastSettings,
                delays: [String: Double] = [:], servers: MediaServers? = nil, resume: ResumePositions = .shared,
                log: RouteLog = .discard, comesBack: (@Sendable (MediaDevice) async -> MediaDevice?)? = nil) throws {
        precondition(!devices.isEmpty, "a group cast has a member")
        let shared = servers ?? MediaServers(log: log)
        ownServers = servers == nil ? shared : nil
        let start = StartTogether(members: devices.count), place = place
        self.start = start
        making = Making(router: router, settings: settings, servers: shared, resume: resume, log: log, delays: delays)
        let members = try devices.indices.map { index in
            Member(number: index, cast: try QueuedCast(
                probes, on: devices[index], router: router, settings: settings, servers: shared, resume: resume, log: log,
                beforeFirstPlay: { route in await start.arrive(index, holdingBack: Self.holdsBack(devices[index], on: route, delays: delays)) },
                startPosition: { item in start.cameLate(index) ? place.position(of: item) : nil }),
                returns: 0, firstCount: devices.count)
        }
        state = Mutex(State(members: members, nextNumber: devices.count, running: devices.count))
        self.comesBack = comesBack
        self.probes = probes
        device = group
        (events, said) = AsyncStream<QueueEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// The seconds `device` holds its sound back on `route` (what `delays` sets for it, else its protocol's typical),
    /// and how many of them are beyond its protocol's typical.
    private static func holdsBack(_ device: MediaDevice, on route: MediaRoute, delays: [String: Double]) -> HoldBack {
        let typical = StartDelays.typical(of: route)
        let seconds = delays[device.id] ?? typical
        return HoldBack(seconds: seconds, beyondProtocol: seconds - typical)
    }

    /// When members let go at `base` are heard together: as far ahead as the one that holds its sound back longest
    /// needs (a device told the instant takes a command's time to reach it out of that: AirPlay's plugin keeps an
    /// instant it is told up to 0.15 s late).
    fileprivate static func instant(after base: Date, holding: some Sequence<HoldBack>) -> Date {
        base.addingTimeInterval(holding.map(\.seconds).max() ?? 0)
    }

    /// The devices of the group that play (or start) the queue now.
    public var devices: [MediaDevice] {
        state.withLock { state in state.members.filter { !state.ended.contains($0.number) }.map(\.device) }
    }

    /// The members playing (or starting) now, in the order they joined.
    public var members: [MemberStatus] {
        state.withLock { state in
            Self.playing(in: state).map { MemberStatus(device: $0.device, playback: state.last[$0.number]?.playback) }
        }
    }

    /// The members still playing and not being taken out.
    private static func playing(in state: State) -> [Member] {
        state.members.filter { !state.ended.contains($0.number) && !state.removed.contains($0.number) }
    }

    /// `status` as the group's: its device, its volume (the loudest member's) and its mute (every member muted).
    private func asTheGroups(_ status: QueueStatus, in state: State) -> QueueStatus {
        var status = status
        status.device = device
        let (loudest, muted) = Self.sound(in: state)
        if let loudest { status.playback.volume = loudest }
        if let muted { status.playback.muted = muted }
        return status
    }

    /// The group's volume (its loudest member's) and mute (every member muted), as far as its members have said.
    private static func sound(in state: State) -> (volume: Double?, muted: Bool?) {
        let sounds = playing(in: state).compactMap { state.last[$0.number]?.playback }
        let mutes = sounds.compactMap(\.muted)
        return (sounds.compactMap(\.volume).max(), mutes.isEmpty ? nil : !mutes.contains(false))
    }

    /// The lead's session: the first member still playing (the first member once all have ended).
    public var session: QueueSession { state.withLock { Self.lead(of: $0) ?? $0.members[0] }.cast.session }

    /// The first member still playing and not being taken out.
    private static func lead(of state: State) -> Member? { playing(in: state).first }

    /// Says the lead's latest status as the group's (the lead changed: its status may not change for a while).
    private func announceLead() {
        state.withLock { state in
            guard let lead = Self.lead(of: state).flatMap({ state.last[$0.number] }), !(state.saidEnd && lead.playback.isFinal) else { return }
            place.latest.withLock { $0 = lead }
            tell(asTheGroups(lead, in: state), in: &state)
        }
    }

    /// Says how the group ended, unless that was said: the latest end a member reported (not one taken out on
    /// purpose). Every member can end before the first end is handled, when no member leads any more; nor is a
    /// member's end the group's while another plays.
    private func announceEnd() {
        state.withLock { state in
            guard !state.saidEnd, let end = state.lastEnd else { return }
            tell(asTheGroups(end, in: state), in: &state)
        }
    }

    /// Says a status as the group's: under the state's lock, so that two members' statuses go out in the order they
    /// were made (a stale volume would otherwise win).
    private func tell(_ status: QueueStatus, in state: inout State) {
        state.saidEnd = status.playback.isFinal
        said.yield(.status(status))
        statuses.send(status)
    }

    /// The lead's statuses as the group's, starting with the latest.
    public func statusUpdates() -> AsyncStream<QueueStatus> { statuses.subscribe() }

    /// Says `words` among the cast's notices.
    public func say(_ words: String) {
        said.yield(.notice(words))
    }

    /// Plays the queue on every member at once, and on each member that joins; returns when every member's session has
    /// ended. A member that fails while others play is said once ("… left the group …"), and plays again when it is
    /// listed again (`comesBack`).
    /// - Throws: what ended the first member's session, when every member failed.
    public func run() async throws {
        defer {
            state.withLock { $0.over = true }
            said.finish()
            statuses.finish()
        }
        let first = state.withLock { $0.members }
        var firstFailure: (any Error)?
        var succeeded = false
        await withDiscardingTaskGroup { group in
            for member in first {
                group.addTask { await self.play(member) }
            }
            group.addTask { await self.keepInStep() }
            var signals = self.signals.stream.makeAsyncIterator()
            signalling: while let signal = await signals.next() {
                switch signal {
                case .join(let member):
                    group.addTask { await self.play(member) }
                case .ended(let member, let failure):
                    // Decided under the lock, against a join: the last member's end is the cast's.
                    let (over, others, played, removed) = state.withLock { state in
                        state.running -= 1
                        if state.running == 0 { state.over = true }
                        return (state.running == 0, Self.playing(in: state).map(\.device.name),
                                state.played.contains(member.number), state.removed.contains(member.number))
                    }
                    if member.number < first.count { start.leave(member.number) }
                    if !removed {
                        if failure == nil { succeeded = true } else { firstFailure = firstFailure ?? failure }
                    }
                    if over {
                        announceEnd()
                        break signalling
                    }
                    announceLead()
                    guard let failure, !removed else { continue }
                    if member.returns == 0 || played, !others.isEmpty {
                        say("\(member.device.name) left the group: \(failure); \(others.joined(separator: ", ")) play on")
                    }
                    if !others.isEmpty, await Self.leftTheNetwork(member, failure) {
                        state.withLock { $0.returning[member.number] = member.device }
                        group.addTask { await self.bringBack(member) }
                    }
                }
            }
            group.cancelAll()
        }
        await probes.cancel()
        close()
        if !succeeded, let failure = firstFailure { throw failure }
    }

    /// How often the members' positions are compared with the lead's.
    static let stepCheck: Duration = .seconds(2)
    /// How far a member's position may stray from the group's before it is sought back: more than DLNA's whole seconds
    /// can make two members seem apart (each RelTime up to 1 s short, and a seek's target sent in whole seconds lands up
    /// to 1 s short: seen, a member sought from 3.0 s behind then reported 2.0 s behind while it played 1 s behind), less
    /// than what a person hears as another place in the music.
    static let outOfStep = 2.5
    /// How long a member sought back is left alone (its reports settle after the seek).
    static let settling: Duration = .seconds(10)
    /// How long a member (and the lead) must have played without a break before it is compared: gmediarender drops a
    /// seek that comes while it is still starting to play again (seen: a member played again on the device, sought at
    /// once, stayed 3 s behind).
    static let steady: Duration = .seconds(3)

    /// Until cancelled: each member that plays the group's item while the lead plays it, and whose position (as it last
    /// reported it, carried on to now, less what it was started ahead for holding its sound back) has strayed from the
    /// group's by more than `outOfStep` — a renderer that stalled to buffer, a device paused and played again on its own
    /// — is sought to where the group is, and that is said. The group's place is the lead's, or with three members or
    /// more their median (one lead that stalled does not pull the others back).
    private func keepInStep() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.stepCheck)
            for (member, off) in strays() {
                // Where the group is now (the seeks before this one took a moment), for this member.
                guard let target = state.withLock({ state in state.over ? nil : place(in: state, now: Date()) }) else { return }
                let words = String(format: off < 0 ? "%.1f s behind the group" : "%.1f s ahead of the group", abs(off))
                do {
                    try await member.cast.session.perform(.seek(.absolute(max(0, target + start.heldBack(member.number)))))
                    say("\(member.device.name) played \(words): sought to where the group plays")
                } catch {
                    say("\(member.device.name) plays \(words) and could not be sought back: \(error)")
                }
            }
        }
    }

    /// The members out of step now, each with how far (seconds; negative: behind), marked as sought.
    private func strays() -> [(Member, Double)] {
        let now = Date(), clock = ContinuousClock.now
        return state.withLock { state in
            guard !state.over, let place = self.place(in: state, now: now), let leading = Self.lead(of: state).flatMap({ state.last[$0.number] })
            else { return [] }
            return Self.playing(in: state).compactMap { member in
                guard let position = position(of: member, in: state, item: leading.index, now: now),
                      state.playingSince[member.number].map({ clock - $0 >= Self.steady }) ?? false,
                      state.corrected[member.number].map({ clock - $0 >= Self.settling }) ?? true else { return nil }
                let off = position - place
                guard abs(off) > Self.outOfStep else { return nil }
                state.corrected[member.number] = clock
                return (member, off)
            }
        }
    }

    /// Where the group plays now, in seconds, as a member that holds nothing back would: the lead's position, or with
    /// three members or more the median of theirs; nil when the lead does not play a file.
    private func place(in state: State, now: Date) -> Double? {
        guard let lead = Self.lead(of: state), let leading = state.last[lead.number], leading.playback.state == .playing,
              leading.playback.duration != nil,
              state.playingSince[lead.number].map({ ContinuousClock.now - $0 >= Self.steady }) ?? false else { return nil }
        let positions = Self.playing(in: state).compactMap { position(of: $0, in: state, item: leading.index, now: now) }.sorted()
        if positions.count >= 3 { return positions[positions.count / 2] }
        return position(of: lead, in: state, item: leading.index, now: now)
    }

    /// `member`'s position now in item `item`, less what it was started ahead for holding its sound back; nil when it does
    /// not play that item.
    private func position(of member: Member, in state: State, item: Int, now: Date) -> Double? {
        guard let status = state.last[member.number], status.index == item, status.playback.state == .playing else { return nil }
        return status.playback.at(now).position - start.heldBack(member.number)
    }

    /// Runs a member's session, handing its events on; says when it ends.
    private func play(_ member: Member) async {
        defer { member.cast.preparer.close() }
        async let forwarded: Void = forward(member)
        var failure: (any Error)?
        do { try await member.cast.run() } catch { failure = error }
        await forwarded
        state.withLock { _ = $0.ended.insert(member.number) }
        signals.continuation.yield(.ended(member, failure))
    }

    /// Whether `member` ended because its device left the network (it may come back), not for what it was sent.
    private static func leftTheNetwork(_ member: Member, _ failure: any Error) async -> Bool {
        if (failure as? RouteError)?.code == .deviceUnreachable { return true }
        return await member.cast.session.playback.endReason == .deviceGone
    }

    /// Waits until `member`'s device is listed again (a while first: longer each time it came back and failed again),
    /// then makes it a member again, from where the group plays.
    private func bringBack(_ member: Member) async {
        guard let comesBack else { return }
        let seconds = min(30, 2 << min(member.returns, 4))
        try? await Task.sleep(for: .seconds(seconds))
        guard !Task.isCancelled, let device = await comesBack(member.device), !Task.isCancelled,
              state.withLock({ $0.returning.removeValue(forKey: member.number) }) != nil else { return }
        try? join(device, returns: member.returns + 1)
    }

    /// Adds `device` to the group while it plays: it starts the item the group plays, from where the group is.
    /// - Throws: `RouteError` when the cast is over or the device plays in it already.
    public func add(_ device: MediaDevice) throws {
        try join(device, returns: 0)
    }

    private func join(_ device: MediaDevice, returns: Int) throws {
        let ids = Set(device.routes.map(\.id))
        let index = try state.withLock { state -> Int in
            guard !state.over else { throw RouteError(.commandFailed, "the group's cast has ended", device: device.name) }
            let playing = state.members.filter { !state.ended.contains($0.number) }
            if playing.contains(where: { !ids.isDisjoint(with: $0.device.routes.map(\.id)) }) {
                throw RouteError(.commandFailed, "\(device.name) plays in the group already", device: device.name, reason: "it plays in the group already")
            }
            return place.latest.withLock { $0?.index } ?? 0
        }
        var settings = making.settings
        settings.firstItem = index
        settings.start = nil
        settings.resumes = false
        settings.via = nil
        // Where the group is when the new member first plays its first item: the lead's position then.
        let cast = try QueuedCast(probes, on: device, router: making.router, settings: settings, servers: making.servers,
                                  resume: making.resume, log: making.log, startPosition: { [place] item in
                                      item == index ? place.position(of: item) : nil
                                  })
        // Counted as running in the same step as the check that the cast goes on: the last member's end cannot slip
        // between them (the cast would end without it).
        let member = state.withLock { state -> Member? in
            guard !state.over else { return nil }
            defer { state.nextNumber += 1 }
            let member = Member(number: state.nextNumber, cast: cast, returns: returns, firstCount: start.count)
            state.members.append(member)
            state.running += 1
            return member
        }
        guard let member else {
            cast.preparer.close()
            throw RouteError(.commandFailed, "the group's cast has ended", device: device.name)
        }
        signals.continuation.yield(.join(member))
    }

    /// Takes `device` out of the group while it plays: it stops, the others play on.
    /// - Throws: `RouteError` when it is not in the group, or is the last device playing it (stop the cast instead).
    public func remove(_ device: MediaDevice) async throws {
        let ids = Set(device.routes.map(\.id))
        let found = try state.withLock { state -> Member? in
            // One that left the network and is waited for: it is waited for no more.
            if let away = state.returning.first(where: { !ids.isDisjoint(with: $0.value.routes.map(\.id)) }) {
                state.returning[away.key] = nil
                return nil
            }
            let playing = Self.playing(in: state)
            guard let member = playing.first(where: { !ids.isDisjoint(with: $0.device.routes.map(\.id)) }) else {
                throw RouteError(.commandFailed, "\(device.name) does not play in the group", device: device.name, reason: "it does not play in the group")
            }
            guard playing.count > 1 else {
                throw RouteError(.commandFailed, "\(device.name) is the last device of the group; stop the cast instead", device: device.name,
                                 reason: "it is the last device of the group")
            }
            state.removed.insert(member.number)
            return member
        }
        if let member = found {
            announceLead()
            try await member.cast.session.stop()
        }
        say("\(device.name) left the group")
    }

    /// Stops serving the queue's files (`run()` does when it ends; a cast that never ran is closed by its maker).
    public func close() {
        for member in state.withLock({ $0.members }) { member.cast.preparer.close() }
        ownServers?.close()
    }

    /// Hands a member's events on: its statuses while it leads (as the group's), its notices once each; says when a
    /// member that had left plays again.
    private func forward(_ member: Member) async {
        for await event in member.cast.events {
            switch event {
            case .status(let status):
                let (leads, first, groupPaused) = state.withLock { state -> (Bool, Bool, Bool) in
                    let before = state.last.updateValue(status, forKey: member.number)?.playback
                    if status.playback.isFinal, !state.removed.contains(member.number) { state.lastEnd = status }
                    let first = status.playback.state == .playing && !state.played.contains(member.number)
                    if status.playback.state == .playing { state.played.insert(member.number) }
                    // Its first reports may still say where it was before its start seek: it is left alone a while.
                    if first { state.corrected[member.number] = .now }
                    if status.playback.state != .playing {
                        state.playingSince[member.number] = nil
                    } else if state.playingSince[member.number] == nil {
                        state.playingSince[member.number] = .now
                    }
                    // A member's end is not the group's while others play.
                    let others = Self.playing(in: state).contains { $0.number != member.number }
                    let leads = Self.lead(of: state)?.number == member.number && !(status.playback.isFinal && others)
                    // Another member's volume or mute is the group's too (its loudest, all muted).
                    let soundChanged = before?.volume != status.playback.volume || before?.muted != status.playback.muted
                    // Paused for a seek: neither said nor where the group is (a member joining now would pause with it).
                    let regrouping = state.regrouping.contains(member.number) && status.playback.state == .paused
                    if status.playback.state == .playing || status.playback.isFinal { state.regrouping.remove(member.number) }
                    if leads, !regrouping { place.latest.withLock { $0 = status } }
                    if !regrouping, let shown = leads ? status : soundChanged ? place.latest.withLock({ $0 }) : nil {
                        tell(asTheGroups(shown, in: state), in: &state)
                    }
                    return (leads, first, place.latest.withLock { $0?.playback.state == .paused })
                }
                if first, member.joined {
                    if member.returns > 0 { say("\(member.device.name) is back: it plays again") }
                    // It joins a group that is paused: it waits with it.
                    if groupPaused, !leads { try? await member.cast.session.pause() }
                }
            case .notice(let words):
                if state.withLock({ $0.noticed.insert(words).inserted }) { said.yield(event) }
            }
        }
    }

    /// Stops every member (none plays that has not started yet).
    public func stop() async throws { try await perform(.stop) }

    /// Does `command` on every member still playing, at once (a stop before they play: none of them plays). A toggle, a
    /// step and a relative seek are decided by the lead (so that the members stay alike): pause or play, a level, a
    /// position.
    /// - Throws: the first member's error, when no member took it; a member that refuses while others take it is said.
    public func perform(_ command: SessionCommand) async throws {
        let (playing, number, wasRegrouping) = state.withLock { state in
            if command == .stop { state.over = true }
            let wasRegrouping = !state.regrouping.isEmpty
            // A command that comes while a seek regroups the members (but a volume) is the group's own: their pauses
            // are said again, and the seek does not play them over it.
            if !command.isVolume {
                state.regrouping = []
                state.commands += 1
            }
            // A seek, a pause or another item: each member says where it is a moment apart; none is out of step for it.
            if !command.isVolume { for member in Self.playing(in: state) { state.corrected[member.number] = .now } }
            return (Self.playing(in: state), state.commands, wasRegrouping)
        }
        // Stopped or paused before the members have started: none of them plays (a play plays them later).
        if command == .stop || command == .pause { start.callOff() }
        guard let lead = playing.first else { return try await session.perform(command) }
        let decided = try await alike(command, lead: lead.cast.session)
        let volumes = volumes(for: decided, of: playing)
        let leading = await lead.cast.session.playback
        var errors: [(Int, any Error)] = []
        switch decided {
        case .play:
            errors = await playTogether(playing)
        // (A seek that comes while another regroups them finds them paused by it: they were playing.)
        case .seek(.absolute(let position)) where playing.count > 1 && leading.duration != nil
                && ([.playing, .loading].contains(leading.state) || wasRegrouping):
            // Each device takes its own time to sound after a seek (AirPlay's a third of a second more than a DLNA
            // renderer's): every member is paused (unsaid) and sought there, then all are played together — those whose
            // seek failed too, where they were — unless another command came meanwhile.
            state.withLock { $0.regrouping.formUnion(playing.map(\.number)) }
            errors = await each(playing) { _, session in try await session.pause() }
            let paused = playing.indices.filter { index in !errors.contains { $0.0 == index } }
            errors += await each(paused.map { playing[$0] }) { _, session in try await session.seek(.absolute(position), resuming: false) }
                .map { (paused[$0.0], $0.1) }
            guard state.withLock({ $0.commands }) == number else { break }
            errors += await playTogether(paused.map { playing[$0] }).map { (paused[$0.0], $0.1) }
        case .next where playing.count > 1:
            // Each member would play the next file as soon as it has it (AirPlay 0.35 s after a DLNA renderer): each
            // loads it, and all are played together, as at the start.
            let together = StartTogether(members: playing.count), delays = making.delays
            errors = await each(playing) { position, session in
                let device = playing[position].device
                try await session.next(playingOn: { route in
                    await together.arrive(position, holdingBack: Self.holdsBack(device, on: route, delays: delays))
                })
            }
            for (position, _) in errors { together.leave(position) }
        default:
            errors = await each(playing) { position, session in
                try await session.perform(volumes.map { SessionCommand.setVolume($0[position]) } ?? decided)
            }
        }
        errors.sort { $0.0 < $1.0 }
        if Set(errors.map(\.0)).count == playing.count, let first = errors.first { throw first.1 }
        for (position, error) in errors { say("\(playing[position].device.name) did not \(command.word): \(error)") }
    }

    /// Does `action` on each of `members`' sessions at once: the errors, by position in `members`.
    private func each(_ members: [Member], _ action: @escaping @Sendable (Int, QueueSession) async throws -> Void) async -> [(Int, any Error)] {
        await withTaskGroup(of: (Int, (any Error)?).self) { group in
            for (position, member) in members.enumerated() {
                group.addTask {
                    do { try await action(position, member.cast.session) } catch { return (position, error) }
                    return (position, nil)
                }
            }
            var errors: [(Int, any Error)] = []
            for await case let (position, error?) in group { errors.append((position, error)) }
            return errors
        }
    }

    /// Plays `members` together: at one instant, as far ahead as the one that holds its sound back longest needs,
    /// each on its cue (a device that can be told that instant is; the others are played as much before it as they
    /// hold their sound back). The errors, by position in `members`.
    private func playTogether(_ members: [Member]) async -> [(Int, any Error)] {
        var holding: [HoldBack] = []
        for member in members {
            let route = await member.cast.session.route
            holding.append(route.map { Self.holdsBack(member.device, on: $0, delays: making.delays) } ?? HoldBack(seconds: 0, beyondProtocol: 0))
        }
        let holds = holding, instant = Self.instant(after: Date(), holding: holding)
        return await each(members) { position, session in try await session.play(holds[position].cue(at: instant)) }
    }

    /// Sets one member's volume or mute alone (`route volume 40 --to Kitchen` while Kitchen plays in the group); the
    /// group's volume is then its loudest member's.
    /// - Throws: `RouteError`: `unsupported` for any other command (pause, seek, next and stop act on the whole group),
    ///   `commandFailed` when `device` does not play in the group; the device's own error.
    public func perform(_ command: SessionCommand, on device: MediaDevice) async throws {
        guard command.isVolume else {
            throw RouteError(.unsupported, "\(command.word) acts on the whole group \(self.device.name), not on \(device.name) alone",
                             device: device.name, reason: "it plays in a group")
        }
        let ids = Set(device.routes.map(\.id))
        guard let member = state.withLock({ Self.playing(in: $0).first { !ids.isDisjoint(with: $0.device.routes.map(\.id)) } }) else {
            throw RouteError(.commandFailed, "\(device.name) does not play in the group", device: device.name, reason: "it does not play in the group")
        }
        try await member.cast.session.perform(command)
    }

    /// Each member's volume for a group's volume `command` (nil for any other command): the loudest member gets the level
    /// asked for and the others keep their balance with it (each scaled alike). A group at 0 gets back the balance it had
    /// when it was last set while it sounded; a member whose volume is not known gets the level.
    private func volumes(for command: SessionCommand, of members: [Member]) -> [Double]? {
        guard case .setVolume(let level) = command else { return nil }
        return state.withLock { state in
            let volumes = members.map { state.last[$0.number]?.playback.volume }
            if let loudest = volumes.compactMap({ $0 }).max(), loudest > 0 {
                for (member, volume) in zip(members, volumes) { state.balance[member.number] = volume.map { $0 / loudest } }
            }
            return members.map { min(1, level * (state.balance[$0.number] ?? 1)) }
        }
    }

    /// `command` as every member is to do it: a toggle, a volume step or a relative seek as the group decides it (from
    /// the lead's playback; a volume step from the loudest member's).
    private func alike(_ command: SessionCommand, lead: QueueSession) async throws -> SessionCommand {
        let playback = await lead.playback
        switch command {
        // As the group was last said to be (a seek's pause of its members is not the group's).
        case .togglePause: return (place.latest.withLock { $0?.playback.state } ?? playback.state) == .playing ? .pause : .play
        case .toggleMute: return .setMuted(!(state.withLock { Self.sound(in: $0).muted } ?? false))
        case .changeVolume(let step):
            guard let volume = state.withLock({ Self.sound(in: $0).volume }) else { return command }
            return .setVolume(min(1, max(0, volume + step)))
        case .seek(.relative(let delta)): return .seek(.absolute(max(0, playback.position + delta)))
        default: return command
        }
    }
}

extension GroupCast: PlayingCast {}

extension GroupCast: MemberCommandTaker {}

/// What a member holds its sound back, in seconds, and how many of them beyond its protocol's typical.
private struct HoldBack: Sendable {
    let seconds: Double
    let beyondProtocol: Double

    /// The member's cue for a group heard from `instant`.
    func cue(at instant: Date) -> PlayCue { PlayCue(at: instant, holdsBack: seconds, beyondProtocol: beyondProtocol) }
}

/// Where the group plays: the lead's latest status.
private final class Place: Sendable {
    let latest = Mutex<QueueStatus?>(nil)

    /// The lead's position now in item `item`, when it plays that item.
    func position(of item: Int) -> Double? {
        guard let status = latest.withLock({ $0 }), status.index == item else { return nil }
        return status.playback.at(Date()).position
    }
}

/// The members' first plays (or, after a next, their plays of the next item), held until every member has the item
/// loaded (or has ended), then let go together, each with its cue: the one that holds its sound back longest first,
/// each other later by as much less as it holds back, and a member that can be told when to play told the instant all
/// are heard.
private final class StartTogether: Sendable {
    private struct State {
        var arrived: Set<Int> = []
        /// What each member that arrived holds back.
        var holdsBack: [Int: HoldBack] = [:]
        var left: Set<Int> = []
        var waiting: [CheckedContinuation<Bool, Never>] = []
        /// Once let go: whether to play (false: the cast was stopped first).
        var outcome: Bool?
        /// The members that loaded after the others were let go (they start where the group is).
        var late: Set<Int> = []
        /// When the members were let go to play.
        var letGoAt: Date?
    }
    /// How many members start together.
    let count: Int
    private let state = Mutex(State())

    init(members count: Int) { self.count = count }

    /// How long a member waits for the others once it has loaded: then those that have play (one slow to load, or that
    /// hangs, does not hold the group; it plays when it has loaded).
    static let longestWait: Duration = .seconds(10)

    /// Member `member` has its first item loaded, and holds its sound back `hold` once played; returns when every
    /// member has (or `longestWait` has passed) with its cue: the group plays as far after the members were let go as
    /// the one that holds back longest needs (a member that came late plays at once). Nil when the cast was stopped or
    /// its task cancelled first.
    func arrive(_ member: Int, holdingBack hold: HoldBack) async -> PlayCue? {
        let go = await withTaskGroup(of: Bool?.self) { group -> Bool in
            group.addTask { await self.wait(member, holdingBack: hold) }
            group.addTask {
                try? await Task.sleep(for: Self.longestWait)
                return nil
            }
            while let result = await group.next() {
                guard let result else {
                    letGo(!Task.isCancelled)
                    continue
                }
                group.cancelAll()
                return result
            }
            return false
        }
        guard go, !Task.isCancelled else { return nil }
        let instant = state.withLock { state in
            state.late.contains(member) ? nil : state.letGoAt.map { GroupCast.instant(after: $0, holding: state.holdsBack.values) }
        }
        return hold.cue(at: instant ?? Date().addingTimeInterval(hold.seconds))
    }

    /// Waits at the gate until it is let go.
    private func wait(_ member: Int, holdingBack hold: HoldBack) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let outcome = state.withLock { state -> Bool? in
                    if let outcome = state.outcome {
                        if outcome { state.late.insert(member) }
                        return outcome
                    }
                    state.arrived.insert(member)
                    state.holdsBack[member] = hold
                    state.waiting.append(continuation)
                    return nil
                }
                if let outcome { continuation.resume(returning: outcome) } else { letGoIfAllArrived() }
            }
        } onCancel: {
            letGo(false)
        }
    }

    /// Member `member` will not arrive (its session ended): the others need not wait for it.
    func leave(_ member: Int) {
        state.withLock { _ = $0.left.insert(member) }
        letGoIfAllArrived()
    }

    /// The cast stops: whoever waits does not play, and nobody waits any more.
    func callOff() { letGo(false) }

    /// Whether `member` loaded after the others had been let go to play.
    func cameLate(_ member: Int) -> Bool { state.withLock { $0.late.contains(member) } }

    /// The seconds `member` was started ahead of those that hold nothing back (0 for a member that came late or joined:
    /// it starts where the group plays).
    func heldBack(_ member: Int) -> Double { state.withLock { $0.late.contains(member) ? 0 : $0.holdsBack[member]?.seconds ?? 0 } }

    private func letGoIfAllArrived() {
        let all = state.withLock { $0.arrived.union($0.left).count >= count }
        if all { letGo(true) }
    }

    private func letGo(_ play: Bool) {
        let waiting = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            if state.outcome == nil {
                state.outcome = play
                state.letGoAt = Date()
            }
            defer { state.waiting = [] }
            return state.waiting
        }
        let outcome = state.withLock { $0.outcome ?? play }
        for continuation in waiting { continuation.resume(returning: outcome) }
    }
}
