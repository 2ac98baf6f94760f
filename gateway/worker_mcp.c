/* The mcp worker: jailed, it parses what agents send (JSON-RPC lines on the
 * connections the signer hands it), answers the protocol's own methods itself,
 * and turns tool calls into typed frames for the signer. It holds no key, no
 * file, no identity: a compromised worker can only send frames the signer checks. */
#define _GNU_SOURCE
#include "worker.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "jail.h"
#include "mcp.h"
#include "proto.h"
#include "redact.h"

#define PROGRESS_EVERY_MS 10000

struct call { /* a blocking tool call waiting for the signer */
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	struct mcp_id token; /* progress token, MCP_ID_NONE when the client gave none */
	uint64_t started, next_progress;
	int used;
};

struct mconn {
	uint64_t id;
	int fd;
	struct buf in, out;
	int skipping; /* discarding the rest of an over-long line */
	size_t skipped;
	struct mcp_client client;
	int used;
};

struct mw {
	int ipcfd;
	struct ipc_conn ipc;
	struct cv_arena arena;
	struct mconn conns[PROTO_CONNS_MAX];
	struct call calls[1024];
	char err[AS_ERRLEN];
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void wlog(struct mw *w, const char *level, const char *fmt, ...) AS_PRINTF(3, 4);
static void wlog(struct mw *w, const char *level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_LOG, 2);
	if (f && ipc_put_text(&a, f, "level", level, strlen(level)) == 0 &&
	    ipc_put_text(&a, f, "text", msg, strlen(msg)) == 0)
		ipc_send(w->ipcfd, f, -1, NULL);
	cv_arena_free(&a);
}

static struct mconn *conn_find(struct mw *w, uint64_t id)
{
	for (size_t i = 0; i < PROTO_CONNS_MAX; i++)
		if (w->conns[i].used && w->conns[i].id == id)
			return &w->conns[i];
	return NULL;
}

static void id_json(const struct mcp_id *id, char out[PROTO_RID_MAX + 1])
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

static void conn_close(struct mw *w, struct mconn *c, int tell)
{
	if (tell) {
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *f = ipc_frame_new(&a, F_CONN_CLOSED, 1);
		if (f && ipc_put_uint(&a, f, "conn", c->id) == 0)
			ipc_send(w->ipcfd, f, -1, NULL);
		cv_arena_free(&a);
	}
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++)
		if (w->calls[i].used && w->calls[i].conn == c->id)
			w->calls[i].used = 0;
	close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	memset(c, 0, sizeof *c);
}

/* Send a frame for a tool call; returns 0 or an error the caller answers with. */
static int send_frame(struct mw *w, struct cv *f)
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

