/* Unit tests for common/webauthn.c: authenticator data, the client data's limited
 * verification, assertion signatures and the approval challenge (with a known answer
 * computed by an independent canonical-CBOR encoder in Python, written for this test). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <mbedtls/sha256.h>

#include "common/eckey.h"
#include "common/util.h"
#include "common/webauthn.h"

static const uint8_t CHALLENGE[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
				      17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
#define ORIGIN "http://127.0.0.1:8080"
#define CH_B64 "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA"

/* Authenticator data for rp id "127.0.0.1": flags, count, and (with key) the credential. */
static size_t make_authdata(uint8_t *out, uint8_t flags, uint32_t count, const struct eckey *key, size_t idlen)
{
	size_t n = 0;
	wa_rpid_hash("127.0.0.1", out);
	n = 32;
	out[n++] = flags;
	out[n++] = (uint8_t)(count >> 24);
	out[n++] = (uint8_t)(count >> 16);
	out[n++] = (uint8_t)(count >> 8);
	out[n++] = (uint8_t)count;
	if (!key)
		return n;
	memset(out + n, 0xaa, 16); /* aaguid */
	n += 16;
	out[n++] = (uint8_t)(idlen >> 8);
	out[n++] = (uint8_t)idlen;
	memset(out + n, 0x5c, idlen);
	n += idlen;
	static const uint8_t head[] = {0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20};
	uint8_t x[32], y[32];
	assert_int_equal(eckey_xy(key, x, y), 0);
	memcpy(out + n, head, sizeof head);
	n += sizeof head;
	memcpy(out + n, x, 32);
	n += 32;
	out[n++] = 0x22;
	out[n++] = 0x58;
	out[n++] = 0x20;
	memcpy(out + n, y, 32);
	return n + 32;
}

static void test_authdata_plain(void **state)
{
	(void)state;
	uint8_t ad[64];
	char err[AS_ERRLEN];
	struct wa_authdata a;
	size_t n = make_authdata(ad, WA_FLAG_UP | WA_FLAG_UV, 7, NULL, 0);
	assert_int_equal(wa_authdata_parse(ad, n, &a, err), 0);
	assert_int_equal(a.flags, WA_FLAG_UP | WA_FLAG_UV);
	assert_int_equal(a.sign_count, 7);
	assert_int_equal(a.has_cred, 0);
	uint8_t h[32];
	wa_rpid_hash("127.0.0.1", h);
	assert_memory_equal(a.rpid_hash, h, 32);
	assert_int_not_equal(wa_authdata_parse(ad, n - 1, &a, err), 0); /* short */
	ad[n] = 0;
	assert_int_not_equal(wa_authdata_parse(ad, n + 1, &a, err), 0); /* a byte after, nothing to hold it */
	assert_non_null(strstr(err, "after the sign count"));
	ad[32] |= WA_FLAG_ED;
	assert_int_not_equal(wa_authdata_parse(ad, n, &a, err), 0);
	assert_non_null(strstr(err, "extensions"));
}

static void test_authdata_credential(void **state)
{
	(void)state;
	struct eckey *k;
	assert_int_equal(eckey_generate(&k), 0);
	uint8_t ad[WA_AUTHDATA_MAX], x[32], y[32];
	char err[AS_ERRLEN];
	struct wa_authdata a;
	size_t n = make_authdata(ad, WA_FLAG_UP | WA_FLAG_UV | WA_FLAG_AT, 0, k, 20);
	assert_int_equal(wa_authdata_parse(ad, n, &a, err), 0);
	assert_int_equal(a.has_cred, 1);
	assert_int_equal(a.cred_id_len, 20);
	assert_int_equal(a.cred_id[0], 0x5c);
	assert_int_equal(eckey_xy(k, x, y), 0);
	assert_memory_equal(a.x, x, 32);
	assert_memory_equal(a.y, y, 32);
	/* every cut and every trailing byte is refused */
	for (size_t m = WA_AUTHDATA_MIN; m < n; m++)
		assert_int_not_equal(wa_authdata_parse(ad, m, &a, err), 0);
	ad[n] = 0xf6;
	assert_int_not_equal(wa_authdata_parse(ad, n + 1, &a, err), 0);
	/* another algorithm (EdDSA, -8) */
	size_t alg = 37 + 18 + 20 + 4;
	assert_int_equal(ad[alg], 0x26);
	ad[alg] = 0x27;
	assert_int_not_equal(wa_authdata_parse(ad, n, &a, err), 0);
	assert_non_null(strstr(err, "ES256"));
	ad[alg] = 0x26;
	/* a point off the curve */
	ad[n - 1] ^= 1;
	assert_int_not_equal(wa_authdata_parse(ad, n, &a, err), 0);
	assert_non_null(strstr(err, "P-256"));
	ad[n - 1] ^= 1;
	/* a credential id longer than what holds it, and an empty one */
	ad[37 + 16] = 0x03;
	assert_int_not_equal(wa_authdata_parse(ad, n, &a, err), 0);
	ad[37 + 16] = 0;
	ad[37 + 17] = 0;
	assert_int_not_equal(wa_authdata_parse(ad, n, &a, err), 0);
	eckey_free(k);
}

static int cdj(const char *json, const char *type, const char *origin)
{
	char err[AS_ERRLEN];
	return wa_client_data_check((const uint8_t *)json, strlen(json), type, CHALLENGE, origin, err);
}

