/* Answers to agents and reviewers: results, errors and refusals to an agent's request, reviewer command answers, web
 * answers; the connection a frame names. */
#define _GNU_SOURCE
#include "gateway/signer/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* ---- answering ---- */

static void result_frame(struct signer *s, uint64_t conn, const char *rid, json_t *result, int iserror, int raw);

/* A JSON-RPC error for the agent's request (the gate: a read or prompt that was refused). */
void send_rpc_error(struct signer *s, uint64_t conn, const char *rid, int code, const char *msg, json_t *data)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", msg);
	if (e && data)
		json_object_set(e, "data", data);
	if (e)
		result_frame(s, conn, rid, e, 1, 2);
	json_decref(e);
}

void send_result(struct signer *s, uint64_t conn, const char *rid, json_t *result, int iserror)
{
	result_frame(s, conn, rid, result, iserror, 0);
}

void send_result_raw(struct signer *s, uint64_t conn, const char *rid, json_t *result)
{
	result_frame(s, conn, rid, result, 0, 1);
}

/* A result whose JSON text someone else made (the recorder's): passed on unread. */
void send_refusal_text(struct signer *s, uint64_t conn, const char *rid, const char *js, size_t n, enum proto_status st)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct frame_result r = {.conn = conn, .rid = rid, .json = js, .n = n, .iserror = st != PS_OK, .status = st};
	worker_send(s, W_MCP, frame_result(&a, &r));
	cv_arena_free(&a);
}

void send_result_text(struct signer *s, uint64_t conn, const char *rid, const char *js, size_t n, int iserror)
{
	send_refusal_text(s, conn, rid, js, n, iserror ? PS_BAD_REQUEST : PS_OK);
}

static void result_frame(struct signer *s, uint64_t conn, const char *rid, json_t *result, int iserror, int raw)
{
	struct worker *w = &s->w[W_MCP];
	if (w->fd < 0)
		return;
	char *js = json_dumps(result, JSON_COMPACT);
	if (js && strlen(js) > IPC_FRAME_MAX - 1024) { /* a result is one frame */
		char msg[160];
		snprintf(msg, sizeof msg, "{\"error\":\"the result would be %zu bytes, over the limit of %u\"}",
			 strlen(js), IPC_FRAME_MAX - 1024);
		free(js);
		js = strdup(msg);
		iserror = 1;
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct frame_result r = {.conn = conn,
				 .rid = rid,
				 .json = js,
				 .n = js ? strlen(js) : 0,
				 .iserror = iserror,
				 .raw = raw == 1,
				 .rpc_error = raw == 2};
	if (js)
		worker_send(s, W_MCP, frame_result(&a, &r));
	free(js);
	cv_arena_free(&a);
}

struct answer answer_ok(json_t *j)
{
	return (struct answer){PS_OK, j};
}

struct answer ctl_error(enum proto_status st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return (struct answer){st, json_pack("{s:b,s:s}", "ok", 0, "error", msg)};
}

void ctl_reply_text(struct signer *s, uint64_t conn, enum proto_status st, const char *js, size_t n)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	worker_send(s, W_REVIEW, frame_ctl_reply(&a, conn, st, js, n));
	cv_arena_free(&a);
}

void ctl_reply(struct signer *s, uint64_t conn, struct answer ans)
{
	char *js = ans.j ? json_dumps(ans.j, JSON_COMPACT) : NULL;
	enum proto_status st = js ? ans.st : PS_INTERNAL;
	if (!js) /* json_pack or json_dumps out of memory */
		js = strdup("{\"ok\":false,\"error\":\"out of memory\"}");
	if (js && strlen(js) > IPC_FRAME_MAX - 1024) { /* a reply is one frame */
		char msg[160];
		snprintf(msg, sizeof msg,
			 "{\"ok\":false,\"error\":\"the reply would be %zu bytes, over the limit of %u\"}", strlen(js),
			 IPC_FRAME_MAX - 1024);
		free(js);
		js = strdup(msg);
		st = PS_INTERNAL;
	}
	if (js)
		ctl_reply_text(s, conn, st, js, strlen(js));
	free(js);
	json_decref(ans.j);
}

