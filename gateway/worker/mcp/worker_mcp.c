/* The mcp worker: jailed, it parses what agents send (JSON-RPC lines on the
 * connections the signer hands it), answers the protocol's own methods itself,
 * and turns tool calls into typed frames for the signer. It holds no key, no
 * file, no identity: a compromised worker can only send frames the signer checks.
 *
 * This file is its loop and what the signer sends it (the receive table); wmcp.h
 * names the other files and what they share. */
#define _GNU_SOURCE
#include "gateway/worker/worker.h"
#include "gateway/worker/mcp/wmcp.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/proto/call.h"
#include "gateway/proto/frames.h"
#include "gateway/worker/wio.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/mhdreq.h"
#include "gateway/worker/mcp/callrec.h"
#include "gateway/worker/mcp/modern.h"
#include "gateway/proto/proto.h"

struct mconn *wm_conn_find(struct mw *w, uint64_t id)
{
	for (size_t i = 0; i < PROTO_CONNS_MAX; i++)
		if (w->conns[i].used && w->conns[i].id == id)
			return &w->conns[i];
	return NULL;
}

void wm_id_json(const struct mcp_id *id, char out[PROTO_RID_MAX + 1])
{
	json_t *j = id->t == MCP_ID_INT ? json_integer(id->i) : json_stringn(id->s, id->len);
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	snprintf(out, PROTO_RID_MAX + 1, "%s", s ? s : "null");
	free(s);
	json_decref(j);
}

static int id_parse(const char *txt, size_t n, struct mcp_id *id)
{
	json_error_t je;
	json_t *j = json_loadb(txt, n, JSON_DECODE_ANY, &je);
	int rc = 0;
	memset(id, 0, sizeof *id);
	if (j && json_is_integer(j)) {
		id->t = MCP_ID_INT;
		id->i = json_integer_value(j);
	} else if (j && json_is_string(j) && json_string_length(j) <= MCP_ID_MAX) {
		id->t = MCP_ID_STR;
		id->len = json_string_length(j);
		memcpy(id->s, json_string_value(j), id->len);
	} else {
		rc = AS_EINVAL;
	}
	json_decref(j);
	return rc;
}

/* What this worker sends, the signer's field tables (gateway/proto/frames.c) let in. */
_Static_assert(MH_BEARER_MAX <= PROTO_BEARER_MAX && MH_SESSION_LEN <= PROTO_SESSION_MAX,
	       "F_HTTP_AUTH bearer and session fit the table");
_Static_assert(MCP_WAIT_MAX <= PROTO_WAIT_MAX, "F_COLLECT wait fits the table");

/* A frame about one connection: {conn} (F_CONN_CLOSED, F_SESSION_END), or {conn, rid}
 * (F_CANCEL) when rid is given. */
void wm_send_about(struct mw *w, uint32_t type, uint64_t conn, const char *rid)
{
	if (type == F_CONN_CLOSED || type == F_SESSION_END)
		callrec_flush(w->rec); /* the connection's records go first, while the signer knows it */
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = ipc_frame_new(&a, type, 2);
	if (f && ipc_put_uint(&a, f, "conn", conn) == 0 && (!rid || ipc_put_text(&a, f, "rid", rid, strlen(rid)) == 0))
		wm_send_frame(w, f);
	cv_arena_free(&a);
}

void wm_conn_close(struct mw *w, struct mconn *c, int tell)
{
	callrec_conn_gone(w->rec, c->id); /* before the signer forgets the connection */
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (h->ss && h->ss->conn == c->id)
			h->ss = NULL;
	sse_drop_conn(&w->sse, c->id);
	listen_conn_gone(&w->listen, c->id);
	if (tell)
		wm_send_about(w, F_CONN_CLOSED, c->id, NULL);
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++)
		if (w->calls[i].used && w->calls[i].conn == c->id)
			w->calls[i].used = 0;
	for (size_t i = 0; i < sizeof w->tcalls / sizeof w->tcalls[0]; i++)
		if (w->tcalls[i].used && w->tcalls[i].conn == c->id)
			w->tcalls[i].used = 0;
	if (c->fd >= 0)
		close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	memset(c, 0, sizeof *c);
}

