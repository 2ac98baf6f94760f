/* Unit tests for gateway/worker/mcp/mhttp.c (the agent listener's request classifier) and
 * gateway/proto/httpcfg.c (its configuration): a table of requests against a loopback
 * listener and an open remote one, the shape checks of bearer keys, sessions and
 * protocol versions, error bodies that stay JSON whatever the client sent, the
 * CBOR round trip to the worker, and the environment variables with their refusals. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "include/assent/err.h"
#include "common/cbor.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/worker/mcp/mhttp.h"

enum which { LOOP, LOOP_SSE, REMOTE };

static struct http_cfg make_cfg(enum which w)
{
	struct http_cfg c;
	memset(&c, 0, sizeof c);
	c.on = 1;
	snprintf(c.host, sizeof c.host, "%s", w == REMOTE ? "192.0.2.10" : "127.0.0.1");
	c.legacy_sse = w == LOOP_SSE;
	c.body_max = 4u << 20;
	c.header_max = 32u << 10;
	c.conns_max = 128;
	c.sessions_max = 256;
	c.sessions_per_agent = 32;
	c.unauth_per_addr = 16;
	c.idle_s = 30;
	c.request_s = 30;
	c.session_idle_s = 3600;
	http_cfg_finish(&c, 8765, w != REMOTE);
	return c;
}

#define HOST "localhost:8765"
#define JSON "application/json"
#define SID "0123456789abcdef0123456789abcdef"

/* A POST to /mcp that passes every check; rows override what they test (a later
 * designated initializer wins, which is what -Woverride-init warns about). */
#pragma GCC diagnostic ignored "-Woverride-init"
#define POST_MCP .method = "POST", .path = "/mcp", .host = HOST, .content_type = JSON

struct row {
	const char *name;
	enum which cfg;
	struct mh_head h;
	enum mh_route route;
	unsigned status; /* MH_REJECT only */
	const char *allow;
	int json, sse; /* POST routes only */
};

