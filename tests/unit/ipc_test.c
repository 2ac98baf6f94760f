/* Unit tests for gateway/proto/ipc.c over real SOCK_SEQPACKET socketpairs: round trips
 * (several frames per message, one frame over many messages, 1 MiB frames,
 * descriptors that work on arrival), each protocol violation refused with
 * AS_ECORRUPT and a message that names it, senders that never block on a peer
 * that does not read, the dispatch table's refusals, and the typed getters. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cbor.h"
#include "gateway/proto/ipc.h"

/* The test plays the peer on `peer`; the code under test reads `c` on the other end. */
struct fx {
	int peer, mine;
	struct ipc_conn c;
	struct cv_arena a; /* frames received */
	struct cv_arena b; /* frames built */
	char err[AS_ERRLEN];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof *x);
	int sv[2];
	if (!x || ipc_socketpair(sv, NULL) != 0)
		return -1;
	x->peer = sv[0];
	x->mine = sv[1];
	if (ipc_conn_init(&x->c, x->mine, x->err) != 0)
		return -1;
	cv_arena_init(&x->a, 1 << 16);
	cv_arena_init(&x->b, 1 << 16);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	ipc_conn_free(&x->c);
	if (x->peer >= 0)
		close(x->peer);
	close(x->mine);
	cv_arena_free(&x->a);
	cv_arena_free(&x->b);
	free(x);
	return 0;
}

static size_t unhex(const char *h, uint8_t *out, size_t max)
{
	size_t n = 0;
	int hi = -1;
	for (; *h; h++) {
		int d = 0;
		if (*h == ' ')
			continue;
		if (*h >= '0' && *h <= '9')
			d = *h - '0';
		else if (*h >= 'a' && *h <= 'f')
			d = *h - 'a' + 10;
		else
			fail_msg("bad hex digit in test vector: %c", *h);
		if (hi < 0) {
			hi = d;
		} else {
			if (n >= max)
				fail_msg("test vector too long");
			out[n++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
	}
	if (hi >= 0)
		fail_msg("odd hex test vector");
	return n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Wire bytes of a frame, built here with cbor_encode (not with ipc.c's own encoder). */
static void wire(const struct cv *body, struct buf *out)
{
	char err[AS_ERRLEN];
	uint8_t hdr[4] = {0};
	assert_int_equal(buf_put(out, hdr, 4), 0);
	size_t at = out->len - 4;
	assert_int_equal(cbor_encode(body, out, err), 0);
	put_be32(out->p + at, (uint32_t)(out->len - at - 4));
}

/* Wire bytes of a frame whose body is given in hex (valid or not): length prefix added. */
static size_t wire_hex(const char *hexbody, uint8_t *out, size_t max)
{
	size_t n = unhex(hexbody, out + 4, max - 4);
	put_be32(out, (uint32_t)n);
	return n + 4;
}

static void send_raw(int fd, const void *p, size_t n)
{
	assert_int_equal(send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL), (ssize_t)n);
}

static void send_raw_fds(int fd, const void *p, size_t n, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} cm;
	struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	memset(cm.b, 0, sizeof cm.b);
	if (nfds) {
		m.msg_control = cm.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * nfds);
	}
	assert_int_equal(sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL), (ssize_t)n);
}

/* A pipe whose read end reports EOF only once every copy of the write end is closed:
 * how the tests see that a descriptor ipc.c received was closed, not leaked. */
static void pipe_nb(int p[2])
{
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}
static void assert_write_end_closed(int rd)
{
	char c;
	assert_int_equal(read(rd, &c, 1), 0); /* EOF, not EAGAIN */
}
static void assert_write_end_open(int rd)
{
	char c;
	assert_int_equal(read(rd, &c, 1), -1);
	assert_int_equal(errno, EAGAIN);
}

static struct cv *frame_small(struct fx *x, uint32_t type, uint64_t n)
{
	struct cv *f = ipc_frame_new(&x->b, type, 1);
	assert_non_null(f);
	assert_int_equal(ipc_put_uint(&x->b, f, "n", n), 0);
	return f;
}

/* Run the receive side until it returns an error; that error must be AS_ECORRUPT
 * with a message containing `want`, and the connection must stay refused. */
static void expect_violation(struct fx *x, const char *want)
{
	struct ipc_frame f;
	int rc = 0;
	memset(x->err, 0, sizeof x->err);
	for (int i = 0; i < 100 && rc != AS_ECORRUPT; i++) {
		rc = ipc_read(&x->c, x->err);
		if (rc == AS_ECORRUPT)
			break;
		if (rc != 0 && rc != AS_ENOTFOUND && !(rc == AS_EIO && x->c.eof))
			fail_msg("ipc_read: %d %s", rc, x->err);
		while ((rc = ipc_next(&x->c, &x->a, &f, x->err)) == 0)
			fail_msg("a frame of type %u was accepted before the violation", f.type);
		if (rc != AS_ECORRUPT && rc != AS_ENOTFOUND)
			fail_msg("ipc_next: %d %s", rc, x->err);
	}
	assert_int_equal(rc, AS_ECORRUPT);
	if (!strstr(x->err, want))
		fail_msg("message \"%s\" does not contain \"%s\"", x->err, want);
	/* Sticky: nothing more is read or returned from this connection. */
	assert_int_equal(ipc_next(&x->c, &x->a, &f, NULL), AS_ECORRUPT);
	assert_int_equal(ipc_read(&x->c, NULL), AS_ECORRUPT);
}

static void send_hex_frame(struct fx *x, const char *hexbody)
{
	uint8_t w[256];
	size_t n = wire_hex(hexbody, w, sizeof w);
	send_raw(x->peer, w, n);
}

/* ---- round trips ---- */

