/* The gate (issue 15): assent in front of upstream MCP servers. The signer starts each
 * server (with its own environment) and a jailed upstream worker on the server's pipes,
 * learns the server's tools from that worker, decides every call an agent makes of them
 * by the policy, records the call's lifecycle (request, decision, dispatch, outcome), and
 * only then tells the worker to forward it, once. Nothing here parses what a server
 * wrote: its tools and results arrive as canonical CBOR, checked before use. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/gate_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int up_index(const struct signer *s, const char *name)
{
	for (size_t i = 0; i < s->gate.nup; i++)
		if (!strcmp(s->gate.up[i].cfg->name, name))
			return (int)i;
	return -1;
}

/* ---- a call from an agent ---- */

/* The view reviewers get: what the call is, from the signer's own copy of the catalog.
 * Its arguments are the exact ones but for secrets, each mark saying how many characters
 * it hides ("[secret: 41 chars]", common/redact.h: an agent cannot steer a mark over
 * text that runs); when anything is masked, "masked" says so first and how to see it
 * (assent show --full, which the ledger records as a reveal). fuzz/view checks the view
 * against the call with common/viewcheck.c, which knows nothing of the redactor. */
static json_t *call_view(const struct upw *u, const struct up_tool *t, const json_t *args, const json_t *input)
{
	static const struct redact_rules view_rules = {NULL, 0, NULL, 0, 1};
	json_t *shown = json_deep_copy(args), *answers = input ? json_deep_copy(input) : NULL;
	struct redact_stats st = {0, 0, 0};
	int rr = redact_json(shown, &view_rules, &st); /* what a reviewer reads and the ledger keeps */
	if (answers) /* a retry's answers to the server's questions run too (gatemrtr.c): shown alike */
		rr |= redact_json(answers, &view_rules, &st);
	(void)rr; /* it fails only on memory, leaving what it could not redact whole: refused below */
	char msg[256];
	snprintf(msg, sizeof msg, "Call %s of upstream %s%s", t->name, u->cfg->name,
		 answers ? ", with the client's answers to its questions" : "");
	json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "type", "call", "method", "tools/call", "message", msg,
			      "upstream", u->cfg->name, "tool", t->name, "arguments", shown ? shown : json_object());
	if (answers)
		json_object_set_new(v, "input", answers);
	if (st.keys + st.patterns > 0)
		json_object_set_new(v, "masked",
				    json_pack("{s:I,s:I}", "spans", (json_int_t)(st.keys + st.patterns), "chars",
					      (json_int_t)st.chars));
	json_t *ts = json_deep_copy(t->shown);
	if (json_object_get(ts, "annotations"))
		json_object_set_new(ts, "annotations_by", json_string("the upstream server (declared, not verified)"));
	json_object_set_new(v, "tool_info", ts);
	return v;
}

/* A resources/read's view: the server and the URI it would read. */
static json_t *read_view(const struct upw *u, const char *uri)
{
	char msg[300];
	snprintf(msg, sizeof msg, "Read a resource of upstream %s", u->cfg->name);
	return json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "call", "method", "resources/read", "message", msg,
			 "upstream", u->cfg->name, "uri", uri);
}

/* The request entry's action fields: the view's call (redacted arguments, reals as text). */
static struct cv *call_action(struct cv_arena *a, const json_t *view, char *err)
{
	static const char *const keys[] = {"type", "method",	"message", "upstream", "tool",
					   "uri",  "arguments", "input",   "masked"};
	json_t *j = json_object();
	for (size_t k = 0; j && k < sizeof keys / sizeof *keys; k++)
		if (json_object_get(view, keys[k]))
			json_object_set(j, keys[k], json_object_get(view, keys[k]));
	struct cv *v = cv_alloc(a, 1);
	int rc = j && v ? cv_from_json_value(a, j, v, 0, &cvj_context, err) : as_fail(err, AS_ENOMEM, "out of memory");
	json_decref(j);
	return rc == 0 ? v : NULL;
}

/* A free slot for a dispatched call. Slots are taken lowest first and every scan stops at
 * gcall_hi, one past the highest in use, so that the few calls in flight cost a few steps
 * per frame rather than GCALLS_MAX. */
