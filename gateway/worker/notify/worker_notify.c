/* The notify worker: it POSTs the signer's webhook deliveries and witness requests (C2SP
 * tlog-witness add-checkpoint, F_WITNESS_POST) and says how each ended; a witness's answer
 * is read here (wresp.h) and only its fields go back (F_WITNESS_DONE).
 * It parses the only bytes webhook receivers send back (TLS records, HTTP responses),
 * so it is jailed like every worker, and it can reach nothing by itself: the signer
 * connects each delivery's socket, to an address it resolved from STATE/notify.json, and
 * hands it over with the delivery (F_NOTIFY_POST); the jail has no socket or connect and
 * its Landlock ruleset allows no network right. The bodies and their signatures are the
 * signer's (it holds the secrets); here they are only sent. One connection per delivery,
 * closed when it ends; a delivery with no complete answer in PROTO_NOTIFY_TIMEOUT_MS ends
 * with status 0 (the signer retries). */
#include "gateway/worker/worker.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/notify/wresp.h"
#include "gateway/worker/upstream/uhttp.h"
#include "gateway/worker/wio.h"

struct nconn {
	struct uhttp_conn *c;
	uint64_t id, started;
	int used, reported;
	int status; /* the response's HTTP status once DONE; 0 none yet */
	char why[PROTO_NOTIFY_ERROR_MAX];
	int witness;  /* a witness request: its answer is read */
	size_t blen;  /* the answer's bytes in body */
	int too_long; /* more than PROTO_WITNESS_RESP_MAX came */
	uint8_t body[PROTO_WITNESS_RESP_MAX];
};

struct nw {
	int ipcfd;
	struct ipc_conn ipc;
	struct cv_arena arena;
	struct uhttp *u[PROTO_NOTIFY_HOOKS_MAX];
	size_t nhooks;
	struct uhttp *wu[PROTO_WITNESS_MAX]; /* each witness's add-checkpoint */
	size_t nwit;
	struct nconn conns[PROTO_NOTIFY_INFLIGHT];
};

/* The cosignature lines' fields, as F_WITNESS_DONE's cosigs (frames.c's witness_cosig). */
static int put_cosigs(struct cv_arena *a, struct cv *f, const struct wresp *r)
{
	struct cv *arr = cv_array(a, r->n), *slot;
	for (size_t i = 0; arr && i < r->n; i++) {
		const struct wresp_cosig *c = &r->c[i];
		struct cv *m = cv_map(a, 4);
		if (!m || cv_set_text(a, &m->items[0], "name", 4) ||
		    cv_set_text(a, &m->items[1], c->name, strlen(c->name)) ||
		    cv_set_text(a, &m->items[2], "keyid", 5) ||
		    cv_set_bytes(a, &m->items[3], c->keyid, sizeof c->keyid) ||
		    cv_set_text(a, &m->items[4], "time", 4) || cv_set_text(a, &m->items[6], "sig", 3) ||
		    cv_set_bytes(a, &m->items[7], c->sig, sizeof c->sig))
			return -1;
		cv_set_uint(&m->items[5], c->time);
		arr->items[i] = *m;
	}
	if (!arr || !(slot = ipc_put(a, f, "cosigs")))
		return -1;
	*slot = *arr;
	return 0;
}

/* A witness request ended: its status, and what its answer says (or why it was refused). */
static void witness_done(struct nw *w, struct nconn *n, int status, const char *why)
{
	static struct wresp r;
	char err[AS_ERRLEN] = "", perr[AS_ERRLEN] = "";
	int bad = n->too_long ? as_fail(perr, AS_EINVAL, "an answer of more than %d bytes", PROTO_WITNESS_RESP_MAX)
			      : wresp_parse(status, n->body, n->blen, &r, perr);
	if (bad) {
		memset(&r, 0, sizeof r);
		why = perr;
	}
	cv_arena_reset(&w->arena);
	struct cv *f = ipc_frame_new(&w->arena, F_WITNESS_DONE, 5);
	size_t wl = why ? strnlen(why, PROTO_NOTIFY_ERROR_MAX - 1) : 0;
	if (!f || ipc_put_uint(&w->arena, f, "id", n->id) || ipc_put_uint(&w->arena, f, "status", (uint64_t)status) ||
	    (wl && ipc_put_text(&w->arena, f, "error", why, wl)) ||
	    (r.has_size && ipc_put_uint(&w->arena, f, "size", r.size)) || (r.n && put_cosigs(&w->arena, f, &r)) ||
	    ipc_conn_send(&w->ipc, f, -1, err) != 0)
		ipc_log(w->ipcfd, "error", "notify worker: cannot report witness request %llu",
			(unsigned long long)n->id);
}

