// UPnPStack: the one choke point for libupnp — start-up, the client callback, SOAP actions, document fetches and
// GENA subscriptions — turning its error codes into Swift errors a person can act on.

import CUPnP
import Foundation
import RouteXML
import RouteCore
import RouteGLib
import Synchronization

/// An error from libupnp or from a device's SOAP fault.
public struct UPnPError: Error, CustomStringConvertible, Equatable {
    /// libupnp's negative UPNP_E_* code, or the device's positive UPnP error code (701, 716, …).
    public let code: Int32
    /// What we were doing.
    public let context: String
    /// What the HTTP client or the system said beyond the code (libsoup's message), when it said more.
    public var detail: String? = nil

    public var description: String {
        "\(context): \(reason)"
    }

    /// The sentence for this error: the code's, then the detail.
    public var reason: String {
        Self.explain(code) + (detail.map { " (\($0))" } ?? "")
    }

    /// Whether the failure means the device could not be reached at all (vs. refused the command).
    public var isUnreachable: Bool {
        [UPNP_E_SOCKET_CONNECT, UPNP_E_SOCKET_ERROR, UPNP_E_SOCKET_READ, UPNP_E_SOCKET_WRITE, -1].contains(code)
    }

    /// A sentence for a UPnP AV error code or a libupnp code.
    static func explain(_ code: Int32) -> String {
        switch code {
        case 401: return "the device does not know this action (401)"
        case 402: return "the device rejected the arguments (402)"
        case 501: return "the device failed to carry out the action (501)"
        case 701: return "the device cannot do that in its current state (701: transition not available)"
        case 702: return "there is nothing loaded to play (702: no contents)"
        case 704: return "the device cannot play this format (704)"
        case 705: return "the device's transport is locked (705)"
        case 710: return "the device does not support this seek mode (710)"
        case 711: return "the seek target is out of range (711)"
        case 712: return "the device does not support this play mode (712)"
        case 714: return "the device does not support this media type (714: illegal MIME type)"
        case 715: return "the content is busy (715)"
        case 716: return "the device could not fetch the media (716: resource not found); is the media server reachable from it?"
        case 718: return "invalid instance id (718)"
        case 0..<1000 where code > 0: return "the device answered with UPnP error \(code)"
        case UPNP_E_SOCKET_CONNECT: return "the connection was refused or timed out; is the device still on?"
        case UPNP_E_SOCKET_READ, UPNP_E_SOCKET_WRITE, UPNP_E_SOCKET_ERROR: return "the connection broke off"
        case UPNP_E_BAD_RESPONSE, UPNP_E_BAD_HTTPMSG: return "the device's answer was not valid UPnP"
        case -1: return "no answer in time"
        default: return String(cString: UpnpGetErrorMessage(code)) + " (\(code))"
        }
    }
}

/// Events from libupnp's client callback, already copied out of C memory.
enum UPnPEvent: Sendable {
    /// A search reply (`announced` false) or an ssdp:alive (true): `udn` (uuid:…), description
    /// `location`, `maxAge` seconds, and the address the packet came from (`sender`, empty if unknown).
    case alive(udn: String, deviceType: String, location: String, maxAge: Int, announced: Bool, sender: String)
    /// An ssdp:byebye, for `deviceType` (empty for the root or the UDN itself).
    case byebye(udn: String, deviceType: String)
    /// A GENA NOTIFY: the subscription id and the changed variables (name → value).
    case event(sid: String, variables: [String: String])
    /// A subscription libupnp could not renew, or that expired.
    case subscriptionLost(sid: String)
}

/// A device's document that route cannot use: `problem` completes "the document at URL …".
struct DocumentProblem: Error, CustomStringConvertible, Equatable {
    let url: String
    let problem: String
    /// The HTTP status, when the device answered with one other than 200.
    var status: Int?

    var description: String { "the document at \(url) \(problem)" }
}

