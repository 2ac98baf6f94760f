/* A compromised mcp worker, against the real signer.
 *   evil_worker signer STATE WRAPPER   runs the real signer (signer_main), whose workers
 *                                      are started as WRAPPER KIND [--uid N], the way
 *                                      it starts assent-worker
 *   evil_worker SCENARIO mcp           (through WRAPPER) plays a hostile mcp worker
 *   evil_worker SCENARIO review        is the real review worker
 * Scenarios: hello-twice, request-before-hello, review-frame, other-conn, unknown-type,
 * over-max, truncated, bad-cbor; and, once a client connects to the agent socket,
 * forged-digest (a "computed" subject whose bytes hash to something else) and
 * computed-no-bytes (a "computed" subject without its bytes). Each sends its hostile frame(s) and then idles: the
 * signer must log a security event, kill it and restart it, and decide nothing.
 * Scenarios named web-* play a hostile review worker instead (the mcp worker is the real one):
 * web-no-fd (a web request without its connection), web-unix-fd (a unix socket that is not the
 * proxy's), web-other-port (a TCP connection that did not come in on the reviewer listener),
 * web-agent-frame (an mcp worker's frame), web-before-hello (a reviewer's command before hello),
 * web-old-cmd (the retired F_CTL frame with a "cmd" string), web-extra-field (a field the frame
 * type does not have), web-ctl-fd (a control command with a descriptor), web-decide-no-sid (a web
 * decision without the request's id); review-frame and review-web-frame: an mcp worker sending a
 * reviewer's control or web command; mcp-sends:TYPE, an mcp worker sending a frame of TYPE {conn}.
 * Scenarios named text-* send, once an agent connects, a request with an escape sequence or a
 * bidirectional override in one field a reviewer is shown (text-message-esc, text-message-bidi,
 * text-audience, text-option, text-default, text-subject, text-client): refused as above.
 * text-context sends one the signer must accept (wait false; then it idles): its context and
 * other fields hold escape, bidirectional and invisible characters only shown neutralised.
 * web-ctl-ended plays a review worker that, once a reviewer has listed the queue on the
 * control socket and hung up, approves the first request over that connection anyway:
 * the signer must refuse it (not a security event: the reviewer may have left with a
 * command in flight).
 * web-replay:TOKEN plays a review worker that logs in with a reviewer's web token it saw,
 * logs out, then replays the session cookie (me, and a decision on the pending request):
 * it logs what the signer answered (F_LOG "replay after logout: me=STATUS decide=STATUS").
 * http-unmeasured:KEY and http-replay:KEY play an mcp worker that authenticates one real
 * HTTP connection with an agent's key (the signer measures its owner), then sends a
 * request naming an HTTP request the signer never authenticated (unmeasured), or two
 * requests naming the one it did (replay): the signer must take the measured uid once,
 * for the request it measured, and treat anything else as an attack.
 * The gate (evil_worker signer STATE WRAPPER UPSTREAMS: the signer runs with --upstreams):
 * up-* play a hostile upstream worker (the mcp and review workers are real):
 * up-result-never-dispatched, up-agent-frame (an F_CALL, the mcp worker's frame), up-list-frame
 * (an agent's request naming a client's connection), up-review-frame (a decision),
 * up-tools-not-cbor, up-result-empty (neither result nor error), up-hello-as-mcp;
 * gate-* play a hostile mcp worker: gate-call-not-a-call (an F_CALL whose call is not a
 * canonical call), gate-upstream-frame (an upstream worker's F_UP_RESULT). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <jansson.h>
#include <poll.h>
#include <sys/socket.h>

#include "gateway/proto/call.h"
#include "gateway/proto/ipc.h"
#include "gateway/worker/jail.h"
#include "ledger/merkle.h"
#include "common/util.h"
#include "gateway/proto/proto.h"
#include "gateway/signer/signer.h"
#include "gateway/worker/worker.h"
#include "gateway/worker/review/webroute.h"

/* The frames built here must be built whole (MUST, else the tool stops: the scenario
 * would not test what it says); a send may fail once the signer has killed this worker
 * for the frame before, which is what most scenarios are for (SENT); a read that finds
 * the signer gone ends the scenario (READ). */
#define MUST(x)                                                                                                        \
	do {                                                                                                           \
		if ((x) != 0)                                                                                          \
			_exit(1);                                                                                      \
	} while (0)
#define SENT(x)                                                                                                        \
	do {                                                                                                           \
		int sent_ = (x);                                                                                       \
		(void)sent_;                                                                                           \
	} while (0)
