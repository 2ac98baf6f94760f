/* av_verify_token: what a CI job or a `terraform apply` gate runs.
 * The JWS signature is checked here with mbedTLS, not with OpenSSL (which the signer
 * uses to issue): a CI step runs this once per job, and loading OpenSSL alone costs
 * more than the whole check (make bench). It also closes the
 * libjwt pitfalls of NOTES.md by construction: the key is chosen by kid among keys
 * the caller trusts, each key allows one algorithm, there is no key-less path, and
 * every claim is checked below. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/md.h>
#include <mbedtls/sha256.h>

#include "include/assent/verify.h"
#include "common/cbor.h"
#include "common/eckey.h"
#include "ledger/entry.h"
#include "ledger/merkle.h"
#include "ledger/store.h"
#include "common/util.h"

#define TOK_TYPE "assent/approval/v1"
#define MAX_TKEYS 64

enum talg { ALG_ES256, ALG_HS256 };
static const char *const alg_names[] = {"ES256", "HS256"};

struct tkey {
	char kid[64];
	char refused[160]; /* a JWKS key that may not verify signatures, and why; "" when usable */
	enum talg alg;	   /* the one algorithm this key allows */
	struct eckey *ec;  /* ES256 */
	struct buf secret; /* HS256 */
};

struct tkeys {
	struct tkey k[MAX_TKEYS];
	size_t n;
};

static int bad(struct av_token_result *r, const char *fmt, ...) AS_PRINTF(2, 3);
static int bad(struct av_token_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof r->reason, fmt, ap);
	va_end(ap);
	return AS_EBADSIG;
}

static void tkeys_free(struct tkeys *t)
{
	for (size_t i = 0; i < t->n; i++) {
		eckey_free(t->k[i].ec);
		buf_free_wipe(&t->k[i].secret);
	}
	t->n = 0;
}

static struct tkey *tkeys_add(struct tkeys *t)
{
	if (t->n == MAX_TKEYS)
		return NULL;
	struct tkey *k = &t->k[t->n++];
	memset(k, 0, sizeof *k);
	buf_init(&k->secret, 4096);
	return k;
}

/* Takes ownership of ec. */
static int add_ec(struct tkeys *t, struct eckey *ec, const char *kid, char *err)
{
	struct tkey *k = tkeys_add(t);
	if (!k) {
		eckey_free(ec);
		return as_fail(err, AS_EINVAL, "more than %d token keys", MAX_TKEYS);
	}
	k->alg = ALG_ES256;
	k->ec = ec;
	if (kid)
		snprintf(k->kid, sizeof k->kid, "%s", kid);
	else if (eckey_jwk_kid(ec, k->kid) != 0)
		return as_fail(err, AS_ECRYPTO, "cannot compute a key's kid");
	return 0;
}

/* Why a JWK may not verify an ES256 token, or NULL when it may (RFC 7517 4.2-4.4): a
 * `use` other than "sig", `key_ops` without "verify" or of the wrong shape, an `alg`
 * other than ES256, or `use` and `key_ops` that disagree. */
static const char *jwk_refusal(const json_t *e, char *why, size_t n)
{
	const json_t *use = json_object_get(e, "use"), *ops = json_object_get(e, "key_ops"),
		     *alg = json_object_get(e, "alg");
	if (use && (!json_is_string(use) || strcmp(json_string_value(use), "sig") != 0)) {
		snprintf(why, n, "its use is %.32s, not sig",
			 json_is_string(use) ? json_string_value(use) : "not text");
		return why;
	}
	if (alg && (!json_is_string(alg) || strcmp(json_string_value(alg), "ES256") != 0)) {
		snprintf(why, n, "its alg is %.32s, not ES256",
			 json_is_string(alg) ? json_string_value(alg) : "not text");
		return why;
	}
	if (ops) {
		size_t i;
		const json_t *o;
		int verify = 0, other = 0;
		if (!json_is_array(ops)) {
			snprintf(why, n, "its key_ops is not an array");
			return why;
		}
		json_array_foreach(ops, i, o)
		{
			if (!json_is_string(o)) {
				snprintf(why, n, "its key_ops holds a value that is not text");
				return why;
			}
			if (!strcmp(json_string_value(o), "verify"))
				verify = 1;
			else if (strcmp(json_string_value(o),
					"sign")) /* sign/verify belong together; anything else does not */
				other = 1;
		}
		if (!verify || other) {
			snprintf(why, n, "its key_ops %s",
				 !verify ? "do not include verify" : "include more than sign and verify");
			return why;
		}
	}
	return NULL;
}

