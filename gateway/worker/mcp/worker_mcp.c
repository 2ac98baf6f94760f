/* The mcp worker: jailed, it parses what agents send (JSON-RPC lines on the
 * connections the signer hands it), answers the protocol's own methods itself,
 * and turns tool calls into typed frames for the signer. It holds no key, no
 * file, no identity: a compromised worker can only send frames the signer checks. */
#define _GNU_SOURCE
#include "gateway/worker/worker.h"

#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gateway/proto/action.h"
#include "gateway/proto/call.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/callrec.h"
#include "gateway/proto/reccfg.h"
#include "gateway/worker/mhdconn.h"
#include "gateway/worker/mcp/mhttp.h"
#include "gateway/worker/mcp/listen.h"
#include "gateway/worker/mcp/modern.h"
#include "gateway/worker/mcp/qatools.h"
#include "gateway/worker/mcp/sseresume.h"
#include "gateway/worker/mcp/tasks.h"
#include "gateway/proto/proto.h"
#include "common/redact.h"

#define PROGRESS_EVERY_MS 10000
#define KEEPALIVE_EVERY_MS 15000 /* an SSE comment, so that proxies and idle timers see life */

struct call { /* a blocking tool call waiting for the signer */
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	struct mcp_id token; /* progress token, MCP_ID_NONE when the client gave none */
	uint64_t started, next_progress;
	double progress_sent; /* the last progress value told while it waited */
	int gated;	      /* a call of an upstream's tool: it may wait for a reviewer, then for the server */
	int used;
};

/* A task operation waiting for the signer's answer, which it turns into its revision's
 * shape (tasks.h). */
enum tkind { T_CREATE = 1, T_GET, T_RESULT, T_LIST, T_CANCEL, T_UPDATE, T_INPUT };
struct tcall {
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	char sid[MCP_SESSION_ID_MAX + 1]; /* T_RESULT: asked again while still pending */
	enum tkind kind;
	enum mcp_task_era era;
	int used;
};

struct mconn {
	uint64_t id;
	int listed; /* it initialized: it may be told notifications/tools/list_changed */
	int fd;	    /* -1 for an MCP session over HTTP: its messages come in HTTP requests */
	int http;
	struct hreq *legacy; /* FEEDBACK_TRANSPORT=sse: the GET /sse stream every answer goes to */
	struct buf in, out;
	int skipping; /* discarding the rest of an over-long line */
	size_t skipped;
	char head[MCP_PEEK_HEAD], tail[MCP_PEEK_TAIL]; /* of the line being skipped: where its id may be */
	size_t headn, tailn;
	struct mcp_client client;
	uint64_t hreq;	       /* HTTP: the request whose message is being handled (the signer measured its peer) */
	int modern;	       /* a 2026-07-28 request came on it: results carry resultType */
	int stateless;	       /* HTTP 2026-07-28: the connection is one request's, ended with it */
	uint32_t dflt_timeout; /* stdio: the bridge's notifications/assent/defaults, 0 when none */
	char agent[PROTO_NAME_MAX + 1]; /* HTTP: the agent key's name, as the signer said (listen.h's bound) */
	int used;
};

/* One HTTP request on the agent listener, from its headers to its last byte. */
enum hstate {
	HS_BODY,      /* reading the body */
	HS_AUTH,      /* suspended: the signer decides who is asking */
	HS_WAIT,      /* suspended: a JSON answer waits for the signer's result */
	HS_RESPOND,   /* the answer is in out: queue it when MHD calls back */
	HS_STREAM,    /* an SSE answer: queue the stream when MHD calls back */
	HS_STREAMING, /* out feeds the stream; finished marks its end */
	HS_DONE,
};

struct hreq {
	uint64_t id;
	struct MHD_Connection *mc;
	struct mh_verdict v;
	enum hstate st;
	struct buf body;
	int too_big;
	struct mcp_msg m;
	int have_msg;
	uint64_t conn;		     /* the MCP session's connection id, once the signer said */
	char rid[PROTO_RID_MAX + 1]; /* the JSON-RPC id whose answer this request waits for */
	int waiting;		     /* an answer from the signer is due */
	struct buf out;		     /* the JSON body, or SSE bytes not yet sent */
	unsigned status;
	char session[MH_SESSION_LEN + 1]; /* Mcp-Session-Id to send back */
	unsigned retry_s;		  /* Retry-After, for a refusal by a limit */
	int finished, suspended;
	int stateless;	    /* a 2026-07-28 request: its own connection at the signer, for its lifetime */
	char location[160]; /* a 307's Location (the reviewer listener's endpoints) */
	int deferred;	    /* refused (h->v), answered once the body is read: with its id when it shows */
	unsigned refused;   /* POST /events: the HTTP status of the signer's refusal (F_RESULT status) */
	uint64_t next_keepalive;
	struct sse_stream *ss; /* its answer's resumable stream (2025-11-25 clients), NULL: none */
	uint64_t poll_at;      /* ASSENT_HTTP_SSE_POLL_SECONDS: when assent ends that stream for a resume */
	struct hreq *next;
};

/* One TCP connection on the agent listener. libmicrohttpd's timeout counts silence
 * only, so a client trickling a byte a second would hold its slot for ever: each
 * request's head and body must arrive within request_s, or the socket is shut. */
struct mw {
	int ipcfd;
	struct ipc_conn ipc;
	struct cv_arena arena;
	struct mconn conns[PROTO_CONNS_MAX];
	struct call calls[1024];
	struct tcall tcalls[1024];
	char err[AS_ERRLEN];
	/* HTTP */
	struct http_cfg cfg;
	struct MHD_Daemon *mhd;
	struct hreq *hreqs;
	struct mc_list pconns; /* every TCP connection, for the whole-request deadline */
	struct sse_set sse;    /* resumable answer streams, held or parked (sseresume.h) */
	uint64_t next_hreq;
	uint64_t pending, uptime, stats_at; /* from F_STATS, for /health */
	char proxy_header[64];		    /* the reviewer identity header a reverse proxy sets: refused here */
	/* the gate: the upstreams' tools as agents see them (F_CATALOG), and which upstream
	 * and tool each name is: {NAME: [upstream, tool]} */
	char *catalog;
	size_t catalogn;
	json_t *routes;
	json_t *more;	     /* {resources, resourceTemplates, prompts, resource_routes, template_routes, prompt_routes,
			      * completions} */
	struct callrec *rec; /* the call records (callrec.h); NULL: recording is off */
	char qa[40];	     /* the QA tools' prefix and separator ("qa_"); "" when the records are off */
	char review_url[96]; /* the reviewer listener, http://HOST:PORT; "" when it is off */
	char *qa_defs;	     /* their definitions, which tools/list shows before the upstreams' */
	struct listen_set listen; /* 2026-07-28 clients' subscriptions/listen streams */
};

#define wlog(w, ...) ipc_log((w)->ipcfd, __VA_ARGS__) /* a log line to the signer */

static struct mconn *wm_conn_find(struct mw *w, uint64_t id)
{
	for (size_t i = 0; i < PROTO_CONNS_MAX; i++)
		if (w->conns[i].used && w->conns[i].id == id)
			return &w->conns[i];
	return NULL;
}

static void wm_id_json(const struct mcp_id *id, char out[PROTO_RID_MAX + 1])
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

static int wm_send_frame(struct mw *w, struct cv *f);
static void wm_answer_frame(struct mw *w, uint64_t conn, uint64_t aid, const json_t *result, const json_t *error);

/* What this worker sends, the signer's field tables (gateway/proto/frames.c) let in. */
_Static_assert(MH_BEARER_MAX <= PROTO_BEARER_MAX && MH_SESSION_LEN <= PROTO_SESSION_MAX,
	       "F_HTTP_AUTH bearer and session fit the table");
_Static_assert(MCP_WAIT_MAX <= PROTO_WAIT_MAX, "F_COLLECT wait fits the table");

/* A frame about one connection: {conn} (F_CONN_CLOSED, F_SESSION_END), or {conn, rid}
 * (F_CANCEL) when rid is given. */
static void wm_send_about(struct mw *w, uint32_t type, uint64_t conn, const char *rid)
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

static void wm_conn_close(struct mw *w, struct mconn *c, int tell)
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
static int wm_send_frame(struct mw *w, struct cv *f)
{
	int rc = ipc_send(w->ipcfd, f, -1, w->err);
	if (rc == AS_EIO)
		_exit(3); /* the signer is gone or stuck: nothing can be decided here; be restarted */
	if (rc != 0)
		wlog(w, "error", "mcp worker: cannot send a frame: %s", w->err);
	return rc;
}

static void answer_tool_error(struct mconn *c, const struct mcp_id *id, const char *msg)
{
	mcp_line_result(&c->out, id, mcp_tool_error(msg), NULL);
}

static struct tcall *wm_tcall_add(struct mw *w, uint64_t conn, const char *rid, enum tkind kind, enum mcp_task_era era,
				  const char *sid)
{
	for (size_t i = 0; i < sizeof w->tcalls / sizeof w->tcalls[0]; i++) {
		struct tcall *t = &w->tcalls[i];
		if (t->used)
			continue;
		*t = (struct tcall){.conn = conn, .kind = kind, .era = era, .used = 1};
		snprintf(t->rid, sizeof t->rid, "%s", rid);
		snprintf(t->sid, sizeof t->sid, "%s", sid ? sid : "");
		return t;
	}
	return NULL;
}

/* The task operation an answer for (conn, rid) belongs to, taken off the table; its
 * copy in *out. 0 when none. */
static int wm_tcall_take_into(struct mw *w, uint64_t conn, const char *rid, size_t ridn, struct tcall *out)
{
	for (size_t i = 0; i < sizeof w->tcalls / sizeof w->tcalls[0]; i++) {
		struct tcall *t = &w->tcalls[i];
		if (t->used && t->conn == conn && strlen(t->rid) == ridn && !memcmp(t->rid, rid, ridn)) {
			if (out)
				*out = *t;
			t->used = 0;
			return 1;
		}
	}
	return 0;
}

static void wm_tcall_take(struct mw *w, uint64_t conn, const char *rid, size_t ridn)
{
	wm_tcall_take_into(w, conn, rid, ridn, NULL);
}

/* The second round of a multi-round input: the answer and the signer's requestState
 * go back to the signer with the retried call's action, which the state must name. A
 * retry without the answer is asked again, with the same state. */
static void input_round(struct mw *w, struct mconn *c, const struct mcp_msg *m, const struct mcp_feedback *fb,
			const struct buf *act, const char *rid, const json_t *state)
{
	char err[AS_ERRLEN];
	int accepted;
	const char *text;
	int rc = mcp_input_response(m->params, &accepted, &text, err);
	if (rc == AS_ENOTFOUND) {
		json_t *opts = json_array();
		for (size_t i = 0; opts && i < fb->noptions; i++)
			json_array_append_new(opts, json_stringn(fb->options[i], fb->option_len[i]));
		json_t *ir =
		    json_pack("{s:s,s:s%,s:o,s:s?,s:O}", "type", mcp_fb_type_name(fb->type), "message", fb->message,
			      fb->message_len, "options", opts, "default", fb->dflt, "requestState", state);
		mcp_line_result(&c->out, &m->id, ir ? mcp_input_required(ir) : NULL, NULL);
		json_decref(ir);
		return;
	}
	if (rc != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_INPUT, 7), *slot = f ? ipc_put(a, f, "action") : NULL;
	if (slot)
		*slot = (struct cv){.t = CV_BYTES, .s = act->p, .n = act->len};
	rc = !slot || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	     ipc_put_text(a, f, "state", json_string_value(state), json_string_length(state)) ||
	     ipc_put_bool(a, f, "accepted", accepted) || (text && ipc_put_text(a, f, "text", text, strlen(text))) ||
	     (c->http && ipc_put_uint(a, f, "hreq", c->hreq));
	if (rc || json_string_length(state) > PROTO_STATE_MAX ||
	    !wm_tcall_add(w, c->id, rid, T_INPUT, MCP_TASK_NONE, NULL)) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS,
			       "requestState is not one this server issued (or the answer is too large)", NULL, NULL);
		return;
	}
	if (wm_send_frame(w, f) != 0) {
		wm_tcall_take(w, c->id, rid, strlen(rid));
		mcp_line_error(&c->out, &m->id, MCP_INTERNAL_ERROR, "the gateway could not take the answer", NULL,
			       NULL);
	}
}

