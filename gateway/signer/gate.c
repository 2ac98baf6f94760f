/* The gate (issue 15): assent in front of upstream MCP servers. The signer starts each
 * server (with its own environment) and a jailed upstream worker on the server's pipes,
 * learns the server's tools from that worker, decides every call an agent makes of them
 * by the policy, records the call's lifecycle (request, decision, dispatch, outcome), and
 * only then tells the worker to forward it, once. Nothing here parses what a server
 * wrote: its tools and results arrive as canonical CBOR, checked before use. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/gate.h"

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

#define GATE_META "io.assent/gate" /* the key of assent's facts in a result's _meta */

static int up_index(const struct signer *s, const char *name)
{
	for (size_t i = 0; i < s->nup; i++)
		if (!strcmp(s->up[i].cfg->name, name))
			return (int)i;
	return -1;
}

/* ---- a call from an agent ---- */

void gate_req_free(struct gate_req *g)
{
	if (!g)
		return;
	free(g->call);
	free(g->name);
	free(g->token);
	free(g->ustate);
	json_decref(g->input);
	json_decref(g->args);
	free(g);
}

void gate_evaluate(const struct req *r, struct pol_request *q)
{
	q->upstream = r->gate->upstream;
	q->tool = r->gate->tool[0] ? r->gate->tool : NULL; /* a resources/read names no tool */
	q->args = r->gate->args;
	q->annotations = r->gate->ann;
	q->message = NULL;
	q->context = NULL;
}

/* assent's facts into a result's _meta (taken). An upstream cannot speak for assent: keys
 * under io.assent/ are assent's alone, and the upstream's are dropped. */
static void gate_meta(json_t *res, json_t *facts)
{
	json_t *meta = json_object_get(res, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(res, "_meta", meta);
	}
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(meta, tmp, k, v)
	{
		if (!strncmp(k, "io.assent/", 10))
			json_object_del(meta, k);
	}
	json_object_set_new(meta, GATE_META, facts);
}

/* What the gate did with a call, for its record: its status and last ledger entry. */
static void note_facts(struct signer *s, uint64_t conn, const char *rid, const json_t *facts)
{
	const json_t *seq = json_object_get(facts, "outcome_seq");
	if (!seq)
		seq = json_object_get(facts, "decision_seq");
	rec_note(s, conn, rid, json_string_value(json_object_get(facts, "status")), 0,
		 (uint64_t)json_integer_value(seq));
}

/* The raw CallToolResult answer, with assent's facts in its _meta. */
static void answer_call(struct signer *s, uint64_t conn, const char *rid, json_t *res, json_t *facts)
{
	note_facts(s, conn, rid, facts);
	gate_meta(res, facts);
	send_result_raw(s, conn, rid, res);
	json_decref(res);
}

/* The same for a task's call: the answer is kept for its owner, its status the gate's. */
static void answer_task(const struct gcall *c, json_t *res, json_t *facts, struct signer *s)
{
	json_t *r = json_pack("{s:O?,s:s,s:O}", "status", json_object_get(facts, "status"), "session_id", c->sid,
			      "io.assent/call_result", res);
	gate_meta(res, facts); /* res is r's too: the same object */
	json_decref(res);
	task_end(s, c->sid, c->conn, c->owner, c->created_ms, r);
}

static json_t *facts_of(const char *sid, const char *status, uint64_t seq, const char *upstream, const char *tool);
static void answer_refused(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *text,
			   json_t *facts);
static void answer_task(const struct gcall *c, json_t *res, json_t *facts, struct signer *s);

static void refuse_g(struct signer *s, const struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     const char *text, json_t *facts)
{
	if (!g->task) {
		answer_refused(s, conn, rid, g->method, text, facts);
		return;
	}
	struct gcall c = {.task = 1, .conn = conn, .created_ms = g->created_ms};
	snprintf(c.sid, sizeof c.sid, "%s", sid);
	snprintf(c.owner, sizeof c.owner, "%s", g->owner);
	json_t *res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError", 1);
	answer_task(&c, res, facts, s);
}

static json_t *facts_of(const char *sid, const char *status, uint64_t seq, const char *upstream, const char *tool)
{
	json_t *f =
	    json_pack("{s:s,s:s,s:s,s:s}", "session_id", sid, "status", status, "upstream", upstream, "tool", tool);
	if (seq)
		json_object_set_new(f, "decision_seq", json_integer((json_int_t)seq));
	return f;
}

