// ProtocolTests: the plugin channel's framing and JSON-RPC parsing — frames split anywhere, garbage and oversize
// refused, messages of every kind read back, versions negotiated, errors mapped both ways — and the search path.

import Foundation
import RouteCore
import RoutePluginHost
@testable import RoutePluginProtocol
import Synchronization
import Testing

@Suite struct FramingTests {
    @Test func framesSplitAnywhereAreReadWhole() throws {
        let bodies = [Data(#"{"jsonrpc":"2.0","method":"a"}"#.utf8), Data(#"{"jsonrpc":"2.0","id":1,"result":null}"#.utf8)]
        let stream = bodies.map(PluginFraming.frame).reduce(Data(), +)
        for cut in 1..<stream.count {
            var decoder = FrameDecoder()
            let got = try decoder.feed(stream.prefix(cut)) + decoder.feed(stream.dropFirst(cut))
            #expect(got == bodies, "cut at \(cut)")
        }
    }

    @Test func otherHeadersAreIgnored() throws {
        var decoder = FrameDecoder()
        let got = try decoder.feed(Data("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n{}".utf8))
        #expect(got == [Data("{}".utf8)])
    }

    @Test func aStrayPrintIsRefusedAtItsFirstLine() {
        var decoder = FrameDecoder()
        #expect(throws: FramingError.self) { try decoder.feed(Data("hello wor".utf8)) }
        var bareNewline = FrameDecoder()
        #expect(throws: FramingError.self) { try bareNewline.feed(Data("Content-Length: 2\n".utf8)) }
        var partial = FrameDecoder()
        #expect((try? partial.feed(Data("Content-Len".utf8))) == [], "a header still arriving is not an error")
    }

    @Test func garbageAndOversizeAreRefused() {
        var decoder = FrameDecoder()
        #expect(throws: FramingError.self) { try decoder.feed(Data("hello world\n".utf8)) }
        var large = FrameDecoder()
        #expect(throws: FramingError.tooLarge(2 << 20)) { try large.feed(Data("Content-Length: \(2 << 20)\r\n\r\n".utf8)) }
        var unterminated = FrameDecoder()
        #expect(throws: FramingError.self) { try unterminated.feed(Data(("Content-Length: 5" + String(repeating: " ", count: 5000)).utf8)) }
        var negative = FrameDecoder()
        #expect(throws: FramingError.self) { try negative.feed(Data("Content-Length: -1\r\n\r\n".utf8)) }
    }
}

@Suite struct JSONRPCTests {
    @Test func everyKindOfMessageReadsBack() throws {
        let messages: [RPCMessage] = [
            .request(id: .number(7), method: "session/seek", params: RPCCoding.encode(SeekParams(session: "s1", position: 12.5))),
            .notification(method: "devices", params: RPCCoding.encode(DevicesParams(devices: []))),
            .response(id: .string("x"), result: Data("null".utf8)),
            .failure(id: .number(3), error: RPCError(code: 2, message: "no")),
        ]
        for message in messages {
            let parsed = try RPCMessage(parsing: message.encoded())
            #expect(parsed.encoded() == message.encoded())
        }
    }

    @Test func notJSONRPCIsAnError() {
        #expect(throws: RPCError.self) { try RPCMessage(parsing: Data("[1,2]".utf8)) }
        #expect(throws: RPCError.self) { try RPCMessage(parsing: Data(#"{"jsonrpc":"1.0","method":"a"}"#.utf8)) }
        #expect(throws: RPCError.self) { try RPCMessage(parsing: Data("{not json".utf8)) }
        #expect(throws: RPCError.self) { try RPCMessage(parsing: Data(#"{"jsonrpc":"2.0","id":[1],"method":"a"}"#.utf8)) }
    }

    @Test func aNumberNoDoubleHoldsIsSaidAsSuchNotAsBrokenJSON() {
        let body = #"{"jsonrpc":"2.0","method":"session/status","params":{"session":"s1","status":{"state":"playing","position":1e999}}}"#
        #expect { try RPCMessage(parsing: Data(body.utf8)) } throws: { error in
            "\(error)".contains("a number out of range (1e999)") && !"\(error)".contains("not JSON")
        }
        #expect(RPCMessage.numberOutOfRange(in: Data(#"{"a":-2.5e400,"b":3}"#.utf8)) == "-2.5e400")
        #expect(RPCMessage.numberOutOfRange(in: Data(#"{"a":1e308,"b":"x-1"}"#.utf8)) == nil)
    }

    @Test func numbersFromAPluginAreCheckedWhereTheyEnter() throws {
        let huge = try JSONDecoder().decode(WireStatus.self, from: Data(#"{"state":"playing","position":1e308,"duration":1e308,"speed":1e308,"volume":1e308}"#.utf8))
        let status = try #require(huge.status)
        #expect(status.position == 0 && status.duration == nil && status.speed == 1 && status.volume == 1, "\(status)")
        let fine = try #require(try JSONDecoder().decode(WireStatus.self, from: Data(#"{"state":"playing","position":12.5,"duration":30,"speed":2}"#.utf8)).status)
        #expect(fine.position == 12.5 && fine.duration == 30 && fine.speed == 2)
        var device = WireDevice(MediaRoute(provider: "p", nativeID: "d", name: "D", kind: .speaker, address: nil, capabilities: .audio,
                                           volumeControl: .none, accepts: .anything))
        device.maxAudioChannels = Int.max
        #expect(device.route(provider: "p").maxAudioChannels == nil)
    }

    @Test func paramsThatDoNotFitSayWhichField() {
        #expect { try RPCCoding.decode(SeekParams.self, from: Data(#"{"session":"s1"}"#.utf8)) } throws: { error in
            (error as? RPCError)?.message.contains("position") == true
        }
    }

    @Test func versionsNegotiateToTheHighestCommon() {
        #expect(VersionRange(min: 1, max: 3).highestCommon(with: VersionRange(min: 2, max: 5)) == 3)
        #expect(VersionRange(min: 1, max: 1).highestCommon(with: VersionRange(min: 2, max: 3)) == nil)
    }

    @Test func errorsMapBothWays() {
        let error = RPCError(RouteError.unsupported(device: "X", what: "seek a live stream"))
        #expect(error.code == RPCError.unsupported)
        #expect(error.routeError(device: "Kitchen", command: "seek") == .unsupported(device: "Kitchen", what: "seek a live stream"))
        #expect(RPCError(code: 1, message: "gone").routeError(device: "K", command: "play") == .deviceUnreachable(device: "K", reason: "gone"))
        #expect(RPCError(code: 99, message: "odd").routeError(device: "K", command: "play") == .commandFailed(device: "K", command: "play", reason: "odd"))
    }

    @Test func devicesAndStatusesSurviveTheWire() throws {
        var route = MediaRoute(provider: "demo", nativeID: "d1", name: "Demo", kind: .speaker, address: "10.0.0.9:1",
                               capabilities: .audio, volumeControl: .absolute, accepts: .mimeTypes(["audio/flac"]), deduplicationIDs: ["mac:00:11"])
        route.showsSubtitles = true
        let wire = try JSONDecoder().decode(WireDevice.self, from: RPCCoding.encode(WireDevice(route)))
        #expect(wire.route(provider: "demo") == route)
        var status = PlaybackStatus(state: .paused, position: 3, duration: 10, volume: 0.5)
        status.allowed = [.pause]
        let back = try #require(try JSONDecoder().decode(WireStatus.self, from: RPCCoding.encode(WireStatus(status))).status)
        #expect(back.state == .paused && back.position == 3 && back.allowed == [.pause] && back.volume == 0.5)
        #expect(WireStatus(PlaybackStatus(state: .playing)).allowed == nil, "all commands: the field is left out")
    }
}

@Suite struct PluginLocatorTests {
    @Test func theSearchPathComesInOrderAndTheFirstOfANameWins() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("plugins-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for directory in ["a", "b", "prefix/bin", "prefix/lib/route/plugins"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        func make(_ path: String, executable: Bool = true) throws {
            _ = FileManager.default.createFile(atPath: root + "/" + path, contents: Data("#!/bin/sh\n".utf8),
                                           attributes: [.posixPermissions: executable ? 0o755 : 0o644])
        }
        try make("a/route-provider-one")
        try make("b/route-provider-one")
        try make("b/route-provider-two")
        try make("b/route-provider-Bad")
        try make("b/route-provider-three", executable: false)
        try make("prefix/lib/route/plugins/route-provider-four")
        let directories = PluginLocator.directories(environment: ["ROUTE_PLUGIN_PATH": "\(root)/a:\(root)/b", "HOME": root + "/home"],
                                                    executable: root + "/prefix/bin/route")
        #expect(directories == [root + "/a", root + "/b", root + "/home/.local/lib/route/plugins", root + "/prefix/lib/route/plugins", root + "/prefix/bin"])
        let found = PluginLocator.find(in: directories)
        #expect(found.map(\.name) == ["one", "two", "four"])
        #expect(found.first?.path == root + "/a/route-provider-one")
        // route-full, installed in PREFIX/lib/route, searches the same prefix's plugins.
        let full = PluginLocator.directories(environment: ["HOME": root + "/home"], executable: root + "/prefix/lib/route/route-full")
        #expect(full == [root + "/home/.local/lib/route/plugins", root + "/prefix/lib/route/plugins"])
    }
}

/// The host and RoutePluginKit together, without a network: the bench's echo plugin (a trivial provider on the kit,
/// which prints to stdout as careless plugins do) started by a PluginProvider.
@Suite(.timeLimit(.minutes(1))) struct KitAndHostTests {
    static let echo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/route-plugin-bench").path

    /// A folder holding `route-provider-echo`: the bench, which serves as a plugin when ROUTE_BENCH_SERVE=1 — a wrapper
    /// says so for this plugin alone (setting it in this process would reach every test running beside this one).
    /// `timed`: it plays at an instant it is told (features.timedPlay).
    private static func echoPlugin(timed: Bool = false) throws -> (folder: String, path: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("route-echo-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let wrapper = folder + "/route-provider-echo"
        try "#!/bin/sh\nROUTE_BENCH_SERVE=1 ROUTE_BENCH_TIMED=\(timed ? 1 : 0) exec '\(Self.echo)'\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper, 0o755)
        return (folder, wrapper)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: echo), "needs `swift build --build-tests`"))
    func aPluginFileStillOpenForWritingStartsOnceItIsClosed() async throws {
        let (folder, wrapper) = try Self.echoPlugin()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Held open for writing, as by a process that forked while it was written: exec says ETXTBSY until it closes.
        let held = open(wrapper, O_WRONLY | O_CLOEXEC)
        #expect(held >= 0)
        // Closed from a thread of its own: a task could wait behind other tests' for longer than the host tries.
        DetachedThread.start(name: "route-test-close") {
            usleep(300_000)
            close(held)
        }
        let (snapshots, sink) = AsyncStream<[MediaRoute]>.makeStream()
        let provider = PluginProvider(name: "echo", path: wrapper)
        let discovery = Task {
            defer { sink.finish() }
            try await provider.run(ProviderContext(log: .discard, discovery: .none, publish: { sink.yield($0) }))
        }
        var first: [MediaRoute] = []
        for await routes in snapshots { first = routes; break }
        discovery.cancel()
        let ended = await discovery.result
        #expect(first.map(\.id) == ["echo:echo-1"], "the plugin started once its file was closed: \(ended)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: echo), "needs `swift build --build-tests`"))
    func aSwiftPluginPublishesAndIsControlledThroughTheHost() async throws {
        let (folder, wrapper) = try Self.echoPlugin()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let provider = PluginProvider(name: "echo", path: wrapper)
        let (snapshots, sink) = AsyncStream<[MediaRoute]>.makeStream()
        let versions = Mutex<[String]>([])
        // What the host says about the plugin, shown if the test fails.
        let said = Mutex<[String]>([])
        let log = RouteLog { level, source, message in said.withLock { $0.append("\(level) \(source): \(message)") } }
        let context = ProviderContext(log: log, discovery: .none, publish: { sink.yield($0) },
                                      version: { version in versions.withLock { $0.append(version) } })
        // If the plugin fails (its print reached the channel), discovery ends and so do the snapshots.
        let discovery = Task {
            defer { sink.finish() }
            try await provider.run(context)
        }
        var first: [MediaRoute] = []
        for await routes in snapshots { first = routes; break }
        if first.isEmpty { Issue.record("no snapshot: \(await discovery.result); the host said: \(said.withLock { $0 })") }
        #expect(first.map(\.id) == ["echo:echo-1"] && first.first?.name == "Echo", "the print went to stderr, not the channel")
        #expect(versions.withLock { $0 } == ["bench"])
        let route = try #require(first.first)
        let controller = try await provider.controller(for: route, context: context)
        try await controller.load(MediaItem(url: "http://127.0.0.1:9/x", mimeType: "audio/flac"), autoplay: true)
        try await controller.pause()
        try await controller.seek(to: 3)
        #expect(try await controller.setNext(MediaItem(url: "http://127.0.0.1:9/y", mimeType: "audio/flac")) == false)
        var statuses = controller.statusUpdates().makeAsyncIterator()
        #expect(await statuses.next()?.state == .idle)
        await controller.close()
        await #expect(throws: RouteError.self) { try await controller.play() }
        discovery.cancel()
        _ = await discovery.result
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: echo), "needs `swift build --build-tests`"), arguments: [true, false])
    func anInstantToPlayAtReachesOnlyAPluginThatTakesIt(timed: Bool) async throws {
        let (folder, wrapper) = try Self.echoPlugin(timed: timed)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let provider = PluginProvider(name: "echo", path: wrapper)
        let (snapshots, sink) = AsyncStream<[MediaRoute]>.makeStream()
        let context = ProviderContext(log: .discard, discovery: .none, publish: { sink.yield($0) })
        let discovery = Task {
            defer { sink.finish() }
            try await provider.run(context)
        }
        var first: [MediaRoute] = []
        for await routes in snapshots { first = routes; break }
        let controller = try await provider.controller(for: try #require(first.first), context: context)
        var statuses = controller.statusUpdates().makeAsyncIterator()
        let instant = Date(timeIntervalSince1970: 1_800_000_000.125)
        // A plugin without features.timedPlay is not told the instant (it would play at once): the caller plays it in time.
        #expect(try await controller.play(at: instant) == timed)
        if !timed { try await controller.play() }
        var said: PlaybackStatus?
        while let status = await statuses.next() {
            if status.state == .playing { said = status; break }
        }
        #expect(said?.title == (timed ? "at 1800000000.125" : "now"))
        await controller.close()
        discovery.cancel()
        _ = await discovery.result
    }
}
