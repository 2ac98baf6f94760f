/* Token keys: ES256 key pairs in STATE/keys with rotation and a JWKS, or the
 * HS256 secret from the environment. Read by the signer only. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <mbedtls/md.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <sys/random.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cbor.h"
#include "common/eckey.h"
#include "common/p11.h"
#include "gateway/proto/statedir.h"
#include "ledger/entry.h"
#include "ledger/merkle.h"
#include "gateway/state/token.h"

/* ES256 tokens are signed by OpenSSL's libcrypto with the key held in memory: about 30
 * microseconds a token here, where mbedTLS 2.28 takes about 500 and libjwt, which parsed
 * the PEM key on every call, about 750 (make bench: sign_bench). mbedTLS still generates,
 * stores and exports the key, and a self-check at load proves both hold the same key. */
struct tokkeys {
	enum tok_mode mode;
	struct eckey *ec;    /* ES256: the key as mbedTLS holds it (kid, JWKS, the self-check) */
	EVP_PKEY *pkey;	     /* ES256: the same key in OpenSSL; freed (and cleared) on free */
	EVP_PKEY_CTX *sign;  /* ES256: set up once for EVP_PKEY_sign; one thread at a time */
	struct p11_key *hsm; /* ES256 in a PKCS#11 token: signs instead of pkey (borrowed) */
	uint8_t *secret;     /* HS256: a copy, wiped on free */
	size_t secret_len;
	char kid[TOK_KID_MAX];
	char iss[128];
	char hdr[192]; /* base64url of the protected header, the same for every token of this key */
	size_t hdr_len;
};

