/* The worker jail's seccomp filter (jail.h, step 8): the syscalls an extra list may never
 * add, the base allowlist, the argument checks (W^X mmap, fcntl, send and receive flags,
 * futex, madvise, tgkill on itself, socket options), loaded for every thread with a default
 * that kills the process. */
#define _GNU_SOURCE
#include "gateway/worker/jail_seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* Syscalls an extra list may not add: each would undo a promise of the jail (no files, no
 * processes, no new sockets, no signals to others, no privilege changes, no kernel attack
 * surface beyond plain I/O), or would replace an argument-checked base rule with an
 * unconditional one (libseccomp ORs rules for one syscall together). */
static const int jail_never[] = {
    SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat), SCMP_SYS(open_by_handle_at),
    SCMP_SYS(name_to_handle_at), SCMP_SYS(open_tree), SCMP_SYS(fsopen), SCMP_SYS(fspick), SCMP_SYS(move_mount),
    SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(chdir), SCMP_SYS(fchdir),
    SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork),
    SCMP_SYS(clone), SCMP_SYS(clone3), SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
    SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(rt_sigqueueinfo), SCMP_SYS(rt_tgsigqueueinfo), SCMP_SYS(pidfd_open),
    SCMP_SYS(pidfd_getfd), SCMP_SYS(pidfd_send_signal), SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect),
    SCMP_SYS(bind), SCMP_SYS(listen), SCMP_SYS(setuid), SCMP_SYS(setgid), SCMP_SYS(setreuid), SCMP_SYS(setregid),
    SCMP_SYS(setresuid), SCMP_SYS(setresgid), SCMP_SYS(setgroups), SCMP_SYS(setfsuid), SCMP_SYS(setfsgid),
    SCMP_SYS(capset), SCMP_SYS(prctl), SCMP_SYS(seccomp), SCMP_SYS(bpf), SCMP_SYS(perf_event_open),
    SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register), SCMP_SYS(userfaultfd),
    SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(init_module), SCMP_SYS(finit_module),
    SCMP_SYS(delete_module), SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(reboot), SCMP_SYS(personality),
    SCMP_SYS(modify_ldt), SCMP_SYS(iopl), SCMP_SYS(ioperm), SCMP_SYS(setrlimit), SCMP_SYS(prlimit64), SCMP_SYS(mknod),
    SCMP_SYS(mknodat), SCMP_SYS(link), SCMP_SYS(linkat), SCMP_SYS(symlink), SCMP_SYS(symlinkat), SCMP_SYS(unlink),
    SCMP_SYS(unlinkat), SCMP_SYS(rename), SCMP_SYS(renameat), SCMP_SYS(renameat2), SCMP_SYS(mkdir), SCMP_SYS(mkdirat),
    SCMP_SYS(rmdir), SCMP_SYS(chmod), SCMP_SYS(fchmod), SCMP_SYS(fchmodat), SCMP_SYS(chown), SCMP_SYS(fchown),
    SCMP_SYS(lchown), SCMP_SYS(fchownat), SCMP_SYS(truncate), SCMP_SYS(ftruncate), SCMP_SYS(memfd_create),
    SCMP_SYS(memfd_secret),
    /* argument-checked in the base list, or (mprotect) left out on purpose */
    SCMP_SYS(mmap), SCMP_SYS(mmap2), SCMP_SYS(mprotect), SCMP_SYS(pkey_mprotect), SCMP_SYS(fcntl), SCMP_SYS(fcntl64),
    SCMP_SYS(sendto), SCMP_SYS(tgkill), SCMP_SYS(sendmsg), SCMP_SYS(recvmsg), SCMP_SYS(recvfrom), SCMP_SYS(futex),
    SCMP_SYS(madvise), SCMP_SYS(landlock_create_ruleset), SCMP_SYS(landlock_add_rule),
    SCMP_SYS(landlock_restrict_self)};

