/* The review worker's HTTP side: the reviewer listener (and the reverse proxy's
 * socket) served with libmicrohttpd in the jailed review worker. Only the review
 * worker (worker_review.c) uses it. */
#ifndef ASSENT_WORKER_WEB_H
#define ASSENT_WORKER_WEB_H

#include <poll.h>

#include "gateway/proto/ipc.h"

/* Before the jail: read the F_CONFIG frame and start serving. */
int web_start(struct ipc_conn *ipc, int ipcfd, struct cv_arena *a, char *err);
/* How many descriptors the listeners may hold (for the jail's rlimit), and whether any is served. */
unsigned web_max_fds(void);
int web_on(void);
/* The descriptors to poll (libmicrohttpd's epoll sets); returns how many were added. */
size_t web_poll_fds(struct pollfd *pf);
int web_timeout_ms(int dflt);
/* F_WEB_REPLY, F_WEB_PUSH, F_STATS. */
void web_frame(const struct ipc_frame *f);
void web_run(void);

#endif