static void done(struct nw *w, struct nconn *n, int status, const char *why)
{
	if (n->reported)
		return;
	n->reported = 1;
	if (n->witness) {
		witness_done(w, n, status, why);
		return;
	}
	cv_arena_reset(&w->arena);
	char err[AS_ERRLEN];
	struct cv *f = ipc_frame_new(&w->arena, F_NOTIFY_DONE, 3);
	size_t wl = why ? strnlen(why, PROTO_NOTIFY_ERROR_MAX - 1) : 0;
	if (!f || ipc_put_uint(&w->arena, f, "id", n->id) || ipc_put_uint(&w->arena, f, "status", (uint64_t)status) ||
	    (wl && ipc_put_text(&w->arena, f, "error", why, wl)) || ipc_conn_send(&w->ipc, f, -1, err) != 0)
		ipc_log(w->ipcfd, "error", "notify worker: cannot report delivery %llu", (unsigned long long)n->id);
}

static void on_event(void *arg, enum uhttp_event ev, int status)
{
	struct nconn *n = arg;
	if (ev == UHTTP_EV_DONE && !n->status)
		n->status = status;
	else if (ev == UHTTP_EV_LOST && !n->status && !n->why[0])
		snprintf(n->why, sizeof n->why, "the connection ended before a complete response");
}

static int on_msg(void *arg, const char *json, size_t len)
{
	struct nconn *n = arg; /* a receiver's JSON answer is not read: only its status counts */
	if (!n->witness)
		return 0;
	/* a witness's: its whole body, once (uhttp_cfg.raw), kept for wresp_parse */
	if (len > sizeof n->body - n->blen) {
		n->too_long = 1;
		return 0;
	}
	memcpy(n->body + n->blen, json, len);
	n->blen += len;
	return 0;
}

static void conn_end(struct nw *w, struct nconn *n)
{
	done(w, n, n->status, n->status ? NULL : n->why[0] ? n->why : "no response");
	uhttp_conn_free(n->c);
	memset(n, 0, sizeof *n);
}

/* A delivery: {id, hook, body, headers} and its socket. */
static void on_post(struct nw *w, struct ipc_frame *f)
{
	char err[AS_ERRLEN];
	size_t blen;
	uint64_t id = frame_get_uint(f->body, "id"), hook = frame_get_uint(f->body, "hook");
	const char *body = frame_get_text(f->body, "body", &blen);
	const struct cv *hs = frame_get(f->body, "headers", CV_ARRAY);
	if (hook >= w->nhooks || f->nfds != 1) {
		ipc_log(w->ipcfd, "error", "notify worker: a bad delivery frame: hook %llu of %zu, %zu descriptors",
			(unsigned long long)hook, w->nhooks, f->nfds);
		return;
	}
	struct nconn *n = NULL;
	for (size_t i = 0; i < PROTO_NOTIFY_INFLIGHT && !n; i++)
		if (!w->conns[i].used)
			n = &w->conns[i];
	struct nconn busy = {.id = id};
	if (!n) {
		done(w, &busy, 0, "the notify worker has no free connection");
		return;
	}
	/* The frame's text is not NUL-terminated: each header is copied into a C string for
	 * uhttp_send_req, which writes the whole request into its own buffer before it returns. */
	static char hv[PROTO_NOTIFY_HEADERS_MAX][2][PROTO_NOTIFY_HEADER_MAX + 1];
	struct uhttp_header xh[PROTO_NOTIFY_HEADERS_MAX];
	for (size_t i = 0; i < hs->n; i++) {
		const struct cv *p = &hs->items[i];
		if (p->t != CV_ARRAY || p->n != 2 || p->items[0].t != CV_TEXT || p->items[1].t != CV_TEXT ||
		    p->items[0].n >= sizeof hv[i][0] || p->items[1].n >= sizeof hv[i][1]) {
			done(w, &busy, 0, "a bad header in the delivery frame");
			return;
		}
		for (int k = 0; k < 2; k++)
			snprintf(hv[i][k], sizeof hv[i][k], "%.*s", (int)p->items[k].n, (const char *)p->items[k].s);
		xh[i] = (struct uhttp_header){hv[i][0], hv[i][1]};
	}
	*n = (struct nconn){.used = 1, .id = id, .started = mono_ms()};
	struct uhttp_req rq = {.extra = xh, .nextra = hs->n};
	if (uhttp_conn_new(w->u[hook], &n->c, err) != 0 || uhttp_attach(n->c, f->fds[0], err) != 0) {
		done(w, n, 0, err);
		uhttp_conn_free(n->c);
		memset(n, 0, sizeof *n);
		return;
	}
	f->fds[0] = -1; /* the connection's now */
	if (uhttp_send_req(n->c, body, blen, &rq, err) != 0) {
		snprintf(n->why, sizeof n->why, "%s", err);
		conn_end(w, n);
	}
}

