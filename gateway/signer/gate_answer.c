/* The gate's answers (gate.c takes the calls): a dispatched call's answer from its server,
 * its outcome ledgered and its agent answered; a call cancelled, timed out or given up on;
 * gated calls collected as tasks. */
#define _GNU_SOURCE
#include "gateway/signer/gate_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GATE_META "io.assent/gate" /* the key of assent's facts in a result's _meta */

/* ---- answering an agent ---- */

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
void answer_call(struct signer *s, uint64_t conn, const char *rid, json_t *res, json_t *facts)
{
	note_facts(s, conn, rid, facts);
	gate_meta(res, facts);
	send_result_raw(s, conn, rid, res);
	json_decref(res);
}

/* The same for a task's call: the answer is kept for its owner, its status the gate's. */
void answer_task(const struct gcall *c, json_t *res, json_t *facts, struct signer *s)
{
	json_t *r = json_pack("{s:O?,s:s,s:O}", "status", json_object_get(facts, "status"), "session_id", c->sid,
			      "io.assent/call_result", res);
	gate_meta(res, facts); /* res is r's too: the same object */
	json_decref(res);
	task_end(s, c->sid, c->conn, c->owner, c->created_ms, r);
}

/* A gated call of g that ends without reaching its server: told, or kept for a task. */
void refuse_g(struct signer *s, const struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
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

json_t *facts_of(const char *sid, const char *status, uint64_t seq, const char *upstream, const char *tool)
{
	json_t *f =
	    json_pack("{s:s,s:s,s:s,s:s}", "session_id", sid, "status", status, "upstream", upstream, "tool", tool);
	if (seq)
		json_object_set_new(f, "decision_seq", json_integer((json_int_t)seq));
	return f;
}

/* A call that ends without reaching the server (or with the server's error): an isError
 * result saying why, or for another method than tools/call a JSON-RPC error with the
 * gate's facts as its data. */
void answer_refused(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *text,
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

static void gcall_free(struct signer *s, struct gcall *c)
{
	c->used = 0;
	while (s->gate.gcall_hi && !s->gate.gcalls[s->gate.gcall_hi - 1].used)
		s->gate.gcall_hi--;
}

/* ---- the server's answer ---- */

struct gcall *gate_gcall_find(struct signer *s, int k, uint64_t cid)
{
	for (size_t i = 0; i < s->gate.gcall_hi; i++)
		if (s->gate.gcalls[i].used && s->gate.gcalls[i].k == k && s->gate.gcalls[i].cid == cid)
			return &s->gate.gcalls[i];
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
	phase_run(s, PH_ENDED,
		  &(struct phase_ev){.sid = w->c.sid,
				     .seq = pos ? pos->seq : 0,
				     .call = &(struct phase_call){.conn = w->c.conn,
								  .rid = w->c.rid,
								  .upstream = w->c.upstream,
								  .tool = w->c.tool,
								  .duration_ms = now_ms() - w->c.started_ms,
								  .error = w->text != NULL}});
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
	for (size_t i = 0; s->gate.asks && i < GASKS_MAX; i++) /* its server's questions end with it */
		if (s->gate.asks[i].used && s->gate.asks[i].k == copy.k && s->gate.asks[i].cid == copy.cid)
			s->gate.asks[i].used = 0;
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
	if (!s->gate.gcalls)
		return;
	uint64_t now = now_ms();
	for (size_t i = 0; i < s->gate.gcall_hi; i++) {
		struct gcall *c = &s->gate.gcalls[i];
		if (!c->used || c->until_ms > now)
			continue;
		struct upw *u = upw_of(s, c->k);
		if (u)
			gate_stale_add(u, c->cid);
		char text[300];
		snprintf(text, sizeof text,
			 "upstream %s did not answer within %u s (ASSENT_UPSTREAM_CALL_TIMEOUT): the call was "
			 "forwarded and its outcome is unknown",
			 c->upstream, s->gate.call_timeout_s);
		gate_call_end(s, c, "unknown", NULL, 0, NULL, text);
	}
}

/* ---- gated calls collected as tasks ---- */

static struct gcall *task_call(struct signer *s, const char *sid, const char *owner)
{
	for (size_t i = 0; s->gate.gcalls && i < s->gate.gcall_hi; i++)
		if (s->gate.gcalls[i].used && s->gate.gcalls[i].task && !strcmp(s->gate.gcalls[i].sid, sid) &&
		    !strcmp(s->gate.gcalls[i].owner, owner))
			return &s->gate.gcalls[i];
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

/* The agent cancelled a call that was forwarded: its server is told (MCP cancellation),
 * and the call ends outcome unknown (it may have run); a late answer is dropped. */
void gate_cancel(struct signer *s, uint64_t conn, const char *rid)
{
	for (size_t i = 0; s->gate.gcalls && i < s->gate.gcall_hi; i++) {
		struct gcall *c = &s->gate.gcalls[i];
		if (!c->used || c->conn != conn || strcmp(c->rid, rid))
			continue;
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *f = ipc_frame_new(&a, F_UP_CANCEL, 1);
		char err[AS_ERRLEN];
		struct worker *w = &s->w[c->k];
		if (f && w->fd >= 0 && !ipc_put_uint(&a, f, "cid", c->cid) && ipc_conn_send(&w->ipc, f, -1, err) != 0)
			slog("warning", "upstream %s: its cancel could not be sent", c->upstream);
		cv_arena_free(&a);
		struct upw *u = upw_of(s, c->k);
		if (u)
			gate_stale_add(u, c->cid);
		c->conn = 0; /* nobody waits for an answer now */
		gate_call_end(s, c, "unknown", NULL, 0, NULL, "the agent cancelled the call after it was forwarded");
	}
}
