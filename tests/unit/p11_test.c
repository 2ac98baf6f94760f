/* Unit tests for common/p11.c's parsing of what a PKCS#11 module returns (CKA_EC_POINT,
 * CKA_EC_PARAMS), its configuration from the environment, and eckey_rs_der, which turns the
 * token's r || s into the DER signature a checkpoint carries (OpenSSL as the oracle). The
 * module itself is exercised with SoftHSM2 by tests/integration/pkcs11.sh. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>

#include "common/eckey.h"
#include "common/p11.h"
#include "common/util.h"

/* A real P-256 point: the public key of a key made here, as a module encodes it. */
static void point_of(uint8_t der[67], uint8_t x[32], uint8_t y[32])
{
	struct eckey *k;
	assert_int_equal(eckey_generate(&k), 0);
	assert_int_equal(eckey_xy(k, x, y), 0);
	eckey_free(k);
	der[0] = 0x04;
	der[1] = 65;
	der[2] = 0x04;
	memcpy(der + 3, x, 32);
	memcpy(der + 35, y, 32);
}

static void test_point(void **state)
{
	(void)state;
	uint8_t der[67], x[32], y[32], gx[32], gy[32];
	point_of(der, x, y);
	assert_int_equal(p11_parse_point(der, 67, gx, gy), 0);
	assert_memory_equal(gx, x, 32);
	assert_memory_equal(gy, y, 32);
	struct eckey *k;
	assert_int_equal(eckey_from_xy(gx, gy, &k), 0);
	eckey_free(k);
	memset(gx, 0, 32);
	assert_int_equal(p11_parse_point(der + 2, 65, gx, gy), 0); /* the bare point */
	assert_memory_equal(gx, x, 32);
	/* refused: short, long, another tag, another length, a compressed point, long-form length */
	assert_int_equal(p11_parse_point(der, 66, gx, gy), AS_EINVAL);
	assert_int_equal(p11_parse_point(der, 0, gx, gy), AS_EINVAL);
	uint8_t b[70];
	memcpy(b, der, 67);
	b[67] = 0;
	assert_int_equal(p11_parse_point(b, 68, gx, gy), AS_EINVAL);
	b[0] = 0x03;
	assert_int_equal(p11_parse_point(b, 67, gx, gy), AS_EINVAL);
	memcpy(b, der, 67);
	b[1] = 64;
	assert_int_equal(p11_parse_point(b, 67, gx, gy), AS_EINVAL);
	memcpy(b, der, 67);
	b[2] = 0x02;
	assert_int_equal(p11_parse_point(b, 67, gx, gy), AS_EINVAL);
	b[0] = 0x04, b[1] = 0x81, b[2] = 65;
	memcpy(b + 3, der + 2, 65);
	assert_int_equal(p11_parse_point(b, 68, gx, gy), AS_EINVAL);
	/* a point not on the curve parses, and eckey_from_xy refuses it */
	memcpy(b, der, 67);
	b[66] ^= 1;
	assert_int_equal(p11_parse_point(b, 67, gx, gy), 0);
	assert_int_not_equal(eckey_from_xy(gx, gy, &k), 0);
}

static void test_params(void **state)
{
	(void)state;
	static const uint8_t p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
	static const uint8_t p384[] = {0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};
	assert_int_equal(p11_params_p256(p256, sizeof p256), 0);
	assert_int_equal(p11_params_p256(p384, sizeof p384), AS_EINVAL);
	assert_int_equal(p11_params_p256(p256, sizeof p256 - 1), AS_EINVAL);
	uint8_t b[sizeof p256];
	memcpy(b, p256, sizeof b);
	b[9] = 0x08;
	assert_int_equal(p11_params_p256(b, sizeof b), AS_EINVAL);
}

/* r || s to DER, checked by OpenSSL: it parses, gives back r and s, and re-encodes to the
 * same bytes (DER has one encoding); values with a top bit set and with leading zeros. */
