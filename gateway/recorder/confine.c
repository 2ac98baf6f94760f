/* The recorder's confinement (confine.h). It is not a worker's jail: a database client must
 * open its files and, for PostgreSQL, a socket; so it gets the narrowest version of that. */
#define _GNU_SOURCE
#include "gateway/recorder/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"

/* Landlock, from the kernel's uapi (Debian 12's header stops at ABI 2). */
#define LL_VERSION (1u << 0)
#define LL_RULE_PATH 1
#define LL_RULE_NET 2
#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_TRUNCATE (1ull << 14)
#define LL_NET_BIND_TCP (1ull << 0)
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT (1ull << 0)
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_attr {
	uint64_t fs, net, scoped;
};
struct ll_path {
	uint64_t allowed;
	int32_t fd;
} __attribute__((packed));
struct ll_port {
	uint64_t allowed, port;
};

static uint64_t fs_rights(int abi)
{
	uint64_t all = (1ull << 13) - 1; /* ABI 1: execute .. make_sym */
	if (abi >= 2)
		all |= 1ull << 13; /* refer */
	if (abi >= 3)
		all |= LL_FS_TRUNCATE;
	if (abi >= 5)
		all |= 1ull << 15; /* ioctl_dev */
	return all;
}

static int ll_allow(int rs, const char *path, uint64_t rights)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct ll_path pb = {rights, fd};
	long rc = syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH, &pb, 0);
	close(fd);
	return rc == 0 ? 0 : -1;
}

/* The ruleset is made (and its paths opened) before the uid changes, then enforced after. */
static int landlock(const struct confine_opts *o, int *abi_out, int *rs_out, char *err)
{
	*rs_out = -1;
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_VERSION);
	*abi_out = abi > 0 ? (int)abi : 0;
	if (abi <= 0)
		return AS_ENOTFOUND;
	struct ll_attr a = {.fs = fs_rights((int)abi)};
	size_t size = 8;
	if (abi >= 4) {
		a.net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 16;
	}
	if (abi >= 6) {
		a.scoped = LL_SCOPE_ABSTRACT | LL_SCOPE_SIGNAL;
		size = 24;
	}
	int rs = (int)syscall(SYS_landlock_create_ruleset, &a, size, 0);
	if (rs < 0)
		return as_fail(err, AS_EIO, "recorder: landlock: create_ruleset: %s", strerror(errno));
	uint64_t rw = LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_READ_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_REG |
		      (abi >= 3 ? LL_FS_TRUNCATE : 0);
	/* Its own directory, read and write; what libpq, libmariadb and the C library read (name service,
	 * certificates, time zone, the kernel's randomness), read only; nothing else at all. */
	int rc = o->dir ? ll_allow(rs, o->dir, rw) : 0;
	static const char *const ro[] = {"/etc", "/usr/share/zoneinfo", "/usr/lib/ssl", "/dev/urandom"};
	for (size_t i = 0; rc == 0 && i < sizeof ro / sizeof *ro; i++)
		rc = ll_allow(rs, ro[i],
			      !strcmp(ro[i], "/dev/urandom") ? LL_FS_READ_FILE : LL_FS_READ_FILE | LL_FS_READ_DIR);
	if (rc == 0 && abi >= 4 && o->tcp_port) {
		struct ll_port np = {LL_NET_CONNECT_TCP, o->tcp_port};
		rc = (int)syscall(SYS_landlock_add_rule, rs, LL_RULE_NET, &np, 0);
	}
	if (rc != 0) {
		int e = errno;
		close(rs);
		return as_fail(err, AS_EIO, "recorder: landlock: %s", strerror(e));
	}
	*rs_out = rs;
	return 0;
}

/* What SQLite, libpq, libmariadb, jansson and the loop call; anything else kills the process
 * (libmariadb needs nothing libpq does not: tests/integration/records_mariadb.sh runs it here,
 * over a unix socket and over TCP, through a server restart). */
