// COpenSSL: OpenSSL's TLS (libssl) and its error queue (libcrypto), imported into Swift as a module (flags from
// pkg-config). The Cast channel is its only user.
#include <openssl/ssl.h>
#include <openssl/err.h>
