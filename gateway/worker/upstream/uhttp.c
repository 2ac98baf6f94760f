/* The connection half of the upstream HTTP client (uhttp.h): over the client uhttp_cfg.c
 * made before the jail, per connection a TLS 1.2 client (mbedTLS 2.28, verify required,
 * host name checked) or plain HTTP driven without blocking over a socket the signer
 * connected, requests written and answers handed to uhttp_resp.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "gateway/worker/upstream/uhttp_int.h"

/* Room for everything of a request but its path, fixed lines and body: the request line's
 * verb, media headers, protocol, session, two routing headers in base64, Content-Length. */
#define OUT_SLACK (512 + UHTTP_SESSION_MAX + 2 * (4 * (UHTTP_ROUTING_MAX / 3 + 1) + 32))

enum { C_NOFD, C_HANDSHAKE, C_READY };

struct uhttp_conn {
	struct uhttp *u;
	int fd, state, in_flight, want_write, handshook, sys_errno;
	int attempted;				  /* a byte of the request in flight may have left */
	int deleting;				  /* the request in flight ends the session */
	size_t stream_max;			  /* an SSE answer's bound (a GET stream has none) */
	char sent_session[UHTTP_SESSION_MAX + 1]; /* the session the request in flight carried */
	struct buf out;				  /* the request being written: wiped */
	size_t out_off;
	struct uhttp_resp resp;
	mbedtls_ssl_context ssl;
};

/* ---- the socket under TLS: MSG_DONTWAIT always, so a blocking fd cannot block ---- */

static int bio_send(void *ctx, const unsigned char *p, size_t n)
{
	struct uhttp_conn *c = ctx;
	ssize_t k = send(c->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k >= 0)
		return (int)k;
	c->sys_errno = errno;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *p, size_t n)
{
	struct uhttp_conn *c = ctx;
	ssize_t k = recv(c->fd, p, n, MSG_DONTWAIT);
	if (k >= 0)
		return (int)k;
	c->sys_errno = errno;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_READ;
	return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
}

int uhttp_conn_new(struct uhttp *u, struct uhttp_conn **out, char *err)
{
	struct uhttp_conn *c = calloc(1, sizeof *c);
	*out = NULL;
	if (!c)
		return as_fail(err, AS_ENOMEM, "uhttp: out of memory");
	c->u = u;
	c->fd = -1;
	buf_init(&c->out, OUT_SLACK + strlen(u->path) + u->fixed.len + u->body_max);
	struct uhttp_limits lim = {
	    .body_max = u->body_max, .stream_max = u->stream_max, .any_body = u->any_body, .raw = u->raw};
	uhttp_resp_init(&c->resp, &lim);
	c->stream_max = c->resp.lim.stream_max; /* the default filled in */
	mbedtls_ssl_init(&c->ssl);
	if (u->tls) {
		int rc = mbedtls_ssl_setup(&c->ssl, &u->conf);
		if (rc == 0 && !u->iplen)
			rc = mbedtls_ssl_set_hostname(&c->ssl, u->host);
		if (rc != 0) {
			uhttp_conn_free(c);
			return as_fail(err, AS_ECRYPTO, "uhttp: TLS setup failed (-0x%04x)", (unsigned)-rc);
		}
		mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
	}
	u->nconns++;
	*out = c;
	return 0;
}

static void out_clear(struct uhttp_conn *c)
{
	if (c->out.p)
		explicit_bzero(c->out.p, c->out.len);
	buf_reset(&c->out);
	c->out_off = 0;
}

/* Closes the connection: the request in flight is lost, the caller attaches a new fd. */
static void conn_drop(struct uhttp_conn *c, const struct uhttp_cb *cb, int events)
{
	if (c->fd < 0)
		return;
	if (c->u->tls && c->handshook) {
		int rc = mbedtls_ssl_close_notify(&c->ssl); /* best effort: the socket does not block */
		(void)rc;
	}
	close(c->fd);
	c->fd = -1;
	c->state = C_NOFD;
	c->handshook = 0;
	int lost = c->in_flight, unsent = !c->attempted;
	c->in_flight = 0;
	c->attempted = 0;
	out_clear(c);
	uhttp_resp_reset(&c->resp);
	if (events && cb && cb->on_event) {
		if (lost)
			cb->on_event(cb->arg, UHTTP_EV_LOST, unsent);
		cb->on_event(cb->arg, UHTTP_EV_CLOSED, 0);
	}
}

void uhttp_close(struct uhttp_conn *c, const struct uhttp_cb *cb)
{
	conn_drop(c, cb, 1);
}

