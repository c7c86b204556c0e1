// PluginLocator: where route looks for drop-in plugins (`route-provider-*` executables) and which it finds.

import Foundation

/// A plugin executable found on the search path.
public struct PluginFile: Sendable, Hashable {
    /// Its provider name: what follows `route-provider-` (`mpd`).
    public var name: String
    public var path: String
}

/// Finds plugins: `$ROUTE_PLUGIN_PATH` (colon-separated), `~/.local/lib/route/plugins`,
/// `PREFIX/lib/route/plugins` (PREFIX: the directory above the one `route` runs from; route-full runs from
/// PREFIX/lib/route), and the directory of the `route` executable itself (so a plain `swift build` finds the
/// bundled plugins). The first file of a name wins, as on `$PATH`.
public enum PluginLocator {
    /// The file name prefix of a plugin.
    public static let prefix = "route-provider-"

    /// The directories searched, in order, for this environment and executable.
    public static func directories(environment: [String: String] = ProcessInfo.processInfo.environment,
                                   executable: String? = currentExecutable()) -> [String] {
        var list = (environment["ROUTE_PLUGIN_PATH"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        if let home = environment["HOME"], !home.isEmpty { list.append(home + "/.local/lib/route/plugins") }
        if let executable {
            let bin = URL(fileURLWithPath: executable).deletingLastPathComponent()
            if bin.path.hasSuffix("/lib/route") {
                // route-full, installed in PREFIX/lib/route beside the plugins.
                list.append(bin.appendingPathComponent("plugins").path)
            } else {
                list.append(bin.deletingLastPathComponent().appendingPathComponent("lib/route/plugins").path)
                list.append(bin.path)
            }
        }
        var seen = Set<String>()
        return list.map { URL(fileURLWithPath: $0).standardizedFileURL.path }.filter { seen.insert($0).inserted }
    }

    /// The plugins in `directories`: regular executable files named `route-provider-NAME` (NAME of lower-case
    /// letters, digits and dashes), the first of each name, in search order and by name within a directory.
    public static func find(in directories: [String] = directories()) -> [PluginFile] {
        var found: [PluginFile] = []
        var names = Set<String>()
        for directory in directories {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for entry in entries.sorted() where entry.hasPrefix(prefix) {
                let name = String(entry.dropFirst(prefix.count))
                guard isValid(name), !names.contains(name) else { continue }
                let path = directory + "/" + entry
                var info = stat()
                guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(path, X_OK) == 0 else { continue }
                names.insert(name)
                found.append(PluginFile(name: name, path: path))
            }
        }
        return found
    }

    /// Whether `name` can name a provider.
    public static func isValid(_ name: String) -> Bool {
        name.count <= 32 && name.first.map { $0.isASCII && ($0.isLowercase || $0.isNumber) } == true
            && name.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" }
    }

    /// The running executable's path (`/proc/self/exe`), if it can be read.
    public static func currentExecutable() -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }
}
