/* The mcp worker's agent HTTP listener (Streamable HTTP): each request from its headers
 * to its answer, and libmicrohttpd started on the listener. wmcp_hreply.c goes on from the
 * signer's answer to who is asking. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/wmcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/workers.h"
#include "gateway/worker/mcp/callrec.h"
#include "gateway/worker/mcp/modern.h"
#include "gateway/worker/mhdreq.h"
#include "gateway/proto/proto.h"

/* ---- the agent HTTP listener (Streamable HTTP) ----
 * libmicrohttpd runs in this loop (external epoll, suspend/resume). Each POST
 * carries one JSON-RPC message. The signer says who is asking (F_HTTP_AUTH: the
 * bearer key, the session, and the TCP connection so it can read the peer address
 * itself); then the message is handled like a stdio line on the session's
 * virtual connection, and what that writes to c->out is routed to the HTTP
 * request waiting for it: a JSON body, or events on an SSE stream (progress,
 * keep-alive comments, then the result). */

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
void wm_refusal_status(struct mw *w, const struct cv *body, uint64_t conn, const char *rid, size_t ridn)
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

void wm_set_answer(struct hreq *h, unsigned status, const char *body, size_t len)
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

void wm_set_reject(struct hreq *h, unsigned status, int code, const char *msg)
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

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct hreq *h = cls; /* woken by an event, a keep-alive or the result */
	return mr_stream_read(h->mc, &h->suspended, &h->out, h->finished, buf, max);
}

