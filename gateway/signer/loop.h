/* The loop on top: start (start.c), what registers with the core (front.c), the event loop and its
 * dispatch tables (loop.c). */
#ifndef ASSENT_SIGNER_LOOP_H
#define ASSENT_SIGNER_LOOP_H

#include "gateway/signer/types.h"

/* start.c */
int start_state(const struct signer_opts *o);
int start_limits(struct signer *s);
int start_keys(struct signer *s);
void start_banner(const struct signer *s);

/* front.c: what the capabilities register with the core before anything starts (records,
 * QA, the gate's finish, the mcp and review workers' kinds) */
void signer_register(struct signer *s);

/* loop.c */
/* One frame of worker k through its dispatch table (in worker k's state). */
int signer_dispatch(struct signer *s, int k, struct ipc_frame *f, char *err);
void worker_input(struct signer *s, int k); /* what worker k sent: read, checked, handled */

#endif
