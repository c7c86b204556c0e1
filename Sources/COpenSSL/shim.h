// COpenSSL: OpenSSL's TLS (libssl), its error queue, random numbers, RSA and ciphers (libcrypto), imported into Swift
// as a module (flags from pkg-config). The Cast channel's TLS and the AirPlay plugin's audio encryption use it.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
