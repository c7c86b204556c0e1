#!/usr/bin/python3
"""route-cast.py: an app in another language uses the route service over D-Bus (python3-gi, Gio).

Lists the devices, then casts FILE to DEVICE by sending the open file's descriptor (as a sandboxed app that sees
no paths would) and prints the session's state until it plays. Without DEVICE, a person chooses one in route's device
picker (PickDevice: a request object answered by a Response signal, as xdg-desktop-portal's are).

    route-cast.py                 list the devices
    route-cast.py FILE DEVICE     cast FILE to DEVICE (a name, a prefix, an id or an address)
    route-cast.py FILE            cast FILE to the device chosen in the picker
"""
import os
import sys
from gi.repository import Gio, GLib

NAME, PATH = "io.github.route.Route1", "/io/github/route/Route1"
bus = Gio.bus_get_sync(Gio.BusType.SESSION)
manager = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, NAME, PATH, NAME + ".Manager")

for device in manager.call_sync("GetDevices", None, Gio.DBusCallFlags.NONE, 5000).unpack()[0]:
    print(f"{device['name']:24}  {device['kind']:8}  {', '.join(r['protocolName'] for r in device['routes'])}")
if len(sys.argv) < 2:
    sys.exit(0)


def pick():
    """The id of the device a person chooses in route's picker window; exits when they choose none."""
    loop, answer = GLib.MainLoop(), {}

    def response(connection, sender, path, interface, signal, parameters):
        if path == answer.get("handle"):
            answer["code"], answer["results"] = parameters.unpack()
            loop.quit()

    # Listening before asking: the answer may come at once.
    bus.signal_subscribe(NAME, NAME + ".Request", "Response", None, None, Gio.DBusSignalFlags.NONE, response)
    options = {"media": GLib.Variant("s", "audio")}
    if os.environ.get("DISPLAY"):
        options["display"] = GLib.Variant("s", os.environ["DISPLAY"])
    answer["handle"] = manager.call_sync("PickDevice", GLib.Variant("(sa{sv})", ("", options)), Gio.DBusCallFlags.NONE, 5000).unpack()[0]
    loop.run()
    if answer["code"] == 1:
        sys.exit("route-cast.py: no device was chosen")
    if answer["code"] != 0:
        sys.exit(f"route-cast.py: the picker failed: {answer['results'].get('error')}")
    return answer["results"]["device"]["id"]


file = sys.argv[1]
device = sys.argv[2] if len(sys.argv) > 2 else pick()
descriptors = Gio.UnixFDList.new()
with open(file, "rb") as media:
    index = descriptors.append(media.fileno())
try:
    reply, _ = manager.call_with_unix_fd_list_sync(
        "Cast", GLib.Variant("(sasaha{sv})", (device, [], [index], {"endsWithClient": GLib.Variant("b", False)})),
        Gio.DBusCallFlags.NONE, 60000, descriptors)
except GLib.Error as error:
    sys.exit(f"route-cast.py: {error.message}")
path = reply.unpack()[0]
session = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, NAME, path, NAME + ".Session")
loop = GLib.MainLoop()

def changed(proxy, properties, invalidated):
    state = properties.unpack().get("State")
    if state:
        print(f"{path}: {state}")
    if state == "playing":
        loop.quit()

def ended(proxy, sender, signal, parameters):
    if signal == "Ended":
        reason, error, message = parameters.unpack()
        print(f"{path} ended: {reason} {message}")
        loop.quit()

session.connect("g-properties-changed", changed)
session.connect("g-signal", ended)
state = session.get_cached_property("State").unpack()
if state == "playing":
    # It may play already when Cast answers (a busy machine): say so as a change would have.
    print(f"{path}: {state}")
else:
    GLib.timeout_add_seconds(30, loop.quit)
    loop.run()
