// fetch_guard: a GProxyResolver that every GLib connection in route asks before it connects unless it sets a proxy of
// its own — GStreamer's souphttpsrc, the adaptive demuxers' fragment and playlist downloads, every redirect they follow.
// It refuses the URI with the reason route's check gives (see route_shim.h), or answers what the resolver GIO would
// have chosen without it answers (the user's proxy settings).
#include "route_shim.h"
#include <gio/gio.h>
#include <stdlib.h>

static route_fetch_check fetch_check;

typedef struct { GObject parent; } RouteFetchGuard;
typedef struct { GObjectClass parent_class; } RouteFetchGuardClass;

static void route_fetch_guard_iface_init(GProxyResolverInterface *iface);
G_DEFINE_TYPE_WITH_CODE(RouteFetchGuard, route_fetch_guard, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(G_TYPE_PROXY_RESOLVER, route_fetch_guard_iface_init))

static void route_fetch_guard_init(RouteFetchGuard *self) { (void)self; }
static void route_fetch_guard_class_init(RouteFetchGuardClass *klass) { (void)klass; }

static gboolean guard_is_supported(GProxyResolver *resolver) { (void)resolver; return TRUE; }

// The resolver GIO would have chosen without the guard (the desktop's proxy settings, libproxy, else "direct"): the
// first supported one of lower priority, made at the first lookup (GIO has loaded its modules by then).
static GProxyResolver *next_resolver(void) {
    static gsize once;
    static GProxyResolver *next;
    if (g_once_init_enter(&once)) {
        GIOExtensionPoint *point = g_io_extension_point_lookup(G_PROXY_RESOLVER_EXTENSION_POINT_NAME);
        for (GList *entry = point ? g_io_extension_point_get_extensions(point) : NULL; entry && !next; entry = entry->next) {
            GType type = g_io_extension_get_type(entry->data);
            if (type == route_fetch_guard_get_type()) continue;
            GProxyResolver *candidate = g_object_new(type, NULL);
            if (g_proxy_resolver_is_supported(candidate)) next = candidate;
            else g_object_unref(candidate);
        }
        g_once_init_leave(&once, 1);
    }
    return next;
}

// Refused URIs fail with the check's reason; the others go the way the user's proxy settings say.
static gchar **guard_lookup(GProxyResolver *resolver, const gchar *uri, GCancellable *cancellable, GError **error) {
    (void)resolver;
    char *reason = fetch_check ? fetch_check(uri) : NULL;
    if (reason) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED, "%s", reason);
        free(reason);
        return NULL;
    }
    GProxyResolver *next = next_resolver();
    if (next) return g_proxy_resolver_lookup(next, uri, cancellable, error);
    gchar **direct = g_new0(gchar *, 2);
    direct[0] = g_strdup("direct://");
    return direct;
}

// The check may resolve names (blocking): asynchronous lookups run it on GIO's worker threads.
static void lookup_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable) {
    GError *error = NULL;
    gchar **result = guard_lookup(source, data, cancellable, &error);
    if (result) g_task_return_pointer(task, result, (GDestroyNotify)g_strfreev);
    else g_task_return_error(task, error);
}

static void guard_lookup_async(GProxyResolver *resolver, const gchar *uri, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data) {
    GTask *task = g_task_new(resolver, cancellable, callback, user_data);
    g_task_set_task_data(task, g_strdup(uri), g_free);
    g_task_run_in_thread(task, lookup_thread);
    g_object_unref(task);
}

static gchar **guard_lookup_finish(GProxyResolver *resolver, GAsyncResult *result, GError **error) {
    (void)resolver;
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void route_fetch_guard_iface_init(GProxyResolverInterface *iface) {
    iface->is_supported = guard_is_supported;
    iface->lookup = guard_lookup;
    iface->lookup_async = guard_lookup_async;
    iface->lookup_finish = guard_lookup_finish;
}

// Registered as the process loads, before anything can ask GIO for its default resolver (which is chosen once, at the
// first use); GIO's own resolvers join the same point later, all of lower priority. Until route sets a check, it
// answers "direct" to everything.
__attribute__((constructor)) static void route_fetch_guard_register(void) {
    GIOExtensionPoint *point = g_io_extension_point_register(G_PROXY_RESOLVER_EXTENSION_POINT_NAME);
    g_io_extension_point_set_required_type(point, G_TYPE_PROXY_RESOLVER);
    g_io_extension_point_implement(G_PROXY_RESOLVER_EXTENSION_POINT_NAME, route_fetch_guard_get_type(), "route-fetch-guard", 1000);
}

gboolean route_fetch_guard_set_check(route_fetch_check check) {
    fetch_check = check;
    return G_TYPE_CHECK_INSTANCE_TYPE(g_proxy_resolver_get_default(), route_fetch_guard_get_type());
}
