/* `assent request`: a script or pipeline step asks for a decision (issue 17). It is an
 * MCP client of the daemon's agent socket, as `assentd --stdio` relays for agents: it
 * asks request_feedback with wait=false, then collects with get_feedback a minute at a
 * time (reconnecting when the daemon restarts), saying on stderr where the request
 * can be reviewed. stdout gets only the result: the approval token (the answer for
 * input and selection), or with --json the whole decision. Exit 0 approved or
 * answered, 1 rejected, denied or cancelled, 3 timed out, 2 usage or I/O error.
 * Local only for now: it is the agent its uid is registered as (assent agent add
 * --uid); requests from another machine go through the HTTP listener with a key. */
#define _GNU_SOURCE
#include "gateway/cli/cli.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gateway/cli/reqans.h"
#include "gateway/proto/limits.h"
#include "gateway/worker/upstream/uhttp.h"

#define REQ_WAIT 50 /* get_feedback's wait_seconds: its maximum (MCP_WAIT_MAX) */
#define CLOSED 2    /* the connection ended: reconnect (errors are negative AS_E*) */

struct conn {
	int fd;
	struct buf in; /* bytes read and not yet a whole line */
	long long next_id;
	/* --url: the daemon's HTTP listener through the upstream client (uhttp: MCP's
	 * streamable HTTP, its session id, SSE or JSON answers, TLS with mbedTLS) */
	struct uhttp *u;
	struct uhttp_conn *hc;
	const char *host;
	char port[8];
};

/* What one HTTP request brought: the answer to want (or why none), and how it ended. */
struct hreq {
	long long want;
	json_t *result;
	int rc, done, lost, session_lost, status;
	char err[AS_ERRLEN];
};

static int h_msg(void *arg, const char *json, size_t n)
{
	struct hreq *h = arg;
	if (h->result || h->rc < 0)
		return 0;
	int r = reqans_parse(json, n, h->want, &h->result, h->err);
	if (r < 0)
		h->rc = r;
	return 0;
}

static void h_event(void *arg, enum uhttp_event ev, int status)
{
	struct hreq *h = arg;
	if (ev == UHTTP_EV_DONE) {
		h->done = 1;
		h->status = status;
	} else if (ev == UHTTP_EV_SESSION_LOST) {
		h->session_lost = 1;
	} else if (ev == UHTTP_EV_LOST) {
		h->lost = 1;
	}
}

