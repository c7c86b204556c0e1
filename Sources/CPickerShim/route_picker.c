// route_picker.c: the device picker window in GTK 4 — a search entry that takes what is typed anywhere, a list of
// devices (icon, name, subtitle; rows that cannot be chosen greyed) updated in place, arrows and Enter from the entry,
// Escape to cancel, an accessible name on every row, and moving a session: "Move…" on a row that plays one (or Ctrl+M)
// asks where to, and the next device chosen is where it goes.
#include "route_picker.h"

#include <glib-unix.h>
#include <gtk/gtk.h>
#include <string.h>
#include <unistd.h>
#ifdef GDK_WINDOWING_X11
#include <gdk/x11/gdkx.h>
#endif
#ifdef GDK_WINDOWING_WAYLAND
#include <gdk/wayland/gdkwayland.h>
#endif

struct RoutePicker {
    GtkWidget *window;
    GtkWidget *entry;
    GtkWidget *header;
    GtkWidget *list;
    GtkWidget *scrolled;
    GMainLoop *loop;
    RoutePickerDone done;
    RoutePickerShown shown;
    RoutePickerMove move;
    void *context;
    char *parent;
    char *title;
    /// The rows by device id.
    GHashTable *rows;
    bool finished;
    bool drawn;
    bool watching_frames;
    /// Moving: the device whose session moves (NULL: picking), what it plays, and its name.
    char *moving_from;
    char *moving_title;
    char *moving_name;
    /// The window is only for this move: it ends once the move succeeds, and Escape cancels it.
    bool move_only;
    /// The device the move under way goes to (NULL: none under way), and its name.
    char *moving_to;
    char *moving_to_name;
    /// The window was closed while a move was under way: it ends once the move has, with its outcome.
    bool close_when_moved;
};

typedef struct {
    RoutePicker *picker;
    RoutePickerRow *rows;
    int count;
} RouteRowsUpdate;

/// A message to GTK's thread from another: what `handle` is given there (NULL or a copy of the text).
typedef struct {
    RoutePicker *picker;
    char *text;
    void (*handle)(RoutePicker *picker, const char *text);
} RouteMessage;

static gboolean deliver(gpointer data) {
    RouteMessage *message = data;
    message->handle(message->picker, message->text);
    g_free(message->text);
    g_free(message);
    return G_SOURCE_REMOVE;
}

/// Has `handle` called with a copy of `text` on GTK's thread, from any thread.
static void post(RoutePicker *picker, const char *text, void (*handle)(RoutePicker *, const char *)) {
    RouteMessage *message = g_new0(RouteMessage, 1);
    message->picker = picker;
    message->text = g_strdup(text);
    message->handle = handle;
    g_idle_add(deliver, message);
}

static void finish(RoutePicker *picker, const char *id, const char *how) {
    if (picker->finished) return;
    g_printerr("route-picker: %s %s\n", id ? "chosen" : "cancelled", how);
    picker->finished = true;
    picker->done(picker->context, id);
    g_main_loop_quit(picker->loop);
}

static const char *row_text(GtkListBoxRow *row, const char *key) {
    const char *text = g_object_get_data(G_OBJECT(row), key);
    return text ? text : "";
}

static const char *row_id(GtkListBoxRow *row) { return row_text(row, "route-id"); }

/// Whether the row is shown (not filtered out) and can be chosen.
static bool row_available(GtkListBoxRow *row) {
    return gtk_widget_get_child_visible(GTK_WIDGET(row)) && gtk_widget_get_sensitive(GTK_WIDGET(row));
}

static gboolean filter(GtkListBoxRow *row, gpointer data) {
    RoutePicker *picker = data;
    const char *text = gtk_editable_get_text(GTK_EDITABLE(picker->entry));
    if (text == NULL || *text == '\0') return TRUE;
    char *needle = g_utf8_casefold(text, -1);
    char *haystack = g_utf8_casefold(row_text(row, "route-search"), -1);
    gboolean found = strstr(haystack, needle) != NULL;
    g_free(needle);
    g_free(haystack);
    return found;
}

/// The rows in the order the caller gave them.
static int sort(GtkListBoxRow *first, GtkListBoxRow *second, gpointer data) {
    (void)data;
    return GPOINTER_TO_INT(g_object_get_data(G_OBJECT(first), "route-order")) - GPOINTER_TO_INT(g_object_get_data(G_OBJECT(second), "route-order"));
}

