/* Fuzz target: what a PKCS#11 module hands back for a key (common/p11.c): CKA_EC_POINT
 * (p11_parse_point), CKA_EC_PARAMS (p11_params_p256), and the token's r || s turned into a
 * checkpoint's DER signature (eckey_rs_der). Properties: an accepted point is exactly its
 * one encoding (DER OCTET STRING of 0x04 || X || Y, or the bare point) and a key made from
 * it gives the same X and Y back; only P-256's OID is accepted; every r || s encodes to DER
 * that OpenSSL parses to the same r and s and re-encodes to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>

#include "common/eckey.h"
#include "common/p11.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why, const uint8_t *data, size_t size)
{
	fprintf(stderr, "p11_point: property violated: %s\ninput (%zu bytes):", why, size);
	for (size_t i = 0; i < size && i < 256; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "\n");
	abort();
}

static void check_point(const uint8_t *data, size_t size)
{
	uint8_t x[32], y[32], enc[67];
	if (p11_parse_point(data, size, x, y) != 0)
		return;
	enc[0] = 0x04;
	enc[1] = 65;
	enc[2] = 0x04;
	memcpy(enc + 3, x, 32);
	memcpy(enc + 35, y, 32);
	if (!(size == 67 && memcmp(enc, data, 67) == 0) && !(size == 65 && memcmp(enc + 2, data, 65) == 0))
		fail("an accepted CKA_EC_POINT is not the encoding of what it gave", data, size);
	struct eckey *k;
	uint8_t x2[32], y2[32];
	if (eckey_from_xy(x, y, &k) != 0)
		return; /* not on the curve: p11_key_find refuses it there */
	if (eckey_xy(k, x2, y2) != 0 || memcmp(x, x2, 32) != 0 || memcmp(y, y2, 32) != 0)
		fail("a key from an accepted point gives another point back", data, size);
	eckey_free(k);
}

static void check_rs(const uint8_t *data, size_t size)
{
	if (size < 64)
		return;
	uint8_t der[ECKEY_SIG_MAX], back[64];
	size_t n = 0;
	if (eckey_rs_der(data, der, &n) != 0 || n > 72)
		fail("an r || s has no DER encoding of at most 72 bytes", data, size);
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)n);
	if (!sig || p != der + n)
		fail("OpenSSL does not parse the DER of an r || s", data, size);
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(sig, &r, &s);
	if (BN_bn2binpad(r, back, 32) != 32 || BN_bn2binpad(s, back + 32, 32) != 32 || memcmp(back, data, 64) != 0)
		fail("the DER of an r || s gives another r or s back", data, size);
	unsigned char *q = NULL;
	int len = i2d_ECDSA_SIG(sig, &q);
	if (len != (int)n || memcmp(q, der, n) != 0)
		fail("the DER of an r || s is not OpenSSL's (DER has one encoding)", data, size);
	OPENSSL_free(q);
	ECDSA_SIG_free(sig);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
	check_point(data, size);
	if (p11_params_p256(data, size) == 0 && !(size == sizeof p256 && memcmp(data, p256, size) == 0))
		fail("CKA_EC_PARAMS other than P-256's OID accepted", data, size);
	check_rs(data, size);
	return 0;
}
