/* The call records (records.c), QA reports and events (qa.c, evclaim.c), usage insights
 * (insights.c), the records' program sink (recsink.c). */
#ifndef ASSENT_SIGNER_RECORDS_H
#define ASSENT_SIGNER_RECORDS_H

#include "gateway/signer/types.h"

/* records.c: the call records */
int records_start(struct signer *s);
void records_register(struct signer *s); /* the call notes (events.c) */
int records_worker_cfg(struct signer *s, struct cv_arena *a, struct cv *f) AS_MUST_USE;
int records_recorder_cfg(struct signer *s, struct cv_arena *a, struct cv *f, int *passfd) AS_MUST_USE;
/* The call of conn still waiting for its answer, when exactly one is: the call an event its
 * agent records now is inside (issue 29); NULL when none or several are. */
const char *rec_call_open(const struct signer *s, uint64_t conn, const char *except_rid);
int h_callrecs(void *ctx, struct ipc_frame *f, char *err);
int h_rec_stats(void *ctx, struct ipc_frame *f, char *err);
int records_metrics(const struct signer *s, struct buf *o);
/* Usage insights (insights.c): FEEDBACK_INSIGHTS_ENABLED read at start (0, or 2 on a bad value,
 * logged); each QA operation counted by tool, a report's metadata recorded (never its text);
 * their lines of /metrics. */
int insights_start(struct signer *s);
/* The records' program sink (recsink.c): ASSENT_RECORD_JSONL=|PROGRAM checked at start (0, or
 * -1 with why), and the program started for a recorder: the pipe's end to hand it, or -1. */
int recsink_check(const char *jsonl, char *err, size_t n);
int recsink_start(const char *prog);
void insights_use(struct signer *s, const char *channel, const char *op, const struct ipc_frame *f);
int insights_metrics(const struct signer *s, struct buf *o);

/* qa.c: QA reports and events */
void qa_register(struct signer *s); /* assent's own events go to the recorder (events.c) */

/* evclaim.c: 1 when kind is one of assent's own (reserved: nobody else records it); and
 * whether principal `by` may record kind under key (NULL: none): PS_OK, or a status and why.
 * operator: root or the daemon's own uid, whose keys are not checked (their kinds are). */
int event_kind_reserved(const char *kind);
int event_claim(struct signer *s, const char *by, const char *kind, const char *key, int operator, char * why,
		size_t n);
int h_qa(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_qa(void *ctx, struct ipc_frame *f, char *err);
int h_rec_answer(void *ctx, struct ipc_frame *f, char *err);
int records_answer(struct signer *s, const struct ipc_frame *f, char *err);
void records_tick(struct signer *s);
void qa_web(struct signer *s, const struct ipc_frame *f, uint64_t hreq, const char *reviewer, const char *admin);

#endif
