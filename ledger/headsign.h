/* The ledger writer's checkpoint signer: the checkpoint key handed once to OpenSSL,
 * whose P-256 signing is about 20-40 times faster than mbedTLS's here, so that
 * signing the head of every commit costs little next to the commit's fsync.
 * Signatures are DER ECDSA-Sig-Value with a low s (either s verifies; the low one
 * is what strict verifiers want). Writer only: never linked into a verifier. */
#ifndef ASSENT_HEADSIGN_H
#define ASSENT_HEADSIGN_H

#include <stddef.h>
#include <stdint.h>

#include "common/eckey.h"
#include "common/attr.h"

struct headsign;

/* Load k's private key into OpenSSL and check that a signature made there verifies
 * under k with mbedTLS. The caller frees with headsign_free (which clears the key). */
int headsign_open(const struct eckey *k, struct headsign **out, char *err) AS_MUST_USE;
/* Sign SHA-256(msg) into sig (ECKEY_SIG_MAX bytes): the note_sign_fn for ckpt_sign_with. */
int headsign_sign(void *hs, const void *msg, size_t n, uint8_t *sig, size_t *siglen) AS_MUST_USE;
/* Verify sig over SHA-256(msg) with the same key, in OpenSSL (a note_verify_fn): 0 or AS_EBADSIG. */
int headsign_verify(void *hs, const void *msg, size_t n, const uint8_t *sig, size_t siglen) AS_MUST_USE;
void headsign_free(struct headsign *hs);

#endif
