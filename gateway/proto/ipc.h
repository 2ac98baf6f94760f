/* IPC between the privileged signer and its jailed workers: length-prefixed
 * canonical CBOR frames on an AF_UNIX SOCK_SEQPACKET socketpair, a bounded
 * non-blocking receiver, a bounded transmit queue, an OpenSSH-monitor style
 * dispatch table, and typed field getters that never trust the peer.
 *
 * Wire format. A frame is a 4-byte big-endian length L (1 <= L <= IPC_FRAME_MAX),
 * then L bytes holding exactly one canonical CBOR map (common/cbor.h) whose keys
 * are all text and whose key "t" is the frame type (an unsigned integer below
 * 2^32). Frames travel as a byte stream cut into SOCK_SEQPACKET messages of at most
 * IPC_MSG_MAX bytes; one message may hold the end of one frame and the start of
 * the next. Descriptors (SCM_RIGHTS, at most IPC_FDS_MAX) ride on the message that
 * begins their frame, so each one belongs to exactly one frame.
 *
 * Why SOCK_SEQPACKET rather than SOCK_STREAM: on a stream socket the kernel glues
 * and splits writes, so a descriptor arrives with "some byte" of the stream and
 * cannot be tied to a frame with certainty; a seqpacket message is delivered
 * whole, with its descriptors, so we know the exact stream offset a descriptor
 * came with and refuse one that is not at a frame start. A single 1 MiB frame
 * cannot be one message (Linux refuses messages over the send buffer, about
 * 208 KiB by default: EMSGSIZE), hence the length prefix and 64 KiB messages.
 * Seqpacket sends are atomic (all or EAGAIN), so no message is ever half sent.
 *
 * Errors follow include/assent/err.h, messages go to err (AS_ERRLEN). Every protocol
 * violation is AS_ECORRUPT (err.h: "data fails an integrity check: tampered");
 * the signer treats it as an attack: log, kill the worker, restart it. After a
 * violation a connection refuses everything: it cannot resynchronise. */
#ifndef ASSENT_IPC_H
#define ASSENT_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "common/cbor.h"
#include "common/util.h"
#include "common/attr.h"

/* Largest frame body: a request holds a 512 KiB action and 1 MiB of subject
 * bytes; a reviewer's `show` reply holds both again as JSON and base64. */
#define IPC_FRAME_MAX ((3u << 20) + (64u << 10))
/* Largest seqpacket message either side sends or accepts; bigger is a violation. */
#define IPC_MSG_MAX (64u << 10)
/* Most descriptors one frame may carry; more is a violation (all are closed). */
#define IPC_FDS_MAX 4
/* Most bytes a connection's transmit queue holds before the peer counts as stuck. */
#define IPC_TXQ_MAX (4u * (IPC_FRAME_MAX + 4u))
/* Longest ipc_send waits for a peer that does not read. */
#define IPC_SEND_TIMEOUT_MS 5000

/* Create a SOCK_SEQPACKET | SOCK_CLOEXEC socketpair for one worker. */
int ipc_socketpair(int sv[2], char *err) AS_MUST_USE;

/* ---- one end of a connection ----
 * The caller allocates the struct (e.g. inside its worker record); fields are
 * private to ipc.c except `eof`, which callers may read. */
struct ipc_fdbatch {
	uint64_t at; /* stream offset of the frame these descriptors begin */
	int fds[IPC_FDS_MAX];
	size_t n;
};
struct ipc_txfd {
	size_t at; /* offset in tx of the frame this descriptor begins */
	int fd;	   /* our own duplicate, closed once sent */
};
#define IPC_RX_BATCHES 4 /* frames with descriptors received and not yet taken */
#define IPC_TX_FDS 16	 /* descriptors queued for sending */
struct ipc_conn {
	int fd;		/* not owned: the caller closes it, after ipc_conn_free */
	int eof;	/* the peer closed its end (set by ipc_read) */
	int failed;	/* a violation was seen: every later call refuses */
	uint8_t *stage; /* IPC_MSG_MAX bytes a message is received into, then appended to rx */
	struct buf rx;	/* rx.p[rx_off..rx.len) received, not yet returned as frames */
	size_t rx_off;
	uint64_t rx_base; /* stream offset of rx.p[0] */
	struct ipc_fdbatch rxfd[IPC_RX_BATCHES];
	size_t nrxfd;
	struct buf tx; /* tx.p[tx_off..tx.len) queued, not yet sent */
	size_t tx_off;
	struct ipc_txfd txfd[IPC_TX_FDS];
	size_t ntxfd;
};

/* Set up c on fd, which must be an AF_UNIX SOCK_SEQPACKET socket (AS_EINVAL
 * otherwise). Allocates nothing until data arrives. */
