/* What a request is recorded as (its ledger entry) and shown as (a reviewer's view):
 * the same facts in both, built from the action, the connection and the policy's terms. */
#include "gateway/signer/state.h"

#include <string.h>

/* The entry's requester: who asked, as measured (uid, agent key, anonymous) and the
 * client it declared, and the uid or registered agent measured besides. 0, or AS_ENOMEM. */
static int requester_put(struct cv_arena *a, struct cv *rq, const struct conn *c, const struct req *r,
			 const char *uid_agent)
{
	GUARD(slot_map(a, rq, 3));
	size_t i = 0;
	int rc;
	if (!c->http) { /* measured: SO_PEERCRED */
		rc = kv_uint(a, rq, &i, "uid", (uint64_t)c->uid);
	} else if (c->agent[0]) { /* authenticated: its API key */
		rc = kv_text(a, rq, &i, "agent", c->agent, strlen(c->agent));
	} else {
		struct cv *t = kv(a, rq, &i, "anonymous");
		rc = t ? 0 : AS_ENOMEM;
		if (t)
			t->t = CV_TRUE;
	}
	rc |= kv_text(a, rq, &i, "client", r->client, strlen(r->client));
	if (c->http && r->uid != (uid_t)-1) /* measured: the owner of its loopback connection */
		rc |= kv_uint(a, rq, &i, "uid", (uint64_t)r->uid);
	else if (uid_agent)
		rc |= kv_text(a, rq, &i, "agent", uid_agent, strlen(uid_agent));
	rq->n = i;
	return rc ? AS_ENOMEM : 0;
}

/* The request entry, in the action's own arena: the action's fields (shared, not
 * copied), who asked (measured uid, declared client), digest, deadline, terms. */
struct cv *request_entry(struct cv_arena *a, const struct cv *action, const struct conn *c, const struct req *r,
			 const struct pq_item *it, const char *uid_agent, const char *replica)
{
	struct cv *m = cv_map(a, action->n + 10);
	if (!m)
		return NULL;
	size_t i = 0;
	for (size_t k = 0; k < action->n; k++) {
		m->items[2 * i] = action->items[2 * k];
		m->items[2 * i++ + 1] = action->items[2 * k + 1];
	}
	int rc = kv_text(a, m, &i, "kind", "request", 7) |
		 kv_text(a, m, &i, "session_id", it->session_id, strlen(it->session_id)) |
		 requester_put(a, kv(a, m, &i, "requester"), c, r, uid_agent) |
		 kv_text(a, m, &i, "action", r->action, strlen(r->action)) |
		 kv_uint(a, m, &i, "deadline", it->deadline_ms) |
		 /* what a restart needs (restore.c): how the caller collects, whose it is, the terms */
		 kv_text(a, m, &i, "collect", r->collect, strlen(r->collect)) |
		 kv_text(a, m, &i, "owner", r->owner, strlen(r->owner));
	if (r->has_pd)
		rc |= put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	if (r->has_pd && r->pd.action == POL_ASK) /* the terms a person decides under */
		rc |= put_terms(a, kv(a, m, &i, "terms"), &r->pd);
	if (replica) /* cluster mode: whose waiting caller it is (restore.c) */
		rc |= kv_text(a, m, &i, "replica", replica, strlen(replica));
	m->n = i;
	return rc ? NULL : m;
}

