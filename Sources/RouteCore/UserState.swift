// UserState: where route keeps what it learns for the user between runs ($XDG_STATE_HOME/route: resume positions, the
// certificates of Cast receivers), and how a file there is written: whole or not at all, 0600 in a 0700 folder.

import FoundationEssentials
import Glibc

/// The user's state folder and its files.
public enum UserState {
    /// `$XDG_STATE_HOME/route` (`~/.local/state/route`).
    public static var folder: String {
        let environment = ProcessInfo.processInfo.environment
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? home + "/.local/state"
        return state + "/route"
    }

    /// The user's home folder: `$HOME`, else the password database's.
    public static var home: String {
        if let home = ProcessInfo.processInfo.environment["HOME"], !home.isEmpty { return home }
        return getpwuid(getuid()).map { String(cString: $0.pointee.pw_dir) } ?? "/"
    }

    /// Writes `data` to `file` through a temporary file renamed over it; the file 0600, its folder 0700 (what was
    /// played, and which devices were met, are the user's own business). Returns whether it was written.
    @discardableResult
    public static func write(_ data: Data, to file: String) -> Bool {
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent().path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(folder, 0o700)
        let temporary = file + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else { return false }
        guard rename(temporary, file) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
