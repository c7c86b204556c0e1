// PickerList: what the device picker lists, shared by its window and the terminal picker — This computer first, then
// by name; an icon per kind; the protocols and what each device plays now; greyed what cannot play the kind asked for.

import FoundationEssentials
import RouteClient
import RouteCore

extension PickMedia {
    /// Parses `--media`'s value.
    /// - Throws: `UsageError` naming the kinds.
    package init(option text: String) throws {
        guard let media = PickMedia(rawValue: text.lowercased()) else {
            throw UsageError(description: "--media takes audio, video or image, not \"\(text)\"")
        }
        self = media
    }

    /// What a cast of `sources` asks the picker for: the one kind all its files are of; nil when they are of several
    /// kinds, or folders, playlists or URLs (whose kinds show only once read).
    package init?(askedBy sources: [String]) {
        let kinds = Set(sources.map { source -> PickMedia? in
            CastSourceKinds.isURL(source) || CastSourceKinds.isFolderOrPlaylist(source) ? nil : PickMedia(path: source)
        })
        guard kinds.count == 1, let kind = kinds.first ?? nil else { return nil }
        self = kind
    }
}

/// One row of the picker: a device, as a person sees it.
package struct PickerEntry: Equatable, Sendable {
    package var id: String
    package var name: String
    /// Its protocols, what it plays now, and why it cannot be chosen.
    package var subtitle: String
    /// An icon name of the freedesktop icon theme.
    package var icon: String
    /// What typing filters on: every name of the device and its protocols.
    package var search: String
    package var choosable: Bool
    /// What a session of the route service plays on the device (which the picker can move), nil when none does.
    package var sessionTitle: String?
}

/// The picker's rows for a list of devices.
package enum PickerList {
    /// `devices` as rows: This computer first, then by name; `playing` says what each device (by id) plays now, in a
    /// session of the service's or another controller's; a device that cannot play `media` is listed but not choosable.
    package static func entries(_ devices: [MediaDevice], playing: [String: RouteServiceClient.Playing] = [:],
                                media: PickMedia? = nil) -> [PickerEntry] {
        // A device that plays but is in no list (one named by its address) is listed too.
        let unlisted = playing.filter { id, _ in device(id, in: devices) == nil }.map(\.value.device)
        let sorted = (devices + unlisted).sorted { first, second in
            let (firstLocal, secondLocal) = (isThisComputer(first), isThisComputer(second))
            if firstLocal != secondLocal { return firstLocal }
            return first.name.sortsBefore(second.name)
        }
        // Names shown on more than one row: a device on the network may call itself "This computer", or the same as
        // another device; its row then says what it is and where, so that no two rows look the same.
        let shownNames = sorted.map { DisplayText.clean($0.name).lowercased() }
        let repeated = Set(shownNames.filter { name in shownNames.filter { $0 == name }.count > 1 })
        return sorted.map { device in
            let protocols = device.protocols.map { protocolNames[$0] ?? $0 }.joined(separator: ", ")
            var parts = [protocols]
            var name = DisplayText.clean(device.name)
            if !isThisComputer(device), repeated.contains(name.lowercased()) {
                name += " (\(protocols)" + (device.address.map { " at " + AnnouncedAddress.host(of: $0) } ?? "") + ")"
            }
            // What plays, before the other names (the line may be cut short). Sessions and mirrors may know the device
            // by the id of another of its routes; a session of the service's (which can be moved) over another app's.
            let known = [playing[device.id]].compactMap { $0 } + device.routes.compactMap { playing[$0.id] }
            let now = known.first { $0.session != nil } ?? known.first
            let title = now.map { $0.title.trimmingSpaces.isEmpty ? "something" : $0.title }
            if let now, let title { parts.append(now.session == nil ? "another app plays \(title)" : "playing \(title)") }
            let others = device.names.filter { $0 != device.name }
            if !others.isEmpty { parts.append("also " + others.map { "\"\($0)\"" }.joined(separator: ", ")) }
            // A device only a session knows (named by its address) can be moved from, not chosen: the service finds
            // what is chosen in its lists.
            let listed = unlisted.allSatisfy { $0.id != device.id }
            let choosable = listed && (media.map { device.capabilities.contains($0.capability) } ?? true)
            if !listed { parts.append("reached by its address") }
            else if !choosable, let media { parts.append("cannot play \(media.rawValue)") }
            return PickerEntry(id: device.id, name: name, subtitle: DisplayText.clean(parts.joined(separator: " · ")),
                               icon: icon(for: device), search: (device.names + device.protocols + device.protocols.compactMap { protocolNames[$0] }).joined(separator: " "),
                               choosable: choosable, sessionTitle: now?.session == nil ? nil : title.map { DisplayText.clean($0) })
        }
    }

    /// The device of `devices` that `id` names: its own id, or the id of one of its routes.
    package static func device(_ id: String, in devices: [MediaDevice]) -> MediaDevice? {
        devices.first { $0.id == id } ?? devices.first { $0.routes.contains { $0.id == id } }
    }

    /// What a person calls the built-in providers' protocols.
    private static let protocolNames = ["local": "this computer's screen and speakers", "upnp": "DLNA", "cast": "Google Cast", "mpd": "MPD"]

    /// The freedesktop icon for the device's kind. The computer's icon is This computer's alone: a device on the network
    /// that says it is a computer gets a server's.
    package static func icon(for device: MediaDevice) -> String {
        switch device.kind {
        case .computer: isThisComputer(device) ? "computer" : "network-server"
        case .tv: "video-display"
        case .speaker: "audio-speakers"
        case .receiver: "multimedia-player"
        case .group: "network-workgroup"
        case .other: "multimedia-player"
        }
    }

    private static func isThisComputer(_ device: MediaDevice) -> Bool {
        device.routes.contains { $0.provider == MediaRoute.localProvider }
    }
}
