/* What a request is recorded as (its ledger entry) and shown as (a reviewer's view):
 * the same facts in both, built from the action, the connection and the policy's terms. */
#include "gateway/signer/state.h"

#include <jansson.h>
#include <string.h>

/* The entry's requester: who asked, as measured (uid, agent key, anonymous) and the
 * client it declared, and the uid or registered agent measured besides. */
static void requester_put(struct cv_arena *a, struct cv *rq, const struct conn *c, const struct req *r,
			  const char *uid_agent)
{
	rq->t = CV_MAP;
	rq->n = 2;
	rq->items = cv_alloc(a, 6);
	if (!c->http) { /* measured: SO_PEERCRED */
		cv_set_text(a, &rq->items[0], "uid", 3);
		cv_set_uint(&rq->items[1], (uint64_t)c->uid);
	} else if (c->agent[0]) { /* authenticated: its API key */
		cv_set_text(a, &rq->items[0], "agent", 5);
		cv_set_text(a, &rq->items[1], c->agent, strlen(c->agent));
	} else {
		cv_set_text(a, &rq->items[0], "anonymous", 9);
		rq->items[1].t = CV_TRUE;
	}
	cv_set_text(a, &rq->items[2], "client", 6);
	cv_set_text(a, &rq->items[3], r->client, strlen(r->client));
	if (c->http && r->uid != (uid_t)-1) { /* measured: the owner of its loopback connection */
		cv_set_text(a, &rq->items[4], "uid", 3);
		cv_set_uint(&rq->items[5], (uint64_t)r->uid);
		rq->n = 3;
	} else if (uid_agent) {
		cv_set_text(a, &rq->items[4], "agent", 5);
		cv_set_text(a, &rq->items[5], uid_agent, strlen(uid_agent));
		rq->n = 3;
	}
}

/* The request entry, in the action's own arena: the action's fields (shared, not
 * copied), who asked (measured uid, declared client), digest, deadline, terms. */
struct cv *request_entry(struct cv_arena *a, const struct cv *action, const struct conn *c,
				const struct req *r, const struct pq_item *it, const char *uid_agent)
{
	struct cv *m = cv_map(a, action->n + 6);
	if (!m)
		return NULL;
	size_t i = 0;
	for (size_t k = 0; k < action->n; k++) {
		m->items[2 * i] = action->items[2 * k];
		m->items[2 * i++ + 1] = action->items[2 * k + 1];
	}
	cv_set_text(a, kv(a, m, &i, "kind"), "request", 7);
	cv_set_text(a, kv(a, m, &i, "session_id"), it->session_id, strlen(it->session_id));
	requester_put(a, kv(a, m, &i, "requester"), c, r, uid_agent);
	cv_set_text(a, kv(a, m, &i, "action"), r->action, strlen(r->action));
	cv_set_uint(kv(a, m, &i, "deadline"), it->deadline_ms);
	if (r->has_pd)
		put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	m->n = i;
	return m;
}

/* What a reviewer is shown besides the action: the same facts as the entry. */
void request_view(struct req *r, const struct conn *c, const struct pq_item *it, const char *uid_agent)
{
	json_object_set_new(r->view, "session_id", json_string(it->session_id));
	json_t *who = !c->http      ? json_pack("{s:I,s:s}", "uid", (json_int_t)c->uid, "client", r->client)
		      : c->agent[0] ? json_pack("{s:s,s:s}", "agent", c->agent, "client", r->client)
				    : json_pack("{s:b,s:s}", "anonymous", 1, "client", r->client);
	if (c->http && r->uid != (uid_t)-1)
		json_object_set_new(who, "uid", json_integer((json_int_t)r->uid));
	else if (uid_agent) { /* known by its measured uid, not by a key */
		json_object_set_new(who, "agent", json_string(uid_agent));
		json_object_set_new(who, "agent_by", json_string("uid"));
	}
	json_object_set_new(r->view, "requester", who);
	json_object_set_new(r->view, "created", json_integer((json_int_t)(it->created_ms / 1000)));
	json_object_set_new(r->view, "deadline", json_integer((json_int_t)(it->deadline_ms / 1000)));
	json_object_set_new(r->view, "action", json_string(r->action));
	if (r->has_pd) {
		json_object_set_new(r->view, "policy", json_pack("{s:I,s:s}", "rule", (json_int_t)r->pd.line, "digest",
								 r->pol_digest));
		if (r->pd.nreviewers) {
			json_t *rv = json_array();
			for (size_t k = 0; k < r->pd.nreviewers; k++)
				json_array_append_new(rv, json_string(r->pd.reviewers[k]));
			json_object_set_new(json_object_get(r->view, "policy"), "reviewers", rv);
		}
	}
}
