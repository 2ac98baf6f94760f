/* Unit tests for approval tokens end to end: issued through the signer's calls
 * (gateway/state/token.h: tokkeys_open, tok_prepare, tok_issue, tokkeys_rotate) and
 * read back through the verifier (av_verify_token, include/assent/verify.h) with every
 * claim as issued; altered or crafted tokens are refused for the reason that applies. */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <mbedtls/md.h>

#include "include/assent/verify.h"
#include "gateway/state/token.h"
#include "common/cbor.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "common/util.h"
#include "tests/unit/scratch.h"

#define AUD "deploy/prod"
#define ISS "assent-test"
#define NOW 1700000000ULL
#define TTL 600u
#define SEQ 41u

static const char secret32[] = "0123456789abcdef0123456789abcdef!"; /* 33 bytes */

struct t {
	char dir[64];	/* a scratch state directory */
	char keys[96];	/* DIR/keys */
	char pub[200];	/* DIR/keys/token-KID.pub */
	char jwks[128]; /* DIR/keys/jwks.json */
	struct tokkeys *tk;
	struct tok_subject subj[2];
	struct tok_request rq;
	struct tok_ticket tt;
	uint8_t leaf[32];
	char *jwt;
	const char *keyv[1]; /* {pub}: what a gate pins */
};

/* The token a reviewer's approval of a policy-routed request gets. */
static void request_init(struct t *t)
{
	t->subj[0] = (struct tok_subject){.name = "plan.tfplan", .computed = 1};
	t->subj[1] = (struct tok_subject){.name = "notes.txt", .computed = 0};
	uint8_t h[32];
	sha256("plan", 4, h);
	hex_encode(h, 32, t->subj[0].sha256);
	sha256("notes", 5, h);
	hex_encode(h, 32, t->subj[1].sha256);
	t->rq =
	    (struct tok_request){.aud = AUD,
				 .session_id = "fb_00112233445566778899aabbccddeeff",
				 .reviewer_name = "alice",
				 .reviewer_channel = "web",
				 .policy_rule = "line 12",
				 .policy_digest = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
				 .subjects = t->subj,
				 .nsubjects = 2,
				 .assurance = "reviewer",
				 .ttl = TTL,
				 .now = NOW};
	sha256("action", 6, h);
	hex_encode(h, 32, t->rq.action_sha256);
	for (int i = 0; i < 32; i++)
		t->leaf[i] = (uint8_t)(0xa0 + i);
}

