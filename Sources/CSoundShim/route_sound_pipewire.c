// route_sound_pipewire.c: the sink on PipeWire — a stream of media class Audio/Sink, so the graph has a sink node
// that is route's own (as PipeWire's raop-sink has): no null sink, no monitor. The device does the volume: the node's
// software volume is held at 1 and its volume is reported to route instead.
#define _GNU_SOURCE
#include "route_sound_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/latency-utils.h>
#include <spa/param/props.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>

/// Frames PipeWire hands route at a time (the node's latency): 1024 at 44.1 kHz is 23 ms, 43 wake-ups a second — a tenth
/// of a second's worth would add delay, 441 (10 ms) costs twice the CPU in wake-ups for 13 ms less (bench/sink).
#ifndef ROUTE_SOUND_QUANTUM
#define ROUTE_SOUND_QUANTUM 1024
#endif
/// The least sound route is handed at a time, in milliseconds, whatever quantum the graph runs at.
#ifndef ROUTE_SOUND_BATCH_MS
#define ROUTE_SOUND_BATCH_MS 20
#endif

struct route_pw_sink {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct spa_hook core_listener;
    struct pw_stream *stream;
    struct spa_hook stream_listener;
    route_sound_callbacks callbacks;
    void *user;
    unsigned channels;
    /// Sound gathered for route, and how much makes a batch (ROUTE_SOUND_BATCH_MS of it).
    uint8_t batch[65536];
    uint32_t gathered;
    uint32_t batch_bytes;
    float level;
    int muted;
    int failed;
};

static void fail(struct route_pw_sink *sink, const char *message) {
    if (sink->failed) return;
    sink->failed = 1;
    sink->callbacks.failed(sink->user, message);
}

/// Keeps the node's software volume at 1 and its software mute off (the device applies both). With `level`, also
/// sets the node's volume and mute, as the device reports them. Loop thread, or with the loop locked.
static void hold_software_volume(struct route_pw_sink *sink, const float *level, int muted) {
    float volumes[SPA_AUDIO_MAX_CHANNELS], unity[SPA_AUDIO_MAX_CHANNELS];
    float off = 0.0f, mute = muted ? 1.0f : 0.0f;
    for (unsigned i = 0; i < sink->channels; i++) {
        volumes[i] = level ? *level * *level * *level : 1.0f;
        unity[i] = 1.0f;
    }
    if (level) {
        sink->level = *level;
        sink->muted = muted;
        pw_stream_set_control(sink->stream, SPA_PROP_channelVolumes, sink->channels, volumes, SPA_PROP_mute, 1, &mute,
                              SPA_PROP_softVolumes, sink->channels, unity, SPA_PROP_softMute, 1, &off, 0);
    } else {
        pw_stream_set_control(sink->stream, SPA_PROP_softVolumes, sink->channels, unity, SPA_PROP_softMute, 1, &off, 0);
    }
}

/// Hands route what was gathered (loop thread).
static void hand_on(struct route_pw_sink *sink) {
    if (sink->gathered == 0) return;
    sink->callbacks.audio(sink->user, sink->batch, sink->gathered);
    sink->gathered = 0;
}

static void on_process(void *data) {
    struct route_pw_sink *sink = data;
    struct pw_buffer *buffer = pw_stream_dequeue_buffer(sink->stream);
    if (buffer == NULL) return;
    struct spa_data *d = &buffer->buffer->datas[0];
    if (d->data != NULL && d->chunk != NULL) {
        uint32_t offset = SPA_MIN(d->chunk->offset, d->maxsize);
        uint32_t size = SPA_MIN(d->chunk->size, d->maxsize - offset);
        const uint8_t *bytes = SPA_PTROFF(d->data, offset, const uint8_t);
        // Gathered into at least a batch's worth before route hears it: an app that asks the graph for small quanta
        // (a call, a game) would otherwise wake route, and each device's connection, a hundred times a second.
        while (size > 0) {
            uint32_t room = (uint32_t)sizeof(sink->batch) - sink->gathered;
            uint32_t take = SPA_MIN(size, room);
            memcpy(sink->batch + sink->gathered, bytes, take);
            sink->gathered += take;
            bytes += take;
            size -= take;
            if (sink->gathered >= sink->batch_bytes || sink->gathered == sizeof(sink->batch)) hand_on(sink);
        }
    }
    pw_stream_queue_buffer(sink->stream, buffer);
}