static void test_roundtrip_fields(void **state)
{
	struct fx *x = *state;
	uint8_t digest[32];
	for (int i = 0; i < 32; i++)
		digest[i] = (uint8_t)(i * 7);
	struct cv *body = ipc_frame_new(&x->b, 7, 5);
	assert_int_equal(ipc_put_uint(&x->b, body, "n", 42), 0);
	assert_int_equal(ipc_put_text(&x->b, body, "name", "alice", 5), 0);
	assert_int_equal(ipc_put_bytes(&x->b, body, "digest", digest, 32), 0);
	assert_int_equal(ipc_put_bool(&x->b, body, "ok", 1), 0);
	struct cv *act = ipc_put(&x->b, body, "action");
	assert_non_null(act);
	struct cv *inner = cv_map(&x->b, 1);
	assert_non_null(inner);
	assert_int_equal(cv_set_text(&x->b, &inner->items[0], "k", 1), 0);
	assert_int_equal(cv_set_text(&x->b, &inner->items[1], "v", 1), 0);
	*act = *inner;
	assert_int_equal(ipc_send(x->peer, body, -1, x->err), 0);

	struct ipc_frame f;
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
	assert_int_equal(f.type, 7);
	assert_int_equal(f.nfds, 0);
	assert_int_equal(f.fds[0], -1);
	uint64_t n = 0;
	const char *s = NULL;
	const uint8_t *d = NULL;
	size_t len = 0;
	int ok = 0;
	assert_int_equal(ipc_get_uint(f.body, "n", 100, &n, x->err), 0);
	assert_int_equal(n, 42);
	assert_int_equal(ipc_get_text(f.body, "name", 5, &s, &len, x->err), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(s, "alice", 5);
	assert_int_equal(ipc_get_bytes(f.body, "digest", 32, &d, &len, x->err), 0);
	assert_int_equal(len, 32);
	assert_memory_equal(d, digest, 32);
	assert_int_equal(ipc_get_bool(f.body, "ok", &ok, x->err), 0);
	assert_int_equal(ok, 1);
	const struct cv *m = NULL;
	assert_int_equal(ipc_get(f.body, "action", CV_MAP, &m, x->err), 0);
	assert_int_equal(ipc_get_text(m, "k", 1, &s, &len, x->err), 0);
	assert_memory_equal(s, "v", 1);

	/* raw is exactly the canonical encoding of what was sent. */
	struct buf w;
	buf_init(&w, 1 << 20);
	wire(body, &w);
	assert_int_equal(f.len, w.len - 4);
	assert_memory_equal(f.raw, w.p + 4, f.len);
	buf_free(&w);

	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ENOTFOUND);
	assert_int_equal(ipc_read(&x->c, x->err), AS_ENOTFOUND);
}

static void test_several_frames_in_one_read(void **state)
{
	struct fx *x = *state;
	struct buf w;
	buf_init(&w, 1 << 16);
	for (uint32_t t = 1; t <= 3; t++)
		wire(frame_small(x, t, 100 + t), &w);
	send_raw(x->peer, w.p, w.len); /* one message */
	buf_free(&w);

	assert_int_equal(ipc_read(&x->c, x->err), 0);
	for (uint32_t t = 1; t <= 3; t++) {
		struct ipc_frame f;
		uint64_t n;
		assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
		assert_int_equal(f.type, t);
		assert_int_equal(ipc_get_uint(f.body, "n", UINT64_MAX, &n, x->err), 0);
		assert_int_equal(n, 100 + t);
	}
	struct ipc_frame f;
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ENOTFOUND);
	assert_int_equal(ipc_read(&x->c, x->err), AS_ENOTFOUND); /* all three came in that one read */
}

static void test_one_frame_byte_by_byte(void **state)
{
	struct fx *x = *state;
	struct cv *body = ipc_frame_new(&x->b, 9, 1);
	assert_int_equal(ipc_put_text(&x->b, body, "msg", "split over many reads", 21), 0);
	struct buf w;
	buf_init(&w, 1 << 16);
	wire(body, &w);
	struct ipc_frame f;
	for (size_t i = 0; i < w.len; i++) {
		send_raw(x->peer, w.p + i, 1);
		assert_int_equal(ipc_read(&x->c, x->err), 0);
		int rc = ipc_next(&x->c, &x->a, &f, x->err);
		if (i + 1 < w.len) {
			assert_int_equal(rc, AS_ENOTFOUND);
			continue;
		}
		assert_int_equal(rc, 0);
	}
	assert_int_equal(f.type, 9);
	assert_int_equal(f.len, w.len - 4);
	assert_memory_equal(f.raw, w.p + 4, f.len);
	buf_free(&w);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ENOTFOUND);
}

/* Messages that each hold the tail of one frame and the head of the next. */
static void test_messages_straddle_frames(void **state)
{
	struct fx *x = *state;
	struct buf w;
	buf_init(&w, 1 << 16);
	for (uint32_t t = 1; t <= 5; t++)
		wire(frame_small(x, t, 1000 * t), &w);
	uint32_t next = 1;
	for (size_t off = 0; off < w.len; off += 7) {
		size_t n = w.len - off < 7 ? w.len - off : 7;
		send_raw(x->peer, w.p + off, n);
		assert_int_equal(ipc_read(&x->c, x->err), 0);
		struct ipc_frame f;
		int rc;
		while ((rc = ipc_next(&x->c, &x->a, &f, x->err)) == 0) {
			uint64_t v;
			assert_int_equal(f.type, next);
			assert_int_equal(ipc_get_uint(f.body, "n", UINT64_MAX, &v, x->err), 0);
			assert_int_equal(v, 1000 * next);
			next++;
		}
		assert_int_equal(rc, AS_ENOTFOUND);
	}
	assert_int_equal(next, 6);
	buf_free(&w);
}

static void test_fd_passing(void **state)
{
	struct fx *x = *state;
	int p[2];
	pipe_nb(p);
	assert_int_equal(ipc_send(x->peer, frame_small(x, 3, 1), p[1], x->err), 0);
	close(p[1]); /* the only write end left is the one in flight */

	struct ipc_frame f;
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
	assert_int_equal(f.type, 3);
	assert_int_equal(f.nfds, 1);
	assert_true(f.fds[0] >= 0);
	assert_int_equal(f.fds[1], -1);
	assert_true(fcntl(f.fds[0], F_GETFD) & FD_CLOEXEC);
	/* The received descriptor works: what we write into it comes out of the pipe. */
	assert_int_equal(write(f.fds[0], "hello", 5), 5);
	char got[8] = "";
	assert_int_equal(read(p[0], got, sizeof got), 5);
	assert_memory_equal(got, "hello", 5);
	assert_write_end_open(p[0]);
	ipc_frame_close_fds(&f);
	assert_int_equal(f.nfds, 0);
	assert_write_end_closed(p[0]);
	close(p[0]);
}

/* The queued sender duplicates the descriptor (the caller may close its copy at
 * once) and sends it only with the frame it belongs to. */
static void test_fd_passing_queued(void **state)
{
	struct fx *x = *state;
	struct ipc_conn s;
	assert_int_equal(ipc_conn_init(&s, x->peer, x->err), 0);
	int p[2];
	pipe_nb(p);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 1, 0), -1, x->err), 0);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 2, 0), p[1], x->err), 0);
	close(p[1]);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 3, 0), -1, x->err), 0);
	assert_int_equal(ipc_pending(&s), 0);

	size_t seen = 0;
	int rc;
	while ((rc = ipc_read(&x->c, x->err)) == 0) {
		struct ipc_frame f;
		while (ipc_next(&x->c, &x->a, &f, x->err) == 0) {
			seen++;
			assert_int_equal(f.type, seen);
			assert_int_equal(f.nfds, f.type == 2 ? 1 : 0);
			if (f.nfds) {
				assert_int_equal(write(f.fds[0], "x", 1), 1);
				ipc_frame_close_fds(&f);
			}
		}
	}
	assert_int_equal(rc, AS_ENOTFOUND);
	assert_int_equal(seen, 3);
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_write_end_closed(p[0]);
	close(p[0]);
	ipc_conn_free(&s);
}

