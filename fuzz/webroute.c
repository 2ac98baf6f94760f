/* Fuzz target: the reviewer listener's HTTP rules (gateway/worker/review/webroute.c) and the web
 * session lookup (gateway/signer/websess.c). Input: two bytes whose low nine bits say which
 * of method, URL, Host, Origin, Content-Type, Sec-Fetch-Site, Authorization,
 * X-Forwarded-Proto and Cookie are present and whose tenth says the request came in
 * on the proxy's socket, then those values in that order separated by NUL bytes.
 * Each request is classified under a loopback listener, a remote one with Host and
 * Origin lists, and an open remote one. The whole input is also a session secret.
 * Properties (abort when violated):
 *   - the verdict is the one a model of the rules written from the header gives
 *     (route table, 405, Host list off the proxy's socket, Origin list or the
 *     proxy's scheme://Host, cross-site fetches, Origin or Authorization on a POST,
 *     application/json bodies), and depends on nothing but its inputs;
 *   - a refusal has a status of 403, 404, 405, 413 or 415 and a printable error
 *     text; WR_NONE goes with 404 and only with it; Allow is set exactly on 405 and
 *     is the method the path takes; a route comes from the URL's path (before any
 *     '?' or '#'), with its command and POST flag;
 *   - web_bearer's token lies inside the header after
 *     "Bearer " and spaces, 1 or more bytes, none a space, tab, CR or LF;
 *   - ws_find finds no session for any bytes but a cookie ws_create gave out, and
 *     ws_csrf_ok takes no token but the session's; the real ones still work;
 *   - ws_login_source of any field is a terminated string under WS_SOURCE_MAX,
 *     "loopback" (or "proxy:loopback") exactly for a loopback address, and the same
 *     source again when asked again. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/proto/httpcfg.h"
#include "gateway/worker/review/webroute.h"
#include "gateway/signer/websess.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "webroute: property violated: %s\n", why);
	if (detail)
		fprintf(stderr, "webroute: detail: %.*s\n", 2048, detail);
	fprintf(stderr, "input (%zu bytes): %.*s\n", cur_size, cur_size > 2048 ? 2048 : (int)cur_size,
		(const char *)cur_data);
	abort();
}

#define NFIELDS 9
#define ON_PROXY (1u << NFIELDS)

/* The header values as libmicrohttpd hands them over: each its own NUL-terminated
 * allocation, so that AddressSanitizer sees a read past its end. */
static void split(const uint8_t *data, size_t size, unsigned mask, char *f[NFIELDS])
{
	size_t i = size >= 2 ? 2 : size;
	for (int k = 0; k < NFIELDS; k++) {
		const uint8_t *end = i < size ? memchr(data + i, 0, size - i) : NULL;
		size_t n = i < size ? (end ? (size_t)(end - data) : size) - i : 0;
		f[k] = NULL;
		if (mask & (1u << k)) {
			f[k] = malloc(n + 1);
			if (!f[k])
				abort();
			if (n)
				memcpy(f[k], data + i, n);
			f[k][n] = 0;
		}
		i += n + (i + n < size);
	}
}

/* ---- the model: the rules as webroute.h states them ---- */

static const struct {
	const char *path, *method;
	uint32_t frame;
	enum web_route r;
} spec[] = {
    {"/review", "GET", 0, WR_PAGE},
    {"/review/", "GET", 0, WR_PAGE},
    {"/review/app.js", "GET", 0, WR_JS},
    {"/review/app.css", "GET", 0, WR_CSS},
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
    {"/favicon.ico", "GET", 0, WR_FAVICON},
};
#define NSPEC (sizeof spec / sizeof spec[0])

static int listed(const char *x, const char (*list)[HTTPCFG_NAME_MAX + 1], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(x, list[i]))
			return 1;
	return 0;
}