static int tcp_connect(struct conn *c, char *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int g = getaddrinfo(c->host, c->port, &hints, &ai), fd = -1, e = 0;
	if (g != 0)
		return as_fail(err, AS_EIO, "--url: cannot resolve %s: %s", c->host, gai_strerror(g));
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return as_fail(err, AS_EIO, "--url: cannot connect to %s port %s: %s", c->host, c->port, strerror(e));
	int one = 1; /* mbedTLS sends each handshake record on its own: no Nagle delay */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* One JSON-RPC message over HTTP (id < 0: a notification): 1 with *res, < 0 with err,
 * CLOSED when the connection or the MCP session ended (open again, then retry). */
static int http_rpc(struct conn *c, json_t *msg, long long id, const char *method, const char *name, json_t **res,
		    char *err)
{
	*res = NULL;
	if (uhttp_fd(c->hc) < 0) {
		int fd = tcp_connect(c, err);
		if (fd < 0 || uhttp_attach(c->hc, fd, err) != 0) {
			json_decref(msg);
			return fd < 0 ? fd : CLOSED;
		}
	}
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		return as_fail(err, AS_ENOMEM, "out of memory");
	struct hreq h = {.want = id};
	struct uhttp_cb cb = {h_msg, h_event, &h};
	struct uhttp_req rq = {.method = method, .name = name};
	int rc = uhttp_send_req(c->hc, s, strlen(s), &rq, err);
	free(s);
	if (rc != 0)
		return CLOSED;
	while (!h.done && !h.lost) {
		struct pollfd pf = {.fd = uhttp_fd(c->hc), .events = uhttp_want(c->hc)};
		/* get_feedback answers within REQ_WAIT seconds: far past that the daemon is gone */
		int k = poll(&pf, 1, (REQ_WAIT + 60) * 1000);
		if (k == 0) {
			uhttp_close(c->hc, &cb);
			break;
		}
		if (k < 0 && errno != EINTR)
			return as_fail(err, AS_EIO, "poll: %s", strerror(errno));
		if (uhttp_io(c->hc, &cb, h.err) != 0 && !h.lost)
			return as_fail(err, AS_EIO, "%s", h.err);
	}
	if (h.rc < 0) {
		json_decref(h.result);
		return as_fail(err, h.rc, "%s", h.err);
	}
	if (h.session_lost || !h.done) {
		json_decref(h.result);
		return CLOSED;
	}
	if (h.status == 401 || h.status == 403)
		return as_fail(err, AS_EINVAL, "the daemon refused the agent key (HTTP %d): check ASSENT_AGENT_KEY",
			       h.status);
	if (id < 0)
		return h.status / 100 == 2 ? 1 : as_fail(err, AS_EIO, "the daemon answered HTTP %d", h.status);
	if (!h.result)
		return as_fail(err, AS_EIO, "the daemon answered HTTP %d without the call's answer", h.status);
	*res = h.result;
	return 1;
}

/* --url http[s]://HOST[:PORT][/PATH] with ASSENT_AGENT_KEY (never a flag: ps shows flags). */
static int http_setup(struct conn *c, const char *url, const char *ca, char *err)
{
	static char hostbuf[256], pathbuf[1024], auth[512];
	const char *scheme = !strncmp(url, "https://", 8) ? "https" : !strncmp(url, "http://", 7) ? "http" : NULL;
	if (!scheme)
		return as_fail(err, AS_EINVAL, "--url: expected http://HOST[:PORT][/PATH] or https://..., got '%s'",
			       url);
	const char *h = url + strlen(scheme) + 3, *slash = strchr(h, '/'), *end = slash ? slash : h + strlen(h);
	const char *colon = memchr(h, ':', (size_t)(end - h));
	size_t hl = (size_t)((colon ? colon : end) - h);
	if (hl == 0 || hl >= sizeof hostbuf)
		return as_fail(err, AS_EINVAL, "--url: no host in '%s'", url);
	memcpy(hostbuf, h, hl);
	hostbuf[hl] = 0;
	uint64_t port = strcmp(scheme, "https") ? 80 : 443;
	if (colon) {
		char pb[8];
		size_t pl = (size_t)(end - colon - 1);
		if (pl == 0 || pl >= sizeof pb)
			return as_fail(err, AS_EINVAL, "--url: bad port in '%s'", url);
		memcpy(pb, colon + 1, pl);
		pb[pl] = 0;
		if (parse_u64(pb, &port) != 0 || port == 0 || port > 65535)
			return as_fail(err, AS_EINVAL, "--url: bad port in '%s'", url);
	}
	snprintf(pathbuf, sizeof pathbuf, "%s", slash && slash[1] ? slash : "/mcp");
	const char *key = getenv("ASSENT_AGENT_KEY");
	if (!key || !*key)
		return as_fail(err, AS_EINVAL,
			       "--url needs the agent's key in ASSENT_AGENT_KEY (assent agent add NAME)");
	if ((size_t)snprintf(auth, sizeof auth, "Bearer %s", key) >= sizeof auth)
		return as_fail(err, AS_EINVAL, "ASSENT_AGENT_KEY is too long");
	c->host = hostbuf;
	snprintf(c->port, sizeof c->port, "%u", (unsigned)port);
	static struct uhttp_header hdr;
	hdr.name = "Authorization";
	hdr.value = auth;
	struct uhttp_cfg cfg = {.scheme = scheme,
				.host = hostbuf,
				.port = (uint16_t)port,
				.path = pathbuf,
				.headers = &hdr,
				.nheaders = 1,
				.ca = ca};
	int rc = uhttp_new(&cfg, &c->u, err);
	explicit_bzero(auth, sizeof auth);
	if (rc != 0)
		return rc;
	return uhttp_conn_new(c->u, &c->hc, err);
}

/* A message and, for a call (id >= 0), its answer, over the socket or HTTP. */
static int conn_send(struct conn *c, json_t *msg);
static int conn_await(struct conn *c, long long id, json_t **res, char *err);
static int conn_rpc(struct conn *c, json_t *msg, long long id, const char *method, const char *name, json_t **res,
		    char *err)
{
	*res = NULL;
	if (c->hc)
		return http_rpc(c, msg, id, method, name, res, err);
	if (conn_send(c, msg) != 0)
		return CLOSED;
	return id < 0 ? 1 : conn_await(c, id, res, err);
}

static int conn_send(struct conn *c, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		return -1;
	size_t n = strlen(s), off = 0;
	int rc = 0;
	while (off < n && rc == 0) {
		ssize_t w = write(c->fd, s + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			rc = -1;
		else
			off += (size_t)w;
	}
	free(s);
	return rc == 0 && write(c->fd, "\n", 1) == 1 ? 0 : -1;
}

/* The result of call `id`: 1 with *res, < 0 with err (the daemon said no), CLOSED when
 * the connection ended (reconnect), skipping notifications in between. */
static int conn_await(struct conn *c, long long id, json_t **res, char *err)
{
	for (;;) {
		uint8_t *nl = c->in.len ? memchr(c->in.p, '\n', c->in.len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - c->in.p);
			int r = reqans_parse((const char *)c->in.p, n, id, res, err);
			memmove(c->in.p, nl + 1, c->in.len - n - 1);
			c->in.len -= n + 1;
			if (r != 0)
				return r;
			continue;
		}
		if (c->in.len > LINE_MAX_BYTES)
			return as_fail(err, AS_EINVAL, "the daemon sent a line over %u bytes", LINE_MAX_BYTES);
		if (buf_reserve(&c->in, 65536) != 0)
			return as_fail(err, AS_ENOMEM, "out of memory");
		ssize_t r = read(c->fd, c->in.p + c->in.len, 65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return CLOSED;
		c->in.len += (size_t)r;
	}
}

static int conn_open(const char *state, struct conn *c, char *err)
{
	if (!c->hc) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", state, STATE_AGENT_SOCK);
		if ((c->fd = unix_connect(path)) < 0) {
			int e = errno;
			if (e == ENAMETOOLONG)
				return as_fail(err, AS_EINVAL, "%s: the path is too long for a socket", path);
			return as_fail(err, AS_EIO,
				       "no daemon answers at %s: %s (start it: make run, or assentd --state %s)", path,
				       strerror(e), state);
		}
		c->in.len = 0;
	}
	json_t *res = NULL;
	long long id = c->next_id++;
	/* initialize's result has no decision in it: any answer to the id will do */
	int r = conn_rpc(c,
			 json_pack("{s:s,s:I,s:s,s:{s:s,s:{},s:{s:s,s:s}}}", "jsonrpc", "2.0", "id", id, "method",
				   "initialize", "params", "protocolVersion", "2025-06-18", "capabilities",
				   "clientInfo", "name", "assent-request", "version", "1"),
			 id, "initialize", NULL, &res, err);
	json_decref(res);
	if (r == CLOSED)
		return as_fail(err, AS_EIO, "the daemon closed the connection during initialize");
	if (r < 0)
		return r;
	r = conn_rpc(c, json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"), -1,
		     "notifications/initialized", NULL, &res, err);
	json_decref(res);
	return r == 1 ? 0 : r == CLOSED ? as_fail(err, AS_EIO, "the daemon closed the connection") : r;
}

/* One tools/call: 1 with the decision in *res, < 0 with err, CLOSED when the connection ended. */
static int conn_tool(struct conn *c, const char *name, json_t *args, json_t **res, char *err)
{
	long long id = c->next_id++;
	json_t *result = NULL;
	int r = conn_rpc(c,
			 json_pack("{s:s,s:I,s:s,s:{s:s,s:o}}", "jsonrpc", "2.0", "id", id, "method", "tools/call",
				   "params", "name", name, "arguments", args),
			 id, "tools/call", name, &result, err);
	if (r != 1)
		return r;
	*res = reqans_decision(result, err);
	json_decref(result);
	return *res ? 1 : AS_EINVAL;
}

static int add_subject(json_t *subjects, const char *path, size_t *total, char *err)
{
	struct buf b, e;
	buf_init(&b, MCP_CONTENT_MAX);
	if (file_read(path, MCP_CONTENT_MAX, &b, err) != 0) {
		buf_free(&b);
		return -1;
	}
	*total += b.len;
	if (*total > MCP_CONTENT_MAX) {
		buf_free(&b);
		return as_fail(err, AS_EINVAL, "--subject: the files together exceed %u bytes", MCP_CONTENT_MAX);
	}
	buf_init(&e, b.len / 3 * 4 + 8);
	int rc = b64_encode(b.p, b.len, &e);
	const char *base = strrchr(path, '/');
	if (rc == 0)
		json_array_append_new(subjects, json_pack("{s:s,s:s%}", "name", base ? base + 1 : path, "content",
							  (const char *)e.p, e.len));
	buf_free(&b);
	buf_free(&e);
	return rc == 0 ? 0 : as_fail(err, AS_ENOMEM, "out of memory");
}

/* The context file: a JSON object as it is, anything else (a plan's text) as a string. */
static json_t *load_context(const char *path, char *err)
{
	struct buf b;
	buf_init(&b, LINE_MAX_BYTES);
	if (file_read(path, LINE_MAX_BYTES, &b, err) != 0) {
		buf_free(&b);
		return NULL;
	}
	json_t *v = json_loadb((const char *)b.p, b.len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		v = json_stringn((const char *)b.p, b.len);
		if (!v)
			as_fail(err, AS_EINVAL, "--context-file %s: neither a JSON object nor UTF-8 text", path);
	}
	buf_free(&b);
	return v;
}

/* The review page's link to this request: ASSENT_REVIEW_URL here, else the one the daemon's
 * answer gave (review_url), else from its STATE/assentd.json. */
static void review_link(const char *state, const char *sid, const char *given, char *out, size_t n)
{
	const char *base = getenv("ASSENT_REVIEW_URL"); /* the page as reviewers reach it, e.g. behind nginx */
	if (base && *base) {
		snprintf(out, n, "%s%sreview#%s", base, base[strlen(base) - 1] == '/' ? "" : "/", sid);
		return;
	}
	size_t gl = given ? strlen(given) : 0;
	for (size_t i = 0; i < gl; i++) /* the daemon's text, printed to a terminal: printable ASCII only */
		if ((unsigned char)given[i] < 0x20 || (unsigned char)given[i] >= 0x7f)
			gl = n;
	if (given && gl && gl < n) {
		snprintf(out, n, "%s", given);
		return;
	}
	if (!state) {
		snprintf(out, n, "request %s (set ASSENT_REVIEW_URL for the page's link)", sid);
		return;
	}
	char path[4200];
	snprintf(path, sizeof path, "%s/assentd.json", state);
	json_t *d = json_load_file(path, 0, NULL);
	const char *hp = json_string_value(json_object_get(d, "review"));
	if (hp)
		snprintf(out, n, "http://%s/review#%s", hp, sid);
	else
		snprintf(out, n, "assent --state %s show %s", state, sid);
	json_decref(d);
}

static const char request_usage[] =
    "usage: assent request --message TEXT [--type approval|confirmation|input|selection]\n"
    "         [--context-file FILE] [--subject FILE]... [--audience AUD] [--timeout SECONDS]\n"
    "         [--option TEXT]... [--default TEXT] [--json] [--url URL [--ca FILE]]\n"
    "  --url: the daemon's HTTP listener (http[s]://HOST:PORT[/mcp]) with the agent's key\n"
    "         in ASSENT_AGENT_KEY, instead of STATE/agent.sock\n";

static int finish(json_t *res, int as_json)
{
	const char *st = json_string_value(json_object_get(res, "status"));
	const char *tok = json_string_value(json_object_get(res, "approval_token"));
	const char *resp = json_string_value(json_object_get(res, "response"));
	int ok = json_is_true(json_object_get(res, "approved")) || !strcmp(st, "answered") || !strcmp(st, "selected");
	int rc = ok ? 0 : !strcmp(st, "timeout") ? 3 : 1;
	if (as_json) {
		json_dumpf(res, stdout, JSON_COMPACT);
		fputc('\n', stdout);
	} else if (ok && tok) {
		printf("%s\n", tok);
	} else if (ok) {
		printf("%s\n", resp ? resp : "");
	}
	if (!ok) {
		const char *why = resp ? resp : json_string_value(json_object_get(res, "error"));
		fprintf(stderr, "assent request: %s%s%s\n", st, why ? ": " : "", why ? why : "");
	} else if (!as_json) {
		const char *by = json_string_value(json_object_get(res, "reviewer"));
		fprintf(stderr, "assent request: %s%s%s\n", st, by ? " by " : "", by ? by : "");
	}
	json_decref(res);
	return rc;
}

/* The command line's flags that are not arguments of request_feedback. */
struct request_flags {
	int as_json, help;
	const char *url, *ca;
};

/* request_feedback's arguments from the command line, into args; 0 (help set for --help)
 * or die()'s code. */
static int request_args(json_t *args, struct request_flags *fl, int argc, char **argv)
{
	json_t *subjects = json_array(), *options = json_array();
	size_t total = 0;
	char err[AS_ERRLEN];
	json_object_set_new(args, "type", json_string("approval"));
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
			fputs(request_usage, stdout);
			fl->help = 1;
			return 0;
		}
		if (!strcmp(f, "--json")) {
			fl->as_json = 1;
			continue;
		}
		if (!v)
			return die(2, "request: %s needs a value\n%s", f, request_usage);
		i++;
		if (!strcmp(f, "--type") || !strcmp(f, "--message") || !strcmp(f, "--audience") ||
		    !strcmp(f, "--default")) {
			json_t *s = json_string(v);
			if (!s)
				return die(2, "request: %s: not UTF-8", f);
			json_object_set_new(args, f + 2, s);
		} else if (!strcmp(f, "--option")) {
			json_t *s = json_string(v);
			if (!s)
				return die(2, "request: --option: not UTF-8");
			json_array_append_new(options, s);
		} else if (!strcmp(f, "--timeout")) {
			char *end;
			errno = 0;
			long long t = strtoll(v, &end, 10);
			if (errno || *end || t < 1 || t > MCP_TIMEOUT_MAX)
				return die(2, "request: --timeout: expected 1 to %d seconds, got '%s'", MCP_TIMEOUT_MAX,
					   v);
			json_object_set_new(args, "timeout_override", json_integer(t));
		} else if (!strcmp(f, "--context-file")) {
			json_t *c = load_context(v, err);
			if (!c)
				return die(2, "request: %s", err);
			json_object_set_new(args, "context", c);
		} else if (!strcmp(f, "--url")) {
			fl->url = v;
		} else if (!strcmp(f, "--ca")) {
			fl->ca = v;
		} else if (!strcmp(f, "--subject")) {
			if (add_subject(subjects, v, &total, err) != 0)
				return die(2, "request: --subject %s: %s", v, err);
		} else {
			return die(2, "request: unknown option '%s'\n%s", f, request_usage);
		}
	}
	if (!json_object_get(args, "message"))
		return die(2, "request: --message is required\n%s", request_usage);
	if (json_array_size(subjects))
		json_object_set(args, "subject", subjects);
	if (json_array_size(options))
		json_object_set(args, "options", options);
	json_decref(subjects);
	json_decref(options);
	json_object_set_new(args, "wait", json_false());
	return 0;
}

