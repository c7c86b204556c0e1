// route_picker.c: the device picker window in GTK 4 — a search entry that takes what is typed anywhere, a list of
// devices (icon, name, subtitle; rows that cannot be chosen greyed), arrows and Enter from the entry, Escape to cancel,
// and an accessible name on every row.
#include "route_picker.h"

#include <glib-unix.h>
#include <gtk/gtk.h>
#include <string.h>
#include <unistd.h>
#ifdef GDK_WINDOWING_X11
#include <gdk/x11/gdkx.h>
#endif

struct RoutePicker {
    GtkWidget *window;
    GtkWidget *entry;
    GtkWidget *list;
    GMainLoop *loop;
    RoutePickerDone done;
    RoutePickerShown shown;
    void *context;
    char *parent;
    bool finished;
    bool drawn;
    bool watching_frames;
};

typedef struct {
    RoutePicker *picker;
    RoutePickerRow *rows;
    int count;
} RouteRowsUpdate;

static void finish(RoutePicker *picker, const char *id, const char *how) {
    if (picker->finished) return;
    g_printerr("route-picker: %s %s\n", id ? "chosen" : "cancelled", how);
    picker->finished = true;
    picker->done(picker->context, id);
    g_main_loop_quit(picker->loop);
}

static const char *row_id(GtkListBoxRow *row) { return g_object_get_data(G_OBJECT(row), "route-id"); }

/// Whether the row is shown (not filtered out) and can be chosen.
static bool row_available(GtkListBoxRow *row) {
    return gtk_widget_get_child_visible(GTK_WIDGET(row)) && gtk_widget_get_sensitive(GTK_WIDGET(row));
}

static gboolean filter(GtkListBoxRow *row, gpointer data) {
    RoutePicker *picker = data;
    const char *text = gtk_editable_get_text(GTK_EDITABLE(picker->entry));
    if (text == NULL || *text == '\0') return TRUE;
    const char *search = g_object_get_data(G_OBJECT(row), "route-search");
    char *needle = g_utf8_casefold(text, -1);
    char *haystack = g_utf8_casefold(search ? search : "", -1);
    gboolean found = strstr(haystack, needle) != NULL;
    g_free(needle);
    g_free(haystack);
    return found;
}

/// Selects the first row from `start` on, going `step` (1 or -1), that is shown and choosable; keeps the selection when
/// there is none.
static void select_from(RoutePicker *picker, int start, int step) {
    for (int index = start; index >= 0; index += step) {
        GtkListBoxRow *row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(picker->list), index);
        if (row == NULL) return;
        if (row_available(row)) {
            gtk_list_box_select_row(GTK_LIST_BOX(picker->list), row);
            return;
        }
    }
}

static void search_changed(GtkSearchEntry *entry, gpointer data) {
    (void)entry;
    RoutePicker *picker = data;
    gtk_list_box_invalidate_filter(GTK_LIST_BOX(picker->list));
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
    if (selected == NULL || !row_available(selected)) select_from(picker, 0, 1);
}

/// Enter in the entry chooses the selected row (the first that is shown and choosable, once typing has filtered:
/// the entry tells of a change only after a pause, and Enter may come sooner).
static void entry_activated(GtkSearchEntry *entry, gpointer data) {
    RoutePicker *picker = data;
    search_changed(entry, picker);
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
    if (selected != NULL && row_available(selected)) finish(picker, row_id(selected), "with Enter in the filter");
}

static void row_activated(GtkListBox *list, GtkListBoxRow *row, gpointer data) {
    (void)list;
    if (row_available(row)) finish(data, row_id(row), "by activating its row");
}

