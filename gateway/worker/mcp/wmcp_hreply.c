/* The mcp worker's agent HTTP listener, once the signer said who is asking (F_HTTP_REPLY):
 * the session a request goes on as, answers routed to the request or stream that waits for
 * them, keep-alives, and clients that hang up. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/wmcp.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "gateway/proto/action.h"
#include "gateway/worker/mcp/modern.h"
#include "gateway/proto/proto.h"

static struct hreq *hreq_find(struct mw *w, uint64_t id)
{
	for (struct hreq *h = w->hreqs; h; h = h->next)
		if (h->id == id)
			return h;
	return NULL;
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
void wm_route_out(struct mw *w, struct mconn *c, const char *rid, size_t ridn, int final)
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
struct mconn *wm_free_slot(struct mw *w)
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

void wm_http_auth(struct mw *w, struct hreq *h, int init)
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

/* The signer refused the request (F_HTTP_REPLY's status, error and retry). */
static void reply_refused(struct hreq *h, const struct ipc_frame *f, uint64_t status)
{
	char err[AS_ERRLEN];
	const char *e = NULL;
	size_t en = 0;
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
}

/* The session the signer said the request goes on as: its connection here, made again when
 * this worker has not seen it. NULL when refused (answered). */
static struct mconn *reply_session(struct mw *w, struct hreq *h, const struct ipc_frame *f, uint64_t id)
{
	uint64_t conn = 0;
	char err[AS_ERRLEN];
	const char *sess = NULL, *client = "", *proto = "";
	size_t sn = 0, cn = 0, pn = 0;
	if (ipc_get_uint(f->body, "conn", UINT64_MAX, &conn, err) ||
	    ipc_get_text(f->body, "session", MH_SESSION_LEN, &sess, &sn, err) ||
	    ipc_get_text(f->body, "client", 2 * MCP_NAME_MAX + 2, &client, &cn, err) ||
	    ipc_get_text(f->body, "protocol", 15, &proto, &pn, err)) {
		wm_set_reject(h, 500, -32603, "the gateway could not check this request");
		wake(h);
		return NULL;
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
		return NULL;
	}
	c->hreq = id; /* a request frame this message leads to names it (handled at once, below) */
	if (h->stateless)
		c->stateless = c->modern = 1;
	const char *pp;
	size_t ppn;
	if (ipc_get_text(f->body, "principal", PROTO_NAME_MAX, &pp, &ppn, err) == 0)
		snprintf(c->agent, sizeof c->agent, "%.*s", (int)ppn, pp);
	return c;
}

/* DELETE /mcp: the session ends. */
static void session_delete(struct mw *w, struct hreq *h, struct mconn *c)
{
	wm_send_about(w, F_SESSION_END, c->id, NULL);
	wm_conn_close(w, c, 0);
	h->session[0] = 0;
	wm_set_answer(h, 200, NULL, 0);
	wake(h);
}

/* GET /sse (2024-11-05): the stream is the session: tell the client where to post. */
static void legacy_stream(struct mw *w, struct hreq *h, struct mconn *c)
{
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
}

/* POST /messages (2024-11-05): accepted; its answers go down the session's stream. */
static void legacy_post(struct mw *w, struct hreq *h, struct mconn *c)
{
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
}

/* After an initialize: what the session's client declared, for the signer to keep. */
static void session_info(struct mw *w, const struct mconn *c)
{
	char decl[ACTION_CLIENT_MAX + 1];
	action_client(decl, c->client.name, c->client.client_version);
	struct cv_arena a;
	cv_arena_init(&a, 8);
	struct cv *fr = ipc_frame_new(&a, F_SESSION_INFO, 3);
	if (fr && !ipc_put_uint(&a, fr, "conn", c->id) && !ipc_put_text(&a, fr, "client", decl, strlen(decl)) &&
	    !ipc_put_text(&a, fr, "protocol", c->client.version, strlen(c->client.version)))
		wm_send_frame(w, fr);
	cv_arena_free(&a);
}

/* A request handled: its answer now, or a stream of progress until the signer's answer, or
 * (2026-07-28) a wait for it as JSON. */
static void request_answer(struct mw *w, struct hreq *h, struct mconn *c)
{
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
		    !(h->ss = sse_open(&w->sse, c->id, h->rid, &h->out)))
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

/* The signer's answer to F_HTTP_AUTH: go on as that session, or refuse. */
void wm_on_http_reply(struct mw *w, struct ipc_frame *f)
{
	uint64_t id, status;
	char err[AS_ERRLEN];
	if (ipc_get_uint(f->body, "hreq", UINT64_MAX, &id, err) || ipc_get_uint(f->body, "status", 599, &status, err))
		return;
	struct hreq *h = hreq_find(w, id);
	if (!h || h->st != HS_AUTH)
		return; /* the client left meanwhile */
	if (status != 200) {
		reply_refused(h, f, status);
		return;
	}
	struct mconn *c = reply_session(w, h, f, id);
	if (!c)
		return;
	if (h->v.route == MH_MCP_DELETE) {
		session_delete(w, h, c);
		return;
	}
	if (h->v.route == MH_LEGACY_SSE) {
		legacy_stream(w, h, c);
		return;
	}
	if (h->v.route == MH_LEGACY_POST) {
		legacy_post(w, h, c);
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
	if (h->m.m == MCP_M_INITIALIZE && c->client.version)
		session_info(w, c);
	h->waiting = 1;
	if (listen_http(w, h, c))
		return;
	request_answer(w, h, c);
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

void wm_not_resumed(void *arg, uint64_t conn, const char *rid)
{
	wlog((struct mw *)arg, "info", "a parked SSE stream was not resumed within %u s: its call is cancelled",
	     (unsigned)(SSE_GRACE_MS / 1000));
	cancel_rid(arg, conn, rid);
}

void wm_cancel_call(struct mw *w, struct hreq *h)
{
	if (!h->waiting)
		return;
	h->waiting = 0;
	cancel_rid(w, h->conn, h->rid);
}

/* The request streaming a resumable answer ends: the answer delivered, its stream is done
 * with; else it is parked for a resume, and its call waits on (sseresume.h). */
void wm_stream_left(struct mw *w, struct hreq *h, int delivered)
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
void wm_hangups(struct mw *w)
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

void wm_keepalive(struct mw *w, uint64_t now)
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
