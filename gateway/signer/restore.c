/* What survives a restart: the requests a previous run left pending, rebuilt from the
 * ledger at start (docs/deploy.md, "Restarts"). A request entry records how its caller collects
 * the answer, whose it is and the policy's terms as they were decided; each approval of
 * a quorum short of it is an `approval` entry. The ledger is the signer's own (ledger_open
 * refused one its key did not sign), yet every field is checked before it is used:
 * what cannot be rebuilt whole is cancelled, never restored with terms made up. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scan: the request entries with no final entry after them ---- */

struct open_req {
	char sid[PQ_SID_LEN + 1];
	uint64_t seq;
	uint8_t *bytes; /* the request entry, copied */
	size_t len;
	char approvers[16][REG_NAME_MAX + 1]; /* from its `approval` entries, each name once */
	size_t napprovers;
	int call;    /* a gated call (the gate) */
	int foreign; /* cluster mode: another replica's request (theirs to end; shown here) */
};

struct open_scan {
	struct signer *s;
	const char *who; /* cluster mode: the replica whose requests are open (ours, or one taken over) */
	int passkeys;	 /* at start: the reviewers' passkeys are read on the way */
	json_t *calls;	 /* gated calls decided but not ended: session_id -> "approved" | "dispatched" */
	json_t *index;	 /* session_id -> position in open */
	json_t *foreign; /* cluster mode: session_ids of other replicas' requests (theirs to end) */
	struct open_req *open;
	size_t n, cap;
	struct cv_arena a;
	int oom;
};

static void open_close(struct open_scan *o, const char *sid)
{
	json_t *at = json_object_get(o->index, sid);
	if (!at)
		return;
	size_t k = (size_t)json_integer_value(at);
	free(o->open[k].bytes);
	json_object_del(o->index, sid);
	if (k != --o->n) { /* the last one takes the hole */
		o->open[k] = o->open[o->n];
		json_object_set_new(o->index, o->open[k].sid, json_integer((json_int_t)k));
	}
}

static int open_add(struct open_scan *o, const char *sid, uint64_t seq, const uint8_t *cbor, size_t len, int call,
		    int foreign)
{
	open_close(o, sid); /* a session id is never reused; if it were, the newer entry holds */
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		struct open_req *n = realloc(o->open, cap * sizeof *n);
		if (!n)
			return AS_ENOMEM;
		o->open = n;
		o->cap = cap;
	}
	struct open_req *r = &o->open[o->n];
	memset(r, 0, sizeof *r);
	if (!(r->bytes = malloc(len)))
		return AS_ENOMEM;
	memcpy(r->bytes, cbor, len);
	r->len = len;
	r->seq = seq;
	r->call = call;
	r->foreign = foreign;
	snprintf(r->sid, sizeof r->sid, "%s", sid);
	if (json_object_set_new(o->index, sid, json_integer((json_int_t)o->n)) != 0) {
		free(r->bytes);
		return AS_ENOMEM;
	}
	o->n++;
	return 0;
}

static void open_approval(struct open_scan *o, const char *sid, const struct cv *e)
{
	json_t *at = json_object_get(o->index, sid);
	char name[REG_NAME_MAX + 1];
	if (!at || text_copy(cv_get(cv_get(e, "reviewer"), "name"), name, sizeof name) != 0)
		return;
	struct open_req *r = &o->open[json_integer_value(at)];
	for (size_t k = 0; k < r->napprovers; k++)
		if (!strcmp(r->approvers[k], name))
			return;
	if (r->napprovers < 16)
		snprintf(r->approvers[r->napprovers++], sizeof r->approvers[0], "%s", name);
}

