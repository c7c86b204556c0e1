// route_sound_pulse.c: the sink on PulseAudio. A PulseAudio client cannot be a sink itself, so route loads a null sink
// named for the device (float samples, so nothing is rounded before route reads it), records its monitor in
// 20 ms fragments (as often as PipeWire hands route sound), and undoes the sink's software volume on what it reads:
// the device applies the volume instead.
#include "route_sound_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pulse/pulseaudio.h>

struct route_pa_sink {
    pa_threaded_mainloop *loop;
    pa_context *context;
    pa_stream *record;
    route_sound_callbacks callbacks;
    void *user;
    char *name;
    char *description;
    /// The monitor source of our sink.
    char *monitor;
    /// Gives up making the sink when PulseAudio does not answer.
    pa_time_event *deadline;
    pa_sample_spec spec;
    uint32_t module;
    uint32_t sink_index;
    /// The sink's software volume as a factor on samples (undone on what route reads), its volume as shown, mute.
    float factor;
    /// After a change of volume, fragments still read with the larger of the old and new factors: samples mixed at the
    /// new volume and divided by an old, smaller one would come out louder than full scale.
    float settling_factor;
    int settling;
    float level;
    int muted;
    int ready;
    int failed;
    char *error;
    /// Samples converted and not yet handed on, and how many bytes make a batch.
    int16_t *converted;
    size_t converted_capacity;
    size_t gathered;
    size_t batch_bytes;
};

static void fail(struct route_pa_sink *sink, const char *message) {
    // Whoever waits on the loop (making or freeing the sink) must look again, whatever happened before.
    pa_threaded_mainloop_signal(sink->loop, 0);
    if (sink->failed) return;
    sink->failed = 1;
    if (sink->ready) {
        sink->callbacks.failed(sink->user, message);
    } else if (sink->error == NULL) {
        sink->error = strdup(message);
    }
    pa_threaded_mainloop_signal(sink->loop, 0);
}

static void failed_with_context(struct route_pa_sink *sink, const char *what) {
    char text[512];
    int code = pa_context_errno(sink->context);
    if (code == PA_ERR_CONNECTIONTERMINATED || code == PA_ERR_KILLED) {
        snprintf(text, sizeof text, "PulseAudio went away (the sound server stopped or restarted)");
    } else {
        snprintf(text, sizeof text, "%s: %s", what, pa_strerror(code));
    }
    fail(sink, text);
}

static void on_read(pa_stream *stream, size_t length, void *data) {
    struct route_pa_sink *sink = data;
    (void)length;
    const void *bytes;
    size_t count;
    while (pa_stream_readable_size(stream) > 0) {
        if (pa_stream_peek(stream, &bytes, &count) < 0) return;
        if (count == 0) break;
        size_t samples = count / sizeof(float);
        if (sink->gathered + samples > sink->converted_capacity) {
            size_t capacity = sink->gathered + samples;
            int16_t *bigger = realloc(sink->converted, capacity * sizeof(int16_t));
            if (bigger == NULL) {
                pa_stream_drop(stream);
                return;
            }
            sink->converted = bigger;
            sink->converted_capacity = capacity;
        }
        const float *in = bytes;
        float factor = sink->factor;
        if (sink->settling > 0) {
            sink->settling--;
            factor = sink->settling_factor;
        }
        float gain = factor > 0.0001f ? 32767.0f / factor : 0.0f;
        int16_t *out = sink->converted + sink->gathered;
        for (size_t i = 0; i < samples; i++) {
            // A hole (no data: the monitor was idle) reads as silence.
            float value = in ? in[i] * gain : 0.0f;
            value = value > 32767.0f ? 32767.0f : value < -32768.0f ? -32768.0f : value;
            out[i] = (int16_t)lrintf(value);
        }
        pa_stream_drop(stream);
        sink->gathered += samples;
        // Handed on in batches of at least 20 ms, however small the pieces the server reads out (an app asking for
        // low latency makes them small).
        if (sink->gathered * sizeof(int16_t) >= sink->batch_bytes) {
            sink->callbacks.audio(sink->user, sink->converted, sink->gathered * sizeof(int16_t));
            sink->gathered = 0;
        }
    }
}

