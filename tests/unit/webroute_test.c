/* Unit tests for gateway/worker/review/webroute.c (the reviewer listener's HTTP rules): a table of
 * requests against a loopback listener, a remote one configured the way an operator
 * does (ASSENT_REVIEW_ALLOWED_HOSTS and _ORIGINS), an open remote one, and requests
 * on the reverse proxy's socket; the route table itself; and the Authorization
 * extractor on the edge cases a browser or a client can send. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/worker/review/webroute.h"

enum which { LOOP, REMOTE, OPEN };

static struct http_cfg cfgs[3];

static const char *const env_names[] = {"ASSENT_REVIEW_HOST", "ASSENT_REVIEW_PORT", "ASSENT_REVIEW_ALLOWED_HOSTS",
					"ASSENT_REVIEW_ALLOWED_ORIGINS"};

static void env_clear(void)
{
	for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
		unsetenv(env_names[i]);
}

/* As the signer builds it: from the environment, then finished once bound. */
static struct http_cfg cfg_from_env(const char *host, const char *hosts, const char *origins, int loopback)
{
	struct http_cfg c;
	char err[AS_ERRLEN] = "";
	env_clear();
	setenv("ASSENT_REVIEW_HOST", host, 1);
	if (hosts)
		setenv("ASSENT_REVIEW_ALLOWED_HOSTS", hosts, 1);
	if (origins)
		setenv("ASSENT_REVIEW_ALLOWED_ORIGINS", origins, 1);
	if (http_cfg_review_from_env(&c, err) != 0)
		fail_msg("http_cfg_review_from_env: %s", err);
	env_clear();
	http_cfg_finish(&c, 8766, loopback);
	return c;
}

static int setup(void **state)
{
	(void)state;
	cfgs[LOOP] = cfg_from_env("127.0.0.1", NULL, NULL, 1);
	cfgs[REMOTE] =
	    cfg_from_env("192.0.2.10", "review.example.com,review.example.com:8766", "https://review.example.com", 0);
	cfgs[OPEN] = cfg_from_env("192.0.2.10", NULL, NULL, 0);
	/* What the table below relies on. */
	assert_int_equal(cfgs[LOOP].nhosts, 3);
	assert_string_equal(cfgs[LOOP].hosts[0], "localhost:8766");
	assert_int_equal(cfgs[REMOTE].nhosts, 2);
	assert_int_equal(cfgs[REMOTE].norigins, 1);
	assert_int_equal(cfgs[OPEN].nhosts, 0);
	assert_int_equal(cfgs[OPEN].norigins, 0);
	return 0;
}

#define HOST "localhost:8766"
#define ORIGIN "http://localhost:8766"
#define JSON "application/json"
#define RHOST "review.example.com"
#define PHOST "review.example.com" /* the proxy's public name, on no list */

/* Rows override what they test (a later designated initializer wins, which is what
 * -Woverride-init warns about). */
#pragma GCC diagnostic ignored "-Woverride-init"
#define GET(p) .method = "GET", .url = (p), .host = HOST
#define POST(p) .method = "POST", .url = (p), .host = HOST, .origin = ORIGIN, .content_type = JSON
#define RGET(p) .method = "GET", .url = (p), .host = RHOST
#define PGET(p) .method = "GET", .url = (p), .host = PHOST, .on_proxy = 1
#define PPOST(p) .method = "POST", .url = (p), .host = PHOST, .on_proxy = 1, .content_type = JSON

struct row {
	const char *name;
	enum which cfg;
	struct wr_in in;
	enum web_route route;
	unsigned status;
	const char *allow;
};

