// SoundSink: a sink on the desktop's sound server (PipeWire natively, or PulseAudio), named for a device, that hands
// route what is played into it and tells route when a person changes its volume. CSoundShim is the C choke point.

import CSoundShim
import Foundation
import Synchronization

/// The sound servers a sink can be made on.
public enum SoundServer: String, Sendable, CaseIterable {
    case pipewire
    case pulseaudio

    /// How people call it.
    public var displayName: String { self == .pipewire ? "PipeWire" : "PulseAudio" }

    /// The sound server of this session: PipeWire when its socket exists (`$PIPEWIRE_RUNTIME_DIR` or
    /// `$XDG_RUNTIME_DIR`, `pipewire-0`), else PulseAudio when `$PULSE_SERVER` is set or its socket exists; nil when
    /// neither runs.
    public static func running(environment: [String: String] = ProcessInfo.processInfo.environment) -> SoundServer? {
        let runtime = environment["XDG_RUNTIME_DIR"]
        let pipewireFolder = environment["PIPEWIRE_RUNTIME_DIR"] ?? runtime
        if let pipewireFolder, FileManager.default.fileExists(atPath: pipewireFolder + "/" + (environment["PIPEWIRE_REMOTE"] ?? "pipewire-0")) {
            return .pipewire
        }
        if let pulse = environment["PULSE_SERVER"], !pulse.isEmpty { return .pulseaudio }
        if let runtime, FileManager.default.fileExists(atPath: runtime + "/pulse/native") { return .pulseaudio }
        return nil
    }
}

/// A sink could not be made, or the sound server dropped it.
public struct SoundSinkError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, in words a person can act on.
    public let description: String
    /// Whether the sink had been made (the sound server dropped it later) rather than refused.
    public let sinkExisted: Bool
    /// A failure, in words.
    public init(_ description: String, sinkExisted: Bool = false) {
        self.description = description
        self.sinkExisted = sinkExisted
    }
}

/// One sink on a sound server, shown in sound settings with a device's name.
///
/// Nothing happens until `run`: the sink exists on the sound server while `run` does. Samples arrive as interleaved
/// signed 16-bit little-endian at `rate` Hz, unscaled by the sink's volume (the device applies it).
public final class SoundSink: Sendable {
    /// The server it is made on.
    public let server: SoundServer
    /// The node or sink name (`route.…`).
    public let name: String
    /// What sound settings show.
    public let description: String
    public let rate: Int
    public let channels: Int
    private let handle = Mutex<CSink?>(nil)

    /// A sink to be made on `server` called `name`, shown as `description`.
    public init(server: SoundServer, name: String, description: String, rate: Int = 44_100, channels: Int = 2) {
        self.server = server
        self.name = Self.nodeName(name)
        self.description = description
        self.rate = rate
        self.channels = channels
    }

    /// Makes the sink and keeps it until cancelled: what is played into it goes to `audio` (on the sound server
    /// library's thread: copy, do not block), a person's change of its volume (0…1 as settings show it) or mute to
    /// `volume`; `ready` is called once the sink exists.
    /// - Throws: `SoundSinkError` when the sound server cannot be reached or refuses the sink, or when it goes away.
    public func run(audio: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
                    volume: @escaping @Sendable (_ level: Double, _ muted: Bool) -> Void,
                    ready: @Sendable () -> Void = {}) async throws {
        let (failures, failed) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let box = Unmanaged.passRetained(Listener(audio: audio, volume: volume, failed: { failed.yield($0) }))
        defer { box.release() }
        var callbacks = route_sound_callbacks()
        callbacks.audio = { user, bytes, count in
            guard let user, let bytes else { return }
            Unmanaged<Listener>.fromOpaque(user).takeUnretainedValue().audio(UnsafeRawBufferPointer(start: bytes, count: count))
        }
        callbacks.volume = { user, level, muted in
            guard let user else { return }
            Unmanaged<Listener>.fromOpaque(user).takeUnretainedValue().volume(Double(level), muted != 0)
        }
        callbacks.failed = { user, message in
            guard let user else { return }
            Unmanaged<Listener>.fromOpaque(user).takeUnretainedValue().failed(message.map { String(cString: $0) } ?? "the sound server failed")
        }
        var error: UnsafeMutablePointer<CChar>?
        let kind = server == .pipewire ? ROUTE_SOUND_PIPEWIRE : ROUTE_SOUND_PULSEAUDIO
        guard let sink = route_sound_sink_new(kind, name, description, UInt32(rate), UInt32(channels), callbacks,
                                              box.toOpaque(), &error) else {
            defer { free(error) }
            throw SoundSinkError(error.map { String(cString: $0) } ?? "\(server.displayName) refused the sink")
        }
        handle.withLock { $0 = CSink(pointer: sink) }
        defer {
            handle.withLock { $0 = nil }
            route_sound_sink_free(sink)
        }
        ready()
        var reason: String?
        await withTaskCancellationHandler {
            for await message in failures {
                reason = message
                break
            }
        } onCancel: {
            failed.finish()
        }
        if let reason { throw SoundSinkError(reason, sinkExisted: true) }
    }

    /// Shows the device's volume and mute on the sink (no `volume` report follows). Nothing when it is not running.
    public func show(volume level: Double, muted: Bool) {
        handle.withLock { sink in
            guard let sink else { return }
            route_sound_sink_set_volume(sink.pointer, Float(min(1, max(0, level))), muted ? 1 : 0)
        }
    }

    /// Tells the sound server how long the device takes to play what the sink hands on, so that players can keep
    /// pictures in step. Returns false when the server has no place for it (PulseAudio) or the sink is not running.
    @discardableResult
    public func report(delay: Duration) -> Bool {
        let nanoseconds = UInt64(max(0, delay.components.seconds)) * 1_000_000_000 + UInt64(max(0, delay.components.attoseconds / 1_000_000_000))
        return handle.withLock { sink in
            guard let sink else { return false }
            return route_sound_sink_set_delay(sink.pointer, nanoseconds) == 0
        }
    }

    /// `text` as a sink name: letters, digits, '.', '_' and '-', others as '_'.
    static func nodeName(_ text: String) -> String {
        String(text.unicodeScalars.map { scalar -> Character in
            let allowed = CharacterSet.alphanumerics.contains(scalar) && scalar.isASCII || ".-_".unicodeScalars.contains(scalar)
            return allowed ? Character(scalar) : "_"
        })
    }
}

/// The C sink, used under `SoundSink.handle`'s lock (the C side locks its own loop for each call).
private struct CSink: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// What the C sink calls, kept alive while the sink runs.
private final class Listener: Sendable {
    let audio: @Sendable (UnsafeRawBufferPointer) -> Void
    let volume: @Sendable (Double, Bool) -> Void
    let failed: @Sendable (String) -> Void

    init(audio: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, volume: @escaping @Sendable (Double, Bool) -> Void,
         failed: @escaping @Sendable (String) -> Void) {
        self.audio = audio
        self.volume = volume
        self.failed = failed
    }
}
