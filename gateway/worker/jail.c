/* The worker jail: checks first, then library pre-initialisation, rlimits, chroot, capability
 * and uid drop (or a user namespace of its own to empty the bounding set when not root),
 * non-dumpable, no_new_privs, Landlock, and a libseccomp allowlist whose default kills the
 * process. jail.h gives the order and the contract; DESIGN.md says why workers are jailed. */
#define _GNU_SOURCE
#include "gateway/worker/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* What step 1 found, for the steps that change the process. */
struct jail_plan {
	int root; /* running as root: chroot and drop ids */
	uid_t uid;
	gid_t gid;
	int dirfd; /* the empty directory (root only), else -1 */
	dev_t dir_dev;
	ino_t dir_ino;
	int last_cap; /* the kernel's highest capability number */
	int userns;   /* not root, bounding set not empty: empty it in a user namespace */
	int ll_abi;   /* Landlock ABI version, 0: none */
	int ll_errno; /* why there is none */
};

/* Set by assentd's worker mode from its command line (jail_set_ids). */
static uid_t jail_given_uid;
static gid_t jail_given_gid;

void jail_set_ids(uid_t uid, gid_t gid)
{
	jail_given_uid = uid;
	jail_given_gid = gid;
}

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

static int jail_check_opts(const struct jail_opts *o, char *err)
{
	if (!o)
		return as_fail(err, AS_EINVAL, "jail: no options");
	if (o->max_fds == 0)
		return as_fail(err, AS_EINVAL, "jail: max_fds (RLIMIT_NOFILE) must be set");
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

/* Which ids to drop to. Runs before the chroot, while /etc (and NSS) can still be read. */
static int jail_plan_ids(const struct jail_opts *o, struct jail_plan *p, char *err)
{
	uid_t r, e, s;
	if (getresuid(&r, &e, &s) != 0)
		return as_fail(err, AS_EIO, "jail: ids: getresuid: %s", strerror(errno));
	p->root = r == 0 || e == 0 || s == 0;
	if (!p->root) {
		/* An unprivileged process cannot change ids: accept only what it already is. */
		uid_t want = o->uid ? o->uid : jail_given_uid;
		gid_t wantg = o->gid ? o->gid : jail_given_gid;
		if (want && (want != r || want != e || want != s))
			return as_fail(err, AS_EINVAL, "jail: ids: not root (uid %u): cannot switch to uid %u",
				       (unsigned)r, (unsigned)want);
		if (wantg && wantg != getgid())
			return as_fail(err, AS_EINVAL, "jail: ids: not root (gid %u): cannot switch to gid %u",
				       (unsigned)getgid(), (unsigned)wantg);
		p->uid = r;
		p->gid = getgid();
		return 0;
	}
	if (e != 0) /* setgroups needs an effective uid of 0 */
		return as_fail(err, AS_EINVAL, "jail: ids: uids %u/%u/%u mix root and non-root", (unsigned)r,
			       (unsigned)e, (unsigned)s);
	p->uid = o->uid ? o->uid : jail_given_uid;
	p->gid = o->gid ? o->gid : jail_given_gid;
	/* No silent fallback to nobody: a uid shared with other services lets them signal the
	 * worker (and a worker escaping seccomp signal them). */
	if (!p->uid || !p->gid)
		return as_fail(err, AS_EINVAL,
			       "jail: ids: running as root with no uid and gid of the worker's own "
			       "to drop to (jail_opts or jail_set_ids)");
	if (p->uid == 0 || p->gid == 0)
		return as_fail(err, AS_EINVAL, "jail: ids: would drop to uid %u gid %u, which is root",
			       (unsigned)p->uid, (unsigned)p->gid);
	return 0;
}

/* ---- capabilities ---- */

/* The kernel's highest capability: /proc/sys/kernel/cap_last_cap, checked against what
 * PR_CAPBSET_READ answers (valid up to it, EINVAL past it), since a bounding set emptied only
 * up to a stale number would keep the rest. Without /proc, the probe alone decides. */
static int jail_last_cap(int *last, char *err)
{
	int n = -1;
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char b[16];
		ssize_t r = read(fd, b, sizeof b - 1);
		close(fd);
		char *end;
		if (r > 0) {
			b[r] = 0;
			long v = strtol(b, &end, 10);
			if (end != b && (*end == '\n' || !*end) && v >= 0 && v < 64)
				n = (int)v;
		}
		if (n < 0)
			return as_fail(err, AS_EIO, "jail: capabilities: cannot read /proc/sys/kernel/cap_last_cap");
	} else {
		while (n < 63 && prctl(PR_CAPBSET_READ, n + 1, 0, 0, 0) >= 0)
			n++;
	}
	if (n < 0 || prctl(PR_CAPBSET_READ, n, 0, 0, 0) < 0 ||
	    (n < 63 && (prctl(PR_CAPBSET_READ, n + 1, 0, 0, 0) >= 0 || errno != EINVAL)))
		return as_fail(err, AS_EIO, "jail: capabilities: cap_last_cap %d disagrees with PR_CAPBSET_READ", n);
	*last = n;
	return 0;
}