void uhttp_conn_free(struct uhttp_conn *c)
{
	if (!c)
		return;
	conn_drop(c, NULL, 0);
	mbedtls_ssl_free(&c->ssl);
	buf_free_wipe(&c->out);
	uhttp_resp_free(&c->resp);
	c->u->nconns--;
	free(c);
}

int uhttp_attach(struct uhttp_conn *c, int fd, char *err)
{
	if (fd < 0)
		return as_fail(err, AS_EINVAL, "uhttp: attach: no descriptor");
	if (c->fd >= 0)
		return as_fail(err, AS_EINVAL, "uhttp: attach: the connection already has a descriptor");
	if (c->u->tls) {
		int rc = mbedtls_ssl_session_reset(&c->ssl);
		if (rc == 0 && !c->u->iplen)
			rc = mbedtls_ssl_set_hostname(&c->ssl, c->u->host);
		if (rc == 0 && c->u->have_resume)
			rc = mbedtls_ssl_set_session(&c->ssl, &c->u->resume);
		if (rc != 0)
			return as_fail(err, AS_ECRYPTO, "uhttp: TLS reset failed (-0x%04x)", (unsigned)-rc);
	}
	c->fd = fd;
	c->state = c->u->tls ? C_HANDSHAKE : C_READY;
	c->want_write = c->u->tls; /* the ClientHello */
	c->in_flight = 0;
	uhttp_resp_reset(&c->resp);
	return 0;
}

int uhttp_fd(const struct uhttp_conn *c)
{
	return c->fd;
}

int uhttp_idle(const struct uhttp_conn *c)
{
	return c->fd >= 0 && !c->in_flight;
}

/* An Mcp-Method / Mcp-Name value as SEP-2243 writes it: printable ASCII without
 * surrounding spaces as it is, anything else (non-ASCII, a control byte, which would
 * otherwise split the header) as =?base64?...?=. */
static int put_routing(struct buf *out, const char *name, const char *v)
{
	size_t n = strlen(v);
	int plain = n > 0 && v[0] != ' ' && v[n - 1] != ' ' && strncmp(v, "=?base64?", 9) != 0;
	for (size_t i = 0; plain && i < n; i++)
		plain = (unsigned char)v[i] >= 0x20 && (unsigned char)v[i] < 0x7f;
	if (plain)
		return buf_printf(out, "%s: %s\r\n", name, v);
	GUARD(buf_printf(out, "%s: =?base64?", name));
	GUARD(b64_encode((const uint8_t *)v, n, out));
	return buf_put(out, "?=\r\n", 4);
}