/// A person or an app changed the node's volume or mute: tell route, and keep the software volume at 1.
static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct route_pw_sink *sink = data;
    if (id != SPA_PARAM_Props || param == NULL || !spa_pod_is_object(param)) return;
    float level = sink->level;
    int muted = sink->muted;
    int mentioned = 0;
    const struct spa_pod_prop *prop;
    SPA_POD_OBJECT_FOREACH((const struct spa_pod_object *)param, prop) {
        if (prop->key == SPA_PROP_channelVolumes) {
            float volumes[SPA_AUDIO_MAX_CHANNELS];
            uint32_t n = spa_pod_copy_array(&prop->value, SPA_TYPE_Float, volumes, SPA_AUDIO_MAX_CHANNELS);
            if (n == 0) continue;
            float sum = 0;
            for (uint32_t i = 0; i < n; i++) sum += volumes[i];
            level = cbrtf(sum / (float)n);
            mentioned = 1;
        } else if (prop->key == SPA_PROP_mute) {
            bool value;
            if (spa_pod_get_bool(&prop->value, &value) == 0) {
                muted = value;
                mentioned = 1;
            }
        }
    }
    if (!mentioned) return;
    int changed = fabsf(level - sink->level) > 0.001f || muted != sink->muted;
    sink->level = level;
    sink->muted = muted;
    hold_software_volume(sink, NULL, 0);
    if (changed) sink->callbacks.volume(sink->user, level, muted);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct route_pw_sink *sink = data;
    (void)old;
    if (state == PW_STREAM_STATE_ERROR) {
        char message[512];
        snprintf(message, sizeof message, "PipeWire ended the sink: %s", error ? error : "no reason given");
        fail(sink, message);
    } else if (state == PW_STREAM_STATE_UNCONNECTED) {
        fail(sink, "PipeWire disconnected the sink");
    } else if (state == PW_STREAM_STATE_PAUSED) {
        // Nothing plays any more: what was gathered is the end of the sound, not the start of the next.
        hand_on(sink);
    }
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .process = on_process,
};

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct route_pw_sink *sink = data;
    (void)seq;
    if (id != PW_ID_CORE) return;
    char text[512];
    if (res == -EPIPE) {
        snprintf(text, sizeof text, "PipeWire went away (the sound server stopped or restarted)");
    } else {
        snprintf(text, sizeof text, "PipeWire: %s (%s)", message ? message : "error", spa_strerror(res));
    }
    fail(sink, text);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .error = on_core_error,
};

static char *describe(const char *what, int code) {
    char *text = NULL;
    if (asprintf(&text, "%s: %s", what, strerror(code)) < 0) text = NULL;
    return text;
}

void route_pw_sink_free(struct route_pw_sink *sink) {
    if (sink == NULL) return;
    if (sink->loop) pw_thread_loop_lock(sink->loop);
    // Destroying the stream disconnects it: that is not a failure to report.
    sink->failed = 1;
    if (sink->stream) pw_stream_destroy(sink->stream);
    if (sink->core) pw_core_disconnect(sink->core);
    if (sink->loop) {
        pw_thread_loop_unlock(sink->loop);
        pw_thread_loop_stop(sink->loop);
    }
    if (sink->context) pw_context_destroy(sink->context);
    if (sink->loop) pw_thread_loop_destroy(sink->loop);
    free(sink);
}

