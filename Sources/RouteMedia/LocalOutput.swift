// LocalOutput: "This computer" — a device that is always there, playing through GStreamer's playbin.

import CGStreamer
import CRouteShim
import Foundation
import RouteCore
import Synchronization

/// The provider of the one local device. Needs no network; its list never changes.
public struct LocalProvider: RouteProvider {
    /// The local route: plays anything GStreamer decodes, with absolute volume.
    public static let route = MediaRoute.thisComputer
    /// "This computer", with its one route.
    public static let device = MediaDevice.thisComputer

    public let name = MediaRoute.localProvider

    /// Makes the provider.
    public init() {}

    /// Publishes the local route and waits until cancelled.
    public func run(_ context: ProviderContext) async throws {
        context.publish([Self.route])
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    /// The local device has no network address.
    public func route(at address: String, context: ProviderContext) async throws -> MediaRoute? { nil }

    /// A new playbin-backed player.
    public func controller(for route: MediaRoute, context: ProviderContext) async throws -> any RouteController {
        try LocalPlayer(route: route)
    }
}

/// Plays items on this computer through playbin.
///
/// Sinks: `ROUTE_AUDIO_SINK` / `ROUTE_VIDEO_SINK` (pipeline descriptions such as
/// `fakesink sync=true`) override GStreamer's automatic choice; with no display, video goes to a
/// fakesink. While `run()` runs, a bus thread (`route-local-bus`) turns GStreamer messages into status
/// reports.
final class LocalPlayer: RouteController, @unchecked Sendable {
    // Safety: `playbin` is set once in init and GStreamer's element calls are thread-safe;
    // mutable state lives in `state` behind a Mutex.
    let route: MediaRoute
    private var device: MediaRoute { route }
    private let playbin: UnsafeMutablePointer<GstElement>
    private let updates = Broadcast<PlaybackStatus>(initial: PlaybackStatus(state: .idle))
    private let state = Mutex(PlayerState())
    /// Held by a command (and the close) while it changes the pipeline and says so: the session that hears "stopped"
    /// loads the next item at once, and that load must not run before the stop's own state change (which would undo
    /// it: the item stayed "loading" on a pipeline left in READY).
    private let commands = Mutex(())

    private struct PlayerState {
        var status = PlaybackStatus(state: .idle, volume: 1)
        var wantsPlaying = false
        var closed = false
        var lastReport = ContinuousClock.now
    }

    init(route: MediaRoute) throws {
        GStreamer.initialize()
        self.route = route
        // Sinks first: an invalid description throws before anything needs releasing.
        let environment = ProcessInfo.processInfo.environment
        let audioSink = try environment["ROUTE_AUDIO_SINK"].flatMap { $0.isEmpty ? nil : $0 }
            .map { try GStreamer.bin(from: $0, purpose: "ROUTE_AUDIO_SINK") }
        let headless = (environment["DISPLAY"] ?? "").isEmpty && (environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        let videoDescription = environment["ROUTE_VIDEO_SINK"].flatMap { $0.isEmpty ? nil : $0 } ?? (headless ? "fakesink sync=true" : nil)
        let videoSink: UnsafeMutablePointer<GstElement>?
        do {
            videoSink = try videoDescription.map { try GStreamer.bin(from: $0, purpose: "ROUTE_VIDEO_SINK") }
        } catch {
            if let audioSink { gst_object_unref(audioSink) }
            throw error
        }
        guard let element = gst_element_factory_make("playbin", "route-local") else {
            for sink in [audioSink, videoSink].compactMap({ $0 }) { gst_object_unref(sink) }
            throw MediaError.pipeline("GStreamer has no playbin element; install gstreamer1.0-plugins-base")
        }
        playbin = element
        if let audioSink { route_object_set_object(playbin, "audio-sink", audioSink) }
        if let videoSink { route_object_set_object(playbin, "video-sink", videoSink) }
    }

    /// Turns bus messages into statuses on a thread of its own (gst_bus_timed_pop blocks) until the
    /// player is closed or the task is cancelled.
    func run() async throws {
        let stop = Mutex(false)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                // The thread holds the player only while handling one message.
                DetachedThread.start(name: "route-local-bus") { [weak self] in
                    while !stop.withLock({ $0 }), let player = self, player.pumpBus() {}
                    done.resume()
                }
            }
        } onCancel: {
            stop.withLock { $0 = true }
        }
    }

    func statusUpdates() -> AsyncStream<PlaybackStatus> { updates.subscribe() }

    func load(_ item: MediaItem, autoplay: Bool) async throws {
        try commands.withLock { _ in
            try checkOpen()
            gst_element_set_state(playbin, GST_STATE_READY)
            route_object_set_string(playbin, "uri", item.url)
            publish {
                $0 = PlaybackStatus(state: .loading, duration: item.duration, volume: $0.volume, title: item.title)
                $0.itemURL = item.url
                $0.position = 0
            }
            state.withLock { $0.wantsPlaying = autoplay }
            try setState(autoplay ? GST_STATE_PLAYING : GST_STATE_PAUSED, command: "load")
        }
    }

    func play() async throws {
        try commands.withLock { _ in
            try checkOpen()
            state.withLock { $0.wantsPlaying = true }
            let restart = state.withLock { $0.status.state == .ended }
            publish { if $0.isFinal { $0.state = .loading; $0.error = nil } }
            if restart { try seekNow(to: 0) }
            try setState(GST_STATE_PLAYING, command: "play")
        }
    }

    func pause() async throws {
        try commands.withLock { _ in
            try checkOpen()
            state.withLock { $0.wantsPlaying = false }
            try setState(GST_STATE_PAUSED, command: "pause")
        }
    }

