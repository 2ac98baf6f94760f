/* make bench: what checking a passkey approval costs the signer (issue 31), per assertion,
 * one core: the whole check as gateway/signer/passkey.c runs it (the challenge as canonical
 * CBOR and its SHA-256, the client data compared, the authenticator data read, the ES256
 * signature verified with mbedTLS), the signature alone, and beside them OpenSSL's ES256
 * verification of the same bytes (the machine's fast floor) and one write + fdatasync of a
 * 4 KiB block in the build directory (the disk's sync floor, which the decision's commit pays
 * anyway). Figures only; the assertion is checked to verify before anything is timed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "common/util.h"
#include "common/webauthn.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "passkey_bench: %s\n", what);
	exit(2);
}

static const struct wa_terms TERMS = {"assent/0a1b2c3d",
				      "req-00112233445566778899aabbccddeeff",
				      "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
				      "approved",
				      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
				      "request",
				      "alice",
				      1796622642000ull};
static const char ORIGIN[] = "https://review.example.com";

static uint8_t ad[37], sig[80], x[32], y[32];
static char cdj[400];
static size_t sn, cn;
static EVP_PKEY *key;

/* A credential, and an assertion of TERMS by it, made with OpenSSL. */
static void make_assertion(void)
{
	char err[AS_ERRLEN];
	uint8_t ch[32], h[32], msg[37 + 32], pub[65];
	key = EVP_EC_gen("P-256");
	size_t pn = sizeof pub;
	if (!key || !EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", pub, sizeof pub, &pn) || pn != 65)
		die("cannot make a P-256 key");
	memcpy(x, pub + 1, 32);
	memcpy(y, pub + 33, 32);
	if (wa_challenge(&TERMS, ch, err) != 0)
		die(err);
	struct buf b;
	buf_init(&b, 64);
	if (b64url_encode(ch, 32, &b) != 0)
		die("base64url");
	cn = (size_t)snprintf(
	    cdj, sizeof cdj,
	    "{\"type\":\"webauthn.get\",\"challenge\":\"%.*s\",\"origin\":\"%s\",\"crossOrigin\":false}", (int)b.len,
	    (const char *)b.p, ORIGIN);
	buf_free(&b);
	wa_rpid_hash("review.example.com", ad);
	ad[32] = WA_FLAG_UP | WA_FLAG_UV;
	ad[36] = 7; /* sign count 7 */
	SHA256((const uint8_t *)cdj, cn, h);
	memcpy(msg, ad, 37);
	memcpy(msg + 37, h, 32);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	sn = sizeof sig;
	if (!c || EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(c, sig, &sn, msg, sizeof msg) != 1)
		die("cannot sign");
	EVP_MD_CTX_free(c);
}

/* The signer's whole check (passkey.c, passkey_check): 0 when it passes. */
static int full_check(void)
{
	char err[AS_ERRLEN];
	uint8_t ch[32], rh[32];
	struct wa_authdata d;
	if (wa_challenge(&TERMS, ch, err) != 0 ||
	    wa_client_data_check((const uint8_t *)cdj, cn, "webauthn.get", ch, ORIGIN, err) != 0 ||
	    wa_authdata_parse(ad, sizeof ad, &d, err) != 0)
		return -1;
	wa_rpid_hash("review.example.com", rh);
	if (memcmp(rh, d.rpid_hash, 32) != 0 || d.sign_count != 7)
		return -1;
	return wa_assertion_verify(x, y, ad, sizeof ad, (const uint8_t *)cdj, cn, sig, sn, err);
}

static int sig_only(void)
{
	return wa_assertion_verify(x, y, ad, sizeof ad, (const uint8_t *)cdj, cn, sig, sn, NULL);
}

static int openssl_verify(void)
{
	uint8_t h[32], msg[37 + 32];
	SHA256((const uint8_t *)cdj, cn, h);
	memcpy(msg, ad, 37);
	memcpy(msg + 37, h, 32);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestVerifyInit(c, NULL, EVP_sha256(), NULL, key) == 1 &&
		 EVP_DigestVerify(c, sig, sn, msg, sizeof msg) == 1;
	EVP_MD_CTX_free(c);
	return ok ? 0 : -1;
}

/* Median of three rounds of n calls, in microseconds per call. */
static double per_call(int (*fn)(void), int n)
{
	double r[3];
	for (int k = 0; k < 3; k++) {
		double t0 = now_s();
		for (int i = 0; i < n; i++)
			if (fn() != 0)
				die("a check failed while timed");
		r[k] = (now_s() - t0) * 1e6 / n;
	}
	double lo = r[0] < r[1] ? r[0] : r[1], hi = r[0] < r[1] ? r[1] : r[0];
	return r[2] < lo ? lo : r[2] > hi ? hi : r[2];
}

static double sync_floor(void)
{
	char path[] = "build/bench/passkey_bench.syncXXXXXX";
	int fd = mkstemp(path);
	static uint8_t block[4096];
	if (fd < 0)
		die("cannot make a file in build/bench");
	unlink(path);
	double t0 = now_s();
	for (int i = 0; i < 200; i++)
		if (pwrite(fd, block, sizeof block, 0) != (ssize_t)sizeof block || fdatasync(fd) != 0)
			die("write or fdatasync failed");
	close(fd);
	return (now_s() - t0) * 1e6 / 200;
}

int main(void)
{
	make_assertion();
	if (full_check() != 0 || sig_only() != 0 || openssl_verify() != 0)
		die("the assertion does not verify");
	sig[sn - 1] ^= 1;
	if (sig_only() == 0)
		die("a broken signature verifies");
	sig[sn - 1] ^= 1;
	double full = per_call(full_check, 2000), s = per_call(sig_only, 2000), o = per_call(openssl_verify, 2000);
	double f = sync_floor();
	printf("passkey assertion check (issue 31), one core, median of 3 rounds:\n");
	printf("  whole check as the signer runs it   %8.1f us  (%6.0f/s)\n", full, 1e6 / full);
	printf("  of which the ES256 signature        %8.1f us  (%6.0f/s, mbedTLS)\n", s, 1e6 / s);
	printf("  reference: OpenSSL ES256 verify     %8.1f us  (%6.0f/s)\n", o, 1e6 / o);
	printf("  disk sync floor: write+fdatasync    %8.1f us  (one per durable commit)\n", f);
	EVP_PKEY_free(key);
	return 0;
}
