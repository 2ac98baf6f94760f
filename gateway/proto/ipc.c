/* IPC frames between the signer and its workers: framing, descriptor passing,
 * the bounded receiver and transmit queue, dispatch and typed getters. The wire
 * format and the reasons for SOCK_SEQPACKET are in ipc.h. */
#define _GNU_SOURCE
#include "gateway/proto/ipc.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Room for one more message after the largest partial frame. */
#define RX_MAX (4u + IPC_FRAME_MAX + IPC_MSG_MAX)

static const char *type_name(enum cv_type t)
{
	switch (t) {
	case CV_UINT:
		return "an unsigned integer";
	case CV_NINT:
		return "a negative integer";
	case CV_BYTES:
		return "a byte string";
	case CV_TEXT:
		return "a text string";
	case CV_ARRAY:
		return "an array";
	case CV_MAP:
		return "a map";
	case CV_FALSE:
	case CV_TRUE:
		return "a boolean";
	case CV_NULL:
		return "null";
	}
	return "an unknown value";
}

static uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void close_batch(struct ipc_fdbatch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->fds[i] >= 0)
			close(b->fds[i]);
	b->n = 0;
}

static void close_rx_fds(struct ipc_conn *c)
{
	for (size_t i = 0; i < c->nrxfd; i++)
		close_batch(&c->rxfd[i]);
	c->nrxfd = 0;
}

/* A violation: the connection is dead from here on, and descriptors it holds are closed. */
static int conn_fail(struct ipc_conn *c, char *err, const char *fmt, ...) AS_PRINTF(3, 4);
static int conn_fail(struct ipc_conn *c, char *err, const char *fmt, ...)
{
	c->failed = 1;
	close_rx_fds(c);
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, AS_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return AS_ECORRUPT;
}

/* What makes a decoded map a frame; shared by the receiver and the sender. */
static int frame_check(const struct cv *body, uint32_t *type, char *err)
{
	if (body->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "body is %s, not a map", type_name(body->t));
	for (size_t i = 0; i < body->n; i++)
		if (body->items[2 * i].t != CV_TEXT)
			return as_fail(err, AS_ECORRUPT, "key %zu is %s, not text", i, type_name(body->items[2 * i].t));
	const struct cv *t = cv_get(body, "t");
	if (!t)
		return as_fail(err, AS_ECORRUPT, "no \"t\" (frame type) field");
	if (t->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT, "\"t\" is %s, not an unsigned integer", type_name(t->t));
	if (t->u > UINT32_MAX)
		return as_fail(err, AS_ECORRUPT, "\"t\" = %llu is over 2^32-1", (unsigned long long)t->u);
	*type = (uint32_t)t->u;
	return 0;
}

int ipc_socketpair(int sv[2], char *err)
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return as_fail(err, AS_EIO, "IPC: socketpair: %s", strerror(errno));
	return 0;
}

int ipc_conn_init(struct ipc_conn *c, int fd, char *err)
{
	int type = 0, domain = 0;
	socklen_t n1 = sizeof type, n2 = sizeof domain;
	memset(c, 0, sizeof *c);
	c->fd = -1;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &n1) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &n2) != 0)
		return as_fail(err, AS_EINVAL, "IPC: descriptor %d is not a socket: %s", fd, strerror(errno));
	if (domain != AF_UNIX || type != SOCK_SEQPACKET)
		return as_fail(err, AS_EINVAL, "IPC: descriptor %d is not an AF_UNIX SOCK_SEQPACKET socket", fd);
	c->fd = fd;
	buf_init(&c->rx, RX_MAX);
	buf_init(&c->tx, IPC_TXQ_MAX);
	return 0;
}

void ipc_conn_free(struct ipc_conn *c)
{
	close_rx_fds(c);
	for (size_t i = 0; i < c->ntxfd; i++)
		close(c->txfd[i].fd);
	c->ntxfd = 0;
	free(c->stage);
	c->stage = NULL;
	buf_free(&c->rx);
	buf_free(&c->tx);
	c->rx_off = c->tx_off = 0;
}

/* ---- receiving ---- */

