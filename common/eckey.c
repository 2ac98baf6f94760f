/* P-256 public keys with mbedTLS 2.28 (the 2.x `_ret` APIs; see NOTES.md): parse, load,
 * export; verification through OpenSSL's libcrypto, about four times mbedTLS's on this CPU
 * (NOTES.md), with the key handed over as its SubjectPublicKeyInfo. Everything that needs a
 * private key is in eckey_priv.c, which the verify library leaves out. */
#include "common/eckey.h"
#include "common/eckey_impl.h"

#include <stdlib.h>
#include <string.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256(): the CPU's SHA instructions, no per-call fetch */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

struct eckey *eckey_new(void)
{
	struct eckey *k = calloc(1, sizeof *k);
	if (k)
		mbedtls_pk_init(&k->pk);
	return k;
}

void eckey_free(struct eckey *k)
{
	if (!k)
		return;
	EVP_PKEY_free(k->ossl);
	mbedtls_pk_free(&k->pk); /* mbedtls_pk_free zeroizes the key material */
	free(k);
}

int eckey_is_p256(const mbedtls_pk_context *pk)
{
	return mbedtls_pk_get_type(pk) == MBEDTLS_PK_ECKEY && mbedtls_pk_ec(*pk)->grp.id == MBEDTLS_ECP_DP_SECP256R1;
}

int eckey_parse_public(const uint8_t *pem, size_t n, struct eckey **out, char *err)
{
	/* mbedtls_pk_parse_public_key wants PEM NUL-terminated, length counting the NUL. */
	uint8_t *z = malloc(n + 1);
	struct eckey *k = eckey_new();
	if (!z || !k) {
		free(z);
		eckey_free(k);
		return as_fail(err, AS_ENOMEM, "out of memory");
	}
	memcpy(z, pem, n);
	z[n] = 0;
	int rc = mbedtls_pk_parse_public_key(&k->pk, z, n + 1);
	free(z);
	if (rc != 0 || !eckey_is_p256(&k->pk)) {
		eckey_free(k);
		return as_fail(err, AS_ECRYPTO, "not a P-256 public key in PEM form");
	}
	*out = k;
	return 0;
}

int eckey_load_public(const char *path, struct eckey **out, char *err)
{
	struct buf b;
	GUARD(file_read(path, 16384, &b, err));
	int rc = eckey_parse_public(b.p, b.len, out, err);
	buf_free(&b);
	if (rc != 0)
		return as_fail(err, rc, "%s: not a P-256 public key in PEM form", path);
	return 0;
}

int eckey_public_pem(const struct eckey *k, struct buf *out)
{
	unsigned char pem[512];
	if (mbedtls_pk_write_pubkey_pem((mbedtls_pk_context *)&k->pk, pem, sizeof pem) != 0)
		return AS_ECRYPTO;
	return buf_put(out, pem, strlen((char *)pem));
}

int eckey_spki(const struct eckey *k, uint8_t *out, size_t *n)
{
	unsigned char der[ECKEY_SPKI_MAX + 64];
	int len = mbedtls_pk_write_pubkey_der((mbedtls_pk_context *)&k->pk, der, sizeof der);
	if (len <= 0 || (size_t)len > ECKEY_SPKI_MAX)
		return AS_ECRYPTO;
	/* mbedTLS writes DER at the end of the buffer. */
	memcpy(out, der + sizeof der - (size_t)len, (size_t)len);
	*n = (size_t)len;
	return 0;
}

/* k's public key in OpenSSL, made once; two threads racing to make it keep one. NULL when
 * OpenSSL refuses it (it never has a P-256 key mbedTLS parsed). */
