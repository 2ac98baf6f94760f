/* Unit tests for gateway/worker/upstream/uhttp*.c (the upstream Streamable HTTP client):
 * the response parser fed every response at every split (one byte at a time up to whole),
 * which must give the same messages each way; JSON bodies and batches, chunked bodies,
 * SSE (CR LF, LF, CR, multi-line data, comments, ids, other event types, priming events),
 * 1xx, bodies that end at the close; each bound and each malformed answer refused with
 * what was wrong; and the client over a socketpair in plain HTTP: the request it writes,
 * the session it keeps, a 404 as a lost session, Connection: close and a server's close
 * as a closed connection, and a configuration whose refusals never show a credential. */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "gateway/worker/upstream/uhttp.h"

/* ---- the parser ---- */

struct got {
	char msgs[8192]; /* each message, then '|' */
	size_t len;
	int heads;
};

static int got_msg(void *arg, const char *json, size_t n)
{
	struct got *g = arg;
	assert_true(g->len + n + 1 < sizeof g->msgs);
	memcpy(g->msgs + g->len, json, n);
	g->len += n;
	g->msgs[g->len++] = '|';
	g->msgs[g->len] = 0;
	return 0;
}

static int got_head(void *arg, const struct uhttp_resp *r)
{
	struct got *g = arg;
	assert_true(r->status >= 200);
	g->heads++;
	return 0;
}

/* Feeds text in pieces of step bytes; returns the last result (1 complete, 0 more, <0). */
static int feed_split(struct uhttp_resp *r, const char *text, size_t step, int eof, struct got *g, char *err)
{
	size_t n = strlen(text), off = 0;
	memset(g, 0, sizeof *g);
	int rc = 0;
	while (off < n) {
		size_t k = n - off < step ? n - off : step, used;
		rc = uhttp_resp_feed(r, (const uint8_t *)text + off, k, &used, got_head, got_msg, g, err);
		assert_true(used <= k);
		off += used;
		if (rc != 0)
			break;
		assert_int_equal(used, k);
	}
	if (rc == 0 && eof)
		rc = uhttp_resp_eof(r, got_msg, g, err);
	return rc;
}

/* The same response at every split: the same result, messages and session. */
static void expect_all_splits(const char *text, int eof, size_t body_max, int want_rc, int status, const char *msgs,
			      const char *session, const char *err_has)
{
	size_t n = strlen(text);
	for (size_t step = 1; step <= n; step++) {
		struct uhttp_resp r;
		struct uhttp_limits lim = {.body_max = body_max};
		struct got g;
		char err[AS_ERRLEN] = "";
		uhttp_resp_init(&r, &lim);
		int rc = feed_split(&r, text, step, eof, &g, err);
		if (rc != want_rc || (want_rc == 1 && strcmp(g.msgs, msgs)))
			fail_msg("step %zu: rc %d (want %d), messages '%s' (want '%s'), err '%s'", step, rc, want_rc,
				 g.msgs, msgs ? msgs : "", err);
		if (want_rc == 1) {
			assert_int_equal(r.status, status);
			assert_string_equal(r.session, session ? session : "");
		}
		if (err_has && !strstr(err, err_has))
			fail_msg("step %zu: error '%s' does not say '%s'", step, err, err_has);
		uhttp_resp_free(&r);
	}
}

#define JSON_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"

static void test_json(void **state)
{
	(void)state;
	expect_all_splits(JSON_HEAD "Content-Length: 27\r\nMcp-Session-Id: abc-123\r\n\r\n"
				    "{\"jsonrpc\":\"2.0\",\"id\":1}  \n",
			  0, 0, 1, 200, "{\"jsonrpc\":\"2.0\",\"id\":1}|", "abc-123", NULL);
	/* LF-only lines, a media type parameter and upper case */
	expect_all_splits("HTTP/1.1 200 OK\nContent-Type: Application/JSON; charset=utf-8\nContent-Length: 2\n\n{}", 0,
			  0, 1, 200, "{}|", NULL, NULL);
	/* a batch, every element delivered, strings with brackets and escapes kept whole */
	expect_all_splits(JSON_HEAD "Content-Length: 36\r\n\r\n"
				    "[ {\"a\":\"],\\\"x\"} , {\"b\":[1,{}]},\n 3 ]",
			  0, 0, 1, 200, "{\"a\":\"],\\\"x\"}|{\"b\":[1,{}]}|3|", NULL, NULL);
}

