// AirPlayLabTests: the AirPlay plugin against a real AirPlay 1 receiver, shairport-sync, in the lab — what it plays
// judged by what it writes as it plays it (its stdout backend), not by what route says.

import Foundation
import RouteCore
import RouteTestSupport
import Testing

extension LabTests {
    /// The AirPlay plugin (route-provider-airplay) against shairport-sync 3.3.8.
    @Suite struct AirPlayLabTests {
        private static let name = "Lab AirPlay"
        private static let airplay = ["ROUTE_PROVIDERS": "airplay"]

        @Test func aReceiverIsListedAsAnAirPlaySpeakerByItsName() async throws {
            try await withReceiver { sandbox in
                let found = try await sandbox.run(["devices", "--json", "--timeout", "3"], environment: Self.airplay)
                let devices = try JSONDecoder().decode([MediaDevice].self, from: Data(found.stdout.utf8))
                let device = try #require(devices.first { $0.name == Self.name }, "\(found)")
                #expect(device.kind == .speaker && device.address == "10.77.0.2:5000" && device.capabilities == .audio)
                #expect(device.primary.protocolName == "AirPlay" && device.primary.provider == "airplay" && device.primary.volumeControl == .absolute)
                // The instance name is MAC@Name: the MAC is the device's identity, the name what people see.
                #expect(device.primary.nativeID.hasSuffix("@" + Self.name) && device.primary.deduplicationIDs.contains { $0.hasPrefix("mac:") },
                        "\(device.primary)")
            }
        }

        @Test func aCastIsHeardWholeAndEnds() async throws {
            try await withReceiver { sandbox in
                // A second at 440 Hz, then two at 1760 Hz: what is missing, if anything, is told by its pitch.
                let wav = try await sandbox.twoTones("song.wav", low: 1, high: 2)
                let traced = Self.airplay.merging(["ROUTE_DEBUG": "airplay"]) { $1 }
                let result = try await sandbox.run(["cast", wav, "--to", Self.name], environment: traced, timeout: 20)
                #expect(result.status == 0 && result.stdoutLines.last == "ended: song on \(Self.name)", "\(result)")
                // Encrypted (shairport-sync offers et=0,1), and every bit of it heard, so decrypted: its first packets
                // too, and the session ended after its last one played.
                #expect(result.stderr.contains("audio encrypted"), "\(result.stderr)")
                let output = try AirPlayOutput.read()
                let (low, high) = (output.heardSeconds(below: 1000), output.heardSeconds(above: 1000))
                #expect(abs(low - 1) < 0.05 && abs(high - 2) < 0.05, "shairport-sync played \(low) s of the first second and \(high) s of the last two; route said:\n\(result.stderr.suffix(3000))")
            }
        }

