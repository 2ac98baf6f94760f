/* Unit tests: libjwt as an independent oracle for the tokens we issue
 * (fuzz/jwt_oracle.h). Tokens come from the signer's own issuance calls
 * (tok_prepare, tok_issue, as tests/tools/mint.c uses them) with an ES256 key from
 * tokkeys_open and with an HS256 secret; libjwt decodes each with the public key
 * (or the secret) under the one algorithm that key allows, and every claim must be
 * what the request said (built here claim by claim, not by the issuer's code) and
 * what av_verify_token returns. The last tests show each comparison can fail. */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "fuzz/jwt_oracle.h"
#include "gateway/state/token.h"
#include "include/assent/verify.h"

#define NOW 1796000000ull

static const char SECRET[] = "token-oracle-test-secret-0123456789abcdef";

struct t {
	char dir[64];	       /* the keys directory */
	struct tok_config cfg; /* ES256, or HS256 with SECRET */
	struct tokkeys *k;
	char pubpath[4200]; /* ES256: the active key's public PEM file */
	struct buf pub;	    /* ... and its bytes, what libjwt is handed */
};

static int open_keys(void **state, enum tok_mode mode)
{
	struct t *t = calloc(1, sizeof *t);
	char err[AS_ERRLEN];
	if (!t)
		return -1;
	snprintf(t->dir, sizeof t->dir, "/tmp/assent-token-oracle.XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	t->cfg.mode = mode;
	snprintf(t->cfg.iss, sizeof t->cfg.iss, "assent");
	if (mode == TOK_HS256) {
		t->cfg.secret_len = sizeof SECRET - 1;
		if (!(t->cfg.secret = malloc(t->cfg.secret_len)))
			return -1;
		memcpy(t->cfg.secret, SECRET, t->cfg.secret_len);
	}
	if (tokkeys_open(t->dir, &t->cfg, NULL, &t->k, err) != 0) {
		fprintf(stderr, "tokkeys_open: %s\n", err);
		return -1;
	}
	buf_init(&t->pub, 1 << 16);
	if (mode == TOK_ES256) {
		snprintf(t->pubpath, sizeof t->pubpath, "%s/token-%s.pub", t->dir, tokkeys_kid(t->k));
		buf_free(&t->pub);
		if (file_read(t->pubpath, 1 << 16, &t->pub, err) != 0) {
			fprintf(stderr, "public key: %s\n", err);
			return -1;
		}
	}
	*state = t;
	return 0;
}
static int setup_es256(void **state)
{
	return open_keys(state, TOK_ES256);
}
static int setup_hs256(void **state)
{
	return open_keys(state, TOK_HS256);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int teardown(void **state)
{
	struct t *t = *state;
	tokkeys_free(t->k);
	tok_config_clear(&t->cfg);
	buf_free(&t->pub);
	nftw(t->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(t);
	return 0;
}

/* What a token for r must claim, one claim at a time (the contract the verifier and
 * every downstream gate read), independent of how tok_issue builds it. */
static json_t *expected_claims(const struct tok_request *r, const char *jti, uint64_t seq, const uint8_t leaf[32])
{
	char lh[65], action[72];
	uint64_t iat = r->now, exp = r->now + (r->ttl ? r->ttl : 900);
	hex_encode(leaf, 32, lh);
	snprintf(action, sizeof action, "sha256:%s", r->action_sha256);
	json_t *c = json_object(), *subj = json_array(), *ledger = json_object();
	json_object_set_new(c, "token_type", json_string("assent/approval/v1"));
	json_object_set_new(c, "iss", json_string("assent"));
	json_object_set_new(c, "aud", json_string(r->aud));
	json_object_set_new(c, "sub", json_string(r->session_id));
	json_object_set_new(c, "session_id", json_string(r->session_id));
	json_object_set_new(c, "jti", json_string(jti));
	json_object_set_new(c, "iat", json_integer((json_int_t)iat));
	json_object_set_new(c, "nbf", json_integer((json_int_t)iat));
	json_object_set_new(c, "exp", json_integer((json_int_t)exp));
	json_object_set_new(c, "approved", json_true());
	json_object_set_new(c, "decision", json_string("approved"));
	json_object_set_new(c, "assurance", json_string(r->assurance));
	json_object_set_new(c, "action", json_string(action));
	json_t *rv = json_null(), *pol = json_null();
	if (r->reviewer_name) {
		rv = json_object();
		json_object_set_new(rv, "name", json_string(r->reviewer_name));
		json_object_set_new(rv, "channel",
				    r->reviewer_channel ? json_string(r->reviewer_channel) : json_null());
	}
	if (r->policy_rule) {
		pol = json_object();
		json_object_set_new(pol, "rule", json_string(r->policy_rule));
		json_object_set_new(pol, "digest", r->policy_digest ? json_string(r->policy_digest) : json_null());
	}
	json_object_set_new(c, "reviewer", rv);
	json_object_set_new(c, "policy", pol);
	for (size_t i = 0; i < r->nsubjects; i++) {
		json_t *s = json_object(), *d = json_object();
		json_object_set_new(d, "sha256", json_string(r->subjects[i].sha256));
		json_object_set_new(s, "name", json_string(r->subjects[i].name));
		json_object_set_new(s, "digest", d);
		json_object_set_new(s, "digest_source", json_string(r->subjects[i].computed ? "computed" : "asserted"));
		json_array_append_new(subj, s);
	}
	json_object_set_new(c, "subject", subj);
	json_object_set_new(ledger, "seq", json_integer((json_int_t)seq));
	json_object_set_new(ledger, "leaf_hash", json_string(lh));
	json_object_set_new(c, "ledger", ledger);
	assert_int_equal(json_object_size(c), 17); /* every claim tok_issue writes, each set above */
	return c;
}

static void fill_leaf(uint8_t leaf[32], uint64_t seed)
{
	for (int i = 0; i < 32; i++)
		leaf[i] = (uint8_t)(seed * 131 + (uint64_t)i * 29 + 7);
}

/* Issue a token for r through the signer's calls; *claims is what it must claim. */
static char *issue(const struct t *t, const struct tok_request *r, uint64_t seq, json_t **claims)
{
	struct tok_ticket tk;
	uint8_t leaf[32];
	char err[AS_ERRLEN], *jwt = NULL;
	fill_leaf(leaf, seq);
	if (tok_prepare(t->k, r, &tk, err) != 0 || tok_issue(t->k, r, &tk, seq, leaf, &jwt, err) != 0)
		fail_msg("issuing a token: %s", err);
	assert_int_equal(strlen(tk.jti), 32);
	*claims = expected_claims(r, tk.jti, seq, leaf);
	return jwt;
}

static void assert_same_json(const json_t *got, const json_t *want, const char *who)
{
	if (!json_equal((json_t *)got, (json_t *)want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);
		fail_msg("%s claims\n  %s\nwhere the request says\n  %s", who, g ? g : "(none)", w ? w : "(none)");
	}
}

/* Our verifier accepts tok for r's audience at r's time, with exactly `want`. */
static void assert_we_accept(const struct t *t, const char *tok, const struct tok_request *r, const json_t *want)
{
	const char *keys[] = {t->pubpath};
	struct av_token_opts o = {.aud = r->aud, .leeway = 60, .now = (long long)r->now};
	if (t->cfg.mode == TOK_ES256) {
		o.key_paths = keys;
		o.nkeys = 1;
	} else {
		o.secret = (const uint8_t *)SECRET;
		o.secret_len = sizeof SECRET - 1;
	}
	struct av_token_result res;
	int rc = av_verify_token(tok, strlen(tok), &o, &res);
	if (rc != 0)
		fail_msg("av_verify_token refuses a token we issued: %s", res.reason);
	json_t *ours = json_loads(res.claims_json, 0, NULL);
	assert_same_json(ours, want, "av_verify_token");
	json_decref(ours);
	free(res.claims_json);
}

/* The oracle: libjwt decodes tok under the key's one algorithm with exactly `want`,
 * naming the key that signed it; and our verifier agrees. */
static void assert_oracle_agrees(const struct t *t, const char *tok, const struct tok_request *r, const json_t *want)
{
	int es = t->cfg.mode == TOK_ES256;
	const void *key = es ? (const void *)t->pub.p : SECRET;
	size_t keylen = es ? t->pub.len : sizeof SECRET - 1;
	char kid[128];
	const char *why = "";
	json_t *theirs = jwt_oracle_decode(tok, key, keylen, es ? JWT_ALG_ES256 : JWT_ALG_HS256, kid, sizeof kid, &why);
	if (!theirs)
		fail_msg("libjwt does not take a token we issued: %s", why);
	assert_same_json(theirs, want, "libjwt");
	assert_string_equal(kid, tokkeys_kid(t->k));
	json_decref(theirs);
	assert_we_accept(t, tok, r, want);
}

static const struct tok_subject SUBJECTS[] = {
    {"plan.tfplan", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 1},
    {"deploy/image@sha256", "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae", 0},
};

static struct tok_request reviewer_request(void)
{
	struct tok_request r = {.aud = "tf-prod",
				.session_id = "req-00112233445566778899aabbccddeeff",
				.reviewer_name = "alice",
				.reviewer_channel = "web",
				.subjects = SUBJECTS,
				.nsubjects = 2,
				.assurance = "reviewer",
				.now = NOW};
	memset(r.action_sha256, 'a', 64);
	return r;
}

static void test_es256_reviewer_decision(void **state)
{
	struct t *t = *state;
	struct tok_request r = reviewer_request();
	json_t *want;
	char *tok = issue(t, &r, 41, &want);
	assert_oracle_agrees(t, tok, &r, want);
	json_decref(want);
	free(tok);
}

static void test_es256_policy_decision(void **state)
{
	struct t *t = *state;
	struct tok_request r = {.aud = "deploy",
				.session_id = "req-policy",
				.policy_rule = "line 2",
				.policy_digest = "5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
				.assurance = "policy",
				.ttl = TOK_TTL_MAX,
				.now = NOW};
	memset(r.action_sha256, 'b', 64);
	json_t *want;
	char *tok = issue(t, &r, 0, &want);
	assert_oracle_agrees(t, tok, &r, want);
	json_decref(want);
	free(tok);
}

/* Text the JSON writer must escape or pass through as UTF-8, a seq beyond 2^53, a
 * reviewer without a channel and a policy rule without a digest (both null). */
static void test_es256_text_and_large_numbers(void **state)
{
	struct t *t = *state;
	static const struct tok_subject odd[] = {
	    {"quote\" back\\slash / tab\t nl\n ctl\x01",
	     "0000000000000000000000000000000000000000000000000000000000000000", 1},
	    {"Z\xc3\xbcrich \xe2\x9c\x93 \xe2\x80\xa8 \xf0\x9f\x94\x91",
	     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", 0},
	};
	struct tok_request r = {.aud = "tf-prod/eu \xc3\xa9",
				.session_id = "req-\"x\"",
				.reviewer_name = "Bj\xc3\xb6rk",
				.policy_rule = "line \"7\"",
				.subjects = odd,
				.nsubjects = 2,
				.assurance = "same-user",
				.ttl = 1,
				.now = NOW};
	memset(r.action_sha256, 'c', 64);
	json_t *want;
	char *tok = issue(t, &r, (1ull << 62) + 12345, &want);
	assert_oracle_agrees(t, tok, &r, want);
	json_decref(want);
	free(tok);
}

/* Many tokens from one key: each signature (random k) verifies under libjwt too. */
static void test_es256_many(void **state)
{
	struct t *t = *state;
	struct tok_request r = reviewer_request();
	for (uint64_t i = 0; i < 64; i++) {
		json_t *want;
		r.nsubjects = (size_t)(i % 3);
		r.now = NOW + i;
		char *tok = issue(t, &r, i * 977, &want);
		assert_oracle_agrees(t, tok, &r, want);
		json_decref(want);
		free(tok);
	}
}

static void test_hs256(void **state)
{
	struct t *t = *state;
	struct tok_request r = reviewer_request();
	r.assurance = "self-attested";
	json_t *want;
	char *tok = issue(t, &r, 7, &want);
	assert_oracle_agrees(t, tok, &r, want);
	json_decref(want);
	free(tok);
}

/* ---- the oracle can say no ---- */

/* A token whose payload says approved: false under the original signature. */
static void test_oracle_refuses_altered_payload(void **state)
{
	struct t *t = *state;
	struct tok_request r = reviewer_request();
	json_t *want;
	char *tok = issue(t, &r, 3, &want);
	char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');
	json_object_set_new(want, "approved", json_false());
	char *cj = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
	struct buf alt;
	buf_init(&alt, 1 << 20);
	assert_int_equal(buf_put(&alt, tok, (size_t)(d1 + 1 - tok)), 0);
	assert_int_equal(b64url_encode((const uint8_t *)cj, strlen(cj), &alt), 0);
	assert_int_equal(buf_put(&alt, d2, strlen(d2) + 1), 0);
	const char *why = "";
	assert_int_equal(jwt_oracle_check((const char *)alt.p, t->pub.p, t->pub.len, JWT_ALG_ES256, want, &why), 0);
	assert_string_equal(why, "jwt_decode refuses it");
	buf_free(&alt);
	free(cj);
	json_decref(want);
	free(tok);
}

/* libjwt verifies an HS256 token keyed with the ES256 public PEM when handed that
 * PEM (NOTES.md): only the pin refuses it. Our verifier refuses it by kid and alg. */
static void test_oracle_pins_the_algorithm(void **state)
{
	struct t *t = *state;
	struct tok_request r = reviewer_request();
	json_t *want;
	char *tok = issue(t, &r, 5, &want);
	char *cj = json_dumps(want, JSON_COMPACT);
	jwt_t *j = NULL;
	assert_int_equal(jwt_new(&j), 0);
	assert_int_equal(jwt_add_grants_json(j, cj), 0);
	assert_int_equal(jwt_add_header(j, "kid", tokkeys_kid(t->k)), 0);
	assert_int_equal(jwt_set_alg(j, JWT_ALG_HS256, t->pub.p, (int)t->pub.len), 0);
	char *forged = jwt_encode_str(j);
	jwt_free(j);
	assert_non_null(forged);

	jwt_t *d = NULL; /* the pitfall, as libjwt has it */
	assert_int_equal(jwt_decode(&d, forged, t->pub.p, (int)t->pub.len), 0);
	assert_int_equal(jwt_get_alg(d), JWT_ALG_HS256);
	jwt_free(d);
	const char *why = "";
	assert_int_equal(jwt_oracle_check(forged, t->pub.p, t->pub.len, JWT_ALG_ES256, want, &why), 0);
	assert_string_equal(why, "libjwt verified it under another algorithm than its key allows");

	const char *keys[] = {t->pubpath};
	struct av_token_opts o = {.aud = r.aud, .key_paths = keys, .nkeys = 1, .leeway = 60, .now = (long long)r.now};
	struct av_token_result res;
	assert_int_equal(av_verify_token(forged, strlen(forged), &o, &res), AS_EBADSIG);
	assert_non_null(strstr(res.reason, "algorithm HS256 refused"));
	free(forged);
	free(cj);
	json_decref(want);
	free(tok);
}

/* A genuine token compared with claims it does not make. */
static void test_oracle_sees_other_claims(void **state)
{
	struct t *t = *state;
	struct tok_request r = reviewer_request();
	json_t *want;
	char *tok = issue(t, &r, 9, &want);
	const char *why = "";
	assert_int_equal(jwt_oracle_check(tok, t->pub.p, t->pub.len, JWT_ALG_ES256, want, &why), 1);
	json_object_set_new(json_object_get(want, "ledger"), "seq", json_integer(10));
	assert_int_equal(jwt_oracle_check(tok, t->pub.p, t->pub.len, JWT_ALG_ES256, want, &why), 0);
	assert_string_equal(why, "libjwt decodes other claims");
	json_decref(want);
	free(tok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_es256_reviewer_decision, setup_es256, teardown),
	    cmocka_unit_test_setup_teardown(test_es256_policy_decision, setup_es256, teardown),
	    cmocka_unit_test_setup_teardown(test_es256_text_and_large_numbers, setup_es256, teardown),
	    cmocka_unit_test_setup_teardown(test_es256_many, setup_es256, teardown),
	    cmocka_unit_test_setup_teardown(test_hs256, setup_hs256, teardown),
	    cmocka_unit_test_setup_teardown(test_oracle_refuses_altered_payload, setup_es256, teardown),
	    cmocka_unit_test_setup_teardown(test_oracle_pins_the_algorithm, setup_es256, teardown),
	    cmocka_unit_test_setup_teardown(test_oracle_sees_other_claims, setup_es256, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