/// Scrolls the list so that `row` is in view (GTK 4.8's list box has no call for it).
static void scroll_to(RoutePicker *picker, GtkListBoxRow *row) {
    graphene_rect_t bounds;
    if (!gtk_widget_compute_bounds(GTK_WIDGET(row), picker->list, &bounds)) return;
    GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(picker->scrolled));
    double top = gtk_adjustment_get_value(adjustment), page = gtk_adjustment_get_page_size(adjustment);
    if (bounds.origin.y < top) gtk_adjustment_set_value(adjustment, bounds.origin.y);
    else if (bounds.origin.y + bounds.size.height > top + page) gtk_adjustment_set_value(adjustment, bounds.origin.y + bounds.size.height - page);
}

/// Selects the first row from `start` on, going `step` (1 or -1), that is shown and choosable, and scrolls to it; keeps
/// the selection when there is none.
static void select_from(RoutePicker *picker, int start, int step) {
    for (int index = start; index >= 0; index += step) {
        GtkListBoxRow *row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(picker->list), index);
        if (row == NULL) return;
        if (row_available(row)) {
            gtk_list_box_select_row(GTK_LIST_BOX(picker->list), row);
            scroll_to(picker, row);
            return;
        }
    }
}

/// Keeps a choosable row selected: the one selected if it still can be, else the first.
static void keep_selection(RoutePicker *picker) {
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
    if (selected == NULL || !row_available(selected)) select_from(picker, 0, 1);
}

/// What the row's state is now: choosable unless the caller said not, it is the device a session moves from, or a move
/// is under way; "Move…" where a session of the service plays and nothing is moving.
static void refresh_row(RoutePicker *picker, GtkListBoxRow *row) {
    bool choosable = g_object_get_data(G_OBJECT(row), "route-choosable") != NULL;
    bool source = picker->moving_from && strcmp(picker->moving_from, row_id(row)) == 0;
    gtk_widget_set_sensitive(GTK_WIDGET(row), choosable && !source && picker->moving_to == NULL);
    GtkWidget *button = g_object_get_data(G_OBJECT(row), "route-move");
    gtk_widget_set_visible(button, *row_text(row, "route-session") != '\0' && picker->moving_from == NULL);
}

static void refresh_rows(RoutePicker *picker) {
    GtkListBoxRow *row;
    for (int index = 0; (row = gtk_list_box_get_row_at_index(GTK_LIST_BOX(picker->list), index)) != NULL; index++) refresh_row(picker, row);
    keep_selection(picker);
}

/// Shows `text` above the list (NULL: hides it).
static void say(RoutePicker *picker, const char *text) {
    gtk_label_set_text(GTK_LABEL(picker->header), text ? text : "");
    gtk_widget_set_visible(picker->header, text != NULL);
}

/// Asks where the session playing on the device of `row` goes: the window's title and the line above the list say so,
/// and the next device chosen is where it moves.
static void start_move(RoutePicker *picker, GtkListBoxRow *row) {
    if (picker->moving_to) return;
    g_free(picker->moving_from), g_free(picker->moving_title), g_free(picker->moving_name);
    picker->moving_from = g_strdup(row_id(row));
    const char *session = row_text(row, "route-session");
    picker->moving_title = g_strdup(*session ? session : "what plays");
    picker->moving_name = g_strdup(row_text(row, "route-name"));
    char *title = g_strdup_printf("Move “%s” to…", picker->moving_title);
    gtk_window_set_title(GTK_WINDOW(picker->window), title);
    g_free(title);
    char *line = g_strdup_printf("Move “%s” from %s to:", picker->moving_title, picker->moving_name);
    say(picker, line);
    g_free(line);
    g_printerr("route-picker: moving from %s: where to?\n", picker->moving_from);
    gtk_editable_set_text(GTK_EDITABLE(picker->entry), "");
    gtk_list_box_invalidate_filter(GTK_LIST_BOX(picker->list));
    refresh_rows(picker);
    gtk_widget_grab_focus(picker->entry);
}

/// Back to picking, with `text` above the list (NULL: nothing).
static void end_move(RoutePicker *picker, const char *text) {
    g_clear_pointer(&picker->moving_from, g_free);
    g_clear_pointer(&picker->moving_title, g_free);
    g_clear_pointer(&picker->moving_name, g_free);
    gtk_window_set_title(GTK_WINDOW(picker->window), picker->title);
    say(picker, text);
    refresh_rows(picker);
}