/* Send a frame for a tool call; returns 0 or an error the caller answers with. */
int wm_send_frame(struct mw *w, struct cv *f)
{
	int rc = ipc_send(w->ipcfd, f, -1, w->err);
	if (rc == AS_EIO)
		_exit(3); /* the signer is gone or stuck: nothing can be decided here; be restarted */
	if (rc != 0)
		wlog(w, "error", "mcp worker: cannot send a frame: %s", w->err);
	return rc;
}

/* listen_notify's side of a connection: its buffer, and its stream (HTTP) after a line. */
static struct buf *listen_out(void *ctx, uint64_t conn)
{
	struct mconn *c = wm_conn_find(ctx, conn);
	return c ? &c->out : NULL;
}

static void listen_sent(void *ctx, uint64_t conn, const struct mcp_id *id)
{
	struct mconn *c = wm_conn_find(ctx, conn);
	char rid[PROTO_RID_MAX + 1];
	wm_id_json(id, rid);
	if (c && c->http)
		wm_route_out(ctx, c, rid, strlen(rid), 0);
}

/* The client's answer to a server's request: to the signer, as CBOR. */
void wm_answer_frame(struct mw *w, uint64_t conn, uint64_t aid, const json_t *result, const json_t *error)
{
	struct buf enc;
	buf_init(&enc, PROTO_UP_RESULT_MAX);
	char err[AS_ERRLEN];
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_ANSWER, 3);
	const json_t *body = result ? result : error;
	if (f && json_is_object(body) &&
	    call_value_encode(body, result ? PROTO_UP_RESULT_MAX : PROTO_UP_NOTE_MAX, &enc, err) == 0 &&
	    !ipc_put_uint(a, f, "conn", conn) && !ipc_put_uint(a, f, "aid", aid) &&
	    !ipc_put_bytes(a, f, result ? "result" : "error", enc.p, enc.len))
		wm_send_frame(w, f);
	buf_free(&enc);
}

/* F_ASK: the request goes to the client (on its stream, or the call's HTTP stream) when it
 * declared the capability; otherwise the server hears why not at once. */
static void ask_client(struct mw *w, struct ipc_frame *f)
{
	uint64_t conn, aid;
	const char *rid, *mt, *js;
	size_t ridn, mtn, jsn;
	struct mconn *c;
	conn = frame_get_uint(f->body, "conn"); /* its table (frames.c) checked every field */
	aid = frame_get_uint(f->body, "aid");
	rid = frame_get_text(f->body, "rid", &ridn);
	mt = frame_get_text(f->body, "method", &mtn);
	js = frame_get_text(f->body, "json", &jsn);
	char m[PROTO_METHOD_MAX + 1];
	snprintf(m, sizeof m, "%.*s", (int)mtn, mt);
	c = wm_conn_find(w, conn);
	int ok = c && !c->modern && !c->stateless &&
		 (!strcmp(m, "sampling/createMessage") ? c->client.sampling
		  : !strcmp(m, "elicitation/create")   ? c->client.elicitation
						       : c->client.roots);
	if (!ok) {
		json_t *e =
		    json_pack("{s:i,s:s}", "code", -32601, "message",
			      "the agent's client does not take this request (it did not declare the capability)");
		wm_answer_frame(w, conn, aid, NULL, e);
		json_decref(e);
		return;
	}
	char id[40];
	snprintf(id, sizeof id, "assent-ask-%llu", (unsigned long long)aid);
	json_t *p = json_loadb(js, jsn, 0, NULL);
	json_t *msg =
	    json_pack("{s:s,s:s,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method", m, "params", p ? p : json_object());
	char *line = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	int rc = line ? buf_put(&c->out, line, strlen(line)) : AS_ENOMEM;
	if (rc == 0)
		rc = buf_putc(&c->out, '\n');
	free(line);
	if (c->http)
		wm_route_out(w, c, rid, ridn, 0);
}