int tok_config_from_env(struct tok_config *c, char *err)
{
	memset(c, 0, sizeof *c);
	const char *iss = getenv("ASSENT_TOKEN_ISSUER");
	snprintf(c->iss, sizeof c->iss, "%s", iss && *iss ? iss : "assent");
	const char *sign = getenv("FEEDBACK_SIGN_TOKENS");
	if (!sign || !*sign) {
		c->mode = TOK_ES256;
		return 0;
	}
	if (!strcmp(sign, "false")) {
		c->mode = TOK_OFF;
		return 0;
	}
	if (strcmp(sign, "true") != 0)
		return as_fail(err, AS_EINVAL, "FEEDBACK_SIGN_TOKENS must be true or false, not '%.32s'", sign);
	const char *sec = getenv("FEEDBACK_TOKEN_SECRET");
	size_t n = sec ? strlen(sec) : 0;
	if (n == 0)
		return as_fail(err, AS_EINVAL,
			       "FEEDBACK_SIGN_TOKENS=true needs FEEDBACK_TOKEN_SECRET (at least %d bytes)",
			       TOK_SECRET_MIN);
	if (n < TOK_SECRET_MIN)
		return as_fail(
		    err, AS_EINVAL,
		    "FEEDBACK_TOKEN_SECRET is %zu bytes; HS256 needs at least %d (try: openssl rand -hex 32)", n,
		    TOK_SECRET_MIN);
	if (!(c->secret = malloc(n)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	memcpy(c->secret, sec, n);
	c->secret_len = n;
	c->mode = TOK_HS256;
	return 0;
}

void tok_config_clear(struct tok_config *c)
{
	if (c->secret) {
		explicit_bzero(c->secret, c->secret_len);
		free(c->secret);
	}
	c->secret = NULL;
	c->secret_len = 0;
}

/* ---- the key index, keys/token-keys.json ----
 * {"active": kid, "keys": [{"kid", "created", "retired", "verify_until"}]}: which key
 * signs now, and until when each retired public key must stay in the JWKS. */

static int path_in(char *out, size_t n, const char *dir, const char *name)
{
	return snprintf(out, n, "%s/%s", dir, name) < (int)n ? 0 : AS_EINVAL;
}

static json_t *index_load(const char *dir, char *err)
{
	char p[4200];
	path_in(p, sizeof p, dir, STATE_TOKEN_INDEX);
	struct buf b;
	int rc = file_read(p, 1 << 20, &b, err);
	if (rc == AS_ENOTFOUND)
		return json_pack("{s:n,s:[]}", "active", "keys");
	if (rc != 0)
		return NULL;
	json_error_t je;
	json_t *j = json_loadb((const char *)b.p, b.len, JSON_REJECT_DUPLICATES, &je);
	buf_free(&b);
	if (!j || !json_is_array(json_object_get(j, "keys"))) {
		json_decref(j);
		as_fail(err, AS_ECORRUPT, "%s is not a token key index", p);
		return NULL;
	}
	return j;
}

static int write_json(const char *dir, const char *name, json_t *j, unsigned mode, char *err)
{
	char p[4200];
	path_in(p, sizeof p, dir, name);
	char *s = json_dumps(j, JSON_INDENT(2));
	if (!s)
		return as_fail(err, AS_ENOMEM, "out of memory");
	size_t n = strlen(s);
	int rc = file_write_atomic(p, s, n, mode, err);
	free(s);
	return rc;
}

/* Rewrite jwks.json from the index: every key still within its verify_until. */
static int jwks_write(const char *dir, json_t *index, uint64_t now, char *err)
{
	json_t *keys = json_array(), *kept = json_array();
	size_t i;
	json_t *e;
	int rc = 0;
	json_array_foreach(json_object_get(index, "keys"), i, e)
	{
		json_t *vu = json_object_get(e, "verify_until");
		const char *kid = json_string_value(json_object_get(e, "kid"));
		if (!kid)
			continue;
		char pub[4200], name[128];
		snprintf(name, sizeof name, "token-%s.pub", kid);
		path_in(pub, sizeof pub, dir, name);
		if (json_is_integer(vu) && (uint64_t)json_integer_value(vu) < now) {
			unlink(pub); /* every token it signed has expired */
			continue;
		}
		struct eckey *k;
		uint8_t x[32], y[32];
		if (eckey_load_public(pub, &k, err) != 0) {
			rc = AS_EIO;
			break;
		}
		struct buf bx, by;
		buf_init(&bx, 64);
		buf_init(&by, 64);
		if (eckey_xy(k, x, y) != 0 || b64url_encode(x, 32, &bx) != 0 || b64url_encode(y, 32, &by) != 0) {
			rc = as_fail(err, AS_EIO, "cannot encode the public key %s", pub);
			buf_free(&bx);
			buf_free(&by);
			eckey_free(k);
			break;
		}
		json_array_append_new(keys, json_pack("{s:s,s:s,s:s%,s:s%,s:s,s:s,s:s}", "kty", "EC", "crv", "P-256",
						      "x", (const char *)bx.p, bx.len, "y", (const char *)by.p, by.len,
						      "kid", kid, "alg", "ES256", "use", "sig"));
		json_array_append(kept, e);
		buf_free(&bx);
		buf_free(&by);
		eckey_free(k);
	}
	if (rc == 0) {
		json_object_set(index, "keys", kept);
		json_t *jwks = json_pack("{s:O}", "keys", keys);
		rc = write_json(dir, STATE_JWKS, jwks, 0644, err);
		json_decref(jwks);
	}
	json_decref(keys);
	json_decref(kept);
	return rc;
}

static int ledger_key_event(struct ledger *l, const char *kid, const char *event, const struct eckey *k, char *err)
{
	if (!l)
		return 0;
	struct buf enc;
	buf_init(&enc, 8192);
	int rc = entry_key_fields("token", kid, event, k, &enc, err);
	if (rc == 0) {
		struct ledger_rec r = {enc.p, enc.len};
		struct ledger_pos pos;
		rc = ledger_append(l, &r, 1, &pos, err);
	}
	buf_free(&enc);
	return rc;
}

/* Make k active in the index: its public key file (and its private one when save_priv),
 * the index entry, the JWKS and the ledger's `key` entry. */
static int add_active_key(const char *dir, json_t *index, struct ledger *l, const char *event, const struct eckey *k,
			  int save_priv, char kid[TOK_KID_MAX], char *err)
{
	if (eckey_jwk_kid(k, kid) != 0)
		return as_fail(err, AS_ECRYPTO, "cannot compute the token key's id");
	char priv[4200], pub[4200], name[128];
	snprintf(name, sizeof name, "token-%s.key", kid);
	path_in(priv, sizeof priv, dir, name);
	snprintf(name, sizeof name, "token-%s.pub", kid);
	path_in(pub, sizeof pub, dir, name);
	int rc = 0;
	if (save_priv) {
		rc = eckey_save(k, priv, pub, err);
	} else {
		struct buf pem;
		buf_init(&pem, 4096);
		rc = eckey_public_pem(k, &pem) == 0 ? file_write_atomic(pub, pem.p, pem.len, 0644, err)
						    : as_fail(err, AS_ECRYPTO, "cannot encode the token key %s", kid);
		buf_free(&pem);
	}
	uint64_t now = (uint64_t)time(NULL);
	if (rc == 0) {
		json_array_append_new(
		    json_object_get(index, "keys"),
		    json_pack("{s:s,s:I,s:n,s:n}", "kid", kid, "created", (json_int_t)now, "retired", "verify_until"));
		json_object_set_new(index, "active", json_string(kid));
		rc = jwks_write(dir, index, now, err);
	}
	if (rc == 0)
		rc = write_json(dir, STATE_TOKEN_INDEX, index, 0644, err);
	if (rc == 0)
		rc = ledger_key_event(l, kid, event, k, err);
	return rc;
}

/* Create a key pair, save it, make it active in the index. */
static int new_active_key(const char *dir, json_t *index, struct ledger *l, const char *event, char kid[TOK_KID_MAX],
			  char *err)
{
	struct eckey *k;
	if (eckey_generate(&k) != 0)
		return as_fail(err, AS_ECRYPTO, "cannot generate a token key");
	int rc = add_active_key(dir, index, l, event, k, 1, kid, err);
	eckey_free(k);
	return rc;
}

/* The old key signs no more, and verifies until its last token expires. */
static int retire_key(const char *dir, json_t *index, struct ledger *l, const char *oldkid, char *err)
{
	uint64_t now = (uint64_t)time(NULL);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(index, "keys"), i, e)
	{
		const char *kid = json_string_value(json_object_get(e, "kid"));
		if (kid && strcmp(kid, oldkid) == 0) {
			json_object_set_new(e, "retired", json_integer((json_int_t)now));
			json_object_set_new(e, "verify_until", json_integer((json_int_t)(now + TOK_TTL_MAX)));
		}
	}
	char priv[4200], name[128];
	snprintf(name, sizeof name, "token-%s.key", oldkid);
	path_in(priv, sizeof priv, dir, name);
	int rc = 0;
	if (unlink(priv) != 0 && errno != ENOENT)
		rc = as_fail(err, AS_EIO, "cannot remove the retired key %s: %s", priv, strerror(errno));
	if (rc == 0)
		rc = jwks_write(dir, index, now, err);
	if (rc == 0)
		rc = write_json(dir, STATE_TOKEN_INDEX, index, 0644, err);
	if (rc == 0)
		rc = ledger_key_event(l, oldkid, "retired", NULL, err);
	return rc;
}

int tokkeys_rotate(const char *dir, struct ledger *l, char new_kid[TOK_KID_MAX], char *err)
{
	GUARD(mkdir_p(dir, 0700, err));
	json_t *index = index_load(dir, err);
	if (!index)
		return AS_EIO;
	const char *old = json_string_value(json_object_get(index, "active"));
	char oldkid[TOK_KID_MAX] = "";
	if (old)
		snprintf(oldkid, sizeof oldkid, "%s", old);
	int rc = new_active_key(dir, index, l, oldkid[0] ? "rotated" : "created", new_kid, err);
	if (rc == 0 && oldkid[0])
		rc = retire_key(dir, index, l, oldkid, err);
	json_decref(index);
	return rc;
}

/* The token's key made the active one: new (created), after another (rotated: a file
 * key, or a token key under another label, is retired), or already active. */
static int hsm_activate(const char *dir, json_t *index, struct ledger *l, struct tokkeys *k, char *err)
{
	const struct eckey *pub = p11_key_public(k->hsm);
	char kid[TOK_KID_MAX], oldkid[TOK_KID_MAX] = "";
	if (eckey_jwk_kid(pub, kid) != 0)
		return as_fail(err, AS_ECRYPTO, "cannot compute the token key's id");
	const char *active = json_string_value(json_object_get(index, "active"));
	if (active)
		snprintf(oldkid, sizeof oldkid, "%s", active);
	int rc = 0;
	if (strcmp(oldkid, kid) != 0)
		rc = add_active_key(dir, index, l, oldkid[0] ? "rotated" : "created", pub, 0, kid, err);
	if (rc == 0 && oldkid[0] && strcmp(oldkid, kid) != 0)
		rc = retire_key(dir, index, l, oldkid, err);
	snprintf(k->kid, sizeof k->kid, "%s", kid);
	return rc;
}

/* ES256: r || s, 32 bytes each (RFC 7518 section 3.4), of a SHA-256 hash. */
static int es256_sign_hash(const struct tokkeys *k, const uint8_t h[32], uint8_t rs[64])
{
	if (k->hsm)
		return p11_sign_rs(k->hsm, h, rs); /* the low s already */
	uint8_t der[ECKEY_SIG_MAX];
	size_t n = sizeof der;
	int rc = AS_ECRYPTO;
	if (EVP_PKEY_sign(k->sign, der, &n, h, 32) == 1) {
		const unsigned char *p = der;
		ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)n);
		const BIGNUM *r, *s;
		if (sig) {
			ECDSA_SIG_get0(sig, &r, &s);
			if (BN_bn2binpad(r, rs, 32) == 32 && BN_bn2binpad(s, rs + 32, 32) == 32) {
				eckey_s_low(rs + 32); /* OpenSSL gives either s; verifiers take the low one only */
				rc = 0;
			}
			ECDSA_SIG_free(sig);
		}
	}
	ERR_clear_error(); /* nothing of a failure may linger in this thread's queue */
	return rc;
}