/* clang-format off */
static const struct row rows[] = {
    /* Host: the loopback names with the bound port, nothing else (DNS rebinding). */
    {"good post", LOOP, {POST_MCP}, MH_MCP_POST, 0, NULL, 1, 0},
    {"host 127.0.0.1", LOOP, {POST_MCP, .host = "127.0.0.1:8765"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"host [::1]", LOOP, {POST_MCP, .host = "[::1]:8765"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"host case-insensitive", LOOP, {POST_MCP, .host = "LocalHost:8765"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"host rebinding", LOOP, {POST_MCP, .host = "evil.example.com"}, MH_REJECT, 403, NULL, 0, 0},
    {"host rebinding with port", LOOP, {POST_MCP, .host = "evil.example.com:8765"}, MH_REJECT, 403, NULL, 0, 0},
    {"host without port", LOOP, {POST_MCP, .host = "localhost"}, MH_REJECT, 403, NULL, 0, 0},
    {"host other port", LOOP, {POST_MCP, .host = "localhost:8766"}, MH_REJECT, 403, NULL, 0, 0},
    {"host empty", LOOP, {POST_MCP, .host = ""}, MH_REJECT, 403, NULL, 0, 0},
    {"host missing", LOOP, {POST_MCP, .host = NULL}, MH_REJECT, 400, NULL, 0, 0},
    {"host checked before path", LOOP, {.method = "GET", .path = "/nowhere", .host = "evil.example.com"},
     MH_REJECT, 403, NULL, 0, 0},
    {"host checked on health", LOOP, {.method = "GET", .path = "/health", .host = "evil.example.com"},
     MH_REJECT, 403, NULL, 0, 0},
    {"remote: any host", REMOTE, {POST_MCP, .host = "evil.example.com"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"remote: no host", REMOTE, {POST_MCP, .host = NULL}, MH_MCP_POST, 0, NULL, 1, 0},
    /* Origin: absent is fine (not a browser); present must be one of ours. */
    {"origin localhost", LOOP, {POST_MCP, .origin = "http://localhost:8765"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"origin 127.0.0.1", LOOP, {POST_MCP, .origin = "http://127.0.0.1:8765"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"origin [::1]", LOOP, {POST_MCP, .origin = "http://[::1]:8765"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"origin foreign", LOOP, {POST_MCP, .origin = "http://evil.example.com"}, MH_REJECT, 403, NULL, 0, 0},
    {"origin https", LOOP, {POST_MCP, .origin = "https://localhost:8765"}, MH_REJECT, 403, NULL, 0, 0},
    {"origin null", LOOP, {POST_MCP, .origin = "null"}, MH_REJECT, 403, NULL, 0, 0},
    {"origin empty", LOOP, {POST_MCP, .origin = ""}, MH_REJECT, 403, NULL, 0, 0},
    {"remote: any origin refused", REMOTE, {POST_MCP, .origin = "http://192.0.2.10:8765"}, MH_REJECT, 403,
     NULL, 0, 0},
    /* /health */
    {"health get", LOOP, {.method = "GET", .path = "/health", .host = HOST}, MH_HEALTH, 0, NULL, 0, 0},
    {"health head", LOOP, {.method = "HEAD", .path = "/health", .host = HOST}, MH_HEALTH, 0, NULL, 0, 0},
    {"health post", LOOP, {.method = "POST", .path = "/health", .host = HOST}, MH_REJECT, 405, "GET, HEAD", 0,
     0},
    {"health lowercase get", LOOP, {.method = "get", .path = "/health", .host = HOST}, MH_REJECT, 405,
     "GET, HEAD", 0, 0},
    /* Paths */
    {"unknown path", LOOP, {POST_MCP, .path = "/"}, MH_REJECT, 404, NULL, 0, 0},
    {"mcp trailing slash", LOOP, {POST_MCP, .path = "/mcp/"}, MH_REJECT, 404, NULL, 0, 0},
    {"mcp with query", LOOP, {POST_MCP, .path = "/mcp?x=1"}, MH_REJECT, 404, NULL, 0, 0},
    {"no path", LOOP, {POST_MCP, .path = NULL}, MH_REJECT, 404, NULL, 0, 0},
    {"no method", LOOP, {POST_MCP, .method = NULL}, MH_REJECT, 405, "POST, DELETE", 0, 0},
    {"get mcp", LOOP, {.method = "GET", .path = "/mcp", .host = HOST}, MH_REJECT, 405, "POST, DELETE", 0, 0},
    {"put mcp", LOOP, {POST_MCP, .method = "PUT"}, MH_REJECT, 405, "POST, DELETE", 0, 0},
    {"options mcp", LOOP, {POST_MCP, .method = "OPTIONS"}, MH_REJECT, 405, "POST, DELETE", 0, 0},
    /* GET /mcp only resumes a call's stream (SEP-1699): Last-Event-ID of our shape, a session. */
#define RESUME .method = "GET", .path = "/mcp", .host = HOST, .session = SID
    {"resume", LOOP, {RESUME, .last_event_id = "12-3"}, MH_MCP_RESUME, 0, NULL, 0, 1},
    {"resume accept sse", LOOP, {RESUME, .last_event_id = "1-0", .accept = "text/event-stream"}, MH_MCP_RESUME, 0,
     NULL, 0, 1},
    {"resume accept json", LOOP, {RESUME, .last_event_id = "1-0", .accept = "application/json"}, MH_REJECT, 406,
     NULL, 0, 0},
    {"resume without session", LOOP, {.method = "GET", .path = "/mcp", .host = HOST, .last_event_id = "1-0"},
     MH_REJECT, 400, NULL, 0, 0},
    {"resume 2026-07-28", LOOP, {.method = "GET", .path = "/mcp", .host = HOST, .last_event_id = "1-0",
     .protocol = "2026-07-28"}, MH_REJECT, 400, NULL, 0, 0},
    {"resume bad id", LOOP, {RESUME, .last_event_id = "abc"}, MH_REJECT, 400, NULL, 0, 0},
    {"resume empty id", LOOP, {RESUME, .last_event_id = ""}, MH_REJECT, 400, NULL, 0, 0},
    {"resume leading zero", LOOP, {RESUME, .last_event_id = "01-1"}, MH_REJECT, 400, NULL, 0, 0},
    {"resume no seq", LOOP, {RESUME, .last_event_id = "1-"}, MH_REJECT, 400, NULL, 0, 0},
    {"resume seq too big", LOOP, {RESUME, .last_event_id = "1-4294967296"}, MH_REJECT, 400, NULL, 0, 0},
    {"resume sign", LOOP, {RESUME, .last_event_id = "+1-1"}, MH_REJECT, 400, NULL, 0, 0},
    {"resume trailing", LOOP, {RESUME, .last_event_id = "1-1 "}, MH_REJECT, 400, NULL, 0, 0},
    {"resume post", LOOP, {POST_MCP, .session = SID, .last_event_id = "1-1"}, MH_MCP_POST, 0, NULL, 1, 0},
    /* DELETE ends a session, and needs one. */
    {"delete without session", LOOP, {.method = "DELETE", .path = "/mcp", .host = HOST}, MH_REJECT, 400, NULL,
     0, 0},
    {"delete with session", LOOP, {.method = "DELETE", .path = "/mcp", .host = HOST, .session = SID},
     MH_MCP_DELETE, 0, NULL, 0, 0},
    {"delete with bad session", LOOP, {.method = "DELETE", .path = "/mcp", .host = HOST, .session = "x"},
     MH_REJECT, 404, NULL, 0, 0},
    /* Content-Type */
    {"content-type missing", LOOP, {POST_MCP, .content_type = NULL}, MH_REJECT, 415, NULL, 0, 0},
    {"content-type text/plain", LOOP, {POST_MCP, .content_type = "text/plain"}, MH_REJECT, 415, NULL, 0, 0},
    {"content-type empty", LOOP, {POST_MCP, .content_type = ""}, MH_REJECT, 415, NULL, 0, 0},
    {"content-type json prefix", LOOP, {POST_MCP, .content_type = "application/jsonx"}, MH_REJECT, 415, NULL, 0,
     0},
    {"content-type json-seq", LOOP, {POST_MCP, .content_type = "application/json-seq"}, MH_REJECT, 415, NULL, 0,
     0},
    {"content-type charset", LOOP, {POST_MCP, .content_type = "application/json; charset=utf-8"}, MH_MCP_POST,
     0, NULL, 1, 0},
    {"content-type charset no space", LOOP, {POST_MCP, .content_type = "application/json;charset=utf-8"},
     MH_MCP_POST, 0, NULL, 1, 0},
    {"content-type upper case", LOOP, {POST_MCP, .content_type = "Application/JSON"}, MH_MCP_POST, 0, NULL, 1,
     0},
    /* Accept */
    {"accept absent", LOOP, {POST_MCP, .accept = NULL}, MH_MCP_POST, 0, NULL, 1, 0},
    {"accept json", LOOP, {POST_MCP, .accept = "application/json"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"accept both", LOOP, {POST_MCP, .accept = "application/json, text/event-stream"}, MH_MCP_POST, 0, NULL, 1,
     1},
    {"accept both no space", LOOP, {POST_MCP, .accept = "text/event-stream,application/json"}, MH_MCP_POST, 0,
     NULL, 1, 1},
    {"accept sse only", LOOP, {POST_MCP, .accept = "text/event-stream"}, MH_MCP_POST, 0, NULL, 0, 1},
    {"accept with q", LOOP, {POST_MCP, .accept = "application/json;q=0.9, text/html"}, MH_MCP_POST, 0, NULL, 1,
     0},
    {"accept html", LOOP, {POST_MCP, .accept = "text/html"}, MH_REJECT, 406, NULL, 0, 0},
    {"accept empty", LOOP, {POST_MCP, .accept = ""}, MH_REJECT, 406, NULL, 0, 0},
    {"accept json prefix", LOOP, {POST_MCP, .accept = "application/jsonx"}, MH_REJECT, 406, NULL, 0, 0},
    {"accept any", LOOP, {POST_MCP, .accept = "*/*"}, MH_MCP_POST, 0, NULL, 1, 1},
    {"accept application/*", LOOP, {POST_MCP, .accept = "application/*"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"accept text/*", LOOP, {POST_MCP, .accept = "text/*"}, MH_MCP_POST, 0, NULL, 0, 1},
    {"accept image/*", LOOP, {POST_MCP, .accept = "image/*"}, MH_REJECT, 406, NULL, 0, 0},
    /* q=0 says "not this one" (RFC 9110 12.4.2): zero however spelled, the last q counts. */
    {"accept json q=0", LOOP, {POST_MCP, .accept = "application/json;q=0, text/event-stream"}, MH_MCP_POST, 0,
     NULL, 0, 1},
    {"accept json Q=0.000", LOOP, {POST_MCP, .accept = "application/json; Q=0.000"}, MH_REJECT, 406, NULL, 0, 0},
    {"accept json q=0.", LOOP, {POST_MCP, .accept = "application/json;q=0."}, MH_REJECT, 406, NULL, 0, 0},
    {"accept json q=0 space", LOOP, {POST_MCP, .accept = "application/json;q=0 ,text/event-stream"}, MH_MCP_POST,
     0, NULL, 0, 1},
    {"accept json q=0.001", LOOP, {POST_MCP, .accept = "application/json;q=0.001"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"accept json q=0 then q=1", LOOP, {POST_MCP, .accept = "application/json;q=0;q=1"}, MH_MCP_POST, 0, NULL, 1,
     0},
    {"accept json q=1 then q=0", LOOP, {POST_MCP, .accept = "application/json;q=1;q=0"}, MH_REJECT, 406, NULL, 0,
     0},
    {"accept any q=0", LOOP, {POST_MCP, .accept = "*/*;q=0, APPLICATION/JSON ;level=1"}, MH_MCP_POST, 0, NULL, 1,
     0},
    {"accept text/* q=0", LOOP, {POST_MCP, .accept = "text/*;q=0,,application/*"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"accept param only", LOOP, {POST_MCP, .accept = ";q=1, text/event-stream"}, MH_MCP_POST, 0, NULL, 0, 1},
    /* Authorization: shape only */
    {"auth basic", LOOP, {POST_MCP, .authorization = "Basic dXNlcjpwdw=="}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bare word", LOOP, {POST_MCP, .authorization = "Bearer"}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer empty", LOOP, {POST_MCP, .authorization = "Bearer "}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer spaces", LOOP, {POST_MCP, .authorization = "Bearer    "}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer tab", LOOP, {POST_MCP, .authorization = "Bearer\tkey"}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer control", LOOP, {POST_MCP, .authorization = "Bearer ab\x01" "cd"}, MH_REJECT, 401, NULL, 0,
     0},
    {"auth bearer inner space", LOOP, {POST_MCP, .authorization = "Bearer ab cd"}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer del", LOOP, {POST_MCP, .authorization = "Bearer ab\x7f"}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer non-ascii", LOOP, {POST_MCP, .authorization = "Bearer ab\xc3\xa9"}, MH_REJECT, 401, NULL, 0, 0},
    {"auth bearer lower case", LOOP, {POST_MCP, .authorization = "bearer key-1"}, MH_MCP_POST, 0, NULL, 1, 0},
    /* Mcp-Session-Id: ours are 32 lowercase hex digits; anything else is unknown. */
    {"session good", LOOP, {POST_MCP, .session = SID}, MH_MCP_POST, 0, NULL, 1, 0},
    {"session upper case", LOOP, {POST_MCP, .session = "0123456789ABCDEF0123456789abcdef"}, MH_REJECT, 404, NULL,
     0, 0},
    {"session short", LOOP, {POST_MCP, .session = "0123456789abcdef0123456789abcde"}, MH_REJECT, 404, NULL, 0,
     0},
    {"session long", LOOP, {POST_MCP, .session = SID "0"}, MH_REJECT, 404, NULL, 0, 0},
    {"session empty", LOOP, {POST_MCP, .session = ""}, MH_REJECT, 404, NULL, 0, 0},
    {"session non-hex", LOOP, {POST_MCP, .session = "0123456789abcdef0123456789abcdeg"}, MH_REJECT, 404, NULL, 0,
     0},
    /* MCP-Protocol-Version */
    {"protocol 2025-06-18", LOOP, {POST_MCP, .protocol = "2025-06-18"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"protocol 2025-11-25", LOOP, {POST_MCP, .protocol = "2025-11-25"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"protocol 2025-03-26", LOOP, {POST_MCP, .protocol = "2025-03-26"}, MH_MCP_POST, 0, NULL, 1, 0},
    /* Another version on a POST is answered -32022 once the body's id is known (v.unsupported,
     * test_unsupported_version); without a body, at once. */
    {"protocol 2024-11-05", LOOP, {POST_MCP, .protocol = "2024-11-05"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"protocol empty", LOOP, {POST_MCP, .protocol = ""}, MH_MCP_POST, 0, NULL, 1, 0},
    {"protocol with space", LOOP, {POST_MCP, .protocol = "2025-06-18 "}, MH_MCP_POST, 0, NULL, 1, 0},
    {"protocol 2024-11-05 DELETE", LOOP, {.method = "DELETE", .path = "/mcp", .host = HOST, .protocol = "2024-11-05", .session = SID}, MH_REJECT,
     400, NULL, 0, 0},
    {"protocol 2026-07-28", LOOP, {POST_MCP, .protocol = "2026-07-28"}, MH_MCP_POST, 0, NULL, 1, 0},
    {"protocol 2026-07-28 DELETE", LOOP, {.method = "DELETE", .path = "/mcp", .host = HOST, .protocol = "2026-07-28"}, MH_REJECT, 405, "POST", 0,
     0},
    {"protocol 2026-07-28 with a session", LOOP, {POST_MCP, .protocol = "2026-07-28", .session = SID}, MH_REJECT,
     400, NULL, 0, 0},
    /* The 2024-11-05 transport only when FEEDBACK_TRANSPORT=sse */
    {"sse off", LOOP, {.method = "GET", .path = "/sse", .host = HOST}, MH_REJECT, 404, NULL, 0, 0},
    {"messages off", LOOP, {POST_MCP, .path = "/messages"}, MH_REJECT, 404, NULL, 0, 0},
    {"sse get", LOOP_SSE, {.method = "GET", .path = "/sse", .host = HOST}, MH_LEGACY_SSE, 0, NULL, 0, 1},
    {"sse get accept sse", LOOP_SSE, {.method = "GET", .path = "/sse", .host = HOST, .accept = "text/event-stream"},
     MH_LEGACY_SSE, 0, NULL, 0, 1},
    {"sse get accept html", LOOP_SSE, {.method = "GET", .path = "/sse", .host = HOST, .accept = "text/html"},
     MH_REJECT, 406, NULL, 0, 0},
    {"sse post", LOOP_SSE, {POST_MCP, .path = "/sse"}, MH_REJECT, 405, "GET", 0, 0},
    {"sse foreign host", LOOP_SSE, {.method = "GET", .path = "/sse", .host = "evil.example.com"}, MH_REJECT, 403,
     NULL, 0, 0},
    {"messages post", LOOP_SSE, {POST_MCP, .path = "/messages"}, MH_LEGACY_POST, 0, NULL, 1, 0},
    {"messages get", LOOP_SSE, {.method = "GET", .path = "/messages", .host = HOST}, MH_REJECT, 405, "POST", 0,
     0},
    {"messages no content-type", LOOP_SSE, {POST_MCP, .path = "/messages", .content_type = NULL}, MH_REJECT, 415,
     NULL, 0, 0},
    {"legacy keeps /mcp", LOOP_SSE, {POST_MCP}, MH_MCP_POST, 0, NULL, 1, 0},
};
/* clang-format on */

/* The body of a rejection: one JSON-RPC error object whose code and message are v's. */
static void check_body(const struct mh_verdict *v)
{
	char body[512];
	size_t n = mh_error_body(v, body, sizeof body);
	assert_true(n > 0 && n < sizeof body);
	assert_int_equal(strlen(body), n);
	json_error_t je;
	json_t *j = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fail_msg("error body is not JSON (%s): %s", je.text, body);
	assert_string_equal(json_string_value(json_object_get(j, "jsonrpc")), "2.0");
	assert_true(json_is_null(json_object_get(j, "id")));
	const json_t *e = json_object_get(j, "error");
	assert_true(json_is_object(e));
	assert_true(json_is_integer(json_object_get(e, "code")));
	assert_int_equal(json_integer_value(json_object_get(e, "code")), v->rpc_code);
	const char *m = json_string_value(json_object_get(e, "message"));
	assert_non_null(m);
	assert_string_equal(m, v->msg);
	assert_true(m[0] != 0);
	for (const char *p = m; *p; p++)
		assert_true(*p >= 0x20 && *p <= 0x7e && *p != '"' && *p != '\\');
	json_decref(j);
}

static void test_table(void **state)
{
	(void)state;
	struct http_cfg cfgs[3] = {make_cfg(LOOP), make_cfg(LOOP_SSE), make_cfg(REMOTE)};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct mh_verdict v;
		memset(&v, 0x5a, sizeof v); /* mh_classify must fill all of it */
		enum mh_route got = mh_classify(&cfgs[r->cfg], &r->h, &v);
		if (got != r->route || v.route != r->route || v.status != r->status)
			fail_msg("%s: route %d status %u (%s), want route %d status %u", r->name, (int)got, v.status,
				 got == MH_REJECT ? v.msg : "-", (int)r->route, r->status);
		if ((r->allow == NULL) != (v.allow == NULL) || (r->allow && strcmp(r->allow, v.allow)))
			fail_msg("%s: Allow '%s', want '%s'", r->name, v.allow ? v.allow : "(none)",
				 r->allow ? r->allow : "(none)");
		if (r->route == MH_REJECT) {
			assert_true(r->status >= 400 && v.rpc_code < 0);
			check_body(&v);
		} else if (r->route == MH_MCP_POST || r->route == MH_LEGACY_POST || r->route == MH_LEGACY_SSE) {
			if (v.json != r->json || v.sse != r->sse)
				fail_msg("%s: json %d sse %d, want json %d sse %d", r->name, v.json, v.sse, r->json,
					 r->sse);
		}
		if (r->route == MH_MCP_RESUME &&
		    (!v.sse || v.resume_no != strtoull(r->h.last_event_id, NULL, 10) ||
		     v.resume_seq != strtoul(strchr(r->h.last_event_id, '-') + 1, NULL, 10)))
			fail_msg("%s: resume of %llu-%u", r->name, (unsigned long long)v.resume_no, v.resume_seq);
		if (!r->h.authorization)
			assert_null(v.bearer);
	}
}

/* The codes behind the statuses: what a client sees in the body. */
static void test_rpc_codes(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	struct mh_verdict v;
	struct mh_head h = {POST_MCP, .path = "/nope"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
	assert_int_equal(v.rpc_code, -32601);
	h = (struct mh_head){POST_MCP, .content_type = NULL};
	mh_classify(&c, &h, &v);
	assert_int_equal(v.rpc_code, -32600);
	h = (struct mh_head){POST_MCP, .authorization = "Basic x"};
	mh_classify(&c, &h, &v);
	assert_int_equal(v.rpc_code, -32001);
	h = (struct mh_head){POST_MCP, .host = "evil.example.com"};
	mh_classify(&c, &h, &v);
	assert_int_equal(v.rpc_code, -32600);
	assert_non_null(strstr(v.msg, "evil.example.com"));
}

static void test_bearer(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	struct mh_verdict v;
	const char *auth = "Bearer   ak_0123-xyz  ";
	struct mh_head h = {POST_MCP, .authorization = auth};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_ptr_equal(v.bearer, auth + 9);		       /* into the header, leading spaces skipped */
	assert_int_equal(v.bearer_len, strlen("ak_0123-xyz")); /* trailing spaces trimmed */
	assert_memory_equal(v.bearer, "ak_0123-xyz", v.bearer_len);

	/* MH_BEARER_MAX characters are fine, one more is not. */
	char big[8 + MH_BEARER_MAX + 2];
	memcpy(big, "Bearer ", 7);
	memset(big + 7, 'k', MH_BEARER_MAX);
	big[7 + MH_BEARER_MAX] = 0;
	h.authorization = big;
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_ptr_equal(v.bearer, big + 7);
	assert_int_equal(v.bearer_len, MH_BEARER_MAX);
	big[7 + MH_BEARER_MAX] = 'k';
	big[8 + MH_BEARER_MAX] = 0;
	assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
	assert_int_equal(v.status, 401);
	assert_null(v.bearer);
	assert_int_equal(v.bearer_len, 0);
	check_body(&v);
	/* ...but trailing spaces do not count towards it. */
	memset(big + 7, 'k', MH_BEARER_MAX);
	big[7 + MH_BEARER_MAX] = ' ';
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_int_equal(v.bearer_len, MH_BEARER_MAX);

	/* A bearer key and a later refusal: the refusal wins, with nothing pointing anywhere stale. */
	h = (struct mh_head){POST_MCP, .authorization = "Bearer k", .content_type = "text/plain"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
	assert_int_equal(v.status, 415);
}

static void test_session_and_protocol_copied(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	struct mh_verdict v;
	char sid[] = SID;
	struct mh_head h = {POST_MCP, .session = sid, .protocol = "2025-11-25"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_string_equal(v.session, SID);
	assert_ptr_not_equal(v.session, sid); /* a copy: the header may go away */
	assert_string_equal(v.protocol, "2025-11-25");
	h = (struct mh_head){POST_MCP};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_string_equal(v.session, "");
	assert_string_equal(v.protocol, "");
	assert_null(v.bearer);
	/* A long unknown version is kept, bounded, for the -32022 that echoes it. */
	char longv[400];
	memset(longv, '9', sizeof longv - 1);
	longv[sizeof longv - 1] = 0;
	h.protocol = longv;
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_int_equal(v.unsupported, 1);
	assert_int_equal(v.modern, 0);
	assert_int_equal(strlen(v.protocol), sizeof v.protocol - 1);
	/* Without a body to take an id from, it is refused at once, named and bounded. */
	h.method = "DELETE";
	h.session = sid;
	assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
	assert_int_equal(v.status, 400);
	assert_int_equal(v.rpc_code, -32022);
	assert_non_null(strstr(v.msg, "99999999999999999999"));
	assert_null(strstr(v.msg, "999999999999999999999"));
	check_body(&v);
}

/* 2026-07-28: the versions named, the Mcp-Method / Mcp-Name headers passed on for the
 * body check (modern.c), bytes that are not printable ASCII kept out of the echo. */
static void test_unsupported_version(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	struct mh_verdict v;
	struct mh_head h = {POST_MCP, .protocol = "2026-07-28", .mcp_method = "tools/call", .mcp_name = "x"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_int_equal(v.modern, 1);
	assert_int_equal(v.unsupported, 0);
	assert_ptr_equal(v.method_hdr, h.mcp_method);
	assert_ptr_equal(v.name_hdr, h.mcp_name);
	const char *known[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
	for (size_t i = 0; i < 3; i++) {
		h = (struct mh_head){POST_MCP, .protocol = known[i]};
		assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
		assert_int_equal(v.modern + v.unsupported, 0);
	}
	h = (struct mh_head){POST_MCP, .protocol = "v9\x01\"\xff"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	assert_int_equal(v.unsupported, 1);
	assert_string_equal(v.protocol, "v9?\"?");
}

/* Whatever bytes the client puts in Host or Origin, the message stays printable
 * ASCII without quotes or backslashes, and the body stays JSON. */
static void test_error_body_hostile_headers(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	char longh[1000];
	memset(longh, 'h', sizeof longh - 1);
	longh[sizeof longh - 1] = 0;
	const char *hostile[] = {
	    "ev\"il.example.com",
	    "ev\\il.example.com\\",
	    "\"}],\"x\":{\"",
	    "a\r\nSet-Cookie: x=1",
	    "tab\there",
	    "\x01\x02\x1f\x7f",
	    "caf\xc3\xa9.example",
	    "\xff\xfe\x80",
	    "%s%n%x",
	    longh,
	};
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		struct mh_verdict v;
		struct mh_head h = {POST_MCP, .host = hostile[i]};
		assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
		assert_int_equal(v.status, 403);
		assert_non_null(strstr(v.msg, "Host header"));
		check_body(&v);
		h = (struct mh_head){POST_MCP, .origin = hostile[i]};
		assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
		assert_int_equal(v.status, 403);
		check_body(&v);
		h = (struct mh_head){
		    .method = "DELETE", .path = "/mcp", .host = HOST, .session = SID, .protocol = hostile[i]};
		assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
		assert_int_equal(v.status, 400);
		check_body(&v);
	}
	/* A long host is cut, and says so. */
	struct mh_verdict v;
	struct mh_head h = {POST_MCP, .host = longh};
	mh_classify(&c, &h, &v);
	assert_non_null(strstr(v.msg, "..."));
	assert_true(strlen(v.msg) < 200);
}

static void test_error_body_truncated(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	struct mh_verdict v;
	struct mh_head h = {POST_MCP, .host = NULL};
	mh_classify(&c, &h, &v);
	char body[16];
	memset(body, 'x', sizeof body);
	assert_int_equal(mh_error_body(&v, body, sizeof body), sizeof body - 1);
	assert_int_equal(body[sizeof body - 1], 0);
}

/* ---- http_cfg_finish ---- */

static void test_finish_lists(void **state)
{
	(void)state;
	struct http_cfg c = make_cfg(LOOP);
	assert_int_equal(c.port, 8765);
	assert_int_equal(c.nhosts, 3);
	assert_int_equal(c.norigins, 3);
	assert_string_equal(c.hosts[0], "localhost:8765");
	assert_string_equal(c.hosts[1], "127.0.0.1:8765");
	assert_string_equal(c.hosts[2], "[::1]:8765");
	assert_string_equal(c.origins[0], "http://localhost:8765");
	c = make_cfg(REMOTE);
	assert_int_equal(c.nhosts, 0);
	assert_int_equal(c.norigins, 0);
	/* Whether the listener is loopback comes from its bound address, however the
	 * host is spelled; a loopback address other than the usual names is added. */
	static const char *const loop[] = {"localhost", "::1", "127.0.0.5", "0:0:0:0:0:0:0:1", "2130706433"};
	static const size_t want[] = {3, 3, 4, 4, 4};
	for (size_t i = 0; i < 5; i++) {
		memset(&c, 0, sizeof c);
		snprintf(c.host, sizeof c.host, "%s", loop[i]);
		http_cfg_finish(&c, 40000, 1);
		assert_int_equal(c.port, 40000);
		assert_int_equal(c.nhosts, want[i]);
		assert_string_equal(c.hosts[0], "localhost:40000");
	}
	memset(&c, 0, sizeof c);
	snprintf(c.host, sizeof c.host, "127.0.0.2");
	http_cfg_finish(&c, 8765, 1);
	assert_string_equal(c.hosts[3], "127.0.0.2:8765");
	assert_string_equal(c.origins[3], "http://127.0.0.2:8765");
	memset(&c, 0, sizeof c);
	snprintf(c.host, sizeof c.host, "::1");
	http_cfg_finish(&c, 8765, 0); /* not loopback after all: no names */
	assert_int_equal(c.nhosts, 0);
}

/* ---- the F_CONFIG round trip ---- */

/* Field by field (a struct's padding is not part of its value). */
static void assert_cfg_equal(const struct http_cfg *a, const struct http_cfg *b)
{
	assert_int_equal(a->on, b->on);
	assert_int_equal(a->port_explicit, b->port_explicit);
	assert_string_equal(a->host, b->host);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->anonymous, b->anonymous);
	assert_int_equal(a->legacy_sse, b->legacy_sse);
	assert_int_equal(a->nhosts, b->nhosts);
	for (size_t i = 0; i < a->nhosts; i++)
		assert_string_equal(a->hosts[i], b->hosts[i]);
	assert_int_equal(a->norigins, b->norigins);
	for (size_t i = 0; i < a->norigins; i++)
		assert_string_equal(a->origins[i], b->origins[i]);
	assert_int_equal(a->body_max, b->body_max);
	assert_int_equal(a->header_max, b->header_max);
	assert_int_equal(a->conns_max, b->conns_max);
	assert_int_equal(a->sessions_max, b->sessions_max);
	assert_int_equal(a->sessions_per_agent, b->sessions_per_agent);
	assert_int_equal(a->unauth_per_addr, b->unauth_per_addr);
	assert_int_equal(a->idle_s, b->idle_s);
	assert_int_equal(a->request_s, b->request_s);
	assert_int_equal(a->session_idle_s, b->session_idle_s);
	assert_int_equal(a->sse_poll_s, b->sse_poll_s);
}

static struct http_cfg odd_cfg(void)
{
	struct http_cfg c = make_cfg(LOOP);
	c.anonymous = 1;
	c.legacy_sse = 1;
	c.port_explicit = 1;
	c.body_max = 64u << 20;
	c.header_max = 4096;
	c.conns_max = 900;
	c.sessions_max = 1;
	c.idle_s = 3600;
	c.request_s = 1;
	c.session_idle_s = 10;
	c.sse_poll_s = 3600;
	while (c.nhosts < HTTPCFG_LIST_MAX) {
		memset(c.hosts[c.nhosts], 'a' + (int)c.nhosts, HTTPCFG_NAME_MAX);
		c.hosts[c.nhosts][HTTPCFG_NAME_MAX] = 0;
		c.nhosts++;
	}
	return c;
}

static int roundtrip(const struct http_cfg *in, struct http_cfg *out, char *err)
{
	struct cv_arena a, b;
	struct buf enc;
	cv_arena_init(&a, 4096);
	cv_arena_init(&b, 4096);
	buf_init(&enc, 1 << 20);
	struct cv *m = http_cfg_to_cv(in, &a), *d = NULL;
	assert_non_null(m);
	assert_int_equal(cbor_encode(m, &enc, err), 0);
	assert_int_equal(cbor_decode(enc.p, enc.len, &b, &d, err), 0);
	int rc = http_cfg_from_cv(d, out, err);
	buf_free(&enc);
	cv_arena_free(&a);
	cv_arena_free(&b);
	return rc;
}

static void test_cv_roundtrip(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	struct http_cfg cfgs[3] = {make_cfg(LOOP), make_cfg(REMOTE), odd_cfg()};
	for (size_t i = 0; i < 3; i++) {
		struct http_cfg out, want = cfgs[i];
		memset(&out, 0x5a, sizeof out);
		assert_int_equal(roundtrip(&cfgs[i], &out, err), 0);
		/* What the worker does not need stays with the signer: where to bind, and
		 * when idle sessions end (the signer ends them). */
		memset(want.host, 0, sizeof want.host);
		want.port_explicit = 0;
		want.session_idle_s = 0;
		want.sessions_per_agent = 0;
		assert_cfg_equal(&out, &want);
	}
}

static void test_cv_refusals(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct http_cfg c = make_cfg(LOOP), out;
	struct cv *m = http_cfg_to_cv(&c, &a);
	assert_non_null(m);
	assert_int_equal(http_cfg_from_cv(m, &out, err), 0);
	/* Each field out of range in turn: refused, naming the field. */
	static const struct {
		const char *k;
		uint64_t bad;
	} over[] = {{"on", 2},
		    {"anonymous", 2},
		    {"legacy_sse", 7},
		    {"body_max", (64u << 20) + 1},
		    {"header_max", (1u << 20) + 1},
		    {"conns_max", 8193},
		    {"sessions_max", 4097},
		    {"unauth_per_addr", 0},
		    {"unauth_per_addr", 8193},
		    {"idle_s", 3601},
		    {"request_s", 3601},
		    {"sse_poll_s", 3601},
		    {"request_s", 0},
		    {"port", 65536},
		    {"port", UINT64_MAX}};
	for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
		struct cv *v = (struct cv *)cv_get(m, over[i].k);
		assert_non_null(v);
		struct cv keep = *v;
		cv_set_uint(v, over[i].bad);
		assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
		assert_non_null(strstr(err, over[i].k));
		cv_set_int(v, -1);
		assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
		*v = keep;
		assert_int_equal(http_cfg_from_cv(m, &out, err), 0);
	}
	/* hosts: not a list, too long a list, an empty or over-long name, a name not text */
	struct cv *hosts = (struct cv *)cv_get(m, "hosts"), keep = *hosts;
	cv_set_uint(hosts, 1);
	assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "hosts"));
	struct cv *big = cv_array(&a, HTTPCFG_LIST_MAX + 1);
	for (size_t i = 0; i < HTTPCFG_LIST_MAX + 1; i++)
		assert_int_equal(cv_set_text(&a, &big->items[i], "h", 1), 0);
	*hosts = *big;
	assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
	big->n = HTTPCFG_LIST_MAX;
	*hosts = *big;
	assert_int_equal(http_cfg_from_cv(m, &out, err), 0);
	assert_int_equal(out.nhosts, HTTPCFG_LIST_MAX);
	char name[HTTPCFG_NAME_MAX + 2];
	memset(name, 'n', sizeof name);
	assert_int_equal(cv_set_text(&a, &big->items[3], name, HTTPCFG_NAME_MAX), 0);
	*hosts = *big;
	assert_int_equal(http_cfg_from_cv(m, &out, err), 0);
	assert_int_equal(strlen(out.hosts[3]), HTTPCFG_NAME_MAX);
	assert_int_equal(cv_set_text(&a, &big->items[3], name, HTTPCFG_NAME_MAX + 1), 0);
	*hosts = *big;
	assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "hosts[3]"));
	assert_int_equal(cv_set_text(&a, &big->items[3], "", 0), 0);
	assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
	assert_int_equal(cv_set_bytes(&a, &big->items[3], (const uint8_t *)"h", 1), 0);
	assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
	*hosts = keep;
	assert_int_equal(http_cfg_from_cv(m, &out, err), 0);
	/* Not a map at all; a map missing a key. */
	struct cv n;
	memset(&n, 0, sizeof n);
	cv_set_uint(&n, 0);
	assert_int_equal(http_cfg_from_cv(&n, &out, err), AS_ECORRUPT);
	m->n--; /* drops the last pair: "origins" */
	assert_int_equal(http_cfg_from_cv(m, &out, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "origins"));
	cv_arena_free(&a);
}

/* ---- http_cfg_from_env ---- */

static const char *const env_names[] = {
    "FEEDBACK_SSE_HOST",
    "FEEDBACK_SSE_PORT",
    "FEEDBACK_TRANSPORT",
    "FEEDBACK_ALLOW_ANONYMOUS",
    "ASSENT_HTTP_ALLOWED_HOSTS",
    "ASSENT_HTTP_ALLOWED_ORIGINS",
    "ASSENT_HTTP_MAX_BODY",
    "ASSENT_HTTP_MAX_HEADER",
    "ASSENT_HTTP_MAX_CONNECTIONS",
    "ASSENT_HTTP_MAX_SESSIONS",
    "ASSENT_HTTP_IDLE_SECONDS",
    "ASSENT_HTTP_SESSION_IDLE_SECONDS",
    "ASSENT_HTTP_SSE_POLL_SECONDS",
    "ASSENT_HTTP_MAX_SESSIONS_PER_AGENT",
    "ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS",
};

static int env_clear(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
		unsetenv(env_names[i]);
	return 0;
}

/* Refused with AS_EINVAL and a message naming the variable (and the value, when given). */
static void refused(const char *name, const char *val, const char *says)
{
	struct http_cfg c;
	char err[AS_ERRLEN] = "";
	setenv(name, val, 1);
	int rc = http_cfg_from_env(&c, err);
	if (rc != AS_EINVAL || !strstr(err, name) || (says && !strstr(err, says)))
		fail_msg("%s=%s: rc %d, err '%s'", name, val, rc, err);
	unsetenv(name);
}

static struct http_cfg from_env_ok(void)
{
	struct http_cfg c;
	char err[AS_ERRLEN] = "";
	int rc = http_cfg_from_env(&c, err);
	if (rc != 0)
		fail_msg("http_cfg_from_env: %d %s", rc, err);
	return c;
}

static void test_env_defaults(void **state)
{
	(void)state;
	struct http_cfg c = from_env_ok();
	assert_int_equal(c.on, 1);
	assert_int_equal(c.port_explicit, 0);
	assert_string_equal(c.host, "127.0.0.1");
	assert_int_equal(c.port, 8765);
	assert_int_equal(c.anonymous, 0);
	assert_int_equal(c.legacy_sse, 0);
	assert_int_equal(c.nhosts, 0);
	assert_int_equal(c.norigins, 0);
	assert_int_equal(c.body_max, 4u << 20);
	assert_int_equal(c.header_max, 32u << 10);
	assert_int_equal(c.conns_max, 128);
	assert_int_equal(c.sessions_max, 256);
	assert_int_equal(c.sessions_per_agent, 32);
	assert_int_equal(c.unauth_per_addr, 16);
	assert_int_equal(c.idle_s, 30);
	assert_int_equal(c.session_idle_s, 3600);
	/* Empty values are unset ones. */
	for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
		setenv(env_names[i], "", 1);
	struct http_cfg d = from_env_ok();
	assert_cfg_equal(&c, &d);
}

static void test_env_port(void **state)
{
	(void)state;
	setenv("FEEDBACK_SSE_PORT", "off", 1);
	struct http_cfg c = from_env_ok();
	assert_int_equal(c.on, 0);
	setenv("FEEDBACK_SSE_PORT", "none", 1);
	c = from_env_ok();
	assert_int_equal(c.on, 0);
	setenv("FEEDBACK_SSE_PORT", "0", 1);
	c = from_env_ok();
	assert_int_equal(c.on, 1);
	assert_int_equal(c.port, 0);
	assert_int_equal(c.port_explicit, 1);
	setenv("FEEDBACK_SSE_PORT", "65535", 1);
	c = from_env_ok();
	assert_int_equal(c.port, 65535);
	refused("FEEDBACK_SSE_PORT", "70000", "70000");
	refused("FEEDBACK_SSE_PORT", "65536", "65536");
	refused("FEEDBACK_SSE_PORT", "-1", "-1");
	refused("FEEDBACK_SSE_PORT", "80x", "80x");
	refused("FEEDBACK_SSE_PORT", "OFF", "OFF");
	refused("FEEDBACK_SSE_PORT", " 80", NULL);
}

static void test_env_host_and_transport(void **state)
{
	(void)state;
	setenv("FEEDBACK_SSE_HOST", "0.0.0.0", 1);
	setenv("FEEDBACK_TRANSPORT", "sse", 1);
	struct http_cfg c = from_env_ok();
	assert_string_equal(c.host, "0.0.0.0");
	assert_int_equal(c.legacy_sse, 1);
	setenv("FEEDBACK_TRANSPORT", "stdio", 1);
	c = from_env_ok();
	assert_int_equal(c.legacy_sse, 0);
	char h[80];
	memset(h, '1', sizeof h);
	h[63] = 0;
	setenv("FEEDBACK_SSE_HOST", h, 1);
	c = from_env_ok();
	assert_string_equal(c.host, h);
	h[63] = '1';
	h[64] = 0;
	refused("FEEDBACK_SSE_HOST", h, "too long");
}

static void test_env_anonymous(void **state)
{
	(void)state;
	static const struct {
		const char *v;
		int want;
	} ok[] = {{"true", 1}, {"1", 1}, {"false", 0}, {"0", 0}};
	for (size_t i = 0; i < 4; i++) {
		setenv("FEEDBACK_ALLOW_ANONYMOUS", ok[i].v, 1);
		assert_int_equal(from_env_ok().anonymous, ok[i].want);
	}
	refused("FEEDBACK_ALLOW_ANONYMOUS", "maybe", "maybe");
	refused("FEEDBACK_ALLOW_ANONYMOUS", "yes", "yes");
	refused("FEEDBACK_ALLOW_ANONYMOUS", "TRUE", "TRUE");
}

static void test_env_lists(void **state)
{
	(void)state;
	setenv("ASSENT_HTTP_ALLOWED_HOSTS", "a.example:8765,b.example", 1);
	setenv("ASSENT_HTTP_ALLOWED_ORIGINS", "https://a.example,", 1); /* a trailing comma is harmless */
	struct http_cfg c = from_env_ok();
	assert_int_equal(c.nhosts, 2);
	assert_string_equal(c.hosts[0], "a.example:8765");
	assert_string_equal(c.hosts[1], "b.example");
	assert_int_equal(c.norigins, 1);
	assert_string_equal(c.origins[0], "https://a.example");
	/* On loopback, the extras come first and the loopback names follow. */
	http_cfg_finish(&c, 8765, 1);
	assert_int_equal(c.nhosts, 5);
	assert_string_equal(c.hosts[2], "localhost:8765");
	struct mh_verdict v;
	struct mh_head h = {POST_MCP, .host = "b.example", .origin = "https://a.example"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	h.host = "c.example";
	assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
	unsetenv("ASSENT_HTTP_ALLOWED_ORIGINS");

	/* A remote listener with a list checks Host against it alone. */
	setenv("FEEDBACK_SSE_HOST", "192.0.2.10", 1);
	c = from_env_ok();
	http_cfg_finish(&c, 8765, 0);
	assert_int_equal(c.nhosts, 2);
	h = (struct mh_head){POST_MCP, .host = "a.example:8765"};
	assert_int_equal(mh_classify(&c, &h, &v), MH_MCP_POST);
	h.host = HOST;
	assert_int_equal(mh_classify(&c, &h, &v), MH_REJECT);
	assert_int_equal(v.status, 403);
	unsetenv("FEEDBACK_SSE_HOST");

	/* HTTPCFG_ENV_MAX entries are fine, one more is not; the loopback names still fit. */
	char list[HTTPCFG_ENV_MAX * 4 + 8] = "";
	size_t n = 0;
	for (int i = 0; i < HTTPCFG_ENV_MAX; i++)
		n += (size_t)snprintf(list + n, sizeof list - n, "%sh%d", i ? "," : "", i);
	setenv("ASSENT_HTTP_ALLOWED_HOSTS", list, 1);
	c = from_env_ok();
	assert_int_equal(c.nhosts, HTTPCFG_ENV_MAX);
	http_cfg_finish(&c, 8765, 1);
	assert_int_equal(c.nhosts, HTTPCFG_ENV_MAX + 3);
	snprintf(list + n, sizeof list - n, ",hx");
	refused("ASSENT_HTTP_ALLOWED_HOSTS", list, "at most");
	/* A name of HTTPCFG_NAME_MAX characters is fine, one more is not. */
	char name[HTTPCFG_NAME_MAX + 2];
	memset(name, 'n', sizeof name);
	name[HTTPCFG_NAME_MAX] = 0;
	setenv("ASSENT_HTTP_ALLOWED_HOSTS", name, 1);
	assert_string_equal(from_env_ok().hosts[0], name);
	name[HTTPCFG_NAME_MAX] = 'n';
	name[HTTPCFG_NAME_MAX + 1] = 0;
	refused("ASSENT_HTTP_ALLOWED_HOSTS", name, "at most");
	refused("ASSENT_HTTP_ALLOWED_HOSTS", "a.example,b example", "entry 2 contains a space");
	refused("ASSENT_HTTP_ALLOWED_HOSTS", "a\tb", "control");
	refused("ASSENT_HTTP_ALLOWED_HOSTS", "a\x7f", "control");
	refused("ASSENT_HTTP_ALLOWED_HOSTS", "a,,b", "at most");
	refused("ASSENT_HTTP_ALLOWED_HOSTS", ",a", "at most");
	refused("ASSENT_HTTP_ALLOWED_ORIGINS", "http://a b", "space");
}

static void test_env_limits(void **state)
{
	(void)state;
	static const struct {
		const char *name, *lo, *hi, *below, *above;
	} lim[] = {
	    {"ASSENT_HTTP_MAX_BODY", "1024", "67108864", "1023", "67108865"},
	    {"ASSENT_HTTP_MAX_HEADER", "4096", "1048576", "4095", "1048577"},
	    {"ASSENT_HTTP_MAX_CONNECTIONS", "1", "8192", "0", "8193"},
	    {"ASSENT_HTTP_MAX_SESSIONS", "1", "4096", "0", "4097"},
	    {"ASSENT_HTTP_IDLE_SECONDS", "1", "3600", "0", "3601"},
	    {"ASSENT_HTTP_SESSION_IDLE_SECONDS", "10", "604800", "9", "604801"},
	    {"ASSENT_HTTP_SSE_POLL_SECONDS", "5", "3600", "4", "3601"},
	};
	for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
		setenv(lim[i].name, lim[i].lo, 1);
		from_env_ok();
		setenv(lim[i].name, lim[i].hi, 1);
		struct http_cfg c = from_env_ok();
		refused(lim[i].name, lim[i].below, lim[i].below);
		refused(lim[i].name, lim[i].above, lim[i].above);
		refused(lim[i].name, "12k", "12k");
		if (i == 0)
			assert_int_equal(c.body_max, 64u << 20);
		if (i == 5)
			assert_int_equal(c.session_idle_s, 7 * 86400);
		if (i == 6)
			assert_int_equal(c.sse_poll_s, 3600);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_rpc_codes),
	    cmocka_unit_test(test_bearer),
	    cmocka_unit_test(test_session_and_protocol_copied),
	    cmocka_unit_test(test_unsupported_version),
	    cmocka_unit_test(test_error_body_hostile_headers),
	    cmocka_unit_test(test_error_body_truncated),
	    cmocka_unit_test(test_finish_lists),
	    cmocka_unit_test(test_cv_roundtrip),
	    cmocka_unit_test(test_cv_refusals),
#define E_(f) cmocka_unit_test_setup_teardown(f, env_clear, env_clear)
	    E_(test_env_defaults),
	    E_(test_env_port),
	    E_(test_env_host_and_transport),
	    E_(test_env_anonymous),
	    E_(test_env_lists),
	    E_(test_env_limits),
#undef E_
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
