/* What the signer and its jailed workers agree on about the worker processes: the
 * binary the signer executes, its command line, the descriptors it starts with, and
 * the uid each kind of worker drops to when the signer runs as root. */
#ifndef ASSENT_WORKERS_H
#define ASSENT_WORKERS_H

#include <sys/types.h>

#include "include/assent/version.h"

/* The workers' own binary (gateway/worker/main.c), which assentd finds in its own
 * directory: `make install` puts both in PREFIX/bin. The signer starts each worker as
 * `assent-worker KIND [--uid N]` (KIND mcp, review, upstream or notify; N the uid and gid to drop to,
 * given only by a signer running as root), with an empty environment, 0-2 on
 * /dev/null and these descriptors: */
#define WORKER_EXE "assent-worker"
#define WORKER_IPC_FD 3
#define WORKER_HTTP_FD 4  /* the agent HTTP listener (mcp worker), the reviewer listener (review worker) */
#define WORKER_PROXY_FD 5 /* the review worker: the reverse proxy's unix socket, when configured */
/* An upstream worker (KIND upstream, one per upstream server): the server's stdin, which
 * it writes, and the server's stdout, which it reads; the signer made both pipes and
 * started the server on their other ends. */
#define WORKER_UP_IN_FD 4
#define WORKER_UP_OUT_FD 5
/* The recorder (gateway/recorder/: the call records' database client, not a parser of
 * agents' bytes alone), started as `assent-recorder [--uid N]` beside assent-worker, with its
 * IPC socket on 3 and, when records go to JSON lines, their descriptor on 4. */
#define RECORDER_EXE "assent-recorder"
#define RECORDER_JSONL_FD 4
/* The cluster client (gateway/recorder/cluster.c: the shared ledger in PostgreSQL, issue 32),
 * started as `assent-cluster [--uid N]` beside assent-worker with its IPC socket on 3, in
 * cluster mode only; its uid is kind 18's. */
#define CLUSTER_EXE "assent-cluster"
#define JAIL_CLUSTER_KIND 18u

/* The uid (and gid, the same number) of worker kind `index` (0 mcp, 1 review, 2 + i upstream i,
 * 16 the recorder, 17 the notify worker, 18 the cluster client), for a
 * signer running as root: base + index, base from `base_text` (ASSENT_WORKER_UID) or
 * JAIL_WORKER_UID_DEFAULT when NULL or empty. Refused (AS_EINVAL, err names why) when the
 * range base .. base + JAIL_WORKER_KINDS - 1 includes 0, 65534, 65535 or (uid_t)-1, or when
 * the uid or gid is an account or group of the user database whose name does not start
 * with "assent": a uid that another process may run as would let it signal the worker.
 * Each kind has its own uid, so one compromised worker cannot signal the other either. */
#define JAIL_WORKER_UID_DEFAULT 66000u
#define JAIL_WORKER_KINDS 19u
int jail_worker_uid(const char *base_text, unsigned index, uid_t *uid, char *err);

#endif