/* Offset in rx just past the complete frames with plausible lengths that are
 * buffered: a message carrying descriptors must start exactly there. */
static size_t rx_frames_end(const struct ipc_conn *c)
{
	struct rd r;
	if (c->rx_off == c->rx.len)
		return c->rx.len; /* nothing buffered (rx.p may still be NULL) */
	rd_init(&r, c->rx.p + c->rx_off, c->rx.len - c->rx_off);
	for (;;) {
		uint64_t len;
		const uint8_t *skip;
		size_t at = r.off;
		if (rd_be(&r, 4, &len) != 0 || len == 0 || len > IPC_FRAME_MAX || rd_take(&r, (size_t)len, &skip) != 0)
			return c->rx_off + at;
	}
}

/* Did the peer close (as opposed to sending an empty message, which also reads as 0)? */
static int peer_closed(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP)) != 0;
}

/* The descriptors of message m into got, every one taken first so that each refusal
 * closes them all: more than IPC_FDS_MAX, a control message other than SCM_RIGHTS, or
 * a truncated message is a violation. */
static int take_fds(struct ipc_conn *c, struct msghdr *m, struct ipc_fdbatch *got, char *err)
{
	int extra = 0, foreign = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h; h = CMSG_NXTHDR(m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS || h->cmsg_len < CMSG_LEN(0)) {
			foreign = 1;
			continue;
		}
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int x;
			memcpy(&x, CMSG_DATA(h) + i * sizeof(int), sizeof x);
			if (got->n < IPC_FDS_MAX) {
				got->fds[got->n++] = x;
			} else {
				close(x);
				extra = 1;
			}
		}
	}
	if (extra || (m->msg_flags & MSG_CTRUNC)) {
		close_batch(got);
		return conn_fail(c, err, "IPC: more than %d descriptors in one message", IPC_FDS_MAX);
	}
	if (foreign) {
		close_batch(got);
		return conn_fail(c, err, "IPC: a control message other than SCM_RIGHTS");
	}
	if (m->msg_flags & MSG_TRUNC) {
		close_batch(got);
		return conn_fail(c, err, "IPC: a message over the maximum of %u bytes", IPC_MSG_MAX);
	}
	return 0;
}

int ipc_read(struct ipc_conn *c, char *err)
{
	if (c->failed)
		return as_fail(err, AS_ECORRUPT, "IPC: the connection already refused a frame");
	if (c->eof)
		return as_fail(err, AS_EIO, "IPC: the peer closed the connection");
	if (c->nrxfd == IPC_RX_BATCHES)
		return as_fail(err, AS_ETOOBIG, "IPC: %d frames with descriptors wait: call ipc_next first",
			       IPC_RX_BATCHES);
	if (c->rx_off > 0) {
		memmove(c->rx.p, c->rx.p + c->rx_off, c->rx.len - c->rx_off);
		c->rx_base += c->rx_off;
		c->rx.len -= c->rx_off;
		c->rx_off = 0;
	}
	/* Room for a whole message must be there before it is taken off the socket. A
	 * message goes to a fixed staging area first, so rx grows by what arrives
	 * (mostly small frames), not by IPC_MSG_MAX per read. */
	if (c->rx.len > RX_MAX - IPC_MSG_MAX)
		return as_fail(err, AS_ETOOBIG, "IPC: %zu bytes wait in the receive buffer: call ipc_next first",
			       c->rx.len);
	if (!c->stage && !(c->stage = malloc(IPC_MSG_MAX)))
		return as_fail(err, AS_ENOMEM, "IPC: out of memory for the receive buffer");

	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * IPC_FDS_MAX)];
	} cm;
	struct iovec iov = {.iov_base = c->stage, .iov_len = IPC_MSG_MAX};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	memset(cm.b, 0, sizeof cm.b);
	ssize_t r;
	do
		r = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return AS_ENOTFOUND;
		return as_fail(err, AS_EIO, "IPC: receive: %s", strerror(errno));
	}

	struct ipc_fdbatch got = {.n = 0};
	GUARD(take_fds(c, &m, &got, err));
	if (r == 0) {
		if (got.n) {
			close_batch(&got);
			return conn_fail(c, err, "IPC: descriptors on an empty message");
		}
		if (!peer_closed(c->fd))
			return conn_fail(c, err, "IPC: an empty message");
		c->eof = 1;
		return as_fail(err, AS_EIO, "IPC: the peer closed the connection");
	}
	uint64_t at = c->rx_base + c->rx.len;
	/* A message with descriptors must begin a frame: all before it forms whole frames. */
	if (got.n && rx_frames_end(c) != c->rx.len) {
		close_batch(&got);
		return conn_fail(c, err, "IPC: descriptors arrived inside a frame (stream offset %llu)",
				 (unsigned long long)at);
	}
	if (buf_put(&c->rx, c->stage, (size_t)r) != 0) {
		close_batch(&got);
		c->failed = 1; /* the message is lost: the stream cannot be trusted any more */
		return as_fail(err, AS_ENOMEM, "IPC: out of memory for the receive buffer");
	}
	if (got.n) {
		got.at = at;
		c->rxfd[c->nrxfd++] = got;
	}
	return 0;
}