static int scan_open(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	struct open_scan *o = arg;
	struct cv *e;
	cv_arena_reset(&o->a);
	if (cbor_decode(cbor, len, &o->a, &e, NULL) != 0)
		return 0; /* assent-verify reports damage; here we only look for open requests */
	const struct cv *kind = cv_get(e, "kind");
	char sid[PQ_SID_LEN + 1];
	if (o->passkeys)
		passkey_scan(o->s, e); /* the reviewers' passkeys and their sign counts */
	if (!kind || text_copy(cv_get(e, "session_id"), sid, sizeof sid) != 0)
		return 0;
	const char *mine = o->who;
	int foreign = 0;
	if (mine && cv_text_eq(kind, "request") && !cv_text_eq(cv_get(e, "replica"), mine)) {
		/* Another replica's caller waits on it (or waited): never ours to cancel, and its
		 * gated calls never ours to end; while it is pending, our reviewers see it too. */
		json_object_set_new(o->foreign, sid, json_true());
		foreign = 1;
	}
	if (cv_text_eq(kind, "request")) {
		if (open_add(o, sid, seq, cbor, len, cv_text_eq(cv_get(e, "type"), "call"), foreign) != 0) {
			o->oom = 1;
			return 1;
		}
	} else if (mine && json_object_get(o->foreign, sid) &&
		   (cv_text_eq(kind, "dispatch") || cv_text_eq(kind, "outcome"))) {
		return 0;
	} else if (cv_text_eq(kind, "approval")) {
		open_approval(o, sid, e);
	} else if (cv_text_eq(kind, "decision") || cv_text_eq(kind, "timeout") || cv_text_eq(kind, "cancelled") ||
		   cv_text_eq(kind, "abandoned")) {
		/* an approved gated call is not over: its dispatch and outcome follow */
		json_t *at = json_object_get(o->index, sid);
		if (cv_text_eq(kind, "decision") && at && o->open[json_integer_value(at)].call &&
		    !o->open[json_integer_value(at)].foreign && cv_text_eq(cv_get(e, "outcome"), "approved"))
			json_object_set_new(o->calls, sid, json_string("approved"));
		else
			json_object_del(o->calls, sid);
		open_close(o, sid);
	} else if (cv_text_eq(kind, "dispatch")) {
		json_object_set_new(o->calls, sid, json_string("dispatched"));
	} else if (cv_text_eq(kind, "outcome")) {
		json_object_del(o->calls, sid);
	}
	return 0;
}

static void open_scan_run(struct open_scan *o)
{
	char err[AS_ERRLEN];
	o->index = json_object();
	o->calls = json_object();
	o->foreign = json_object();
	cv_arena_init(&o->a, ENTRY_MAX);
	if (!o->index || !o->calls || !o->foreign || ledger_scan(o->s->ledger, scan_open, o, err) != 0 || o->oom)
		slog("error", "scanning the ledger for pending requests: %s",
		     o->oom || !o->index || !o->calls || !o->foreign ? "out of memory" : err);
}

static void open_scan_free(struct open_scan *o)
{
	for (size_t k = 0; k < o->n; k++)
		free(o->open[k].bytes);
	free(o->open);
	cv_arena_free(&o->a);
	json_decref(o->index);
	json_decref(o->calls);
	json_decref(o->foreign);
}

/* ---- rebuilding one request ---- */

/* The action's parts the signer keeps besides the view: type, audience, options, subjects. */
static const char *action_read(const struct cv *e, struct req *r)
{
	const struct cv *o = cv_get(e, "options"), *sub = cv_get(e, "subject"), *aud = cv_get(e, "audience");
	if (text_copy(cv_get(e, "type"), r->type, sizeof r->type) != 0 ||
	    text_copy(cv_get(e, "action"), r->action, sizeof r->action) != 0 || strncmp(r->action, "sha256:", 7) ||
	    (aud && text_copy(aud, r->audience, sizeof r->audience) != 0))
		return "its type, audience or action digest cannot be read";
	if (o && (o->t != CV_ARRAY || !(r->options = calloc(o->n ? o->n : 1, sizeof *r->options))))
		return "its options cannot be read";
	for (size_t i = 0; o && i < o->n; i++) {
		if (o->items[i].t != CV_TEXT || !(r->options[i] = strndup((const char *)o->items[i].s, o->items[i].n)))
			return "its options cannot be read";
		r->noptions++;
	}
	r->subjects = json_array();
	if (sub && sub->t != CV_ARRAY)
		return "its subjects cannot be read";
	for (size_t i = 0; sub && i < sub->n; i++) {
		const struct cv *x = &sub->items[i], *name = cv_get(x, "name"),
				*hex = cv_get(cv_get(x, "digest"), "sha256"), *comp = cv_get(x, "computed");
		if (!name || name->t != CV_TEXT || !hex || hex->t != CV_TEXT || !comp)
			return "its subjects cannot be read";
		/* computed: the previous run hashed the bytes itself; they are not on the ledger,
		 * so a reviewer now sees the digest only. */
		json_array_append_new(r->subjects,
				      json_pack("{s:s%,s:s%,s:b}", "name", (const char *)name->s, name->n, "sha256",
						(const char *)hex->s, hex->n, "computed", comp->t == CV_TRUE));
	}
	return NULL;
}

