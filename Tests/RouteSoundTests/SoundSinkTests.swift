// SoundSinkTests: which sound server a session runs (PipeWire's socket before PulseAudio's, PULSE_SERVER), and the
// names a sink gets on it. Sinks on a running server are tested in the lab (SinkLabTests).

import Foundation
@testable import RouteSound
import Testing

@Suite struct SoundSinkTests {
    /// A runtime folder holding the sockets `sockets` names (as files: only their presence is looked at).
    private func runtime(with sockets: [String], _ body: (String) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("route-sound-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder + "/pulse", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for socket in sockets { _ = FileManager.default.createFile(atPath: folder + "/" + socket, contents: nil) }
        try body(folder)
    }

    @Test func pipewireIsPreferredThenPulseAudioThenNone() throws {
        try runtime(with: ["pipewire-0", "pulse/native"]) { #expect(SoundServer.running(environment: ["XDG_RUNTIME_DIR": $0]) == .pipewire) }
        try runtime(with: ["pulse/native"]) { #expect(SoundServer.running(environment: ["XDG_RUNTIME_DIR": $0]) == .pulseaudio) }
        try runtime(with: []) { folder in
            #expect(SoundServer.running(environment: ["XDG_RUNTIME_DIR": folder]) == nil)
            #expect(SoundServer.running(environment: ["XDG_RUNTIME_DIR": folder, "PULSE_SERVER": "tcp:10.0.0.5"]) == .pulseaudio)
            #expect(SoundServer.running(environment: [:]) == nil, "no runtime folder, no server")
        }
        // A PipeWire of another name or folder, as PIPEWIRE_REMOTE and PIPEWIRE_RUNTIME_DIR say.
        try runtime(with: ["lab-pw"]) { folder in
            #expect(SoundServer.running(environment: ["PIPEWIRE_RUNTIME_DIR": folder, "PIPEWIRE_REMOTE": "lab-pw"]) == .pipewire)
        }
    }

    @Test func aSinksNameHoldsNothingASoundServerMisreads() {
        #expect(SoundSink.nodeName("route.uuid:0e9a4c1a-7a51") == "route.uuid_0e9a4c1a-7a51")
        #expect(SoundSink.nodeName("route.Wohnzimmer Fernseher") == "route.Wohnzimmer_Fernseher")
        #expect(SoundSink.nodeName("route.客厅 ; rm -rf") == "route._____rm_-rf")
        let sink = SoundSink(server: .pulseaudio, name: "route.a b", description: "Living Room TV")
        #expect(sink.name == "route.a_b" && sink.description == "Living Room TV")
    }
}
