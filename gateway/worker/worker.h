/* The jailed workers of assentd, each started as `assentd --worker KIND` by the
 * signer with an empty environment and only its IPC socket (descriptor 3). */
#ifndef ASSENT_WORKER_H
#define ASSENT_WORKER_H

/* TEMPORARY (issue 13, while these files are being split): ignored must-use results
 * warn here instead of failing the build. Removed when their call sites are fixed. */
#pragma GCC diagnostic warning "-Wunused-result"

#define ASSENT_VERSION "0.1.0"
#define WORKER_IPC_FD 3
#define WORKER_HTTP_FD 4 /* the agent HTTP listener (mcp worker), the reviewer listener (review worker) */
#define WORKER_PROXY_FD 5 /* the review worker: the reverse proxy's unix socket, when configured */

/* Each returns the process exit status. */
int worker_mcp_main(int ipcfd);
int worker_review_main(int ipcfd);

#endif
