/* The reviewer listener, served in the jailed review worker (see worker_web.h).
 * This side parses HTTP and JSON and keeps the event streams; every credential
 * (cookie, CSRF token, reviewer or admin token, proxy identity) goes to the signer
 * in a frame of the endpoint's own type (F_WEB_*) with the connection itself, and the
 * signer's answer (its typed status mapped to HTTP by web_http_status) is what the
 * client gets. The rules on the request's head are webroute.c's; the page's bodies are
 * webapi.c's, /review/mcp's messages webmcp.c's (webreq.h is what the three share). */
#define _GNU_SOURCE
#include "gateway/worker/review/worker_web.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/proto/frames.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/worker/mhdconn.h"
#include "gateway/worker/mhdreq.h"
#include "gateway/proto/proto.h"
#include "common/util.h"
#include "gateway/worker/review/webreq.h"
#include "gateway/worker/review/webroute.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/worker.h"

#define WEB_BODY_MAX (64u << 10) /* a decision, a login, an MCP call: small */
#define WEB_KEEPALIVE_MS 15000

extern const char web_html[], web_js[], web_css[]; /* gateway/web/assets.S */
extern const uint64_t web_html_len, web_js_len, web_css_len;

static const char CSP[] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
			  "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

static struct {
	int ipcfd;
	struct http_cfg cfg;
	int proxy;
	char proxy_header[PROTO_PROXY_HEADER_MAX + 1];
	char qa[40]; /* the QA tools' prefix and separator ("qa_"); "" when the records are off */
	struct MHD_Daemon *tcp, *unix_;
	struct wreq *reqs;
	struct mc_list conns; /* both listeners' connections, for the whole-request deadline */
	uint64_t next_id;
	uint64_t pending, uptime, version;
	char alarm[PROTO_WITNESS_ALARM_MAX + 1];   /* F_STATS witness_alarm, "" none */
	char cluster[PROTO_STATS_CLUSTER_MAX + 1]; /* F_STATS cluster (a JSON object), "" none */
} W;

const char *web_qa_prefix(void)
{
	return W.qa;
}

static void wake(struct wreq *h)
{
	mc_wake(h->mc, &h->suspended);
}

static void sleep_on(struct wreq *h)
{
	mc_sleep(h->mc, &h->suspended);
}

void web_answer(struct wreq *h, unsigned status, const char *ctype, const char *body, size_t n)
{
	h->status = status;
	snprintf(h->ctype, sizeof h->ctype, "%s", ctype);
	buf_reset(&h->out);
	if (n && buf_put(&h->out, body, n) != 0) {
		buf_reset(&h->out);
		h->status = 500;
	}
	h->st = W_READY;
}

void web_answer_json(struct wreq *h, unsigned status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	web_answer(h, s ? status : 500, "application/json", s ? s : "{\"error\":\"out of memory\"}",
		   s ? strlen(s) : 25);
	free(s);
	json_decref(j);
}

void web_answer_error(struct wreq *h, unsigned status, const char *msg)
{
	web_answer_json(h, status, json_pack("{s:s}", "error", msg));
}

/* An MCP error for /review/mcp: JSON-RPC shape, in the HTTP status it deserves. */
void web_rpc_error(struct wreq *h, unsigned status, int code, const char *msg)
{
	web_answer_json(h, status,
			json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", h->rpc_id ? h->rpc_id : json_null(),
				  "error", "code", code, "message", msg));
}