static int is_open(enum web_route r)
{
	return r == WR_PAGE || r == WR_JS || r == WR_CSS || r == WR_FAVICON || r == WR_HEALTH || r == WR_METRICS ||
	       r == WR_JWKS || r == WR_CHECKPOINT || r == WR_CONSISTENCY;
}

/* application/json, then white space and nothing or parameters. */
static int media_json(const char *ct)
{
	if (!ct || strncasecmp(ct, "application/json", 16) != 0)
		return 0;
	size_t ws = strspn(ct + 16, " \t");
	return ct[16 + ws] == 0 || ct[16 + ws] == ';';
}

/* Behind the proxy the page's origin is scheme://Host, compared whole. */
static int proxy_origin(const struct wr_in *in)
{
	if (!in->on_proxy || !in->host || !in->origin)
		return 0;
	const char *scheme = in->forwarded_proto && !strcmp(in->forwarded_proto, "https") ? "https://" : "http://";
	size_t s = strlen(scheme);
	return !strncmp(in->origin, scheme, s) && !strcmp(in->origin + s, in->host);
}

/* The path: the URL before any '?' or '#'. Returns the spec entry, or NSPEC. */
static size_t spec_of_url(const char *url)
{
	size_t plen = strcspn(url ? url : "", "?#");
	for (size_t i = 0; i < NSPEC; i++)
		if (strlen(spec[i].path) == plen && !strncmp(url, spec[i].path, plen))
			return i;
	return NSPEC;
}

static unsigned model(const struct http_cfg *c, const struct wr_in *in)
{
	size_t k = spec_of_url(in->url);
	if (k == NSPEC)
		return 404;
	if (!in->method || strcmp(in->method, spec[k].method))
		return 405;
	if (!in->on_proxy && c->nhosts && !(in->host && listed(in->host, c->hosts, c->nhosts)))
		return 403;
	if (is_open(spec[k].r))
		return 0;
	if (in->origin && !listed(in->origin, c->origins, c->norigins) && !proxy_origin(in))
		return 403;
	if (in->sec_fetch_site && !strcmp(in->sec_fetch_site, "cross-site"))
		return 403;
	if (!strcmp(spec[k].method, "POST")) {
		if (!in->origin && !in->authorization && spec[k].r != WR_MCP && spec[k].r != WR_ADMIN_CLEAR)
			return 403;
		/* the admin endpoint takes no body: no Content-Type is the seed's curl, accepted */
		if (!media_json(in->content_type) && !(spec[k].r == WR_ADMIN_CLEAR && !in->content_type))
			return 415;
	}
	return 0;
}

static void check_out(const struct http_cfg *c, const struct wr_in *in, const struct wr_out *o)
{
	if ((unsigned)o->route > (unsigned)WR_PASSKEY) /* the enum's last */
		fail("not a route", NULL);
	if (o->status != 0 && o->status != 403 && o->status != 404 && o->status != 405 && o->status != 413 &&
	    o->status != 415)
		fail("refused with an unexpected status", o->error);
	if ((o->status != 0) != (o->error != NULL))
		fail("an error text without a refusal, or a refusal without one", o->error);
	if (o->error) {
		if (!o->error[0])
			fail("an empty error text", NULL);
		for (const char *q = o->error; *q; q++)
			if (*q < 0x20 || *q > 0x7e)
				fail("an error text that is not printable ASCII", o->error);
	}
	if ((o->route == WR_NONE) != (o->status == 404))
		fail("WR_NONE without 404, or 404 with a route", in->url);
	if ((o->status == 405) != (o->allow != NULL))
		fail("Allow is not set exactly on 405", o->allow);
	size_t k = spec_of_url(in->url);
	if (o->route == WR_NONE) {
		if (k != NSPEC)
			fail("no route for a path in the table", in->url);
		if (o->frame || o->post)
			fail("a command or POST flag without a route", NULL);
	} else {
		if (k == NSPEC || spec[k].r != o->route)
			fail("a route the URL's path does not name", in->url);
		if (o->frame != spec[k].frame)
			fail("the route's frame type is not the table's", NULL);
		if (o->post != !strcmp(spec[k].method, "POST"))
			fail("the POST flag is not the table's", in->url);
		if (o->allow && (strcmp(o->allow, spec[k].method) || (in->method && !strcmp(in->method, o->allow))))
			fail("Allow is not the path's method, or is the method asked", o->allow);
	}
	unsigned want = model(c, in);
	if (o->status != want) {
		char d[160];
		snprintf(d, sizeof d, "status %u (%s), the rules say %u", o->status, o->error ? o->error : "-", want);
		fail("the verdict is not the rules'", d);
	}
}

