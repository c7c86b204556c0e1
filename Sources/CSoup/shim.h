// CSoup: the system library behind <libsoup/soup.h>, imported into Swift as a module (flags from pkg-config).
#include <libsoup/soup.h>

// What Swift cannot call itself: GLib's signal macro and variadic property setter.
static inline gulong route_soup_signal_connect(gpointer instance, const char *signal, const void *callback, gpointer data) {
    return g_signal_connect(instance, signal, G_CALLBACK(callback), data);
}
static inline void route_soup_set_string(gpointer object, const char *property, const char *value) {
    g_object_set(object, property, value, NULL);
}