static int jail_bset_empty(int last)
{
	for (int c = 0; c <= last; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 0)
			return 0;
	return 1;
}

/* Needs CAP_SETPCAP: as root before the uid drop, or inside the worker's user namespace. */
static int jail_drop_bset(int last, char *err)
{
	for (int c = 0; c <= last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0)
			return as_fail(err, AS_EIO, "jail: capabilities: PR_CAPBSET_DROP(%d): %s", c, strerror(errno));
	return 0;
}

/* Clear the ambient, inheritable, permitted and effective sets, then check that they and the
 * bounding set are all empty: trust what the kernel reports, not the calls' return codes. */
static int jail_clear_caps(int last, char *err)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	memset(d, 0, sizeof d);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return as_fail(err, AS_EIO, "jail: capabilities: clear ambient: %s", strerror(errno));
	if (syscall(SYS_capset, &h, d) != 0)
		return as_fail(err, AS_EIO, "jail: capabilities: capset: %s", strerror(errno));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = 0;
	if (syscall(SYS_capget, &h, d) != 0)
		return as_fail(err, AS_EIO, "jail: capabilities: capget: %s", strerror(errno));
	for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return as_fail(err, AS_EIO, "jail: capabilities: some remain after capset");
	for (int c = 0; c <= last; c++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) > 0)
			return as_fail(err, AS_EIO, "jail: capabilities: ambient capability %d remains", c);
	if (!jail_bset_empty(last))
		return as_fail(err, AS_EIO, "jail: capabilities: the bounding set is not empty");
	return 0;
}

/* Not root, bounding set not empty: an unprivileged process cannot drop from it, but in a
 * user namespace of its own it holds CAP_SETPCAP there and can. No uid or gid is mapped into
 * it (writing a map needs /proc/self, which a process made non-dumpable by an earlier uid
 * change cannot write), so inside it getuid() reads 65534; the kernel's ids, which every
 * check outside uses, stay the daemon's. Every capability the namespace gave is cleared
 * again by jail_clear_caps, and it grants nothing outside: ptrace and /proc access to the
 * worker are judged in the namespace it was exec'd in. */
static int jail_userns(const struct jail_plan *p, char *err)
{
	if (unshare(CLONE_NEWUSER) != 0)
		return as_fail(err, AS_EIO,
			       "jail: capabilities: the bounding set is not empty and this process may not "
			       "drop from it, nor make a user namespace to (%s%s): start assentd with an empty "
			       "bounding set (systemd: CapabilityBoundingSet=; setpriv --bounding-set=-all)",
			       strerror(errno), errno == EINVAL ? ", it has threads" : "");
	return jail_drop_bset(p->last_cap, err);
}

/* ---- Landlock ----
 * Debian 12's <linux/landlock.h> stops at ABI 2, so what is used is defined here, from the
 * kernel's uapi (include/uapi/linux/landlock.h). */
#define JAIL_LL_VERSION (1u << 0)	   /* LANDLOCK_CREATE_RULESET_VERSION */
#define JAIL_LL_FS_ABI1 ((1ull << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define JAIL_LL_FS_REFER (1ull << 13)	   /* ABI 2 */
#define JAIL_LL_FS_TRUNCATE (1ull << 14)   /* ABI 3 */
#define JAIL_LL_FS_IOCTL_DEV (1ull << 15)  /* ABI 5 */
#define JAIL_LL_NET_ALL (3ull)		   /* ABI 4: BIND_TCP, CONNECT_TCP */
#define JAIL_LL_SCOPE_ALL (3ull)	   /* ABI 6: ABSTRACT_UNIX_SOCKET, SIGNAL */

struct jail_ll_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;	     /* ABI 6 */
};