/* One request into c->out: the request line, the fixed lines, the session's, the body. */
static int compose(struct uhttp_conn *c, const char *verb, const char *json, size_t n, const struct uhttp_req *rq,
		   char *err)
{
	struct uhttp *u = c->u;
	if (c->fd < 0)
		return as_fail(err, AS_EINVAL, "uhttp: send: the connection has no descriptor");
	if (c->in_flight)
		return as_fail(err, AS_EINVAL, "uhttp: send: a request is already in flight on this connection");
	if (rq && ((rq->method && strlen(rq->method) > UHTTP_ROUTING_MAX) ||
		   (rq->name && strlen(rq->name) > UHTTP_ROUTING_MAX)))
		return as_fail(err, AS_ETOOBIG, "uhttp: send: a method or name of more than %d bytes",
			       UHTTP_ROUTING_MAX);
	size_t xn = 0;
	for (size_t i = 0; rq && i < rq->nextra; i++) {
		const char *k = rq->extra[i].name, *v = rq->extra[i].value;
		size_t kn = strlen(k), vn = strlen(v), ok = kn > 0 && kn <= 64 && vn <= 1024;
		ok = ok && strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == kn;
		for (size_t j = 0; ok && j < vn; j++)
			ok = (unsigned char)v[j] >= 0x20 && (unsigned char)v[j] < 0x7f;
		if (!ok)
			return as_fail(err, AS_EINVAL, "uhttp: send: header %zu is not a plain ASCII name and value",
				       i);
		xn += kn + vn + 4;
	}
	const char *proto = rq && rq->protocol ? rq->protocol : u->protocol;
	int stateless = rq && rq->protocol;
	if (stateless && (!*proto || strlen(proto) > 32 || strspn(proto, "0123456789-") != strlen(proto)))
		return as_fail(err, AS_EINVAL, "uhttp: send: a protocol version is digits and '-', 1 to 32 bytes");
	out_clear(c);
	snprintf(c->sent_session, sizeof c->sent_session, "%s", stateless ? "" : u->session);
	/* Reserved whole before the credentials are copied in (see build_fixed); what the
	 * buffer held before was wiped by out_clear. */
	int rc = buf_reserve(&c->out, OUT_SLACK + strlen(u->path) + u->fixed.len + xn + n);
	if (rc == 0)
		rc = buf_printf(&c->out, "%s %s HTTP/1.1\r\n", verb, u->path);
	if (rc == 0)
		rc = buf_put(&c->out, u->fixed.p, u->fixed.len);
	int get = strcmp(verb, "GET") == 0;
	if (rc == 0 && n && u->raw) /* a witness's add-checkpoint: text, answered with text */
		rc = buf_printf(&c->out, "Content-Type: text/plain; charset=utf-8\r\n");
	else if (rc == 0 && n)
		rc = buf_printf(&c->out, "Content-Type: application/json\r\n"
					 "Accept: application/json, text/event-stream\r\n");
	if (rc == 0 && get)
		rc = buf_printf(&c->out, "Accept: text/event-stream\r\n");
	if (rc == 0 && proto[0])
		rc = buf_printf(&c->out, "MCP-Protocol-Version: %s\r\n", proto);
	if (rc == 0 && !stateless && u->session[0])
		rc = buf_printf(&c->out, "Mcp-Session-Id: %s\r\n", u->session);
	if (rc == 0 && rq && rq->method)
		rc = put_routing(&c->out, "Mcp-Method", rq->method);
	if (rc == 0 && rq && rq->name)
		rc = put_routing(&c->out, "Mcp-Name", rq->name);
	for (size_t i = 0; rc == 0 && rq && i < rq->nextra; i++)
		rc = buf_printf(&c->out, "%s: %s\r\n", rq->extra[i].name, rq->extra[i].value);
	if (rc == 0)
		rc = get ? buf_printf(&c->out, "\r\n") : buf_printf(&c->out, "Content-Length: %zu\r\n\r\n", n);
	if (rc == 0 && n)
		rc = buf_put(&c->out, json, n);
	if (rc != 0) {
		out_clear(c);
		return as_fail(err, AS_ENOMEM, "uhttp: send: out of memory");
	}
	c->in_flight = 1;
	c->deleting = 0;
	/* A GET stream lives as long as the session: its events are bounded, its length not. */
	c->resp.lim.stream_max = get ? SIZE_MAX : c->stream_max;
	return 0;
}

int uhttp_send_req(struct uhttp_conn *c, const char *json, size_t n, const struct uhttp_req *rq, char *err)
{
	if (n == 0 || n > c->u->body_max)
		return as_fail(err, AS_ETOOBIG, "uhttp: send: a message of %zu bytes (1 to %zu)", n, c->u->body_max);
	return compose(c, "POST", json, n, rq, err);
}

int uhttp_send(struct uhttp_conn *c, const char *json, size_t n, char *err)
{
	return uhttp_send_req(c, json, n, NULL, err);
}

int uhttp_send_get(struct uhttp_conn *c, char *err)
{
	if (!c->u->session[0])
		return as_fail(err, AS_EINVAL, "uhttp: get: there is no session to listen on");
	return compose(c, "GET", NULL, 0, NULL, err);
}

int uhttp_send_resume(struct uhttp_conn *c, const char *last_id, char *err)
{
	if (!c->u->session[0])
		return as_fail(err, AS_EINVAL, "uhttp: resume: there is no session to resume in");
	if (!last_id[0] || strlen(last_id) > UHTTP_SSE_ID_MAX)
		return as_fail(err, AS_EINVAL, "uhttp: resume: an event id of 1 to %d bytes is needed",
			       UHTTP_SSE_ID_MAX);
	const struct uhttp_header h = {"Last-Event-ID", last_id};
	const struct uhttp_req rq = {.extra = &h, .nextra = 1}; /* compose checks the value is plain */
	return compose(c, "GET", NULL, 0, &rq, err);
}

const char *uhttp_last_event_id(const struct uhttp_conn *c)
{
	return c->resp.last_event_id;
}

long uhttp_retry_ms(const struct uhttp_conn *c)
{
	return c->resp.have_retry ? (long)c->resp.retry_ms : -1;
}

int uhttp_send_delete(struct uhttp_conn *c, char *err)
{
	if (!c->u->session[0])
		return as_fail(err, AS_EINVAL, "uhttp: delete: there is no session to end");
	GUARD(compose(c, "DELETE", NULL, 0, NULL, err));
	c->u->session[0] = 0; /* ended on our side whatever the server answers */
	c->deleting = 1;
	return 0;
}