static struct cv *frame_big(struct fx *x, uint32_t type, size_t n, uint8_t fill);

/* Frames queued behind a backlog: the one with a descriptor must still start its
 * own message, or the receiver would refuse it as arriving inside a frame. */
static void test_fd_passing_queued_behind_backlog(void **state)
{
	struct fx *x = *state;
	struct ipc_conn s;
	assert_int_equal(ipc_conn_init(&s, x->peer, x->err), 0);
	int p[2];
	pipe_nb(p);
	assert_int_equal(ipc_conn_send(&s, frame_big(x, 1, 300000, 1), -1, x->err), 0);
	assert_true(ipc_pending(&s) > 0); /* the socket is full: what follows waits in the queue */
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 2, 0), -1, x->err), 0);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 3, 0), p[1], x->err), 0);
	close(p[1]);
	/* Let part of the backlog out, so queueing the next frame moves the queue (and
	 * the descriptor's place in it) to the front of the buffer. */
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	size_t before = ipc_pending(&s);
	assert_int_equal(ipc_flush(&s, x->err), 0);
	assert_true(ipc_pending(&s) < before);
	assert_true(s.tx_off > 0 && s.ntxfd == 1);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 4, 0), -1, x->err), 0);
	assert_int_equal(s.tx_off, 0);
	uint32_t next = 1;
	for (int i = 0; i < 10000 && next <= 4; i++) {
		assert_int_equal(ipc_flush(&s, x->err), 0);
		int rc = ipc_read(&x->c, x->err);
		if (rc != 0 && rc != AS_ENOTFOUND)
			fail_msg("ipc_read: %s", x->err);
		struct ipc_frame f;
		while ((rc = ipc_next(&x->c, &x->a, &f, x->err)) == 0) {
			assert_int_equal(f.type, next);
			assert_int_equal(f.nfds, next == 3 ? 1 : 0);
			ipc_frame_close_fds(&f);
			next++;
		}
		assert_int_equal(rc, AS_ENOTFOUND);
	}
	assert_int_equal(next, 5);
	assert_write_end_closed(p[0]);
	close(p[0]);
	ipc_conn_free(&s);
}

static struct cv *frame_big(struct fx *x, uint32_t type, size_t n, uint8_t fill)
{
	uint8_t *data = malloc(n);
	assert_non_null(data);
	memset(data, fill, n);
	struct cv *f = ipc_frame_new(&x->b, type, 1);
	assert_non_null(f);
	assert_int_equal(ipc_put_bytes(&x->b, f, "blob", data, n), 0);
	free(data);
	return f;
}

static void check_big(const struct ipc_frame *f, size_t n, uint8_t fill)
{
	const uint8_t *p;
	size_t len;
	assert_int_equal(ipc_get_bytes(f->body, "blob", n, &p, &len, NULL), 0);
	assert_int_equal(len, n);
	for (size_t i = 0; i < n; i++)
		if (p[i] != fill)
			fail_msg("byte %zu of the blob is %02x, not %02x", i, p[i], fill);
}

/* A 1 MiB frame goes out through the queue in 64 KiB messages as the reader drains. */
static void test_big_frame_queued(void **state)
{
	struct fx *x = *state;
	struct ipc_conn s;
	assert_int_equal(ipc_conn_init(&s, x->peer, x->err), 0);
	const size_t n = 1u << 20;
	assert_int_equal(ipc_conn_send(&s, frame_big(x, 5, n, 0xa5), -1, x->err), 0);
	assert_true(ipc_pending(&s) > 0); /* more than the socket buffer takes at once */
	struct ipc_frame f;
	int got = 0;
	for (int i = 0; i < 10000 && !got; i++) {
		assert_int_equal(ipc_flush(&s, x->err), 0);
		int rc = ipc_read(&x->c, x->err);
		assert_true(rc == 0 || rc == AS_ENOTFOUND);
		rc = ipc_next(&x->c, &x->a, &f, x->err);
		assert_true(rc == 0 || rc == AS_ENOTFOUND);
		got = rc == 0;
	}
	assert_true(got);
	assert_int_equal(ipc_pending(&s), 0);
	assert_int_equal(f.type, 5);
	check_big(&f, n, 0xa5);
	ipc_conn_free(&s);
}

struct rx_thread {
	int fd;
	size_t n;
	int rc;
};

static void *rx_main(void *arg)
{
	struct rx_thread *t = arg;
	struct ipc_conn c;
	struct cv_arena a;
	struct ipc_frame f;
	cv_arena_init(&a, 1024);
	t->rc = ipc_conn_init(&c, t->fd, NULL);
	for (int i = 0; t->rc == 0 && i < 10000; i++) {
		struct pollfd p = {.fd = t->fd, .events = POLLIN};
		poll(&p, 1, 1000);
		int rc = ipc_read(&c, NULL);
		if (rc != 0 && rc != AS_ENOTFOUND) {
			t->rc = rc;
			break;
		}
		rc = ipc_next(&c, &a, &f, NULL);
		if (rc == 0) {
			const uint8_t *p2;
			t->rc = ipc_get_bytes(f.body, "blob", SIZE_MAX, &p2, &t->n, NULL);
			t->rc = t->rc ? t->rc : f.type == 6 && p2[0] == 0x5a && p2[t->n - 1] == 0x5a ? 1 : -100;
		} else if (rc != AS_ENOTFOUND) {
			t->rc = rc;
		}
	}
	ipc_conn_free(&c);
	cv_arena_free(&a);
	return NULL;
}

/* ipc_send waits (poll) for a reader that is slower than the socket buffer. */
static void test_big_frame_ipc_send(void **state)
{
	struct fx *x = *state;
	struct rx_thread t = {.fd = x->mine};
	pthread_t th;
	const size_t n = IPC_FRAME_MAX - 64;
	struct cv *body = frame_big(x, 6, n, 0x5a);
	assert_int_equal(pthread_create(&th, NULL, rx_main, &t), 0);
	int rc = ipc_send(x->peer, body, -1, x->err);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(t.rc, 1);
	assert_int_equal(t.n, n);
}

static void test_send_refuses_over_max(void **state)
{
	struct fx *x = *state;
	struct ipc_conn s;
	assert_int_equal(ipc_conn_init(&s, x->peer, x->err), 0);
	struct cv *body = frame_big(x, 6, IPC_FRAME_MAX, 0); /* the field alone fills the frame */
	assert_int_equal(ipc_send(x->peer, body, -1, x->err), AS_ETOOBIG);
	assert_non_null(strstr(x->err, "over the maximum"));
	assert_int_equal(ipc_conn_send(&s, body, -1, x->err), AS_ETOOBIG);
	assert_int_equal(ipc_pending(&s), 0);
	assert_int_equal(ipc_read(&x->c, x->err), AS_ENOTFOUND); /* nothing was sent */
	ipc_conn_free(&s);
}

