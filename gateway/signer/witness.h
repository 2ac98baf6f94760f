/* Witnesses (witness.c): each new periodic checkpoint sent to the C2SP tlog-witness
 * witnesses of ASSENT_WITNESSES, their verified cosignatures stored beside it. */
#ifndef ASSENT_SIGNER_WITNESS_H
#define ASSENT_SIGNER_WITNESS_H

#include "gateway/proto/limits.h"
#include "gateway/signer/types.h"

#define WITNESS_ALARM_MAX PROTO_WITNESS_ALARM_MAX /* /health's witness_alarm: "NAME at N; ..." */

/* Reads ASSENT_WITNESSES (absent or empty: no witnesses) and STATE/witnesses.state. -1
 * with the reason logged when the file or a line of it is wrong: a start error. */
int witness_start(struct signer *s);
/* Once a turn: a new periodic checkpoint to send, an answer's time out, a retry due. */
void witness_tick(struct signer *s);
void witness_free(struct signer *s);
/* How many witnesses there are: the notify worker runs when there is one (notify.c). */
size_t witness_count(const struct signer *s);
/* The witnesses as F_CONFIG's "witnesses" (notify.c's config): 0, or -1 when out of room. */
int witness_config(const struct signer *s, struct cv_arena *a, struct cv *f);
/* "" when no witness raised the alarm, else who and at which size (/health). */
void witness_alarm_text(const struct signer *s, char *out, size_t cap);
int h_witness_done(void *ctx, struct ipc_frame *f, char *err);

#endif