short uhttp_want(const struct uhttp_conn *c)
{
	if (c->fd < 0)
		return 0;
	int w = c->want_write || (c->state == C_READY && c->out_off < c->out.len);
	return (short)(POLLIN | (w ? POLLOUT : 0));
}

/* ---- errors ---- */

static int tls_fail(struct uhttp_conn *c, int rc, const char *when, char *err)
{
	struct uhttp *u = c->u;
	if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
		uint32_t f = mbedtls_ssl_get_verify_result(&c->ssl);
		char why[160] = "";
		size_t k = 0;
		if (f & MBEDTLS_X509_BADCERT_NOT_TRUSTED)
			k += (size_t)snprintf(why + k, sizeof why - k, "%snot trusted", k ? ", " : "");
		if (k < sizeof why && (f & MBEDTLS_X509_BADCERT_CN_MISMATCH))
			k += (size_t)snprintf(why + k, sizeof why - k, "%sname does not match", k ? ", " : "");
		if (k < sizeof why && (f & MBEDTLS_X509_BADCERT_EXPIRED))
			k += (size_t)snprintf(why + k, sizeof why - k, "%sexpired", k ? ", " : "");
		if (k < sizeof why && (f & MBEDTLS_X509_BADCERT_FUTURE))
			k += (size_t)snprintf(why + k, sizeof why - k, "%snot valid yet", k ? ", " : "");
		if (k == 0) {
			mbedtls_x509_crt_verify_info(why, sizeof why, "", f);
			for (char *p = why; *p; p++)
				if (*p == '\n')
					*p = ';';
		}
		return as_fail(err, AS_ECRYPTO, "TLS: the certificate of %s was refused: %s (trusted: %s)", u->host,
			       why, u->ca_name);
	}
	if (rc == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
		unsigned alert = c->ssl.in_msg && c->ssl.in_msglen >= 2 ? c->ssl.in_msg[1] : 0;
		return as_fail(err, AS_ECRYPTO, "TLS: %s sent a fatal alert (%u) %s", u->host, alert, when);
	}
	if (rc == MBEDTLS_ERR_SSL_CONN_EOF || rc == MBEDTLS_ERR_NET_CONN_RESET)
		return as_fail(err, AS_EIO, "TLS: %s closed the connection %s", u->host, when);
	if (rc == MBEDTLS_ERR_NET_SEND_FAILED || rc == MBEDTLS_ERR_NET_RECV_FAILED)
		return as_fail(err, AS_EIO, "TLS: %s: %s %s", u->host, strerror(c->sys_errno), when);
	char e[128];
	mbedtls_strerror(rc, e, sizeof e);
	return as_fail(err, AS_ECRYPTO, "TLS: %s %s: %s (-0x%04x)", u->host, when, e, (unsigned)-rc);
}

/* ---- I/O ---- */

struct feed_ctx {
	struct uhttp_conn *c;
	const struct uhttp_cb *cb;
};

static int on_head(void *arg, const struct uhttp_resp *r)
{
	const struct uhttp_conn *c = ((struct feed_ctx *)arg)->c;
	struct uhttp *u = c->u;
	/* The session the server assigns (with initialize's answer); one already held stays,
	 * and the answer to the DELETE that ended one does not bring it back. */
	if (r->status >= 200 && r->status < 300 && r->session[0] && !u->session[0] && !c->deleting)
		snprintf(u->session, sizeof u->session, "%s", r->session);
	return 0;
}

static int on_msg(void *arg, const char *json, size_t n)
{
	const struct uhttp_cb *cb = ((struct feed_ctx *)arg)->cb;
	return cb->on_msg ? cb->on_msg(cb->arg, json, n) : 0;
}

/* The answer to the request in flight is complete. */
static void finished(struct uhttp_conn *c, const struct uhttp_cb *cb)
{
	struct uhttp *u = c->u;
	int status = c->resp.status;
	c->in_flight = 0;
	c->attempted = 0;
	out_clear(c);
	if (status == 404 && c->sent_session[0]) {
		if (strcmp(u->session, c->sent_session) == 0) /* not already replaced by a new one */
			u->session[0] = 0;
		if (cb->on_event)
			cb->on_event(cb->arg, UHTTP_EV_SESSION_LOST, status);
	}
	if (cb->on_event)
		cb->on_event(cb->arg, UHTTP_EV_DONE, status);
}

