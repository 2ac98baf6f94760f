/* Fuzz target: the agent listener's request classifier (gateway/worker/mcp/mhttp.c) and the
 * listener configuration's CBOR form (gateway/proto/httpcfg.c). Input: two bytes whose low
 * nine bits say which of method, path, Host, Origin, Content-Type, Accept,
 * Mcp-Session-Id, MCP-Protocol-Version and Authorization are present, then those
 * values in that order separated by NUL bytes. The whole input is also decoded as
 * CBOR and, when it is a configuration, classified under too.
 * Properties (abort when violated):
 *   - the route is a valid one, and what it promises holds (method, path, media
 *     types, a session for DELETE, the legacy endpoints only when configured);
 *   - a rejection has a status of 400, 401, 403, 404, 405, 406 or 415, Allow exactly
 *     on 405, a JSON-RPC code, and a message of printable ASCII without '"' or '\';
 *     its error body is a JSON-RPC error object with that code and message;
 *   - a bearer key points into the Authorization value, 1 to MH_BEARER_MAX bytes,
 *     none a space, control or non-ASCII byte; a session is "" or 32 lowercase hex;
 *   - with a Host list, a request whose Host is not on it is never routed (DNS
 *     rebinding), nor one with an Origin not on its list; without a Host list the
 *     Host header changes nothing;
 *   - the verdict depends on nothing but its inputs (not on what v held before);
 *   - a configuration http_cfg_from_cv accepts goes through http_cfg_to_cv, CBOR and
 *     http_cfg_from_cv again to the same configuration; a refusal says why. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "include/assent/err.h"
#include "common/cbor.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/worker/mcp/mhttp.h"
#include "gateway/worker/mcp/sseresume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "mhttp: property violated: %s\n", why);
	if (detail)
		fprintf(stderr, "mhttp: detail: %.*s\n", 2048, detail);
	fprintf(stderr, "input (%zu bytes): %.*s\n", cur_size, cur_size > 2048 ? 2048 : (int)cur_size,
		(const char *)cur_data);
	abort();
}

#define NFIELDS 10

/* The header fields as libmicrohttpd would hand them over: each its own
 * NUL-terminated allocation, so that AddressSanitizer sees a read past its end. */
static void split(const uint8_t *data, size_t size, char *f[NFIELDS])
{
	unsigned mask = size >= 2 ? data[0] | (unsigned)data[1] << 8 : 0;
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

static int is_hex32(const char *s)
{
	return strlen(s) == MH_SESSION_LEN && strspn(s, "0123456789abcdef") == MH_SESSION_LEN;
}

static int listed(const char *x, const char (*list)[HTTPCFG_NAME_MAX + 1], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(x, list[i]) == 0)
			return 1;
	return 0;
}

static int media_json(const char *ct)
{
	return ct && strncasecmp(ct, "application/json", 16) == 0 &&
	       (ct[16] == 0 || ct[16] == ';' || ct[16] == ' ' || ct[16] == '\t');
}

static void check_body(const struct mh_verdict *v)
{
	char body[512];
	size_t n = mh_error_body(v, body, sizeof body);
	if (n == 0 || n >= sizeof body || strlen(body) != n)
		fail("mh_error_body length is wrong", body);
	json_error_t je;
	json_t *j = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j))
		fail("the error body is not a JSON object", body);
	const json_t *e = json_object_get(j, "error");
	const char *m = json_string_value(json_object_get(e, "message"));
	if (!json_is_integer(json_object_get(e, "code")) ||
	    json_integer_value(json_object_get(e, "code")) != v->rpc_code || !m || strcmp(m, v->msg) ||
	    !json_is_null(json_object_get(j, "id")) ||
	    strcmp(json_string_value(json_object_get(j, "jsonrpc")) ? json_string_value(json_object_get(j, "jsonrpc"))
								    : "",
		   "2.0"))
		fail("the error body does not carry the verdict's code and message", body);
	json_decref(j);
	/* Any room at all: a NUL-terminated prefix, and the length written. */
	char small[64];
	size_t cap = 1 + v->msg[0] % sizeof small;
	n = mh_error_body(v, small, cap);
	if (n >= cap || small[n] != 0 || strlen(small) != n)
		fail("mh_error_body overran or did not terminate a small buffer", small);
}

