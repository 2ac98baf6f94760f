/* The requests capability: requests from agents checked, limited, queued (requests.c), their
 * request entries (reqrecord.c), the policy applied to them (policyglue.c), agents' HTTP sessions
 * (session.c), tasks (tasks.c), the client's own answers to inputs (mrtr.c), their ends (ended.c),
 * and what a restart rebuilds (restore.c). */
#ifndef ASSENT_SIGNER_REQUESTS_H
#define ASSENT_SIGNER_REQUESTS_H

#include "gateway/signer/types.h"

/* ended.c: the ends of requests */
void request_refused(struct signer *s, uint64_t conn, struct req *r, const char *why);
void req_free(struct req *r);
void gate_req_free(struct gate_req *g);
struct done *done_at(struct signer *s, size_t i);
/* The history ring (ended.c): x pushed as the newest (over the oldest when full; the ring
 * takes x->pd), the i-th newest (0: the newest) or NULL past the last, and a message cut to
 * HISTORY_MESSAGE_MAX bytes on a character boundary with its line breaks as spaces. */
void history_push(struct signer *s, const struct recent *x);
void history_free(struct signer *s); /* the ring's terms, and the ring emptied (the process's end frees the rest) */
void history_summary(char out[HISTORY_MESSAGE_MAX + 1], const char *msg, size_t n);
const struct recent *history_nth(const struct signer *s, size_t i);
void history_register(struct signer *s); /* decisions into the ring (phase_hook) */
void request_log(struct signer *s, const struct pq_item *it, const struct req *r, const char *outcome,
		 const char *reviewer, uint64_t seq);
/* A request ended as e says: result (made by ending_json, with what the caller adds) goes
 * to whoever waits or collects it, or the gate takes the request. Takes result and it->data. */
void finish(struct signer *s, struct pq_item *it, const struct ending *e, json_t *result);
json_t *ending_json(const char *sid, const struct ending *e);
json_t *result_base(const char *sid, const char *status, int approved);
void task_end(struct signer *s, const char *sid, uint64_t conn, const char *owner, uint64_t created_ms, json_t *result);
/* A request out of the queue is cancelled: its entry, then the log, the webhooks and the
 * history once it is on disk. Takes out->data. */
void request_cancelled(struct signer *s, struct pq_item *out, const char *reason);
/* The daemon stops: every call still waiting on its connection (a blocking request, a
 * held gated call) is cancelled on the ledger and its agent told at once. How many. */
size_t cancel_waiting(struct signer *s);
void fail_conn_requests(struct signer *s, uint64_t conn, const char *reason);

/* requests.c */
void conn_end(struct signer *s, struct conn *c);
int client_ok(const char *s, size_t n, char *err);
int h_request(void *ctx, struct ipc_frame *f, char *err);
int request_over_limit(struct signer *s, const struct conn *c, uid_t uid, const char *rid, size_t ridn, int wait);
void request_terms(struct signer *s, const struct conn *c, struct req *r, uint64_t timeout, struct pq_item *it);
void request_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err);
int h_collect(void *ctx, struct ipc_frame *f, char *err);
int h_cancel(void *ctx, struct ipc_frame *f, char *err);
int h_conn_closed(void *ctx, struct ipc_frame *f, char *err);
int h_log(void *ctx, struct ipc_frame *f, char *err);
int h_hello(void *ctx, struct ipc_frame *f, char *err);

/* reqrecord.c */
int put_terms(struct cv_arena *a, struct cv *slot, const struct pol_decision *d) AS_MUST_USE;
/* The policy's citation and terms, back into the decision they came from (r->pd). NULL, or why not. */
const char *terms_read(const struct cv *pol, const struct cv *t, struct req *r);
/* replica: cluster mode's name of this replica (cluster_replica), recorded so that a restart
 * restores only its own requests; NULL on one machine. */
struct cv *request_entry(struct cv_arena *a, const struct cv *action, const struct conn *c, const struct req *r,
			 const struct pq_item *it, const char *uid_agent, const char *replica);
void request_view(struct req *r, const struct conn *c, const struct pq_item *it, const char *uid_agent);

/* policyglue.c */
size_t req_subjects(const struct req *r, struct tok_subject out[16]);
const char *req_token_aud(const struct req *r);
int put_token(struct cv_arena *a, struct cv *slot, const struct tok_ticket *t) AS_MUST_USE;
void evaluate(struct signer *s, const struct conn *c, const struct req *r, struct pol_decision *d);
int put_policy(struct cv_arena *a, struct cv *slot, const struct pol_decision *d, const char *digest) AS_MUST_USE;
/* 0 when the decision is in the batch; otherwise r was refused (and is gone). */
int policy_decide(struct signer *s, const struct conn *c, const struct pq_item *it, struct req *r);
int load_policy(struct signer *s, char *err);

/* tasks.c */
int h_task(void *ctx, struct ipc_frame *f, char *err);

/* mrtr.c */
int mrtr_applies(const struct req *r);
/* A requestState the client returns unchanged: payload's JSON (at most max bytes) and its
 * HMAC under a key of this process's memory; and back (NULL: why says which check failed). */
int mrtr_seal(struct signer *s, const json_t *payload, size_t max, char *out, size_t cap);
json_t *mrtr_unseal(struct signer *s, const char *st, size_t n, size_t max, const char **why);
void mrtr_offer(struct signer *s, const struct op *o);
int h_input(void *ctx, struct ipc_frame *f, char *err);
struct answer decide_self_attested(struct signer *s, struct pq_item *it, const char *outcome, const char *text,
				   uint64_t n); /* decide.c */

/* session.c */
int h_http_auth(void *ctx, struct ipc_frame *f, char *err);
int h_session_info(void *ctx, struct ipc_frame *f, char *err);
int h_session_end(void *ctx, struct ipc_frame *f, char *err);
void sweep_sessions(struct signer *s, uint64_t now);
void send_stats(struct signer *s);

/* restore.c: what survives a restart (README "Restarts") */
void restore_pending(struct signer *s);
/* A request entry (bytes) rebuilt and queued, with the approvals a quorum has so far: NULL, or
 * why it cannot be. remote: another replica's in cluster mode, queued for this replica's
 * reviewers whatever its caller does there (waits too), with its deadline CLUSTER_GRACE_MS
 * later, so that its own replica times it out first and this one only when that one is gone. */
/* Cluster mode: what replica `dead` left open, ended as its restart would (its lease expired and
 * this replica took it over). */
void restore_takeover(struct signer *s, const char *dead);
const char *restore_request(struct signer *s, const char *sid, const uint8_t *bytes, size_t len,
			    const char (*approvers)[REG_NAME_MAX + 1], size_t napprovers, int remote,
			    struct cv_arena *a);
/* The history of decisions as the ledger's tail has it: the last HISTORY_MAX decisions whose
 * request entries are on it too, read backwards from the newest entry. */
void restore_history(struct signer *s);

#endif