static void tools_call(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	enum mcp_tool tool;
	const json_t *args;
	char err[AS_ERRLEN];
	if (mcp_tools_call(m->params, &tool, &args, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	char rid[PROTO_RID_MAX + 1];
	id_json(&m->id, rid);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = NULL;
	switch (tool) {
	case MCP_TOOL_REQUEST_FEEDBACK: {
		struct mcp_feedback fb;
		struct buf act;
		buf_init(&act, MCP_ACTION_MAX);
		struct cv *action = NULL;
		int rc = mcp_check_request_feedback(args, &fb, err);
		if (rc == 0)
			rc = mcp_feedback_redact(&fb, NULL, 0, err);
		if (rc == 0)
			rc = mcp_feedback_action(&fb, &act, err);
		if (rc == 0)
			rc = cbor_decode(act.p, act.len, a, &action, err);
		if (rc == 0) {
			f = ipc_frame_new(a, F_REQUEST, 7);
			struct cv *slot = f ? ipc_put(a, f, "action") : NULL;
			if (slot)
				*slot = *action;
			/* The subjects' bytes, so that the signer hashes them itself and a
			 * reviewer can read them: one item per subject, null for a digest only. */
			struct cv *arr = slot && fb.nsubjects ? cv_array(a, fb.nsubjects) : NULL;
			for (size_t i = 0; arr && i < fb.nsubjects; i++) {
				if (!fb.subjects[i].content)
					arr->items[i].t = CV_NULL;
				else if (cv_set_bytes(a, &arr->items[i], fb.subjects[i].content, fb.subjects[i].content_len))
					arr = NULL;
			}
			struct cv *cs = arr ? ipc_put(a, f, "contents") : NULL;
			if (cs)
				*cs = *arr;
			else if (fb.nsubjects)
				slot = NULL;
			char client[2 * MCP_NAME_MAX + 2];
			snprintf(client, sizeof client, "%s/%s", c->client.name, c->client.client_version);
			if (!slot || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
			    ipc_put_uint(a, f, "timeout", fb.timeout) || ipc_put_bool(a, f, "wait", fb.wait) ||
			    ipc_put_text(a, f, "client", client, strlen(client)))
				rc = as_fail(err, AS_ENOMEM, "request too large");
		}
		int wait = rc == 0 && fb.wait;
		mcp_feedback_free(&fb);
		if (rc != 0) {
			buf_free(&act);
			answer_tool_error(c, &m->id, err);
			return;
		}
		send_frame(w, f); /* before act is freed: the decoded action points into it */
		buf_free(&act);
		if (wait) {
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
				break;
			}
		}
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
		send_frame(w, f);
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
		send_frame(w, f);
		return;
	case MCP_TOOL_SUBMIT_FEEDBACK:
		answer_tool_error(c, &m->id,
				  "submit_feedback is for reviewers: an agent cannot decide its own request (a reviewer "
				  "answers with `assent approve|reject|answer|select` or the review UI)");
		return;
	default:
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "unknown tool", NULL, NULL);
	}
}

static void handle_line(struct mw *w, struct mconn *c, const char *line, size_t len)
{
	struct mcp_msg m;
	char err[AS_ERRLEN];
	int rc = mcp_parse_line(line, len, &m, err);
	if (rc != 0) {
		if (m.answer)
			mcp_line_invalid(&c->out, &m, err, NULL);
		mcp_msg_free(&m);
		return;
	}
	if (m.kind == MCP_MSG_NOTIFICATION) {
		if (m.m == MCP_M_CANCELLED) {
			struct mcp_id rq;
			char reason[MCP_REASON_MAX + 1], rid[PROTO_RID_MAX + 1];
			if (mcp_cancelled(m.params, &rq, reason, err) == 0) {
				id_json(&rq, rid);
				cv_arena_reset(&w->arena);
				struct cv *f = ipc_frame_new(&w->arena, F_CANCEL, 2);
				if (f && ipc_put_uint(&w->arena, f, "conn", c->id) == 0 &&
				    ipc_put_text(&w->arena, f, "rid", rid, strlen(rid)) == 0)
					send_frame(w, f);
			}
		}
		mcp_msg_free(&m);
		return;
	}
	if (m.kind != MCP_MSG_REQUEST) {
		mcp_msg_free(&m);
		return;
	}
	json_t *res = NULL;
	switch (m.m) {
	case MCP_M_INITIALIZE:
		if (mcp_initialize(m.params, ASSENT_VERSION, &c->client, &res, err) != 0)
			mcp_line_error(&c->out, &m.id, MCP_INVALID_PARAMS, err, NULL, NULL);
		else
			mcp_line_result(&c->out, &m.id, res, NULL);
		break;
	case MCP_M_PING:
		mcp_line_result(&c->out, &m.id, json_object(), NULL);
		break;
	case MCP_M_TOOLS_LIST:
		mcp_line_tools_list(&c->out, &m.id, NULL); /* pre-built: no parse and print per call */
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
		tools_call(w, c, &m);
		break;
	default:
		mcp_line_error(&c->out, &m.id, MCP_METHOD_NOT_FOUND, "Method not found", NULL, NULL);
	}
	mcp_msg_free(&m);
}

/* Split what arrived into lines; a line over MCP_LINE_MAX is skipped to its end and
 * answered with -32600, and the connection goes on. */
static int conn_read(struct mw *w, struct mconn *c)
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
			size_t total = (c->skipping ? c->skipped : c->in.len) + (i - start);
			struct mcp_msg m;
			char err[AS_ERRLEN];
			mcp_parse_line(NULL, total, &m, err);
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
		} else if (buf_put(&c->in, tmp + start, rest) != 0) {
			c->skipping = 1;
			c->skipped = c->in.len + rest;
			buf_reset(&c->in);
		}
	}
	return 0;
}

static int conn_flush(struct mconn *c)
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

