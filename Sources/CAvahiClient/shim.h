// CAvahiClient: avahi-client (browsing and resolving DNS-SD over avahi-daemon's D-Bus API) with its threaded
// event loop, imported into Swift as a module (flags from pkg-config).
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/strlst.h>
#include <avahi-common/address.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