    func seek(to seconds: Double) async throws {
        try commands.withLock { _ in
            try checkOpen()
            try seekNow(to: seconds)
        }
    }

    func stop() async throws {
        try commands.withLock { _ in
            try checkOpen()
            state.withLock { $0.wantsPlaying = false }
            // Stopped first: the pipeline passes through PAUSED on its way down, and the bus thread would report that
            // as "paused" before "stopped" (a final state ignores it).
            publish { $0.state = .stopped }
            gst_element_set_state(playbin, GST_STATE_READY)
        }
    }

    func setVolume(_ level: Double) async throws {
        try checkOpen()
        let clamped = min(1, max(0, level))
        route_object_set_double(playbin, "volume", clamped)
        publish { $0.volume = clamped }
    }

    /// Local output loads the next item when the current one ends (no gapless queue).
    func setNext(_ item: MediaItem) async throws -> Bool { false }

    func setMuted(_ muted: Bool) async throws {
        try checkOpen()
        route_object_set_bool(playbin, "mute", muted ? 1 : 0)
        publish { $0.muted = muted }
    }

    func close() async {
        // A command waiting for `commands` finds the player closed: nothing plays after the close.
        let wasOpen = commands.withLock { _ in
            let wasOpen = state.withLock { s -> Bool in defer { s.closed = true }; return !s.closed }
            if wasOpen { gst_element_set_state(playbin, GST_STATE_NULL) }
            return wasOpen
        }
        if wasOpen { updates.finish() }
    }

    deinit {
        gst_element_set_state(playbin, GST_STATE_NULL)
        gst_object_unref(playbin)
        updates.finish()
    }

    private func checkOpen() throws {
        if state.withLock({ $0.closed }) {
            throw RouteError.deviceUnreachable(device: device.name, reason: "the player was closed")
        }
    }

    /// Seeks the pipeline (a command holding `commands`).
    private func seekNow(to seconds: Double) throws {
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_KEY_UNIT.rawValue)
        guard gst_element_seek_simple(playbin, GST_FORMAT_TIME, flags, gint64(seconds * GStreamer.second)) != 0 else {
            throw RouteError.commandFailed(device: device.name, command: "seek", reason: "this media cannot seek there")
        }
        publish { $0.position = seconds }
    }

    private func setState(_ target: GstState, command: String) throws {
        if gst_element_set_state(playbin, target) == GST_STATE_CHANGE_FAILURE {
            let reason = state.withLock { $0.status.error } ?? "GStreamer refused the state change"
            throw RouteError.commandFailed(device: device.name, command: command, reason: reason)
        }
    }

    private func publish(_ change: (inout PlaybackStatus) -> Void) {
        // Every change carries the time its position is true at.
        let status = state.withLock { s -> PlaybackStatus in change(&s.status); s.status.timestamp = Date(); return s.status }
        updates.send(status)
    }

    /// One turn of the bus thread: waits up to 200 ms for a message, handles it, and reports the
    /// position every 500 ms while playing. Returns false once the player is closed.
    private func pumpBus() -> Bool {
        guard !state.withLock({ $0.closed }), let bus = gst_element_get_bus(playbin) else { return false }
        defer { gst_object_unref(bus) }
        if let message = gst_bus_timed_pop(bus, GstClockTime(0.2 * GStreamer.second)) {
            handle(message)
            gst_mini_object_unref(UnsafeMutableRawPointer(message).assumingMemoryBound(to: GstMiniObject.self))
        }
        let due = state.withLock { s -> Bool in
            guard s.status.state == .playing, ContinuousClock.now - s.lastReport >= .milliseconds(500) else { return false }
            s.lastReport = .now
            return true
        }
        if due {
            let position = queryPosition()
            publish { s in
                if let position { s.position = position }
                if s.duration == nil { s.duration = self.queryDuration() }
            }
        }
        return true
    }

    private func handle(_ message: UnsafeMutablePointer<GstMessage>) {
        let type = message.pointee.type.rawValue
        if type == GST_MESSAGE_EOS.rawValue {
            publish { s in
                s.state = .ended
                if let duration = s.duration { s.position = duration }
            }
        } else if type == GST_MESSAGE_ERROR.rawValue {
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            let text = error.map { String(cString: $0.pointee.message) } ?? "unknown GStreamer error"
            if let error { g_error_free(error) }
            g_free(debug)
            publish { s in
                s.state = .failed
                s.error = text
            }
        } else if type == GST_MESSAGE_STATE_CHANGED.rawValue,
                  UnsafeMutableRawPointer(message.pointee.src) == UnsafeMutableRawPointer(playbin) {
            var old = GST_STATE_NULL, new = GST_STATE_NULL, pending = GST_STATE_NULL
            gst_message_parse_state_changed(message, &old, &new, &pending)
            let wantsPlaying = state.withLock { $0.wantsPlaying }
            let position = queryPosition(), duration = queryDuration()
            publish { s in
                guard !s.isFinal else { return }
                if new == GST_STATE_PLAYING {
                    s.state = .playing
                } else if new == GST_STATE_PAUSED {
                    s.state = wantsPlaying ? .loading : .paused
                }
                if let position { s.position = position }
                if let duration { s.duration = duration }
            }
        } else if type == GST_MESSAGE_DURATION_CHANGED.rawValue {
            if let duration = queryDuration() { publish { $0.duration = duration } }
        }
    }

    private func queryPosition() -> Double? {
        var value: gint64 = 0
        guard gst_element_query_position(playbin, GST_FORMAT_TIME, &value) != 0, value >= 0 else { return nil }
        return Double(value) / GStreamer.second
    }

    private func queryDuration() -> Double? { GStreamer.duration(of: playbin) }
}
