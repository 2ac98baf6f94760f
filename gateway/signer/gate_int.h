/* The gate's files (gate.c: calls; gate_answer.c: their answers, cancellations and tasks; gate_server.c: starting the
 * servers; gate_catalog.c: what agents see; gate_relay.c: what passes through during a call; gatemrtr.c: multi-round
 * input), their shared helpers. Private to gateway/signer/. */
#ifndef ASSENT_SIGNER_GATE_INT_H
#define ASSENT_SIGNER_GATE_INT_H

#include "gateway/signer/state.h"

/* Upstream k's state (k a worker index, W_UP0 and up), NULL for another worker. */
static inline struct upw *upw_of(struct signer *s, int k)
{
	return k >= W_UP0 && (size_t)(k - W_UP0) < s->gate.nup ? &s->gate.up[k - W_UP0] : NULL;
}

/* gate_server.c: stops u's server (SIGTERM, then SIGKILL when it lingers). */
void gate_kill_server(struct upw *u);
/* gate_catalog.c: the JSON of canonical CBOR b of type t, at most max bytes; NULL when it
 * is not (the signer reads what an upstream said only so). */
json_t *gate_cbor_json(const struct cv *b, enum cv_type t, size_t max);
/* gate_catalog.c: what the gate holds (catalogs, calls, the upstreams file), freed; for
 * the test seam (the daemon's memory goes with its process). */
void gate_free(struct signer *s);

/* gate_answer.c: the answers to an agent. A call's raw CallToolResult res (taken) with
 * assent's facts (taken) in its _meta; the same kept for a task's owner; the gate's facts of
 * a call; a call that ends without reaching the server (an isError result, or a JSON-RPC
 * error for another method than tools/call); one of g's, told or kept for its task. */
void answer_call(struct signer *s, uint64_t conn, const char *rid, json_t *res, json_t *facts);
void answer_task(const struct gcall *c, json_t *res, json_t *facts, struct signer *s);
json_t *facts_of(const char *sid, const char *status, uint64_t seq, const char *upstream, const char *tool);
void answer_refused(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *text,
		    json_t *facts);
void refuse_g(struct signer *s, const struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
	      const char *text, json_t *facts);
/* gate_answer.c: a dispatched call's end, its outcome ledgered when the call was and its agent
 * answered with res (taken; NULL: an isError result or JSON-RPC error of text); the call
 * upstream k's worker numbers cid, NULL when none runs; a call given up on, whose late
 * answer is dropped quietly. */
void gate_call_end(struct signer *s, struct gcall *c, const char *status, const uint8_t *bytes, size_t n, json_t *res,
		   const char *text);
struct gcall *gate_gcall_find(struct signer *s, int k, uint64_t cid);
void gate_stale_add(struct upw *u, uint64_t cid);

#endif