static void rs_case(const uint8_t rs[64])
{
	uint8_t der[ECKEY_SIG_MAX];
	size_t n = 0;
	assert_int_equal(eckey_rs_der(rs, der, &n), 0);
	assert_true(n <= 72);
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)n);
	assert_non_null(sig);
	assert_ptr_equal(p, der + n);
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(sig, &r, &s);
	uint8_t back[64];
	assert_int_equal(BN_bn2binpad(r, back, 32), 32);
	assert_int_equal(BN_bn2binpad(s, back + 32, 32), 32);
	assert_memory_equal(back, rs, 64);
	unsigned char *q = NULL;
	int len = i2d_ECDSA_SIG(sig, &q);
	assert_int_equal(len, (int)n);
	assert_memory_equal(q, der, n);
	OPENSSL_free(q);
	ECDSA_SIG_free(sig);
}

static void test_rs_der(void **state)
{
	(void)state;
	uint8_t rs[64];
	memset(rs, 0xff, 64);
	rs_case(rs); /* both need a 0x00 pad: 72 bytes */
	memset(rs, 0, 64);
	rs[31] = 1;
	rs[63] = 0x80;
	rs_case(rs); /* one byte each, the second padded */
	for (int i = 0; i < 64; i++)
		rs[i] = (uint8_t)(i * 37 + 11);
	rs[0] = 0, rs[1] = 0x7f, rs[32] = 0x80;
	rs_case(rs);
}

static void test_config(void **state)
{
	(void)state;
	struct p11_config c;
	char err[AS_ERRLEN] = "";
	unsetenv("ASSENT_PKCS11_MODULE");
	assert_int_equal(p11_config_from_env(&c, err), 0);
	assert_int_equal(c.on, 0);
	setenv("ASSENT_PKCS11_MODULE", "libsofthsm2.so", 1);
	assert_int_equal(p11_config_from_env(&c, err), AS_EINVAL);
	assert_non_null(strstr(err, "absolute path"));
	setenv("ASSENT_PKCS11_MODULE", "/usr/lib/softhsm/libsofthsm2.so", 1);
	unsetenv("ASSENT_PKCS11_TOKEN");
	assert_int_equal(p11_config_from_env(&c, err), AS_EINVAL);
	assert_non_null(strstr(err, "ASSENT_PKCS11_TOKEN must be set"));
	setenv("ASSENT_PKCS11_TOKEN", "0123456789abcdef0123456789abcdefX", 1); /* 33 bytes */
	setenv("ASSENT_PKCS11_PIN_FILE", "/etc/pin", 1);
	assert_int_equal(p11_config_from_env(&c, err), AS_EINVAL);
	setenv("ASSENT_PKCS11_TOKEN", "assent", 1);
	assert_int_equal(p11_config_from_env(&c, err), 0);
	assert_int_equal(c.on, 1);
	assert_string_equal(c.token_key, "assent-token");
	assert_string_equal(c.ckpt_key, "assent-checkpoint");
	setenv("ASSENT_PKCS11_TOKEN_KEY", "assent-checkpoint", 1);
	assert_int_equal(p11_config_from_env(&c, err), AS_EINVAL);
	assert_non_null(strstr(err, "two labels"));
	unsetenv("ASSENT_PKCS11_TOKEN_KEY");
	unsetenv("ASSENT_PKCS11_MODULE");
}

/* A module that is not there is named, and nothing is left open. */
static void test_open_missing_module(void **state)
{
	(void)state;
	struct p11_config c = {.on = 1};
	snprintf(c.module, sizeof c.module, "/nonexistent/libnope.so");
	snprintf(c.token, sizeof c.token, "assent");
	struct p11 *p = NULL;
	char err[AS_ERRLEN] = "";
	assert_int_equal(p11_open(&c, 0, &p, err), AS_EIO);
	assert_null(p);
	assert_non_null(strstr(err, "cannot load the PKCS#11 module /nonexistent/libnope.so"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_point),
	    cmocka_unit_test(test_params),
	    cmocka_unit_test(test_rs_der),
	    cmocka_unit_test(test_config),
	    cmocka_unit_test(test_open_missing_module),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
