// libmpdclient, MPD's own client library, for the MPD plugin.
#include <mpd/client.h>

/// Sends `decoders` (libmpdclient has no function for it; Swift cannot call the variadic mpd_send_command).
static inline bool route_mpd_send_decoders(struct mpd_connection *connection) {
    return mpd_send_command(connection, "decoders", NULL);
}
