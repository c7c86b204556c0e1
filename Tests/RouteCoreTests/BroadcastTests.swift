// BroadcastTests: fan-out of values to AsyncStream subscribers — latest value first, finish, late subscribers.

import Foundation
import RouteCore
import RouteTestSupport
import Synchronization
import Testing

@Suite struct BroadcastTests {
    @Test func lateSubscriberGetsTheLatestValueFirst() async {
        let broadcast = Broadcast<Int>()
        broadcast.send(1)
        broadcast.send(2)
        let stream = broadcast.subscribe()
        broadcast.send(3)
        broadcast.finish()
        #expect(await allValues(of: stream, within: 5) == [2, 3])
        #expect(broadcast.latest == 3)
    }

    @Test func initialValueGoesToEarlySubscribers() async {
        let broadcast = Broadcast<String>(initial: "idle")
        #expect(broadcast.latest == "idle")
        let stream = broadcast.subscribe()
        broadcast.finish()
        #expect(await allValues(of: stream, within: 5) == ["idle"])
    }

    @Test func withoutAnyValueASubscriberStartsWithTheNextOne() async {
        let broadcast = Broadcast<Int>()
        #expect(broadcast.latest == nil)
        let stream = broadcast.subscribe()
        broadcast.send(7)
        broadcast.finish()
        #expect(await allValues(of: stream, within: 5) == [7])
    }

    @Test func everySubscriberGetsEveryValueInOrder() async {
        let broadcast = Broadcast<Int>()
        let a = broadcast.subscribe(), b = broadcast.subscribe(), c = broadcast.subscribe()
        for value in 1...20 { broadcast.send(value) }
        broadcast.finish()
        for stream in [a, b, c] {
            #expect(await allValues(of: stream, within: 5) == Array(1...20))
        }
    }

    @Test func finishEndsAWaitingSubscriber() async {
        let broadcast = Broadcast<Int>()
        let stream = broadcast.subscribe()
        let reader = Task { await allValues(of: stream, within: 10) }
        broadcast.send(1)
        broadcast.finish()
        #expect(await reader.value == [1], "the stream did not end after finish()")
    }

    @Test func subscribeAfterFinishGetsAnEndedStream() async {
        let broadcast = Broadcast<Int>()
        broadcast.send(5)
        broadcast.finish()
        let values = await allValues(of: broadcast.subscribe(), within: 5)
        #expect(values != nil, "a stream subscribed after finish() never ended")
        #expect((values ?? []).allSatisfy { $0 == 5 })
    }

    @Test func sendAfterFinishIsIgnoredAndFinishIsIdempotent() async {
        let broadcast = Broadcast<Int>()
        let stream = broadcast.subscribe()
        broadcast.send(1)
        broadcast.finish()
        broadcast.send(2)
        broadcast.finish()
        #expect(broadcast.latest == 1)
        #expect(await allValues(of: stream, within: 5) == [1])
    }

    @Test func aCancelledSubscriberDoesNotStopTheOthers() async {
        let broadcast = Broadcast<Int>()
        let dropped = broadcast.subscribe()
        let kept = broadcast.subscribe()
        let reader = Task { for await _ in dropped {} }
        reader.cancel()
        await reader.value
        broadcast.send(1)
        broadcast.send(2)
        broadcast.finish()
        #expect(await allValues(of: kept, within: 5) == [1, 2])
    }

    @Test func sendFromManyThreadsAtOnceDeliversEveryValue() async {
        let broadcast = Broadcast<Int>()
        let stream = broadcast.subscribe()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask { for i in 0..<10 { broadcast.send(worker * 10 + i) } }
            }
        }
        broadcast.finish()
        // 40 values fit the 64-value buffer, so none may be dropped.
        #expect(await allValues(of: stream, within: 5).map { Set($0) } == Set(0..<40))
    }

    @Test func everySubscriberSeesTheOrderLatestTook() async {
        let broadcast = Broadcast<Int>()
        let first = broadcast.subscribe(), second = broadcast.subscribe()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask { for i in 0..<10 { broadcast.send(worker * 10 + i) } }
            }
        }
        let last = broadcast.latest
        broadcast.finish()
        let a = await allValues(of: first, within: 5), b = await allValues(of: second, within: 5)
        #expect(a == b, "two subscribers saw two orders")
        #expect(a?.last == last, "the last value delivered is not `latest`")
    }

    /// Cancelling a subscriber while another thread sends used to deadlock: the sender held the lock while
    /// waking the subscriber's task, and the cancelled task's termination waited for that lock.
    @Test func cancellingSubscribersWhileSendingNeverDeadlocks() async {
        let broadcast = Broadcast<Int>()
        let stop = Mutex(false)
        // A sender on a thread of its own that never pauses, as a C library callback thread does.
        let sender = Thread {
            var i = 0
            while !stop.withLock({ $0 }) { broadcast.send(i); i += 1 }
        }
        sender.start()
        defer { stop.withLock { $0 = true } }
        let done = await withDeadline(30) { () -> Bool? in
            for _ in 0..<2000 {
                let stream = broadcast.subscribe()
                let reader = Task.detached { for await _ in stream {} }
                try? await Task.sleep(for: .microseconds(50))
                reader.cancel()
                await reader.value
            }
            return true
        }
        #expect(done == true, "cancelling a subscriber while another thread sends deadlocked")
    }
}