static int jail_ll_probe(struct jail_plan *p)
{
#ifdef SYS_landlock_create_ruleset
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, JAIL_LL_VERSION);
	p->ll_abi = v > 0 ? (int)v : 0;
	p->ll_errno = v > 0 ? 0 : errno;
#else
	p->ll_abi = 0;
	p->ll_errno = ENOSYS;
#endif
	return p->ll_abi;
}

/* A ruleset that handles every right this kernel knows and has no rule: no path can be
 * opened, created, removed or executed, no TCP port bound or connected, and (ABI 6+) no
 * signal or abstract unix socket reaches outside the worker's domain. */
static int jail_landlock(const struct jail_plan *p, char *err)
{
	if (!p->ll_abi)
		return 0; /* root: the chroot holds; not root was refused in step 1 */
#ifdef SYS_landlock_create_ruleset
	struct jail_ll_attr a = {.handled_access_fs = JAIL_LL_FS_ABI1};
	size_t size = sizeof a.handled_access_fs;
	if (p->ll_abi >= 2)
		a.handled_access_fs |= JAIL_LL_FS_REFER;
	if (p->ll_abi >= 3)
		a.handled_access_fs |= JAIL_LL_FS_TRUNCATE;
	if (p->ll_abi >= 4) {
		a.handled_access_net = JAIL_LL_NET_ALL;
		size = offsetof(struct jail_ll_attr, scoped);
	}
	if (p->ll_abi >= 5)
		a.handled_access_fs |= JAIL_LL_FS_IOCTL_DEV;
	if (p->ll_abi >= 6) {
		a.scoped = JAIL_LL_SCOPE_ALL;
		size = sizeof a;
	}
	long fd = syscall(SYS_landlock_create_ruleset, &a, size, 0);
	if (fd < 0)
		return as_fail(err, AS_EIO, "jail: landlock: create_ruleset (ABI %d): %s", p->ll_abi, strerror(errno));
	long rc = syscall(SYS_landlock_restrict_self, (int)fd, 0);
	int e = errno;
	close((int)fd);
	if (rc != 0)
		return as_fail(err, AS_EIO, "jail: landlock: restrict_self: %s", strerror(e));
	return 0;
#else
	return as_fail(err, AS_EIO, "jail: landlock: built without the landlock syscalls");
#endif
}

int jail_landlock_self(int *abi, char *err)
{
	struct jail_plan p = {.dirfd = -1};
	if (!jail_ll_probe(&p))
		return as_fail(err, AS_ENOTFOUND, "jail: landlock: none (%s)", strerror(p.ll_errno));
	if (abi)
		*abi = p.ll_abi;
	return jail_landlock(&p, err);
}

/* Step 1's share of capabilities and Landlock: what will be needed, changing nothing. */
static int jail_plan_caps(struct jail_plan *p, char *err)
{
	GUARD(jail_last_cap(&p->last_cap, err));
	p->userns = !p->root && !jail_bset_empty(p->last_cap);
	if (!jail_ll_probe(p) && !p->root)
		return as_fail(err, AS_EINVAL,
			       "jail: landlock: the kernel offers none (%s); without root (and so without a "
			       "chroot) a worker needs it to be kept from the filesystem: enable Landlock "
			       "(Linux 5.13+, lsm=landlock,...) or start assentd as root",
			       strerror(p->ll_errno));
	return 0;
}

/* Non-dumpable: a process of the same uid can no longer ptrace the worker, read or write its
 * memory (/proc/PID/mem) or follow its /proc fd, root and cwd links; only a holder of
 * CAP_SYS_PTRACE in the initial user namespace can. A uid change sets it too (unless
 * fs.suid_dumpable is 1), but the non-root worker changes no uid: set it always. */
static int jail_nodump(char *err)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		return as_fail(err, AS_EIO, "jail: PR_SET_DUMPABLE: %s", strerror(errno));
	return 0;
}

static int jail_dir_empty(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	const struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n == 0;
}

/* Open the directory that becomes the root, and hold it by descriptor so that what was
 * checked is what we chroot into. */
