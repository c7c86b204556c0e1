// LabTools: what the network tests use of the lab (scripts/lab): whether we run inside it, controlling its
// peers, and asking the real renderer what it is doing with curl SOAP (Tests/LabTools/soap), not our code.

import Foundation
import RouteTestSupport
import Testing

/// The lab this test process runs in (`scripts/lab run swift test`), and its peers.
enum Lab {
    /// True inside the lab's network namespace: only then may a test discover or touch the network.
    static let isActive = ProcessInfo.processInfo.environment["ROUTE_LAB"] == "1"
    /// The real DLNA renderer (gmediarender) the lab runs in namespace B.
    static let renderer = "http://10.77.0.2:49494/description.xml"
    static let rendererName = "Lab Renderer"

    /// A value of the lab's `lab.env` (ROUTE_LAB_RYGEL_URL, ROUTE_LAB_RENDERER_PID, …).
    static func environment(_ key: String) -> String? {
        guard let state = ProcessInfo.processInfo.environment["ROUTE_LAB_STATE"],
              let text = try? String(contentsOfFile: state + "/lab.env", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// The lab's file NAME in its state directory (a peer's log, what it played), read now.
    static func file(_ name: String) throws -> String {
        guard let state = ProcessInfo.processInfo.environment["ROUTE_LAB_STATE"] else { throw ToolFailed(description: "not in the lab") }
        return String(decoding: try Data(contentsOf: URL(fileURLWithPath: state + "/" + name)), as: UTF8.self)
    }

    /// Starts the lab's Rygel (its Playbin renderer) and returns its description URL.
    static func startRygel() throws -> String {
        try control("start-rygel")
        guard let url = environment("ROUTE_LAB_RYGEL_URL"), !url.isEmpty else { throw ToolFailed(description: "Rygel's URL is unknown") }
        return url
    }

    static let rygelName = "Lab Rygel"

    /// Runs nftables in namespace B (the renderers' side): `nft ARGS`.
    static func nft(_ arguments: [String]) throws {
        let output = try tool(RouteBinary.packageRoot.appendingPathComponent("scripts/lab").path, ["exec-b", "nft"] + arguments)
        if output.status != 0 { throw ToolFailed(description: "nft \(arguments.joined(separator: " ")): \(output.text)") }
    }

    /// Sends, from namespace B, the ssdp:byebye a renderer with `udn` would send when leaving — but it stays.
    static func sendByebye(udn: String) throws {
        let script = """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 2)
            for nt in ("upnp:rootdevice", "\(udn)", "urn:schemas-upnp-org:device:MediaRenderer:1"):
                usn = "\(udn)" if nt == "\(udn)" else "\(udn)::" + nt
                s.sendto(("NOTIFY * HTTP/1.1\\r\\nHOST: 239.255.255.250:1900\\r\\nNT: %s\\r\\nNTS: ssdp:byebye\\r\\nUSN: %s\\r\\n\\r\\n"
                          % (nt, usn)).encode(), ("239.255.255.250", 1900))
            """
        let output = try tool(RouteBinary.packageRoot.appendingPathComponent("scripts/lab").path, ["exec-b", "/usr/bin/python3", "-c", script])
        if output.status != 0 { throw ToolFailed(description: "sending ssdp:byebye: \(output.text)") }
    }

    /// Starts `scripts/lab ARGS` in the background (an `exec-b avahi-publish …`); the caller stops it.
    static func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = RouteBinary.packageRoot.appendingPathComponent("scripts/lab")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runUnblocked()
        return process
    }

    /// A helper process a test started and must end: with SIGKILL, as Foundation starts children with SIGTERM blocked.
    struct Helper {
        let process: Process

        /// Ends it and waits for it.
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            waitForExit(process, seconds: 5)
        }
    }

