// CPulseAudio: libpulse (PulseAudio's client library), for CSoundShim's sink on PulseAudio; flags from pkg-config.
#include <pulse/pulseaudio.h>
