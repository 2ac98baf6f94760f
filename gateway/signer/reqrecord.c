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
			 const struct pq_item *it, const char *uid_agent)
{
	struct cv *m = cv_map(a, action->n + 9);
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
	json_object_set_new(r->view, "deadline", json_integer((json_int_t)(it->deadline_ms / 1000)));
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
	}
}