        /// A link that starts losing a tenth of what reaches the receiver once the cast is heard (nftables on its
        /// side: audio, sync and resent packets alike): each lost packet is asked for again until it comes, its last
        /// ones too, and nothing is heard missing. (At AirPlay's half second of latency shairport-sync asks once,
        /// and a tenth of what it asked for was lost again: four gaps or so in three seconds.)
        @Test func aCastOnALinkThatLosesPacketsIsHeardWhole() async throws {
            try await withReceiver { sandbox in
                let wav = try await sandbox.twoTones("song.wav", low: 1, high: 3)
                let casting = try sandbox.start(["cast", wav, "--to", Self.name], environment: Self.airplay)
                try await Lab.until("it is heard", within: 10) { try AirPlayOutput.read().heardSeconds > 0.2 }
                try Lab.nft(["add", "table", "ip", "routeloss"])
                defer { try? Lab.nft(["delete", "table", "ip", "routeloss"]) }
                try Lab.nft(["add", "chain", "ip", "routeloss", "in", "{ type filter hook input priority 0; }"])
                try Lab.nft(["add", "rule", "ip", "routeloss", "in", "ip", "saddr", "10.77.0.1", "meta", "l4proto", "udp",
                             "numgen", "random", "mod", "100", "<", "10", "drop"])
                let result = await casting.finish(within: 20)
                #expect(result.status == 0 && result.stdoutLines.last == "ended: song on \(Self.name)", "\(result)")
                let output = try AirPlayOutput.read()
                let gaps = output.gaps(longerThan: 0.004)
                #expect(gaps.isEmpty && abs(output.heardSeconds - 4) < 0.05,
                        "shairport-sync played \(output.heardSeconds) s of 4, with gaps of \(gaps) s")
            }
        }

        @Test func pausePlayAndVolumeAreHeard() async throws {
            try await withReceiver { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 30)
                let casting = try sandbox.start(["cast", wav, "--to", Self.name], environment: Self.airplay)
                try await Lab.until("a second is heard", within: 10) { try AirPlayOutput.read().heardSeconds > 1 }
                #expect(try await sandbox.run(["pause", "--to", Self.name], environment: Self.airplay).status == 0)
                try await sandbox.poll(["status", "--to", Self.name, "--json"], environment: Self.airplay, within: 5, "paused") {
                    $0.stdout.contains("\"paused\"")
                }
                // What the receiver's output held when the pause reached it still comes out (once in a fresh-clone run,
                // 0.1 s or more after route said paused): the pause is heard once the output stops growing, and a
                // cast that did not pause never does.
                var paused = try AirPlayOutput.read().heardSeconds, since = ContinuousClock.now
                try await Lab.until("the receiver falls silent", within: 3) {
                    let now = try AirPlayOutput.read().heardSeconds
                    if now != paused { (paused, since) = (now, .now) }
                    return ContinuousClock.now - since >= .milliseconds(300)
                }
                try await Task.sleep(for: .seconds(1.5))
                let more = try AirPlayOutput.read().heardSeconds - paused
                #expect(more < 0.1, "nothing more is heard while paused: \(more) s")
                #expect(try await sandbox.run(["play", "--to", Self.name], environment: Self.airplay).status == 0)
                try await Lab.until("it is heard again", within: 5) { try AirPlayOutput.read().heardSeconds > paused + 1 }
                #expect(try await sandbox.run(["volume", "100", "--to", Self.name], environment: Self.airplay).status == 0)
                // From the receiver's own -18 dB (a tone at about 250) to 0 dB.
                try await Lab.until("it is loud at 100 %", within: 5) { try AirPlayOutput.read().level(ofLast: 0.3) > 3000 }
                let loud = try AirPlayOutput.read().level(ofLast: 0.3)
                #expect(try await sandbox.run(["volume", "20", "--to", Self.name], environment: Self.airplay).status == 0)
                try await Lab.until("the volume is lower", within: 5) { try AirPlayOutput.read().level(ofLast: 0.3) < loud / 2 }
                #expect(try await sandbox.run(["stop", "--to", Self.name], environment: Self.airplay).status == 0)
                let result = await casting.finish(within: 10)
                #expect(result.status == 0, "\(result)")
                // The tone resumed where it paused: about as much heard as played.
                let heard = try AirPlayOutput.read().heardSeconds
                #expect(heard > paused + 1 && heard < 30, "\(heard) s heard")
            }
        }

        @Test func aPauseLongerThanTheReceiverKeepsASessionPlaysOnWhereItWas() async throws {
            // shairport-sync ends a session that sent it nothing for its session_timeout (120 s; 4 s here).
            try await withReceiver(["--session-timeout", "4"]) { sandbox in
                let wav = try await sandbox.twoTones("song.wav", low: 2, high: 2)
                let traced = Self.airplay.merging(["ROUTE_DEBUG": "airplay"]) { $1 }
                let casting = try sandbox.start(["cast", wav, "--to", Self.name], environment: traced)
                try await Lab.until("a second is heard", within: 10) { try AirPlayOutput.read().heardSeconds > 1 }
                #expect(try await sandbox.run(["pause", "--to", Self.name], environment: Self.airplay).status == 0)
                try await Lab.until("shairport-sync ends the paused session, and route sees it", within: 20) {
                    try Lab.file("airplay.log").contains("Too long a silence") && casting.stderr.contains("ended the paused session")
                }
                let status = try await sandbox.run(["status", "--to", Self.name, "--json"], environment: Self.airplay)
                #expect(status.stdout.contains("\"paused\""), "\(status)\nthe cast said: \(casting.stdout)\(casting.stderr)")
                #expect(try await sandbox.run(["play", "--to", Self.name], environment: Self.airplay).status == 0)
                let result = await casting.finish(within: 15)
                #expect(result.status == 0 && result.stdoutLines.last == "ended: song on \(Self.name)", "\(result)")
                // Every bit of it heard: the rest of the first pitch from where it paused, then the second. What
                // shairport-sync had written of its 0.2 s output buffer when paused stays in its stdout (a speaker's
                // buffer is dropped), and is heard again after.
                let output = try AirPlayOutput.read()
                let (low, high) = (output.heardSeconds(below: 1000), output.heardSeconds(above: 1000))
                #expect((1.95...2.3).contains(low) && abs(high - 2) < 0.1,
                        "shairport-sync played \(low) s of the first two seconds and \(high) s of the last two; route said:\n\(result.stderr.suffix(3000))")
            }
        }

        @Test func aSeekIsHeardAtItsPlaceAndAQueuePlaysOnOneSession() async throws {
            try await withReceiver { sandbox in
                // Ten seconds at 440 Hz, then twenty at 1760 Hz: where it plays is heard in the pitch.
                let twoTones = try await sandbox.twoTones("two tones.wav", low: 10, high: 20)
                let short = try await sandbox.wav("short.wav", seconds: 2)
                let metadata = try AirPlayMetadata.listen()
                defer { metadata.stop() }
                let casting = try sandbox.start(["cast", twoTones, short, "--to", Self.name], environment: Self.airplay)
                try await Lab.until("the low tone is heard", within: 10) { try AirPlayOutput.read().heardSeconds > 1 }
                #expect(try AirPlayOutput.read().pitch(ofLast: 0.2) < 600)
                #expect(try await sandbox.run(["seek", "25", "--to", Self.name], environment: Self.airplay).status == 0)
                try await Lab.until("the high tone is heard", within: 5) { try AirPlayOutput.read().pitch(ofLast: 0.2) > 1500 }
                // The receiver's progress is told the new place: 25 s into 30 (start/current/end in RTP time).
                let progress = try #require(metadata.items()["prgr"].map { String(decoding: $0, as: UTF8.self).split(separator: "/").compactMap { Double($0) } })
                #expect(progress.count == 3 && abs((progress[1] - progress[0]) / 44100 - 25) < 0.1 && abs((progress[2] - progress[0]) / 44100 - 30) < 0.1,
                        "\(progress)")
                // The second file follows on the same session; the cast ends after it.
                let result = await casting.finish(within: 20)
                #expect(result.status == 0 && result.stdoutLines.last == "ended: short [2/2] on \(Self.name)", "\(result)")
                let heard = try AirPlayOutput.read().heardSeconds
                #expect(heard > 1 + 5 + 2 - 0.3 && heard < 1 + 5 + 2 + 2, "\(heard) s heard: a second, the last five of the first file, the second")
            }
        }

        /// Files of a queue follow one another on one timeline, as an album plays: nothing missing or added between
        /// them, the cast moves on to the second as it is heard, and ends after it.
        @Test func aQueuePlaysWithoutAGapBetweenItsFiles() async throws {
            try await withReceiver { sandbox in
                // Two seconds at 440 Hz, then two at 1760 Hz in a file of its own.
                let (low, high) = (sandbox.root + "/low.wav", sandbox.root + "/high.wav")
                for (path, hertz) in [(low, 440), (high, 1760)] {
                    try await Fixtures.gst("audiotestsrc freq=\(hertz) num-buffers=100 samplesperbuffer=882 ! audio/x-raw,rate=44100,channels=2 ! "
                                           + "audioconvert ! wavenc ! filesink location=OUT", to: path)
                }
                let casting = try sandbox.start(["cast", low, high, "--to", Self.name], environment: Self.airplay)
                let result = await casting.finish(within: 20)
                #expect(result.status == 0 && result.stdoutLines.contains("playing: high [2/2] on \(Self.name)")
                        && result.stdoutLines.last == "ended: high [2/2] on \(Self.name)", "\(result)")
                let output = try AirPlayOutput.read()
                let gaps = output.gaps(longerThan: 0.004)
                let (heardLow, heardHigh) = (output.heardSeconds(below: 1000), output.heardSeconds(above: 1000))
                #expect(gaps.isEmpty && abs(heardLow - 2) < 0.05 && abs(heardHigh - 2) < 0.05,
                        "shairport-sync played \(heardLow) s low and \(heardHigh) s high of 2 and 2, with gaps of \(gaps) s")
            }
        }

        /// A group of the lab's renderer and the receiver: the receiver is told when to play (an instant on the plugin's
        /// timeline, `session/play`'s `at`) at the start, after a pause and after a seek while playing, and plays each
        /// time; the seek's pause of every member is not said as the group's.
        @Test func aGroupWithTheRendererPlaysOnTheReceiverAfterAPauseAndASeek() async throws {
            try await Lab.stopRenderer()
            try await withReceiver { sandbox in
                let both = ["ROUTE_PROVIDERS": "upnp,airplay"]
                let twoTones = try await sandbox.twoTones("two tones.wav", low: 10, high: 20)
                let casting = try sandbox.start(["cast", twoTones, "--to", Lab.rendererName, "--to", Self.name], environment: both)
                try await Lab.until("the low tone is heard and the renderer plays", within: 10, meanwhile: { casting.stdout + casting.stderr }) {
                    try AirPlayOutput.read().heardSeconds > 1 && Lab.transportState() == "PLAYING"
                }
                #expect(try await sandbox.run(["pause", "--to", Self.name], environment: both).status == 0)
                try await Lab.until("the renderer is paused", within: 5) { try Lab.transportState() == "PAUSED_PLAYBACK" }
                var paused = try AirPlayOutput.read().heardSeconds, since = ContinuousClock.now
                try await Lab.until("the receiver falls silent", within: 3) {
                    let now = try AirPlayOutput.read().heardSeconds
                    if now != paused { (paused, since) = (now, .now) }
                    return ContinuousClock.now - since >= .milliseconds(300)
                }
                #expect(try await sandbox.run(["play", "--to", Self.name], environment: both).status == 0)
                try await Lab.until("the receiver is heard again and the renderer plays", within: 5) {
                    try AirPlayOutput.read().heardSeconds > paused + 1 && Lab.transportState() == "PLAYING"
                }
                #expect(try await sandbox.run(["seek", "25", "--to", Self.name], environment: both).status == 0)
                try await Lab.until("the high tone is heard and the renderer plays from 25 s", within: 5, meanwhile: { casting.stdout + casting.stderr }) {
                    try AirPlayOutput.read().pitch(ofLast: 0.2) > 1500 && Lab.transportState() == "PLAYING" && Lab.position() >= 25
                }
                #expect(try await sandbox.run(["stop", "--to", Self.name], environment: both).status == 0)
                let result = await casting.finish(within: 10)
                let group = "\(Lab.rendererName) + \(Self.name)"
                #expect(result.status == 0 && result.stdoutLines.filter { $0.hasPrefix("paused:") } == ["paused: two tones on \(group)"],
                        "one pause said, the person's: \(result)")
            }
        }

        @Test func theReceiverIsToldTheTitleArtistAlbumLengthAndCover() async throws {
            try await withReceiver { sandbox in
                // A folder of one tagged MP3 and its cover.jpg.
                let album = sandbox.root + "/album", song = album + "/tune.mp3"
                try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: true)
                try await Fixtures.gst("audiotestsrc num-buffers=150 samplesperbuffer=882 ! audio/x-raw,rate=44100,channels=2 ! audioconvert "
                    + "! taginject tags=\"title=Tune,artist=Band,album=Record\" ! lamemp3enc ! id3v2mux ! filesink location=OUT", to: song)
                try await Fixtures.gst("videotestsrc num-buffers=1 ! video/x-raw,width=64,height=64 ! jpegenc ! filesink location=OUT",
                                       to: album + "/cover.jpg")
                let metadata = try AirPlayMetadata.listen()
                defer { metadata.stop() }
                let result = try await sandbox.run(["cast", album, "--to", Self.name], environment: Self.airplay, timeout: 20)
                #expect(result.status == 0, "\(result)")
                let told = metadata.items()
                #expect(told["minm"].map { String(decoding: $0, as: UTF8.self) } == "Tune", "\(told.keys.sorted())")
                #expect(told["asar"].map { String(decoding: $0, as: UTF8.self) } == "Band")
                #expect(told["asal"].map { String(decoding: $0, as: UTF8.self) } == "Record")
                #expect(told["PICT"]?.starts(with: [0xFF, 0xD8]) == true, "the cover, a JPEG")
                // start/current/end in RTP time: three seconds long.
                let progress = try #require(told["prgr"].map { String(decoding: $0, as: UTF8.self) }.map { $0.split(separator: "/").compactMap { Double($0) } })
                #expect(progress.count == 3 && abs((progress[2] - progress[0]) / 44100 - 3) < 0.1, "\(progress)")
            }
        }

        @Test func aReceiverThatWantsAPasswordPlaysWithTheOneThePersonGaveIt() async throws {
            try Lab.control("start-airplay", "--port", "5010", "--name", "Lab AirPlay Locked", "--password", "secret")
            defer { try? Lab.control("stop-airplay", "--port", "5010") }
            try await inSandbox { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 2)
                let config = sandbox.root + "/config", file = config + "/route/airplay-passwords"
                let environment = Self.airplay.merging(["XDG_CONFIG_HOME": config]) { $1 }
                func cast() async throws -> RouteResult {
                    try await sandbox.run(["cast", wav, "--to", "Lab AirPlay Locked"], environment: environment, timeout: 20)
                }
                // None given: one line says where to give it.
                let none = try await cast()
                #expect(none.status != 0 && none.stderr.contains("Lab AirPlay Locked") && none.stderr.contains("wants a password")
                        && none.stderr.contains(file), "\(none)")
                // A file others may read is not used; a wrong password is said to be refused.
                try FileManager.default.createDirectory(atPath: config + "/route", withIntermediateDirectories: true)
                try "# mine\nLab AirPlay Locked = wrong\n".write(toFile: file, atomically: true, encoding: .utf8)
                chmod(file, 0o644)
                let open = try await cast()
                #expect(open.status != 0 && open.stderr.contains("may be read by others"), "\(open)")
                chmod(file, 0o600)
                let wrong = try await cast()
                #expect(wrong.status != 0 && wrong.stderr.contains("refused the password"), "\(wrong)")
                try "Lab AirPlay Locked = secret\n".write(toFile: file, atomically: true, encoding: .utf8)
                chmod(file, 0o600)
                let right = try await cast()
                #expect(right.status == 0, "\(right)")
                #expect(try AirPlayOutput.read("airplay-5010.pcm").heardSeconds > 1.9)
            }
        }

        @Test func receiversThatShareAMACAreDevicesOfTheirOwn() async throws {
            // Several shairport-syncs on one host (one per sound card, a common multi-room setup) announce one MAC:
            // announced here for the lab's two receivers, each instance a room of its own.
            try await withReceiver { sandbox in
                try Lab.control("start-airplay", "--port", "5010", "--name", "Lab AirPlay Two")
                defer { try? Lab.control("stop-airplay", "--port", "5010") }
                var publishers: [Process] = []
                defer { publishers.forEach { $0.terminate() } }
                for (room, port) in [("Room One", "5000"), ("Room Two", "5010")] {
                    publishers.append(try Lab.start(["exec-b", "avahi-publish", "-s", "0A1B2C3D4E5F@" + room, "_raop._tcp", port,
                                                     "cn=0,1", "et=0,1", "tp=UDP", "am=ShairportSync"]))
                }
                let found = try await sandbox.poll(["devices", "--json", "--timeout", "3"], environment: Self.airplay, within: 15, "both rooms") {
                    let names = ((try? JSONDecoder().decode([MediaDevice].self, from: Data($0.stdout.utf8))) ?? []).map(\.name)
                    return names.contains("Room One") && names.contains("Room Two")
                }
                let rooms = try JSONDecoder().decode([MediaDevice].self, from: Data(found.stdout.utf8)).filter { $0.name.hasPrefix("Room ") }
                #expect(rooms.count == 2 && rooms.allSatisfy { $0.routes.count == 1 }, "\(rooms.map { ($0.name, $0.routes.map(\.id)) })")
                // A cast to the second room is heard there, and only there.
                let wav = try await sandbox.wav("song.wav", seconds: 2)
                let cast = try await sandbox.run(["cast", wav, "--to", "Room Two"], environment: Self.airplay, timeout: 20)
                #expect(cast.status == 0, "\(cast)")
                #expect(try AirPlayOutput.read("airplay-5010.pcm").heardSeconds > 1.9)
                #expect(try AirPlayOutput.read().heardSeconds < 0.1)
            }
        }

        @Test func aReceiverThatAnnouncesTheRenderersMACIsOneDeviceWithIt() async throws {
            // A TV with DLNA and AirPlay announces its own MAC in its AirPlay name (shairport-sync makes one up from
            // its name): announced here for the renderer's host, pointing at the lab's shairport-sync.
            let mac = try Lab.tool(RouteBinary.packageRoot.appendingPathComponent("scripts/lab").path, ["exec-b", "cat", "/sys/class/net/vB/address"])
                .text.trimmingCharacters(in: .whitespacesAndNewlines)
            let instance = mac.replacingOccurrences(of: ":", with: "").uppercased() + "@" + Lab.rendererName
            try await withReceiver { sandbox in
                let publisher = try Lab.start(["exec-b", "avahi-publish", "-s", instance, "_raop._tcp", "5000", "cn=0,1", "et=0,1", "tp=UDP", "am=LabTV"])
                defer { publisher.terminate() }
                let both = ["ROUTE_PROVIDERS": "upnp,airplay"]
                let found = try await sandbox.poll(["devices", "--json", "--timeout", "3"], environment: both, within: 15, "one device with both routes") {
                    ((try? JSONDecoder().decode([MediaDevice].self, from: Data($0.stdout.utf8))) ?? [])
                        .contains { $0.name == Lab.rendererName && $0.routes.count == 2 }
                }
                let device = try #require(try JSONDecoder().decode([MediaDevice].self, from: Data(found.stdout.utf8)).first { $0.name == Lab.rendererName })
                #expect(Set(device.routes.map(\.protocolName)) == ["upnp", "AirPlay"], "\(device.routes.map(\.id))")
                // A WAV both take as it is goes over DLNA; --via AirPlay sends it to the receiver.
                let wav = try await sandbox.wav("song.wav", seconds: 2)
                let viaAirPlay = try await sandbox.run(["cast", wav, "--to", Lab.rendererName, "--via", "AirPlay"], environment: both, timeout: 20)
                #expect(viaAirPlay.status == 0, "\(viaAirPlay)")
                #expect(try AirPlayOutput.read().heardSeconds > 1.9)
            }
        }

        @Test func aReceiverThatTakesOnlyPairedSendersIsListedAndRefusedInOneLine() async throws {
            // As an Apple TV set to require pairing answers a sender it does not know: 470 to every request.
            let fake = """
                import socket
                s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("10.77.0.2", 7000)); s.listen()
                while True:
                    c, _ = s.accept(); c.settimeout(5)
                    try:
                        while True:
                            data = c.recv(65536)
                            if not data: break
                            seq = [l.split(":")[1].strip() for l in data.decode(errors="replace").split("\\r\\n") if l.lower().startswith("cseq:")]
                            c.sendall(("RTSP/1.0 470 Connection Authorization Required\\r\\nCSeq: %s\\r\\n\\r\\n" % (seq[0] if seq else "0")).encode())
                    except OSError: pass
                    c.close()
                """
            let receiver = try Lab.start(["exec-b", "/usr/bin/python3", "-c", fake])
            defer { receiver.terminate() }
            let publisher = try Lab.start(["exec-b", "avahi-publish", "-s", "0A0B0C0D0E0F@Lab HomePod", "_raop._tcp", "7000", "cn=0,1,2,3", "et=0,3,5", "am=AudioAccessory5,1"])
            defer { publisher.terminate() }
            try await inSandbox { sandbox in
                try await sandbox.poll(["devices", "--timeout", "3"], environment: Self.airplay, within: 15, "the HomePod listed") {
                    $0.stdout.contains("Lab HomePod")
                }
                let wav = try await sandbox.wav("song.wav", seconds: 2)
                let result = try await sandbox.run(["cast", wav, "--to", "Lab HomePod"], environment: Self.airplay, timeout: 20)
                #expect(result.status != 0 && result.stderr.contains("paired") && result.stderr.split(separator: "\n").count == 1, "\(result)")
            }
        }

        /// Killed, its connection closes; frozen (as one unplugged or hung), nothing closes and it stops answering.
        @Test(arguments: [("--hard", "closed its AirPlay connection"), ("--freeze", "stopped answering")])
        func aReceiverKilledOrHungMidCastEndsTheCastWithAnError(how: String, said: String) async throws {
            try await withReceiver { sandbox in
                let wav = try await sandbox.wav("song.wav", seconds: 30)
                let casting = try sandbox.start(["cast", wav, "--to", Self.name], environment: Self.airplay)
                try await Lab.until("it is heard", within: 10) { try AirPlayOutput.read().heardSeconds > 0.5 }
                try Lab.control("stop-airplay", how)
                let result = await casting.finish(within: 15)
                #expect(result.status != 0 && !result.signaled && result.stderr.contains(said), "\(result)")
            }
        }

        /// Runs `body` with the lab's receiver started afresh (its output file empty) and stopped after.
        private func withReceiver(_ options: [String] = [], _ body: (Sandbox) async throws -> Void) async throws {
            try? Lab.control("stop-airplay")
            try Lab.control(["start-airplay"] + options)
            defer { try? Lab.control("stop-airplay") }
            try await inSandbox(body)
        }
    }
}

