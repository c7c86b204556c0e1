// ServiceSinks: the desktop-audio sinks the route service keeps on request (StartSink, StopSink): each on the sound
// server while its device is on the network — made when the device is found, removed when it is lost (apps playing
// into it move to another sink, as with a speaker unplugged), made again when it comes back. A group's sink stays while
// the service runs: a member that is away is tried again when sound plays, the others play on.

import Foundation
import MediaRouting
import RouteAPI
import RouteCore
import RouteGIO
import RouteMedia
import RouteSound
import Synchronization

/// The sinks the service keeps, by device id.
final class ServiceSinks: Sendable {
    private struct Wanted {
        var device: MediaDevice
        /// A group's members (empty for one device), and the delays set for them.
        var members: [MediaDevice] = []
        var delays: [String: Double] = [:]
        var settings: DesktopAudioSettings
        var sink: String
        var present = false
        var event: DesktopAudioEvent?
        /// The member the last event happened on (a group's), by name.
        var eventMember: String?
        /// Ends the running sink (its DesktopAudio) when finished; nil while none runs.
        var running: AsyncStream<Void>.Continuation?
        /// Which run is the current one: a run that ends after a newer one started leaves the entry alone.
        var generation = 0
    }
    private let wanted = Mutex<[String: Wanted]>([:])
    /// Numbers the runs, across entries (a device's entry may be removed and made again).
    private let runs = Mutex(0)
    private let starts = AsyncStream<String>.makeStream()
    private let closed = Mutex(false)
    private let router: MediaRouter
    private let servers: MediaServers
    private let emit: @Sendable (DBusValue) -> Void
    private let changed: @Sendable (DBusValue) -> Void

    /// Sinks for `router`'s devices served by `servers`; each event goes to `emit` (SinkEvent), each change of the
    /// list to `changed` (the Sinks property's new value).
    init(router: MediaRouter, servers: MediaServers, emit: @escaping @Sendable (DBusValue) -> Void, changed: @escaping @Sendable (DBusValue) -> Void) {
        self.router = router
        self.servers = servers
        self.emit = emit
        self.changed = changed
    }