#define READ(x)                                                                                                        \
	do {                                                                                                           \
		int read_ = (x);                                                                                       \
		if (read_ != 0 && read_ != AS_ENOTFOUND)                                                               \
			_exit(1);                                                                                      \
	} while (0)

/* The action as a worker sends it: its canonical CBOR, encoded once (proto.h F_REQUEST). */
static void put_action(struct cv_arena *a, struct cv *f, const struct cv *act)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	if (cbor_encode(act, &b, NULL) != 0 || ipc_put_bytes(a, f, "action", b.p, b.len) != 0)
		_exit(1);
	buf_free(&b);
}

static void hello_as(struct cv_arena *a, const char *kind)
{
	struct cv *f = ipc_frame_new(a, F_HELLO, 1);
	MUST(ipc_put_text(a, f, "kind", kind, strlen(kind)));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
}

static void hello(struct cv_arena *a)
{
	hello_as(a, "mcp");
}

/* A reviewer listener request (F_WEB_ME) carrying fd (-1: none). */
static void web_request(struct cv_arena *a, int fd)
{
	struct cv *f = ipc_frame_new(a, F_WEB_ME, 1);
	MUST(ipc_put_uint(a, f, "hreq", 1));
	SENT(ipc_send(WORKER_IPC_FD, f, fd, NULL));
}

/* A connection to the reviewer listener itself, accepted (the signer sees its port). */
static int listener_conn(void)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	int cl = socket(AF_INET, SOCK_STREAM, 0), fd;
	if (getsockname(WORKER_HTTP_FD, (struct sockaddr *)&ss, &sl) || connect(cl, (struct sockaddr *)&ss, sl) ||
	    (fd = accept(WORKER_HTTP_FD, NULL, NULL)) < 0)
		_exit(1);
	return fd;
}

/* A TCP connection on loopback that has nothing to do with the reviewer listener. */
static int other_tcp(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &sl) || connect(c, (struct sockaddr *)&sa, sizeof sa))
		_exit(1);
	return c;
}

static void raw(const void *p, size_t n)
{
	if (write(WORKER_IPC_FD, p, n) < 0)
		_exit(1);
}

/* Wait for a frame of type want from the signer (fd: its descriptor, when one came); 0 on
 * a timeout. F_CONN_NEW frames give their conn as the result. */
static uint64_t wait_frame(struct cv_arena *a, struct ipc_conn *c, unsigned want, int *fd, char **json)
{
	char err[AS_ERRLEN];
	for (;;) {
		struct ipc_frame f;
		cv_arena_reset(a);
		int g;
		while ((g = ipc_next(c, a, &f, err)) == 0) {
			uint64_t id = 1;
			const char *js;
			size_t n;
			if (f.type != want ||
			    (want == F_CONN_NEW && ipc_get_uint(f.body, "conn", UINT64_MAX, &id, err)))
				continue;
			if (fd && f.nfds) {
				*fd = f.fds[0];
				f.fds[0] = -1;
			}
			if (json && ipc_get_text(f.body, "json", PROTO_JSON_MAX, &js, &n, err) == 0)
				*json = strndup(js, n);
			return id;
		}
		if (g != AS_ENOTFOUND)
			_exit(1);
		struct pollfd p = {.fd = WORKER_IPC_FD, .events = POLLIN};
		if (poll(&p, 1, 20000) <= 0)
			return 0;
		READ(ipc_read(c, err));
	}
}

/* Wait for the signer to hand over a client connection; its id. */
static uint64_t wait_conn(struct cv_arena *a)
{
	struct ipc_conn c;
	char err[AS_ERRLEN];
	MUST(ipc_conn_init(&c, WORKER_IPC_FD, err));
	for (;;) {
		struct pollfd p = {.fd = WORKER_IPC_FD, .events = POLLIN};
		if (poll(&p, 1, 10000) <= 0)
			_exit(1);
		READ(ipc_read(&c, err));
		struct ipc_frame f;
		cv_arena_reset(a);
		int g;
		while ((g = ipc_next(&c, a, &f, err)) == 0) {
			uint64_t id;
			if (f.type == F_CONN_NEW && ipc_get_uint(f.body, "conn", UINT64_MAX, &id, err) == 0)
				return id;
		}
		if (g != AS_ENOTFOUND)
			_exit(1);
	}
}