static int jail_plan_dir(const struct jail_opts *o, struct jail_plan *p, char *err)
{
	struct stat st;
	if (o->empty_dir) {
		p->dirfd = open(o->empty_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (p->dirfd < 0)
			return as_fail(err, AS_EIO, "jail: empty dir %.100s: %s", o->empty_dir, strerror(errno));
		if (fstat(p->dirfd, &st) != 0)
			return as_fail(err, AS_EIO, "jail: empty dir %.100s: fstat: %s", o->empty_dir, strerror(errno));
		/* Writable by the worker, it could become a place to leave things. */
		if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
			return as_fail(err, AS_EINVAL,
				       "jail: empty dir %.100s must be owned by root and not group/other writable "
				       "(owner %u, mode %04o)",
				       o->empty_dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		int empty = jail_dir_empty(p->dirfd);
		if (empty < 0)
			return as_fail(err, AS_EIO, "jail: empty dir %.100s: cannot list: %s", o->empty_dir,
				       strerror(errno));
		if (!empty)
			return as_fail(err, AS_EINVAL, "jail: empty dir %.100s is not empty", o->empty_dir);
	} else {
		/* A directory removed right after we open it: nothing can ever be created in it,
		 * and nothing is left behind on disk. mkdtemp makes it 0700 with a random name, and
		 * /tmp's sticky bit stops others from swapping it before the open. */
		char path[] = "/tmp/assent-jail-XXXXXX";
		if (!mkdtemp(path))
			return as_fail(err, AS_EIO, "jail: empty dir: mkdtemp under /tmp: %s (set empty_dir)",
				       strerror(errno));
		p->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int saved = errno;
		if (rmdir(path) != 0 && p->dirfd >= 0)
			return as_fail(err, AS_EIO, "jail: empty dir: rmdir %s: %s", path, strerror(errno));
		if (p->dirfd < 0)
			return as_fail(err, AS_EIO, "jail: empty dir: open %s: %s", path, strerror(saved));
		if (fstat(p->dirfd, &st) != 0)
			return as_fail(err, AS_EIO, "jail: empty dir: fstat: %s", strerror(errno));
		if (st.st_uid != 0 || st.st_nlink != 0)
			return as_fail(err, AS_EINVAL, "jail: empty dir %s: owner %u links %lu, expected 0 and 0", path,
				       (unsigned)st.st_uid, (unsigned long)st.st_nlink);
	}
	p->dir_dev = st.st_dev;
	p->dir_ino = st.st_ino;
	return 0;
}

static const char *jail_ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "regular file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symlink";
	case S_IFBLK:
		return "block device";
	}
	return NULL; /* socket, pipe, character device, anonymous inode (epoll, eventfd...) */
}

static int jail_check_fd(int fd, unsigned max_fds, char *err)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return errno == EBADF ? 0 : as_fail(err, AS_EIO, "jail: fds: fstat(%d): %s", fd, strerror(errno));
	if ((unsigned)fd >= max_fds)
		return as_fail(err, AS_EINVAL, "jail: fds: fd %d is open but max_fds (RLIMIT_NOFILE) is %u", fd,
			       max_fds);
	/* A worker holds sockets and pipes only: a file or directory is a way out of the empty
	 * root (a key file, a directory to openat from), and RLIMIT_FSIZE 0 makes a write to a
	 * regular file (a stderr redirected to a log file) raise SIGXFSZ. */
	const char *what = jail_ftype(st.st_mode);
	if (what)
		return as_fail(err, AS_EINVAL,
			       "jail: fds: fd %d is a %s; a jailed worker may hold only sockets, "
			       "pipes and devices",
			       fd, what);
	return 0;
}

/* Every open descriptor: below max_fds, and no file. /proc/self/fd names them; without /proc,
 * try every number below the current limit. */
static int jail_check_fds(unsigned max_fds, int skip, char *err)
{
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		const struct dirent *de;
		int rc = 0;
		while (rc == 0 && (de = readdir(d))) {
			char *end;
			errno = 0;
			long fd = strtol(de->d_name, &end, 10);
			if (de->d_name[0] == '.' || *end || errno || fd < 0 || fd > INT32_MAX)
				continue;
			if (fd != dirfd(d) && fd != skip)
				rc = jail_check_fd((int)fd, max_fds, err);
		}
		closedir(d);
		return rc;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return as_fail(err, AS_EIO, "jail: fds: getrlimit: %s", strerror(errno));
	rlim_t top = rl.rlim_cur < (1u << 20) ? rl.rlim_cur : (1u << 20);
	for (rlim_t fd = 0; fd < top; fd++)
		if ((int)fd != skip && fcntl((int)fd, F_GETFD) >= 0)
			GUARD(jail_check_fd((int)fd, max_fds, err));
	return 0;
}

