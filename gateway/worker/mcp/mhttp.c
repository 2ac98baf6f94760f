/* The agent listener's HTTP rules: classifies each request (method, path, headers, Host and Origin)
 * before anything else looks at it. Runs in the mcp worker. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/mhttp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "gateway/worker/mcp/sseresume.h"

/* Protocol revisions with sessions a client may name in MCP-Protocol-Version. 2025-03-26
 * is accepted as the spec's default for clients that send none. 2026-07-28 is the
 * stateless one (v->modern). */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

static enum mh_route reject(struct mh_verdict *v, unsigned status, int code, const char *fmt, ...) AS_PRINTF(4, 5);
static enum mh_route reject(struct mh_verdict *v, unsigned status, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof v->msg, fmt, ap);
	va_end(ap);
	/* Header values are the client's: keep the message printable ASCII. */
	for (char *p = v->msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e || *p == '"' || *p == '\\')
			*p = '?';
	v->route = MH_REJECT;
	v->status = status;
	v->rpc_code = code;
	return MH_REJECT;
}

static int in_list(const char *x, const char (*list)[HTTPCFG_NAME_MAX + 1], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(x, list[i]) == 0)
			return 1;
	return 0;
}

/* The value of a q parameter (after "q=") is zero: "0", "0." and zeros, then the end
 * or whitespace; or "0" followed by anything but '.'. */
static int q_zero(struct rd *v)
{
	uint8_t c;
	if (rd_expect(v, "0") != 0)
		return 0;
	if (rd_expect(v, ".") != 0)
		return 1;
	rd_skip_ws(v, "0"); /* the set is the zero digit: skips the zeros */
	return rd_peek(v, &c) != 0 || c == ' ' || c == '\t';
}

/* The parameters after a media range (";" param ...) say "q=0": "not this one"
 * (RFC 9110 12.4.2). The last q parameter counts. */
static int refused(struct rd *params)
{
	struct rd param;
	int no = 0;
	while (rd_expect(params, ";") == 0)
		if (rd_token(params, ";", &param) == 0) {
			rd_skip_ws(&param, RD_OWS);
			if (rd_expect_ci(&param, "q=") == 0)
				no = q_zero(&param);
		}
	return no;
}

/* Whether the media range r admits type ("a/b"): r is the type itself, its major type
 * with a '*' subtype, or "*" "/" "*"; letters in any case. */
static int admits(struct rd r, const char *type)
{
	const char *slash = strchr(type, '/');
	char major[32]; /* "a/" and '*' */
	snprintf(major, sizeof major, "%.*s*", slash ? (int)(slash - type) + 1 : 0, type);
	rd_trim_end(&r, RD_OWS);
	return rd_casecmp(&r, type) == 0 || rd_cmp(&r, "*/*") == 0 || (slash && rd_casecmp(&r, major) == 0);
}

/* Does the comma-separated media range list `accept` admit `type` ("a/b")? */
static int accepts(const char *accept, const char *type)
{
	struct rd list, elem, range;
	rd_init(&list, accept, strlen(accept));
	for (;;) {
		rd_skip_ws(&list, RD_OWS ",");
		if (rd_token(&list, ",", &elem) != 0)
			return 0;
		if (rd_token(&elem, ";", &range) == 0 && !refused(&elem) && admits(range, type))
			return 1;
	}
}

static int media_is(const char *ct, const char *type)
{
	struct rd r, media;
	rd_init(&r, ct, strlen(ct));
	return rd_token(&r, ";" RD_OWS, &media) == 0 && rd_casecmp(&media, type) == 0;
}

/* The steps of mh_classify below that only check: 1 when the request may go on, MH_REJECT
 * (0) when it is refused (v says why, reject()). */
_Static_assert(MH_REJECT == 0, "a refused check is false");

/* Who may send it at all: the Host and Origin allowed, and no reviewer's credentials. */
static int origin_ok(const struct http_cfg *cfg, const struct mh_head *h, struct mh_verdict *v)
{
	/* DNS rebinding: a hostile page reaches a loopback server under its own name. */
	if (cfg->nhosts && (!h->host || !in_list(h->host, cfg->hosts, cfg->nhosts)))
		return reject(v, h->host ? 403 : 400, -32600, "Host header %.80s%s is not allowed here",
			      h->host ? h->host : "(missing)", h->host && strlen(h->host) > 80 ? "..." : "");
	if (h->origin && !in_list(h->origin, cfg->origins, cfg->norigins))
		return reject(v, 403, -32600, "Origin %.80s is not allowed (ASSENT_HTTP_ALLOWED_ORIGINS)", h->origin);
	/* Reviewers' credentials belong to the reviewer listener: refused here, loudly,
	 * so that a misrouted proxy or client is noticed rather than treated as an agent. */
	if (h->cookie && strstr(h->cookie, "assent_session="))
		return reject(v, 403, -32001, "a reviewer's session cookie is not accepted on the agent listener");
	if (h->identity)
		return reject(v, 403, -32001, "a reviewer identity header is not accepted on the agent listener");
	return 1;
}