static void test_chunked_and_close(void **state)
{
	(void)state;
	expect_all_splits(JSON_HEAD "Transfer-Encoding: chunked\r\n\r\n"
				    "5;ext=1\r\n{\"id\"\r\n"
				    "A\r\n:7,\"x\":[]}\r\n"
				    "0\r\nX-Trailer: t\r\n\r\n",
			  0, 0, 1, 200, "{\"id\":7,\"x\":[]}|", NULL, NULL);
	/* no length, no chunks: the body ends with the connection, and only then */
	expect_all_splits(JSON_HEAD "\r\n{\"id\":2}", 0, 0, 0, 0, NULL, NULL, NULL);
	expect_all_splits(JSON_HEAD "\r\n{\"id\":2}", 1, 0, 1, 200, "{\"id\":2}|", NULL, NULL);
	/* 202 Accepted with no body; a 100 Continue before the answer */
	expect_all_splits("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", 0, 0, 1, 202, "", NULL, NULL);
	expect_all_splits("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", 0, 0, 1,
			  202, "", NULL, NULL);
	/* HTTP/1.0 (Python's http.server by default): its status counts, with a length or
	 * with a body that ends at the close (issue 29: a webhook receiver's 2xx) */
	expect_all_splits("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 0, 0, 1,
			  200, "{}|", NULL, NULL);
	expect_all_splits("HTTP/1.0 204 No Content\r\nServer: x\r\n\r\n", 1, 0, 1, 204, "", NULL, NULL);
	/* a 500 with a body: read, bounded, not delivered */
	expect_all_splits(
	    "HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"id\":1}\n", 0, 0, 1,
	    500, "", NULL, NULL);
}

