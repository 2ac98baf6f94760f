/* Passkey decisions, checked offline as `assent-verify ledger` walks the entries in order
 * (issue 31). The ledger itself teaches the verifier every credential: a `passkey` entry
 * enrols one (its reviewer, id, public key, relying party id and origin) or removes it. A
 * request whose terms say `assurance: passkey` is approved only by decision (or quorum
 * approval) entries that carry an assertion: its credential enrolled to the reviewer the
 * entry names and not removed, its client data a webauthn.get over the challenge rebuilt
 * from the entries (common/webauthn.h: the ledger's origin, the request, its action digest,
 * the outcome, the response's digest, the scope, the reviewer, the request's deadline), its
 * authenticator data for the enrolled relying party with user presence and verification,
 * a sign count that moved forward, and a signature by the credential. Anything else names
 * the entry and the request, in one line. Field formats: docs/verification.md. */
#include "verify/passkeys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/webauthn.h"

#define PK_CREDS_MAX 4096    /* credentials one ledger may enrol */
#define PK_PENDING_MAX 65536 /* passkey requests open at once */
#define PK_REVIEWER_MAX 128

struct cred {
	uint8_t id[WA_CRED_ID_MAX];
	size_t idlen;
	char reviewer[PK_REVIEWER_MAX + 1];
	char rp_id[WA_ORIGIN_MAX + 1], origin[WA_ORIGIN_MAX + 1];
	uint8_t x[32], y[32];
	uint32_t count;
	int removed;
	uint64_t enrolled_at; /* the entry that enrolled it */
	int unpinned;	      /* pins were given and this credential is not among them */
};

struct pin {
	char reviewer[PK_REVIEWER_MAX + 1];
	uint8_t id[WA_CRED_ID_MAX];
	size_t idlen;
};

struct pending { /* a request whose terms require passkeys, until it is decided */
	char sid[80];
	char action[80];
	uint64_t deadline;
	char approvers[8][PK_REVIEWER_MAX + 1]; /* quorum approvals so far, by distinct people */
	size_t napprovers;
};

struct av_passkeys {
	struct cred *creds;
	size_t ncreds;
	struct pin *pins; /* the credentials an auditor confirmed out of band; none: every enrolment counts */
	size_t npins;
	int pinned;
	struct pending *open;
	size_t nopen, capopen;
};

struct av_passkeys *av_passkeys_new(void)
{
	return calloc(1, sizeof(struct av_passkeys));
}

void av_passkeys_free(struct av_passkeys *p)
{
	if (!p)
		return;
	free(p->creds);
	free(p->open);
	free(p->pins);
	free(p);
}

static int text_of(const struct cv *m, const char *k, char *out, size_t n)
{
	const struct cv *v = cv_get(m, k);
	if (!v || v->t != CV_TEXT || v->n >= n || memchr(v->s, 0, v->n))
		return -1;
	memcpy(out, v->s, v->n);
	out[v->n] = 0;
	return 0;
}

static int b64_of(const struct cv *m, const char *k, uint8_t *out, size_t max, size_t *n)
{
	const struct cv *v = cv_get(m, k);
	return v && v->t == CV_TEXT && b64url_decode((const char *)v->s, v->n, out, max, n) == 0 ? 0 : -1;
}

static struct cred *cred_find(struct av_passkeys *p, const uint8_t *id, size_t n)
{
	for (size_t i = 0; i < p->ncreds; i++)
		if (p->creds[i].idlen == n && !memcmp(p->creds[i].id, id, n))
			return &p->creds[i];
	return NULL;
}

int av_passkeys_pin(struct av_passkeys *p, const char *reviewer, const char *cred_b64url, char *err)
{
	struct pin x = {0};
	if (strlen(reviewer) > PK_REVIEWER_MAX || !*reviewer)
		return as_fail(err, AS_EINVAL, "a pinned passkey's reviewer name is empty or too long");
	if (b64url_decode(cred_b64url, strlen(cred_b64url), x.id, sizeof x.id, &x.idlen) != 0 || !x.idlen)
		return as_fail(err, AS_EINVAL, "pinned passkey of %s: '%.40s' is not a base64url credential id",
			       reviewer, cred_b64url);
	snprintf(x.reviewer, sizeof x.reviewer, "%s", reviewer);
	struct pin *n = realloc(p->pins, (p->npins + 1) * sizeof *n);
	if (!n)
		return as_fail(err, AS_ENOMEM, "out of memory");
	p->pins = n;
	p->pins[p->npins++] = x;
	p->pinned = 1;
	return 0;
}