/* Which of the agents' endpoints the path is, and whether it answers the method. */
struct endpoint {
	int mcp, sse, msgs, events;
	int resume; /* GET /mcp with Last-Event-ID */
};

static int endpoint_ok(const struct http_cfg *cfg, const struct mh_head *h, const char *m, const char *path,
		       struct mh_verdict *v, struct endpoint *e)
{
	if (!strcmp(path, "/events")) { /* {kind, key?, attrs?, call_id?} with an agent key */
		v->events = 1;		/* answered as plain JSON, refusals too */
		if (strcmp(m, "POST")) {
			v->allow = "POST";
			return reject(v, 405, -32600, "/events answers POST (one event as JSON)");
		}
		if (!h->authorization)
			return reject(v, 401, -32001, "POST /events needs an agent key: Authorization: Bearer API_KEY");
	}
	e->mcp = !strcmp(path, "/mcp");
	e->sse = cfg->legacy_sse && !strcmp(path, "/sse");
	e->msgs = cfg->legacy_sse && !strcmp(path, "/messages");
	e->events = !strcmp(path, "/events");
	if (!e->mcp && !e->sse && !e->msgs && !e->events)
		return reject(v, 404, -32601, "no such endpoint: the MCP endpoint is /mcp");
	if (e->sse && strcmp(m, "GET")) {
		v->allow = "GET";
		return reject(v, 405, -32600, "/sse answers GET");
	}
	if (e->msgs && strcmp(m, "POST")) {
		v->allow = "POST";
		return reject(v, 405, -32600, "/messages answers POST");
	}
	e->resume = e->mcp && !strcmp(m, "GET") && h->last_event_id;
	if (e->mcp && strcmp(m, "POST") && strcmp(m, "DELETE") && !e->resume) {
		/* No server-initiated stream: every message we send answers a POST (or resumes one). */
		v->allow = "POST, DELETE";
		return reject(v, 405, -32600,
			      "/mcp answers POST (one message) and DELETE (end the session); there is no GET stream "
			      "but the resume of a call's stream (GET with Last-Event-ID)");
	}
	return 1;
}

/* The bearer key's shape and the session id's, kept in v; whose they are is the signer's to say. */
static int credentials_ok(const struct mh_head *h, struct mh_verdict *v)
{
	if (h->authorization) {
		struct rd a;
		const uint8_t *key;
		rd_init(&a, h->authorization, strlen(h->authorization));
		if (rd_expect_ci(&a, "Bearer ") != 0)
			return reject(v, 401, -32001, "Authorization must be Bearer API_KEY");
		rd_skip_ws(&a, " ");
		rd_trim_end(&a, " ");
		size_t n = rd_left(&a);
		if (n == 0 || n > MH_BEARER_MAX || rd_take(&a, n, &key) != 0)
			return reject(v, 401, -32001, "the bearer key is empty or too long");
		for (size_t i = 0; i < n; i++)
			if (key[i] <= 0x20 || key[i] >= 0x7f)
				return reject(v, 401, -32001, "the bearer key has characters keys never have");
		v->bearer = (const char *)key;
		v->bearer_len = n;
	}
	if (h->session) {
		size_t n = strlen(h->session);
		if (n != MH_SESSION_LEN || strspn(h->session, "0123456789abcdef") != n)
			return reject(v, 404, -32001, "unknown session (Mcp-Session-Id is not one this server issued)");
		memcpy(v->session, h->session, n + 1);
	}
	return 1;
}

/* MCP-Protocol-Version: kept in v (printable), 2026-07-28 marked; one we do not speak is
 * refused now but for a POST, answered once its body shows the request's id. */
static int protocol_ok(const struct mh_head *h, const char *m, struct mh_verdict *v)
{
	if (!h->protocol)
		return 1;
	size_t i = 0;
	while (i < sizeof versions / sizeof *versions && strcmp(h->protocol, versions[i]))
		i++;
	snprintf(v->protocol, sizeof v->protocol, "%s", h->protocol);
	for (char *p = v->protocol; *p; p++) /* it is echoed in the error: printable ASCII */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	v->modern = !strcmp(h->protocol, "2026-07-28");
	/* Answered once the body is read, so that the error carries the request's id. */
	v->unsupported = i == sizeof versions / sizeof *versions && !v->modern;
	if (v->unsupported && strcmp(m, "POST"))
		return reject(v, 400, -32022,
			      "unsupported MCP-Protocol-Version %.20s (this server speaks "
			      "2026-07-28, 2025-11-25 and 2025-06-18)",
			      h->protocol);
	return 1;
}