static void test_send_refuses_non_frames(void **state)
{
	struct fx *x = *state;
	uint8_t buf[64];
	const char *bad[] = {"82 01 02", "a1 61 78 01", "a1 61 74 61 61", "a2 01 02 61 74 01",
			     "a1 61 74 1b 00 00 00 01 00 00 00 00"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct cv *v;
		size_t n = unhex(bad[i], buf, sizeof buf);
		assert_int_equal(cbor_decode(buf, n, &x->b, &v, x->err), 0);
		assert_int_equal(ipc_send(x->peer, v, -1, x->err), AS_EINVAL);
		assert_non_null(strstr(x->err, "not a frame"));
	}
	assert_int_equal(ipc_send(x->peer, NULL, -1, x->err), AS_EINVAL);
	assert_int_equal(ipc_read(&x->c, x->err), AS_ENOTFOUND);
}

/* A worker that never reads: the queued sender refuses more than IPC_TXQ_MAX
 * and never blocks. */
static void test_stuck_peer_queue_is_bounded(void **state)
{
	struct fx *x = *state;
	struct ipc_conn s;
	assert_int_equal(ipc_conn_init(&s, x->mine, x->err), 0);
	struct cv *body = frame_big(x, 6, 1u << 20, 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = 0, sent = 0;
	while (sent < 100 && (rc = ipc_conn_send(&s, body, -1, x->err)) == 0)
		sent++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(rc, AS_ETOOBIG);
	assert_non_null(strstr(x->err, "not reading"));
	/* IPC_TXQ_MAX queued plus what the socket took (under a MiB) */
	assert_in_range(sent, IPC_TXQ_MAX / (1u << 20) - 1, IPC_TXQ_MAX / (1u << 20) + 2);
	assert_true(ipc_pending(&s) <= IPC_TXQ_MAX);
	assert_true(ipc_pending(&s) > IPC_TXQ_MAX - 2 * (1u << 20));
	(void)t0;
	(void)t1; /* no wall-clock bound here: machines are shared; returning at all shows it never blocks */
	ipc_conn_free(&s);
}

/* Descriptors are bounded too: queued ones (duplicates we hold) and received ones. */
static void test_descriptor_queues_bounded(void **state)
{
	struct fx *x = *state;
	struct ipc_conn s;
	int p[2];
	pipe_nb(p);
	assert_int_equal(ipc_conn_init(&s, x->peer, x->err), 0);
	assert_int_equal(ipc_conn_send(&s, frame_big(x, 1, 300000, 1), -1, x->err), 0);
	assert_true(ipc_pending(&s) > 0);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 3, 0), 9999, x->err), AS_EINVAL); /* not open */
	assert_int_equal(s.ntxfd, 0);
	for (int i = 0; i < IPC_TX_FDS; i++)
		assert_int_equal(ipc_conn_send(&s, frame_small(x, 3, 0), p[1], x->err), 0);
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 3, 0), p[1], x->err), AS_ETOOBIG);
	assert_non_null(strstr(x->err, "descriptors queued"));
	ipc_conn_free(&s); /* closes the 16 duplicates */
	close(p[1]);
	assert_write_end_closed(p[0]);
	close(p[0]);

	/* Receiving: a caller that reads without taking frames is stopped, not grown. */
	struct fx *y = NULL;
	assert_int_equal(setup((void **)&y), 0);
	pipe_nb(p);
	uint8_t w[64];
	size_t n = wire_hex("a1 61 74 18 cb", w, sizeof w); /* {t: T_FD} */
	for (int i = 0; i <= IPC_RX_BATCHES; i++)
		send_raw_fds(y->peer, w, n, &p[1], 1);
	close(p[1]);
	for (int i = 0; i < IPC_RX_BATCHES; i++)
		assert_int_equal(ipc_read(&y->c, y->err), 0);
	assert_int_equal(ipc_read(&y->c, y->err), AS_ETOOBIG);
	assert_non_null(strstr(y->err, "call ipc_next first"));
	struct ipc_frame f;
	for (int i = 0; i <= IPC_RX_BATCHES; i++) {
		if (i == IPC_RX_BATCHES)
			assert_int_equal(ipc_read(&y->c, y->err), 0);
		assert_int_equal(ipc_next(&y->c, &y->a, &f, y->err), 0);
		assert_int_equal(f.nfds, 1);
		ipc_frame_close_fds(&f);
	}
	assert_write_end_closed(p[0]);
	close(p[0]);
	teardown((void **)&y);
}

/* ipc_send to a peer that never reads gives up after IPC_SEND_TIMEOUT_MS. */
static void test_stuck_peer_ipc_send_times_out(void **state)
{
	struct fx *x = *state;
	struct cv *body = frame_big(x, 6, 1u << 20, 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(ipc_send(x->peer, body, -1, x->err), AS_EIO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(strstr(x->err, "has not read"));
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_in_range(ms, IPC_SEND_TIMEOUT_MS - 50, IPC_SEND_TIMEOUT_MS + 2000);
}

static void test_send_to_closed_peer(void **state)
{
	struct fx *x = *state;
	int sv[2];
	struct ipc_conn s;
	assert_int_equal(ipc_socketpair(sv, x->err), 0);
	assert_int_equal(ipc_conn_init(&s, sv[0], x->err), 0);
	close(sv[1]);
	/* A closed peer is an error, not a SIGPIPE that would kill the signer. */
	assert_int_equal(ipc_send(sv[0], frame_small(x, 1, 1), -1, x->err), AS_EIO);
	assert_non_null(strstr(x->err, "Broken pipe"));
	assert_int_equal(ipc_conn_send(&s, frame_small(x, 1, 1), -1, x->err), AS_EIO);
	ipc_conn_free(&s);
	close(sv[0]);
}

static void test_conn_init_refuses_other_sockets(void **state)
{
	struct fx *x = *state;
	struct ipc_conn c;
	int sv[2], p[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(ipc_conn_init(&c, sv[0], x->err), AS_EINVAL);
	assert_non_null(strstr(x->err, "SOCK_SEQPACKET"));
	pipe_nb(p);
	assert_int_equal(ipc_conn_init(&c, p[0], x->err), AS_EINVAL);
	assert_non_null(strstr(x->err, "not a socket"));
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

/* ---- violations ---- */

static void test_length_over_max_refused_before_allocation(void **state)
{
	struct fx *x = *state;
	static const uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff}; /* declares 4 GiB */
	send_raw(x->peer, huge, 4);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	struct ipc_frame f;
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "declares 4294967295 bytes, over the maximum"));
	/* Refused from 4 bytes, without waiting for the body or sizing anything by it. */
	assert_true(x->c.rx.cap < 1024);
	assert_int_equal(x->a.used, 0);
	assert_int_equal(ipc_read(&x->c, NULL), AS_ECORRUPT);
}

static void test_length_boundary(void **state)
{
	struct fx *x = *state;
	uint8_t h[4];
	/* Exactly the maximum is allowed: the receiver waits for the body. */
	put_be32(h, IPC_FRAME_MAX);
	send_raw(x->peer, h, 4);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	struct ipc_frame f;
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ENOTFOUND);
	/* One more is not. */
	struct fx *y = NULL;
	assert_int_equal(setup((void **)&y), 0);
	put_be32(h, IPC_FRAME_MAX + 1);
	send_raw(y->peer, h, 4);
	expect_violation(y, "over the maximum");
	teardown((void **)&y);
}

