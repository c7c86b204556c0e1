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
    /// The title of what a session of the route service plays on the device (it can be moved: the row offers "Move…"),
    /// or NULL/"" when none does.
    const char *session_title;
} RoutePickerRow;

/// Hears the outcome once, on GTK's thread: the chosen row's id, or NULL when the window was closed or Escape pressed.
typedef void (*RoutePickerDone)(void *context, const char *id);
/// Hears, on GTK's thread, that the window has drawn its first row.
typedef void (*RoutePickerShown)(void *context);
/// Hears, on GTK's thread, that the person chose the device `to` for the session playing on `from`: the move is the
/// caller's to make, and `route_picker_move_finished` tells the window how it went.
typedef void (*RoutePickerMove)(void *context, const char *from, const char *to);

/// Opens the display; false when there is none (no DISPLAY or WAYLAND_DISPLAY, or it cannot be reached). Call first,
/// on the thread that will run `route_picker_run`.
bool route_picker_init(void);

/// A picker window titled `title`, over `parent` when it names a window ("x11:HEX-XID", or "wayland:HANDLE" from
/// xdg-foreign; anything else is ignored). Nothing shows until `route_picker_run`.
RoutePicker *route_picker_new(const char *title, const char *parent, RoutePickerDone done, RoutePickerShown shown,
                              RoutePickerMove move, void *context);

/// Makes the window one that moves the session playing on the device `from` (a row's id): with the next rows the window
/// asks where to (it ends, as cancelled, if that row plays no session); a device chosen is handed to `move`, and once
/// the move has succeeded the window ends with it chosen. From any thread, before the first rows are given.
void route_picker_move_only(RoutePicker *picker, const char *from);

/// Says how the move `move` asked for went, from any thread: NULL when the session plays on the new device (the window
/// says so, or ends when it only moves), else the error in words (the window shows it and asks again).
void route_picker_move_finished(RoutePicker *picker, const char *error);

/// Replaces the rows, keeping the selected one selected. From any thread: applied on GTK's.
void route_picker_set_rows(RoutePicker *picker, const RoutePickerRow *rows, int count);

/// Closes the window as cancelled, from any thread (the service cannot be reached, say); `why` goes to the log
/// ("because …").
void route_picker_cancel(RoutePicker *picker, const char *why);

/// Closes the window as cancelled when `fd` reaches its end or hangs up (the service that started the picker keeps the
/// other end of its stdin, and the kernel closes it when the service dies).
void route_picker_close_on_hangup(RoutePicker *picker, int fd);

/// Shows the window and runs GTK until a row is chosen or the window is closed; `done` has been called by then.
void route_picker_run(RoutePicker *picker);

#endif
