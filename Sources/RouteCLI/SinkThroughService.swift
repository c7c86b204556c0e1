// SinkThroughService: `route sink --detach` and `route sink --stop`, which leave a desktop-audio sink to the route
// service (kept while the device is on the network, until stopped) or take it away.

import FoundationEssentials
import Glibc
import RouteClient
import RouteCore

package enum SinkThroughService {
    /// Asks the service to keep a sink for `--to` (`--detach`) or to remove it (`--stop`); prints what it did.
    package static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        let targets = parsed.all("to")
        guard let first = targets.first else {
            throw UsageError(description: "--detach and --stop need --to DEVICE: the service keeps one sink per device or group")
        }
        // Several --to name the group they make ("Kitchen + Hall"), as its sink is kept.
        let device = parsed.has("stop") ? GroupTargets(queries: targets)?.name ?? first : first
        if parsed["providers"] != nil {
            throw UsageError(description: "the route service runs its own providers; drop --providers")
        }
        let client = try await ServiceMode.connect()
        let json = parsed.has("json")
        if parsed.has("stop") {
            try await client.stopSink(for: device)
            say(json ? "{\"event\":\"removed\",\"device\":\(quoted(device))}" : "the route service no longer keeps a sink for \(device)")
            return .success
        }
        var options = try sinkOptions(parsed)
        if targets.count > 1 { options.also = Array(targets.dropFirst()) }
        let sink = try await client.startSink(for: device, options: options)
        if json {
            let data = try JSONEncoder().encode(sink)
            say(String(decoding: data, as: UTF8.self))
        } else {
            say("the route service keeps \(sink.sink) for \(sink.device) while it is on the network: what plays into it plays there "
                + "(route sink --stop --to \(quotedIfNeeded(sink.device)) removes it)")
        }
        return .success
    }

    /// `route sink`'s options (--idle, --format, --via, --sound-server) as the service's, checked as it checks them,
    /// for the service or a sink in this process.
    /// - Throws: `UsageError` that says which option is wrong.
    package static func sinkOptions(_ parsed: ParsedArguments) throws -> RouteServiceAPI.SinkOptions {
        var options = RouteServiceAPI.SinkOptions(format: parsed["format"]?.lowercased(), via: parsed["via"]?.lowercased(),
                                                  soundServer: parsed["sound-server"]?.lowercased())
        if let idle = parsed["idle"] {
            guard let seconds = Double(idle), seconds > 0, seconds < 86_400 else {
                throw UsageError(description: "--idle takes seconds, more than 0 (e.g. 30), not \"\(idle)\"")
            }
            options.idle = seconds
        }
        if let format = options.format, !["l16", "wav"].contains(format) {
            throw UsageError(description: "--format is l16 or wav, not \"\(parsed["format"] ?? format)\"")
        }
        if let server = options.soundServer, !["pipewire", "pulseaudio"].contains(server) {
            throw UsageError(description: "--sound-server is pipewire or pulseaudio, not \"\(parsed["sound-server"] ?? server)\"")
        }
        return options
    }

    private static func say(_ line: String) { _ = printOutput(line) }

    private static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    private static func quotedIfNeeded(_ text: String) -> String { text.contains(" ") ? "\"\(text)\"" : text }
}
