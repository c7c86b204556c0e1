// ParsingTests: the UPnP documents route reads and writes — descriptions, protocol info, DIDL-Lite,
// LastChange, SOAP responses — including malformed and hostile ones (deep, wide, huge, Latin-1, pointing at
// other hosts). No network.

import CUPnP
import Foundation
import RouteXML
import RouteCore
import Testing
@testable import UPnPProvider

/// Parses a description the way discovery does: bytes off the wire, then the description reader.
private func parseDescription(_ text: String, location: String) throws -> DeviceDescription {
    try DeviceDescription.parse(try XMLNode.parse(Data(text.utf8), limits: .document), location: location)
}

/// Parses with libupnp's ixml and copies the DOM, as SOAP replies and GENA bodies arrive.
private func ixmlTree(_ text: String) throws -> XMLNode {
    var document: UnsafeMutablePointer<IXML_Document>?
    guard ixmlParseBufferEx(text, &document) == IXML_SUCCESS.rawValue, let document else { throw XMLProblem.malformed }
    defer { ixmlDocument_free(document) }
    return try XMLNode(ixml: document, limits: .message)
}

private let description = """
<?xml version="1.0"?>
<root xmlns="urn:schemas-upnp-org:device-1-0"><specVersion><major>1</major><minor>0</minor></specVersion>
<device><deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType>
<friendlyName>Living Room &amp; Kitchen</friendlyName><manufacturer>Acme</manufacturer><modelName>TV 9000</modelName>
<UDN>uuid:1234</UDN>
<iconList><icon><mimetype>image/png</mimetype><width>64</width><height>64</height><depth>24</depth><url>/icon.png</url></icon></iconList>
<serviceList>
<service><serviceType>urn:schemas-upnp-org:service:AVTransport:1</serviceType><serviceId>urn:upnp-org:serviceId:AVTransport</serviceId>
<SCPDURL>/avt.xml</SCPDURL><controlURL>/ctl/avt</controlURL><eventSubURL>/evt/avt</eventSubURL></service>
<service><serviceType>urn:schemas-upnp-org:service:RenderingControl:1</serviceType><serviceId>urn:upnp-org:serviceId:RenderingControl</serviceId>
<SCPDURL>rc.xml</SCPDURL><controlURL>ctl/rc</controlURL><eventSubURL>evt/rc</eventSubURL></service>
</serviceList></device></root>
"""

@Suite struct DescriptionTests {
    @Test func parsesNameServicesAndAbsoluteURLs() throws {
        let parsed = try parseDescription(description, location: "http://10.0.0.5:8080/desc/root.xml")
        #expect(parsed.friendlyName == "Living Room & Kitchen")
        #expect(parsed.udn == "uuid:1234")
        #expect(parsed.modelName == "TV 9000")
        #expect(parsed.service("AVTransport")?.controlURL == "http://10.0.0.5:8080/ctl/avt")
        #expect(parsed.service("RenderingControl")?.controlURL == "http://10.0.0.5:8080/desc/ctl/rc")
        #expect(parsed.icons.first?.url == "http://10.0.0.5:8080/icon.png")
        #expect(parsed.service("ConnectionManager") == nil)
    }

    @Test func urlBaseOnTheSameHostWinsOverTheLocation() throws {
        let withBase = description.replacingOccurrences(of: "<specVersion>", with: "<URLBase>http://10.0.0.5:9000/</URLBase><specVersion>")
        let parsed = try parseDescription(withBase, location: "http://10.0.0.5:8080/root.xml")
        #expect(parsed.service("AVTransport")?.eventURL == "http://10.0.0.5:9000/evt/avt")
    }

    /// A description must not make route send requests to another machine or to this one's own services.
    @Test(arguments: ["http://127.0.0.1:6379/", "http://10.0.0.6/ctl", "file:///etc/passwd", "https://10.0.0.5/x", "http://localhost:8080/x"])
    func serviceURLsOnAnotherHostAreRefused(url: String) {
        let hostile = description.replacingOccurrences(of: "<controlURL>/ctl/avt</controlURL>", with: "<controlURL>\(url)</controlURL>")
        #expect(throws: DeviceDescription.Problem.self) { try parseDescription(hostile, location: "http://10.0.0.5:8080/root.xml") }
        let viaBase = description.replacingOccurrences(of: "<specVersion>", with: "<URLBase>\(url)</URLBase><specVersion>")
        #expect(throws: DeviceDescription.Problem.self) { try parseDescription(viaBase, location: "http://10.0.0.5:8080/root.xml") }
    }