/* clang-format off */
static const struct row rows[] = {
    /* Every endpoint, asked the right way. */
    {"page", LOOP, {GET("/review")}, WR_PAGE, 0, NULL},
    {"page slash", LOOP, {GET("/review/")}, WR_PAGE, 0, NULL},
    {"page query", LOOP, {GET("/review?x=1")}, WR_PAGE, 0, NULL},
    {"page fragment", LOOP, {GET("/review#top")}, WR_PAGE, 0, NULL},
    {"page empty query", LOOP, {GET("/review/?")}, WR_PAGE, 0, NULL},
    {"js", LOOP, {GET("/review/app.js")}, WR_JS, 0, NULL},
    {"css", LOOP, {GET("/review/app.css?v=3")}, WR_CSS, 0, NULL},
    {"health", LOOP, {GET("/health")}, WR_HEALTH, 0, NULL},
    {"favicon", LOOP, {GET("/favicon.ico")}, WR_FAVICON, 0, NULL},
    {"metrics", LOOP, {GET("/metrics")}, WR_METRICS, 0, NULL},
    {"jwks", LOOP, {GET("/.well-known/jwks.json")}, WR_JWKS, 0, NULL},
    {"checkpoint", LOOP, {GET("/checkpoint")}, WR_CHECKPOINT, 0, NULL},
    {"consistency", LOOP, {GET("/checkpoint/consistency?old=1&new=2")}, WR_CONSISTENCY, 0, NULL},
    {"consistency post", LOOP, {POST("/checkpoint/consistency")}, WR_CONSISTENCY, 405, "GET"},
    {"me", LOOP, {GET("/review/api/me")}, WR_ME, 0, NULL},
    {"login", LOOP, {POST("/review/api/login")}, WR_LOGIN, 0, NULL},
    {"logout", LOOP, {POST("/review/api/logout")}, WR_LOGOUT, 0, NULL},
    {"api pending", LOOP, {GET("/review/api/pending")}, WR_API_PENDING, 0, NULL},
    {"decide", LOOP, {POST("/review/api/decide")}, WR_DECIDE, 0, NULL},
    {"reveal", LOOP, {POST("/review/api/reveal")}, WR_REVEAL, 0, NULL},
    {"reveal get", LOOP, {GET("/review/api/reveal")}, WR_REVEAL, 405, "POST"},
    {"reveal cross-site", LOOP, {POST("/review/api/reveal"), .sec_fetch_site = "cross-site"}, WR_REVEAL, 403, NULL},
    {"events", LOOP, {GET("/review/events")}, WR_EVENTS, 0, NULL},
    {"pending", LOOP, {GET("/pending")}, WR_PENDING, 0, NULL},
    {"submit", LOOP, {POST("/feedback/submit")}, WR_SUBMIT, 0, NULL},
    {"mcp", LOOP, {POST("/review/mcp"), .origin = NULL, .authorization = "Bearer rt_x"}, WR_MCP, 0, NULL},
    {"admin", LOOP, {POST("/admin/clear-stale-sessions"), .origin = NULL, .authorization = "Bearer adm"},
     WR_ADMIN_CLEAR, 0, NULL},
    {"history", LOOP, {GET("/review/api/history")}, WR_HISTORY, 0, NULL},
    {"history query", LOOP, {GET("/review/api/history?who=alice&outcome=rejected&limit=5")}, WR_HISTORY, 0, NULL},
    {"history post", LOOP, {POST("/review/api/history")}, WR_HISTORY, 405, "GET"},
    {"history cross-site", LOOP, {GET("/review/api/history"), .sec_fetch_site = "cross-site"}, WR_HISTORY, 403, NULL},
    {"history other origin", LOOP, {GET("/review/api/history"), .origin = "http://evil.example"}, WR_HISTORY, 403,
     NULL},
    {"history other host", LOOP, {GET("/review/api/history"), .host = "evil.example"}, WR_HISTORY, 403, NULL},
    {"history prefix", LOOP, {GET("/review/api/historyx")}, WR_NONE, 404, NULL},
    {"passkey", LOOP, {POST("/review/api/passkey")}, WR_PASSKEY, 0, NULL},
    {"passkey get", LOOP, {GET("/review/api/passkey")}, WR_PASSKEY, 405, "POST"},
    {"passkey other origin", LOOP, {POST("/review/api/passkey"), .origin = "http://evil.example"}, WR_PASSKEY, 403,
     NULL},
    {"passkey cross-site", LOOP, {POST("/review/api/passkey"), .sec_fetch_site = "cross-site"}, WR_PASSKEY, 403, NULL},
    {"proof", LOOP, {GET("/review/api/proof?seq=3")}, WR_PROOF, 0, NULL},
    {"proof post", LOOP, {POST("/review/api/proof")}, WR_PROOF, 405, "GET"},
    {"proof cross-site", LOOP, {GET("/review/api/proof?seq=3"), .sec_fetch_site = "cross-site"}, WR_PROOF, 403, NULL},
    {"qa", LOOP, {POST("/review/api/qa")}, WR_QA, 0, NULL},
    /* Paths that are none of them: only the exact path, before any ? or #. */
    {"root", LOOP, {GET("/")}, WR_NONE, 404, NULL},
    {"empty url", LOOP, {GET("")}, WR_NONE, 404, NULL},
    {"no url", LOOP, {GET(NULL)}, WR_NONE, 404, NULL},
    {"page prefix", LOOP, {GET("/reviewx")}, WR_NONE, 404, NULL},
    {"page double slash", LOOP, {GET("/review//")}, WR_NONE, 404, NULL},
    {"leading double slash", LOOP, {GET("//review")}, WR_NONE, 404, NULL},
    {"upper case", LOOP, {GET("/REVIEW")}, WR_NONE, 404, NULL},
    {"under page", LOOP, {GET("/review/app.js/x")}, WR_NONE, 404, NULL},
    {"dot dot", LOOP, {GET("/review/../health")}, WR_NONE, 404, NULL},
    {"encoded slash", LOOP, {GET("%2Fhealth")}, WR_NONE, 404, NULL},
    {"absolute form", LOOP, {GET("http://localhost:8766/review")}, WR_NONE, 404, NULL},
    {"semicolon", LOOP, {GET("/review;x")}, WR_NONE, 404, NULL},
    {"health slash", LOOP, {GET("/health/")}, WR_NONE, 404, NULL},
    {"api prefix", LOOP, {GET("/review/api")}, WR_NONE, 404, NULL},
    {"sse of the agent listener", LOOP, {GET("/sse")}, WR_NONE, 404, NULL},
    {"mcp of the agent listener", LOOP, {POST("/mcp")}, WR_NONE, 404, NULL},
    /* The right path, the wrong method: 405 and the one method it takes. */
    {"post page", LOOP, {POST("/review")}, WR_PAGE, 405, "GET"},
    {"head page", LOOP, {GET("/review"), .method = "HEAD"}, WR_PAGE, 405, "GET"},
    {"lower-case get", LOOP, {GET("/review"), .method = "get"}, WR_PAGE, 405, "GET"},
    {"no method", LOOP, {GET("/health"), .method = NULL}, WR_HEALTH, 405, "GET"},
    {"empty method", LOOP, {GET("/health"), .method = ""}, WR_HEALTH, 405, "GET"},
    {"post metrics", LOOP, {POST("/metrics")}, WR_METRICS, 405, "GET"},
    {"get login", LOOP, {GET("/review/api/login")}, WR_LOGIN, 405, "POST"},
    {"put decide", LOOP, {POST("/review/api/decide"), .method = "PUT"}, WR_DECIDE, 405, "POST"},
    {"options decide", LOOP, {POST("/review/api/decide"), .method = "OPTIONS"}, WR_DECIDE, 405, "POST"},
    {"get mcp", LOOP, {GET("/review/mcp")}, WR_MCP, 405, "POST"},
    {"delete mcp", LOOP, {GET("/review/mcp"), .method = "DELETE"}, WR_MCP, 405, "POST"},
    {"post events", LOOP, {POST("/review/events")}, WR_EVENTS, 405, "GET"},
    {"get admin", LOOP, {GET("/admin/clear-stale-sessions")}, WR_ADMIN_CLEAR, 405, "POST"},
    /* The path and method are judged first: neither tells a foreign page anything
     * a public page would not. */
    {"404 before host", LOOP, {GET("/nowhere"), .host = "evil.example.com"}, WR_NONE, 404, NULL},
    {"405 before host", LOOP, {POST("/health"), .host = "evil.example.com"}, WR_HEALTH, 405, "GET"},
    /* Host on a loopback listener: the loopback names with the bound port (DNS rebinding). */
    {"host 127.0.0.1", LOOP, {GET("/review/api/me"), .host = "127.0.0.1:8766"}, WR_ME, 0, NULL},
    {"host [::1]", LOOP, {GET("/review/api/me"), .host = "[::1]:8766"}, WR_ME, 0, NULL},
    {"host foreign", LOOP, {GET("/review/api/me"), .host = "evil.example.com"}, WR_ME, 403, NULL},
    {"host foreign with port", LOOP, {GET("/review/api/me"), .host = "evil.example.com:8766"}, WR_ME, 403, NULL},
    {"host without port", LOOP, {GET("/review/api/me"), .host = "localhost"}, WR_ME, 403, NULL},
    {"host agent port", LOOP, {GET("/review/api/me"), .host = "localhost:8765"}, WR_ME, 403, NULL},
    {"host empty", LOOP, {GET("/review/api/me"), .host = ""}, WR_ME, 403, NULL},
    {"host missing", LOOP, {GET("/review/api/me"), .host = NULL}, WR_ME, 403, NULL},
    {"host trailing dot", LOOP, {GET("/review/api/me"), .host = "localhost.:8766"}, WR_ME, 403, NULL},
    /* Host names are case-insensitive (RFC 9110), as on the agent listener (mhttp.c). */
    {"host other case", LOOP, {GET("/review/api/me"), .host = "LOCALHOST:8766"}, WR_ME, 0, NULL},
    {"host checked on page", LOOP, {GET("/review"), .host = "evil.example.com"}, WR_PAGE, 403, NULL},
    {"host checked on health", LOOP, {GET("/health"), .host = "evil.example.com"}, WR_HEALTH, 403, NULL},
    {"host checked on mcp", LOOP, {POST("/review/mcp"), .host = "evil.example.com"}, WR_MCP, 403, NULL},
    /* A remote listener with the operator's lists. */
    {"remote host", REMOTE, {RGET("/review/api/me")}, WR_ME, 0, NULL},
    {"remote host with port", REMOTE, {RGET("/review/api/me"), .host = "review.example.com:8766"}, WR_ME, 0, NULL},
    {"remote own address", REMOTE, {RGET("/review/api/me"), .host = "192.0.2.10:8766"}, WR_ME, 403, NULL},
    {"remote loopback name", REMOTE, {RGET("/review/api/me"), .host = HOST}, WR_ME, 403, NULL},
    {"remote foreign", REMOTE, {RGET("/review/api/me"), .host = "evil.example.com"}, WR_ME, 403, NULL},
    {"remote suffix", REMOTE, {RGET("/review/api/me"), .host = "review.example.com.evil"}, WR_ME, 403, NULL},
    {"remote no host", REMOTE, {RGET("/review/api/me"), .host = NULL}, WR_ME, 403, NULL},
    {"remote origin", REMOTE, {RGET("/review/api/me"), .origin = "https://review.example.com"}, WR_ME, 0, NULL},
    {"remote origin http", REMOTE, {RGET("/review/api/me"), .origin = "http://review.example.com"}, WR_ME, 403,
     NULL},
    {"remote origin port", REMOTE, {RGET("/review/api/me"), .origin = "https://review.example.com:8766"}, WR_ME,
     403, NULL},
    {"remote loopback origin", REMOTE, {RGET("/review/api/me"), .origin = ORIGIN}, WR_ME, 403, NULL},
    /* Off the proxy's socket, scheme://Host is not an origin of ours, whatever X-Forwarded-Proto says. */
    {"remote origin from host", REMOTE, {RGET("/review/api/me"), .host = "review.example.com:8766",
     .origin = "http://review.example.com:8766"}, WR_ME, 403, NULL},
    {"remote forwarded proto ignored", REMOTE, {RGET("/review/api/me"), .origin = "http://review.example.com",
     .forwarded_proto = "http"}, WR_ME, 403, NULL},
    {"remote login", REMOTE, {POST("/review/api/login"), .host = RHOST, .origin = "https://review.example.com"},
     WR_LOGIN, 0, NULL},
    /* No Host list (a remote listener the operator left open): any Host, even none. */
    {"open any host", OPEN, {GET("/review/api/me"), .host = "evil.example.com"}, WR_ME, 0, NULL},
    {"open no host", OPEN, {GET("/review/api/me"), .host = NULL}, WR_ME, 0, NULL},
    {"open origin still checked", OPEN, {GET("/review/api/me"), .origin = "https://evil.example"}, WR_ME, 403,
     NULL},
    {"open any origin refused", OPEN, {GET("/review/api/me"), .origin = "http://192.0.2.10:8766"}, WR_ME, 403,
     NULL},
    /* Origin on a loopback listener: absent is fine; present must be ours. */
    {"origin localhost", LOOP, {GET("/review/api/me"), .origin = ORIGIN}, WR_ME, 0, NULL},
    {"origin 127.0.0.1", LOOP, {GET("/review/api/me"), .origin = "http://127.0.0.1:8766"}, WR_ME, 0, NULL},
    {"origin [::1]", LOOP, {GET("/review/api/me"), .origin = "http://[::1]:8766"}, WR_ME, 0, NULL},
    {"origin https", LOOP, {GET("/review/api/me"), .origin = "https://localhost:8766"}, WR_ME, 403, NULL},
    {"origin trailing slash", LOOP, {GET("/review/api/me"), .origin = ORIGIN "/"}, WR_ME, 403, NULL},
    {"origin agent port", LOOP, {GET("/review/api/me"), .origin = "http://localhost:8765"}, WR_ME, 403, NULL},
    {"origin foreign", LOOP, {GET("/review/api/me"), .origin = "http://evil.example.com"}, WR_ME, 403, NULL},
    {"origin null", LOOP, {GET("/review/api/me"), .origin = "null"}, WR_ME, 403, NULL},
    {"origin empty", LOOP, {GET("/review/api/me"), .origin = ""}, WR_ME, 403, NULL},
    {"origin on events", LOOP, {GET("/review/events"), .origin = "http://evil.example.com"}, WR_EVENTS, 403, NULL},
    {"origin on post", LOOP, {POST("/review/api/decide"), .origin = "http://evil.example.com"}, WR_DECIDE, 403,
     NULL},
    {"origin beats bearer", LOOP, {POST("/review/api/decide"), .origin = "http://evil.example.com",
     .authorization = "Bearer t"}, WR_DECIDE, 403, NULL},
    /* Open endpoints may be linked or fetched from anywhere: they hold no data. */
    {"open page foreign origin", LOOP, {GET("/review"), .origin = "http://evil.example.com"}, WR_PAGE, 0, NULL},
    {"open metrics foreign origin", LOOP, {GET("/metrics"), .origin = "http://evil.example.com",
     .sec_fetch_site = "cross-site"}, WR_METRICS, 0, NULL},
    {"open js cross-site", LOOP, {GET("/review/app.js"), .sec_fetch_site = "cross-site"}, WR_JS, 0, NULL},
    {"open checkpoint cross-site", LOOP, {GET("/checkpoint"), .sec_fetch_site = "cross-site"}, WR_CHECKPOINT, 0,
     NULL},
    {"open consistency cross-site", LOOP, {GET("/checkpoint/consistency"), .origin = "http://evil.example.com",
     .sec_fetch_site = "cross-site"}, WR_CONSISTENCY, 0, NULL},
    /* Sec-Fetch-Site: a cross-site request reaches no data, whatever its Origin. */
    {"fetch same-origin", LOOP, {GET("/review/api/me"), .sec_fetch_site = "same-origin"}, WR_ME, 0, NULL},
    {"fetch same-site", LOOP, {GET("/review/api/me"), .sec_fetch_site = "same-site"}, WR_ME, 0, NULL},
    {"fetch none", LOOP, {GET("/review/api/me"), .sec_fetch_site = "none"}, WR_ME, 0, NULL},
    {"fetch cross-site", LOOP, {GET("/review/api/me"), .sec_fetch_site = "cross-site"}, WR_ME, 403, NULL},
    {"fetch cross-site events", LOOP, {GET("/review/events"), .sec_fetch_site = "cross-site"}, WR_EVENTS, 403,
     NULL},
    {"fetch cross-site pending", LOOP, {GET("/pending"), .sec_fetch_site = "cross-site"}, WR_PENDING, 403, NULL},
    {"fetch cross-site listed origin", LOOP, {GET("/review/api/me"), .origin = ORIGIN,
     .sec_fetch_site = "cross-site"}, WR_ME, 403, NULL},
    {"fetch cross-site post", LOOP, {POST("/review/api/decide"), .sec_fetch_site = "cross-site"}, WR_DECIDE, 403,
     NULL},
    {"fetch cross-site mcp", LOOP, {POST("/review/mcp"), .origin = NULL, .authorization = "Bearer t",
     .sec_fetch_site = "cross-site"}, WR_MCP, 403, NULL},
    /* A POST without Origin is a program: it must bring a bearer token. */
    {"post no origin", LOOP, {POST("/review/api/decide"), .origin = NULL}, WR_DECIDE, 403, NULL},
    {"post login no origin", LOOP, {POST("/review/api/login"), .origin = NULL}, WR_LOGIN, 403, NULL},
    {"post logout no origin", LOOP, {POST("/review/api/logout"), .origin = NULL}, WR_LOGOUT, 403, NULL},
    {"post submit no origin", LOOP, {POST("/feedback/submit"), .origin = NULL}, WR_SUBMIT, 403, NULL},
    {"post bearer no origin", LOOP, {POST("/review/api/decide"), .origin = NULL, .authorization = "Bearer t"},
     WR_DECIDE, 0, NULL},
    {"post submit bearer", LOOP, {POST("/feedback/submit"), .origin = NULL, .authorization = "Bearer t"},
     WR_SUBMIT, 0, NULL},
    /* /review/mcp and the admin endpoint take bearer tokens only (checked by the signer). */
    {"mcp no origin no auth", LOOP, {POST("/review/mcp"), .origin = NULL}, WR_MCP, 0, NULL},
    {"admin no origin no auth", LOOP, {POST("/admin/clear-stale-sessions"), .origin = NULL}, WR_ADMIN_CLEAR, 0,
     NULL},
    {"mcp with origin", LOOP, {POST("/review/mcp")}, WR_MCP, 0, NULL},
    /* The body of a POST is JSON. */
    {"post no content-type", LOOP, {POST("/review/api/decide"), .content_type = NULL}, WR_DECIDE, 415, NULL},
    {"post empty content-type", LOOP, {POST("/review/api/decide"), .content_type = ""}, WR_DECIDE, 415, NULL},
    {"post text/plain", LOOP, {POST("/review/api/decide"), .content_type = "text/plain"}, WR_DECIDE, 415, NULL},
    {"post form", LOOP, {POST("/review/api/login"), .content_type = "application/x-www-form-urlencoded"},
     WR_LOGIN, 415, NULL},
    {"post multipart", LOOP, {POST("/review/api/login"), .content_type = "multipart/form-data; boundary=x"},
     WR_LOGIN, 415, NULL},
    {"post json prefix cut", LOOP, {POST("/review/api/login"), .content_type = "application/jso"}, WR_LOGIN, 415,
     NULL},
    {"post charset", LOOP, {POST("/review/api/decide"), .content_type = "application/json; charset=utf-8"},
     WR_DECIDE, 0, NULL},
    {"post charset no space", LOOP, {POST("/review/api/decide"), .content_type = "application/json;charset=utf-8"},
     WR_DECIDE, 0, NULL},
    {"post upper case", LOOP, {POST("/review/api/decide"), .content_type = "Application/JSON"}, WR_DECIDE, 0, NULL},
    {"mcp text/plain", LOOP, {POST("/review/mcp"), .origin = NULL, .content_type = "text/plain"}, WR_MCP, 415,
     NULL},
    {"admin no content-type (the seed's curl, no body)", LOOP,
     {POST("/admin/clear-stale-sessions"), .origin = NULL, .content_type = NULL}, WR_ADMIN_CLEAR, 0, NULL},
    {"admin text/plain", LOOP, {POST("/admin/clear-stale-sessions"), .origin = NULL, .content_type = "text/plain"},
     WR_ADMIN_CLEAR, 415, NULL},
    /* Origin is judged before the media type. */
    {"post no origin text/plain", LOOP, {POST("/review/api/decide"), .origin = NULL, .content_type = "text/plain"},
     WR_DECIDE, 403, NULL},
    /* A GET has no body to judge. */
    {"get ignores content-type", LOOP, {GET("/review/api/me"), .content_type = "text/plain"}, WR_ME, 0, NULL},
    /* The reverse proxy's socket: it checked its own name, so Host is not compared;
     * the browser's origin is the proxy's, scheme://Host as the proxy passed them. */
    {"proxy any host", LOOP, {PGET("/review/api/me")}, WR_ME, 0, NULL},
    {"proxy no host", LOOP, {PGET("/review/api/me"), .host = NULL}, WR_ME, 0, NULL},
    {"proxy open route", LOOP, {PGET("/review")}, WR_PAGE, 0, NULL},
    {"proxy origin https", LOOP, {PGET("/review/api/me"), .origin = "https://" PHOST, .forwarded_proto = "https"},
     WR_ME, 0, NULL},
    {"proxy origin http", LOOP, {PGET("/review/api/me"), .origin = "http://" PHOST, .forwarded_proto = "http"},
     WR_ME, 0, NULL},
    {"proxy origin no proto", LOOP, {PGET("/review/api/me"), .origin = "http://" PHOST}, WR_ME, 0, NULL},
    {"proxy origin with port", LOOP, {PGET("/review/api/me"), .host = PHOST ":8443",
     .origin = "https://" PHOST ":8443", .forwarded_proto = "https"}, WR_ME, 0, NULL},
    {"proxy https origin, http proto", LOOP, {PGET("/review/api/me"), .origin = "https://" PHOST,
     .forwarded_proto = "http"}, WR_ME, 403, NULL},
    {"proxy https origin, no proto", LOOP, {PGET("/review/api/me"), .origin = "https://" PHOST}, WR_ME, 403, NULL},
    {"proxy http origin, https proto", LOOP, {PGET("/review/api/me"), .origin = "http://" PHOST,
     .forwarded_proto = "https"}, WR_ME, 403, NULL},
    {"proxy odd proto", LOOP, {PGET("/review/api/me"), .origin = "ftp://" PHOST, .forwarded_proto = "ftp"}, WR_ME,
     403, NULL},
    {"proxy origin other host", LOOP, {PGET("/review/api/me"), .origin = "https://evil.example.com",
     .forwarded_proto = "https"}, WR_ME, 403, NULL},
    {"proxy origin host prefix", LOOP, {PGET("/review/api/me"), .host = PHOST ".evil", .origin = "https://" PHOST,
     .forwarded_proto = "https"}, WR_ME, 403, NULL},
    {"proxy origin, no host", LOOP, {PGET("/review/api/me"), .host = NULL, .origin = "http://"}, WR_ME, 403, NULL},
    {"proxy listed origin", LOOP, {PGET("/review/api/me"), .origin = ORIGIN}, WR_ME, 0, NULL},
    {"proxy cross-site", LOOP, {PGET("/review/api/me"), .origin = "https://" PHOST, .forwarded_proto = "https",
     .sec_fetch_site = "cross-site"}, WR_ME, 403, NULL},
    {"proxy login", LOOP, {PPOST("/review/api/login"), .origin = "https://" PHOST, .forwarded_proto = "https"},
     WR_LOGIN, 0, NULL},
    {"proxy post no origin", LOOP, {PPOST("/review/api/decide")}, WR_DECIDE, 403, NULL},
    {"proxy post text/plain", LOOP, {PPOST("/review/api/decide"), .origin = "http://" PHOST,
     .content_type = "text/plain"}, WR_DECIDE, 415, NULL},
    {"proxy 404", LOOP, {PGET("/nowhere")}, WR_NONE, 404, NULL},
    {"proxy 405", LOOP, {PGET("/review/api/decide")}, WR_DECIDE, 405, "POST"},
};
/* clang-format on */

