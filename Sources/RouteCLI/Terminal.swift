// Terminal: raw key input and the one-line live status display of `route cast`.

import Dispatch
import FoundationEssentials
import Glibc
import RouteCore
import Synchronization

/// A key that controls a cast.
package enum CastKey {
    case togglePause, seekBack, seekForward, volumeUp, volumeDown, toggleMute, next, quit

    /// What the key says to the session.
    package var command: SessionCommand {
        switch self {
        case .togglePause: return .togglePause
        case .seekBack: return .seek(.relative(-10))
        case .seekForward: return .seek(.relative(10))
        case .volumeUp: return .changeVolume(0.05)
        case .volumeDown: return .changeVolume(-0.05)
        case .toggleMute: return .toggleMute
        case .next: return .next
        case .quit: return .stop
        }
    }
}

/// Puts the terminal in character mode (no echo, no line buffering) and reads keys.
///
/// Restores the terminal on `restore()` and while the process is suspended (Ctrl-Z: `JobControl`).
/// Ctrl-C still raises SIGINT.
package final class KeyReader: @unchecked Sendable {
    // Safety: `original` is written once before the reader thread starts.
    private var original = termios()

    /// Whether stdin is a terminal, i.e. whether keys can be read.
    package static var isAvailable: Bool { isatty(STDIN_FILENO) == 1 }

    /// Keys as they are pressed, until stdin closes.
    package func keys() -> AsyncStream<CastKey> {
        tcgetattr(STDIN_FILENO, &original)
        enterCharacterMode()
        let (stream, continuation) = AsyncStream<CastKey>.makeStream()
        DetachedThread.start(name: "route-keys") {
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
        return stream
    }

    /// No echo, no line buffering (again, after a suspension).
    package func enterCharacterMode() {
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
    }

    /// Puts the terminal back as it was.
    package func restore() {
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
    }
}

/// Ctrl-Z during a cast: the terminal is given back as it was before the process stops, and character
/// mode returns when it continues (`fg`); without this, the shell is left with no echo.
package final class JobControl: @unchecked Sendable {
    // Safety: the sources are set once in init; DispatchSource is thread-safe.
    private let sources: [any DispatchSourceSignal]

    package init(keys: KeyReader, onContinue: @escaping @Sendable () -> Void) {
        signal(SIGTSTP, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: .global())
        stop.setEventHandler {
            keys.restore()
            writeStandardError("\r\u{1B}[K")
            signal(SIGTSTP, SIG_DFL)
            kill(getpid(), SIGTSTP)
        }
        let resume = DispatchSource.makeSignalSource(signal: SIGCONT, queue: .global())
        resume.setEventHandler {
            signal(SIGTSTP, SIG_IGN)
            keys.enterCharacterMode()
            onContinue()
        }
        stop.resume()
        resume.resume()
        sources = [stop, resume]
    }

    package func cancel() {
        for source in sources { source.cancel() }
        signal(SIGTSTP, SIG_DFL)
    }
}

/// Renders cast status: a live line redrawn in place on a terminal, or one plain line per
/// state change otherwise (for logs and scripts). Thread-safe: statuses and redraws may come from two tasks.
package final class StatusPrinter: Sendable {
    package let live: Bool
    private let shown = Mutex<(lastPlain: String?, last: QueueStatus?)>((nil, nil))

    package init(live: Bool) { self.live = live }

    /// Shows a status; false when stdout has gone away (a closed pipe), so the cast should end.
    package func show(_ status: QueueStatus) -> Bool {
        shown.withLock { shown in
            shown.last = status
            if live {
                Self.draw(status)
                return true
            }
            let line = Self.plainLine(status)
            guard line != shown.lastPlain else { return true }
            shown.lastPlain = line
            return printOutput(line)
        }
    }

    /// Redraws the live line with the position extrapolated to now (devices report changes, not a moving
    /// position); nothing in plain mode or while not playing.
    package func redraw() {
        shown.withLock { shown in
            guard live, var status = shown.last, status.playback.state == .playing else { return }
            status.playback = status.playback.at(Date())
            Self.draw(status)
        }
    }

    private static func draw(_ status: QueueStatus) {
        // Never wider than the terminal: a line that wraps cannot be redrawn in place.
        let line = fitted(liveLine(status), to: terminalWidth() - 1)
        writeStandardError("\r\u{1B}[K" + line)
    }

    /// The columns of the terminal on stderr (80 when unknown).
    package static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// `line` cut to `width` columns (wide characters count two), with "…" when cut.
    package static func fitted(_ line: String, to width: Int) -> String {
        func columns(_ character: Character) -> Int { character.unicodeScalars.first.map { isWide($0) ? 2 : 1 } ?? 1 }
        guard line.reduce(0, { $0 + columns($1) }) > width else { return line }
        guard width > 1 else { return "" }
        var out = ""
        var used = 0
        for character in line {
            guard used + columns(character) <= width - 1 else { break }
            out.append(character)
            used += columns(character)
        }
        return out + "…"
    }

    /// East Asian wide and emoji ranges, which terminals draw two columns wide.
    private static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD: return true
        default: return false
        }
    }

    /// Ends the live line so the next output starts on a fresh line.
    package func finish() {
        if live { writeStandardError("\n") }
    }

    package static func liveLine(_ s: QueueStatus) -> String {
        let symbol: String
        switch s.playback.state {
        case .playing: symbol = "▶"
        case .paused: symbol = "⏸"
        case .loading: symbol = "…"
        case .ended, .stopped, .idle: symbol = "■"
        case .failed: symbol = "✗"
        }
        let queue = s.count > 1 ? " [\(s.index + 1)/\(s.count)]" : ""
        var line = "\(symbol) \(DisplayText.clean(s.device.name)) · \(DisplayText.clean(s.title))\(queue) \(formatClock(s.playback.position))"
        if let duration = s.playback.duration, duration > 0 {
            let width = 20
            let filled = min(width, max(0, Int(saturating: (s.playback.position / duration) * Double(width))))
            line += " [" + String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled) + "] "
            line += formatClock(duration)
        }
        if let volume = s.playback.volume { line += "  vol \(Int((volume * 100).rounded()))%" }
        if s.playback.muted == true { line += " (muted)" }
        return line
    }

    package static func plainLine(_ s: QueueStatus) -> String {
        let queue = s.count > 1 ? " [\(s.index + 1)/\(s.count)]" : ""
        var line = "\(s.playback.state.rawValue): \(s.title)\(queue) on \(s.device.name)"
        if let error = s.playback.error { line += ": \(error)" }
        return DisplayText.line(line)
    }
}
