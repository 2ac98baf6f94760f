/* What passes between a server and the agent of its call while the call runs (gate.c):
 * progress and log messages to the call's agent, resource updates to their subscribers,
 * an agent's cancellation to the server, and a server's requests of its client (sampling,
 * elicitation, roots) to the client of that call and never another, with the answer back
 * only from the connection that was asked. */
#define _GNU_SOURCE
#include "gateway/signer/gate_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what passes through during a call: progress, log messages, cancellation ---- */

/* The only call in flight to upstream k: a log message a server sends names no call, so it
 * reaches an agent only when it can be only this one's; NULL when there are none or several. */
static struct gcall *only_call(struct signer *s, int k)
{
	struct gcall *one = NULL;
	for (size_t i = 0; s->gate.gcalls && i < s->gate.gcall_hi; i++)
		if (s->gate.gcalls[i].used && s->gate.gcalls[i].k == k) {
			if (one)
				return NULL;
			one = &s->gate.gcalls[i];
		}
	return one;
}

static void note_to(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *js)
{
	struct cv_arena fa;
	cv_arena_init(&fa, 16);
	if (js)
		worker_send(s, W_MCP, frame_note(&fa, conn, rid, method, js));
	cv_arena_free(&fa);
}

/* A resource of upstream s->cur changed: each client subscribed to it hears so. */
static int resource_updated(struct signer *s, const struct cv *pb, char *err)
{
	json_t *params = gate_cbor_json(pb, CV_MAP, PROTO_UP_NOTE_MAX);
	const char *uri = json_string_value(json_object_get(params, "uri"));
	struct upw *u = upw_of(s, s->cur);
	if (!uri || !u) {
		json_decref(params);
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: a resource update without its uri");
	}
	json_t *p = json_pack("{s:s}", "uri", uri);
	char *js = p ? json_dumps(p, JSON_COMPACT) : NULL;
	size_t i;
	json_t *x;
	json_array_foreach(s->gate.subs, i, x)
	{
		if (!strcmp(json_string_value(json_array_get(x, 1)), u->cfg->name) &&
		    !strcmp(json_string_value(json_array_get(x, 2)), uri))
			note_to(s, (uint64_t)json_integer_value(json_array_get(x, 0)), "",
				"notifications/resources/updated", js);
	}
	free(js);
	json_decref(p);
	json_decref(params);
	return 0;
}

int h_up_note(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t cid = cv_get(f->body, "cid")->u;
	const struct cv *mt = cv_get(f->body, "method"), *pb = cv_get(f->body, "params");
	int progress = cv_text_eq(mt, "notifications/progress"), log = cv_text_eq(mt, "notifications/message");
	if (cv_text_eq(mt, "notifications/resources/updated") && cid == 0)
		return resource_updated(s, pb, err);
	if (!progress && !log)
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: a notification the gate does not relay");
	if (cid > s->gate.next_cid || (progress != (cid != 0)))
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: about call %llu, which was never dispatched",
			       (unsigned long long)cid);
	struct gcall *c = cid ? gate_gcall_find(s, s->cur, cid) : only_call(s, s->cur);
	if (!c)
		return 0; /* the call ended meanwhile, or a log message for no one call: dropped */
	json_t *params = gate_cbor_json(pb, CV_MAP, PROTO_UP_NOTE_MAX);
	if (!params)
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: params is not a canonical CBOR map");
	char *js = json_dumps(params, JSON_COMPACT);
	json_decref(params);
	note_to(s, c->conn, c->rid, progress ? "notifications/progress" : "notifications/message", js);
	free(js);
	return 0;
}

/* ---- a server's requests of the client: to the client of the call, never another ---- */

