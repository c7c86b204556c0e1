// Asker: who asked route to read, fetch or serve something — the one place that says what each may name (DESIGN.md,
// "Who asked"): a person at the terminal anything; an app on the bus its user's paths, unless it is sandboxed; a
// document from the web only http(s) URLs that are not this machine.

import FoundationEssentials
import Glibc

/// Who named a source, a picture or subtitles.
public enum Asker: Sendable, Hashable {
    /// A person at the terminal.
    case person
    /// An app on the session bus; a sandboxed one (Flatpak, snap) sees no host files and may name none.
    case app(sandboxed: Bool)
    /// A document from the web (a page, a playlist, a manifest, a redirect), by its URL.
    case web(String)

    /// An app on the bus, by its process: sandboxed when Flatpak's `/.flatpak-info` is in its root or its AppArmor label
    /// is a snap's (as xdg-desktop-portal tells them). An app whose process cannot be looked at is taken for sandboxed.
    public static func app(processID: Int32) -> Asker {
        let process = "/proc/\(processID)"
        var info = stat()
        guard processID > 0, stat(process, &info) == 0 else { return .app(sandboxed: true) }
        if stat(process + "/root/.flatpak-info", &info) == 0 || errno != ENOENT { return .app(sandboxed: true) }
        if let label = try? String(contentsOfFile: process + "/attr/current", encoding: .utf8), label.hasPrefix("snap.") {
            return .app(sandboxed: true)
        }
        return .app(sandboxed: false)
    }

    /// Why this asker may not have route read `path` from this machine's disk; nil when it may.
    public func refusesPath(_ path: String) -> String? {
        switch self {
        case .person, .app(sandboxed: false): nil
        case .app(sandboxed: true):
            "refused: a sandboxed app may not name files on this machine (it passes the open file instead)"
        case .web(let document):
            "refused: \(document), a document from the web, may not name files on this machine"
        }
    }

    /// Whether this asker may act for the whole desktop: send the desktop's sound to a device (a sink), or control and
    /// move casts it did not start. A sandboxed app acts on its own casts alone.
    public var actsForTheDesktop: Bool {
        switch self {
        case .person, .app(sandboxed: false): true
        case .app(sandboxed: true), .web: false
        }
    }

    /// Whether route may fetch a URL on this machine (its loopback, its own addresses) on this asker's say.
    public var mayFetchThisMachine: Bool {
        switch self {
        case .person, .app(sandboxed: false): true
        case .app(sandboxed: true), .web: false
        }
    }

    /// Why route may not fetch `url` on this asker's say: not http(s), or on this machine when the asker may not name
    /// it; nil when it may. May block on the resolver (async code calls `refusesURL(resolving:)`).
    public func refusesURL(_ url: String, resolving: Bool = true) -> String? {
        guard WebAddress.isWebURL(url) else { return "refused: \(url) is not an http(s) URL" }
        guard !mayFetchThisMachine, let why = WebAddress.thisMachine(url, resolving: resolving) else { return nil }
        return "refused: \(why), and \(self) may not make route fetch from this machine"
    }

    /// `refusesURL(_:)` with the resolver on a thread of its own.
    public func refusesURL(resolving url: String) async -> String? {
        guard WebAddress.isWebURL(url) else { return "refused: \(url) is not an http(s) URL" }
        guard !mayFetchThisMachine, let why = await WebAddress.thisMachine(resolving: url) else { return nil }
        return "refused: \(why), and \(self) may not make route fetch from this machine"
    }
}

extension Asker: CustomStringConvertible {
    /// The asker in words, for refusals: "a sandboxed app", "a page or playlist from the web (URL)".
    public var description: String {
        switch self {
        case .person: "a person at the terminal"
        case .app(sandboxed: false): "an app"
        case .app(sandboxed: true): "a sandboxed app"
        case .web(let document): "a document from the web (\(document))"
        }
    }
}