struct route_pw_sink *route_pw_sink_new(const char *name, const char *description, unsigned rate, unsigned channels,
                                        route_sound_callbacks callbacks, void *user, char **error) {
    pw_init(NULL, NULL);
    struct route_pw_sink *sink = calloc(1, sizeof *sink);
    if (sink == NULL) {
        *error = describe("cannot make a PipeWire sink", ENOMEM);
        return NULL;
    }
    sink->callbacks = callbacks;
    sink->user = user;
    sink->channels = SPA_CLAMP(channels, 1u, 2u);
    sink->batch_bytes = SPA_MIN((uint32_t)sizeof(sink->batch), rate * sink->channels * 2 * ROUTE_SOUND_BATCH_MS / 1000);
    sink->level = 1.0f;
    sink->loop = pw_thread_loop_new("route-pipewire", NULL);
    if (sink->loop) sink->context = pw_context_new(pw_thread_loop_get_loop(sink->loop), NULL, 0);
    if (sink->context == NULL || pw_thread_loop_start(sink->loop) < 0) {
        *error = describe("cannot start PipeWire's client loop", errno ? errno : ENOMEM);
        route_pw_sink_free(sink);
        return NULL;
    }
    pw_thread_loop_lock(sink->loop);
    sink->core = pw_context_connect(sink->context, NULL, 0);
    if (sink->core == NULL) {
        int code = errno;
        pw_thread_loop_unlock(sink->loop);
        *error = describe("cannot reach PipeWire (is it running for this user? PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR "
                          "must name its socket's folder)", code);
        route_pw_sink_free(sink);
        return NULL;
    }
    pw_core_add_listener(sink->core, &sink->core_listener, &core_events, sink);
    char latency[32];
    snprintf(latency, sizeof latency, "%u/%u", ROUTE_SOUND_QUANTUM, rate);
    struct pw_properties *props = pw_properties_new(
        PW_KEY_MEDIA_CLASS, "Audio/Sink", PW_KEY_NODE_NAME, name, PW_KEY_NODE_DESCRIPTION, description,
        PW_KEY_MEDIA_NAME, description, PW_KEY_NODE_LATENCY, latency, PW_KEY_DEVICE_ICON_NAME, "network-wireless",
        "node.want-driver", "true", NULL);
    sink->stream = pw_stream_new(sink->core, name, props);
    if (sink->stream == NULL) {
        int code = errno;
        pw_thread_loop_unlock(sink->loop);
        *error = describe("PipeWire refused the sink", code);
        route_pw_sink_free(sink);
        return NULL;
    }
    pw_stream_add_listener(sink->stream, &sink->stream_listener, &stream_events, sink);
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    struct spa_audio_info_raw info = {.format = SPA_AUDIO_FORMAT_S16_LE, .rate = rate, .channels = sink->channels};
    if (sink->channels == 2) {
        info.position[0] = SPA_AUDIO_CHANNEL_FL;
        info.position[1] = SPA_AUDIO_CHANNEL_FR;
    } else {
        info.position[0] = SPA_AUDIO_CHANNEL_MONO;
    }
    const struct spa_pod *params[1] = {spa_format_audio_raw_build(&b, SPA_PARAM_EnumFormat, &info)};
    int result = pw_stream_connect(sink->stream, PW_DIRECTION_INPUT, PW_ID_ANY,
                                   PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    pw_thread_loop_unlock(sink->loop);
    if (result < 0) {
        *error = describe("PipeWire refused the sink", -result);
        route_pw_sink_free(sink);
        return NULL;
    }
    return sink;
}

void route_pw_sink_set_volume(struct route_pw_sink *sink, float level, int muted) {
    pw_thread_loop_lock(sink->loop);
    float clamped = SPA_CLAMP(level, 0.0f, 1.0f);
    hold_software_volume(sink, &clamped, muted);
    pw_thread_loop_unlock(sink->loop);
}

int route_pw_sink_set_delay(struct route_pw_sink *sink, uint64_t nanoseconds) {
    uint8_t buffer[256];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    // The latency after the sink's input port, as PipeWire 0.3.65's raop-sink reports its receiver's buffer.
    struct spa_latency_info info = SPA_LATENCY_INFO(SPA_DIRECTION_INPUT);
    info.min_ns = info.max_ns = nanoseconds;
    const struct spa_pod *params[1] = {spa_latency_build(&b, SPA_PARAM_Latency, &info)};
    pw_thread_loop_lock(sink->loop);
    int result = pw_stream_update_params(sink->stream, params, 1);
    pw_thread_loop_unlock(sink->loop);
    return result < 0 ? -1 : 0;
}
