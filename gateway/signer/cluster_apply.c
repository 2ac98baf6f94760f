/* Cluster mode: what the other replicas appended, applied to this replica's state (docs/cluster.md,
 * "Any replica, any reviewer"). The shared ledger is a replicated log of every transition, and
 * each mirror imports it (checked by ledger/sync.c: signed by this ledger's key). So:
 * - another replica's request waits here too, for this replica's reviewers (restore.c rebuilds
 *   it as a restart would, marked remote; a gated call too, shown as its own replica ledgered
 *   its view, and dispatched by that replica alone, which holds its exact call);
 * - its quorum approvals count here too;
 * - its end (a decision, timeout or cancellation, wherever it was made) takes it out of this
 *   queue; when this replica holds the request, its caller is answered now, with the approval
 *   token the decision entry names, minted again here from the same ticket (same jti, kid,
 *   claims; the keys are the cluster's), and a poll or task keeps its answer here for
 *   get_feedback and tasks/get on every replica;
 * - reviewers' passkeys and their sign counts follow the others' passkey entries.
 * A decision here on another replica's request is this replica's entry like any other; the
 * cluster's claims (end:SID) let only one end per request commit. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/merkle.h"

struct apply {
	struct signer *s;
	uint64_t from, to;
	struct cv_arena a, b; /* the entry; restore_request's own */
	size_t shown, ended;
};

/* The same token the deciding replica minted: its ticket is the decision entry's, its claims
 * this request's; the signature is this replica's (ECDSA: the bytes differ, the token does not). */
static char *token_again(struct signer *s, const struct req *r, const char *sid, const struct cv *e,
			 const struct ledger_pos *pos)
{
	const struct cv *t = cv_get(e, "token"), *rv = cv_get(e, "reviewer");
	struct tok_ticket tk = {0};
	char name[REG_NAME_MAX + 1], chan[32], assurance[32], rule[32], err[AS_ERRLEN] = "";
	char *jwt = NULL;
	if (!t || s->tcfg.mode == TOK_OFF)
		return NULL;
	if (text_copy(cv_get(t, "jti"), tk.jti, sizeof tk.jti) != 0 ||
	    text_copy(cv_get(t, "kid"), tk.kid, sizeof tk.kid) != 0 ||
	    uint_of(cv_get(t, "exp"), UINT64_MAX, &tk.exp) != 0 ||
	    text_copy(cv_get(rv, "name"), name, sizeof name) != 0 ||
	    text_copy(cv_get(rv, "channel"), chan, sizeof chan) != 0 ||
	    text_copy(cv_get(e, "assurance"), assurance, sizeof assurance) != 0) {
		slog("error", "token for %s: the decision entry's token or reviewer cannot be read", sid);
		return NULL;
	}
	struct tok_subject subj[16];
	size_t ns = req_subjects(r, subj);
	struct tok_request tr = {.aud = req_token_aud(r),
				 .session_id = sid,
				 .reviewer_name = name,
				 .reviewer_channel = chan,
				 .subjects = subj,
				 .nsubjects = ns,
				 .assurance = assurance,
				 .ttl = r->has_pd ? r->pd.token_ttl_s : 0};
	if (r->has_pd) {
		snprintf(rule, sizeof rule, "line %u", r->pd.line);
		tr.policy_rule = rule;
		tr.policy_digest = r->pol_digest;
	}
	snprintf(tr.action_sha256, sizeof tr.action_sha256, "%s", r->action + 7);
	uint64_t ttl = tr.ttl ? tr.ttl : TOK_TTL_DEFAULT;
	tk.iat = tk.exp > ttl ? tk.exp - ttl : 0;
	if (tok_issue(s->tk, &tr, &tk, pos->seq, pos->leaf, &jwt, err) != 0) {
		slog("error", "token for %s, decided on another replica: %s", sid, err);
		return NULL;
	}
	return jwt;
}