static int feed(struct uhttp_conn *c, const struct uhttp_cb *cb, const uint8_t *p, size_t n, char *err)
{
	struct feed_ctx fc = {c, cb};
	if (!c->in_flight)
		return as_fail(err, AS_EINVAL, "HTTP: %s sent %zu bytes with no request in flight", c->u->host, n);
	size_t used;
	int rc = uhttp_resp_feed(&c->resp, p, n, &used, on_head, on_msg, &fc, err);
	if (rc <= 0)
		return rc;
	int close_after = c->resp.close;
	finished(c, cb);
	if (used < n)
		return as_fail(err, AS_EINVAL, "HTTP: %s sent %zu bytes after its answer", c->u->host, n - used);
	if (close_after) {
		conn_drop(c, cb, 1);
		return 1;
	}
	uhttp_resp_reset(&c->resp);
	return 0;
}

/* The server closed its end. */
static int eof(struct uhttp_conn *c, const struct uhttp_cb *cb, char *err)
{
	struct feed_ctx fc = {c, cb};
	if (c->in_flight) {
		int rc = uhttp_resp_eof(&c->resp, on_msg, &fc, err);
		if (rc < 0)
			return rc;
		finished(c, cb);
	}
	conn_drop(c, cb, 1);
	return 1;
}

static int do_write(struct uhttp_conn *c, char *err)
{
	while (c->out_off < c->out.len) {
		const uint8_t *p = c->out.p + c->out_off;
		size_t n = c->out.len - c->out_off;
		int k;
		c->attempted = 1; /* even a WANT_WRITE may have put part of a TLS record on the wire */
		if (c->u->tls) {
			k = mbedtls_ssl_write(&c->ssl, p, n);
		} else {
			k = bio_send(c, p, n);
		}
		if (k == MBEDTLS_ERR_SSL_WANT_WRITE || k == MBEDTLS_ERR_SSL_WANT_READ) {
			c->want_write = k == MBEDTLS_ERR_SSL_WANT_WRITE;
			return 0;
		}
		if (k < 0)
			return c->u->tls ? tls_fail(c, k, "while the request was written", err)
					 : as_fail(err, AS_EIO, "HTTP: %s: %s while the request was written",
						   c->u->host, strerror(c->sys_errno));
		c->out_off += (size_t)k;
	}
	c->want_write = 0;
	return 0;
}

static int do_read(struct uhttp_conn *c, const struct uhttp_cb *cb, char *err)
{
	uint8_t tmp[16384];
	for (;;) {
		int k = c->u->tls ? mbedtls_ssl_read(&c->ssl, tmp, sizeof tmp) : bio_recv(c, tmp, sizeof tmp);
		if (k == MBEDTLS_ERR_SSL_WANT_READ || k == MBEDTLS_ERR_SSL_WANT_WRITE) {
			c->want_write |= k == MBEDTLS_ERR_SSL_WANT_WRITE;
			return 0;
		}
		if (k == 0 || k == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || k == MBEDTLS_ERR_SSL_CONN_EOF ||
		    k == MBEDTLS_ERR_NET_CONN_RESET)
			return eof(c, cb, err);
		if (k < 0)
			return c->u->tls ? tls_fail(c, k, "while the answer was read", err)
					 : as_fail(err, AS_EIO, "HTTP: %s: %s while the answer was read", c->u->host,
						   strerror(c->sys_errno));
		int rc = feed(c, cb, tmp, (size_t)k, err);
		if (rc != 0)
			return rc;
	}
}

static int io_step(struct uhttp_conn *c, const struct uhttp_cb *cb, char *err)
{
	if (c->state == C_HANDSHAKE) {
		int rc = mbedtls_ssl_handshake(&c->ssl);
		if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
			c->want_write = rc == MBEDTLS_ERR_SSL_WANT_WRITE;
			return 0;
		}
		if (rc != 0)
			return tls_fail(c, rc, "during the handshake", err);
		c->state = C_READY;
		c->handshook = 1;
		c->want_write = 0;
		/* Kept for the next connection; a session that cannot be kept is only slower. */
		mbedtls_ssl_session_free(&c->u->resume);
		mbedtls_ssl_session_init(&c->u->resume);
		c->u->have_resume = mbedtls_ssl_get_session(&c->ssl, &c->u->resume) == 0;
	}
	GUARD(do_write(c, err));
	int rc = do_read(c, cb, err);
	return rc < 0 ? rc : 0;
}

int uhttp_io(struct uhttp_conn *c, const struct uhttp_cb *cb, char *err)
{
	if (c->fd < 0)
		return 0;
	int rc = io_step(c, cb, err);
	if (rc < 0) {
		conn_drop(c, cb, 1);
		return rc;
	}
	return 0;
}
