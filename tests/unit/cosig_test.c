/* Unit tests for ledger/cosig.c: witness vkeys and cosignature/v1 lines (C2SP
 * tlog-cosignature), against known answers made by tests/vectors/gen.py with Python's
 * cryptography module (keys/w1.ed25519, keys/w1.vkey, cosig/two-of-two.note), and every
 * refusal. Lines for the refusals are signed here with OpenSSL from the same test-only seed;
 * Ed25519 is deterministic, so the line signed here must equal Python's byte for byte. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "common/util.h"
#include "ledger/cosig.h"

#define EMDASH "\xe2\x80\x94"

/* tests/vectors: the witnesses' vkeys, w1's seed, and a checkpoint body with both cosignatures. */
static const char W1_VKEY[] = "witness.example/w1+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr";
static const char W2_VKEY[] = "witness.example/w2+1fcab208+BM8Bp0zdKAYvyw+MuL3lvPIh6d/J8BuYYCKJOyMGBKuj";
static const char W1_SEED[] = "117b188e64901ad6abaf1b56697d4f79909d2c94ef32e4e7b950c165e680c8ed";
static const char BODY[] = "assent-demo/701726b7\n7\nJgwIgDFeZZP43tDoD7z+rtmm2ZLSXgBoxPv9FZv3nXw=\n";
/* The log's line: its signature is not checked by cosig_verify (ckpt_verify's job). */
static const char LOG_LINE[] = EMDASH " assent-demo/701726b7 cBcmtzBFAiEAp3VKWhkf79WJrc+j1rjxslGJuxPRISlZICLETZa1Bkc"
				      "CIAxdQwBilIQvpBD7Sp6yehbUiTeBmSj2vEUTNd+bUe9E\n";
static const char W1_LINE[] = EMDASH " witness.example/w1 su6N+gAAAABw29i8i4x+KMNLMUtmDa3s3GA2uhy8J+sVI/8e6D+5R9Trbqy"
				     "Qa7FT20EiSdwzbrv1UqFbqWdPhFyolaqtFk8JzjiYDQ==\n";
static const char W2_LINE[] = EMDASH " witness.example/w2 H8qyCAAAAABw29i81sV3JkMi+8sGdXt7qYdJK/eilsmyxW/Dn+CkrUJXGVu"
				     "M+6UQ67sWa2PakqMxco9bB5z3gwK37cG6CtbnzCgBCg==\n";
#define KAT_TIME 1893456060ULL

static struct witness w[2];

static int setup(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	if (witness_parse(W1_VKEY, strlen(W1_VKEY), &w[0], err) != 0 ||
	    witness_parse(W2_VKEY, strlen(W2_VKEY), &w[1], err) != 0) {
		fprintf(stderr, "setup: %s\n", err);
		return -1;
	}
	return 0;
}

/* body + blank line + the given lines, into b (the caller frees it). */
static void note_of(struct buf *b, const char *body, int nlines, ...)
{
	va_list ap;
	buf_init(b, 2 * CKPT_MAX);
	assert_int_equal(buf_printf(b, "%s\n", body), 0);
	va_start(ap, nlines);
	for (int i = 0; i < nlines; i++) {
		const char *l = va_arg(ap, const char *);
		assert_int_equal(buf_put(b, l, strlen(l)), 0);
	}
	va_end(ap);
}

static int verify(const struct buf *note, size_t nw, struct cosig_result *r, char *err)
{
	return cosig_verify(note->p, note->len, w, nw, r, err);
}