/* How a request ended, from its final entry: e's strings point into the entry or are static. */
static void ending_of(const struct req *r, const struct cv *e, struct ending *end, char *outcome, size_t on,
		      char *reviewer, size_t rn, char *text, size_t tn)
{
	const struct cv *kind = cv_get(e, "kind");
	*end = (struct ending){.status = "cancelled", .error = "cancelled on another replica"};
	if (text_copy(cv_get(e, "reason"), text, tn) == 0)
		end->error = text;
	if (cv_text_eq(kind, "timeout")) {
		*end = (struct ending){.status = r->has_pd && r->pd.timeout_denies ? "denied" : "timeout",
				       .error = "timeout"};
		return;
	}
	if (!cv_text_eq(kind, "decision") || text_copy(cv_get(e, "outcome"), outcome, on) != 0)
		return;
	if (!strcmp(outcome, "denied") && cv_text_eq(cv_get(e, "assurance"), "policy")) {
		*end = (struct ending){.status = "denied", .error = "timeout"}; /* the policy denies on timeout */
		return;
	}
	*end = (struct ending){.status = outcome, .approved = !strcmp(outcome, "approved"), .decided = 1};
	if (text_copy(cv_get(cv_get(e, "reviewer"), "name"), reviewer, rn) == 0)
		end->reviewer = reviewer;
	/* as the ledger has it: with secret-shaped values replaced (docs/cluster.md) */
	if (text_copy(cv_get(e, "response"), text, tn) == 0)
		end->response = text;
}

static void remote_end(struct apply *x, const char *sid, const struct cv *e, const struct ledger_pos *pos)
{
	struct signer *s = x->s;
	struct pq_item it;
	if (pq_remove(s->q, sid, &it) != 0)
		return; /* not pending here (ended already) */
	struct req *r = it.data;
	char outcome[32] = "", reviewer[REG_NAME_MAX + 1] = "", text[4096] = "";
	struct ending end;
	ending_of(r, e, &end, outcome, sizeof outcome, reviewer, sizeof reviewer, text, sizeof text);
	/* A gated call this replica holds, approved on another: finish() dispatches it here (gate.c), its
	 * dispatch entry claimed once in the cluster. The other replica's reviewer saw the view this
	 * replica ledgered, bound to the exact call by the digest that is dispatched. */
	/* remote too: its caller may collect the answer here (get_feedback, tasks/get) */
	char *jwt = end.approved ? token_again(s, r, sid, e, pos) : NULL;
	end.token = jwt;
	json_t *res = ending_json(sid, &end);
	for (size_t k = 0; end.decided && !strcmp(end.status, "selected") && k < r->noptions; k++)
		if (!strcmp(r->options[k], text)) {
			json_object_set_new(res, "selection", json_integer((json_int_t)(k + 1)));
			break;
		}
	r->seq = pos->seq;
	r->why = !strcmp(end.status, "rejected") ? end.response : NULL;
	request_log(s, &it, r, end.status, end.reviewer, pos->seq);
	r->why = NULL;
	if (!r->remote)
		slog("info", "request %s: %s on another replica (entry %llu); its caller is answered here", sid,
		     end.status, (unsigned long long)pos->seq);
	x->ended++;
	finish(s, &it, &end, res);
	free(jwt);
}

static void remote_approval(struct signer *s, const char *sid, const struct cv *e)
{
	struct pq_item *it = pq_find(s->q, sid);
	char name[REG_NAME_MAX + 1];
	if (!it || text_copy(cv_get(cv_get(e, "reviewer"), "name"), name, sizeof name) != 0)
		return;
	struct req *r = it->data;
	for (size_t k = 0; k < r->napprovers; k++)
		if (!strcmp(r->approvers[k], name))
			return;
	if (r->napprovers == 16)
		return;
	snprintf(r->approvers[r->napprovers++], sizeof r->approvers[0], "%s", name);
	json_t *ap = json_array();
	for (size_t k = 0; k < r->napprovers; k++)
		json_array_append_new(ap, json_string(r->approvers[k]));
	json_object_set_new(r->view, "approvals", ap);
	s->web_bumps++;
}

