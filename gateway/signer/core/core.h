/* The signer's core: what every capability builds on and what calls nothing above it
 * (tests/scripts/layout_check.py checks that no file in gateway/signer/core/ calls a function
 * defined outside it). Its files: log.c (the log), lim.c (limits per principal), fields.c
 * (an entry's fields), commit.c (the ledger's group commit), queue.c (pending requests),
 * listen.c (listening sockets, the CLI reviewers' connections watched), reply.c (answers to
 * agents and reviewers), supervise.c (workers started, restarted and ended, with a kind table
 * the capabilities register into), metrics.c, peeruid.c. The capabilities (the other files
 * of gateway/signer/) call it; the loop (loop.c, start.c, front.c) calls both. */
#ifndef ASSENT_SIGNER_CORE_H
#define ASSENT_SIGNER_CORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cbor.h"
#include "common/util.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/workers.h"
#include "gateway/signer/core/lim.h"
#include "gateway/signer/core/queue.h"
#include "gateway/state/registry.h"
#include "ledger/ledger.h"

#define MAX_CONNS 1024
#define MAX_DONE 4096
#define DONE_PER_OWNER (MAX_DONE / 4)
#define PQ_MAX 100000 /* requests pending in all */
#define TIMEOUT_MAX_S MCP_TIMEOUT_MAX
#define MCP_AUD_MAX MCP_AUDIENCE_MAX

/* Upstream workers (the gate): one per upstream server, each with a uid of its own as root. */
#define UP_WORKERS (JAIL_WORKER_KINDS - 5) /* 2 .. 15: 16 recorder, 17 notify, 18 cluster */
/* The recorder (gateway/recorder/, the call records' database client) comes after the
 * upstreams (`k >= W_UP0 && k < W_REC` is an upstream's worker), then the notify worker
 * (webhooks, notify.c): its uid is the range's last. */
enum { W_MCP, W_REVIEW, W_UP0, W_REC = W_UP0 + UP_WORKERS, W_NOTIFY, NWORKERS };
#define IS_UP(k) ((k) >= W_UP0 && (k) < W_REC)
enum { S_NEW, S_READY }; /* a worker's state: before and after its hello */

struct worker {
	const char *kind;
	pid_t pid;
	int fd;
	struct ipc_conn ipc;
	uint32_t state;
	uint64_t once;
	unsigned restarts;	 /* since it last said hello: the backoff */
	unsigned restarts_total; /* since the daemon started */
	uint64_t start_at;	 /* when to (re)start it, unix ms; 0: running */
	int backlog;		 /* frames read but not yet handled: its queue of answers was too full */
	int rx_full;		 /* and its receive buffer is full too: read again once answers drain */
};

struct conn { /* a client connection the signer accepted and handed to a worker, or an MCP session over HTTP */
	uint64_t id;
	int worker; /* W_MCP (an agent) or W_REVIEW (a reviewer) */
	uid_t uid;  /* measured with SO_PEERCRED, never taken from a worker; (uid_t)-1 over HTTP */
	pid_t pid;
	int used;
	char owner[80]; /* whose requests these are: "uid:1000", "agent:NAME" or "anonymous:CONN" (each its own) */
	/* HTTP sessions only: they belong to the signer and outlive the worker. */
	int http;
	char agent[REG_NAME_MAX + 1];	/* the registered agent its API key named; "" when anonymous */
	char session[33];		/* its Mcp-Session-Id */
	char client[160], protocol[16]; /* what its initialize declared */
	uint64_t last_ms;
	int stateless; /* a 2026-07-28 request's own connection: no session id, ended with the request */
};

struct op;
struct signer;
typedef void (*op_done)(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err);
struct decision; /* below, with decide() */
struct op {
	struct buf enc;	   /* the canonical entry */
	op_done done;	   /* NULL: nobody waits for it */
	struct pq_item it; /* the request the entry is about, when someone waits (it.data: struct req *) */
	uint64_t conn;	   /* who hears of it: the agent's connection, or the reviewer's */
	int cancelled;	   /* a request whose caller cancelled or left before it was on disk */
	int web;	   /* conn is a web request of the review worker (hreq), not a control connection */
	struct decision *d;
	void *own;		 /* instead of d: the record its own done callback reads (a dispatch, an outcome, a
				  * policy decision: gate.c, policyglue.c); requests.c counts neither as a request waiting */
	struct op_held *held;	 /* op_add_held: the fields below and what they point into */
	json_t *answer;		 /* a quorum's approval: the reviewer's answer, sent once it is on disk */
	const struct cv *fields; /* kept decoded for the ledger (enc is then empty) */
	int with_prev;		 /* on disk only with the op before it in the batch (a call's dispatch
				  * with the decision that let it through): never alone */
};

