// Terminal: raw key input and the one-line live status display of `route cast`.

import Foundation
import RouteCore
import RouteMedia

/// A key that controls a cast.
enum CastKey {
    case togglePause, seekBack, seekForward, volumeUp, volumeDown, toggleMute, next, quit
}

/// Puts the terminal in character mode (no echo, no line buffering) and reads keys.
///
/// Restores the terminal on `restore()` and at exit. Ctrl-C still raises SIGINT.
final class KeyReader: @unchecked Sendable {
    // Safety: `original` is written once before the reader thread starts.
    private var original = termios()

    /// Whether stdin is a terminal, i.e. whether keys can be read.
    static var isAvailable: Bool { isatty(STDIN_FILENO) == 1 }

    /// Keys as they are pressed, until stdin closes.
    func keys() -> AsyncStream<CastKey> {
        tcgetattr(STDIN_FILENO, &original)
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        let (stream, continuation) = AsyncStream<CastKey>.makeStream()
        let thread = Thread {
            var pending: [UInt8] = []
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 {
                pending.append(byte)
                if pending == [27] || pending == [27, 91] { continue }
                let key: CastKey?
                switch pending {
                case [32]: key = .togglePause
                case [27, 91, 68]: key = .seekBack
                case [27, 91, 67]: key = .seekForward
                case [27, 91, 65]: key = .volumeUp
                case [27, 91, 66]: key = .volumeDown
                case [110], [78]: key = .next
                case [109], [77]: key = .toggleMute
                case [113], [81]: key = .quit
                default: key = nil
                }
                pending.removeAll()
                if let key { continuation.yield(key) }
            }
            continuation.finish()
        }
        thread.name = "route-keys"
        thread.start()
        return stream
    }

    /// Puts the terminal back as it was.
    func restore() {
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
    }
}

/// Renders cast status: a live line redrawn in place on a terminal, or one plain line per
/// state change otherwise (for logs and scripts).
struct StatusPrinter {
    let live: Bool
    private var lastPlain: String?

    init(live: Bool) { self.live = live }

    mutating func show(_ status: CastStatus) {
        if live {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + Self.liveLine(status)).utf8))
        } else {
            let line = Self.plainLine(status)
            if line != lastPlain { print(line); fflush(nil); lastPlain = line }
        }
    }

    /// Ends the live line so the next output starts on a fresh line.
    func finish() {
        if live { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func liveLine(_ s: CastStatus) -> String {
        let symbol: String
        switch s.playback.state {
        case .playing: symbol = "▶"
        case .paused: symbol = "⏸"
        case .loading: symbol = "…"
        case .ended, .stopped, .idle: symbol = "■"
        case .failed: symbol = "✗"
        }
        let queue = s.count > 1 ? " [\(s.index + 1)/\(s.count)]" : ""
        var line = "\(symbol) \(s.device.name) · \(s.title)\(queue) \(formatClock(s.playback.position))"
        if let duration = s.playback.duration, duration > 0 {
            let width = 20
            let filled = min(width, Int((s.playback.position / duration) * Double(width)))
            line += " [" + String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled) + "] "
            line += formatClock(duration)
        }
        if let volume = s.playback.volume { line += "  vol \(Int((volume * 100).rounded()))%" }
        if s.playback.muted == true { line += " (muted)" }
        return line
    }

    static func plainLine(_ s: CastStatus) -> String {
        let queue = s.count > 1 ? " [\(s.index + 1)/\(s.count)]" : ""
        var line = "\(s.playback.state.rawValue): \(s.title)\(queue) on \(s.device.name)"
        if let error = s.playback.error { line += ": \(error)" }
        return line
    }
}
