/* The review worker: jailed, it parses the commands reviewers send over the
 * control socket (one JSON object a line, from the `assent` CLI) and forwards each
 * as a frame of its command's own type (F_CTL_*). Who the reviewer is, the signer measured at accept (SO_PEERCRED):
 * nothing this worker says about identity is believed. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/proto/reccfg.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/mhdreq.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/worker.h"
#include "gateway/worker/review/worker_web.h"
#include "gateway/worker/wio.h"

#define CTL_LINE_MAX 65536
#define CTL_TEXT_MAX 16384

struct rconn {
	uint64_t id;
	int fd, used;
	int stuck; /* an answer did not fit in out (a reviewer not reading): closed */
	struct buf in, out;
};

static struct rconn conns[PROTO_CONNS_MAX];
static int g_ipc;

/* One answer line for c's reviewer. */
static void conn_say(struct rconn *c, const char *s, size_t n)
{
	if (buf_put(&c->out, s, n) != 0 || buf_putc(&c->out, '\n') != 0)
		c->stuck = 1;
}

static void reply_error(struct rconn *c, const char *msg)
{
	json_t *j = json_pack("{s:b,s:s}", "ok", 0, "error", msg);
	char *s = json_dumps(j, JSON_COMPACT);
	if (s)
		conn_say(c, s, strlen(s));
	free(s);
	json_decref(j);
}

/* The commands, each its own frame type: what it takes besides the connection. */
enum { CA_SID = 1, CA_DECIDE = 2, CA_OFFSET = 4 };
static const struct {
	const char *name;
	uint32_t type;
	unsigned args;
} ctl_cmds[] = {
    {"pending", F_CTL_PENDING, CA_OFFSET},	  {"show", F_CTL_SHOW, CA_SID}, {"reveal", F_CTL_REVEAL, CA_SID},
    {"decide", F_CTL_DECIDE, CA_SID | CA_DECIDE}, {"whoami", F_CTL_WHOAMI, 0},	{"status", F_CTL_STATUS, 0},
};

struct ctl_args {
	const char *sid, *outcome, *text;
	json_t *opt, *off;
};

/* The frame for command k with its arguments (only those its type has, checked
 * before); NULL when the arena is full. */
static struct cv *ctl_frame(struct cv_arena *a, size_t k, uint64_t conn, const struct ctl_args *x)
{
	unsigned args = ctl_cmds[k].args;
	const char *sid = x->sid, *outcome = x->outcome, *text = x->text;
	json_t *opt = x->opt, *off = x->off;
	struct cv *f = ipc_frame_new(a, ctl_cmds[k].type, 5);
	if (!f || ipc_put_uint(a, f, "conn", conn) ||
	    ((args & CA_SID) && ipc_put_text(a, f, "sid", sid, strlen(sid))) ||
	    ((args & CA_DECIDE) && ipc_put_text(a, f, "outcome", outcome, strlen(outcome))) ||
	    ((args & CA_DECIDE) && text && ipc_put_text(a, f, "text", text, strlen(text))) ||
	    ((args & CA_DECIDE) && opt && ipc_put_uint(a, f, "n", (uint64_t)json_integer_value(opt))) ||
	    ((args & CA_OFFSET) && off && ipc_put_uint(a, f, "offset", (uint64_t)json_integer_value(off))))
		return NULL;
	return f;
}

/* `assent qa|events|event|calls prune`: {"cmd": "records", "op": ..., fields} as F_CTL_QA, each
 * field checked for its type here (and for its bounds by the frame's table at the signer). */