int av_passkeys_pin_file(struct av_passkeys *p, const char *path, char *err)
{
	struct buf b;
	char e2[AS_ERRLEN];
	if (file_read(path, 1u << 20, &b, e2) != 0)
		return as_fail(err, AS_EINVAL, "--passkeys %s: %s", path, e2);
	int rc = 0;
	size_t line = 0;
	GUARD(buf_putc(&b, 0));
	for (char *save = NULL, *l = strtok_r((char *)b.p, "\n", &save); l && rc == 0;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		char who[PK_REVIEWER_MAX + 2], id[1400], extra[2];
		int n = sscanf(l, " %129s %1399s %1s", who, id, extra);
		if (n <= 0 || who[0] == '#')
			continue;
		if (n != 2)
			rc = as_fail(err, AS_EINVAL, "--passkeys %s: line %zu: want REVIEWER CREDENTIAL_ID (base64url)",
				     path, line);
		else if (av_passkeys_pin(p, who, id, e2) != 0)
			rc = as_fail(err, AS_EINVAL, "--passkeys %s: line %zu: %s", path, line, e2);
	}
	if (rc == 0 && !p->pinned)
		rc = as_fail(err, AS_EINVAL, "--passkeys %s pins no passkey", path);
	buf_free(&b);
	return rc;
}

static int pin_listed(const struct av_passkeys *p, const struct cred *c)
{
	for (size_t i = 0; i < p->npins; i++)
		if (p->pins[i].idlen == c->idlen && !memcmp(p->pins[i].id, c->id, c->idlen) &&
		    !strcmp(p->pins[i].reviewer, c->reviewer))
			return 1;
	return 0;
}

static struct pending *pending_find(struct av_passkeys *p, const char *sid)
{
	for (size_t i = 0; i < p->nopen; i++)
		if (!strcmp(p->open[i].sid, sid))
			return &p->open[i];
	return NULL;
}

static void pending_drop(struct av_passkeys *p, struct pending *q)
{
	*q = p->open[--p->nopen];
}

/* A `passkey` entry: {event: enrolled|removed, reviewer, credential_id, and when enrolled
 * public_key (base64url of the 65-byte uncompressed point), rp_id, origin}. */
