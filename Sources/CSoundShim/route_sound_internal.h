// route_sound_internal.h: the two implementations behind route_sound.h, one per sound server.
#ifndef ROUTE_SOUND_INTERNAL_H
#define ROUTE_SOUND_INTERNAL_H

#include "route_sound.h"

struct route_pw_sink;
struct route_pa_sink;

struct route_pw_sink *route_pw_sink_new(const char *name, const char *description, unsigned rate, unsigned channels,
                                        route_sound_callbacks callbacks, void *user, char **error);
void route_pw_sink_set_volume(struct route_pw_sink *sink, float level, int muted);
int route_pw_sink_set_delay(struct route_pw_sink *sink, uint64_t nanoseconds);
void route_pw_sink_free(struct route_pw_sink *sink);

struct route_pa_sink *route_pa_sink_new(const char *name, const char *description, unsigned rate, unsigned channels,
                                        route_sound_callbacks callbacks, void *user, char **error);
void route_pa_sink_set_volume(struct route_pa_sink *sink, float level, int muted);
void route_pa_sink_free(struct route_pa_sink *sink);

#endif