static struct gcall *gcall_new(struct signer *s)
{
	for (size_t i = 0; i < GCALLS_MAX; i++)
		if (!s->gate.gcalls[i].used) {
			if (i >= s->gate.gcall_hi)
				s->gate.gcall_hi = i + 1;
			return &s->gate.gcalls[i];
		}
	return NULL;
}

/* Sends the dispatch frame: the call leaves now, once. */
static void dispatch_now(struct signer *s, struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
			 unsigned rule, int ledgered)
{
	struct gcall *c = gcall_new(s);
	struct worker *w = &s->w[g->k];
	char digest[72];
	call_digest(g->call, g->n, digest);
	rec_note(s, conn, rid, NULL, rule, 0); /* the rule that let it through, for its record */
	if (ledgered) /* a call the ledger holds (decided, not only recorded): its dispatch is a phase; a
		       * read the policy lets through with `record calls` has its call record alone */
		phase_run(s, PH_DISPATCHED,
			  &(struct phase_ev){.sid = sid,
					     .seq = g->seq,
					     .call = &(struct phase_call){.conn = conn,
									  .rid = rid,
									  .upstream = g->upstream,
									  .tool = g->tool,
									  .digest = digest,
									  .rule = rule}});
	if (!c || w->fd < 0 || w->state != S_READY) {
		static const char gone[] = "the upstream server is not available now: the call was not forwarded";
		char full[160];
		snprintf(full, sizeof full, "the gate has %d calls in flight, all it holds: the call was not forwarded",
			 GCALLS_MAX);
		struct gcall spare = {0}; /* when every slot is taken: the outcome is ledgered all the same */
		if (ledgered) {		  /* its dispatch entry is on disk: its outcome follows it */
			c = c ? c : &spare;
			*c = (struct gcall){
			    .used = 1, .k = g->k, .ledgered = 1, .conn = conn, .seq = g->seq, .started_ms = now_ms()};
			snprintf(c->sid, sizeof c->sid, "%s", sid);
			snprintf(c->rid, sizeof c->rid, "%s", rid);
			snprintf(c->upstream, sizeof c->upstream, "%s", g->upstream);
			snprintf(c->tool, sizeof c->tool, "%s", g->tool);
			snprintf(c->method, sizeof c->method, "%s", g->method);
			c->task = g->task;
			snprintf(c->owner, sizeof c->owner, "%s", g->owner);
			c->created_ms = g->created_ms;
			gate_call_end(s, c, "error", NULL, 0, NULL, c == &spare ? full : gone);
			return;
		}
		refuse_g(s, g, sid, conn, rid, c ? gone : full,
			 facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		return;
	}
	*c = (struct gcall){.used = 1,
			    .k = g->k,
			    .caps = g->caps,
			    .ledgered = ledgered,
			    .cid = ++s->gate.next_cid,
			    .conn = conn,
			    .seq = g->seq,
			    .started_ms = now_ms(),
			    .rule = rule};
	c->until_ms = c->started_ms + 1000ull * s->gate.call_timeout_s;
	snprintf(c->sid, sizeof c->sid, "%s", sid);
	snprintf(c->rid, sizeof c->rid, "%s", rid);
	snprintf(c->upstream, sizeof c->upstream, "%s", g->upstream);
	snprintf(c->tool, sizeof c->tool, "%s", g->tool);
	snprintf(c->method, sizeof c->method, "%s", g->method);
	c->task = g->task;
	snprintf(c->owner, sizeof c->owner, "%s", g->owner);
	c->created_ms = g->created_ms;
	snprintf(c->digest, sizeof c->digest, "%s", digest);
	snprintf(c->token, sizeof c->token, "%s", g->token ? g->token : "");
	slog("debug", "dispatch: %s (call %llu, %s %s__%s, rule %u) to the upstream worker", sid,
	     (unsigned long long)c->cid, g->method, g->upstream, g->tool, rule);
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = frame_dispatch(&a, c->cid, g->call, g->n, digest, g->caps, g->ustate);
	char err[AS_ERRLEN];
	if (!f || ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("error", "upstream %s: the dispatch of %s could not be sent; its outcome will be unknown",
		     g->upstream, sid);
	cv_arena_free(&a);
}

struct dispatched { /* a dispatch entry waiting for its commit */
	struct gate_req *g;
	char sid[PQ_SID_LEN + 1];
	char rid[PROTO_RID_MAX + 1];
	uint64_t conn;
	unsigned rule;
};

static void dispatch_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct dispatched *d = o->own;
	o->own = NULL;
	if (!d->g) { /* in its decision's commit, which failed (its agent heard) or never handed it the call */
		if (pos)
			slog("error", "dispatch of %s recorded, but its call was not handed over: not forwarded",
			     d->sid);
	} else if (!pos) {
		slog("error", "dispatch of %s not recorded: %s; not forwarded", d->sid, err);
		refuse_g(s, d->g, d->sid, d->conn, d->rid,
			 "the gateway could not record the dispatch: the call was not forwarded",
			 facts_of(d->sid, "not_forwarded", d->g->seq, d->g->upstream, d->g->tool));
	} else {
		dispatch_now(s, d->g, d->sid, d->conn, d->rid, d->rule, 1);
	}
	gate_req_free(d->g);
	free(d);
}

/* The dispatch entry of g, in the batch: its done callback sends the call (d, taken). */
static struct op *dispatch_entry(struct signer *s, const struct gate_req *g, const char *sid, struct dispatched *d,
				 char *err)
{
	char digest[72];
	call_digest(g->call, g->n, digest);
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 5);
	size_t i = 0;
	int rc = !d || !m;
	if (!rc)
		rc = kv_text(a, m, &i, "kind", "dispatch", 8) | kv_text(a, m, &i, "session_id", sid, strlen(sid)) |
		     kv_text(a, m, &i, "upstream", g->upstream, strlen(g->upstream)) |
		     kv_text(a, m, &i, "tool", g->tool, strlen(g->tool)) |
		     kv_text(a, m, &i, "call", digest, strlen(digest));
	struct op *o = NULL;
	if (!rc) {
		m->n = i;
		o = op_add(s, m, dispatch_done, err);
	}
	if (o) {
		snprintf(d->sid, sizeof d->sid, "%s", sid);
		o->own = d; /* dispatch_done's own record */
	}
	return o;
}

