// CGStreamerApp: the system library behind <gst/app/app.h>, imported into Swift as a module (flags from pkg-config).
#include <gst/app/app.h>