int ipc_next(struct ipc_conn *c, struct cv_arena *a, struct ipc_frame *f, char *err)
{
	memset(f, 0, sizeof *f);
	for (size_t i = 0; i < IPC_FDS_MAX; i++)
		f->fds[i] = -1;
	if (c->failed)
		return as_fail(err, AS_ECORRUPT, "IPC: the connection already refused a frame");
	size_t avail = c->rx.len - c->rx_off;
	uint64_t start = c->rx_base + c->rx_off;
	if (avail < 4) {
		if (!c->eof)
			return AS_ENOTFOUND;
		if (avail == 0)
			return as_fail(err, AS_EIO, "IPC: the peer closed the connection");
		return conn_fail(
		    c, err, "IPC: truncated frame at stream offset %llu: the peer closed after %zu of 4 length bytes",
		    (unsigned long long)start, avail);
	}
	const uint8_t *p = c->rx.p + c->rx_off;
	uint32_t len = be32_get(p);
	/* Refused from the length bytes alone: nothing has been allocated for the body. */
	if (len == 0)
		return conn_fail(c, err, "IPC: frame at stream offset %llu has zero length", (unsigned long long)start);
	if (len > IPC_FRAME_MAX)
		return conn_fail(c, err, "IPC: frame at stream offset %llu declares %u bytes, over the maximum of %u",
				 (unsigned long long)start, len, IPC_FRAME_MAX);
	if (avail - 4 < len) {
		if (!c->eof)
			return AS_ENOTFOUND;
		return conn_fail(c, err,
				 "IPC: truncated frame at stream offset %llu: the peer closed after %zu of %u bytes",
				 (unsigned long long)start, avail - 4, len);
	}
	uint64_t end = start + 4 + len;
	if (c->nrxfd && c->rxfd[0].at < end && c->rxfd[0].at != start) /* ipc_read prevents this */
		return conn_fail(c, err, "IPC: descriptors inside the frame at stream offset %llu",
				 (unsigned long long)start);

	/* Copy the body into the arena: the frame then outlives any later read. */
	struct cv *hold = cv_alloc(a, 1);
	if (!hold)
		return conn_fail(c, err, "IPC: frame at stream offset %llu: too many items", (unsigned long long)start);
	if (cv_set_bytes(a, hold, p + 4, len) != 0)
		return as_fail(err, AS_ENOMEM, "IPC: out of memory for a frame of %u bytes", len);
	char why[AS_ERRLEN] = "";
	struct cv *body = NULL;
	uint32_t type = 0;
	if (cbor_decode(hold->s, len, a, &body, why) != 0)
		return conn_fail(c, err, "IPC: frame at stream offset %llu is not one canonical CBOR item: %s",
				 (unsigned long long)start, why);
	if (frame_check(body, &type, why) != 0)
		return conn_fail(c, err, "IPC: frame at stream offset %llu: %s", (unsigned long long)start, why);

	if (c->nrxfd && c->rxfd[0].at == start) {
		memcpy(f->fds, c->rxfd[0].fds, c->rxfd[0].n * sizeof(int));
		f->nfds = c->rxfd[0].n;
		memmove(&c->rxfd[0], &c->rxfd[1], (c->nrxfd - 1) * sizeof c->rxfd[0]);
		c->nrxfd--;
	}
	f->type = type;
	f->body = body;
	f->raw = hold->s;
	f->len = len;
	c->rx_off += 4 + (size_t)len;
	if (c->rx_off == c->rx.len) {
		c->rx_base += c->rx.len;
		c->rx.len = c->rx_off = 0;
		if (c->rx.cap > IPC_MSG_MAX)
			buf_free(&c->rx); /* give back what a large frame took */
	}
	return 0;
}