static void check_verdict(const struct http_cfg *c, const struct mh_head *h, const struct mh_verdict *v)
{
	const char *m = h->method ? h->method : "", *p = h->path ? h->path : "";
	if (v->route < MH_REJECT || v->route > MH_REVIEWERS)
		fail("route out of range", NULL);
	if (!memchr(v->session, 0, sizeof v->session) || (v->session[0] && !is_hex32(v->session)))
		fail("session is not empty or 32 lowercase hex", NULL);
	if (v->session[0] && (!h->session || strcmp(v->session, h->session)))
		fail("session is not the header's", v->session);
	/* The protocol header is kept cut and printable, for the -32022 that echoes it. */
	char want[sizeof v->protocol] = "";
	for (size_t i = 0; h->protocol && h->protocol[i] && i + 1 < sizeof want; i++)
		want[i] =
		    (unsigned char)h->protocol[i] < 0x20 || (unsigned char)h->protocol[i] > 0x7e ? '?' : h->protocol[i];
	if (!memchr(v->protocol, 0, sizeof v->protocol) || (v->protocol[0] && strcmp(v->protocol, want)))
		fail("protocol is not the header's", NULL);
	if (v->bearer) {
		const char *a = h->authorization;
		if (!a || v->bearer < a + 7 || v->bearer_len == 0 || v->bearer_len > MH_BEARER_MAX ||
		    v->bearer + v->bearer_len > a + strlen(a))
			fail("bearer does not point inside Authorization, or has a bad length", a);
		for (size_t i = 0; i < v->bearer_len; i++)
			if ((unsigned char)v->bearer[i] <= 0x20 || (unsigned char)v->bearer[i] >= 0x7f)
				fail("bearer has a space, control or non-ASCII byte", a);
	} else if (v->bearer_len) {
		fail("bearer_len without bearer", NULL);
	}
	if (v->route == MH_REJECT) {
		static const unsigned ok[] = {400, 401, 403, 404, 405, 406, 415};
		size_t i = 0;
		while (i < sizeof ok / sizeof ok[0] && ok[i] != v->status)
			i++;
		if (i == sizeof ok / sizeof ok[0])
			fail("rejected with an unexpected status", v->msg);
		if ((v->status == 405) != (v->allow != NULL))
			fail("Allow is not set exactly on 405", v->msg);
		if (v->allow && strcmp(v->allow, "GET, HEAD") && strcmp(v->allow, "POST, DELETE") &&
		    strcmp(v->allow, "GET") && strcmp(v->allow, "POST"))
			fail("Allow is not one of ours", v->allow);
		if (v->rpc_code != -32600 && v->rpc_code != -32601 && v->rpc_code != -32700 && v->rpc_code != -32001 &&
		    v->rpc_code != -32022)
			fail("unexpected JSON-RPC code", v->msg);
		if (!memchr(v->msg, 0, sizeof v->msg) || !v->msg[0])
			fail("message empty or not terminated", NULL);
		for (const char *q = v->msg; *q; q++)
			if (*q < 0x20 || *q > 0x7e || *q == '"' || *q == '\\')
				fail("message not printable ASCII without quotes and backslashes", v->msg);
		check_body(v);
		return;
	}
	/* Routed. */
	if (v->allow)
		fail("a routed request has an Allow header", NULL);
	if (c->nhosts && (!h->host || !listed(h->host, c->hosts, c->nhosts)))
		fail("routed with a Host not on the list (DNS rebinding)", h->host);
	if (h->origin && !listed(h->origin, c->origins, c->norigins))
		fail("routed with an Origin not on the list", h->origin);
	/* The reviewers' endpoints are only redirected (after the Host, Origin and reviewer-
	 * credential checks): nothing else of the request is looked at. */
	if (v->route == MH_REVIEWERS) {
		if (strcmp(p, "/pending") && strcmp(p, "/feedback/submit") && strcmp(p, "/admin/clear-stale-sessions"))
			fail("a redirect to the reviewer listener for another path", p);
		if ((h->cookie && strstr(h->cookie, "assent_session=")) || h->identity)
			fail("a reviewer's credential redirected rather than refused", NULL);
		return;
	}
	/* /health looks at nothing but Host and Origin; the MCP endpoints at all of it. */
	if (v->route != MH_HEALTH && h->authorization && !v->bearer)
		fail("routed with an Authorization header but no bearer", h->authorization);
	if (v->route != MH_HEALTH && h->session && !v->session[0])
		fail("routed with a session header but no session", h->session);
	/* An unknown version is routed only as a POST, marked for the -32022 its id will carry. */
	int known = h->protocol && (!strcmp(h->protocol, "2025-11-25") || !strcmp(h->protocol, "2025-06-18") ||
				    !strcmp(h->protocol, "2025-03-26"));
	int modern = h->protocol && !strcmp(h->protocol, "2026-07-28");
	if (v->route != MH_HEALTH && h->protocol &&
	    (v->modern != modern || v->unsupported != (!known && !modern) || (v->unsupported && strcmp(m, "POST"))))
		fail("routed with an unknown protocol version, or marked wrongly", h->protocol);
	if (v->route != MH_HEALTH && modern && v->session[0])
		fail("a 2026-07-28 request routed with a session", NULL);
	switch (v->route) {
	case MH_HEALTH:
		if (strcmp(p, "/health") || (strcmp(m, "GET") && strcmp(m, "HEAD")))
			fail("health for something else than GET /health", p);
		break;
	case MH_MCP_POST:
	case MH_LEGACY_POST:
		if (strcmp(m, "POST") || strcmp(p, v->route == MH_MCP_POST ? "/mcp" : "/messages") ||
		    (v->route == MH_LEGACY_POST && !c->legacy_sse))
			fail("a POST route for something else", p);
		if (!media_json(h->content_type))
			fail("a POST route without Content-Type application/json", h->content_type);
		if (!v->json && !v->sse)
			fail("a POST route the client accepts no answer to", h->accept);
		if (!h->accept && (!v->json || v->sse))
			fail("no Accept should mean JSON only", NULL);
		break;
	case MH_MCP_DELETE:
		if (strcmp(m, "DELETE") || strcmp(p, "/mcp") || !is_hex32(v->session))
			fail("DELETE routed without DELETE /mcp and a session", p);
		break;
	case MH_MCP_RESUME: {
		/* a resume names its session and an id of our shape; nothing else routes a GET /mcp */
		uint64_t no = 0;
		uint32_t seq = 0;
		if (strcmp(m, "GET") || strcmp(p, "/mcp") || !is_hex32(v->session) || !v->sse || !h->last_event_id ||
		    sse_id_parse(h->last_event_id, &no, &seq) != 0 || no != v->resume_no || seq != v->resume_seq)
			fail("a resume routed without GET /mcp, a session and a well-formed Last-Event-ID",
			     h->last_event_id);
		char back[SSE_ID_MAX + 1];
		snprintf(back, sizeof back, "%llu-%u", (unsigned long long)no, (unsigned)seq);
		if (strcmp(back, h->last_event_id))
			fail("a Last-Event-ID that is not the one way of writing its numbers", h->last_event_id);
		break;
	}
	case MH_LEGACY_SSE:
		if (!c->legacy_sse || strcmp(m, "GET") || strcmp(p, "/sse") || !v->sse)
			fail("legacy SSE for something else", p);
		break;
	default:
		fail("unreachable route", NULL);
	}
}