static struct t *open_keys(enum tok_mode mode)
{
	struct t *t = calloc(1, sizeof *t);
	assert_non_null(t);
	snprintf(t->dir, sizeof t->dir, "/tmp/assent-token-test.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->keys, sizeof t->keys, "%s/keys", t->dir);
	snprintf(t->jwks, sizeof t->jwks, "%s/jwks.json", t->keys);
	struct tok_config c = {.mode = mode, .secret = (uint8_t *)secret32, .secret_len = 33};
	snprintf(c.iss, sizeof c.iss, "%s", ISS);
	char err[AS_ERRLEN] = "";
	if (tokkeys_open(t->keys, &c, NULL, &t->tk, err) != 0)
		fail_msg("tokkeys_open: %s", err);
	if (mode == TOK_ES256)
		snprintf(t->pub, sizeof t->pub, "%s/token-%s.pub", t->keys, tokkeys_kid(t->tk));
	t->keyv[0] = t->pub;
	request_init(t);
	return t;
}

static void issue(struct t *t)
{
	char err[AS_ERRLEN] = "";
	free(t->jwt);
	t->jwt = NULL;
	if (tok_prepare(t->tk, &t->rq, &t->tt, err) != 0 ||
	    tok_issue(t->tk, &t->rq, &t->tt, SEQ, t->leaf, &t->jwt, err) != 0)
		fail_msg("issue: %s", err);
}

/* Keys of that mode and a token issued with them. */
static struct t *issued(enum tok_mode mode)
{
	struct t *t = open_keys(mode);
	issue(t);
	return t;
}

static void close_keys(struct t *t)
{
	free(t->jwt);
	tokkeys_free(t->tk);
	scratch_rm(t->dir);
	free(t);
}

/* Options that accept t's token: its key (ES256) or secret (HS256), at issue time + 10 s. */
static struct av_token_opts opts_for(const struct t *t)
{
	struct av_token_opts o = {.aud = AUD, .iss = ISS, .leeway = -1, .now = (long long)NOW + 10};
	if (t->pub[0]) {
		o.key_paths = t->keyv;
		o.nkeys = 1;
	} else {
		o.secret = (const uint8_t *)secret32;
		o.secret_len = 33;
	}
	return o;
}

static int verify(const char *tok, const struct av_token_opts *o, struct av_token_result *r)
{
	int rc = av_verify_token(tok, strlen(tok), o, r);
	if (rc != 0)
		free(r->claims_json), r->claims_json = NULL;
	return rc;
}

static void refused(const char *tok, const struct av_token_opts *o, const char *why)
{
	struct av_token_result r;
	int rc = verify(tok, o, &r);
	if (rc != AS_EBADSIG || !strstr(r.reason, why))
		fail_msg("want refusal '%s', got %d '%s'", why, rc, r.reason);
}

/* The claims the verifier hands back are exactly those of the request issued. */
static void claims_are(const struct t *t, const char *claims_json)
{
	char lh[65], action[72];
	hex_encode(t->leaf, 32, lh);
	snprintf(action, sizeof action, "sha256:%s", t->rq.action_sha256);
	json_t *subj = json_array();
	for (size_t i = 0; i < t->rq.nsubjects; i++)
		json_array_append_new(subj, json_pack("{s:s,s:{s:s},s:s}", "name", t->subj[i].name, "digest", "sha256",
						      t->subj[i].sha256, "digest_source",
						      t->subj[i].computed ? "computed" : "asserted"));
	json_t *want = json_pack(
	    "{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:b,s:s,s:o,s:s,s:o,s:s,s:o,s:{s:I,s:s},s:s}", "token_type",
	    "assent/approval/v1", "iss", ISS, "aud", AUD, "sub", t->rq.session_id, "jti", t->tt.jti, "iat",
	    (json_int_t)NOW, "nbf", (json_int_t)NOW, "exp",
	    (json_int_t)(NOW + (t->rq.ttl ? t->rq.ttl : TOK_TTL_DEFAULT)), "approved", 1, "session_id",
	    t->rq.session_id, "reviewer",
	    t->rq.reviewer_name ? json_pack("{s:s,s:s}", "name", t->rq.reviewer_name, "channel", t->rq.reviewer_channel)
				: json_null(),
	    "decision", "approved", "policy",
	    t->rq.policy_rule ? json_pack("{s:s,s:s}", "rule", t->rq.policy_rule, "digest", t->rq.policy_digest)
			      : json_null(),
	    "action", action, "subject", subj, "ledger", "seq", (json_int_t)SEQ, "leaf_hash", lh, "assurance",
	    t->rq.assurance);
	assert_non_null(want);
	json_t *got = json_loads(claims_json, 0, NULL);
	assert_non_null(got);
	if (!json_equal(got, want)) {
		char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
		print_error("want %s\n got %s\n", w, claims_json);
		free(w);
		fail();
	}
	json_decref(got);
	json_decref(want);
}

static void accepted(const struct t *t, const struct av_token_opts *o)
{
	struct av_token_result r;
	int rc = verify(t->jwt, o, &r);
	if (rc != 0)
		fail_msg("refused: %d %s", rc, r.reason);
	claims_are(t, r.claims_json);
	free(r.claims_json);
}

static void test_es256_round_trip(void **state)
{
	(void)state;
	struct t *t = issued(TOK_ES256);
	assert_int_equal(strlen(t->tt.jti), 32);
	assert_string_equal(t->tt.kid, tokkeys_kid(t->tk));
	struct av_token_opts o = opts_for(t);
	accepted(t, &o);
	/* the same token through the JWKS the signer publishes */
	struct av_token_opts oj = {.aud = AUD, .iss = ISS, .leeway = -1, .now = (long long)NOW, .jwks_path = t->jwks};
	accepted(t, &oj);
	/* what a gate pins: both subjects, the action, computed subjects */
	const char *digests[] = {t->subj[0].sha256, t->subj[1].sha256};
	char act[80];
	snprintf(act, sizeof act, "sha256:%s", t->rq.action_sha256);
	o.subject_sha256 = digests;
	o.nsubject_sha256 = 2;
	o.action_sha256 = act;
	accepted(t, &o);
	o.action_sha256 = t->rq.action_sha256; /* with or without the prefix */
	o.nsubject_sha256 = 1;
	o.require_computed = 1; /* subject 0 was hashed by the gateway */
	accepted(t, &o);
	/* two tokens of one request are two tokens */
	char first[33];
	snprintf(first, sizeof first, "%s", t->tt.jti);
	issue(t);
	assert_string_not_equal(first, t->tt.jti);
	close_keys(t);
}

static void test_hs256_round_trip(void **state)
{
	(void)state;
	struct t *t = open_keys(TOK_HS256);
	/* a policy's own approval: no reviewer, default lifetime */
	t->rq.reviewer_name = t->rq.reviewer_channel = NULL;
	t->rq.assurance = "policy";
	t->rq.ttl = 0;
	issue(t);
	assert_int_equal(t->tt.exp - t->tt.iat, TOK_TTL_DEFAULT);
	struct av_token_opts o = opts_for(t);
	accepted(t, &o);
	/* another secret does not verify it; an ES256 key of another kid does not know it */
	static const char other[] = "ffffffffffffffffffffffffffffffff!";
	o.secret = (const uint8_t *)other;
	refused(t->jwt, &o, "unknown kid");
	close_keys(t);
}

/* ---- altering an issued ES256 token ---- */

static char *b64(const char *s)
{
	struct buf b;
	buf_init(&b, 1 << 16);
	assert_int_equal(b64url_encode((const uint8_t *)s, strlen(s), &b), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	return (char *)b.p;
}

/* header.payload.signature, from parts (NULL: the token's own). */
static char *splice(const char *tok, const char *hdr, const char *pl, const char *sig)
{
	const char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');
	char *out = NULL;
	assert_true(asprintf(&out, "%.*s.%.*s.%s", hdr ? (int)strlen(hdr) : (int)(d1 - tok), hdr ? hdr : tok,
			     pl ? (int)strlen(pl) : (int)(d2 - d1 - 1), pl ? pl : d1 + 1, sig ? sig : d2 + 1) > 0);
	return out;
}

static char *decoded_part(const char *tok, int part)
{
	const char *p = tok;
	for (int i = 0; i < part; i++)
		p = strchr(p, '.') + 1;
	const char *end = strchr(p, '.');
	size_t n = end ? (size_t)(end - p) : strlen(p), len = 0;
	char *out = calloc(1, n + 1);
	assert_int_equal(b64url_decode(p, n, (uint8_t *)out, n, &len), 0);
	return out;
}

/* header.payload signed with HMAC-SHA-256 under key, as anyone holding key could. */
static char *hs_sign(const char *hdr, const char *payload, const uint8_t *key, size_t keylen)
{
	char *h = b64(hdr), *p = b64(payload), *input = NULL, *out = NULL;
	assert_true(asprintf(&input, "%s.%s", h, p) > 0);
	uint8_t mac[32];
	assert_int_equal(mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), key, keylen,
					 (const uint8_t *)input, strlen(input), mac),
			 0);
	struct buf sig;
	buf_init(&sig, 100);
	assert_int_equal(b64url_encode(mac, 32, &sig), 0);
	assert_int_equal(buf_putc(&sig, 0), 0);
	assert_true(asprintf(&out, "%s.%s", input, (const char *)sig.p) > 0);
	buf_free(&sig);
	free(h), free(p), free(input);
	return out;
}

