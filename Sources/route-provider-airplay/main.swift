// route-provider-airplay: the AirPlay plugin (Plugins/AirPlay) as an executable of its own, as a drop-in plugin is.

import AirPlayPlugin

await serveAirPlayPlugin()