static struct cv *records_frame(struct cv_arena *a, uint64_t conn, const json_t *j, const char **why)
{
	static const char *const texts[] = {"op",    "type",	    "status",  "key", "kind",
					    "title", "description", "contact", "by"};
	/* Their bounds (F_CTL_QA's table in gateway/proto/frames.c: past one, the signer would take
	 * this worker for a compromised one): refused here, naming the field. */
	static const size_t maxes[] = {16,   16,    16,	  PROTO_EVENT_KEY_MAX, PROTO_EVENT_KIND_MAX,
				       1000, 20000, 1000, PROTO_EVENT_BY_MAX};
	static const char *const uints[] = {"id", "offset", "limit", "older"};
	struct cv *f = ipc_frame_new(a, F_CTL_QA, 16);
	if (!f || ipc_put_uint(a, f, "conn", conn))
		return NULL;
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		const json_t *v = json_object_get(j, texts[i]);
		if (v && json_is_string(v) && json_string_length(v) > maxes[i]) {
			static char msg[96];
			snprintf(msg, sizeof msg, "%s: at most %zu bytes", texts[i], maxes[i]);
			*why = msg;
			return NULL;
		}
		if (v &&
		    (!json_is_string(v) || ipc_put_text(a, f, texts[i], json_string_value(v), json_string_length(v)))) {
			*why = "a records command's text field is not text";
			return NULL;
		}
	}
	for (size_t i = 0; i < sizeof uints / sizeof *uints; i++) {
		const json_t *v = json_object_get(j, uints[i]);
		if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
			  ipc_put_uint(a, f, uints[i], (uint64_t)json_integer_value(v)))) {
			*why = "a records command's number is not a number from 0";
			return NULL;
		}
	}
	const json_t *kinds = json_object_get(j, "kinds"), *attrs = json_object_get(j, "attrs");
	if (kinds) {
		struct cv *arr =
		    json_is_array(kinds) && json_array_size(kinds) <= 16 ? cv_array(a, json_array_size(kinds)) : NULL;
		struct cv *slot = arr ? ipc_put(a, f, "kinds") : NULL;
		for (size_t i = 0; slot && i < json_array_size(kinds); i++) {
			const json_t *k = json_array_get(kinds, i);
			if (!json_is_string(k) ||
			    cv_set_text(a, &arr->items[i], json_string_value(k), json_string_length(k)))
				slot = NULL;
		}
		if (!slot) {
			*why = "kinds: at most 16 names";
			return NULL;
		}
		*slot = *arr;
	}
	if (attrs) {
		char *as = json_is_object(attrs) ? json_dumps(attrs, JSON_COMPACT) : NULL;
		int bad = !as || ipc_put_text(a, f, "attrs", as, strlen(as));
		free(as);
		if (bad) {
			*why = "attrs: expected an object";
			return NULL;
		}
	}
	return f;
}

static void handle_line(struct rconn *c, const char *line, size_t len)
{
	json_error_t je;
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	const char *cmd = json_string_value(json_object_get(j, "cmd"));
	if (!j || !json_is_object(j) || !cmd) {
		reply_error(c, "expected a JSON object with a \"cmd\"");
		json_decref(j);
		return;
	}
	if (!strcmp(cmd, "records")) {
		struct cv_arena ra;
		cv_arena_init(&ra, 64);
		const char *why = "cannot forward the command";
		struct cv *rf = records_frame(&ra, c->id, j, &why);
		if (!rf)
			reply_error(c, why);
		else if (ipc_send(g_ipc, rf, -1, NULL) != 0)
			_exit(3);
		cv_arena_free(&ra);
		json_decref(j);
		return;
	}
	size_t k = 0;
	while (k < sizeof ctl_cmds / sizeof *ctl_cmds && strcmp(cmd, ctl_cmds[k].name))
		k++;
	struct ctl_args x = {
	    json_string_value(json_object_get(j, "session_id")), json_string_value(json_object_get(j, "outcome")),
	    json_string_value(json_object_get(j, "text")), json_object_get(j, "option"), json_object_get(j, "offset")};
	const char *sid = x.sid, *outcome = x.outcome, *text = x.text;
	json_t *opt = x.opt, *off = x.off;
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f;
	if (k == sizeof ctl_cmds / sizeof *ctl_cmds)
		reply_error(c, "unknown command (pending, show, decide, whoami, status)");
	else if ((sid && strlen(sid) > 64) || (text && strlen(text) > CTL_TEXT_MAX) ||
		 (outcome && strlen(outcome) > 16))
		reply_error(c, "an argument is too long");
	else if (opt && (!json_is_integer(opt) || json_integer_value(opt) < 1 || json_integer_value(opt) > 64))
		reply_error(c, "option must be a number from 1");
	else if (off && (!json_is_integer(off) || json_integer_value(off) < 0 || json_integer_value(off) > 100000))
		reply_error(c, "offset must be a number from 0 to 100000");
	else if (((ctl_cmds[k].args & CA_SID) && !sid) || ((ctl_cmds[k].args & CA_DECIDE) && !outcome))
		reply_error(c, "malformed command"); /* a decision names its request and outcome; show its request */
	else if (!(f = ctl_frame(&a, k, c->id, &x)))
		reply_error(c, "cannot forward the command");
	else if (ipc_send(g_ipc, f, -1, NULL) != 0)
		_exit(3);
	cv_arena_free(&a);
	json_decref(j);
}

/* The signer holds a slot for every connection it handed over until it hears that
 * the connection ended: tell it each time, or the slots run out. */
static void tell_closed(uint64_t id)
{
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = ipc_frame_new(&a, F_CONN_CLOSED, 1);
	if (f && ipc_put_uint(&a, f, "conn", id) == 0 && ipc_send(g_ipc, f, -1, NULL) != 0)
		_exit(3);
	cv_arena_free(&a);
}