/* ---- what the signer sends: one handler per frame type (the receive table below) ---- */

/* F_CONN_NEW: a stdio connection the signer accepted, its descriptor with the frame. */
static void on_conn_new(struct mw *w, struct ipc_frame *f)
{
	uint64_t conn;
	char err[AS_ERRLEN];
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) != 0 || f->nfds != 1)
		return;
	struct mconn *c = wm_free_slot(w);
	if (c) {
		memset(c, 0, sizeof *c);
		c->used = 1;
		c->id = conn;
		c->fd = f->fds[0];
		f->fds[0] = -1;
		buf_init(&c->in, MCP_LINE_MAX);
		buf_init(&c->out, 64u << 20);
		return;
	}
	/* full: the descriptor is closed with the frame, and the signer frees its slot */
	wm_send_about(w, F_CONN_CLOSED, conn, NULL);
}

/* An F_RESULT's fields, read once. */
struct fresult {
	uint64_t conn;
	const char *rid, *js;
	size_t ridn, jsn;
	int iserr, raw, rpcerr, recorded;
	struct mcp_id id;
};

/* The gate refused a read or a prompt: a JSON-RPC error. */
static void result_rpc_error(struct mw *w, struct mconn *c, const struct fresult *r)
{
	json_t *e = json_loadb(r->js, r->jsn, 0, NULL);
	if (r->recorded)
		callrec_end(w->rec, r->conn, r->rid, r->ridn, NULL, e, r->jsn);
	json_t *data = json_incref(json_object_get(e, "data"));
	mcp_line_error(&c->out, &r->id, (int)json_integer_value(json_object_get(e, "code")),
		       json_string_value(json_object_get(e, "message")) ?: "refused", data, NULL);
	json_decref(e);
}

/* An upstream's CallToolResult, with assent's _meta: sent as it is. */
static void result_raw(struct mw *w, struct mconn *c, const struct fresult *r)
{
	char err[AS_ERRLEN];
	size_t start = c->out.len;
	json_t *res = json_loadb(r->js, r->jsn, 0, NULL);
	if (r->recorded)
		callrec_end(w->rec, r->conn, r->rid, r->ridn, res, NULL, r->jsn);
	/* A read the gate decided is this caller's, never to be shared from a cache. */
	const char *hints = json_is_array(json_object_get(res, "contents")) && !json_object_get(res, "cacheScope")
				? "\"ttlMs\":0,\"cacheScope\":\"private\""
				: NULL;
	/* an input_required result (gatemrtr.c), or a 2026 server's, has its resultType */
	int typed = json_is_string(json_object_get(res, "resultType"));
	mcp_line_result(&c->out, &r->id, res ? res : mcp_tool_error("the result could not be read"), NULL);
	if (c->modern && !typed && mcp_line_complete(&c->out, start, hints, err) != 0)
		c->out.len = start;
}

/* assent's own tool's answer: a task's, the signer's offer of a question to the client's user
 * (multi-round input), or a result spliced as the signer printed it (parsing and printing it
 * again was ~40% of this worker's CPU per call); an error is parsed for its message. */
