// route-client-example: the README's example of the RouteClient library, built and run by the tests as written.
import RouteClient
import RouteCore

// route-client-example [FILE DEVICE]: lists the devices; with a file and a device, plays it there until it plays.
let route = try await RouteServiceClient.connect()
for device in try await route.devices() {
    print(device.name, "-", device.protocols.joined(separator: ", "))
}
let arguments = CommandLine.arguments
if arguments.count == 3 {
    let device = try await route.device(matching: arguments[2])
    let session = try await route.cast([.path(arguments[1])], to: device.id)
    for await event in session.events() {
        switch event {
        case .status(let status):
            print(status.playback.state, status.title, "on", status.device.name)
            if status.playback.state == .playing { try await session.stop() }
        case .notice(let words):
            print(words)
        case .ended(let end):
            print("ended:", end.reason, end.message)
        }
    }
}
