// CGStreamer: the system library behind <gst/gst.h>, imported into Swift as a module (flags from pkg-config).
#include <gst/gst.h>