static void result_own(struct mw *w, struct mconn *c, const struct fresult *r, int task, const struct tcall *tc)
{
	char err[AS_ERRLEN];
	if (r->recorded) { /* iserr is its refusal; the result is parsed only to be kept */
		json_t *sj = r->iserr || callrec_keeps(w->rec) ? json_loadb(r->js, r->jsn, 0, NULL) : NULL;
		json_t *rr = r->iserr ? mcp_tool_error(json_string_value(json_object_get(sj, "error")) ?: "refused")
				      : json_pack("{s:O?,s:b}", "structuredContent", sj, "isError", 0);
		callrec_end(w->rec, r->conn, r->rid, r->ridn, rr, NULL, r->jsn);
		json_decref(rr);
		json_decref(sj);
	}
	static const char offer[] = "{\"input_required\":";
	if (task) {
		wm_task_answer(w, c, tc, &r->id, r->js, r->jsn, r->iserr);
		return;
	}
	if (!r->iserr && r->jsn > sizeof offer && !memcmp(r->js, offer, sizeof offer - 1)) {
		json_t *o = json_loadb(r->js, r->jsn, 0, NULL);
		mcp_line_result(&c->out, &r->id, mcp_input_required(json_object_get(o, "input_required")), NULL);
		json_decref(o);
		return;
	}
	size_t start = c->out.len;
	if (r->iserr || mcp_line_tool_json(&c->out, &r->id, r->js, r->jsn, NULL) != 0) {
		json_error_t je;
		json_t *s = json_loadb(r->js, r->jsn, 0, &je);
		json_t *res = r->iserr ? mcp_tool_error(json_string_value(json_object_get(s, "error")) ?: "refused")
				       : mcp_tool_result(json_incref(s));
		json_decref(s);
		mcp_line_result(&c->out, &r->id, res, NULL);
	}
	if (c->modern && mcp_line_complete(&c->out, start, NULL, err) != 0)
		c->out.len = start;
}

/* F_RESULT: the answer to a request of a connection, by its JSON-RPC id. */
static void on_result(struct mw *w, struct ipc_frame *f)
{
	struct fresult r = {0};
	r.conn = frame_get_uint(f->body, "conn"); /* its table (frames.c) checked every field */
	r.rid = frame_get_text(f->body, "rid", &r.ridn);
	r.js = frame_get_text(f->body, "json", &r.jsn);
	r.iserr = frame_get_bool(f->body, "iserror");
	r.raw = frame_get_bool(f->body, "raw");
	r.rpcerr = frame_get_bool(f->body, "rpc_error");
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++) {
		struct call *k = &w->calls[i];
		if (k->used && k->conn == r.conn && strlen(k->rid) == r.ridn && !memcmp(k->rid, r.rid, r.ridn))
			k->used = 0;
	}
	struct mconn *c = wm_conn_find(w, r.conn);
	struct tcall tc;
	int task = wm_tcall_take_into(w, r.conn, r.rid, r.ridn, &tc);
	if (!c || id_parse(r.rid, r.ridn, &r.id) != 0)
		return;
	if (r.iserr)
		wm_refusal_status(w, f->body, r.conn, r.rid, r.ridn);
	r.recorded = callrec_open(w->rec, r.conn, r.rid, r.ridn);
	if (r.rpcerr)
		result_rpc_error(w, c, &r);
	else if (r.raw)
		result_raw(w, c, &r);
	else
		result_own(w, c, &r, task, &tc);
	if (c->http)
		wm_route_out(w, c, r.rid, r.ridn, 1);
}

/* F_TASK_STATUS: a 2025-11-25 task ended: told on stdio, where it can be. */
static void on_task_status(struct mw *w, struct ipc_frame *f)
{
	uint64_t conn;
	const char *js;
	size_t jsn;
	struct mconn *c;
	conn = frame_get_uint(f->body, "conn");
	js = frame_get_text(f->body, "json", &jsn);
	if (!(c = wm_conn_find(w, conn)) || c->http || c->modern)
		return; /* an HTTP session has no stream to carry it; the extension polls */
	json_t *st = json_loadb(js, jsn, 0, NULL);
	mcp_line_notification(&c->out, "notifications/tasks/status", mcp_task_get(MCP_TASK_2025, st), NULL);
	json_decref(st);
}

/* A forwarded call's progress: the agent's own token; values after those sent while it waited
 * for a reviewer, so that its progress only ever grows. 0 when the agent asked for none. */