    @Test func malformedXMLIsAClearError() {
        #expect(throws: XMLProblem.malformed) { try XMLNode.parse(Data(description.prefix(200).utf8), limits: .document) }
        #expect(throws: XMLProblem.malformed) { try XMLNode.parse(Data("<root><device><friendlyName>x".utf8), limits: .document) }
        #expect(throws: XMLProblem.malformed) { try XMLNode.parse(Data(), limits: .document) }
    }

    @Test func aDescriptionWithoutUDNIsRejected() {
        let noUDN = description.replacingOccurrences(of: "<UDN>uuid:1234</UDN>", with: "")
        #expect(throws: DeviceDescription.Problem.self) { try parseDescription(noUDN, location: "http://x/") }
    }

    @Test func namesFromTheNetworkLoseControlCharactersAndAreCapped() throws {
        let fake = description.replacingOccurrences(of: "Living Room &amp; Kitchen",
                                                     with: "TV&#10;  2) This computer[2J\u{9B}31m\u{202E}" + String(repeating: "x", count: 5000))
        let parsed = try parseDescription(fake, location: "http://10.0.0.5:8080/root.xml")
        #expect(parsed.friendlyName.hasPrefix("TV 2) This computer[2J31mxxx"))
        #expect(!parsed.friendlyName.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x202E })
        #expect(parsed.friendlyName.count <= DisplayText.nameLimit + 1)
    }

    @Test func theRouteTakesWhatProtocolInfoSaysAndAssertsOnlyIdentity() throws {
        let parsed = try parseDescription(description, location: "http://10.0.0.5:8080/root.xml")
        let route = parsed.route(sink: "http-get:*:audio/mpeg:*,http-get:*:video/mp4:DLNA.ORG_PN=AVC,rtsp-rtp-udp:*:video/h264:*",
                                 mac: "aa:bb:cc:dd:ee:ff")
        #expect(route.id == "upnp:uuid:1234" && route.nativeID == "uuid:1234")
        #expect(route.provider == "upnp" && route.protocolName == "upnp")
        #expect(route.kind == .tv)
        #expect(route.capabilities == [.audio, .video])
        #expect(route.accepts == .mimeTypes(["audio/mpeg", "video/mp4"]))
        #expect(route.deduplicationIDs == ["uuid:1234", "mac:aa:bb:cc:dd:ee:ff"], "a UDN and a MAC, never an address")
        #expect(route.volumeControl == .absolute)
        #expect(route.accepts.accepts(mimeType: "audio/mp3"), "audio/mp3 is an alias of audio/mpeg")
    }

