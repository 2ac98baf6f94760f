/* The reviewer listener's HTTP rules: which method and path go to which command, and what each may carry. */
#include "gateway/worker/review/webroute.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

static const struct {
	const char *path, *method;
	uint32_t frame;
	enum web_route r;
} routes[] = {
    {"/review", "GET", 0, WR_PAGE},
    {"/review/", "GET", 0, WR_PAGE},
    {"/review/app.js", "GET", 0, WR_JS},
    {"/review/app.css", "GET", 0, WR_CSS},
    {"/favicon.ico", "GET", 0, WR_FAVICON},
    {"/health", "GET", 0, WR_HEALTH},
    {"/metrics", "GET", F_WEB_METRICS, WR_METRICS},
    {"/.well-known/jwks.json", "GET", F_WEB_JWKS, WR_JWKS},
    {"/checkpoint", "GET", F_WEB_CHECKPOINT, WR_CHECKPOINT},
    {"/checkpoint/consistency", "GET", F_WEB_CONSISTENCY, WR_CONSISTENCY},
    {"/review/api/me", "GET", F_WEB_ME, WR_ME},
    {"/review/api/login", "POST", F_WEB_LOGIN, WR_LOGIN},
    {"/review/api/logout", "POST", F_WEB_LOGOUT, WR_LOGOUT},
    {"/review/api/pending", "GET", F_WEB_PENDING, WR_API_PENDING},
    {"/review/api/decide", "POST", F_WEB_DECIDE, WR_DECIDE},
    {"/review/api/reveal", "POST", F_WEB_REVEAL, WR_REVEAL},
    {"/review/events", "GET", F_WEB_EVENTS, WR_EVENTS},
    {"/pending", "GET", F_WEB_LIST, WR_PENDING},
    {"/feedback/submit", "POST", F_WEB_SUBMIT, WR_SUBMIT},
    {"/review/mcp", "POST", F_WEB_ME, WR_MCP},
    {"/admin/clear-stale-sessions", "POST", F_WEB_ADMIN_CLEAR, WR_ADMIN_CLEAR},
    {"/review/api/qa", "POST", F_WEB_QA, WR_QA},
    {"/review/api/history", "GET", F_WEB_HISTORY, WR_HISTORY},
    {"/review/api/proof", "GET", F_WEB_PROOF, WR_PROOF},
    {"/review/api/passkey", "POST", F_WEB_PASSKEY, WR_PASSKEY},
};

static void refuse(struct wr_out *o, unsigned status, const char *error)
{
	o->status = status;
	o->error = error;
}

static int listed(const char (*list)[HTTPCFG_NAME_MAX + 1], size_t n, const char *v)
{
	for (size_t i = 0; i < n; i++) /* host names and schemes are case-insensitive (as in mhttp.c) */
		if (!strcasecmp(list[i], v))
			return 1;
	return 0;
}

/* Behind the proxy the browser's origin is the proxy's: scheme://Host as the proxy passed them. */
static int proxy_origin(const struct wr_in *in)
{
	if (!in->on_proxy || !in->host || !in->origin)
		return 0;
	const char *scheme = in->forwarded_proto && !strcmp(in->forwarded_proto, "https") ? "https://" : "http://";
	struct rd r;
	rd_init(&r, in->origin, strlen(in->origin));
	return rd_expect(&r, scheme) == 0 && rd_cmp(&r, in->host) == 0;
}

/* "application/json", alone or with parameters ("; charset=utf-8"), in any case. */
static int is_json(const char *ct)
{
	struct rd r;
	rd_init(&r, ct, ct ? strlen(ct) : 0);
	if (!ct || rd_expect_ci(&r, "application/json") != 0)
		return 0;
	rd_skip_ws(&r, RD_OWS);
	return rd_left(&r) == 0 || rd_expect(&r, ";") == 0;
}

void web_classify(const struct http_cfg *c, const struct wr_in *in, struct wr_out *o)
{
	memset(o, 0, sizeof *o);
	struct rd url, path;
	rd_init(&url, in->url, in->url ? strlen(in->url) : 0);
	int have_path = rd_token(&url, "?#", &path) == 0;
	for (size_t i = 0; have_path && i < sizeof routes / sizeof routes[0]; i++)
		if (rd_cmp(&path, routes[i].path) == 0) {
			o->route = routes[i].r;
			o->frame = routes[i].frame;
			o->post = !strcmp(routes[i].method, "POST");
			if (!in->method || strcmp(in->method, routes[i].method)) {
				o->allow = routes[i].method;
				return refuse(o, 405, "method not allowed here");
			}
			break;
		}
	if (o->route == WR_NONE)
		return refuse(o, 404, "no such endpoint on the reviewer listener");
	/* DNS rebinding: a page from another name must not reach a loopback listener.
	 * The proxy's socket is reached only through the proxy, which checked its own name. */
	if (!in->on_proxy && c->nhosts && (!in->host || !listed(c->hosts, c->nhosts, in->host)))
		return refuse(o, 403, "Host header not allowed on the reviewer listener");
	int open = o->route <= WR_CONSISTENCY;
	if (open)
		return; /* a page may be linked from anywhere; it holds no data */
	if (in->origin && !listed(c->origins, c->norigins, in->origin) && !proxy_origin(in))
		return refuse(o, 403, "refused: a request from another origin");
	if (in->sec_fetch_site && !strcmp(in->sec_fetch_site, "cross-site"))
		return refuse(o, 403, "refused: a cross-site request");
	if (o->post) {
		/* Browsers send Origin with every POST; a POST without it is a program, which
		 * authenticates with a bearer token (a session's secret travels as one too).
		 * (/review/mcp and the admin endpoint take bearer tokens only: they say so.) */
		if (!in->origin && !in->authorization && o->route != WR_MCP && o->route != WR_ADMIN_CLEAR)
			return refuse(o, 403, "refused: a POST without Origin (browsers send it) or a bearer token");
		/* The admin endpoint takes no body: the seed's `curl -X POST URL -H "Authorization: Bearer
		 * $ADMIN_TOKEN"` sends no Content-Type, and works as written (a body, if any, is JSON). */
		if (!is_json(in->content_type) && !(o->route == WR_ADMIN_CLEAR && !in->content_type))
			return refuse(o, 415, "the body must be application/json");
	}
}

const char *web_bearer(const char *h, size_t *n)
{
	struct rd r, tok;
	rd_init(&r, h, h ? strlen(h) : 0);
	if (!h || rd_expect_ci(&r, "Bearer ") != 0)
		return NULL;
	rd_skip_ws(&r, " ");
	int rc = rd_token(&r, " \t\r\n", &tok);
	*n = tok.len;
	return rc == 0 ? (const char *)tok.p : NULL;
}

unsigned web_http_status(uint64_t st)
{
	static const unsigned http[PS_COUNT] = {
	    [PS_OK] = 200,	  [PS_BAD_REQUEST] = 400, [PS_UNAUTHORIZED] = 401, [PS_FORBIDDEN] = 403,
	    [PS_NOT_FOUND] = 404, [PS_TOO_MANY] = 429,	  [PS_UNAVAILABLE] = 503,  [PS_INTERNAL] = 500,
	};
	return st < PS_COUNT && http[st] ? http[st] : 500;
}