/* The answer to a web request of the review worker: a typed status and JSON (or,
 * with text set, a text body of that content type). cookie: a new session's
 * secret for Set-Cookie; clear: end the browser's cookie. */
struct web_out {
	enum proto_status status; /* the review worker maps it to HTTP */
	const char *cookie, *ctype;
	int clear;
	unsigned retry_s;
	uint32_t wsid;
	const char *text;
	size_t textn;
};
/* A reviewer command's answer: how it went (typed: nobody matches its words) and its
 * JSON body, owned by whoever holds the struct; j NULL: nothing to send (yet). */
struct answer {
	enum proto_status st;
	json_t *j;
};

/* log.c */
extern int log_min;
uint64_t now_ms(void);
int log_rank(const char *level);
void slog(const char *level, const char *fmt, ...) AS_PRINTF(2, 3);
void wlog_line(const char *level, const char *worker, const char *msg); /* a worker's F_LOG */
void lim_log(struct signer *s, enum lim_kind k, const char *fmt, ...) AS_PRINTF(3, 4);

/* listen.c */
int listen_unix(const char *state, const char *name, char *err);
int control_group(const char *state, char *err);
int review_listen(struct signer *s, char *err);
int tcp_listen(struct http_cfg *c, const char *what, const char *port_var, char *err);
/* The signer's own copy of a CLI reviewer's connection c (fd: its socket), watched for its
 * end only (ctl_ended in loop.c); and slot i's watch ended. */
int ctl_watch(struct signer *s, const struct conn *c, int fd);
void ctl_unwatch(struct signer *s, size_t i);
/* listen.c: http://HOST:PORT of the reviewer listener, or ASSENT_REVIEW_URL; 0 when none */
int review_origin(const struct signer *s, char *out, size_t cap);

/* supervise.c: what one kind of worker needs beyond what every worker is given (its socket on
 * descriptor 3, /dev/null on 0-2, an empty environment, a fresh exec, a uid of its own as
 * root), registered by the capability that owns the kind before its first start. */
struct spawn {
	int l1, l2;	   /* handed to it as WORKER_HTTP_FD and WORKER_PROXY_FD; -1: none */
	int owned;	   /* l1 and l2 were made for it: closed in the signer once it runs */
	const char *exe;   /* a program beside assent-worker to run instead (the recorder) */
	struct cv *config; /* its configuration, made before the fork (in a): sent first */
	struct cv_arena a;
};
struct worker_kind {
	int (*prepare)(struct signer *s, int k, struct spawn *sp); /* before the fork; -1 (logged): not started */
	/* after the fork, unless prepare made one: its F_CONFIG frame, made in a */
	int (*config)(struct signer *s, int k, struct cv_arena *a, struct cv **f);
	void (*down)(struct signer *s, int k, const char *why); /* it is gone: what it takes with it */
	/* it was forked (pid): its DEBUG line; NULL: the core's "<kind> worker started" */
	void (*started)(const struct signer *s, int k, pid_t pid);
};
void worker_kind(struct signer *s, int k, const struct worker_kind *wk);
int spawn_worker(struct signer *s, int k);
void worker_down(struct signer *s, int k, const char *why);
void security_event(struct signer *s, int k, const char *what);
/* Frame f (a builder's, gateway/proto/frames.h; NULL: not built) queued for worker k; when
 * k's socket is stuck the worker is stopped and restarted. 0, or -1 when not sent. */
int worker_send(struct signer *s, int k, const struct cv *f);

