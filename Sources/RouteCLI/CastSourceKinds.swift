// CastSourceKinds: what kind of thing each source of a cast is, judged without reading it — so that the thin route
// knows whether the service can take a cast as it is, and route-full which sources are files to check first.

import FoundationEssentials
import Glibc
import RouteCore

/// Kinds of cast sources, from their names and the file system only.
package enum CastSourceKinds {
    /// An http(s) URL.
    package static func isURL(_ source: String) -> Bool { WebAddress.isWebURL(source) }

    /// A folder, or a file named as a playlist (.m3u, .m3u8, .pls, .xspf).
    package static func isFolderOrPlaylist(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        if info.st_mode & S_IFMT == S_IFDIR { return true }
        return ["m3u", "m3u8", "pls", "xspf"].contains(URL(fileURLWithPath: path).pathExtension.lowercased())
    }

    /// A regular file, not empty, that this user may read.
    package static func isPlainFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_size > 0 && access(path, R_OK) == 0
    }

    /// Whether the route service can take `source` as it is: a plain file, a folder, a playlist or a URL (anything
    /// else is a file with a problem, which route-full names).
    package static func serviceTakes(_ source: String) -> Bool {
        isURL(source) || isPlainFile(source) || isFolderOrPlaylist(source)
    }
}