/// `row` chosen: the answer when picking; where the session goes when moving.
static void choose(RoutePicker *picker, GtkListBoxRow *row, const char *how) {
    if (!row_available(row)) return;
    // A window that only moves, before it knows what plays where: nothing to choose yet.
    if (picker->moving_from && picker->moving_title == NULL) return;
    if (picker->moving_from == NULL) {
        finish(picker, row_id(row), how);
        return;
    }
    picker->moving_to = g_strdup(row_id(row));
    picker->moving_to_name = g_strdup(row_text(row, "route-name"));
    char *line = g_strdup_printf("Moving “%s” to %s…", picker->moving_title, picker->moving_to_name);
    say(picker, line);
    g_free(line);
    g_printerr("route-picker: moving from %s to %s, chosen %s\n", picker->moving_from, picker->moving_to, how);
    refresh_rows(picker);
    picker->move(picker->context, picker->moving_from, picker->moving_to);
}

/// Ends asking where to when what was to move no longer plays on its device (or the device has gone): a window that
/// only moves ends; one that picks goes back to picking and says why. Nothing while a move is under way.
static void check_source(RoutePicker *picker) {
    if (picker->moving_from == NULL || picker->moving_title == NULL || picker->moving_to != NULL) return;
    GtkListBoxRow *source = g_hash_table_lookup(picker->rows, picker->moving_from);
    if (source != NULL && *row_text(source, "route-session") != '\0') return;
    char *line = g_strdup_printf("“%s” no longer plays on %s.", picker->moving_title, picker->moving_name);
    g_printerr("route-picker: %s\n", line);
    if (picker->move_only) finish(picker, NULL, "because what was to move has ended");
    else end_move(picker, line);
    g_free(line);
}

static void move_finished(RoutePicker *picker, const char *error) {
    if (!picker->finished && picker->moving_to) {
        char *to = picker->moving_to, *name = picker->moving_to_name;
        picker->moving_to = picker->moving_to_name = NULL;
        if (error) g_printerr("route-picker: the move failed: %s\n", error);
        if (picker->close_when_moved) {
            // Only a window that only moves answers with where the move went: one that picks was closed unanswered.
            finish(picker, picker->move_only && !error ? to : NULL,
                   error ? "by closing the window (the move failed)" : "by closing the window once the move was made");
        } else if (error) {
            char *line = g_strdup_printf("Could not move “%s” to %s: %s. Move it to:", picker->moving_title, name, error);
            say(picker, line);
            g_free(line);
            refresh_rows(picker);
            // The session may have ended meanwhile (often why the move failed).
            check_source(picker);
            gtk_widget_grab_focus(picker->entry);
        } else if (picker->move_only) {
            finish(picker, to, "by moving there");
        } else {
            char *line = g_strdup_printf("“%s” plays on %s now.", picker->moving_title, name);
            end_move(picker, line);
            g_free(line);
            gtk_widget_grab_focus(picker->entry);
        }
        g_free(to);
        g_free(name);
    }
}

void route_picker_move_finished(RoutePicker *picker, const char *error) { post(picker, error, move_finished); }

static void search_changed(GtkSearchEntry *entry, gpointer data) {
    (void)entry;
    RoutePicker *picker = data;
    gtk_list_box_invalidate_filter(GTK_LIST_BOX(picker->list));
    keep_selection(picker);
}

/// Enter in the entry chooses the selected row (the first that is shown and choosable, once typing has filtered:
/// the entry tells of a change only after a pause, and Enter may come sooner).
static void entry_activated(GtkSearchEntry *entry, gpointer data) {
    RoutePicker *picker = data;
    search_changed(entry, picker);
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
    if (selected != NULL) choose(picker, selected, "with Enter in the filter");
}

static void row_activated(GtkListBox *list, GtkListBoxRow *row, gpointer data) {
    (void)list;
    choose(data, row, "by activating its row");
}

static void move_clicked(GtkButton *button, gpointer data) {
    GtkWidget *row = gtk_widget_get_ancestor(GTK_WIDGET(button), GTK_TYPE_LIST_BOX_ROW);
    if (row) start_move(data, GTK_LIST_BOX_ROW(row));
}

