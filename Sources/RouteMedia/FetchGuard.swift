// FetchGuard: the one check every connection GStreamer opens passes (CRouteShim's proxy resolver): a web document's
// variant playlists, segments, DASH base URLs and every redirect never make route fetch from this machine. What a person
// or an app that may name this machine named there is allowed while the cast that plays it lasts.

import CRouteShim
import Foundation
import RouteCore
import Synchronization

/// Decides which connections GStreamer may open.
public enum FetchGuard {
    /// Origins on this machine ("127.0.0.1:8000") that someone who may name them named, with how many allowances hold each.
    private static let allowed = Mutex<[String: Int]>([:])
    /// How many connections the guard has refused, and the latest refusal's reason: a failure that GStreamer words as
    /// its own ("Internal data stream error") is told as the refusal behind it.
    private static let refused = Mutex<(count: Int, latest: String)>((0, ""))

    /// A mark to pass to `refusal(since:)` later.
    public static func mark() -> Int { refused.withLock { $0.count } }

    /// The latest refusal's reason when the guard refused a connection since `mark` (a pipeline that failed then
    /// failed because of it, unless another cast was refused at the same moment); nil when it refused none.
    public static func refusal(since mark: Int) -> String? {
        refused.withLock { $0.count != mark ? $0.latest : nil }
    }

    /// Whether the guard is route's process-wide proxy resolver (set up with GStreamer).
    static let isActive: Bool = route_fetch_guard_set_check { uri in
        guard let uri, let refusal = FetchGuard.refusal(String(cString: uri)) else { return nil }
        return strdup(refusal)
    } != 0

    /// Why GStreamer may not connect to `uri` ("http://127.0.0.1:7777"; GIO says "none://" for a connection it has no
    /// scheme for); nil when it may. Blocks on the resolver.
    static func refusal(_ uri: String) -> String? {
        guard let parts = URLComponents(string: uri), let host = parts.host, !host.isEmpty else { return nil }
        guard let why = WebAddress.thisMachine(host: host) else { return nil }
        if let origin = origin(of: uri), allowed.withLock({ $0[origin] != nil }) { return nil }
        let reason = "refused: \(why); route fetches from this machine only what a person or an app named there"
        refused.withLock { $0 = ($0.count + 1, "\(uri) \(reason)") }
        return reason
    }

    /// Lets GStreamer connect to `url`'s origin on this machine while the allowance lives. For sources named by one who
    /// may name this machine (`Asker.mayFetchThisMachine`).
    public static func allow(_ url: String) -> Allowance? {
        guard let origin = origin(of: url) else { return nil }
        allowed.withLock { $0[origin, default: 0] += 1 }
        return Allowance(origin: origin)
    }

    /// An origin's permission, withdrawn when the last allowance for it goes.
    public final class Allowance: Sendable {
        let origin: String
        init(origin: String) { self.origin = origin }
        deinit {
            FetchGuard.allowed.withLock { table in
                if let count = table[origin] { table[origin] = count > 1 ? count - 1 : nil }
            }
        }
    }

    /// "host:port" of an http(s) URL, the scheme's port when it names none.
    private static func origin(of url: String) -> String? {
        guard let parts = URLComponents(string: url), let host = parts.host?.lowercased(), !host.isEmpty else { return nil }
        let port = parts.port ?? (parts.scheme?.lowercased() == "https" ? 443 : 80)
        return "\(host):\(port)"
    }
}
