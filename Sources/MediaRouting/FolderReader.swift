// FolderReader: a folder's media in natural order (its folders too with --recursive), pictures beside music taken as
// its cover art — each folder read once however links lead back to it, and no more than the room left in the queue.

import Foundation
import RouteCore
import RouteMedia

/// Reads one folder named for a cast, with blocking calls (run it on a thread of its own).
struct FolderReader {
    /// What was found.
    struct Found: Sendable {
        var entries: [QueueEntry] = []
        /// Names of files that are not media.
        var skipped: [String] = []
        /// Folders not read again: links back to one read already (`a -> .`).
        var looped = 0
        /// Whether the folder holds folders (for the hint that --recursive plays them).
        var hasFolders = false
        /// Why reading stopped before the end; nil when it read everything.
        var stopped: Stop?
    }

    /// Why a folder was not read to its end.
    enum Stop: Sendable {
        /// The queue has no room left.
        case full
        /// The time for reading sources is up.
        case late
    }

    let recursive: Bool
    /// Entries the queue has room for.
    let room: Int
    let deadline: ContinuousClock.Instant

    /// The media of `folder`.
    func read(_ folder: String) -> Found {
        var found = Found()
        var seen: Set<FileIdentity> = []
        collect(folder, into: &found, seen: &seen, top: true)
        return found
    }

    /// A folder as the file system knows it: the same folder by whatever path or link it is reached.
    private struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    private func collect(_ folder: String, into found: inout Found, seen: inout Set<FileIdentity>, top: Bool) {
        var info = stat()
        guard stat(folder, &info) == 0 else { return }
        guard seen.insert(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))).inserted else {
            found.looped += 1
            return
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            .filter { !$0.hasPrefix(".") }.sorted(by: CastSources.naturalOrder)
        var files: [(path: String, ext: String)] = []
        var folders: Set<String> = []
        for name in names {
            let path = folder.hasSuffix("/") ? folder + name : folder + "/" + name
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { continue }
            if isFolder.boolValue { folders.insert(path) }
            files.append((path, URL(fileURLWithPath: name).pathExtension.lowercased()))
        }
        if top { found.hasFolders = !folders.isEmpty }
        // Pictures beside music are its cover art, not items: the one called cover/folder/front, else the first.
        let hasMusic = files.contains { MediaFileKind.audioExtensions.contains($0.ext) }
        let pictures = files.filter { MediaFileKind.imageExtensions.contains($0.ext) }.map(\.path)
        let art = hasMusic ? (pictures.first { Self.isCoverName($0) } ?? pictures.first).map(ArtworkSource.besideFile) : nil
        for (path, ext) in files {
            guard found.stopped == nil else { return }
            if found.entries.count >= room { return found.stopped = .full }
            if ContinuousClock.now > deadline { return found.stopped = .late }
            if folders.contains(path) {
                if recursive { collect(path, into: &found, seen: &seen, top: false) }
            } else if MediaFileKind.audioExtensions.contains(ext) || MediaFileKind.videoExtensions.contains(ext) {
                found.entries.append(QueueEntry(path, artwork: MediaFileKind.audioExtensions.contains(ext) ? art : nil))
            } else if MediaFileKind.imageExtensions.contains(ext) {
                if !hasMusic { found.entries.append(QueueEntry(path)) }
            } else {
                found.skipped.append(URL(fileURLWithPath: path).lastPathComponent)
            }
        }
    }

    private static func isCoverName(_ path: String) -> Bool {
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent.lowercased()
        return ["cover", "folder", "front", "albumart", "album"].contains { name == $0 || name.hasPrefix($0 + "_") || name.hasPrefix($0 + ".") }
    }
}