/// Escape cancels anywhere; the arrows move the selection while the entry has the focus (as a combo box's list).
static gboolean key_pressed(GtkEventControllerKey *controller, guint keyval, guint keycode, GdkModifierType state, gpointer data) {
    (void)controller, (void)keycode, (void)state;
    RoutePicker *picker = data;
    if (keyval == GDK_KEY_Escape) {
        finish(picker, NULL, "with Escape");
        return TRUE;
    }
    if (keyval != GDK_KEY_Down && keyval != GDK_KEY_Up) return FALSE;
    GtkWidget *focus = gtk_root_get_focus(GTK_ROOT(picker->window));
    if (focus == NULL || (focus != picker->entry && !gtk_widget_is_ancestor(focus, picker->entry))) return FALSE;
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
    int step = keyval == GDK_KEY_Down ? 1 : -1;
    int start = selected ? gtk_list_box_row_get_index(selected) + step : 0;
    if (start >= 0) select_from(picker, start, step);
    return TRUE;
}

static gboolean close_requested(GtkWindow *window, gpointer data) {
    (void)window;
    finish(data, NULL, "by closing the window");
    return TRUE;
}

static gboolean first_frame(GtkWidget *widget, GdkFrameClock *clock, gpointer data) {
    (void)widget, (void)clock;
    RoutePicker *picker = data;
    // Any row on screen (the first may be filtered out).
    bool mapped = false;
    GtkListBoxRow *row;
    for (int index = 0; !mapped && (row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(picker->list), index)) != NULL; index++) {
        mapped = gtk_widget_get_mapped(GTK_WIDGET(row));
    }
    if (!mapped) return G_SOURCE_CONTINUE;
    if (!picker->drawn && picker->shown) picker->shown(picker->context);
    picker->drawn = true;
    return G_SOURCE_REMOVE;
}