/* Who asked, back into the connection request_view names them by. */
static const char *requester_read(const struct cv *e, struct req *r, struct conn *c, const char **uid_agent,
				  char agent_buf[REG_NAME_MAX + 1], int remote)
{
	const struct cv *rq = cv_get(e, "requester"), *uid = cv_get(rq, "uid"), *agent = cv_get(rq, "agent");
	uint64_t u;
	if (text_copy(cv_get(e, "owner"), r->owner, sizeof r->owner) != 0 ||
	    text_copy(cv_get(rq, "client"), r->client, sizeof r->client) != 0)
		return "it does not say whose it is";
	r->uid = (uid_t)-1;
	if (uid) {
		if (uint_of(uid, UINT32_MAX - 1, &u) != 0)
			return "its requester's uid cannot be read";
		r->uid = (uid_t)u;
	}
	*uid_agent = NULL;
	c->uid = r->uid;
	if (!strncmp(r->owner, "uid:", 4)) { /* a unix peer: SO_PEERCRED */
		if (!uid || parse_u64(r->owner + 4, &u) != 0 || u != (uint64_t)r->uid)
			return "its owner and its measured uid disagree";
		if (agent && text_copy(agent, agent_buf, REG_NAME_MAX + 1) == 0)
			*uid_agent = agent_buf;
	} else if (!strncmp(r->owner, "agent:", 6)) { /* an API key over HTTP */
		c->http = 1;
		if (!agent || text_copy(agent, c->agent, sizeof c->agent) != 0 || strcmp(c->agent, r->owner + 6))
			return "its owner and its agent disagree";
	} else if (!remote) {
		/* An anonymous client's session was its only credential, and sessions went with
		 * the previous run: nobody can collect the answer (and a new session's id could
		 * be the old one's). */
		return "an anonymous caller's session went with the previous run";
	}
	return NULL;
}

/* How a request entry's caller collects the answer, as restore_request may queue it: NULL, or
 * why not. Another replica's request (remote) is shown here whatever its caller does there. */
static const char *collect_read(const struct cv *e, int remote, const char **out)
{
	const struct cv *collect = cv_get(e, "collect");
	int call = cv_text_eq(cv_get(e, "type"), "call");
	if (!collect) /* an older assent wrote it: taken as a blocking call */
		return "its entry does not say how its caller collects the answer (an older assent wrote it), so it "
		       "counts as a blocking call, whose connection went with the previous run";
	if (!remote && cv_text_eq(collect, "wait"))
		return "the caller's connection went with the previous run";
	if (call && !remote) /* the ledger keeps its arguments redacted, not the call */
		return "a gated call's exact call is not recorded (its arguments are, redacted), so it cannot be "
		       "forwarded after a restart";
	if (!cv_text_eq(collect, "poll") && !cv_text_eq(collect, "task") && !cv_text_eq(collect, "wait"))
		return "it names a way of collecting this assent does not know";
	*out = cv_text_eq(collect, "task") ? "task" : cv_text_eq(collect, "poll") ? "poll" : "wait";
	return NULL;
}

