// The two protocols every provider implements — discovery with a lifecycle (RouteProvider) and control
// (RouteController) — and what the router hands a provider while it runs (ProviderContext).

import FoundationEssentials

/// What a provider is handed while it runs: where to publish its routes, the shared discovery services,
/// and its log.
public struct ProviderContext: Sendable {
    /// The provider's log (named after it).
    public let log: RouteLog
    /// SSDP and DNS-SD, shared by every provider: subscribe to what you need; never open your own.
    public let discovery: DiscoveryServices
    private let publisher: @Sendable ([MediaRoute]) -> Void
    private let versionSink: @Sendable (String) -> Void

    /// A context; the router makes one per provider.
    public init(log: RouteLog, discovery: DiscoveryServices, publish: @escaping @Sendable ([MediaRoute]) -> Void,
                version: @escaping @Sendable (String) -> Void = { _ in }) {
        self.log = log
        self.discovery = discovery
        self.publisher = publish
        self.versionSink = version
    }

    /// Replaces the provider's routes with `routes`: a full snapshot, never a delta, so that a provider
    /// that restarts simply publishes again.
    public func publish(_ routes: [MediaRoute]) { publisher(routes) }

    /// Says which version of the provider runs, once it knows (a plugin, after its handshake), for
    /// `ProviderStatus.version`.
    public func report(version: String) { versionSink(version) }
}

/// How the router runs a provider again after it fails: backoff, and when to stop trying for a while.
public struct RestartPolicy: Sendable {
    /// The first wait before a failed provider runs again; it doubles up to `maxBackoff` (and starts
    /// again from here after a run that lasted longer than `maxBackoff`).
    public var firstBackoff: Duration
    public var maxBackoff: Duration
    /// When a provider that keeps failing is set aside, and what ends that.
    public var quarantine: Quarantine?

    /// A provider that failed `failures` times within `window` is not run again until `release` returns
    /// (a plugin: until its file changes); its state is then `quarantined`.
    public struct Quarantine: Sendable {
        public var failures: Int
        public var window: Duration
        public var release: @Sendable () async -> Void

        /// A quarantine rule.
        public init(failures: Int, window: Duration, release: @escaping @Sendable () async -> Void) {
            self.failures = failures
            self.window = window
            self.release = release
        }
    }

    /// A policy.
    public init(firstBackoff: Duration, maxBackoff: Duration, quarantine: Quarantine? = nil) {
        self.firstBackoff = firstBackoff
        self.maxBackoff = maxBackoff
        self.quarantine = quarantine
    }

    /// Built-in providers: 1 s doubling to 60 s, never quarantined.
    public static let standard = RestartPolicy(firstBackoff: .seconds(1), maxBackoff: .seconds(60))
}

/// A source of devices speaking one protocol (UPnP, Cast, local output, a drop-in plugin).
public protocol RouteProvider: Sendable {
    /// Short name (`local`, `upnp`, a plugin's), the `provider` of its routes.
    var name: String { get }

    /// Where the provider comes from, when it is a file of its own (a plugin's executable); nil when built in.
    var path: String? { get }

    /// How the router runs it again after it fails.
    var restartPolicy: RestartPolicy { get }

    /// Discovers until cancelled, publishing full snapshots through `context` (an empty one as soon as it
    /// is ready). Returning means it has stopped; throwing means it failed: the router then drops its
    /// routes, says so in `providerUpdates()`, and runs it again after a backoff.
    func run(_ context: ProviderContext) async throws

    /// Asks the device at `address` directly, without discovery. Returns nil when the address is not one
    /// this provider speaks to; throws when it is, but the device does not answer.
    func route(at address: String, context: ProviderContext) async throws -> MediaRoute?

    /// Opens a controller for one of this provider's routes. The caller runs the controller's `run()` for
    /// as long as it uses it, then closes it.
    func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController
}

/// Remote control of one device over one route: load an item, transport commands, volume, and status.
///
/// Commands are `async` and throw `RouteError` when the device refuses or cannot be reached. Nothing
/// starts in an initializer or when the controller is opened: background work (polls, event
/// subscriptions, a connection's heartbeat) lives in `run()`, which the session runs and cancels.
public protocol RouteController: AnyObject, Sendable {
    /// The route this controls.
    var route: MediaRoute { get }

