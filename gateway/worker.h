/* The jailed workers of assentd, each started as `assentd --worker KIND` by the
 * signer with an empty environment and only its IPC socket (descriptor 3). */
#ifndef ASSENT_WORKER_H
#define ASSENT_WORKER_H

#define ASSENT_VERSION "0.1.0"
#define WORKER_IPC_FD 3
#define WORKER_HTTP_FD 4 /* the mcp worker: the agent HTTP listener, when there is one */

/* Each returns the process exit status. */
int worker_mcp_main(int ipcfd);
int worker_review_main(int ipcfd);

#endif