/* A forwarded call's facts: those above, the digest of the exact call that was decided, and
 * its approval token when the rule asked for one. */
static json_t *facts_call(const struct gcall *c, const char *status)
{
	json_t *f = facts_of(c->sid, status, c->seq, c->upstream, c->tool);
	if (c->digest[0])
		json_object_set_new(f, "call", json_string(c->digest));
	if (c->token[0])
		json_object_set_new(f, "approval_token", json_string(c->token));
	return f;
}

/* A gated call of g that ends without reaching its server: told, or kept for a task. */
static void refuse_g(struct signer *s, const struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     const char *text, json_t *facts);

/* A call that ends without reaching the server (or with the server's error): an isError
 * result saying why, or for another method than tools/call a JSON-RPC error with the
 * gate's facts as its data. */
static void answer_refused(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *text,
			   json_t *facts)
{
	if (method && strcmp(method, "tools/call")) {
		note_facts(s, conn, rid, facts);
		json_t *data = json_pack("{s:o}", GATE_META, facts);
		send_rpc_error(s, conn, rid, -32603, text, data);
		json_decref(data);
		return;
	}
	json_t *res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError", 1);
	answer_call(s, conn, rid, res, facts);
}

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
	int rc = j && v ? cv_from_json_value(a, j, v, 0, 1, err) : as_fail(err, AS_ENOMEM, "out of memory");
	json_decref(j);
	return rc == 0 ? v : NULL;
}

/* A free slot for a dispatched call. Slots are taken lowest first and every scan stops at
 * gcall_hi, one past the highest in use, so that the few calls in flight cost a few steps
 * per frame rather than GCALLS_MAX. */
static struct gcall *gcall_new(struct signer *s)
{
	for (size_t i = 0; i < GCALLS_MAX; i++)
		if (!s->gcalls[i].used) {
			if (i >= s->gcall_hi)
				s->gcall_hi = i + 1;
			return &s->gcalls[i];
		}
	return NULL;
}

