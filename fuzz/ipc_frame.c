/* Fuzz target: the bytes a compromised worker writes on its IPC socket, read
 * exactly as the signer reads them (gateway/proto/ipc.c over a real SOCK_SEQPACKET
 * socketpair). The input is the byte stream; how it is cut into messages, and
 * which messages carry descriptors, comes from a PRNG seeded by the input, so
 * corpus files are plain frame streams. Every frame decoded goes through the
 * getters and a small dispatch table. Properties (abort() when violated):
 *  - ipc returns exactly the frames an independent reference parser accepts, in
 *    order, then refuses (AS_ECORRUPT, with a message) or sees a clean EOF;
 *  - no frame over IPC_FRAME_MAX (or empty) is returned; raw is the input's bytes,
 *    and a decoded frame re-encodes to exactly those bytes;
 *  - descriptors arrive with the frame whose first message carried them, and are
 *    refused anywhere else; none leaks;
 *  - the getters accept a field exactly when it is present, of the type asked
 *    and within its maximum; dispatch calls a handler exactly when the type is
 *    known, allowed in the state, not a repeated once-only type, carries
 *    descriptors only if allowed, and (for a type with a field table,
 *    gateway/proto/frames.c) holds what its table says;
 *  - frame_down_check, the workers' check of the signer's frames, passes a frame
 *    exactly when its type has a signer-to-worker table and the frame holds what it
 *    says, and refuses with a message otherwise; frame_get_* read what cv_get finds,
 *    of their type, and nothing (0, NULL) for anything else. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cbor.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ITEMS 4096 /* items per frame, for ipc and for the reference parser alike */
#define MAXFRAMES 65536

static const uint8_t *g_data;
static size_t g_size;

static void fail(const char *why)
{
	fprintf(stderr, "ipc_frame: property violated: %s\n", why);
	fprintf(stderr, "input (%zu bytes):", g_size);
	for (size_t i = 0; i < g_size && i < 128; i++)
		fprintf(stderr, " %02x", g_data[i]);
	fprintf(stderr, "%s\n", g_size > 128 ? " ..." : "");
	abort();
}

static void check_err(const char *err)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0)
		fail("refusal without an error message");
}

/* ---- the reference parser: the wire format of ipc.h, written again plainly ---- */

struct ref {
	size_t start[MAXFRAMES]; /* of each acceptable frame */
	size_t end[MAXFRAMES];
	uint32_t type[MAXFRAMES];
	size_t k;	  /* acceptable frames before the first bad one */
	size_t bad;	  /* offset where the stream goes wrong; == size when it ends cleanly */
	size_t refuse_by; /* offset by which ipc must have refused (SIZE_MAX: only at EOF) */
};
static struct ref R;

static int ref_frame_ok(const uint8_t *p, size_t len, struct cv_arena *a, uint32_t *type)
{
	struct cv *v;
	cv_arena_reset(a);
	if (cbor_decode(p, len, a, &v, NULL) != 0 || v->t != CV_MAP)
		return 0;
	const struct cv *t = NULL;
	for (size_t i = 0; i < v->n; i++) {
		if (v->items[2 * i].t != CV_TEXT)
			return 0;
		if (v->items[2 * i].n == 1 && v->items[2 * i].s[0] == 't')
			t = &v->items[2 * i + 1];
	}
	if (!t || t->t != CV_UINT || t->u > UINT32_MAX)
		return 0;
	*type = (uint32_t)t->u;
	return 1;
}

static void ref_parse(const uint8_t *d, size_t n, struct cv_arena *a)
{
	size_t off = 0;
	R.k = 0;
	R.refuse_by = SIZE_MAX;
	while (off < n && R.k < MAXFRAMES) {
		if (n - off < 4)
			break;
		uint32_t len =
		    (uint32_t)d[off] << 24 | (uint32_t)d[off + 1] << 16 | (uint32_t)d[off + 2] << 8 | d[off + 3];
		/* A bad length is refused from its 4 bytes, a bad body once it is complete. */
		if (len == 0 || len > IPC_FRAME_MAX) {
			R.refuse_by = off + 4;
			break;
		}
		if (n - off - 4 < len)
			break;
		if (!ref_frame_ok(d + off + 4, len, a, &R.type[R.k])) {
			R.refuse_by = off + 4 + len;
			break;
		}
		R.start[R.k] = off;
		R.end[R.k] = off + 4 + len;
		R.k++;
		off += 4 + (size_t)len;
	}
	R.bad = off;
}