/* Send the request to the signer with its connection: it decides who asks. */
void web_to_signer(struct wreq *h, uint32_t type, json_t *args)
{
	const char *pu = mr_header(h->mc, W.proxy_header);
	if (pu && strlen(pu) > 254)
		return web_answer_error(h, 400, "the proxy's identity header is too long");
	struct cv_arena a;
	cv_arena_init(&a, 256);
	struct cv *f = ipc_frame_new(&a, type, 15);
	struct MHD_Connection *mc = h->mc;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	/* A web session's secret comes in the header the page sets (Authorization: Bearer
	 * ws_...), never from a cookie: any page on this host can plant a cookie (cookies
	 * are not isolated by port), none can set our page's headers. A Cookie header is
	 * ignored. The frame still calls the session secret "cookie". */
	size_t n = 0, bn;
	const char *bearer = web_bearer(mr_header(mc, MHD_HTTP_HEADER_AUTHORIZATION), &bn), *cookie = NULL;
	if (bearer && bn > 3 && !strncmp(bearer, "ws_", 3)) {
		cookie = bearer;
		n = bn;
		bearer = NULL;
	}
	const char *csrf = mr_header(mc, "X-CSRF-Token"), *ps = mr_header(mc, "X-Assent-Proxy-Secret");
	int bad = !f || !ci || ipc_put_uint(&a, f, "hreq", h->id);
	/* Bounds here are the signer's too: something longer is no credential of ours. */
	/* /review/mcp and the admin endpoint take reviewer and admin tokens only, no session. */
	if (!bad && cookie && n <= 64 && h->r.route != WR_MCP && h->r.route != WR_ADMIN_CLEAR)
		bad = ipc_put_text(&a, f, "cookie", cookie, n);
	if (!bad && csrf && strlen(csrf) <= 64)
		bad = ipc_put_text(&a, f, "csrf", csrf, strlen(csrf));
	if (!bad && bearer && bn <= 512)
		bad = ipc_put_text(&a, f, "bearer", bearer, bn);
	if (!bad && pu && *pu)
		bad = ipc_put_text(&a, f, "proxy_user", pu, strlen(pu));
	if (!bad && ps && strlen(ps) <= 256)
		bad = ipc_put_text(&a, f, "proxy_secret", ps, strlen(ps));
	/* Behind the proxy every connection comes from the proxy: the client's address it
	 * passes (X-Real-IP) keys the failed-login limiter; believed on its socket only. */
	const char *rip = h->on_proxy ? mr_header(mc, "X-Real-IP") : NULL;
	if (!bad && rip && *rip && strlen(rip) <= 45)
		bad = ipc_put_text(&a, f, "client_addr", rip, strlen(rip));
	const char *k;
	json_t *v;
	json_object_foreach(args, k, v)
	{
		if (bad)
			break;
		if (json_is_string(v))
			bad = ipc_put_text(&a, f, k, json_string_value(v), json_string_length(v));
		else if (json_is_integer(v))
			bad = ipc_put_uint(&a, f, k, (uint64_t)json_integer_value(v));
		else if (json_is_boolean(v))
			bad = ipc_put_bool(&a, f, k, json_is_true(v));
	}
	char err[AS_ERRLEN];
	if (bad) {
		web_answer_error(h, 500, "cannot forward the request");
	} else if (ipc_send(W.ipcfd, f, ci->connect_fd, err) != 0) {
		_exit(3); /* the signer is gone or stuck: nothing to serve */
	} else {
		h->st = W_WAIT;
		sleep_on(h);
	}
	cv_arena_free(&a);
}

/* ---- the signer's answers and pushes ---- */

static struct wreq *find(uint64_t id)
{
	for (struct wreq *h = W.reqs; h; h = h->next)
		if (h->id == id)
			return h;
	return NULL;
}

/* Text for h's event stream: a client that lets PROTO_JSON_MAX pile up unread has its
 * stream ended (the page opens another). */
static void stream_text(struct wreq *h, const char *t)
{
	if (buf_put(&h->out, t, strlen(t)) != 0)
		h->finished = 1;
}

static void stream_event(struct wreq *h)
{
	if (buf_printf(&h->out, "event: pending\ndata: {\"version\":%llu,\"pending\":%llu}\n\n",
		       (unsigned long long)W.version, (unsigned long long)W.pending) != 0)
		h->finished = 1;
}

/* The signer let a reviewer's event stream open, and said how many one reviewer may
 * hold and for how long: past the count, 429 with Retry-After, so that one
 * reviewer's pages or script cannot hold the listener's connections. */