static int jail_qsort_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* What libraries would otherwise do lazily, with files or syscalls the jail forbids. */
static int jail_preinit(char *err)
{
	/* With TZ unset, glibc re-stats /etc/localtime on every localtime() and mktime(); with TZ
	 * set and unchanged it reads the zone once, here, and never looks again. */
	if (!getenv("TZ") && setenv("TZ", ":/etc/localtime", 1) != 0)
		return as_fail(err, AS_EIO, "jail: preinit: setenv TZ: %s", strerror(errno));
	tzset();

	/* jansson seeds its hash function from /dev/urandom on the first object it builds; give
	 * it a seed now (a predictable one would let an agent flood one hash bucket). A seed
	 * set earlier in the process wins, which is as good. */
	uint32_t seed = 0;
	while (seed == 0) {
		ssize_t n = getrandom(&seed, sizeof seed, 0);
		if (n < 0 && errno != EINTR)
			return as_fail(err, AS_EIO, "jail: preinit: getrandom: %s", strerror(errno));
	}
	json_object_seed(seed);

	/* The first use of a stdio stream without a buffer calls fstat (newfstatat) to size one.
	 * Give each a buffer now: static, since it must outlive every later use. */
	static char in_buf[BUFSIZ], out_buf[BUFSIZ];
	fflush(stdout);
	fflush(stderr);
	if (setvbuf(stdin, in_buf, _IOFBF, sizeof in_buf) != 0 ||
	    setvbuf(stdout, out_buf, _IOLBF, sizeof out_buf) != 0 || setvbuf(stderr, NULL, _IONBF, 0) != 0)
		return as_fail(err, AS_EIO, "jail: preinit: setvbuf failed");

	/* glibc's qsort calls sysconf(_SC_PHYS_PAGES), the sysinfo syscall, the first time it
	 * sorts 1 KiB or more (json_dumps with JSON_SORT_KEYS does): let it ask now. */
	int v[512];
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		v[i] = (int)(sizeof v / sizeof v[0] - i);
	qsort(v, sizeof v / sizeof v[0], sizeof v[0], jail_qsort_cmp);
	return 0;
}

static int jail_rlimit(int res, const char *name, rlim_t val, char *err)
{
	struct rlimit rl = {val, val};
	if (setrlimit(res, &rl) != 0)
		return as_fail(err, AS_EIO, "jail: rlimits: setrlimit(%s, %llu): %s", name, (unsigned long long)val,
			       strerror(errno));
	if (getrlimit(res, &rl) != 0 || rl.rlim_cur != val || rl.rlim_max != val)
		return as_fail(err, AS_EIO, "jail: rlimits: %s did not stay at %llu", name, (unsigned long long)val);
	return 0;
}

static int jail_rlimits(unsigned max_fds, char *err)
{
	GUARD(jail_rlimit(RLIMIT_FSIZE, "RLIMIT_FSIZE", 0, err)); /* no new bytes in any file */
	GUARD(jail_rlimit(RLIMIT_NPROC, "RLIMIT_NPROC", 0, err)); /* no processes, even if seccomp fell */
	GUARD(jail_rlimit(RLIMIT_CORE, "RLIMIT_CORE", 0, err));	  /* a core would hold what it parsed */
	GUARD(jail_rlimit(RLIMIT_NOFILE, "RLIMIT_NOFILE", max_fds, err));
	return 0;
}