static void on_record_state(pa_stream *stream, void *data) {
    struct route_pa_sink *sink = data;
    switch (pa_stream_get_state(stream)) {
    case PA_STREAM_READY:
        sink->ready = 1;
        pa_threaded_mainloop_signal(sink->loop, 0);
        break;
    case PA_STREAM_FAILED:
        failed_with_context(sink, "PulseAudio ended the recording of the sink");
        break;
    default:
        break;
    }
}

static void on_sink_info(pa_context *context, const pa_sink_info *info, int eol, void *data) {
    struct route_pa_sink *sink = data;
    (void)context;
    if (eol != 0 || info == NULL) return;
    sink->sink_index = info->index;
    pa_volume_t average = pa_cvolume_avg(&info->volume);
    float level = (float)average / (float)PA_VOLUME_NORM;
    float factor = (float)pa_sw_volume_to_linear(average);
    if (factor != sink->factor) {
        sink->settling_factor = factor > sink->factor ? factor : sink->factor;
        sink->settling = 3;
    }
    sink->factor = factor;
    int changed = fabsf(level - sink->level) > 0.001f || info->mute != sink->muted;
    sink->level = level;
    sink->muted = info->mute;
    if (changed && sink->ready) sink->callbacks.volume(sink->user, level, info->mute);
}

static void on_event(pa_context *context, pa_subscription_event_type_t type, uint32_t index, void *data) {
    struct route_pa_sink *sink = data;
    if ((type & PA_SUBSCRIPTION_EVENT_FACILITY_MASK) != PA_SUBSCRIPTION_EVENT_SINK || index != sink->sink_index) return;
    if ((type & PA_SUBSCRIPTION_EVENT_TYPE_MASK) == PA_SUBSCRIPTION_EVENT_REMOVE) {
        fail(sink, "the sink was removed from PulseAudio (pactl unload-module?)");
        return;
    }
    pa_operation *operation = pa_context_get_sink_info_by_index(context, index, on_sink_info, sink);
    if (operation) pa_operation_unref(operation);
}

static void start_recording(struct route_pa_sink *sink) {
    sink->record = pa_stream_new(sink->context, "route: desktop audio to a device", &sink->spec, NULL);
    if (sink->record == NULL) {
        failed_with_context(sink, "PulseAudio refused the recording stream");
        return;
    }
    pa_stream_set_state_callback(sink->record, on_record_state, sink);
    pa_stream_set_read_callback(sink->record, on_read, sink);
    uint32_t fragment = (uint32_t)pa_usec_to_bytes(20 * PA_USEC_PER_MSEC, &sink->spec);
    pa_buffer_attr attributes = {.maxlength = (uint32_t)-1, .fragsize = fragment, .tlength = (uint32_t)-1,
                                 .prebuf = (uint32_t)-1, .minreq = (uint32_t)-1};
    if (pa_stream_connect_record(sink->record, sink->monitor, &attributes, PA_STREAM_ADJUST_LATENCY | PA_STREAM_DONT_MOVE) < 0) {
        failed_with_context(sink, "PulseAudio refused to record the sink");
    }
}

/// The sink our module made (by its owner module, not its name: a sink of that name left by a route that crashed makes
/// PulseAudio name ours `NAME.2`): its index, volume, and the monitor to record.
static void on_sink_listed(pa_context *context, const pa_sink_info *info, int eol, void *data) {
    struct route_pa_sink *sink = data;
    if (eol < 0) {
        failed_with_context(sink, "PulseAudio could not list its sinks");
        return;
    }
    if (eol > 0) {
        if (sink->sink_index == PA_INVALID_INDEX) {
            fail(sink, "PulseAudio loaded the null sink but no sink of it is listed");
            return;
        }
        pa_context_set_subscribe_callback(context, on_event, sink);
        pa_operation *operation = pa_context_subscribe(context, PA_SUBSCRIPTION_MASK_SINK, NULL, NULL);
        if (operation) pa_operation_unref(operation);
        start_recording(sink);
        return;
    }
    if (info->owner_module != sink->module || sink->sink_index != PA_INVALID_INDEX) return;
    on_sink_info(context, info, 0, sink);
    free(sink->monitor);
    sink->monitor = strdup(info->monitor_source_name);
}

