/* The jail every assent worker enters before it reads a byte from an agent or a browser:
 * rlimits, no capabilities (an empty bounding set too), an empty root and a uid of its own
 * (when root), non-dumpable, no_new_privs, a Landlock ruleset that allows nothing, and a
 * seccomp allowlist whose default kills the process. DESIGN.md "Processes" gives the order. */
#ifndef ASSENT_JAIL_H
#define ASSENT_JAIL_H

#include <stddef.h>
#include <sys/types.h>

#include "common/util.h"

#define JAIL_MAX_EXTRA 64 /* extra syscalls a caller may allow */

struct jail_opts {
	/* Root directory when running as root: an existing directory owned by root, writable by
	 * nobody else, and empty. NULL: a fresh directory made under /tmp and removed again before
	 * the chroot, so the root is a deleted directory in which nothing can ever be created. */
	const char *empty_dir;
	/* Ids to drop to when running as root. 0 means the ids given to jail_set_ids (assent-worker
	 * KIND --uid N); with neither, a root caller is refused: a shared uid such as
	 * nobody would let every other process of that uid signal the worker. Not root: must be 0
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
	 * with argument checks (mmap, mprotect, fcntl, sendto, sendmsg, recvfrom, recvmsg, futex,
	 * madvise, tgkill) are refused. setsockopt, getsockopt and accept4 are accepted but get
	 * the jail's own argument checks, never an unconditional rule (see jail_seccomp.c). */
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
 *  4. capabilities and ids. When root: chroot to the empty directory, empty the capability
 *     bounding set (every cap up to /proc/sys/kernel/cap_last_cap), drop groups, gid and uid,
 *     then check that every uid and gid changed and that setuid(0) and setgid(0) fail. Not
 *     root: if the bounding set is not already empty, empty it inside a user namespace of
 *     the worker's own (unshare(CLONE_NEWUSER), mapping no ids); refused if the kernel
 *     allows none, or the process has threads (it must then be started with an empty
 *     bounding set). Both: clear the ambient, inheritable, permitted and
 *     effective sets and check that all four and the bounding set are empty;
 *  5. non-dumpable, checked: no process of the same uid can ptrace it, read its memory or
 *     its /proc fd, root and cwd links (only CAP_SYS_PTRACE in the initial namespace can);
 *  6. PR_SET_NO_NEW_PRIVS;
 *  7. Landlock: a ruleset that handles every filesystem and network right the kernel knows
 *     (and, ABI 6+, scopes signals and abstract unix sockets) and allows nothing. Required
 *     when not root (refused in step 1 when the kernel has no Landlock: without a chroot it
 *     is what keeps the filesystem out of reach); when root the chroot already does, and
 *     Landlock is added when the kernel has it;
 *  8. load the seccomp filter (default SCMP_ACT_KILL_PROCESS, all threads).
 * Step 1 changes nothing, so a refusal there leaves the process as it was. An error from a
 * later step leaves it partly jailed: the caller must report err and exit, never go on.
 * Returns 0 or a negative enum as_err; err (AS_ERRLEN, may be NULL) names the failed step.
 * Sets TZ to ":/etc/localtime" when unset (glibc would otherwise stat that file on every
 * localtime() call). Not under AddressSanitizer: its runtime makes calls the filter kills. */
int jail_enter(const struct jail_opts *o, char *err);

/* The ids jail_enter drops to when root and jail_opts leave uid and gid 0. For assent-worker,
 * which gets them from the signer on its command line (jail_worker_uid in
 * gateway/proto/workers.h chose them). */
void jail_set_ids(uid_t uid, gid_t gid);

/* Step 7 alone, for tests: restrict the calling process (no_new_privs already set) with the
 * Landlock ruleset jail_enter uses; *abi (may be NULL) gets the kernel's ABI version.
 * AS_ENOTFOUND when the kernel has no Landlock. */
int jail_landlock_self(int *abi, char *err);

/* Read /proc/PID/status: the seccomp mode (2 = filter), no_new_privs, and the uid, reported
 * as 0 when any of the real, effective, saved or filesystem uids is 0. Any output may be
 * NULL. For the signer and tests, outside the jail. AS_ENOTFOUND when the process or a field
 * is missing. */
int jail_status(pid_t pid, int *seccomp_mode, int *no_new_privs, uid_t *uid, char *err);

#endif