static void test_sse(void **state)
{
	(void)state;
	expect_all_splits("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "44\r\n"
			  "id: p1\r\ndata:\r\n\r\n"		    /* priming: an id and empty data */
			  ": keep-alive comment\n"		    /* a comment */
			  "event: message\ndata: {\"a\":1}\n\n\r\n" /* LF lines */
			  "32\r\n"
			  "data: {\"b\":\rdata: 2}\r\r"		  /* CR lines, two data lines */
			  "event: ping\ndata: {\"no\":1}\n\n\r\n" /* another type: not a message */
			  "22\r\n"
			  "id: 7\r\nretry: 10\r\ndata:{\"c\":3}\r\n\r\n\r\n"
			  "0\r\n\r\n",
			  0, 0, 1, 200, "{\"a\":1}|{\"b\":\n2}|{\"c\":3}|", NULL, NULL);
	/* chunks that cut lines: the SSE line and the chunk framing are read apart */
	expect_all_splits("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "7\r\ndata: {\r\n5\r\n\"a\":1\r\n3\r\n}\n\n\r\n0\r\n\r\n",
			  0, 0, 1, 200, "{\"a\":1}|", NULL, NULL);
	/* an event not ended by a blank line when the stream ends is dropped */
	expect_all_splits("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"a\":1}\n\ndata: {\"cut\"",
			  1, 0, 1, 200, "{\"a\":1}|", NULL, NULL);
}

static void test_bounds(void **state)
{
	(void)state;
	char big[20000];
	/* a body over the caller's maximum, by Content-Length, by chunks, by the close */
	expect_all_splits(JSON_HEAD "Content-Length: 65\r\n\r\n", 0, 64, AS_ETOOBIG, 0, NULL, NULL, "at most 64");
	expect_all_splits(JSON_HEAD "Transfer-Encoding: chunked\r\n\r\n31\r\n"
				    "[1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4]\r\n31\r\n"
				    "[1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4]\r\n0\r\n\r\n",
			  0, 64, AS_ETOOBIG, 0, NULL, NULL, "more than 64");
	/* an SSE event over it (its stream may be longer than one event) */
	expect_all_splits("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
			  "data: 0123456789012345678901234567890123456789\ndata: 0123456789012345678901234567890\n\n",
			  1, 64, AS_ETOOBIG, 0, NULL, NULL, "SSE: an event of more than 64");
	/* a status line, a header line, too many headers */
	snprintf(big, sizeof big, "HTTP/1.1 200 %01100d\r\n\r\n", 0);
	expect_all_splits(big, 0, 0, AS_ETOOBIG, 0, NULL, NULL, "status line longer than 1024");
	snprintf(big, sizeof big, JSON_HEAD "X-Big: %09000d\r\n\r\n", 0);
	expect_all_splits(big, 0, 0, AS_ETOOBIG, 0, NULL, NULL, "header line longer than 8192");
	size_t k = (size_t)snprintf(big, sizeof big, "%s", JSON_HEAD);
	for (int i = 0; i < 120; i++)
		k += (size_t)snprintf(big + k, sizeof big - k, "X-%d: y\r\n", i);
	snprintf(big + k, sizeof big - k, "\r\n");
	expect_all_splits(big, 0, 0, AS_ETOOBIG, 0, NULL, NULL, "more than 100 header lines");
	/* an SSE id over its bound; a session id over its bound */
	snprintf(big, sizeof big, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nid: %0300d\n", 0);
	expect_all_splits(big, 0, 0, AS_ETOOBIG, 0, NULL, NULL, "an id of more than 256");
	snprintf(big, sizeof big, JSON_HEAD "Mcp-Session-Id: %0300d\r\n\r\n", 0);
	expect_all_splits(big, 0, 0, AS_EINVAL, 0, NULL, NULL, "Mcp-Session-Id of 300 bytes");
}

static void test_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *text, *says;
		int eof;
	} rows[] = {
	    {"HTTP/2 200\r\n\r\n", "not an HTTP/1.1 (or 1.0) status line", 0},
	    {"HTTP/1.1 2x0 OK\r\n\r\n", "three digits", 0},
	    {"HTTP/1.1 200OK\r\n\r\n", "no space after the status", 0},
	    {"HTTP/1.1 700 Huh\r\n\r\n", "out of range", 0},
	    {"HTTP/1.1 101 Switching\r\n\r\n", "switched protocols", 0},
	    {JSON_HEAD "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two Content-Length", 0},
	    {JSON_HEAD "Content-Length: -1\r\n\r\n", "not a number", 0},
	    {JSON_HEAD "Content-Length: 012\r\n\r\n", "not a number", 0},
	    {JSON_HEAD "Transfer-Encoding: gzip, chunked\r\n\r\n", "only one 'chunked'", 0},
	    {JSON_HEAD "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", "both Transfer-Encoding", 0},
	    {JSON_HEAD "Transfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size", 0},
	    {JSON_HEAD "Transfer-Encoding: chunked\r\n\r\n2\r\n{}xx\r\n", "bytes after a chunk", 0},
	    {JSON_HEAD "Transfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", "more than 15 hex digits", 0},
	    {JSON_HEAD "X-A: b\rc\r\n\r\n", "bare CR", 0},
	    {JSON_HEAD " folded\r\n\r\n", "folded", 0},
	    {JSON_HEAD "No colon\r\n\r\n", "without a name", 0},
	    {JSON_HEAD "Bad Name: x\r\n\r\n", "not allowed", 0},
	    {JSON_HEAD "X-A: \001\r\n\r\n", "control byte", 0},
	    {JSON_HEAD "Mcp-Session-Id: a b\r\n\r\n", "not visible ASCII", 0},
	    {JSON_HEAD "Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n\r\n", "two Mcp-Session-Id", 0},
	    {"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", "Content-Type 'text/html'", 0},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "Content-Type ''", 0},
	    {JSON_HEAD "Content-Length: 0\r\n\r\n", "empty JSON body", 0},
	    {JSON_HEAD "Content-Length: 3\r\n\r\n \r\n", "empty JSON body", 0},
	    {JSON_HEAD "Content-Length: 2\r\n\r\n[]", "empty JSON batch", 0},
	    {JSON_HEAD "Content-Length: 5\r\n\r\n[1,,2", "closing ']'", 0},
	    {JSON_HEAD "Content-Length: 6\r\n\r\n[1,,2]", "empty element", 0},
	    {JSON_HEAD "Content-Length: 7\r\n\r\n[\"a]\"  ", "closing ']'", 0},
	    {JSON_HEAD "Content-Length: 6\r\n\r\n[{]}2]", "malformed JSON batch", 0},
	    {JSON_HEAD "Content-Length: 10\r\n\r\n{}", "in the middle of its answer", 1},
	    {JSON_HEAD "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", "in the middle of its answer", 1},
	    {"", "without an answer", 1},
	    {"HTTP/1.1 2", "in the middle", 1},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct uhttp_resp r;
		struct uhttp_limits lim = {0};
		struct got g;
		char err[AS_ERRLEN] = "";
		uhttp_resp_init(&r, &lim);
		int rc = feed_split(&r, rows[i].text, 1 + i % 7, rows[i].eof, &g, err);
		if (rc >= 0 || !strstr(err, rows[i].says))
			fail_msg("row %zu: rc %d, error '%s' (want '%s')", i, rc, err, rows[i].says);
		uhttp_resp_free(&r);
	}
}

/* Two responses on one connection: uhttp_resp_feed stops at the first one's end. */
static void test_keepalive_boundary(void **state)
{
	(void)state;
	const char *two = JSON_HEAD "Content-Length: 2\r\n\r\n{}HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
	struct uhttp_resp r;
	struct uhttp_limits lim = {0};
	struct got g = {0};
	char err[AS_ERRLEN];
	size_t used;
	uhttp_resp_init(&r, &lim);
	assert_int_equal(uhttp_resp_feed(&r, (const uint8_t *)two, strlen(two), &used, NULL, got_msg, &g, err), 1);
	assert_int_equal(used, strlen(JSON_HEAD "Content-Length: 2\r\n\r\n{}"));
	assert_string_equal(g.msgs, "{}|");
	uhttp_resp_reset(&r);
	size_t rest = strlen(two) - used, used2;
	assert_int_equal(uhttp_resp_feed(&r, (const uint8_t *)two + used, rest, &used2, NULL, got_msg, &g, err), 1);
	assert_int_equal(used2, rest);
	assert_int_equal(r.status, 202);
	uhttp_resp_free(&r);
}