static void conn_close(struct rconn *c)
{
	tell_closed(c->id);
	close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	memset(c, 0, sizeof *c);
}

static int conn_read(struct rconn *c)
{
	char tmp[16384];
	ssize_t n = read(c->fd, tmp, sizeof tmp);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	for (ssize_t i = 0; i < n; i++) {
		if (tmp[i] == '\n') {
			handle_line(c, (const char *)c->in.p, c->in.len);
			buf_reset(&c->in);
		} else if (buf_putc(&c->in, (uint8_t)tmp[i]) != 0) {
			return -1; /* a reviewer's command over 64 KiB: not one of ours */
		}
	}
	return 0;
}

/* A reviewer's connection after poll: read its commands, write what waits for it. */
static void conn_serve(struct rconn *c, short revents)
{
	if (!c->used)
		return;
	if (c->stuck || ((revents & (POLLIN | POLLHUP | POLLERR)) && conn_read(c) != 0)) {
		conn_close(c);
		return;
	}
	while (c->out.len) {
		ssize_t w = write(c->fd, c->out.p, c->out.len);
		if (w <= 0) {
			if (w < 0 && errno == EAGAIN)
				break;
			conn_close(c);
			break;
		}
		memmove(c->out.p, c->out.p + w, c->out.len - (size_t)w);
		c->out.len -= (size_t)w;
	}
}

/* A frame from the signer, its table checked (wio_frames). */
static void on_frame(void *arg, struct ipc_frame *f)
{
	(void)arg;
	if (f->type == F_WEB_REPLY || f->type == F_WEB_PUSH || f->type == F_STATS) {
		web_frame(f);
		return;
	}
	uint64_t conn = frame_get_uint(f->body, "conn");
	if (f->type == F_CONN_NEW && f->nfds == 1) {
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
			if (conns[i].used)
				continue;
			conns[i] = (struct rconn){.id = conn, .fd = f->fds[0], .used = 1};
			f->fds[0] = -1;
			buf_init(&conns[i].in, CTL_LINE_MAX);
			buf_init(&conns[i].out, 64u << 20);
			return;
		}
		tell_closed(conn); /* full: the descriptor is closed with the frame */
		return;
	}
	if (f->type == F_CTL_REPLY) { /* the line the CLI reads is the JSON, which says what went wrong */
		size_t n;
		const char *js = frame_get_text(f->body, "json", &n);
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
			if (conns[i].used && conns[i].id == conn)
				conn_say(&conns[i], js, n);
		}
	}
}

int worker_review_main(int ipcfd)
{
	char err[AS_ERRLEN];
	struct ipc_conn ipc;
	g_ipc = ipcfd;
	if (ipc_conn_init(&ipc, ipcfd, err) != 0)
		return 2;
	struct cv_arena a;
	cv_arena_init(&a, 1u << 16);
	if (web_start(&ipc, ipcfd, &a, err) != 0) {
		ipc_log(g_ipc, "error", "review worker: reviewer listener: %s", err);
		return 2;
	}
	struct jail_opts jo = {.max_fds = PROTO_CONNS_MAX + 16 + web_max_fds()};
	if (web_on())
		mr_jail_allow(&jo); /* libmicrohttpd's accept and socket options */
	if (jail_enter(&jo, err) != 0) {
		ipc_log(g_ipc, "error", "review worker: cannot enter the jail: %s", err);
		return 2;
	}
	struct cv *hello = frame_hello(&a, "review");
	if (!hello || ipc_send(ipcfd, hello, -1, err) != 0)
		return 2;
	struct pollfd pf[PROTO_CONNS_MAX + 3];
	size_t map[PROTO_CONNS_MAX + 3];
	for (;;) {
		size_t n = 0;
		pf[n++] = (struct pollfd){.fd = ipcfd, .events = POLLIN};
		size_t first = n += web_poll_fds(&pf[n]); /* libmicrohttpd's epoll sets, nested */
		for (size_t i = 0; i < PROTO_CONNS_MAX; i++) {
			if (!conns[i].used)
				continue;
			map[n] = i;
			pf[n++] = (struct pollfd){.fd = conns[i].fd,
						  .events = (short)(POLLIN | (conns[i].out.len ? POLLOUT : 0))};
		}
		if (poll(pf, n, web_on() ? web_timeout_ms(1000) : -1) < 0 && errno != EINTR)
			return 2;
		if (pf[0].revents) {
			int r = wio_frames(&ipc, &a, on_frame, NULL, err);
			if (r != 0)
				return r == 1 ? 0 : 2; /* 1: the signer went away */
		}
		for (size_t i = first; i < n; i++)
			conn_serve(&conns[map[i]], pf[i].revents);
		if (web_on())
			web_run();
	}
}
