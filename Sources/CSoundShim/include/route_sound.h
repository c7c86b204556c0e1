// route_sound.h: a sound-server sink that hands route the audio played into it, in plain C types — one
// implementation on PipeWire (a sink node of route's own) and one on PulseAudio (a null sink whose monitor route
// records). Swift cannot import PipeWire's POD builder macros or libpulse's callbacks comfortably; this is the
// one place that speaks to either.
#ifndef ROUTE_SOUND_H
#define ROUTE_SOUND_H

#include <stddef.h>
#include <stdint.h>

/// What a sink tells its owner. Every callback runs on the sound server library's own (not real-time) thread.
typedef struct {
    /// Interleaved signed 16-bit little-endian samples played into the sink (as heard at full volume: the sink's
    /// volume is the device's, not applied to these samples).
    void (*audio)(void *user, const void *bytes, size_t count);
    /// The sink's volume (0…1, as sound settings show it: cubic, 1 = 100 %) or mute changed, by a person or an app.
    void (*volume)(void *user, float level, int muted);
    /// The sink failed for good (the sound server went away); `message` says why.
    void (*failed)(void *user, const char *message);
} route_sound_callbacks;

/// One sink on one sound server.
typedef struct route_sound_sink route_sound_sink;

/// Which sound server a sink is made on.
typedef enum { ROUTE_SOUND_PIPEWIRE = 0, ROUTE_SOUND_PULSEAUDIO = 1 } route_sound_server;

/// Makes a sink called `name` (a node or sink name: letters, digits, '.', '_', '-') that sound settings show as
/// `description`, taking `rate` Hz and `channels` channels. Returns NULL and sets `*error` (free it with free())
/// when the server cannot be reached or refuses. The sink reports through `callbacks` until it is freed.
route_sound_sink *route_sound_sink_new(route_sound_server server, const char *name, const char *description,
                                       unsigned rate, unsigned channels, route_sound_callbacks callbacks, void *user,
                                       char **error);

/// Shows `level` (0…1) and `muted` on the sink, as the device reports them; no volume callback follows.
void route_sound_sink_set_volume(route_sound_sink *sink, float level, int muted);

/// Reports the delay after the sink (the device's buffer) to the sound server, so players can keep pictures in step.
/// Returns 0 when the server took it, -1 when it has no place for it (PulseAudio).
int route_sound_sink_set_delay(route_sound_sink *sink, uint64_t nanoseconds);

/// Removes the sink from the sound server and frees it. No callback runs after this returns.
void route_sound_sink_free(route_sound_sink *sink);

#endif