static void stream_open(struct wreq *h, uint32_t wsid, const char *body, size_t n)
{
	json_t *j = json_loadb(body, n, 0, NULL);
	const char *who = json_string_value(json_object_get(j, "reviewer"));
	json_int_t max = json_integer_value(json_object_get(j, "streams_max"));
	json_int_t life = json_integer_value(json_object_get(j, "stream_seconds"));
	if (!who || strlen(who) > PROTO_NAME_MAX || max < 1 || life < 1) {
		json_decref(j);
		return web_answer_error(h, 500, "the signer's answer to an event stream is not one");
	}
	uint64_t now = mono_ms(), first = UINT64_MAX;
	json_int_t open = 0;
	for (struct wreq *o = W.reqs; o; o = o->next)
		if ((o->st == W_STREAM || o->st == W_STREAMING) && !o->finished && !strcmp(o->reviewer, who)) {
			open++;
			if (o->stream_end < first)
				first = o->stream_end;
		}
	if (open >= max) {
		char msg[200];
		snprintf(msg, sizeof msg,
			 "too many event streams: reviewer %s has %lld open, at most %lld at once "
			 "(ASSENT_REVIEW_STREAMS_PER_REVIEWER)",
			 who, (long long)open, (long long)max);
		/* A slot frees when one of theirs ends: at the latest when the oldest one's
		 * lifetime does, and a closed one is seen at its next keep-alive. */
		uint64_t wait = first > now ? first - now : 0;
		h->retry = (unsigned)((wait < WEB_KEEPALIVE_MS ? wait : WEB_KEEPALIVE_MS) / 1000 + 1);
		json_decref(j);
		return web_answer_error(h, 429, msg);
	}
	snprintf(h->reviewer, sizeof h->reviewer, "%s", who);
	h->wsid = wsid;
	h->stream_end = now + (uint64_t)life * 1000;
	h->st = W_STREAM;
	buf_reset(&h->out);
	stream_text(h, "retry: 2000\n\n");
	stream_event(h);
	h->next_keepalive = now + WEB_KEEPALIVE_MS;
	json_decref(j);
}

static void on_reply(const struct ipc_frame *f)
{
	const struct cv *b = f->body; /* its table checked (wio_frames) */
	uint64_t id = frame_get_uint(b, "hreq"), st = frame_get_uint(b, "status"), retry = frame_get_uint(b, "retry"),
		 wsid = frame_get_uint(b, "wsid");
	size_t n, ctn;
	const char *body = frame_get_text(b, "body", &n), *ct = frame_get_text(b, "ctype", &ctn);
	struct wreq *h = find(id);
	if (!h || h->st != W_WAIT)
		return; /* the client left meanwhile */
	unsigned status = web_http_status(st);
	h->retry = (unsigned)retry;
	if (h->r.route == WR_MCP) {
		json_t *j = json_loadb(body, n, 0, NULL);
		web_mcp_reply(h, status, j);
		json_decref(j);
	} else if (h->r.route == WR_EVENTS && status == 200) {
		stream_open(h, (uint32_t)wsid, body, n);
	} else {
		char ctype[PROTO_CTYPE_MAX + 1];
		if (ct)
			snprintf(ctype, sizeof ctype, "%.*s", (int)ctn, ct);
		else
			snprintf(ctype, sizeof ctype, "application/json");
		web_answer(h, status, ctype, body, n);
	}
	wake(h);
}

static void on_push(const struct ipc_frame *f)
{
	W.version = frame_get_uint(f->body, "version");
	W.pending = frame_get_uint(f->body, "pending");
	const struct cv *ended = frame_get(f->body, "ended", CV_ARRAY);
	for (struct wreq *h = W.reqs; h; h = h->next) {
		if (h->st != W_STREAMING || h->finished)
			continue;
		for (size_t i = 0; ended && i < ended->n; i++)
			if (ended->items[i].t == CV_UINT && h->wsid && ended->items[i].u == h->wsid) {
				stream_text(h, "event: logout\ndata: {}\n\n");
				h->finished = 1;
			}
		if (!h->finished)
			stream_event(h);
		wake(h);
	}
}