/* A request whose one subject claims to have been hashed here, from "hello". */
static void subject_request(struct cv_arena *a, uint64_t conn, const char *digest_of, int with_bytes)
{
	uint8_t h[32];
	char hex[65];
	sha256((const uint8_t *)digest_of, strlen(digest_of), h);
	hex_encode(h, 32, hex);
	struct cv *act = cv_map(a, 3), *subs = cv_array(a, 1), *sub = cv_map(a, 4), *dg = cv_map(a, 1);
	MUST(cv_set_text(a, &dg->items[0], "sha256", 6));
	MUST(cv_set_text(a, &dg->items[1], hex, 64));
	MUST(cv_set_text(a, &sub->items[0], "name", 4));
	MUST(cv_set_text(a, &sub->items[1], "plan", 4));
	MUST(cv_set_text(a, &sub->items[2], "digest", 6));
	sub->items[3] = *dg;
	MUST(cv_set_text(a, &sub->items[4], "computed", 8));
	sub->items[5].t = CV_TRUE;
	MUST(cv_set_text(a, &sub->items[6], "size", 4));
	cv_set_uint(&sub->items[7], 5);
	subs->items[0] = *sub;
	MUST(cv_set_text(a, &act->items[0], "type", 4));
	MUST(cv_set_text(a, &act->items[1], "approval", 8));
	MUST(cv_set_text(a, &act->items[2], "message", 7));
	MUST(cv_set_text(a, &act->items[3], "apply the plan", 14));
	MUST(cv_set_text(a, &act->items[4], "subject", 7));
	act->items[5] = *subs;
	struct cv *contents = cv_array(a, 1);
	if (with_bytes)
		MUST(cv_set_bytes(a, &contents->items[0], (const uint8_t *)"hello", 5));
	else
		contents->items[0].t = CV_NULL;
	struct cv *f = ipc_frame_new(a, F_REQUEST, 7);
	put_action(a, f, act);
	*ipc_put(a, f, "contents") = *contents;
	MUST(ipc_put_uint(a, f, "conn", conn));
	MUST(ipc_put_text(a, f, "rid", "1", 1));
	MUST(ipc_put_uint(a, f, "timeout", 60));
	MUST(ipc_put_bool(a, f, "wait", 1));
	MUST(ipc_put_text(a, f, "client", "evil/1", 6));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
}

/* A request with hostile text in the field named by sc (text-*); the rest ordinary. */
static void text_request(struct cv_arena *a, uint64_t conn, const char *sc)
{
	const char *esc = "go \x1b[2J\x1b]0;owned\x07", *bidi = "rm -rf \xe2\x80\xae/ tsil";
	/* Allowed in a request, shown neutralised: LRM, zero-width space, BOM, word joiner, and in
	 * a context anything at all. */
	const char *lrm = "deploy\xe2\x80\x8e to\xe2\x80\x8b prod",
		   *ctx = "echo ok \x1b[8m; rm -rf \xe2\x80\xae/tsil \xe2\x81\xa6x";
	int ctxok = !strcmp(sc, "text-context");
	const char *type = !strcmp(sc, "text-option") || ctxok ? "selection"
			   : !strcmp(sc, "text-default")       ? "input"
							       : "approval";
	const char *msg = !strcmp(sc, "text-message-esc")    ? esc
			  : !strcmp(sc, "text-message-bidi") ? bidi
			  : ctxok			     ? lrm
							     : "ok?";
	struct cv *act = cv_map(a, 7);
	size_t i = 0;
	MUST(cv_set_text(a, &act->items[i++], "type", 4));
	MUST(cv_set_text(a, &act->items[i++], type, strlen(type)));
	MUST(cv_set_text(a, &act->items[i++], "message", 7));
	MUST(cv_set_text(a, &act->items[i++], msg, strlen(msg)));
	if (ctxok) {
		struct cv *m = cv_map(a, 1);
		MUST(cv_set_text(a, &m->items[0], "command", 7));
		MUST(cv_set_text(a, &m->items[1], ctx, strlen(ctx)));
		MUST(cv_set_text(a, &act->items[i++], "context", 7));
		act->items[i++] = *m;
	}
	if (!strcmp(type, "selection")) {
		const char *opt = ctxok ? "keep\xef\xbb\xbf it" : "de\xe2\x81\xa6lete all";
		struct cv *o = cv_array(a, 2);
		MUST(cv_set_text(a, &o->items[0], "none", 4));
		MUST(cv_set_text(a, &o->items[1], opt, strlen(opt)));
		MUST(cv_set_text(a, &act->items[i++], "options", 7));
		act->items[i++] = *o;
	}
	if (!strcmp(sc, "text-default")) {
		MUST(cv_set_text(a, &act->items[i++], "default", 7));
		MUST(cv_set_text(a, &act->items[i++], esc, strlen(esc)));
	}
	int subj = !strcmp(sc, "text-subject") || ctxok;
	if (subj) {
		const char *name = ctxok ? "plan\xe2\x81\xa0.tf" : "plan\x1b[8m.tf";
		struct cv *subs = cv_array(a, 1), *sub = cv_map(a, 3), *dg = cv_map(a, 1);
		MUST(cv_set_text(a, &dg->items[0], "sha256", 6));
		MUST(cv_set_text(a, &dg->items[1], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
				 64));
		MUST(cv_set_text(a, &sub->items[0], "name", 4));
		MUST(cv_set_text(a, &sub->items[1], name, strlen(name)));
		MUST(cv_set_text(a, &sub->items[2], "digest", 6));
		sub->items[3] = *dg;
		MUST(cv_set_text(a, &sub->items[4], "computed", 8));
		sub->items[5].t = CV_FALSE;
		subs->items[0] = *sub;
		MUST(cv_set_text(a, &act->items[i++], "subject", 7));
		act->items[i++] = *subs;
	}
	if (!strcmp(sc, "text-audience")) {
		MUST(cv_set_text(a, &act->items[i++], "audience", 8));
		MUST(cv_set_text(a, &act->items[i++], "tf\xe2\x80\xaeprod", 9));
	}
	act->n = i / 2;
	struct cv *f = ipc_frame_new(a, F_REQUEST, 7);
	put_action(a, f, act);
	if (subj) {
		struct cv *contents = cv_array(a, 1);
		contents->items[0].t = CV_NULL;
		*ipc_put(a, f, "contents") = *contents;
	}
	const char *client = !strcmp(sc, "text-client") ? "evil\x1b[31m/1" : "evil/1";
	MUST(ipc_put_uint(a, f, "conn", conn));
	MUST(ipc_put_text(a, f, "rid", "1", 1));
	MUST(ipc_put_uint(a, f, "timeout", 600));
	MUST(ipc_put_bool(a, f, "wait", !ctxok));
	MUST(ipc_put_text(a, f, "client", client, strlen(client)));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
}