const char *restore_request(struct signer *s, const char *sid, const uint8_t *bytes, size_t len,
			    const char (*approvers)[REG_NAME_MAX + 1], size_t napprovers, int remote,
			    struct cv_arena *a)
{
	struct cv *e;
	const char *collect = NULL;
	cv_arena_reset(a);
	if (cbor_decode(bytes, len, a, &e, NULL) != 0)
		return "its request entry cannot be read";
	const char *why = collect_read(e, remote, &collect);
	if (why)
		return why;
	struct pq_item it = {.requester_id = 0, .blocking = 0};
	snprintf(it.session_id, sizeof it.session_id, "%s", sid);
	if (uint_of(cv_get(e, "deadline"), UINT64_MAX - CLUSTER_GRACE_MS, &it.deadline_ms) != 0 ||
	    uint_of(cv_get(e, "time"), UINT64_MAX, &it.created_ms) != 0)
		return "its deadline cannot be read";
	if (remote) /* its own replica times it out; this one only when that one is gone */
		it.deadline_ms += CLUSTER_GRACE_MS;
	struct req *r = calloc(1, sizeof *r);
	struct conn c = {.id = 0};
	char agent[REG_NAME_MAX + 1];
	const char *uid_agent = NULL;
	why = r ? NULL : "out of memory";
	if (!why)
		why = action_read(e, r);
	if (!why)
		why = requester_read(e, r, &c, &uid_agent, agent, remote);
	if (!why && cv_get(e, "policy"))
		why = terms_read(cv_get(e, "policy"), cv_get(e, "terms"), r);
	if (!why) {
		r->collect = collect;
		r->remote = remote;
		r->told |= NOTIFY_REQUEST; /* it waited for a person: its end is told to the webhooks too */
		it.requester_uid = r->uid;
		it.data = r;
		/* The view: the action's own fields (the entry less what the signer and the ledger added). */
		static const char *const added[] = {"v",	  "seq",       "time",	 "prev",     "kind",
						    "session_id", "requester", "action", "deadline", "policy",
						    "collect",	  "owner",     "terms",	 "replica"};
		r->view = cv_to_json(e);
		for (size_t k = 0; r->view && k < sizeof added / sizeof *added; k++)
			json_object_del(r->view, added[k]);
		if (!r->view)
			why = "out of memory";
		/* Another replica's gated call: shown as its replica shows it (the same arguments, masked
		 * alike, and the digest of the exact call that replica dispatches once approved) */
		if (!why && remote && cv_text_eq(cv_get(e, "type"), "call")) {
			json_object_set_new(r->view, "call", json_string(r->action));
			json_object_set_new(r->view, "held_by", cv_to_json(cv_get(e, "replica")));
		}
	}
	if (!why) {
		request_view(r, &c, &it, uid_agent);
		json_t *ap = json_array();
		for (size_t k = 0; k < napprovers && k < 16; k++) {
			snprintf(r->approvers[r->napprovers++], sizeof r->approvers[0], "%s", approvers[k]);
			json_array_append_new(ap, json_string(approvers[k]));
		}
		if (r->napprovers)
			json_object_set_new(r->view, "approvals", ap);
		else
			json_decref(ap);
		if (pq_add(s->q, &it) != 0)
			why = "the queue of pending requests is full";
	}
	if (why && r)
		req_free(r);
	return why;
}

/* Gated calls a previous run approved and never saw end: exactly once means never again.
 * One dispatched is "dispatched, outcome unknown" (it may have run); one approved and not
 * dispatched never left, and is abandoned. */
static void restore_calls(struct signer *s, json_t *calls, const char *stopped)
{
	const char *sid;
	json_t *st;
	size_t unknown = 0, abandoned = 0;
	json_object_foreach(calls, sid, st)
	{
		if (!strcmp(json_string_value(st), "approved")) {
			char why[300];
			snprintf(why, sizeof why,
				 "%s stopped after the call was approved and before it was dispatched: it was never "
				 "forwarded",
				 stopped);
			abandoned += append_simple(s, "abandoned", sid, why, NULL) != NULL;
			continue;
		}
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *m = cv_map(&a, 4);
		size_t i = 0;
		char why[300];
		snprintf(why, sizeof why,
			 "%s stopped after the call was dispatched and before its outcome was recorded: it may or "
			 "may not have run, and it is never sent again",
			 stopped);
		char err[AS_ERRLEN] = "out of memory";
		if (m &&
		    (kv_text(&a, m, &i, "kind", "outcome", 7) | kv_text(&a, m, &i, "session_id", sid, strlen(sid)) |
		     kv_text(&a, m, &i, "status", "unknown", 7) | kv_text(&a, m, &i, "reason", why, strlen(why))) ==
			0) {
			m->n = i;
			unknown += op_add(s, m, NULL, err) != NULL;
		}
		cv_arena_free(&a);
		slog("warning", "gated call %s: dispatched by a previous run, outcome unknown (never sent again)", sid);
	}
	if (unknown || abandoned)
		slog("warning",
		     "%zu gated calls of a previous run end with outcome unknown, %zu approved ones abandoned", unknown,
		     abandoned);
}