/* Classify twice over different garbage: the verdict must not depend on it. */
static void classify(const struct http_cfg *c, const struct mh_head *h, struct mh_verdict *v)
{
	struct mh_verdict w;
	memset(v, 0xa5, sizeof *v);
	memset(&w, 0x00, sizeof w);
	enum mh_route r = mh_classify(c, h, v);
	if (r != v->route)
		fail("mh_classify returned another route than it filled in", NULL);
	mh_classify(c, h, &w);
	if (memcmp(v, &w, sizeof w) != 0)
		fail("the verdict depends on what it held before", NULL);
	check_verdict(c, h, v);
}

static int same_verdict(const struct mh_verdict *a, const struct mh_verdict *b)
{
	return a->route == b->route && a->status == b->status && a->rpc_code == b->rpc_code && !strcmp(a->msg, b->msg);
}

static struct http_cfg base_cfg(const char *host, int legacy)
{
	struct http_cfg c;
	memset(&c, 0, sizeof c);
	c.on = 1;
	snprintf(c.host, sizeof c.host, "%s", host);
	c.legacy_sse = legacy;
	c.body_max = 4u << 20;
	c.header_max = 32u << 10;
	c.conns_max = 128;
	c.sessions_max = 256;
	c.unauth_per_addr = 16;
	c.idle_s = 30;
	c.request_s = 30;
	c.session_idle_s = 3600;
	return c;
}

