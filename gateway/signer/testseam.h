/* A signer without workers, listeners or signals, over a scratch state directory (a
 * real ledger, keys, queue and policy), for unit tests (tests/unit/requests_test.c)
 * and the fuzz harness over the handlers (fuzz/signer_frames.c). Why a seam: the
 * handlers take a struct signer that only signer_main builds, after forking workers
 * and opening sockets; these functions build the same state without those, and feed
 * frames through the same receiver (ipc_read, ipc_next) and dispatch tables
 * (signer_dispatch) a worker's frames take. Nothing in the daemon calls them. */
#ifndef ASSENT_SIGNER_TESTSEAM_H
#define ASSENT_SIGNER_TESTSEAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct signer;

/* A signer over state (created when absent; FEEDBACK_* and ASSENT_* read from the
 * environment as the daemon reads them), with policy (a file, or NULL). The mcp
 * worker and the review worker are connected (their hellos already said) through
 * socketpairs; signer_test_peer returns the mcp worker's end. NULL on failure (err). */
struct signer *signer_test_new(const char *state, const char *policy, char *err);
void signer_test_free(struct signer *s);

/* The mcp worker's end: the signer's answers (F_RESULT, F_HTTP_REPLY...) arrive here,
 * non-blocking. signer_test_drain reads and drops what is there. */
int signer_test_peer(const struct signer *s);
void signer_test_drain(struct signer *s);

/* A connection from an agent with this uid on the agent socket, as the signer would
 * have accepted it (SO_PEERCRED measured): its conn id. 0 when the table is full. */
uint64_t signer_test_agent(struct signer *s, uid_t uid);

/* A reviewer with this uid on the control socket, as the signer would have accepted it
 * (SO_PEERCRED measured) and handed it to the review worker: its conn id (0: table full).
 * The reviewer's end stays open until signer_test_free, so it is not taken for gone. */
uint64_t signer_test_reviewer(struct signer *s, uid_t uid);

/* body (one frame body: canonical CBOR, as a worker sends it) from the mcp worker: it
 * goes through the signer's receiver and dispatch table, then the turn ends (the
 * batch is committed, deadlines expire). Returns what the receiver or handler said:
 * 0, AS_ENOTFOUND (stale: dropped), or the violation for which the daemon would kill
 * the worker (err says which); AS_EIO when the worker is down already. */
int signer_test_frame(struct signer *s, const uint8_t *body, size_t len, char *err);
/* The same from the review worker when review is not 0. */
int signer_test_frame_from(struct signer *s, int review, const uint8_t *body, size_t len, char *err);

/* The gate, from an upstreams file (assent.upstreams(5)): each upstream's worker connected
 * (its hello said) through a socketpair, no server started; its catalog comes in the
 * worker's F_UP_TOOLS frames. body from upstream i's worker, as signer_test_frame. */
int signer_test_upstreams(struct signer *s, const char *file, char *err);
int signer_test_frame_up(struct signer *s, size_t i, const uint8_t *body, size_t len, char *err);

/* The review worker's end, and upstream i's worker's end (-1: no such upstream): what the
 * signer sends them (F_CTL_REPLY, F_WEB_REPLY; F_DISPATCH...) arrives there, non-blocking. */
int signer_test_review_peer(const struct signer *s);
int signer_test_up_peer(const struct signer *s, size_t i);

/* The reviewer listener (review_listen: ASSENT_REVIEW_HOST and _PORT from the environment,
 * port 0 any free one) and the web sessions, as the daemon has them; then body from the
 * review worker with a descriptor of that listener attached, as the review worker forwards a
 * web request (F_WEB_*) with its connection: the signer measures which listener it came on
 * (the listening socket's own address is the listener's; it has no peer address). */
int signer_test_web(struct signer *s, char *err);
int signer_test_frame_web(struct signer *s, const uint8_t *body, size_t len, char *err);

/* The daemon's single-user mode (assentd --single-user), off unless a test turns it on. */
void signer_test_single_user(struct signer *s, int on);

/* Entries in the ledger, as this signer appended them. */
uint64_t signer_test_ledger_size(const struct signer *s);
/* The session id of the request that was queued last ("req-" and 32 hex digits), so
 * that a test can decide it; AS_ENOTFOUND when none is pending. */
int signer_test_newest_sid(const struct signer *s, char sid[37]); /* PQ_SID_LEN + 1 */
/* Every entry of this signer's ledger, in order, as ledger_scan gives them (LMDB opens an
 * environment once per process: a test reads the open ledger through this). */
int signer_test_ledger_scan(struct signer *s, int (*fn)(uint64_t seq, const uint8_t *cbor, size_t len, void *arg),
			    void *arg, char *err);
/* Requests pending. */
size_t signer_test_pending(const struct signer *s);

/* Every slot of the gate's table of calls in flight taken (by calls of no upstream that
 * never time out): the next dispatch finds none. */
void signer_test_gcalls_full(struct signer *s);

#endif
