/* The jailed workers, each started by the signer as assent-worker (gateway/worker/main.c)
 * with an empty environment and only its descriptors (gateway/proto/workers.h). */
#ifndef ASSENT_WORKER_H
#define ASSENT_WORKER_H

#include "gateway/proto/workers.h"

/* Each returns the process exit status. */
int worker_mcp_main(int ipcfd);
int worker_review_main(int ipcfd);
int worker_upstream_main(int ipcfd);
int worker_notify_main(int ipcfd); /* webhooks: the signer's deliveries */

#endif
