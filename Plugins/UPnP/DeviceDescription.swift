// DeviceDescription: a renderer's description document (name, model, UDN, services, icons) and what its
// ConnectionManager says it accepts, turned into a MediaDevice.

import DLNA
import Foundation
import RouteXML
import RouteCore

/// One service of a device, with absolute URLs.
package struct ServiceInfo: Sendable, Hashable {
    package var serviceType: String
    package var serviceID: String
    package var controlURL: String
    package var eventURL: String
    package var scpdURL: String
}

/// One icon of a device.
package struct IconInfo: Sendable, Hashable {
    package var mimeType: String
    package var width: Int
    package var height: Int
    package var url: String
}

/// The parts of a UPnP device description route uses.
package struct DeviceDescription: Sendable, Hashable {
    package var location: String
    package var udn: String
    package var deviceType: String
    package var friendlyName: String
    package var manufacturer: String
    package var modelName: String
    package var services: [ServiceInfo]
    package var icons: [IconInfo]

    /// The first service whose type starts with `urn:schemas-upnp-org:service:NAME:`.
    package func service(_ name: String) -> ServiceInfo? {
        services.first { $0.serviceType.hasPrefix("urn:schemas-upnp-org:service:\(name):") }
    }

    /// Errors a person can act on when a description is unusable.
    package enum Problem: Error, CustomStringConvertible {
        case missing(String, String)
        case foreignURL(String, what: String, url: String)

        package var description: String {
            switch self {
            case .missing(let location, let what): return "the device description at \(location) has no \(what)"
            case .foreignURL(let location, let what, let url):
                return "the device description at \(location) sends its \(what) to another host (\(url)); route only talks to the device's own host"
            }
        }
    }

    /// Reads the root device of a description fetched from `location` (see `parseAll`).
    package static func parse(_ root: XMLNode, location: String) throws(Problem) -> DeviceDescription {
        try parseAll(root, location: location)[0]
    }

    /// Reads every device of a description fetched from `location`: the root device first, then the ones
    /// embedded in it (a Sonos-style root holding a MediaRenderer and a MediaServer), each with its own
    /// UDN, services and icons — the tree is walked with a stack, not recursion. Relative URLs resolve
    /// against URLBase or the location. Every service URL must be on the description's own host: a
    /// description must not make route send requests to another machine, or to this one's loopback.
    package static func parseAll(_ root: XMLNode, location: String) throws(Problem) -> [DeviceDescription] {
        guard let top = root.child("device") else { throw .missing(location, "<device> element") }
        let locationURL = URL(string: location)
        let base = root.value("URLBase").flatMap { URL(string: $0) } ?? locationURL
        func absolute(_ path: String?, what: String, required: Bool) throws(Problem) -> String {
            guard let path, !path.isEmpty else { return "" }
            guard let url = URL(string: path, relativeTo: base)?.absoluteURL, url.scheme?.lowercased() == "http",
                  let host = url.host?.lowercased(), host == locationURL?.host?.lowercased() else {
                if required { throw .foreignURL(location, what: what, url: DisplayText.clean(path)) }
                return ""
            }
            return url.absoluteString
        }
        func describe(_ device: XMLNode) throws(Problem) -> DeviceDescription? {
            guard let udn = device.value("UDN"), !udn.isEmpty else { return nil }
            var services: [ServiceInfo] = []
            for s in device.child("serviceList")?.children ?? [] where s.name == "service" {
                services.append(ServiceInfo(
                    serviceType: s.value("serviceType") ?? "", serviceID: s.value("serviceId") ?? "",
                    controlURL: try absolute(s.value("controlURL"), what: "control requests", required: true),
                    eventURL: try absolute(s.value("eventSubURL"), what: "event subscriptions", required: true),
                    scpdURL: try absolute(s.value("SCPDURL"), what: "service description requests", required: true)))
            }
            var icons: [IconInfo] = []
            for i in device.child("iconList")?.children ?? [] where i.name == "icon" {
                let url = try absolute(i.value("url"), what: "icon", required: false)
                guard !url.isEmpty else { continue }
                icons.append(IconInfo(mimeType: i.value("mimetype") ?? "", width: NetworkNumber.int(i.value("width"), in: 0...8192) ?? 0,
                                      height: NetworkNumber.int(i.value("height"), in: 0...8192) ?? 0, url: url))
            }
            let name = device.value("friendlyName").map { DisplayText.clean($0) }.flatMap { $0.isEmpty ? nil : $0 }
                ?? device.value("modelName").map { DisplayText.clean($0) } ?? DisplayText.clean(udn)
            return DeviceDescription(location: location, udn: DisplayText.clean(udn), deviceType: device.value("deviceType") ?? "",
                                     friendlyName: name, manufacturer: DisplayText.clean(device.value("manufacturer") ?? ""),
                                     modelName: DisplayText.clean(device.value("modelName") ?? ""), services: services, icons: icons)
        }
        guard let first = try describe(top) else { throw .missing(location, "UDN") }
        var found = [first]
        var pending = top.child("deviceList")?.children.filter { $0.name == "device" } ?? []
        while !pending.isEmpty {
            let device = pending.removeFirst()
            if let described = try describe(device) { found.append(described) }
            pending.append(contentsOf: device.child("deviceList")?.children.filter { $0.name == "device" } ?? [])
        }
        return found
    }

    /// Whether this device is a media renderer (any version).
    package var isRenderer: Bool { deviceType.contains(":device:MediaRenderer:") }

    /// The route to this renderer; `sink` is GetProtocolInfo's Sink (may be empty if unknown), `mac` the
    /// hardware address the neighbour table gives for its host, when known.
    package func route(sink: String, mac: String?) -> MediaRoute {
        let types = ProtocolInfo.mimeTypes(sink)
        var capabilities: MediaDevice.Capabilities = []
        if types.contains(where: { $0.hasPrefix("audio/") }) { capabilities.insert(.audio) }
        if types.contains(where: { $0.hasPrefix("video/") }) { capabilities.insert(.video) }
        if types.contains(where: { $0.hasPrefix("image/") }) { capabilities.insert(.image) }
        if types.isEmpty { capabilities = .audio }
        let kind: MediaDevice.Kind = capabilities.contains(.video) ? .tv : .speaker
        // Identity only: an address is shared by every renderer on one host, so it never merges devices.
        var ids: Set<String> = [udn]
        if let mac { ids.insert("mac:" + mac) }
        return MediaRoute(provider: "upnp", nativeID: udn, name: friendlyName, kind: kind, address: location,
                          capabilities: capabilities, volumeControl: service("RenderingControl") == nil ? .none : .absolute,
                          accepts: types.isEmpty ? .mimeTypes(["audio/mpeg"]) : .mimeTypes(types), deduplicationIDs: ids)
    }
}

