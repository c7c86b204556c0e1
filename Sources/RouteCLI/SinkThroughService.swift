// SinkThroughService: `route sink --detach` and `route sink --stop`, which leave a desktop-audio sink to the route
// service (kept while the device is on the network, until stopped) or take it away.

import Foundation
import RouteClient
import RouteCore

package enum SinkThroughService {
    /// Asks the service to keep a sink for `--to` (`--detach`) or to remove it (`--stop`); prints what it did.
    package static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        guard let device = parsed["to"] else {
            throw UsageError(description: "--detach and --stop need --to DEVICE: the service keeps one sink per device")
        }
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
        var options = RouteServiceClient.SinkOptions(format: parsed["format"], via: parsed["via"], soundServer: parsed["sound-server"])
        if let idle = parsed["idle"] {
            guard let seconds = Double(idle), seconds > 0 else { throw UsageError(description: "--idle takes seconds, more than 0, not \"\(idle)\"") }
            options.idle = seconds
        }
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

    private static func say(_ line: String) { _ = printOutput(line) }

    private static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    private static func quotedIfNeeded(_ text: String) -> String { text.contains(" ") ? "\"\(text)\"" : text }
}