/* commit.c */
struct op *op_add(struct signer *s, const struct cv *m, op_done done, char *err);
void commit_batch(struct signer *s);
struct op *append_simple(struct signer *s, const char *kind, const char *sid, const char *reason, op_done done);
/* Fields received as bytes, copied and decoded once into a record of their own, which
 * the entry built around them is kept in (held_arena) until its commit: op_add_held
 * takes the record (and frees it on failure); held_free frees one never added. */
struct op_held;
int held_decode(const uint8_t *p, size_t n, size_t max_items, struct op_held **out, const struct cv **v, char *err);
struct cv_arena *held_arena(struct op_held *h);
void held_free(struct op_held *h);
struct op *op_add_held(struct signer *s, struct op_held *h, const struct cv *m, op_done done, char *err);

/* fields.c: an entry's fields; every builder fails on a NULL slot, so one check covers an entry */
struct cv *kv(struct cv_arena *a, struct cv *m, size_t *i, const char *k);
int slot_text(struct cv_arena *a, struct cv *slot, const char *v, size_t n) AS_MUST_USE;
int slot_map(struct cv_arena *a, struct cv *slot, size_t npairs) AS_MUST_USE;
int kv_text(struct cv_arena *a, struct cv *m, size_t *i, const char *k, const char *v, size_t n) AS_MUST_USE;
int kv_uint(struct cv_arena *a, struct cv *m, size_t *i, const char *k, uint64_t v) AS_MUST_USE;
/* An entry's fields read back: a text as a C string (no NUL inside, shorter than max), an
 * unsigned of at most max; -1 when the field is not one. */
int text_copy(const struct cv *v, char *out, size_t max);
int uint_of(const struct cv *v, uint64_t max, uint64_t *out);

/* reply.c */
void send_result(struct signer *s, uint64_t conn, const char *rid, json_t *result, int iserror);
void send_result_raw(struct signer *s, uint64_t conn, const char *rid, json_t *result); /* a CallToolResult */
void send_rpc_error(struct signer *s, uint64_t conn, const char *rid, int code, const char *msg, json_t *data);
struct answer answer_ok(json_t *j);
struct answer ctl_error(enum proto_status st, const char *fmt, ...) AS_PRINTF(2, 3);
void ctl_reply(struct signer *s, uint64_t conn, struct answer ans);
void ctl_reply_text(struct signer *s, uint64_t conn, enum proto_status st, const char *js, size_t n);
void send_result_text(struct signer *s, uint64_t conn, const char *rid, const char *js, size_t n, int iserror);
/* The same, refused with st (PS_OK: answered): an HTTP caller's status (POST /events) says why. */
void send_refusal_text(struct signer *s, uint64_t conn, const char *rid, const char *js, size_t n,
		       enum proto_status st);
void web_send(struct signer *s, uint64_t hreq, const struct web_out *w, json_t *j);
void reply_to(struct signer *s, uint64_t to, int web, struct answer ans);
struct conn *conn_get(struct signer *s, uint64_t id, int worker);
/* The connection frame f names (its "conn"), of worker's: AS_ENOTFOUND when it ended lately (a
 * stale frame), AS_ECORRUPT when it was never handed out (an attack). */
int get_conn(struct signer *s, struct ipc_frame *f, int worker, struct conn **c, char *err);
int conn_ended(const struct signer *s, uint64_t id); /* lately: a frame about it is stale, not an attack */
void frame_text(const struct ipc_frame *f, const char *k, char *out, size_t max);
/* The uid measured for HTTP request hreq of session conn: kept, and taken once. */
void measured_put(struct signer *s, uint64_t hreq, uint64_t conn, uid_t uid);
int measured_take(struct signer *s, uint64_t hreq, uint64_t conn, uid_t *uid, char *err);

/* events.c: the call records' events and notes, through what the records registered (none:
 * nothing is recorded); rec_event and rec_event_in take attrs. */
