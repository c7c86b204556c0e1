// Targets: every parser route runs on input from the network, each as a fuzz target that takes raw bytes.
// A target must never crash, hang or trap, whatever the bytes; it checks a few invariants on top.

import CAvahiClient
import CastProvider
import CUPnP
import Foundation
import RouteXML
import MDNSDiscovery
import MediaRouting
import RouteCore
import RouteMedia
import RoutePluginProtocol
import UPnPProvider

/// One fuzz target: a name (its corpus folder under Tests/Fuzz/Corpus) and what it does with an input.
struct FuzzTarget: Sendable {
    let name: String
    let summary: String
    let run: @Sendable (Data) -> Void
}

/// Stops the run with a message when an invariant does not hold (libFuzzer reports it as a crash).
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

enum Targets {
    static let all: [FuzzTarget] = [description, soap, lastChange, protocolInfo, ranges, ssdp, text, cast, plugin, castStatus, txt,
                                    pluginNumbers, deviceText, playlist, webPage, thisMachine]

    /// A Cast JSON payload of each type route reads, the type chosen by the first byte (RECEIVER_STATUS, MEDIA_STATUS,
    /// LOAD_FAILED and the like): decoded leniently, never trapping, whatever the fields hold.
    static let castStatus = FuzzTarget(name: "caststatus", summary: "Cast statuses by type: RECEIVER_STATUS, MEDIA_STATUS, failures") { data in
        guard let kind = data.first else { return }
        let body = String(decoding: data.dropFirst(), as: UTF8.self)
        switch kind % 3 {
        case 0: _ = CastStatuses.receiver(body)
        case 1:
            for status in CastStatuses.playback(body) {
                require(status.position.isFinite && (0...NetworkNumber.maxSeconds).contains(status.position), "a position out of range")
                require(status.duration.map { $0.isFinite && $0 > 0 && $0 <= NetworkNumber.maxSeconds } ?? true, "a duration out of range")
                require(PlaybackStatus.speeds.contains(status.speed), "a speed out of range: \(status.speed)")
                _ = formatClock(status.position(at: Date().addingTimeInterval(1e6)))
            }
        default: _ = CastStatuses.failure(body)
        }
    }

    /// A TXT record as it arrives in an mDNS packet (length-prefixed strings), read by avahi and then by route: its
    /// pairs, and the Cast route made of them at an address the rest of the bytes name.
    static let txt = FuzzTarget(name: "txt", summary: "mDNS TXT records (avahi_string_list_parse, pairs) and the Cast routes made of them") { data in
        let split = data.firstIndex(of: 0) ?? data.endIndex
        let address = String(decoding: data[data.startIndex..<split], as: UTF8.self)
        let record = data[split...].dropFirst()
        var list: UnsafeMutablePointer<AvahiStringList>?
        let parsed = record.withUnsafeBytes { avahi_string_list_parse($0.baseAddress, $0.count, &list) }
        defer { avahi_string_list_free(list) }
        guard parsed == 0 else { return }
        let pairs = AvahiBrowser.pairs(list)
        require(pairs.count <= 64, "more than 64 TXT pairs kept")
        let port = Int(record.first ?? 0) << 8 | Int(record.dropFirst().first ?? 0)
        if AnnouncedAddress.refusal(host: address, port: port) == nil {
            require(SocketAddress(numericHost: address, port: 0) != nil && port > 0, "an address or port taken that is none: \(address):\(port)")
        }
        let service = DNSSDService(name: pairs["fn"] ?? "x", type: CastProvider.serviceType, host: "x.local", address: address, port: port,
                                   txt: pairs, interface: 2)
        for route in CastReceiver.routes(from: [service, service]).routes {
            require(!route.name.unicodeScalars.contains { $0.value < 0x20 || $0.properties.isDefaultIgnorableCodePoint }, "an unclean name")
        }
    }