/* Acceptable frames that end at or before offset o. */
static size_t frames_before(size_t o)
{
	size_t j = 0;
	while (j < R.k && R.end[j] <= o)
		j++;
	return j;
}

/* ---- getters: accepted exactly when present, of the type, within the maximum ---- */

static void check_getters(const struct cv *m)
{
	static const char *keys[] = {"t", "n", "msg", "blob", "ok", "missing", ""};
	char err[AS_ERRLEN];
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		const struct cv *v = cv_get(m, keys[k]);
		uint64_t u = 0;
		const char *s;
		const uint8_t *p;
		size_t n;
		int b;
		const struct cv *o;
		int want = v && v->t == CV_UINT && v->u <= 1000;
		memset(err, 'X', sizeof err);
		int rc = ipc_get_uint(m, keys[k], 1000, &u, err);
		if ((rc == 0) != want || (rc == 0 && u != v->u) || (rc != 0 && rc != AS_ECORRUPT))
			fail("ipc_get_uint disagrees with the value");
		if (rc)
			check_err(err);
		want = v && v->t == CV_TEXT && v->n <= 16;
		memset(err, 'X', sizeof err);
		rc = ipc_get_text(m, keys[k], 16, &s, &n, err);
		if ((rc == 0) != want || (rc == 0 && (n != v->n || (const uint8_t *)s != v->s)))
			fail("ipc_get_text disagrees with the value");
		if (rc)
			check_err(err);
		want = v && v->t == CV_BYTES && v->n <= 32;
		rc = ipc_get_bytes(m, keys[k], 32, &p, &n, err);
		if ((rc == 0) != want || (rc == 0 && (n != v->n || p != v->s)))
			fail("ipc_get_bytes disagrees with the value");
		want = v && (v->t == CV_TRUE || v->t == CV_FALSE);
		rc = ipc_get_bool(m, keys[k], &b, err);
		if ((rc == 0) != want || (rc == 0 && b != (v->t == CV_TRUE)))
			fail("ipc_get_bool disagrees with the value");
		want = v && v->t == CV_MAP;
		rc = ipc_get(m, keys[k], CV_MAP, &o, err);
		if ((rc == 0) != want || (rc == 0 && o != v))
			fail("ipc_get disagrees with the value");
	}
}

/* ---- the workers' side: frame_down_check and the typed reads of a checked frame ---- */

static void check_down(uint32_t type, const struct cv *m)
{
	char err[AS_ERRLEN], terr[AS_ERRLEN];
	memset(err, 'X', sizeof err);
	int rc = frame_down_check(type, m, err);
	const struct frame_table *tb = frame_down_find(type);
	if (rc != 0 && rc != AS_ECORRUPT)
		fail("frame_down_check returned neither 0 nor AS_ECORRUPT");
	if (rc)
		check_err(err);
	if (rc == 0 && (!tb || frame_fields_check(tb, m, terr) != 0))
		fail("frame_down_check passed a frame its table refuses");
	if (rc != 0 && tb && frame_fields_check(tb, m, terr) == 0 && type != F_REC_CALLS && type != F_CONFIG)
		fail("frame_down_check refused a frame its table passes");
	static const char *keys[] = {"t", "n", "msg", "blob", "ok", "missing", "conn", "json", ""};
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		const struct cv *v = cv_get(m, keys[k]);
		size_t n;
		const char *s = frame_get_text(m, keys[k], &n);
		const uint8_t *p;
		if (frame_get_uint(m, keys[k]) != (v && v->t == CV_UINT ? v->u : 0))
			fail("frame_get_uint disagrees with the value");
		if ((s != NULL) != (v && v->t == CV_TEXT) || (s && (n != v->n || (n && (const uint8_t *)s != v->s))))
			fail("frame_get_text disagrees with the value");
		p = frame_get_bytes(m, keys[k], &n);
		if ((p != NULL) != (v && v->t == CV_BYTES) || (p && (n != v->n || (n && p != v->s))))
			fail("frame_get_bytes disagrees with the value");
		if (frame_get_bool(m, keys[k]) != (v && v->t == CV_TRUE))
			fail("frame_get_bool disagrees with the value");
		if ((frame_get(m, keys[k], CV_MAP) != NULL) != (v && v->t == CV_MAP))
			fail("frame_get disagrees with the value");
	}
}