/// Escape cancels (or, while asking where to move, goes back to picking); Ctrl+M moves what the selected row plays; the
/// arrows move the selection while the entry has the focus (as a combo box's list).
static gboolean key_pressed(GtkEventControllerKey *controller, guint keyval, guint keycode, GdkModifierType state, gpointer data) {
    (void)controller, (void)keycode;
    RoutePicker *picker = data;
    if (keyval == GDK_KEY_Escape) {
        if (picker->moving_to) return TRUE;
        if (picker->moving_from && !picker->move_only) end_move(picker, NULL);
        else finish(picker, NULL, "with Escape");
        return TRUE;
    }
    if ((keyval == GDK_KEY_m || keyval == GDK_KEY_M) && (state & GDK_CONTROL_MASK)) {
        // What was typed filters first (the entry tells of it only after a pause), as for Enter.
        search_changed(NULL, picker);
        GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
        if (selected && *row_text(selected, "route-session") && picker->moving_from == NULL) start_move(picker, selected);
        return TRUE;
    }
    if (keyval != GDK_KEY_Down && keyval != GDK_KEY_Up) return FALSE;
    GtkListBoxRow *selected = gtk_list_box_get_selected_row(GTK_LIST_BOX(picker->list));
    GtkWidget *focus = gtk_root_get_focus(GTK_ROOT(picker->window));
    if (focus == NULL || (focus != picker->entry && !gtk_widget_is_ancestor(focus, picker->entry))) return FALSE;
    int step = keyval == GDK_KEY_Down ? 1 : -1;
    int start = selected ? gtk_list_box_row_get_index(selected) + step : 0;
    if (start >= 0) select_from(picker, start, step);
    return TRUE;
}

static gboolean close_requested(GtkWindow *window, gpointer data) {
    (void)window;
    RoutePicker *picker = data;
    // A move under way goes on in the service: the window ends once it has, saying how it went.
    if (picker->moving_to) {
        picker->close_when_moved = true;
        gtk_widget_set_visible(picker->window, FALSE);
        return TRUE;
    }
    finish(picker, NULL, "by closing the window");
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

static GtkWidget *make_row(RoutePicker *picker, const char *id) {
    GtkWidget *row = gtk_list_box_row_new();
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
    gtk_widget_set_margin_top(box, 8);
    gtk_widget_set_margin_bottom(box, 8);
    gtk_widget_set_margin_start(box, 12);
    gtk_widget_set_margin_end(box, 12);
    GtkWidget *icon = gtk_image_new();
    gtk_image_set_pixel_size(GTK_IMAGE(icon), 32);
    GtkWidget *texts = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
    gtk_widget_set_valign(texts, GTK_ALIGN_CENTER);
    gtk_widget_set_hexpand(texts, TRUE);
    GtkWidget *title = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(title), 0);
    gtk_label_set_ellipsize(GTK_LABEL(title), PANGO_ELLIPSIZE_END);
    GtkWidget *subtitle = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(subtitle), 0);
    // Two lines at most, then cut short.
    gtk_label_set_wrap(GTK_LABEL(subtitle), TRUE);
    gtk_label_set_wrap_mode(GTK_LABEL(subtitle), PANGO_WRAP_WORD_CHAR);
    gtk_label_set_lines(GTK_LABEL(subtitle), 2);
    gtk_label_set_ellipsize(GTK_LABEL(subtitle), PANGO_ELLIPSIZE_END);
    gtk_widget_add_css_class(subtitle, "dim-label");
    GtkWidget *move = gtk_button_new_with_mnemonic("_Move…");
    gtk_widget_set_valign(move, GTK_ALIGN_CENTER);
    gtk_widget_set_tooltip_text(move, "Play it on another device instead (Ctrl+M)");
    g_signal_connect(move, "clicked", G_CALLBACK(move_clicked), picker);
    gtk_box_append(GTK_BOX(texts), title);
    gtk_box_append(GTK_BOX(texts), subtitle);
    gtk_box_append(GTK_BOX(box), icon);
    gtk_box_append(GTK_BOX(box), texts);
    gtk_box_append(GTK_BOX(box), move);
    gtk_list_box_row_set_child(GTK_LIST_BOX_ROW(row), box);
    g_object_set_data_full(G_OBJECT(row), "route-id", g_strdup(id), g_free);
    g_object_set_data(G_OBJECT(row), "route-icon", icon);
    g_object_set_data(G_OBJECT(row), "route-title", title);
    g_object_set_data(G_OBJECT(row), "route-subtitle", subtitle);
    g_object_set_data(G_OBJECT(row), "route-move", move);
    return row;
}

