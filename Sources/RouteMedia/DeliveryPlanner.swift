// DeliveryPlanner: the one decision of how a file reaches a device — as it is, remuxed, or transcoded —
// and the GStreamer pipeline for each way of converting it.

import RouteCore

/// How a file is sent to a device.
public enum Delivery: Sendable, Equatable {
    /// The file as it is.
    case direct
    /// The same audio/video streams in a container the device takes (cheap, no quality loss).
    case remux(TranscodeProfile)
    /// Decoded and encoded again into something the device takes.
    case transcode(TranscodeProfile)
    /// Nothing the device takes can be made from this file; the reason says why.
    case unplayable(String)
}

/// One output format route can produce, with its MIME type and pipeline.
public enum TranscodeProfile: String, Sendable, CaseIterable {
    case mp3, aac, flac, wav, vorbis
    /// Audio streams copied out of their container (MP3 as MP3, AAC as ADTS).
    case audioCopy
    /// H.264 + AAC in MPEG-TS, or fragmented MP4, encoded.
    case mpegTS, fragmentedMP4
    /// H.264 (+ AAC or MP3) copied into MPEG-TS or fragmented MP4.
    case mpegTSCopy, fragmentedMP4Copy
    /// H.264 copied and the sound encoded to AAC (AC-3, DTS, FLAC… beside H.264), into MPEG-TS or fragmented
    /// MP4: the picture keeps its quality and costs nothing; only the sound is converted.
    case mpegTSVideoCopy, fragmentedMP4VideoCopy
    case jpeg

    /// The MIME type of what the pipeline produces (for `audioCopy`, see `mimeType(for:)`).
    public var mimeType: String {
        switch self {
        case .mp3: return "audio/mpeg"
        case .aac: return "audio/aac"
        case .flac: return "audio/flac"
        case .wav: return "audio/wav"
        case .vorbis: return "audio/ogg"
        case .audioCopy: return "audio/mpeg"
        case .mpegTS, .mpegTSCopy, .mpegTSVideoCopy: return "video/mp2t"
        case .fragmentedMP4, .fragmentedMP4Copy, .fragmentedMP4VideoCopy: return "video/mp4"
        case .jpeg: return "image/jpeg"
        }
    }

    /// The MIME type produced for this file (copying AAC gives `audio/aac`).
    public func mimeType(for info: MediaInfo) -> String {
        if self == .audioCopy, info.streams.first(where: { $0.kind == .audio }).map(AudioCodec.init) == .aac {
            return "audio/aac"
        }
        return mimeType
    }

    /// Whether the profile copies compressed streams (it can only start at a key frame) rather than decoding them.
    public var copiesStreams: Bool { [.audioCopy, .mpegTSCopy, .fragmentedMP4Copy, .mpegTSVideoCopy, .fragmentedMP4VideoCopy].contains(self) }