    /// A Sonos-style root holding a MediaServer and a MediaRenderer: each device has its own UDN and its own
    /// services, so the renderer's ConnectionManager is its own, not the server's.
    @Test func embeddedDevicesAreWalkedEachWithItsOwnServices() throws {
        let text = """
        <root><device><deviceType>urn:schemas-upnp-org:device:ZonePlayer:1</deviceType><friendlyName>Kitchen</friendlyName>
        <UDN>uuid:root</UDN><serviceList><service><serviceType>urn:schemas-upnp-org:service:DeviceProperties:1</serviceType>
        <controlURL>/props</controlURL><eventSubURL>/props/e</eventSubURL><SCPDURL>/props.xml</SCPDURL></service></serviceList>
        <deviceList>
        <device><deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType><friendlyName>Kitchen Media</friendlyName>
        <UDN>uuid:server</UDN><serviceList><service><serviceType>urn:schemas-upnp-org:service:ConnectionManager:1</serviceType>
        <controlURL>/ms/cm</controlURL><eventSubURL>/ms/cm/e</eventSubURL><SCPDURL>/ms/cm.xml</SCPDURL></service></serviceList></device>
        <device><deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType><friendlyName>Kitchen Speaker</friendlyName>
        <UDN>uuid:renderer</UDN><serviceList>
        <service><serviceType>urn:schemas-upnp-org:service:AVTransport:1</serviceType><controlURL>/mr/avt</controlURL><eventSubURL>/mr/avt/e</eventSubURL><SCPDURL>/mr/avt.xml</SCPDURL></service>
        <service><serviceType>urn:schemas-upnp-org:service:ConnectionManager:1</serviceType><controlURL>/mr/cm</controlURL><eventSubURL>/mr/cm/e</eventSubURL><SCPDURL>/mr/cm.xml</SCPDURL></service>
        </serviceList></device>
        </deviceList></device></root>
        """
        let all = try DeviceDescription.parseAll(try XMLNode.parse(Data(text.utf8), limits: .document), location: "http://10.0.0.7:1400/xml/desc.xml")
        #expect(all.map(\.udn) == ["uuid:root", "uuid:server", "uuid:renderer"])
        let renderer = try #require(all.first { $0.isRenderer })
        #expect(renderer.udn == "uuid:renderer" && renderer.friendlyName == "Kitchen Speaker")
        #expect(renderer.service("ConnectionManager")?.controlURL == "http://10.0.0.7:1400/mr/cm")
        #expect(renderer.service("AVTransport")?.controlURL == "http://10.0.0.7:1400/mr/avt")
        #expect(all[0].service("AVTransport") == nil, "the root's services are its own")
    }
}

@Suite struct ProtocolInfoTests {
    @Test func mimeTypesAreDistinctBareAndHTTPOnly() {
        let sink = "http-get:*:audio/L16;rate=44100;channels=2:DLNA.ORG_PN=LPCM, http-get:*:audio/L16;rate=48000:*,"
            + "http-get:*:AUDIO/MPEG:*,internal:*:audio/x-foo:*,garbage"
        #expect(ProtocolInfo.mimeTypes(sink) == ["audio/l16", "audio/mpeg"])
        #expect(ProtocolInfo.mimeTypes("") == [])
    }
}

@Suite struct DIDLTests {
    @Test func metadataEscapesAndDescribesTheResource() throws {
        let item = MediaItem(url: "http://10.0.0.1:8000/m/ab/media.mp3?a=1&b=2", mimeType: "audio/mpeg",
                             title: "Rock & <Roll>", artist: "A \"B\"", album: "C'D", duration: 65.5, size: 1234,
                             artworkURL: "http://10.0.0.1:8000/m/cd/media.jpeg", kind: .audio)
        let didl = DIDLLite.metadata(for: item)
        #expect(didl.contains("Rock &amp; &lt;Roll&gt;"))
        #expect(didl.contains("?a=1&amp;b=2"))
        #expect(didl.contains("duration=\"0:01:05.500\""))
        #expect(didl.contains("size=\"1234\""))
        #expect(didl.contains("object.item.audioItem.musicTrack"))
        #expect(didl.contains("<upnp:albumArtURI>http://10.0.0.1:8000/m/cd/media.jpeg</upnp:albumArtURI>"))
        #expect(didl.contains("http-get:*:audio/mpeg:DLNA.ORG_OP=01;DLNA.ORG_CI=0"))
        let root = try XMLNode.parse(Data(didl.utf8), limits: .message)
        #expect(root.all("title").first?.text == "Rock & <Roll>")
    }

    @Test func aConvertedStreamIsMarkedAsSuchAndVideoIsAVideoItem() {
        var item = MediaItem(url: "http://h/m/x/media.mp2t", mimeType: "video/mp2t", title: "T", kind: .video)
        item.isConverted = true
        let didl = DIDLLite.metadata(for: item)
        #expect(didl.contains("DLNA.ORG_OP=10;DLNA.ORG_CI=1"))
        #expect(didl.contains("object.item.videoItem"))
        #expect(!didl.contains("size="))
    }

    /// What the DIDL-Lite says of a live PCM stream is what route's media server says of it (MediaServerTests): the
    /// LPCM profile, no seeking, converted.
    @Test func liveUncompressedAudioNamesItsProfileAsTheServerDoes() {
        var item = MediaItem(url: "http://h/m/x/live.l16", mimeType: "audio/L16;rate=44100;channels=2", title: "Desktop", kind: .audio)
        item.isConverted = true
        item.isLive = true
        let didl = DIDLLite.metadata(for: item)
        #expect(didl.contains("http-get:*:audio/L16;rate=44100;channels=2:DLNA.ORG_PN=LPCM;DLNA.ORG_OP=00;DLNA.ORG_CI=1;"), "\(didl)")
    }