/* A registered blocking call: progress notifications while it waits (progress()). */
static void call_watch(struct mw *w, const struct mconn *c, const char *rid, const struct mcp_msg *m, int gated)
{
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++) {
		struct call *k = &w->calls[i];
		if (k->used)
			continue;
		k->used = 1;
		k->conn = c->id;
		snprintf(k->rid, sizeof k->rid, "%s", rid);
		k->token = m->progress_token;
		k->started = mono_ms();
		k->next_progress = k->started + PROGRESS_EVERY_MS;
		k->progress_sent = 0;
		k->gated = gated;
		break;
	}
}

/* A 2026-07-28 request's multi-round parts (SEP-2322): params.inputResponses (an object,
 * or absent) and params.requestState (a state the signer minted, or absent). 0, or
 * AS_EINVAL with err naming what is wrong (a protocol error). Other revisions have none. */
static int retry_parts(const struct mconn *c, const struct mcp_msg *m, const json_t **input, const char **state,
		       char *err)
{
	*input = NULL;
	*state = NULL;
	if (!c->modern)
		return 0;
	const json_t *in = json_object_get(m->params, "inputResponses"),
		     *st = json_object_get(m->params, "requestState");
	if (in && !json_is_object(in))
		return as_fail(err, AS_EINVAL, "params.inputResponses: expected an object");
	if (st && (!json_is_string(st) || !json_string_length(st) || json_string_length(st) > PROTO_GATE_STATE_MAX))
		return as_fail(err, AS_EINVAL, "params.requestState: expected a string of 1 to %d bytes",
			       PROTO_GATE_STATE_MAX);
	*input = in;
	*state = json_string_value(st);
	return 0;
}

/* F_CALL's multi-round fields: the client's declared capabilities for the server's
 * inputRequests (PROTO_CAP_*; 2026-07-28 clients only) and the requestState it returns. */
static int put_retry(struct cv_arena *a, struct cv *f, const struct mconn *c, const char *state)
{
	unsigned caps = (c->client.sampling ? PROTO_CAP_SAMPLING : 0) | (c->client.elicitation ? PROTO_CAP_ELICIT : 0) |
			(c->client.roots ? PROTO_CAP_ROOTS : 0);
	return (c->modern && ipc_put_uint(a, f, "caps", caps | PROTO_CAP_MODERN)) ||
	       (state && ipc_put_text(a, f, "state", state, strlen(state)));
}

/* A call of an upstream's tool (the gate): its canonical call to the signer, which
 * decides it and, when it may go, has the upstream's worker forward it. */
static int gated_call(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	const json_t *name = json_object_get(m->params, "name");
	const json_t *route = json_is_string(name) ? json_object_get(w->routes, json_string_value(name)) : NULL;
	if (!route)
		return 0;
	const json_t *args = json_object_get(m->params, "arguments");
	char err[AS_ERRLEN], rid[PROTO_RID_MAX + 1], client[ACTION_CLIENT_MAX + 1];
	if (args && !json_is_null(args) && !json_is_object(args)) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "tools/call: params.arguments: expected an object",
			       NULL, NULL);
		return 1;
	}
	const json_t *input;
	const char *state;
	if (retry_parts(c, m, &input, &state, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return 1;
	}
	struct buf call;
	buf_init(&call, CALL_MAX);
	if (call_encode_input("tools/call", json_string_value(json_array_get(route, 1)),
			      json_string_value(json_array_get(route, 2)), json_is_object(args) ? args : NULL, input,
			      &call, err) != 0) {
		buf_free(&call);
		if (input) /* its answers are malformed: a protocol error, as SEP-2322 asks */
			mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		else
			answer_tool_error(c, &m->id, err);
		return 1;
	}
	wm_id_json(&m->id, rid);
	action_client(client, c->client.name, c->client.client_version);
	/* A client that asks for a task gets one: the call may wait for a reviewer for long. */
	enum mcp_task_era era = mcp_task_wanted(m, c->modern, c->client.tasks);
	if (era && !wm_tcall_add(w, c->id, rid, T_CREATE, era, NULL)) {
		buf_free(&call);
		answer_tool_error(c, &m->id, "too many task calls at once; try again");
		return 1;
	}
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_CALL, 8);
	if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	    ipc_put_bytes(a, f, "call", call.p, call.len) || ipc_put_text(a, f, "client", client, strlen(client)) ||
	    (c->http && ipc_put_uint(a, f, "hreq", c->hreq)) || (era && ipc_put_bool(a, f, "task", 1)) ||
	    put_retry(a, f, c, state)) {
		if (era)
			wm_tcall_take(w, c->id, rid, strlen(rid));
		buf_free(&call);
		answer_tool_error(c, &m->id, "the call is too large");
		return 1;
	}
	wm_send_frame(w, f);
	buf_free(&call);
	if (!era)
		call_watch(w, c, rid, m, 1);
	return 1;
}

/* What the gate adds to the server's capabilities: the tools list changes, and the
 * upstreams' resources, prompts and completions are served. In 2026-07-28 a change is heard
 * only on a subscriptions/listen stream (listen.h), which carries the three lists' changes;
 * that revision has no resources/subscribe. */
static void wm_gate_caps(const struct mw *w, json_t *caps, int modern)
{
	json_object_set_new(json_object_get(caps, "tools"), "listChanged", json_true());
	if (json_array_size(json_object_get(w->more, "resources")) ||
	    json_array_size(json_object_get(w->more, "resourceTemplates")))
		json_object_set_new(caps, "resources", modern ? json_pack("{s:b}", "listChanged", 1) : json_object());
	if (json_array_size(json_object_get(w->more, "prompts")))
		json_object_set_new(caps, "prompts", modern ? json_pack("{s:b}", "listChanged", 1) : json_object());
	if (json_is_true(json_object_get(w->more, "completions")))
		json_object_set_new(caps, "completions", json_object());
	if (!modern && json_is_true(json_object_get(w->more, "subscribe")) && json_object_get(caps, "resources"))
		json_object_set_new(json_object_get(caps, "resources"), "subscribe", json_true());
}

/* The upstream that serves uri: the one that listed it, else the first whose template's
 * literal start it has; NULL: none. */
static const char *resource_upstream(const struct mw *w, const char *uri)
{
	const char *up = json_string_value(json_object_get(json_object_get(w->more, "resource_routes"), uri));
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(w->more, "template_routes"), i, x)
	{
		const char *pre = json_string_value(json_array_get(x, 0));
		if (!up && pre && *pre && !strncmp(uri, pre, strlen(pre)))
			up = json_string_value(json_array_get(x, 1));
	}
	return up;
}

/* A request of the gate's other methods, as the signer will forward it (F_CALL). */
static void gate_send(struct mw *w, struct mconn *c, const struct mcp_msg *m, const char *method, const char *up,
		      const char *name, const json_t *obj)
{
	char err[AS_ERRLEN], rid[PROTO_RID_MAX + 1], client[ACTION_CLIENT_MAX + 1];
	const json_t *input = NULL;
	const char *state = NULL;
	if (!strcmp(method, "prompts/get") && retry_parts(c, m, &input, &state, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	struct buf call;
	buf_init(&call, CALL_MAX);
	if (call_encode_input(method, up, name, obj, input, &call, err) != 0) {
		buf_free(&call);
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	wm_id_json(&m->id, rid);
	action_client(client, c->client.name, c->client.client_version);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_CALL, 7);
	if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	    ipc_put_bytes(a, f, "call", call.p, call.len) || ipc_put_text(a, f, "client", client, strlen(client)) ||
	    (c->http && ipc_put_uint(a, f, "hreq", c->hreq)) || put_retry(a, f, c, state))
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "the request is too large", NULL, NULL);
	else
		wm_send_frame(w, f);
	buf_free(&call);
}

/* The upstreams' resources, templates, prompts and completions (the gate): lists from the
 * catalog, the rest through the signer. 0 when m is none of them. */
static int wm_gated_other(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	static const struct {
		const char *method, *key;
	} lists[] = {{"resources/list", "resources"},
		     {"resources/templates/list", "resourceTemplates"},
		     {"prompts/list", "prompts"}};
	if (!w->more || !m->method)
		return 0;
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
		if (!strcmp(m->method, lists[i].method)) {
			mcp_line_result(&c->out, &m->id,
					json_pack("{s:O}", lists[i].key, json_object_get(w->more, lists[i].key)), NULL);
			return 1;
		}
	const json_t *p = m->params;
	/* 2026-07-28 has no subscriptions: there they are methods not found, as the revision says */
	int sub = (!strcmp(m->method, "resources/subscribe") || !strcmp(m->method, "resources/unsubscribe")) &&
		  !(c->stateless || mcp_is_modern(m));
	if (sub || !strcmp(m->method, "resources/read")) {
		const char *uri = json_string_value(json_object_get(p, "uri"));
		const char *up = uri ? resource_upstream(w, uri) : NULL;
		if (!up)
			mcp_line_error(&c->out, &m->id, -32002, "Resource not found", json_pack("{s:s?}", "uri", uri),
				       NULL);
		else
			gate_send(w, c, m, m->method, up, uri, NULL);
		return 1;
	}
	if (!strcmp(m->method, "prompts/get")) {
		const char *nm = json_string_value(json_object_get(p, "name"));
		const json_t *rt = nm ? json_object_get(json_object_get(w->more, "prompt_routes"), nm) : NULL;
		const json_t *args = json_object_get(p, "arguments");
		if (!rt)
			mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "Unknown prompt", NULL, NULL);
		else
			gate_send(w, c, m, "prompts/get", json_string_value(json_array_get(rt, 0)),
				  json_string_value(json_array_get(rt, 1)), json_is_object(args) ? args : NULL);
		return 1;
	}
	if (!strcmp(m->method, "completion/complete")) {
		const json_t *ref = json_object_get(p, "ref");
		const char *type = json_string_value(json_object_get(ref, "type")), *up = NULL;
		json_t *q = json_deep_copy(p);
		/* the agent's _meta (its revision's envelope, its progress token) is about its
		 * connection to assent: a server that speaks 2026-07-28 would take the envelope for
		 * a request of that revision under 2025 headers, and refuse it */
		if (json_is_object(q))
			json_object_del(q, "_meta");
		if (type && !strcmp(type, "ref/prompt")) {
			const json_t *rt = json_object_get(json_object_get(w->more, "prompt_routes"),
							   json_string_value(json_object_get(ref, "name")) ?: "");
			up = json_string_value(json_array_get(rt, 0));
			if (up) /* the server knows its prompt by its own name */
				json_object_set(json_object_get(q, "ref"), "name", json_array_get(rt, 1));
		} else if (type && !strcmp(type, "ref/resource")) {
			const char *uri = json_string_value(json_object_get(ref, "uri"));
			up = uri ? resource_upstream(w, uri) : NULL;
		}
		if (!up || !json_is_object(q))
			mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS,
				       "completion/complete: no such prompt or resource", NULL, NULL);
		else
			gate_send(w, c, m, "completion/complete", up, NULL, q);
		json_decref(q);
		return 1;
	}
	return 0;
}

static int qa_call(struct mw *w, struct mconn *c, const struct mcp_msg *m, const char *name);

