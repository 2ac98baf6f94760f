/* A `url` upstream's connections for the upstream worker (uphttp.h), over uhttp. */
#include "gateway/worker/upstream/uphttp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/worker/upstream/uhttp.h"

struct pending {
	char *json;
	size_t n;
	uint64_t cid;
	char *route; /* a 2026-07-28 request's: "METHOD\0NAME" (Mcp-Method, Mcp-Name); NULL: the session's */
};

struct uphttp {
	struct uhttp *u;
	struct uhttp_conn *c[UPHTTP_CONNS];
	uint64_t cid[UPHTTP_CONNS]; /* the call each connection's request carries, 0: none */
	int busy[UPHTTP_CONNS];	    /* a request of it in flight */
	struct pending q[UPHTTP_QUEUE];
	size_t qhead, qn;
	const struct uphttp_cb *cb; /* during uphttp_io */
	int lost_session;
	struct uhttp_header hdr[UHTTP_CFG_HEADERS_MAX];
	size_t nhdr;
};

static int text_of(const struct cv *m, const char *k, char *out, size_t max)
{
	const struct cv *v = cv_get(m, k);
	if (!v || v->t != CV_TEXT || v->n >= max || memchr(v->s, 0, v->n))
		return -1;
	memcpy(out, v->s, v->n);
	out[v->n] = 0;
	return 0;
}