static void on_loaded(pa_context *context, uint32_t index, void *data) {
    struct route_pa_sink *sink = data;
    if (index == PA_INVALID_INDEX) {
        failed_with_context(sink, "PulseAudio could not load a null sink for the device");
        return;
    }
    sink->module = index;
    pa_operation *operation = pa_context_get_sink_info_list(context, on_sink_listed, sink);
    if (operation) pa_operation_unref(operation);
}

/// Quotes `text` for a PulseAudio module argument's property list (single quotes inside double quotes).
static void quoted(char *out, size_t size, const char *text) {
    size_t n = 0;
    for (const char *c = text; *c && n + 2 < size; c++) {
        if (*c == '\'' || *c == '"' || *c == '\\') continue;
        out[n++] = *c;
    }
    out[n] = 0;
}

static void on_context_state(pa_context *context, void *data) {
    struct route_pa_sink *sink = data;
    switch (pa_context_get_state(context)) {
    case PA_CONTEXT_READY: {
        char description[256], arguments[768];
        quoted(description, sizeof description, sink->description);
        snprintf(arguments, sizeof arguments,
                 "sink_name=%s format=float32le rate=%u channels=%u sink_properties=\"device.description='%s' "
                 "device.icon_name='network-wireless'\"",
                 sink->name, sink->spec.rate, sink->spec.channels, description);
        pa_operation *operation = pa_context_load_module(context, "module-null-sink", arguments, on_loaded, sink);
        if (operation) pa_operation_unref(operation);
        break;
    }
    case PA_CONTEXT_FAILED:
    case PA_CONTEXT_TERMINATED:
        failed_with_context(sink, "cannot reach PulseAudio (is it running for this user? PULSE_SERVER names another)");
        break;
    default:
        break;
    }
}

static void on_deadline(pa_mainloop_api *api, pa_time_event *event, const struct timeval *when, void *data) {
    struct route_pa_sink *sink = data;
    (void)when;
    api->time_free(event);
    sink->deadline = NULL;
    if (!sink->ready) fail(sink, "PulseAudio did not answer within 5 s");
}

static void on_unloaded(pa_context *context, int success, void *data) {
    struct route_pa_sink *sink = data;
    (void)context;
    (void)success;
    pa_threaded_mainloop_signal(sink->loop, 0);
}

void route_pa_sink_free(struct route_pa_sink *sink) {
    if (sink == NULL) return;
    if (sink->loop) {
        pa_threaded_mainloop_lock(sink->loop);
        sink->ready = 0;
        sink->failed = 1;
        if (sink->record) {
            pa_stream_set_read_callback(sink->record, NULL, NULL);
            pa_stream_set_state_callback(sink->record, NULL, NULL);
            pa_stream_disconnect(sink->record);
            pa_stream_unref(sink->record);
        }
        if (sink->context) {
            pa_context_set_subscribe_callback(sink->context, NULL, NULL);
            if (sink->module != PA_INVALID_INDEX && pa_context_get_state(sink->context) == PA_CONTEXT_READY) {
                pa_operation *operation = pa_context_unload_module(sink->context, sink->module, on_unloaded, sink);
                // A connection that dies meanwhile cancels the operation without calling back: stop waiting then too.
                while (operation && pa_operation_get_state(operation) == PA_OPERATION_RUNNING &&
                       pa_context_get_state(sink->context) == PA_CONTEXT_READY) {
                    pa_threaded_mainloop_wait(sink->loop);
                }
                if (operation) pa_operation_unref(operation);
            }
            pa_context_set_state_callback(sink->context, NULL, NULL);
            pa_context_disconnect(sink->context);
            pa_context_unref(sink->context);
        }
        pa_threaded_mainloop_unlock(sink->loop);
        pa_threaded_mainloop_stop(sink->loop);
        pa_threaded_mainloop_free(sink->loop);
    }
    free(sink->converted);
    free(sink->name);
    free(sink->description);
    free(sink->monitor);
    free(sink->error);
    free(sink);
}