    /// Runs each sink while it is wanted and its device present, until `shutDown()`.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await id in starts.stream {
                let (stop, ended) = AsyncStream<Void>.makeStream()
                let run = runs.withLock { $0 += 1; return $0 }
                guard let entry = wanted.withLock({ table -> Wanted? in
                    guard var entry = table[id], entry.present, entry.running == nil else { return nil }
                    entry.running = ended
                    entry.generation = run
                    table[id] = entry
                    return entry
                }) else { continue }
                group.addTask { await self.play(id, entry, until: stop) }
            }
            wanted.withLock { table in for entry in table.values { entry.running?.finish() } }
        }
    }

    /// Ends every sink; `run()` returns once they are gone.
    func shutDown() {
        closed.withLock { $0 = true }
        starts.continuation.finish()
    }

    /// Keeps a sink for `device`, or for the group `device` whose `members` play it (already kept: the one there is);
    /// returns it.
    /// - Throws: what `DesktopAudio` refuses (This computer, a device without L16 or WAV, no sound server).
    /// - Throws: what `DesktopAudio` refuses (This computer, a device without L16 or WAV, no sound server); `RouteError`
    ///   when a device of it plays another sink the service keeps (the two would take the device from each other).
    func start(_ device: MediaDevice, members: [MediaDevice] = [], settings: DesktopAudioSettings) throws -> RouteServiceAPI.Sink {
        let delays = DeviceLookup.delays(of: members)
        // The same checks as a sink that runs, made now so that the caller hears them.
        let check = try DesktopAudio(group: device, members: members.isEmpty ? [device] : members, delays: delays, router: router,
                                     servers: servers, settings: settings)
        let sink = try wanted.withLock { table -> Wanted in
            if let existing = table[device.id] { return existing }
            let playing = Set(check.members.map(\.device.id))
            if let other = table.values.first(where: { !playing.isDisjoint(with: ($0.members.isEmpty ? [$0.device] : $0.members).map(\.id)) }) {
                throw RouteError(.commandFailed, "a device of \(device.name) plays the sink the route service keeps for \(other.device.name); "
                                 + "route sink --stop --to \"\(other.device.name)\" first", device: device.name)
            }
            let entry = Wanted(device: device, members: members, delays: delays, settings: settings, sink: check.sink.name,
                               present: !members.isEmpty || router.devices.contains { $0.id == device.id })
            table[device.id] = entry
            return entry
        }
        starts.continuation.yield(device.id)
        changed(value)
        return Self.value(sink)
    }

    /// Stops keeping the sink of the device called or identified `query`; false when there is none.
    func stop(_ query: String) -> Bool {
        let entry = wanted.withLock { table -> Wanted? in
            guard let id = table.first(where: { $0.key == query || $0.value.device.names.contains { $0.caseInsensitiveCompare(query) == .orderedSame } })?.key
            else { return nil }
            return table.removeValue(forKey: id)
        }
        entry?.running?.finish()
        if entry != nil { changed(value) }
        return entry != nil
    }

    /// The devices on the network changed: sinks of devices that left go, those whose device came back return.
    func devicesChanged(_ devices: [MediaDevice]) {
        let present = Dictionary(devices.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var returned: [String] = []
        var left: [AsyncStream<Void>.Continuation] = []
        let any = wanted.withLock { table -> Bool in
            var any = false
            for (id, var entry) in table where entry.members.isEmpty {
                let now = present[id] != nil
                guard now != entry.present else { continue }
                any = true
                entry.present = now
                if let device = present[id] { entry.device = device; returned.append(id) }
                if !now, let running = entry.running { left.append(running); entry.running = nil }
                table[id] = entry
            }
            return any
        }
        for running in left { running.finish() }
        for id in returned { starts.continuation.yield(id) }
        if any { changed(value) }
    }

    /// The Sinks property.
    var value: DBusValue {
        let sinks = wanted.withLock { $0.values.sorted { $0.device.name < $1.device.name } }
        return .array(elementType: "a{sv}", sinks.compactMap { try? DBusCoding.encode(Self.value($0)) })
    }

    private static func value(_ entry: Wanted) -> RouteServiceAPI.Sink {
        RouteServiceAPI.Sink(deviceID: entry.device.id, device: entry.device.name, sink: entry.sink, present: entry.present,
                                event: entry.event?.name, text: entry.event?.words(device: entry.eventMember ?? entry.device.name))
    }

    /// One sink, until `stop` ends (the device left, StopSink, the service ends) or it fails to be made.
    private func play(_ id: String, _ entry: Wanted, until stop: AsyncStream<Void>) async {
        let device = entry.device, generation = entry.generation
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    let audio = try DesktopAudio(group: device, members: entry.members.isEmpty ? [device] : entry.members, delays: entry.delays,
                                                 router: self.router, servers: self.servers, settings: entry.settings)
                    try await audio.run { self.heard($0, id: id, device: device, on: $1) }
                } catch {
                    if !Task.isCancelled { self.heard(.sinkLost("\(error)"), id: id, device: device, on: device) }
                }
            }
            group.addTask { for await _ in stop {} }
            await group.next()
            group.cancelAll()
        }
        let again = wanted.withLock { table -> Bool in
            guard var entry = table[id], entry.generation == generation else { return false }
            entry.running = nil
            table[id] = entry
            return entry.present
        }
        // Still wanted and present but it ended by itself (the sink could not be made): try again after a while.
        if again, !closed.withLock({ $0 }) {
            try? await Task.sleep(for: .seconds(5))
            starts.continuation.yield(id)
        }
    }

    /// Says `words` about the sink kept for `device` (a group's member left out).
    func tell(_ words: String, about device: MediaDevice) {
        heard(.notice(words), id: device.id, device: device, on: device)
    }

    /// What the sink of `device` did, on `member` (a group's member, or the device itself).
    private func heard(_ event: DesktopAudioEvent, id: String, device: MediaDevice, on member: MediaDevice) {
        let sink = wanted.withLock { table -> String? in
            table[id]?.event = event
            table[id]?.eventMember = member.name
            return table[id]?.sink
        }
        var fields: [String: DBusValue] = ["deviceID": .variant(.string(id)), "device": .variant(.string(device.name)),
                                           "event": .variant(.string(event.name)), "text": .variant(.string(event.words(device: member.name)))]
        if let sink { fields["sink"] = .variant(.string(sink)) }
        if member.id != device.id { fields["member"] = .variant(.string(member.name)) }
        emit(.dictionary(fields))
        changed(value)
    }
}

extension DesktopAudioSettings {
    /// The settings StartSink's options (and `route sink`'s, which are the same) ask for; nil options, the defaults.
    public init(_ options: RouteServiceAPI.SinkOptions) {
        self.init(via: options.via?.lowercased())
        if let seconds = options.idle { quietSpell = .milliseconds(Int(seconds * 1000)) }
        format = options.format.flatMap { LiveAudio.Format(rawValue: $0.lowercased()) }
        server = options.soundServer.flatMap { SoundServer(rawValue: $0.lowercased()) }
    }
}