/* ---- the client over a socketpair (plain HTTP) ---- */

struct evs {
	char log[4096];
	size_t len;
	struct uhttp_conn *c; /* when set: a done also logs the answer's last SSE id and retry: */
};

static int ev_msg(void *arg, const char *json, size_t n)
{
	struct evs *e = arg;
	e->len += (size_t)snprintf(e->log + e->len, sizeof e->log - e->len, "msg %.*s;", (int)n, json);
	return 0;
}

static void ev_event(void *arg, enum uhttp_event ev, int status)
{
	static const char *const names[] = {"", "done", "session-lost", "lost", "closed"};
	struct evs *e = arg;
	e->len += (size_t)snprintf(e->log + e->len, sizeof e->log - e->len, "%s %d;", names[ev], status);
	if (e->c && ev == UHTTP_EV_DONE)
		e->len += (size_t)snprintf(e->log + e->len, sizeof e->log - e->len, "id %s retry %ld;",
					   uhttp_last_event_id(e->c), uhttp_retry_ms(e->c));
}

#define SECRET "Bearer s3cr3t-credential"

static struct uhttp *new_plain(void)
{
	static const struct uhttp_header h[] = {{"Authorization", SECRET}, {"X-Team", "blue"}};
	struct uhttp_cfg cfg = {
	    .scheme = "http", .host = "example.test", .port = 8080, .path = "/mcp", .headers = h, .nheaders = 2};
	struct uhttp *u;
	char err[AS_ERRLEN];
	assert_int_equal(uhttp_new(&cfg, &u, err), 0);
	return u;
}

