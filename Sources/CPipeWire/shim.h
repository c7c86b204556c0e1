// CPipeWire: libpipewire-0.3 (PipeWire's client library), for CSoundShim's sink node; flags from pkg-config.
#include <pipewire/pipewire.h>
