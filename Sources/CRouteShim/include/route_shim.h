// CRouteShim: the few C entry points Swift cannot import from GLib and GStreamer
// (variadic functions and function-like macros). Every name is prefixed `route_`.
#ifndef ROUTE_SHIM_H
#define ROUTE_SHIM_H

#include <gst/gst.h>
#include <gst/pbutils/pbutils.h>
#include <gst/app/app.h>

/// g_object_set is variadic: one typed setter per property kind.
void route_object_set_string(gpointer object, const char *property, const char *value);
void route_object_set_double(gpointer object, const char *property, gdouble value);
void route_object_set_bool(gpointer object, const char *property, gboolean value);
void route_object_set_object(gpointer object, const char *property, gpointer value);

/// g_signal_connect is a macro; connects `callback` (cast to GCallback) with `data`.
gulong route_signal_connect(gpointer instance, const char *signal, const void *callback, gpointer data);

/// GST_CLOCK_TIME_NONE and GST_SECOND are casting macros.
GstClockTime route_gst_clock_time_none(void);
gint64 route_gst_second(void);

/// Has every tag setter in `bin` (encoders, muxers) write none of its source's tags (GST_TAG_MERGE_KEEP_ALL: only
/// those set on it, and route sets none): what a device shows comes from route's own metadata, which is cleaned.
/// The iterator is a GLib macro dance Swift cannot import.
void route_bin_drop_source_tags(GstBin *bin);

/// The URI of a local file path (g_filename_to_uri, with its GError flattened); NULL on failure.
char *route_filename_to_uri(const char *path);

/// Decides whether route may connect to `uri`: NULL when it may, else the reason (malloc'd; freed by the caller).
/// Called on GIO's threads, for every connection that asks the default proxy resolver.
typedef char *(*route_fetch_check)(const char *uri);

/// Has the process's default proxy resolver (route's, registered as the process loads) ask `check`: every souphttpsrc
/// (and so every fetch of GStreamer's demuxers, and every redirect) without a proxy of its own asks it before it
/// connects. Returns whether route's resolver is the default (FALSE when GIO_USE_PROXY_RESOLVER chose another).
gboolean route_fetch_guard_set_check(route_fetch_check check);

#endif