/* Hand the key to OpenSSL, then prove the two libraries hold the same key: a signature
 * made by OpenSSL must verify under the public key mbedTLS derived the kid from. */
static int ossl_load(struct tokkeys *k, char *err)
{
	struct buf pem;
	buf_init(&pem, 4096);
	BIO *bio = eckey_private_pem(k->ec, &pem) == 0 ? BIO_new_mem_buf(pem.p, (int)pem.len) : NULL;
	if (bio)
		k->pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	buf_free_wipe(&pem);
	int rc = k->pkey && EVP_PKEY_get_base_id(k->pkey) == EVP_PKEY_EC && EVP_PKEY_get_bits(k->pkey) == 256 &&
			 (k->sign = EVP_PKEY_CTX_new(k->pkey, NULL)) != NULL && EVP_PKEY_sign_init(k->sign) == 1
		     ? 0
		     : AS_ECRYPTO;
	ERR_clear_error();
	if (rc != 0)
		return as_fail(err, rc, "OpenSSL refuses the token key %s", k->kid);
	static const char probe[] = "assent: token key self-check";
	uint8_t h[32], rs[64];
	sha256(probe, sizeof probe - 1, h);
	if (es256_sign_hash(k, h, rs) != 0 || eckey_verify_rs(k->ec, h, rs) != 0)
		return as_fail(err, AS_ECRYPTO, "the token key %s fails its self-check (OpenSSL and mbedTLS disagree)",
			       k->kid);
	return 0;
}