void web_frame(const struct ipc_frame *f)
{
	if (f->type == F_WEB_REPLY)
		on_reply(f);
	else if (f->type == F_WEB_PUSH)
		on_push(f);
	else if (f->type == F_STATS) {
		W.pending = frame_get_uint(f->body, "pending");
		W.uptime = frame_get_uint(f->body, "uptime");
		size_t al = 0;
		const char *a = frame_get_text(f->body, "witness_alarm", &al);
		snprintf(W.alarm, sizeof W.alarm, "%.*s", (int)al, a ? a : "");
		const char *cl = frame_get_text(f->body, "cluster", &al);
		snprintf(W.cluster, sizeof W.cluster, "%.*s", cl ? (int)al : 0, cl ? cl : "");
	}
}

/* ---- libmicrohttpd ---- */

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct wreq *h = cls; /* woken by a push or a keep-alive */
	return mr_stream_read(h->mc, &h->suspended, &h->out, h->finished, buf, max);
}

/* The page's own headers, on every answer (five, from hs): no framing, no sniffing, no referrer. */
static void security_headers(struct mr_head *hs, int data)
{
	hs[0] = (struct mr_head){"Content-Security-Policy", CSP};
	hs[1] = (struct mr_head){"X-Frame-Options", "DENY"};
	hs[2] = (struct mr_head){"X-Content-Type-Options", "nosniff"};
	hs[3] = (struct mr_head){"Referrer-Policy", "no-referrer"};
	hs[4] = (struct mr_head){"Cache-Control", data ? "no-store" : "no-cache"};
}

static enum MHD_Result respond(struct wreq *h)
{
	if (h->st == W_STREAM) {
		struct mr_reply rp = {
		    .status = 200, .ctype = "text/event-stream", .first = {{"X-Accel-Buffering", "no"}}};
		security_headers(rp.first + 1, 1);
		h->st = W_STREAMING;
		return mr_queue_stream(h->mc, &rp, stream_reader, h);
	}
	char cd[200] = "";
	if (h->r.route == WR_PROOF && h->status == 200) /* a file to keep, as assent-verify proof writes it */
		snprintf(cd, sizeof cd, "attachment; filename=\"assent-entry-%llu.proof\"",
			 (unsigned long long)h->proof_seq);
	struct mr_reply rp = {.status = h->status,
			      .ctype = h->out.len || h->status != 202 ? h->ctype : NULL,
			      .allow = h->r.allow,
			      .realm = "assent-review",
			      .retry_s = h->retry,
			      .first = {[5] = {"Content-Disposition", cd[0] ? cd : NULL}}};
	security_headers(rp.first, h->r.route > WR_CSS);
	return mr_queue_buffer(h->mc, &rp, h->out.p, h->out.len);
}

static void serve_static(struct wreq *h)
{
	switch (h->r.route) {
	case WR_PAGE:
		return web_answer(h, 200, "text/html; charset=utf-8", web_html, (size_t)web_html_len);
	case WR_JS:
		return web_answer(h, 200, "text/javascript; charset=utf-8", web_js, (size_t)web_js_len);
	case WR_CSS:
		return web_answer(h, 200, "text/css; charset=utf-8", web_css, (size_t)web_css_len);
	case WR_FAVICON: /* no icon, and no 404 in the log or the console on every load */
		return web_answer(h, 204, "", "", 0);
	default: {
		char b[180 + PROTO_WITNESS_ALARM_MAX + PROTO_STATS_CLUSTER_MAX];
		int n = snprintf(b, sizeof b,
				 "{\"status\":\"ok\",\"pending_sessions\":%llu,\"uptime_seconds\":%llu%s%s%s%s%s}",
				 (unsigned long long)W.pending, (unsigned long long)W.uptime,
				 W.alarm[0] ? ",\"witness_alarm\":\"" : "", W.alarm, W.alarm[0] ? "\"" : "",
				 W.cluster[0] ? ",\"cluster\":" : "", W.cluster);
		return web_answer(h, 200, "application/json", b, (size_t)n);
	}
	}
}