static void up_answer(struct signer *s, int k, const char *sid, const char *key, const uint8_t *p, size_t n)
{
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = ipc_frame_new(&a, F_UP_ANSWER, 2);
	char err[AS_ERRLEN];
	struct worker *w = &s->w[k];
	if (f && w->fd >= 0 && !ipc_put_text(&a, f, "sid", sid, strlen(sid)) && !ipc_put_bytes(&a, f, key, p, n) &&
	    ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("warning", "upstream worker %d: an answer could not be sent", k - W_UP0);
	cv_arena_free(&a);
}

/* An error for the server's request, as canonical CBOR {code, message}. */
static void up_refuse(struct signer *s, int k, const char *sid, const char *why)
{
	json_t *e = json_pack("{s:i,s:s}", "code", -32603, "message", why);
	struct buf b;
	buf_init(&b, PROTO_UP_NOTE_MAX);
	char err[AS_ERRLEN];
	if (e && call_value_encode(e, PROTO_UP_NOTE_MAX, &b, err) == 0)
		up_answer(s, k, sid, "error", b.p, b.len);
	buf_free(&b);
	json_decref(e);
}

/* A server's roots/list that no single call's client can answer (at start-up, or with several
 * calls in flight), answered as a client would: with the entry's "roots" (none: empty). */
static void up_roots(struct signer *s, int k, const char *sid)
{
	const struct upw *u = upw_of(s, k);
	json_t *list = json_array();
	static char uri[3 * UP_STRING_MAX + 8];
	for (size_t i = 0; u && list && i < u->cfg->nroots; i++)
		if (upstreams_file_uri(u->cfg->roots[i], uri, sizeof uri) == 0)
			json_array_append_new(list, json_pack("{s:s,s:s}", "uri", uri, "name", u->cfg->roots[i]));
	json_t *r = json_pack("{s:o}", "roots", list);
	struct buf b;
	buf_init(&b, PROTO_UP_NOTE_MAX);
	char err[AS_ERRLEN];
	if (r && call_value_encode(r, PROTO_UP_NOTE_MAX, &b, err) == 0)
		up_answer(s, k, sid, "result", b.p, b.len);
	else
		up_refuse(s, k, sid, "the configured roots do not fit one answer");
	buf_free(&b);
	json_decref(r);
}

int h_up_ask(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	const struct cv *sv = cv_get(f->body, "sid"), *mt = cv_get(f->body, "method"), *pb = cv_get(f->body, "params");
	char sid[PROTO_RID_MAX + 1];
	snprintf(sid, sizeof sid, "%.*s", (int)sv->n, (const char *)sv->s);
	if (!cv_text_eq(mt, "sampling/createMessage") && !cv_text_eq(mt, "elicitation/create") &&
	    !cv_text_eq(mt, "roots/list"))
		return as_fail(err, AS_ECORRUPT, "F_UP_ASK: a request the gate does not relay");
	json_t *params = gate_cbor_json(pb, CV_MAP, PROTO_UP_NOTE_MAX);
	if (!params)
		return as_fail(err, AS_ECORRUPT, "F_UP_ASK: params is not a canonical CBOR map");
	/* Over stdio a server's request names no call: it is relayed only when it can be only
	 * one agent's, the client of the one call in flight to this server. */
	struct gcall *c = only_call(s, s->cur);
	if (!c && cv_text_eq(mt, "roots/list")) { /* no one client to ask: the operator's roots */
		json_decref(params);
		up_roots(s, s->cur, sid);
		return 0;
	}
	struct gask *q = NULL;
	for (size_t i = 0; c && i < GASKS_MAX && !q; i++)
		if (!s->gate.asks[i].used)
			q = &s->gate.asks[i];
	if (!c || !q) {
		json_decref(params);
		up_refuse(s, s->cur, sid,
			  c ? "too many requests are waiting for clients"
			    : "assent relays a server's request only to the client of its one call in flight");
		return 0;
	}
	*q = (struct gask){.used = 1, .k = s->cur, .aid = ++s->gate.next_aid, .cid = c->cid, .conn = c->conn};
	snprintf(q->sid, sizeof q->sid, "%s", sid);
	char *js = json_dumps(params, JSON_COMPACT);
	json_decref(params);
	char m[32];
	snprintf(m, sizeof m, "%.*s", (int)mt->n, (const char *)mt->s);
	struct cv_arena fa;
	cv_arena_init(&fa, 16);
	if (js)
		worker_send(s, W_MCP, frame_ask(&fa, c->conn, c->rid, q->aid, m, js));
	free(js);
	cv_arena_free(&fa);
	return 0;
}

/* The client's answer, to the server that asked: only from the connection that was asked. */
int h_answer(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t conn = cv_get(f->body, "conn")->u, aid = cv_get(f->body, "aid")->u;
	const struct cv *rb = cv_get(f->body, "result"), *eb = cv_get(f->body, "error");
	if (!rb == !eb)
		return as_fail(err, AS_ECORRUPT, "F_ANSWER: exactly one of result and error");
	struct gask *q = NULL;
	for (size_t i = 0; s->gate.asks && i < GASKS_MAX && !q; i++)
		if (s->gate.asks[i].used && s->gate.asks[i].aid == aid)
			q = &s->gate.asks[i];
	if (!q) {
		if (aid && aid <= s->gate.next_aid)
			return as_fail(err, AS_ENOTFOUND, "an answer to request %llu, which ended: dropped",
				       (unsigned long long)aid);
		return as_fail(err, AS_ECORRUPT, "an answer to request %llu, which was never asked",
			       (unsigned long long)aid);
	}
	if (q->conn != conn)
		return as_fail(err, AS_ECORRUPT, "an answer to request %llu from connection %llu, which was not asked",
			       (unsigned long long)aid, (unsigned long long)conn);
	q->used = 0;
	if (gate_gcall_find(s, q->k, q->cid)) /* its call still runs: the server still waits */
		up_answer(s, q->k, q->sid, rb ? "result" : "error", rb ? rb->s : eb->s, rb ? rb->n : eb->n);
	return 0;
}

/* A connection ended: its subscriptions go with it. */
void gate_conn_end(struct signer *s, uint64_t conn)
{
	for (size_t i = json_array_size(s->gate.subs); i-- > 0;)
		if ((uint64_t)json_integer_value(json_array_get(json_array_get(s->gate.subs, i), 0)) == conn)
			json_array_remove(s->gate.subs, i);
}