static void tools_call_do(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	enum mcp_tool tool;
	const json_t *args;
	char err[AS_ERRLEN];
	if (w->routes && gated_call(w, c, m))
		return;
	const char *qname = json_string_value(json_object_get(m->params, "name"));
	if (qname && qa_call(w, c, m, qname))
		return;
	if (mcp_tools_call(m->params, &tool, &args, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	char rid[PROTO_RID_MAX + 1];
	wm_id_json(&m->id, rid);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = NULL;
	switch (tool) {
	case MCP_TOOL_REQUEST_FEEDBACK: {
		struct mcp_feedback fb;
		struct buf act;
		buf_init(&act, MCP_ACTION_MAX);
		int rc = mcp_check_request_feedback(args, &fb, err);
		if (rc == 0 && !fb.timeout) /* the client's own FEEDBACK_TIMEOUT_SECONDS, through its bridge */
			fb.timeout = c->dflt_timeout;
		enum mcp_task_era era = mcp_task_wanted(m, c->modern, c->client.tasks);
		if (rc == 0 && era && !wm_tcall_add(w, c->id, rid, T_CREATE, era, NULL))
			rc = as_fail(err, AS_ENOMEM, "too many task calls at once; try again");
		if (era)
			fb.wait = 0; /* a task is collected, never waited on */
		if (rc == 0)	     /* marks that say what they hide: what a reviewer reads (common/redact.h) */
			rc = mcp_feedback_redact(&fb, &mcp_view_rules, 0, err);
		if (rc == 0)
			rc = mcp_feedback_action(&fb, &act, err);
		const json_t *state = json_object_get(m->params, "requestState");
		if (rc == 0 && c->modern && json_is_string(state)) { /* a multi-round input's second round */
			if (era)
				wm_tcall_take(w, c->id, rid, strlen(rid));
			input_round(w, c, m, &fb, &act, rid, state);
			mcp_feedback_free(&fb);
			buf_free(&act);
			return;
		}
		/* The client's user may answer an input or selection itself, when the policy says so. */
		int elicit = c->modern && c->client.elicitation && !era &&
			     (fb.type == MCP_FB_INPUT || fb.type == MCP_FB_SELECTION);
		if (rc == 0) {
			f = ipc_frame_new(a, F_REQUEST, 9);
			/* The action's canonical CBOR as mcp_feedback_action encoded it, once: the
			 * signer hashes these very bytes and decodes them once (proto.h). */
			struct cv *slot = f ? ipc_put(a, f, "action") : NULL;
			if (slot)
				*slot = (struct cv){.t = CV_BYTES, .s = act.p, .n = act.len};
			/* The subjects' bytes, so that the signer hashes them itself and a
			 * reviewer can read them: one item per subject, null for a digest only. */
			struct cv *arr = slot && fb.nsubjects ? cv_array(a, fb.nsubjects) : NULL;
			for (size_t i = 0; arr && i < fb.nsubjects; i++) {
				if (!fb.subjects[i].content)
					arr->items[i].t = CV_NULL;
				else if (cv_set_bytes(a, &arr->items[i], fb.subjects[i].content,
						      fb.subjects[i].content_len))
					arr = NULL;
			}
			struct cv *cs = arr ? ipc_put(a, f, "contents") : NULL;
			if (cs)
				*cs = *arr;
			else if (fb.nsubjects)
				slot = NULL;
			char client[ACTION_CLIENT_MAX + 1];
			action_client(client, c->client.name, c->client.client_version);
			if (!slot || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
			    ipc_put_uint(a, f, "timeout", fb.timeout) || ipc_put_bool(a, f, "wait", fb.wait) ||
			    (era && ipc_put_bool(a, f, "task", 1)) || (elicit && ipc_put_bool(a, f, "elicit", 1)) ||
			    ipc_put_text(a, f, "client", client, strlen(client)) ||
			    (c->http && ipc_put_uint(a, f, "hreq", c->hreq)))
				rc = as_fail(err, AS_ENOMEM, "request too large");
		}
		int wait = rc == 0 && fb.wait;
		mcp_feedback_free(&fb);
		if (rc != 0) {
			if (era)
				wm_tcall_take(w, c->id, rid, strlen(rid));
			buf_free(&act);
			answer_tool_error(c, &m->id, err);
			return;
		}
		wm_send_frame(w, f); /* before act is freed: the frame's action points into it */
		buf_free(&act);
		if (wait)
			call_watch(w, c, rid, m, 0);
		return;
	}
	case MCP_TOOL_GET_FEEDBACK: {
		char sid[MCP_SESSION_ID_MAX + 1];
		uint32_t secs;
		if (mcp_check_get_feedback(args, sid, &secs, err) != 0) {
			answer_tool_error(c, &m->id, err);
			return;
		}
		f = ipc_frame_new(a, F_COLLECT, 4);
		if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
		    ipc_put_text(a, f, "sid", sid, strlen(sid)) || ipc_put_uint(a, f, "wait", secs))
			return;
		wm_send_frame(w, f);
		return;
	}
	case MCP_TOOL_LIST_PENDING:
		if (mcp_check_list_pending(args, err) != 0) {
			answer_tool_error(c, &m->id, err);
			return;
		}
		f = ipc_frame_new(a, F_LIST, 2);
		if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)))
			return;
		wm_send_frame(w, f);
		return;
	case MCP_TOOL_SUBMIT_FEEDBACK:
		answer_tool_error(
		    c, &m->id,
		    "submit_feedback is for reviewers: an agent cannot decide its own request (a reviewer "
		    "answers with `assent approve|reject|answer|select` or the review UI)");
		return;
	default:
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "unknown tool", NULL, NULL);
	}
}

/* The tools agents see after assent's own: the QA tools, then the upstreams' (objects separated
 * by commas, as F_CATALOG sends them). 1 when the list changed. */
static int wm_set_catalog(struct mw *w, const char *up, size_t upn)
{
	size_t qn = w->qa_defs ? strlen(w->qa_defs) : 0;
	struct buf b;
	buf_init(&b, qn + upn + 2);
	int rc =
	    (qn && buf_put(&b, w->qa_defs, qn)) || (qn && upn && buf_putc(&b, ',')) || (upn && buf_put(&b, up, upn));
	int changed = rc || !w->catalog || b.len != w->catalogn || memcmp(w->catalog, b.p, b.len);
	free(w->catalog);
	w->catalog = !rc && b.len ? strndup((const char *)b.p, b.len) : NULL;
	w->catalogn = w->catalog ? b.len : 0;
	buf_free(&b);
	return changed;
}

/* The QA tools' definitions (qatools.c) before the upstreams' tools. */
static void wm_qa_defs_make(struct mw *w)
{
	free(w->qa_defs);
	w->qa_defs = qatools_defs(w->qa);
	wm_set_catalog(w, NULL, 0);
}

/* 1 when name is a QA tool (answered here or by the signer later), else 0. */
static int qa_call(struct mw *w, struct mconn *c, const struct mcp_msg *m, const char *name)
{
	enum qa_tool t = qatools_which(w->qa, name);
	if (t == QA_NONE)
		return 0;
	const json_t *args = json_object_get(m->params, "arguments");
	char err[AS_ERRLEN] = "", rid[PROTO_RID_MAX + 1];
	wm_id_json(&m->id, rid);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_QA, 11);
	char decl[ACTION_CLIENT_MAX + 1];
	action_client(decl, c->client.name, c->client.client_version);
	int rc = !f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
		 (decl[0] && ipc_put_text(a, f, "client", decl, strlen(decl)));
	if (!rc)
		rc = qatools_fields(t, name, a, f, args, err);
	if (err[0] || rc) {
		answer_tool_error(c, &m->id, err[0] ? err : "the report is too large");
		return 1;
	}
	callrec_flush(w->rec); /* the calls before a report are the signer's (and the recorder's) first */
	wm_send_frame(w, f);
	return 1;
}

/* Every tools/call, timed and classified for the call records: its answer is either written
 * at once (a refusal, parsed back from the line just written: our own JSON) or comes later
 * in F_RESULT (on_frame). */
static void wm_tools_call(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	if (!w->rec) {
		tools_call_do(w, c, m);
		return;
	}
	char rid[PROTO_RID_MAX + 1];
	wm_id_json(&m->id, rid);
	const char *name = json_string_value(json_object_get(m->params, "name"));
	const json_t *route = name && w->routes ? json_object_get(w->routes, name) : NULL;
	char decl[ACTION_CLIENT_MAX + 1];
	action_client(decl, c->client.name, c->client.client_version);
	callrec_begin(w->rec, c->id, rid, m->params, json_string_value(json_array_get(route, 1)), decl);
	size_t before = c->out.len;
	tools_call_do(w, c, m);
	size_t ridn = strlen(rid);
	if (c->out.len > before && callrec_open(w->rec, c->id, rid, ridn)) {
		json_t *line = json_loadb((const char *)c->out.p + before, c->out.len - before, 0, NULL);
		const json_t *res = json_object_get(line, "result"), *e = json_object_get(line, "error");
		/* the size of the answer itself: the line's envelope (its id) is no part of it */
		callrec_end(w->rec, c->id, rid, ridn, res, e,
			    res || e ? json_dumpb(res ? res : e, NULL, 0, JSON_COMPACT) : 0);
		json_decref(line);
	}
}

/* The tasks methods: a frame to the signer, answered when it replies (wm_task_answer). */
static void wm_task_method(struct mw *w, struct mconn *c, const struct mcp_msg *m, enum mcp_task_era era)
{
	char err[AS_ERRLEN], sid[MCP_SESSION_ID_MAX + 1] = "", rid[PROTO_RID_MAX + 1];
	enum tkind kind = m->m == MCP_M_TASKS_GET      ? T_GET
			  : m->m == MCP_M_TASKS_RESULT ? T_RESULT
			  : m->m == MCP_M_TASKS_LIST   ? T_LIST
			  : m->m == MCP_M_TASKS_CANCEL ? T_CANCEL
						       : T_UPDATE;
	if (kind != T_LIST && mcp_task_id(m->params, sid, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	wm_id_json(&m->id, rid);
	if (!wm_tcall_add(w, c->id, rid, kind, era, sid)) {
		mcp_line_error(&c->out, &m->id, MCP_INTERNAL_ERROR, "too many task calls at once; try again", NULL,
			       NULL);
		return;
	}
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, kind == T_RESULT ? F_COLLECT : F_TASK, 4);
	int rc = !f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid));
	if (kind == T_RESULT) /* blocks until the task is done: asked again while it waits (wm_task_answer) */
		rc = rc || ipc_put_text(a, f, "sid", sid, strlen(sid)) || ipc_put_uint(a, f, "wait", PROTO_WAIT_MAX);
	else
		rc = rc ||
		     ipc_put_uint(a, f, "op",
				  kind == T_LIST     ? PROTO_TASK_LIST
				  : kind == T_CANCEL ? PROTO_TASK_CANCEL
						     : PROTO_TASK_GET) ||
		     (kind != T_LIST && ipc_put_text(a, f, "sid", sid, strlen(sid)));
	if (rc || wm_send_frame(w, f) != 0) {
		wm_tcall_take(w, c->id, rid, strlen(rid));
		mcp_line_error(&c->out, &m->id, MCP_INTERNAL_ERROR, "the gateway could not ask about this task", NULL,
			       NULL);
	}
}

