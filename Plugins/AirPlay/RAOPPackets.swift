// RAOPPackets: the bytes of AirPlay 1's UDP traffic — audio packets (RTP, payload type 96) with ALAC frames that
// carry their samples uncompressed, sync packets, answers to timing requests and resent packets — and its clock.

import Foundation

/// RAOP's packet formats. Numbers on the wire are big-endian.
enum RAOPPackets {
    /// RTP payload types (the second byte, without the marker bit).
    static let audio: UInt8 = 0x60, sync: UInt8 = 0x54, timingRequest: UInt8 = 0x52, timingReply: UInt8 = 0x53
    static let resendRequest: UInt8 = 0x55, resent: UInt8 = 0x56

    /// One audio packet: the 12-byte RTP header (marker set on the first after a start or a flush) and `payload`.
    static func audioPacket(sequence: UInt16, timestamp: UInt32, ssrc: UInt32, marker: Bool, payload: Data) -> Data {
        var packet = Data([0x80, marker ? 0xE0 : audio])
        packet.appendBig(sequence)
        packet.appendBig(timestamp)
        packet.appendBig(ssrc)
        packet.append(payload)
        return packet
    }

    /// An ALAC frame holding `samples` (big-endian 16-bit stereo, at most 352 frames) uncompressed: the header says
    /// stereo, no compression and, for a short last frame, how many frames it has; then the samples; then the end tag.
    static func alacFrame(_ samples: Data) -> Data {
        let frames = samples.count / 4
        var bits = BitWriter(capacity: frames * 4 + 8)
        bits.write(1, count: 3)              // channels - 1: stereo
        bits.write(0, count: 4)
        bits.write(0, count: 12)
        bits.write(frames == 352 ? 0 : 1, count: 1)   // has a frame count
        bits.write(0, count: 2)
        bits.write(1, count: 1)              // not compressed
        if frames != 352 { bits.write(UInt32(frames), count: 32) }
        samples.withUnsafeBytes { raw in
            for index in stride(from: 0, to: frames * 4, by: 2) {
                bits.write(UInt32(raw[index]) << 8 | UInt32(raw[index + 1]), count: 16)
            }
        }
        bits.write(7, count: 3)              // end of frame
        return bits.data
    }

    /// A sync packet: at `now` frame `playing` is due (receivers that follow Apple's play it 11025 frames later), and
    /// the receiver is to hold `latency` frames more than those (how long it may ask for a lost packet again).
    /// The first after a start or a flush has the extension bit.
    static func syncPacket(first: Bool, playing: UInt32, latency: UInt32, now: NTPTime) -> Data {
        var packet = Data([first ? 0x90 : 0x80, 0x80 | sync, 0x00, 0x07])
        packet.appendBig(playing)
        packet.appendBig(now.seconds)
        packet.appendBig(now.fraction)
        packet.appendBig(playing &+ latency)
        return packet
    }

    /// The answer to a timing request: its send time as origin, and `received` and `now` as ours.
    static func timingReply(to request: Data, received: NTPTime, now: NTPTime) -> Data? {
        guard request.count >= 32, request[request.startIndex + 1] & 0x7F == timingRequest else { return nil }
        var packet = Data([0x80, 0x80 | timingReply, 0x00, 0x07, 0, 0, 0, 0])
        packet.append(request[(request.startIndex + 24)..<(request.startIndex + 32)])
        packet.appendBig(received.seconds)
        packet.appendBig(received.fraction)
        packet.appendBig(now.seconds)
        packet.appendBig(now.fraction)
        return packet
    }

    /// The packets a resend request asks for: (first sequence number, count).
    static func resendRange(_ request: Data) -> (first: UInt16, count: UInt16)? {
        guard request.count >= 8, request[request.startIndex + 1] & 0x7F == resendRequest else { return nil }
        let bytes = [UInt8](request)
        return (UInt16(bytes[4]) << 8 | UInt16(bytes[5]), UInt16(bytes[6]) << 8 | UInt16(bytes[7]))
    }

    /// DMAP's `mlit` item with `minm` (title), `asar` (artist) and `asal` (album), as AirPlay senders describe a track:
    /// each a four-letter tag, a big-endian length and UTF-8.
    static func dmapItem(title: String?, artist: String?, album: String?) -> Data {
        func tag(_ code: String, _ value: Data) -> Data {
            var item = Data(code.utf8)
            item.appendBig(UInt32(value.count))
            return item + value
        }
        let fields = [("minm", title), ("asar", artist), ("asal", album)].compactMap { code, text in text.map { tag(code, Data($0.utf8)) } }
        return tag("mlit", fields.reduce(Data(), +))
    }

    /// A packet sent again, wrapped as the receiver expects.
    static func resentPacket(_ original: Data) -> Data {
        var packet = Data([0x80, 0x80 | resent, 0x00, 0x01])
        packet.append(original)
        return packet
    }
}

/// An NTP timestamp (seconds since 1900 and a 32-bit fraction) on a clock that never jumps: the receiver only
/// compares our timestamps with each other.
struct NTPTime: Sendable, Equatable {
    var seconds: UInt32
    var fraction: UInt32

    /// Now, on the monotonic clock, offset so that it reads as a plausible NTP time.
    static func now() -> NTPTime {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return NTPTime(seconds: UInt32(truncatingIfNeeded: Int(time.tv_sec) + 0x83AA_7E80 + 1_700_000_000),
                       fraction: UInt32((Double(time.tv_nsec) / 1e9 * 4_294_967_296).rounded(.down)))
    }
}

/// Writes bits most significant first.
struct BitWriter {
    private var bytes: [UInt8] = []
    /// Bits written and not yet whole bytes (fewer than 8 between writes), right-aligned.
    private var accumulator: UInt64 = 0
    private var pending = 0

    /// Room for `bytes` bytes, reserved at once (an ALAC frame's size is known).
    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// Appends the low `count` bits of `value` (at most 32), most significant first. A byte at a time, not a bit:
    /// a frame is 11264 bits, 125 frames a second.
    mutating func write(_ value: UInt32, count: Int) {
        accumulator = accumulator << UInt64(count) | (UInt64(value) & ((1 << UInt64(count)) - 1))
        pending += count
        while pending >= 8 {
            pending -= 8
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(pending)))
        }
        accumulator &= (1 << UInt64(pending)) - 1
    }

    /// What was written, the last byte's unused bits zero.
    var data: Data {
        var out = bytes
        if pending > 0 { out.append(UInt8(truncatingIfNeeded: accumulator << UInt64(8 - pending))) }
        return Data(out)
    }
}

extension Data {
    mutating func appendBig(_ value: UInt16) { append(contentsOf: [UInt8(value >> 8), UInt8(value & 0xFF)]) }
    mutating func appendBig(_ value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }
}