static void gcall_free(struct signer *s, struct gcall *c)
{
	c->used = 0;
	while (s->gcall_hi && !s->gcalls[s->gcall_hi - 1].used)
		s->gcall_hi--;
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
	if (ledgered) /* a call the ledger holds (decided, not only recorded): its dispatch is an event; a
		       * read the policy lets through with `record calls` has its call record alone */
		rec_event_in(s, "call.dispatched", sid, rec_call_id(s, conn, rid),
			     json_pack("{s:s,s:s,s:s,s:I,s:b}", "upstream", g->upstream, "tool", g->tool, "call",
				       digest, "rule", (json_int_t)rule, "ledgered", ledgered));
	if (!c || w->fd < 0 || w->state != S_READY) {
		static const char gone[] = "the upstream server is not available now: the call was not forwarded";
		if (ledgered && c) { /* its dispatch entry is on disk: its outcome follows it */
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
			gate_call_end(s, c, "error", NULL, 0, NULL, gone);
			return;
		}
		refuse_g(s, g, sid, conn, rid, gone, facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		return;
	}
	*c = (struct gcall){.used = 1,
			    .k = g->k,
			    .caps = g->caps,
			    .ledgered = ledgered,
			    .cid = ++s->next_cid,
			    .conn = conn,
			    .seq = g->seq,
			    .started_ms = now_ms(),
			    .rule = rule};
	c->until_ms = c->started_ms + 1000ull * s->call_timeout_s;
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
	struct cv *f = ipc_frame_new(&a, F_DISPATCH, 5);
	char err[AS_ERRLEN];
	if (!f || ipc_put_uint(&a, f, "cid", c->cid) || ipc_put_bytes(&a, f, "call", g->call, g->n) ||
	    ipc_put_text(&a, f, "digest", digest, strlen(digest)) ||
	    (g->caps && ipc_put_uint(&a, f, "caps", g->caps)) ||
	    (g->ustate && ipc_put_text(&a, f, "state", g->ustate, strlen(g->ustate))) ||
	    ipc_conn_send(&w->ipc, f, -1, err) != 0)
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
	if (!pos) {
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

/* Appends the dispatch entry (durable before the call leaves); takes g. */
static void dispatch(struct signer *s, struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     unsigned rule)
{
	char digest[72], err[AS_ERRLEN] = "out of memory";
	call_digest(g->call, g->n, digest);
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
	snprintf(d->sid, sizeof d->sid, "%s", sid);
	snprintf(d->rid, sizeof d->rid, "%s", rid);
	o->own = d; /* dispatch_done's own record */
}

/* finish() of a gated call: approved, it is dispatched; otherwise the agent hears why
 * not, as an isError result. Returns 1 (it took the request). */
int gate_finish(struct signer *s, struct pq_item *it, json_t *result)
{
	struct req *r = it->data;
	struct gate_req *g = r->gate;
	g->seq = r->seq;
	const char *jwt = json_string_value(json_object_get(result, "approval_token"));
	if (jwt && strlen(jwt) < sizeof((struct gcall *)0)->token) /* token yes: it goes with the result */
		g->token = strdup(jwt);
	const char *status = json_string_value(json_object_get(result, "status"));
	if (json_is_true(json_object_get(result, "approved"))) {
		r->gate = NULL;
		dispatch(s, g, it->session_id, r->conn, r->rid, r->has_pd ? r->pd.line : 0);
	} else if (it->blocking || g->task) {
		const char *why = json_string_value(json_object_get(result, "response"));
		const char *who = json_string_value(json_object_get(result, "reviewer"));
		char text[1200];
		if (status && !strcmp(status, "timeout"))
			snprintf(text, sizeof text,
				 "timeout: no reviewer decided before the deadline; the call was not forwarded "
				 "(session_id %s)",
				 it->session_id);
		else if (status && !strcmp(status, "cancelled")) /* the daemon stopping (cancel_waiting) */
			snprintf(text, sizeof text, "%s; the call was not forwarded (session_id %s)",
				 json_string_value(json_object_get(result, "error")) ?: "cancelled", it->session_id);
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
	if (!s->subs)
		s->subs = json_array();
	size_t i;
	json_t *x;
	json_array_foreach(s->subs, i, x)
	{
		if ((uint64_t)json_integer_value(json_array_get(x, 0)) == conn &&
		    !strcmp(json_string_value(json_array_get(x, 1)), up) &&
		    !strcmp(json_string_value(json_array_get(x, 2)), uri)) {
			if (!on)
				json_array_remove(s->subs, i);
			return;
		}
	}
	if (on && json_array_size(s->subs) < 4096)
		json_array_append_new(s->subs, json_pack("[I,s,s]", (json_int_t)conn, up, uri));
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
	struct cv *m = action ? request_entry(ea, action, c, r, it, uid_agent) : NULL;
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
		policy_decide(s, c, it, r);
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
	struct upw *u = ui >= 0 ? &s->up[ui] : NULL;
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

/* ---- the server's answer ---- */

struct gcall *gate_gcall_find(struct signer *s, int k, uint64_t cid)
{
	for (size_t i = 0; i < s->gcall_hi; i++)
		if (s->gcalls[i].used && s->gcalls[i].k == k && s->gcalls[i].cid == cid)
			return &s->gcalls[i];
	return NULL;
}

struct outcome_wait { /* an outcome entry waiting for its commit, and the answer it frees */
	struct gcall c;
	json_t *res;
	char *text; /* res NULL: why the call ended without a result */
};

/* The agent's answer to a dispatched call: the server's result, or why there is none. */
static void call_answer(struct signer *s, const struct gcall *c, json_t *res, const char *text, json_t *facts)
{
	if (c->task) { /* a task: the result (or an isError one saying why) is kept for tasks/get */
		if (!res)
			res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
					text ? text : "the call ended without a result", "isError", 1);
		answer_task(c, res, facts, s);
		return;
	}
	if (res)
		answer_call(s, c->conn, c->rid, res, facts);
	else
		answer_refused(s, c->conn, c->rid, c->method, text ? text : "the call ended without a result", facts);
}

static void outcome_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct outcome_wait *w = o->own;
	o->own = NULL;
	if (!pos) /* the server ran it: the agent hears its result, and the log why the ledger does not */
		slog("error", "outcome of %s not recorded: %s", w->c.sid, err);
	json_t *facts = facts_call(&w->c, "forwarded");
	if (pos)
		json_object_set_new(facts, "outcome_seq", json_integer((json_int_t)pos->seq));
	rec_event_in(s, "call.finished", w->c.sid, rec_call_id(s, w->c.conn, w->c.rid),
		     json_pack("{s:s,s:s,s:I,s:I,s:b}", "upstream", w->c.upstream, "tool", w->c.tool, "duration_ms",
			       (json_int_t)(now_ms() - w->c.started_ms), "outcome_seq",
			       (json_int_t)(pos ? pos->seq : 0), "error", w->text != NULL));
	call_answer(s, &w->c, w->res, w->text, facts);
	free(w->text);
	free(w);
}

/* Records a dispatched call's outcome (when it was ledgered) and answers its agent with res
 * (taken; NULL: an isError result, or JSON-RPC error, of text). */
void gate_call_end(struct signer *s, struct gcall *c, const char *status, const uint8_t *bytes, size_t n, json_t *res,
		   const char *text)
{
	struct gcall copy = *c;
	gcall_free(s, c);
	for (size_t i = 0; s->asks && i < GASKS_MAX; i++) /* its server's questions end with it */
		if (s->asks[i].used && s->asks[i].k == copy.k && s->asks[i].cid == copy.cid)
			s->asks[i].used = 0;
	if (!copy.ledgered) {
		call_answer(s, &copy, res, text, facts_call(&copy, "forwarded"));
		return;
	}
	char digest[72] = "";
	if (bytes)
		call_digest(bytes, n, digest);
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 6);
	size_t i = 0;
	int rc = !m;
	if (!rc)
		rc = kv_text(a, m, &i, "kind", "outcome", 7) |
		     kv_text(a, m, &i, "session_id", copy.sid, strlen(copy.sid)) |
		     kv_text(a, m, &i, "status", status, strlen(status)) |
		     kv_uint(a, m, &i, "duration_ms", now_ms() - copy.started_ms);
	if (!rc && bytes) {
		struct cv *r = kv(a, m, &i, "result");
		rc = slot_map(a, r, 2);
		size_t j = 0;
		if (!rc)
			rc = kv_text(a, r, &j, "sha256", digest + 7, 64) | kv_uint(a, r, &j, "size", n);
	}
	if (!rc && text)
		rc = kv_text(a, m, &i, "reason", text, strlen(text) > 400 ? 400 : strlen(text));
	struct outcome_wait *w = calloc(1, sizeof *w);
	char err[AS_ERRLEN] = "out of memory";
	struct op *o = NULL;
	if (!rc && w) {
		m->n = i;
		o = op_add(s, m, outcome_done, err);
	}
	if (!o) {
		slog("error", "outcome of %s not recorded: %s", copy.sid, err);
		call_answer(s, &copy, res, text, facts_call(&copy, "forwarded"));
		free(w);
		return;
	}
	w->c = copy;
	w->res = res;
	w->text = text ? strdup(text) : NULL;
	o->own = w; /* outcome_done's own record */
}

void gate_stale_add(struct upw *u, uint64_t cid)
{
	u->stale[u->nstale++ % (sizeof u->stale / sizeof *u->stale)] = cid;
}

static int stale_has(const struct upw *u, uint64_t cid)
{
	for (size_t i = 0; i < sizeof u->stale / sizeof *u->stale; i++)
		if (u->stale[i] == cid && cid)
			return 1;
	return 0;
}

int h_up_result(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t cid = cv_get(f->body, "cid")->u;
	const struct cv *rb = cv_get(f->body, "result"), *eb = cv_get(f->body, "error");
	if (!rb == !eb)
		return as_fail(err, AS_ECORRUPT, "F_UP_RESULT: exactly one of result and error");
	struct gcall *c = gate_gcall_find(s, s->cur, cid);
	struct upw *u = upw_of(s, s->cur);
	if (!c) {
		if (u && stale_has(u, cid))
			return as_fail(err, AS_ENOTFOUND, "a late answer to call %llu, given up on: dropped",
				       (unsigned long long)cid);
		return as_fail(err, AS_ECORRUPT, "a result for call %llu, which was never dispatched to it",
			       (unsigned long long)cid);
	}
	if (eb) {
		char text[PROTO_UP_ERROR_MAX + 64];
		snprintf(text, sizeof text, "upstream %s: %.*s", c->upstream, (int)eb->n, (const char *)eb->s);
		const struct cv *unk = cv_get(f->body, "unknown");
		gate_call_end(s, c, unk && unk->t == CV_TRUE ? "unknown" : "error", NULL, 0, NULL, text);
		return 0;
	}
	json_t *res = gate_cbor_json(rb, CV_MAP, PROTO_UP_RESULT_MAX);
	if (!res)
		return as_fail(err, AS_ECORRUPT, "F_UP_RESULT: result is not a canonical CBOR map");
	const char *rt = json_string_value(json_object_get(res, "resultType"));
	if (rt && strcmp(rt, "complete") && strcmp(rt, "input_required")) {
		char text[200];
		snprintf(text, sizeof text,
			 "upstream %s: its answer has resultType \"%.40s\", which assent does not carry", c->upstream,
			 rt);
		json_decref(res);
		gate_call_end(s, c, "error", NULL, 0, NULL, text);
		return 0;
	}
	if (rt && !strcmp(rt, "input_required")) {
		char why[AS_ERRLEN], text[AS_ERRLEN + 64];
		json_t *ir = gate_input_required(s, c, res, why); /* its questions, with a state of ours */
		json_decref(res);
		snprintf(text, sizeof text, "upstream %s: %s", c->upstream, why);
		if (ir)
			gate_call_end(s, c, "input_required", rb->s, rb->n, ir, NULL);
		else
			gate_call_end(s, c, "error", NULL, 0, NULL, text);
		return 0;
	}
	gate_call_end(s, c, json_is_true(json_object_get(res, "isError")) ? "is_error" : "ok", rb->s, rb->n, res, NULL);
	return 0;
}

/* Dispatched calls whose server did not answer in ASSENT_UPSTREAM_CALL_TIMEOUT: the agent
 * is told, and the outcome is unknown (it may have run). */
void gate_tick(struct signer *s)
{
	if (!s->gcalls)
		return;
	uint64_t now = now_ms();
	for (size_t i = 0; i < s->gcall_hi; i++) {
		struct gcall *c = &s->gcalls[i];
		if (!c->used || c->until_ms > now)
			continue;
		struct upw *u = upw_of(s, c->k);
		if (u)
			gate_stale_add(u, c->cid);
		char text[300];
		snprintf(text, sizeof text,
			 "upstream %s did not answer within %u s (ASSENT_UPSTREAM_CALL_TIMEOUT): the call was "
			 "forwarded and its outcome is unknown",
			 c->upstream, s->call_timeout_s);
		gate_call_end(s, c, "unknown", NULL, 0, NULL, text);
	}
}

/* Upstream worker k is down: its server goes too, and the calls in flight end unknown. */
void gate_worker_down(struct signer *s, int k, const char *why)
{
	struct upw *u = upw_of(s, k);
	if (!u)
		return;
	gate_kill_server(u);
	u->ready = 0;
	for (size_t i = 0; s->gcalls && i < s->gcall_hi; i++) {
		struct gcall *c = &s->gcalls[i];
		if (!c->used || c->k != k)
			continue;
		char text[300];
		snprintf(text, sizeof text,
			 "upstream %s stopped (%s) while the call was in flight: it was forwarded and its outcome is "
			 "unknown",
			 c->upstream, why);
		gate_call_end(s, c, "unknown", NULL, 0, NULL, text);
	}
}

/* ---- gated calls collected as tasks ---- */

static struct gcall *task_call(struct signer *s, const char *sid, const char *owner)
{
	for (size_t i = 0; s->gcalls && i < s->gcall_hi; i++)
		if (s->gcalls[i].used && s->gcalls[i].task && !strcmp(s->gcalls[i].sid, sid) &&
		    !strcmp(s->gcalls[i].owner, owner))
			return &s->gcalls[i];
	return NULL;
}

/* A task whose call was forwarded and has not returned: working. NULL: no such call. */
json_t *gate_task_state(struct signer *s, const char *sid, const char *owner)
{
	const struct gcall *c = task_call(s, sid, owner);
	return c ? json_pack("{s:s,s:s,s:I,s:I}", "state", "working", "session_id", sid, "created_ms",
			     (json_int_t)c->created_ms, "updated_ms", (json_int_t)c->started_ms)
		 : NULL;
}

/* tasks/cancel of a forwarded call: its server is told; 1 when there was one. */
int gate_task_cancel(struct signer *s, const char *sid, const char *owner)
{
	struct gcall *c = task_call(s, sid, owner);
	if (!c)
		return 0;
	gate_cancel(s, c->conn, c->rid);
	return 1;
}
