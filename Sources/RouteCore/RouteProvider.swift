// The two protocols every provider implements: discovery (RouteProvider) and control (RouteController).

/// A source of devices speaking one protocol (UPnP, Cast, local output, a drop-in plugin).
///
/// Discovery is a stream of *full snapshots*, never deltas, so a provider that restarts simply
/// sends its list again. Discovery runs while the stream is iterated and stops when the iterating
/// task is cancelled.
public protocol RouteProvider: Sendable {
    /// Short protocol name, matching `MediaDevice.protocolName` of its devices (`local`, `upnp`, …).
    var name: String { get }

    /// Every device currently known, sent again whenever the list changes.
    func discover() -> AsyncStream<[MediaDevice]>

    /// Asks the device at `address` directly, without discovery. Returns nil when the address is
    /// not one this provider speaks to; throws when it is, but the device does not answer.
    func device(at address: String) async throws -> MediaDevice?

    /// Opens a controller for one of this provider's devices. The caller closes it.
    func controller(for device: MediaDevice) async throws -> any RouteController
}

/// Remote control of one device: load an item, transport commands, volume, and status reports.
///
/// Commands are `async` and throw `RouteError` when the device refuses or cannot be reached.
public protocol RouteController: AnyObject, Sendable {
    /// The device this controls.
    var device: MediaDevice { get }

    /// Loads an item, replacing the current one; starts playing when `autoplay`.
    func load(_ item: MediaItem, autoplay: Bool) async throws
    func play() async throws
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

    /// Status reports, starting with the current one. Each call gives an independent stream;
    /// it finishes when the controller is closed.
    func statusUpdates() -> AsyncStream<PlaybackStatus>

    /// Releases the device connection; further commands fail. Safe to call twice.
    func close() async
}