    /// The pipeline after the file source, ending in an element named `route_out` (the caller adds
    /// `route_out. ! appsink`). Built from the file's streams so no branch waits for a stream that is absent.
    ///
    /// Each stream passes one `identity` gate (`route_gate_…`) before anything encodes or muxes it: to
    /// start at an offset, `PipelineStream` holds the gates, seeks upstream of them, and opens them on the
    /// first data from the new position, so encoders and muxers only ever see the stream from there (seeking
    /// the whole pipeline instead leaves FLAC and fMP4 without their headers). A `route_gate_raw_video`
    /// also drops repeated frames, which an exact seek can produce and which MP4 muxing refuses.
    ///
    /// Audio keeps its channels as far as the format allows (MP3 is stereo; AAC up to 5.1; FLAC, WAV and
    /// Vorbis up to 7.1), and `maxChannels` when the device says how many it takes: 5.1 is not downmixed
    /// for a device that takes it.
    public func pipeline(for info: MediaInfo, maxChannels: Int? = nil) -> String {
        let audio = info.streams.contains { $0.kind == .audio }
        let video = info.streams.contains { $0.kind == .video }
        let source = info.streams.first(where: { $0.kind == .audio })?.channels ?? 2
        let formatLimit: Int
        switch self {
        case .mp3: formatLimit = 2
        case .aac, .mpegTS, .fragmentedMP4, .mpegTSVideoCopy, .fragmentedMP4VideoCopy: formatLimit = 6
        default: formatLimit = 8
        }
        let channels = max(1, min(source, formatLimit, maxChannels ?? .max))
        let raw = "audioconvert ! audioresample ! audio/x-raw,channels=\(channels)"
        let gate = "identity name=route_gate_audio silent=true"
        switch self {
        case .mp3: return "decodebin ! \(gate) ! \(raw) ! lamemp3enc target=bitrate cbr=true bitrate=320 ! identity name=route_out"
        case .aac: return "decodebin ! \(gate) ! \(raw) ! avenc_aac bitrate=256000 ! aacparse ! audio/mpeg,stream-format=adts ! identity name=route_out"
        case .flac: return "decodebin ! \(gate) ! \(raw) ! flacenc ! identity name=route_out"
        case .wav: return "decodebin ! \(gate) ! \(raw),format=S16LE ! wavenc ! identity name=route_out"
        case .vorbis: return "decodebin ! \(gate) ! \(raw) ! vorbisenc quality=0.6 ! oggmux ! identity name=route_out"
        case .audioCopy:
            let parse = info.streams.first(where: { $0.kind == .audio }).map(AudioCodec.init) == .aac
                ? "aacparse ! audio/mpeg,stream-format=adts" : "mpegaudioparse"
            return "parsebin ! \(gate) ! \(parse) ! identity name=route_out"
        case .jpeg: return "decodebin ! videoconvert ! jpegenc snapshot=true ! identity name=route_out"
        case .mpegTSVideoCopy, .fragmentedMP4VideoCopy:
            let mux = self == .mpegTSVideoCopy ? "mpegtsmux name=route_out" : "mp4mux name=route_out fragment-duration=1000 streamable=true"
            // The picture's branch takes only H.264, so the sound (whatever it is) goes to the other one.
            var parts = ["parsebin name=route_demux", mux,
                         "route_demux. ! video/x-h264 ! queue ! identity name=route_gate_video silent=true ! h264parse config-interval=-1 ! route_out."]
            if audio {
                parts.append("route_demux. ! queue ! \(gate) ! decodebin ! \(raw) ! avenc_aac bitrate=192000 ! aacparse ! route_out.")
            }
            return parts.joined(separator: " ")
        case .mpegTS, .fragmentedMP4, .mpegTSCopy, .fragmentedMP4Copy:
            let copy = copiesStreams
            let mux = (self == .mpegTS || self == .mpegTSCopy)
                ? "mpegtsmux name=route_out" : "mp4mux name=route_out fragment-duration=1000 streamable=true"
            var parts = ["\(copy ? "parsebin" : "decodebin") name=route_demux", mux]
            // A queue in front of each gate: while one gate holds its stream, the demuxer can still
            // deliver the other one to its own gate.
            if video {
                parts.append(copy
                    ? "route_demux. ! queue ! identity name=route_gate_video silent=true ! h264parse config-interval=-1 ! route_out."
                    : "route_demux. ! queue ! identity name=route_gate_raw_video silent=true ! videoconvert ! x264enc speed-preset=veryfast tune=zerolatency bitrate=4000 key-int-max=60 ! video/x-h264,profile=high ! h264parse config-interval=-1 ! route_out.")
            }
            if audio {
                let codec = info.streams.first(where: { $0.kind == .audio }).map(AudioCodec.init)
                parts.append(copy
                    ? "route_demux. ! queue ! \(gate) ! \(codec == .aac ? "aacparse" : "mpegaudioparse") ! route_out."
                    : "route_demux. ! queue ! \(gate) ! \(raw) ! avenc_aac bitrate=192000 ! aacparse ! route_out.")
            }
            return parts.joined(separator: " ")
        }
    }
}

/// The few audio codecs the planner tells apart.
enum AudioCodec: Equatable {
    case mp3, aac, other

    init(_ stream: StreamInfo) {
        guard stream.codec == "audio/mpeg" else { self = .other; return }
        if stream.caps.contains("mpegversion=(int)1") { self = .mp3 }
        else if stream.caps.contains("mpegversion=(int)4") || stream.caps.contains("mpegversion=(int)2") { self = .aac }
        else { self = .other }
    }
}