/* What the peer received: all readable bytes now. */
static size_t peer_read(int fd, char *out, size_t cap)
{
	size_t n = 0;
	for (;;) {
		ssize_t k = recv(fd, out + n, cap - 1 - n, MSG_DONTWAIT);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	out[n] = 0;
	return n;
}

static void peer_write(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

static void io(struct uhttp_conn *c, struct evs *e, int want_rc)
{
	struct uhttp_cb cb = {ev_msg, ev_event, e};
	char err[AS_ERRLEN] = "";
	int rc = uhttp_io(c, &cb, err);
	if ((rc < 0) != (want_rc < 0))
		fail_msg("uhttp_io: %d (%s)", rc, err);
	assert_null(strstr(err, "s3cr3t"));
}

static struct uhttp_conn *new_client(struct uhttp **u)
{
	struct uhttp_conn *c;
	char err[AS_ERRLEN];
	*u = new_plain();
	assert_int_equal(uhttp_conn_new(*u, &c, err), 0);
	return c;
}

static void client_free(struct uhttp *u, struct uhttp_conn *c, int peer)
{
	close(peer);
	uhttp_conn_free(c);
	uhttp_free(u);
}

/* A new connection: one end to c, the other the server's. */
static void attach_pair(struct uhttp_conn *c, int sv[2])
{
	char err[AS_ERRLEN];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(uhttp_attach(c, sv[0], err), 0);
}

/* The request c wrote, into req (io, then what the peer received). */
static void written(struct uhttp_conn *c, struct evs *e, int peer, char *req, size_t cap)
{
	io(c, e, 0);
	peer_read(peer, req, cap);
}

/* The peer answers; the events of c reading it start the log anew. */
static void answer(struct uhttp_conn *c, struct evs *e, int peer, const char *text)
{
	peer_write(peer, text);
	e->len = 0;
	io(c, e, 0);
}

static void test_client_session(void **state)
{
	(void)state;
	struct uhttp *u;
	struct uhttp_conn *c = new_client(&u);
	char err[AS_ERRLEN], req[8192];
	int sv[2];
	struct evs e = {0};
	assert_int_equal(uhttp_want(c), 0);
	assert_int_equal(uhttp_send(c, "{}", 2, err), AS_EINVAL); /* no descriptor yet */
	attach_pair(c, sv);
	assert_int_equal(uhttp_want(c), POLLIN);

	const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}";
	assert_int_equal(uhttp_send(c, init, strlen(init), err), 0);
	assert_int_equal(uhttp_send(c, init, strlen(init), err), AS_EINVAL); /* one in flight */
	assert_int_equal(uhttp_want(c), POLLIN | POLLOUT);
	io(c, &e, 0);
	assert_int_equal(uhttp_want(c), POLLIN);
	peer_read(sv[1], req, sizeof req);
	assert_string_equal(req, "POST /mcp HTTP/1.1\r\nHost: example.test:8080\r\n"
				 "Authorization: " SECRET "\r\nX-Team: blue\r\n"
				 "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
				 "Content-Length: 46\r\n\r\n"
				 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}");
	peer_write(sv[1], JSON_HEAD "Mcp-Session-Id: S-1\r\nContent-Length: 8\r\n\r\n{\"id\":1}");
	io(c, &e, 0);
	assert_string_equal(e.log, "msg {\"id\":1};done 200;");
	assert_string_equal(uhttp_session_id(u), "S-1");
	assert_true(uhttp_idle(c));

	/* the next request carries the session and the protocol; SSE answer */
	assert_int_equal(uhttp_set_protocol(u, "2025-06-18", err), 0);
	assert_int_equal(uhttp_set_protocol(u, "2025-06-18\r\nX: y", err), AS_EINVAL);
	assert_int_equal(uhttp_send(c, "{\"id\":2}", 8, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_non_null(strstr(req, "\r\nMCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: S-1\r\n"));
	answer(c, &e, sv[1],
	       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
	       "data: {\"method\":\"notifications/progress\"}\n\n"
	       "data: {\"id\":2}\n\n");
	/* the stream ends with the connection: messages come as they arrive, done at the close */
	assert_string_equal(e.log, "msg {\"method\":\"notifications/progress\"};msg {\"id\":2};");
	shutdown(sv[1], SHUT_WR);
	io(c, &e, 0);
	assert_string_equal(e.log, "msg {\"method\":\"notifications/progress\"};msg {\"id\":2};done 200;closed 0;");
	assert_int_equal(uhttp_fd(c), -1);
	close(sv[1]);

	/* a new fd; the session gone: 404 */
	attach_pair(c, sv);
	assert_int_equal(uhttp_send(c, "{\"id\":3}", 8, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_non_null(strstr(req, "Mcp-Session-Id: S-1\r\n"));
	answer(c, &e, sv[1], "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(e.log, "session-lost 404;done 404;");
	assert_string_equal(uhttp_session_id(u), "");
	/* without a session a 404 is just a 404; Connection: close drops the connection */
	assert_int_equal(uhttp_send(c, "{\"id\":4}", 8, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_null(strstr(req, "Mcp-Session-Id"));
	answer(c, &e, sv[1], "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(e.log, "done 404;closed 0;");
	client_free(u, c, sv[1]);
}

/* A request's own headers (a webhook's signature) go as given; a value or name that could
 * split a header is refused, nothing sent. */
static void test_client_extra_headers(void **state)
{
	(void)state;
	struct uhttp *u;
	struct uhttp_conn *c = new_client(&u);
	char err[AS_ERRLEN], req[8192];
	int sv[2];
	struct evs e = {0};
	attach_pair(c, sv);
	const struct uhttp_header bad[] = {{"X-Assent-Event", "request.created\r\nX-Evil: 1"}};
	struct uhttp_req rb = {.extra = bad, .nextra = 1};
	assert_int_equal(uhttp_send_req(c, "{\"id\":1}", 8, &rb, err), AS_EINVAL);
	assert_non_null(strstr(err, "not a plain ASCII name and value"));
	const struct uhttp_header badname[] = {{"X Evil", "1"}};
	struct uhttp_req rn = {.extra = badname, .nextra = 1};
	assert_int_equal(uhttp_send_req(c, "{\"id\":1}", 8, &rn, err), AS_EINVAL);
	const struct uhttp_header good[] = {{"X-Assent-Signature", "t=1,v1=ab"}, {"X-Assent-Delivery", "whd_1"}};
	struct uhttp_req rg = {.extra = good, .nextra = 2};
	assert_int_equal(uhttp_send_req(c, "{\"id\":1}", 8, &rg, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_non_null(strstr(req, "\r\nX-Assent-Signature: t=1,v1=ab\r\nX-Assent-Delivery: whd_1\r\n"));
	assert_null(strstr(req, "X-Evil"));
	client_free(u, c, sv[1]);
}

/* any_body: a 2xx that is neither JSON nor SSE (a webhook receiver's "ok") completes the
 * response; without it the same answer is refused, as MCP wants. */
static void test_any_body(void **state)
{
	(void)state;
	static const char text[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
	for (int any = 0; any < 2; any++) {
		struct uhttp_resp r;
		struct uhttp_limits lim = {.any_body = any};
		struct got g;
		char err[AS_ERRLEN] = "";
		uhttp_resp_init(&r, &lim);
		int rc = feed_split(&r, text, sizeof text - 1, 0, &g, err);
		if (any) {
			assert_int_equal(rc, 1);
			assert_int_equal(r.status, 200);
			assert_string_equal(g.msgs, "");
		} else {
			assert_true(rc < 0);
			assert_non_null(strstr(err, "text/plain"));
		}
		uhttp_resp_free(&r);
	}
	/* a webhook receiver speaking HTTP/1.0 (Python's http.server): its 200 counts too */
	static const char t10[] = "HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6\r\nContent-Type: text/plain\r\n\r\nok";
	struct uhttp_resp r;
	struct uhttp_limits lim = {.any_body = 1};
	struct got g;
	char err[AS_ERRLEN] = "";
	uhttp_resp_init(&r, &lim);
	assert_int_equal(feed_split(&r, t10, sizeof t10 - 1, 1, &g, err), 1);
	assert_int_equal(r.status, 200);
	uhttp_resp_free(&r);
}

/* raw (a witness's answer): any status's body, whatever its type, given whole as one message
 * at its end, chunked or not; an empty body gives none. */
static void test_raw_body(void **state)
{
	(void)state;
	static const char *const in[] = {
	    "HTTP/1.1 409 Conflict\r\nContent-Type: text/x.tlog.size\r\nContent-Length: 3\r\n\r\n42\n",
	    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n3\r\nab\n\r\n2\r\ncd\r\n0\r\n\r\n",
	    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"};
	static const char *const want[] = {"42\n|", "ab\ncd|", ""};
	for (size_t i = 0; i < 3; i++)
		for (size_t step = 1; step <= 64; step += 63) {
			struct uhttp_resp r;
			struct uhttp_limits lim = {.any_body = 1, .raw = 1, .body_max = 4096};
			struct got g;
			char err[AS_ERRLEN] = "";
			uhttp_resp_init(&r, &lim);
			assert_int_equal(feed_split(&r, in[i], step, 0, &g, err), 1);
			assert_string_equal(g.msgs, want[i]);
			uhttp_resp_free(&r);
		}
}

/* SEP-2243 routing headers, encoded when not plain; DELETE ends the session. */
static void test_client_routing_and_delete(void **state)
{
	(void)state;
	struct uhttp *u;
	struct uhttp_conn *c = new_client(&u);
	char err[AS_ERRLEN], req[8192];
	int sv[2];
	struct evs e = {0};
	attach_pair(c, sv);
	struct uhttp_req rq = {.method = "tools/call", .name = "caf\xc3\xa9\r\nX-Evil: 1"};
	assert_int_equal(uhttp_send_req(c, "{\"id\":1}", 8, &rq, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_non_null(strstr(req, "\r\nMcp-Method: tools/call\r\n"));
	assert_non_null(strstr(req, "\r\nMcp-Name: =?base64?Y2Fmw6kNClgtRXZpbDogMQ==?=\r\n"));
	assert_null(strstr(req, "X-Evil"));
	peer_write(sv[1], JSON_HEAD "Mcp-Session-Id: S-9\r\nContent-Length: 8\r\n\r\n{\"id\":1}");
	io(c, &e, 0);
	assert_string_equal(uhttp_session_id(u), "S-9");
	/* a name that is plain goes as it is; one that looks encoded is encoded */
	struct uhttp_req plain = {.method = "resources/read", .name = "=?base64?eA==?="};
	assert_int_equal(uhttp_send_req(c, "{\"id\":2}", 8, &plain, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_non_null(strstr(req, "\r\nMcp-Method: resources/read\r\nMcp-Name: =?base64?PT9iYXNlNjQ/ZUE9PT89?=\r\n"));
	peer_write(sv[1], "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
	io(c, &e, 0);
	/* a 2026-07-28 request beside the session: its own version, no session id; a 404 to it
	 * does not lose the session */
	struct uhttp_req modern = {.method = "tools/call", .name = "t", .protocol = "2026-07-28"};
	assert_int_equal(uhttp_send_req(c, "{\"id\":3}", 8, &modern, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_non_null(
	    strstr(req, "\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: t\r\n"));
	assert_null(strstr(req, "Mcp-Session-Id"));
	answer(c, &e, sv[1], "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(uhttp_session_id(u), "S-9");
	struct uhttp_req bad = {.method = "tools/call", .protocol = "2026-07-28\r\nX-Evil: 1"};
	assert_int_equal(uhttp_send_req(c, "{\"id\":4}", 8, &bad, err), AS_EINVAL);
	assert_non_null(strstr(err, "protocol version"));
	e.log[0] = 0;
	/* GET: the session's stream, SSE only, no body; a 405 says the server has none */
	assert_int_equal(uhttp_send_get(c, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_int_equal(strncmp(req, "GET /mcp HTTP/1.1\r\n", 17), 0);
	assert_non_null(strstr(req, "\r\nAccept: text/event-stream\r\nMcp-Session-Id: S-9\r\n\r\n"));
	assert_null(strstr(req, "Content-"));
	answer(c, &e, sv[1], "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(e.log, "done 405;");
	/* an answer stream ended early: its last id and retry: are known once it is done, and
	 * the GET that resumes it carries Last-Event-ID (SEP-1699); an id of control bytes or
	 * over its bound is refused before anything is sent */
	e.c = c;
	assert_int_equal(uhttp_send(c, "{\"id\":3}", 8, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	answer(c, &e, sv[1],
	       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 37\r\n\r\n"
	       "id: ev-1\nretry: 750\ndata: \n\nretry: x\n");
	assert_string_equal(e.log, "done 200;id ev-1 retry 750;");
	assert_int_equal(uhttp_send_resume(c, "", err), AS_EINVAL);
	assert_int_equal(uhttp_send_resume(c, "a\r\nX-Evil: 1", err), AS_EINVAL);
	assert_int_equal(uhttp_send_resume(c, "ev-1", err), 0);
	written(c, &e, sv[1], req, sizeof req);
	assert_true(strstr(req, "GET /mcp ") == req && strstr(req, "\r\nLast-Event-ID: ev-1\r\n") &&
		    strstr(req, "\r\nMcp-Session-Id: S-9\r\n"));
	answer(c, &e, sv[1], "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(e.log, "done 200;id  retry -1;");
	e.c = NULL;
	/* DELETE: no body, the session sent and forgotten */
	assert_int_equal(uhttp_send_delete(c, err), 0);
	assert_string_equal(uhttp_session_id(u), "");
	written(c, &e, sv[1], req, sizeof req);
	assert_int_equal(strncmp(req, "DELETE /mcp HTTP/1.1\r\nHost: example.test:8080\r\n", 46), 0);
	assert_non_null(strstr(req, "\r\nMcp-Session-Id: S-9\r\nContent-Length: 0\r\n\r\n"));
	assert_null(strstr(req, "Content-Type"));
	answer(c, &e, sv[1], "HTTP/1.1 200 OK\r\nMcp-Session-Id: S-9\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(e.log, "done 200;");
	assert_string_equal(uhttp_session_id(u), "");		/* the DELETE's answer does not bring it back */
	assert_int_equal(uhttp_send_delete(c, err), AS_EINVAL); /* no session left */
	assert_int_equal(uhttp_send_get(c, err), AS_EINVAL);
	client_free(u, c, sv[1]);
}

static void test_client_closes(void **state)
{
	(void)state;
	struct uhttp *u;
	struct uhttp_conn *c = new_client(&u);
	char err[AS_ERRLEN], req[8192];
	int sv[2];
	struct evs e = {0};
	/* an idle connection the server closes: closed, no error */
	attach_pair(c, sv);
	close(sv[1]);
	io(c, &e, 0);
	assert_string_equal(e.log, "closed 0;");
	/* closed in the middle of an answer: the request is lost, an error */
	attach_pair(c, sv);
	assert_int_equal(uhttp_send(c, "{\"id\":1}", 8, err), 0);
	written(c, &e, sv[1], req, sizeof req);
	peer_write(sv[1], JSON_HEAD "Content-Length: 100\r\n\r\n{\"id\"");
	close(sv[1]);
	e.len = 0;
	io(c, &e, -1);
	assert_string_equal(e.log, "lost 0;closed 0;"); /* written: it may have been acted on */
	/* bytes no request asked for: an error */
	attach_pair(c, sv);
	peer_write(sv[1], "HTTP/1.1 200 OK\r\n");
	struct uhttp_cb cb = {ev_msg, ev_event, &e};
	e.len = 0;
	assert_true(uhttp_io(c, &cb, err) < 0);
	assert_non_null(strstr(err, "no request in flight"));
	assert_string_equal(e.log, "closed 0;");
	close(sv[1]);
	/* the caller's deadline: uhttp_close drops a request before any byte left (lost, unsent)
	 * and after (lost, maybe acted on) */
	attach_pair(c, sv);
	assert_int_equal(uhttp_send(c, "{\"id\":5}", 8, err), 0);
	e.len = 0;
	uhttp_close(c, &cb);
	assert_string_equal(e.log, "lost 1;closed 0;");
	assert_int_equal(uhttp_fd(c), -1);
	close(sv[1]);
	attach_pair(c, sv);
	assert_int_equal(uhttp_send(c, "{\"id\":6}", 8, err), 0);
	io(c, &e, 0);
	e.len = 0;
	uhttp_close(c, &cb);
	uhttp_close(c, &cb); /* no descriptor: nothing */
	assert_string_equal(e.log, "lost 0;closed 0;");
	close(sv[1]);
	/* an oversized request is refused before anything is written */
	attach_pair(c, sv);
	char *huge = calloc(1, UHTTP_BODY_MAX_DEFAULT + 1);
	assert_non_null(huge);
	assert_int_equal(uhttp_send(c, huge, UHTTP_BODY_MAX_DEFAULT + 1, err), AS_ETOOBIG);
	free(huge);
	client_free(u, c, sv[1]);
}

static void test_cfg_refusals(void **state)
{
	(void)state;
	struct uhttp_header bad_value[] = {{"Authorization", "Bearer s3cr3t\r\nX-Evil: 1"}};
	struct uhttp_header reserved[] = {{"Content-Length", "5"}};
	struct uhttp_header bad_name[] = {{"Bad Name", "s3cr3t"}};
	const struct {
		struct uhttp_cfg cfg;
		const char *says;
	} rows[] = {
	    {{.scheme = "ftp", .host = "h", .port = 1, .path = "/"}, "scheme"},
	    {{.scheme = "http", .host = "", .port = 1, .path = "/"}, "host"},
	    {{.scheme = "http", .host = "a b", .port = 1, .path = "/"}, "host"},
	    {{.scheme = "http", .host = "h", .port = 0, .path = "/"}, "port 0"},
	    {{.scheme = "http", .host = "h", .port = 1, .path = "mcp"}, "path"},
	    {{.scheme = "http", .host = "h", .port = 1, .path = "/a b"}, "path"},
	    {{.scheme = "http", .host = "h", .port = 1, .path = "/", .headers = bad_value, .nheaders = 1},
	     "header 'Authorization' has a control byte"},
	    {{.scheme = "http", .host = "h", .port = 1, .path = "/", .headers = reserved, .nheaders = 1},
	     "'Content-Length' is set by assent"},
	    {{.scheme = "http", .host = "h", .port = 1, .path = "/", .headers = bad_name, .nheaders = 1},
	     "no valid name"},
	    {{.scheme = "http", .host = "h", .port = 1, .path = "/", .ca = "/x.pem"}, "CA file for a plain http"},
	    {{.scheme = "https", .host = "h", .port = 1, .path = "/", .ca = "/nonexistent/ca.pem"}, "CA file"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct uhttp *u = NULL;
		char err[AS_ERRLEN] = "";
		int rc = uhttp_new(&rows[i].cfg, &u, err);
		if (rc >= 0 || !strstr(err, rows[i].says) || strstr(err, "s3cr3t"))
			fail_msg("row %zu: rc %d, error '%s' (want '%s', never the value)", i, rc, err, rows[i].says);
		assert_null(u);
	}
	/* a CA file that holds no certificate */
	char path[] = "/tmp/uhttp-test-ca.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a certificate\n", 18), 18);
	close(fd);
	struct uhttp_cfg cfg = {.scheme = "https", .host = "h", .port = 443, .path = "/", .ca = path};
	struct uhttp *u = NULL;
	char err[AS_ERRLEN] = "";
	assert_int_equal(uhttp_new(&cfg, &u, err), AS_ECRYPTO);
	assert_non_null(strstr(err, "no certificate could be read"));
	unlink(path);
}

/* The system store loads (Debian's bundle; the test needs ca-certificates). */
static void test_system_store(void **state)
{
	(void)state;
	if (access(UHTTP_SYSTEM_CA, R_OK) != 0)
		skip();
	struct uhttp_cfg cfg = {.scheme = "https", .host = "example.com", .port = 443, .path = "/mcp"};
	struct uhttp *u;
	struct uhttp_conn *c;
	char err[AS_ERRLEN];
	assert_int_equal(uhttp_new(&cfg, &u, err), 0);
	assert_true(uhttp_ca_count(u) > 10);
	assert_int_equal(uhttp_conn_new(u, &c, err), 0);
	int sv[2];
	attach_pair(c, sv);
	/* the ClientHello goes out; a server that answers with garbage is a TLS error */
	struct evs e = {0};
	io(c, &e, 0);
	char hello[8192];
	assert_true(peer_read(sv[1], hello, sizeof hello) > 5);
	assert_int_equal((unsigned char)hello[0], 0x16); /* a handshake record */
	peer_write(sv[1], "HTTP/1.1 400 Bad Request\r\n\r\n");
	struct uhttp_cb cb = {ev_msg, ev_event, &e};
	assert_true(uhttp_io(c, &cb, err) < 0);
	assert_non_null(strstr(err, "TLS: example.com"));
	assert_string_equal(e.log, "closed 0;");
	client_free(u, c, sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_chunked_and_close),
	    cmocka_unit_test(test_sse),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_keepalive_boundary),
	    cmocka_unit_test(test_client_session),
	    cmocka_unit_test(test_client_routing_and_delete),
	    cmocka_unit_test(test_client_extra_headers),
	    cmocka_unit_test(test_any_body),
	    cmocka_unit_test(test_raw_body),
	    cmocka_unit_test(test_client_closes),
	    cmocka_unit_test(test_cfg_refusals),
	    cmocka_unit_test(test_system_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
