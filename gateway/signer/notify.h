/* The webhooks (notify.c): STATE/notify.json, signed deliveries through the notify worker. */
#ifndef ASSENT_SIGNER_NOTIFY_H
#define ASSENT_SIGNER_NOTIFY_H

#include "gateway/signer/types.h"

/* notify.c: webhooks (STATE/notify.json) and the notify worker that sends them */
enum { NOTIFY_REQUEST = 1, NOTIFY_DECISION = 2, NOTIFY_DEADLINE = 4 }; /* hooks.h's HOOK_EV_* */
int notify_start(struct signer *s);
void notify_tick(struct signer *s);
uint64_t notify_due(const struct signer *s); /* when the next delivery waiting for its time is due */
void notify_free(struct signer *s);
int h_notify_done(void *ctx, struct ipc_frame *f, char *err);
/* Cluster mode: a delivery another replica left (its lease expired, or this replica's previous
 * run), as PostgreSQL kept it: sent with its own id, once its mac verifies with the webhook's
 * secret (a row changed there is refused and logged). */
void notify_adopt(struct signer *s, const char *origin, uint64_t id, const char *hook, const char *event,
		  const char *body, size_t len, const char *mac);

#endif