/* The base allowlist: what a worker that reads, writes and polls descriptors it was handed
 * needs, and no more. Argument-checked entries (mmap, fcntl, sendto, sendmsg, recvfrom,
 * recvmsg, futex, madvise, tgkill) are in jail_seccomp_rules. */
/* clang-format off */
static const int jail_allow[] = {
	SCMP_SYS(read), SCMP_SYS(write),   /* I/O on descriptors the worker was handed */
	SCMP_SYS(readv), SCMP_SYS(writev), /* the same, scattered (frame header + body) */
	SCMP_SYS(shutdown),        /* half-close a connection */
	SCMP_SYS(close),           /* let go of a connection */
	SCMP_SYS(poll), SCMP_SYS(ppoll), /* event loops: watching fds grants nothing new */
	/* epoll for loops with many connections (and to nest libmicrohttpd's epoll fd): an
	 * epoll instance is an anonymous fd that only watches fds the worker already has */
	SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
	/* clocks: the vDSO serves them, but falls back to the syscall on clock sources it
	 * cannot read (some VMs); sleeping is harmless */
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time),
	SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep),
	SCMP_SYS(exit), SCMP_SYS(exit_group), /* a thread's and the process's end */
	SCMP_SYS(rt_sigreturn),    /* returning from a handler installed before the jail */
	SCMP_SYS(rt_sigprocmask),  /* abort() and sigsetjmp/siglongjmp mask signals */
	SCMP_SYS(restart_syscall), /* the kernel resumes an interrupted sleep with it */
	SCMP_SYS(brk),             /* malloc grows the main heap */
	SCMP_SYS(munmap),          /* free() gives large blocks back */
	SCMP_SYS(mremap),          /* realloc() moves large blocks; keeps the protection, so never exec */
	SCMP_SYS(getpid), SCMP_SYS(gettid), /* logs, and raise() inside abort() (see tgkill) */
	SCMP_SYS(getrandom),       /* glibc's malloc and arc4random: entropy and nothing else */
};
/* clang-format on */

static int jail_in(const int *list, size_t n, int nr)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == nr)
			return 1;
	return 0;
}

/* The extra syscalls of the options: few enough, each a syscall of this architecture, and
 * none on jail_never. Step 1: changes nothing. */
int jail_check_extra(const struct jail_opts *o, char *err)
{
	if (o->nextra > JAIL_MAX_EXTRA)
		return as_fail(err, AS_ETOOBIG, "jail: %zu extra syscalls, at most %d", o->nextra, JAIL_MAX_EXTRA);
	if (o->nextra && !o->extra_syscalls)
		return as_fail(err, AS_EINVAL, "jail: nextra is %zu but extra_syscalls is NULL", o->nextra);
	for (size_t i = 0; i < o->nextra; i++) {
		int nr = o->extra_syscalls[i];
		char *name = nr >= 0 ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr) : NULL;
		if (!name)
			return as_fail(err, AS_EINVAL, "jail: extra syscall %d is not a syscall of this architecture",
				       nr);
		int bad = jail_in(jail_never, sizeof jail_never / sizeof jail_never[0], nr);
		int rc =
		    bad ? as_fail(err, AS_EINVAL, "jail: extra syscall %s is refused: it would break the jail", name)
			: 0;
		free(name);
		if (rc)
			return rc;
	}
	return 0;
}

static int jail_seccomp_add(scmp_filter_ctx ctx, int nr, unsigned n, const struct scmp_arg_cmp *cmp, char *err)
{
	int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, cmp);
	if (rc == 0 || (rc == -EDOM && nr < 0)) /* a pseudo-syscall this architecture lacks */
		return 0;
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	as_fail(err, AS_EIO, "jail: seccomp: rule for %s: %s", name ? name : "?", strerror(-rc));
	free(name);
	return AS_EIO;
}

/* Argument `arg` has no bit outside `ok` (in its low 32 bits: the kernel reads an int). */
#define JAIL_FLAGS_IN(arg, ok) SCMP_CMP((arg), SCMP_CMP_MASKED_EQ, 0xffffffffu & ~(scmp_datum_t)(ok), 0)

