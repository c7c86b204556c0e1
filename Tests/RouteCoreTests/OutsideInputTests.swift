// OutsideInputTests: what reaches route from outside is checked where it enters — announced addresses that point
// at this machine or at no port, numbers that would trap a formatter — and queues fed by peers wait instead of growing.

import Foundation
import RouteCore
import RouteTestSupport
import Synchronization
import Testing

@Suite struct AnnouncedAddressTests {
    @Test(arguments: [
        ("127.0.0.1", 8009, "loopback"), ("127.8.9.10", 6379, "loopback"), ("::1", 8009, "loopback"),
        ("::ffff:127.0.0.1", 8009, "loopback"), ("0.0.0.0", 8009, "not a host"), ("::", 8009, "not a host"),
        ("224.0.0.251", 5353, "multicast"), ("ff02::fb", 5353, "multicast"), ("255.255.255.255", 8009, "broadcast"),
        ("192.0.2.10", 0, "port 0"), ("192.0.2.10", 65536, "port 65536"), ("192.0.2.10", -1, "port -1"),
        ("tv.local", 8009, "not an IP address"), ("%%::e%%", 8009, "not an IP address"), ("::1%lo", 8009, "not an IP address"),
    ])
    func announcementsThatPointAtThisMachineOrAtNoPortAreRefused(host: String, port: Int, words: String) throws {
        let refusal = try #require(AnnouncedAddress.refusal(host: host, port: port), "\(host):\(port)")
        #expect(refusal.contains(words), "\(refusal)")
    }

    @Test func anyOfThisMachinesOwnAddressesIsRefused() throws {
        // Every address the interfaces here carry, whatever namespace the test runs in.
        let own = try #require(ownIPv4Addresses().first { !$0.hasPrefix("127.") } ?? ownIPv4Addresses().first)
        #expect(AnnouncedAddress.refusal(host: own, port: 8009) != nil, "\(own)")
    }

    @Test func anOrdinaryDeviceAddressIsTaken() {
        #expect(AnnouncedAddress.refusal(host: "192.0.2.10", port: 8009) == nil)
        #expect(AnnouncedAddress.refusal(host: "192.0.2.10", port: 65535) == nil)
        #expect(AnnouncedAddress.refusal(host: "2001:db8::7", port: 1400) == nil)
        #expect(AnnouncedAddress.refusal(host: "169.254.3.4", port: 8009) == nil, "link-local devices are real devices")
    }

    private func ownIPv4Addresses() -> [String] {
        guard let text = try? runTool("/usr/sbin/ip", ["-4", "-o", "addr", "show"], outputs: .output).text else { return [] }
        return text.split(separator: "\n").compactMap { line in
            line.split(separator: " ").drop { $0 != "inet" }.dropFirst().first.map { String($0.split(separator: "/")[0]) }
        }
    }
}

@Suite struct OutsideNumberTests {
    @Test func formattersSaturateInsteadOfTrapping() {
        #expect(formatClock(1e308).hasSuffix(":07"), "saturates at Int.max seconds: \(formatClock(1e308))")
        #expect(formatClock(-1e308) == "0:00" && formatClock(.nan) == "0:00" && formatClock(.infinity) == "0:00")
        #expect(Int(saturating: 1e308) == .max && Int(saturating: -1e308) == .min && Int(saturating: .nan) == 0 && Int(saturating: 41.9) == 41)
    }

    @Test func positionsAndSpeedsAreCheckedWhereTheyEnter() {
        #expect(NetworkNumber.seconds(1e308) == nil && NetworkNumber.seconds(-1) == nil && NetworkNumber.seconds(.nan) == nil)
        #expect(NetworkNumber.seconds(12.5) == 12.5 && NetworkNumber.seconds(NetworkNumber.maxSeconds) == NetworkNumber.maxSeconds)
        #expect(NetworkNumber.value(1e308, in: PlaybackStatus.speeds) == nil && NetworkNumber.value(2, in: PlaybackStatus.speeds) == 2)
    }

    @Test func aStatusIsExtrapolatedToTheMomentItIsRead() {
        var status = PlaybackStatus(state: .playing, position: 10, duration: 30)
        status.timestamp = Date(timeIntervalSinceNow: -4)
        let now = status.at(Date())
        #expect(abs(now.position - 14) < 0.5 && abs(now.timestamp.timeIntervalSinceNow) < 0.5, "\(now.position)")
        status.state = .paused
        #expect(status.at(Date()).position == 10, "a paused position does not move")
    }
}

@Suite struct BackpressureTests {
    @Test func aProducerWaitsForTheConsumerInsteadOfGrowingTheQueue() async throws {
        let (stream, sink) = AsyncStream<Int>.makeStream(bufferingPolicy: .bufferingOldest(4))
        let produced = Mutex(0)
        let producer = Task {
            for value in 0..<1000 {
                guard await sink.yieldWaiting(value) else { return }
                produced.withLock { $0 = value + 1 }
            }
            sink.finish()
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(produced.withLock { $0 } <= 5, "the producer ran ahead of a consumer that reads nothing")
        var received: [Int] = []
        for await value in stream { received.append(value) }
        #expect(received == Array(0..<1000), "nothing dropped, in order")
        await producer.value
    }

    @Test func aBlockedReaderThreadLetsGoWhenTheConsumerLeaves() async throws {
        let (stream, sink) = AsyncThrowingStream<Int, any Error>.makeStream(bufferingPolicy: .bufferingOldest(2))
        let ended = Mutex(false)
        let thread = Thread {
            var value = 0
            while sink.yieldBlocking(value) { value += 1 }
            ended.withLock { $0 = true }
        }
        thread.start()
        var iterator: AsyncThrowingStream<Int, any Error>.AsyncIterator? = stream.makeAsyncIterator()
        #expect(try await iterator?.next() == 0)
        iterator = nil
        _ = consume stream
        let deadline = ContinuousClock.now + .seconds(5)
        while !ended.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ended.withLock { $0 }, "the reader thread still waits on a stream nobody reads")
    }
}
