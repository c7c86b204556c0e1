// CAvahiClient: the system library behind <avahi-client/client.h>, imported into Swift as a module (flags from pkg-config).
#include <avahi-client/client.h>