/* GET /mcp with Last-Event-ID: the resume of a session's call stream. */
static enum mh_route resume_route(const struct mh_head *h, struct mh_verdict *v)
{
	if (v->modern || !v->session[0])
		return reject(v, 400, -32600, "a GET with Last-Event-ID needs the Mcp-Session-Id of its stream");
	if (h->accept && !accepts(h->accept, "text/event-stream"))
		return reject(v, 406, -32600, "a resumed stream is SSE: Accept must admit text/event-stream");
	if (sse_id_parse(h->last_event_id, &v->resume_no, &v->resume_seq) != 0)
		return reject(v, 400, -32600,
			      "Last-Event-ID %.40s%s is not an event id this server sends (STREAM-SEQ, decimal)",
			      h->last_event_id, strlen(h->last_event_id) > 40 ? "..." : "");
	v->sse = 1;
	return v->route = MH_MCP_RESUME;
}

/* POST: one JSON-RPC message as application/json. */
static enum mh_route post_route(const struct mh_head *h, struct mh_verdict *v, const struct endpoint *e)
{
	if (!h->content_type || !media_is(h->content_type, "application/json"))
		return reject(v, 415, -32600, "Content-Type must be application/json");
	v->json = !h->accept || accepts(h->accept, "application/json");
	v->sse = h->accept && accepts(h->accept, "text/event-stream");
	if (e->events) { /* stateless, JSON: whatever the client said of versions and sessions */
		v->events = v->modern = v->json = 1;
		v->sse = v->unsupported = 0;
		v->session[0] = 0;
		snprintf(v->protocol, sizeof v->protocol, "2026-07-28");
		return v->route = MH_MCP_POST;
	}
	if (!v->json && !v->sse)
		return reject(v, 406, -32600, "Accept must admit application/json or text/event-stream");
	return v->route = e->msgs ? MH_LEGACY_POST : MH_MCP_POST;
}

enum mh_route mh_classify(const struct http_cfg *cfg, const struct mh_head *h, struct mh_verdict *v)
{
	memset(v, 0, sizeof *v);
	const char *m = h->method ? h->method : "", *path = h->path ? h->path : "";
	if (!origin_ok(cfg, h, v))
		return MH_REJECT;
	if (!strcmp(path, "/health")) {
		if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
			v->allow = "GET, HEAD";
			return reject(v, 405, -32600, "/health answers GET");
		}
		return v->route = MH_HEALTH;
	}
	if (!strcmp(path, "/pending") || !strcmp(path, "/feedback/submit") ||
	    !strcmp(path, "/admin/clear-stale-sessions"))
		return v->route = MH_REVIEWERS; /* never served here: reviewers' credentials stay off this listener */
	struct endpoint e = {0};
	if (!endpoint_ok(cfg, h, m, path, v, &e) || !credentials_ok(h, v) || !protocol_ok(h, m, v))
		return MH_REJECT;
	v->method_hdr = h->mcp_method;
	v->name_hdr = h->mcp_name;
	if (v->modern && !strcmp(m, "DELETE")) {
		v->allow = "POST";
		return reject(v, 405, -32600, "2026-07-28 has no sessions to end: /mcp answers POST");
	}
	if (v->modern && v->session[0])
		return reject(v, 400, -32600, "2026-07-28 is stateless: send no Mcp-Session-Id with it");
	if (e.resume)
		return resume_route(h, v);
	if (!strcmp(m, "DELETE")) {
		if (!v->session[0])
			return reject(v, 400, -32600, "DELETE needs the Mcp-Session-Id of the session to end");
		return v->route = MH_MCP_DELETE;
	}
	if (e.sse) {
		if (h->accept && !accepts(h->accept, "text/event-stream"))
			return reject(v, 406, -32600, "/sse is an event stream: Accept must admit text/event-stream");
		v->sse = 1;
		return v->route = MH_LEGACY_SSE;
	}
	return post_route(h, v, &e);
}

size_t mh_error_body(const struct mh_verdict *v, char *out, size_t cap)
{
	if (cap == 0)
		return 0;
	int n = snprintf(out, cap, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
			 v->rpc_code, v->msg);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