static int enrolment(struct av_passkeys *p, uint64_t seq, const struct cv *e, char *err)
{
	char ev[16];
	uint8_t id[WA_CRED_ID_MAX], pt[65];
	size_t idn = 0, ptn = 0;
	if (text_of(e, "event", ev, sizeof ev) != 0 || b64_of(e, "credential_id", id, sizeof id, &idn) != 0 || !idn)
		return as_fail(err, AS_ECORRUPT, "entry %llu: a passkey entry without its event or credential_id",
			       (unsigned long long)seq);
	struct cred *c = cred_find(p, id, idn);
	if (!strcmp(ev, "removed")) {
		if (!c || c->removed)
			return as_fail(err, AS_ECORRUPT, "entry %llu: removes a passkey that is not enrolled",
				       (unsigned long long)seq);
		c->removed = 1;
		return 0;
	}
	if (strcmp(ev, "enrolled") != 0)
		return as_fail(err, AS_ECORRUPT, "entry %llu: a passkey event '%s' (enrolled or removed)",
			       (unsigned long long)seq, ev);
	if (c)
		return as_fail(err, AS_ECORRUPT, "entry %llu: enrols a passkey credential already enrolled",
			       (unsigned long long)seq);
	if (p->ncreds == PK_CREDS_MAX)
		return as_fail(err, AS_ETOOBIG, "entry %llu: more than %d passkeys enrolled", (unsigned long long)seq,
			       PK_CREDS_MAX);
	if (!p->creds && !(p->creds = calloc(PK_CREDS_MAX, sizeof *p->creds)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	c = &p->creds[p->ncreds];
	memset(c, 0, sizeof *c);
	memcpy(c->id, id, idn);
	c->idlen = idn;
	if (text_of(e, "reviewer", c->reviewer, sizeof c->reviewer) != 0 ||
	    text_of(e, "rp_id", c->rp_id, sizeof c->rp_id) != 0 ||
	    text_of(e, "origin", c->origin, sizeof c->origin) != 0 ||
	    b64_of(e, "public_key", pt, sizeof pt, &ptn) != 0 || ptn != 65 || pt[0] != 0x04)
		return as_fail(
		    err, AS_ECORRUPT,
		    "entry %llu: a passkey enrolment needs reviewer, rp_id, origin and public_key (65 bytes)",
		    (unsigned long long)seq);
	memcpy(c->x, pt + 1, 32);
	memcpy(c->y, pt + 33, 32);
	c->enrolled_at = seq;
	c->unpinned = p->pinned && !pin_listed(p, c);
	p->ncreds++;
	return 0;
}

/* A request entry whose terms say assurance: passkey opens a pending request. */
static int request(struct av_passkeys *p, uint64_t seq, const struct cv *e, char *err)
{
	const struct cv *terms = cv_get(e, "terms");
	if (!terms || !cv_text_eq(cv_get(terms, "assurance"), "passkey"))
		return 0;
	if (p->nopen == p->capopen) {
		size_t cap = p->capopen ? 2 * p->capopen : 64;
		struct pending *n = cap <= PK_PENDING_MAX ? realloc(p->open, cap * sizeof *n) : NULL;
		if (!n)
			return as_fail(err, AS_ETOOBIG, "entry %llu: more than %d passkey requests open at once",
				       (unsigned long long)seq, PK_PENDING_MAX);
		p->open = n;
		p->capopen = cap;
	}
	struct pending *q = &p->open[p->nopen];
	memset(q, 0, sizeof *q);
	const struct cv *dl = cv_get(e, "deadline");
	if (text_of(e, "session_id", q->sid, sizeof q->sid) != 0 || text_of(e, "action", q->action, sizeof q->action) ||
	    !dl || dl->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT, "entry %llu: a passkey request without session_id, action or deadline",
			       (unsigned long long)seq);
	q->deadline = dl->u;
	p->nopen++;
	return 0;
}

/* The reviewer's name, as decision and approval entries record it ({name, channel, ...}). */
static int reviewer_of(const struct cv *e, char *out, size_t n)
{
	const struct cv *r = cv_get(e, "reviewer");
	return r && r->t == CV_MAP ? text_of(r, "name", out, n) : text_of(e, "reviewer", out, n);
}

struct said { /* what a decision or approval entry says, for its assertion */
	uint64_t seq;
	const char *sid, *outcome, *reviewer, *origin;
	const struct pending *q;
};

static int assertion(struct av_passkeys *p, const struct said *w, const struct cv *e, char *err)
{
	const struct cv *pk = cv_get(e, "passkey");
	char rd[80];
	uint8_t id[WA_CRED_ID_MAX], ad[WA_AUTHDATA_MAX], cdj[WA_CDJ_MAX], sig[80], ch[32];
	size_t idn = 0, adn = 0, cdn = 0, sn = 0;
	unsigned long long seq = (unsigned long long)w->seq;
	if (!pk || pk->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT,
			       "entry %llu: request %s was %s by %s without a passkey assertion (its "
			       "rule requires one)",
			       seq, w->sid, w->outcome, w->reviewer);
	if (b64_of(pk, "credential_id", id, sizeof id, &idn) != 0 ||
	    b64_of(pk, "authenticator_data", ad, sizeof ad, &adn) != 0 ||
	    b64_of(pk, "client_data_json", cdj, sizeof cdj, &cdn) != 0 ||
	    b64_of(pk, "signature", sig, sizeof sig, &sn) || text_of(e, "response_digest", rd, sizeof rd) != 0)
		return as_fail(err, AS_ECORRUPT,
			       "entry %llu: request %s: a passkey assertion with a field missing or not "
			       "base64url, or no response_digest",
			       seq, w->sid);
	struct cred *c = cred_find(p, id, idn);
	if (!c || c->removed)
		return as_fail(err, AS_ECORRUPT, "entry %llu: request %s: the passkey is not enrolled (or was removed)",
			       seq, w->sid);
	if (strcmp(c->reviewer, w->reviewer) != 0)
		return as_fail(err, AS_ECORRUPT, "entry %llu: request %s: decided by %s with a passkey enrolled to %s",
			       seq, w->sid, w->reviewer, c->reviewer);
	if (c->unpinned) /* root on the gateway host can enrol a credential of its own in anyone's name */
		return as_fail(err, AS_ECORRUPT,
			       "entry %llu: request %s: approved by %s with a passkey enrolled at entry %llu that is "
			       "not among the passkeys you pinned (--passkeys)",
			       seq, w->sid, w->reviewer, (unsigned long long)c->enrolled_at);
	struct wa_terms t = {w->origin, w->sid, w->q->action, w->outcome, rd, "request", w->reviewer, w->q->deadline};
	char e2[AS_ERRLEN];
	struct wa_authdata a;
	uint8_t rph[32];
	if (wa_challenge(&t, ch, e2) != 0 || wa_client_data_check(cdj, cdn, "webauthn.get", ch, c->origin, e2) != 0 ||
	    wa_authdata_parse(ad, adn, &a, e2) != 0 || wa_assertion_verify(c->x, c->y, ad, adn, cdj, cdn, sig, sn, e2))
		return as_fail(err, AS_ECORRUPT, "entry %llu: request %s: passkey assertion refused: %s", seq, w->sid,
			       e2);
	wa_rpid_hash(c->rp_id, rph);
	if (memcmp(rph, a.rpid_hash, 32) != 0 || a.has_cred)
		return as_fail(err, AS_ECORRUPT, "entry %llu: request %s: the assertion is for another relying party",
			       seq, w->sid);
	if ((a.flags & (WA_FLAG_UP | WA_FLAG_UV)) != (WA_FLAG_UP | WA_FLAG_UV))
		return as_fail(err, AS_ECORRUPT,
			       "entry %llu: request %s: the assertion lacks user presence or "
			       "verification",
			       seq, w->sid);
	if ((a.sign_count || c->count) && a.sign_count <= c->count)
		return as_fail(err, AS_ECORRUPT,
			       "entry %llu: request %s: the sign count did not move forward (%u after "
			       "%u): a replayed assertion or a cloned authenticator",
			       seq, w->sid, a.sign_count, c->count);
	c->count = a.sign_count;
	return 0;
}

static int decided(struct av_passkeys *p, const char *origin, uint64_t seq, const struct cv *e, int approval, char *err)
{
	char sid[80], outcome[24] = "approved", who[PK_REVIEWER_MAX + 1] = "";
	if (text_of(e, "session_id", sid, sizeof sid) != 0)
		return 0; /* entry_check already refused such an entry */
	struct pending *q = pending_find(p, sid);
	if (!q)
		return 0;
	if (!approval)
		text_of(e, "outcome", outcome, sizeof outcome);
	int person = reviewer_of(e, who, sizeof who) == 0;
	/* A passkey approves; a refusal may go without one (it lets nothing run), and so may the
	 * policy's own end of a request (a deadline that denies). A refusal that carries an
	 * assertion has it checked all the same. */
	int refusal = !strcmp(outcome, "rejected") || !strcmp(outcome, "denied");
	if (!approval && (!person || (refusal && !cv_get(e, "passkey")))) {
		pending_drop(p, q);
		return 0;
	}
	if (!origin || !*origin)
		return as_fail(err, AS_ECORRUPT,
			       "entry %llu: request %s needs its passkey checked, and the ledger has no "
			       "signed checkpoint to name its origin",
			       (unsigned long long)seq, sid);
	for (size_t i = 0; i < q->napprovers; i++)
		if (!strcmp(q->approvers[i], who))
			return as_fail(err, AS_ECORRUPT,
				       "entry %llu: request %s: %s approved it twice (a quorum is "
				       "distinct people)",
				       (unsigned long long)seq, sid, who);
	struct said w = {seq, sid, outcome, who, origin, q};
	GUARD(assertion(p, &w, e, err));
	if (approval && q->napprovers < sizeof q->approvers / sizeof q->approvers[0])
		snprintf(q->approvers[q->napprovers++], sizeof q->approvers[0], "%s", who);
	if (!approval)
		pending_drop(p, q);
	return 0;
}

int av_passkeys_entry(struct av_passkeys *p, const char *origin, uint64_t seq, const struct cv *e, char *err)
{
	const struct cv *k = cv_get(e, "kind");
	if (cv_text_eq(k, "passkey"))
		return enrolment(p, seq, e, err);
	if (cv_text_eq(k, "request"))
		return request(p, seq, e, err);
	if (cv_text_eq(k, "decision"))
		return decided(p, origin, seq, e, 0, err);
	if (cv_text_eq(k, "approval"))
		return decided(p, origin, seq, e, 1, err);
	if (cv_text_eq(k, "timeout") || cv_text_eq(k, "cancelled") || cv_text_eq(k, "abandoned")) {
		char sid[80];
		struct pending *q = text_of(e, "session_id", sid, sizeof sid) == 0 ? pending_find(p, sid) : NULL;
		if (q)
			pending_drop(p, q);
	}
	return 0;
}
