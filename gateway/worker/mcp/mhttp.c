/* The agent listener's HTTP rules: classifies each request (method, path, headers, Host and Origin)
 * before anything else looks at it. Runs in the mcp worker. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/mhttp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

/* Protocol revisions a client may name in MCP-Protocol-Version. 2025-03-26 is
 * accepted as the spec's default for clients that send none. */
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

/* Does the comma-separated media range list `accept` admit `type` ("a/b")? */
static int accepts(const char *accept, const char *type)
{
	size_t tl = strlen(type);
	const char *slash = strchr(type, '/');
	for (const char *p = accept; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t n = strcspn(p, ",;");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		/* "q=0" says "not this one" (RFC 9110 12.4.2). */
		const char *end = p + strcspn(p, ","), *q = p + n;
		int refused = 0;
		while ((q = memchr(q, ';', (size_t)(end - q))) != NULL) {
			q++;
			while (*q == ' ' || *q == '\t')
				q++;
			if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
				const char *d = q + 2;
				refused = *d == '0' && (d[1] != '.' || strspn(d + 2, "0") == strcspn(d + 2, ",; \t"));
			}
		}
		if (refused) {
			p = end;
			continue;
		}
		if ((n == tl && strncasecmp(p, type, n) == 0) || (n == 3 && !strncmp(p, "*/*", 3)) ||
		    (slash && n == (size_t)(slash - type) + 2 && strncasecmp(p, type, (size_t)(slash - type) + 1) == 0 &&
		     p[n - 1] == '*'))
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

static int media_is(const char *ct, const char *type)
{
	size_t n = strcspn(ct, "; \t");
	return n == strlen(type) && strncasecmp(ct, type, n) == 0;
}

enum mh_route mh_classify(const struct http_cfg *cfg, const struct mh_head *h, struct mh_verdict *v)
{
	memset(v, 0, sizeof *v);
	const char *m = h->method ? h->method : "", *path = h->path ? h->path : "";
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
	if (!strcmp(path, "/health")) {
		if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
			v->allow = "GET, HEAD";
			return reject(v, 405, -32600, "/health answers GET");
		}
		return v->route = MH_HEALTH;
	}
	int mcp = !strcmp(path, "/mcp"), sse = cfg->legacy_sse && !strcmp(path, "/sse"),
	    msgs = cfg->legacy_sse && !strcmp(path, "/messages");
	if (!mcp && !sse && !msgs)
		return reject(v, 404, -32601, "no such endpoint: the MCP endpoint is /mcp");
	if (sse && strcmp(m, "GET")) {
		v->allow = "GET";
		return reject(v, 405, -32600, "/sse answers GET");
	}
	if (msgs && strcmp(m, "POST")) {
		v->allow = "POST";
		return reject(v, 405, -32600, "/messages answers POST");
	}
	if (mcp && strcmp(m, "POST") && strcmp(m, "DELETE")) {
		/* No server-initiated stream: every message we send answers a POST. */
		v->allow = "POST, DELETE";
		return reject(v, 405, -32600, "/mcp answers POST (one message) and DELETE (end the session); there is no GET stream");
	}
	if (h->authorization) {
		const char *a = h->authorization;
		if (strncasecmp(a, "Bearer ", 7) != 0)
			return reject(v, 401, -32001, "Authorization must be Bearer API_KEY");
		a += 7;
		while (*a == ' ')
			a++;
		size_t n = strlen(a);
		while (n && a[n - 1] == ' ')
			n--;
		if (n == 0 || n > MH_BEARER_MAX)
			return reject(v, 401, -32001, "the bearer key is empty or too long");
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)a[i] <= 0x20 || (unsigned char)a[i] >= 0x7f)
				return reject(v, 401, -32001, "the bearer key has characters keys never have");
		v->bearer = a;
		v->bearer_len = n;
	}
	if (h->session) {
		size_t n = strlen(h->session);
		if (n != MH_SESSION_LEN || strspn(h->session, "0123456789abcdef") != n)
			return reject(v, 404, -32001, "unknown session (Mcp-Session-Id is not one this server issued)");
		memcpy(v->session, h->session, n + 1);
	}
	if (h->protocol) {
		size_t i = 0;
		while (i < sizeof versions / sizeof *versions && strcmp(h->protocol, versions[i]))
			i++;
		if (i == sizeof versions / sizeof *versions)
			return reject(v, 400, -32600, "unsupported MCP-Protocol-Version %.20s (this server speaks 2025-06-18 "
						      "and 2025-11-25)",
				      h->protocol);
		snprintf(v->protocol, sizeof v->protocol, "%s", h->protocol);
	}
	if (!strcmp(m, "DELETE")) {
		if (!v->session[0])
			return reject(v, 400, -32600, "DELETE needs the Mcp-Session-Id of the session to end");
		return v->route = MH_MCP_DELETE;
	}
	if (sse) {
		if (h->accept && !accepts(h->accept, "text/event-stream"))
			return reject(v, 406, -32600, "/sse is an event stream: Accept must admit text/event-stream");
		v->sse = 1;
		return v->route = MH_LEGACY_SSE;
	}
	/* POST: one JSON-RPC message as application/json. */
	if (!h->content_type || !media_is(h->content_type, "application/json"))
		return reject(v, 415, -32600, "Content-Type must be application/json");
	v->json = !h->accept || accepts(h->accept, "application/json");
	v->sse = h->accept && accepts(h->accept, "text/event-stream");
	if (!v->json && !v->sse)
		return reject(v, 406, -32600, "Accept must admit application/json or text/event-stream");
	return v->route = msgs ? MH_LEGACY_POST : MH_MCP_POST;
}

size_t mh_error_body(const struct mh_verdict *v, char *out, size_t cap)
{
	if (cap == 0)
		return 0;
	int n = snprintf(out, cap, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
			 v->rpc_code, v->msg);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
