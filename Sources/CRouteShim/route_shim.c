// CRouteShim: implementations of the C entry points Swift cannot import (see route_shim.h).
#include "route_shim.h"

void route_object_set_string(gpointer o, const char *p, const char *v) { g_object_set(o, p, v, NULL); }
void route_object_set_double(gpointer o, const char *p, gdouble v) { g_object_set(o, p, v, NULL); }
void route_object_set_bool(gpointer o, const char *p, gboolean v) { g_object_set(o, p, v, NULL); }
void route_object_set_object(gpointer o, const char *p, gpointer v) { g_object_set(o, p, v, NULL); }

void route_bin_drop_source_tags(GstBin *bin) {
    GstIterator *setters = gst_bin_iterate_all_by_interface(bin, GST_TYPE_TAG_SETTER);
    GValue item = G_VALUE_INIT;
    gboolean done = FALSE;
    while (!done) {
        switch (gst_iterator_next(setters, &item)) {
        case GST_ITERATOR_OK:
            gst_tag_setter_set_tag_merge_mode(GST_TAG_SETTER(g_value_get_object(&item)), GST_TAG_MERGE_KEEP_ALL);
            g_value_reset(&item);
            break;
        case GST_ITERATOR_RESYNC: gst_iterator_resync(setters); break;
        default: done = TRUE; break;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(setters);
}

gulong route_signal_connect(gpointer instance, const char *signal, const void *callback, gpointer data) {
    return g_signal_connect(instance, signal, G_CALLBACK(callback), data);
}

GstClockTime route_gst_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }
gint64 route_gst_second(void) { return GST_SECOND; }

char *route_filename_to_uri(const char *path) { return g_filename_to_uri(path, NULL, NULL); }
