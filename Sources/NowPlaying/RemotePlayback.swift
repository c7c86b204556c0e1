// RemotePlayback: a ready-made remote media session for one device — commands wired by its owner, state
// taken from the device's PlaybackStatus reports (what a cast or a mirrored session needs).

import Foundation
import Observation
import RouteCore

/// A remote media session whose state is a device's `PlaybackStatus`: playing or not, position, volume, and
/// the commands the device allows now (pause, seek and volume go grey when it refuses them; seeking is never
/// offered on a stream without a length).
@MainActor @Observable
public final class RemotePlayback: RemoteMediaSessionRepresentable {
    public let id: String
    public var devices: [MediaDevice]
    public var content: (any MediaContent)?
    public private(set) var playbackSnapshot: PlaybackSnapshot = .paused
    public private(set) var volume: Double?
    /// The commands the owner offers; `commands` is these, less what the device does not allow now.
    public var controls: MediaCommands
    /// Whether `update` takes the title, artist and album from the device's reports (for a session route did
    /// not start); an owner that knows its items better sets `content` itself.
    public var adoptsDeviceMetadata: Bool
    private var allowed: PlaybackStatus.Commands = .all

    /// A session `id` playing on `devices`, controlled through `controls`.
    public init(id: String, devices: [MediaDevice], controls: MediaCommands, adoptsDeviceMetadata: Bool = true) {
        self.id = id
        self.devices = devices
        self.controls = controls
        self.adoptsDeviceMetadata = adoptsDeviceMetadata
    }

    public var commands: MediaCommands {
        var commands = controls
        let canSeek = allowed.contains(.seek) && content?.duration.seconds != nil
        commands.pause.isEnabled = commands.pause.isEnabled && allowed.contains(.pause)
        commands.togglePlayPause.isEnabled = commands.togglePlayPause.isEnabled && allowed.contains(.pause)
        commands.seek.isEnabled = commands.seek.isEnabled && canSeek
        commands.skipForward.command.isEnabled = commands.skipForward.command.isEnabled && canSeek
        commands.skipBackward.command.isEnabled = commands.skipBackward.command.isEnabled && canSeek
        commands.changeVolume.isEnabled = commands.changeVolume.isEnabled && allowed.contains(.volume)
        return commands
    }

    public func update(_ state: PlaybackStatus) {
        let snapshot = PlaybackSnapshot(isPlaying: state.state == .playing, elapsed: state.position, rate: state.speed,
                                        timestamp: state.timestamp)
        if snapshot != playbackSnapshot { playbackSnapshot = snapshot }
        if let level = state.volume, level != volume { volume = level }
        if state.allowed != allowed { allowed = state.allowed }
        guard adoptsDeviceMetadata, let named = state.title ?? state.itemURL.map(Self.name(of:)) else { return }
        let identifier = state.itemID ?? state.itemURL ?? named
        // A report without a title says nothing new of the same item: it keeps the title it had.
        let title = state.title ?? (content?.identifier == identifier ? content?.title : nil) ?? named
        let duration: MediaDuration = state.duration.map { .finite($0) } ?? .continuous
        if let content, content.identifier == identifier, content.title == title, content.duration == duration,
           content.artists.first == state.artist, content.album == state.album {
            return
        }
        if state.artist != nil || state.album != nil {
            content = MusicContent(title: title, artist: state.artist, album: state.album, duration: duration, identifier: identifier)
        } else {
            content = GenericContent(title: title, duration: duration, identifier: identifier)
        }
    }

    /// A title for an item known only by its URL: its file name, without the extension.
    private static func name(of url: String) -> String {
        let path = URL(string: url)?.deletingPathExtension().lastPathComponent ?? ""
        return path.isEmpty || path == "/" ? url : (path.removingPercentEncoding ?? path)
    }
}
