// `route serve`: serves files exactly as a cast would, and prints their URLs (debugging, bench/serve).

import Foundation
import RouteCLI
import RouteCore
import RouteMedia

enum Serve {
    static func run(_ parsed: ParsedArguments) async throws -> ExitCode {
        var files: [MediaInfo] = []
        for path in parsed.positionals {
            files.append(try await MediaProbe.probe(path))
        }
        let portText = parsed["port"] ?? "0"
        guard let port = UInt16(portText) else { throw UsageError(description: "--port takes 0 to 65535, not \"\(portText)\"") }
        let server = try MediaServer(address: parsed["bind"] ?? "127.0.0.1", port: port, log: CLILog.root)
        let accepts: MediaAcceptance = parsed["as"].map { .mimeTypes($0.split(separator: ",").map(String.init)) } ?? .anything
        for file in files {
            let plan = DeliveryPlanner.plan(file, for: accepts)
            // `route serve` publishes on purpose: whoever has the URL may fetch it.
            guard let (url, mimeType) = server.offer(file, as: plan, for: .anyone) else {
                if case .unplayable(let reason) = plan { throw MediaError.notMedia(file.path, reason: reason) }
                continue
            }
            print(url)
            printError("\(file.path): \(plan.summary) (\(mimeType))")
        }
        fflush(nil)
        let stop = AsyncStream<Void> { continuation in
            let handlers = SignalHandlers.install { continuation.finish() }
            continuation.onTermination = { _ in handlers.cancel() }
        }
        for await _ in stop {}
        server.close()
        return .success
    }
}
