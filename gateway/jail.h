/* The jail every assent worker enters before it reads a byte from an agent or a browser:
 * rlimits, an empty root and an unprivileged uid (when root), no_new_privs, and a seccomp
 * allowlist whose default kills the process. DESIGN.md "Processes" gives the order. */
#ifndef ASSENT_JAIL_H
#define ASSENT_JAIL_H

#include <stddef.h>
#include <sys/types.h>

#include "util.h"

#define JAIL_MAX_EXTRA 64 /* extra syscalls a caller may allow */

struct jail_opts {
	/* Root directory when running as root: an existing directory owned by root, writable by
	 * nobody else, and empty. NULL: a fresh directory made under /tmp and removed again before
	 * the chroot, so the root is a deleted directory in which nothing can ever be created. */
	const char *empty_dir;
	/* Ids to drop to when running as root. 0 means the "nobody" user and the "nogroup" (else
	 * "nobody") group, looked up before the chroot hides /etc. A dedicated user is better in
	 * production: other processes running as nobody can signal the worker. Not root: must be 0
	 * or the current ids, since an unprivileged process cannot change them. */
	uid_t uid;
	gid_t gid;
	/* RLIMIT_NOFILE (soft and hard). Must exceed the highest descriptor already open, with
	 * headroom for the connections the worker will accept. */
	unsigned max_fds;
	/* Syscalls allowed on top of the base list (__NR_* / SCMP_SYS numbers), for example
	 * accept4 and setsockopt for an HTTP worker. At most JAIL_MAX_EXTRA. Syscalls that would
	 * break the jail's promises (open*, exec*, fork/clone, socket, ptrace, kill, set*id,
	 * chroot, mount, prctl, seccomp, bpf, io_uring...) and the ones the base list allows only
	 * with argument checks (mmap, mprotect, fcntl, sendto, tgkill) are refused. */
	const int *extra_syscalls;
	size_t nextra;
};

/* Jail the calling process, in this order, failing closed at each step:
 *  1. check everything first: the options, the ids, the empty directory, and every open
 *     descriptor (none may be a regular file, directory, symlink or block device: a worker
 *     holds no files, and RLIMIT_FSIZE 0 would turn a write to one into SIGXFSZ);
 *  2. pre-initialise what glibc and jansson do lazily (time zone, jansson hash seed, stdio
 *     buffers, qsort's memory probe): this needs /etc and so comes before the chroot;
 *  3. rlimits: FSIZE 0, NPROC 0, CORE 0, NOFILE max_fds;
 *  4. when root: chroot to the empty directory, drop groups, gid and uid, then check that
 *     every uid and gid changed and that setuid(0) and setgid(0) fail; make the process
 *     non-dumpable, so that only root can ptrace it or read its /proc fd and root links;
 *  5. PR_SET_NO_NEW_PRIVS;
 *  6. load the seccomp filter (default SCMP_ACT_KILL_PROCESS, all threads).
 * Step 1 changes nothing, so a refusal there leaves the process as it was. An error from a
 * later step leaves it partly jailed: the caller must report err and exit, never go on.
 * Returns 0 or a negative enum as_err; err (AS_ERRLEN, may be NULL) names the failed step.
 * Sets TZ to ":/etc/localtime" when unset (glibc would otherwise stat that file on every
 * localtime() call). Not under AddressSanitizer: its runtime makes calls the filter kills. */
int jail_enter(const struct jail_opts *o, char *err);

/* Read /proc/PID/status: the seccomp mode (2 = filter), no_new_privs, and the uid, reported
 * as 0 when any of the real, effective, saved or filesystem uids is 0. Any output may be
 * NULL. For the signer and tests, outside the jail. AS_ENOTFOUND when the process or a field
 * is missing. */
int jail_status(pid_t pid, int *seccomp_mode, int *no_new_privs, uid_t *uid, char *err);

#endif