static void test_zero_length(void **state)
{
	struct fx *x = *state;
	static const uint8_t z[4] = {0};
	send_raw(x->peer, z, 4);
	expect_violation(x, "zero length");
}

static void test_truncated_then_eof(void **state)
{
	struct fx *x = *state;
	uint8_t w[64];
	size_t n = wire_hex("a2 61 6e 01 61 74 01", w, sizeof w); /* {"n": 1, "t": 1} */
	send_raw(x->peer, w, n - 3);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	struct ipc_frame f;
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ENOTFOUND); /* could still come */
	close(x->peer);
	x->peer = -1;
	assert_int_equal(ipc_read(&x->c, x->err), AS_EIO);
	assert_int_equal(x->c.eof, 1);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "truncated frame"));
	assert_non_null(strstr(x->err, "after 4 of 7 bytes"));
}

static void test_truncated_header_then_eof(void **state)
{
	struct fx *x = *state;
	static const uint8_t h[2] = {0, 0};
	send_raw(x->peer, h, 2);
	close(x->peer);
	x->peer = -1;
	expect_violation(x, "after 2 of 4 length bytes");
}

static void test_clean_eof(void **state)
{
	struct fx *x = *state;
	assert_int_equal(ipc_send(x->peer, frame_small(x, 1, 1), -1, x->err), 0);
	close(x->peer);
	x->peer = -1;
	struct ipc_frame f;
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_read(&x->c, x->err), AS_EIO);
	assert_int_equal(x->c.eof, 1);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0); /* what came before EOF still counts */
	assert_int_equal(f.type, 1);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_EIO);
	assert_non_null(strstr(x->err, "closed"));
}

/* Every body form the decoder refuses, each on a fresh connection. */
static void test_noncanonical_bodies(void **state)
{
	(void)state;
	static const struct {
		const char *hex, *want;
	} cases[] = {
	    {"a1 61 74 18 05", "shortest form"},	   /* {"t": 5} with a 1-byte argument */
	    {"a1 78 01 74 01", "shortest form"},	   /* key length in long form */
	    {"a2 61 78 01 61 74 01", "canonical order"},   /* "x" before "t" */
	    {"a2 61 74 01 61 74 02", "duplicate map key"}, /* "t" twice */
	    {"bf 61 74 01 ff", "indefinite length"},	   {"a1 61 74 01 00", "trailing bytes"},
	    {"a1 61 74 f9 3c 00", "floating point"},	   {"a1 61 74 c1 01", "tags are not allowed"},
	    {"a1 61 74 62 c3 28", "not valid UTF-8"},	   {"a1 61 74 5a ff ff ff ff", "exceeds the input"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct fx *x = NULL;
		assert_int_equal(setup((void **)&x), 0);
		send_hex_frame(x, cases[i].hex);
		expect_violation(x, "not one canonical CBOR item");
		if (!strstr(x->err, cases[i].want))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, x->err, cases[i].want);
		teardown((void **)&x);
	}
}

static void test_body_shape_violations(void **state)
{
	(void)state;
	static const struct {
		const char *hex, *want;
	} cases[] = {
	    {"82 01 02", "body is an array, not a map"},
	    {"61 74", "body is a text string, not a map"},
	    {"01", "body is an unsigned integer, not a map"},
	    {"a0", "no \"t\" (frame type) field"},
	    {"a1 61 78 01", "no \"t\" (frame type) field"},
	    {"a1 61 74 61 61", "\"t\" is a text string, not an unsigned integer"},
	    {"a1 61 74 20", "\"t\" is a negative integer, not an unsigned integer"},
	    {"a1 61 74 f5", "\"t\" is a boolean, not an unsigned integer"},
	    {"a1 61 74 1b 00 00 00 01 00 00 00 00", "\"t\" = 4294967296 is over 2^32-1"},
	    {"a2 01 02 61 74 01", "key 0 is an unsigned integer, not text"},
	    {"a2 41 78 02 61 74 01", "key 0 is a byte string, not text"},
	    {"a2 61 74 01 81 00 01", "key 1 is an array, not text"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct fx *x = NULL;
		assert_int_equal(setup((void **)&x), 0);
		send_hex_frame(x, cases[i].hex);
		expect_violation(x, cases[i].want);
		teardown((void **)&x);
	}
}

static void test_largest_type_accepted(void **state)
{
	struct fx *x = *state;
	send_hex_frame(x, "a1 61 74 1a ff ff ff ff");
	struct ipc_frame f;
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
	assert_int_equal(f.type, UINT32_MAX);
}

/* After a violation, a valid frame buffered behind it is never returned. */
static void test_violation_is_sticky(void **state)
{
	struct fx *x = *state;
	uint8_t w[64] = {0};
	size_t n = 4 + wire_hex("a1 61 74 01", w + 4, sizeof w - 4);
	send_raw(x->peer, w, n);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	struct ipc_frame f;
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ECORRUPT);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "already refused"));
}

static void test_message_over_max(void **state)
{
	struct fx *x = *state;
	size_t n = IPC_MSG_MAX + 1;
	uint8_t *p = calloc(1, n);
	assert_non_null(p);
	send_raw(x->peer, p, n);
	free(p);
	expect_violation(x, "message over the maximum");
}

static void test_empty_message(void **state)
{
	struct fx *x = *state;
	send_raw(x->peer, "", 0);
	expect_violation(x, "an empty message");
	assert_int_equal(x->c.eof, 0); /* told apart from the peer closing */
}