int uphttp_new(const struct cv *cfg, struct uphttp **out, char *err)
{
	char scheme[8], host[256], path[4096], ca[4096];
	const struct cv *port = cv_get(cfg, "port"), *hs = cv_get(cfg, "headers");
	if (text_of(cfg, "scheme", scheme, sizeof scheme) || text_of(cfg, "host", host, sizeof host) ||
	    text_of(cfg, "path", path, sizeof path) || !port || port->t != CV_UINT || port->u < 1 || port->u > 65535 ||
	    (hs && (hs->t != CV_ARRAY || hs->n > UHTTP_CFG_HEADERS_MAX)))
		return as_fail(err, AS_EINVAL, "the url configuration is incomplete");
	int has_ca = text_of(cfg, "ca", ca, sizeof ca) == 0;
	struct uphttp *h = calloc(1, sizeof *h);
	if (!h)
		return as_fail(err, AS_ENOMEM, "out of memory");
	for (size_t i = 0; hs && i < hs->n; i++) {
		const struct cv *p = &hs->items[i];
		if (p->t != CV_ARRAY || p->n != 2 || p->items[0].t != CV_TEXT || p->items[1].t != CV_TEXT) {
			uphttp_free(h);
			return as_fail(err, AS_EINVAL, "the url configuration's headers are not [name, value] pairs");
		}
		/* copies: the frame's memory goes with it; uhttp_new copies (and wipes) them too */
		h->hdr[h->nhdr].name = strndup((const char *)p->items[0].s, p->items[0].n);
		h->hdr[h->nhdr].value = strndup((const char *)p->items[1].s, p->items[1].n);
		h->nhdr++;
	}
	struct uhttp_cfg c = {.scheme = scheme,
			      .host = host,
			      .port = (uint16_t)port->u,
			      .path = path,
			      .headers = h->hdr,
			      .nheaders = h->nhdr,
			      .ca = has_ca ? ca : NULL};
	int rc = uhttp_new(&c, &h->u, err);
	for (size_t i = 0; i < h->nhdr; i++) { /* uhttp holds its own copies now */
		char *v = (char *)h->hdr[i].value;
		if (v)
			explicit_bzero(v, strlen(v));
		free((char *)h->hdr[i].name);
		free(v);
		h->hdr[i] = (struct uhttp_header){0};
	}
	h->nhdr = 0;
	for (size_t i = 0; rc == 0 && i < UPHTTP_CONNS; i++)
		rc = uhttp_conn_new(h->u, &h->c[i], err);
	if (rc != 0) {
		uphttp_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

void uphttp_free(struct uphttp *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < UPHTTP_CONNS; i++)
		uhttp_conn_free(h->c[i]);
	for (size_t i = 0; i < h->qn; i++) {
		free(h->q[(h->qhead + i) % UPHTTP_QUEUE].json);
		free(h->q[(h->qhead + i) % UPHTTP_QUEUE].route);
	}
	uhttp_free(h->u);
	free(h);
}

int uphttp_send(struct uphttp *h, const char *json, size_t n, uint64_t cid)
{
	return uphttp_send_modern(h, json, n, cid, NULL, NULL);
}

int uphttp_send_modern(struct uphttp *h, const char *json, size_t n, uint64_t cid, const char *method, const char *name)
{
	if (h->qn == UPHTTP_QUEUE)
		return AS_ETOOBIG;
	struct pending *p = &h->q[(h->qhead + h->qn) % UPHTTP_QUEUE];
	size_t mn = method ? strlen(method) : 0, nn = name ? strlen(name) : 0;
	p->json = malloc(n ? n : 1); /* the queue's, freed once sent */
	p->route = method ? malloc(mn + nn + 2) : NULL;
	if (!p->json || (method && !p->route)) {
		free(p->json);
		free(p->route);
		return AS_ENOMEM;
	}
	if (method) {
		memcpy(p->route, method, mn + 1);
		memcpy(p->route + mn + 1, name ? name : "", nn + 1);
	}
	memcpy(p->json, json, n);
	p->n = n;
	p->cid = cid;
	h->qn++;
	return 0;
}

void uphttp_attach(struct uphttp *h, int fd)
{
	char err[AS_ERRLEN];
	for (size_t i = 0; i < UPHTTP_CONNS; i++)
		if (uhttp_fd(h->c[i]) < 0) {
			if (uhttp_attach(h->c[i], fd, err) == 0)
				return;
			break;
		}
	close(fd); /* none needs one */
}

unsigned uphttp_wanted(const struct uphttp *h, unsigned asked)
{
	unsigned have = 0, busy = 0;
	for (size_t i = 0; i < UPHTTP_CONNS; i++) {
		have += uhttp_fd(h->c[i]) >= 0;
		busy += h->busy[i] != 0;
	}
	/* One connection always (the server may speak first on it), and one for each waiting
	 * message beside those busy: a server that asks its client something during a call
	 * holds the call's connection until it has the answer, which must leave at once. */
	size_t need = busy + h->qn;
	unsigned want = need < 1 ? 1 : (unsigned)(need < UPHTTP_CONNS ? need : UPHTTP_CONNS);
	return want > have + asked ? want - have - asked : 0;
}

size_t uphttp_fds(const struct uphttp *h, struct pollfd *pf)
{
	size_t n = 0;
	for (size_t i = 0; i < UPHTTP_CONNS; i++)
		pf[n++] = (struct pollfd){.fd = uhttp_fd(h->c[i]), .events = uhttp_want(h->c[i])};
	return n;
}

struct ev_arg {
	struct uphttp *h;
	size_t i;
};

static void on_msg(void *arg, const char *json, size_t n)
{
	struct ev_arg *e = arg;
	e->h->cb->on_msg(e->h->cb->arg, json, n);
}

static int msg_fn(void *arg, const char *json, size_t n)
{
	on_msg(arg, json, n);
	return 0;
}

static void on_event(void *arg, enum uhttp_event ev, int status)
{
	struct ev_arg *e = arg;
	struct uphttp *h = e->h;
	size_t i = e->i;
	char why[120];
	switch (ev) {
	case UHTTP_EV_DONE:
		/* 202 (a notification or a response of ours) or the answer came: the call's answer, if
		 * it carries one, was delivered before; one that did not come is an error (the
		 * worker ignores it for a call that was answered) */
		if (h->cid[i] && (status < 200 || status > 299 || status == 202)) {
			snprintf(why, sizeof why, "the server answered the call with HTTP status %d", status);
			h->cb->on_fail(h->cb->arg, h->cid[i], 0, why);
		} else if (h->cid[i]) {
			h->cb->on_fail(h->cb->arg, h->cid[i], 0, "the server's answer did not carry the call's result");
		}
		h->busy[i] = 0;
		h->cid[i] = 0;
		break;
	case UHTTP_EV_SESSION_LOST:
		h->lost_session = 1;
		break;
	case UHTTP_EV_LOST:
		if (h->cid[i])
			h->cb->on_fail(h->cb->arg, h->cid[i], status != 1,
				       status == 1 ? "the connection failed before the call was sent"
						   : "the connection to the server was lost before its answer: the "
						     "outcome is unknown");
		h->busy[i] = 0;
		h->cid[i] = 0;
		break;
	case UHTTP_EV_CLOSED:
		break;
	}
}

int uphttp_io(struct uphttp *h, const struct pollfd *pf, size_t n, const struct uphttp_cb *cb, char *err)
{
	h->cb = cb;
	err[0] = 0;
	for (size_t i = 0; i < UPHTTP_CONNS; i++) {
		struct ev_arg e = {h, i};
		struct uhttp_cb ucb = {msg_fn, on_event, &e};
		if (uhttp_fd(h->c[i]) >= 0 && (i >= n || pf[i].revents || h->busy[i])) {
			char why[AS_ERRLEN];
			if (uhttp_io(h->c[i], &ucb, why) != 0)
				snprintf(err, AS_ERRLEN, "%s",
					 why); /* the connection is closed; a new one is asked for */
		}
		/* an idle connection takes the next message */
		if (!h->busy[i] && h->qn && uhttp_fd(h->c[i]) >= 0 && uhttp_idle(h->c[i])) {
			struct pending p = h->q[h->qhead];
			h->qhead = (h->qhead + 1) % UPHTTP_QUEUE;
			h->qn--;
			char why[AS_ERRLEN];
			const char *name = p.route ? p.route + strlen(p.route) + 1 : NULL;
			const struct uhttp_req rq = {
			    .method = p.route, .name = name && *name ? name : NULL, .protocol = UPHTTP_MODERN};
			if (uhttp_send_req(h->c[i], p.json, p.n, p.route ? &rq : NULL, why) == 0) {
				h->busy[i] = 1;
				h->cid[i] = p.cid;
				int rc = uhttp_io(h->c[i], &ucb, why); /* start writing now */
				(void)rc;
			} else if (p.cid) {
				cb->on_fail(cb->arg, p.cid, 0, "the request could not be sent");
			}
			free(p.json);
			free(p.route);
		}
	}
	return h->lost_session ? -1 : 0;
}

void uphttp_protocol(struct uphttp *h, const char *version)
{
	char err[AS_ERRLEN];
	int rc = uhttp_set_protocol(h->u, version, err);
	(void)rc; /* a version initialize returned, bounded by the parser */
}