/* A web request on the reviewer listener (a connection to itself, so that the signer sees
 * the listener's port): its HTTP status; its body and cookie, when asked for. */
struct web_call {
	uint32_t type;
	const char *token, *cookie, *csrf, *sid, *outcome;
	char *body, *set_cookie;
};

static unsigned web_call(struct cv_arena *a, struct ipc_conn *c, int fd, uint64_t hreq, struct web_call *w)
{
	cv_arena_reset(a);
	struct cv *f = ipc_frame_new(a, w->type, 8);
	MUST(ipc_put_uint(a, f, "hreq", hreq));
	const char *keys[] = {"token", "cookie", "csrf", "sid", "outcome"},
		   *vals[] = {w->token, w->cookie, w->csrf, w->sid, w->outcome};
	for (size_t i = 0; i < 5; i++)
		if (vals[i])
			MUST(ipc_put_text(a, f, keys[i], vals[i], strlen(vals[i])));
	SENT(ipc_send(WORKER_IPC_FD, f, fd, NULL));
	char err[AS_ERRLEN];
	for (;;) {
		struct ipc_frame r;
		int g;
		cv_arena_reset(a);
		while ((g = ipc_next(c, a, &r, err)) == 0) {
			uint64_t h, st;
			const char *t;
			size_t n;
			if (r.type != F_WEB_REPLY || ipc_get_uint(r.body, "hreq", UINT64_MAX, &h, err) || h != hreq ||
			    ipc_get_uint(r.body, "status", PS_COUNT - 1, &st, err))
				continue;
			if (ipc_get_text(r.body, "body", PROTO_JSON_MAX, &t, &n, err) == 0)
				w->body = strndup(t, n);
			if (cv_get(r.body, "cookie") && ipc_get_text(r.body, "cookie", 128, &t, &n, err) == 0)
				w->set_cookie = strndup(t, n);
			return web_http_status(st); /* as the real review worker answers the client */
		}
		if (g != AS_ENOTFOUND)
			_exit(1);
		struct pollfd p = {.fd = WORKER_IPC_FD, .events = POLLIN};
		if (poll(&p, 1, 20000) <= 0)
			return 0;
		READ(ipc_read(c, err));
	}
}