/* The signer's answer to a task operation, in the shape of the task's revision. */
static void wm_task_answer(struct mw *w, struct mconn *c, const struct tcall *t, const struct mcp_id *id,
			   const char *js, size_t jsn, int iserr)
{
	json_t *j = json_loadb(js, jsn, 0, NULL), *res = NULL;
	const char *state = json_string_value(json_object_get(j, "state"));
	const char *msg = NULL;
	char why[256]; /* a message of the signer's, kept past j */
	int sync = 0, known = state && strcmp(state, "unknown");
	switch (t->kind) {
	case T_CREATE: /* refused before it was queued: as a blocking call would hear it */
		res = iserr || !j ? mcp_tool_error(json_string_value(json_object_get(j, "error")) ?: "refused")
				  : mcp_task_created(t->era, j, now_unix_ms(), &sync);
		break;
	case T_RESULT:
		if (iserr || !j) {
			msg = "no task of yours has this taskId";
		} else if (!strcmp(json_string_value(json_object_get(j, "status")) ?: "", "pending")) {
			json_decref(j); /* still waiting for a reviewer: keep the call open, ask again */
			struct mcp_msg again = {.kind = MCP_MSG_REQUEST, .id = *id, .m = MCP_M_TASKS_RESULT};
			json_t *p = json_pack("{s:s}", "taskId", t->sid);
			again.params = p;
			wm_task_method(w, c, &again, t->era);
			json_decref(p);
			return;
		} else {
			res = mcp_tool_result(json_incref(j));
			json_t *meta = json_object_get(res, "_meta"); /* a gated call's result has assent's already */
			if (res && !json_is_object(meta))
				json_object_set_new(res, "_meta", meta = json_object());
			if (meta)
				json_object_set_new(meta, "io.modelcontextprotocol/related-task",
						    json_pack("{s:s}", "taskId", t->sid));
		}
		break;
	case T_LIST:
		res = mcp_task_list(j);
		break;
	case T_GET:
		if (!(res = mcp_task_get(t->era, j)))
			msg = "no task of yours has this taskId";
		break;
	case T_CANCEL:
		if (!known)
			msg = "no task of yours has this taskId";
		else if (t->era == MCP_TASK_2026) /* an empty ack, whatever the state: idempotent */
			res = json_object();
		else if (strcmp(state, "cancelled") != 0)
			msg = "the task is already in a terminal status; it cannot be cancelled";
		else
			res = mcp_task_get(t->era, j);
		break;
	case T_UPDATE:
		msg = known ? "this task is waiting for a reviewer, not for input from the client"
			    : "no task of yours has this taskId";
		break;
	case T_INPUT: /* refused (a forged, replayed, altered or foreign state): a protocol error */
		if (iserr || !j) {
			snprintf(why, sizeof why, "%s",
				 json_string_value(json_object_get(j, "error")) ?: "the answer was refused");
			msg = why;
		} else
			res = mcp_tool_result(json_incref(j));
		break;
	}
	json_decref(j);
	if (res && c->modern && !json_object_get(res, "resultType"))
		json_object_set_new(res, "resultType", json_string("complete"));
	if (msg || !res) {
		json_decref(res);
		mcp_line_error(&c->out, id, MCP_INVALID_PARAMS, msg ? msg : "out of memory", NULL, NULL);
	} else {
		mcp_line_result(&c->out, id, res, NULL);
	}
}

/* A 2026-07-28 request: its _meta checked, then the methods that revision has. */
static void handle_modern(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	struct mcp_modern mm;
	int code;
	json_t *data;
	char err[AS_ERRLEN];
	if (mcp_modern_meta(m->params, &mm, &code, &data, err) != 0) {
		mcp_line_error(&c->out, &m->id, code, err, data, NULL);
		return;
	}
	c->modern = 1;
	c->client = mm.client; /* this request's declaration: a stdio connection may carry several */
	size_t start = c->out.len;
	switch (m->m) {
	case MCP_M_DISCOVER: {
		json_t *d = mcp_discover_result(ASSENT_VERSION);
		if (w->routes)
			wm_gate_caps(w, json_object_get(d, "capabilities"), 1);
		mcp_line_result(&c->out, &m->id, d, NULL);
		return; /* it carries its resultType already */
	}
	case MCP_M_TOOLS_LIST:
		if (mcp_line_tools_list_with(&c->out, &m->id, w->catalog, w->catalogn, NULL) == 0 &&
		    mcp_line_complete(&c->out, start, MCP_LIST_CACHE_HINTS, err) != 0)
			c->out.len = start;
		return;
	case MCP_M_TOOLS_CALL:
		wm_tools_call(w, c, m);
		if (c->out.len > start && mcp_line_complete(&c->out, start, NULL, err) != 0)
			c->out.len = start;
		return;
	case MCP_M_TASKS_GET:
	case MCP_M_TASKS_CANCEL:
	case MCP_M_TASKS_UPDATE:
		if (!c->client.tasks) { /* the extension's surface is for clients that declared it */
			json_t *req = json_pack("{s:{s:{}}}", "extensions", MCP_TASKS_EXT);
			mcp_line_error(&c->out, &m->id, MCP_MISSING_CLIENT_CAP,
				       "this request needs the " MCP_TASKS_EXT " extension in _meta[\"" MCP_META_CAPS
				       "\"].extensions",
				       json_pack("{s:o}", "requiredCapabilities", req), NULL);
			return;
		}
		wm_task_method(w, c, m, MCP_TASK_2026);
		return;
	case MCP_M_LISTEN: { /* what it hears is what server/discover says changes */
		json_t *caps = json_pack("{s:{}}", "tools");
		if (caps && w->routes)
			wm_gate_caps(w, caps, 1);
		listen_request(&w->listen, &c->out, c->id, c->http ? c->agent : NULL, m, listen_caps_kinds(caps),
			       ASSENT_VERSION);
		json_decref(caps);
		return;
	}
	case MCP_M_TASKS_RESULT:
	case MCP_M_TASKS_LIST:
		snprintf(err, sizeof err,
			 "Method not found: %s is not part of the %s extension (tasks/get carries the result)",
			 m->method, MCP_TASKS_EXT);
		mcp_line_error(&c->out, &m->id, MCP_METHOD_NOT_FOUND, err, NULL, NULL);
		return;
	case MCP_M_INITIALIZE:
	case MCP_M_PING:
	case MCP_M_LOGGING_SET_LEVEL:
		snprintf(err, sizeof err,
			 "Method not found: %s is not part of %s (a stateless request needs no handshake; "
			 "server/discover says what this server is)",
			 m->method, MCP_VERSION_STATELESS);
		mcp_line_error(&c->out, &m->id, MCP_METHOD_NOT_FOUND, err, NULL, NULL);
		return;
	default:
		if (wm_gated_other(w, c, m)) { /* the lists are the same for every caller, as tools/list is */
			int list = !strcmp(m->method, "resources/list") ||
				   !strcmp(m->method, "resources/templates/list") || !strcmp(m->method, "prompts/list");
			if (c->out.len > start &&
			    mcp_line_complete(&c->out, start, list ? MCP_LIST_CACHE_HINTS : NULL, err) != 0)
				c->out.len = start;
			return;
		}
		mcp_line_error(&c->out, &m->id, MCP_METHOD_NOT_FOUND, "Method not found", NULL, NULL);
	}
}

/* One parsed message from connection c; answers go to c->out. */
static void wm_handle_msg(struct mw *w, struct mconn *c, const struct mcp_msg *mp)
{
	char err[AS_ERRLEN];
	const struct mcp_msg m = *mp;
	if (m.kind == MCP_MSG_NOTIFICATION) {
		if (m.m == MCP_M_CANCELLED) {
			struct mcp_id rq;
			char reason[MCP_REASON_MAX + 1], rid[PROTO_RID_MAX + 1];
			if (mcp_cancelled(m.params, &rq, reason, err) == 0 && !listen_cancel(&w->listen, c->id, &rq)) {
				wm_id_json(&rq, rid);
				wm_send_about(w, F_CANCEL, c->id, rid);
			}
		} else if (m.m == MCP_M_ASSENT_DEFAULTS && !c->http && mcp_defaults(m.params, &c->dflt_timeout, err)) {
			wlog(w, "warning", "mcp: %s", err);
		}
		return;
	}
	if (m.kind == MCP_MSG_RESPONSE && m.id.t == MCP_ID_STR && m.id.len > 11 && !memcmp(m.id.s, "assent-ask-", 11)) {
		uint64_t aid; /* a client answering a server's request the gate relayed */
		char num[24];
		snprintf(num, sizeof num, "%.*s", (int)(m.id.len - 11 < 23 ? m.id.len - 11 : 23), m.id.s + 11);
		if (parse_u64(num, &aid) == 0)
			wm_answer_frame(w, c->id, aid, m.result, m.error);
		return;
	}
	if (m.kind != MCP_MSG_REQUEST)
		return;
	if (c->stateless || mcp_is_modern(&m)) {
		handle_modern(w, c, &m);
		return;
	}
	json_t *res = NULL;
	switch (m.m) {
	case MCP_M_INITIALIZE:
		if (mcp_initialize(m.params, ASSENT_VERSION, &c->client, &res, err) != 0) {
			mcp_line_error(&c->out, &m.id, MCP_INVALID_PARAMS, err, NULL, NULL);
		} else {
			if (w->routes) /* the gate: the upstreams' tools change as their servers come and go */
				wm_gate_caps(w, json_object_get(res, "capabilities"), 0);
			c->listed = 1;
			mcp_line_result(&c->out, &m.id, res, NULL);
		}
		break;
	case MCP_M_PING:
		mcp_line_result(&c->out, &m.id, json_object(), NULL);
		break;
	case MCP_M_TOOLS_LIST:
		/* pre-built: no parse and print per call */
		mcp_line_tools_list_with(&c->out, &m.id, w->catalog, w->catalogn, NULL);
		break;
	case MCP_M_LOGGING_SET_LEVEL: {
		enum mcp_log_level lv;
		if (mcp_log_set_level(m.params, &lv, err) != 0)
			mcp_line_error(&c->out, &m.id, MCP_INVALID_PARAMS, err, NULL, NULL);
		else
			mcp_line_result(&c->out, &m.id, json_object(), NULL);
		break;
	}
	case MCP_M_TOOLS_CALL:
		wm_tools_call(w, c, &m);
		break;
	case MCP_M_TASKS_GET:
	case MCP_M_TASKS_RESULT:
	case MCP_M_TASKS_LIST:
	case MCP_M_TASKS_CANCEL:
		wm_task_method(w, c, &m, MCP_TASK_2025);
		break;
	default:
		if (!wm_gated_other(w, c, &m))
			mcp_line_error(&c->out, &m.id, MCP_METHOD_NOT_FOUND, "Method not found", NULL, NULL);
	}
}

static void handle_line(struct mw *w, struct mconn *c, const char *line, size_t len)
{
	struct mcp_msg m;
	char err[AS_ERRLEN];
	if (mcp_parse_line(line, len, &m, err) != 0) {
		if (m.answer)
			mcp_line_invalid(&c->out, &m, err, NULL);
	} else {
		wm_handle_msg(w, c, &m);
	}
	mcp_msg_free(&m);
}

/* Keep the last MCP_PEEK_TAIL bytes of a line being skipped. */
static void keep_tail(struct mconn *c, const char *p, size_t n)
{
	if (n >= sizeof c->tail) {
		memcpy(c->tail, p + n - sizeof c->tail, sizeof c->tail);
		c->tailn = sizeof c->tail;
		return;
	}
	size_t keep = c->tailn + n > sizeof c->tail ? sizeof c->tail - n : c->tailn;
	memmove(c->tail, c->tail + c->tailn - keep, keep);
	memcpy(c->tail + keep, p, n);
	c->tailn = keep + n;
}

/* The line in c->in overflows: keep its head and tail, and skip the rest of it. */
static void start_skipping(struct mconn *c, const char *more, size_t n)
{
	c->headn = c->in.len < sizeof c->head ? c->in.len : sizeof c->head;
	memcpy(c->head, c->in.p, c->headn);
	c->tailn = 0;
	keep_tail(c, (const char *)c->in.p, c->in.len);
	keep_tail(c, more, n);
	c->skipping = 1;
	c->skipped = c->in.len + n;
	buf_reset(&c->in);
}

/* Split what arrived into lines; a line over MCP_LINE_MAX is skipped to its end and
 * answered with -32600 (with its id when its head or tail shows it), and the connection
 * goes on. */
static int wm_conn_read(struct mw *w, struct mconn *c)
{
	char tmp[65536];
	ssize_t n = read(c->fd, tmp, sizeof tmp);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	size_t start = 0;
	for (size_t i = 0; i < (size_t)n; i++) {
		if (tmp[i] != '\n')
			continue;
		if (c->skipping || (c->in.len && buf_put(&c->in, tmp + start, i - start) != 0)) {
			/* Over the limit: classified by its length alone, never parsed. */
			if (!c->skipping) {
				start_skipping(c, tmp + start, i - start);
			} else {
				keep_tail(c, tmp + start, i - start);
				c->skipped += i - start;
			}
			size_t total = c->skipped;
			struct mcp_msg m;
			char err[AS_ERRLEN];
			mcp_parse_line(NULL, total, &m, err);
			struct mcp_id id;
			if (m.answer && mcp_peek_id(c->head, c->headn, c->tail, c->tailn, &id))
				m.id = id;
			if (m.answer)
				mcp_line_invalid(&c->out, &m, err, NULL);
			mcp_msg_free(&m);
			c->skipping = 0;
			buf_reset(&c->in);
		} else if (c->in.len) {
			handle_line(w, c, (const char *)c->in.p, c->in.len);
			buf_reset(&c->in);
		} else {
			handle_line(w, c, tmp + start, i - start);
		}
		start = i + 1;
	}
	if (start < (size_t)n) {
		size_t rest = (size_t)n - start;
		if (c->skipping) {
			c->skipped += rest;
			keep_tail(c, tmp + start, rest);
		} else if (buf_put(&c->in, tmp + start, rest) != 0) {
			start_skipping(c, tmp + start, rest);
		}
	}
	return 0;
}