    /// Numbers in a plugin's statuses, as text the JSON parser sees: every one checked for range where it enters, and
    /// one no double holds named as such.
    static let pluginNumbers = FuzzTarget(name: "pluginnumbers", summary: "numbers in plugin statuses (WireStatus, numbers out of range)") { data in
        let numbers = String(decoding: data, as: UTF8.self).split(separator: ",", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
        func field(_ index: Int) -> String { index < numbers.count && !numbers[index].isEmpty ? numbers[index] : "0" }
        let body = #"{"state":"playing","position":\#(field(0)),"duration":\#(field(1)),"volume":\#(field(2)),"speed":\#(field(3))}"#
        if let literal = RPCMessage.numberOutOfRange(in: Data(body.utf8)) {
            require(Double(literal)?.isInfinite == true || literal.count == 40, "\(literal) was called out of range")
        }
        guard let wire = try? JSONDecoder().decode(WireStatus.self, from: Data(body.utf8)), let status = wire.status else { return }
        require((0...NetworkNumber.maxSeconds).contains(status.position), "a position out of range: \(status.position)")
        require(status.duration.map { (0...NetworkNumber.maxSeconds).contains($0) } ?? true, "a duration out of range")
        require(status.volume.map { (0...1).contains($0) } ?? true, "a volume out of range")
        require(PlaybackStatus.speeds.contains(status.speed), "a speed out of range")
        _ = formatClock(status.position(at: Date().addingTimeInterval(1e9)))
        _ = formatClock(status.duration ?? 0)
    }

    /// What a plugin writes on its channel: frames cut anywhere, JSON-RPC messages, and the devices, statuses and
    /// results the host reads from them. A plugin is local, but whatever it writes must not take route down.
    static let plugin = FuzzTarget(name: "plugin", summary: "plugin channel frames, JSON-RPC messages and their payloads") { data in
        var decoder = FrameDecoder()
        let cut = data.isEmpty ? 0 : Int(data[data.startIndex]) % max(1, data.count)
        guard let bodies = try? decoder.feed(data.prefix(cut)) + decoder.feed(data.dropFirst(cut)) else { return }
        for body in bodies {
            require(body.count <= PluginFraming.maxMessageBytes, "a body over the cap")
            guard let message = try? RPCMessage(parsing: body) else { continue }
            switch message {
            case .notification(_, let params), .request(_, _, let params):
                if let devices = try? RPCCoding.decode(DevicesParams.self, from: params) {
                    for route in devices.devices.map({ $0.route(provider: "fuzz") }) {
                        require(!route.name.unicodeScalars.contains { $0.value < 0x20 }, "a control character in a name")
                    }
                }
                if let report = try? RPCCoding.decode(StatusParams.self, from: params), let status = report.status.status {
                    require(status.position.isFinite && status.position >= 0, "a position out of range: \(status.position)")
                    require(status.duration.map { $0.isFinite && $0 >= 0 } ?? true, "a duration out of range")
                    _ = status.position(at: Date())
                }
                _ = try? RPCCoding.decode(LogParams.self, from: params)
            case .response(_, let result):
                _ = try? RPCCoding.decode(InitializeResult.self, from: result)
                _ = try? RPCCoding.decode(DoneResult.self, from: result)
                if let resolved = try? RPCCoding.decode(ResolveResult.self, from: result) { _ = resolved.device?.route(provider: "fuzz") }
            case .failure(_, let error):
                _ = error.routeError(device: "fuzz", command: "play").description
            }
            _ = message.encoded()
        }
    }

    /// A device description off the wire: bounded XML, then what route reads of it.
    static let description = FuzzTarget(name: "description", summary: "device descriptions and SCPDs (XMLNode, DeviceDescription)") { data in
        guard let root = try? XMLNode.parse(data, limits: .document) else { return }
        _ = root.all("service")
        guard let description = try? DeviceDescription.parse(root, location: "http://10.0.0.5:8080/desc.xml") else { return }
        for service in description.services {
            for url in [service.controlURL, service.eventURL, service.scpdURL] where !url.isEmpty {
                require(URL(string: url)?.host == "10.0.0.5", "a service URL left the device's host: \(url)")
            }
        }
        require(!description.friendlyName.unicodeScalars.contains { $0.value < 0x20 }, "a control character in a name")
        _ = description.route(sink: description.modelName, mac: nil)
        _ = try? DeviceDescription.parseAll(root, location: "http://10.0.0.5:8080/desc.xml")
    }

    /// A SOAP reply or GENA body as libupnp hands it over: its DOM, copied without recursion.
    static let soap = FuzzTarget(name: "soap", summary: "SOAP replies and GENA property sets (ixml DOM walk)") { data in
        guard data.count <= 64 * 1024 else { return } // libupnp reads no more
        var document: UnsafeMutablePointer<IXML_Document>?
        let text = String(decoding: data, as: UTF8.self)
        guard ixmlParseBufferEx(text, &document) == IXML_SUCCESS.rawValue, let document else { return }
        defer { ixmlDocument_free(document) }
        guard let tree = try? XMLNode(ixml: document, limits: .message) else { return }
        _ = SOAPResponse.arguments(tree)
        for (_, value) in PropertySet.variables(tree) { _ = LastChange.parse(value) }
    }

    /// An AV service's LastChange value, and the numbers read from it.
    static let lastChange = FuzzTarget(name: "lastchange", summary: "LastChange events and the numbers in them") { data in
        let values = LastChange.parse(String(decoding: data, as: UTF8.self))
        for value in values.values {
            if let seconds = NetworkNumber.clock(value) {
                require(seconds.isFinite && seconds >= 0 && seconds <= NetworkNumber.maxSeconds, "a clock out of range: \(seconds)")
            }
            if let volume = NetworkNumber.double(value, in: 0...100) { require(volume.isFinite, "an infinite volume") }
        }
    }

    /// GetProtocolInfo's Sink, and the MIME matching built on it.
    static let protocolInfo = FuzzTarget(name: "protocolinfo", summary: "GetProtocolInfo Sink lists and MIME matching") { data in
        guard data.count <= 64 * 1024 else { return } // it arrives in a SOAP reply, which libupnp caps
        let text = String(decoding: data, as: UTF8.self)
        let types = ProtocolInfo.mimeTypes(text)
        let accepts = MediaAcceptance.mimeTypes(types)
        for type in types.prefix(8) + ["video/mp4", "audio/mpeg"] {
            _ = accepts.accepts(mimeType: type)
            _ = accepts.spelling(of: type)
        }
    }

    /// `Range` and `TimeSeekRange.dlna.org` / `?t=`; the first 8 bytes are the body's size.
    static let ranges = FuzzTarget(name: "ranges", summary: "Range, TimeSeekRange.dlna.org and ?t= headers") { data in
        var size: UInt64 = 0
        for byte in data.prefix(8) { size = size << 8 | UInt64(byte) }
        let header = String(decoding: data.dropFirst(8), as: UTF8.self)
        if case .part(let start, let end) = ByteRangeRequest.parse(header, size: size) {
            require(start <= end && end < size, "a range outside the body: \(start)-\(end) of \(size)")
        }
        let duration = size == 0 ? nil : Double(size % 100_000)
        if case .from(let seconds) = TimeSeekRequest.parse(query: header, header: nil, duration: duration) {
            require(seconds.isFinite && seconds > 0 && seconds <= NetworkNumber.maxSeconds, "a start out of range: \(seconds)")
        }
        if case .from(let seconds) = TimeSeekRequest.parse(query: nil, header: header, duration: duration) {
            require(seconds.isFinite && seconds > 0, "a start out of range: \(seconds)")
        }
    }

    /// What route reads of SSDP packets: USN, LOCATION against the sender, and track URIs against ours.
    static let ssdp = FuzzTarget(name: "ssdp", summary: "SSDP fields (USN, LOCATION against the sender) and track URIs") { data in
        let fields = String(decoding: data, as: UTF8.self).split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        let usn = fields.first ?? "", location = fields.count > 1 ? fields[1] : "", sender = fields.count > 2 ? fields[2] : ""
        _ = SSDPReply.udn(fromUSN: usn)
        if SSDPReply.isOwnLocation(location, sender: sender) {
            require(URL(string: location)?.host == sender, "a location on another host was taken: \(location) from \(sender)")
        }
        _ = TrackURI.isSame(location, as: "http://10.0.0.1:4000/m/0123456789abcdef0123456789abcdef/media.mp3")
        let route = MediaRoute(provider: "upnp", nativeID: usn, name: usn, kind: .tv, address: location, capabilities: .audio,
                               volumeControl: .none, accepts: .anything)
        _ = DeviceMatcher.matchesAddress(sender, of: MediaDevice(routes: [route]))
    }

    /// Text shown on a terminal: what DisplayText lets through.
    static let text = FuzzTarget(name: "text", summary: "names and lines shown on a terminal (DisplayText, NetworkNumber)") { data in
        let text = String(decoding: data, as: UTF8.self)
        for cleaned in [DisplayText.clean(text), DisplayText.line(text)] {
            require(!cleaned.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "a control character got through")
        }
        require(DisplayText.clean(text).unicodeScalars.count <= DisplayText.nameLimit + 1, "a name over the limit")
        _ = NetworkNumber.clock(text)
        _ = NetworkNumber.double(text, in: 0...100)
        _ = NetworkNumber.int(text, in: 0...8192)
    }

    /// Bytes from a Cast receiver's connection: frames (length, protobuf-c's CastMessage), then their JSON.
    static let cast = FuzzTarget(name: "cast", summary: "Cast v2 frames (CastFrameDecoder, protobuf-c) and their JSON statuses") { data in
        var decoder = CastFrameDecoder()
        // In two reads, cut where the first byte says, as a connection may deliver it.
        let cut = data.isEmpty ? 0 : Int(data[data.startIndex]) % (data.count + 1)
        decoder.append(data.prefix(cut))
        decoder.append(data.dropFirst(cut))
        while let message = try? decoder.next() {
            if !message.isBinary, let frame = try? CastFrame.encode(message) {
                let again = frame.dropFirst(4).withUnsafeBytes { try? CastFrame.decode($0) }
                require(again == message, "a message changed on its way out and in: \(message)")
            }
            _ = CastStatuses.receiver(message.payload)
            _ = CastStatuses.media(message.payload)
        }
    }

    /// What a document or an app hands over and route passes on to a device: a file's first bytes named as subtitles
    /// (SubtitleFile), and any text written into XML for a device (xmlEscape), which must then parse as that text.
    /// A playlist from the web (the first byte chooses m3u, pls or xspf): its entries, each naming something.
    static let playlist = FuzzTarget(name: "playlist", summary: "playlists from the web: M3U, PLS, XSPF (PlaylistFile.parse)") { data in
        guard let kind = data.first else { return }
        let items = (try? PlaylistFile.parse(Data(data.dropFirst()), kind: ["m3u", "pls", "xspf"][Int(kind) % 3], name: "fuzz")) ?? []
        for item in items {
            require(!item.location.isEmpty, "an entry that names nothing")
            require(item.duration.map { $0.isFinite } ?? true, "a duration that is not a number")
        }
    }

    /// What yt-dlp says of a page (its JSON, which the page's author shapes): the entries route plays, none of whose
    /// pictures or formats names anything but the web.
    static let webPage = FuzzTarget(name: "webpage", summary: "yt-dlp's JSON for a page (WebPage.entries): formats and pictures") { data in
        for entry in (try? WebPage.entries(page: "https://example.net/page", json: data)) ?? [] {
            if let artwork = entry.artwork {
                guard case .web(let url) = artwork, WebAddress.isWebURL(url) else { return require(false, "a page's picture that is not on the web: \(artwork)") }
            }
            require(!entry.formats.isEmpty && entry.formats.allSatisfy { MediaInfo.isRemote($0.url) }, "a format that is not a URL: \(entry.formats)")
        }
    }

    /// A URI a web document names (a segment, a redirect): whether it is this machine, read without a resolver, and
    /// what a web document may make route fetch. A loopback literal is always this machine.
    static let thisMachine = FuzzTarget(name: "thismachine", summary: "URIs from the web: this machine or not (WebAddress, Asker)") { data in
        let text = String(decoding: data, as: UTF8.self)
        let here = WebAddress.thisMachine(text, resolving: false)
        let refusal = Asker.web("https://example.net/").refusesURL(text, resolving: false)
        if here != nil { require(refusal != nil, "a URL on this machine that a web document may fetch: \(text.debugDescription)") }
        if let host = URLComponents(string: text)?.host, host == "127.0.0.1" || host == "localhost", WebAddress.isWebURL(text) {
            require(here != nil, "loopback not taken for this machine: \(text.debugDescription)")
        }
    }

    static let deviceText = FuzzTarget(name: "devicetext", summary: "subtitles' first bytes (SubtitleFile) and titles written into XML (xmlEscape)") { data in
        if SubtitleFile.isSubtitles(data) { require(!data.contains(0), "a file with a NUL byte passed as subtitles") }
        let text = String(decoding: data, as: UTF8.self)
        let document = Data("<t>\(xmlEscape(text))</t>".utf8)
        let node: XMLNode
        do { node = try XMLNode.parse(document, limits: .document) } catch {
            return require(document.count > XMLLimits.document.maxBytes || text.utf8.count > XMLLimits.document.maxText,
                           "escaped text is not XML (\(error)): \(text.debugDescription)")
        }
        require(node.name == "t" && node.children.isEmpty, "escaped text made markup: \(text.debugDescription)")
    }
}