/* An ordinary approval on HTTP session conn, naming HTTP request hreq. */
static void http_request(struct cv_arena *a, uint64_t conn, uint64_t hreq)
{
	cv_arena_reset(a);
	struct cv *act = cv_map(a, 2);
	MUST(cv_set_text(a, &act->items[0], "type", 4));
	MUST(cv_set_text(a, &act->items[1], "approval", 8));
	MUST(cv_set_text(a, &act->items[2], "message", 7));
	MUST(cv_set_text(a, &act->items[3], "deploy over http", 16));
	struct cv *f = ipc_frame_new(a, F_REQUEST, 7);
	put_action(a, f, act);
	MUST(ipc_put_uint(a, f, "conn", conn));
	MUST(ipc_put_text(a, f, "rid", "1", 1));
	MUST(ipc_put_uint(a, f, "timeout", 60));
	MUST(ipc_put_bool(a, f, "wait", 0));
	MUST(ipc_put_text(a, f, "client", "evil/1", 6));
	MUST(ipc_put_uint(a, f, "hreq", hreq));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
}

static int http_measured(struct cv_arena *a, const char *key, int replay)
{
	hello(a);
	struct pollfd p = {.fd = WORKER_HTTP_FD, .events = POLLIN};
	if (poll(&p, 1, 20000) <= 0)
		return 1;
	int c = accept(WORKER_HTTP_FD, NULL, NULL); /* the test's client, held open */
	if (c < 0)
		return 1;
	struct cv *f = ipc_frame_new(a, F_HTTP_AUTH, 3);
	MUST(ipc_put_uint(a, f, "hreq", 1));
	MUST(ipc_put_bool(a, f, "init", 1));
	MUST(ipc_put_text(a, f, "bearer", key, strlen(key)));
	SENT(ipc_send(WORKER_IPC_FD, f, c, NULL));
	struct ipc_conn ic;
	char err[AS_ERRLEN];
	MUST(ipc_conn_init(&ic, WORKER_IPC_FD, err));
	uint64_t conn = 0;
	for (int turns = 0; !conn && turns < 200; turns++) {
		struct pollfd q = {.fd = WORKER_IPC_FD, .events = POLLIN};
		if (poll(&q, 1, 10000) <= 0)
			return 1;
		READ(ipc_read(&ic, err));
		struct ipc_frame fr;
		cv_arena_reset(a);
		while (!conn && ipc_next(&ic, a, &fr, err) == 0)
			if (fr.type == F_HTTP_REPLY && ipc_get_uint(fr.body, "conn", UINT64_MAX, &conn, err) != 0)
				conn = 0;
	}
	if (!conn)
		return 1;
	http_request(a, conn, replay ? 1 : 777);
	if (replay)
		http_request(a, conn, 1);
	sleep(20);
	return 0;
}

static int web_replay(struct cv_arena *a, const char *token)
{
	struct ipc_conn c;
	char err[AS_ERRLEN];
	MUST(ipc_conn_init(&c, WORKER_IPC_FD, err));
	int fd = listener_conn();
	struct web_call in = {.type = F_WEB_LOGIN, .token = token};
	if (web_call(a, &c, fd, 1, &in) != 200 || !in.body)
		return 1;
	json_t *j = json_loads(in.body, 0, NULL);
	const char *csrf = json_string_value(json_object_get(j, "csrf"));
	/* The session's secret comes in the login's body (the page sends it back as a bearer;
	 * the frame still calls it "cookie"). */
	const char *sess = json_string_value(json_object_get(j, "session"));
	if (!in.set_cookie && sess)
		in.set_cookie = strdup(sess);
	if (!in.set_cookie)
		return 1;
	char *sid = NULL;
	for (uint64_t h = 2; !sid && h < 400; h++) { /* the test's agent asks meanwhile */
		struct web_call pe = {.type = F_WEB_PENDING, .cookie = in.set_cookie};
		if (web_call(a, &c, fd, h, &pe) == 200 && pe.body) {
			json_t *pj = json_loads(pe.body, 0, NULL);
			const char *x = json_string_value(
			    json_object_get(json_array_get(json_object_get(pj, "requests"), 0), "session_id"));
			sid = x ? strdup(x) : NULL;
			json_decref(pj);
		}
		free(pe.body);
		if (!sid)
			usleep(50000);
	}
	struct web_call out = {.type = F_WEB_LOGOUT, .cookie = in.set_cookie, .csrf = csrf};
	unsigned lo = web_call(a, &c, fd, 500, &out);
	struct web_call me = {.type = F_WEB_ME, .cookie = in.set_cookie};
	unsigned st_me = web_call(a, &c, fd, 501, &me);
	struct web_call de = {.type = F_WEB_DECIDE,
			      .cookie = in.set_cookie,
			      .csrf = csrf,
			      .sid = sid ? sid : "req-none",
			      .outcome = "approved"};
	unsigned st_de = web_call(a, &c, fd, 502, &de);
	cv_arena_reset(a);
	struct cv *f = ipc_frame_new(a, F_LOG, 2);
	char line[160];
	snprintf(line, sizeof line, "replay after logout: pending=%s logout=%u me=%u decide=%u", sid ? "seen" : "none",
		 lo, st_me, st_de);
	MUST(ipc_put_text(a, f, "level", "warning", 7));
	MUST(ipc_put_text(a, f, "text", line, strlen(line)));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	json_decref(j);
	sleep(20);
	return 0;
}

