/* Passkey approvals: see passkey.h. The index of credentials is rebuilt from the ledger
 * at every start (passkey_scan), so the ledger stays the one record of who enrolled what;
 * the signer keeps the newest sign count of each credential to refuse a cloned or replayed
 * assertion, as assent-verify does when it walks the same entries. */
#define _GNU_SOURCE
#include "gateway/signer/passkey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/sha256.h>

#include "common/webauthn.h"
#include "gateway/signer/state.h"
#include "ledger/ledger.h"

#define PK_REG_SLOTS 16
#define PK_REG_MS (5 * 60 * 1000) /* a registration's challenge lives five minutes */
#define PK_SIG_MAX 80		  /* a DER ECDSA P-256 signature is at most 72 bytes */

struct pk_cred {
	char reviewer[REG_NAME_MAX + 1];
	uint8_t id[WA_CRED_ID_MAX];
	size_t idn;
	uint8_t x[32], y[32];
	uint32_t count;
	int removed;
	char rp_id[256], origin[WA_ORIGIN_MAX + 1];
};

struct passkey_state {
	struct pk_cred *c;
	size_t n, cap;
	char origin[WA_ORIGIN_MAX + 1], rp_id[256];
	struct {
		char reviewer[REG_NAME_MAX + 1];
		uint8_t challenge[32];
		uint64_t until;
	} reg[PK_REG_SLOTS];
};

int passkey_setup(struct signer *s, char *err)
{
	struct passkey_state *p = calloc(1, sizeof *p);
	if (!p)
		return as_fail(err, AS_ENOMEM, "out of memory");
	s->pk = p;
	const char *o = getenv("ASSENT_PASSKEY_ORIGIN"), *rp = getenv("ASSENT_PASSKEY_RP_ID");
	if (o && *o) {
		const char *h = strstr(o, "://");
		if (strlen(o) > WA_ORIGIN_MAX || (strncmp(o, "https://", 8) && strncmp(o, "http://", 7)) || !h ||
		    !h[3] || strpbrk(h + 3, "/?#@ \"\\"))
			return as_fail(err, AS_EINVAL,
				       "ASSENT_PASSKEY_ORIGIN: '%.80s' is not an origin (scheme://host[:port], as the "
				       "browser names the review page's origin, no path)",
				       o);
		snprintf(p->origin, sizeof p->origin, "%s", o);
	} else {
		snprintf(p->origin, sizeof p->origin, "http://localhost:%u", s->review.port);
	}
	if (rp && *rp) {
		if (strlen(rp) > 253 || strpbrk(rp, ":/ \"\\"))
			return as_fail(err, AS_EINVAL, "ASSENT_PASSKEY_RP_ID: '%.80s' is not a host name", rp);
		snprintf(p->rp_id, sizeof p->rp_id, "%s", rp);
	} else { /* the origin's host */
		const char *h = strstr(p->origin, "://") + 3;
		size_t hn = strcspn(h, ":");
		snprintf(p->rp_id, sizeof p->rp_id, "%.*s", (int)hn, h);
	}
	return 0;
}

void passkey_free(struct signer *s)
{
	if (!s->pk)
		return;
	free(s->pk->c);
	free(s->pk);
	s->pk = NULL;
}

void passkey_link(const struct signer *s, const char *sid, char *out, size_t n)
{
	snprintf(out, n, "%s/review/#%s", s->pk ? s->pk->origin : "", sid);
}

static struct pk_cred *cred_find(struct passkey_state *p, const uint8_t *id, size_t n)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->c[i].idn == n && !memcmp(p->c[i].id, id, n))
			return &p->c[i];
	return NULL;
}

static struct pk_cred *cred_add(struct passkey_state *p)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct pk_cred *c = realloc(p->c, cap * sizeof *c);
		if (!c)
			return NULL;
		p->c = c;
		p->cap = cap;
	}
	struct pk_cred *c = &p->c[p->n++];
	memset(c, 0, sizeof *c);
	return c;
}