static void remote_request(struct apply *x, const char *sid, const struct cv *e, const uint8_t *p, size_t n)
{
	struct signer *s = x->s;
	const char *mine = cluster_replica(s);
	const struct cv *pol = cv_get(e, "policy");
	if (!mine || cv_text_eq(cv_get(e, "replica"), mine) || pq_find(s->q, sid))
		return;
	if (pol && !cv_text_eq(cv_get(pol, "decision"), "ask"))
		return; /* decided by the policy at once: it never waited for anyone */
	const char *why = restore_request(s, sid, p, n, NULL, 0, 1, &x->b);
	if (why) {
		if (!cv_text_eq(cv_get(e, "type"), "call"))
			slog("warning", "request %s of another replica is not shown here: %s", sid, why);
		return;
	}
	struct pq_item *it = pq_find(s->q, sid);
	if (it)
		phase_run(s, PH_QUEUED, &(struct phase_ev){.it = it, .r = it->data});
	x->shown++;
}

static void apply_one(struct apply *x, uint64_t seq, const uint8_t *p, size_t n)
{
	struct cv *e;
	char sid[PQ_SID_LEN + 1];
	cv_arena_reset(&x->a);
	if (cbor_decode(p, n, &x->a, &e, NULL) != 0)
		return; /* ledger/sync.c checked it; nothing here to apply */
	passkey_scan(x->s, e);
	const struct cv *kind = cv_get(e, "kind");
	if (!kind || text_copy(cv_get(e, "session_id"), sid, sizeof sid) != 0)
		return;
	struct ledger_pos pos = {.seq = seq};
	if (cv_text_eq(kind, "request")) {
		remote_request(x, sid, e, p, n);
	} else if (cv_text_eq(kind, "approval")) {
		remote_approval(x->s, sid, e);
	} else if (cv_text_eq(kind, "decision") || cv_text_eq(kind, "timeout") || cv_text_eq(kind, "cancelled") ||
		   cv_text_eq(kind, "abandoned")) {
		merkle_leaf_hash(p, n, pos.leaf);
		remote_end(x, sid, e, &pos);
	}
}

static int apply_walk(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err)
{
	(void)ckpts;
	(void)key;
	struct apply *x = arg;
	MDB_cursor *cur;
	uint8_t kb[8];
	be64_put(kb, x->from);
	MDB_val k = {8, kb}, v;
	if (mdb_cursor_open(txn, entries, &cur) != 0)
		return as_fail(err, AS_EIO, "cannot read the ledger's entries");
	for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8 || be64_get(k.mv_data) >= x->to)
			break;
		apply_one(x, be64_get(k.mv_data), v.mv_data, v.mv_size);
	}
	mdb_cursor_close(cur);
	return 0;
}

static void apply_imported(struct signer *s)
{
	struct apply x = {.s = s};
	char err[AS_ERRLEN];
	if (!cluster_imported(s, &x.from, &x.to))
		return;
	cv_arena_init(&x.a, ENTRY_MAX);
	cv_arena_init(&x.b, ENTRY_MAX);
	if (ledger_read(s->ledger, apply_walk, &x, err) != 0)
		slog("error", "cluster: applying entries %llu..%llu: %s", (unsigned long long)x.from,
		     (unsigned long long)(x.to - 1), err);
	cv_arena_free(&x.a);
	cv_arena_free(&x.b);
	if (x.shown || x.ended)
		slog("debug", "cluster: %zu requests of other replicas shown here, %zu ended", x.shown, x.ended);
}

void cluster_apply(struct signer *s)
{
	char dead[PROTO_CL_REPLICA_MAX + 1];
	apply_imported(s);
	while (cluster_taken_over(s, dead))
		restore_takeover(s, dead);
}
