// route-provider-mpd: the MPD plugin (Plugins/MPD) as an executable of its own, as a drop-in plugin is.

import MPDPlugin

await serveMPDPlugin()