    /// The controller's background work, until cancelled. Throws when the device is lost for good (its
    /// status says so too, as `.failed` with an end reason).
    func run() async throws

    /// Loads an item, replacing the current one; starts playing when `autoplay`.
    func load(_ item: MediaItem, autoplay: Bool) async throws
    func play() async throws
    /// Plays what is loaded or paused so that its sound is heard at `instant` (this machine's clock), when the device can
    /// be told when to play (AirPlay's timeline: several such devices then play on one). Returns false, doing nothing,
    /// when it cannot: the caller then plays it with `play()`, as much ahead of `instant` as the device holds its sound
    /// back. An instant too soon for the device is taken as soon as it can.
    func play(at instant: Date) async throws -> Bool
    func pause() async throws
    /// Seeks to an absolute position in seconds.
    func seek(to seconds: Double) async throws
    func stop() async throws
    /// Sets the volume, from 0 to 1.
    func setVolume(_ level: Double) async throws
    /// Mutes or unmutes without changing the volume.
    func setMuted(_ muted: Bool) async throws
    /// Queues `item` to follow the current one without a gap, when the device can. Returns false
    /// when it cannot; the caller then loads the item when the current one ends. When the device
    /// moves on to a queued item, statuses carry its URL in `itemURL`.
    func setNext(_ item: MediaItem) async throws -> Bool

    /// Moves on to the item `setNext` queued, without stopping (a Cast receiver's queue). Returns false
    /// when the device cannot; the caller then stops the current item and loads the next.
    func skipToNext() async throws -> Bool

    /// Follows whatever the device plays, whoever started it, without loading anything (`route watch`):
    /// statuses then describe the device's own session — its state, position, title when the device says,
    /// and a `sessionID` that changes with what it plays — and never end on a takeover; transport commands act
    /// on that session. Call before `run()`. Returns false when the controller cannot.
    func observe() async throws -> Bool

    /// Status reports, starting with the current one. Each call gives an independent stream;
    /// it finishes when the controller is closed.
    func statusUpdates() -> AsyncStream<PlaybackStatus>

    /// Releases the device connection; further commands fail. Safe to call twice.
    func close() async
}

extension RouteProvider {
    /// Built in.
    public var path: String? { nil }
    /// Built-in providers are restarted with the standard backoff.
    public var restartPolicy: RestartPolicy { .standard }
}

extension RouteController {
    /// Devices without a queue of their own cannot skip to the next item.
    public func skipToNext() async throws -> Bool { false }
    /// Most devices play when they are told to, not at an instant.
    public func play(at instant: Date) async throws -> Bool { false }
    /// A controller follows only what it loads unless it says otherwise.
    public func observe() async throws -> Bool { false }
}

/// What the router knows of one provider.
public struct ProviderStatus: Sendable, Hashable, Codable {
    /// Where the provider is in its life.
    public enum State: String, Sendable, Codable {
        /// Started, not yet ready (no snapshot yet).
        case starting
        /// Discovering.
        case running
        /// It threw; it is run again after a backoff.
        case failed
        /// It failed too often in a short time and is not run again until it is repaired (a plugin whose
        /// file changes).
        case quarantined
        /// It returned, or the router stopped.
        case stopped
    }
    public var name: String
    public var state: State
    /// Its last failure, in words.
    public var lastError: String?
    /// How many routes it has published now.
    public var routes: Int
    /// How many times it was started again after failing.
    public var restarts: Int
    /// Its executable, for a plugin.
    public var path: String?
    /// The version it reported, for a plugin that has started.
    public var version: String?

    /// A provider's status.
    public init(name: String, state: State, lastError: String? = nil, routes: Int = 0, restarts: Int = 0,
                path: String? = nil, version: String? = nil) {
        self.name = name
        self.state = state
        self.lastError = lastError
        self.routes = routes
        self.restarts = restarts
        self.path = path
        self.version = version
    }
}