/* ---- a small dispatch table, with its own model of what must be refused ---- */

enum { S_INIT, S_READY, S_CLOSED };
struct sess {
	uint32_t state; /* S_* */
	int calls;
	uint32_t last_type;
};

static int h_hello(void *ctx, struct ipc_frame *f, char *err)
{
	struct sess *s = ctx;
	uint64_t v;
	s->calls++;
	s->last_type = f->type;
	GUARD(ipc_get_uint(f->body, "n", 10, &v, err));
	s->state = S_READY;
	return 0;
}

static int h_request(void *ctx, struct ipc_frame *f, char *err)
{
	struct sess *s = ctx;
	const char *msg;
	const uint8_t *blob;
	size_t n;
	s->calls++;
	s->last_type = f->type;
	GUARD(ipc_get_text(f->body, "msg", 256, &msg, &n, err));
	return ipc_get_bytes(f->body, "blob", 32, &blob, &n, err);
}

static int h_passfd(void *ctx, struct ipc_frame *f, char *err)
{
	struct sess *s = ctx;
	struct stat st;
	s->calls++;
	s->last_type = f->type;
	if (f->nfds == 0)
		return as_fail(err, AS_ECORRUPT, "no descriptor");
	if (fstat(f->fds[0], &st) != 0)
		fail("a received descriptor does not work");
	close(f->fds[0]); /* taken */
	f->fds[0] = -1;
	return 0;
}

static int h_bye(void *ctx, struct ipc_frame *f, char *err)
{
	struct sess *s = ctx;
	(void)err;
	s->calls++;
	s->last_type = f->type;
	s->state = S_CLOSED;
	return 0;
}

static const struct ipc_rule RULES[] = {
    {1, IPC_STATE(S_INIT), IPC_ONCE, h_hello},
    {2, IPC_STATE(S_READY), 0, h_request},
    {3, IPC_STATE(S_READY), IPC_FDS, h_passfd},
    {4, IPC_STATE(S_READY) | IPC_STATE(S_CLOSED), IPC_ONCE, h_bye},
    {5, IPC_STATE(S_INIT) | IPC_STATE(S_READY), 0, h_request},
};
#define NRULES (sizeof RULES / sizeof *RULES)

static void run_dispatch(struct sess *s, uint64_t *once, struct ipc_frame *f)
{
	char err[AS_ERRLEN];
	size_t i = 0;
	while (i < NRULES && RULES[i].type != f->type)
		i++;
	/* Types 1-5 are also project frame types with field tables (gateway/proto/frames.c):
	 * dispatch runs a handler only for a frame its type's table accepts. */
	const struct frame_table *tb = frame_table_find(f->type);
	char terr[AS_ERRLEN];
	int allowed = i < NRULES && (RULES[i].states & IPC_STATE(s->state)) &&
		      !((RULES[i].flags & IPC_ONCE) && (*once >> i & 1)) &&
		      (f->nfds == 0 || (RULES[i].flags & IPC_FDS)) &&
		      (!tb || frame_fields_check(tb, f->body, terr) == 0);
	int before = s->calls;
	uint64_t once_before = *once;
	memset(err, 'X', sizeof err);
	int rc = ipc_dispatch(RULES, NRULES, IPC_STATE(s->state), once, s, f, err);
	if (!allowed && (rc != AS_ECORRUPT || s->calls != before))
		fail("dispatch ran a handler for a frame it must refuse");
	if (allowed && (s->calls != before + 1 || s->last_type != f->type))
		fail("dispatch did not run the handler exactly once");
	if (allowed && (RULES[i].flags & IPC_ONCE) && *once != (once_before | (uint64_t)1 << i))
		fail("dispatch did not record a once-only type");
	if (!allowed && *once != once_before)
		fail("dispatch changed the once mask on a refusal");
	if (rc)
		check_err(err);
	if (f->nfds != 0)
		fail("dispatch left descriptors in the frame");
}

