// XML: a bounded element tree for the XML that reaches route from the network (UPnP descriptions, SCPDs, SOAP
// replies, GENA bodies, LastChange; XSPF playlists from the web), and escaping for the documents route writes.
// Nothing here recurses in proportion to the input: depth, element count, text and input size are capped.
// Documents are read with libxml2's streaming reader (the one choke point for libxml2 is `build`).

import CLibXML2
import Foundation

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

    /// Parses a document as it came off the wire, in the encoding its declaration (or byte order mark)
    /// names: UTF-8 when it names none, and bytes that are not UTF-8 then read as ISO-8859-1, as old
    /// devices write them. The parser is handed UTF-8 only. (Foundation's XMLParser, used before, traps
    /// on a processing instruction without data or an element name that is not UTF-8: the `description`
    /// fuzz target found both at once.)
    package static func parse(_ data: Data, limits: XMLLimits) throws(XMLProblem) -> XMLNode {
        guard data.count <= limits.maxBytes else { throw .tooLarge(limits.maxBytes) }
        guard let utf8 = Self.utf8Document(data) else { throw .malformed }
        return try build(utf8, limits: limits)
    }

    /// The document as UTF-8 with no encoding declared; nil when it cannot be decoded.
    static func utf8Document(_ data: Data) -> Data? {
        var bytes = data
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        let text: String?
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            text = String(data: bytes, encoding: .utf16)
        } else {
            switch declaredEncoding(bytes) {
            case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1":
                text = String(data: bytes, encoding: .isoLatin1)
            case "windows-1252", "cp1252":
                text = String(data: bytes, encoding: .windowsCP1252)
            case "us-ascii", "ascii":
                text = String(data: bytes, encoding: .ascii) ?? String(data: bytes, encoding: .isoLatin1)
            case "utf-16", "utf16":
                text = String(data: bytes, encoding: .utf16)
            default:
                text = String(data: bytes, encoding: .utf8) ?? String(data: bytes, encoding: .isoLatin1)
            }
        }
        guard var decoded = text else { return nil }
        // The declaration named how the bytes were encoded; they are UTF-8 now.
        if decoded.hasPrefix("<?xml"), let end = decoded.range(of: "?>") {
            decoded.replaceSubrange(decoded.startIndex..<end.upperBound, with: "<?xml version=\"1.0\"?>")
        }
        return Data(decoded.utf8)
    }

    /// The lower-cased encoding named in the XML declaration, if any.
    private static func declaredEncoding(_ data: Data) -> String? {
        let head = String(decoding: data.prefix(200), as: UTF8.self)
        guard head.hasPrefix("<?xml"), let end = head.range(of: "?>") else { return nil }
        let declaration = head[..<end.lowerBound]
        guard let key = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[key.upperBound...].drop { $0 == " " || $0 == "=" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix { $0 != quote }).lowercased()
    }

    /// Parses text that has already been decoded (a LastChange value).
    package static func parse(_ text: String, limits: XMLLimits) throws(XMLProblem) -> XMLNode {
        try parse(Data(text.utf8), limits: limits)
    }

    /// Reads UTF-8 `data` with libxml2's streaming reader into a tree, an explicit stack of open elements
    /// and no recursion; the network is never used, entities are not substituted, and nothing is printed.
    private static func build(_ data: Data, limits: XMLLimits) throws(XMLProblem) -> XMLNode {
        xmlInitParser()
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue)
        // The reader reads the bytes in place for as long as it lives: a copy that lives as long (a pointer from
        // Data.withUnsafeBytes is valid only inside it, and a small Data's bytes are a temporary copy on the stack).
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 1)
        defer { bytes.deallocate() }
        data.copyBytes(to: bytes)
        guard let reader = xmlReaderForMemory(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(data.count), nil, "UTF-8", options) else {
            throw .malformed
        }
        defer { xmlFreeTextReader(reader) }
        var open: [XMLNode] = []
        var root: XMLNode?
        var elements = 0
        func close() {
            guard let done = open.popLast() else { return }
            if open.isEmpty { root = root ?? done } else { open[open.count - 1].children.append(done) }
        }
        while true {
            let step = xmlTextReaderRead(reader)
            if step == 0 { break }
            guard step == 1 else { throw .malformed }
            switch xmlTextReaderNodeType(reader) {
            case Int32(XML_READER_TYPE_ELEMENT.rawValue):
                elements += 1
                guard open.count < limits.maxDepth else { throw .tooDeep(limits.maxDepth) }
                guard elements <= limits.maxElements else { throw .tooManyElements(limits.maxElements) }
                var node = XMLNode(name: Self.text(xmlTextReaderConstLocalName(reader)) ?? "")
                while node.attributes.count < 64, xmlTextReaderMoveToNextAttribute(reader) == 1 {
                    if let name = Self.text(xmlTextReaderConstName(reader)) {
                        node.attributes[name] = Self.text(xmlTextReaderConstValue(reader)) ?? ""
                    }
                }
                xmlTextReaderMoveToElement(reader)
                let empty = xmlTextReaderIsEmptyElement(reader) == 1
                open.append(node)
                if empty { close() }
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                close()
            case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue),
                 Int32(XML_READER_TYPE_WHITESPACE.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
                guard !open.isEmpty, open[open.count - 1].text.utf8.count < limits.maxText,
                      let value = Self.text(xmlTextReaderConstValue(reader)) else { continue }
                open[open.count - 1].text += value
            default:
                continue
            }
        }
        guard open.isEmpty, let root else { throw .malformed }
        return root
    }

    /// A libxml2 string (UTF-8) as Swift text; nil for NULL.
    private static func text(_ value: UnsafePointer<xmlChar>?) -> String? {
        value.map { String(cString: $0) }
    }
}

/// XML escaping for text and attribute values we write; characters XML 1.0 forbids (C0 controls but tab and line
/// breaks, U+FFFE, U+FFFF) and the C1 controls are left out: one of them makes a renderer refuse the whole document.
package func xmlEscape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for character in text {
        if character.unicodeScalars.contains(where: isForbiddenInXML) { continue }
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

/// Whether XML 1.0 forbids `scalar` in a document, or it is a C1 control (which it discourages).
private func isForbiddenInXML(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    return (value < 0x20 && value != 0x09 && value != 0x0A && value != 0x0D) || (0x7F...0x9F).contains(value) || value == 0xFFFE || value == 0xFFFF
}