static int load_jwks(struct tkeys *t, const char *path, char *err)
{
	struct buf b;
	GUARD(file_read(path, 1 << 20, &b, err));
	json_error_t je;
	json_t *j = json_loadb((const char *)b.p, b.len, JSON_REJECT_DUPLICATES, &je);
	buf_free(&b);
	json_t *keys = json_object_get(j, "keys");
	if (!json_is_array(keys)) {
		json_decref(j);
		return as_fail(err, AS_EINVAL, "%s is not a JWKS (an object with a \"keys\" array)", path);
	}
	size_t i;
	json_t *e;
	int rc = 0;
	json_array_foreach(keys, i, e)
	{
		const char *kty = json_string_value(json_object_get(e, "kty")),
			   *crv = json_string_value(json_object_get(e, "crv")),
			   *kid = json_string_value(json_object_get(e, "kid")),
			   *x = json_string_value(json_object_get(e, "x")),
			   *y = json_string_value(json_object_get(e, "y"));
		/* Only P-256 EC keys; anything else in the set is not ours to use. */
		if (!kty || strcmp(kty, "EC") || !crv || strcmp(crv, "P-256") || !kid || !x || !y)
			continue;
		char why[128];
		if (jwk_refusal(e, why, sizeof why)) { /* kept, so a token naming it hears why it is refused */
			struct tkey *k = tkeys_add(t);
			if (!k) {
				rc = as_fail(err, AS_EINVAL, "more than %d token keys", MAX_TKEYS);
				break;
			}
			snprintf(k->kid, sizeof k->kid, "%s", kid);
			snprintf(k->refused, sizeof k->refused, "%s", why);
			continue;
		}
		uint8_t xb[32], yb[32];
		size_t xl, yl;
		struct eckey *ec;
		if (b64url_decode(x, strlen(x), xb, sizeof xb, &xl) != 0 || xl != 32 ||
		    b64url_decode(y, strlen(y), yb, sizeof yb, &yl) != 0 || yl != 32 ||
		    eckey_from_xy(xb, yb, &ec) != 0) {
			rc = as_fail(err, AS_EINVAL, "%s: key %zu is not a valid P-256 point", path, i);
			break;
		}
		if ((rc = add_ec(t, ec, kid, err)) != 0)
			break;
	}
	json_decref(j);
	return rc;
}

static int load_keys(struct tkeys *t, const struct av_token_opts *o, char *err)
{
	for (size_t i = 0; i < o->nkeys; i++) {
		struct eckey *ec;
		int rc = eckey_load_public(o->key_paths[i], &ec, err);
		if (rc != 0)
			return rc;
		GUARD(add_ec(t, ec, NULL, err));
	}
	if (o->jwks_path)
		GUARD(load_jwks(t, o->jwks_path, err));
	if (o->secret) {
		struct tkey *k = tkeys_add(t);
		if (!k)
			return as_fail(err, AS_EINVAL, "too many keys");
		k->alg = ALG_HS256;
		hs256_kid(o->secret, o->secret_len, k->kid);
		GUARD(buf_put(&k->secret, o->secret, o->secret_len));
	}
	if (t->n == 0)
		return as_fail(err, AS_EINVAL, "no key to verify with: give --key, --jwks or --secret-env");
	return 0;
}