static EVP_PKEY *ossl_key(const struct eckey *k)
{
	void **slot = &((struct eckey *)k)->ossl;
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *none = NULL;
	if (p)
		return p;
	uint8_t der[ECKEY_SPKI_MAX];
	size_t n = 0;
	const unsigned char *q = der;
	p = eckey_spki(k, der, &n) == 0 ? d2i_PUBKEY(NULL, &q, (long)n) : NULL;
	ERR_clear_error();
	if (p && !__atomic_compare_exchange_n(slot, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		EVP_PKEY_free(p);
		p = none;
	}
	return p;
}

/* A DER ECDSA signature over a SHA-256 hash. OpenSSL refuses r or s outside [1, n-1] and a
 * signature that is not DER as it would encode it, as mbedTLS does. */
static int verify_hash(const struct eckey *k, const uint8_t h[32], const uint8_t *sig, size_t siglen)
{
	EVP_PKEY *p = ossl_key(k);
	EVP_PKEY_CTX *c = p ? EVP_PKEY_CTX_new(p, NULL) : NULL;
	int ok = c && EVP_PKEY_verify_init(c) == 1 && EVP_PKEY_verify(c, sig, siglen, h, 32) == 1;
	EVP_PKEY_CTX_free(c);
	ERR_clear_error(); /* nothing of a refusal may linger in this thread's queue */
	return ok ? 0 : AS_EBADSIG;
}

int eckey_verify(const struct eckey *k, const void *msg, size_t n, const uint8_t *sig, size_t siglen)
{
	uint8_t h[32];
	SHA256(msg, n, h);
	return verify_hash(k, h, sig, siglen);
}

int eckey_xy(const struct eckey *k, uint8_t x[32], uint8_t y[32])
{
	const mbedtls_ecp_keypair *ec = mbedtls_pk_ec(k->pk);
	uint8_t pt[65];
	size_t n = 0;
	if (mbedtls_ecp_point_write_binary(&ec->grp, &ec->Q, MBEDTLS_ECP_PF_UNCOMPRESSED, &n, pt, sizeof pt) != 0 ||
	    n != 65)
		return AS_ECRYPTO;
	memcpy(x, pt + 1, 32);
	memcpy(y, pt + 33, 32);
	return 0;
}

int eckey_from_xy(const uint8_t x[32], const uint8_t y[32], struct eckey **out)
{
	struct eckey *k = eckey_new();
	if (!k)
		return AS_ENOMEM;
	uint8_t pt[65];
	pt[0] = 4;
	memcpy(pt + 1, x, 32);
	memcpy(pt + 33, y, 32);
	mbedtls_ecp_keypair *ec;
	if (mbedtls_pk_setup(&k->pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) != 0 ||
	    (ec = mbedtls_pk_ec(k->pk), mbedtls_ecp_group_load(&ec->grp, MBEDTLS_ECP_DP_SECP256R1) != 0) ||
	    mbedtls_ecp_point_read_binary(&ec->grp, &ec->Q, pt, sizeof pt) != 0 ||
	    mbedtls_ecp_check_pubkey(&ec->grp, &ec->Q) != 0) {
		eckey_free(k);
		return AS_ECRYPTO;
	}
	*out = k;
	return 0;
}

int eckey_jwk_kid(const struct eckey *k, char kid[44])
{
	uint8_t x[32], y[32], h[32];
	GUARD(eckey_xy(k, x, y));
	/* RFC 7638: the required members in lexicographic order, no whitespace. */
	struct buf j, bx, by;
	buf_init(&j, 512);
	buf_init(&bx, 64);
	buf_init(&by, 64);
	int rc = b64url_encode(x, 32, &bx);
	if (rc == 0)
		rc = b64url_encode(y, 32, &by);
	if (rc == 0)
		rc = buf_printf(&j, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%.*s\",\"y\":\"%.*s\"}", (int)bx.len,
				(const char *)bx.p, (int)by.len, (const char *)by.p);
	if (rc == 0) {
		mbedtls_sha256_ret(j.p, j.len, h, 0);
		struct buf o;
		buf_init(&o, 64);
		rc = b64url_encode(h, 32, &o);
		if (rc == 0 && o.len == 43) {
			memcpy(kid, o.p, 43);
			kid[43] = 0;
		} else if (rc == 0) {
			rc = AS_ECRYPTO;
		}
		buf_free(&o);
	}
	buf_free(&j);
	buf_free(&bx);
	buf_free(&by);
	return rc;
}

static const uint8_t p256_n[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
				   0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};
static const uint8_t p256_half_n[32] = {0x7f, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x7f, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff, 0xff, 0xde, 0x73, 0x7d, 0x56, 0xd3, 0x8b,
					0xcf, 0x42, 0x79, 0xdc, 0xe5, 0x61, 0x7e, 0x31, 0x92, 0xa8};

int eckey_s_high(const uint8_t s[32])
{
	return memcmp(s, p256_half_n, 32) > 0;
}

void eckey_s_low(uint8_t s[32])
{
	if (!eckey_s_high(s))
		return;
	unsigned borrow = 0;
	for (int i = 31; i >= 0; i--) { /* s := n - s, big-endian, s < n */
		unsigned d = (unsigned)p256_n[i] - s[i] - borrow;
		s[i] = (uint8_t)d;
		borrow = (d >> 8) & 1;
	}
}

/* One DER INTEGER of a 32-byte big-endian unsigned value: no leading zero bytes but
 * one when the top bit is set (X.690 8.3). */
static size_t der_uint(const uint8_t v[32], uint8_t *out)
{
	size_t i = 0;
	while (i < 31 && v[i] == 0)
		i++;
	size_t pad = v[i] & 0x80 ? 1 : 0, len = 32 - i + pad;
	out[0] = 0x02;
	out[1] = (uint8_t)len;
	out[2] = 0;
	memcpy(out + 2 + pad, v + i, 32 - i);
	return 2 + len;
}

int eckey_rs_der(const uint8_t rs[64], uint8_t *der, size_t *n)
{
	uint8_t body[2 * 35];
	size_t len = der_uint(rs, body);
	len += der_uint(rs + 32, body + len);
	if (len + 2 > ECKEY_SIG_MAX || len > 127)
		return AS_EINVAL;
	der[0] = 0x30;
	der[1] = (uint8_t)len;
	memcpy(der + 2, body, len);
	*n = len + 2;
	return 0;
}

int eckey_verify_rs(const struct eckey *k, const uint8_t hash[32], const uint8_t rs[64])
{
	uint8_t der[ECKEY_SIG_MAX];
	size_t n = 0;
	/* r or s of 0, or at least n, encodes and is refused by the verification. */
	return eckey_rs_der(rs, der, &n) == 0 ? verify_hash(k, hash, der, n) : AS_EBADSIG;
}