/* (r, n - s): a valid signature of the same input, in the form assent never issues. */
static char *high_s(const char *tok)
{
	static const uint8_t order[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
					  0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};
	const char *sig = strrchr(tok, '.') + 1;
	uint8_t rs[64];
	size_t n = 0;
	assert_int_equal(b64url_decode(sig, strlen(sig), rs, sizeof rs, &n), 0);
	assert_int_equal(n, 64);
	int borrow = 0;
	for (int i = 31; i >= 0; i--) {
		int d = order[i] - rs[32 + i] - borrow;
		borrow = d < 0;
		rs[32 + i] = (uint8_t)(d + (borrow ? 256 : 0));
	}
	struct buf b;
	buf_init(&b, 200);
	assert_int_equal(b64url_encode(rs, 64, &b), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	char *out = splice(tok, NULL, NULL, (const char *)b.p);
	buf_free(&b);
	return out;
}

static void test_es256_altered(void **state)
{
	(void)state;
	struct t *t = issued(TOK_ES256);
	struct av_token_opts o = opts_for(t);
	char *hdr = decoded_part(t->jwt, 0), *pl = decoded_part(t->jwt, 1), *x;
	char kidhdr[200], *h;

	/* the payload: one claim changed, the signature kept */
	char *pl2 = strdup(pl), *at = strstr(pl2, "\"aud\":\"deploy/prod\"");
	assert_non_null(at);
	at[13] = 'q'; /* "deploy/qrod" */
	h = b64(pl2);
	x = splice(t->jwt, NULL, h, NULL);
	refused(x, &o, "signature does not verify");
	o.aud = "deploy/qrod";
	refused(x, &o, "signature does not verify");
	o.aud = AUD;
	free(x), free(h), free(pl2);

	/* the signature */
	x = strdup(t->jwt);
	char *last = strrchr(x, '.') + 5;
	*last = *last == 'A' ? 'B' : 'A';
	refused(x, &o, "signature does not verify");
	free(x);
	x = high_s(t->jwt);
	refused(x, &o, "high s");
	free(x);
	x = splice(t->jwt, NULL, NULL, "AAAA");
	refused(x, &o, "ES256 signatures are 64 bytes, not 3");
	free(x);

	/* the header: another algorithm, none, another kid, no kid, crit, not an object */
	static const char *const alter[][3] = {
	    /* before the kid, after it, why */
	    {"{\"alg\":\"HS256\",\"kid\":\"", "\",\"typ\":\"JWT\"}", "algorithm HS256 refused: key"},
	    {"{\"alg\":\"none\",\"kid\":\"", "\",\"typ\":\"JWT\"}", "algorithm none refused"},
	    {"{\"alg\":\"ES384\",\"kid\":\"", "\"}", "algorithm ES384 refused"},
	    {"{\"alg\":\"ES256\",\"kid\":\"x", "\"}", "unknown kid"},
	    {"{\"alg\":\"ES256\",\"kid\":\"", "\",\"crit\":[\"exp\"]}", "critical extensions"},
	    {"{\"alg\":\"ES256\",\"kid\":\"", "\",\"alg\":\"ES256\"}", "not a JSON object"},
	    {"{\"alg\":\"ES256\",\"kidd\":\"", "\"}", "has no kid"},
	    {"{\"kid\":\"", "\"}", "has no alg"},
	    {"[\"ES256\",\"", "\"]", "not a JSON object"},
	};
	for (size_t i = 0; i < sizeof alter / sizeof alter[0]; i++) {
		snprintf(kidhdr, sizeof kidhdr, "%s%s%s", alter[i][0], t->tt.kid, alter[i][1]);
		h = b64(kidhdr);
		x = splice(t->jwt, h, NULL, NULL);
		refused(x, &o, alter[i][2]);
		free(x), free(h);
	}
	/* algorithm confusion: HS256 keyed with the ES256 public key's PEM (NOTES.md) */
	struct buf pem;
	char err[AS_ERRLEN];
	assert_int_equal(file_read(t->pub, 4096, &pem, err), 0);
	snprintf(kidhdr, sizeof kidhdr, "{\"alg\":\"HS256\",\"kid\":\"%s\",\"typ\":\"JWT\"}", t->tt.kid);
	x = hs_sign(kidhdr, pl, pem.p, pem.len);
	refused(x, &o, "algorithm HS256 refused");
	free(x);
	buf_free(&pem);

	/* the form */
	x = strdup(t->jwt);
	*strrchr(x, '.') = 0;
	refused(x, &o, "expected three dot-separated parts");
	free(x);
	x = splice(t->jwt, NULL, NULL, "");
	refused(x, &o, "token has no signature");
	free(x);
	assert_true(asprintf(&x, "%s=", t->jwt) > 0);
	refused(x, &o, "character 0x3d at");
	free(x);
	assert_true(asprintf(&x, "%s.x", t->jwt) > 0);
	refused(x, &o, "expected three dot-separated parts");
	free(x);
	struct av_token_result r;
	assert_int_equal(av_verify_token(t->jwt, 0, &o, &r), AS_EBADSIG);
	assert_non_null(strstr(r.reason, "empty token"));
	char *big = calloc(1, AV_TOKEN_MAX + 2);
	memset(big, 'A', AV_TOKEN_MAX + 1);
	refused(big, &o, "larger than the maximum");
	free(big);
	free(hdr), free(pl);
	close_keys(t);
}

/* What the caller pins: audience, issuer, times, subjects, action. */
static void test_claims_checked(void **state)
{
	(void)state;
	struct t *t = issued(TOK_ES256);
	struct av_token_opts o = opts_for(t);
	o.aud = "deploy/staging";
	refused(t->jwt, &o, "wrong audience: the token is not for 'deploy/staging'");
	o = opts_for(t);
	o.iss = "someone-else";
	refused(t->jwt, &o, "wrong issuer: token has 'assent-test'");
	o = opts_for(t);
	o.now = (long long)(NOW + TTL + 60); /* the default leeway is 60 s */
	accepted(t, &o);
	o.now++;
	refused(t->jwt, &o, "token expired 61 s ago");
	o.leeway = 0;
	o.now = (long long)(NOW + TTL + 1);
	refused(t->jwt, &o, "token expired 1 s ago");
	o.now = (long long)NOW - 1;
	refused(t->jwt, &o, "token not valid yet (nbf is 1 s ahead)");
	o = opts_for(t);
	o.now = (long long)NOW - 60;
	accepted(t, &o);
	o = opts_for(t);
	uint8_t hb[32];
	char other[65];
	sha256("another plan", 12, hb);
	hex_encode(hb, 32, other);
	const char *digests[] = {other};
	o.subject_sha256 = digests;
	o.nsubject_sha256 = 1;
	refused(t->jwt, &o, "is not what was approved");
	digests[0] = t->subj[1].sha256; /* asserted by the agent */
	accepted(t, &o);
	o.require_computed = 1;
	refused(t->jwt, &o, "was asserted by the agent, not computed by the gateway");
	o.nsubject_sha256 = 0; /* all subjects: one is asserted */
	refused(t->jwt, &o, "a subject's digest was asserted by the agent");
	o = opts_for(t);
	o.action_sha256 = other;
	refused(t->jwt, &o, "action digest differs");
	/* usage errors are not verdicts */
	struct av_token_result r;
	o = opts_for(t);
	o.aud = NULL;
	assert_int_equal(verify(t->jwt, &o, &r), AS_EINVAL);
	o = opts_for(t);
	const char *badhex[] = {"ABCDEF"};
	o.subject_sha256 = badhex;
	o.nsubject_sha256 = 1;
	assert_int_equal(verify(t->jwt, &o, &r), AS_EINVAL);
	o = opts_for(t);
	o.nkeys = 0;
	assert_int_equal(verify(t->jwt, &o, &r), AS_EINVAL);
	assert_non_null(strstr(r.reason, "no key to verify with"));
	close_keys(t);
}

/* Claims the signer never writes, signed properly with the HS256 secret: the verifier
 * checks what the token says, not only that it is signed. */
static char *hs_token(const struct t *t, const char *payload)
{
	char hdr[128];
	snprintf(hdr, sizeof hdr, "{\"alg\":\"HS256\",\"kid\":\"%s\",\"typ\":\"JWT\"}", t->tt.kid);
	return hs_sign(hdr, payload, (const uint8_t *)secret32, 33);
}

static void test_hs256_crafted(void **state)
{
	(void)state;
	struct t *t = issued(TOK_HS256);
	struct av_token_opts o = opts_for(t);
	/* the issued claims re-signed as they are: accepted (the crafting itself is sound) */
	char *pl = decoded_part(t->jwt, 1);
	char *x = hs_token(t, pl);
	accepted(t, &o);
	assert_string_equal(x, t->jwt);
	free(x);
	json_t *base = json_loads(pl, 0, NULL);
	assert_non_null(base);
	static const struct {
		const char *key, *value; /* value: JSON; NULL: the claim removed */
		const char *why;
	} c[] = {
	    {"token_type", NULL, "not an assent approval token"},
	    {"token_type", "\"assent/approval/v2\"", "not an assent approval token"},
	    {"approved", "false", "does not say approved: true"},
	    {"approved", "\"true\"", "does not say approved: true"},
	    /* approved: true beside another outcome, or without one, approves nothing */
	    {"decision", "\"rejected\"", "decision is 'rejected', not approved"},
	    {"decision", NULL, "decision is '(none)', not approved"},
	    {"decision", "true", "decision is '(none)', not approved"},
	    {"assurance", NULL, "no assurance claim"},
	    {"assurance", "\"admin\"", "assurance 'admin' is not reviewer"},
	    {"exp", "253402300800", "outside 0 to"},
	    {"iat", "-1", "outside 0 to"},
	    {"nbf", NULL, "lacks exp, nbf or iat"},
	    {"exp", "1.7e9", "lacks exp, nbf or iat"},
	    {"iat", "1700000100", "issued in the future"},
	    {"aud", "[\"a\",\"b\"]", "wrong audience"},
	    {"aud", "[\"a\",\"deploy/prod\"]", NULL}, /* an audience list that names ours */
	    {"iss", NULL, "wrong issuer: token has '(none)'"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *m = json_deep_copy(base);
		if (c[i].value)
			json_object_set_new(m, c[i].key, json_loads(c[i].value, JSON_DECODE_ANY, NULL));
		else
			json_object_del(m, c[i].key);
		char *js = json_dumps(m, JSON_COMPACT);
		x = hs_token(t, js);
		struct av_token_result r;
		int rc = verify(x, &o, &r);
		if (c[i].why ? rc != AS_EBADSIG || !strstr(r.reason, c[i].why) : rc != 0)
			fail_msg("%s=%s: want '%s', got %d '%s'", c[i].key, c[i].value ? c[i].value : "(none)",
				 c[i].why ? c[i].why : "accepted", rc, r.reason);
		free(r.claims_json);
		free(x), free(js);
		json_decref(m);
	}
	json_decref(base);
	/* a payload that is no object, or names a claim twice */
	x = hs_token(t, "[1,2]");
	refused(x, &o, "not a JSON object without duplicate keys");
	free(x);
	assert_non_null(strstr(pl, "\"approved\":true"));
	char *dup = NULL;
	assert_true(asprintf(&dup, "{\"approved\":false,%s", pl + 1) > 0);
	x = hs_token(t, dup);
	refused(x, &o, "not a JSON object without duplicate keys");
	free(x), free(dup);
	/* an HS256 signature of another length */
	x = splice(t->jwt, NULL, NULL, "AAAA");
	refused(x, &o, "HS256 signatures are 32 bytes, not 3");
	free(x);
	free(pl);
	close_keys(t);
}

/* ---- the decision entry a token names (av_token_opts.ledger_dir) ---- */

static void put_entry(struct ledger *l, const char *const (*kv)[2], size_t n, struct ledger_pos *pos)
{
	struct cv_arena a;
	cv_arena_init(&a, 256);
	struct cv *m = cv_map(&a, n);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(cv_set_text(&a, &m->items[2 * k], kv[k][0], strlen(kv[k][0])), 0);
		assert_int_equal(cv_set_text(&a, &m->items[2 * k + 1], kv[k][1], strlen(kv[k][1])), 0);
	}
	struct buf b;
	char err[AS_ERRLEN] = "";
	buf_init(&b, 4096);
	assert_int_equal(cbor_encode(m, &b, err), 0);
	struct ledger_rec r = {b.p, b.len};
	if (ledger_append(l, &r, 1, pos, err) != 0)
		fail_msg("append: %s", err);
	buf_free(&b);
	cv_arena_free(&a);
}

/* DIR/ledger after its key entry: a request, its approval recording the token's jti
 * (pos[1]), and another request's rejection (pos[2]). */
static void decision_ledger(const struct t *t, struct ledger_pos pos[3])
{
	char dir[128], err[AS_ERRLEN] = "";
	snprintf(dir, sizeof dir, "%s/ledger", t->dir);
	struct ledger_opts lo = {.map_size = (size_t)16 << 20};
	struct ledger *l;
	if (ledger_open(dir, &lo, &l, err) != 0)
		fail_msg("ledger_open: %s", err);
	const char *sid = t->rq.session_id;
	const char *const req[][2] = {
	    {"kind", "request"}, {"session_id", sid}, {"type", "approval"}, {"message", "deploy?"}};
	put_entry(l, req, 4, &pos[0]);
	/* the approval, with its token as the signer records it ({jti, kid, exp}) */
	struct cv_arena a;
	cv_arena_init(&a, 256);
	struct cv *m = cv_map(&a, 4), *tk = cv_map(&a, 3);
	const char *const dec[][2] = {{"kind", "decision"}, {"session_id", sid}, {"outcome", "approved"}};
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(cv_set_text(&a, &m->items[2 * k], dec[k][0], strlen(dec[k][0])), 0);
		assert_int_equal(cv_set_text(&a, &m->items[2 * k + 1], dec[k][1], strlen(dec[k][1])), 0);
	}
	assert_int_equal(cv_set_text(&a, &tk->items[0], "jti", 3), 0);
	assert_int_equal(cv_set_text(&a, &tk->items[1], t->tt.jti, strlen(t->tt.jti)), 0);
	assert_int_equal(cv_set_text(&a, &tk->items[2], "kid", 3), 0);
	assert_int_equal(cv_set_text(&a, &tk->items[3], t->tt.kid, strlen(t->tt.kid)), 0);
	assert_int_equal(cv_set_text(&a, &tk->items[4], "exp", 3), 0);
	cv_set_uint(&tk->items[5], t->tt.exp);
	assert_int_equal(cv_set_text(&a, &m->items[6], "token", 5), 0);
	m->items[7] = *tk;
	struct buf b;
	buf_init(&b, 4096);
	assert_int_equal(cbor_encode(m, &b, err), 0);
	struct ledger_rec r = {b.p, b.len};
	if (ledger_append(l, &r, 1, &pos[1], err) != 0)
		fail_msg("append: %s", err);
	buf_free(&b);
	cv_arena_free(&a);
	const char *const rej[][2] = {{"kind", "decision"}, {"session_id", "fb_other"}, {"outcome", "rejected"}};
	put_entry(l, rej, 3, &pos[2]);
	ledger_close(l);
}

