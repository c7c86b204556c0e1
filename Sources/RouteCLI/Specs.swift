// Specs: what each `route` command declares — options, arguments, help text, examples.

package enum Specs {
    package static let devices = CommandSpec(
        name: "devices", summary: "list the devices route can cast to", positionals: "", minPositionals: 0, maxPositionals: 0,
        options: [CommonOptions.json, CommonOptions.timeout, CommonOptions.providers],
        details: """
        Devices are printed as they are found, one line each: name, kind, the protocols that reach it, address
        (--json gives every route). "This computer" is always there.
        Discovery ends after --timeout seconds (right away when only the local provider runs). Groups kept with `route
        group` follow, kind group, their members as the address.
        """,
        examples: ["route devices", "route devices --json --timeout 5", "route devices --providers local"])

    package static let cast = CommandSpec(
        name: "cast", summary: "play files, folders, playlists, URLs and web pages on a device", positionals: "FILE|FOLDER|PLAYLIST|URL...",
        minPositionals: 1, maxPositionals: .max,
        options: [CommonOptions.toEach, CommonOptions.timeout, CommonOptions.providers,
                  OptionSpec(name: "via", value: "PROTOCOL", help: "play every item over this protocol (cast, upnp, local) even where another route plays it better"),
                  OptionSpec(name: "image-duration", value: "SECONDS", help: "how long each picture shows before the next item (default 5)"),
                  OptionSpec(name: "subtitles", value: "FILE", help: "show these subtitles (.srt, .vtt) with every video, where the device shows text tracks"),
                  OptionSpec(name: "no-subtitles", value: nil, help: "send no subtitles (by default: a .srt/.vtt beside the file, else a text stream inside it)"),
                  OptionSpec(name: "recursive", value: nil, help: "play the folders inside a folder too"),
                  OptionSpec(name: "shuffle", value: nil, help: "play the queue in random order"),
                  OptionSpec(name: "loop", value: nil, help: "start the queue again after its last item, until stopped"),
                  OptionSpec(name: "start", value: "POSITION", help: "start the first item at POSITION (90, 1:30, 1:02:03)"),
                  OptionSpec(name: "resume", value: nil, help: "start each item where it stopped last time"),
                  OptionSpec(name: "detach", value: nil, help: "return once the device plays and leave the cast to the route service"),
                  OptionSpec(name: "pick", value: nil, help: "choose the device in the route service's picker window (what the desktop's \"Play on a device…\" runs)")],
        details: """
        Plays files; the media files of a folder in natural order ("2 b" before "10 c"; pictures beside music are its
        cover art; --recursive descends); playlists (.m3u, .m3u8, .pls, .xspf; paths relative to the playlist, absolute
        paths or URLs); http(s) media URLs (the device fetches them itself when it plays them as they are, else route
        fetches and converts them); HLS and DASH streams (live ones cannot seek); and web pages, whose media yt-dlp
        finds (when it is installed; a page's playlist is a queue). A playlist or page from the web may not make route
        fetch from this machine. Where each file or URL stopped is remembered (~/.local/state/route/positions.json);
        --resume starts there, and an item played to its end is forgotten.

        Probes each file, picks the device (a picker when there are several on a terminal and no --to), serves the
        file to it (transcoding when the device cannot play it) and plays the files as a queue; later files are
        probed while the first plays, and one that cannot be played is skipped with a line. A device reached by several
        protocols plays each file over the one that needs the least conversion (--via forces one). A status line shows
        device, title, state and progress; without a terminal, one line per state change.

        Keys: space pause/resume, ←/→ seek -10/+10 s, ↑/↓ volume, m mute, n next file, q stop.
        Another terminal can control the cast: route pause|play|stop|next|status|seek|volume|mute --to DEVICE.
        Subtitles (a .srt or .vtt beside a video with its base name, --subtitles FILE, or a text stream inside
        the file) go as a WebVTT track to devices that show them (Cast).
        Casting to "This computer" or to an address starts no network discovery.
        With --to given several times, or a group's name (`route group`), the queue plays on every device at once, started
        together; the keys and route pause|seek|stop --to GROUP reach them all; a device that fails or leaves is said
        once and the others play on. Through the route service (--detach too) the group is one session, which does
        not move.
        With --detach, the route service (`route service`) plays the queue: route returns once the device plays, and
        route pause|stop|status --to DEVICE, the desktop's media controls and apps control it.
        With --pick, the device is chosen in the route service's picker window (the terminal's picker where there is no
        display); when the files are all of one kind (sound, video, pictures), devices that cannot play it are greyed. Closing the picker casts nothing (exit 1). When
        there is no terminal (the file manager's "Play on a device…"), an error shows as a desktop notification too.
        """,
        examples: [
            "route cast song.flac", "route cast movie.mkv --to \"Living Room\"",
            "route cast *.mp3 --to this", "route cast talk.wav --to 10.0.0.5:49494",
            "route cast film.mkv --to \"Living Room TV\" --subtitles film.en.srt", "route cast song.flac --to 10.0.0.7:8009",
            "route cast album/*.flac --to Kitchen --detach", "route cast film.mkv --pick --detach",
            "route cast ~/Music/Album --to Kitchen --shuffle --loop", "route cast party.m3u --to Kitchen",
            "route cast https://example.com/talk.mp4 --to \"Living Room\"", "route cast film.mkv --to TV --resume",
        ])

    package static let service = CommandSpec(
        name: "service", summary: "run the route service: devices, casts and sessions for every app, on the session bus",
        positionals: "", minPositionals: 0, maxPositionals: 0,
        options: [CommonOptions.providers,
                  OptionSpec(name: "background", value: nil, help: "leave the terminal: a session of its own, messages to RUNTIME_DIR/service.log")],
        details: """
        Takes io.github.route.Route1 on the session bus and serves until interrupted or the bus ends: it listens for
        devices all the time, answers apps and the route CLI (devices, casts, sessions; Documentation/DBUS-API.md), plays
        each cast as a session with an MPRIS player, and stops its sessions' devices when it ends. Usually started for
        you: by systemd (systemctl --user, installed by make install), by the bus when an app asks for it, or by route
        itself on first use. ROUTE_SERVICE=off makes every command work in-process instead.
        """,
        examples: ["route service", "systemctl --user status route", "busctl --user introspect io.github.route.Route1 /io/github/route/Route1"])

    package static let watch = CommandSpec(
        name: "watch", summary: "show what other controllers play on the desktop's media controls", positionals: "",
        minPositionals: 0, maxPositionals: 0,
        options: [CommonOptions.providers, CommonOptions.json],
        details: """
        Runs until interrupted. Discovers every device and, while one plays a session that no `route cast` of yours
        plays — a renderer another app started, a Cast receiver a phone casts to — publishes it as an MPRIS player
        (org.mpris.MediaPlayer2.route.watch_…), so GNOME's and KDE's media controls, the media keys and playerctl show
        and control it (play, pause, stop, seek, volume go back to the device). The player appears when the device
        starts playing and leaves when it stops. Prints a line as each one starts and ends (--json: JSON lines).
        The route service mirrors sessions itself; with it running, route watch says what the service mirrors.
        """,
        examples: ["route watch", "route watch --providers upnp --json"])

    package static let sink = CommandSpec(
        name: "sink", summary: "play this computer's sound on a device: a sink for it in the sound settings", positionals: "",
        minPositionals: 0, maxPositionals: 0,
        options: [CommonOptions.toEach, CommonOptions.timeout, CommonOptions.providers, CommonOptions.json,
                  OptionSpec(name: "via", value: "PROTOCOL", help: "reach the device over this protocol (upnp, cast, a plugin's)"),
                  OptionSpec(name: "idle", value: "SECONDS", help: "stop the device after this long without sound (default 30)"),
                  OptionSpec(name: "format", value: "l16|wav", help: "send the sound as raw L16 or as WAV (default: L16 where the device takes it)"),
                  OptionSpec(name: "sound-server", value: "pipewire|pulseaudio", help: "make the sink there (default: the one this session runs)"),
                  OptionSpec(name: "detach", value: nil, help: "leave the sink to the route service: kept while the device is on the network, until --stop"),
                  OptionSpec(name: "stop", value: nil, help: "remove the route service's sink for --to")],
        details: """
        Runs until interrupted. Makes a sink named after the device on the desktop's sound server — PipeWire's own node, or
        on PulseAudio a null sink route records — so it shows in the sound settings and any app can play into it. When
        sound plays into it, the device starts playing it as an endless uncompressed stream (L16, else WAV: no encoder
        delay) from route's media server; after --idle seconds without sound the device is stopped, and it starts again
        when sound comes back. The sink's volume and mute are the device's, both ways (the sound is not scaled twice).
        PipeWire is told the device's delay, so players can keep a picture in step. While it plays, a "Desktop audio"
        session shows on the desktop's media controls. The sound server restarting makes the sink again; a device that
        goes away is tried again when sound plays. "This computer" is refused: its sound would play into the sink again.
        Prints a line as the device starts and stops (--json: JSON lines).
        --to twice or more, or a kept group (route group), makes one sink for a group: each member gets its own stream,
        the ones that hold sound back less started with as much silence as they hold it back less than the slowest (what
        their protocols typically do, or what route group delay sets), so that all sound together; the sink's volume is
        every member's; a member that fails is said and tried again when sound plays, the others play on.
        With --detach the route service keeps the sink instead, and returns: the sink is there while the device is on the
        network (it goes when the device leaves, so apps move to another sink, and comes back with it) until
        route sink --stop --to DEVICE.
        """,
        examples: ["route sink --to \"Living Room\"", "route sink --to Kitchen --idle 120", "route sink --to Kitchen --detach",
                   "route sink --to Kitchen --to \"Living Room\"   # one sink, both play it in step",
                   "paplay --device=route.<id> song.wav   # what `route sink` prints as the sink's name"])

    package static let pick = CommandSpec(
        name: "pick", summary: "choose a device: the picker window, or at the terminal", positionals: "",
        minPositionals: 0, maxPositionals: 0,
        options: [OptionSpec(name: "media", value: "audio|video|image", help: "devices that cannot play it are shown but cannot be chosen"),
                  CommonOptions.timeout, CommonOptions.providers, CommonOptions.json,
                  OptionSpec(name: "terminal", value: nil, help: "ask at the terminal even where a window could open")],
        details: """
        Shows the route service's device picker: a window listing the devices as they are found — This computer first,
        then by name, each with its protocols and what it plays now — in which typing filters, the arrows and Enter
        choose, and Escape or closing the window chooses nothing. A device that plays a cast of the service's offers
        "Move…" (Ctrl+M on its row): the window then asks where to (Escape: back to picking), moves the cast to the
        device chosen and says so, and goes on picking. Another app's cast shows as "another app plays …". Without a display (DISPLAY, WAYLAND_DISPLAY) or the
        service, the same list is asked at the terminal (a number or a name; Enter alone: nothing). Prints the choice as
        NAME<tab>ID (--json: the device as route devices --json gives it) and exits 0; exits 1 with nothing printed when
        nothing was chosen. Apps ask for the same window with PickDevice (Documentation/DBUS-API.md) or
        RouteServiceClient.pickDevice(media:).
        """,
        examples: ["route pick", "route pick --media video --json", "route cast film.mkv --to \"$(route pick --media video | cut -f2)\""])

    package static let move = CommandSpec(
        name: "move", summary: "move what plays to another device, from where it is", positionals: "",
        minPositionals: 0, maxPositionals: 0,
        options: [OptionSpec(name: "to", value: "DEVICE", help: "the device to move to: name (exact, unique prefix or close), id, or address (default: chosen in the picker window)"),
                  OptionSpec(name: "from", value: "DEVICE", help: "the device whose cast moves (default: the only cast, else the one that last started playing)"),
                  OptionSpec(name: "add", value: "DEVICE", help: "take DEVICE into a group's cast (--from GROUP: which): it plays from where the group is"),
                  OptionSpec(name: "remove", value: "DEVICE", help: "take DEVICE out of a group's cast: it stops, the others play on"),
                  CommonOptions.json],
        details: """
        Moves a cast of the route service to another device, across protocols (Cast, DLNA, This computer, a plugin's): the
        item playing goes on there from the same position — converted if that device cannot play it as it is — and the
        queue after it; the old device stops. A paused cast stays paused. Its media-controls player stays the same player
        and names the new device. While the new device starts, the old one is paused; if the new device does not play it
        within 15 s or refuses it, the cast plays on where it was and route says why (exit 1, or 5 if it cannot be reached).
        Casts made without the route service (no session bus, --providers) cannot be moved.
        Without --to, the device picker asks where to (a display is needed): choosing a device there moves the cast, and
        the window says how it went; Escape or closing it before a device is chosen moves nothing (exit 1). `route pick` moves casts too: a device that plays
        one offers "Move…" (Ctrl+M).
        A group's cast (`route cast --to A --to B`, or to a group) does not move; --add takes another device into it
        while it plays (from where the group is) and --remove takes one out (the others play on).
        """,
        examples: ["route move --to Kitchen", "route move --from \"Living Room TV\" --to this", "route move --to Kitchen --json", "route move",
                   "route move --add Kitchen --from Downstairs", "route move --remove \"Living Room\""])

    package static let group = CommandSpec(
        name: "group", summary: "keep groups of devices that play as one: add, list, remove, delay",
        positionals: "add NAME DEVICE...|list|remove NAME [DEVICE...]|delay DEVICE [DELAY]",
        minPositionals: 1, maxPositionals: .max,
        options: [CommonOptions.timeout, CommonOptions.providers, CommonOptions.json],
        details: """
        A group is devices a person names together, across protocols (a DLNA renderer, a Cast speaker, an AirPlay
        speaker): `route cast FILE --to NAME` then plays on all of them at once, and `route devices` lists it (kind
        group). `add NAME DEVICE...` keeps a group, or adds devices to one; each device is first found on the network
        (within --timeout) and kept by its id, so that a device renamed stays a member. `list` shows each group and which
        of its devices answer now (--json: the groups as kept). `remove NAME` forgets a group; `remove NAME DEVICE...`
        only those devices of it. Groups are kept in $XDG_CONFIG_HOME/route/groups.json (~/.config/route).
        The members of a group start together: each loads the first item, then all are played at one instant, each
        earlier by as much as it holds its sound back beyond the others. `delay DEVICE` says how much that is for a
        device (by default what its protocol typically holds back, measured in the lab: AirPlay 355 ms beyond a DLNA
        renderer, others 0); `delay DEVICE 120ms` sets it for that device (milliseconds, or 0.12s; negative for a
        device that plays ahead; `typical` forgets it): a speaker with a long sound path, a TV that delays sound for
        its picture. A group's sink (route sink --to GROUP) uses the same delay set for a device; what protocols hold
        a live stream back typically differs (AirPlay 250 ms, Cast 36 ms).
        A member that is not on the network when a group is cast to is said, and the others play; --to given several
        times plays on those devices at once without keeping a group.
        """,
        examples: ["route group add Downstairs Kitchen \"Living Room\"", "route group list", "route cast song.flac --to Downstairs",
                   "route group delay Kitchen 120ms", "route group remove Downstairs Kitchen", "route group remove Downstairs"])

    package static let probe = CommandSpec(
        name: "probe", summary: "show what a media file or URL contains", positionals: "FILE|URL", minPositionals: 1, maxPositionals: 1,
        options: [CommonOptions.json],
        details: "Container, MIME type, duration, streams (codec, channels, resolution), tags and cover art, via GStreamer.",
        examples: ["route probe song.mp3", "route probe --json movie.mkv"])

    package static let serve = CommandSpec(
        name: "serve", summary: "serve files over HTTP as route serves them to devices", positionals: "FILE...",
        minPositionals: 1, maxPositionals: .max,
        options: [
            OptionSpec(name: "bind", value: "ADDRESS", help: "local address to listen on (default 127.0.0.1)"),
            OptionSpec(name: "port", value: "PORT", help: "port (default: any free port)"),
            OptionSpec(name: "as", value: "MIME[,MIME]", help: "serve as a device that takes only these types would get it (transcoding)"),
        ],
        details: """
        Prints one URL per file (unguessable, per-file) and serves until interrupted: Range requests (206), HEAD,
        DLNA headers. With --as, the file is converted as for a device that takes only those types (a converted
        stream seeks with `?t=SECONDS` or `TimeSeekRange.dlna.org: npt=SECONDS-`).
        For debugging a device that cannot fetch media, and for bench/serve.
        """,
        examples: ["route serve movie.mkv", "route serve --bind 10.0.0.2 --port 8200 song.flac",
                   "route serve --as audio/mpeg song.flac", "route serve --as video/mp2t movie.mkv"])

    package static let providers = CommandSpec(
        name: "providers", summary: "show each provider's state: running, failed (and why), stopped", positionals: "",
        minPositionals: 0, maxPositionals: 0, options: [CommonOptions.json, CommonOptions.timeout, CommonOptions.providers],
        details: """
        Runs the providers for --timeout seconds (default 3), then prints each one's state, how many routes it found,
        how many times it was restarted after failing, and its last error. A provider that fails is run again after a
        backoff (1 s, doubling to 60 s); its devices are dropped meanwhile.
        Drop-in plugins (executables named route-provider-NAME in $ROUTE_PLUGIN_PATH, ~/.local/lib/route/plugins,
        PREFIX/lib/route/plugins or beside route) are providers too, shown with their path and version: one that
        crashes, hangs or breaks the protocol is restarted (1 s doubling to 5 min) and quarantined after 5 failures
        in 3 minutes, until its file changes. Plugins/PROTOCOL.md tells how to write one.
        """,
        examples: ["route providers", "route providers --json --timeout 5"])

    package static let browse = CommandSpec(
        name: "browse", summary: "print what the shared SSDP and mDNS discovery see, raw, as it arrives", positionals: "TYPE...",
        minPositionals: 1, maxPositionals: .max,
        options: [CommonOptions.json, OptionSpec(name: "timeout", value: "SECONDS", help: "stop after this long (default: run until Ctrl-C)")],
        details: """
        The tool for a device that does not show. A TYPE that starts with _ is a DNS-SD service type, browsed and
        resolved through avahi-daemon (+ found, - removed, with host, address, port and TXT); anything else is an SSDP
        search target (urn:…, upnp:rootdevice, ssdp:all), searched now and every 10 s (+ reply or alive, - byebye).
        With --json, one JSON object per line.
        """,
        examples: ["route browse _googlecast._tcp urn:schemas-upnp-org:device:MediaRenderer:1", "route browse ssdp:all --timeout 5",
                   "route browse _mpd._tcp --json"])

    package static let plugins = CommandSpec(
        name: "plugins", summary: "list the drop-in plugins route finds, and where it looks", positionals: "", minPositionals: 0,
        maxPositionals: 0, options: [CommonOptions.json],
        details: """
        Starts nothing: prints the search path (ROUTE_PLUGIN_PATH, ~/.local/lib/route/plugins, PREFIX/lib/route/plugins,
        the directory of route itself) and each plugin found there — an executable named route-provider-NAME, the
        first of each NAME. `route providers` runs them and shows their state, version and last error.
        Plugins/PROTOCOL.md tells how to write one.
        """,
        examples: ["route plugins", "ROUTE_PLUGIN_PATH=~/src/my-plugin route plugins --json"])

    package static let completion = CommandSpec(
        name: "completion", summary: "print shell completions: bash, zsh or fish", positionals: "SHELL", minPositionals: 1, maxPositionals: 1,
        options: [], details: "Generated from the same declarations as --help. `make install` installs all three.",
        examples: ["route completion bash > ~/.local/share/bash-completion/completions/route",
                   "route completion fish > ~/.config/fish/completions/route.fish"])

    package static let manpage = CommandSpec(
        name: "manpage", summary: "print the man page (roff)", positionals: "", minPositionals: 0, maxPositionals: 0,
        options: [], details: "Generated from the same declarations as --help. `make install` installs it as route(1).",
        examples: ["route manpage | man -l -"])

    /// The commands that control a running cast from another terminal.
    package static let controls: [(spec: CommandSpec, command: String)] = [
        control("play", "resume playback on a device", "", []),
        control("pause", "pause playback on a device", "", []),
        control("stop", "stop playback on a device (ends its `route cast`)", "", []),
        control("next", "skip to the next file of a device's `route cast` (ends it after the last)", "", []),
        control("status", "show what a device is playing", "", [CommonOptions.json, CommonOptions.timeout, CommonOptions.providers]),
        control("seek", "seek on a device: 90, 1:30, +30 or -10 (seconds)", "POSITION", []),
        control("volume", "set a device's volume, 0 to 100", "LEVEL", []),
        control("mute", "mute or unmute a device: on or off", "on|off", []),
    ]

    private static func control(_ name: String, _ summary: String, _ positional: String, _ extra: [OptionSpec])
        -> (spec: CommandSpec, command: String)
    {
        let n = positional.isEmpty ? 0 : 1
        let example = positional.isEmpty ? "route \(name) --to \"This computer\""
            : "route \(name) \(["seek": "+30", "volume": "40", "mute": "on"][name] ?? "") --to \"Living Room\""
        return (CommandSpec(
            name: name, summary: summary, positionals: positional, minPositionals: n, maxPositionals: n,
            options: [CommonOptions.to] + extra,
            details: "Reaches the `route cast` playing on that device. Without --to: the only running cast."
                + (name == "volume" || name == "mute" ? " A group's volume is its loudest device's; setting it keeps the others' balance."
                   + " --to one device of a group sets that device's alone." : "")
                + (name == "status" ? " When no cast of route's plays on the --to device, it is found on the network (within --timeout"
                   + " seconds) and what it plays is shown, whichever controller started it." : ""),
            examples: [example]), name)
    }
}
