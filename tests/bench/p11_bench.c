/* make bench: the cost of one signature with the key in a PKCS#11 token (SoftHSM2, through
 * common/p11.c as assentd signs) beside the file key held in OpenSSL (what assentd does
 * without a token), for a token (ES256 r || s over a SHA-256 hash) and for a checkpoint
 * (the signed note's DER signature, headsign.c vs p11_note_sign). The token, its PIN file
 * and ASSENT_PKCS11_* come from tests/bench/p11_bench.sh, which makes a throwaway SoftHSM2
 * token. Each way's signature is verified once before timing. Figures only. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/eckey.h"
#include "common/p11.h"
#include "ledger/headsign.h"
#include "ledger/merkle.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "p11_bench: %s%s%s\n", what, err ? ": " : "", err ? err : "");
	exit(2);
}

/* A note body as the ledger signs one (origin, size, root). */
static const char NOTE[] = "assent/9fe1bf31\n123456\nq2v8nCk0s1S8mQ0E6O5l1l1QHn5bqg4a3cJ6oO3m2pY=\n";
static struct headsign *hs;
static struct p11_key *pk;
static uint8_t hash[32];

static int w_file_token(void)
{
	uint8_t der[ECKEY_SIG_MAX];
	size_t n;
	return headsign_sign(hs, NOTE, sizeof NOTE - 1, der, &n); /* OpenSSL, key held: the ES256 path's cost */
}

static int w_p11_token(void)
{
	uint8_t rs[64];
	return p11_sign_rs(pk, hash, rs);
}

static int w_p11_note(void)
{
	uint8_t der[ECKEY_SIG_MAX];
	size_t n;
	return p11_note_sign(pk, NOTE, sizeof NOTE - 1, der, &n);
}

static double us_per(int (*fn)(void), double seconds)
{
	long n = 0;
	double t0 = now_s(), el;
	do {
		for (int i = 0; i < 16; i++)
			if (fn() != 0)
				die("a signature failed", NULL);
		n += 16;
		el = now_s() - t0;
	} while (el < seconds);
	return el * 1e6 / (double)n;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	if (seconds <= 0)
		seconds = 1.0;
	char err[AS_ERRLEN];
	struct p11_config c;
	struct p11 *p;
	if (p11_config_from_env(&c, err) != 0 || !c.on)
		die("ASSENT_PKCS11_MODULE and the rest must be set (tests/bench/p11_bench.sh)", c.on ? err : NULL);
	if (p11_open(&c, 1, &p, err) != 0)
		die("p11_open", err);
	if (p11_keygen(p, c.token_key, err) != 0 || p11_key_find(p, c.token_key, &pk, err) != 0)
		die("a key in the token", err);
	struct eckey *fk;
	if (eckey_generate(&fk) != 0 || headsign_open(fk, &hs, err) != 0)
		die("the file key", err);
	sha256(NOTE, sizeof NOTE - 1, hash);
	uint8_t rs[64], der[ECKEY_SIG_MAX];
	size_t n = 0;
	if (p11_sign_rs(pk, hash, rs) != 0 || eckey_verify_rs(p11_key_public(pk), hash, rs) != 0 ||
	    p11_note_sign(pk, NOTE, sizeof NOTE - 1, der, &n) != 0 ||
	    eckey_verify(p11_key_public(pk), NOTE, sizeof NOTE - 1, der, n) != 0)
		die("a PKCS#11 signature does not verify", NULL);
	printf("== one ECDSA P-256 signature: the file key held in OpenSSL vs the key in a PKCS#11 token "
	       "(SoftHSM2), one core ==\n");
	printf("%-62s %10s %10s\n", "", "us/sig", "sigs/s");
	const struct {
		const char *name;
		int (*fn)(void);
	} ways[] = {
	    {"file key, OpenSSL EVP_PKEY_CTX held (token and checkpoint)", w_file_token},
	    {"PKCS#11 SoftHSM2: token, C_SignInit + C_Sign, r || s", w_p11_token},
	    {"PKCS#11 SoftHSM2: checkpoint, SHA-256 + sign + DER low s", w_p11_note},
	};
	for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
		double us = us_per(ways[i].fn, seconds);
		printf("%-62s %10.1f %10.0f\n", ways[i].name, us, 1e6 / us);
	}
	headsign_free(hs);
	eckey_free(fk);
	p11_key_free(pk);
	p11_close(p);
	return 0;
}