void ipc_frame_close_fds(struct ipc_frame *f)
{
	/* Only slots below nfds: a frame built by hand with zeroes must not close stdin. */
	for (size_t i = 0; i < f->nfds && i < IPC_FDS_MAX; i++) {
		if (f->fds[i] >= 0)
			close(f->fds[i]);
		f->fds[i] = -1;
	}
	f->nfds = 0;
}

/* ---- sending ---- */

/* Encode body as a whole frame (length prefix included) into a new buffer. */
static int frame_encode(const struct cv *body, struct buf *out, char *err)
{
	static const uint8_t zero[4];
	uint32_t type;
	char why[AS_ERRLEN] = "";
	if (!body || frame_check(body, &type, why) != 0)
		return as_fail(err, AS_EINVAL, "IPC send: not a frame: %s", body ? why : "no body");
	buf_init(out, 4 + IPC_FRAME_MAX);
	int rc = buf_put(out, zero, 4);
	if (rc == 0)
		rc = cbor_encode(body, out, why);
	if (rc != 0) {
		buf_free(out);
		if (rc == AS_ETOOBIG)
			return as_fail(err, rc, "IPC send: frame of type %u over the maximum of %u bytes", type,
				       IPC_FRAME_MAX);
		return as_fail(err, rc, "IPC send: frame of type %u: %s", type, why);
	}
	uint32_t len = (uint32_t)(out->len - 4);
	for (int i = 0; i < 4; i++)
		out->p[i] = (uint8_t)(len >> (24 - 8 * i));
	return 0;
}

/* One message, with passfd when >= 0. Seqpacket sends are all or nothing. */
static ssize_t send_msg(int fd, const uint8_t *p, size_t n, int passfd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (passfd >= 0) {
		memset(cm.b, 0, sizeof cm.b);
		m.msg_control = cm.b;
		m.msg_controllen = sizeof cm.b;
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &passfd, sizeof(int));
	}
	ssize_t r;
	do
		r = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r >= 0 && (size_t)r != n) {
		errno = EPROTO; /* only a stream socket sends part of a message */
		return -1;
	}
	return r;
}

int ipc_send(int fd, const struct cv *body, int passfd, char *err)
{
	struct buf fr;
	GUARD(frame_encode(body, &fr, err));
	int64_t deadline = (int64_t)mono_ms() + IPC_SEND_TIMEOUT_MS;
	size_t off = 0;
	int rc = 0;
	while (rc == 0 && off < fr.len) {
		size_t n = fr.len - off < IPC_MSG_MAX ? fr.len - off : IPC_MSG_MAX;
		if (send_msg(fd, fr.p + off, n, off == 0 ? passfd : -1) >= 0) {
			off += n;
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
			rc = as_fail(err, AS_EIO, "IPC send: %s", strerror(errno));
			break;
		}
		int64_t left = deadline - (int64_t)mono_ms();
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			rc = as_fail(err, AS_EIO, "IPC send: the peer has not read for %d ms (%zu of %zu bytes sent)",
				     IPC_SEND_TIMEOUT_MS, off, fr.len);
	}
	buf_free(&fr);
	return rc;
}

size_t ipc_pending(const struct ipc_conn *c)
{
	return c->tx.len - c->tx_off;
}