/// What shairport-sync has played (its stdout backend: 16-bit little-endian stereo at 44.1 kHz, written as played).
struct AirPlayOutput {
    /// The left channel's samples.
    let left: [Int16]

    /// Reads the lab receiver's output so far.
    static func read(_ file: String = "airplay.pcm") throws -> AirPlayOutput {
        guard let state = ProcessInfo.processInfo.environment["ROUTE_LAB_STATE"] else { throw ToolFailed(description: "not in the lab") }
        let data = try Data(contentsOf: URL(fileURLWithPath: state + "/" + file))
        let frames = data.count / 4
        let left = data.withUnsafeBytes { raw in (0..<frames).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: Int16.self)) } }
        return AirPlayOutput(left: left)
    }

    /// Seconds of sound: 10 ms windows louder than silence and the receiver's dither (a tone at shairport-sync's
    /// volume on start, -24 dB, is about 250).
    var heardSeconds: Double {
        stride(from: 0, to: left.count - 441, by: 441).filter { rms(left[$0..<($0 + 441)]) > 40 }.count.asSeconds
    }

    /// Seconds of sound whose pitch is below (or above) `hertz`.
    func heardSeconds(below hertz: Double) -> Double { heardSeconds { $0 < hertz } }
    func heardSeconds(above hertz: Double) -> Double { heardSeconds { $0 > hertz } }

    private func heardSeconds(pitch matches: (Double) -> Bool) -> Double {
        stride(from: 0, to: left.count - 441, by: 441).filter { start in
            let window = left[start..<(start + 441)]
            let crossings = zip(window, window.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
            return rms(window) > 40 && matches(Double(crossings) / 2 / 0.01)
        }.count.asSeconds
    }

    /// The runs of silence longer than `shortest` seconds between the first sound and the last (a packet the receiver
    /// never got is 352 frames, 8 ms, of silence; a tone is quieter than `level` for a few frames at each zero crossing).
    func gaps(longerThan shortest: Double, level: Int16 = 40) -> [Double] {
        guard let first = left.firstIndex(where: { abs(Int($0)) > level }),
              let last = left.lastIndex(where: { abs(Int($0)) > level }) else { return [] }
        var found: [Double] = []
        var quietFrom: Int?
        for index in first...last {
            if abs(Int(left[index])) > level {
                if let from = quietFrom, Double(index - from) / 44100 > shortest { found.append(Double(index - from) / 44100) }
                quietFrom = nil
            } else if quietFrom == nil {
                quietFrom = index
            }
        }
        return found
    }

    /// The loudness (RMS) of the last `seconds` written.
    func level(ofLast seconds: Double) -> Double {
        rms(left.suffix(Int(seconds * 44100)))
    }

    /// The frequency of the last `seconds` written, by counting zero crossings (a sine's pitch).
    func pitch(ofLast seconds: Double) -> Double {
        let tail = left.suffix(Int(seconds * 44100))
        let crossings = zip(tail, tail.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        return Double(crossings) / 2 / seconds
    }

    private func rms(_ samples: ArraySlice<Int16>) -> Double {
        guard !samples.isEmpty else { return 0 }
        return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }
}

private extension Int {
    /// A count of 10 ms windows in seconds.
    var asSeconds: Double { Double(self) / 100 }
}

/// What shairport-sync says it was told (its metadata pipe), read from before a cast until `stop()`: the pipe is
/// held open for reading (without blocking), so that the receiver writes to it, and drained when asked.
final class AirPlayMetadata: @unchecked Sendable {
    // Safety: used by one test at a time.
    private let fd: Int32
    private var text = ""

    /// Opens the lab receiver's metadata pipe for reading.
    static func listen(_ pipe: String = "airplay.metadata") throws -> AirPlayMetadata {
        guard let state = ProcessInfo.processInfo.environment["ROUTE_LAB_STATE"] else { throw ToolFailed(description: "not in the lab") }
        return try AirPlayMetadata(pipe: state + "/" + pipe)
    }

    private init(pipe: String) throws {
        fd = open(pipe, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw ToolFailed(description: "cannot open \(pipe): \(String(cString: strerror(errno)))") }
    }

    func stop() { close(fd) }

    /// Reads what the pipe holds now.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
        }
    }

    /// The items told so far, by their four-letter code (the last of each), with their data.
    func items() -> [String: Data] {
        drain()
        var items: [String: Data] = [:]
        for chunk in text.components(separatedBy: "<item>").dropFirst() {
            guard let codeStart = chunk.range(of: "<code>"), let codeEnd = chunk.range(of: "</code>"),
                  let code = Data(hex: String(chunk[codeStart.upperBound..<codeEnd.lowerBound])) else { continue }
            var data = Data()
            if let start = chunk.range(of: "<data encoding=\"base64\">"), let end = chunk.range(of: "</data>") {
                data = Data(base64Encoded: chunk[start.upperBound..<end.lowerBound].filter { !$0.isWhitespace }) ?? Data()
            }
            items[String(decoding: code, as: UTF8.self)] = data
        }
        return items
    }
}

private extension Data {
    /// Bytes from hex digits (`6d696e6d`).
    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}

extension Sandbox {
    /// A WAV of `low` seconds at 440 Hz, then `high` seconds at 1760 Hz, in the sandbox: where a device plays, and what
    /// it left out, is heard in the pitch.
    func twoTones(_ name: String, low: Int, high: Int) async throws -> String {
        let path = root + "/" + name
        try await Fixtures.gst("concat name=c ! audioconvert ! wavenc ! filesink location=OUT "
            + "audiotestsrc freq=440 num-buffers=\(low * 50) samplesperbuffer=882 ! audio/x-raw,rate=44100,channels=2 ! c. "
            + "audiotestsrc freq=1760 num-buffers=\(high * 50) samplesperbuffer=882 ! audio/x-raw,rate=44100,channels=2 ! c.", to: path)
        return path
    }
}