extension XMLNode {
    /// Copies a libupnp DOM into a bounded tree, walking it with its parent links instead of recursion,
    /// and within `limits` (libupnp has already parsed it; printing it to parse it again would cost twice).
    package init(ixml document: UnsafeMutablePointer<IXML_Document>, limits: XMLLimits) throws(XMLProblem) {
        let top = UnsafeMutableRawPointer(document).assumingMemoryBound(to: IXML_Node.self)
        var open: [XMLNode] = []
        var root: XMLNode?
        var elements = 0
        var current = ixmlNode_getFirstChild(top)
        func close() {
            guard let done = open.popLast() else { return }
            if open.isEmpty { root = root ?? done } else { open[open.count - 1].children.append(done) }
        }
        while let node = current {
            let type = UInt32(ixmlNode_getNodeType(node))
            if type == eELEMENT_NODE.rawValue {
                elements += 1
                guard open.count < limits.maxDepth else { throw .tooDeep(limits.maxDepth) }
                guard elements <= limits.maxElements else { throw .tooManyElements(limits.maxElements) }
                open.append(XMLNode(name: Self.localName(node), attributes: Self.attributes(node)))
                if let child = ixmlNode_getFirstChild(node) { current = child; continue }
                close()
            } else if type == eTEXT_NODE.rawValue || type == eCDATA_SECTION_NODE.rawValue, !open.isEmpty,
                      open[open.count - 1].text.utf8.count < limits.maxText, let value = ixmlNode_getNodeValue(node) {
                open[open.count - 1].text += String(cString: value)
            }
            // On to the next sibling, closing every element whose children are done on the way up.
            var at: UnsafeMutablePointer<IXML_Node>? = node
            current = nil
            while let here = at {
                if let sibling = ixmlNode_getNextSibling(here) { current = sibling; break }
                guard let parent = ixmlNode_getParentNode(here), parent != top else { break }
                close()
                at = parent
            }
        }
        while !open.isEmpty { close() }
        guard let root else { throw .malformed }
        self = root
    }

    private static func localName(_ node: UnsafeMutablePointer<IXML_Node>) -> String {
        if let local = ixmlNode_getLocalName(node) { return String(cString: local) }
        let name = ixmlNode_getNodeName(node).map { String(cString: $0) } ?? ""
        return name.split(separator: ":").last.map(String.init) ?? name
    }

    private static func attributes(_ node: UnsafeMutablePointer<IXML_Node>) -> [String: String] {
        var result: [String: String] = [:]
        var attribute = node.pointee.firstAttr
        while let current = attribute, result.count < 64 {
            if let name = ixmlNode_getNodeName(current) {
                result[String(cString: name)] = ixmlNode_getNodeValue(current).map { String(cString: $0) } ?? ""
            }
            attribute = current.pointee.nextSibling
        }
        return result
    }
}

/// libupnp, started once per process, with one client handle.
///
/// Threads: libupnp calls `callback` on its own thread pool; events are fanned out through
/// `events` (a Broadcast, thread-safe). Blocking calls (`sendAction`, `subscribe`) run
/// off the cooperative pool on their own threads.
final class UPnPStack: Sendable {
    /// The process-wide stack, started on first use; `log` (the first caller's) hears its traces.
    /// A start that failed is tried again on the next call (the interface may have come up since).
    static func shared(log: RouteLog) throws -> UPnPStack {
        try startup.withLock { stack in
            if let stack { return stack }
            Self.logs.withLock { $0 = log }
            let started = try UPnPStack()
            stack = started
            return started
        }
    }
    private static let startup = Mutex<UPnPStack?>(nil)
    private static let logs = Mutex(RouteLog.discard)
    /// Where traces go (`ROUTE_DEBUG=upnp`).
    static var log: RouteLog { logs.withLock { $0 } }

    let handle: UpnpClient_Handle
    /// Every discovery and event callback, as Swift values.
    var events: Broadcast<UPnPEvent> { Self.callbackEvents }
    private static let callbackEvents = Broadcast<UPnPEvent>()
    /// The local IPv4 address libupnp serves GENA callbacks on.
    let localAddress: String

    private init() throws {
        let interface = ProcessInfo.processInfo.environment["ROUTE_UPNP_INTERFACE"]
        // Port 0 means libupnp's fixed default (49152), which another route may hold: on a bind
        // failure try other ports. Binding also fails briefly right after an interface comes up.
        var code = UpnpInit2(interface, 0)
        var tries = 0
        while code == UPNP_E_SOCKET_BIND || code == UPNP_E_INIT_FAILED, tries < 10 {
            UpnpFinish()
            Thread.sleep(forTimeInterval: 0.05 * Double(tries))
            code = UpnpInit2(interface, UInt16.random(in: 49153...60999))
            tries += 1
        }
        guard code == UPNP_E_SUCCESS else {
            throw UPnPError(code: code, context: "UPnP could not start" + (interface.map { " on interface \($0)" } ?? "")
                + " (is a network interface up? ROUTE_UPNP_INTERFACE chooses one)")
        }
        // SOAP replies and GENA bodies: real ones are a few KiB. libupnp's XML parser is quadratic in the
        // number of nodes and frees its trees recursively, so it must never see a large document.
        UpnpSetMaxContentLength(Self.maxMessageBytes)
        localAddress = UpnpGetServerIpAddress().map { String(cString: $0) } ?? ""
        Self.log(.debug, "started on \(localAddress):\(UpnpGetServerPort())")
        var handle: UpnpClient_Handle = -1
        // No cookie: libupnp passes search results the cookie of UpnpSearchAsync, other events
        // the one registered here, so the callback reaches the process-wide `callbackEvents`.
        code = UpnpRegisterClient({ type, event, _ in
            guard let event else { return 0 }
            let translated = UPnPStack.translate(type, event)
            UPnPStack.log(.debug, "callback \(type.rawValue): \(translated.map { "\($0)" } ?? "ignored")")
            if let translated { UPnPStack.callbackEvents.send(translated) }
            return 0
        }, nil, &handle)
        guard code == UPNP_E_SUCCESS else {
            UpnpFinish()
            throw UPnPError(code: code, context: "UPnP could not register as a control point")
        }
        self.handle = handle
    }