static int wm_conn_flush(struct mconn *c)
{
	while (c->out.len) {
		ssize_t n = write(c->fd, c->out.p, c->out.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		memmove(c->out.p, c->out.p + n, c->out.len - (size_t)n);
		c->out.len -= (size_t)n;
	}
	return 0;
}

/* ---- the agent HTTP listener (Streamable HTTP) ----
 * libmicrohttpd runs in this loop (external epoll, suspend/resume). Each POST
 * carries one JSON-RPC message. The signer says who is asking (F_HTTP_AUTH: the
 * bearer key, the session, and the TCP connection so it can read the peer address
 * itself); then the message is handled like a stdio line on the session's
 * virtual connection, and what that writes to c->out is routed to the HTTP
 * request waiting for it: a JSON body, or events on an SSE stream (progress,
 * keep-alive comments, then the result). */

static struct hreq *hreq_find(struct mw *w, uint64_t id)
{
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (h->id == id)
			return h;
	return NULL;
}

static void wake(struct hreq *h)
{
	mc_wake(h->mc, &h->suspended);
}

static void sleep_on(struct hreq *h)
{
	mc_sleep(h->mc, &h->suspended);
}

/* Answer with status and a JSON body (len 0: none). */
static void wm_set_answer(struct hreq *h, unsigned status, const char *body, size_t len);

/* POST /events: the body {kind, key?, attrs?, call_id?} becomes the stateless tools/call of the
 * QA tool that records events, so that it takes the path, checks and identity of any tool call. */
static int events_request(struct mw *w, struct hreq *h)
{
	json_t *in = json_loadb((const char *)h->body.p, h->body.len, JSON_REJECT_DUPLICATES, NULL);
	static char name[64];
	snprintf(name, sizeof name, "%srecord_event", w->qa);
	if (!json_is_object(in) || !w->qa[0]) {
		json_decref(in);
		const char *why = w->qa[0]
				      ? "{\"error\":\"the body must be a JSON object: {kind, key, attrs, call_id}\"}"
				      : "{\"error\":\"the call records are off (FEEDBACK_INSTRUMENTATION_MODE=off)\"}";
		h->v.events = 0; /* this answer is already plain */
		wm_set_answer(h, w->qa[0] ? 400 : 503, why, strlen(why));
		return -1;
	}
	json_t *call =
	    json_pack("{s:s,s:i,s:s,s:{s:s,s:o,s:{s:s,s:{},s:{s:s,s:s}}}}", "jsonrpc", "2.0", "id", 1, "method",
		      "tools/call", "params", "name", name, "arguments", in, "_meta", MCP_META_VERSION, "2026-07-28",
		      MCP_META_CAPS, MCP_META_CLIENT, "name", "http-events", "version", ASSENT_VERSION);
	char *s = call ? json_dumps(call, JSON_COMPACT) : NULL;
	json_decref(call);
	buf_reset(&h->body);
	int rc = !s || buf_put(&h->body, s, strlen(s)) != 0;
	free(s);
	h->v.method_hdr = "tools/call";
	h->v.name_hdr = name;
	if (rc) {
		static const char big[] = "{\"error\":\"the event is too large\"}";
		h->v.events = 0;
		wm_set_answer(h, 413, big, sizeof big - 1);
		return -1;
	}
	return 0;
}

/* A refusal's status (F_RESULT's, an enum proto_status) kept on the HTTP request waiting for
 * (conn, rid), so that POST /events answers 403 to a caller who may not, not 400. */
static void wm_refusal_status(struct mw *w, const struct cv *body, uint64_t conn, const char *rid, size_t ridn)
{
	static const unsigned http[PS_COUNT] = {
	    [PS_OK] = 200,	  [PS_BAD_REQUEST] = 400, [PS_UNAUTHORIZED] = 401, [PS_FORBIDDEN] = 403,
	    [PS_NOT_FOUND] = 404, [PS_TOO_MANY] = 429,	  [PS_UNAVAILABLE] = 503,  [PS_INTERNAL] = 500};
	const struct cv *st = cv_get(body, "status");
	if (!st || st->t != CV_UINT || st->u >= PS_COUNT || st->u == PS_OK)
		return;
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (h->waiting && h->conn == conn && strlen(h->rid) == ridn && !memcmp(h->rid, rid, ridn))
			h->refused = http[st->u];
}

/* POST /events answers plain JSON: the tool's structured result, or {"error": why}. */
static int events_answer(struct hreq *h, unsigned *status, const char *body, size_t len)
{
	json_t *j = json_loadb(body, len, 0, NULL), *out = NULL;
	const json_t *res = json_object_get(j, "result"), *e = json_object_get(j, "error");
	if (res && !json_is_true(json_object_get(res, "isError"))) {
		out = json_incref(json_object_get(res, "structuredContent"));
	} else {
		const char *why = json_string_value(json_object_get(e, "message"));
		if (!why)
			why = json_string_value(
			    json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
		out = json_pack("{s:s}", "error", why ? why : "refused");
		if (*status == 200)
			*status = h->refused ? h->refused : 400;
	}
	char *s = out ? json_dumps(out, JSON_COMPACT) : NULL;
	json_decref(out);
	json_decref(j);
	buf_reset(&h->out);
	int rc = s && buf_put(&h->out, s, strlen(s)) == 0 ? 0 : -1;
	free(s);
	return rc;
}

static void wm_set_answer(struct hreq *h, unsigned status, const char *body, size_t len)
{
	if (h->v.events && len && events_answer(h, &status, body, len) == 0) {
		h->status = status;
		h->st = HS_RESPOND;
		return;
	}
	h->status = status;
	buf_reset(&h->out);
	if (len && buf_put(&h->out, body, len) != 0) {
		static const char oom[] =
		    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"answer too large\"}}";
		buf_reset(&h->out);
		if (buf_put(&h->out, oom, sizeof oom - 1) != 0)
			buf_reset(&h->out); /* then no body: the 500 says enough */
		h->status = 500;
	}
	h->st = HS_RESPOND;
}

static void wm_set_reject(struct hreq *h, unsigned status, int code, const char *msg)
{
	h->v.route = MH_REJECT;
	h->v.status = status;
	h->v.rpc_code = code;
	snprintf(h->v.msg, sizeof h->v.msg, "%s", msg);
	for (char *p = h->v.msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e || *p == '"' || *p == '\\')
			*p = '?';
	char body[400];
	size_t n = mh_error_body(&h->v, body, sizeof body);
	wm_set_answer(h, status, body, n);
}

/* A body over the limit is never parsed, but when its start shows the request's id
 * the 413's JSON-RPC error carries it (as a stdio line's does). */
static void too_big_id(struct hreq *h, const char *msg)
{
	struct mcp_id id;
	struct buf line;
	if (!mcp_peek_id((const char *)h->body.p, h->body.len, NULL, 0, &id))
		return;
	buf_init(&line, 1u << 12);
	if (mcp_line_error(&line, &id, -32600, msg, NULL, NULL) == 0 && line.len > 1)
		wm_set_answer(h, 413, (const char *)line.p, line.len - 1);
	buf_free(&line);
}

/* Append text to a stream, whole or not at all. A client that does not read its stream
 * fills h->out to its bound: the stream ends there (finished) rather than losing events
 * from its middle. 0, or -1 when it ended. */
static int stream_put(struct hreq *h, const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn)
{
	size_t at = h->out.len;
	if (buf_put(&h->out, a, an) == 0 && buf_put(&h->out, b, bn) == 0 && buf_put(&h->out, c, cn) == 0)
		return 0;
	h->out.len = at;
	h->finished = 1;
	return -1;
}

static void sse_event(struct mw *w, struct hreq *h, const char *json, size_t n)
{
	if (h->ss && sse_put(h->ss, json, n, &h->out) != 0) {
		h->finished = 1; /* what the log holds can still be resumed */
		wlog(w, "warning", "an SSE stream ended: its client does not read its events");
	} else if (!h->ss && stream_put(h, "event: message\ndata: ", 21, json, n, "\n\n", 2) != 0) {
		wlog(w, "warning", "an SSE stream ended: its client does not read its events");
	}
}

/* What handling a message wrote to c->out for a call whose stream is parked (its client
 * hung up; sseresume.h): logged for the resume. 1 when there was such a stream. */
static int route_parked(struct mw *w, struct mconn *c, const char *rid, size_t ridn, int final)
{
	struct sse_stream *s = rid ? sse_parked(&w->sse, c->id, rid, ridn) : NULL;
	if (!s)
		return 0;
	const char *p = (const char *)c->out.p, *end = p + c->out.len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (sse_put(s, p, n, NULL) != 0)
			wlog(w, "warning", "a parked SSE stream is full: an event of it is lost");
		p += n + 1;
	}
	if (final)
		s->done = 1;
	buf_reset(&c->out);
	return 1;
}

/* What handling a message wrote to c->out (lines) goes to the HTTP request that
 * waits on (c, rid): events on its stream, or (final) its JSON body. */
static void wm_route_out(struct mw *w, struct mconn *c, const char *rid, size_t ridn, int final)
{
	if (c->legacy) { /* the 2024-11-05 transport: everything goes down the one stream */
		const char *p = (const char *)c->out.p, *end = p + c->out.len;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
			sse_event(w, c->legacy, p, n);
			p += n + 1;
		}
		wake(c->legacy);
		buf_reset(&c->out);
		return;
	}
	struct hreq *h = w->hreqs;
	for (; h; h = h->next)
		if (h->waiting && h->conn == c->id && strlen(h->rid) == ridn && !memcmp(h->rid, rid, ridn))
			break;
	if (!h && route_parked(w, c, rid, ridn, final))
		return;
	if (h) {
		if (!final && h->st == HS_WAIT && h->stateless && h->v.sse)
			h->st = HS_STREAM; /* a progress line: the answer streams from now on */
		const char *p = (const char *)c->out.p, *end = p + c->out.len;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
			if (h->st == HS_STREAMING || h->st == HS_STREAM)
				sse_event(w, h, p, n);
			else if (final) /* 2026-07-28 errors have their own statuses (modern.h) */
				wm_set_answer(h, c->stateless ? mcp_http_status(mcp_line_error_code(p, n)) : 200, p, n);
			p += n + 1;
		}
		if (final) {
			h->waiting = 0;
			h->finished = 1;
			if (h->ss)
				h->ss->done = 1;
		}
		wake(h);
	}
	buf_reset(&c->out);
}

/* subscriptions/listen over HTTP (listen.h): the acknowledgement opens an event stream that
 * stays open, carrying the changes, until the client leaves (or ends at once, with its
 * result, when nothing asked for can be delivered). 1 when h is one (answered). */
