// XML: a small element tree over FoundationXML's parser, and the UPnP documents read with it
// (SOAP responses, GENA property sets, LastChange), plus escaping for the documents we write.

import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One XML element: local name (namespace prefix dropped), attributes, text, children.
struct XMLNode: Sendable {
    var name: String
    var attributes: [String: String]
    var text: String
    var children: [XMLNode]

    /// The first child with this local name.
    func child(_ name: String) -> XMLNode? { children.first { $0.name == name } }
    /// Every descendant (depth first) with this local name.
    func all(_ name: String) -> [XMLNode] {
        children.flatMap { ($0.name == name ? [$0] : []) + $0.all(name) }
    }
    /// The trimmed text of the first child with this name.
    func value(_ name: String) -> String? {
        child(name).map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Parses a document; nil when it is not well-formed XML.
    static func parse(_ text: String) -> XMLNode? {
        let builder = TreeBuilder()
        let parser = XMLParser(data: Data(text.utf8))
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else { return nil }
        return root
    }
}

private final class TreeBuilder: NSObject, XMLParserDelegate {
    var stack: [XMLNode] = []
    var root: XMLNode?

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        let local = name.split(separator: ":").last.map(String.init) ?? name
        stack.append(XMLNode(name: local, attributes: attributes, text: "", children: []))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if !stack.isEmpty { stack[stack.count - 1].text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty { root = node } else { stack[stack.count - 1].children.append(node) }
    }
}

/// XML escaping for text and attribute values we write.
func xmlEscape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(character)
        }
    }
    return out
}

/// A SOAP action response: `<u:ActionResponse><Arg>value</Arg>…`.
enum SOAPResponse {
    /// The response's arguments by name; empty when the document is malformed.
    static func arguments(_ text: String) -> [String: String] {
        guard let root = XMLNode.parse(text) else { return [:] }
        // libupnp hands over the response element itself, or the whole envelope.
        let response = root.name.hasSuffix("Response") ? root : root.all("Body").first?.children.first ?? root
        var result: [String: String] = [:]
        for child in response.children { result[child.name] = child.text }
        return result
    }
}

/// A GENA NOTIFY body: `<e:propertyset><e:property><Name>value</Name>…`.
enum PropertySet {
    static func parse(_ text: String) -> [String: String] {
        guard let root = XMLNode.parse(text) else { return [:] }
        var result: [String: String] = [:]
        for property in root.all("property") {
            for variable in property.children { result[variable.name] = variable.text }
        }
        return result
    }
}

/// The AV services' LastChange variable: `<Event><InstanceID val="0"><TransportState val="PLAYING"/>…`.
enum LastChange {
    /// The state variables of instance 0, by name (`TransportState` → `PLAYING`; `Volume` of channel Master).
    static func parse(_ text: String) -> [String: String] {
        guard let root = XMLNode.parse(text) else { return [:] }
        let instance = root.all("InstanceID").first { $0.attributes["val"] == "0" } ?? root.all("InstanceID").first
        guard let instance else { return [:] }
        var result: [String: String] = [:]
        for variable in instance.children {
            if let channel = variable.attributes["channel"], channel != "Master" { continue }
            if let value = variable.attributes["val"] { result[variable.name] = value }
        }
        return result
    }
}