/* The route table, as the header documents it: path, method, the frame type it goes as. */
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

static size_t spec_of(enum web_route r)
{
	for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++)
		if (spec[i].r == r)
			return i;
	fail_msg("route %d is not in the spec", (int)r);
	return 0;
}

/* Classify over garbage: web_classify must fill all of out. */
static void classify(const struct http_cfg *c, const struct wr_in *in, struct wr_out *o)
{
	memset(o, 0x5a, sizeof *o);
	web_classify(c, in, o);
}

static void check_out(const char *name, const struct wr_out *o)
{
	if ((o->status == 0) != (o->error == NULL))
		fail_msg("%s: status %u with error '%s'", name, o->status, o->error ? o->error : "(none)");
	if (o->error && !o->error[0])
		fail_msg("%s: an empty error text", name);
	if ((o->status == 405) != (o->allow != NULL))
		fail_msg("%s: Allow '%s' with status %u", name, o->allow ? o->allow : "(none)", o->status);
	if (o->route == WR_NONE) {
		if (o->status != 404 || o->frame || o->post)
			fail_msg("%s: no route, but status %u frame %u post %d", name, o->status, (unsigned)o->frame,
				 o->post);
		return;
	}
	size_t k = spec_of(o->route);
	if (o->frame != spec[k].frame)
		fail_msg("%s: frame type %u, want %u", name, (unsigned)o->frame, (unsigned)spec[k].frame);
	if (o->post != !strcmp(spec[k].method, "POST"))
		fail_msg("%s: post %d for a %s route", name, o->post, spec[k].method);
	if (o->allow && strcmp(o->allow, spec[k].method))
		fail_msg("%s: Allow '%s', want '%s'", name, o->allow, spec[k].method);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct wr_out o;
		classify(&cfgs[r->cfg], &r->in, &o);
		if (o.route != r->route || o.status != r->status)
			fail_msg("%s: route %d status %u (%s), want route %d status %u", r->name, (int)o.route,
				 o.status, o.error ? o.error : "-", (int)r->route, r->status);
		if ((r->allow == NULL) != (o.allow == NULL) || (r->allow && strcmp(r->allow, o.allow)))
			fail_msg("%s: Allow '%s', want '%s'", r->name, o.allow ? o.allow : "(none)",
				 r->allow ? r->allow : "(none)");
		check_out(r->name, &o);
	}
}