    /// Copies one callback's data out of libupnp's memory (libupnp thread).
    private static func translate(_ type: Upnp_EventType, _ event: UnsafeRawPointer) -> UPnPEvent? {
        switch type {
        case UPNP_DISCOVERY_SEARCH_RESULT, UPNP_DISCOVERY_ADVERTISEMENT_ALIVE:
            let d = OpaquePointer(event)
            guard UpnpDiscovery_get_ErrCode(d) == UPNP_E_SUCCESS else { return nil }
            let udn = SSDPReply.udn(fromUSN: String(cString: UpnpDiscovery_get_DeviceID_cstr(d)))
            return .alive(udn: udn, deviceType: String(cString: UpnpDiscovery_get_DeviceType_cstr(d)),
                          location: String(cString: UpnpDiscovery_get_Location_cstr(d)),
                          maxAge: Int(UpnpDiscovery_get_Expires(d)), announced: type == UPNP_DISCOVERY_ADVERTISEMENT_ALIVE,
                          sender: SocketAddress(copying: UpnpDiscovery_get_DestAddr(d))?.numericHost ?? "")
        case UPNP_DISCOVERY_ADVERTISEMENT_BYEBYE:
            let d = OpaquePointer(event)
            return .byebye(udn: SSDPReply.udn(fromUSN: String(cString: UpnpDiscovery_get_DeviceID_cstr(d))),
                           deviceType: String(cString: UpnpDiscovery_get_DeviceType_cstr(d)))
        case UPNP_EVENT_RECEIVED:
            let e = OpaquePointer(event)
            let sid = String(cString: UpnpEvent_get_SID_cstr(e))
            var variables: [String: String] = [:]
            if let doc = UpnpEvent_get_ChangedVariables(e), let tree = try? XMLNode(ixml: doc, limits: .message) {
                variables = PropertySet.variables(tree)
            }
            return .event(sid: sid, variables: variables)
        case UPNP_EVENT_AUTORENEWAL_FAILED, UPNP_EVENT_SUBSCRIPTION_EXPIRED:
            let s = OpaquePointer(event)
            return .subscriptionLost(sid: String(cString: UpnpEventSubscribe_get_SID_cstr(s)))
        default:
            return nil
        }
    }

    /// Sends an SSDP M-SEARCH for `target`; replies arrive as `.alive` events within `mx` seconds.
    func search(_ target: String, mx: Int32 = 1) async throws {
        let handle = self.handle
        // UpnpSearchAsync sends its copies of the M-SEARCH with pauses between them (about 200 ms in all):
        // off the pool, while the replies to the first copy are already being handled.
        let code = try await Self.offThread("M-SEARCH \(target)", timeout: .seconds(5)) { UpnpSearchAsync(handle, mx, target, nil) }
        Self.log(.debug, "M-SEARCH \(target): \(code)")
        guard code == UPNP_E_SUCCESS else { throw UPnPError(code: code, context: "SSDP search failed") }
    }

