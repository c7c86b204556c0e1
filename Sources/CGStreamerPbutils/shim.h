// CGStreamerPbutils: the system library behind <gst/pbutils/pbutils.h>, imported into Swift as a module (flags from pkg-config).
#include <gst/pbutils/pbutils.h>
