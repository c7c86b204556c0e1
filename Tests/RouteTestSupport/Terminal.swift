// Terminal: `route` run in a pseudo-terminal (Tests/LabTools/terminal), for the CLI's and the lab's tests.

import Foundation

/// What `Tests/LabTools/terminal` saw.
public struct TerminalRun: Decodable {
    public struct Modes: Decodable {
        public let echo: Bool
        public let canonical: Bool
    }
    public let output: String
    public let exit: Int32
    public let modes: [String: Modes?]
}

extension Sandbox {
    /// Runs `route ARGS` in a pseudo-terminal `columns` wide, taking `steps` (see the tool's help), with `extra`
    /// in its environment.
    public func runInTerminal(_ arguments: [String], columns: Int = 80, steps: [String], timeout: Double = 30,
                       environment extra: [String: String] = [:]) async throws -> TerminalRun {
        let tool = RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/terminal").path
        let environment = self.environment().merging(extra) { $1 }.map { "\($0.key)=\($0.value)" }
        let command = [tool, "--cols", String(columns), "--timeout", String(timeout)] + steps.flatMap { ["--step", $0] }
            + ["--", "/usr/bin/env", "-i"] + environment + [RouteBinary.path] + arguments
        let result = try await offThePool {
            try runTool(command[0], Array(command.dropFirst()), directory: self.root, outputs: .output, within: timeout + 10)
        }
        return try JSONDecoder().decode(TerminalRun.self, from: Data(result.text.utf8))
    }
}
