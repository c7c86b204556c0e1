// CSoup: the system library behind <libsoup/soup.h>, imported into Swift as a module (flags from pkg-config).
#include <libsoup/soup.h>