int ipc_conn_init(struct ipc_conn *c, int fd, char *err) AS_MUST_USE;
/* Free the buffers and close every descriptor c still holds (received and not
 * yet returned, or queued for sending). Does not close c->fd. */
void ipc_conn_free(struct ipc_conn *c);

/* ---- receiving (never blocks) ----
 * Use: when c->fd is readable, call ipc_read once, then ipc_next until it returns
 * AS_ENOTFOUND; repeat. */

/* Receive at most one message (bytes and any descriptors) into c's buffer. Returns
 *   0            a message was read: call ipc_next until AS_ENOTFOUND
 *   AS_ENOTFOUND nothing to read now (EAGAIN)
 *   AS_EIO       the peer closed (c->eof is set; ipc_next then returns what is
 *                buffered and reports a partial frame as truncated), or a socket error
 *   AS_ECORRUPT  violation: message over IPC_MSG_MAX, an empty message, more than
 *                IPC_FDS_MAX descriptors, a descriptor not at a frame start, or a
 *                control message other than SCM_RIGHTS (received descriptors are closed)
 *   AS_ETOOBIG   the caller did not drain ipc_next (buffer or descriptor queue full);
 *                nothing was read */
int ipc_read(struct ipc_conn *c, char *err) AS_MUST_USE;

/* A received frame. body, raw and type live in the arena passed to ipc_next and
 * stay valid until that arena is reset or freed (the frame bytes are copied out
 * of c, so later reads never move them). */
struct ipc_frame {
	uint32_t type;	       /* the value of "t" */
	const struct cv *body; /* the whole map, "t" included */
	const uint8_t *raw;    /* the canonical CBOR bytes of body, as received */
	size_t len;	       /* their length, 1..IPC_FRAME_MAX */
	int fds[IPC_FDS_MAX];  /* descriptors that came with the frame (-1 past nfds); */
	size_t nfds;	       /* the caller owns them: ipc_dispatch closes those left */
};

/* Take the next complete frame from c's buffer, decoding it into arena a (reset it
 * between frames; its item limit bounds the items of one frame). Returns
 *   0            *f holds a frame
 *   AS_ENOTFOUND no complete frame buffered yet: read more
 *   AS_ECORRUPT  violation, with a message naming it: length 0 or over
 *                IPC_FRAME_MAX (refused from the 4 length bytes alone, before any
 *                allocation), truncated by the peer closing, a body that is not
 *                one canonical CBOR item, not a map, a key that is not text, "t"
 *                missing, not an unsigned integer or over 2^32-1
 *   AS_EIO       the peer closed and nothing is left
 *   AS_ENOMEM    out of memory */
int ipc_next(struct ipc_conn *c, struct cv_arena *a, struct ipc_frame *f, char *err) AS_MUST_USE;

/* A worker's first frame, its configuration (F_CONFIG), which it reads before its jail:
 * waits at most 10 s on c (over fd), then the same as ipc_next into *f (the caller closes
 * its descriptors); AS_EIO when none comes, AS_ECORRUPT when the first frame is another
 * or breaks F_CONFIG's field table (frame_down_check: err names the field). */
int ipc_config(struct ipc_conn *c, int fd, struct cv_arena *a, struct ipc_frame *f, char *err) AS_MUST_USE;

/* The next frame, waiting at most timeout_ms for it (blocking use: the cluster client and the
 * signer's end of it). The same results as ipc_next, and AS_EIO when none came in time. */
int ipc_next_wait(struct ipc_conn *c, struct cv_arena *a, struct ipc_frame *f, int timeout_ms, char *err) AS_MUST_USE;

/* Close f->fds[0..nfds) that are not -1, set them to -1 and nfds to 0. */
void ipc_frame_close_fds(struct ipc_frame *f);

/* ---- sending ----
 * body must be a frame as ipc_frame_new builds it (a map with text keys and a
 * uint "t"); it is encoded canonically. Frames over IPC_FRAME_MAX: AS_ETOOBIG.
 * passfd (-1 for none) is sent with the frame; the caller keeps its own copy. */

/* Send one frame on fd now, waiting at most IPC_SEND_TIMEOUT_MS in all for a peer
 * that does not read (AS_EIO then, as for a closed peer; no SIGPIPE). Meant for
 * workers, whose signer always reads; after an error the stream may hold part of
 * a frame, so the connection must be dropped. The signer uses ipc_conn_send. */
int ipc_send(int fd, const struct cv *body, int passfd, char *err) AS_MUST_USE;

/* Queue one frame on c (passfd is duplicated) and send what the socket takes now,
 * never blocking. AS_ETOOBIG when the queue would exceed IPC_TXQ_MAX bytes or
 * IPC_TX_FDS descriptors: a peer that stopped reading, to be treated as stuck.
 * AS_EIO when the peer is gone. */
