// APIOptionsTests: Cast's, StartSink's and PickDevice's options as they travel — what a client encodes comes back equal,
// and what the service refuses (an unknown key, a wrong type, a number out of range) is said as the API page says.

import RouteClient
import RouteGIO
import Testing

@Suite struct APIOptionsTests {
    /// The options `entries` read as Cast's, or the words of their refusal.
    private func cast(_ entries: [String: DBusValue]) -> Result<RouteServiceAPI.CastOptions, DBusError> {
        Result { try RouteServiceAPI.options(RouteServiceAPI.CastOptions.self, from: entries, method: "Cast") }.mapError { $0 as? DBusError ?? DBusError("\($0)") }
    }

    @Test func everyOptionComesBackEqual() throws {
        var options = RouteServiceAPI.CastOptions(via: "upnp", subtitles: "", imageDuration: 7, startTimeout: 30, endsWithClient: false)
        options.recursive = true
        options.shuffle = true
        options.loop = true
        options.start = 12.5
        options.resume = true
        guard case .dictionary(let entries) = try DBusCoding.encode(options) else { Issue.record("options are not a{sv}"); return }
        #expect(entries["endsWithClient"] == .boolean(false) && entries["imageDuration"] == .double(7), "plain values, as an app sends them")
        #expect(try cast(entries).get() == options)
        let sink = RouteServiceAPI.SinkOptions(idle: 4, format: "wav", via: "cast", soundServer: "pulseaudio")
        guard case .dictionary(let sinkEntries) = try DBusCoding.encode(sink) else { Issue.record("options are not a{sv}"); return }
        #expect(sinkEntries["idle"] == .double(4), "no variant inside the dictionary's variant (the sink's options had one)")
        #expect(try RouteServiceAPI.options(RouteServiceAPI.SinkOptions.self, from: sinkEntries, method: "StartSink") == sink)
        var pick = RouteServiceAPI.PickOptions(media: "video", title: "Where?", moveFrom: "")
        pick.display = ":9"
        guard case .dictionary(let pickEntries) = try DBusCoding.encode(pick) else { Issue.record("options are not a{sv}"); return }
        #expect(try RouteServiceAPI.options(RouteServiceAPI.PickOptions.self, from: pickEntries, method: "PickDevice") == pick)
    }

    @Test func missingOptionsAreTheDefaults() throws {
        let options = try cast([:]).get()
        #expect(options == RouteServiceAPI.CastOptions(), "a session ends with its client unless it says otherwise")
        #expect(options.endsWithClient && !options.recursive && options.start == nil)
    }

    @Test func anAppsIntegerIsSecondsToo() throws {
        // Python's GLib.Variant('i', 5) or ('x', 5) where the page says d: the number is meant, and taken.
        #expect(try cast(["imageDuration": .int32(5), "start": .int64(3)]).get().imageDuration == 5)
        #expect(try cast(["imageDuration": .double(0.5)]).get().imageDuration == 0.5, "half a second a picture, as route cast takes it")
        #expect(try RouteServiceAPI.options(RouteServiceAPI.SinkOptions.self, from: ["idle": .variant(.double(2))], method: "StartSink").idle == 2)
    }

    @Test(arguments: [
        (["loud": DBusValue.boolean(true)], "Cast: the option loud takes nothing: there is no such option"),
        (["shuffle": .string("yes")], "Cast: the option shuffle takes a boolean"),
        (["imageDuration": .double(0)], "Cast: the option imageDuration takes seconds (a double), more than 0, at most 3600"),
        (["startTimeout": .double(4000)], "Cast: the option startTimeout takes seconds (a double) from 1 to 3600"),
        (["start": .double(-1)], "Cast: the option start takes seconds (a double), 0 or more"),
        (["via": .int32(1)], "Cast: the option via takes a protocol name"),
        (["subtitles": .boolean(false)], "Cast: the option subtitles takes a path or \"\""),
    ])
    func aCastOptionThatIsNotOneIsNamed(entries: [String: DBusValue], words: String) {
        guard case .failure(let error) = cast(entries) else { Issue.record("\(entries) was taken"); return }
        #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(error.message == words)
    }

    @Test func sinkAndPickerOptionsAreCheckedAlike() {
        #expect(throws: DBusError.self) { try RouteServiceAPI.options(RouteServiceAPI.SinkOptions.self, from: ["format": .string("mp3")], method: "StartSink") }
        #expect(throws: DBusError.self) { try RouteServiceAPI.options(RouteServiceAPI.SinkOptions.self, from: ["idle": .double(0)], method: "StartSink") }
        do {
            _ = try RouteServiceAPI.options(RouteServiceAPI.PickOptions.self, from: ["media": .string("text")], method: "PickDevice")
            Issue.record("media text was taken")
        } catch let error as DBusError {
            #expect(error.message == "PickDevice: the option media takes audio, video or image")
        } catch { Issue.record("\(error)") }
    }
}