/* A base64url text field of an entry, decoded into out; -1 when it is not one. */
static int b64_field(const struct cv *m, const char *k, uint8_t *out, size_t max, size_t *n)
{
	const struct cv *v = cv_get(m, k);
	if (!v || v->t != CV_TEXT)
		return -1;
	return b64url_decode((const char *)v->s, v->n, out, max, n) == 0 ? 0 : -1;
}

static void scan_enrolment(struct passkey_state *p, const struct cv *e)
{
	uint8_t id[WA_CRED_ID_MAX], pt[65];
	size_t idn, ptn;
	const struct cv *ev = cv_get(e, "event");
	if (b64_field(e, "credential_id", id, sizeof id, &idn) != 0 || !idn)
		return;
	struct pk_cred *c = cred_find(p, id, idn);
	if (cv_text_eq(ev, "removed")) {
		if (c)
			c->removed = 1;
		return;
	}
	if (!cv_text_eq(ev, "enrolled") || c || b64_field(e, "public_key", pt, sizeof pt, &ptn) != 0 || ptn != 65)
		return;
	struct pk_cred *n = cred_add(p);
	if (!n)
		return;
	if (text_copy(cv_get(e, "reviewer"), n->reviewer, sizeof n->reviewer) != 0 ||
	    text_copy(cv_get(e, "rp_id"), n->rp_id, sizeof n->rp_id) != 0 ||
	    text_copy(cv_get(e, "origin"), n->origin, sizeof n->origin) != 0) {
		p->n--; /* the signer wrote it: one it cannot read approves nothing */
		return;
	}
	c = n;
	memcpy(c->id, id, idn);
	c->idn = idn;
	memcpy(c->x, pt + 1, 32);
	memcpy(c->y, pt + 33, 32);
}

void passkey_scan(struct signer *s, const struct cv *e)
{
	struct passkey_state *p = s->pk;
	const struct cv *k = cv_get(e, "kind"), *pk = cv_get(e, "passkey");
	if (!p)
		return;
	if (cv_text_eq(k, "passkey")) {
		scan_enrolment(p, e);
		return;
	}
	if (!pk || pk->t != CV_MAP || !(cv_text_eq(k, "decision") || cv_text_eq(k, "approval")))
		return;
	uint8_t id[WA_CRED_ID_MAX], ad[WA_AUTHDATA_MAX];
	size_t idn, adn;
	struct pk_cred *c;
	if (b64_field(pk, "credential_id", id, sizeof id, &idn) == 0 &&
	    b64_field(pk, "authenticator_data", ad, sizeof ad, &adn) == 0 && adn >= WA_AUTHDATA_MIN &&
	    (c = cred_find(p, id, idn)))
		c->count = (uint32_t)ad[33] << 24 | (uint32_t)ad[34] << 16 | (uint32_t)ad[35] << 8 | ad[36];
}

/* ---- registration ---- */

static int b64_json(json_t *o, const char *k, const uint8_t *p, size_t n)
{
	struct buf b;
	buf_init(&b, 2 * n + 8);
	int rc = b64url_encode(p, n, &b) || buf_putc(&b, 0);
	rc = rc || json_object_set_new(o, k, json_string((const char *)b.p));
	buf_free(&b);
	return rc ? -1 : 0;
}