/* What a reviewer is shown besides the action: the same facts as the entry. */
void request_view(struct req *r, const struct conn *c, const struct pq_item *it, const char *uid_agent)
{
	json_object_set_new(r->view, "session_id", json_string(it->session_id));
	json_t *who = !c->http	    ? json_pack("{s:I,s:s}", "uid", (json_int_t)c->uid, "client", r->client)
		      : c->agent[0] ? json_pack("{s:s,s:s}", "agent", c->agent, "client", r->client)
				    : json_pack("{s:b,s:s}", "anonymous", 1, "client", r->client);
	if (c->http && r->uid != (uid_t)-1)
		json_object_set_new(who, "uid", json_integer((json_int_t)r->uid));
	else if (uid_agent) { /* known by its measured uid, not by a key */
		json_object_set_new(who, "agent", json_string(uid_agent));
		json_object_set_new(who, "agent_by", json_string("uid"));
	}
	json_object_set_new(r->view, "requester", who);
	view_note_masks(r->view); /* what the view hides, said at its top */
	json_object_set_new(r->view, "created", json_integer((json_int_t)(it->created_ms / 1000)));
	json_object_set_new(r->view, "deadline", json_integer((json_int_t)(shown_deadline_ms(it) / 1000)));
	json_object_set_new(r->view, "action", json_string(r->action));
	if (r->has_pd) {
		json_object_set_new(r->view, "policy",
				    json_pack("{s:I,s:s}", "rule", (json_int_t)r->pd.line, "digest", r->pol_digest));
		if (r->pd.nreviewers) {
			json_t *rv = json_array();
			for (size_t k = 0; k < r->pd.nreviewers; k++)
				json_array_append_new(rv, json_string(r->pd.reviewers[k]));
			json_object_set_new(json_object_get(r->view, "policy"), "reviewers", rv);
		}
		if (r->pd.passkey) /* approved only with a passkey, on the page (webpasskey.c) */
			json_object_set_new(r->view, "assurance", json_string("passkey"));
	}
}

/* ---- the policy's terms of an ask: written into the request entry, and read back by a restart ---- */

static const char *const channel_names[] = {"terminal", "web", "client"}; /* POL_CH_* by bit */

static int kv_bool(struct cv_arena *a, struct cv *m, size_t *i, const char *k, int v)
{
	struct cv *slot = kv(a, m, i, k);
	if (!slot)
		return AS_ENOMEM;
	slot->t = v ? CV_TRUE : CV_FALSE;
	return 0;
}

/* The terms of an ask, as the request entry records them: {reviewers, quorum,
 * channels, same_user_ok, timeout_denies, token_ttl, token_audience?, assurance?}. A restart
 * decides under these, never under a policy loaded since. 0, or AS_ENOMEM. */
int put_terms(struct cv_arena *a, struct cv *slot, const struct pol_decision *d)
{
	size_t nch = 0;
	for (size_t b = 0; b < sizeof channel_names / sizeof *channel_names; b++)
		nch += (d->channels >> b) & 1u;
	struct cv *m = cv_map(a, 8), *rv = cv_array(a, d->nreviewers), *ch = cv_array(a, nch);
	if (!slot || !m || !rv || !ch)
		return AS_ENOMEM;
	int rc = 0;
	for (size_t k = 0; k < d->nreviewers; k++)
		rc |= slot_text(a, &rv->items[k], d->reviewers[k], strlen(d->reviewers[k]));
	for (size_t b = 0, k = 0; b < sizeof channel_names / sizeof *channel_names; b++)
		if ((d->channels >> b) & 1u)
			rc |= slot_text(a, &ch->items[k++], channel_names[b], strlen(channel_names[b]));
	size_t i = 0;
	struct cv *x = kv(a, m, &i, "reviewers");
	if (x)
		*x = *rv;
	x = kv(a, m, &i, "channels");
	if (x)
		*x = *ch;
	rc |= (x ? 0 : AS_ENOMEM) | kv_uint(a, m, &i, "quorum", d->quorum) |
	      kv_bool(a, m, &i, "same_user_ok", d->same_user_ok) |
	      kv_bool(a, m, &i, "timeout_denies", d->timeout_denies) | kv_uint(a, m, &i, "token_ttl", d->token_ttl_s);
	if (d->token_audience[0])
		rc |= kv_text(a, m, &i, "token_audience", d->token_audience, strlen(d->token_audience));
	if (d->passkey) /* what assent-verify reads: the approvals must carry passkey assertions */
		rc |= kv_text(a, m, &i, "assurance", "passkey", 7);
	m->n = i;
	*slot = *m;
	return rc ? AS_ENOMEM : 0;
}