struct rec_hooks {
	void (*note)(struct signer *s, uint64_t conn, const char *rid, const char *decision, unsigned rule,
		     uint64_t seq);
	void (*waiting)(struct signer *s, uint64_t conn, const char *rid);
	const char *(*call_id)(const struct signer *s, uint64_t conn, const char *rid);
};
void rec_hooks(struct signer *s, const struct rec_hooks *h);
typedef void (*rec_event_fn)(struct signer *s, const char *kind, const char *key, const char *call, json_t *attrs);
void rec_event_sink(struct signer *s, rec_event_fn fn); /* qa.c's: events go to the recorder */
void rec_event(struct signer *s, const char *kind, const char *key, json_t *attrs);
/* The same, for an event recorded inside call `call` (its call_id; NULL: none). */
void rec_event_in(struct signer *s, const char *kind, const char *key, const char *call, json_t *attrs);
/* What a call's record is to say: its decision, the rule that decided it, its last entry. */
void rec_note(struct signer *s, uint64_t conn, const char *rid, const char *decision, unsigned rule, uint64_t seq);
/* Call rid on conn waits for its answer (a blocking request or gated call): its note is
 * made, and events its connection records until the answer are inside it. */
void rec_note_waiting(struct signer *s, uint64_t conn, const char *rid);
/* The call id of call rid on conn (its note's), or NULL: the id its record will carry. */
const char *rec_call_id(const struct signer *s, uint64_t conn, const char *rid);

/* A request's phases, and the hooks capabilities register for them, nginx-style (run in the
 * order registered; the phase's owner calls phase_run and does not know who listens):
 *   queued      it waits for a person (requests.c): the webhooks' request event, the pages;
 *   decided     its decision, timeout or cancellation is on disk (ended.c): outcome, by and
 *               seq set (seq 0: not ledgered): the webhooks, the history ring, the pages;
 *   dispatched  a gated call the ledger holds leaves for its server (gate.c): sid and call
 *               set, it and r NULL (the request is gone): the call records' event;
 *   ended       that call's outcome is on disk, or could not be (gate_answer.c): sid, call
 *               and seq set: the call records' event;
 *   approving   a reviewer's approval is in this turn's batch, not yet on disk (decide.c): it,
 *               r and sid set: a gated call's dispatch entry joins that commit (gate.c);
 *   unrecorded  that decision could not be recorded, and the request waits again (decide.c):
 *               it, r and sid set. */
enum req_phase { PH_QUEUED, PH_DECIDED, PH_DISPATCHED, PH_ENDED, PH_APPROVING, PH_UNRECORDED, PH_N };
#define PHASE_HOOKS_MAX 4
struct req;
struct phase_call { /* a gated call, as its dispatched and ended phases tell it */
	uint64_t conn;
	const char *rid, *upstream, *tool;
	const char *digest;   /* dispatched: the call's digest */
	unsigned rule;	      /* dispatched: the rule that let it through */
	uint64_t duration_ms; /* ended: since it was dispatched */
	int error;	      /* ended: it ended without a result */
};
struct phase_ev {
	const struct pq_item *it;
	const struct req *r;
	const char *outcome, *by;
	const char *reviewer;	       /* decided: the person who decided, or NULL (by names who else) */
	uint64_t seq;		       /* the entry that the phase put on disk; 0: none */
	const char *sid;	       /* dispatched, ended: the call's session_id */
	const struct phase_call *call; /* dispatched, ended */
};
typedef void (*phase_fn)(struct signer *s, enum req_phase ph, const struct phase_ev *e);
void phase_hook(struct signer *s, enum req_phase ph, phase_fn fn);
/* How a request ended, typed: the agent's answer is made from it (ending_json, ended.c) and
 * the gate reads it, never the JSON it became. Strings are borrowed for the call. */
struct ending {
	const char *status;   /* approved, rejected, selected, denied, timeout, cancelled */
	int approved;	      /* the action may go ahead */
	int decided;	      /* a person or the policy decided (the answer carries "response") */
	const char *reviewer; /* who decided; NULL: the policy, or nobody */
	const char *response; /* the reviewer's words, or the rule's reason; NULL: none */
	const char *error;    /* why it ended without a decision (timeout, cancelled) */
	const char *token;    /* the approval token minted with the decision, or NULL */
};
/* A gated call's request (r->gate) finishes through the gate, which registers how (gate.c):
 * 1 when it took the request (and result with it). */
typedef int (*finish_fn)(struct signer *s, struct pq_item *it, const struct ending *e, json_t *result);
void finish_hook(struct signer *s, finish_fn fn);
void phase_run(struct signer *s, enum req_phase ph, const struct phase_ev *e);

#endif
