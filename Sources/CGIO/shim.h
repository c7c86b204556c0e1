// CGIO: GLib's GIO (D-Bus, file descriptor lists) and the GLib main loop, imported into Swift (flags from pkg-config).
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