/* The protected header, {"alg","kid","typ":"JWT"} with sorted keys as libjwt wrote it, encoded once. */
static int header_init(struct tokkeys *k, char *err)
{
	json_t *h =
	    json_pack("{s:s,s:s,s:s}", "alg", k->mode == TOK_HS256 ? "HS256" : "ES256", "kid", k->kid, "typ", "JWT");
	char *js = h ? json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(h);
	struct buf b;
	buf_init(&b, sizeof k->hdr);
	int rc = js ? b64url_encode((const uint8_t *)js, strlen(js), &b) : AS_ENOMEM;
	free(js);
	if (rc == 0) {
		memcpy(k->hdr, b.p, b.len);
		k->hdr_len = b.len;
	}
	buf_free(&b);
	return rc == 0 ? 0 : as_fail(err, rc, "cannot encode the token header");
}

/* The active ES256 key: the token's (c->hsm), or the key files', the first made when none. */
static int es256_open(const char *dir, struct ledger *l, struct tokkeys *k, char *err)
{
	int rc = mkdir_p(dir, 0700, err);
	json_t *index = rc == 0 ? index_load(dir, err) : NULL;
	if (rc == 0 && !index)
		rc = AS_EIO;
	const char *active = index ? json_string_value(json_object_get(index, "active")) : NULL;
	if (rc == 0 && k->hsm)
		rc = hsm_activate(dir, index, l, k, err);
	else if (rc == 0 && !active)
		rc = new_active_key(dir, index, l, "created", k->kid, err);
	else if (rc == 0)
		snprintf(k->kid, sizeof k->kid, "%s", active);
	if (rc == 0) /* drop public keys whose tokens have all expired */
		rc = jwks_write(dir, index, (uint64_t)time(NULL), err);
	if (rc == 0)
		rc = write_json(dir, STATE_TOKEN_INDEX, index, 0644, err);
	json_decref(index);
	if (k->hsm) /* the token signs; p11_key_find checked it with a probe */
		return rc;
	char priv[4200], name[128];
	snprintf(name, sizeof name, "token-%s.key", k->kid);
	path_in(priv, sizeof priv, dir, name);
	if (rc == 0)
		rc = eckey_load_private(priv, &k->ec, err);
	if (rc == 0)
		rc = ossl_load(k, err);
	return rc;
}

