// DesktopNotification: a message in the desktop's notification area (org.freedesktop.Notifications) — how route says
// what went wrong when it was started from the desktop, with no terminal to print on.

import FoundationEssentials
import RouteGIO

/// A notification shown by the desktop's notification server.
public enum DesktopNotification {
    /// Shows `summary` and `body` (plain text) with `icon` (a freedesktop icon name), from the app "route".
    /// - Throws: `RouteServiceError` when there is no session bus or no notification server on it.
    public static func show(summary: String, body: String, icon: String = "dialog-error") async throws {
        let bus: DBusConnection
        do { bus = try DBusConnection.session() } catch let error as DBusError {
            throw RouteServiceError(name: "org.freedesktop.DBus.Error.NoServer", error.message)
        }
        do {
            // The body is markup where the server says it takes markup: what route says is text.
            let capabilities = try? await bus.call("org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                  interface: "org.freedesktop.Notifications", method: "GetCapabilities", timeout: .seconds(5))
            let markup = capabilities?.first.map { if case .strings(let names) = $0.unwrapped { names.contains("body-markup") } else { false } } ?? false
            // Escaped scalar by scalar: a `<` with a combining mark after it is one Character, and still markup.
            let text = !markup ? body : body.unicodeScalars.map { scalar in
                switch scalar {
                case "&": "&amp;"
                case "<": "&lt;"
                case ">": "&gt;"
                default: String(scalar)
                }
            }.joined()
            _ = try await bus.call("org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                   interface: "org.freedesktop.Notifications", method: "Notify",
                                   [.string("route"), .uint32(0), .string(icon), .string(summary), .string(text), .strings([]),
                                    .dictionary(["desktop-entry": .string("io.github.route.PlayOn")]), .int32(-1)],
                                   timeout: .seconds(5))
        } catch let error as DBusError {
            throw RouteServiceError(name: error.name, error.message)
        }
    }
}
