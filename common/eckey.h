/* ECDSA P-256 keys through mbedTLS: generate, store (PEM, private part 0600),
 * load, export the DER SubjectPublicKeyInfo, sign (deterministic, RFC 6979) and verify.
 * Used for checkpoints and tokens. Public-key code is eckey.c; private-key code is
 * eckey_priv.c (the last section here), which the verify library leaves out. */
#ifndef ASSENT_ECKEY_H
#define ASSENT_ECKEY_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "common/attr.h"

#define ECKEY_SPKI_MAX 128
#define ECKEY_SIG_MAX 80 /* DER ECDSA-Sig-Value for P-256 is at most 72 bytes */

struct eckey; /* opaque; holds either a key pair or a public key only */

/* Parse a public key from PEM text; refuses anything that is not a P-256 EC key. */
int eckey_parse_public(const uint8_t *pem, size_t n, struct eckey **out, char *err) AS_MUST_USE;
int eckey_load_public(const char *path, struct eckey **out, char *err) AS_MUST_USE;
void eckey_free(struct eckey *k); /* wipes private parts */

/* DER SubjectPublicKeyInfo of the public part. */
int eckey_spki(const struct eckey *k, uint8_t *out, size_t *n) AS_MUST_USE;
int eckey_public_pem(const struct eckey *k, struct buf *out) AS_MUST_USE;
/* 0 when sig is a valid signature of SHA-256(msg), AS_EBADSIG otherwise. */
int eckey_verify(const struct eckey *k, const void *msg, size_t n, const uint8_t *sig, size_t siglen) AS_MUST_USE;

/* ECDSA verification of a SHA-256 hash with the JWS form of the signature:
 * 64 bytes, r then s, big-endian (RFC 7518 section 3.4). 0 or AS_EBADSIG. */
int eckey_verify_rs(const struct eckey *k, const uint8_t hash[32], const uint8_t rs[64]) AS_MUST_USE;
/* ECDSA signatures are malleable: (r, s) and (r, n - s) both verify. Tokens are
 * issued with the low one (s <= n/2, P-256's n) and verifiers refuse the high one, so
 * a token has one signature. eckey_s_high: whether s (32 bytes, big-endian) > n/2;
 * eckey_s_low: replace a high s with n - s. */
int eckey_s_high(const uint8_t s[32]) AS_MUST_USE;
void eckey_s_low(uint8_t s[32]);
/* The DER ECDSA-Sig-Value (at most ECKEY_SIG_MAX bytes) of a JWS r || s: what checkpoint
 * notes carry when the signature came from a PKCS#11 token, which gives r || s. */
int eckey_rs_der(const uint8_t rs[64], uint8_t *der, size_t *n) AS_MUST_USE;

/* The public point as JWK coordinates (32-byte big-endian x and y). */
int eckey_xy(const struct eckey *k, uint8_t x[32], uint8_t y[32]) AS_MUST_USE;
/* A public key from JWK coordinates; refuses points not on P-256. */
int eckey_from_xy(const uint8_t x[32], const uint8_t y[32], struct eckey **out) AS_MUST_USE;
/* RFC 7638 JWK thumbprint (SHA-256, base64url without padding): the token key's kid. */
int eckey_jwk_kid(const struct eckey *k, char kid[44]) AS_MUST_USE;

/* ---- private keys: common/eckey_priv.c, never in libassent-verify.a ---- */

/* Load the private key at priv_path, or when it does not exist generate a new
 * key pair and write it (0600) and its public PEM at pub_path (0644). */
int eckey_load_or_create(const char *priv_path, const char *pub_path, struct eckey **out, char *err) AS_MUST_USE;
int eckey_load_private(const char *path, struct eckey **out, char *err) AS_MUST_USE;
/* Sign SHA-256(msg); sig is a DER ECDSA-Sig-Value. */
int eckey_sign(const struct eckey *k, const void *msg, size_t n, uint8_t *sig, size_t *siglen) AS_MUST_USE;
/* The private key as PEM (SEC1): the token signer hands it to OpenSSL once. Caller wipes. */
int eckey_private_pem(const struct eckey *k, struct buf *out) AS_MUST_USE;
/* Generate a key pair in memory. */
int eckey_generate(struct eckey **out) AS_MUST_USE;
/* Write the private key (0600) and public key (0644) files atomically. */
int eckey_save(const struct eckey *k, const char *priv_path, const char *pub_path, char *err) AS_MUST_USE;

#endif