static int note_progress(struct mw *w, struct mconn *c, uint64_t conn, const char *rid, size_t ridn, const json_t *p)
{
	struct call *k = NULL;
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++)
		if (w->calls[i].used && w->calls[i].conn == conn && strlen(w->calls[i].rid) == ridn &&
		    !memcmp(w->calls[i].rid, rid, ridn))
			k = &w->calls[i];
	if (!k || k->token.t == MCP_ID_NONE)
		return 0;
	json_t *total = json_object_get(p, "total");
	double base = k->progress_sent, v = json_number_value(json_object_get(p, "progress"));
	mcp_line_progress(&c->out, &k->token, base + v, json_is_number(total) ? base + json_number_value(total) : -1,
			  json_string_value(json_object_get(p, "message")), NULL);
	k->next_progress = mono_ms() + PROGRESS_EVERY_MS;
	return 1;
}

/* F_NOTE: a forwarded call's progress or log message, or an update of a resource it
 * subscribed to. */
static void on_note(struct mw *w, struct ipc_frame *f)
{
	uint64_t conn;
	const char *rid, *mt, *js;
	size_t ridn, mtn, jsn;
	struct mconn *c;
	conn = frame_get_uint(f->body, "conn");
	rid = frame_get_text(f->body, "rid", &ridn);
	mt = frame_get_text(f->body, "method", &mtn);
	js = frame_get_text(f->body, "json", &jsn);
	if (!(c = wm_conn_find(w, conn)))
		return;
	json_t *p = json_loadb(js, jsn, 0, NULL);
	if (!json_is_object(p))
		return;
	int sent = 1;
	if (mtn == 22 && !memcmp(mt, "notifications/progress", 22)) {
		sent = note_progress(w, c, conn, rid, ridn, p);
	} else {
		char mn[PROTO_METHOD_MAX + 1];
		snprintf(mn, sizeof mn, "%.*s", (int)mtn, mt);
		mcp_line_notification(&c->out, mn, json_incref(p), NULL);
	}
	json_decref(p);
	if (sent && c->http)
		wm_route_out(w, c, rid, ridn, 0);
}

/* F_CATALOG: the upstreams' tools (and prompts, resources) changed. */
static void on_catalog(struct mw *w, struct ipc_frame *f)
{
	const char *tj, *rj, *mj;
	size_t tn, rn, mn;
	tj = frame_get_text(f->body, "tools", &tn);
	rj = frame_get_text(f->body, "routes", &rn);
	if (tn < 2 || tj[0] != '[')
		return;
	unsigned lists = 0; /* the prompts and resources lists that changed (listen.h) */
	if ((mj = frame_get_text(f->body, "more", &mn))) {
		json_t *more = json_loadb(mj, mn, 0, NULL);
		lists = listen_lists_changed(w->more, more);
		json_decref(w->more);
		w->more = more;
	}
	json_t *rt = json_loadb(rj, rn, 0, NULL), *map = json_object(), *x;
	size_t i;
	json_array_foreach(rt, i, x)
	{
		json_object_set(map, json_string_value(json_array_get(x, 0)) ?: "", x);
	}
	json_decref(rt);
	json_decref(w->routes);
	w->routes = map;
	int changed = wm_set_catalog(w, tj + 1, tn - 2); /* the objects, without the array's brackets */
	/* Clients that initialized on a stream of their own hear that the list changed. */
	for (size_t k = 0; changed && k < PROTO_CONNS_MAX; k++) {
		struct mconn *mc = &w->conns[k];
		if (mc->used && mc->fd >= 0 && mc->listed)
			mcp_line_notification(&mc->out, "notifications/tools/list_changed", NULL, NULL);
	}
	const struct listen_io io = {w, listen_out, listen_sent}; /* 2026-07-28: on their listen streams */
	listen_notify_lists(&w->listen, &io, lists | (changed ? LISTEN_TOOLS : 0));
}