/* Classify over two kinds of garbage: the verdict must not depend on it. */
static void classify(const struct http_cfg *c, const struct wr_in *in)
{
	struct wr_out a, b;
	memset(&a, 0xa5, sizeof a);
	memset(&b, 0x00, sizeof b);
	web_classify(c, in, &a);
	web_classify(c, in, &b);
	if (memcmp(&a, &b, sizeof a) != 0)
		fail("the verdict depends on what out held before", NULL);
	check_out(c, in, &a);
}

/* ---- Authorization ---- */

static void check_bearer(const char *h)
{
	size_t n = 0;
	const char *v = web_bearer(h, &n);
	if (!v) {
		if (h && !strncasecmp(h, "Bearer ", 7) && h[7 + strspn(h + 7, " ")] &&
		    !strchr("\t\r\n", h[7 + strspn(h + 7, " ")]))
			fail("web_bearer found no token where there is one", h);
		return;
	}
	if (!h || strncasecmp(h, "Bearer ", 7) || v < h + 7 || n == 0 || v + n > h + strlen(h))
		fail("web_bearer's token is not inside a Bearer header", h);
	for (const char *q = h + 7; q < v; q++)
		if (*q != ' ')
			fail("web_bearer skipped something else than spaces", h);
	for (size_t i = 0; i < n; i++)
		if (v[i] == ' ' || v[i] == '\t' || v[i] == '\r' || v[i] == '\n')
			fail("web_bearer's token has white space", h);
	if (v[n] && !strchr(" \t\r\n", v[n]))
		fail("web_bearer's token stops short", h);
}

/* ---- sessions ---- */

#define T0 1000000ull
#define NSESS 3

static struct http_cfg cfg_loop, cfg_remote, cfg_open;
static struct web_sessions *ws;
static char cookies[NSESS][WS_COOKIE_LEN + 1];
static struct ws_session *sess[NSESS];
static const uint8_t cred0[32]; /* the credential the sessions are made with */

static struct http_cfg base_cfg(const char *host)
{
	struct http_cfg c;
	memset(&c, 0, sizeof c);
	c.on = 1;
	snprintf(c.host, sizeof c.host, "%s", host);
	return c;
}

