/* The mcp worker's messages: a parsed JSON-RPC message answered or turned into frames
 * (handle_msg; 2026-07-28 requests in handle_modern), and the stdio connections' lines. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/wmcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gateway/proto/workers.h"
#include "gateway/worker/mcp/modern.h"
#include "gateway/proto/proto.h"

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
void wm_handle_msg(struct mw *w, struct mconn *c, const struct mcp_msg *mp)
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
int wm_conn_read(struct mw *w, struct mconn *c)
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

int wm_conn_flush(struct mconn *c)
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