static int pol_action_of(const struct cv *v, enum pol_action *out)
{
	for (int k = POL_ALLOW; k <= POL_ASK; k++)
		if (v && v->t == CV_TEXT && cv_text_eq(v, pol_action_name((enum pol_action)k))) {
			*out = (enum pol_action)k;
			return 0;
		}
	return -1;
}

/* The policy's citation and terms, back into the decision they came from. NULL, or why not. */
const char *terms_read(const struct cv *pol, const struct cv *t, struct req *r)
{
	struct pol_decision *d = &r->pd;
	uint64_t u;
	memset(d, 0, sizeof *d);
	const struct cv *sh = cv_get(pol, "shadow"), *rv = cv_get(t, "reviewers"), *ch = cv_get(t, "channels"),
			*od = cv_get(pol, "on_declared_client");
	if (!t || t->t != CV_MAP)
		return "its policy terms are not on the ledger (an entry from before assent kept them)";
	if (pol_action_of(cv_get(pol, "decision"), &d->action) != 0 || d->action != POL_ASK ||
	    uint_of(cv_get(pol, "rule"), UINT32_MAX, &u) != 0 ||
	    text_copy(cv_get(pol, "digest"), r->pol_digest, sizeof r->pol_digest) != 0)
		return "its policy citation cannot be read";
	d->line = (unsigned)u;
	d->on_declared = od && od->t == CV_TRUE;
	if (sh) {
		if (pol_action_of(cv_get(sh, "would"), &d->shadow_action) != 0 ||
		    uint_of(cv_get(sh, "rule"), UINT32_MAX, &u) != 0)
			return "its policy citation cannot be read";
		d->shadowed = 1;
		d->shadow_line = (unsigned)u;
	}
	if (!rv || rv->t != CV_ARRAY || rv->n > POL_LIST_MAX || !ch || ch->t != CV_ARRAY)
		return "its reviewers or channels cannot be read";
	for (size_t k = 0; k < rv->n; k++)
		if (text_copy(&rv->items[k], d->reviewers[d->nreviewers++], sizeof d->reviewers[0]) != 0)
			return "its reviewers cannot be read";
	for (size_t k = 0; k < ch->n; k++) {
		size_t b = 0;
		while (b < sizeof channel_names / sizeof *channel_names && !cv_text_eq(&ch->items[k], channel_names[b]))
			b++;
		if (b == sizeof channel_names / sizeof *channel_names)
			return "it names a channel this assent does not know";
		d->channels |= 1u << b;
	}
	const struct cv *su = cv_get(t, "same_user_ok"), *td = cv_get(t, "timeout_denies"),
			*ta = cv_get(t, "token_audience"), *as = cv_get(t, "assurance");
	if (uint_of(cv_get(t, "quorum"), POL_LIST_MAX, &u) != 0 || u < 1)
		return "its quorum cannot be read";
	d->quorum = (unsigned)u;
	if (uint_of(cv_get(t, "token_ttl"), UINT32_MAX, &u) != 0)
		return "its token lifetime cannot be read";
	d->token_ttl_s = (unsigned)u;
	if (!su || !td || (su->t != CV_TRUE && su->t != CV_FALSE) || (td->t != CV_TRUE && td->t != CV_FALSE) ||
	    (ta && text_copy(ta, d->token_audience, sizeof d->token_audience) != 0))
		return "its terms cannot be read";
	if (as && !cv_text_eq(as, "passkey"))
		return "it names an assurance this assent does not know";
	d->same_user_ok = su->t == CV_TRUE;
	d->timeout_denies = td->t == CV_TRUE;
	d->passkey = as != NULL;
	r->has_pd = 1;
	return NULL;
}
