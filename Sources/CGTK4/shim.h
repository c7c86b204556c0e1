// CGTK4: GTK 4, for CPickerShim's device picker window; flags from pkg-config.
#include <gtk/gtk.h>