/* A request cancelled at start whose caller collects the answer later (a task, wait
 * false): tasks/get and get_feedback say cancelled at once, with why, not "unknown". */
static void cancelled_kept(struct signer *s, const struct open_req *p, struct cv_arena *a, const char *reason)
{
	struct cv *e;
	char owner[80];
	uint64_t created;
	cv_arena_reset(a);
	if (cbor_decode(p->bytes, p->len, a, &e, NULL) != 0 ||
	    !(cv_text_eq(cv_get(e, "collect"), "task") || cv_text_eq(cv_get(e, "collect"), "poll")) ||
	    text_copy(cv_get(e, "owner"), owner, sizeof owner) != 0 ||
	    (strncmp(owner, "uid:", 4) && strncmp(owner, "agent:", 6)) ||
	    uint_of(cv_get(e, "time"), UINT64_MAX, &created) != 0)
		return;
	json_t *res = result_base(p->sid, "cancelled", 0);
	json_object_set_new(res, "error", json_string(reason));
	task_end(s, p->sid, 0, owner, created, res);
}

/* At start, before the policy loads: every request a previous run left pending is
 * queued again when its caller collects the answer later (wait: false, a task) and
 * cancelled when its caller waited on a connection that went with that run. One whose
 * deadline passed meanwhile is queued too: the first turn of the loop times it out
 * (expire), as its terms say (a timeout, or a denial under on-timeout deny). */
void restore_pending(struct signer *s)
{
	struct open_scan o = {.s = s, .who = cluster_replica(s), .passkeys = 1};
	open_scan_run(&o);
	size_t kept = 0, cancelled = 0, approvals = 0, shown = 0;
	for (size_t k = 0; k < o.n; k++) {
		const struct open_req *p = &o.open[k];
		const char *why =
		    restore_request(s, p->sid, p->bytes, p->len, (const char(*)[REG_NAME_MAX + 1]) p->approvers,
				    p->napprovers, p->foreign, &o.a);
		if (p->foreign) { /* another replica's, pending there: shown here, or not at all */
			if (why && !p->call)
				slog("warning", "request %s of another replica is not shown here: %s", p->sid, why);
			shown += !why;
			continue;
		}
		if (!why) {
			kept++;
			approvals += o.open[k].napprovers;
			continue;
		}
		char reason[256];
		snprintf(reason, sizeof reason, "the daemon restarted: %s", why);
		if (append_simple(s, "cancelled", o.open[k].sid, reason, NULL))
			cancelled++;
		cancelled_kept(s, &o.open[k], &o.a, reason);
		slog("info", "request %s left pending by a previous run is cancelled: %s", o.open[k].sid, why);
	}
	restore_calls(s, o.calls, "the daemon");
	commit_batch(s);
	if (shown)
		slog("info", "%zu requests pending on other replicas are shown to this replica's reviewers too", shown);
	if (kept || cancelled)
		slog("warning",
		     "%zu requests left pending by a previous run are pending again (%zu quorum approvals kept), %zu "
		     "cancelled",
		     kept, approvals, cancelled);
	open_scan_free(&o);
}

/* Cluster mode: replica `dead` stopped renewing its lease, and this replica took it over (one
 * replica does: cluster_taken_over). What it left open ends as its own restart would end it:
 * a request whose caller waited on its connection is cancelled (the agent asks again, on
 * another replica), a gated call it held is cancelled, one approved and not dispatched is
 * abandoned, one dispatched without an outcome is `unknown`, never sent again. A poll or task
 * request lives on: it waits on every replica's list, and its caller collects it anywhere. */