    @Test func timesParseAndFormat() {
        #expect(NetworkNumber.clock("1:02:03") == 3723)
        #expect(NetworkNumber.clock("0:00:05.250") == 5.25)
        #expect(NetworkNumber.clock("NOT_IMPLEMENTED") == nil)
        #expect(NetworkNumber.clock("") == nil)
        #expect(DIDLLite.durationString(3723.25) == "1:02:03.250")
    }
}

@Suite struct EventTests {
    @Test func lastChangeReadsInstanceZeroAndTheMasterChannel() {
        let text = """
        <Event xmlns="urn:schemas-upnp-org:metadata-1-0/RCS/"><InstanceID val="0">
        <Volume val="42" channel="Master"/><Volume val="7" channel="LF"/><TransportState val="PAUSED_PLAYBACK"/>
        </InstanceID><InstanceID val="1"><TransportState val="PLAYING"/></InstanceID></Event>
        """
        let values = LastChange.parse(text)
        #expect(values["Volume"] == "42")
        #expect(values["TransportState"] == "PAUSED_PLAYBACK")
        #expect(LastChange.parse("<Event><InstanceID val=\"0\"><Volume val=").isEmpty)
    }

    @Test func propertySetsAndSOAPResponsesFromLibupnpGiveTheirValues() throws {
        let notify = "<e:propertyset xmlns:e=\"urn:schemas-upnp-org:event-1-0\"><e:property><LastChange>&lt;Event/&gt;</LastChange></e:property></e:propertyset>"
        #expect(PropertySet.variables(try ixmlTree(notify))["LastChange"] == "<Event/>")
        let envelope = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><u:GetVolumeResponse xmlns:u=\"urn:x\">"
            + "<CurrentVolume>17</CurrentVolume><Other a=\"1\"/></u:GetVolumeResponse></s:Body></s:Envelope>"
        let arguments = SOAPResponse.arguments(try ixmlTree(envelope))
        #expect(arguments == ["CurrentVolume": "17", "Other": ""])
        #expect(SOAPResponse.arguments(try ixmlTree("<u:PlayResponse xmlns:u=\"urn:x\"></u:PlayResponse>")).isEmpty)
        let nested = try ixmlTree("<a x=\"1\"><b>one</b><c><d>two</d></c><b>three</b></a>")
        #expect(nested.attributes == ["x": "1"])
        #expect(nested.all("b").map(\.text) == ["one", "three"])
        #expect(nested.child("c")?.value("d") == "two")
    }

    @Test func upnpErrorsReadAsSentences() {
        #expect(UPnPError(code: 716, context: "SetAVTransportURI").description.contains("could not fetch the media"))
        #expect(UPnPError(code: 701, context: "Pause").description.contains("transition not available"))
        #expect(UPnPError(code: 799, context: "Play").description.contains("799"))
    }
}

