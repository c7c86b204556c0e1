// route_sound.c: route_sound.h's sink, handed to the implementation for its sound server.
#include "route_sound_internal.h"

#include <stdlib.h>

struct route_sound_sink {
    route_sound_server server;
    struct route_pw_sink *pipewire;
    struct route_pa_sink *pulse;
};

route_sound_sink *route_sound_sink_new(route_sound_server server, const char *name, const char *description,
                                       unsigned rate, unsigned channels, route_sound_callbacks callbacks, void *user,
                                       char **error) {
    route_sound_sink *sink = calloc(1, sizeof *sink);
    if (sink == NULL) return NULL;
    sink->server = server;
    if (server == ROUTE_SOUND_PIPEWIRE) {
        sink->pipewire = route_pw_sink_new(name, description, rate, channels, callbacks, user, error);
    } else {
        sink->pulse = route_pa_sink_new(name, description, rate, channels, callbacks, user, error);
    }
    if (sink->pipewire == NULL && sink->pulse == NULL) {
        free(sink);
        return NULL;
    }
    return sink;
}

void route_sound_sink_set_volume(route_sound_sink *sink, float level, int muted) {
    if (sink->pipewire) route_pw_sink_set_volume(sink->pipewire, level, muted);
    if (sink->pulse) route_pa_sink_set_volume(sink->pulse, level, muted);
}

int route_sound_sink_set_delay(route_sound_sink *sink, uint64_t nanoseconds) {
    return sink->pipewire ? route_pw_sink_set_delay(sink->pipewire, nanoseconds) : -1;
}

void route_sound_sink_free(route_sound_sink *sink) {
    if (sink == NULL) return;
    route_pw_sink_free(sink->pipewire);
    route_pa_sink_free(sink->pulse);
    free(sink);
}