void restore_takeover(struct signer *s, const char *dead)
{
	struct open_scan o = {.s = s, .who = dead};
	char stopped[PROTO_CL_REPLICA_MAX + 48], reason[PROTO_CL_REPLICA_MAX + 160];
	size_t cancelled = 0;
	snprintf(stopped, sizeof stopped, "replica %s (its lease expired)", dead);
	open_scan_run(&o);
	for (size_t k = 0; k < o.n; k++) {
		const struct open_req *p = &o.open[k];
		struct cv *e;
		struct pq_item out;
		cv_arena_reset(&o.a);
		if (p->foreign || cbor_decode(p->bytes, p->len, &o.a, &e, NULL) != 0 ||
		    (!p->call &&
		     (cv_text_eq(cv_get(e, "collect"), "poll") || cv_text_eq(cv_get(e, "collect"), "task"))))
			continue;
		snprintf(reason, sizeof reason, "%s stopped: its caller's connection went with it", stopped);
		cancelled++;
		if (pq_remove(s->q, p->sid, &out) == 0) /* shown here: out of the list once the entry is on disk */
			request_cancelled(s, &out, reason);
		else
			append_simple(s, "cancelled", p->sid, reason, NULL);
	}
	size_t calls = json_object_size(o.calls);
	restore_calls(s, o.calls, stopped);
	commit_batch(s);
	slog(cancelled || calls ? "warning" : "info",
	     "cluster: %s: this replica took it over; %zu requests its callers waited on are cancelled, %zu gated "
	     "calls it left are ended",
	     stopped, cancelled, calls);
	open_scan_free(&o);
}

/* ---- the history: the last decisions, read backwards from the ledger's newest entry ---- */

struct hist_scan {
	struct recent *x; /* newest first, as found */
	int *found;	  /* x[k]'s request entry was read */
	size_t n, nfound;
	json_t *index; /* session_id -> k */
	struct cv_arena a;
};

/* A final entry (decision, timeout): what it says of the decision. 0, or -1 to pass it by. */
static int hist_final(struct hist_scan *h, const struct cv *e, const char *sid, uint64_t seq)
{
	struct recent *x = &h->x[h->n];
	const struct cv *kind = cv_get(e, "kind"), *pol = cv_get(e, "policy");
	uint64_t t, u;
	memset(x, 0, sizeof *x);
	if (uint_of(cv_get(e, "time"), UINT64_MAX, &t) != 0)
		return -1;
	const struct cv *why = cv_get(e, "reason");
	if (cv_text_eq(kind, "timeout") || cv_text_eq(kind, "cancelled"))
		snprintf(x->outcome, sizeof x->outcome, "%s", cv_text_eq(kind, "timeout") ? "timeout" : "cancelled");
	else if (text_copy(cv_get(e, "outcome"), x->outcome, sizeof x->outcome) != 0)
		return -1;
	/* as history_add names them: the reviewer, else the policy (decided at once) or the deadline */
	if (cv_text_eq(kind,
		       "cancelled")) /* by the agent, or by a restart ("the daemon stopped", "the daemon restarted") */
		snprintf(x->by, sizeof x->by, "%s",
			 why && why->t == CV_TEXT && why->n >= 11 && !memcmp(why->s, "the daemon ", 11) ? "restart"
													: "agent");
	else if (text_copy(cv_get(cv_get(e, "reviewer"), "name"), x->by, sizeof x->by) != 0)
		snprintf(x->by, sizeof x->by, "%s",
			 pol && !cv_text_eq(cv_get(pol, "decision"), "ask") && !cv_text_eq(kind, "timeout")
			     ? "policy"
			     : "deadline");
	if (pol && uint_of(cv_get(pol, "rule"), UINT32_MAX, &u) == 0)
		x->rule = (unsigned)u;
	snprintf(x->sid, sizeof x->sid, "%s", sid);
	x->seq = seq;
	x->at_ms = t;
	x->at = t / 1000;
	return json_object_set_new(h->index, sid, json_integer((json_int_t)h->n)) == 0 ? (h->n++, 0) : -1;
}