/* One get_feedback into *res; when the daemon went away (a restart: its ledger keeps the
 * request), reconnect and ask again, up to 30 times. 0 or die()'s code. */
static int request_poll(struct conn *c, const char *state, const char *sid, json_t **res, char *err)
{
	int r, fails = 0;
	for (;;) {
		r = conn_tool(c, "get_feedback", json_pack("{s:s,s:i}", "session_id", sid, "wait_seconds", REQ_WAIT),
			      res, err);
		if (r != CLOSED)
			break;
		/* the daemon went away (a restart): its ledger keeps the request; ask again */
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		if (c->hc) { /* a new connection; uhttp keeps the MCP session until a 404 ends it */
			uhttp_conn_free(c->hc);
			c->hc = NULL;
			if (uhttp_conn_new(c->u, &c->hc, err) != 0)
				return die(2, "request: %s", err);
		}
		if (++fails > 30)
			return die(2, "request: lost the daemon and could not reconnect (%s)", sid);
		fprintf(stderr, "assent request: the daemon closed the connection; reconnecting\n");
		sleep(2);
		if (conn_open(state, c, err) != 0)
			fprintf(stderr, "assent request: %s\n", err);
	}
	if (r < 0)
		return die(2, "request: %s (%s)", err, sid);
	return 0;
}