/* web-ctl-ended: list the queue for the reviewer, wait for them to hang up, then decide. */
static int ctl_after_end(struct cv_arena *a)
{
	struct ipc_conn c;
	char err[AS_ERRLEN], *js = NULL;
	int fd = -1;
	MUST(ipc_conn_init(&c, WORKER_IPC_FD, err));
	uint64_t conn = wait_frame(a, &c, F_CONN_NEW, &fd, NULL);
	if (!conn || fd < 0)
		return 1;
	struct cv *f = ipc_frame_new(a, F_CTL_PENDING, 1);
	MUST(ipc_put_uint(a, f, "conn", conn));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	if (!wait_frame(a, &c, F_CTL_REPLY, NULL, &js) || !js)
		return 1;
	json_t *j = json_loads(js, 0, NULL);
	const char *sid =
	    json_string_value(json_object_get(json_array_get(json_object_get(j, "requests"), 0), "session_id"));
	if (!sid || write(fd, "listed\n", 7) != 7)
		return 1;
	char b;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (poll(&p, 1, 20000) == 1 && read(fd, &b, 1) == 1) /* the reviewer leaves */
		;
	cv_arena_reset(a);
	f = ipc_frame_new(a, F_CTL_DECIDE, 3);
	MUST(ipc_put_uint(a, f, "conn", conn));
	MUST(ipc_put_text(a, f, "sid", sid, strlen(sid)));
	MUST(ipc_put_text(a, f, "outcome", "approved", 8));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	json_decref(j);
	free(js);
	close(fd);
	sleep(20); /* answered or not, the test looks at the ledger */
	return 0;
}

/* The gate: a canonical call as the mcp worker encodes it (gateway/proto/call.h), or, bad, a
 * map that is not one. */
static void call_frame(struct cv_arena *a, uint64_t conn, int bad)
{
	struct buf b;
	buf_init(&b, 1u << 16);
	json_t *args = json_pack("{s:s}", "path", "x");
	if (bad) { /* a call with a fifth key: what no mcp worker builds */
		struct cv *m = cv_map(a, 1);
		MUST(cv_set_text(a, &m->items[0], "method", 6));
		MUST(cv_set_text(a, &m->items[1], "tools/call", 10));
		MUST(cbor_encode(m, &b, NULL));
	} else {
		MUST(call_encode("up", "write_file", args, &b, NULL));
	}
	json_decref(args);
	struct cv *f = ipc_frame_new(a, F_CALL, 4);
	MUST(ipc_put_uint(a, f, "conn", conn));
	MUST(ipc_put_text(a, f, "rid", "1", 1));
	MUST(ipc_put_bytes(a, f, "call", b.p, b.len));
	MUST(ipc_put_text(a, f, "client", "evil/1", 6));
	SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	buf_free(&b);
}

/* A hostile upstream worker (scenarios up-*): what a server that compromised its worker
 * could send the signer. Each must be a security event, and nothing may reach an agent. */