/* F_STATS: the signer's counts, for /health. */
static void on_stats(struct mw *w, struct ipc_frame *f)
{
	w->pending = frame_get_uint(f->body, "pending");
	w->uptime = frame_get_uint(f->body, "uptime");
	size_t al = 0;
	const char *a = frame_get_text(f->body, "witness_alarm", &al);
	snprintf(w->alarm, sizeof w->alarm, "%.*s", (int)al, a ? a : "");
	const char *cl = frame_get_text(f->body, "cluster", &al);
	snprintf(w->cluster, sizeof w->cluster, "%.*s", cl ? (int)al : 0, cl ? cl : "");
	w->stats_at = mono_ms();
}

/* The receive table: what the signer may send this worker, and who reads it. */
static const struct {
	uint32_t type;
	void (*fn)(struct mw *w, struct ipc_frame *f);
} receive[] = {
    {F_CONN_NEW, on_conn_new}, {F_RESULT, on_result},	{F_TASK_STATUS, on_task_status},  {F_ASK, ask_client},
    {F_NOTE, on_note},	       {F_CATALOG, on_catalog}, {F_HTTP_REPLY, wm_on_http_reply}, {F_STATS, on_stats},
};

static void on_frame(struct mw *w, struct ipc_frame *f)
{
	for (size_t i = 0; i < sizeof receive / sizeof *receive; i++)
		if (receive[i].type == f->type) {
			receive[i].fn(w, f);
			return;
		}
}

static void progress(struct mw *w, uint64_t now)
{
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++) {
		struct call *k = &w->calls[i];
		if (!k->used || k->token.t == MCP_ID_NONE || now < k->next_progress)
			continue;
		struct mconn *c = wm_conn_find(w, k->conn);
		if (c)
			mcp_line_progress(&c->out, &k->token, (double)(now - k->started) / 1000.0, -1,
					  k->gated ? "waiting for a decision, or for the upstream server"
						   : "waiting for a reviewer",
					  NULL);
		k->progress_sent = (double)(now - k->started) / 1000.0;
		if (c && c->http)
			wm_route_out(w, c, k->rid, strlen(k->rid), 0);
		k->next_progress = now + PROGRESS_EVERY_MS;
	}
}

/* Before the loop: the configuration and the listener, the jail, then F_HELLO. 0, or the
 * process's exit status. */
static int mcp_start(struct mw *w, struct cv_arena *a, char *err)
{
	/* Stream numbers start at the wall clock's microseconds, so that an id a client kept from
	 * before a restart of this worker never names a later stream of its session. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	w->sse.next_no = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	cv_arena_init(&w->arena, 1u << 20);
	if (ipc_conn_init(&w->ipc, w->ipcfd, err) != 0)
		return 2;
	cv_arena_init(a, 1u << 20);
	if (wm_http_start(w, a, err) != 0) {
		wlog(w, "error", "mcp worker: agent HTTP listener: %s", err);
		return 2;
	}
	struct jail_opts jo = {.max_fds = PROTO_CONNS_MAX + 16 + (w->mhd ? w->cfg.conns_max + 16 : 0)};
	if (w->mhd)
		mr_jail_allow(&jo); /* libmicrohttpd's accept and socket options */
	if (jail_enter(&jo, err) != 0) {
		wlog(w, "error", "mcp worker: cannot enter the jail: %s", err);
		return 2;
	}
	struct cv *hello = ipc_frame_new(a, F_HELLO, 1);
	if (!hello || ipc_put_text(a, hello, "kind", "mcp", 3) != 0) {
		wlog(w, "error", "mcp worker: out of memory");
		return 2;
	}
	wm_send_frame(w, hello);
	return 0;
}

static void on_frame_arg(void *arg, struct ipc_frame *f)
{
	on_frame(arg, f);
}

/* What the signer sent, each frame to its handler. -1 to go on, or the process's exit status. */
static int frames(struct mw *w, struct cv_arena *a, char *err)
{
	int r = wio_frames(&w->ipc, a, on_frame_arg, w, err); /* each checked against its table first */
	return r == AS_ECORRUPT ? 2 : r == 1 ? 0 /* the signer went away: nothing left to do */ : -1;
}

