// CUPnP: the system library behind <upnp/upnp.h>, imported into Swift as a module (flags from pkg-config).
#include <upnp/upnp.h>
