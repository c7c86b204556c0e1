// UPnPDocuments: the UPnP documents read with RouteXML's bounded tree — SOAP replies, GENA property sets, and
// AVTransport's and RenderingControl's LastChange.

import RouteXML

/// A SOAP action response: `<u:ActionResponse><Arg>value</Arg>…`.
package enum SOAPResponse {
    /// The response's arguments by name (libupnp hands over the response element itself, or the whole envelope).
    package static func arguments(_ root: XMLNode) -> [String: String] {
        let response = root.name.hasSuffix("Response") ? root : root.all("Body").first?.children.first ?? root
        var result: [String: String] = [:]
        for child in response.children { result[child.name] = child.text }
        return result
    }
}

/// A GENA NOTIFY body: `<e:propertyset><e:property><Name>value</Name>…`.
package enum PropertySet {
    package static func variables(_ root: XMLNode) -> [String: String] {
        var result: [String: String] = [:]
        for property in root.all("property") {
            for variable in property.children { result[variable.name] = variable.text }
        }
        return result
    }
}

/// The AV services' LastChange variable: `<Event><InstanceID val="0"><TransportState val="PLAYING"/>…`.
package enum LastChange {
    /// The state variables of instance 0, by name (`TransportState` → `PLAYING`; `Volume` of channel Master);
    /// empty when the value is not a readable event.
    package static func parse(_ text: String) -> [String: String] {
        guard let root = try? XMLNode.parse(text, limits: .message) else { return [:] }
        let instances = root.all("InstanceID")
        guard let instance = instances.first(where: { $0.attributes["val"] == "0" }) ?? instances.first else { return [:] }
        var result: [String: String] = [:]
        for variable in instance.children {
            if let channel = variable.attributes["channel"], channel != "Master" { continue }
            if let value = variable.attributes["val"] { result[variable.name] = value }
        }
        return result
    }
}