int ipc_conn_send(struct ipc_conn *c, const struct cv *body, int passfd, char *err) AS_MUST_USE;
/* Send more of the queue without blocking (call when c->fd is writable). 0 or AS_EIO. */
int ipc_flush(struct ipc_conn *c, char *err) AS_MUST_USE;
/* Bytes still queued: while non-zero, poll c->fd for POLLOUT and call ipc_flush. */
size_t ipc_pending(const struct ipc_conn *c);

/* ---- building frames ----
 * ipc_frame_new returns a map with "t" = type and room for npairs more fields
 * (the map's spare capacity is kept in its `u`), all in arena a; NULL when the
 * arena is full. ipc_put adds a field and returns its value slot (zeroed, to be
 * filled with cv_set_* or by copying a built value); NULL when the frame is full,
 * the key is "t" or already present, or out of memory. Keys are copied. */
struct cv *ipc_frame_new(struct cv_arena *a, uint32_t type, size_t npairs);
struct cv *ipc_put(struct cv_arena *a, struct cv *frame, const char *key);
/* A worker's log line, sent to the signer as F_LOG {level, text} (the signer writes it). */
void ipc_log(int fd, const char *level, const char *fmt, ...) AS_PRINTF(3, 4);
int ipc_put_uint(struct cv_arena *a, struct cv *frame, const char *key, uint64_t v) AS_MUST_USE;
int ipc_put_text(struct cv_arena *a, struct cv *frame, const char *key, const char *s, size_t n) AS_MUST_USE;
int ipc_put_bytes(struct cv_arena *a, struct cv *frame, const char *key, const uint8_t *p, size_t n) AS_MUST_USE;
int ipc_put_bool(struct cv_arena *a, struct cv *frame, const char *key, int v) AS_MUST_USE;

/* ---- reading fields: the peer is never trusted ----
 * Each returns 0 and fills its outputs, or AS_ECORRUPT naming the field when it
 * is absent, of another type, or over its maximum (outputs untouched). m is a
 * frame body or any map inside one. Strings point into the frame's arena; text
 * is valid UTF-8 (the decoder checked) but not NUL-terminated and may hold NUL. */
int ipc_get_uint(const struct cv *m, const char *key, uint64_t max, uint64_t *out, char *err) AS_MUST_USE;
int ipc_get_text(const struct cv *m, const char *key, size_t maxlen, const char **s, size_t *n, char *err) AS_MUST_USE;
int ipc_get_bytes(const struct cv *m, const char *key, size_t maxlen, const uint8_t **p, size_t *n,
		  char *err) AS_MUST_USE;
int ipc_get_bool(const struct cv *m, const char *key, int *out, char *err) AS_MUST_USE;
/* Any value of type t (e.g. CV_MAP or CV_ARRAY for nested values). */
int ipc_get(const struct cv *m, const char *key, enum cv_type t, const struct cv **out, char *err) AS_MUST_USE;

/* ---- dispatch (OpenSSH monitor style) ----
 * A table of the frame types a peer may send. A peer's state is one bit,
 * IPC_STATE(k); rule.states is the set of states in which the type is allowed. */
#define IPC_STATE(k) (1u << (k))
/* IPC_ONCE: allowed once per connection (tracked by rule position). IPC_FDS: may
 * carry descriptors, which frames of other types may not; the peer chose them, so
 * the handler checks what each one is (fstat, SO_PEERCRED). */
#define IPC_ONCE 0x1u
#define IPC_FDS 0x2u
struct ipc_rule {
	uint32_t type;
	uint32_t states;
	uint32_t flags;
	/* May take descriptors from f (set the slot to -1); returns 0 or an as_err. */
	int (*handler)(void *ctx, struct ipc_frame *f, char *err);
};
/* Find f->type in rules[0..n) (at most 64 entries), check it is allowed in state
 * (a single bit, else AS_EINVAL), that an IPC_ONCE rule has not run before (bit i
 * of *once is rule i; set before the handler runs, so a failing handler cannot be
 * retried), that only IPC_FDS types carry descriptors, and that the frame holds what
 * its type's field table says (gateway/proto/frames.h: every type a worker sends has
 * one); then call the handler once and return what it returns. A refusal (unknown
 * type, wrong state, once-only type again, unexpected descriptors, a field missing,
 * unknown, of another type or over its maximum) is AS_ECORRUPT, names what was wrong
 * and calls no handler. Either way every descriptor left in f is closed. */
int ipc_dispatch(const struct ipc_rule *rules, size_t n, uint32_t state, uint64_t *once, void *ctx, struct ipc_frame *f,
		 char *err) AS_MUST_USE AS_MUST_USE;

#endif