/* The header names the key; nothing else in it is trusted. */
static int read_header(const char *tok, size_t len, char *alg, size_t algn, char *kid, size_t kidn, size_t *dot1,
		       size_t *dot2, struct av_token_result *r)
{
	const char *d1 = memchr(tok, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
	if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
		return bad(r, "not a JWT: expected three dot-separated parts");
	for (size_t i = 0; i < len; i++) {
		char c = tok[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return bad(r, "not a JWT: character 0x%02x at %zu is not base64url", (unsigned char)c, i);
	}
	if (d2 + 1 == tok + len)
		return bad(r, "token has no signature");
	*dot1 = (size_t)(d1 - tok);
	*dot2 = (size_t)(d2 - tok);
	uint8_t h[1024];
	size_t hl;
	if ((size_t)(d1 - tok) > 1360 || b64url_decode(tok, (size_t)(d1 - tok), h, sizeof h, &hl) != 0)
		return bad(r, "token header is not base64url");
	json_error_t je;
	json_t *j = json_loadb((const char *)h, hl, JSON_REJECT_DUPLICATES, &je);
	const char *a = json_string_value(json_object_get(j, "alg"));
	const char *k = json_string_value(json_object_get(j, "kid"));
	int rc = 0;
	if (!json_is_object(j))
		rc = bad(r, "token header is not a JSON object");
	else if (!a)
		rc = bad(r, "token header has no alg");
	else if (!k)
		rc = bad(r, "token header has no kid");
	else if (json_object_get(j, "crit"))
		rc = bad(r, "token header has critical extensions (crit) we do not understand");
	else if (strlen(a) >= algn || strlen(k) >= kidn)
		rc = bad(r, "token header: alg or kid too long");
	else {
		snprintf(alg, algn, "%s", a);
		snprintf(kid, kidn, "%s", k);
	}
	json_decref(j);
	return rc;
}

static int file_sha256(const char *path, char hex[65], char *err)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return as_fail(err, AS_ENOTFOUND, "cannot open subject %s", path);
	mbedtls_sha256_context c;
	mbedtls_sha256_init(&c);
	mbedtls_sha256_starts_ret(&c, 0);
	uint8_t b[65536], h[32];
	size_t n;
	while ((n = fread(b, 1, sizeof b, f)) > 0)
		mbedtls_sha256_update_ret(&c, b, n);
	int e = ferror(f);
	fclose(f);
	mbedtls_sha256_finish_ret(&c, h);
	mbedtls_sha256_free(&c);
	if (e)
		return as_fail(err, AS_EIO, "cannot read subject %s", path);
	hex_encode(h, 32, hex);
	return 0;
}

static int subject_has(json_t *subjects, const char *hex)
{
	size_t i;
	json_t *s;
	json_array_foreach(subjects, i, s)
	{
		const char *d = json_string_value(json_object_get(json_object_get(s, "digest"), "sha256"));
		if (d && strcmp(d, hex) == 0)
			return 1;
	}
	return 0;
}

/* Unix seconds up to the year 9999: beyond, adding a leeway could overflow. */
#define TIME_CLAIM_MAX 253402300799LL

static int get_time(json_t *c, const char *name, long long *out)
{
	json_t *v = json_object_get(c, name);
	if (!json_is_integer(v))
		return -1;
	*out = json_integer_value(v);
	return 0;
}

static const char *const assurances[] = {"reviewer", "policy", "same-user", "self-attested"};

/* What vouches for the approval: a gate reads it, so a token without it says too little. */
static int check_assurance(json_t *c, struct av_token_result *r)
{
	const char *a = json_string_value(json_object_get(c, "assurance"));
	if (!a)
		return bad(r,
			   "token has no assurance claim (reviewer, policy, same-user or self-attested): it does not "
			   "say what vouches for the approval");
	for (size_t i = 0; i < sizeof assurances / sizeof *assurances; i++)
		if (!strcmp(a, assurances[i]))
			return 0;
	return bad(r, "token's assurance '%.32s' is not reviewer, policy, same-user or self-attested", a);
}

/* --require-computed: the subjects the gate checks (or, when it names none, every
 * subject of the token, at least one) were hashed by the gateway from their bytes,
 * not asserted by the agent. */
static int subject_computed(json_t *subjects, const char *hex)
{
	size_t i;
	json_t *s;
	int all = 1;
	json_array_foreach(subjects, i, s)
	{
		const char *d = json_string_value(json_object_get(json_object_get(s, "digest"), "sha256"));
		const char *src = json_string_value(json_object_get(s, "digest_source"));
		int computed = src && !strcmp(src, "computed");
		if (hex && d && !strcmp(d, hex) && computed)
			return 1;
		all &= computed;
	}
	return hex ? 0 : all;
}

static int check_computed(json_t *subj, const char *const *hexes, size_t n, struct av_token_result *r)
{
	if (!n) {
		if (json_array_size(subj) == 0)
			return bad(r, "--require-computed: the token names no subject");
		if (!subject_computed(subj, NULL))
			return bad(r,
				   "--require-computed: a subject's digest was asserted by the agent, not computed by "
				   "the gateway");
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!subject_computed(subj, hexes[i]))
			return bad(
			    r,
			    "--require-computed: subject %.16s... was asserted by the agent, not computed by the "
			    "gateway",
			    hexes[i]);
	return 0;
}

/* The decision entry the token names: on the ledger, chained from entry 0,
 * approving the same session with the same jti, with the leaf hash the token carries. */
static int check_ledger(const char *dir, json_t *claims, int *passkey, struct av_token_result *r)
{
	json_t *lg = json_object_get(claims, "ledger");
	json_t *seqj = json_object_get(lg, "seq");
	const char *lh = json_string_value(json_object_get(lg, "leaf_hash"));
	const char *sid = json_string_value(json_object_get(claims, "session_id"));
	const char *jti = json_string_value(json_object_get(claims, "jti"));
	uint8_t want[32];
	if (!json_is_integer(seqj) || json_integer_value(seqj) < 0 || !lh ||
	    hex_decode(lh, strlen(lh), want, 32) != 0 || !sid || !jti)
		return bad(r, "token's ledger claim is malformed");
	uint64_t seq = (uint64_t)json_integer_value(seqj);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ent, ck;
	int nolock;
	char err[AS_ERRLEN];
	int rc = store_open_ro(dir, &env, &txn, &ent, &ck, &nolock, err);
	if (rc == AS_ECORRUPT)
		return bad(r, "ledger: %s", err);
	if (rc != 0) {
		snprintf(r->reason, sizeof r->reason, "%s", err);
		return rc;
	}
	MDB_cursor *cur;
	MDB_val k, v;
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	uint8_t prev[32] = {0}, leaf[32];
	uint64_t i = 0;
	int g;
	rc = AS_EBADSIG;
	mdb_cursor_open(txn, ent, &cur);
	for (g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0; g = mdb_cursor_get(cur, &k, &v, MDB_NEXT), i++) {
		struct cv *e;
		cv_arena_reset(&a);
		if (k.mv_size != 8 || be64_get(k.mv_data) != i) {
			bad(r, "ledger: entry %llu is missing", (unsigned long long)i);
			break;
		}
		if (v.mv_size > ENTRY_MAX || cbor_decode(v.mv_data, v.mv_size, &a, &e, err) != 0 ||
		    entry_check(e, i, prev, err) != 0) {
			bad(r, "ledger: the chain breaks at entry %llu: %s", (unsigned long long)i, err);
			break;
		}
		merkle_leaf_hash(v.mv_data, v.mv_size, leaf);
		memcpy(prev, leaf, 32);
		if (i < seq)
			continue;
		const struct cv *tk = cv_get(e, "token"), *tj = cv_get(tk, "jti");
		if (memcmp(leaf, want, 32) != 0)
			bad(r, "ledger: entry %llu's leaf hash differs from the token's", (unsigned long long)seq);
		else if (!cv_text_eq(cv_get(e, "kind"), "decision"))
			bad(r, "ledger: entry %llu is not a decision", (unsigned long long)seq);
		else if (!cv_text_eq(cv_get(e, "outcome"), "approved"))
			bad(r, "ledger: entry %llu does not approve", (unsigned long long)seq);
		else if (!cv_text_eq(cv_get(e, "session_id"), sid))
			bad(r, "ledger: entry %llu decides another session", (unsigned long long)seq);
		else if (!tj || !cv_text_eq(tj, jti))
			bad(r, "ledger: entry %llu records another token (jti)", (unsigned long long)seq);
		else
			rc = 0;
		*passkey = cv_get(e, "passkey") != NULL;
		break;
	}
	if (rc != 0 && !r->reason[0])
		bad(r,
		    g == MDB_NOTFOUND ? "ledger: no entry %llu (the ledger has %llu)"
				      : "ledger: damaged near entry %llu",
		    (unsigned long long)seq, (unsigned long long)i);
	mdb_cursor_close(cur);
	cv_arena_free(&a);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}

/* The decision entry on the ledger (check_ledger); with a key pin, the whole ledger verified
 * (its checkpoints, and every passkey decision: verify/passkeys.c) and the entry covered by
 * a checkpoint the pinned key signed; with require_passkey, the entry carries an assertion. */
static int check_ledger_pinned(const struct av_token_opts *o, json_t *c, struct av_token_result *r)
{
	int passkey = 0, pinned = o->ledger_key_sha256 || o->ledger_key_from_state;
	if (o->require_passkey && !pinned)
		return bad(r, "--require-passkey needs the ledger's checkpoint key pinned (--key-sha256 or "
			      "--key-from-state)");
	GUARD(check_ledger(o->ledger_dir, c, &passkey, r));
	if (!pinned)
		return 0;
	struct av_ledger_opts lo = {.key_sha256 = o->ledger_key_sha256,
				    .key_from_state = o->ledger_key_from_state,
				    .passkeys_path = o->passkeys_path};
	struct av_ledger_report lr;
	int rc = av_verify_ledger(o->ledger_dir, &lo, &lr);
	if (rc != 0) {
		snprintf(r->reason, sizeof r->reason, "ledger: %.240s", lr.reason);
		return rc;
	}
	if (!lr.ok)
		return bad(r, "ledger: %.240s", lr.reason);
	uint64_t seq = (uint64_t)json_integer_value(json_object_get(json_object_get(c, "ledger"), "seq"));
	if (seq >= lr.signed_size)
		return bad(r, "ledger: entry %llu is after the last checkpoint the pinned key signed (size %llu)",
			   (unsigned long long)seq, (unsigned long long)lr.signed_size);
	if (o->require_passkey && !passkey)
		return bad(r, "request %s: approved without the reviewer's passkey (--require-passkey)",
			   json_string_value(json_object_get(c, "session_id")));
	return 0;
}

static int check_claims(json_t *c, const struct av_token_opts *o, struct av_token_result *r)
{
	const char *tt = json_string_value(json_object_get(c, "token_type"));
	if (!tt || strcmp(tt, TOK_TYPE) != 0)
		return bad(r, "not an assent approval token (token_type is not %s)", TOK_TYPE);
	const char *iss = json_string_value(json_object_get(c, "iss"));
	if (o->iss && (!iss || strcmp(iss, o->iss) != 0))
		return bad(r, "wrong issuer: token has '%.64s', expected '%.64s'", iss ? iss : "(none)", o->iss);
	json_t *aud = json_object_get(c, "aud");
	int aud_ok = json_is_string(aud) && strcmp(json_string_value(aud), o->aud) == 0;
	if (json_is_array(aud)) {
		size_t i;
		json_t *a;
		json_array_foreach(aud, i, a) aud_ok |= json_is_string(a) && strcmp(json_string_value(a), o->aud) == 0;
	}
	if (!aud_ok)
		return bad(r, "wrong audience: the token is not for '%.64s'", o->aud);
	long long now = o->now ? o->now : (long long)time(NULL), leeway = o->leeway < 0 ? 60 : o->leeway;
	long long exp, nbf, iat;
	if (get_time(c, "exp", &exp) || get_time(c, "nbf", &nbf) || get_time(c, "iat", &iat))
		return bad(r, "token lacks exp, nbf or iat");
	if (exp < 0 || exp > TIME_CLAIM_MAX || nbf < 0 || nbf > TIME_CLAIM_MAX || iat < 0 || iat > TIME_CLAIM_MAX)
		return bad(r, "token's exp, nbf or iat is outside 0 to %lld (year 9999)", TIME_CLAIM_MAX);
	if (now > exp + leeway)
		return bad(r, "token expired %lld s ago", now - exp);
	if (now + leeway < nbf)
		return bad(r, "token not valid yet (nbf is %lld s ahead)", nbf - now);
	if (now + leeway < iat)
		return bad(r, "token issued in the future (iat is %lld s ahead)", iat - now);
	if (!json_is_true(json_object_get(c, "approved")))
		return bad(r, "token does not say approved: true");
	/* The outcome is named twice; both must approve (a rejected or answered decision
	 * approves nothing, whatever else the token says). */
	const char *dec = json_string_value(json_object_get(c, "decision"));
	if (!dec || strcmp(dec, "approved") != 0)
		return bad(r, "token's decision is '%.32s', not approved", dec ? dec : "(none)");
	GUARD(check_assurance(c, r));
	json_t *subj = json_object_get(c, "subject");
	char err[AS_ERRLEN];
	char hexes[AV_SUBJECTS_MAX][65];
	const char *checked[AV_SUBJECTS_MAX];
	size_t nchecked = 0;
	if (o->nsubject_paths + o->nsubject_sha256 > AV_SUBJECTS_MAX)
		return bad(r, "more than %d subjects to check", AV_SUBJECTS_MAX);
	for (size_t i = 0; i < o->nsubject_paths; i++) {
		char *hex = hexes[nchecked];
		int rc = file_sha256(o->subject_paths[i], hex, err);
		if (rc != 0) {
			snprintf(r->reason, sizeof r->reason, "%s", err);
			return rc;
		}
		if (!subject_has(subj, hex))
			return bad(r, "subject %.128s (sha256 %.16s...) is not what was approved", o->subject_paths[i],
				   hex);
		checked[nchecked++] = hex;
	}
	for (size_t i = 0; i < o->nsubject_sha256; i++) {
		if (!subject_has(subj, o->subject_sha256[i]))
			return bad(r, "subject digest %.16s... is not what was approved", o->subject_sha256[i]);
		checked[nchecked++] = o->subject_sha256[i];
	}
	if (o->require_computed)
		GUARD(check_computed(subj, checked, nchecked, r));
	if (o->action_sha256) {
		const char *act = json_string_value(json_object_get(c, "action"));
		const char *want = o->action_sha256;
		if (!strncmp(want, "sha256:", 7))
			want += 7;
		if (!act || strncmp(act, "sha256:", 7) != 0 || strcmp(act + 7, want) != 0)
			return bad(r, "action digest differs from --action-sha256");
	}
	if (o->ledger_dir)
		return check_ledger_pinned(o, c, r);
	return 0;
}

/* RFC 7515 compact serialisation: the signature covers "header.payload" as sent.
 * ES256: 64 bytes r || s (RFC 7518 3.4); HS256: HMAC-SHA-256, compared in constant time. */
static int jws_check_signature(const char *input, size_t inlen, const char *sig64, size_t siglen,
			       const struct tkey *key, struct av_token_result *r)
{
	uint8_t sig[96], h[32];
	size_t n = 0;
	if (siglen > 128 || b64url_decode(sig64, siglen, sig, sizeof sig, &n) != 0)
		return bad(r, "token signature is not base64url");
	if (key->alg == ALG_HS256) {
		if (n != 32)
			return bad(r, "signature does not verify (HS256 signatures are 32 bytes, not %zu)", n);
		if (mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), key->secret.p, key->secret.len,
				    (const uint8_t *)input, inlen, h) != 0)
			return bad(r, "cannot compute HMAC-SHA-256");
		return ct_memcmp(h, sig, 32) == 0 ? 0 : bad(r, "signature does not verify");
	}
	if (n != 64)
		return bad(r, "signature does not verify (ES256 signatures are 64 bytes, not %zu)", n);
	/* (r, n - s) verifies as well as (r, s): the issuer signs with the low s, so a
	 * high one is someone's altered copy (one token, one signature). */
	if (eckey_s_high(sig + 32))
		return bad(r, "ES256 signature has a high s (s > n/2): not the form assent issues (a malleated copy)");
	mbedtls_sha256_ret((const uint8_t *)input, inlen, h, 0);
	return eckey_verify_rs(key->ec, h, sig) == 0 ? 0 : bad(r, "signature does not verify");
}