/* Every endpoint in the table: reached with its method and its path (with or without
 * a query), refused with 405 and Allow under every other method, and under none. */
static void test_route_table(void **state)
{
	(void)state;
	static const char *const methods[] = {"GET",	 "POST",  "HEAD", "PUT", "DELETE",
					      "OPTIONS", "PATCH", "get",  "post"};
	char url[128];
	for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
		for (int q = 0; q < 3; q++) {
			snprintf(url, sizeof url, "%s%s", spec[i].path, q == 0 ? "" : q == 1 ? "?a=b&c" : "#frag?x");
			struct wr_in in = {
			    .method = spec[i].method, .url = url, .host = HOST, .origin = ORIGIN, .content_type = JSON};
			struct wr_out o;
			classify(&cfgs[LOOP], &in, &o);
			if (o.route != spec[i].r || o.status != 0)
				fail_msg("%s %s: route %d status %u (%s)", spec[i].method, url, (int)o.route, o.status,
					 o.error ? o.error : "-");
			check_out(url, &o);
			for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
				in.method = methods[m];
				classify(&cfgs[LOOP], &in, &o);
				if (!strcmp(methods[m], spec[i].method))
					continue;
				if (o.route != spec[i].r || o.status != 405 || !o.allow ||
				    strcmp(o.allow, spec[i].method))
					fail_msg("%s %s: route %d status %u allow %s, want 405 Allow %s", methods[m],
						 url, (int)o.route, o.status, o.allow ? o.allow : "-", spec[i].method);
			}
			in.method = NULL;
			classify(&cfgs[LOOP], &in, &o);
			assert_int_equal(o.status, 405);
			assert_string_equal(o.allow, spec[i].method);
		}
		/* One character more or less is another path. */
		size_t n = strlen(spec[i].path);
		snprintf(url, sizeof url, "%.*s", (int)(n - 1), spec[i].path);
		struct wr_in in = {
		    .method = spec[i].method, .url = url, .host = HOST, .origin = ORIGIN, .content_type = JSON};
		struct wr_out o;
		classify(&cfgs[LOOP], &in, &o);
		if (strcmp(url, "/review")) /* "/review/" less one is "/review", also the page */
			assert_int_equal(o.status, 404);
		snprintf(url, sizeof url, "%sx", spec[i].path);
		classify(&cfgs[LOOP], &in, &o);
		assert_int_equal(o.route, WR_NONE);
		assert_int_equal(o.status, 404);
	}
}