static int listen_http(struct mw *w, struct hreq *h, struct mconn *c)
{
	const char *p = (const char *)c->out.p, *nl = c->out.len ? memchr(p, '\n', c->out.len) : NULL;
	if (h->m.m != MCP_M_LISTEN || !nl || mcp_line_error_code(p, (size_t)(nl - p)) != 0)
		return 0; /* an error: answered as any other */
	int open = listen_find(&w->listen, c->id, &h->m.id) != NULL;
	if (!h->v.sse) {
		listen_cancel(&w->listen, c->id, &h->m.id);
		buf_reset(&c->out);
		wm_set_reject(h, 406, -32600,
			      "subscriptions/listen answers with an event stream: Accept must admit "
			      "text/event-stream");
	} else {
		h->st = HS_STREAM;
		h->next_keepalive = mono_ms() + KEEPALIVE_EVERY_MS;
		wm_route_out(w, c, h->rid, strlen(h->rid), !open); /* the acknowledgement (and the end) */
	}
	wake(h);
	return 1;
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

/* An MCP session over HTTP busy here: a request of it in flight, its stream, or a call. */
static int http_busy(const struct mw *w, const struct mconn *c)
{
	if (c->legacy || c->out.len || sse_has_conn(&w->sse, c->id))
		return 1;
	for (const struct hreq *h = w->hreqs; h; h = h->next)
		if (h->conn == c->id)
			return 1;
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++)
		if (w->calls[i].used && w->calls[i].conn == c->id)
			return 1;
	return 0;
}

/* A free slot. The sessions are the signer's (it ends them; this worker is not told
 * when it sweeps idle ones), so an HTTP session's slot here is only a copy of what
 * the signer keeps, made again from its answer when the session comes back: when
 * the table is full, an idle one's slot is taken, or sessions the signer ended
 * would hold the table for good. */
static struct mconn *wm_free_slot(struct mw *w)
{
	struct mconn *idle = NULL;
	for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
		struct mconn *c = &w->conns[i];
		if (!c->used)
			return c;
		if (!idle && c->http && !http_busy(w, c))
			idle = c;
	}
	if (idle) {
		buf_free(&idle->in);
		buf_free(&idle->out);
		memset(idle, 0, sizeof *idle);
	}
	return idle;
}

static struct mconn *http_mconn(struct mw *w, uint64_t conn, const char *client, const char *protocol)
{
	struct mconn *c = wm_conn_find(w, conn);
	if (c)
		return c;
	if ((c = wm_free_slot(w))) {
		memset(c, 0, sizeof *c);
		c->used = 1;
		c->http = 1;
		c->id = conn;
		c->fd = -1;
		buf_init(&c->in, 1);
		buf_init(&c->out, 64u << 20);
		/* A session this worker has not seen (it was restarted): what its
		 * initialize declared, as the signer kept it. */
		const char *slash = strchr(client, '/');
		snprintf(c->client.name, sizeof c->client.name, "%.*s",
			 (int)(slash ? slash - client : (long)strlen(client)), client);
		snprintf(c->client.client_version, sizeof c->client.client_version, "%s", slash ? slash + 1 : "");
		c->client.version = mcp_negotiate_version(protocol);
		return c;
	}
	return NULL;
}

static void wm_http_auth(struct mw *w, struct hreq *h, int init)
{
	/* A 2026-07-28 request asks for a connection of its own, which ends with it. */
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(h->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = ipc_frame_new(&a, F_HTTP_AUTH, 5);
	int rc = !ci || !f || ipc_put_uint(&a, f, "hreq", h->id) || ipc_put_bool(&a, f, "init", init) ||
		 (h->stateless && ipc_put_bool(&a, f, "stateless", 1)) ||
		 (h->v.bearer && ipc_put_text(&a, f, "bearer", h->v.bearer, h->v.bearer_len)) ||
		 (h->v.session[0] && ipc_put_text(&a, f, "session", h->v.session, strlen(h->v.session)));
	if (!rc && ipc_send(w->ipcfd, f, ci->connect_fd, w->err) == 0) {
		h->st = HS_AUTH;
		sleep_on(h);
	} else {
		wm_set_reject(h, 500, -32603, "the gateway could not check this request");
	}
	cv_arena_free(&a);
}

/* GET /mcp with Last-Event-ID, of the session the signer said: the stream re-attached, the
 * events after that id replayed, then the rest as it comes (the answer ends it). */
static void resume_stream(struct mw *w, struct hreq *h)
{
	char why[200];
	unsigned status;
	struct sse_stream *s =
	    sse_resume(&w->sse, h->conn, h->v.resume_no, h->v.resume_seq, &h->out, &status, why, sizeof why);
	if (!s) {
		wm_set_reject(h, status, -32600, why);
		wake(h);
		return;
	}
	h->ss = s;
	snprintf(h->rid, sizeof h->rid, "%s", s->rid);
	h->waiting = !s->done;
	h->finished = s->done;
	h->st = HS_STREAM;
	h->next_keepalive = mono_ms() + KEEPALIVE_EVERY_MS;
	h->poll_at = mono_ms() + 1000ull * w->cfg.sse_poll_s;
	wake(h);
}

/* The signer's answer to F_HTTP_AUTH: go on as that session, or refuse. */
static void wm_on_http_reply(struct mw *w, struct ipc_frame *f)
{
	uint64_t id, status, conn = 0;
	char err[AS_ERRLEN];
	const char *e = NULL, *sess = NULL, *client = "", *proto = "";
	size_t en = 0, sn = 0, cn = 0, pn = 0;
	if (ipc_get_uint(f->body, "hreq", UINT64_MAX, &id, err) || ipc_get_uint(f->body, "status", 599, &status, err))
		return;
	struct hreq *h = hreq_find(w, id);
	if (!h || h->st != HS_AUTH)
		return; /* the client left meanwhile */
	if (status != 200) {
		if (ipc_get_text(f->body, "error", 200, &e, &en, err) != 0)
			e = "refused", en = 7;
		char msg[201];
		snprintf(msg, sizeof msg, "%.*s", (int)en, e);
		uint64_t retry = 0;
		if (cv_get(f->body, "retry") && ipc_get_uint(f->body, "retry", 86400, &retry, err) != 0)
			retry = 0;
		wm_set_reject(h, (unsigned)status, status == 401 || status == 404 ? -32001 : -32600, msg);
		h->retry_s = (unsigned)retry;
		wake(h);
		return;
	}
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) ||
	    ipc_get_text(f->body, "session", MH_SESSION_LEN, &sess, &sn, err) ||
	    ipc_get_text(f->body, "client", 2 * MCP_NAME_MAX + 2, &client, &cn, err) ||
	    ipc_get_text(f->body, "protocol", 15, &proto, &pn, err)) {
		wm_set_reject(h, 500, -32603, "the gateway could not check this request");
		wake(h);
		return;
	}
	char cl[2 * MCP_NAME_MAX + 3], pr[16];
	snprintf(cl, sizeof cl, "%.*s", (int)cn, client);
	snprintf(pr, sizeof pr, "%.*s", (int)pn, proto);
	snprintf(h->session, sizeof h->session, "%.*s", (int)sn, sess);
	h->conn = conn;
	mc_authed(h->mc); /* its connection no longer counts against its address */
	struct mconn *c = http_mconn(w, conn, cl, pr);
	if (!c) {
		wm_set_reject(h, 503, -32603, "this worker serves too many sessions");
		wake(h);
		return;
	}
	c->hreq = id; /* a request frame this message leads to names it (handled at once, below) */
	if (h->stateless)
		c->stateless = c->modern = 1;
	const char *pp;
	size_t ppn;
	if (ipc_get_text(f->body, "principal", PROTO_NAME_MAX, &pp, &ppn, err) == 0)
		snprintf(c->agent, sizeof c->agent, "%.*s", (int)ppn, pp);
	if (h->v.route == MH_MCP_DELETE) {
		wm_send_about(w, F_SESSION_END, conn, NULL);
		wm_conn_close(w, c, 0);
		h->session[0] = 0;
		wm_set_answer(h, 200, NULL, 0);
		wake(h);
		return;
	}
	if (h->v.route == MH_LEGACY_SSE) { /* the stream is the session: tell the client where to post */
		if (c->legacy) {
			wm_set_reject(h, 409, -32600, "this session already has its stream");
			wake(h);
			return;
		}
		c->legacy = h;
		char ev[120];
		int k = snprintf(ev, sizeof ev, "event: endpoint\ndata: /messages?session_id=%s\n\n", h->session);
		if (stream_put(h, ev, (size_t)k, "", 0, "", 0) != 0)
			wlog(w, "warning", "an SSE stream ended before its endpoint event");
		h->session[0] = 0; /* the old transport names it in the endpoint, not in a header */
		h->st = HS_STREAM;
		h->next_keepalive = mono_ms() + KEEPALIVE_EVERY_MS;
		wake(h);
		return;
	}
	if (h->v.route == MH_LEGACY_POST) {
		if (!c->legacy) {
			wm_set_reject(h, 404, -32001, "this session's event stream is closed: GET /sse again");
			wake(h);
			return;
		}
		buf_reset(&c->out);
		wm_handle_msg(w, c, &h->m);
		wm_route_out(w, c, NULL, 0, 0); /* to the stream; answers from the signer follow there */
		h->session[0] = 0;
		wm_set_answer(h, 202, NULL, 0);
		wake(h);
		return;
	}
	if (h->v.route == MH_MCP_RESUME) {
		resume_stream(w, h);
		return;
	}
	if (h->m.kind != MCP_MSG_REQUEST) { /* notifications and responses: accepted, never answered */
		wm_handle_msg(w, c, &h->m);
		buf_reset(&c->out);
		wm_set_answer(h, 202, NULL, 0);
		wake(h);
		return;
	}
	wm_id_json(&h->m.id, h->rid);
	buf_reset(&c->out);
	wm_handle_msg(w, c, &h->m);
	if (h->m.m == MCP_M_INITIALIZE && c->client.version) {
		char decl[ACTION_CLIENT_MAX + 1];
		action_client(decl, c->client.name, c->client.client_version);
		struct cv_arena a;
		cv_arena_init(&a, 8);
		struct cv *fr = ipc_frame_new(&a, F_SESSION_INFO, 3);
		if (fr && !ipc_put_uint(&a, fr, "conn", conn) && !ipc_put_text(&a, fr, "client", decl, strlen(decl)) &&
		    !ipc_put_text(&a, fr, "protocol", c->client.version, strlen(c->client.version)))
			wm_send_frame(w, fr);
		cv_arena_free(&a);
	}
	h->waiting = 1;
	if (listen_http(w, h, c))
		return;
	if (c->out.len) { /* answered here and now */
		wm_route_out(w, c, h->rid, strlen(h->rid), 1);
		if (h->st != HS_RESPOND)
			wm_set_reject(h, 500, -32603, "no answer");
	} else if (h->v.sse && !h->stateless) { /* the signer answers later: stream progress until then */
		h->st = HS_STREAM;
		h->next_keepalive = mono_ms() + KEEPALIVE_EVERY_MS;
		/* 2025-11-25 clients resume (SEP-1699): a priming event, ids on every event; older
		 * ones would take the priming event's empty data for a message */
		if (c->client.version && strcmp(c->client.version, "2025-11-25") >= 0 && !c->modern &&
		    !(h->ss = sse_open(&w->sse, conn, h->rid, &h->out)))
			wlog(w, "warning", "too many SSE streams: a call's stream cannot be resumed");
		h->poll_at = mono_ms() + 1000ull * w->cfg.sse_poll_s;
	} else {
		/* A 2026-07-28 answer has its own HTTP status (a -32602 is a 400): it waits as
		 * JSON, and becomes a stream only at its first progress line or keep-alive. */
		h->st = HS_WAIT;
		h->next_keepalive = mono_ms() + KEEPALIVE_EVERY_MS;
		return; /* stays suspended until the result */
	}
	wake(h);
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct hreq *h = cls;
	int sleep;
	ssize_t n = mc_stream_read(&h->out, h->finished, buf, max, &sleep);
	if (sleep)
		sleep_on(h); /* woken by an event, a keep-alive or the result */
	return n;
}

