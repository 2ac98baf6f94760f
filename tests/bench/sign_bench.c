/* make bench: ES256 signing of one approval token (about 600 bytes of claims) by each way open
 * to us, in microseconds per token, one core:
 *  - libjwt 1.10 as tok_issue used it up to now (it parses the PEM key with OpenSSL every call);
 *  - mbedTLS 2.28 with the key parsed once: deterministic k (RFC 6979, what mbedtls_pk_sign
 *    does in Debian's build) and random k, with the fixed-point comb table for the base point
 *    kept in the held group (MBEDTLS_ECP_FIXED_POINT_OPTIM, on in Debian's build) and, for
 *    scale, without it (a fresh group per call, as a parse per call would give);
 *  - OpenSSL 3 libcrypto (already in the process through libjwt) with the EVP_PKEY held in
 *    memory: a digest-sign context per call, and a signing context set up once;
 *  - HMAC-SHA256 for HS256: libjwt, mbedTLS and OpenSSL.
 * Each signature is checked once against the public key before timing. Figures only. */
#define _GNU_SOURCE
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "common/util.h"

/* The claims of a token for a policy-approved request with no subject, as tok_issue writes them
 * (about 600 bytes; what the policy end-to-end bench issues). */
static const char CLAIMS[] =
    "{\"action\":\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"approved\":true,"
    "\"assurance\":\"policy\",\"aud\":\"default\",\"decision\":\"approved\",\"exp\":1767000900,\"iat\":1767000000,"
    "\"iss\":\"assent\",\"jti\":\"0123456789abcdef0123456789abcdef\",\"ledger\":{\"leaf_hash\":"
    "\"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\",\"seq\":123456},\"nbf\":1767000000,"
    "\"policy\":{\"digest\":\"5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"rule\":\"line 2\"},"
    "\"reviewer\":null,\"session_id\":\"req-00112233445566778899aabbccddeeff\",\"sub\":"
    "\"req-00112233445566778899aabbccddeeff\",\"subject\":[],\"token_type\":\"assent/approval/v1\"}";
static const char KID[] = "kid-0123456789abcdef0123456789abcdef0123456";

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "sign_bench: %s\n", what);
	exit(2);
}

static mbedtls_ctr_drbg_context drbg;
static mbedtls_pk_context pk; /* the key, parsed once */
static struct buf pem;	      /* its SEC1 PEM, what libjwt is handed */
static EVP_PKEY *okey;	      /* the same key in OpenSSL */
static EVP_PKEY_CTX *octx;    /* a signing context set up once */
static char input[2048];      /* base64url(header) "." base64url(claims) */
static size_t input_len;
static uint8_t secret[48];

static int s_libjwt(void)
{
	jwt_t *j = NULL;
	if (jwt_new(&j) || jwt_add_grants_json(j, CLAIMS) || jwt_add_header(j, "kid", KID) ||
	    jwt_set_alg(j, JWT_ALG_ES256, (const unsigned char *)pem.p, (int)pem.len))
		return -1;
	char *t = jwt_encode_str(j);
	jwt_free(j);
	int rc = t ? 0 : -1;
	free(t);
	return rc;
}

static int s_libjwt_hs(void)
{
	jwt_t *j = NULL;
	if (jwt_new(&j) || jwt_add_grants_json(j, CLAIMS) || jwt_add_header(j, "kid", KID) ||
	    jwt_set_alg(j, JWT_ALG_HS256, secret, sizeof secret))
		return -1;
	char *t = jwt_encode_str(j);
	jwt_free(j);
	int rc = t ? 0 : -1;
	free(t);
	return rc;
}

static uint8_t rs[64];

static int mb_rs(const mbedtls_mpi *r, const mbedtls_mpi *s)
{
	return mbedtls_mpi_write_binary(r, rs, 32) || mbedtls_mpi_write_binary(s, rs + 32, 32) ? -1 : 0;
}

