// route_picker.h: the device picker window (GTK 4) as route-picker drives it from Swift — rows given from any thread,
// the choice reported through a callback. GTK's macros and variadic calls stay in route_picker.c.
#ifndef ROUTE_PICKER_H
#define ROUTE_PICKER_H

#include <stdbool.h>

typedef struct RoutePicker RoutePicker;

/// One row of the list: a device. The picker copies the strings.
typedef struct {
    /// What is reported when the row is chosen (the device's id).
    const char *id;
    /// The row's title (the device's name).
    const char *name;
    /// The line under it: protocols, what it plays now, why it cannot be chosen.
    const char *subtitle;
    /// An icon name from the icon theme.
    const char *icon;
    /// What typing filters on (every name of the device, its protocols).
    const char *search;
    /// False: shown, but greyed and not choosable (a speaker for a video).
    bool choosable;
} RoutePickerRow;

/// Hears the outcome once, on GTK's thread: the chosen row's id, or NULL when the window was closed or Escape pressed.
typedef void (*RoutePickerDone)(void *context, const char *id);
/// Hears, on GTK's thread, that the window has drawn its first row.
typedef void (*RoutePickerShown)(void *context);

/// Opens the display; false when there is none (no DISPLAY or WAYLAND_DISPLAY, or it cannot be reached). Call first,
/// on the thread that will run `route_picker_run`.
bool route_picker_init(void);

/// A picker window titled `title`, over `parent` when it names a window ("x11:HEX-XID"; anything else is ignored).
/// Nothing shows until `route_picker_run`.
RoutePicker *route_picker_new(const char *title, const char *parent, RoutePickerDone done, RoutePickerShown shown,
                              void *context);

/// Replaces the rows, keeping the selected one selected. From any thread: applied on GTK's.
void route_picker_set_rows(RoutePicker *picker, const RoutePickerRow *rows, int count);

/// Closes the window as cancelled, from any thread (the service cannot be reached).
void route_picker_cancel(RoutePicker *picker);

/// Closes the window as cancelled when `fd` reaches its end or hangs up (the service that started the picker keeps the
/// other end of its stdin, and the kernel closes it when the service dies).
void route_picker_close_on_hangup(RoutePicker *picker, int fd);

/// Shows the window and runs GTK until a row is chosen or the window is closed; `done` has been called by then.
void route_picker_run(RoutePicker *picker);

#endif