/// Sets what `row` shows from `source`, changing only what changed (a screen reader keeps its place in the list).
static void update_row(RoutePicker *picker, GtkListBoxRow *row, const RoutePickerRow *source, int order) {
    GObject *object = G_OBJECT(row);
    const char *name = source->name ? source->name : "", *subtitle = source->subtitle ? source->subtitle : "";
    const char *session = source->session_title ? source->session_title : "";
    bool changed = strcmp(row_text(row, "route-name"), name) != 0 || strcmp(row_text(row, "route-subtitle-text"), subtitle) != 0;
    if (strcmp(row_text(row, "route-icon-name"), source->icon ? source->icon : "") != 0) {
        gtk_image_set_from_icon_name(g_object_get_data(object, "route-icon"), source->icon ? source->icon : "multimedia-player");
        g_object_set_data_full(object, "route-icon-name", g_strdup(source->icon ? source->icon : ""), g_free);
    }
    if (changed) {
        char *markup = g_markup_printf_escaped("<b>%s</b>", name);
        gtk_label_set_markup(g_object_get_data(object, "route-title"), markup);
        g_free(markup);
        gtk_label_set_text(g_object_get_data(object, "route-subtitle"), subtitle);
        // The row's name is what a screen reader says: the device, then what the subtitle says of it.
        char *label = g_strdup_printf("%s, %s", name, subtitle);
        gtk_accessible_update_property(GTK_ACCESSIBLE(row), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
        g_free(label);
        g_object_set_data_full(object, "route-name", g_strdup(name), g_free);
        g_object_set_data_full(object, "route-subtitle-text", g_strdup(subtitle), g_free);
    }
    if (strcmp(row_text(row, "route-session"), session) != 0) {
        GtkWidget *move = g_object_get_data(object, "route-move");
        char *label = g_strdup_printf("Move “%s” from %s to another device", session, name);
        gtk_accessible_update_property(GTK_ACCESSIBLE(move), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
        g_free(label);
        g_object_set_data_full(object, "route-session", g_strdup(session), g_free);
    }
    g_object_set_data_full(object, "route-search", g_strdup(source->search ? source->search : ""), g_free);
    g_object_set_data(object, "route-choosable", source->choosable ? picker : NULL);
    g_object_set_data(object, "route-order", GINT_TO_POINTER(order));
}

static void free_update(RouteRowsUpdate *update) {
    for (int index = 0; index < update->count; index++) {
        RoutePickerRow *row = &update->rows[index];
        g_free((char *)row->id);
        g_free((char *)row->name);
        g_free((char *)row->subtitle);
        g_free((char *)row->icon);
        g_free((char *)row->search);
        g_free((char *)row->session_title);
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
    GHashTable *given = g_hash_table_new(g_str_hash, g_str_equal);
    for (int index = 0; index < update->count; index++) {
        const RoutePickerRow *source = &update->rows[index];
        const char *id = source->id ? source->id : "";
        g_hash_table_add(given, (gpointer)id);
        GtkListBoxRow *row = g_hash_table_lookup(picker->rows, id);
        if (row == NULL) {
            row = GTK_LIST_BOX_ROW(make_row(picker, id));
            g_hash_table_insert(picker->rows, g_strdup(id), row);
            gtk_list_box_append(list, GTK_WIDGET(row));
        }
        update_row(picker, row, source, index);
    }
    GHashTableIter iterator;
    gpointer key, value;
    g_hash_table_iter_init(&iterator, picker->rows);
    while (g_hash_table_iter_next(&iterator, &key, &value)) {
        if (g_hash_table_contains(given, key)) continue;
        gtk_list_box_remove(list, GTK_WIDGET(value));
        g_hash_table_iter_remove(&iterator);
    }
    g_hash_table_destroy(given);
    gtk_list_box_invalidate_sort(list);
    gtk_list_box_invalidate_filter(list);
    if (picker->move_only && picker->moving_from && picker->moving_title == NULL) {
        // A window that only moves asks where to with its first rows (route-picker has checked that its device is
        // listed and plays a session); if it no longer does, the window ends.
        GtkListBoxRow *source = g_hash_table_lookup(picker->rows, picker->moving_from);
        if (source && *row_text(source, "route-session") != '\0') start_move(picker, source);
        else finish(picker, NULL, "because what was to move has ended");
    }
    check_source(picker);
    refresh_rows(picker);
    if (update->count > 0 && !picker->drawn && !picker->watching_frames) {
        picker->watching_frames = true;
        gtk_widget_add_tick_callback(picker->list, first_frame, picker, NULL);
    }
    free_update(update);
    return G_SOURCE_REMOVE;
}

/// Makes the window transient for a window of another process (a portal's parent: "x11:XID", or "wayland:HANDLE"
/// exported through xdg-foreign).
static void realized(GtkWidget *window, gpointer data) {
    RoutePicker *picker = data;
    GdkSurface *surface = gtk_native_get_surface(GTK_NATIVE(window));
    if (picker->parent == NULL) return;
#ifdef GDK_WINDOWING_X11
    if (strncmp(picker->parent, "x11:", 4) == 0 && GDK_IS_X11_SURFACE(surface)) {
        unsigned long parent = strtoul(picker->parent + 4, NULL, 16);
        if (parent == 0) return;
        Display *display = gdk_x11_display_get_xdisplay(gdk_surface_get_display(surface));
        XSetTransientForHint(display, gdk_x11_surface_get_xid(surface), parent);
    }
#endif
#ifdef GDK_WINDOWING_WAYLAND
    if (strncmp(picker->parent, "wayland:", 8) == 0 && GDK_IS_WAYLAND_TOPLEVEL(surface)) {
        gdk_wayland_toplevel_set_transient_for_exported(GDK_TOPLEVEL(surface), picker->parent + 8);
    }
#endif
    (void)surface;
}

static void cancelled(RoutePicker *picker, const char *why) { finish(picker, NULL, why ? why : ""); }

void route_picker_cancel(RoutePicker *picker, const char *why) { post(picker, why, cancelled); }

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

RoutePicker *route_picker_new(const char *title, const char *parent, RoutePickerDone done, RoutePickerShown shown, RoutePickerMove move,
                              void *context) {
    RoutePicker *picker = g_new0(RoutePicker, 1);
    picker->done = done;
    picker->shown = shown;
    picker->move = move;
    picker->context = context;
    picker->parent = g_strdup(parent);
    picker->title = g_strdup(title ? title : "Play on a device");
    picker->rows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    picker->loop = g_main_loop_new(NULL, FALSE);
    picker->window = gtk_window_new();
    gtk_window_set_title(GTK_WINDOW(picker->window), picker->title);
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
    picker->header = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(picker->header), 0);
    gtk_label_set_wrap(GTK_LABEL(picker->header), TRUE);
    gtk_widget_set_visible(picker->header, FALSE);
    picker->list = gtk_list_box_new();
    gtk_list_box_set_selection_mode(GTK_LIST_BOX(picker->list), GTK_SELECTION_SINGLE);
    gtk_list_box_set_activate_on_single_click(GTK_LIST_BOX(picker->list), TRUE);
    gtk_list_box_set_filter_func(GTK_LIST_BOX(picker->list), filter, picker, NULL);
    gtk_list_box_set_sort_func(GTK_LIST_BOX(picker->list), sort, NULL, NULL);
    gtk_list_box_set_placeholder(GTK_LIST_BOX(picker->list), gtk_label_new("Looking for devices…"));
    gtk_accessible_update_property(GTK_ACCESSIBLE(picker->list), GTK_ACCESSIBLE_PROPERTY_LABEL, "Devices", -1);
    picker->scrolled = gtk_scrolled_window_new();
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(picker->scrolled), picker->list);
    gtk_widget_set_vexpand(picker->scrolled, TRUE);
    gtk_box_append(GTK_BOX(box), picker->entry);
    gtk_box_append(GTK_BOX(box), picker->header);
    gtk_box_append(GTK_BOX(box), picker->scrolled);
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

static void apply_move_only(RoutePicker *picker, const char *from) {
    if (picker->finished || picker->moving_from != NULL) return;
    picker->move_only = true;
    // Asked where to with the next rows (apply_rows): the row gives what plays and the device's name.
    picker->moving_from = g_strdup(from);
}

void route_picker_move_only(RoutePicker *picker, const char *from) { post(picker, from, apply_move_only); }

void route_picker_set_rows(RoutePicker *picker, const RoutePickerRow *rows, int count) {
    RouteRowsUpdate *update = g_new0(RouteRowsUpdate, 1);
    update->picker = picker;
    update->count = count > 0 ? count : 0;
    update->rows = g_new0(RoutePickerRow, update->count > 0 ? update->count : 1);
    for (int index = 0; index < update->count; index++) {
        update->rows[index] = (RoutePickerRow){
            .id = g_strdup(rows[index].id), .name = g_strdup(rows[index].name), .subtitle = g_strdup(rows[index].subtitle),
            .icon = g_strdup(rows[index].icon), .search = g_strdup(rows[index].search), .choosable = rows[index].choosable,
            .session_title = g_strdup(rows[index].session_title),
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