/* A witness request: {id, witness, body} and its socket. */
static void on_witness_post(struct nw *w, struct ipc_frame *f)
{
	char err[AS_ERRLEN];
	size_t blen;
	uint64_t id = frame_get_uint(f->body, "id"), wi = frame_get_uint(f->body, "witness");
	const char *body = frame_get_text(f->body, "body", &blen);
	struct nconn busy = {.id = id, .witness = 1}, *n = NULL;
	if (wi >= w->nwit || f->nfds != 1) {
		ipc_log(w->ipcfd, "error", "notify worker: a bad witness frame: witness %llu of %zu, %zu descriptors",
			(unsigned long long)wi, w->nwit, f->nfds);
		return;
	}
	for (size_t i = 0; i < PROTO_NOTIFY_INFLIGHT && !n; i++)
		if (!w->conns[i].used)
			n = &w->conns[i];
	if (!n) {
		done(w, &busy, 0, "the notify worker has no free connection");
		return;
	}
	memset(n, 0, sizeof *n);
	n->used = 1, n->id = id, n->witness = 1, n->started = mono_ms();
	struct uhttp_req rq = {0};
	if (uhttp_conn_new(w->wu[wi], &n->c, err) != 0 || uhttp_attach(n->c, f->fds[0], err) != 0) {
		done(w, n, 0, err);
		uhttp_conn_free(n->c);
		memset(n, 0, sizeof *n);
		return;
	}
	f->fds[0] = -1;
	if (uhttp_send_req(n->c, body, blen, &rq, err) != 0) {
		snprintf(n->why, sizeof n->why, "%s", err);
		conn_end(w, n);
	}
}

static void on_frame(void *arg, struct ipc_frame *f)
{
	if (f->type == F_NOTIFY_POST)
		on_post(arg, f);
	else if (f->type == F_WITNESS_POST)
		on_witness_post(arg, f);
}

/* One webhook or witness of the configuration: its uhttp, with its CA file read now. */
static int one_target(const struct cv *h, int witness, struct uhttp **out, char *err)
{
	size_t scn, hon, pan, can;
	const char *sc = frame_get_text(h, "scheme", &scn), *ho = frame_get_text(h, "host", &hon),
		   *pa = frame_get_text(h, "path", &pan), *ca = frame_get_text(h, "ca", &can);
	uint64_t port = frame_get_uint(h, "port");
	char b[4][PROTO_URL_PATH_MAX + 1];
	snprintf(b[0], sizeof b[0], "%.*s", (int)scn, sc);
	snprintf(b[1], sizeof b[1], "%.*s", (int)hon, ho);
	snprintf(b[2], sizeof b[2], "%.*s", (int)pan, pa);
	snprintf(b[3], sizeof b[3], "%.*s", (int)can, ca ? ca : "");
	struct uhttp_cfg cfg = {.scheme = b[0],
				.host = b[1],
				.port = (uint16_t)port,
				.path = b[2],
				.ca = can ? b[3] : NULL,
				.body_max = witness ? PROTO_WITNESS_BODY_MAX : 64u << 10,
				.any_body = 1,
				.raw = witness};
	return uhttp_new(&cfg, out, err);
}

/* The configuration, before the jail: {hooks: [{scheme, host, port, path, ca?}...],
 * witnesses: [the same]}; each CA file is read now, while files can still be opened. */
