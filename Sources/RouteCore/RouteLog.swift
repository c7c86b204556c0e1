// RouteLog: where the library's messages go. Library code never writes to stderr itself: the app (or the CLI)
// hands the router a log, and each provider gets its own, named after it.

/// A destination for messages from the router, its providers and the services under them.
///
/// Thread-safe: `write` may be called from any thread.
public struct RouteLog: Sendable {
    /// How much a message matters.
    public enum Level: Int, Sendable, Comparable {
        /// A trace of protocol traffic (ROUTE_DEBUG in the CLI).
        case debug
        /// Something worth saying once (a device ignored, a service off).
        case notice
        /// Something failed.
        case error

        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    /// Who speaks: `upnp`, `mdns`, a plugin's name.
    public let source: String
    private let traced: @Sendable (String) -> Bool
    private let sink: @Sendable (Level, String, String) -> Void

    /// A log that hands every message, with its level and source, to `sink`; `.debug` ones only from the
    /// sources `traced` names.
    public init(source: String = "route", traced: @escaping @Sendable (_ source: String) -> Bool = { _ in false },
                sink: @escaping @Sendable (_ level: Level, _ source: String, _ message: String) -> Void) {
        self.source = source
        self.traced = traced
        self.sink = sink
    }

    /// A log that drops everything (the default for apps that give none).
    public static let discard = RouteLog { _, _, _ in }

    /// Whether `.debug` messages from this source are wanted (they are not even made otherwise).
    public var tracing: Bool { traced(source) }

    /// The same destination, speaking as `source`.
    public func named(_ source: String) -> RouteLog {
        RouteLog(source: source, traced: traced, sink: sink)
    }

    /// Logs `message` (cleaned of control characters: it may hold text from the network).
    public func callAsFunction(_ level: Level, _ message: @autoclosure () -> String) {
        if level == .debug, !tracing { return }
        sink(level, source, DisplayText.line(message()))
    }
}