/* Appends the dispatch entry (durable before the call leaves); takes g. */
static void dispatch(struct signer *s, struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     unsigned rule)
{
	char err[AS_ERRLEN] = "out of memory";
	struct worker *w = &s->w[g->k];
	if (w->fd < 0 || w->state != S_READY) { /* nothing leaves: said so, and recorded */
		append_simple(s, "abandoned", sid, "approved, but the upstream server was not available: not forwarded",
			      NULL);
		refuse_g(s, g, sid, conn, rid, "the upstream server is not available now: the call was not forwarded",
			 facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		gate_req_free(g);
		return;
	}
	struct dispatched *d = calloc(1, sizeof *d);
	struct op *o = d ? dispatch_entry(s, g, sid, d, err) : NULL;
	if (!o) {
		slog("error", "dispatch of %s not recorded: %s; not forwarded", sid, err);
		refuse_g(s, g, sid, conn, rid, "the gateway could not record the dispatch: the call was not forwarded",
			 facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		gate_req_free(g);
		free(d);
		return;
	}
	d->g = g;
	d->conn = conn;
	d->rule = rule;
	snprintf(d->rid, sizeof d->rid, "%s", rid);
}

/* A call the policy lets through at once, or one a reviewer's approval decides: its dispatch
 * entry goes into the commit of its decision (and request, when the policy decides), so that
 * one durable commit comes before the call leaves (and never on disk without that decision:
 * with_prev). gate_finish hands it the call; when the upstream is not ready now, or the entry
 * cannot be made, dispatch() does as for any approval. */
static void predispatch(struct signer *s, const struct req *r, const char *sid)
{
	struct gate_req *g = r->gate;
	if (!g || g->pre)
		return;
	struct worker *w = &s->w[g->k];
	char err[AS_ERRLEN] = "out of memory";
	if (w->fd < 0 || w->state != S_READY)
		return;
	struct dispatched *d = calloc(1, sizeof *d);
	struct op *o = d ? dispatch_entry(s, g, sid, d, err) : NULL;
	if (!o) {
		free(d);
		return;
	}
	o->with_prev = 1;
	d->conn = r->conn;
	d->rule = r->has_pd ? r->pd.line : 0;
	snprintf(d->rid, sizeof d->rid, "%s", r->rid);
	g->pre = d;
}

/* A reviewer's approval is in the batch (PH_APPROVING): the call's dispatch entry joins it;
 * that decision was not recorded, and the request waits again (PH_UNRECORDED): the entry,
 * which failed with it, is let go (dispatch_done frees it). */
static void approval_phase(struct signer *s, enum req_phase ph, const struct phase_ev *e)
{
	if (!e->r || !e->r->gate)
		return;
	if (ph == PH_APPROVING)
		predispatch(s, e->r, e->sid);
	else
		e->r->gate->pre = NULL;
}

/* finish() of a gated call: approved, it is dispatched; otherwise the agent hears why
 * not, as an isError result. Returns 1 (it took the request). */
static int gate_finish(struct signer *s, struct pq_item *it, const struct ending *e, json_t *result)
{
	struct req *r = it->data;
	struct gate_req *g = r->gate;
	g->seq = r->seq;
	if (e->token && strlen(e->token) < sizeof((struct gcall *)0)->token) /* token yes: it goes with the result */
		g->token = strdup(e->token);
	const char *status = e->status;
	if (e->approved && g->pre) { /* its dispatch entry is in this commit: dispatch_done sends it */
		r->gate = NULL;
		((struct dispatched *)g->pre)->g = g;
		g->pre = NULL;
	} else if (e->approved) {
		r->gate = NULL;
		dispatch(s, g, it->session_id, r->conn, r->rid, r->has_pd ? r->pd.line : 0);
	} else if (it->blocking || g->task) {
		const char *why = e->response, *who = e->reviewer;
		char text[1200];
		if (status && !strcmp(status, "timeout"))
			snprintf(text, sizeof text,
				 "timeout: no reviewer decided before the deadline; the call was not forwarded "
				 "(session_id %s)",
				 it->session_id);
		else if (status && !strcmp(status, "cancelled")) /* the daemon stopping (cancel_waiting) */
			snprintf(text, sizeof text, "%s; the call was not forwarded (session_id %s)",
				 e->error ? e->error : "cancelled", it->session_id);
		else if (status && !strcmp(status, "denied"))
			snprintf(text, sizeof text, "denied by the policy (rule %u): %s; the call was not forwarded",
				 r->has_pd ? r->pd.line : 0, why ? why : "no reason given");
		else
			snprintf(text, sizeof text, "%s by %s: %s; the call was not forwarded",
				 status ? status : "refused", who ? who : "a reviewer", why ? why : "no reason given");
		rec_note(s, r->conn, r->rid, NULL, r->has_pd ? r->pd.line : 0, 0);
		refuse_g(s, g, it->session_id, r->conn, r->rid, text,
			 facts_of(it->session_id, status ? status : "refused", r->seq, g->upstream, g->tool));
	}
	json_decref(result);
	req_free(r);
	return 1;
}

/* A client's subscription to a resource of an upstream: kept, so that the server's
 * notifications/resources/updated reach the clients that subscribed, and only them. */
static void subscription(struct signer *s, uint64_t conn, const char *up, const char *uri, int on)
{
	if (!s->gate.subs)
		s->gate.subs = json_array();
	size_t i;
	json_t *x;
	json_array_foreach(s->gate.subs, i, x)
	{
		if ((uint64_t)json_integer_value(json_array_get(x, 0)) == conn &&
		    !strcmp(json_string_value(json_array_get(x, 1)), up) &&
		    !strcmp(json_string_value(json_array_get(x, 2)), uri)) {
			if (!on)
				json_array_remove(s->gate.subs, i);
			return;
		}
	}
	if (on && json_array_size(s->gate.subs) < 4096)
		json_array_append_new(s->gate.subs, json_pack("[I,s,s]", (json_int_t)conn, up, uri));
}

/* Read an F_CALL: the connection, who asked, and the call (checked, digested). */
/* A 2026-07-28 call's caps, and the requestState a retry returns (gatemrtr.c): a state that
 * fails its checks is a protocol error, and nothing is forwarded (g is freed). */
static int retry_state(struct signer *s, struct gate_req *g, struct ipc_frame *f, const struct conn *c, const char *rid)
{
	const struct cv *caps = cv_get(f->body, "caps"), *st = cv_get(f->body, "state");
	g->caps = caps ? (unsigned)caps->u : 0;
	const char *why = "requestState: only a 2026-07-28 request carries one";
	if (!st || ((g->caps & PROTO_CAP_MODERN) && gate_state_open(s, g, st, &why) == 0))
		return 0;
	slog("warning", "a gated call's requestState refused (%s): %s", c->owner, why);
	send_rpc_error(s, c->id, rid, -32602, why, NULL);
	gate_req_free(g);
	return AS_EINVAL;
}

/* F_CALL's call, decoded and checked (a call that is not one is the worker's violation):
 * the gate's request of it, its names, arguments (the URI a resources/read reads, as
 * args.uri) and a retry's answers, with a copy of its exact bytes. */
static int gate_req_new(const struct cv *call, struct gate_req **out, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, PROTO_CALL_MAX);
	struct cv *cv;
	char why[AS_ERRLEN] = "";
	int rc = cbor_decode(call->s, call->n, &a, &cv, why);
	if (rc == 0)
		rc = call_check(cv, why);
	if (rc != 0) {
		cv_arena_free(&a);
		return as_fail(err, AS_ECORRUPT, "F_CALL: %s", why);
	}
	struct gate_req *g = calloc(1, sizeof *g);
	if (g) {
		call_names(cv, g->upstream, g->tool);
		snprintf(g->method, sizeof g->method, "%s", call_method(cv));
		if (!strncmp(g->method, "resources/", 10)) {
			char uri[CALL_URI_MAX + 1];
			call_name(cv, uri, sizeof uri);
			g->name = strdup(uri);
			g->args = json_pack("{s:s}", "uri", uri); /* what args.uri rules read */
		} else {
			g->args = call_args_json(cv);
			g->input = call_input_json(cv); /* a retry's answers (gatemrtr.c) */
		}
		g->call = malloc(call->n);
	}
	cv_arena_free(&a);
	if (!g || !g->args || !g->call) {
		gate_req_free(g);
		return AS_ENOMEM;
	}
	memcpy(g->call, call->s, call->n);
	g->n = call->n;
	*out = g;
	return 0;
}

/* A decided-or-held call's request: its view (from the signer's own catalog), its exact
 * bytes kept when the view masks anything, its request entry, and the policy's decision
 * now, or the wait for reviewers once the entry is on disk. */
static void call_request(struct signer *s, struct conn *c, struct req *r, struct gate_req *g, struct pq_item *it,
			 const struct upw *u, const struct up_tool *t, const char *r_id)
{
	char why[AS_ERRLEN] = "";
	r->view = t ? call_view(u, t, g->args, g->input) : read_view(u, g->name);
	json_object_set_new(r->view, "call", json_string(r->action));
	if (json_object_get(r->view, "masked") && exact_keep(s, g->call, g->n, r->action, why) != 0) {
		/* an auditor could not learn what ran: refused, nothing forwarded */
		slog("error", "a masked call's exact bytes could not be kept: %s", why);
		request_refused(s, c->id, r, why);
		return;
	}
	/* The request entry is encoded at once (op_add): the signer's arena serves to build it. */
	struct cv_arena *ea = &s->arena;
	cv_arena_reset(ea);
	struct cv *action = call_action(ea, r->view, why);
	const char *uid_agent = !c->http && s->reg ? registry_agent_by_uid(s->reg, c->uid) : NULL;
	struct cv *m = action ? request_entry(ea, action, c, r, it, uid_agent, cluster_replica(s)) : NULL;
	request_view(r, c, it, uid_agent);
	int decided = r->has_pd && r->pd.action != POL_ASK;
	struct op *o = NULL;
	char e2[AS_ERRLEN] = "out of memory";
	if (m)
		o = op_add(s, m, decided ? NULL : request_done, e2);
	if (!o) {
		request_refused(s, c->id, r, m ? e2 : why);
		return;
	}
	if (decided) {
		int task = g->task;
		if (policy_decide(s, c, it, r) != 0)
			return; /* refused: its agent heard, r is gone */
		if (r->pd.action == POL_ALLOW)
			predispatch(s, r, it->session_id);
		if (task) { /* decided at once, and still a task: it works until its call returns */
			json_t *res = result_base(it->session_id, "pending", 0);
			json_object_set_new(res, "deadline", json_integer((json_int_t)(it->deadline_ms / 1000)));
			send_result(s, c->id, r_id, res, 0);
			json_decref(res);
		}
		return;
	}
	o->it = *it;
	o->conn = c->id;
}

int h_call(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	const struct cv *rid = cv_get(f->body, "rid"), *client = cv_get(f->body, "client"),
			*call = cv_get(f->body, "call"), *hreq = cv_get(f->body, "hreq");
	GUARD(client_ok((const char *)client->s, client->n, err));
	uid_t uid = c->uid;
	if (c->http) {
		if (!hreq)
			return as_fail(err, AS_ECORRUPT, "IPC: missing field \"hreq\" (a call of an HTTP session)");
		GUARD(measured_take(s, hreq->u, c->id, &uid, err));
	}
	char r_id[PROTO_RID_MAX + 1];
	snprintf(r_id, sizeof r_id, "%.*s", (int)rid->n, (const char *)rid->s);
	struct gate_req *g;
	GUARD(gate_req_new(call, &g, err));
	snprintf(g->owner, sizeof g->owner, "%s", c->owner);
	if (retry_state(s, g, f, c, r_id) != 0)
		return 0;
	int ui = up_index(s, g->upstream);
	struct upw *u = ui >= 0 ? &s->gate.up[ui] : NULL;
	const struct up_tool *t = NULL;
	int tool = !strcmp(g->method, "tools/call"), read = !strcmp(g->method, "resources/read");
	for (size_t i = 0; tool && u && i < u->ntools; i++)
		if (!strcmp(u->tools[i].name, g->tool))
			t = &u->tools[i];
	if (u && !tool && !read) { /* prompts, completions, subscriptions: served, not decided (they act on nothing) */
		if (!strcmp(g->method, "resources/subscribe") || !strcmp(g->method, "resources/unsubscribe"))
			subscription(s, c->id, g->upstream, g->name, g->method[10] == 's');
		char sid[PQ_SID_LEN + 1];
		pq_new_session_id(sid);
		g->k = W_UP0 + ui;
		dispatch_now(s, g, sid, c->id, r_id, 0, 0);
		gate_req_free(g);
		return 0;
	}
	if (!t && !(read && u)) { /* the catalog changed under the worker: not an attack */
		char text[300];
		snprintf(text, sizeof text, "%s %s has no tool %s (any more)", u ? "upstream" : "no upstream is called",
			 g->upstream, g->tool);
		answer_refused(s, c->id, r_id, g->method, text, facts_of("", "unknown_tool", 0, g->upstream, g->tool));
		gate_req_free(g);
		return 0;
	}
	g->k = W_UP0 + ui;
	g->ann = t ? t->ann : 0;
	const struct cv *tk = cv_get(f->body, "task");
	g->task = tk && tk->t == CV_TRUE && !strcmp(g->method, "tools/call");
	/* a call held open counts in its principal's blocking limit; a task does not hold one */
	if (request_over_limit(s, c, uid, r_id, strlen(r_id), !g->task)) {
		gate_req_free(g);
		return 0;
	}
	struct req *r = calloc(1, sizeof *r);
	if (!r) {
		gate_req_free(g);
		return AS_ENOMEM;
	}
	r->conn = c->id;
	r->uid = uid;
	r->gate = g;
	r->collect = g->task ? "task" : "wait";
	snprintf(r->rid, sizeof r->rid, "%s", r_id);
	snprintf(r->type, sizeof r->type, "call");
	snprintf(r->client, sizeof r->client, "%.*s", (int)client->n, (const char *)client->s);
	snprintf(r->owner, sizeof r->owner, "%s", c->owner);
	call_digest(g->call, g->n, r->action);
	r->subjects = json_array();
	struct pq_item it = {0};
	request_terms(s, c, r, 0, &it); /* the policy reads the call, never the view */
	it.requester_id = c->id;
	it.requester_uid = uid;
	it.blocking = !g->task; /* a task is collected: the agent hears at once that it is working */
	it.data = r;
	g->created_ms = it.created_ms;
	if (r->has_pd && r->pd.action == POL_ALLOW && r->pd.record_calls) { /* reads: no ledger entry, no view */
		r->gate = NULL;
		dispatch_now(s, g, it.session_id, c->id, r_id, r->pd.line, 0);
		gate_req_free(g);
		req_free(r);
		return 0;
	}
	call_request(s, c, r, g, &it, u, t, r_id);
	return 0;
}

/* The gate's part of a request's end (finish_hook): a gated call's request finishes here. */
void gate_register(struct signer *s)
{
	finish_hook(s, gate_finish);
	phase_hook(s, PH_APPROVING, approval_phase);
	phase_hook(s, PH_UNRECORDED, approval_phase);
}