/// Decides how a file reaches a device, from the probe and what the device accepts.
public enum DeliveryPlanner {
    /// The plan for `info` on a device that accepts `accepts`: direct when the device takes the
    /// file's type; a remux when it takes the streams in another container; else a transcode to the
    /// first format the device takes, in order of quality and compatibility.
    /// `maxChannels` is the most audio channels the route plays, when it says. Without `asIs`, the device may not fetch the
    /// file itself (a URL it cannot reach): route serves it, remuxed at least (a copy of its streams through a parser).
    public static func plan(_ info: MediaInfo, for accepts: MediaAcceptance, maxChannels: Int? = nil, asIs: Bool = true) -> Delivery {
        let audioStream = info.streams.first { $0.kind == .audio }
        // More channels than the route plays (5.1 to a Cast receiver, which takes 2): the sound is encoded again.
        let tooManyChannels = (audioStream?.channels).map { $0 > (maxChannels ?? .max) } ?? false
        if asIs, accepts.accepts(mimeType: info.mimeType), !tooManyChannels { return .direct }
        switch info.kind {
        case .video:
            let h264 = info.streams.first { $0.kind == .video }?.codec == "video/x-h264"
            let audioCopyable = audioStream.map { AudioCodec($0) != .other && !tooManyChannels } ?? true
            if accepts.acceptsAny(of: ["video/mp2t", "video/mpeg2ts", "video/vnd.dlna.mpeg-tts"]) {
                return h264 ? .remux(audioCopyable ? .mpegTSCopy : .mpegTSVideoCopy) : .transcode(.mpegTS)
            }
            if accepts.acceptsAny(of: ["video/mp4"]) {
                return h264 ? .remux(audioCopyable ? .fragmentedMP4Copy : .fragmentedMP4VideoCopy) : .transcode(.fragmentedMP4)
            }
            if audioStream != nil, let audio = audioProfile(accepts) {
                return .transcode(audio)
            }
            if audioStream == nil {
                return .unplayable("it is video only, and the device takes neither MPEG-TS nor MP4 video")
            }
            return .unplayable("the device takes none of MPEG-TS or MP4 video, MP3, AAC, FLAC, WAV or Ogg Vorbis")
        case .audio:
            if let audioStream, !tooManyChannels {
                let codec = AudioCodec(audioStream)
                if codec == .mp3, accepts.accepts(mimeType: "audio/mpeg") { return .remux(.audioCopy) }
                if codec == .aac, accepts.acceptsAny(of: ["audio/aac", "audio/x-aac"]) { return .remux(.audioCopy) }
            }
            if let profile = audioProfile(accepts) { return .transcode(profile) }
            return .unplayable("the device takes none of MP3, AAC, FLAC, WAV or Ogg Vorbis")
        default:
            return accepts.accepts(mimeType: "image/jpeg") ? .transcode(.jpeg) : .unplayable("the device takes no JPEG images")
        }
    }

    /// What to transcode to when a device refuses a file it says it takes: H.264 + AAC for video (MPEG-TS,
    /// else MP4), MP3 (else the best audio format it takes) for sound, JPEG for a picture; nil when there is
    /// nothing else to send.
    public static func fallback(for info: MediaInfo, on accepts: MediaAcceptance) -> TranscodeProfile? {
        switch info.kind {
        case .video:
            if accepts.acceptsAny(of: ["video/mp2t"]) { return .mpegTS }
            if accepts.acceptsAny(of: ["video/mp4"]) { return .fragmentedMP4 }
            return nil
        case .audio:
            return accepts.accepts(mimeType: "audio/mpeg") ? .mp3 : audioProfile(accepts)
        default:
            return accepts.accepts(mimeType: "image/jpeg") && info.mimeType != "image/jpeg" ? .jpeg : nil
        }
    }

    private static func audioProfile(_ accepts: MediaAcceptance) -> TranscodeProfile? {
        let order: [(TranscodeProfile, [String])] = [
            (.flac, ["audio/flac", "audio/x-flac"]),
            (.mp3, ["audio/mpeg", "audio/mp3"]),
            (.aac, ["audio/aac", "audio/x-aac"]),
            (.wav, ["audio/wav", "audio/x-wav", "audio/wave"]),
            (.vorbis, ["audio/ogg", "application/ogg"]),
        ]
        return order.first { accepts.acceptsAny(of: $0.1) }?.0
    }
}

extension Delivery {
    /// How much conversion it takes: 0 as it is, 1 remuxed, 2 transcoded, and unplayable last.
    public var cost: Int {
        switch self {
        case .direct: return 0
        case .remux: return 1
        case .transcode: return 2
        case .unplayable: return 3
        }
    }

    /// Whether the device gets a video file's sound only (it takes no video route can make).
    public func dropsPicture(of info: MediaInfo) -> Bool {
        guard info.kind == .video else { return false }
        switch self {
        case .transcode(let profile), .remux(let profile):
            return ![.mpegTS, .fragmentedMP4, .mpegTSCopy, .fragmentedMP4Copy, .mpegTSVideoCopy, .fragmentedMP4VideoCopy].contains(profile)
        case .direct, .unplayable: return false
        }
    }

    /// A few words for people: `served as it is`, `remuxed (mpegTSCopy)`, `transcoded (mp3)`.
    public var summary: String {
        switch self {
        case .direct: return "served as it is"
        case .remux(let profile): return "remuxed (\(profile.rawValue))"
        case .transcode(let profile): return "transcoded (\(profile.rawValue))"
        case .unplayable(let reason): return "unplayable: \(reason)"
        }
    }
}
