/* Resumable SSE answers on the agent listener (MCP 2025-11-25, SEP-1699), internal to the
 * mcp worker. A session POST whose answer streams (a 2025-11-25 client) gets a stream: a
 * priming event first (an id, a retry: of SSE_RETRY_MS and empty data), then every event
 * with an id "STREAM-SEQ" (STREAM numbers the stream in this worker, SEQ its events from
 * 0, the priming one), all kept in the stream's log until the answer is delivered. A client
 * that hangs up before the answer does not cancel its call at once: the stream is parked,
 * its events still logged, and a GET /mcp of the same session with Last-Event-ID re-attaches
 * it within SSE_GRACE_MS, replaying what came after that id and then the answer. A stream
 * parked longer than that is dropped and its call cancelled (as a client leaving always
 * was). An id names a stream only to the session that opened it. Pure: no I/O. */
#ifndef ASSENT_SSERESUME_H
#define ASSENT_SSERESUME_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "gateway/proto/limits.h"

#define SSE_RETRY_MS 2000  /* the retry: sent: how long a client waits before it resumes */
#define SSE_GRACE_MS 10000 /* a parked stream waits this long (5 retries) for its resume */
#define SSE_STREAMS_MAX 4096
#define SSE_LOG_MAX (64u << 20) /* one stream's events, as the answer's own bound */
#define SSE_ID_MAX 32		/* "STREAM-SEQ": two decimal numbers */

struct sse_stream {
	uint64_t no, conn;	     /* its number; the session (the signer's connection) it is of */
	char rid[PROTO_RID_MAX + 1]; /* the call it answers (its JSON-RPC id as JSON) */
	struct buf log;		     /* every event it carried, with their ids */
	size_t *off;		     /* where event SEQ starts in log */
	uint32_t nev, cap;
	int done;	   /* the answer is in the log: the stream ends after it */
	int held;	   /* a request streams it; else it is parked */
	uint64_t deadline; /* parked: when it is dropped (mono ms) */
	struct sse_stream *next;
};

struct sse_set {
	struct sse_stream *head;
	uint64_t next_no; /* the last stream's number: its owner starts it where a restart cannot repeat */
	size_t n;
};

/* A new held stream of (conn, rid), its priming event written to its log and to out.
 * NULL when there are SSE_STREAMS_MAX already or memory ran out. */
struct sse_stream *sse_open(struct sse_set *set, uint64_t conn, const char *rid, struct buf *out);
/* One message as the stream's next event (an id, event: message, data: json), to its log
 * and, when out is not NULL, to out; whole or not at all. 0, or -1 when a bound is hit. */
int sse_put(struct sse_stream *s, const char *json, size_t n, struct buf *out);
/* The parked stream of (conn, rid) (rid: ridn bytes), NULL when none. */
struct sse_stream *sse_parked(struct sse_set *set, uint64_t conn, const char *rid, size_t ridn);
/* Whether session conn has a stream (held or parked). */
int sse_has_conn(const struct sse_set *set, uint64_t conn);
/* The request streaming s is gone before the answer: parked until now + SSE_GRACE_MS. */
void sse_park(struct sse_stream *s, uint64_t now);
/* A resume by session conn after event (no, seq): the stream, held again, with the events
 * after seq copied to out. NULL with an HTTP status and why (for the client): 400 when no
 * stream of this session has that event, 409 when a request streams it already. */
struct sse_stream *sse_resume(struct sse_set *set, uint64_t conn, uint64_t no, uint32_t seq, struct buf *out,
			      unsigned *status, char *why, size_t whyn);
/* Frees s (its answer was delivered, or its session ended). */
void sse_close(struct sse_set *set, struct sse_stream *s);
/* Drops the streams parked past their deadline; gone(arg, conn, rid) for each whose answer
 * had not come (its call is to be cancelled). */
void sse_expire(struct sse_set *set, uint64_t now, void (*gone)(void *arg, uint64_t conn, const char *rid), void *arg);
/* Drops every stream of session conn (it ended); parked or not. */
void sse_drop_conn(struct sse_set *set, uint64_t conn);
/* Parses a Last-Event-ID ("STREAM-SEQ", decimal, no sign, no leading zeros): 0, or -1. */
int sse_id_parse(const char *s, uint64_t *no, uint32_t *seq);

#endif