struct route_pa_sink *route_pa_sink_new(const char *name, const char *description, unsigned rate, unsigned channels,
                                        route_sound_callbacks callbacks, void *user, char **error) {
    struct route_pa_sink *sink = calloc(1, sizeof *sink);
    if (sink == NULL) {
        *error = strdup("cannot make a PulseAudio sink: out of memory");
        return NULL;
    }
    sink->callbacks = callbacks;
    sink->user = user;
    sink->name = strdup(name);
    sink->description = strdup(description);
    sink->spec = (pa_sample_spec){.format = PA_SAMPLE_FLOAT32LE, .rate = rate, .channels = (uint8_t)(channels == 1 ? 1 : 2)};
    sink->batch_bytes = (size_t)rate * sink->spec.channels * sizeof(int16_t) / 50;
    sink->module = PA_INVALID_INDEX;
    sink->sink_index = PA_INVALID_INDEX;
    sink->factor = 1.0f;
    sink->level = 1.0f;
    sink->loop = pa_threaded_mainloop_new();
    if (sink->loop == NULL || pa_threaded_mainloop_start(sink->loop) < 0) {
        *error = strdup("cannot start PulseAudio's client loop");
        route_pa_sink_free(sink);
        return NULL;
    }
    pa_threaded_mainloop_lock(sink->loop);
    pa_mainloop_api *api = pa_threaded_mainloop_get_api(sink->loop);
    struct timeval when;
    sink->deadline = api->time_new(api, pa_timeval_add(pa_gettimeofday(&when), 5 * PA_USEC_PER_SEC), on_deadline, sink);
    sink->context = pa_context_new(api, "route");
    if (sink->context) {
        pa_context_set_state_callback(sink->context, on_context_state, sink);
        if (pa_context_connect(sink->context, NULL, PA_CONTEXT_NOAUTOSPAWN, NULL) < 0) {
            failed_with_context(sink, "cannot reach PulseAudio (is it running for this user? PULSE_SERVER names another)");
        }
    } else {
        fail(sink, "cannot make a PulseAudio client");
    }
    // Wait until the monitor is recorded (or anything failed, or 5 s passed) so that a caller knows the sink exists.
    while (!sink->ready && !sink->failed) pa_threaded_mainloop_wait(sink->loop);
    if (sink->deadline) {
        api->time_free(sink->deadline);
        sink->deadline = NULL;
    }
    pa_threaded_mainloop_unlock(sink->loop);
    if (!sink->ready) {
        *error = sink->error ? sink->error : strdup("PulseAudio refused the sink");
        sink->error = NULL;
        route_pa_sink_free(sink);
        return NULL;
    }
    return sink;
}

void route_pa_sink_set_volume(struct route_pa_sink *sink, float level, int muted) {
    pa_threaded_mainloop_lock(sink->loop);
    if (sink->sink_index != PA_INVALID_INDEX && !sink->failed) {
        pa_cvolume volume;
        pa_volume_t value = (pa_volume_t)lrintf((level < 0 ? 0 : level > 1 ? 1 : level) * (float)PA_VOLUME_NORM);
        pa_cvolume_set(&volume, sink->spec.channels, value);
        // Known before PulseAudio echoes it, so the echo is not taken for a person's change.
        sink->level = (float)value / (float)PA_VOLUME_NORM;
        sink->muted = muted != 0;
        pa_operation *operation = pa_context_set_sink_volume_by_index(sink->context, sink->sink_index, &volume, NULL, NULL);
        if (operation) pa_operation_unref(operation);
        operation = pa_context_set_sink_mute_by_index(sink->context, sink->sink_index, muted != 0, NULL, NULL);
        if (operation) pa_operation_unref(operation);
    }
    pa_threaded_mainloop_unlock(sink->loop);
}