static const int allowed[] = {
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(pread64),
    SCMP_SYS(pwrite64),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(lseek),
    SCMP_SYS(close),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(stat),
    SCMP_SYS(lstat),
    SCMP_SYS(statx),
    SCMP_SYS(openat),
    SCMP_SYS(open),
    SCMP_SYS(fcntl),
    SCMP_SYS(ftruncate),
    SCMP_SYS(fsync),
    SCMP_SYS(fdatasync),
    SCMP_SYS(unlink),
    SCMP_SYS(unlinkat),
    SCMP_SYS(access),
    SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2),
    SCMP_SYS(readlink),
    SCMP_SYS(readlinkat),
    SCMP_SYS(getcwd),
    SCMP_SYS(getdents64),
    SCMP_SYS(fchmod),
    SCMP_SYS(fchown),
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(mprotect),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(futex),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(getrandom),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(uname),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sched_yield),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(ioctl),
    SCMP_SYS(sysinfo),
    SCMP_SYS(getrusage),
    SCMP_SYS(flock),
};

/* A database client's network calls: PostgreSQL and MySQL only. */
static const int net_calls[] = {SCMP_SYS(sendto),      SCMP_SYS(recvfrom),   SCMP_SYS(connect),
				SCMP_SYS(setsockopt),  SCMP_SYS(getsockopt), SCMP_SYS(getsockname),
				SCMP_SYS(getpeername), SCMP_SYS(shutdown)};

static int seccomp(int net, char *err)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc = f ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < sizeof allowed / sizeof *allowed; i++)
		rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0);
	for (size_t i = 0; rc == 0 && net && i < sizeof net_calls / sizeof *net_calls; i++)
		rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, net_calls[i], 0);
	/* Sockets of the families a database client needs, and no other (no raw, no netlink). */
	static const int families[] = {AF_UNIX, AF_INET, AF_INET6};
	for (size_t i = 0; rc == 0 && net && i < sizeof families / sizeof *families; i++)
		rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, families[i]));
	if (rc == 0)
		rc = seccomp_load(f);
	seccomp_release(f);
	return rc == 0 ? 0 : as_fail(err, AS_EIO, "recorder: seccomp: %s", strerror(-rc));
}

int confine_enter(const struct confine_opts *o, char *err)
{
	struct rlimit zero = {0, 0}, fds = {64, 64};
	int abi = 0, rs = -1;
	int rc = landlock(o, &abi, &rs, err);
	if (rc == AS_ENOTFOUND && getuid() != 0)
		return as_fail(err, AS_EIO, "recorder: the kernel offers no Landlock, which keeps it to its directory");
	if (rc != 0 && rc != AS_ENOTFOUND)
		return rc;
	if (o->dir && chdir(o->dir) != 0) /* its database is named from here (db.c: a relative path stays so) */
		return as_fail(err, AS_EIO, "recorder: cannot enter %s: %s", o->dir, strerror(errno));
	if (setrlimit(RLIMIT_CORE, &zero) != 0 || setrlimit(RLIMIT_NOFILE, &fds) != 0)
		return as_fail(err, AS_EIO, "recorder: rlimits: %s", strerror(errno));
	if (geteuid() == 0) {
		if (!o->uid)
			return as_fail(err, AS_EINVAL, "recorder: started as root without a uid to drop to");
		/* No capability can come back: the bounding set emptied, the inheritable and ambient
		 * sets cleared (the uid change clears the permitted and effective ones). */
		for (int cap = 0; cap <= 63; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
				return as_fail(err, AS_EIO, "recorder: cannot empty the bounding set: %s",
					       strerror(errno));
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
			return as_fail(err, AS_EIO, "recorder: cannot clear the ambient set: %s", strerror(errno));
		if (setgroups(0, NULL) != 0 || setresgid(o->uid, o->uid, o->uid) != 0 ||
		    setresuid(o->uid, o->uid, o->uid) != 0)
			return as_fail(err, AS_EIO, "recorder: cannot drop to uid %u: %s", (unsigned)o->uid,
				       strerror(errno));
		if (setuid(0) == 0 || geteuid() != o->uid)
			return as_fail(err, AS_EIO, "recorder: the uid did not change");
	}
	/* No processes of its own (set after the uid change: the limit counts that uid's). */
	if (setrlimit(RLIMIT_NPROC, &zero) != 0)
		return as_fail(err, AS_EIO, "recorder: RLIMIT_NPROC: %s", strerror(errno));
	if (prctl(PR_SET_DUMPABLE, 0) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return as_fail(err, AS_EIO, "recorder: prctl: %s", strerror(errno));
	if (rs >= 0) {
		long r = syscall(SYS_landlock_restrict_self, rs, 0);
		int e = errno;
		close(rs);
		if (r != 0)
			return as_fail(err, AS_EIO, "recorder: landlock: restrict_self: %s", strerror(e));
	}
	return seccomp(o->net, err);
}
