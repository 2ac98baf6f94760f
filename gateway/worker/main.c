/* assent-worker: the jailed workers' own binary, started only by the signer as
 * `assent-worker KIND [--uid N]` (gateway/proto/workers.h). Linked from common/,
 * gateway/proto/ and gateway/worker/ alone, so no key, ledger, registry or policy
 * code and no OpenSSL or LMDB is mapped into a process that parses agents' bytes
 * (tests/integration/binaries.sh checks). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gateway/worker/jail.h"
#include "common/util.h"
#include "include/assent/version.h"
#include "gateway/worker/worker.h"

int main(int argc, char **argv)
{
	uint64_t wu = 0;
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		puts("assent-worker " ASSENT_VERSION);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[2], "--uid")) {
		if (parse_u64(argv[3], &wu) != 0 || wu == 0 || wu >= (uid_t)-1)
			return 2;
		jail_set_ids((uid_t)wu, (gid_t)wu);
	} else if (argc != 2) {
		fputs("usage: assent-worker mcp|review|upstream|notify [--uid N]\n"
		      "       assent-worker --version\n"
		      "  started by assentd, never by hand: see assentd(8)\n",
		      stderr);
		return 2;
	}
	if (!strcmp(argv[1], "mcp"))
		return worker_mcp_main(WORKER_IPC_FD);
	if (!strcmp(argv[1], "review"))
		return worker_review_main(WORKER_IPC_FD);
	if (!strcmp(argv[1], "upstream"))
		return worker_upstream_main(WORKER_IPC_FD);
	if (!strcmp(argv[1], "notify"))
		return worker_notify_main(WORKER_IPC_FD);
	fprintf(stderr, "assent-worker: unknown kind '%.32s'\n", argv[1]);
	return 2;
}