static void test_fd_inside_frame(void **state)
{
	struct fx *x = *state;
	struct buf w;
	buf_init(&w, 1 << 16);
	wire(frame_small(x, 1, 5), &w);
	int p[2];
	pipe_nb(p);
	send_raw(x->peer, w.p, 3);
	send_raw_fds(x->peer, w.p + 3, w.len - 3, &p[1], 1);
	close(p[1]);
	buf_free(&w);
	expect_violation(x, "inside a frame");
	assert_write_end_closed(p[0]);
	close(p[0]);
}

/* A message with descriptors may follow whole frames that were not taken yet. */
static void test_fd_after_buffered_frames(void **state)
{
	struct fx *x = *state;
	struct buf w1, w2;
	buf_init(&w1, 1 << 16);
	buf_init(&w2, 1 << 16);
	wire(frame_small(x, 1, 1), &w1);
	wire(frame_small(x, 1, 2), &w1);
	wire(frame_small(x, 2, 3), &w2);
	int p[2];
	pipe_nb(p);
	send_raw(x->peer, w1.p, w1.len);
	send_raw_fds(x->peer, w2.p, w2.len, &p[1], 1);
	close(p[1]);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	struct ipc_frame f;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
		assert_int_equal(f.nfds, i == 2 ? 1 : 0);
	}
	assert_int_equal(f.type, 2);
	ipc_frame_close_fds(&f);
	assert_write_end_closed(p[0]);
	close(p[0]);
	buf_free(&w1);
	buf_free(&w2);
}

static void test_too_many_fds(void **state)
{
	struct fx *x = *state;
	uint8_t w[64];
	size_t n = wire_hex("a1 61 74 01", w, sizeof w);
	int p[2], fds[IPC_FDS_MAX + 1];
	pipe_nb(p);
	for (int i = 0; i <= IPC_FDS_MAX; i++)
		fds[i] = p[1];
	send_raw_fds(x->peer, w, n, fds, IPC_FDS_MAX + 1);
	close(p[1]);
	expect_violation(x, "more than 4 descriptors");
	assert_write_end_closed(p[0]);
	close(p[0]);
}

static void test_fds_on_empty_message(void **state)
{
	struct fx *x = *state;
	int p[2];
	pipe_nb(p);
	send_raw_fds(x->peer, "", 0, &p[1], 1);
	close(p[1]);
	expect_violation(x, "descriptors on an empty message");
	assert_write_end_closed(p[0]);
	close(p[0]);
}

/* The caller must drain ipc_next: the receive buffer is bounded and ipc_read says so. */
static void test_receive_buffer_bounded(void **state)
{
	struct fx *x = *state;
	struct buf w;
	buf_init(&w, 1 << 20);
	wire(frame_big(x, 4, 60000, 7), &w);
	int rc = 0, sent = 0;
	while (sent < 100 && (rc = ipc_read(&x->c, x->err)) != AS_ETOOBIG) {
		assert_true(rc == 0 || rc == AS_ENOTFOUND);
		send_raw(x->peer, w.p, w.len);
		sent++;
	}
	assert_int_equal(rc, AS_ETOOBIG);
	assert_non_null(strstr(x->err, "call ipc_next first"));
	assert_true(x->c.rx.len <= 4 + IPC_FRAME_MAX + IPC_MSG_MAX);
	/* the buffer takes about (IPC_FRAME_MAX + IPC_MSG_MAX) / 60 KB frames before refusing */
	assert_in_range(sent, (IPC_FRAME_MAX) / 60100, (IPC_FRAME_MAX + 2 * IPC_MSG_MAX) / 60000 + 2);
	/* Not a violation: draining lets reading go on, and every frame arrives. */
	struct ipc_frame f;
	int frames = 0;
	for (int i = 0; i < 1000; i++) {
		while ((rc = ipc_next(&x->c, &x->a, &f, x->err)) == 0) {
			check_big(&f, 60000, 7);
			frames++;
			cv_arena_reset(&x->a);
		}
		assert_int_equal(rc, AS_ENOTFOUND);
		rc = ipc_read(&x->c, x->err);
		if (rc == AS_ENOTFOUND)
			break;
		assert_int_equal(rc, 0);
	}
	assert_int_equal(frames, sent);
	buf_free(&w);
}

/* ---- dispatch ---- */

/* Types with no field table (gateway/proto/frames.c): dispatch alone is tested here. */
enum { T_HELLO = 201, T_REQUEST = 202, T_FD = 203, T_BYE = 204 };
#define CALLS(c, t) ((c).calls[(t)-200])
enum { S_INIT = 0, S_READY = 1, S_CLOSED = 2 };

struct ctx {
	int calls[8];
	int fail_with;
	int took_fd;
};

static int h_any(void *vctx, struct ipc_frame *f, char *err)
{
	struct ctx *c = vctx;
	c->calls[f->type - 200]++;
	if (c->fail_with)
		return as_fail(err, c->fail_with, "handler says no");
	return 0;
}

static int h_fd(void *vctx, struct ipc_frame *f, char *err)
{
	struct ctx *c = vctx;
	c->calls[f->type - 200]++;
	c->took_fd = f->fds[0];
	f->fds[0] = -1; /* taken: dispatch must not close it */
	(void)err;
	return 0;
}

static const struct ipc_rule RULES[] = {
    {T_HELLO, IPC_STATE(S_INIT), IPC_ONCE, h_any},
    {T_REQUEST, IPC_STATE(S_READY), 0, h_any},
    {T_FD, IPC_STATE(S_READY), IPC_FDS, h_fd},
    {T_BYE, IPC_STATE(S_READY) | IPC_STATE(S_CLOSED), IPC_ONCE, h_any},
};
#define NRULES (sizeof RULES / sizeof *RULES)

static struct ipc_frame hand_frame(struct fx *x, uint32_t type)
{
	struct ipc_frame f = {.type = type, .body = frame_small(x, type, 0)};
	for (int i = 0; i < IPC_FDS_MAX; i++)
		f.fds[i] = -1;
	return f;
}

static void test_dispatch_unknown_type(void **state)
{
	struct fx *x = *state;
	struct ctx c = {0};
	uint64_t once = 0;
	struct ipc_frame f = hand_frame(x, 99);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "type 99 is not a known type"));
	for (int i = 0; i < 8; i++)
		assert_int_equal(c.calls[i], 0);
}

static void test_dispatch_wrong_state(void **state)
{
	struct fx *x = *state;
	struct ctx c = {0};
	uint64_t once = 0;
	struct ipc_frame f = hand_frame(x, T_REQUEST);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_INIT), &once, &c, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "type 202 is not allowed in state 0x1"));
	f = hand_frame(x, T_HELLO);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), AS_ECORRUPT);
	assert_int_equal(CALLS(c, T_REQUEST), 0);
	assert_int_equal(CALLS(c, T_HELLO), 0);
	assert_int_equal(once, 0); /* a refused once-only frame does not use up its turn */
	f = hand_frame(x, T_HELLO);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_INIT), &once, &c, &f, x->err), 0);
	assert_int_equal(CALLS(c, T_HELLO), 1);
}