/* Only the listed routes are open; every other one is judged on Origin and fetch site. */
static void test_open_routes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
		int open = spec[i].r == WR_PAGE || spec[i].r == WR_JS || spec[i].r == WR_CSS ||
			   spec[i].r == WR_FAVICON || spec[i].r == WR_HEALTH || spec[i].r == WR_METRICS ||
			   spec[i].r == WR_JWKS || spec[i].r == WR_CHECKPOINT || spec[i].r == WR_CONSISTENCY;
		struct wr_in in = {.method = spec[i].method,
				   .url = spec[i].path,
				   .host = HOST,
				   .origin = "https://evil.example",
				   .content_type = JSON,
				   .authorization = "Bearer t"};
		struct wr_out o;
		classify(&cfgs[LOOP], &in, &o);
		if (o.status != (open ? 0u : 403u))
			fail_msg("%s with a foreign Origin: status %u", spec[i].path, o.status);
		in.origin = NULL;
		in.sec_fetch_site = "cross-site";
		classify(&cfgs[LOOP], &in, &o);
		if (o.status != (open ? 0u : 403u))
			fail_msg("%s cross-site: status %u", spec[i].path, o.status);
		/* The Host check covers open routes too. */
		in.sec_fetch_site = NULL;
		in.host = "evil.example.com";
		classify(&cfgs[LOOP], &in, &o);
		if (o.status != 403)
			fail_msg("%s with a foreign Host: status %u", spec[i].path, o.status);
	}
}