/* The reviewer's enrolled credentials, as {type, id} descriptors. */
static json_t *cred_list(const struct passkey_state *p, const char *reviewer)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < p->n; i++) {
		if (p->c[i].removed || strcmp(p->c[i].reviewer, reviewer))
			continue;
		json_t *d = json_pack("{s:s}", "type", "public-key");
		if (!d || b64_json(d, "id", p->c[i].id, p->c[i].idn) != 0 || json_array_append_new(a, d) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *passkey_register_options(struct signer *s, const char *reviewer, char *err)
{
	struct passkey_state *p = s->pk;
	uint64_t now = now_ms();
	size_t k = 0; /* the reviewer's slot, a free one, or the oldest */
	for (size_t i = 0; i < PK_REG_SLOTS; i++) {
		if (!strcmp(p->reg[i].reviewer, reviewer)) {
			k = i;
			break;
		}
		if (p->reg[i].until < p->reg[k].until)
			k = i;
	}
	uint8_t uid[32];
	mbedtls_sha256_ret((const uint8_t *)reviewer, strlen(reviewer), uid, 0);
	if (getrandom(p->reg[k].challenge, 32, 0) != 32)
		return as_fail(err, AS_EIO, "no randomness for a challenge"), NULL;
	snprintf(p->reg[k].reviewer, sizeof p->reg[k].reviewer, "%s", reviewer);
	p->reg[k].until = now + PK_REG_MS;
	json_t *o = json_pack("{s:{s:s,s:s},s:{s:s,s:s},s:[{s:s,s:i}],s:{s:s,s:s},s:s,s:I,s:o*}", "rp", "id", p->rp_id,
			      "name", "assent", "user", "name", reviewer, "displayName", reviewer, "pubKeyCredParams",
			      "type", "public-key", "alg", -7, "authenticatorSelection", "userVerification", "required",
			      "residentKey", "preferred", "attestation", "none", "timeout", (json_int_t)PK_REG_MS,
			      "excludeCredentials", cred_list(p, reviewer));
	if (!o || b64_json(o, "challenge", p->reg[k].challenge, 32) != 0 ||
	    b64_json(json_object_get(o, "user"), "id", uid, 16) != 0) {
		json_decref(o);
		return as_fail(err, AS_ENOMEM, "out of memory"), NULL;
	}
	return json_pack("{s:b,s:s,s:o}", "ok", 1, "origin", p->origin, "publicKey", o);
}

struct pk_enrol {
	struct pk_cred c;
};

static void enrolled(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct pk_enrol *e = o->own;
	o->own = NULL;
	if (!pos) {
		reply_to(s, o->conn, o->web, ctl_error(PS_UNAVAILABLE, "the passkey could not be recorded: %s", err));
	} else {
		struct pk_cred *c = cred_find(s->pk, e->c.id, e->c.idn) ? NULL : cred_add(s->pk);
		if (c)
			*c = e->c;
		slog("info", "passkey enrolled for %s (ledger seq %llu)", e->c.reviewer, (unsigned long long)pos->seq);
		json_t *j = json_pack("{s:b,s:s,s:I}", "ok", 1, "reviewer", e->c.reviewer, "seq", (json_int_t)pos->seq);
		if (j) /* what the reviewer confirms to an auditor who pins passkeys (assent-verify --passkeys) */
			b64_json(j, "credential_id", e->c.id, e->c.idn);
		reply_to(s, o->conn, o->web, answer_ok(j));
	}
	free(e);
}

/* The attestation's client data and authenticator data, checked against the challenge the
 * reviewer was given; c gets the credential. NULL, or why not. */
static int reg_check(struct passkey_state *p, const char *reviewer, const struct pk_assertion *a, struct pk_cred *c,
		     char *err)
{
	static uint8_t ad[WA_AUTHDATA_MAX], cdj[WA_CDJ_MAX];
	size_t adn, cdn;
	size_t k = 0;
	while (k < PK_REG_SLOTS && strcmp(p->reg[k].reviewer, reviewer))
		k++;
	if (k == PK_REG_SLOTS || p->reg[k].until < now_ms())
		return as_fail(err, AS_EINVAL,
			       "no passkey registration of yours is under way (or it took over five "
			       "minutes): start again");
	p->reg[k].reviewer[0] = 0; /* one attempt per challenge */
	p->reg[k].until = 0;
	if (b64url_decode(a->authdata, a->authdatan, ad, sizeof ad, &adn) != 0 ||
	    b64url_decode(a->cdj, a->cdjn, cdj, sizeof cdj, &cdn) != 0)
		return as_fail(err, AS_EINVAL, "authenticator_data and client_data_json must be base64url");
	struct wa_authdata d;
	uint8_t rh[32];
	GUARD(wa_client_data_check(cdj, cdn, "webauthn.create", p->reg[k].challenge, p->origin, err));
	GUARD(wa_authdata_parse(ad, adn, &d, err));
	wa_rpid_hash(p->rp_id, rh);
	if (memcmp(rh, d.rpid_hash, 32) != 0)
		return as_fail(err, AS_EINVAL, "the credential is for another relying party than '%s'", p->rp_id);
	if ((d.flags & (WA_FLAG_UP | WA_FLAG_UV)) != (WA_FLAG_UP | WA_FLAG_UV) || !d.has_cred)
		return as_fail(err, AS_EINVAL,
			       "the authenticator did not verify the user (UP and UV) or sent no credential");
	if (cred_find(p, d.cred_id, d.cred_id_len))
		return as_fail(err, AS_EEXIST, "this credential is enrolled already");
	snprintf(c->reviewer, sizeof c->reviewer, "%s", reviewer);
	memcpy(c->id, d.cred_id, d.cred_id_len);
	c->idn = d.cred_id_len;
	memcpy(c->x, d.x, 32);
	memcpy(c->y, d.y, 32);
	c->count = d.sign_count;
	snprintf(c->rp_id, sizeof c->rp_id, "%s", p->rp_id);
	snprintf(c->origin, sizeof c->origin, "%s", p->origin);
	return 0;
}

void passkey_register(struct signer *s, const struct who *w, const struct pk_assertion *a)
{
	char err[AS_ERRLEN];
	struct pk_enrol *e = calloc(1, sizeof *e);
	if (!e)
		return reply_to(s, w->reply, w->web, ctl_error(PS_INTERNAL, "out of memory"));
	if (reg_check(s->pk, w->reviewer, a, &e->c, err) != 0) {
		free(e);
		slog("warning", "passkey registration by %s refused: %s", w->reviewer, err);
		return reply_to(s, w->reply, w->web, ctl_error(PS_BAD_REQUEST, "passkey refused: %s", err));
	}
	uint8_t pt[65] = {0x04};
	memcpy(pt + 1, e->c.x, 32);
	memcpy(pt + 33, e->c.y, 32);
	struct buf id, pub;
	buf_init(&id, 2 * e->c.idn + 8);
	buf_init(&pub, 96);
	struct cv_arena *ar = &s->arena;
	cv_arena_reset(ar);
	struct cv *m = cv_map(ar, 7);
	size_t i = 0;
	int rc = b64url_encode(e->c.id, e->c.idn, &id) | b64url_encode(pt, sizeof pt, &pub);
	rc = rc || kv_text(ar, m, &i, "kind", "passkey", 7) | kv_text(ar, m, &i, "event", "enrolled", 8) |
		       kv_text(ar, m, &i, "reviewer", w->reviewer, strlen(w->reviewer)) |
		       kv_text(ar, m, &i, "credential_id", (const char *)id.p, id.len) |
		       kv_text(ar, m, &i, "public_key", (const char *)pub.p, pub.len) |
		       kv_text(ar, m, &i, "rp_id", e->c.rp_id, strlen(e->c.rp_id)) |
		       kv_text(ar, m, &i, "origin", e->c.origin, strlen(e->c.origin));
	snprintf(err, sizeof err, "out of memory");
	struct op *o = rc == 0 ? op_add(s, m, enrolled, err) : NULL;
	buf_free(&id);
	buf_free(&pub);
	if (!o) {
		free(e);
		return reply_to(s, w->reply, w->web,
				ctl_error(PS_UNAVAILABLE, "the passkey could not be recorded: %s", err));
	}
	o->own = e;
	o->conn = w->reply;
	o->web = w->web;
}

/* ---- approvals ---- */

static void response_digest(const char *text, char rd[65])
{
	uint8_t h[32];
	mbedtls_sha256_ret((const uint8_t *)(text ? text : ""), text ? strlen(text) : 0, h, 0);
	hex_encode(h, 32, rd);
}

static int challenge_of(struct signer *s, const char *reviewer, const struct pq_item *it, const char *outcome,
			const char *text, uint8_t ch[32], char rd[65], char *err)
{
	const struct req *r = it->data;
	response_digest(text, rd);
	struct wa_terms t = {ledger_origin(s->ledger), it->session_id, r->action, outcome, rd, "request", reviewer,
			     it->deadline_ms};
	return wa_challenge(&t, ch, err);
}

json_t *passkey_approve_options(struct signer *s, const char *reviewer, const struct pq_item *it, const char *outcome,
				const char *text, char *err)
{
	uint8_t ch[32];
	char rd[65];
	if (challenge_of(s, reviewer, it, outcome, text, ch, rd, err) != 0)
		return NULL;
	json_t *creds = cred_list(s->pk, reviewer);
	if (creds && json_array_size(creds) == 0) {
		json_decref(creds);
		return as_fail(err, AS_ENOTFOUND, "you have no passkey enrolled: add one on this page first"), NULL;
	}
	json_t *o = json_pack("{s:s,s:s,s:I,s:o*}", "rpId", s->pk->rp_id, "userVerification", "required", "timeout",
			      (json_int_t)120000, "allowCredentials", creds);
	if (!o || b64_json(o, "challenge", ch, 32) != 0) {
		json_decref(o);
		return as_fail(err, AS_ENOMEM, "out of memory"), NULL;
	}
	return json_pack("{s:b,s:s,s:o}", "ok", 1, "response_digest", rd, "publicKey", o);
}

int passkey_check(struct signer *s, const char *reviewer, const struct pq_item *it, const char *outcome,
		  const char *text, const struct pk_assertion *a, char rd[65], char *err)
{
	static uint8_t id[WA_CRED_ID_MAX], ad[WA_AUTHDATA_MAX], cdj[WA_CDJ_MAX], sig[PK_SIG_MAX];
	size_t idn, adn, cdn, sn;
	if (b64url_decode(a->cred, a->credn, id, sizeof id, &idn) != 0 ||
	    b64url_decode(a->authdata, a->authdatan, ad, sizeof ad, &adn) != 0 ||
	    b64url_decode(a->cdj, a->cdjn, cdj, sizeof cdj, &cdn) != 0 ||
	    b64url_decode(a->sig, a->sign, sig, sizeof sig, &sn) != 0)
		return as_fail(err, AS_EINVAL, "the assertion's fields must be base64url");
	struct pk_cred *c = cred_find(s->pk, id, idn);
	if (!c || c->removed)
		return as_fail(err, AS_EBADSIG, "this passkey is not enrolled%s", c ? " any more" : "");
	if (strcmp(c->reviewer, reviewer) != 0)
		return as_fail(err, AS_EBADSIG, "this passkey is enrolled to another reviewer");
	uint8_t ch[32], rh[32];
	char why[AS_ERRLEN];
	GUARD(challenge_of(s, reviewer, it, outcome, text, ch, rd, err));
	if (wa_client_data_check(cdj, cdn, "webauthn.get", ch, c->origin, why) != 0)
		return as_fail(err, AS_EBADSIG, "the assertion is not for this decision: %s", why);
	struct wa_authdata d;
	GUARD(wa_authdata_parse(ad, adn, &d, err));
	wa_rpid_hash(c->rp_id, rh);
	if (memcmp(rh, d.rpid_hash, 32) != 0 || d.has_cred)
		return as_fail(err, AS_EBADSIG, "the assertion is for another relying party than '%s'", c->rp_id);
	if ((d.flags & (WA_FLAG_UP | WA_FLAG_UV)) != (WA_FLAG_UP | WA_FLAG_UV))
		return as_fail(err, AS_EBADSIG, "the authenticator did not verify the user (UP and UV flags)");
	if ((d.sign_count || c->count) && d.sign_count <= c->count)
		return as_fail(err, AS_EBADSIG,
			       "the sign count did not move on (%u after %u): a replayed or cloned passkey",
			       d.sign_count, c->count);
	GUARD(wa_assertion_verify(c->x, c->y, ad, adn, cdj, cdn, sig, sn, err));
	c->count = d.sign_count;
	return 0;
}

int passkey_put(struct cv_arena *ar, struct cv *m, size_t *i, const struct pk_assertion *a, const char *rd)
{
	struct cv *pk = kv(ar, m, i, "passkey");
	if (kv_text(ar, m, i, "response_digest", rd, 64) != 0 || !pk || slot_map(ar, pk, 4) != 0)
		return AS_ENOMEM;
	size_t j = 0;
	return kv_text(ar, pk, &j, "credential_id", a->cred, a->credn) |
	       kv_text(ar, pk, &j, "authenticator_data", a->authdata, a->authdatan) |
	       kv_text(ar, pk, &j, "client_data_json", a->cdj, a->cdjn) |
	       kv_text(ar, pk, &j, "signature", a->sig, a->sign);
}

/* ---- the reviewer's own passkeys: listed, and removed (a lost or replaced authenticator) ---- */

json_t *passkey_list(struct signer *s, const char *reviewer)
{
	const struct passkey_state *p = s->pk;
	json_t *a = json_array();
	for (size_t i = 0; a && i < p->n; i++) {
		const struct pk_cred *c = &p->c[i];
		if (c->removed || strcmp(c->reviewer, reviewer))
			continue;
		json_t *d = json_pack("{s:s,s:s,s:I}", "rp_id", c->rp_id, "origin", c->origin, "sign_count",
				      (json_int_t)c->count);
		if (!d || b64_json(d, "credential_id", c->id, c->idn) != 0 || json_array_append_new(a, d) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a ? json_pack("{s:b,s:o}", "ok", 1, "passkeys", a) : NULL;
}

static void removed(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct pk_enrol *e = o->own;
	o->own = NULL;
	struct pk_cred *c = cred_find(s->pk, e->c.id, e->c.idn);
	if (!pos) {
		reply_to(s, o->conn, o->web, ctl_error(PS_UNAVAILABLE, "the removal could not be recorded: %s", err));
	} else {
		if (c)
			c->removed = 1;
		slog("info", "passkey of %s removed (ledger seq %llu)", e->c.reviewer, (unsigned long long)pos->seq);
		reply_to(s, o->conn, o->web,
			 answer_ok(json_pack("{s:b,s:s,s:I}", "ok", 1, "reviewer", e->c.reviewer, "seq",
					     (json_int_t)pos->seq)));
	}
	free(e);
}

void passkey_remove(struct signer *s, const struct who *w, const char *cred, size_t credn)
{
	struct pk_enrol *e = calloc(1, sizeof *e);
	char err[AS_ERRLEN] = "out of memory";
	if (!e)
		return reply_to(s, w->reply, w->web, ctl_error(PS_INTERNAL, "out of memory"));
	const struct pk_cred *c = NULL;
	if (b64url_decode(cred, credn, e->c.id, sizeof e->c.id, &e->c.idn) == 0)
		c = cred_find(s->pk, e->c.id, e->c.idn);
	if (!c || c->removed || strcmp(c->reviewer, w->reviewer)) { /* another's is not yours to remove */
		free(e);
		return reply_to(s, w->reply, w->web,
				ctl_error(PS_NOT_FOUND, "no passkey of yours has this credential id"));
	}
	snprintf(e->c.reviewer, sizeof e->c.reviewer, "%s", w->reviewer);
	struct cv_arena *ar = &s->arena;
	cv_arena_reset(ar);
	struct cv *m = cv_map(ar, 4);
	size_t i = 0;
	int rc = kv_text(ar, m, &i, "kind", "passkey", 7) | kv_text(ar, m, &i, "event", "removed", 7) |
		 kv_text(ar, m, &i, "reviewer", w->reviewer, strlen(w->reviewer)) |
		 kv_text(ar, m, &i, "credential_id", cred, credn);
	struct op *o = rc == 0 ? op_add(s, m, removed, err) : NULL;
	if (!o) {
		free(e);
		return reply_to(s, w->reply, w->web,
				ctl_error(PS_UNAVAILABLE, "the removal could not be recorded: %s", err));
	}
	o->own = e;
	o->conn = w->reply;
	o->web = w->web;
}