/* The agent listener's turn: keep-alives, deadlines, hang-ups, then libmicrohttpd. */
static void http_turn(struct mw *w, size_t *peak)
{
	wm_keepalive(w, mono_ms());
	sse_expire(&w->sse, mono_ms(), wm_not_resumed, w); /* parked past their grace: cancelled */
	mc_deadlines(&w->pconns, w->cfg.request_s);
	mc_log_refused(&w->pconns, w->ipcfd, "agent");
	wm_hangups(w);
	mc_run(w->mhd);
	/* After a crowd of connections is gone, give their buffers back. */
	size_t nconn = w->pconns.n;
	if (nconn > *peak)
		*peak = nconn;
	if (nconn == 0 && *peak >= 64) {
		malloc_trim(0);
		*peak = 0;
	}
}

/* The poll set: the signer, libmicrohttpd's epoll set, and every stdio connection (map[i] for
 * pf[i] from 2 on); its size. *timeout is libmicrohttpd's when that is sooner. */
static size_t poll_set(struct mw *w, struct pollfd *pf, struct mconn **map, int mhd_fd, int *timeout)
{
	size_t n = 0;
	pf[n++] = (struct pollfd){.fd = w->ipcfd, .events = POLLIN};
	pf[n++] = (struct pollfd){.fd = mhd_fd, .events = POLLIN}; /* MHD's own epoll set, nested */
	MHD_UNSIGNED_LONG_LONG to;
	if (w->mhd && MHD_get_timeout(w->mhd, &to) == MHD_YES && to < (MHD_UNSIGNED_LONG_LONG)*timeout)
		*timeout = (int)to;
	for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
		struct mconn *c = &w->conns[i];
		if (!c->used || c->fd < 0)
			continue;
		map[n] = c;
		pf[n++] = (struct pollfd){.fd = c->fd, .events = (short)(POLLIN | (c->out.len ? POLLOUT : 0))};
	}
	return n;
}

int worker_mcp_main(int ipcfd)
{
	static struct mw w; /* large: keep it off the stack */
	w.ipcfd = ipcfd;
	char err[AS_ERRLEN];
	struct cv_arena a;
	int rc = mcp_start(&w, &a, err);
	if (rc != 0)
		return rc;
	struct pollfd pf[PROTO_CONNS_MAX + 2];
	struct mconn *map[PROTO_CONNS_MAX + 2];
	const union MHD_DaemonInfo *di = w.mhd ? MHD_get_daemon_info(w.mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	int mhd_fd = di ? di->epoll_fd : -1;
	size_t peak = 0;
	for (;;) {
		int timeout = 1000;
		size_t n = poll_set(&w, pf, map, mhd_fd, &timeout);
		callrec_flush(w.rec); /* this turn's calls: one frame */
		if (heap_idle(poll(pf, n, timeout)) < 0 && errno != EINTR)
			return 2;
		if (heap_went_idle()) { /* the arenas' chunks, kept at the last burst's size, go too */
			cv_arena_free(&w.arena);
			cv_arena_free(&a);
			callrec_idle(w.rec);
			malloc_trim(0);
		}
		if (pf[0].revents && (rc = frames(&w, &a, err)) >= 0)
			return rc;
		for (size_t i = 2; i < n; i++) {
			struct mconn *c = map[i];
			if (!c->used)
				continue;
			if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && wm_conn_read(&w, c) != 0) {
				wm_conn_close(&w, c, 1);
				continue;
			}
			if (c->out.len && wm_conn_flush(c) != 0)
				wm_conn_close(&w, c, 1);
		}
		progress(&w, mono_ms());
		if (w.mhd)
			http_turn(&w, &peak);
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++)
			if (w.conns[i].used && w.conns[i].fd >= 0 && w.conns[i].out.len &&
			    wm_conn_flush(&w.conns[i]) != 0)
				wm_conn_close(&w, &w.conns[i], 1);
	}
}
