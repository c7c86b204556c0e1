// CLibXML2: libxml2's streaming reader (<libxml/xmlreader.h>), imported into Swift as a module (flags from pkg-config).
// Debian builds libxml2 with ICU, whose headers clash with the ICU that Foundation carries; route never uses
// libxml2's encoding handlers (the only place ICU appears), so the ICU parts of its headers are left out.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/xmlreader.h>
