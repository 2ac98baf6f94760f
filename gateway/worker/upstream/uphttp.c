/* A `url` upstream's connections for the upstream worker (uphttp.h), over uhttp. */
#include "gateway/worker/upstream/uphttp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/worker/upstream/uhttp.h"

struct pending {
	char *json;
	size_t n;
	uint64_t cid;
	char *route; /* a 2026-07-28 request's: "METHOD\0NAME" (Mcp-Method, Mcp-Name); NULL: the session's */
};

/* A call's SSE answer the server ended before the result (SEP-1699): resumed with a GET
 * carrying Last-Event-ID once the server's retry: delay has passed. */
struct resume {
	uint64_t cid; /* 0: a free slot */
	char id[UHTTP_SSE_ID_MAX + 1];
	unsigned n;  /* the how-manieth resume of this call's stream */
	uint64_t at; /* mono_ms() when it may go */
	long retry;  /* the server's retry: in ms, -1: none yet */
};

struct uphttp {
	struct uhttp *u;
	struct uhttp_conn *c[UPHTTP_CONNS];
	uint64_t cid[UPHTTP_CONNS];			  /* the call each connection's request carries, 0: none */
	int busy[UPHTTP_CONNS];				  /* a request of it in flight */
	unsigned resumes[UPHTTP_CONNS];			  /* its request resumes its call's stream the n-th time */
	char last_id[UPHTTP_CONNS][UHTTP_SSE_ID_MAX + 1]; /* that resume's Last-Event-ID */
	long retry[UPHTTP_CONNS];			  /* and the retry: in force, -1: none */
	struct resume rs[UPHTTP_CONNS];			  /* resumes waiting for their time and a connection */
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
	for (size_t i = 0; i < UPHTTP_CONNS; i++)
		need += h->rs[i].cid != 0;
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

/* Connection i's 2xx answer ended without its call's result: after an SSE event with an id
 * (on this answer or the one it resumed), a resume is planned for after the server's retry:
 * delay. 1 when it was; else why says why the call ends. */
static int resume_plan(struct uphttp *h, size_t i, char *why, size_t whyn)
{
	snprintf(why, whyn, "the server's answer did not carry the call's result");
	if (h->cb->waiting && !h->cb->waiting(h->cb->arg, h->cid[i])) {
		why[0] = 0; /* answered (the usual end), or cancelled: nothing to resume */
		return 0;
	}
	const char *id = uhttp_last_event_id(h->c[i]);
	if (!id[0])
		id = h->last_id[i]; /* a resumed stream that ended with no event of its own */
	if (!id[0] || !h->cb->waiting)
		return 0;
	if (h->resumes[i] >= UPHTTP_RESUMES) {
		snprintf(why, whyn,
			 "the server ended the call's event stream before its result %u times (resumed with "
			 "Last-Event-ID each time)",
			 h->resumes[i] + 1);
		return 0;
	}
	for (size_t k = 0; k < UPHTTP_CONNS; k++)
		if (!h->rs[k].cid) {
			long ms = uhttp_retry_ms(h->c[i]);
			if (ms < 0 && h->resumes[i])
				ms = h->retry[i]; /* said on an earlier answer of this stream */
			struct resume *r = &h->rs[k];
			r->cid = h->cid[i];
			r->n = h->resumes[i] + 1;
			snprintf(r->id, sizeof r->id, "%s", id);
			r->retry = ms;
			r->at = mono_ms() + (uint64_t)(ms < 0			  ? UPHTTP_RETRY_DEFAULT_MS
						       : ms > UPHTTP_RETRY_MAX_MS ? UPHTTP_RETRY_MAX_MS
										  : ms);
			return 1;
		}
	snprintf(why, whyn, "the server ended the call's event stream before its result, and too many resumes wait");
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
			if (h->resumes[i])
				snprintf(why, sizeof why,
					 "the server refused to resume the call's event stream (GET with "
					 "Last-Event-ID): HTTP status %d",
					 status);
			else
				snprintf(why, sizeof why, "the server answered the call with HTTP status %d", status);
			h->cb->on_fail(h->cb->arg, h->cid[i], 0, why);
		} else if (h->cid[i] && !resume_plan(h, i, why, sizeof why) && why[0]) {
			h->cb->on_fail(h->cb->arg, h->cid[i], 0, why);
		}
		h->busy[i] = 0;
		h->cid[i] = 0;
		h->resumes[i] = 0;
		h->last_id[i][0] = 0;
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
		h->resumes[i] = 0;
		h->last_id[i][0] = 0;
		break;
	case UHTTP_EV_CLOSED:
		break;
	}
}

/* Idle connection i takes a resume whose time has come: 1 when it did. */
static int resume_start(struct uphttp *h, size_t i, const struct uhttp_cb *ucb)
{
	uint64_t now = mono_ms();
	for (size_t k = 0; k < UPHTTP_CONNS; k++) {
		struct resume *r = &h->rs[k];
		if (!r->cid || now < r->at)
			continue;
		uint64_t cid = r->cid;
		r->cid = 0;
		if (!h->cb->waiting || !h->cb->waiting(h->cb->arg, cid))
			continue; /* answered or cancelled meanwhile */
		char why[AS_ERRLEN];
		if (uhttp_send_resume(h->c[i], r->id, why) != 0) {
			char msg[AS_ERRLEN + 64];
			snprintf(msg, sizeof msg, "the call's event stream could not be resumed: %s", why);
			h->cb->on_fail(h->cb->arg, cid, 0, msg);
			continue;
		}
		h->busy[i] = 1;
		h->cid[i] = cid;
		h->resumes[i] = r->n;
		snprintf(h->last_id[i], sizeof h->last_id[i], "%s", r->id);
		h->retry[i] = r->retry;
		int rc = uhttp_io(h->c[i], ucb, why); /* start writing now */
		(void)rc;
		return 1;
	}
	return 0;
}

int uphttp_timeout(const struct uphttp *h)
{
	uint64_t now = mono_ms(), next = UINT64_MAX;
	for (size_t k = 0; k < UPHTTP_CONNS; k++)
		if (h->rs[k].cid && h->rs[k].at < next)
			next = h->rs[k].at;
	return next == UINT64_MAX ? -1 : next <= now ? 0 : (int)(next - now);
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
		/* an idle connection takes a resume that is due, else the next message */
		if (!h->busy[i] && uhttp_fd(h->c[i]) >= 0 && uhttp_idle(h->c[i]) && resume_start(h, i, &ucb))
			continue;
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