static void test_client_data(void **state)
{
	(void)state;
	const char *get = "webauthn.get";
	assert_int_equal(cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN
			     "\",\"crossOrigin\":false}",
			     get, ORIGIN),
			 0);
	/* what Chromium adds on purpose after crossOrigin */
	assert_int_equal(cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN
			     "\",\"crossOrigin\":false,\"other_keys_can_be_added_here\":\"do not compare\"}",
			     get, ORIGIN),
			 0);
	assert_int_equal(
	    cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN "\"}", get, ORIGIN), 0);
	/* refused: the other ceremony, another challenge, another origin, cross-origin, another order */
	assert_int_not_equal(cdj("{\"type\":\"webauthn.create\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN
				 "\",\"crossOrigin\":false}",
				 get, ORIGIN),
			     0);
	assert_int_not_equal(
	    cdj("{\"type\":\"webauthn.get\",\"challenge\":\"BQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA\","
		"\"origin\":\"" ORIGIN "\",\"crossOrigin\":false}",
		get, ORIGIN),
	    0);
	assert_int_not_equal(cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64
				 "\",\"origin\":\"http://127.0.0.1:8081\",\"crossOrigin\":false}",
				 get, ORIGIN),
			     0);
	assert_int_not_equal(cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN
				 "\",\"crossOrigin\":true}",
				 get, ORIGIN),
			     0);
	assert_int_not_equal(
	    cdj("{\"type\":\"webauthn.get\",\"origin\":\"" ORIGIN "\",\"challenge\":\"" CH_B64 "\"}", get, ORIGIN), 0);
	/* an origin that is a prefix of the one signed */
	assert_int_not_equal(cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN
				 "0\",\"crossOrigin\":false}",
				 get, ORIGIN),
			     0);
	assert_int_not_equal(
	    cdj("{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN "\"", get, ORIGIN), 0);
	assert_int_not_equal(cdj("", get, ORIGIN), 0);
}

static void test_assertion(void **state)
{
	(void)state;
	struct eckey *k, *other;
	assert_int_equal(eckey_generate(&k), 0);
	assert_int_equal(eckey_generate(&other), 0);
	uint8_t ad[64], x[32], y[32], msg[64 + 32], sig[ECKEY_SIG_MAX];
	char err[AS_ERRLEN];
	size_t an = make_authdata(ad, WA_FLAG_UP | WA_FLAG_UV, 1, NULL, 0), sn = 0;
	const char *c = "{\"type\":\"webauthn.get\",\"challenge\":\"" CH_B64 "\",\"origin\":\"" ORIGIN "\"}";
	size_t cn = strlen(c);
	memcpy(msg, ad, an);
	mbedtls_sha256_ret((const uint8_t *)c, cn, msg + an, 0);
	assert_int_equal(eckey_sign(k, msg, an + 32, sig, &sn), 0);
	assert_int_equal(eckey_xy(k, x, y), 0);
	assert_int_equal(wa_assertion_verify(x, y, ad, an, (const uint8_t *)c, cn, sig, sn, err), 0);
	ad[33] ^= 1; /* the sign count changed */
	assert_int_equal(wa_assertion_verify(x, y, ad, an, (const uint8_t *)c, cn, sig, sn, err), AS_EBADSIG);
	ad[33] ^= 1;
	assert_int_equal(wa_assertion_verify(x, y, ad, an, (const uint8_t *)c, cn - 1, sig, sn, err), AS_EBADSIG);
	assert_int_equal(eckey_xy(other, x, y), 0);
	assert_int_equal(wa_assertion_verify(x, y, ad, an, (const uint8_t *)c, cn, sig, sn, err), AS_EBADSIG);
	assert_int_not_equal(wa_assertion_verify(x, y, ad, an, (const uint8_t *)c, cn, sig, 0, err), 0);
	eckey_free(k);
	eckey_free(other);
}

static void test_challenge(void **state)
{
	(void)state;
	char err[AS_ERRLEN], resp[65], action[80];
	uint8_t e[32], h[32];
	mbedtls_sha256_ret((const uint8_t *)"", 0, e, 0);
	hex_encode(e, 32, resp);
	snprintf(action, sizeof action, "sha256:");
	for (int i = 0; i < 32; i++)
		memcpy(action + 7 + 2 * i, "ab", 3);
	struct wa_terms t = {.origin = "assent/0a1b2c3d",
			     .session_id = "s-1",
			     .action = action,
			     .outcome = "approved",
			     .response_digest = resp,
			     .scope = "request",
			     .reviewer = "alice",
			     .deadline = 1767225600};
	assert_int_equal(wa_challenge(&t, h, err), 0);
	char hex[65];
	hex_encode(h, 32, hex);
	/* tests/unit/webauthn_test.c's known answer: SHA-256 of the RFC 8949 canonical map
	 * (keys sorted by their encoding), computed by a separate Python encoder */
	assert_string_equal(hex, "2859a2a05ba84bb349cd7e9e2b8c3212912996cae426d5dc20a8df0178816d1d");
	uint8_t h2[32];
	t.outcome = "rejected";
	assert_int_equal(wa_challenge(&t, h2, err), 0);
	assert_memory_not_equal(h, h2, 32);
	t.outcome = "approved";
	t.deadline++;
	assert_int_equal(wa_challenge(&t, h2, err), 0);
	assert_memory_not_equal(h, h2, 32);
	t.reviewer = "";
	assert_int_not_equal(wa_challenge(&t, h2, err), 0);
	assert_non_null(strstr(err, "reviewer"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_authdata_plain), cmocka_unit_test(test_authdata_credential),
	    cmocka_unit_test(test_client_data),	   cmocka_unit_test(test_assertion),
	    cmocka_unit_test(test_challenge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