static int jail_chroot_drop(struct jail_plan *p, char *err)
{
	/* chroot(".") after fchdir: the directory we checked, not whatever the path names now. */
	if (fchdir(p->dirfd) != 0 || chroot(".") != 0 || chdir("/") != 0)
		return as_fail(err, AS_EIO, "jail: chroot: %s", strerror(errno));
	close(p->dirfd);
	p->dirfd = -1;
	struct stat st;
	if (stat("/", &st) != 0 || st.st_dev != p->dir_dev || st.st_ino != p->dir_ino)
		return as_fail(err, AS_EIO, "jail: chroot: / is not the empty directory afterwards");

	/* The bounding set and the groups first: after setresuid we could no longer change them. */
	GUARD(jail_drop_bset(p->last_cap, err));
	if (setgroups(0, NULL) != 0)
		return as_fail(err, AS_EIO, "jail: drop: setgroups: %s", strerror(errno));
	if (setresgid(p->gid, p->gid, p->gid) != 0)
		return as_fail(err, AS_EIO, "jail: drop: setresgid(%u): %s", (unsigned)p->gid, strerror(errno));
	if (setresuid(p->uid, p->uid, p->uid) != 0)
		return as_fail(err, AS_EIO, "jail: drop: setresuid(%u): %s", (unsigned)p->uid, strerror(errno));

	/* Trust the result, not the return codes. */
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (getresuid(&r, &e, &s) != 0 || r != p->uid || e != p->uid || s != p->uid)
		return as_fail(err, AS_EIO, "jail: drop: uids are not all %u", (unsigned)p->uid);
	if (getresgid(&gr, &ge, &gs) != 0 || gr != p->gid || ge != p->gid || gs != p->gid)
		return as_fail(err, AS_EIO, "jail: drop: gids are not all %u", (unsigned)p->gid);
	if (getgroups(0, NULL) != 0)
		return as_fail(err, AS_EIO, "jail: drop: supplementary groups remain");
	if (setuid(0) == 0 || setgid(0) == 0)
		return as_fail(err, AS_EIO, "jail: drop: root could be regained");
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

static int jail_seccomp(const struct jail_opts *o, char *err)
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

int jail_enter(const struct jail_opts *o, char *err)
{
	struct jail_plan p = {.dirfd = -1};
	int rc = jail_check_opts(o, err);
	if (rc == 0)
		rc = jail_plan_ids(o, &p, err);
	if (rc == 0)
		rc = jail_plan_caps(&p, err);
	if (rc == 0 && p.root)
		rc = jail_plan_dir(o, &p, err);
	if (rc == 0)
		rc = jail_check_fds(o->max_fds, p.dirfd, err);
	if (rc == 0)
		rc = jail_preinit(err);
	if (rc == 0)
		rc = jail_rlimits(o->max_fds, err);
	if (rc == 0 && p.root)
		rc = jail_chroot_drop(&p, err);
	if (rc == 0 && p.userns)
		rc = jail_userns(&p, err);
	if (rc == 0)
		rc = jail_clear_caps(p.last_cap, err);
	if (rc == 0)
		rc = jail_nodump(err);
	if (rc == 0) {
		/* no_new_privs: no setuid binary or file capability can raise privileges again
		 * (and an unprivileged process may load a filter or a Landlock ruleset only with it). */
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
			rc = as_fail(err, AS_EIO, "jail: no_new_privs: %s", strerror(errno));
	}
	if (rc == 0)
		rc = jail_landlock(&p, err);
	if (rc == 0)
		rc = jail_seccomp(o, err);
	if (p.dirfd >= 0)
		close(p.dirfd);
	return rc;
}

int jail_status(pid_t pid, int *seccomp_mode, int *no_new_privs, uid_t *uid, char *err)
{
	char path[64], text[16384];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return as_fail(err, errno == ENOENT ? AS_ENOTFOUND : AS_EIO, "%s: %s", path, strerror(errno));
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, text + len, sizeof text - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return as_fail(err, e == ESRCH ? AS_ENOTFOUND : AS_EIO, "%s: read: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof text - 1) {
			close(fd);
			return as_fail(err, AS_ETOOBIG, "%s: longer than %zu bytes", path, sizeof text - 1);
		}
	}
	close(fd);
	text[len] = 0;

	/* The kernel writes these fields as "Name:\tvalue(s)\n", one per line. */
	long sc = -1, nnp = -1;
	unsigned long ids[4];
	int have_uid = 0;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (!strncmp(line, "Seccomp:\t", 9))
			sc = strtol(line + 9, NULL, 10);
		else if (!strncmp(line, "NoNewPrivs:\t", 12))
			nnp = strtol(line + 12, NULL, 10);
		else if (!strncmp(line, "Uid:\t", 5))
			have_uid = sscanf(line + 5, "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) == 4;
		line = nl ? nl + 1 : NULL;
	}
	if (sc < 0 || nnp < 0 || !have_uid)
		return as_fail(err, AS_ENOTFOUND, "%s: no Seccomp, NoNewPrivs or Uid line", path);
	if (seccomp_mode)
		*seccomp_mode = (int)sc;
	if (no_new_privs)
		*no_new_privs = (int)nnp;
	if (uid)
		*uid = ids[0] == 0 || ids[1] == 0 || ids[2] == 0 || ids[3] == 0 ? 0 : (uid_t)ids[0];
	return 0;
}