static void test_dispatch_once_only(void **state)
{
	struct fx *x = *state;
	struct ctx c = {0};
	uint64_t once = 0;
	struct ipc_frame f = hand_frame(x, T_HELLO);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_INIT), &once, &c, &f, x->err), 0);
	assert_int_equal(CALLS(c, T_HELLO), 1);
	f = hand_frame(x, T_HELLO);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_INIT), &once, &c, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "type 201 may be sent only once"));
	assert_int_equal(CALLS(c, T_HELLO), 1);
	/* Another once-only type keeps its own turn, and a failing handler spends it. */
	c.fail_with = AS_EINVAL;
	f = hand_frame(x, T_BYE);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), AS_EINVAL);
	assert_int_equal(CALLS(c, T_BYE), 1);
	c.fail_with = 0;
	f = hand_frame(x, T_BYE);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_CLOSED), &once, &c, &f, x->err), AS_ECORRUPT);
	assert_int_equal(CALLS(c, T_BYE), 1);
	/* Without a mask a once-only rule cannot be checked: refused, not run. */
	f = hand_frame(x, T_HELLO);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_INIT), NULL, &c, &f, x->err), AS_EINVAL);
	assert_int_equal(CALLS(c, T_HELLO), 1);
}

static void test_dispatch_allowed_reaches_handler_once(void **state)
{
	struct fx *x = *state;
	struct ctx c = {0};
	uint64_t once = 0;
	for (int i = 1; i <= 3; i++) {
		struct ipc_frame f = hand_frame(x, T_REQUEST);
		assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), 0);
		assert_int_equal(CALLS(c, T_REQUEST), i);
	}
	assert_int_equal(CALLS(c, T_HELLO) + CALLS(c, T_FD) + CALLS(c, T_BYE), 0);
	/* The handler's own error comes back unchanged, with its message. */
	c.fail_with = AS_ENOTFOUND;
	struct ipc_frame f = hand_frame(x, T_REQUEST);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), AS_ENOTFOUND);
	assert_string_equal(x->err, "handler says no");
	assert_int_equal(CALLS(c, T_REQUEST), 4);
}

static void test_dispatch_bad_state_argument(void **state)
{
	struct fx *x = *state;
	struct ctx c = {0};
	uint64_t once = 0;
	struct ipc_frame f = hand_frame(x, T_REQUEST);
	assert_int_equal(ipc_dispatch(RULES, NRULES, 0, &once, &c, &f, x->err), AS_EINVAL);
	/* Two bits would let a type allowed in either state through in both. */
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_INIT) | IPC_STATE(S_READY), &once, &c, &f, x->err),
			 AS_EINVAL);
	assert_non_null(strstr(x->err, "not a single state"));
	/* A rule without a handler is a table bug: refused, never a call through NULL. */
	static const struct ipc_rule nohandler[] = {{T_REQUEST, IPC_STATE(S_READY), 0, NULL}};
	assert_int_equal(ipc_dispatch(nohandler, 1, IPC_STATE(S_READY), &once, &c, &f, x->err), AS_EINVAL);
	assert_int_equal(CALLS(c, T_REQUEST), 0);
}

/* Descriptors reach only IPC_FDS types; those the handler leaves are closed. */
static void test_dispatch_descriptors(void **state)
{
	struct fx *x = *state;
	struct ctx c = {0};
	uint64_t once = 0;
	int p[2], fds[IPC_FDS_MAX];
	struct ipc_frame f;
	uint8_t w[64];

	/* A request (no IPC_FDS) carrying a descriptor: refused, handler not run, closed. */
	pipe_nb(p);
	size_t n = wire_hex("a1 61 74 18 ca", w, sizeof w); /* {t: T_REQUEST} */
	send_raw_fds(x->peer, w, n, &p[1], 1);
	close(p[1]);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
	assert_int_equal(f.nfds, 1);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "may not carry descriptors"));
	assert_int_equal(CALLS(c, T_REQUEST), 0);
	assert_write_end_closed(p[0]);
	close(p[0]);

	/* An FD frame with four: the handler takes one, dispatch closes the other three. */
	pipe_nb(p);
	for (int i = 0; i < IPC_FDS_MAX; i++)
		fds[i] = p[1];
	n = wire_hex("a1 61 74 18 cb", w, sizeof w); /* {t: T_FD} */
	send_raw_fds(x->peer, w, n, fds, IPC_FDS_MAX);
	close(p[1]);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
	assert_int_equal(f.nfds, IPC_FDS_MAX);
	assert_int_equal(ipc_dispatch(RULES, NRULES, IPC_STATE(S_READY), &once, &c, &f, x->err), 0);
	assert_int_equal(CALLS(c, T_FD), 1);
	assert_true(c.took_fd >= 0);
	assert_int_equal(f.nfds, 0);
	assert_write_end_open(p[0]); /* the one the handler took */
	close(c.took_fd);
	assert_write_end_closed(p[0]);
	close(p[0]);
}

/* ---- getters and builders ---- */

static const struct cv *decoded_sample(struct fx *x)
{
	struct cv *body = ipc_frame_new(&x->b, 12, 6);
	assert_non_null(body);
	assert_int_equal(ipc_put_uint(&x->b, body, "u", 500), 0);
	assert_int_equal(ipc_put_text(&x->b, body, "s", "abcdef", 6), 0);
	assert_int_equal(ipc_put_bytes(&x->b, body, "b", (const uint8_t *)"\x00\x01\x02", 3), 0);
	assert_int_equal(ipc_put_bool(&x->b, body, "f", 0), 0);
	struct cv *neg = ipc_put(&x->b, body, "neg");
	assert_non_null(neg);
	cv_set_int(neg, -3);
	struct cv *arr = ipc_put(&x->b, body, "arr");
	assert_non_null(arr);
	arr->t = CV_ARRAY;
	assert_int_equal(ipc_send(x->peer, body, -1, x->err), 0);
	struct ipc_frame f;
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &f, x->err), 0);
	return f.body;
}

static void expect_get_fail(int rc, const char *err, const char *want)
{
	assert_int_equal(rc, AS_ECORRUPT);
	if (!strstr(err, want))
		fail_msg("message \"%s\" does not contain \"%s\"", err, want);
}