static enum MHD_Result queue(struct hreq *h)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	if (h->st == HS_STREAM) {
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_reader, h, NULL);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Content-Type", "text/event-stream");
		MHD_add_response_header(r, "Cache-Control", "no-cache, no-store");
		MHD_add_response_header(r, "X-Accel-Buffering", "no");
		h->status = 200;
		h->st = HS_STREAMING;
	} else {
		r = MHD_create_response_from_buffer(h->out.len, h->out.p, MHD_RESPMEM_MUST_COPY);
		if (!r)
			return MHD_NO;
		if (h->out.len)
			MHD_add_response_header(r, "Content-Type", "application/json");
		MHD_add_response_header(r, "Cache-Control", "no-store");
		if (h->status == 405 && h->v.allow)
			MHD_add_response_header(r, "Allow", h->v.allow);
		if (h->status == 307 && h->location[0])
			MHD_add_response_header(r, "Location", h->location);
		if (h->status == 401)
			MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"assent\"");
		if (h->retry_s) { /* a limit: when to try again */
			char ra[16];
			snprintf(ra, sizeof ra, "%u", h->retry_s);
			MHD_add_response_header(r, "Retry-After", ra);
		}
		h->st = HS_DONE;
	}
	if (h->session[0])
		MHD_add_response_header(r, "Mcp-Session-Id", h->session);
	ret = MHD_queue_response(h->mc, h->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* What the headers of a parsed request say before anyone is asked who sent it: a
 * revision we do not speak (-32022), or a 2026-07-28 request whose headers disagree
 * with its body (-32020); both answered 400 with the request's id. A stateless
 * notification is accepted and dropped: without a session there is nothing it could
 * change (closing a response stream is how such a client cancels). 1 when answered. */
static int modern_refused(struct hreq *h)
{
	char msg[200];
	int code = 0;
	json_t *data = NULL;
	if (h->v.unsupported) {
		code = MCP_UNSUPPORTED_VERSION;
		data = mcp_unsupported_data(h->v.protocol, strlen(h->v.protocol));
		snprintf(msg, sizeof msg,
			 "unsupported MCP-Protocol-Version %.31s (this server speaks 2026-07-28, 2025-11-25 and "
			 "2025-06-18)",
			 h->v.protocol);
	} else if (!h->v.modern && (h->v.protocol[0] || h->v.session[0] || !mcp_is_modern(&h->m))) {
		return 0; /* the 2025 revisions: sessions, as before */
	} else if (h->m.kind != MCP_MSG_REQUEST) {
		wm_set_answer(h, 202, NULL, 0);
		return 1;
	} else if (!(code = mcp_http_headers_agree(&h->v, &h->m, msg, sizeof msg))) {
		h->stateless = 1;
		return 0;
	}
	struct buf line;
	buf_init(&line, 1u << 16);
	mcp_line_error(&line, &h->m.id, code, msg, data, NULL);
	wm_set_answer(h, 400, (const char *)line.p, line.len ? line.len - 1 : 0);
	buf_free(&line);
	return 1;
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	struct mw *w = cls;
	struct hreq *h = *con_cls;
	if (!h) {
		if (!(h = calloc(1, sizeof *h)))
			return MHD_NO;
		h->id = ++w->next_hreq;
		h->mc = mc;
		buf_init(&h->body, w->cfg.body_max);
		buf_init(&h->out, 64u << 20);
		h->next = w->hreqs;
		w->hreqs = h;
		*con_cls = h;
		struct mh_head hd = {
		    .method = method,
		    .path = url,
		    .host = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Host"),
		    .origin = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Origin"),
		    .content_type = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Type"),
		    .accept = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Accept"),
		    .session = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Mcp-Session-Id"),
		    .protocol = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "MCP-Protocol-Version"),
		    .authorization = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Authorization"),
		    .cookie = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Cookie"),
		    .identity = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, w->proxy_header),
		    .mcp_method = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Mcp-Method"),
		    .mcp_name = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Mcp-Name"),
		    .last_event_id = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Last-Event-ID"),
		};
		enum mh_route route = mh_classify(&w->cfg, &hd, &h->v);
		/* A POST refused for what its client sent (its key's shape, its media types, a
		 * version we do not speak) is answered once its body is read, with the request's id
		 * when the body shows it; Host, Origin and reviewer credentials are refused at once. */
		h->deferred = route == MH_REJECT && !strcmp(method, "POST") && !strcmp(url, "/mcp") &&
			      (h->v.status == 401 || h->v.status == 406 || h->v.status == 415);
		if (route != MH_MCP_POST && route != MH_LEGACY_POST && !h->deferred)
			mc_received(mc); /* no body to wait for */
		if (h->deferred) {
			h->st = HS_BODY;
			return MHD_YES;
		}
		switch (route) {
		case MH_REJECT: {
			char body[400];
			size_t n = mh_error_body(&h->v, body, sizeof body);
			wm_set_answer(h, h->v.status, body, n);
			return queue(h);
		}
		case MH_REVIEWERS: { /* the seed's reviewer endpoints: 307 to the reviewer listener, which has them */
			char body[400];
			int n =
			    w->review_url[0]
				? snprintf(body, sizeof body,
					   "{\"error\":\"%s is on the reviewer listener: %s%s (reviewers' credentials "
					   "are never taken here)\"}",
					   url, w->review_url, url)
				: snprintf(body, sizeof body,
					   "{\"error\":\"%s is on the reviewer listener, which is off "
					   "(ASSENT_REVIEW_PORT)\"}",
					   url);
			if (w->review_url[0])
				snprintf(h->location, sizeof h->location, "%s%s", w->review_url, url);
			h->v.events = 0;
			wm_set_answer(h, w->review_url[0] ? 307 : 404, body,
				      n > 0 && (size_t)n < sizeof body ? (size_t)n : 0);
			return queue(h);
		}
		case MH_HEALTH: {
			char body[160];
			uint64_t up = w->uptime + (w->stats_at ? (mono_ms() - w->stats_at) / 1000 : 0);
			int n = snprintf(body, sizeof body,
					 "{\"status\":\"ok\",\"pending_sessions\":%llu,\"uptime_seconds\":%llu}",
					 (unsigned long long)w->pending, (unsigned long long)up);
			wm_set_answer(h, 200, body, (size_t)n);
			return queue(h);
		}
		case MH_LEGACY_SSE:
			wm_http_auth(w, h, 1); /* the stream opens the session */
			return h->st == HS_RESPOND ? queue(h) : MHD_YES;
		case MH_MCP_RESUME:
			wm_http_auth(w, h, 0); /* the session's stream, if it is the session's */
			return h->st == HS_RESPOND ? queue(h) : MHD_YES;
		case MH_LEGACY_POST: {
			const char *q = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "session_id");
			if (!q || strlen(q) != MH_SESSION_LEN || strspn(q, "0123456789abcdef") != MH_SESSION_LEN) {
				wm_set_reject(h, 404, -32001,
					      "unknown session: post to the endpoint the /sse stream named");
				return queue(h);
			}
			memcpy(h->v.session, q, MH_SESSION_LEN + 1);
			h->st = HS_BODY;
			return MHD_YES;
		}
		default:
			h->st = HS_BODY;
			return MHD_YES;
		}
	}
	switch (h->st) {
	case HS_BODY:
		if (*upload_size) {
			if (!h->too_big && buf_put(&h->body, upload, *upload_size) != 0)
				h->too_big = 1; /* read to its end, then answered 413 */
			*upload_size = 0;
			return MHD_YES;
		}
		mc_received(mc);
		if (h->deferred) {
			struct mcp_id id;
			char body[600];
			struct buf line;
			buf_init(&line, sizeof body);
			if (mcp_peek_id((const char *)h->body.p, h->body.len, NULL, 0, &id) &&
			    mcp_line_error(&line, &id, h->v.rpc_code, h->v.msg, NULL, NULL) == 0 && line.len > 1)
				wm_set_answer(h, h->v.status, (const char *)line.p, line.len - 1);
			else
				wm_set_answer(h, h->v.status, body, mh_error_body(&h->v, body, sizeof body));
			buf_free(&line);
			return queue(h);
		}
		if (h->too_big) {
			char msg[120];
			snprintf(msg, sizeof msg, "the body is over the limit of %zu bytes (ASSENT_HTTP_MAX_BODY)",
				 w->cfg.body_max);
			wm_set_reject(h, 413, -32600, msg);
			too_big_id(h, msg);
			return queue(h);
		}
		if (h->v.route == MH_MCP_DELETE) {
			wm_http_auth(w, h, 0);
			return h->st == HS_RESPOND ? queue(h) : MHD_YES;
		}
		if (h->v.events && events_request(w, h) != 0)
			return queue(h);
		{
			char err[AS_ERRLEN];
			if (mcp_parse_line((const char *)h->body.p, h->body.len, &h->m, err) != 0) {
				struct buf line;
				buf_init(&line, 1u << 16);
				if (!h->m.answer)
					snprintf(err, sizeof err, "the body is not one JSON-RPC message");
				mcp_line_invalid(&line, &h->m, err, NULL);
				mcp_msg_free(&h->m);
				wm_set_answer(h, 400, (const char *)line.p, line.len ? line.len - 1 : 0);
				buf_free(&line);
				return queue(h);
			}
			h->have_msg = 1;
			if (modern_refused(h))
				return queue(h);
			wm_http_auth(w, h,
				     h->stateless || (h->m.kind == MCP_MSG_REQUEST && h->m.m == MCP_M_INITIALIZE &&
						      !h->v.session[0]));
			return h->st == HS_RESPOND ? queue(h) : MHD_YES;
		}
	case HS_RESPOND:
	case HS_STREAM:
		return queue(h);
	default:
		return MHD_YES;
	}
}

/* The client of a call still waiting for its answer is gone: cancel it (the signer
 * ledgers the request as cancelled, like a stdio client that leaves). */
static void cancel_rid(void *arg, uint64_t conn, const char *rid)
{
	struct mw *w = arg;
	wm_send_about(w, F_CANCEL, conn, rid);
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++)
		if (w->calls[i].used && w->calls[i].conn == conn && !strcmp(w->calls[i].rid, rid))
			w->calls[i].used = 0;
}

static void wm_not_resumed(void *arg, uint64_t conn, const char *rid)
{
	wlog((struct mw *)arg, "info", "a parked SSE stream was not resumed within %u s: its call is cancelled",
	     (unsigned)(SSE_GRACE_MS / 1000));
	cancel_rid(arg, conn, rid);
}

static void wm_cancel_call(struct mw *w, struct hreq *h)
{
	if (!h->waiting)
		return;
	h->waiting = 0;
	cancel_rid(w, h->conn, h->rid);
}

/* The request streaming a resumable answer ends: the answer delivered, its stream is done
 * with; else it is parked for a resume, and its call waits on (sseresume.h). */
static void wm_stream_left(struct mw *w, struct hreq *h, int delivered)
{
	if (!h->ss)
		return;
	if (delivered && h->ss->done) {
		sse_close(&w->sse, h->ss);
	} else {
		sse_park(h->ss, mono_ms());
		wlog(w, "info",
		     "an HTTP client left before its answer: its stream is parked for %u s for a resume (GET "
		     "with Last-Event-ID)",
		     (unsigned)(SSE_GRACE_MS / 1000));
	}
	h->ss = NULL;
	h->waiting = 0; /* not cancelled now: when the grace period ends without a resume */
}

/* libmicrohttpd does not watch a suspended connection: look at the sockets of the
 * calls that wait, so that a client that left is cancelled within a second, not at
 * the next keep-alive (or never, for a JSON answer). */
