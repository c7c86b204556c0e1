// QueuedCast: a cast of probed files to one device as a session — the preparer that serves each file the way the
// route playing it needs, and the session that plays the queue — made the same way by `route cast` and the service.

import Foundation
import RouteCore
import RouteMedia

/// A queue of probed files on one device: the session that plays it, the preparer that serves its files, and what
/// the session says, in order.
public struct QueuedCast: Sendable {
    /// The session playing the queue (not started: `run()`).
    public let session: QueueSession
    /// Serves the queue's files; `close()` it when the session has ended.
    public let preparer: MediaPreparer
    /// The queue's files, probed ahead.
    public let probes: ProbeAhead
    /// The session's statuses and notices in order, for one reader; ends when `run()` returns. A reader 256 events
    /// behind loses the oldest.
    public let events: AsyncStream<QueueEvent>
    private let said: AsyncStream<QueueEvent>.Continuation

    /// A cast of `probes` to `device` through `router`'s controllers, its files served by `servers` (shared with other
    /// casts) or by servers of its own that log to `log`; where each item stops is kept in `resume`.
    /// - Throws: `RouteError.unsupported` when `settings.via` names no route of the device.
    /// `beforeFirstPlay` is the session's (`QueueSession.Options`): a group's members start together. `startPosition`,
    /// when given, is where an item starts when it says (a member joining a group starts where the group plays); where it
    /// says nil, `settings`' start or resume position.
    public init(_ probes: ProbeAhead, on device: MediaDevice, router: MediaRouter, settings: CastSettings,
                servers: MediaServers? = nil, resume: ResumePositions = .shared, log: RouteLog = .discard,
                beforeFirstPlay: (@Sendable (MediaRoute) async -> PlayCue?)? = nil,
                startPosition: (@Sendable (Int) -> Double?)? = nil) throws {
        let preparer = try MediaPreparer(device: device, via: settings.via, servers: servers, log: log)
        let (events, said) = AsyncStream<QueueEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let say: @Sendable (String) -> Void = { said.yield(.notice($0)) }
        var options = QueueSession.Options(startTimeout: settings.startTimeout, imageDuration: settings.imageDuration,
                                          access: { preparer.access(to: $0) }, onSkip: { _, title, error in say("skipping \(title): \(error)") })
        options.onNotice = say
        let recorder = ResumeRecorder(store: resume, keys: probes.entries.map { $0.isLive ? nil : $0.location })
        options.onStatus = { status in
            said.yield(.status(status))
            recorder.hear(status)
        }
        options.loops = settings.loops
        options.firstItem = settings.firstItem
        options.beforeFirstPlay = beforeFirstPlay
        let starts = StartPositions(first: settings.start, firstItem: settings.firstItem, keys: probes.entries.map(\.location),
                                    store: settings.resumes ? resume : nil)
        options.startPosition = { index in startPosition?(index) ?? starts.position(of: index) }
        let subtitles = settings.subtitles
        session = QueueSession(device: device, titles: probes.titles, options: options, open: { try await router.controller(for: $0) }) { index in
            let info = try await probes.info(index)
            let (route, item) = try preparer.prepare(info, subtitles: subtitles, notice: say)
            return QueueSession.Prepared(route: route, item: item)
        }
        self.preparer = preparer
        self.probes = probes
        self.events = events
        self.said = said
    }

    /// Says `words` among the session's notices (what was left out making the queue).
    public func say(_ words: String) {
        said.yield(.notice(words))
    }

    /// Plays the queue (the session's `run()`); `events` ends with it.
    /// - Throws: what the session throws: the device failed, could not be reached, or did not start an item in time.
    public func run() async throws {
        defer { said.finish() }
        try await session.run()
    }
}
