// AirPlayPasswords: the passwords a person gave for their AirPlay receivers — a file of their own, readable by them
// alone — and the HTTP Digest answer RTSP asks for with one.

import CGStreamer
import Foundation

/// The user's AirPlay passwords: `$XDG_CONFIG_HOME/route/airplay-passwords` (else `~/.config/…`), one `NAME = PASSWORD`
/// a line, NAME the receiver's name as route lists it or its MAC (`a6:23:ca:8a:8e:fa`); `#` starts a comment.
enum AirPlayPasswords {
    /// Where the file is.
    static var path: String {
        let environment = ProcessInfo.processInfo.environment
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return config + "/route/airplay-passwords"
    }

    /// The password for `receiver`, if the file names it.
    /// - Throws: `LocalFailure` when the file can be read by others than its owner (route then uses none of it).
    static func password(for receiver: RAOPService) throws -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        guard info.st_uid == getuid() else { throw LocalFailure(description: "\(path) is not yours: route uses only a file of your own") }
        guard info.st_mode & 0o077 == 0 else { throw LocalFailure(description: "\(path) may be read by others: make it yours alone (chmod 600 \(path))") }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let entries = entries(text)
        return entries[receiver.name] ?? entries.first { $0.key.lowercased() == receiver.mac }?.value
    }

    /// The file's `NAME = PASSWORD` lines (blank lines and comments skipped; spaces around both trimmed).
    static func entries(_ text: String) -> [String: String] {
        var entries: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let line = line.trimmingCharacters(in: .whitespaces)
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            let password = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if !name.isEmpty { entries[name] = password }
        }
        return entries
    }

    /// The `Authorization` header for `method` on `uri` that answers a `WWW-Authenticate: Digest realm=…, nonce=…`
    /// challenge with `password` (RFC 2617 without qop, as AirPlay receivers check it); nil when `challenge` is not
    /// a Digest one.
    static func digest(challenge: String, method: String, uri: String, password: String, username: String = "route") -> String? {
        guard challenge.lowercased().hasPrefix("digest"), let realm = parameter("realm", in: challenge),
              let nonce = parameter("nonce", in: challenge) else { return nil }
        let first = md5("\(username):\(realm):\(password)"), second = md5("\(method):\(uri)")
        let response = md5("\(first):\(nonce):\(second)")
        return "Digest username=\"\(username)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\", response=\"\(response)\""
    }

    /// `name="value"` (or `name=value`) in a challenge.
    private static func parameter(_ name: String, in challenge: String) -> String? {
        guard let range = challenge.range(of: name + "=", options: .caseInsensitive) else { return nil }
        var rest = challenge[range.upperBound...]
        if rest.hasPrefix("\"") {
            rest = rest.dropFirst()
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }
        return String(rest.prefix { $0 != "," && !$0.isWhitespace })
    }

    /// Lower-case hex MD5 (GLib's).
    private static func md5(_ text: String) -> String {
        guard let sum = g_compute_checksum_for_string(G_CHECKSUM_MD5, text, -1) else { return "" }
        defer { g_free(sum) }
        return String(cString: sum)
    }
}