int av_verify_token(const char *tok, size_t len, const struct av_token_opts *o, struct av_token_result *r)
{
	memset(r, 0, sizeof *r);
	if (!o->aud || !*o->aud) {
		snprintf(r->reason, sizeof r->reason, "an audience is required (--aud)");
		return AS_EINVAL;
	}
	for (size_t i = 0; i < o->nsubject_sha256; i++) {
		uint8_t tmp[32];
		const char *h = o->subject_sha256[i];
		if (hex_decode(h, strlen(h), tmp, 32) != 0) {
			snprintf(r->reason, sizeof r->reason, "--subject-sha256 '%.70s' is not 64 lowercase hex digits",
				 h);
			return AS_EINVAL;
		}
	}
	if (len > AV_TOKEN_MAX)
		return bad(r, "token is larger than the maximum of %d bytes", AV_TOKEN_MAX);
	if (len == 0)
		return bad(r, "empty token");
	struct tkeys keys = {0};
	int rc = load_keys(&keys, o, r->reason);
	if (rc != 0) {
		tkeys_free(&keys);
		return rc == AS_EBADSIG ? AS_EINVAL : rc;
	}
	char alg[32], kid[128];
	size_t d1 = 0, d2 = 0;
	rc = read_header(tok, len, alg, sizeof alg, kid, sizeof kid, &d1, &d2, r);
	struct tkey *key = NULL;
	for (size_t i = 0; rc == 0 && i < keys.n; i++) /* a usable key of that kid before a refused one */
		if (strcmp(keys.k[i].kid, kid) == 0 && (!key || key->refused[0]))
			key = &keys.k[i];
	if (rc == 0 && !key)
		rc = bad(r, "unknown kid '%.64s': no key given has it", kid);
	if (rc == 0 && key->refused[0])
		rc = bad(r, "key %.64s in the JWKS may not verify signatures: %s", kid, key->refused);
	/* One algorithm per key: this is what stops an HS256 token keyed with the ES256
	 * public key PEM (algorithm confusion), alg none, and every other algorithm. */
	if (rc == 0 && strcmp(alg, alg_names[key->alg]) != 0)
		rc = bad(r, "algorithm %.16s refused: key %.64s allows %s only", alg, kid, alg_names[key->alg]);
	if (rc == 0)
		rc = jws_check_signature(tok, d2, tok + d2 + 1, len - d2 - 1, key, r);
	json_t *claims = NULL;
	if (rc == 0) {
		uint8_t *pl = malloc(len);
		size_t pn = 0;
		json_error_t je;
		if (!pl)
			rc = AS_ENOMEM;
		else if (b64url_decode(tok + d1 + 1, d2 - d1 - 1, pl, len, &pn) != 0)
			rc = bad(r, "token payload is not base64url");
		else if (!(claims = json_loadb((const char *)pl, pn, JSON_REJECT_DUPLICATES, &je)) ||
			 !json_is_object(claims)) /* json_is_object evaluates its argument twice */
			rc = bad(r, "token payload is not a JSON object without duplicate keys");
		free(pl);
	}
	if (rc == 0)
		rc = check_claims(claims, o, r);
	if (rc == 0)
		r->claims_json = json_dumps(claims, JSON_COMPACT);
	json_decref(claims);
	tkeys_free(&keys);
	return rc;
}