/* Regression (found by this test): web_classify compared only the first 16 bytes, so
 * "application/jsonx" and "application/json-seq" passed as JSON (mhttp.c refuses them
 * too). After the type: white space, then nothing or parameters. */
static void test_content_type_exact(void **state)
{
	(void)state;
	static const char *const bad[] = {"application/jsonx",	"application/json-seq",
					  "application/json+x", "application/jsonp; charset=utf-8",
					  "application/json x", "application/json,text/plain",
					  "application/json/x", " application/json"};
	static const char *const good[] = {"application/json", "application/json;x=y", "application/json ",
					   "application/json\t; charset=utf-8", "APPLICATION/JSON"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct wr_in in = {POST("/review/api/decide"), .content_type = good[i]};
		struct wr_out o;
		classify(&cfgs[LOOP], &in, &o);
		if (o.status != 0)
			fail_msg("Content-Type '%s': status %u, want 0", good[i], o.status);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct wr_in in = {POST("/review/api/decide"), .content_type = bad[i]};
		struct wr_out o;
		classify(&cfgs[LOOP], &in, &o);
		if (o.status != 415)
			fail_msg("Content-Type '%s': status %u, want 415", bad[i], o.status);
	}
}

/* Regression (found by this test): proxy_origin built scheme://Host with snprintf into
 * HTTPCFG_NAME_MAX + 16 bytes without checking for truncation, so behind the proxy a
 * Host of 300 characters let the Origin "https://" + its first 262 pass, and refused
 * its true Origin. (Not reachable through a browser: a DNS name and a port are shorter.) */
