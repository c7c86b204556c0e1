// CUPnP: libupnp 1.8 (SSDP, SOAP, GENA) and its ixml DOM, imported into Swift as a module (flags from pkg-config).
#include <upnp/upnp.h>
#include <upnp/upnptools.h>
#include <upnp/ixml.h>