/* The token's claims with ledger, jti and session_id replaced, signed with the secret. */
static char *ledger_token(const struct t *t, json_t *base, json_t *ledger, const char *jti, const char *sid)
{
	json_t *m = json_deep_copy(base);
	json_object_set_new(m, "ledger", ledger);
	json_object_set_new(m, "jti", json_string(jti ? jti : t->tt.jti));
	json_object_set_new(m, "session_id", json_string(sid ? sid : t->rq.session_id));
	char *js = json_dumps(m, JSON_COMPACT);
	char *x = hs_token(t, js);
	free(js);
	json_decref(m);
	return x;
}

static json_t *ledger_claim(const struct ledger_pos *p)
{
	char lh[65];
	hex_encode(p->leaf, 32, lh);
	return json_pack("{s:I,s:s}", "seq", (json_int_t)p->seq, "leaf_hash", lh);
}

static void test_ledger_entry(void **state)
{
	(void)state;
	struct t *t = issued(TOK_HS256);
	struct ledger_pos pos[3];
	decision_ledger(t, pos);
	char dir[128];
	snprintf(dir, sizeof dir, "%s/ledger", t->dir);
	struct av_token_opts o = opts_for(t);
	o.ledger_dir = dir;
	char *pl = decoded_part(t->jwt, 1);
	json_t *base = json_loads(pl, 0, NULL);
	assert_non_null(base);
	/* the token as tok_issue signs it for the approval at pos[1] */
	free(t->jwt);
	t->jwt = NULL;
	char err[AS_ERRLEN] = "";
	if (tok_issue(t->tk, &t->rq, &t->tt, pos[1].seq, pos[1].leaf, &t->jwt, err) != 0)
		fail_msg("issue: %s", err);
	struct av_token_result r;
	if (verify(t->jwt, &o, &r) != 0)
		fail_msg("refused with --ledger: %s", r.reason);
	free(r.claims_json);
	char *x;
	struct ledger_pos wrong_leaf = pos[1];
	wrong_leaf.leaf[31] ^= 1;
	struct ledger_pos past = {.seq = 99};
	memcpy(past.leaf, pos[1].leaf, 32);
	const struct {
		const struct ledger_pos *at;
		const char *jti, *sid, *why;
	} c[] = {
	    {&wrong_leaf, NULL, NULL, "leaf hash differs from the token's"},
	    {&pos[0], NULL, NULL, "is not a decision"},
	    {&pos[2], NULL, NULL, "does not approve"},
	    {&pos[1], NULL, "fb_someone_else", "decides another session"},
	    {&pos[1], "00000000000000000000000000000000", NULL, "records another token (jti)"},
	    {&past, NULL, NULL, "no entry 99 (the ledger has 4)"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		x = ledger_token(t, base, ledger_claim(c[i].at), c[i].jti, c[i].sid);
		refused(x, &o, c[i].why);
		free(x);
	}
	x = ledger_token(t, base, json_pack("{s:i,s:s}", "seq", -1, "leaf_hash", "00"), NULL, NULL);
	refused(x, &o, "ledger claim is malformed");
	free(x);
	x = ledger_token(t, base, json_string("3"), NULL, NULL);
	refused(x, &o, "ledger claim is malformed");
	free(x);
	/* no ledger there: an error, not a verdict */
	char absent[160];
	snprintf(absent, sizeof absent, "%s/absent", t->dir);
	o.ledger_dir = absent;
	int rc = verify(t->jwt, &o, &r);
	assert_int_not_equal(rc, 0);
	assert_int_not_equal(rc, AS_EBADSIG);
	json_decref(base);
	free(pl);
	close_keys(t);
}

/* Issuance refuses what it cannot sign truthfully. */
static void test_issue_refusals(void **state)
{
	(void)state;
	struct t *t = open_keys(TOK_ES256);
	char err[AS_ERRLEN], *jwt = NULL;
	t->rq.ttl = TOK_TTL_MAX + 1;
	assert_int_equal(tok_prepare(t->tk, &t->rq, &t->tt, err), AS_EINVAL);
	t->rq.ttl = TOK_TTL_MAX;
	assert_int_equal(tok_prepare(t->tk, &t->rq, &t->tt, err), 0);
	assert_int_equal(t->tt.exp - t->tt.iat, TOK_TTL_MAX);
	struct tok_ticket other = t->tt;
	other.kid[0] ^= 1; /* the entry named another key */
	assert_int_equal(tok_issue(t->tk, &t->rq, &other, SEQ, t->leaf, &jwt, err), AS_EINVAL);
	t->rq.aud = "";
	assert_int_equal(tok_issue(t->tk, &t->rq, &t->tt, SEQ, t->leaf, &jwt, err), AS_EINVAL);
	t->rq.aud = AUD;
	t->rq.assurance = NULL;
	assert_int_equal(tok_issue(t->tk, &t->rq, &t->tt, SEQ, t->leaf, &jwt, err), AS_EINVAL);
	assert_null(jwt);
	close_keys(t);
	/* no tokens at all */
	struct tokkeys *k;
	struct tok_config off = {.mode = TOK_OFF};
	struct tok_request rq = {.aud = AUD};
	struct tok_ticket tt;
	assert_int_equal(tokkeys_open("/nonexistent/keys", &off, NULL, &k, err), 0);
	assert_null(tokkeys_kid(k));
	assert_int_equal(tok_prepare(k, &rq, &tt, err), AS_EINVAL);
	tokkeys_free(k);
}

/* After a rotation, tokens of the old key still verify through the JWKS until they
 * expire, and the new key's do too; a JWKS key not for signatures is refused. */
static void test_rotation_and_jwks(void **state)
{
	(void)state;
	struct t *t = issued(TOK_ES256);
	char *old = strdup(t->jwt), oldkid[TOK_KID_MAX], newkid[TOK_KID_MAX], err[AS_ERRLEN];
	snprintf(oldkid, sizeof oldkid, "%s", tokkeys_kid(t->tk));
	if (tokkeys_rotate(t->keys, NULL, newkid, err) != 0)
		fail_msg("rotate: %s", err);
	assert_string_not_equal(oldkid, newkid);
	struct tokkeys *k2;
	struct tok_config c = {.mode = TOK_ES256};
	snprintf(c.iss, sizeof c.iss, "%s", ISS);
	assert_int_equal(tokkeys_open(t->keys, &c, NULL, &k2, err), 0);
	assert_string_equal(tokkeys_kid(k2), newkid);
	struct av_token_opts oj = {.aud = AUD, .iss = ISS, .leeway = -1, .now = (long long)NOW, .jwks_path = t->jwks};
	struct av_token_result r;
	if (verify(old, &oj, &r) != 0)
		fail_msg("old key's token after rotation: %s", r.reason);
	free(r.claims_json);
	tokkeys_free(t->tk);
	t->tk = k2;
	issue(t);
	assert_string_equal(t->tt.kid, newkid);
	accepted(t, &oj);
	/* the old key's file pins the old key only */
	struct av_token_opts o = opts_for(t);
	refused(t->jwt, &o, "unknown kid");
	/* a JWKS whose key says it is for encryption */
	json_t *j = json_load_file(t->jwks, 0, NULL);
	assert_non_null(j);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "keys"), i, e)
	{
		json_object_set_new(e, "use", json_string("enc"));
	}
	char bad[160];
	snprintf(bad, sizeof bad, "%s/enc-jwks.json", t->dir);
	assert_int_equal(json_dump_file(j, bad, 0), 0);
	json_decref(j);
	oj.jwks_path = bad;
	refused(t->jwt, &oj, "may not verify signatures");
	free(old);
	close_keys(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_es256_round_trip),  cmocka_unit_test(test_hs256_round_trip),
	    cmocka_unit_test(test_es256_altered),     cmocka_unit_test(test_claims_checked),
	    cmocka_unit_test(test_hs256_crafted),     cmocka_unit_test(test_issue_refusals),
	    cmocka_unit_test(test_rotation_and_jwks), cmocka_unit_test(test_ledger_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
