/* The layout of struct eckey, shared by eckey.c (public keys) and eckey_priv.c (private
 * keys) only: everyone else holds it as an opaque pointer (eckey.h). */
#ifndef ASSENT_ECKEY_IMPL_H
#define ASSENT_ECKEY_IMPL_H

#include <mbedtls/pk.h>

struct eckey {
	mbedtls_pk_context pk;
	int has_private;
	void *ossl; /* the public key as OpenSSL's EVP_PKEY, made by the first verification (eckey.c) */
};

/* An empty key (mbedtls_pk_init'ed), or NULL when out of memory; freed with eckey_free. */
struct eckey *eckey_new(void);
/* Whether pk holds a key on P-256. */
int eckey_is_p256(const mbedtls_pk_context *pk);

#endif