static void test_proxy_origin_long_host(void **state)
{
	(void)state;
	char host[301], origin[400];
	memset(host, 'a', 300);
	host[300] = 0;
	struct wr_in in = {PGET("/review/api/me"), .host = host, .origin = origin, .forwarded_proto = "https"};
	struct wr_out o;
	/* Every proper prefix is another origin. */
	unsigned prefix_status = 403;
	size_t prefix_len = 0;
	for (size_t len = 0; len < 300; len++) {
		snprintf(origin, sizeof origin, "https://%.*s", (int)len, host);
		classify(&cfgs[LOOP], &in, &o);
		if (o.status != 403 && prefix_status == 403) {
			prefix_status = o.status;
			prefix_len = len;
		}
	}
	/* The whole of it matches, however long. */
	snprintf(origin, sizeof origin, "https://%s", host);
	classify(&cfgs[LOOP], &in, &o);
	if (prefix_status != 403 || o.status != 0)
		fail_msg("proxy, Host of 300 characters: Origin of its first %zu: status %u, want 403; its whole "
			 "Origin: status %u, want 0",
			 prefix_len, prefix_status, o.status);
}

/* Nothing in the output depends on what it held, and nothing points at stale memory. */
static void test_output_cleared(void **state)
{
	(void)state;
	struct wr_in in = {GET("/review")};
	struct wr_out a, b;
	memset(&a, 0x00, sizeof a);
	memset(&b, 0xff, sizeof b);
	web_classify(&cfgs[LOOP], &in, &a);
	web_classify(&cfgs[LOOP], &in, &b);
	assert_int_equal(a.route, b.route);
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_null(b.error);
	assert_null(b.allow);
	assert_int_equal(b.frame, 0);
	assert_int_equal(b.post, 0);
}