/* ---- the run ---- */

static uint64_t rng;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cv_arena ra, a;
	static int inited;
	if (!inited) {
		cv_arena_init(&ra, ITEMS);
		cv_arena_init(&a, ITEMS + 1); /* ipc_next takes one item to hold the frame bytes */
		inited = 1;
	}
	g_data = data;
	g_size = size;
	ref_parse(data, size, &ra);

	rng = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < size; i++)
		rng = (rng ^ data[i]) * 0x100000001b3ull;
	rng |= 1;

	int sv[2], p[2] = {-1, -1};
	char err[AS_ERRLEN];
	struct ipc_conn c;
	if (ipc_socketpair(sv, err) != 0 || ipc_conn_init(&c, sv[1], err) != 0)
		fail("cannot set up a socketpair");
	/* Descriptors are copies of a pipe's write end: its read end sees EOF only when
	 * every copy ipc.c received has been closed. */
	int use_fds = size > 0 && rnd() % 4 == 0;
	if (use_fds && pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		fail("pipe2");

	size_t expect = R.k;	       /* frames ipc must return */
	int expect_err = R.bad < size; /* and then refuse; else a clean EOF */
	size_t want_fds[64] = {0};     /* descriptors expected on frames 0..63 */
	size_t got = 0, off = 0;
	int rc = 0;
	struct sess s = {.state = S_INIT};
	uint64_t once = 0;

	while (off < size && rc == 0) {
		size_t left = size - off, n;
		uint32_t r = rnd();
		if (r % 512 < 2) {
			/* Rarely, a message no writer of frames sends: empty, or over IPC_MSG_MAX. */
			static uint8_t junk[IPC_MSG_MAX + 1];
			size_t jn = r % 512 == 0 ? 0 : sizeof junk;
			if (send(sv[0], junk, jn, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)jn)
				fail("send on the socketpair failed");
			size_t j = frames_before(off);
			if (j < expect)
				expect = j;
			expect_err = 1;
			memset(err, 'X', sizeof err);
			rc = ipc_read(&c, err);
			if (rc != AS_ECORRUPT)
				fail("an empty or oversized message was not refused");
			check_err(err);
			break;
		}
		if (r % 10 < 5)
			n = 1 + rnd() % 8;
		else if (r % 10 < 8)
			n = 1 + rnd() % 256;
		else
			n = 1 + rnd() % IPC_MSG_MAX;
		if (n > left)
			n = left;
		size_t nfd = 0;
		int fds[IPC_FDS_MAX + 2];
		if (use_fds && rnd() % 4 == 0) {
			nfd = rnd() % 8 == 0 ? 1 + rnd() % (IPC_FDS_MAX + 1) : 1;
			for (size_t i = 0; i < nfd; i++)
				fds[i] = p[1];
			/* What the model expects of a message with descriptors at off. */
			size_t j = frames_before(off);
			int at_start = j < R.k ? R.start[j] == off : off == R.bad;
			if (nfd > IPC_FDS_MAX || !at_start) {
				if (j < expect)
					expect = j;
				expect_err = 1;
			} else if (j < R.k && j < 64 && j < expect) {
				want_fds[j] = nfd;
			}
		}
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int) * (IPC_FDS_MAX + 2))];
		} cm;
		struct iovec iov = {.iov_base = (void *)(data + off), .iov_len = n};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
		if (nfd) {
			memset(cm.b, 0, sizeof cm.b);
			m.msg_control = cm.b;
			m.msg_controllen = CMSG_SPACE(sizeof(int) * nfd);
			struct cmsghdr *h = CMSG_FIRSTHDR(&m);
			h->cmsg_level = SOL_SOCKET;
			h->cmsg_type = SCM_RIGHTS;
			h->cmsg_len = CMSG_LEN(sizeof(int) * nfd);
			memcpy(CMSG_DATA(h), fds, sizeof(int) * nfd);
		}
		if (sendmsg(sv[0], &m, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)
			fail("sendmsg on the socketpair failed");
		off += n;

		memset(err, 'X', sizeof err);
		rc = ipc_read(&c, err);
		if (rc == AS_ECORRUPT) {
			check_err(err);
			break;
		}
		if (rc != 0)
			fail("ipc_read neither read the message nor refused it");
		for (;;) {
			struct ipc_frame f;
			memset(err, 'X', sizeof err);
			cv_arena_reset(&a);
			rc = ipc_next(&c, &a, &f, err);
			if (rc == AS_ENOTFOUND) {
				rc = 0;
				break;
			}
			if (rc != 0) {
				if (rc != AS_ECORRUPT)
					fail("ipc_next failed with something other than AS_ECORRUPT");
				check_err(err);
				break;
			}
			if (got >= expect)
				fail("ipc returned a frame the reference parser refuses");
			if (f.len == 0 || f.len > IPC_FRAME_MAX)
				fail("a frame of length 0 or over IPC_FRAME_MAX was returned");
			if (R.start[got] + 4 + f.len != R.end[got] ||
			    memcmp(f.raw, data + R.start[got] + 4, f.len) != 0)
				fail("raw is not the frame's bytes from the input");
			if (f.type != R.type[got])
				fail("the frame type is not its \"t\"");
			if (f.nfds != (got < 64 ? want_fds[got] : f.nfds))
				fail("descriptors did not arrive with the frame that carried them");
			struct buf out;
			buf_init(&out, IPC_FRAME_MAX + 16);
			if (cbor_encode(f.body, &out, err) != 0 || out.len != f.len || memcmp(out.p, f.raw, f.len) != 0)
				fail("a decoded frame does not re-encode to the same bytes");
			buf_free(&out);
			check_getters(f.body);
			check_down(f.type, f.body);
			run_dispatch(&s, &once, &f);
			got++;
		}
		if (rc == 0 && off >= R.refuse_by)
			fail("a bad frame was not refused as soon as its bytes were in");
	}

	if (rc == 0) {
		/* Everything sent: the worker closes its end. */
		close(sv[0]);
		sv[0] = -1;
		memset(err, 'X', sizeof err);
		rc = ipc_read(&c, err);
		if (rc != AS_EIO || !c.eof)
			fail("the peer's close was not seen as EOF");
		struct ipc_frame f;
		memset(err, 'X', sizeof err);
		rc = ipc_next(&c, &a, &f, err);
		if (rc == 0)
			fail("a frame appeared after EOF that was not complete before it");
		if (rc != AS_EIO && rc != AS_ECORRUPT)
			fail("ipc_next at EOF returned something other than AS_EIO or AS_ECORRUPT");
		check_err(err);
		if (rc == AS_EIO)
			rc = 0;
	}
	if (got != expect)
		fail("ipc returned fewer frames than the reference parser accepts");
	if ((rc == AS_ECORRUPT) != expect_err)
		fail(expect_err ? "a bad stream was not refused" : "a good stream was refused");

	ipc_conn_free(&c);
	if (sv[0] >= 0)
		close(sv[0]);
	close(sv[1]);
	if (use_fds) {
		char ch;
		close(p[1]);
		if (read(p[0], &ch, 1) != 0)
			fail("a received descriptor was leaked");
		close(p[0]);
	}
	return 0;
}