static GtkWidget *make_row(const RoutePickerRow *source) {
    GtkWidget *row = gtk_list_box_row_new();
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
    gtk_widget_set_margin_top(box, 8);
    gtk_widget_set_margin_bottom(box, 8);
    gtk_widget_set_margin_start(box, 12);
    gtk_widget_set_margin_end(box, 12);
    GtkWidget *icon = gtk_image_new_from_icon_name(source->icon ? source->icon : "multimedia-player");
    gtk_image_set_pixel_size(GTK_IMAGE(icon), 32);
    GtkWidget *texts = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
    gtk_widget_set_valign(texts, GTK_ALIGN_CENTER);
    GtkWidget *title = gtk_label_new(NULL);
    char *markup = g_markup_printf_escaped("<b>%s</b>", source->name ? source->name : "");
    gtk_label_set_markup(GTK_LABEL(title), markup);
    g_free(markup);
    gtk_label_set_xalign(GTK_LABEL(title), 0);
    gtk_label_set_ellipsize(GTK_LABEL(title), PANGO_ELLIPSIZE_END);
    GtkWidget *subtitle = gtk_label_new(source->subtitle ? source->subtitle : "");
    gtk_label_set_xalign(GTK_LABEL(subtitle), 0);
    gtk_label_set_ellipsize(GTK_LABEL(subtitle), PANGO_ELLIPSIZE_END);
    gtk_widget_add_css_class(subtitle, "dim-label");
    gtk_box_append(GTK_BOX(texts), title);
    gtk_box_append(GTK_BOX(texts), subtitle);
    gtk_box_append(GTK_BOX(box), icon);
    gtk_box_append(GTK_BOX(box), texts);
    gtk_list_box_row_set_child(GTK_LIST_BOX_ROW(row), box);
    gtk_widget_set_sensitive(row, source->choosable);
    // The row's name is what a screen reader says: the device, then what the subtitle says of it.
    char *label = g_strdup_printf("%s, %s", source->name ? source->name : "", source->subtitle ? source->subtitle : "");
    gtk_accessible_update_property(GTK_ACCESSIBLE(row), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
    g_free(label);
    g_object_set_data_full(G_OBJECT(row), "route-id", g_strdup(source->id ? source->id : ""), g_free);
    g_object_set_data_full(G_OBJECT(row), "route-search", g_strdup(source->search ? source->search : ""), g_free);
    return row;
}

static void free_update(RouteRowsUpdate *update) {
    for (int index = 0; index < update->count; index++) {
        RoutePickerRow *row = &update->rows[index];
        g_free((char *)row->id);
        g_free((char *)row->name);
        g_free((char *)row->subtitle);
        g_free((char *)row->icon);
        g_free((char *)row->search);
    }
    g_free(update->rows);
    g_free(update);
}

static gboolean apply_rows(gpointer data) {
    RouteRowsUpdate *update = data;
    RoutePicker *picker = update->picker;
    // Rows that come after the choice (the window is going, or gone) are not shown.
    if (picker->finished) {
        free_update(update);
        return G_SOURCE_REMOVE;
    }
    GtkListBox *list = GTK_LIST_BOX(picker->list);
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(list);
    char *keep = selected ? g_strdup(row_id(selected)) : NULL;
    GtkListBoxRow *row;
    while ((row = gtk_list_box_get_row_at_index(list, 0)) != NULL) gtk_list_box_remove(list, GTK_WIDGET(row));
    GtkListBoxRow *reselect = NULL;
    for (int index = 0; index < update->count; index++) {
        GtkWidget *made = make_row(&update->rows[index]);
        gtk_list_box_append(list, made);
        if (keep && update->rows[index].id && strcmp(keep, update->rows[index].id) == 0) reselect = GTK_LIST_BOX_ROW(made);
    }
    g_free(keep);
    gtk_list_box_invalidate_filter(list);
    if (reselect && row_available(reselect)) gtk_list_box_select_row(list, reselect);
    else select_from(picker, 0, 1);
    if (update->count > 0 && !picker->drawn && !picker->watching_frames) {
        picker->watching_frames = true;
        gtk_widget_add_tick_callback(picker->list, first_frame, picker, NULL);
    }
    free_update(update);
    return G_SOURCE_REMOVE;
}

/// Makes the window transient for an X11 window of another process (a portal's "x11:XID" parent).
static void realized(GtkWidget *window, gpointer data) {
    RoutePicker *picker = data;
#ifdef GDK_WINDOWING_X11
    GdkSurface *surface = gtk_native_get_surface(GTK_NATIVE(window));
    if (picker->parent == NULL || strncmp(picker->parent, "x11:", 4) != 0 || !GDK_IS_X11_SURFACE(surface)) return;
    unsigned long parent = strtoul(picker->parent + 4, NULL, 16);
    if (parent == 0) return;
    Display *display = gdk_x11_display_get_xdisplay(gdk_surface_get_display(surface));
    XSetTransientForHint(display, gdk_x11_surface_get_xid(surface), parent);
#else
    (void)window, (void)picker;
#endif
}

static gboolean cancelled(gpointer data) {
    finish(data, NULL, "because the route service could not be reached");
    return G_SOURCE_REMOVE;
}

void route_picker_cancel(RoutePicker *picker) { g_idle_add(cancelled, picker); }

static gboolean hangup(gint fd, GIOCondition condition, gpointer data) {
    char buffer[64];
    if ((condition & (G_IO_HUP | G_IO_ERR)) || read(fd, buffer, sizeof buffer) <= 0) {
        finish(data, NULL, "because the route service went away");
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

void route_picker_close_on_hangup(RoutePicker *picker, int fd) { g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, hangup, picker); }

bool route_picker_init(void) {
    g_set_prgname("route-picker");
    g_set_application_name("Play on a device");
    return gtk_init_check();
}

RoutePicker *route_picker_new(const char *title, const char *parent, RoutePickerDone done, RoutePickerShown shown, void *context) {
    RoutePicker *picker = g_new0(RoutePicker, 1);
    picker->done = done;
    picker->shown = shown;
    picker->context = context;
    picker->parent = g_strdup(parent);
    picker->loop = g_main_loop_new(NULL, FALSE);
    picker->window = gtk_window_new();
    gtk_window_set_title(GTK_WINDOW(picker->window), title ? title : "Play on a device");
    gtk_window_set_default_size(GTK_WINDOW(picker->window), 440, 420);
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
    gtk_widget_set_margin_top(box, 12);
    gtk_widget_set_margin_bottom(box, 12);
    gtk_widget_set_margin_start(box, 12);
    gtk_widget_set_margin_end(box, 12);
    picker->entry = gtk_search_entry_new();
    g_object_set(picker->entry, "placeholder-text", "Type to filter", NULL);
    gtk_accessible_update_property(GTK_ACCESSIBLE(picker->entry), GTK_ACCESSIBLE_PROPERTY_LABEL, "Filter devices", -1);
    gtk_search_entry_set_key_capture_widget(GTK_SEARCH_ENTRY(picker->entry), picker->window);
    picker->list = gtk_list_box_new();
    gtk_list_box_set_selection_mode(GTK_LIST_BOX(picker->list), GTK_SELECTION_SINGLE);
    gtk_list_box_set_activate_on_single_click(GTK_LIST_BOX(picker->list), TRUE);
    gtk_list_box_set_filter_func(GTK_LIST_BOX(picker->list), filter, picker, NULL);
    gtk_list_box_set_placeholder(GTK_LIST_BOX(picker->list), gtk_label_new("Looking for devices…"));
    gtk_accessible_update_property(GTK_ACCESSIBLE(picker->list), GTK_ACCESSIBLE_PROPERTY_LABEL, "Devices", -1);
    GtkWidget *scrolled = gtk_scrolled_window_new();
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scrolled), picker->list);
    gtk_widget_set_vexpand(scrolled, TRUE);
    gtk_box_append(GTK_BOX(box), picker->entry);
    gtk_box_append(GTK_BOX(box), scrolled);
    gtk_window_set_child(GTK_WINDOW(picker->window), box);
    g_signal_connect(picker->entry, "search-changed", G_CALLBACK(search_changed), picker);
    g_signal_connect(picker->entry, "activate", G_CALLBACK(entry_activated), picker);
    g_signal_connect(picker->list, "row-activated", G_CALLBACK(row_activated), picker);
    g_signal_connect(picker->window, "close-request", G_CALLBACK(close_requested), picker);
    g_signal_connect(picker->window, "realize", G_CALLBACK(realized), picker);
    GtkEventController *keys = gtk_event_controller_key_new();
    gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_CAPTURE);
    g_signal_connect(keys, "key-pressed", G_CALLBACK(key_pressed), picker);
    gtk_widget_add_controller(picker->window, keys);
    return picker;
}

void route_picker_set_rows(RoutePicker *picker, const RoutePickerRow *rows, int count) {
    RouteRowsUpdate *update = g_new0(RouteRowsUpdate, 1);
    update->picker = picker;
    update->count = count > 0 ? count : 0;
    update->rows = g_new0(RoutePickerRow, update->count > 0 ? update->count : 1);
    for (int index = 0; index < update->count; index++) {
        update->rows[index] = (RoutePickerRow){
            .id = g_strdup(rows[index].id), .name = g_strdup(rows[index].name), .subtitle = g_strdup(rows[index].subtitle),
            .icon = g_strdup(rows[index].icon), .search = g_strdup(rows[index].search), .choosable = rows[index].choosable,
        };
    }
    g_idle_add(apply_rows, update);
}

void route_picker_run(RoutePicker *picker) {
    gtk_window_present(GTK_WINDOW(picker->window));
    gtk_widget_grab_focus(picker->entry);
    g_main_loop_run(picker->loop);
    gtk_window_destroy(GTK_WINDOW(picker->window));
    while (g_main_context_pending(NULL)) g_main_context_iteration(NULL, FALSE);
}