int ipc_flush(struct ipc_conn *c, char *err)
{
	while (c->tx_off < c->tx.len) {
		size_t n = c->tx.len - c->tx_off < IPC_MSG_MAX ? c->tx.len - c->tx_off : IPC_MSG_MAX;
		int pfd = -1;
		/* A frame carrying a descriptor starts its own message (ipc_read checks this). */
		if (c->ntxfd && c->txfd[0].at == c->tx_off)
			pfd = c->txfd[0].fd;
		else if (c->ntxfd && c->txfd[0].at - c->tx_off < n)
			n = c->txfd[0].at - c->tx_off;
		if (send_msg(c->fd, c->tx.p + c->tx_off, n, pfd) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
				return 0;
			return as_fail(err, AS_EIO, "IPC send: %s", strerror(errno));
		}
		if (pfd >= 0) {
			close(pfd);
			memmove(&c->txfd[0], &c->txfd[1], (c->ntxfd - 1) * sizeof c->txfd[0]);
			c->ntxfd--;
		}
		c->tx_off += n;
	}
	c->tx.len = c->tx_off = 0;
	if (c->tx.cap > 2 * IPC_MSG_MAX)
		buf_free(&c->tx);
	return 0;
}

int ipc_conn_send(struct ipc_conn *c, const struct cv *body, int passfd, char *err)
{
	struct buf fr;
	GUARD(frame_encode(body, &fr, err));
	if (c->tx_off > 0) {
		memmove(c->tx.p, c->tx.p + c->tx_off, c->tx.len - c->tx_off);
		for (size_t i = 0; i < c->ntxfd; i++)
			c->txfd[i].at -= c->tx_off;
		c->tx.len -= c->tx_off;
		c->tx_off = 0;
	}
	int rc = 0;
	if (fr.len > IPC_TXQ_MAX - c->tx.len)
		rc = as_fail(err, AS_ETOOBIG, "IPC send: the peer is not reading: %zu bytes queued, limit %u",
			     c->tx.len, IPC_TXQ_MAX);
	else if (passfd >= 0 && c->ntxfd == IPC_TX_FDS)
		rc = as_fail(err, AS_ETOOBIG, "IPC send: the peer is not reading: %d descriptors queued", IPC_TX_FDS);
	int dup_fd = -1;
	if (rc == 0 && passfd >= 0 && (dup_fd = fcntl(passfd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = as_fail(err, AS_EINVAL, "IPC send: cannot pass descriptor %d: %s", passfd, strerror(errno));
	size_t at = c->tx.len;
	if (rc == 0 && buf_put(&c->tx, fr.p, fr.len) != 0) {
		if (dup_fd >= 0)
			close(dup_fd);
		rc = as_fail(err, AS_ENOMEM, "IPC send: out of memory for the transmit queue");
	}
	buf_free(&fr);
	if (rc != 0)
		return rc;
	if (dup_fd >= 0)
		c->txfd[c->ntxfd++] = (struct ipc_txfd){.at = at, .fd = dup_fd};
	return ipc_flush(c, err);
}

/* ---- building frames ---- */

struct cv *ipc_frame_new(struct cv_arena *a, uint32_t type, size_t npairs)
{
	if (npairs > SIZE_MAX / 4)
		return NULL;
	struct cv *m = cv_map(a, npairs + 1);
	if (!m || cv_set_text(a, &m->items[0], "t", 1) != 0)
		return NULL;
	cv_set_uint(&m->items[1], type);
	m->n = 1;
	m->u = npairs + 1; /* capacity in pairs; the encoder reads only n */
	return m;
}

struct cv *ipc_put(struct cv_arena *a, struct cv *frame, const char *key)
{
	if (!frame || !key || frame->t != CV_MAP || frame->n >= frame->u || strcmp(key, "t") == 0 || cv_get(frame, key))
		return NULL;
	struct cv *k = &frame->items[2 * frame->n], *v = k + 1;
	if (cv_set_text(a, k, key, strlen(key)) != 0)
		return NULL;
	memset(v, 0, sizeof *v);
	frame->n++;
	return v;
}

int ipc_put_uint(struct cv_arena *a, struct cv *frame, const char *key, uint64_t v)
{
	struct cv *s = ipc_put(a, frame, key);
	if (!s)
		return AS_EINVAL; /* frame full, key "t" or repeated, or out of memory */
	cv_set_uint(s, v);
	return 0;
}

int ipc_put_bool(struct cv_arena *a, struct cv *frame, const char *key, int v)
{
	struct cv *s = ipc_put(a, frame, key);
	if (!s)
		return AS_EINVAL; /* frame full, key "t" or repeated, or out of memory */
	s->t = v ? CV_TRUE : CV_FALSE;
	return 0;
}

int ipc_put_text(struct cv_arena *a, struct cv *frame, const char *key, const char *str, size_t n)
{
	struct cv *s = ipc_put(a, frame, key);
	if (!s)
		return AS_EINVAL; /* frame full, key "t" or repeated, or out of memory */
	if (cv_set_text(a, s, str, n) != 0) {
		frame->n--;
		return AS_ENOMEM;
	}
	return 0;
}

int ipc_put_bytes(struct cv_arena *a, struct cv *frame, const char *key, const uint8_t *p, size_t n)
{
	struct cv *s = ipc_put(a, frame, key);
	if (!s)
		return AS_EINVAL; /* frame full, key "t" or repeated, or out of memory */
	if (cv_set_bytes(a, s, p, n) != 0) {
		frame->n--;
		return AS_ENOMEM;
	}
	return 0;
}

/* ---- reading fields ---- */

static int field(const struct cv *m, const char *key, const struct cv **v, char *err)
{
	if (!m || m->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "IPC field \"%.32s\": not looked up in a map", key);
	*v = cv_get(m, key);
	if (!*v)
		return as_fail(err, AS_ECORRUPT, "IPC: missing field \"%.32s\"", key);
	return 0;
}

int ipc_get(const struct cv *m, const char *key, enum cv_type t, const struct cv **out, char *err)
{
	const struct cv *v;
	GUARD(field(m, key, &v, err));
	if (v->t != t)
		return as_fail(err, AS_ECORRUPT, "IPC field \"%.32s\" is %s, not %s", key, type_name(v->t),
			       type_name(t));
	*out = v;
	return 0;
}

int ipc_get_uint(const struct cv *m, const char *key, uint64_t max, uint64_t *out, char *err)
{
	const struct cv *v;
	GUARD(ipc_get(m, key, CV_UINT, &v, err));
	if (v->u > max)
		return as_fail(err, AS_ECORRUPT, "IPC field \"%.32s\" = %llu is over its maximum of %llu", key,
			       (unsigned long long)v->u, (unsigned long long)max);
	*out = v->u;
	return 0;
}

static int get_str(const struct cv *m, const char *key, enum cv_type t, size_t maxlen, const uint8_t **p, size_t *n,
		   char *err)
{
	const struct cv *v;
	GUARD(ipc_get(m, key, t, &v, err));
	if (v->n > maxlen)
		return as_fail(err, AS_ECORRUPT, "IPC field \"%.32s\" holds %zu bytes, over its maximum of %zu", key,
			       v->n, maxlen);
	*p = v->s;
	*n = v->n;
	return 0;
}

int ipc_get_text(const struct cv *m, const char *key, size_t maxlen, const char **s, size_t *n, char *err)
{
	const uint8_t *p;
	GUARD(get_str(m, key, CV_TEXT, maxlen, &p, n, err));
	*s = (const char *)p;
	return 0;
}

int ipc_get_bytes(const struct cv *m, const char *key, size_t maxlen, const uint8_t **p, size_t *n, char *err)
{
	return get_str(m, key, CV_BYTES, maxlen, p, n, err);
}

int ipc_get_bool(const struct cv *m, const char *key, int *out, char *err)
{
	const struct cv *v;
	GUARD(field(m, key, &v, err));
	if (v->t != CV_TRUE && v->t != CV_FALSE)
		return as_fail(err, AS_ECORRUPT, "IPC field \"%.32s\" is %s, not a boolean", key, type_name(v->t));
	*out = v->t == CV_TRUE;
	return 0;
}

/* ---- dispatch ---- */

int ipc_dispatch(const struct ipc_rule *rules, size_t n, uint32_t state, uint64_t *once, void *ctx, struct ipc_frame *f,
		 char *err)
{
	int rc;
	const struct frame_table *tb;
	size_t i = 0;
	while (i < n && rules[i].type != f->type)
		i++;
	if (state == 0 || (state & (state - 1)) != 0)
		rc = as_fail(err, AS_EINVAL, "IPC dispatch: state 0x%x is not a single state", state);
	else if (n > 64)
		rc = as_fail(err, AS_EINVAL, "IPC dispatch: %zu rules, at most 64", n);
	else if (i == n)
		rc = as_fail(err, AS_ECORRUPT, "IPC: frame type %u is not a known type", f->type);
	else if (!(rules[i].states & state))
		rc = as_fail(err, AS_ECORRUPT, "IPC: frame type %u is not allowed in state 0x%x", f->type, state);
	else if ((rules[i].flags & IPC_ONCE) && !once)
		rc = as_fail(err, AS_EINVAL, "IPC dispatch: once-only rule without a once mask");
	else if ((rules[i].flags & IPC_ONCE) && (*once >> i & 1))
		rc = as_fail(err, AS_ECORRUPT, "IPC: frame type %u may be sent only once", f->type);
	else if (f->nfds && !(rules[i].flags & IPC_FDS))
		rc = as_fail(err, AS_ECORRUPT, "IPC: frame type %u may not carry descriptors (%zu came)", f->type,
			     f->nfds);
	else if (!rules[i].handler)
		rc = as_fail(err, AS_EINVAL, "IPC dispatch: frame type %u has no handler", f->type);
	else if ((tb = frame_table_find(f->type)) && frame_fields_check(tb, f->body, err) != 0)
		rc = AS_ECORRUPT; /* the handler reads its fields as the table let them in */
	else {
		if (rules[i].flags & IPC_ONCE)
			*once |= (uint64_t)1 << i;
		rc = rules[i].handler(ctx, f, err);
	}
	ipc_frame_close_fds(f);
	return rc;
}

void ipc_log(int fd, const char *level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_LOG, 2);
	if (f && !ipc_put_text(&a, f, "level", level, strlen(level)) &&
	    !ipc_put_text(&a, f, "text", msg, strlen(msg))) {
		int sent = ipc_send(fd, f, -1, NULL);
		(void)sent; /* a log line that cannot be sent is dropped: there is nowhere else to say so */
	}
	cv_arena_free(&a);
}

int ipc_next_wait(struct ipc_conn *c, struct cv_arena *a, struct ipc_frame *f, int timeout_ms, char *err)
{
	uint64_t end = mono_ms() + (uint64_t)timeout_ms;
	for (;;) {
		cv_arena_reset(a);
		int g = ipc_next(c, a, f, err);
		if (g != AS_ENOTFOUND)
			return g;
		uint64_t now = mono_ms();
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			return as_fail(err, AS_EIO, "no answer within %d ms", timeout_ms);
		int r = ipc_read(c, err);
		if (r != 0 && r != AS_ENOTFOUND && !(r == AS_EIO && c->eof))
			return r;
	}
}

int ipc_config(struct ipc_conn *c, int fd, struct cv_arena *a, struct ipc_frame *f, char *err)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 10000) <= 0)
			return as_fail(err, AS_EIO, "no configuration from the signer");
		int r = ipc_read(c, err);
		if (r != 0 && r != AS_ENOTFOUND)
			return r;
		cv_arena_reset(a);
		int g = ipc_next(c, a, f, err);
		if (g == AS_ENOTFOUND)
			continue;
		if (g == 0 && f->type != F_CONFIG) {
			ipc_frame_close_fds(f);
			return as_fail(err, AS_ECORRUPT, "the first frame is not the configuration");
		}
		if (g == 0 && (g = frame_down_check(f->type, f->body, err)) != 0)
			ipc_frame_close_fds(f);
		return g;
	}
}