    /// Announces DNS-SD services from namespace B with Tests/LabTools/announce (avahi's own D-Bus API, any address,
    /// hundreds at once) and returns once avahi-daemon has them; the caller stops it (the services leave with it).
    static func announce(_ arguments: [String]) async throws -> Helper {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("announce-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = RouteBinary.packageRoot.appendingPathComponent("scripts/lab")
        process.arguments = ["exec-b", RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/announce").path] + arguments
        let log = try FileHandle(forWritingTo: output)
        process.standardOutput = log
        process.standardError = log
        try process.runUnblocked()
        try log.close()
        defer { try? FileManager.default.removeItem(at: output) }
        do {
            try await until("avahi-daemon announces \(arguments.joined(separator: " "))", within: 20) {
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                if !process.isRunning { throw ToolFailed(description: "announce \(arguments.joined(separator: " ")): \(text)") }
                return text.contains("announced")
            }
        } catch {
            Helper(process: process).stop()
            throw error
        }
        return Helper(process: process)
    }

    /// A TCP listener in this namespace that notes every connection it is given (`listen`).
    struct Listener {
        let helper: Helper
        let log: String

        /// Connections so far (its own knock that proved it listens among them).
        var knocks: Int { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count }

        func stop() { helper.stop() }
    }

    /// Listens on TCP `port` at each of `addresses` (in this namespace), noting every connection in `log`, and returns
    /// once it does (a knock of its own, counted); the caller stops it.
    static func listen(on addresses: [String], port: Int, log: String) async throws -> Listener {
        let listener = Listener(helper: try startListener(on: addresses, port: port, log: log), log: log)
        do {
            // Every address is bound before the first is listened on: one answer says all are.
            try await until("the listener on \(addresses.joined(separator: ", ")) port \(port) is up", within: 10) {
                _ = try statusForANeighbour(of: "http://\(addresses[0]):\(port)/")
                return listener.knocks > 0
            }
        } catch {
            listener.stop()
            throw error
        }
        return listener
    }

    private static func startListener(on addresses: [String], port: Int, log: String) throws -> Helper {
        let script = """
            import select, socket, sys
            listeners = []
            for address in sys.argv[3:]:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((address, int(sys.argv[2])))
                s.listen(16)
                listeners.append(s)
            while True:
                for s in select.select(listeners, [], [])[0]:
                    connection, peer = s.accept()
                    with open(sys.argv[1], "a") as out:
                        out.write("%s:%d\\n" % peer)
                    connection.close()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, log, String(port)] + addresses
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runUnblocked()
        return Helper(process: process)
    }

    /// Runs `scripts/lab ARGS` (e.g. `kill-renderer --hard`); throws with its output when it fails.
    static func control(_ arguments: String...) throws { try control(arguments) }

    /// Runs `scripts/lab ARGS`, the arguments as an array.
    static func control(_ arguments: [String]) throws {
        let output = try tool(RouteBinary.packageRoot.appendingPathComponent("scripts/lab").path, arguments)
        if output.status != 0 { throw ToolFailed(description: "scripts/lab \(arguments.joined(separator: " ")): \(output.text)") }
    }

    /// An AVTransport or RenderingControl SOAP call to a renderer by curl; the response body.
    static func soap(_ service: String, _ action: String, _ arguments: String = "", at description: String = renderer) throws -> String {
        try tool(RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/soap").path,
                 [description, service, action, arguments]).text
    }

    /// The HTTP status a GET of `url` gets from the test's own address (10.77.0.1: a host that is not the device), as a
    /// neighbour that asked the device for its URL would ("403"; "000" when nothing answers).
    static func statusForANeighbour(of url: String) throws -> String {
        try tool("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url]).text
    }

    /// The renderer's own CurrentTransportState (PLAYING, PAUSED_PLAYBACK, STOPPED, …).
    static func transportState() throws -> String {
        value("CurrentTransportState", in: try soap("AVTransport", "GetTransportInfo")) ?? "?"
    }

    /// A renderer's own RelTime, in seconds (the lab's renderer's unless another's description is given).
    static func position(at description: String = renderer) throws -> Double {
        let text = value("RelTime", in: try soap("AVTransport", "GetPositionInfo", at: description)) ?? ""
        return text.split(separator: ":").reduce(0.0) { $0 * 60 + (Double($1) ?? 0) }
    }

    /// A renderer's own Master volume, 0–100 (the lab's renderer's unless another's description is given).
    static func volume(at description: String = renderer) throws -> Int? {
        value("CurrentVolume", in: try soap("RenderingControl", "GetVolume", "<Channel>Master</Channel>", at: description)).flatMap { Int($0) }
    }

    /// The URI a renderer says it plays now (GetPositionInfo's TrackURI; the lab's renderer's unless another's
    /// description is given).
    static func trackURI(at description: String = renderer) throws -> String {
        value("TrackURI", in: try soap("AVTransport", "GetPositionInfo", at: description)) ?? ""
    }

    /// The renderer's own NextURI (what it will play after the current item), "" when none.
    static func nextURI(at description: String = renderer) throws -> String {
        value("NextURI", in: try soap("AVTransport", "GetMediaInfo", at: description)) ?? ""
    }

    /// Starts `url` on a renderer as another controller would: SetAVTransportURI and Play over SOAP.
    static func playAsAnotherController(_ url: String, at description: String = renderer) throws {
        _ = try soap("AVTransport", "SetAVTransportURI", "<CurrentURI>\(url)</CurrentURI><CurrentURIMetaData></CurrentURIMetaData>", at: description)
        _ = try soap("AVTransport", "Play", "<Speed>1</Speed>", at: description)
    }

    /// The transport state of any renderer by its description URL.
    static func transportState(at description: String) throws -> String {
        value("CurrentTransportState", in: try soap("AVTransport", "GetTransportInfo", at: description)) ?? "?"
    }

    /// Stops the renderer and waits until it says STOPPED, so each test starts from rest.
    /// A renderer found dead (gmediarender 0.1 with GStreamer 1.20 has been seen to segfault in libsoup 3 once in
    /// many runs) is started again and said, so that its crash fails the test it happened in and not every one after.
    static func stopRenderer() async throws {
        if try runTool(RouteBinary.packageRoot.appendingPathComponent("scripts/lab").path, ["status"]).text.contains("renderer  stopped") {
            print("lab: the renderer was not running (its log: renderer.log); starting it again")
            try control("start-renderer")
        }
        _ = try soap("AVTransport", "Stop")
        try await until("the renderer is STOPPED", within: 5) { try transportState() == "STOPPED" || transportState() == "NO_MEDIA_PRESENT" }
    }

    /// Polls `condition` every 50 ms until it holds; records an issue and throws after `seconds`.
    /// `meanwhile` says what else the failure should show (what route printed so far, say).
    static func until(_ what: String, within seconds: Double, meanwhile: () -> String = { "" }, sourceLocation: SourceLocation = #_sourceLocation,
                      isolation: isolated (any Actor)? = #isolation, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if (try? condition()) == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        let also = meanwhile()
        Issue.record("\(what) did not happen within \(seconds) s\(also.isEmpty ? "" : "; meanwhile: " + also)", sourceLocation: sourceLocation)
        throw PollTimeout()
    }

    private static func value(_ tag: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<\(tag)>"), let end = xml.range(of: "</\(tag)>", range: start.upperBound..<xml.endIndex) else { return nil }
        return String(xml[start.upperBound..<end.lowerBound])
    }

    /// Runs a program to its end (at most 30 s, then its process group is killed); its exit status and its output
    /// and errors together.
    static func tool(_ path: String, _ arguments: [String]) throws -> ToolOutput { try runTool(path, arguments) }
}

/// A fake renderer (Tests/LabTools/fake-renderer) in the lab's namespace B, misbehaving as `mode` says.
/// For what no real peer shows on demand: SOAP faults, malformed XML, a renderer that never answers.
final class FakeRenderer: Sendable {
    let description: String
    private let process: Process
    private let log: URL

    /// Starts the fake on 10.77.0.2:`port` and waits until it listens; with `ssdp` it also answers
    /// searches and announces itself (so discovery finds it).
    init(mode: String, port: Int, ssdp: Bool = false) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("fake-renderer-\(port)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = RouteBinary.packageRoot.appendingPathComponent("scripts/lab")
        process.arguments = ["exec-b", RouteBinary.packageRoot.appendingPathComponent("Tests/LabTools/fake-renderer").path,
                             "--mode", mode, "--address", "10.77.0.2", "--port", String(port)] + (ssdp ? ["--ssdp"] : [])
        // Its output and its log of what it did, in one file.
        let output = try FileHandle(forWritingTo: log)
        process.standardOutput = output
        process.standardError = output
        try process.runUnblocked()
        try? output.close() // the fake has its own copy (Foundation would keep this one open)
        self.process = process
        self.log = log
        description = "http://10.77.0.2:\(port)/description.xml"
        try await Lab.until("the fake renderer (\(mode)) is ready", within: 10) {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("ready")
        }
    }

    /// What the fake logged so far (requests, events delivered, what it did on purpose).
    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Stops the fake (it sends byebye if it took part in SSDP) and removes its log (a test reads it before).
    func stop() {
        process.terminate()
        waitForExit(process, seconds: 5)
        try? FileManager.default.removeItem(at: log)
    }
}

/// A listening socket on this namespace's loopback that nobody should connect to: proves that route did
/// not send a request where a hostile device pointed it.
final class LoopbackTrap: Sendable {
    let port: Int
    private let fd: Int32

    init(port: Int) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else { close(fd); throw ToolFailed(description: "cannot listen on 127.0.0.1:\(port)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// How many connections arrived so far (each is accepted and closed).
    func connections() -> Int {
        var count = 0
        while case let client = accept(fd, nil, nil), client >= 0 { close(client); count += 1 }
        return count
    }

    deinit { close(fd) }
}