static void wm_hangups(struct mw *w)
{
	for (struct hreq *h = w->hreqs; h; h = h->next) {
		if (!h->waiting || !h->suspended)
			continue;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(h->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct pollfd p = {.fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP};
		if (!ci || poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			continue;
		wm_stream_left(w, h, 0);
		wm_cancel_call(w, h);
		if (h->st == HS_WAIT)
			wm_set_reject(h, 400, -32600, "the client left"); /* written to no one; ends the request */
		h->finished = 1;
		wake(h);
	}
}

static void on_http_done(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)toe;
	struct mw *w = cls;
	mc_request_done(mc); /* the clock starts again for the next request on this connection */
	struct hreq *h = *con_cls;
	if (!h)
		return;
	wm_stream_left(w, h, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	wm_cancel_call(w, h); /* its stream is gone before the answer: like a stdio client leaving */
	if (h->have_msg && h->m.m == MCP_M_LISTEN) /* a listen stream ends with its request, session or not */
		listen_cancel(&w->listen, h->conn, &h->m.id);
	struct mconn *sc = h->stateless && h->conn ? wm_conn_find(w, h->conn) : NULL;
	if (sc && sc->stateless)
		wm_conn_close(w, sc, 1);	       /* the signer ends the request's connection with it */
	for (size_t i = 0; i < PROTO_CONNS_MAX; i++) { /* a 2024-11-05 session lives as long as its stream */
		struct mconn *c = &w->conns[i];
		if (c->used && c->legacy == h) {
			wm_send_about(w, F_SESSION_END, c->id, NULL);
			c->legacy = NULL;
			wm_conn_close(w, c, 0);
		}
	}
	for (struct hreq **p = &w->hreqs; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	if (h->have_msg)
		mcp_msg_free(&h->m);
	buf_free(&h->body);
	buf_free(&h->out);
	free(h);
	*con_cls = NULL;
}

static void wm_keepalive(struct mw *w, uint64_t now)
{
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (h->st == HS_WAIT && h->stateless && h->v.sse && h->waiting && now >= h->next_keepalive) {
			h->st = HS_STREAM; /* a long wait: keep-alives from now on, as for sessions */
			wake(h);
		}
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (w->cfg.sse_poll_s && h->ss && h->waiting && !h->finished && now >= h->poll_at) {
			/* SEP-1699 polling: the stream ends here, parked; its client resumes it */
			sse_park(h->ss, now);
			h->ss = NULL;
			h->waiting = 0;
			h->finished = 1;
			wake(h);
			wlog(w, "info",
			     "a call's SSE stream was ended after %u s (ASSENT_HTTP_SSE_POLL_SECONDS) for its "
			     "client to resume",
			     w->cfg.sse_poll_s);
		}
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (h->st == HS_STREAMING && !h->finished && now >= h->next_keepalive) {
			if (stream_put(h, ": keep-alive\n\n", 14, "", 0, "", 0) != 0)
				wlog(w, "warning", "an SSE stream ended: its client does not read its events");
			h->next_keepalive = now + KEEPALIVE_EVERY_MS;
			wake(h);
		}
}

/* Before the jail: the configuration frame, and libmicrohttpd on the listener. */
static int wm_http_start(struct mw *w, struct cv_arena *a, char *err)
{
	struct ipc_frame f;
	GUARD(ipc_config(&w->ipc, w->ipcfd, a, &f, err));
	const struct cv *c = cv_get(f.body, "http");
	int rc =
	    !c ? as_fail(err, AS_ECORRUPT, "the configuration has no http member") : http_cfg_from_cv(c, &w->cfg, err);
	const char *ph;
	size_t phn;
	if (rc == 0 && ipc_get_text(f.body, "proxy_header", sizeof w->proxy_header - 1, &ph, &phn, err) == 0)
		snprintf(w->proxy_header, sizeof w->proxy_header, "%.*s", (int)phn, ph);
	const char *ru;
	size_t run;
	if (rc == 0 && cv_get(f.body, "review_url") &&
	    ipc_get_text(f.body, "review_url", sizeof w->review_url - 1, &ru, &run, err) == 0)
		snprintf(w->review_url, sizeof w->review_url, "%.*s", (int)run, ru);
	const char *rj;
	size_t rjn;
	if (rc == 0 && cv_get(f.body, "records") &&
	    ipc_get_text(f.body, "records", PROTO_JSON_MAX, &rj, &rjn, err) == 0) { /* what to record */
		json_t *j = json_loadb(rj, rjn, 0, NULL);
		w->rec = callrec_new(j, w->ipcfd, err);
		const char *qp = json_string_value(json_object_get(j, "qa_prefix")),
			   *qs = json_string_value(json_object_get(j, "qa_separator"));
		if (qp && qs && strlen(qp) + strlen(qs) < sizeof w->qa) {
			memcpy(w->qa, qp, strlen(qp));
			memcpy(w->qa + strlen(qp), qs, strlen(qs) + 1);
			wm_qa_defs_make(w);
		}
		json_decref(j);
	}
	ipc_frame_close_fds(&f);
	if (rc != 0)
		return rc;
	if (!w->cfg.on)
		return 0;
	w->pconns.unauth_max = w->cfg.unauth_per_addr;
	w->mhd =
	    MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_http, w,
			     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)WORKER_HTTP_FD, MHD_OPTION_CONNECTION_LIMIT,
			     (unsigned)w->cfg.conns_max, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)w->cfg.idle_s,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)w->cfg.header_max, MHD_OPTION_NOTIFY_COMPLETED,
			     on_http_done, w, MHD_OPTION_NOTIFY_CONNECTION, mc_notify, &w->pconns, MHD_OPTION_END);
	if (!w->mhd)
		return as_fail(err, AS_EIO, "libmicrohttpd would not start on the agent listener");
	return 0;
}

/* The client's answer to a server's request: to the signer, as CBOR. */
static void wm_answer_frame(struct mw *w, uint64_t conn, uint64_t aid, const json_t *result, const json_t *error)
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
	char err[AS_ERRLEN];
	struct mconn *c;
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) ||
	    ipc_get_uint(f->body, "aid", UINT64_MAX, &aid, err) ||
	    ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err) ||
	    ipc_get_text(f->body, "method", 64, &mt, &mtn, err) ||
	    ipc_get_text(f->body, "json", PROTO_JSON_MAX, &js, &jsn, err))
		return;
	char m[65];
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
	char err[AS_ERRLEN];
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &r.conn, err) ||
	    ipc_get_text(f->body, "rid", PROTO_RID_MAX, &r.rid, &r.ridn, err) ||
	    ipc_get_text(f->body, "json", PROTO_JSON_MAX, &r.js, &r.jsn, err) ||
	    ipc_get_bool(f->body, "iserror", &r.iserr, err))
		return;
	if ((cv_get(f->body, "raw") && ipc_get_bool(f->body, "raw", &r.raw, err) != 0) ||
	    (cv_get(f->body, "rpc_error") && ipc_get_bool(f->body, "rpc_error", &r.rpcerr, err) != 0))
		return;
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
	char err[AS_ERRLEN];
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) ||
	    ipc_get_text(f->body, "json", PROTO_JSON_MAX, &js, &jsn, err) || !(c = wm_conn_find(w, conn)) || c->http ||
	    c->modern)
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
	char err[AS_ERRLEN];
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) ||
	    ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err) ||
	    ipc_get_text(f->body, "method", 64, &mt, &mtn, err) ||
	    ipc_get_text(f->body, "json", PROTO_JSON_MAX, &js, &jsn, err) || !(c = wm_conn_find(w, conn)))
		return;
	json_t *p = json_loadb(js, jsn, 0, NULL);
	if (!json_is_object(p))
		return;
	int sent = 1;
	if (mtn == 22 && !memcmp(mt, "notifications/progress", 22)) {
		sent = note_progress(w, c, conn, rid, ridn, p);
	} else {
		char mn[65];
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
	char err[AS_ERRLEN];
	if (ipc_get_text(f->body, "tools", IPC_FRAME_MAX, &tj, &tn, err) ||
	    ipc_get_text(f->body, "routes", IPC_FRAME_MAX, &rj, &rn, err) || tn < 2 || tj[0] != '[')
		return;
	unsigned lists = 0; /* the prompts and resources lists that changed (listen.h) */
	if (ipc_get_text(f->body, "more", IPC_FRAME_MAX, &mj, &mn, err) == 0) {
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
	uint64_t p, u;
	char err[AS_ERRLEN];
	if (ipc_get_uint(f->body, "pending", UINT64_MAX, &p, err) == 0 &&
	    ipc_get_uint(f->body, "uptime", UINT64_MAX, &u, err) == 0) {
		w->pending = p;
		w->uptime = u;
		w->stats_at = mono_ms();
	}
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

int worker_mcp_main(int ipcfd)
{
	static struct mw w; /* large: keep it off the stack */
	w.ipcfd = ipcfd;
	/* Stream numbers start at the wall clock's microseconds, so that an id a client kept from
	 * before a restart of this worker never names a later stream of its session. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	w.sse.next_no = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	char err[AS_ERRLEN];
	cv_arena_init(&w.arena, 1u << 20);
	if (ipc_conn_init(&w.ipc, ipcfd, err) != 0)
		return 2;
	struct cv_arena a;
	cv_arena_init(&a, 1u << 20);
	if (wm_http_start(&w, &a, err) != 0) {
		wlog(&w, "error", "mcp worker: agent HTTP listener: %s", err);
		return 2;
	}
	/* libmicrohttpd accepts on the listener it was handed and sets socket options;
	 * it never creates a socket (socket, bind and listen stay forbidden). */
	static const int http_calls[] = {SCMP_SYS(accept4),    SCMP_SYS(accept),      SCMP_SYS(setsockopt),
					 SCMP_SYS(getsockopt), SCMP_SYS(getsockname), SCMP_SYS(getpeername)};
	struct jail_opts jo = {.max_fds = PROTO_CONNS_MAX + 16 + (w.mhd ? w.cfg.conns_max + 16 : 0),
			       .extra_syscalls = w.mhd ? http_calls : NULL,
			       .nextra = w.mhd ? sizeof http_calls / sizeof *http_calls : 0};
	if (jail_enter(&jo, err) != 0) {
		wlog(&w, "error", "mcp worker: cannot enter the jail: %s", err);
		return 2;
	}
	struct cv *hello = ipc_frame_new(&a, F_HELLO, 1);
	if (!hello || ipc_put_text(&a, hello, "kind", "mcp", 3) != 0) {
		wlog(&w, "error", "mcp worker: out of memory");
		return 2;
	}
	wm_send_frame(&w, hello);
	struct pollfd pf[PROTO_CONNS_MAX + 2];
	struct mconn *map[PROTO_CONNS_MAX + 2];
	const union MHD_DaemonInfo *di = w.mhd ? MHD_get_daemon_info(w.mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	int mhd_fd = di ? di->epoll_fd : -1;
	size_t peak = 0;
	for (;;) {
		size_t n = 0;
		pf[n++] = (struct pollfd){.fd = ipcfd, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = mhd_fd, .events = POLLIN}; /* MHD's own epoll set, nested */
		int timeout = 1000;
		MHD_UNSIGNED_LONG_LONG to;
		if (w.mhd && MHD_get_timeout(w.mhd, &to) == MHD_YES && to < (MHD_UNSIGNED_LONG_LONG)timeout)
			timeout = (int)to;
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
			struct mconn *c = &w.conns[i];
			if (!c->used || c->fd < 0)
				continue;
			map[n] = c;
			pf[n++] = (struct pollfd){.fd = c->fd, .events = (short)(POLLIN | (c->out.len ? POLLOUT : 0))};
		}
		callrec_flush(w.rec); /* this turn's calls: one frame */
		if (poll(pf, n, timeout) < 0 && errno != EINTR)
			return 2;
		if (pf[0].revents) {
			int r = ipc_read(&w.ipc, err);
			if (r == AS_ECORRUPT)
				return 2;
			struct ipc_frame f;
			for (;;) {
				cv_arena_reset(&a);
				int g = ipc_next(&w.ipc, &a, &f, err);
				if (g != 0) {
					if (g == AS_EIO || g == AS_ECORRUPT)
						return 0; /* the signer went away: nothing left to do */
					break;
				}
				on_frame(&w, &f);
				ipc_frame_close_fds(&f);
			}
		}
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
		if (w.mhd) {
			wm_keepalive(&w, mono_ms());
			sse_expire(&w.sse, mono_ms(), wm_not_resumed, &w); /* parked past their grace: cancelled */
			mc_deadlines(&w.pconns, w.cfg.request_s);
			mc_log_refused(&w.pconns, w.ipcfd, "agent");
			wm_hangups(&w);
			mc_run(w.mhd);
			/* After a crowd of connections is gone, give their buffers back. */
			size_t nconn = w.pconns.n;
			if (nconn > peak)
				peak = nconn;
			if (nconn == 0 && peak >= 64) {
				malloc_trim(0);
				peak = 0;
			}
		}
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++)
			if (w.conns[i].used && w.conns[i].fd >= 0 && w.conns[i].out.len &&
			    wm_conn_flush(&w.conns[i]) != 0)
				wm_conn_close(&w, &w.conns[i], 1);
	}
}