static void test_getters(void **state)
{
	struct fx *x = *state;
	const struct cv *m = decoded_sample(x);
	uint64_t u = 77;
	const char *s = (const char *)"sentinel";
	const uint8_t *p = (const uint8_t *)"sentinel";
	size_t n = 77;
	int b = 77;
	const struct cv *v = NULL;

	/* Right type, within maximum. */
	assert_int_equal(ipc_get_uint(m, "u", 500, &u, x->err), 0);
	assert_int_equal(u, 500);
	assert_int_equal(ipc_get_text(m, "s", 6, &s, &n, x->err), 0);
	assert_int_equal(n, 6);
	assert_memory_equal(s, "abcdef", 6);
	assert_int_equal(ipc_get_bytes(m, "b", 3, &p, &n, x->err), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "\x00\x01\x02", 3);
	assert_int_equal(ipc_get_bool(m, "f", &b, x->err), 0);
	assert_int_equal(b, 0);
	assert_int_equal(ipc_get(m, "arr", CV_ARRAY, &v, x->err), 0);
	assert_int_equal(v->t, CV_ARRAY);

	/* Over the maximum by one; outputs untouched. */
	u = 77;
	n = 77;
	expect_get_fail(ipc_get_uint(m, "u", 499, &u, x->err), x->err, "\"u\" = 500 is over its maximum of 499");
	assert_int_equal(u, 77);
	expect_get_fail(ipc_get_text(m, "s", 5, &s, &n, x->err), x->err, "\"s\" holds 6 bytes, over its maximum of 5");
	expect_get_fail(ipc_get_bytes(m, "b", 2, &p, &n, x->err), x->err, "\"b\" holds 3 bytes, over its maximum of 2");
	assert_int_equal(n, 77);

	/* Wrong types, each naming the field. */
	expect_get_fail(ipc_get_uint(m, "neg", UINT64_MAX, &u, x->err), x->err,
			"\"neg\" is a negative integer, not an unsigned integer");
	expect_get_fail(ipc_get_uint(m, "s", UINT64_MAX, &u, x->err), x->err, "\"s\" is a text string");
	expect_get_fail(ipc_get_text(m, "b", SIZE_MAX, &s, &n, x->err), x->err,
			"\"b\" is a byte string, not a text string");
	expect_get_fail(ipc_get_bytes(m, "s", SIZE_MAX, &p, &n, x->err), x->err,
			"\"s\" is a text string, not a byte string");
	expect_get_fail(ipc_get_bool(m, "u", &b, x->err), x->err, "\"u\" is an unsigned integer, not a boolean");
	expect_get_fail(ipc_get(m, "arr", CV_MAP, &v, x->err), x->err, "\"arr\" is an array, not a map");
	assert_int_equal(u, 77);
	assert_int_equal(b, 0);

	/* Absent fields, and lookups in something that is not a map. */
	expect_get_fail(ipc_get_uint(m, "nope", 1, &u, x->err), x->err, "missing field \"nope\"");
	expect_get_fail(ipc_get_text(m, "nope", 1, &s, &n, x->err), x->err, "missing field \"nope\"");
	expect_get_fail(ipc_get_uint(v, "u", 1, &u, x->err), x->err, "not looked up in a map");
	expect_get_fail(ipc_get_uint(NULL, "u", 1, &u, x->err), x->err, "not looked up in a map");
}

static void test_builders(void **state)
{
	struct fx *x = *state;
	struct cv *f = ipc_frame_new(&x->b, 7, 2);
	assert_non_null(f);
	assert_int_equal(ipc_put_text(&x->b, f, "zz", "a", 1), 0);
	assert_null(ipc_put(&x->b, f, "t"));  /* the type is set once, by ipc_frame_new */
	assert_null(ipc_put(&x->b, f, "zz")); /* no duplicate keys */
	assert_int_equal(ipc_put_uint(&x->b, f, "a", 1), 0);
	assert_null(ipc_put(&x->b, f, "b")); /* full */
	assert_int_equal(ipc_put_bool(&x->b, f, "c", 1), AS_EINVAL);
	assert_int_equal(f->n, 3);
	/* Canonical key order whatever the insertion order: "a" < "t" < "zz". */
	struct buf w;
	buf_init(&w, 1024);
	wire(f, &w);
	uint8_t want[32];
	size_t n = unhex("00 00 00 0c a3 61 61 01 61 74 07 62 7a 7a 61 61", want, sizeof want);
	assert_int_equal(w.len, n);
	assert_memory_equal(w.p, want, n);
	buf_free(&w);
	/* A received frame cannot be extended. */
	struct ipc_frame r;
	assert_int_equal(ipc_send(x->peer, f, -1, x->err), 0);
	assert_int_equal(ipc_read(&x->c, x->err), 0);
	assert_int_equal(ipc_next(&x->c, &x->a, &r, x->err), 0);
	assert_int_equal(r.len, 12);
	assert_memory_equal(r.raw, want + 4, 12);
	assert_null(ipc_put(&x->a, (struct cv *)r.body, "x"));
	/* A frame with no fields is {"t": type}. */
	struct cv *e = ipc_frame_new(&x->b, 0, 0);
	assert_non_null(e);
	buf_init(&w, 1024);
	wire(e, &w);
	n = unhex("00 00 00 04 a1 61 74 00", want, sizeof want);
	assert_int_equal(w.len, n);
	assert_memory_equal(w.p, want, n);
	buf_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	    T_(test_roundtrip_fields),
	    T_(test_several_frames_in_one_read),
	    T_(test_one_frame_byte_by_byte),
	    T_(test_messages_straddle_frames),
	    T_(test_fd_passing),
	    T_(test_fd_passing_queued),
	    T_(test_fd_passing_queued_behind_backlog),
	    T_(test_big_frame_queued),
	    T_(test_big_frame_ipc_send),
	    T_(test_send_refuses_over_max),
	    T_(test_send_refuses_non_frames),
	    T_(test_stuck_peer_queue_is_bounded),
	    T_(test_descriptor_queues_bounded),
	    T_(test_stuck_peer_ipc_send_times_out),
	    T_(test_send_to_closed_peer),
	    T_(test_conn_init_refuses_other_sockets),
	    T_(test_length_over_max_refused_before_allocation),
	    T_(test_length_boundary),
	    T_(test_zero_length),
	    T_(test_truncated_then_eof),
	    T_(test_truncated_header_then_eof),
	    T_(test_clean_eof),
	    T_(test_noncanonical_bodies),
	    T_(test_body_shape_violations),
	    T_(test_largest_type_accepted),
	    T_(test_violation_is_sticky),
	    T_(test_message_over_max),
	    T_(test_empty_message),
	    T_(test_fd_inside_frame),
	    T_(test_fd_after_buffered_frames),
	    T_(test_too_many_fds),
	    T_(test_fds_on_empty_message),
	    T_(test_receive_buffer_bounded),
	    T_(test_dispatch_unknown_type),
	    T_(test_dispatch_wrong_state),
	    T_(test_dispatch_once_only),
	    T_(test_dispatch_allowed_reaches_handler_once),
	    T_(test_dispatch_bad_state_argument),
	    T_(test_dispatch_descriptors),
	    T_(test_getters),
	    T_(test_builders),
#undef T_
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