void web_send(struct signer *s, uint64_t hreq, const struct web_out *w, json_t *j)
{
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	const char *body = w->text ? w->text : js;
	size_t n = w->text ? w->textn : js ? strlen(js) : 0;
	enum proto_status status = w->status;
	if (!body || n > IPC_FRAME_MAX - 1024) {
		free(js);
		js = strdup("{\"error\":\"the answer would not fit in one frame\"}");
		body = js;
		n = js ? strlen(js) : 0;
		status = PS_INTERNAL;
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct frame_web_reply r = {.hreq = hreq,
				    .status = status,
				    .body = body,
				    .n = n,
				    .ctype = w->ctype,
				    .cookie = w->cookie,
				    .clear = w->clear,
				    .retry = w->retry_s,
				    .wsid = w->wsid};
	if (body)
		worker_send(s, W_REVIEW, frame_web_reply(&a, &r));
	free(js);
	cv_arena_free(&a);
}

/* Answer whoever issued a command: a control connection, or a web request. */
void reply_to(struct signer *s, uint64_t to, int web, struct answer ans)
{
	if (!web) {
		ctl_reply(s, to, ans);
		return;
	}
	struct web_out w = {.status = ans.st};
	web_send(s, to, &w, ans.j);
	json_decref(ans.j);
}

struct conn *conn_get(struct signer *s, uint64_t id, int worker)
{
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].used && s->conns[i].id == id && s->conns[i].worker == worker)
			return &s->conns[i];
	return NULL;
}

int conn_ended(const struct signer *s, uint64_t id)
{
	for (size_t i = 0; i < sizeof s->ended / sizeof *s->ended; i++)
		if (s->ended[i] == id && id)
			return 1;
	return 0;
}

/* A frame's text field k as a C string (its field table bounds it: max holds it). */
void frame_text(const struct ipc_frame *f, const char *k, char *out, size_t max)
{
	const struct cv *v = cv_get(f->body, k);
	snprintf(out, max, "%.*s", v ? (int)v->n : 0, v ? (const char *)v->s : "");
}

int get_conn(struct signer *s, struct ipc_frame *f, int worker, struct conn **c, char *err)
{
	uint64_t id = cv_get(f->body, "conn")->u; /* every frame that names one must (frames.c) */
	if ((*c = conn_get(s, id, worker)))
		return 0;
	if (conn_ended(s, id))
		return as_fail(err, AS_ENOTFOUND, "a frame about connection %llu, which has ended: dropped",
			       (unsigned long long)id);
	return as_fail(err, AS_ECORRUPT, "frame names connection %llu, which it was never given",
		       (unsigned long long)id);
}

void measured_put(struct signer *s, uint64_t hreq, uint64_t conn, uid_t uid)
{
	s->measured[s->measured_at] = (struct measured){.hreq = hreq, .conn = conn, .uid = uid, .used = 1};
	s->measured_at = (s->measured_at + 1) % MAX_MEASURED;
}

/* The uid measured for HTTP request hreq of session conn, once. A request frame that
 * names no request the signer authenticated for that session is an attack. */
int measured_take(struct signer *s, uint64_t hreq, uint64_t conn, uid_t *uid, char *err)
{
	for (size_t k = 1; k <= MAX_MEASURED; k++) { /* newest first: it is almost always the last one */
		struct measured *m = &s->measured[(s->measured_at + MAX_MEASURED - k) % MAX_MEASURED];
		if (!m->used)
			break;
		if (m->hreq == hreq && m->conn == conn) {
			*uid = m->uid;
			m->used = 0;
			m->hreq = 0;
			return 0;
		}
	}
	return as_fail(err, AS_ECORRUPT,
		       "a request over HTTP (hreq %llu) that the signer never authenticated for that session",
		       (unsigned long long)hreq);
}