static struct http_cfg cfg_loop, cfg_loop_sse, cfg_remote, cfg_remote_list;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cfg_loop = base_cfg("127.0.0.1", 0);
	http_cfg_finish(&cfg_loop, 8765, 1);
	cfg_loop_sse = base_cfg("127.0.0.1", 1);
	http_cfg_finish(&cfg_loop_sse, 8765, 1);
	cfg_remote = base_cfg("192.0.2.10", 0);
	http_cfg_finish(&cfg_remote, 8765, 0);
	cfg_remote_list = base_cfg("192.0.2.10", 1);
	snprintf(cfg_remote_list.hosts[0], sizeof cfg_remote_list.hosts[0], "a.example:8765");
	snprintf(cfg_remote_list.origins[0], sizeof cfg_remote_list.origins[0], "https://a.example");
	cfg_remote_list.nhosts = cfg_remote_list.norigins = 1;
	http_cfg_finish(&cfg_remote_list, 8765, 0);
	if (cfg_loop.nhosts != 3 || cfg_remote.nhosts != 0 || cfg_remote_list.nhosts != 1)
		abort();
	return 0;
}

static void check_requests(const struct mh_head *h)
{
	struct mh_verdict loop, sse, remote, list, anyhost;
	classify(&cfg_loop, h, &loop);
	classify(&cfg_loop_sse, h, &sse);
	classify(&cfg_remote, h, &remote);
	classify(&cfg_remote_list, h, &list);
	const char *p = h->path ? h->path : "";
	/* FEEDBACK_TRANSPORT=sse changes /sse and /messages only. */
	if (strcmp(p, "/sse") && strcmp(p, "/messages") && !same_verdict(&loop, &sse))
		fail("legacy_sse changed the verdict on another path", p);
	/* Without a Host list, Host does not matter. */
	struct mh_head other = *h;
	other.host = h->host ? NULL : "evil.example.com";
	classify(&cfg_remote, &other, &anyhost);
	if (!same_verdict(&remote, &anyhost))
		fail("without a Host list, the Host header changed the verdict", h->host);
	/* With one, a rebinding name is refused whatever else the request says. */
	if (loop.route != MH_REJECT && !(h->host && listed(h->host, cfg_loop.hosts, cfg_loop.nhosts)))
		fail("loopback: routed with a foreign Host", h->host);
}

static int cfg_equal(const struct http_cfg *a, const struct http_cfg *b)
{
	if (a->on != b->on || a->port_explicit != b->port_explicit || strcmp(a->host, b->host) || a->port != b->port ||
	    a->anonymous != b->anonymous || a->legacy_sse != b->legacy_sse || a->nhosts != b->nhosts ||
	    a->norigins != b->norigins || a->body_max != b->body_max || a->header_max != b->header_max ||
	    a->conns_max != b->conns_max || a->sessions_max != b->sessions_max || a->idle_s != b->idle_s ||
	    a->request_s != b->request_s || a->unauth_per_addr != b->unauth_per_addr ||
	    a->session_idle_s != b->session_idle_s || a->sse_poll_s != b->sse_poll_s)
		return 0;
	for (size_t i = 0; i < a->nhosts; i++)
		if (strcmp(a->hosts[i], b->hosts[i]))
			return 0;
	for (size_t i = 0; i < a->norigins; i++)
		if (strcmp(a->origins[i], b->origins[i]))
			return 0;
	return 1;
}

