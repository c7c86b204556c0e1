// SSDPService: SSDP as a shared service over libupnp — one search loop for every subscriber's targets, and
// every reply and announcement handed to the subscribers whose targets it answers.

import Foundation
import RouteCore
import Synchronization

/// SSDP for the whole process (libupnp runs once): subscribers name search targets; the service searches
/// for all of them now and every `searchInterval` (by default `researchInterval`), and reports replies, ssdp:alive
/// and ssdp:byebye (heard all the time).
public final class SSDPService: SSDPDiscovery {
    /// How often every subscribed target is searched for again, by default.
    public static let researchInterval: Duration = .seconds(10)
    private let interval = Mutex<Duration>(SSDPService.researchInterval)

    private let log: RouteLog
    private struct Subscriber {
        let targets: [String]
        let continuation: AsyncStream<SSDPEvent>.Continuation
    }
    private let subscribers = Mutex<(next: Int, all: [Int: Subscriber])>((0, [:]))
    /// The loop forwarding libupnp's events and searching, and how to ask it for a search now.
    private struct Loop {
        let task: Task<Void, Never>
        let searches: AsyncStream<[String]>.Continuation
    }
    private let loop = Mutex<Loop?>(nil)

    /// A service; libupnp starts with the first subscription (`ROUTE_UPNP_INTERFACE` picks the interface).
    public init(log: RouteLog = .discard) {
        self.log = log
    }

    /// Search replies and announcements for `targets`, until the stream is dropped. When libupnp cannot
    /// start, the stream says nothing and ends; `start()` tells why.
    public func subscribe(targets: [String]) -> AsyncStream<SSDPEvent> {
        let (stream, continuation) = AsyncStream<SSDPEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        guard (try? start()) != nil else {
            continuation.finish()
            return stream
        }
        let id = subscribers.withLock { state -> Int in
            defer { state.next += 1 }
            state.all[state.next] = Subscriber(targets: targets, continuation: continuation)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        loop.withLock { _ = $0?.searches.yield(targets) }
        return stream
    }

    /// Starts libupnp (once) and the loop that forwards its events and searches again; throws libupnp's
    /// reason when it cannot start.
    @discardableResult
    public func start() throws -> UPnPStackHandle {
        let stack = try UPnPStack.shared(log: log)
        loop.withLock { loop in
            guard loop == nil else { return }
            let events = stack.events.subscribe()
            let (searches, requests) = AsyncStream<[String]>.makeStream(bufferingPolicy: .unbounded)
            let task = Task { [weak self] in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { for await event in events { self?.deliver(event) } }
                    // Searches run one after another, beside the delivery of their replies.
                    group.addTask {
                        for await targets in searches {
                            for target in targets { try? await stack.search(target) }
                        }
                    }
                    // Looks once a second whether the interval has passed (it may change meanwhile).
                    group.addTask {
                        var searched = ContinuousClock.now
                        while !Task.isCancelled {
                            try? await Task.sleep(for: .seconds(1))
                            guard let self, !Task.isCancelled else { return }
                            guard ContinuousClock.now - searched >= self.searchInterval else { continue }
                            searched = .now
                            requests.yield(self.allTargets())
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
            loop = Loop(task: task, searches: requests)
        }
        return UPnPStackHandle(stack: stack)
    }

    /// How often the subscribed targets are searched for again: short while someone wants a fresh list (a person
    /// at a device picker), long for a service that only keeps one (announcements arrive without a search).
    public var searchInterval: Duration { interval.withLock { $0 } }

    /// Sets `searchInterval`; one shorter than before searches now.
    public func setSearchInterval(_ newInterval: Duration) {
        let shorter = interval.withLock { interval in
            defer { interval = newInterval }
            return newInterval < interval
        }
        if shorter { searchNow() }
    }

    /// Searches for every subscribed target now.
    public func searchNow() {
        let targets = allTargets()
        loop.withLock { _ = $0?.searches.yield(targets) }
    }

    private func unsubscribe(_ id: Int) {
        let empty = subscribers.withLock { state -> Bool in
            state.all[id] = nil
            return state.all.isEmpty
        }
        guard empty else { return }
        loop.withLock { loop in
            loop?.searches.finish()
            loop?.task.cancel()
            loop = nil
        }
    }

    private func allTargets() -> [String] {
        subscribers.withLock { state in Array(Set(state.all.values.flatMap(\.targets))).sorted() }
    }

    /// Hands a libupnp event to every subscriber whose targets it answers.
    private func deliver(_ event: UPnPEvent) {
        let translated: SSDPEvent
        switch event {
        case .alive(let udn, let deviceType, let location, let maxAge, let announced, let sender):
            translated = SSDPEvent(kind: .alive, udn: udn, target: deviceType, location: location, maxAge: maxAge,
                                   sender: sender, announced: announced)
        case .byebye(let udn, let deviceType):
            translated = SSDPEvent(kind: .byebye, udn: udn, target: deviceType)
        case .event, .subscriptionLost:
            return
        }
        let targets = subscribers.withLock { Array($0.all.values) }
        for subscriber in targets where subscriber.targets.contains(where: { Self.answers(translated, $0) }) {
            subscriber.continuation.yield(translated)
        }
    }

    /// Whether an event answers a subscription to `target`: `ssdp:all`; the same type at the same or a
    /// later version (a MediaRenderer:2 announces itself as :2, and answers a search for :1); and any
    /// byebye, which says a whole device is leaving.
    static func answers(_ event: SSDPEvent, _ target: String) -> Bool {
        if target == "ssdp:all" || event.kind == .byebye || event.target == target { return true }
        guard let colon = target.lastIndex(of: ":"), let wanted = Int(target[target.index(after: colon)...]) else { return false }
        let type = target[...colon]
        guard event.target.hasPrefix(type), let version = Int(event.target.dropFirst(type.count)) else { return false }
        return version >= wanted
    }
}

/// Proof that libupnp runs (what `SSDPService.start()` returns); opaque to callers outside this module.
public struct UPnPStackHandle: Sendable {
    let stack: UPnPStack
}