/// ConnectionManager protocol info: `http-get:*:audio/mpeg:DLNA.ORG_PN=MP3,http-get:*:audio/L16;rate=44100:*`.
package enum ProtocolInfo {
    /// The distinct MIME types offered over http-get, in order.
    package static func mimeTypes(_ sink: String) -> [String] {
        var seen = Set<String>()
        var result: [String] = []
        for entry in sink.split(separator: ",") {
            let fields = entry.trimmingCharacters(in: .whitespaces).split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, fields[0] == "http-get" else { continue }
            let mime = fields[2].split(separator: ";").first.map { String($0).lowercased() } ?? ""
            if !mime.isEmpty, seen.insert(mime).inserted { result.append(mime) }
        }
        return result
    }

    /// The protocolInfo to put in DIDL-Lite `res` for an item: its MIME type and how route serves it.
    static func forResource(_ item: MediaItem) -> String {
        "http-get:*:\(item.mimeType):\(DLNAContentFeatures.of(mimeType: item.mimeType, converted: item.isConverted, live: item.isLive))"
    }
}

/// DIDL-Lite metadata for SetAVTransportURI.
package enum DIDLLite {
    /// An `item` with title, artist, album, class, a `res` with protocolInfo, duration and size, and cover art.
    package static func metadata(for item: MediaItem) -> String {
        let upnpClass: String
        if item.kind.contains(.video) { upnpClass = "object.item.videoItem" }
        else if item.kind.contains(.audio) { upnpClass = "object.item.audioItem.musicTrack" }
        else { upnpClass = "object.item.imageItem.photo" }
        var res = "<res protocolInfo=\"\(xmlEscape(ProtocolInfo.forResource(item)))\""
        if let duration = item.duration { res += " duration=\"\(durationString(duration))\"" }
        if let size = item.size { res += " size=\"\(size)\"" }
        res += ">\(xmlEscape(item.url))</res>"
        var body = "<dc:title>\(xmlEscape(item.title ?? "route"))</dc:title><upnp:class>\(upnpClass)</upnp:class>"
        if let artist = item.artist { body += "<upnp:artist>\(xmlEscape(artist))</upnp:artist><dc:creator>\(xmlEscape(artist))</dc:creator>" }
        if let album = item.album { body += "<upnp:album>\(xmlEscape(album))</upnp:album>" }
        if let art = item.artworkURL { body += "<upnp:albumArtURI>\(xmlEscape(art))</upnp:albumArtURI>" }
        return "<DIDL-Lite xmlns=\"urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\""
            + " xmlns:upnp=\"urn:schemas-upnp-org:metadata-1-0/upnp/\" xmlns:dlna=\"urn:schemas-dlna-org:metadata-1-0/\">"
            + "<item id=\"1\" parentID=\"0\" restricted=\"1\">\(body)\(res)</item></DIDL-Lite>"
    }

    /// `H:MM:SS.mmm`, as UPnP durations are written.
    static func durationString(_ seconds: Double) -> String {
        let total = max(0, seconds)
        let whole = Int(total)
        return String(format: "%d:%02d:%02d.%03d", whole / 3600, (whole % 3600) / 60, whole % 60,
                      Int(((total - Double(whole)) * 1000).rounded()) % 1000)
    }
}
