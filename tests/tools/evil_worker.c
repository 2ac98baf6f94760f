/* A compromised mcp worker, against the real signer.
 *   evil_worker signer STATE WRAPPER   runs the real signer (signer_main), whose workers
 *                                      are started as WRAPPER --worker KIND
 *   evil_worker SCENARIO --worker mcp  (through WRAPPER) plays a hostile mcp worker
 *   evil_worker SCENARIO --worker review  is the real review worker
 * Scenarios: hello-twice, request-before-hello, review-frame, other-conn, unknown-type,
 * over-max, truncated, bad-cbor. Each sends its hostile frame(s) and then idles: the
 * signer must log a security event, kill it and restart it, and decide nothing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "proto.h"
#include "signer.h"
#include "worker.h"

static void hello(struct cv_arena *a)
{
	struct cv *f = ipc_frame_new(a, F_HELLO, 1);
	ipc_put_text(a, f, "kind", "mcp", 3);
	ipc_send(WORKER_IPC_FD, f, -1, NULL);
}

static void raw(const void *p, size_t n)
{
	if (write(WORKER_IPC_FD, p, n) < 0)
		_exit(1);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "signer")) {
		struct signer_opts o = {.state = argv[2], .self_exe = argv[3], .single_user = 1};
		return signer_main(&o);
	}
	if (argc < 4 || strcmp(argv[2], "--worker") != 0)
		return 2;
	if (!strcmp(argv[3], "review"))
		return worker_review_main(WORKER_IPC_FD);
	const char *sc = argv[1];
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *f;
	if (!strcmp(sc, "hello-twice")) {
		hello(&a);
		hello(&a);
	} else if (!strcmp(sc, "request-before-hello")) {
		f = ipc_frame_new(&a, F_LIST, 2);
		ipc_put_uint(&a, f, "conn", 1);
		ipc_put_text(&a, f, "rid", "1", 1);
		ipc_send(WORKER_IPC_FD, f, -1, NULL);
	} else if (!strcmp(sc, "review-frame")) {
		/* A decision is a reviewer's frame: the mcp worker may never send it. */
		hello(&a);
		f = ipc_frame_new(&a, F_CTL, 4);
		ipc_put_uint(&a, f, "conn", 1);
		ipc_put_text(&a, f, "cmd", "decide", 6);
		ipc_put_text(&a, f, "sid", "req-x", 5);
		ipc_put_text(&a, f, "outcome", "approved", 8);
		ipc_send(WORKER_IPC_FD, f, -1, NULL);
	} else if (!strcmp(sc, "other-conn")) {
		/* Claims a connection (an identity) the signer never handed it. */
		hello(&a);
		f = ipc_frame_new(&a, F_LIST, 2);
		ipc_put_uint(&a, f, "conn", 424242);
		ipc_put_text(&a, f, "rid", "1", 1);
		ipc_send(WORKER_IPC_FD, f, -1, NULL);
	} else if (!strcmp(sc, "unknown-type")) {
		hello(&a);
		f = ipc_frame_new(&a, 999, 0);
		ipc_send(WORKER_IPC_FD, f, -1, NULL);
	} else if (!strcmp(sc, "over-max")) {
		hello(&a);
		raw("\xff\xff\xff\xff", 4);
	} else if (!strcmp(sc, "truncated")) {
		hello(&a);
		raw("\x00\x00\x00\x20\xa1\x61", 6); /* declares 32 bytes, sends 2, exits */
		return 0;
	} else if (!strcmp(sc, "bad-cbor")) {
		hello(&a);
		raw("\x00\x00\x00\x03\xa1\x61\x74", 7); /* a map with a key and no value */
	} else {
		return 2;
	}
	sleep(5); /* the signer is expected to kill us first */
	return 0;
}
