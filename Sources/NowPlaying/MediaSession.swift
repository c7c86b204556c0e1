// MediaSession: publishes one MediaSessionRepresentable to the desktop (an MPRIS player on the session bus)
// for as long as it runs, following every change of the model through Observation.

import Foundation
import Observation
import RouteCore
import RouteGIO

/// Why a session cannot be published.
public enum NowPlayingError: Error, CustomStringConvertible {
    /// There is no session bus to publish on (a shell over SSH, a system service): playback goes on without
    /// desktop controls.
    case noSessionBus(String)
    /// The bus refused the player's name or object.
    case refused(String)

    public var description: String {
        switch self {
        case .noSessionBus(let reason): return "desktop media controls are off: \(reason)"
        case .refused(let reason): return "desktop media controls are off: \(reason)"
        }
    }
}

/// Publishes a model to the desktop's media controls (GNOME's and KDE's, media keys, `playerctl`).
///
/// `run()` puts the session on the bus as `org.mpris.MediaPlayer2.route.<id>`, keeps it up to date with
/// every change of the model (PropertiesChanged; Seeked when the position jumps), turns the desktop's
/// requests into the model's commands, and takes it off the bus when cancelled.
@MainActor
public final class MediaSession {
    /// The published model.
    public let model: any MediaSessionRepresentable

    private let busAddress: String?

    /// A publication of `model` on the user's session bus (or the bus at `busAddress`); nothing is published
    /// until `run()`.
    public init(_ model: any MediaSessionRepresentable, busAddress: String? = nil) {
        self.model = model
        self.busAddress = busAddress
    }

    /// The bus name this session is published under.
    public nonisolated static func busName(for id: String) -> String { MPRISNames.busName(for: id) }

    private static let connecting = BlockingThreads(name: "route-dbus-connect", count: 1)

    /// Publishes until cancelled.
    /// - Throws: `NowPlayingError` when there is no session bus, it refuses the player, or it goes away.
    public func run() async throws {
        let bus: DBusConnection
        let address = busAddress
        do {
            bus = try await Self.connecting.run(timeout: .seconds(5), timedOut: { DBusError("the session bus did not answer within 5 s") }) {
                try DBusConnection.session(address: address)
            }
        } catch is CancellationError {
            return
        } catch {
            throw NowPlayingError.noSessionBus("\(error)")
        }
        guard !Task.isCancelled else { return }
        let id = model.id
        let name = MPRISNames.busName(for: id)
        let player = MPRISPlayer(bus: bus, state: Self.state(of: model)) { [weak self] request in
            try await self?.perform(request)
        }
        // The object first, then the name: a client that sees the name finds the player there.
        let registration: DBusRegistration
        do {
            registration = try await Self.connecting.run(timeout: .seconds(10), timedOut: { DBusError("the session bus did not answer within 10 s") }) {
                let registration = try bus.export(path: MPRISPlayer.path, introspectionXML: MPRISNames.introspection, handler: player)
                do { try bus.requestName(name) } catch { registration.end(); throw error }
                return registration
            }
        } catch is CancellationError {
            return
        } catch {
            throw NowPlayingError.refused("\(error)")
        }
        MediaSessions.published.append(id)
        defer {
            player.retire()
            MediaSessions.published.removeAll { $0 == id }
            if MediaSessions.active == id { MediaSessions.active = nil }
            registration.end()
            // Given back at once on a thread of its own (a round trip to the bus must not hold up the main actor).
            DetachedThread.start(name: "route-release") { bus.releaseName(name) }
        }
        let model = self.model
        // Observation tells of the next change once per tracking; the stream wakes the loop, and ends it when the
        // task is cancelled (Observations' own sequence waits for a change before it notices).
        let (changes, changed) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let busGone = await withDiscardingTaskGroup { group -> Bool in
            defer { group.cancelAll() }
            // A bus that goes away while nothing changes (a paused cast) is noticed within a second.
            group.addTask {
                while !Task.isCancelled, !bus.isClosed { try? await Task.sleep(for: .seconds(1)) }
                changed.yield()
            }
            var artworkLoaded: Set<String> = []
            var wasPlaying = false
            var wakeUps = changes.makeAsyncIterator()
            repeat {
                // The daemon ended (the desktop session is over): nothing is published any more.
                if bus.isClosed { return true }
                let state = withObservationTracking { Self.state(of: model) } onChange: { changed.yield() }
                player.update(state)
                if state.snapshot.isPlaying, !wasPlaying { MediaSessions.active = id }
                wasPlaying = state.snapshot.isPlaying
                if let artwork = model.content?.artwork, !artworkLoaded.contains(artwork.id) {
                    artworkLoaded.insert(artwork.id)
                    group.addTask {
                        if let url = try? await ArtworkCache.file(for: artwork) { player.setArtURL(url, for: artwork.id) }
                    }
                }
            } while await wakeUps.next() != nil && !Task.isCancelled
            return false
        }
        if busGone { throw NowPlayingError.refused("the session bus went away") }
    }

