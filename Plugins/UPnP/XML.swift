// XML: a bounded element tree for the XML that reaches route from the network (descriptions, SCPDs, SOAP
// replies, GENA bodies, LastChange), the UPnP documents read with it, and escaping for the documents we write.
// Nothing here recurses in proportion to the input: depth, element count, text and input size are capped.

import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// How much XML from the network route takes before it gives up on a document.
package struct XMLLimits: Sendable {
    /// Bytes of input.
    package var maxBytes: Int
    /// Nesting of elements (a UPnP description with embedded devices nests about 4 per device level).
    package var maxDepth: Int
    /// Elements in the whole document.
    package var maxElements: Int
    /// Characters of text in one element.
    package var maxText: Int

    /// Descriptions and SCPDs: large media centres describe dozens of services in well under 1 MiB.
    package static let document = XMLLimits(maxBytes: 1 << 20, maxDepth: 48, maxElements: 20_000, maxText: 256 * 1024)
    /// SOAP replies, GENA property sets and LastChange values (libupnp caps their bodies at 64 KiB).
    package static let message = XMLLimits(maxBytes: 256 * 1024, maxDepth: 32, maxElements: 8_000, maxText: 128 * 1024)
}

/// Why a document from the network was not read.
package enum XMLProblem: Error, Equatable, CustomStringConvertible {
    case tooLarge(Int)
    case tooDeep(Int)
    case tooManyElements(Int)
    case malformed

    package var description: String {
        switch self {
        case .tooLarge(let limit): return "larger than \(limit / 1024) KiB"
        case .tooDeep(let limit): return "nested more than \(limit) elements deep"
        case .tooManyElements(let limit): return "more than \(limit) elements"
        case .malformed: return "not well-formed XML"
        }
    }
}

/// One XML element: local name (namespace prefix dropped), attributes, text, children.
///
/// Trees come only from `parse` or from a libupnp DOM (`UPnPStack`), both within `XMLLimits`, so their
/// depth — and the recursion of copying and freeing them — is bounded.
package struct XMLNode: Sendable {
    package var name: String
    package var attributes: [String: String]
    package var text: String
    package var children: [XMLNode]

    package init(name: String, attributes: [String: String] = [:], text: String = "", children: [XMLNode] = []) {
        self.name = name
        self.attributes = attributes
        self.text = text
        self.children = children
    }

    /// The first child with this local name.
    package func child(_ name: String) -> XMLNode? { children.first { $0.name == name } }

    /// Every descendant with this local name, in document order (an explicit stack, no recursion).
    package func all(_ name: String) -> [XMLNode] {
        var found: [XMLNode] = []
        var stack: [XMLNode] = children.reversed()
        while let node = stack.popLast() {
            if node.name == name { found.append(node) }
            stack.append(contentsOf: node.children.reversed())
        }
        return found
    }

    /// The trimmed text of the first child with this name.
    package func value(_ name: String) -> String? {
        child(name).map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Parses a document as it came off the wire, in the encoding its declaration names (UTF-8 when it
    /// names none; bytes that are not UTF-8 are then read as ISO-8859-1, as old devices write them).
    package static func parse(_ data: Data, limits: XMLLimits) throws(XMLProblem) -> XMLNode {
        guard data.count <= limits.maxBytes else { throw .tooLarge(limits.maxBytes) }
        do {
            return try build(data, limits: limits)
        } catch .malformed where String(data: data, encoding: .utf8) == nil && !declaresEncoding(data) {
            guard let text = String(data: data, encoding: .isoLatin1) else { throw .malformed }
            return try build(Data(text.utf8), limits: limits)
        }
    }

    /// Parses text that has already been decoded (a LastChange value).
    package static func parse(_ text: String, limits: XMLLimits) throws(XMLProblem) -> XMLNode {
        try parse(Data(text.utf8), limits: limits)
    }

    private static func build(_ data: Data, limits: XMLLimits) throws(XMLProblem) -> XMLNode {
        let builder = TreeBuilder(limits: limits)
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let parsed = parser.parse()
        if let problem = builder.problem { throw problem }
        guard parsed, let root = builder.root else { throw .malformed }
        return root
    }

    private static func declaresEncoding(_ data: Data) -> Bool {
        let head = String(decoding: data.prefix(200), as: UTF8.self)
        return head.hasPrefix("<?xml") && head.prefix(while: { $0 != ">" }).contains("encoding")
    }
}

/// Builds the tree from parser events with an explicit stack, and stops the parser at the first limit.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    let limits: XMLLimits
    var stack: [XMLNode] = []
    var root: XMLNode?
    var elements = 0
    var problem: XMLProblem?

    init(limits: XMLLimits) { self.limits = limits }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        elements += 1
        if stack.count >= limits.maxDepth { stop(parser, .tooDeep(limits.maxDepth)); return }
        if elements > limits.maxElements { stop(parser, .tooManyElements(limits.maxElements)); return }
        let local = name.split(separator: ":").last.map(String.init) ?? name
        stack.append(XMLNode(name: local, attributes: attributes))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty, stack[stack.count - 1].text.utf8.count < limits.maxText else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty { root = node } else { stack[stack.count - 1].children.append(node) }
    }

    private func stop(_ parser: XMLParser, _ reason: XMLProblem) {
        problem = reason
        parser.abortParsing()
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