static int up_scenario(struct cv_arena *a, const char *sc)
{
	struct cv *f;
	if (!strcmp(sc, "up-hello-as-mcp")) { /* it claims to be the agents' worker */
		hello_as(a, "mcp");
		return 0;
	}
	hello_as(a, "upstream");
	if (!strcmp(sc, "up-result-never-dispatched")) { /* an answer to a call it was never given */
		static const uint8_t empty_map[] = {0xa0};
		f = ipc_frame_new(a, F_UP_RESULT, 2);
		MUST(ipc_put_uint(a, f, "cid", 1));
		MUST(ipc_put_bytes(a, f, "result", empty_map, 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc,
			   "up-agent-frame")) { /* a message for an agent's connection, as if it were the mcp worker */
		call_frame(a, 1, 0);
	} else if (!strcmp(sc, "up-list-frame")) { /* an agent's request, aimed at another client's connection */
		f = ipc_frame_new(a, F_LIST, 2);
		MUST(ipc_put_uint(a, f, "conn", 1));
		MUST(ipc_put_text(a, f, "rid", "1", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "up-review-frame")) { /* a reviewer's decision */
		f = ipc_frame_new(a, F_CTL_DECIDE, 3);
		MUST(ipc_put_uint(a, f, "conn", 1));
		MUST(ipc_put_text(a, f, "sid", "req-x", 5));
		MUST(ipc_put_text(a, f, "outcome", "approved", 8));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "up-tools-not-cbor")) { /* a catalog that is not canonical CBOR */
		f = ipc_frame_new(a, F_UP_TOOLS, 1);
		MUST(ipc_put_bytes(a, f, "tools", (const uint8_t *)"\x81\x18\x01", 3)); /* 1 as a non-shortest uint */
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "up-result-empty")) {
		f = ipc_frame_new(a, F_UP_RESULT, 1);
		MUST(ipc_put_uint(a, f, "cid", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else {
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "signer")) {
		struct signer_opts o = {
		    .state = argv[2], .worker_exe = argv[3], .upstreams = argc == 5 ? argv[4] : NULL, .single_user = 1};
		return signer_main(&o);
	}
	if (argc < 3)
		return 2;
	const char *sc = argv[1];
	int web = !strncmp(sc, "web-", 4), up = !strncmp(sc, "up-", 3);
	/* which worker this scenario plays; the others are real */
	const char *plays = web ? "review" : up ? "upstream" : "mcp";
	if (argc == 5 && !strcmp(argv[3], "--uid")) /* a signer running as root names the worker's uid */
		jail_set_ids((uid_t)strtoul(argv[4], NULL, 10), (gid_t)strtoul(argv[4], NULL, 10));
	if (strcmp(argv[2], plays))
		return !strcmp(argv[2], "mcp")	    ? worker_mcp_main(WORKER_IPC_FD)
		       : !strcmp(argv[2], "review") ? worker_review_main(WORKER_IPC_FD)
						    : worker_upstream_main(WORKER_IPC_FD);
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *f;
	if (up) {
		if (up_scenario(&a, sc) != 0)
			return 2;
		sleep(5);
		return 0;
	}
	if (web && strcmp(sc, "web-before-hello"))
		hello_as(&a, "review");
	if (!strcmp(sc, "gate-call-not-a-call")) { /* the mcp worker: a call that is no canonical call */
		hello(&a);
		call_frame(&a, wait_conn(&a), 1);
	} else if (!strcmp(sc, "gate-upstream-frame")) { /* the mcp worker: an upstream's result */
		static const uint8_t empty_map[] = {0xa0};
		hello(&a);
		f = ipc_frame_new(&a, F_UP_RESULT, 2);
		MUST(ipc_put_uint(&a, f, "cid", 1));
		MUST(ipc_put_bytes(&a, f, "result", empty_map, 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "web-ctl-ended")) {
		return ctl_after_end(&a);
	} else if (!strncmp(sc, "web-replay:", 11)) {
		return web_replay(&a, sc + 11);
	} else if (!strncmp(sc, "http-unmeasured:", 16)) {
		return http_measured(&a, sc + 16, 0);
	} else if (!strncmp(sc, "http-replay:", 12)) {
		return http_measured(&a, sc + 12, 1);
	} else if (!strncmp(sc, "text-", 5)) {
		hello(&a);
		text_request(&a, wait_conn(&a), sc);
		if (!strcmp(sc, "text-context"))
			sleep(25); /* accepted: stays up while the test shows the request */
	} else if (!strcmp(sc, "web-no-fd")) {
		web_request(&a, -1);
	} else if (!strcmp(sc, "web-unix-fd")) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
			return 1;
		web_request(&a, sv[0]);
	} else if (!strcmp(sc, "web-other-port")) {
		web_request(&a, other_tcp());
	} else if (!strcmp(sc, "web-agent-frame")) {
		f = ipc_frame_new(&a, F_LIST, 2);
		MUST(ipc_put_uint(&a, f, "conn", 1));
		MUST(ipc_put_text(&a, f, "rid", "1", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "review-web-frame")) {
		/* Nor a web submission (which would also need the reviewer listener's connection). */
		hello(&a);
		f = ipc_frame_new(&a, F_WEB_SUBMIT, 3);
		MUST(ipc_put_uint(&a, f, "hreq", 1));
		MUST(ipc_put_text(&a, f, "sid", "req-x", 5));
		MUST(ipc_put_bool(&a, f, "approved", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strncmp(sc, "mcp-sends:", 10)) {
		hello(&a); /* a reviewer's command of this type, from the mcp worker */
		f = ipc_frame_new(&a, (uint32_t)strtoul(sc + 10, NULL, 10), 1);
		MUST(ipc_put_uint(&a, f, "conn", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "web-before-hello")) {
		f = ipc_frame_new(&a, F_CTL_WHOAMI, 1); /* a reviewer's command before the worker said hello */
		MUST(ipc_put_uint(&a, f, "conn", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "web-old-cmd")) {
		f = ipc_frame_new(&a, 20, 4); /* the retired F_CTL {conn, cmd, ...}: no type of the table */
		MUST(ipc_put_uint(&a, f, "conn", 1));
		MUST(ipc_put_text(&a, f, "cmd", "decide", 6));
		MUST(ipc_put_text(&a, f, "sid", "req-x", 5));
		MUST(ipc_put_text(&a, f, "outcome", "approved", 8));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "web-extra-field")) {
		f = ipc_frame_new(&a, F_CTL_SHOW, 3); /* a field F_CTL_SHOW does not have, smuggled in */
		MUST(ipc_put_uint(&a, f, "conn", 1));
		MUST(ipc_put_text(&a, f, "sid", "req-x", 5));
		MUST(ipc_put_text(&a, f, "outcome", "approved", 8));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "web-ctl-fd")) {
		f = ipc_frame_new(&a, F_CTL_STATUS, 1); /* a control command carries no descriptor */
		MUST(ipc_put_uint(&a, f, "conn", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, other_tcp(), NULL));
	} else if (!strcmp(sc, "web-decide-no-sid")) {
		f = ipc_frame_new(&a, F_WEB_DECIDE, 2); /* on the listener's own connection, without its id */
		MUST(ipc_put_uint(&a, f, "hreq", 1));
		MUST(ipc_put_text(&a, f, "outcome", "approved", 8));
		SENT(ipc_send(WORKER_IPC_FD, f, listener_conn(), NULL));
	} else if (!strcmp(sc, "hello-twice")) {
		hello(&a);
		hello(&a);
	} else if (!strcmp(sc, "request-before-hello")) {
		f = ipc_frame_new(&a, F_LIST, 2);
		MUST(ipc_put_uint(&a, f, "conn", 1));
		MUST(ipc_put_text(&a, f, "rid", "1", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "review-frame")) {
		/* A decision is a reviewer's frame: the mcp worker may never send it. */
		hello(&a);
		f = ipc_frame_new(&a, F_CTL_DECIDE, 3);
		MUST(ipc_put_uint(&a, f, "conn", 1));
		MUST(ipc_put_text(&a, f, "sid", "req-x", 5));
		MUST(ipc_put_text(&a, f, "outcome", "approved", 8));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "other-conn")) {
		/* Claims a connection (an identity) the signer never handed it. */
		hello(&a);
		f = ipc_frame_new(&a, F_LIST, 2);
		MUST(ipc_put_uint(&a, f, "conn", 424242));
		MUST(ipc_put_text(&a, f, "rid", "1", 1));
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "unknown-type")) {
		hello(&a);
		f = ipc_frame_new(&a, 999, 0);
		SENT(ipc_send(WORKER_IPC_FD, f, -1, NULL));
	} else if (!strcmp(sc, "over-max")) {
		hello(&a);
		raw("\xff\xff\xff\xff", 4);
	} else if (!strcmp(sc, "truncated")) {
		hello(&a);
		raw("\x00\x00\x00\x20\xa1\x61", 6); /* declares 32 bytes, sends 2, exits */
		return 0;
	} else if (!strcmp(sc, "bad-cbor")) {
		hello(&a);
		raw("\x00\x00\x00\x03\xa1\x61\x74", 7); /* a map with a key and no value */
	} else if (!strcmp(sc, "forged-digest")) {
		hello(&a);
		subject_request(&a, wait_conn(&a), "not hello", 1);
	} else if (!strcmp(sc, "computed-no-bytes")) {
		hello(&a);
		subject_request(&a, wait_conn(&a), "hello", 0);
	} else {
		return 2;
	}
	sleep(5); /* the signer is expected to kill us first */
	return 0;
}
