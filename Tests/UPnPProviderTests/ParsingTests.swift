// ParsingTests: the UPnP documents route reads and writes — descriptions, protocol info, DIDL-Lite,
// LastChange, SOAP responses — including malformed ones. No network.

import RouteCore
import Testing
@testable import UPnPProvider

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
        let parsed = try DeviceDescription.parse(description, location: "http://10.0.0.5:8080/desc/root.xml")
        #expect(parsed.friendlyName == "Living Room & Kitchen")
        #expect(parsed.udn == "uuid:1234")
        #expect(parsed.modelName == "TV 9000")
        #expect(parsed.service("AVTransport")?.controlURL == "http://10.0.0.5:8080/ctl/avt")
        #expect(parsed.service("RenderingControl")?.controlURL == "http://10.0.0.5:8080/desc/ctl/rc")
        #expect(parsed.icons.first?.url == "http://10.0.0.5:8080/icon.png")
        #expect(parsed.service("ConnectionManager") == nil)
    }

    @Test func urlBaseWinsOverTheLocation() throws {
        let withBase = description.replacingOccurrences(of: "<specVersion>", with: "<URLBase>http://10.0.0.9:9000/</URLBase><specVersion>")
        let parsed = try DeviceDescription.parse(withBase, location: "http://10.0.0.5:8080/root.xml")
        #expect(parsed.service("AVTransport")?.eventURL == "http://10.0.0.9:9000/evt/avt")
    }

    @Test func malformedXMLIsAClearError() {
        #expect(throws: DeviceDescription.Problem.self) {
            try DeviceDescription.parse(String(description.prefix(200)), location: "http://x/d.xml")
        }
        do {
            _ = try DeviceDescription.parse("<root><device><friendlyName>x", location: "http://x/d.xml")
            Issue.record("a truncated description was accepted")
        } catch {
            #expect(error.description.contains("http://x/d.xml"))
            #expect(error.description.contains("not well-formed"))
        }
    }

    @Test func aDescriptionWithoutUDNIsRejected() {
        let noUDN = description.replacingOccurrences(of: "<UDN>uuid:1234</UDN>", with: "")
        #expect(throws: DeviceDescription.Problem.self) { try DeviceDescription.parse(noUDN, location: "http://x/") }
    }

    @Test func theDeviceTakesWhatProtocolInfoSays() throws {
        let parsed = try DeviceDescription.parse(description, location: "http://10.0.0.5:8080/root.xml")
        let device = parsed.mediaDevice(sink: "http-get:*:audio/mpeg:*,http-get:*:video/mp4:DLNA.ORG_PN=AVC,rtsp-rtp-udp:*:video/h264:*")
        #expect(device.id == "uuid:1234")
        #expect(device.protocolName == "upnp")
        #expect(device.kind == .tv)
        #expect(device.capabilities == [.audio, .video])
        #expect(device.accepts == .mimeTypes(["audio/mpeg", "video/mp4"]))
        #expect(device.deduplicationIDs == ["uuid:1234", "ip:10.0.0.5"])
        #expect(device.volumeControl == .absolute)
        #expect(device.accepts.accepts(mimeType: "audio/mp3"), "audio/mp3 is an alias of audio/mpeg")
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
        let root = try #require(XMLNode.parse(didl), "DIDL-Lite must be well-formed XML")
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

    @Test func timesParseAndFormat() {
        #expect(DIDLLite.seconds("1:02:03") == 3723)
        #expect(DIDLLite.seconds("0:00:05.250") == 5.25)
        #expect(DIDLLite.seconds("NOT_IMPLEMENTED") == nil)
        #expect(DIDLLite.seconds("") == nil)
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

    @Test func propertySetsAndSOAPResponsesGiveTheirValues() {
        let notify = "<e:propertyset xmlns:e=\"urn:schemas-upnp-org:event-1-0\"><e:property><LastChange>&lt;Event/&gt;</LastChange></e:property></e:propertyset>"
        #expect(PropertySet.parse(notify)["LastChange"] == "<Event/>")
        let envelope = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><u:GetVolumeResponse xmlns:u=\"urn:x\">"
            + "<CurrentVolume>17</CurrentVolume></u:GetVolumeResponse></s:Body></s:Envelope>"
        #expect(SOAPResponse.arguments(envelope)["CurrentVolume"] == "17")
        #expect(SOAPResponse.arguments("<u:PlayResponse xmlns:u=\"urn:x\"></u:PlayResponse>").isEmpty)
        #expect(SOAPResponse.arguments("<s:Envelope><s:Body><u:Play").isEmpty)
    }

    @Test func upnpErrorsReadAsSentences() {
        #expect(UPnPError(code: 716, context: "SetAVTransportURI").description.contains("could not fetch the media"))
        #expect(UPnPError(code: 701, context: "Pause").description.contains("transition not available"))
        #expect(UPnPError(code: 799, context: "Play").description.contains("799"))
    }
}
