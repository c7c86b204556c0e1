// CastPublication: a running `route cast` as a remote media session on the desktop (MPRIS), so that GNOME's
// and KDE's media controls, the media keys and `playerctl` show and control what plays on the device.

import Foundation
import NowPlaying
import RouteCore
import RouteMedia

/// A cast as the desktop controls it: the session playing it now, its statuses (a moved cast's, across devices), and
/// the commands it takes (a moving cast's stop stops a move under way too).
public protocol PlayingCast: SessionCommandTaker {
    /// The session playing the cast now.
    var session: QueueSession { get }
    /// Statuses after every change, starting with the latest.
    func statusUpdates() -> AsyncStream<QueueStatus>
}

extension QueueSession: PlayingCast {
    /// Itself: a session that never moves.
    public nonisolated var session: QueueSession { self }
}

extension MovableCast: PlayingCast {}

/// A cast's publication on the desktop: its queue's content, its state and its commands over MPRIS.
public enum CastPublication {
    /// Publishes the cast until cancelled or its statuses end, as `org.mpris.MediaPlayer2.route.<id>`: content from
    /// the probed files, state and device from the device's statuses (a moved cast stays one player, naming its new
    /// device), commands through the session playing it; `raise`, when given, is what the desktop's Raise does (a
    /// click on the player, in GNOME's media controls). Without a session bus it says so once (`onUnavailable`) and
    /// returns.
    @MainActor
    public static func run(_ cast: some PlayingCast, probes: ProbeAhead, id: String = "cast_\(getpid())",
                           raise: (@Sendable () async throws -> Void)? = nil,
                           onUnavailable: @escaping @Sendable (String) -> Void) async {
        var controls = MediaCommands(speaking: cast.perform)
        if let raise { controls.raise = MediaCommand { try await raise() } }
        let model = RemotePlayback(id: id, devices: [cast.session.device], controls: controls, adoptsDeviceMetadata: false)
        let publication = MediaSession(model)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await publish(publication, onUnavailable: onUnavailable) }
            var shown: Int?
            for await status in cast.statusUpdates() {
                if model.devices.map(\.id) != [status.device.id] { model.devices = [status.device] }
                if shown != status.index {
                    shown = status.index
                    let info = try? await probes.info(status.index)
                    model.content = content(of: info, title: status.title, index: status.index)
                    // A live stream has no place to seek to.
                    let seekable = !(info?.isLive ?? false)
                    model.controls.seek.isEnabled = seekable
                    model.controls.skipForward.command.isEnabled = seekable
                    model.controls.skipBackward.command.isEnabled = seekable
                }
                model.controls.next.isEnabled = status.index + 1 < status.count
                model.update(status.playback)
            }
            group.cancelAll()
        }
    }

    @MainActor
    private static func publish(_ publication: MediaSession, onUnavailable: @Sendable (String) -> Void) async {
        do { try await publication.run() } catch { onUnavailable("\(error)") }
    }

    /// Cover art found beside the file (a folder's cover.jpg), read when the desktop shows it; a page's thumbnail, as
    /// the URL the desktop fetches itself (route fetches nothing a page names).
    static func artwork(from source: ArtworkSource) -> Artwork? {
        switch source {
        case .web(let url): return Artwork(webURL: url)
        case .besideFile(let path):
            return Artwork(id: "file:" + path) { _ in
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                guard let data = try handle.read(upToCount: maxPictureBytes), data.count < maxPictureBytes else { return nil }
                let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
                return ArtworkImage(data: data, mimeType: ext == "png" ? "image/png" : ext == "gif" ? "image/gif" : "image/jpeg")
            }
        }
    }

    /// The largest picture beside a file that the desktop is given (a cover is rarely a megabyte).
    static let maxPictureBytes = 16 << 20

    /// What the desktop shows of queue item `index`: a song or a video, with its tags and cover art.
    private static func content(of info: MediaInfo?, title: String, index: Int) -> any MediaContent {
        let identifier = "\(index):\(info?.path ?? title)"
        let duration: MediaDuration = info?.isLive == true ? .live : info?.duration.map { .finite($0) } ?? .continuous
        let artwork = info?.coverArt.map { Artwork(ArtworkImage(data: $0.data, mimeType: $0.mimeType)) } ?? info?.artwork.flatMap(artwork(from:))
        if info?.kind.contains(.video) == true {
            return MovieContent(title: info?.displayTitle ?? title, subtitle: info?.artist, duration: duration, artwork: artwork,
                                identifier: identifier)
        }
        return MusicContent(title: info?.displayTitle ?? title, artist: info?.artist, album: info?.album, duration: duration,
                            artwork: artwork, identifier: identifier)
    }
}