/* Socket options libmicrohttpd sets on connections it accepted (TCP_NODELAY and TCP_CORK for
 * its send buffering, SO_LINGER for a hard close), and the ones read back (the type and
 * pending error of a socket): nothing that changes buffers, binds to a device, attaches a
 * BPF program or marks packets. */
static const int jail_setsockopt_ok[][2] = {
    {IPPROTO_TCP, TCP_NODELAY}, {IPPROTO_TCP, TCP_CORK}, {SOL_SOCKET, SO_LINGER}};
static const int jail_getsockopt_ok[][2] = {{SOL_SOCKET, SO_TYPE}, {SOL_SOCKET, SO_DOMAIN}, {SOL_SOCKET, SO_ERROR}};

static int jail_sockopt_rules(scmp_filter_ctx ctx, int nr, const int (*ok)[2], size_t n, char *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct scmp_arg_cmp lv[2] = {SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)ok[i][0]),
						   SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)ok[i][1])};
		GUARD(jail_seccomp_add(ctx, nr, 2, lv, err));
	}
	return 0;
}

/* An extra syscall: unconditional, except the ones whose arguments the jail checks itself
 * (libseccomp ORs the rules of one syscall, so an unconditional one would undo them). */
static int jail_seccomp_extra(scmp_filter_ctx ctx, int nr, char *err)
{
	if (nr == SCMP_SYS(setsockopt))
		return jail_sockopt_rules(ctx, nr, jail_setsockopt_ok,
					  sizeof jail_setsockopt_ok / sizeof jail_setsockopt_ok[0], err);
	if (nr == SCMP_SYS(getsockopt))
		return jail_sockopt_rules(ctx, nr, jail_getsockopt_ok,
					  sizeof jail_getsockopt_ok / sizeof jail_getsockopt_ok[0], err);
	if (nr == SCMP_SYS(accept4)) {
		const struct scmp_arg_cmp fl = JAIL_FLAGS_IN(3, SOCK_CLOEXEC | SOCK_NONBLOCK);
		return jail_seccomp_add(ctx, nr, 1, &fl, err);
	}
	return jail_seccomp_add(ctx, nr, 0, NULL, err);
}