/* The limiter's source of an address: bounded, stable, and loopback only for loopback. */
static void check_source(const char *addr)
{
	char a[WS_SOURCE_MAX + 1], b[WS_SOURCE_MAX + 1];
	a[WS_SOURCE_MAX] = b[WS_SOURCE_MAX] = 'X';
	ws_login_source(addr, a);
	ws_login_source(addr, b);
	if (a[WS_SOURCE_MAX] != 'X' || !memchr(a, 0, WS_SOURCE_MAX) || strcmp(a, b))
		fail("ws_login_source overran its buffer or is not stable", addr);
	const char *x = !strncmp(addr, "proxy:", 6) ? addr + 6 : addr;
	struct in_addr v4;
	struct in6_addr v6;
	int loop = (inet_pton(AF_INET, x, &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
		   (inet_pton(AF_INET6, x, &v6) == 1 &&
		    (IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127)));
	const char *tail = !strncmp(a, "proxy:", 6) ? a + 6 : a;
	if (loop != !strcmp(tail, "loopback") && strcmp(x, "loopback"))
		fail("ws_login_source: loopback is not exactly the loopback addresses", addr);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cfg_loop = base_cfg("127.0.0.1");
	http_cfg_finish(&cfg_loop, 8766, 1);
	cfg_remote = base_cfg("192.0.2.10");
	snprintf(cfg_remote.hosts[0], sizeof cfg_remote.hosts[0], "review.example.com");
	snprintf(cfg_remote.hosts[1], sizeof cfg_remote.hosts[1], "review.example.com:8766");
	snprintf(cfg_remote.origins[0], sizeof cfg_remote.origins[0], "https://review.example.com");
	cfg_remote.nhosts = 2;
	cfg_remote.norigins = 1;
	http_cfg_finish(&cfg_remote, 8766, 0);
	cfg_open = base_cfg("192.0.2.10");
	http_cfg_finish(&cfg_open, 8766, 0);
	if (cfg_loop.nhosts != 3 || cfg_remote.nhosts != 2 || cfg_open.nhosts != 0)
		abort();
	if (!(ws = calloc(1, sizeof *ws)))
		abort();
	for (int i = 0; i < NSESS; i++)
		if (!(sess[i] = ws_create(ws, "alice", "token", cred0, T0, cookies[i])))
			abort();
	return 0;
}

/* Bytes that are no cookie of ours find nothing; a cookie of ours finds its session. */
static void check_find(const char *p, size_t n)
{
	int which = -1;
	for (int i = 0; i < NSESS; i++)
		if (n == WS_COOKIE_LEN && !memcmp(p, cookies[i], n))
			which = i;
	struct ws_session *s = ws_find(ws, p, n, T0);
	if (which < 0 && s)
		fail("ws_find found a session for bytes that are no cookie it gave out", NULL);
	if (which >= 0 && s != sess[which])
		fail("ws_find did not find the session of its own cookie", NULL);
	int ok = ws_csrf_ok(sess[0], p, n);
	if (ok != (n == WS_CSRF_LEN && !memcmp(p, sess[0]->csrf, n)))
		fail("ws_csrf_ok took another token, or refused the session's", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cur_data = data;
	cur_size = size;
	if (!ws)
		LLVMFuzzerInitialize(NULL, NULL);
	unsigned mask = size >= 2 ? data[0] | (unsigned)data[1] << 8 : 0;
	char *f[NFIELDS];
	split(data, size, mask, f);
	struct wr_in in = {.method = f[0],
			   .url = f[1],
			   .host = f[2],
			   .origin = f[3],
			   .content_type = f[4],
			   .sec_fetch_site = f[5],
			   .authorization = f[6],
			   .forwarded_proto = f[7],
			   .on_proxy = (mask & ON_PROXY) != 0};
	classify(&cfg_loop, &in);
	classify(&cfg_remote, &in);
	classify(&cfg_open, &in);
	/* The same request on the other socket. */
	in.on_proxy = !in.on_proxy;
	classify(&cfg_loop, &in);
	classify(&cfg_remote, &in);
	check_bearer(f[6]);
	check_bearer(f[8]);
	/* Sessions: the whole input, the Cookie field, and the bearer token (the page's
	 * session travels as Authorization: Bearer ws_...). */
	check_find((const char *)data, size);
	if (f[8])
		check_find(f[8], strlen(f[8]));
	if (f[6]) {
		size_t n;
		const char *v = web_bearer(f[6], &n);
		if (v)
			check_find(v, n);
	}
	for (int i = 0; i < NSESS; i++)
		if (ws_find(ws, cookies[i], WS_COOKIE_LEN, T0) != sess[i])
			fail("a session was lost", NULL);
	for (int k = 0; k < NFIELDS; k++)
		if (f[k])
			check_source(f[k]);
	for (int k = 0; k < NFIELDS; k++)
		free(f[k]);
	return 0;
}