int cmd_request(const char *state, int argc, char **argv)
{
	json_t *args = json_object();
	struct request_flags fl = {0};
	char err[AS_ERRLEN];
	int rc = request_args(args, &fl, argc, argv);
	if (rc != 0 || fl.help)
		return rc;
	const char *url = fl.url;

	struct conn c = {.fd = -1, .next_id = 1};
	buf_init(&c.in, LINE_MAX_BYTES + 65536);
	json_t *res = NULL;
	if (fl.ca && !url)
		return die(2, "request: --ca is for --url https://...");
	if (url && http_setup(&c, url, fl.ca, err) != 0)
		return die(2, "request: %s", err);
	if (conn_open(state, &c, err) != 0)
		return die(2, "request: %s", err);
	int r = conn_tool(&c, "request_feedback", args, &res, err);
	if (r == CLOSED)
		return die(2, "request: the daemon closed the connection before answering");
	if (r < 0)
		return die(2, "request: %s", err);
	char sid[MCP_SESSION_ID_MAX + 1], link[4400];
	const char *sv = json_string_value(json_object_get(res, "session_id"));
	snprintf(sid, sizeof sid, "%s", sv ? sv : "");
	const char *warning = json_string_value(json_object_get(res, "warning"));
	if (warning)
		fprintf(stderr, "assent request: WARNING: %s\n", warning);
	time_t start = time(NULL);
	int said = 0;
	while (!strcmp(json_string_value(json_object_get(res, "status")), "pending")) {
		if (!said++) {
			review_link(url ? NULL : state, sid, json_string_value(json_object_get(res, "review_url")),
				    link, sizeof link);
			fprintf(stderr, "assent request: waiting for a reviewer: %s\n", link);
		} else {
			fprintf(stderr, "assent request: still waiting (%lld min): %s\n",
				(long long)(time(NULL) - start) / 60, link);
		}
		json_decref(res);
		res = NULL;
		if ((rc = request_poll(&c, state, sid, &res, err)) != 0)
			return rc;
	}
	if (c.fd >= 0)
		close(c.fd);
	uhttp_conn_free(c.hc);
	uhttp_free(c.u);
	buf_free(&c.in);
	return finish(res, fl.as_json);
}