static int s_mbed(int deterministic, int fresh_group)
{
	uint8_t h[32];
	mbedtls_sha256_ret((const uint8_t *)input, input_len, h, 0);
	const mbedtls_ecp_keypair *held = mbedtls_pk_ec(pk);
	mbedtls_ecp_group fresh;
	const mbedtls_ecp_group *g = &held->grp;
	if (fresh_group) { /* no comb table cached for the base point: computed again in this call */
		mbedtls_ecp_group_init(&fresh);
		if (mbedtls_ecp_group_load(&fresh, MBEDTLS_ECP_DP_SECP256R1))
			return -1;
		g = &fresh;
	}
	mbedtls_mpi r, s;
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	int rc = deterministic ? mbedtls_ecdsa_sign_det_ext((mbedtls_ecp_group *)g, &r, &s, &held->d, h, 32,
							    MBEDTLS_MD_SHA256, mbedtls_ctr_drbg_random, &drbg)
			       : mbedtls_ecdsa_sign((mbedtls_ecp_group *)g, &r, &s, &held->d, h, 32,
						    mbedtls_ctr_drbg_random, &drbg);
	if (rc == 0)
		rc = mb_rs(&r, &s);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	if (fresh_group)
		mbedtls_ecp_group_free(&fresh);
	return rc;
}
static int s_mbed_det(void)
{
	return s_mbed(1, 0);
}
static int s_mbed_rnd(void)
{
	return s_mbed(0, 0);
}
static int s_mbed_det_fresh(void)
{
	return s_mbed(1, 1);
}
static int s_mbed_rnd_fresh(void)
{
	return s_mbed(0, 1);
}

/* DER ECDSA-Sig-Value to the JWS form, r then s (RFC 7518 section 3.4). */
static int der_to_rs(const uint8_t *der, size_t n)
{
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)n);
	if (!sig)
		return -1;
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(sig, &r, &s);
	int rc = BN_bn2binpad(r, rs, 32) == 32 && BN_bn2binpad(s, rs + 32, 32) == 32 ? 0 : -1;
	ECDSA_SIG_free(sig);
	return rc;
}

static int s_ossl_digestsign(void)
{
	uint8_t der[80];
	size_t n = sizeof der;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, okey) == 1 &&
		 EVP_DigestSign(c, der, &n, (const uint8_t *)input, input_len) == 1;
	EVP_MD_CTX_free(c);
	return ok ? der_to_rs(der, n) : -1;
}

static int s_ossl_heldctx(void)
{
	uint8_t h[32], der[80];
	size_t n = sizeof der;
	SHA256((const uint8_t *)input, input_len, h);
	if (EVP_PKEY_sign(octx, der, &n, h, 32) != 1)
		return -1;
	return der_to_rs(der, n);
}

static int s_mbed_hmac(void)
{
	uint8_t mac[32];
	return mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), secret, sizeof secret,
			       (const uint8_t *)input, input_len, mac);
}

static int s_ossl_hmac(void)
{
	uint8_t mac[32];
	unsigned n = 32;
	return HMAC(EVP_sha256(), secret, sizeof secret, (const uint8_t *)input, input_len, mac, &n) ? 0 : -1;
}

static int s_sha256(void)
{
	uint8_t h[32];
	return mbedtls_sha256_ret((const uint8_t *)input, input_len, h, 0);
}

struct way {
	const char *name;
	int (*fn)(void);
};

static double us_per(int (*fn)(void), double seconds)
{
	long n = 0;
	double t0 = now_s(), el;
	do {
		for (int i = 0; i < 16; i++)
			if (fn() != 0)
				die("a signature failed");
		n += 16;
		el = now_s() - t0;
	} while (el < seconds);
	return el * 1e6 / (double)n;
}