static int read_config(struct nw *w, struct cv_arena *a, char *err)
{
	struct ipc_frame f;
	GUARD(ipc_config(&w->ipc, w->ipcfd, a, &f, err));
	const struct cv *hs = frame_get(f.body, "hooks", CV_ARRAY); /* each checked by its item table */
	const struct cv *ws = frame_get(f.body, "witnesses", CV_ARRAY);
	int rc = 0;
	for (size_t i = 0; rc == 0 && hs && i < hs->n && i < PROTO_NOTIFY_HOOKS_MAX; i++) {
		rc = one_target(&hs->items[i], 0, &w->u[i], err);
		w->nhooks = i + 1;
	}
	for (size_t i = 0; rc == 0 && ws && i < ws->n && i < PROTO_WITNESS_MAX; i++) {
		rc = one_target(&ws->items[i], 1, &w->wu[i], err);
		w->nwit = i + 1;
	}
	if (rc == 0 && !w->nhooks && !w->nwit)
		rc = as_fail(err, AS_EINVAL, "no webhooks nor witnesses in the configuration");
	ipc_frame_close_fds(&f);
	return rc;
}

int worker_notify_main(int ipcfd)
{
	static struct nw w;
	w.ipcfd = ipcfd;
	char err[AS_ERRLEN] = "";
	cv_arena_init(&w.arena, 1u << 12);
	if (ipc_conn_init(&w.ipc, ipcfd, err) != 0)
		return 2;
	struct cv_arena a;
	cv_arena_init(&a, 1u << 16);
	if (read_config(&w, &a, err) != 0) {
		ipc_log(ipcfd, "error", "notify worker: %s", err);
		return 2;
	}
	struct jail_opts jo = {.max_fds = 16 + PROTO_NOTIFY_INFLIGHT};
	if (jail_enter(&jo, err) != 0) {
		ipc_log(ipcfd, "error", "notify worker: cannot enter the jail: %s", err);
		return 2;
	}
	struct cv *hello = frame_hello(&a, "notify");
	if (!hello || ipc_conn_send(&w.ipc, hello, -1, err) != 0)
		return 2;
	for (;;) {
		struct pollfd pf[1 + PROTO_NOTIFY_INFLIGHT];
		struct nconn *of[1 + PROTO_NOTIFY_INFLIGHT];
		size_t np = 1;
		pf[0] = (struct pollfd){.fd = ipcfd, .events = (short)(POLLIN | (ipc_pending(&w.ipc) ? POLLOUT : 0))};
		for (size_t i = 0; i < PROTO_NOTIFY_INFLIGHT; i++)
			if (w.conns[i].used && uhttp_fd(w.conns[i].c) >= 0) {
				of[np] = &w.conns[i];
				pf[np++] =
				    (struct pollfd){.fd = uhttp_fd(w.conns[i].c), .events = uhttp_want(w.conns[i].c)};
			}
		if (heap_idle(poll(pf, np, 1000)) < 0 && errno != EINTR)
			return 2;
		uint64_t now = mono_ms();
		for (size_t i = 1; i < np; i++) {
			struct nconn *n = of[i];
			struct uhttp_cb cb = {on_msg, on_event, n};
			err[0] = 0;
			if (pf[i].revents && uhttp_io(n->c, &cb, err) != 0 && !n->status)
				snprintf(n->why, sizeof n->why, "%s", err);
			if (!n->status && now - n->started > PROTO_NOTIFY_TIMEOUT_MS) {
				snprintf(n->why, sizeof n->why, "no complete response in %u s",
					 PROTO_NOTIFY_TIMEOUT_MS / 1000);
				uhttp_close(n->c, &cb);
			}
			if (n->status || uhttp_fd(n->c) < 0)
				conn_end(&w, n);
		}
		if ((pf[0].revents & POLLOUT) && ipc_flush(&w.ipc, err) != 0)
			return 0;
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			int r = wio_frames(&w.ipc, &a, on_frame, &w, err);
			if (r != 0)
				return r == 1 ? 0 : 2;
		}
		/* A request just queued starts now: its first write needs no poll. */
		for (size_t i = 0; i < PROTO_NOTIFY_INFLIGHT; i++) {
			struct nconn *n = &w.conns[i];
			struct uhttp_cb cb = {on_msg, on_event, n};
			if (n->used && uhttp_fd(n->c) >= 0 && uhttp_io(n->c, &cb, err) != 0 && !n->status)
				snprintf(n->why, sizeof n->why, "%s", err);
			if (n->used && (n->status || uhttp_fd(n->c) < 0))
				conn_end(&w, n);
		}
	}
}