/* "— NAME base64(blob)\n" */
static void line_of(char *out, size_t max, const char *name, const uint8_t *blob, size_t n)
{
	struct buf b;
	buf_init(&b, 512);
	assert_int_equal(b64_encode(blob, n, &b), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	snprintf(out, max, EMDASH " %s %s\n", name, (const char *)b.p);
	buf_free(&b);
}

/* w1's cosignature blob over body at time t, signed here with OpenSSL. */
static void w1_blob(const char *body, uint64_t t, uint8_t blob[COSIG_BLOB_LEN])
{
	uint8_t seed[32];
	size_t siglen = 64;
	struct buf msg;
	assert_int_equal(hex_decode(W1_SEED, 64, seed, 32), 0);
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	assert_non_null(k);
	assert_non_null(md);
	buf_init(&msg, 8192);
	assert_int_equal(cosig_message((const uint8_t *)body, strlen(body), t, &msg), 0);
	memcpy(blob, w[0].id, 4);
	be64_put(blob + 4, t);
	assert_int_equal(EVP_DigestSignInit(md, NULL, NULL, NULL, k), 1);
	assert_int_equal(EVP_DigestSign(md, blob + 12, &siglen, msg.p, msg.len), 1);
	assert_int_equal(siglen, 64);
	buf_free(&msg);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
}

static void test_vkey_known_answer(void **state)
{
	(void)state;
	assert_string_equal(w[0].name, "witness.example/w1");
	uint8_t id[4] = {0xb2, 0xee, 0x8d, 0xfa};
	assert_memory_equal(w[0].id, id, 4);
	/* The key is the vkey's 33 bytes after the type byte 0x04. */
	uint8_t raw[33];
	size_t n;
	size_t at = strlen("witness.example/w1+b2ee8dfa+"); /* the key's base64 holds a '+' itself */
	assert_int_equal(b64_decode(W1_VKEY + at, strlen(W1_VKEY) - at, raw, sizeof raw, &n), 0);
	assert_int_equal(n, 33);
	assert_int_equal(raw[0], 0x04);
	assert_memory_equal(w[0].pub, raw + 1, 32);
}

static void vkey_refused(const char *vkey, const char *why)
{
	struct witness x;
	char err[AS_ERRLEN];
	assert_int_equal(witness_parse(vkey, strlen(vkey), &x, err), AS_EINVAL);
	if (!strstr(err, why)) {
		fprintf(stderr, "vkey '%s': error '%s' does not say '%s'\n", vkey, err, why);
		fail();
	}
}

static void test_vkey_refusals(void **state)
{
	(void)state;
	char v[COSIG_VKEY_MAX + 64];
	vkey_refused("witness.example/w1+00000000+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "does not match");
	vkey_refused("witness.example/w1+B2EE8DFA+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "lowercase hex");
	vkey_refused("witness.example/w1+b2ee8df+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "lowercase hex");
	vkey_refused("witness.example/w1+b2ee8dfa", "lowercase hex"); /* no '+' after the ID */
	vkey_refused("witness.example/w1+b2ee8dfa+", "33 bytes");
	vkey_refused("witness.example/w1+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzP=", "33 bytes");
	/* 0x01 (an Ed25519 note key, not a cosignature key) */
	vkey_refused("witness.example/w1+b2ee8dfa+AWp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "key type 0x01");
	vkey_refused("witness example+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "printable ASCII");
	vkey_refused("+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "printable ASCII");
	vkey_refused("witness.example/w1", "printable ASCII");
	vkey_refused("", "printable ASCII");
	/* the name renamed: the ID no longer matches */
	vkey_refused("witness.example/w9+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr", "does not match");
	memset(v, 'a', sizeof v);
	v[sizeof v - 1] = 0;
	vkey_refused(v, "over the maximum");
	/* non-canonical base64 (a '=' where none belongs) */
	vkey_refused("witness.example/w1+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr==", "33 bytes");
}

static void test_message_known_answer(void **state)
{
	(void)state;
	struct buf m;
	buf_init(&m, 4096);
	assert_int_equal(cosig_message((const uint8_t *)BODY, strlen(BODY), 0, &m), 0);
	const char want0[] = "cosignature/v1\ntime 0\nassent-demo/701726b7\n7\n";
	assert_true(m.len > strlen(want0) && memcmp(m.p, want0, strlen(want0)) == 0);
	buf_reset(&m);
	assert_int_equal(cosig_message((const uint8_t *)BODY, strlen(BODY), KAT_TIME, &m), 0);
	const char want[] = "cosignature/v1\ntime 1893456060\n";
	assert_int_equal(m.len, strlen(want) + strlen(BODY));
	assert_memory_equal(m.p, want, strlen(want));
	assert_memory_equal(m.p + strlen(want), BODY, strlen(BODY));
	buf_free(&m);
}

static void test_known_answers_verify(void **state)
{
	(void)state;
	struct buf n;
	struct cosig_result r;
	char err[AS_ERRLEN];
	note_of(&n, BODY, 3, LOG_LINE, W1_LINE, W2_LINE);
	assert_int_equal(verify(&n, 2, &r, err), 0);
	assert_int_equal(r.count, 2);
	assert_true(r.cosigned[0] && r.cosigned[1]);
	assert_int_equal(r.time[0], KAT_TIME);
	assert_int_equal(r.time[1], KAT_TIME);
	/* Only w1 trusted: w2's line is ignored. */
	assert_int_equal(verify(&n, 1, &r, err), 0);
	assert_int_equal(r.count, 1);
	/* No witness at all: every line is ignored, none fails. */
	assert_int_equal(verify(&n, 0, &r, err), 0);
	assert_int_equal(r.count, 0);
	buf_free(&n);
	/* The line signed here with OpenSSL is Python's, byte for byte. */
	uint8_t blob[COSIG_BLOB_LEN];
	char line[256];
	w1_blob(BODY, KAT_TIME, blob);
	line_of(line, sizeof line, "witness.example/w1", blob, sizeof blob);
	assert_string_equal(line, W1_LINE);
}

/* One note (the log line then extra), checked with both witnesses: its result code. */
static int check_one(const char *body, const char *extra, struct cosig_result *r, char *err)
{
	struct buf n;
	note_of(&n, body, 2, LOG_LINE, extra);
	int rc = verify(&n, 2, r, err);
	buf_free(&n);
	return rc;
}

static void test_forgeries_fail_naming_the_witness(void **state)
{
	(void)state;
	struct cosig_result r;
	char err[AS_ERRLEN], line[256];
	uint8_t blob[COSIG_BLOB_LEN], raw[COSIG_BLOB_LEN + 8];
	w1_blob(BODY, KAT_TIME, blob);
	/* each byte of the signature, and of the timestamp, changed in turn */
	for (size_t i = 4; i < COSIG_BLOB_LEN; i++) {
		memcpy(raw, blob, sizeof blob);
		raw[i] ^= 0x40;
		line_of(line, sizeof line, "witness.example/w1", raw, sizeof blob);
		int rc = check_one(BODY, line, &r, err);
		if (i < 12 && be64_get(raw + 4) > COSIG_TIME_MAX) {
			assert_int_equal(rc, AS_EBADSIG);
			assert_non_null(strstr(err, "over 2^63 - 1"));
			continue;
		}
		assert_int_equal(rc, AS_EBADSIG);
		assert_non_null(strstr(err, "witness witness.example/w1"));
		assert_non_null(strstr(err, "does not verify"));
		assert_int_equal(r.bad, 0);
		assert_int_equal(r.count, 0);
	}
	/* truncated and extended */
	for (size_t len = 5; len <= COSIG_BLOB_LEN + 8; len++) {
		if (len == COSIG_BLOB_LEN)
			continue;
		memset(raw, 0, sizeof raw);
		memcpy(raw, blob, len < sizeof blob ? len : sizeof blob);
		line_of(line, sizeof line, "witness.example/w1", raw, len);
		assert_int_equal(check_one(BODY, line, &r, err), AS_EBADSIG);
		assert_non_null(strstr(err, "not 76"));
	}
	/* the body changed (another root at the same size: a fork) */
	const char other[] = "assent-demo/701726b7\n7\nAAAAgDFeZZP43tDoD7z+rtmm2ZLSXgBoxPv9FZv3nXw=\n";
	assert_int_equal(check_one(other, W1_LINE, &r, err), AS_EBADSIG);
	assert_non_null(strstr(err, "witness.example/w1"));
	/* w2's name with w1's line: not w2's key ID, not w1's name: ignored */
	memcpy(line, W1_LINE, sizeof W1_LINE);
	line[strlen(EMDASH " witness.example/w")] = '2';
	assert_int_equal(check_one(BODY, line, &r, err), 0);
	assert_int_equal(r.count, 0);
	/* a forgery among valid lines fails whatever the count */
	struct buf nb;
	memcpy(raw, blob, sizeof blob);
	raw[40] ^= 1;
	line_of(line, sizeof line, "witness.example/w1", raw, sizeof blob);
	note_of(&nb, BODY, 4, LOG_LINE, W2_LINE, W1_LINE, line);
	assert_int_equal(verify(&nb, 2, &r, err), AS_EBADSIG);
	assert_int_equal(r.bad, 0);
	buf_free(&nb);
}

static void test_timestamps_and_duplicates(void **state)
{
	(void)state;
	struct cosig_result r;
	char err[AS_ERRLEN], l0[256], lmax[256], lover[256], later[256];
	uint8_t blob[COSIG_BLOB_LEN];
	w1_blob(BODY, 0, blob);
	line_of(l0, sizeof l0, "witness.example/w1", blob, sizeof blob);
	w1_blob(BODY, COSIG_TIME_MAX, blob);
	line_of(lmax, sizeof lmax, "witness.example/w1", blob, sizeof blob);
	w1_blob(BODY, COSIG_TIME_MAX + 1, blob);
	line_of(lover, sizeof lover, "witness.example/w1", blob, sizeof blob);
	w1_blob(BODY, KAT_TIME + 5, blob);
	line_of(later, sizeof later, "witness.example/w1", blob, sizeof blob);
	assert_int_equal(check_one(BODY, l0, &r, err), 0);
	assert_int_equal(r.count, 1);
	assert_int_equal(r.time[0], 0);
	assert_int_equal(check_one(BODY, lmax, &r, err), 0);
	assert_int_equal(r.time[0], COSIG_TIME_MAX);
	assert_int_equal(check_one(BODY, lover, &r, err), AS_EBADSIG);
	assert_non_null(strstr(err, "over 2^63 - 1"));
	/* w1 three times: one witness; its newest timestamp kept */
	struct buf n;
	note_of(&n, BODY, 3, W1_LINE, later, l0);
	assert_int_equal(verify(&n, 2, &r, err), 0);
	assert_int_equal(r.count, 1);
	assert_int_equal(r.time[0], KAT_TIME + 5);
	assert_false(r.cosigned[1]);
	buf_free(&n);
}

static void test_malformed_notes(void **state)
{
	(void)state;
	struct cosig_result r;
	char err[AS_ERRLEN];
	struct buf n;
	note_of(&n, BODY, 0);
	assert_int_equal(verify(&n, 2, &r, err), AS_EINVAL);
	assert_non_null(strstr(err, "no signature line"));
	buf_free(&n);
	const char *bad[] = {
	    "- witness.example/w1 AAAA\n",	 /* no em dash */
	    EMDASH " witness.example/w1\n",	 /* no signature */
	    EMDASH " witness.example/w1 !!!!\n", /* not base64 */
	    EMDASH " witness.example/w1 AAAA\n", /* 3 bytes */
	    EMDASH " witness example AAAAAAAA\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(check_one(BODY, bad[i], &r, err), AS_EINVAL);
		assert_int_equal(r.count, 0);
	}
	/* without the final newline */
	note_of(&n, BODY, 1, W1_LINE);
	assert_int_equal(cosig_verify(n.p, n.len - 1, w, 2, &r, err), AS_EINVAL);
	assert_non_null(strstr(err, "final newline"));
	buf_free(&n);
	/* over CKPT_MAX_SIGS lines */
	buf_init(&n, 64 * 1024);
	assert_int_equal(buf_printf(&n, "%s\n", BODY), 0);
	for (int i = 0; i <= CKPT_MAX_SIGS; i++)
		assert_int_equal(buf_put(&n, W2_LINE, strlen(W2_LINE)), 0);
	assert_int_not_equal(cosig_verify(n.p, n.len, w, 2, &r, err), 0);
	buf_free(&n);
	/* a body that is not a checkpoint's */
	note_of(&n, "assent-demo/x\nseven\nAAAA\n", 1, W1_LINE);
	assert_int_equal(verify(&n, 2, &r, err), AS_EINVAL);
	buf_free(&n);
}

static void test_witness_sets(void **state)
{
	(void)state;
	struct witness s[3];
	char err[AS_ERRLEN];
	s[0] = w[0];
	s[1] = w[1];
	assert_int_equal(witness_set_ok(s, 2, err), 0);
	s[1] = w[0];
	assert_int_equal(witness_set_ok(s, 2, err), AS_EINVAL);
	assert_non_null(strstr(err, "given twice"));
	/* w1's key under another name: one signature would count for two */
	s[1] = w[0];
	memcpy(s[1].name, "witness.example/x", 18);
	assert_int_equal(witness_set_ok(s, 2, err), AS_EINVAL);
	assert_non_null(strstr(err, "same public key"));
	assert_int_equal(witness_set_ok(s, COSIG_WITNESS_MAX + 1, err), AS_EINVAL);
	struct cosig_result r;
	struct buf n;
	note_of(&n, BODY, 1, W1_LINE);
	assert_int_equal(cosig_verify(n.p, n.len, s, 2, &r, err), AS_EINVAL);
	buf_free(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vkey_known_answer),
	    cmocka_unit_test(test_vkey_refusals),
	    cmocka_unit_test(test_message_known_answer),
	    cmocka_unit_test(test_known_answers_verify),
	    cmocka_unit_test(test_forgeries_fail_naming_the_witness),
	    cmocka_unit_test(test_timestamps_and_duplicates),
	    cmocka_unit_test(test_malformed_notes),
	    cmocka_unit_test(test_witness_sets),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