static void dispatch(struct wreq *h)
{
	mc_received(h->mc); /* head and body are in: the whole-request clock stops */
	/* A page's connections carry no credential of their own: past its first whole
	 * request a connection is no slow head, and counts no longer per address. */
	mc_authed(h->mc);
	if (h->r.route == WR_MCP) {
		if (!mr_header(h->mc, MHD_HTTP_HEADER_AUTHORIZATION))
			return web_rpc_error(h, 401, -32001,
					     "a reviewer token is required (Authorization: Bearer rt_...)");
		return web_mcp_call(h);
	}
	if (!h->r.frame)
		return serve_static(h);
	web_api_call(h);
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	const int *proxy = cls;
	struct wreq *h = *con_cls;
	if (!h) {
		if (!(h = calloc(1, sizeof *h)))
			return MHD_NO;
		h->id = ++W.next_id;
		h->mc = mc;
		h->on_proxy = *proxy;
		const char *xfp = h->on_proxy ? mr_header(mc, "X-Forwarded-Proto") : NULL;
		buf_init(&h->body, WEB_BODY_MAX);
		buf_init(&h->out, PROTO_JSON_MAX);
		h->next = W.reqs;
		W.reqs = h;
		*con_cls = h;
		struct wr_in in = {.method = method,
				   .url = url,
				   .host = mr_header(mc, MHD_HTTP_HEADER_HOST),
				   .origin = mr_header(mc, "Origin"),
				   .content_type = mr_header(mc, MHD_HTTP_HEADER_CONTENT_TYPE),
				   .sec_fetch_site = mr_header(mc, "Sec-Fetch-Site"),
				   .authorization = mr_header(mc, MHD_HTTP_HEADER_AUTHORIZATION),
				   .forwarded_proto = xfp,
				   .on_proxy = h->on_proxy};
		web_classify(&W.cfg, &in, &h->r);
		if (h->r.status) {
			mc_received(mc);
			if (h->r.route == WR_MCP)
				web_rpc_error(h, h->r.status, -32600, h->r.error);
			else
				web_answer_error(h, h->r.status, h->r.error);
			return respond(h);
		}
		if (h->r.post) {
			h->st = W_BODY;
			return MHD_YES;
		}
		dispatch(h);
		if (h->st == W_READY)
			return respond(h);
		return MHD_YES;
	}
	if (h->st == W_BODY) {
		if (mr_body(&h->body, upload, upload_size, &h->too_big))
			return MHD_YES;
		if (h->too_big) /* answered once the body is read */
			web_answer_error(h, 413, "the body is over 64 KiB");
		else
			dispatch(h);
	}
	if (*upload_size) { /* the rest of a body already refused */
		*upload_size = 0;
		return MHD_YES;
	}
	if (h->st == W_READY || h->st == W_STREAM)
		return respond(h);
	return MHD_YES; /* still with the signer */
}

static void on_done(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)toe;
	struct wreq *h = *con_cls;
	mc_request_done(mc); /* the clock starts again for the next request on this connection */
	if (!h)
		return;
	for (struct wreq **p = &W.reqs; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	json_decref(h->rpc_id);
	buf_free(&h->body);
	buf_free_wipe(&h->out); /* a login's answer held a session's secret */
	free(h);
	*con_cls = NULL;
}

/* The access handler learns which listener a request came in on from its closure. */
static const int on_tcp = 0, on_proxy_socket = 1;

static struct MHD_Daemon *start_on(int fd, const int *proxy)
{
	return mr_start(fd, &W.cfg, on_http, (void *)proxy, on_done, NULL, &W.conns);
}