static int jail_seccomp_rules(scmp_filter_ctx ctx, const struct jail_opts *o, char *err)
{
	for (size_t i = 0; i < sizeof jail_allow / sizeof jail_allow[0]; i++)
		GUARD(jail_seccomp_add(ctx, jail_allow[i], 0, NULL, err));

	/* W^X: malloc may map memory, never executable memory, so code that takes over the
	 * worker cannot add code of its own (it is left with ROP over what is loaded). mprotect
	 * is not allowed at all: only malloc arenas of threads started before the jail would use
	 * it, workers have none, and it could make RELRO data writable again. */
	const struct scmp_arg_cmp noexec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(mmap), 1, &noexec, err));
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(mmap2), 1, &noexec, err));

	/* fcntl only to read and set the status flags (O_NONBLOCK) and close-on-exec: not
	 * F_DUPFD, locks, leases, F_SETOWN/F_SETSIG (signals to others) or pipe sizes. */
	static const int fcntl_cmds[] = {F_GETFL, F_SETFL, F_GETFD, F_SETFD};
	for (size_t i = 0; i < sizeof fcntl_cmds / sizeof fcntl_cmds[0]; i++) {
		const struct scmp_arg_cmp cmd = SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)fcntl_cmds[i]);
		GUARD(jail_seccomp_add(ctx, SCMP_SYS(fcntl), 1, &cmd, err));
		GUARD(jail_seccomp_add(ctx, SCMP_SYS(fcntl64), 1, &cmd, err));
	}

	/* send() is sendto with no address; with one, an unconnected datagram socket could
	 * reach anyone. Flags: only not blocking, no SIGPIPE and "more to come" (MSG_MORE, from
	 * libmicrohttpd): not MSG_OOB, MSG_ZEROCOPY, MSG_FASTOPEN (a connect in disguise)... */
	const scmp_datum_t send_ok = MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE;
	const struct scmp_arg_cmp sendto_args[2] = {SCMP_A4(SCMP_CMP_EQ, 0), JAIL_FLAGS_IN(3, send_ok)};
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(sendto), 2, sendto_args, err));
	/* sendmsg: frames (and SCM_RIGHTS) to the signer, responses from libmicrohttpd. Its
	 * address is inside the msghdr, out of a filter's reach; the worker holds only
	 * connected sockets (a socketpair, accepted TCP and unix streams), so none is needed. */
	const struct scmp_arg_cmp sendmsg_flags = JAIL_FLAGS_IN(2, send_ok);
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(sendmsg), 1, &sendmsg_flags, err));
	/* Receiving: not blocking, close-on-exec for passed fds; not MSG_ERRQUEUE, MSG_OOB. */
	const struct scmp_arg_cmp recvfrom_flags = JAIL_FLAGS_IN(3, MSG_DONTWAIT);
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(recvfrom), 1, &recvfrom_flags, err));
	const struct scmp_arg_cmp recvmsg_flags = JAIL_FLAGS_IN(2, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(recvmsg), 1, &recvmsg_flags, err));

	/* futex: glibc's locks wait and wake (stdio, malloc under contention); not the
	 * requeue and priority-inheritance operations, where the kernel's bugs have been. */
	static const int futex_ops[] = {FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET};
	for (size_t i = 0; i < sizeof futex_ops / sizeof futex_ops[0]; i++) {
		const struct scmp_arg_cmp op = SCMP_A1(
		    SCMP_CMP_MASKED_EQ, 0xffffffffu & ~(scmp_datum_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME),
		    (scmp_datum_t)futex_ops[i]);
		GUARD(jail_seccomp_add(ctx, SCMP_SYS(futex), 1, &op, err));
	}
	/* madvise: free() trims with MADV_DONTNEED (or MADV_FREE); nothing else. */
	static const int advice[] = {MADV_DONTNEED, MADV_FREE};
	for (size_t i = 0; i < sizeof advice / sizeof advice[0]; i++) {
		const struct scmp_arg_cmp adv = SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)advice[i]);
		GUARD(jail_seccomp_add(ctx, SCMP_SYS(madvise), 1, &adv, err));
	}

	/* abort() (assert, malloc's corruption checks) raises SIGABRT with tgkill on itself.
	 * Allowing exactly that keeps a crash a SIGABRT, so SIGSYS means the filter fired. */
	const struct scmp_arg_cmp self[2] = {SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()),
					     SCMP_A2(SCMP_CMP_EQ, SIGABRT)};
	GUARD(jail_seccomp_add(ctx, SCMP_SYS(tgkill), 2, self, err));

	for (size_t i = 0; i < o->nextra; i++)
		GUARD(jail_seccomp_extra(ctx, o->extra_syscalls[i], err));
	return 0;
}

int jail_seccomp(const struct jail_opts *o, char *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return as_fail(err, AS_ENOMEM, "jail: seccomp: seccomp_init failed");
	int rc;
	/* A foreign-architecture syscall (int 0x80 on x86_64, x32) dies the same way. TSYNC puts
	 * every thread under the filter, or the load fails. no_new_privs is our own step, checked
	 * there: libseccomp setting it quietly here would hide that step failing. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) != 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) != 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) != 0) {
		seccomp_release(ctx);
		return as_fail(err, AS_EIO, "jail: seccomp: attributes: %s", strerror(-rc));
	}
	int grc = jail_seccomp_rules(ctx, o, err);
	if (grc < 0) {
		seccomp_release(ctx);
		return grc;
	}
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0)
		return as_fail(err, AS_EIO, "jail: seccomp: load: %s", strerror(-rc));
	return 0;
}