    /// What MPRIS shows of `model` now.
    private static func state(of model: any MediaSessionRepresentable) -> MPRISState {
        let content = model.content
        let commands = model.commands
        return MPRISState(
            identity: model.displayName,
            trackID: content.map { MPRISNames.trackID(for: $0.identifier) } ?? "/org/mpris/MediaPlayer2/TrackList/NoTrack",
            hasContent: content != nil, title: content?.title, artists: artists(of: content, in: model), album: content?.album,
            length: content?.duration.seconds.map(microseconds),
            artworkID: content?.artwork?.id, artURL: nil, snapshot: model.playbackSnapshot, volume: model.volume,
            canPause: commands.pause.isEnabled || commands.togglePlayPause.isEnabled,
            // A live broadcast is never seeked, whatever the model offers.
            canSeek: commands.seek.isEnabled && content?.duration != .live,
            canGoNext: commands.next.isEnabled, canGoPrevious: commands.previous.isEnabled,
            canRaise: commands.raise.isEnabled)
    }

    /// The item's artists; for an item that names none, where it plays (a desktop would say "Unknown artist").
    private static func artists(of content: (any MediaContent)?, in model: any MediaSessionRepresentable) -> [String] {
        guard let content else { return [] }
        if !content.artists.isEmpty { return content.artists }
        return model.placeName.map { [$0] } ?? []
    }

    /// Carries out a desktop's request with the model's commands (a disabled one does nothing, as MPRIS asks).
    private func perform(_ request: MPRISRequest) async throws {
        let commands = model.commands
        switch request {
        // A model that offers only the toggle gets it for Play and Pause, when the state calls for it.
        case .play:
            if commands.play.isEnabled { try await commands.play() }
            else if !model.playbackSnapshot.isPlaying { try await commands.togglePlayPause() }
        case .pause:
            if commands.pause.isEnabled { try await commands.pause() }
            else if model.playbackSnapshot.isPlaying { try await commands.togglePlayPause() }
        case .playPause:
            if commands.togglePlayPause.isEnabled { try await commands.togglePlayPause() }
            else if model.playbackSnapshot.isPlaying { try await commands.pause() }
            else { try await commands.play() }
        case .stop: try await commands.stop()
        case .next: try await commands.next()
        case .previous: try await commands.previous()
        case .seek(let seconds): try await commands.seek(seconds)
        case .volume(let level): try await commands.changeVolume(level)
        case .raise: try await commands.raise()
        }
    }
}

/// The sessions this process publishes, and which one is active: the one that last started playing.
@MainActor
public enum MediaSessions {
    /// The ids of the sessions on the bus now, oldest first.
    public internal(set) static var published: [String] = []
    /// The id of the session that last started playing, while it is published.
    public internal(set) static var active: String?
}

/// Artwork written where a desktop can open it (`mpris:artUrl` is opened as a GFile): the user's cache.
enum ArtworkCache {
    static let size = ArtworkSize(width: 512, height: 512)

    /// The `file://` URL of the artwork's picture, written once (a picture on the web: its URL).
    static func file(for artwork: Artwork) async throws -> String? {
        if let url = artwork.url { return url }
        guard let image = try await artwork.image(for: size) else { return nil }
        let directory = directory(in: ProcessInfo.processInfo.environment)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let ext = image.mimeType.contains("png") ? "png" : image.mimeType.contains("gif") ? "gif" : "jpg"
        // Named by a hash of the whole id: two ids do not share a file.
        let path = "\(directory)/\(StableName.of(artwork.id)).\(ext)"
        if !FileManager.default.fileExists(atPath: path) { try image.data.write(to: URL(fileURLWithPath: path), options: .atomic) }
        return URL(fileURLWithPath: path).absoluteString
    }

    /// Where the pictures go: `$XDG_CACHE_HOME/route/artwork`, else under `$HOME/.cache` (the XDG base directory rules:
    /// a relative XDG_CACHE_HOME is ignored), else the account's home from the password database.
    static func directory(in environment: [String: String]) -> String {
        let absolute = { (name: String) in environment[name].flatMap { $0.hasPrefix("/") ? $0 : nil } }
        let cache = absolute("XDG_CACHE_HOME") ?? ((absolute("HOME") ?? NSHomeDirectory()) + "/.cache")
        return cache + "/route/artwork"
    }
}