    /// Calls a SOAP action and returns the response's arguments.
    /// - Throws: `UPnPError` with the device's UPnP error code, or libupnp's when unreachable.
    func sendAction(_ action: String, service: ServiceInfo, arguments: KeyValuePairs<String, String>,
                    timeout: Duration = callTimeout) async throws -> [String: String] {
        let handle = self.handle
        let pairs = arguments.map { ($0.key, $0.value) }
        return try await Self.offThread(action, timeout: timeout) {
            var document: UnsafeMutablePointer<IXML_Document>?
            // A nil argument name makes just the action element (for actions without arguments).
            UpnpAddToAction(&document, action, service.serviceType, nil, nil)
            for (name, value) in pairs {
                UpnpAddToAction(&document, action, service.serviceType, name, value)
            }
            defer { if let document { ixmlDocument_free(document) } }
            var response: UnsafeMutablePointer<IXML_Document>?
            let code = UpnpSendAction(handle, service.controlURL, service.serviceType, nil, document, &response)
            defer { if let response { ixmlDocument_free(response) } }
            UPnPStack.log(.debug, "\(action)(\(pairs.filter { $0.0 != "CurrentURIMetaData" }.map { "\($0.0)=\($0.1)" }.joined(separator: ", "))): \(code)")
            guard code == UPNP_E_SUCCESS else { throw UPnPError(code: code, context: action) }
            guard let response else { return [:] }
            do {
                return SOAPResponse.arguments(try XMLNode(ixml: response, limits: .message))
            } catch {
                throw UPnPError(code: UPNP_E_BAD_RESPONSE, context: action)
            }
        }
    }

    /// Bytes libupnp reads of a SOAP reply or GENA body.
    static let maxMessageBytes = 64 * 1024

    /// Fetches and parses an XML document of the device's (its description or an SCPD), within
    /// `XMLLimits.document`.
    /// - Throws: `UPnPError` (unreachable) when the device does not answer in time or refuses the
    ///   connection; `DocumentProblem` when what it answers is not a usable document.
    func fetchDocument(_ url: String, timeout: Duration = callTimeout) async throws -> XMLNode {
        let response: HTTPResponse
        do {
            response = try await HTTPClient.shared.get(url, limit: XMLLimits.document.maxBytes, timeout: timeout)
        } catch .timedOut, .cancelled {
            throw UPnPError(code: -1, context: "fetching \(url)")
        } catch .failed(_, let reason) {
            throw UPnPError(code: UPNP_E_SOCKET_CONNECT, context: "fetching \(url)", detail: reason)
        } catch .tooLarge(_, let limit) {
            throw DocumentProblem(url: url, problem: "is larger than \(limit / 1024) KiB")
        } catch .invalidURL {
            throw DocumentProblem(url: url, problem: "is not at an http:// URL")
        }
        Self.log(.debug, "GET \(url): \(response.status), \(response.body.count) bytes")
        guard response.status == 200 else { throw DocumentProblem(url: url, problem: "answers HTTP \(response.status)", status: response.status) }
        guard !response.body.isEmpty else { throw DocumentProblem(url: url, problem: "is empty") }
        do {
            return try XMLNode.parse(response.body, limits: .document)
        } catch {
            throw DocumentProblem(url: url, problem: "is \(error)")
        }
    }

    /// Subscribes to a service's events; returns the SID. libupnp renews the subscription itself
    /// before it expires (and reports `.subscriptionLost` when it cannot).
    func subscribe(_ eventURL: String, seconds: Int32 = 300) async throws -> String {
        let handle = self.handle
        return try await Self.offThread("subscribing to \(eventURL)") {
            var timeout = seconds
            var sid = [CChar](repeating: 0, count: 44)
            let code = sid.withUnsafeMutableBufferPointer { buffer in
                UpnpSubscribe(handle, eventURL, &timeout, buffer.baseAddress!)
            }
            guard code == UPNP_E_SUCCESS else { throw UPnPError(code: code, context: "subscribing to \(eventURL)") }
            return String(cBuffer: sid)
        }
    }

    /// Cancels a subscription (best effort: the device may already be gone).
    func unsubscribe(_ sid: String) async {
        let handle = self.handle
        _ = try? await Self.offThread("unsubscribing", timeout: .seconds(2)) {
            var buffer = [CChar](repeating: 0, count: 44)
            for (index, byte) in sid.utf8.prefix(43).enumerated() { buffer[index] = CChar(bitPattern: byte) }
            return UpnpUnSubscribe(handle, buffer)
        }
    }

    /// How long any one libupnp call may take before it counts as unanswered (libupnp's own limit is 30 s).
    static let callTimeout: Duration = .seconds(5)

    /// Threads for libupnp's blocking calls: a SOAP call to a frozen renderer holds one for libupnp's own
    /// 30 s, so there are enough for a few of those, and no more.
    private static let threads = BlockingThreads(name: "route-upnp-call", count: 8)

    /// Runs a blocking libupnp call off the cooperative pool, and gives up after `timeout` (UPnPError
    /// code -1) or when the calling task is cancelled. An abandoned call finishes on its thread later;
    /// its result is dropped.
    static func offThread<T: Sendable>(_ what: String, timeout: Duration = callTimeout,
                                       _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(timeout: timeout, timedOut: { UPnPError(code: -1, context: what) }, body)
    }
}