int web_start(struct ipc_conn *ipc, int ipcfd, struct cv_arena *a, char *err)
{
	W.ipcfd = ipcfd;
	struct ipc_frame f;
	GUARD(ipc_config(ipc, ipcfd, a, &f, err));
	const struct cv *c = frame_get(f.body, "http", CV_MAP); /* F_CONFIG's table checked (ipc_config) */
	size_t phn, rjn;
	const char *ph = frame_get_text(f.body, "proxy_header", &phn), *rj = frame_get_text(f.body, "records", &rjn);
	uint64_t proxy = frame_get_uint(f.body, "proxy");
	int rc =
	    !c ? as_fail(err, AS_ECORRUPT, "the configuration has no http member") : http_cfg_from_cv(c, &W.cfg, err);
	if (rc == 0 && (!cv_get(f.body, "proxy") || !ph))
		rc = as_fail(err, AS_ECORRUPT, "the configuration has no proxy or no proxy_header");
	if (rc == 0)
		snprintf(W.proxy_header, sizeof W.proxy_header, "%.*s", (int)phn, ph);
	if (rc == 0 && rj) {
		json_t *j = json_loadb(rj, rjn, 0, NULL);
		const char *qp = json_string_value(json_object_get(j, "qa_prefix")),
			   *qs = json_string_value(json_object_get(j, "qa_separator"));
		if (qp && qs && strlen(qp) + strlen(qs) < sizeof W.qa) {
			memcpy(W.qa, qp, strlen(qp));
			memcpy(W.qa + strlen(qp), qs, strlen(qs) + 1);
		}
		json_decref(j);
	}
	W.proxy = (int)proxy;
	ipc_frame_close_fds(&f);
	if (rc != 0)
		return rc;
	W.conns.unauth_max = W.cfg.unauth_per_addr;
	if (W.cfg.on && !(W.tcp = start_on(WORKER_HTTP_FD, &on_tcp)))
		return as_fail(err, AS_EIO, "libmicrohttpd would not start on the reviewer listener");
	if (W.proxy && !(W.unix_ = start_on(WORKER_PROXY_FD, &on_proxy_socket)))
		return as_fail(err, AS_EIO, "libmicrohttpd would not start on the proxy's socket");
	return 0;
}

unsigned web_max_fds(void)
{
	return (W.tcp ? W.cfg.conns_max + 8 : 0) + (W.unix_ ? W.cfg.conns_max + 8 : 0);
}

int web_on(void)
{
	return W.tcp || W.unix_;
}

size_t web_poll_fds(struct pollfd *pf)
{
	size_t n = 0;
	struct MHD_Daemon *ds[2] = {W.tcp, W.unix_};
	for (int i = 0; i < 2; i++) {
		const union MHD_DaemonInfo *di = ds[i] ? MHD_get_daemon_info(ds[i], MHD_DAEMON_INFO_EPOLL_FD) : NULL;
		if (di)
			pf[n++] = (struct pollfd){.fd = di->epoll_fd, .events = POLLIN};
	}
	return n;
}

int web_timeout_ms(int dflt)
{
	struct MHD_Daemon *ds[2] = {W.tcp, W.unix_};
	MHD_UNSIGNED_LONG_LONG to;
	for (int i = 0; i < 2; i++)
		if (ds[i] && MHD_get_timeout(ds[i], &to) == MHD_YES && to < (MHD_UNSIGNED_LONG_LONG)dflt)
			dflt = (int)to;
	return dflt;
}

void web_run(void)
{
	uint64_t now = mono_ms();
	for (struct wreq *h = W.reqs; h; h = h->next) {
		if (h->st == W_STREAMING && !h->finished && now >= h->stream_end) {
			stream_text(h, "event: end\ndata: {\"reason\":\"lifetime\"}\n\n");
			h->finished = 1; /* the page opens a new one, authenticated again */
			wake(h);
		}
		if (h->st == W_STREAMING && !h->finished && now >= h->next_keepalive) {
			stream_text(h, ": keep-alive\n\n");
			h->next_keepalive = now + WEB_KEEPALIVE_MS;
			wake(h);
		}
	}
	mc_deadlines(&W.conns, W.cfg.request_s);
	mc_log_refused(&W.conns, W.ipcfd, "reviewer");
	mc_run(W.tcp);
	mc_run(W.unix_);
}