int tokkeys_open(const char *dir, const struct tok_config *c, struct ledger *l, struct tokkeys **out, char *err)
{
	struct tokkeys *k = calloc(1, sizeof *k);
	if (!k)
		return as_fail(err, AS_ENOMEM, "out of memory");
	k->mode = c->mode;
	snprintf(k->iss, sizeof k->iss, "%s", c->iss);
	int rc = 0;
	if (c->mode == TOK_HS256) {
		if (!(k->secret = malloc(c->secret_len)))
			rc = as_fail(err, AS_ENOMEM, "out of memory");
		else {
			memcpy(k->secret, c->secret, c->secret_len);
			k->secret_len = c->secret_len;
			hs256_kid(k->secret, k->secret_len, k->kid);
		}
	} else if (c->mode == TOK_ES256) {
		k->hsm = c->hsm;
		rc = es256_open(dir, l, k, err);
	}
	if (rc == 0 && c->mode != TOK_OFF)
		rc = header_init(k, err);
	if (rc != 0) {
		tokkeys_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void tokkeys_free(struct tokkeys *k)
{
	if (!k)
		return;
	eckey_free(k->ec);
	EVP_PKEY_CTX_free(k->sign);
	EVP_PKEY_free(k->pkey); /* OpenSSL clears an EC private key as it frees it */
	if (k->secret) {
		explicit_bzero(k->secret, k->secret_len);
		free(k->secret);
	}
	free(k);
}

const char *tokkeys_kid(const struct tokkeys *k)
{
	return k->mode == TOK_OFF ? NULL : k->kid;
}

/* Issuance lives here too: it needs the private parts, which stay in this file. */

static int random_hex(char *out, size_t nbytes)
{
	uint8_t r[32];
	if (nbytes > sizeof r)
		return AS_EINVAL;
	/* getrandom: one system call, where opening /dev/urandom per token cost five. */
	if (getrandom(r, nbytes, 0) != (ssize_t)nbytes)
		return AS_EIO;
	hex_encode(r, nbytes, out);
	return 0;
}

int tok_prepare(const struct tokkeys *k, const struct tok_request *r, struct tok_ticket *t, char *err)
{
	if (k->mode == TOK_OFF)
		return as_fail(err, AS_EINVAL, "tokens are disabled (FEEDBACK_SIGN_TOKENS=false)");
	uint32_t ttl = r->ttl ? r->ttl : TOK_TTL_DEFAULT;
	if (ttl > TOK_TTL_MAX)
		return as_fail(err, AS_EINVAL, "token lifetime %u s is over the maximum of %d s", ttl, TOK_TTL_MAX);
	if (random_hex(t->jti, 16) != 0)
		return as_fail(err, AS_EIO, "no randomness from the kernel (getrandom)");
	snprintf(t->kid, sizeof t->kid, "%s", k->kid);
	t->iat = r->now ? r->now : (uint64_t)time(NULL);
	t->exp = t->iat + ttl;
	return 0;
}

int tok_issue(const struct tokkeys *k, const struct tok_request *r, const struct tok_ticket *t, uint64_t seq,
	      const uint8_t leaf[32], char **out, char *err)
{
	if (k->mode == TOK_OFF)
		return as_fail(err, AS_EINVAL, "tokens are disabled");
	if (!r->aud || !*r->aud || !r->session_id || !r->assurance)
		return as_fail(err, AS_EINVAL, "a token needs an audience, a session id and an assurance");
	if (strcmp(t->kid, k->kid) != 0) /* the decision entry names t->kid: the header must too */
		return as_fail(err, AS_EINVAL, "the token was prepared for key %s, not %s", t->kid, k->kid);
	char lh[65], action[72];
	hex_encode(leaf, 32, lh);
	snprintf(action, sizeof action, "sha256:%s", r->action_sha256);
	json_t *subj = json_array();
	for (size_t i = 0; i < r->nsubjects; i++)
		json_array_append_new(subj, json_pack("{s:s,s:{s:s},s:s}", "name", r->subjects[i].name, "digest",
						      "sha256", r->subjects[i].sha256, "digest_source",
						      r->subjects[i].computed ? "computed" : "asserted"));
	json_t *reviewer = r->reviewer_name
			       ? json_pack("{s:s,s:s?}", "name", r->reviewer_name, "channel", r->reviewer_channel)
			       : json_null();
	json_t *policy =
	    r->policy_rule ? json_pack("{s:s,s:s?}", "rule", r->policy_rule, "digest", r->policy_digest) : json_null();
	json_t *claims = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:b,s:s,s:o,s:s,s:o,s:s,s:o,s:{s:I,s:s},s:s}",
				   "token_type", TOK_TYPE, "iss", k->iss, "aud", r->aud, "sub", r->session_id, "jti",
				   t->jti, "iat", (json_int_t)t->iat, "nbf", (json_int_t)t->iat, "exp",
				   (json_int_t)t->exp, "approved", 1, "session_id", r->session_id, "reviewer", reviewer,
				   "decision", "approved", "policy", policy, "action", action, "subject", subj,
				   "ledger", "seq", (json_int_t)seq, "leaf_hash", lh, "assurance", r->assurance);
	char *cj = claims ? json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(claims);
	if (!cj)
		return as_fail(err, AS_ENOMEM, "cannot build token claims");
	/* JWS compact serialisation (RFC 7515 section 7.1): header.claims.signature. */
	struct buf jws;
	buf_init(&jws, TOK_JWT_MAX);
	int rc = buf_put(&jws, k->hdr, k->hdr_len);
	if (rc == 0)
		rc = buf_putc(&jws, '.');
	if (rc == 0)
		rc = b64url_encode((const uint8_t *)cj, strlen(cj), &jws);
	free(cj);
	uint8_t sig[64], h[32];
	size_t siglen = 0;
	if (rc == 0 && k->mode == TOK_HS256) {
		rc = mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), k->secret, k->secret_len, jws.p,
				     jws.len, sig) == 0
			 ? 0
			 : AS_ECRYPTO;
		siglen = 32;
	} else if (rc == 0) {
		sha256(jws.p, jws.len, h);
		rc = es256_sign_hash(k, h, sig);
		siglen = 64;
	}
	if (rc == 0)
		rc = buf_putc(&jws, '.');
	if (rc == 0)
		rc = b64url_encode(sig, siglen, &jws);
	if (rc == 0)
		rc = buf_putc(&jws, 0);
	if (rc != 0) {
		buf_free(&jws);
		return as_fail(err, rc, "cannot sign the token: %s", as_strerror(rc));
	}
	*out = (char *)jws.p; /* the caller frees it */
	return 0;
}