/* Its request entry: when it was asked, by whom, for which audience, under which terms. */
static void hist_request(struct hist_scan *h, const struct cv *e, size_t k)
{
	struct recent *x = &h->x[k];
	const struct cv *msg = cv_get(e, "message"), *pol = cv_get(e, "policy"), *terms = cv_get(e, "terms"),
			*rv = cv_get(terms, "reviewers");
	uint64_t t, u;
	if (h->found[k] || uint_of(cv_get(e, "time"), UINT64_MAX, &t) != 0 ||
	    text_copy(cv_get(e, "owner"), x->requester, sizeof x->requester) != 0)
		return;
	x->created_ms = t;
	const struct cv *ag = cv_get(cv_get(e, "requester"), "agent"); /* as reply.c names it */
	if (ag && ag->t == CV_TEXT && ag->n <= 70)
		snprintf(x->requester, sizeof x->requester, "agent:%.*s", (int)ag->n, (const char *)ag->s);
	if (cv_get(e, "audience"))
		text_copy(cv_get(e, "audience"), x->audience, sizeof x->audience);
	if (msg && msg->t == CV_TEXT)
		history_summary(x->message, (const char *)msg->s, msg->n);
	if (!x->rule && pol && uint_of(cv_get(pol, "rule"), UINT32_MAX, &u) == 0)
		x->rule = (unsigned)u;
	if (!strcmp(x->outcome, "timeout") && cv_get(terms, "timeout_denies") &&
	    cv_get(terms, "timeout_denies")->t == CV_TRUE)
		snprintf(x->outcome, sizeof x->outcome, "denied"); /* as timeout_answer names it */
	if (rv && rv->t == CV_ARRAY && rv->n) {
		/* a rule that named its reviewers: shown to them only, as it was; terms that cannot
		 * be read keep it from everyone (restricted, with no terms) */
		x->restricted = 1;
		struct pol_decision *pd = calloc(1, sizeof *pd);
		for (size_t i = 0; pd && i < rv->n && i < POL_LIST_MAX; i++)
			if (text_copy(&rv->items[i], pd->reviewers[pd->nreviewers], sizeof pd->reviewers[0]) == 0)
				pd->nreviewers++;
		if (pd && pd->nreviewers == rv->n) {
			x->pd = pd;
		} else {
			free(pd);
		}
	}
	h->found[k] = 1;
	h->nfound++;
}

static int hist_walk(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err)
{
	(void)ckpts;
	(void)key;
	struct hist_scan *h = arg;
	MDB_cursor *cur;
	MDB_val k, v;
	if (mdb_cursor_open(txn, entries, &cur) != 0)
		return as_fail(err, AS_EIO, "cannot read the ledger's entries");
	for (int rc = mdb_cursor_get(cur, &k, &v, MDB_LAST); rc == 0 && !(h->n == HISTORY_MAX && h->nfound == h->n);
	     rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)) {
		struct cv *e;
		char sid[PQ_SID_LEN + 1];
		cv_arena_reset(&h->a);
		if (k.mv_size != 8 || cbor_decode(v.mv_data, v.mv_size, &h->a, &e, NULL) != 0 ||
		    text_copy(cv_get(e, "session_id"), sid, sizeof sid) != 0)
			continue; /* assent-verify reports damage; here we only look for decisions */
		const struct cv *kind = cv_get(e, "kind");
		json_t *at = json_object_get(h->index, sid);
		if ((cv_text_eq(kind, "decision") || cv_text_eq(kind, "timeout") || cv_text_eq(kind, "cancelled")) &&
		    !at && h->n < HISTORY_MAX)
			hist_final(h, e, sid, be64_get(k.mv_data));
		else if (cv_text_eq(kind, "request") && at)
			hist_request(h, e, (size_t)json_integer_value(at));
	}
	mdb_cursor_close(cur);
	return 0;
}

void restore_history(struct signer *s)
{
	struct hist_scan h = {.x = calloc(HISTORY_MAX, sizeof *h.x),
			      .found = calloc(HISTORY_MAX, sizeof *h.found),
			      .index = json_object()};
	char err[AS_ERRLEN];
	cv_arena_init(&h.a, ENTRY_MAX);
	if (!h.x || !h.found || !h.index)
		slog("error", "rebuilding the history of decisions: out of memory");
	else if (ledger_read(s->ledger, hist_walk, &h, err) != 0)
		slog("error", "rebuilding the history of decisions from the ledger: %s", err);
	/* oldest first, so that the newest ends on top; a decision whose request entry is not on
	 * the ledger (cut from an older copy) is left out: it could not be shown whole */
	size_t kept = 0;
	for (size_t k = h.n; h.x && h.found && k-- > 0;)
		if (h.found[k]) {
			history_push(s, &h.x[k]);
			kept++;
		} else {
			free(h.x[k].pd);
		}
	if (kept)
		slog("info", "the history of decisions holds the ledger's last %zu", kept);
	free(h.x);
	free(h.found);
	json_decref(h.index);
	cv_arena_free(&h.a);
}
