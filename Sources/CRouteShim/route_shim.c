// CRouteShim: implementations of the C entry points Swift cannot import (see route_shim.h).
#include "route_shim.h"

void route_object_set_string(gpointer o, const char *p, const char *v) { g_object_set(o, p, v, NULL); }
void route_object_set_int(gpointer o, const char *p, gint v) { g_object_set(o, p, v, NULL); }
void route_object_set_uint(gpointer o, const char *p, guint v) { g_object_set(o, p, v, NULL); }
void route_object_set_int64(gpointer o, const char *p, gint64 v) { g_object_set(o, p, v, NULL); }
void route_object_set_uint64(gpointer o, const char *p, guint64 v) { g_object_set(o, p, v, NULL); }
void route_object_set_double(gpointer o, const char *p, gdouble v) { g_object_set(o, p, v, NULL); }
void route_object_set_bool(gpointer o, const char *p, gboolean v) { g_object_set(o, p, v, NULL); }
void route_object_set_object(gpointer o, const char *p, gpointer v) { g_object_set(o, p, v, NULL); }

gdouble route_object_get_double(gpointer o, const char *p) { gdouble v = 0; g_object_get(o, p, &v, NULL); return v; }
gint route_object_get_int(gpointer o, const char *p) { gint v = 0; g_object_get(o, p, &v, NULL); return v; }

gulong route_signal_connect(gpointer instance, const char *signal, const void *callback, gpointer data) {
    return g_signal_connect(instance, signal, G_CALLBACK(callback), data);
}

GstClockTime route_gst_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }
gint64 route_gst_second(void) { return GST_SECOND; }

char *route_filename_to_uri(const char *path) { return g_filename_to_uri(path, NULL, NULL); }
