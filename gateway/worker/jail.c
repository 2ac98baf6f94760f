/* The worker jail: checks first, then library pre-initialisation, rlimits, chroot, capability
 * and uid drop (or a user namespace of its own to empty the bounding set when not root),
 * non-dumpable, no_new_privs, Landlock, and a libseccomp allowlist whose default kills the
 * process (jail_seccomp.c). jail.h gives the order and the contract; DESIGN.md says why
 * workers are jailed. */
#define _GNU_SOURCE
#include "gateway/worker/jail.h"
#include "gateway/worker/jail_seccomp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
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

static int jail_check_opts(const struct jail_opts *o, char *err)
{
	if (!o)
		return as_fail(err, AS_EINVAL, "jail: no options");
	if (o->max_fds == 0)
		return as_fail(err, AS_EINVAL, "jail: max_fds (RLIMIT_NOFILE) must be set");
	return jail_check_extra(o, err);
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
