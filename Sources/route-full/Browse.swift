// `route browse TYPE...` and `route providers`: what the shared discovery services see, raw, and the state of
// each provider — the tools for a device that does not show.

import Foundation
import RouteCLI
import MediaRouting
import RouteCore
import RoutePluginHost

enum Browse {
    /// One line of `browse --json`.
    private struct Line: Encodable {
        var event: String
        var via: String
        var type: String
        var name: String?
        var udn: String?
        var host: String?
        var address: String?
        var port: Int?
        var location: String?
        var sender: String?
        var txt: [String: String]?
        var reason: String?
    }

    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        let types = parsed.positionals.filter { $0.hasPrefix("_") }
        let targets = parsed.positionals.filter { !$0.hasPrefix("_") }
        let limit = try parsed["timeout"].map { _ in try CommonOptions.timeout(parsed) }
        let json = parsed.has("json")
        func show(_ text: String, _ line: Line) {
            if json, let data = try? JSONEncoder().encode(line) { printOutput(String(decoding: data, as: UTF8.self)) } else { printOutput(text) }
        }
        let stop = AsyncStream<Void> { continuation in
            let handlers = SignalHandlers.install { continuation.finish() }
            continuation.onTermination = { _ in handlers.cancel() }
        }
        await withTaskGroup(of: Void.self) { group in
            if !types.isEmpty {
                let events = Providers.dnssd.subscribe(types: types)
                group.addTask {
                    for await event in events {
                        switch event {
                        case .found(let s):
                            let txt = s.txt.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                            show("+ mdns \(s.type) \"\(DisplayText.clean(s.name))\" \(s.host) \(s.address):\(s.port)\(txt.isEmpty ? "" : " " + txt)",
                                 Line(event: "found", via: "mdns", type: s.type, name: s.name, host: s.host, address: s.address,
                                      port: s.port, txt: s.txt))
                        case .removed(let name, let type, _, _):
                            show("- mdns \(type) \"\(DisplayText.clean(name))\"", Line(event: "removed", via: "mdns", type: type, name: name))
                        // In words, the log says these once already; scripts get them as events.
                        case .unavailable(let reason):
                            if json { show("", Line(event: "unavailable", via: "mdns", type: "", reason: reason)) }
                        case .available:
                            if json { show("", Line(event: "available", via: "mdns", type: "")) }
                        }
                    }
                }
            }
            if !targets.isEmpty {
                do {
                    try Providers.ssdp.start()
                } catch {
                    show("! ssdp \(error)", Line(event: "unavailable", via: "ssdp", type: "", reason: "\(error)"))
                }
                let events = Providers.ssdp.subscribe(targets: targets)
                group.addTask {
                    for await event in events {
                        switch event.kind {
                        case .alive:
                            show("+ ssdp \(event.target.isEmpty ? "-" : event.target) \(event.udn) \(DisplayText.clean(event.location))"
                                 + " (from \(event.sender), \(event.announced ? "alive" : "reply"), max-age \(event.maxAge))",
                                 Line(event: event.announced ? "alive" : "reply", via: "ssdp", type: event.target, udn: event.udn,
                                      location: event.location, sender: event.sender))
                        case .byebye:
                            show("- ssdp \(event.target.isEmpty ? "-" : event.target) \(event.udn)",
                                 Line(event: "byebye", via: "ssdp", type: event.target, udn: event.udn))
                        }
                    }
                }
            }
            // Ctrl-C ends a browse cleanly, with or without a time limit.
            group.addTask { for await _ in stop {} }
            if let limit {
                group.addTask { try? await Task.sleep(for: .milliseconds(Int(limit * 1000))) }
            }
            await group.next()
            group.cancelAll()
        }
        return .success
    }
}

enum PluginsCommand {
    /// The search path and what is on it, as JSON.
    struct Listing: Encodable {
        struct Plugin: Encodable {
            let name: String
            let path: String
            let active: Bool
        }
        let searchPath: [String]
        let plugins: [Plugin]
    }

    static func run(_ parsed: ParsedArguments) throws -> ExitCode {
        let directories = PluginLocator.directories()
        let found = PluginLocator.find(in: directories)
        let active = Set(Providers.plugins.map(\.path))
        if parsed.has("json") {
            let listing = Listing(searchPath: directories, plugins: found.map { .init(name: $0.name, path: $0.path, active: active.contains($0.path)) })
            print(try JSONOutput.string(listing))
            return .success
        }
        printOutput("Search path:")
        for directory in directories { printOutput("  " + directory) }
        printOutput(found.isEmpty ? "No plugins found." : "Plugins:")
        for plugin in found {
            let note = active.contains(plugin.path) ? "" : "  (ignored: a built-in provider has this name)"
            printOutput("  " + plugin.name.padding(toLength: 10, withPad: " ", startingAt: 0) + plugin.path + note)
        }
        return .success
    }
}

enum ProvidersCommand {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        let router = try Providers.router(parsed)
        let timeout = try CommonOptions.timeout(parsed)
        let states = try await router.discovering {
            try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            return router.providerStates
        }
        if parsed.has("json") {
            print(try JSONOutput.string(states))
            return .success
        }
        for status in states {
            var line = status.name.padding(toLength: 10, withPad: " ", startingAt: 0)
                + status.state.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
                + "\(status.routes) route\(status.routes == 1 ? "" : "s")"
            if status.restarts > 0 { line += ", restarted \(status.restarts)×" }
            if let path = status.path { line += "; plugin \(path)" + (status.version.map { " \($0)" } ?? "") }
            if let error = status.lastError { line += "; last error: \(error)" }
            printOutput(line)
        }
        return .success
    }
}