/// XML from the network is read without recursion in proportion to its size, and within limits.
@Suite struct HostileXMLTests {
    @Test func aDocumentNestedAHundredThousandDeepIsRefusedNotACrash() {
        let deep = String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000)
        #expect(throws: XMLProblem.tooDeep(XMLLimits.document.maxDepth)) { try XMLNode.parse(Data(deep.utf8), limits: .document) }
        // The same inside a LastChange value, and as a DOM from libupnp.
        #expect(LastChange.parse(deep).isEmpty)
        let ixmlDeep = String(repeating: "<a>", count: 2_000) + String(repeating: "</a>", count: 2_000)
        #expect(throws: XMLProblem.tooDeep(XMLLimits.message.maxDepth)) { try ixmlTree(ixmlDeep) }
    }

    @Test func aVeryWideDocumentIsRefused() {
        let wide = "<r>" + String(repeating: "<a/>", count: 50_000) + "</r>"
        #expect(throws: XMLProblem.tooManyElements(XMLLimits.document.maxElements)) { try XMLNode.parse(Data(wide.utf8), limits: .document) }
    }

    @Test func aHugeDocumentIsNotRead() {
        let huge = Data(count: XMLLimits.document.maxBytes + 1)
        #expect(throws: XMLProblem.tooLarge(XMLLimits.document.maxBytes)) { try XMLNode.parse(huge, limits: .document) }
    }

    @Test func entitiesAreNotExpandedAndExternalOnesNotFetched() throws {
        let laughs = "<!DOCTYPE r [<!ENTITY a \"xxxxxxxxxx\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
            + "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">]><r>&d;&d;&d;&d;</r>"
        let parsed = try? XMLNode.parse(Data(laughs.utf8), limits: .document)
        #expect((parsed?.text.count ?? 0) <= XMLLimits.document.maxText)
        let external = try XMLNode.parse(Data("<!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><r>&x;</r>".utf8), limits: .document)
        #expect(!external.text.contains("root:"))
    }

    /// Both crashed Foundation's XMLParser (a null pointer, a trap): the `description` fuzz target found them.
    @Test func processingInstructionsWithoutDataAndNamesThatAreNotUTF8AreNoCrash() throws {
        for text in ["<?xm?>\n<r/>", "<?xml?><r/>", "<r><?x?></r>", "<r><?pi data?><n>1</n></r>"] {
            _ = try? XMLNode.parse(Data(text.utf8), limits: .document)
        }
        var latin = Data("<r><servic".utf8)
        latin.append(0xCA)
        latin.append(contentsOf: Array("eList/></r>".utf8))
        #expect(try XMLNode.parse(latin, limits: .document).children.first?.name == "servicÊeList")
        #expect(try XMLNode.parse(Data("<r><?pi data?><n>1</n></r>".utf8), limits: .document).value("n") == "1")
    }

    @Test func latin1DescriptionsReadAsLatin1() throws {
        var declared = Data("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r><n>caf".utf8)
        declared.append(0xE9)
        declared.append(contentsOf: Array("</n></r>".utf8))
        #expect(try XMLNode.parse(declared, limits: .document).value("n") == "café")
        var undeclared = Data("<r><n>caf".utf8)
        undeclared.append(0xE9)
        undeclared.append(contentsOf: Array("</n></r>".utf8))
        #expect(try XMLNode.parse(undeclared, limits: .document).value("n") == "café")
        #expect(try XMLNode.parse(Data("<r><n>café</n></r>".utf8), limits: .document).value("n") == "café")
    }

    @Test func anSSDPReplyMustPointAtItsOwnSender() {
        #expect(SSDPReply.isOwnLocation("http://10.77.0.2:49494/description.xml", sender: "10.77.0.2"))
        #expect(!SSDPReply.isOwnLocation("http://127.0.0.1:6379/", sender: "10.77.0.2"))
        #expect(!SSDPReply.isOwnLocation("http://10.77.0.3/d.xml", sender: "10.77.0.2"))
        #expect(!SSDPReply.isOwnLocation("file:///etc/passwd", sender: "10.77.0.2"))
        #expect(!SSDPReply.isOwnLocation("http://10.77.0.2/d.xml", sender: ""))
    }
}

/// Numbers from devices never reach arithmetic that traps.
@Suite struct NetworkNumberTests {
    @Test(arguments: ["inf", "-inf", "nan", "1e300", "0x10", "1:60:00", "99999999999:00:00", "-5", "1.2.3", "1:2.5:3", "", "+", ":", "12:"])
    func absurdTimesAreRefused(text: String) {
        #expect(NetworkNumber.clock(text) == nil)
    }

    @Test func sensibleTimesAreRead() {
        #expect(NetworkNumber.clock("90") == 90)
        #expect(NetworkNumber.clock("+1:30") == 90)
        #expect(NetworkNumber.clock("0:01:02.5") == 62.5)
        #expect(NetworkNumber.double("42", in: 0...100) == 42)
        #expect(NetworkNumber.double("inf", in: 0...100) == nil)
        #expect(NetworkNumber.double("101", in: 0...100) == nil)
        #expect(NetworkNumber.int("9999999999999999999999", in: 0...100) == nil)
    }
}