static void check_err(const char *err, const char *what)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 0 || (err[0] == 'X' && err[1] == 'X'))
		fail("a failure left no error message", what);
}

/* A name with a NUL byte would be written back cut short at the NUL: http_cfg_from_cv
 * must refuse it (it once did not). */
static int has_nul_name(const struct cv *m)
{
	static const char *const keys[] = {"hosts", "origins"};
	for (size_t k = 0; k < 2; k++) {
		const struct cv *l = cv_get(m, keys[k]);
		for (size_t i = 0; l && i < l->n; i++)
			if (l->items[i].n && memchr(l->items[i].s, 0, l->items[i].n))
				return 1;
	}
	return 0;
}

/* The input as an F_CONFIG body. Returns 1 and fills c when it is one. */
static int check_config(const uint8_t *data, size_t size, struct http_cfg *c)
{
	struct cv_arena a, b;
	struct cv *v = NULL, *m, *d = NULL;
	struct buf enc;
	char err[AS_ERRLEN];
	int ok = 0;
	cv_arena_init(&a, 1 << 14);
	cv_arena_init(&b, 1 << 14);
	buf_init(&enc, 1 << 20);
	if (cbor_decode(data, size, &a, &v, err) != 0)
		goto out;
	memset(err, 'X', sizeof err);
	if (http_cfg_from_cv(v, c, err) != 0) {
		check_err(err, "http_cfg_from_cv");
		goto out;
	}
	if (c->nhosts > HTTPCFG_LIST_MAX || c->norigins > HTTPCFG_LIST_MAX || c->port > 65535)
		fail("http_cfg_from_cv accepted a list or port over its bound", NULL);
	for (size_t i = 0; i < c->nhosts; i++)
		if (!memchr(c->hosts[i], 0, sizeof c->hosts[i]))
			fail("a host name is not terminated", NULL);
	for (size_t i = 0; i < c->norigins; i++)
		if (!memchr(c->origins[i], 0, sizeof c->origins[i]))
			fail("an origin is not terminated", NULL);
	ok = 1;
	if (has_nul_name(v))
		fail("http_cfg_from_cv accepted a name with a NUL byte", NULL);
	memset(err, 'X', sizeof err);
	struct http_cfg again;
	if (!(m = http_cfg_to_cv(c, &b)) || cbor_encode(m, &enc, err) != 0)
		fail("an accepted configuration does not encode", err);
	cv_arena_reset(&a);
	if (cbor_decode(enc.p, enc.len, &a, &d, err) != 0)
		fail("an encoded configuration does not decode", err);
	if (http_cfg_from_cv(d, &again, err) != 0)
		fail("an encoded configuration is refused", err);
	if (!cfg_equal(c, &again))
		fail("a configuration does not survive the round trip", NULL);
out:
	buf_free(&enc);
	cv_arena_free(&a);
	cv_arena_free(&b);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cur_data = data;
	cur_size = size;
	if (!cfg_loop.nhosts)
		LLVMFuzzerInitialize(NULL, NULL);
	char *f[NFIELDS];
	split(data, size, f);
	struct mh_head h = {.method = f[0],
			    .path = f[1],
			    .host = f[2],
			    .origin = f[3],
			    .content_type = f[4],
			    .accept = f[5],
			    .session = f[6],
			    .protocol = f[7],
			    .authorization = f[8],
			    .last_event_id = f[9]};
	check_requests(&h);
	struct http_cfg c;
	if (check_config(data, size, &c)) {
		struct mh_verdict v;
		classify(&c, &h, &v);
	}
	for (int k = 0; k < NFIELDS; k++)
		free(f[k]);
	return 0;
}
