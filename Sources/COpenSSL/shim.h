// COpenSSL: the system library behind <openssl/ssl.h>, imported into Swift as a module (flags from pkg-config).
#include <openssl/ssl.h>