static void on_frame(struct mw *w, struct ipc_frame *f)
{
	uint64_t conn = 0;
	char err[AS_ERRLEN];
	if (f->type == F_CONN_NEW) {
		if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) != 0 || f->nfds != 1)
			return;
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
			struct mconn *c = &w->conns[i];
			if (c->used)
				continue;
			memset(c, 0, sizeof *c);
			c->used = 1;
			c->id = conn;
			c->fd = f->fds[0];
			f->fds[0] = -1;
			buf_init(&c->in, MCP_LINE_MAX);
			buf_init(&c->out, 64u << 20);
			return;
		}
		return; /* full: the descriptor is closed with the frame */
	}
	if (f->type == F_RESULT) {
		const char *rid, *js;
		size_t ridn, jsn;
		int iserr = 0;
		if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) || ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err) ||
		    ipc_get_text(f->body, "json", PROTO_JSON_MAX, &js, &jsn, err) || ipc_get_bool(f->body, "iserror", &iserr, err))
			return;
		for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++) {
			struct call *k = &w->calls[i];
			if (k->used && k->conn == conn && strlen(k->rid) == ridn && !memcmp(k->rid, rid, ridn))
				k->used = 0;
		}
		struct mconn *c = conn_find(w, conn);
		struct mcp_id id;
		if (!c || id_parse(rid, ridn, &id) != 0)
			return;
		json_error_t je;
		json_t *s = json_loadb(js, jsn, 0, &je);
		json_t *res;
		if (iserr)
			res = mcp_tool_error(json_string_value(json_object_get(s, "error")) ?: "refused");
		else
			res = mcp_tool_result(json_incref(s));
		json_decref(s);
		mcp_line_result(&c->out, &id, res, NULL);
	}
}

static void progress(struct mw *w, uint64_t now)
{
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++) {
		struct call *k = &w->calls[i];
		if (!k->used || k->token.t == MCP_ID_NONE || now < k->next_progress)
			continue;
		struct mconn *c = conn_find(w, k->conn);
		if (c)
			mcp_line_progress(&c->out, &k->token, (double)(now - k->started) / 1000.0, -1,
					  "waiting for a reviewer", NULL);
		k->next_progress = now + PROGRESS_EVERY_MS;
	}
}

int worker_mcp_main(int ipcfd)
{
	static struct mw w; /* large: keep it off the stack */
	w.ipcfd = ipcfd;
	char err[AS_ERRLEN];
	cv_arena_init(&w.arena, 1u << 20);
	if (ipc_conn_init(&w.ipc, ipcfd, err) != 0)
		return 2;
	struct jail_opts jo = {.max_fds = PROTO_CONNS_MAX + 16};
	if (jail_enter(&jo, err) != 0) {
		wlog(&w, "error", "mcp worker: cannot enter the jail: %s", err);
		return 2;
	}
	struct cv_arena a;
	cv_arena_init(&a, 1u << 20);
	struct cv *hello = ipc_frame_new(&a, F_HELLO, 1);
	ipc_put_text(&a, hello, "kind", "mcp", 3);
	send_frame(&w, hello);
	struct pollfd pf[PROTO_CONNS_MAX + 1];
	struct mconn *map[PROTO_CONNS_MAX + 1];
	for (;;) {
		size_t n = 0;
		pf[n++] = (struct pollfd){.fd = ipcfd, .events = POLLIN};
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
			struct mconn *c = &w.conns[i];
			if (!c->used)
				continue;
			map[n] = c;
			pf[n++] = (struct pollfd){.fd = c->fd, .events = (short)(POLLIN | (c->out.len ? POLLOUT : 0))};
		}
		if (poll(pf, n, 1000) < 0 && errno != EINTR)
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
		for (size_t i = 1; i < n; i++) {
			struct mconn *c = map[i];
			if (!c->used)
				continue;
			if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && conn_read(&w, c) != 0) {
				conn_close(&w, c, 1);
				continue;
			}
			if (c->out.len && conn_flush(c) != 0)
				conn_close(&w, c, 1);
		}
		progress(&w, mono_ms());
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++)
			if (w.conns[i].used && w.conns[i].out.len && conn_flush(&w.conns[i]) != 0)
				conn_close(&w, &w.conns[i], 1);
	}
}