static enum MHD_Result queue(struct hreq *h)
{
	const char *sid = h->session[0] ? h->session : NULL;
	if (h->st == HS_STREAM) {
		const struct mr_reply rp = {
		    .status = 200,
		    .ctype = "text/event-stream",
		    .first = {{"Cache-Control", "no-cache, no-store"}, {"X-Accel-Buffering", "no"}},
		    .last = {{"Mcp-Session-Id", sid}}};
		h->status = 200;
		h->st = HS_STREAMING;
		return mr_queue_stream(h->mc, &rp, sse_reader, h);
	}
	const struct mr_reply rp = {.status = h->status,
				    .ctype = h->out.len ? "application/json" : NULL,
				    .allow = h->v.allow,
				    .realm = "assent",
				    .retry_s = h->retry_s,
				    .first = {{"Cache-Control", "no-store"},
					      {"Location", h->status == 307 && h->location[0] ? h->location : NULL}},
				    .last = {{"Mcp-Session-Id", sid}}};
	h->st = HS_DONE;
	return mr_queue_buffer(h->mc, &rp, h->out.p, h->out.len);
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

/* A request's state, linked into the worker's list; NULL when out of memory. */
static struct hreq *hreq_new(struct mw *w, struct MHD_Connection *mc)
{
	struct hreq *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->id = ++w->next_hreq;
	h->mc = mc;
	buf_init(&h->body, w->cfg.body_max);
	buf_init(&h->out, 64u << 20);
	h->next = w->hreqs;
	w->hreqs = h;
	return h;
}

/* The headers mh_classify reads. */
static void head_read(const struct mw *w, struct MHD_Connection *mc, const char *method, const char *url,
		      struct mh_head *hd)
{
	*hd = (struct mh_head){
	    .method = method,
	    .path = url,
	    .host = mr_header(mc, "Host"),
	    .origin = mr_header(mc, "Origin"),
	    .content_type = mr_header(mc, "Content-Type"),
	    .accept = mr_header(mc, "Accept"),
	    .session = mr_header(mc, "Mcp-Session-Id"),
	    .protocol = mr_header(mc, "MCP-Protocol-Version"),
	    .authorization = mr_header(mc, "Authorization"),
	    .cookie = mr_header(mc, "Cookie"),
	    .identity = mr_header(mc, w->proxy_header),
	    .mcp_method = mr_header(mc, "Mcp-Method"),
	    .mcp_name = mr_header(mc, "Mcp-Name"),
	    .last_event_id = mr_header(mc, "Last-Event-ID"),
	};
}

/* The seed's reviewer endpoints: 307 to the reviewer listener, which has them. */
static enum MHD_Result answer_reviewers(struct mw *w, struct hreq *h, const char *url)
{
	char body[400];
	int n = w->review_url[0] ? snprintf(body, sizeof body,
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
	wm_set_answer(h, w->review_url[0] ? 307 : 404, body, n > 0 && (size_t)n < sizeof body ? (size_t)n : 0);
	return queue(h);
}

static enum MHD_Result answer_health(struct mw *w, struct hreq *h)
{
	char body[180 + PROTO_WITNESS_ALARM_MAX + PROTO_STATS_CLUSTER_MAX];
	uint64_t up = w->uptime + (w->stats_at ? (mono_ms() - w->stats_at) / 1000 : 0);
	/* witness_alarm: names of letters, digits and ._/:- and sizes (witness.c), no escaping;
	 * cluster: a JSON object the signer made (cluster.c) */
	int n = snprintf(
	    body, sizeof body, "{\"status\":\"ok\",\"pending_sessions\":%llu,\"uptime_seconds\":%llu%s%s%s%s%s}",
	    (unsigned long long)w->pending, (unsigned long long)up, w->alarm[0] ? ",\"witness_alarm\":\"" : "",
	    w->alarm, w->alarm[0] ? "\"" : "", w->cluster[0] ? ",\"cluster\":" : "", w->cluster);
	wm_set_answer(h, 200, body, (size_t)n);
	return queue(h);
}

/* A request's headers, classified: answered at once, or its body read first (HS_BODY), or
 * suspended while the signer says who is asking. */
static enum MHD_Result on_head(struct mw *w, struct hreq *h, const char *url, const char *method)
{
	struct MHD_Connection *mc = h->mc;
	struct mh_head hd;
	head_read(w, mc, method, url, &hd);
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
	case MH_REVIEWERS:
		return answer_reviewers(w, h, url);
	case MH_HEALTH:
		return answer_health(w, h);
	case MH_LEGACY_SSE:
		wm_http_auth(w, h, 1); /* the stream opens the session */
		return h->st == HS_RESPOND ? queue(h) : MHD_YES;
	case MH_MCP_RESUME:
		wm_http_auth(w, h, 0); /* the session's stream, if it is the session's */
		return h->st == HS_RESPOND ? queue(h) : MHD_YES;
	case MH_LEGACY_POST: {
		const char *q = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "session_id");
		if (!q || strlen(q) != MH_SESSION_LEN || strspn(q, "0123456789abcdef") != MH_SESSION_LEN) {
			wm_set_reject(h, 404, -32001, "unknown session: post to the endpoint the /sse stream named");
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

/* A POST refused by its headers (h->deferred), answered now that its body is read: with the
 * request's id when the body shows it. */
static enum MHD_Result answer_deferred(struct hreq *h)
{
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

/* The body is one JSON-RPC message: parsed, checked against the headers, then the signer
 * is asked who sent it. */
static enum MHD_Result parse_body(struct mw *w, struct hreq *h)
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
		     h->stateless || (h->m.kind == MCP_MSG_REQUEST && h->m.m == MCP_M_INITIALIZE && !h->v.session[0]));
	return h->st == HS_RESPOND ? queue(h) : MHD_YES;
}

/* The whole body is read: answered, or on to the signer. */
static enum MHD_Result on_body(struct mw *w, struct hreq *h)
{
	if (h->deferred)
		return answer_deferred(h);
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
	return parse_body(w, h);
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	struct mw *w = cls;
	struct hreq *h = *con_cls;
	if (!h) {
		if (!(h = hreq_new(w, mc)))
			return MHD_NO;
		*con_cls = h;
		return on_head(w, h, url, method);
	}
	switch (h->st) {
	case HS_BODY:
		if (mr_body(&h->body, upload, upload_size, &h->too_big))
			return MHD_YES;
		mc_received(mc);
		return on_body(w, h);
	case HS_RESPOND:
	case HS_STREAM:
		return queue(h);
	default:
		return MHD_YES;
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

/* Before the jail: the configuration frame, and libmicrohttpd on the listener. */
int wm_http_start(struct mw *w, struct cv_arena *a, char *err)
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
	w->mhd = mr_start(WORKER_HTTP_FD, &w->cfg, on_http, w, on_http_done, w, &w->pconns);
	if (!w->mhd)
		return as_fail(err, AS_EIO, "libmicrohttpd would not start on the agent listener");
	return 0;
}