/* The JWS form verifies against the public key (mbedTLS, as assent-verify checks it). */
static void check_rs(const char *what)
{
	uint8_t h[32];
	mbedtls_sha256_ret((const uint8_t *)input, input_len, h, 0);
	mbedtls_mpi r, s;
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	const mbedtls_ecp_keypair *k = mbedtls_pk_ec(pk);
	if (mbedtls_mpi_read_binary(&r, rs, 32) || mbedtls_mpi_read_binary(&s, rs + 32, 32) ||
	    mbedtls_ecdsa_verify((mbedtls_ecp_group *)&k->grp, h, 32, &k->Q, &r, &s))
		die(what);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	memset(rs, 0, sizeof rs);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	if (seconds <= 0)
		seconds = 1.0;
	mbedtls_entropy_context ent;
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent, (const uint8_t *)"sign_bench", 10))
		die("no randomness");
	mbedtls_pk_init(&pk);
	if (mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) ||
	    mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk), mbedtls_ctr_drbg_random, &drbg))
		die("cannot generate a key");
	unsigned char p[1024];
	if (mbedtls_pk_write_key_pem(&pk, p, sizeof p))
		die("cannot export the key");
	buf_init(&pem, 2048);
	if (buf_put(&pem, p, strlen((char *)p)) != 0)
		die("out of memory");
	BIO *bio = BIO_new_mem_buf(pem.p, (int)pem.len);
	okey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!okey || !(octx = EVP_PKEY_CTX_new(okey, NULL)) || EVP_PKEY_sign_init(octx) != 1)
		die("OpenSSL does not take the key");
	for (size_t i = 0; i < sizeof secret; i++)
		secret[i] = (uint8_t)(i * 37 + 11);

	struct buf hb, cb;
	buf_init(&hb, 256);
	buf_init(&cb, 2048);
	char header[160];
	snprintf(header, sizeof header, "{\"alg\":\"ES256\",\"kid\":\"%s\",\"typ\":\"JWT\"}", KID);
	if (b64url_encode((const uint8_t *)header, strlen(header), &hb) != 0 ||
	    b64url_encode((const uint8_t *)CLAIMS, strlen(CLAIMS), &cb) != 0)
		die("out of memory");
	input_len = (size_t)snprintf(input, sizeof input, "%.*s.%.*s", (int)hb.len, (const char *)hb.p, (int)cb.len,
				     (const char *)cb.p);
	buf_free(&hb);
	buf_free(&cb);

	const struct way es[] = {
	    {"libjwt 1.10, PEM parsed by OpenSSL each call (up to now)", s_libjwt},
	    {"mbedTLS, key held, deterministic k (RFC 6979), comb cached", s_mbed_det},
	    {"mbedTLS, key held, random k, comb cached", s_mbed_rnd},
	    {"mbedTLS, deterministic k, fresh group (no cached comb)", s_mbed_det_fresh},
	    {"mbedTLS, random k, fresh group (no cached comb)", s_mbed_rnd_fresh},
	    {"OpenSSL 3 EVP, EVP_PKEY held, DigestSign ctx per call", s_ossl_digestsign},
	    {"OpenSSL 3 EVP, EVP_PKEY_CTX held, SHA-256 + PKEY_sign", s_ossl_heldctx},
	};
	const struct way hs[] = {
	    {"HS256: libjwt 1.10 (whole token)", s_libjwt_hs},
	    {"HS256: mbedTLS HMAC-SHA256 of the signing input", s_mbed_hmac},
	    {"HS256: OpenSSL HMAC-SHA256 of the signing input", s_ossl_hmac},
	    {"for scale: mbedTLS SHA-256 of the signing input", s_sha256},
	};
	for (size_t i = 1; i < sizeof es / sizeof *es; i++) {
		if (es[i].fn() != 0)
			die("a signature failed");
		check_rs(es[i].name);
	}
	printf("== ES256 signing of one token (%zu bytes of claims, signing input %zu bytes), one core ==\n",
	       strlen(CLAIMS), input_len);
	printf("%-62s %10s %10s\n", "", "us/token", "tokens/s");
	for (size_t i = 0; i < sizeof es / sizeof *es; i++) {
		double us = us_per(es[i].fn, seconds);
		printf("%-62s %10.1f %10.0f\n", es[i].name, us, 1e6 / us);
	}
	for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) {
		double us = us_per(hs[i].fn, seconds / 2);
		printf("%-62s %10.1f %10.0f\n", hs[i].name, us, 1e6 / us);
	}
	printf("(libjwt and HS256-libjwt include building the token; the others sign the same prepared input)\n");
	EVP_PKEY_CTX_free(octx);
	EVP_PKEY_free(okey);
	buf_free_wipe(&pem);
	mbedtls_pk_free(&pk);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&ent);
	return 0;
}