/* ---- web_bearer ---- */

/* The one table from the signer's typed status to HTTP: each status its code, every
 * value past the enum (a worker never trusts the number) 500. */
static void test_http_status(void **state)
{
	(void)state;
	static const struct {
		enum proto_status st;
		unsigned http;
	} want[] = {{PS_OK, 200},	 {PS_BAD_REQUEST, 400}, {PS_UNAUTHORIZED, 401}, {PS_FORBIDDEN, 403},
		    {PS_NOT_FOUND, 404}, {PS_TOO_MANY, 429},	{PS_UNAVAILABLE, 503},	{PS_INTERNAL, 500}};
	assert_int_equal(sizeof want / sizeof want[0], PS_COUNT); /* a new status needs its code here */
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (web_http_status(want[i].st) != want[i].http)
			fail_msg("status %d: HTTP %u, want %u", (int)want[i].st, web_http_status(want[i].st),
				 want[i].http);
	assert_int_equal(web_http_status(PS_COUNT), 500);
	assert_int_equal(web_http_status(UINT64_MAX), 500);
}

static void bearer_is(const char *header, const char *want)
{
	size_t n = 12345;
	const char *v = web_bearer(header, &n);
	if (!want) {
		if (v)
			fail_msg("Authorization '%s': got '%.*s', want none", header ? header : "(null)", (int)n, v);
		return;
	}
	if (!v)
		fail_msg("Authorization '%s': got none, want '%s'", header, want);
	if (v < header + 7 || v + n > header + strlen(header))
		fail_msg("Authorization '%s': the token is not inside the header", header);
	if (n != strlen(want) || memcmp(v, want, n))
		fail_msg("Authorization '%s': got '%.*s', want '%s'", header, (int)n, v, want);
}

static void test_bearer(void **state)
{
	(void)state;
	bearer_is("Bearer rt_abc", "rt_abc");
	bearer_is("bearer rt_abc", "rt_abc");
	bearer_is("BEARER rt_abc", "rt_abc");
	bearer_is("BeArEr rt_abc", "rt_abc");
	bearer_is("Bearer    rt_abc", "rt_abc");
	bearer_is("Bearer rt_abc   ", "rt_abc");
	bearer_is("Bearer rt_abc\r\n", "rt_abc");
	bearer_is("Bearer rt_abc\t", "rt_abc");
	bearer_is("Bearer a", "a");
	bearer_is("Bearer abc/+=-._~", "abc/+=-._~");
	/* No token. */
	bearer_is(NULL, NULL);
	bearer_is("", NULL);
	bearer_is("Bearer", NULL);
	bearer_is("Bearer ", NULL);
	bearer_is("Bearer     ", NULL);
	bearer_is("Bearer \t", NULL);
	bearer_is("Bearer \r\n", NULL);
	bearer_is("Bearertoken", NULL);
	bearer_is("Bearer\ttoken", NULL);
	bearer_is(" Bearer token", NULL);
	bearer_is("Basic dXNlcjpwdw==", NULL);
	bearer_is("Token rt_abc", NULL);
	bearer_is("Bear rt_abc", NULL);
	bearer_is("rt_abc", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_route_table),
	    cmocka_unit_test(test_open_routes),
	    cmocka_unit_test(test_content_type_exact),
	    cmocka_unit_test(test_proxy_origin_long_host),
	    cmocka_unit_test(test_output_cleared),
	    cmocka_unit_test(test_bearer),
	    cmocka_unit_test(test_http_status),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
