/* Unit tests for gateway/worker/jail.c. Each test forks; the child enters the jail and does one thing;
 * the parent judges how the child ended and what /proc says about it. Jailing runs only in the
 * plain build: under AddressSanitizer the runtime's own calls would trip the filter (NOTES.md),
 * so those tests report "# SKIP" there, while the refusals (which load no filter) still run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gateway/worker/jail.h"
#include "gateway/proto/workers.h"

#if defined(__SANITIZE_ADDRESS__)
#define JAIL_SAN 1
#else
#define JAIL_SAN 0
#endif

/* First line of every test that jails: under ASan it returns at once, and main() names the
 * test "# SKIP" (cmocka 1.1.5's own skip() prints "not ok ... # SKIP", which tests/scripts/run.sh
 * would count as a failure). */
#define PLAIN_BUILD_ONLY()                                                                                             \
	do {                                                                                                           \
		if (JAIL_SAN)                                                                                          \
			return;                                                                                        \
	} while (0)

#define WORKER_ARG "--jailed-worker"
#define TIMEOUT_MS 5000
#define NOBODY 65534
/* The uid and gid a root child drops to, as assentd gives one to each worker kind: not
 * nobody, not any account (the default worker range is 66000 and up). */
#define TEST_UID 66100

/* ---- running a child ---- */

/* In the child, fds[0] is the report pipe (fd 3) and fds[1..] the kept descriptors (4...). */
typedef void (*body_fn)(const int *fds, void *arg);

struct spec {
	const struct jail_opts *o; /* NULL: max_fds 64 and nothing else */
	body_fn body;
	void *arg;
	int keep[4]; /* parent descriptors the child keeps, as fds[1..] */
	size_t nkeep;
	int has_out; /* out_fd becomes the child's stdout (else /dev/null) */
	int out_fd;
	int pre_drop;	   /* become uid/gid NOBODY before jail_enter (the not-root path) */
	int no_ids;	   /* root: give jail_enter no ids to drop to */
	void (*pre)(void); /* run in the child just before jail_enter */
};

struct outcome {
	int jailed; /* the child said jail_enter returned 0 */
	int rc;	    /* else what it returned */
	char err[AS_ERRLEN];
	long after_sc, after_nnp, after_uid, after_fsize; /* the refused child's state */
	int status;
	char out[512]; /* what the body wrote on the report pipe */
	size_t outlen;
};

struct run {
	pid_t pid;
	int rep;
};

static int is_root(void)
{
	return geteuid() == 0;
}

static void report(int fd, const void *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			_exit(98);
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

static void say(const int *fds, const char *s)
{
	report(fds[0], s, strlen(s));
}

/* The child's descriptors: the report pipe at 3, kept ones at 4..., stdio on /dev/null (or
 * stdout on out_fd), nothing else. Kept fds are moved out of the way first, so a parent with
 * a closed stdin (whose pipe got fd 0) still works. */
static void child_fds(int rep_w, const struct spec *s)
{
	int n = (int)s->nkeep + 1;
	int src[5];
	src[0] = rep_w;
	for (size_t i = 0; i < s->nkeep; i++)
		src[i + 1] = s->keep[i];
	int tmp[5];
	for (int i = 0; i < n; i++)
		if ((tmp[i] = fcntl(src[i], F_DUPFD, 100)) < 0)
			_exit(97);
	int out = s->has_out ? fcntl(s->out_fd, F_DUPFD, 100) : -1;
	int null = open("/dev/null", O_RDWR);
	if (null < 0 || (s->has_out && out < 0) || dup2(null, 0) < 0 || dup2(out >= 0 ? out : null, 1) < 0 ||
	    dup2(null, 2) < 0)
		_exit(97);
	for (int i = 0; i < n; i++)
		if (dup2(tmp[i], 3 + i) != 3 + i)
			_exit(97);
	close_range((unsigned)(3 + n), ~0u, 0);
	/* cmocka's handlers must not run in the child: a crash is for the parent to see. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
}

static struct run start(const struct spec *s)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_fds(p[1], s);
		int fds[5] = {3, 4, 5, 6, 7};
		if (s->pre_drop && (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
				    setresuid(NOBODY, NOBODY, NOBODY) != 0))
			_exit(96);
		if (s->pre)
			s->pre();
		if (!s->pre_drop && !s->no_ids && is_root())
			jail_set_ids(TEST_UID, TEST_UID); /* as assent-worker KIND --uid N does */
		struct jail_opts def = {.max_fds = 64};
		char err[AS_ERRLEN] = "";
		int rc = jail_enter(s->o ? s->o : &def, err);
		if (rc != 0) {
			/* Refused: say so, and what the process looks like now. */
			struct rlimit rl;
			getrlimit(RLIMIT_FSIZE, &rl);
			long st[4] = {prctl(PR_GET_SECCOMP), prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), (long)getuid(),
				      rl.rlim_cur == RLIM_INFINITY ? -1 : (long)rl.rlim_cur};
			report(3, "E", 1);
			report(3, &rc, sizeof rc);
			report(3, st, sizeof st);
			report(3, err, sizeof err);
			_exit(99);
		}
		report(3, "J", 1);
		if (s->body)
			s->body(fds, s->arg);
		report(3, "R", 1); /* the body returned: nothing killed it */
		_exit(0);
	}
	close(p[1]);
	return (struct run){pid, p[0]};
}

/* Read n bytes of the report, or fewer at EOF; 0 on timeout. */
static size_t read_rep(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		struct pollfd pf = {fd, POLLIN, 0};
		if (poll(&pf, 1, TIMEOUT_MS) != 1)
			break;
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* Collect the rest of the report and the exit status; a child that hangs is killed. */
static void finish(struct run *r, struct outcome *oc)
{
	oc->outlen = read_rep(r->rep, oc->out, sizeof oc->out - 1);
	oc->out[oc->outlen] = 0;
	close(r->rep);
	for (int waited = 0;; waited += 5) {
		pid_t w = waitpid(r->pid, &oc->status, WNOHANG);
		if (w == r->pid)
			break;
		assert_int_equal(w, 0);
		if (waited >= TIMEOUT_MS) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &oc->status, 0);
			fail_msg("child %d did not finish within %d ms", (int)r->pid, TIMEOUT_MS);
		}
		usleep(5000);
	}
}

/* Wait for the child to say how jail_enter went. */
static void await_jail(struct run *r, struct outcome *oc)
{
	memset(oc, 0, sizeof *oc);
	char c = 0;
	if (read_rep(r->rep, &c, 1) != 1) {
		finish(r, oc);
		fail_msg("the child ended before jail_enter returned: status %#x", oc->status);
	}
	if (c == 'J') {
		oc->jailed = 1;
		return;
	}
	assert_int_equal(c, 'E');
	long st[4];
	assert_int_equal(read_rep(r->rep, &oc->rc, sizeof oc->rc), sizeof oc->rc);
	assert_int_equal(read_rep(r->rep, st, sizeof st), sizeof st);
	assert_int_equal(read_rep(r->rep, oc->err, sizeof oc->err), sizeof oc->err);
	oc->err[sizeof oc->err - 1] = 0;
	oc->after_sc = st[0];
	oc->after_nnp = st[1];
	oc->after_uid = st[2];
	oc->after_fsize = st[3];
}

static void run_child(const struct spec *s, struct outcome *oc)
{
	struct run r = start(s);
	await_jail(&r, oc);
	finish(&r, oc);
}

static void assert_killed_by(const struct outcome *oc, int sig, const char *what)
{
	if (!oc->jailed)
		fail_msg("%s: jail_enter failed: %s", what, oc->err);
	if (!WIFSIGNALED(oc->status))
		fail_msg("%s: expected death by signal %d, child exited %d, reported '%s'", what, sig,
			 WIFEXITED(oc->status) ? WEXITSTATUS(oc->status) : -1, oc->out);
	if (WTERMSIG(oc->status) != sig)
		fail_msg("%s: expected signal %d, got %d", what, sig, WTERMSIG(oc->status));
}

static void assert_clean_exit(const struct outcome *oc, const char *what)
{
	if (!oc->jailed)
		fail_msg("%s: jail_enter failed: %s", what, oc->err);
	if (WIFSIGNALED(oc->status))
		fail_msg("%s: killed by signal %d after reporting '%s'", what, WTERMSIG(oc->status), oc->out);
	assert_true(WIFEXITED(oc->status));
	assert_int_equal(WEXITSTATUS(oc->status), 0);
}

/* ---- forbidden calls: each kills the jailed child with SIGSYS ---- */

struct forbidden {
	const char *name;
	long (*call)(void);
};

static void do_forbidden(const int *fds, void *arg)
{
	const struct forbidden *f = arg;
	say(fds, "B"); /* write works, and we got as far as the call */
	f->call();
}

static long call_openat(void)
{
	return syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
}
static long call_socket(void)
{
	return syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
}
static long call_execve(void)
{
	char *const argv[] = {"true", NULL}, *const envp[] = {NULL};
	return syscall(SYS_execve, "/bin/true", argv, envp);
}
static long call_ptrace(void)
{
	return syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
}
static long call_mmap_exec(void)
{
	return syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}
static long call_fork(void)
{
	pid_t p = fork(); /* glibc: the clone syscall */
	if (p == 0)
		_exit(0);
	return p;
}
static char mprotect_page[8192] __attribute__((aligned(4096)));
static long call_mprotect_exec(void)
{
	return syscall(SYS_mprotect, mprotect_page, 4096, PROT_READ | PROT_EXEC);
}
static long call_mprotect_ro(void)
{
	return syscall(SYS_mprotect, mprotect_page, 4096, PROT_READ);
}
static long call_sys_fork(void)
{
	return syscall(SYS_fork);
}
static long call_vfork(void)
{
	return syscall(SYS_vfork);
}
static long call_clone3(void)
{
	uint64_t args[11] = {0};
	return syscall(SYS_clone3, args, sizeof args);
}
static long call_newfstatat(void)
{
	struct stat st;
	return syscall(SYS_newfstatat, AT_FDCWD, "/etc", &st, 0);
}
static long call_kill(void)
{
	return syscall(SYS_kill, getppid(), 0);
}
static long call_tgkill_usr1(void)
{
	return syscall(SYS_tgkill, getpid(), gettid(), SIGUSR1);
}
static long call_getppid(void)
{
	return syscall(SYS_getppid);
}
static long call_fcntl_dupfd(void)
{
	return syscall(SYS_fcntl, 0, F_DUPFD, 10);
}
static long call_sendto_addr(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	return syscall(SYS_sendto, 3, "x", 1, 0, &a, sizeof a);
}
static long call_setuid0(void)
{
	return syscall(SYS_setuid, 0);
}
static long call_chdir(void)
{
	return syscall(SYS_chdir, "/");
}
static long call_unlinkat(void)
{
	return syscall(SYS_unlinkat, AT_FDCWD, "x", 0);
}
static long call_prctl(void)
{
	return syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0);
}
static long call_prlimit(void)
{
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	return syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL);
}
static long call_io_uring(void)
{
	char params[120] = {0};
	return syscall(SYS_io_uring_setup, 1, params);
}
static long call_memfd(void)
{
	return syscall(SYS_memfd_create, "x", 0);
}
static long call_socketpair(void)
{
	int sv[2];
	return syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv);
}
static long call_connect(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	return syscall(SYS_connect, 3, &a, sizeof a);
}
static long call_newuname(void)
{
	char buf[512];
	return syscall(SYS_uname, buf);
}

#if defined(__x86_64__)
/* An x32-ABI number: libseccomp sends it to the bad-architecture action, which must kill too. */
static long call_x32(void)
{
	return syscall(0x40000000 | SYS_getpid);
}
#endif

static void expect_sigsys(const struct forbidden *f)
{
	struct spec s = {.body = do_forbidden, .arg = (void *)f};
	struct outcome oc;
	run_child(&s, &oc);
	assert_killed_by(&oc, SIGSYS, f->name);
	if (strcmp(oc.out, "B") != 0)
		fail_msg("%s: child reported '%s', expected just 'B'", f->name, oc.out);
}

static void test_openat_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	expect_sigsys(&(struct forbidden){"openat", call_openat});
}
static void test_socket_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	expect_sigsys(&(struct forbidden){"socket", call_socket});
}
static void test_execve_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	expect_sigsys(&(struct forbidden){"execve", call_execve});
}
static void test_ptrace_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	expect_sigsys(&(struct forbidden){"ptrace", call_ptrace});
}
static void test_mmap_exec_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	expect_sigsys(&(struct forbidden){"mmap PROT_EXEC", call_mmap_exec});
}
static void test_fork_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	expect_sigsys(&(struct forbidden){"fork (clone)", call_fork});
}

static void test_more_forbidden_killed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	static const struct forbidden all[] = {
		{"mprotect PROT_EXEC", call_mprotect_exec},
		{"mprotect PROT_READ (no mprotect at all)", call_mprotect_ro},
		{"fork syscall", call_sys_fork},
		{"vfork", call_vfork},
		{"clone3", call_clone3},
		{"newfstatat (stat of /etc)", call_newfstatat},
		{"kill (the parent)", call_kill},
		{"tgkill SIGUSR1 (only SIGABRT to self is allowed)", call_tgkill_usr1},
		{"getppid (harmless, but not on the list)", call_getppid},
		{"fcntl F_DUPFD", call_fcntl_dupfd},
		{"sendto with an address", call_sendto_addr},
		{"setuid(0)", call_setuid0},
		{"chdir", call_chdir},
		{"unlinkat", call_unlinkat},
		{"prctl", call_prctl},
		{"prlimit64 (raise RLIMIT_NOFILE)", call_prlimit},
		{"io_uring_setup", call_io_uring},
		{"memfd_create", call_memfd},
		{"socketpair", call_socketpair},
		{"connect", call_connect},
		{"uname", call_newuname},
#if defined(__x86_64__)
		{"x32 getpid (foreign ABI)", call_x32},
#endif
	};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		expect_sigsys(&all[i]);
}

#define STEP(name, cond)                                                                                               \
	do {                                                                                                           \
		say(fds, name " ");                                                                                    \
		if (!(cond))                                                                                           \
			_exit(50);                                                                                     \
	} while (0)

/* ---- argument checks: the allowed syscalls with arguments the jail refuses ---- */

static long call_sendmsg_oob(void)
{
	struct msghdr mh = {.msg_iov = &(struct iovec){"x", 1}, .msg_iovlen = 1};
	return syscall(SYS_sendmsg, 3, &mh, MSG_OOB);
}
static long call_sendmsg_fastopen(void)
{
	struct msghdr mh = {.msg_iov = &(struct iovec){"x", 1}, .msg_iovlen = 1};
	return syscall(SYS_sendmsg, 3, &mh, MSG_FASTOPEN | MSG_NOSIGNAL);
}
static long call_sendto_oob(void)
{
	return syscall(SYS_sendto, 3, "x", 1, MSG_OOB, NULL, 0);
}
static long call_recvmsg_errqueue(void)
{
	char b[4];
	struct msghdr mh = {.msg_iov = &(struct iovec){b, 1}, .msg_iovlen = 1};
	return syscall(SYS_recvmsg, 3, &mh, MSG_ERRQUEUE);
}
static long call_recvfrom_peek(void)
{
	char b[4];
	return syscall(SYS_recvfrom, 3, b, 1, MSG_PEEK, NULL, NULL);
}
static long call_futex_requeue(void)
{
	int a = 0, b = 0;
	return syscall(SYS_futex, &a, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &b, 0);
}
static long call_futex_lock_pi(void)
{
	int a = 0;
	return syscall(SYS_futex, &a, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
}
static long call_madvise_dontfork(void)
{
	return syscall(SYS_madvise, mprotect_page, 4096, MADV_DONTFORK);
}
static long call_setsockopt_sndbuf(void)
{
	int v = 1 << 20;
	return syscall(SYS_setsockopt, 3, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}
static long call_setsockopt_bindtodevice(void)
{
	return syscall(SYS_setsockopt, 3, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3);
}
static long call_getsockopt_peercred(void)
{
	struct ucred c;
	socklen_t n = sizeof c;
	return syscall(SYS_getsockopt, 3, SOL_SOCKET, SO_PEERCRED, &c, &n);
}
static long call_accept4_bad_flag(void)
{
	return syscall(SYS_accept4, 3, NULL, NULL, SOCK_CLOEXEC | 0x100000);
}

/* The workers' extras (assentd's HTTP workers pass these): allowed only with the jail's
 * own argument rules. */
static const int http_extras[] = {SCMP_SYS(accept4), SCMP_SYS(setsockopt), SCMP_SYS(getsockopt)};

static void test_arguments_checked(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	static const struct forbidden all[] = {
	    {"sendmsg MSG_OOB", call_sendmsg_oob},
	    {"sendmsg MSG_FASTOPEN", call_sendmsg_fastopen},
	    {"sendto MSG_OOB", call_sendto_oob},
	    {"recvmsg MSG_ERRQUEUE", call_recvmsg_errqueue},
	    {"recvfrom MSG_PEEK", call_recvfrom_peek},
	    {"futex FUTEX_CMP_REQUEUE", call_futex_requeue},
	    {"futex FUTEX_LOCK_PI", call_futex_lock_pi},
	    {"madvise MADV_DONTFORK", call_madvise_dontfork},
	    {"setsockopt SO_SNDBUF", call_setsockopt_sndbuf},
	    {"setsockopt SO_BINDTODEVICE", call_setsockopt_bindtodevice},
	    {"getsockopt SO_PEERCRED", call_getsockopt_peercred},
	    {"accept4 with an unknown flag", call_accept4_bad_flag},
	};
	struct jail_opts o = {.max_fds = 64, .extra_syscalls = http_extras, .nextra = 3};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		struct spec s = {.o = &o, .body = do_forbidden, .arg = (void *)&all[i]};
		struct outcome oc;
		run_child(&s, &oc);
		assert_killed_by(&oc, SIGSYS, all[i].name);
		if (strcmp(oc.out, "B") != 0)
			fail_msg("%s: child reported '%s', expected just 'B'", all[i].name, oc.out);
	}
}

/* ... and the values the workers use still work, on a real TCP socket. */
static void do_sockopts(const int *fds, void *arg)
{
	(void)arg;
	int t = fds[1], one = 1, type = 0;
	struct linger lg = {1, 0};
	socklen_t n = sizeof type;
	STEP("TCP_NODELAY", setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
	STEP("TCP_CORK", setsockopt(t, IPPROTO_TCP, TCP_CORK, &one, sizeof one) == 0);
	STEP("SO_LINGER", setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
	STEP("SO_TYPE", getsockopt(t, SOL_SOCKET, SO_TYPE, &type, &n) == 0 && type == SOCK_STREAM);
	STEP("SO_ERROR", getsockopt(t, SOL_SOCKET, SO_ERROR, &type, &n) == 0);
	struct msghdr mh = {.msg_iov = &(struct iovec){"g", 1}, .msg_iovlen = 1};
	STEP("sendmsg MSG_DONTWAIT|MSG_NOSIGNAL|MSG_MORE",
	     syscall(SYS_sendmsg, fds[2], &mh, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE) == 1);
	STEP("futex FUTEX_WAKE_PRIVATE", syscall(SYS_futex, &one, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) == 0);
	STEP("madvise MADV_FREE", syscall(SYS_madvise, mprotect_page, 4096, MADV_FREE) == 0);
}

static void test_arguments_allowed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), sv[2];
	assert_true(t >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct jail_opts o = {.max_fds = 64, .extra_syscalls = http_extras, .nextra = 3};
	struct spec s = {.o = &o, .body = do_sockopts, .keep = {t, sv[1]}, .nkeep = 2};
	struct outcome oc;
	run_child(&s, &oc);
	close(t);
	close(sv[1]);
	close(sv[0]);
	assert_clean_exit(&oc, "socket options the workers use");
}

/* A thread started before the jail is under the filter too (TSYNC): its openat kills the
 * whole process. */
static sem_t thread_go;
static void *thread_openat(void *arg)
{
	(void)arg;
	while (sem_wait(&thread_go) != 0)
		;
	call_openat();
	report(3, "T", 1); /* reached only if the thread was not filtered */
	return NULL;
}
static pthread_t early_thread;
static void pre_thread(void)
{
	if (sem_init(&thread_go, 0, 0) != 0 || pthread_create(&early_thread, NULL, thread_openat, NULL) != 0)
		_exit(94);
}
static void do_release_thread(const int *fds, void *arg)
{
	(void)arg;
	say(fds, "B");
	sem_post(&thread_go);
	pthread_join(early_thread, NULL);
}

static void proc_status_field(pid_t pid, const char *name, char *out, size_t n);

static void test_other_threads_filtered(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	struct spec s = {.pre = pre_thread, .body = do_release_thread};
	struct outcome oc;
	char bnd[64];
	proc_status_field(getpid(), "CapBnd", bnd, sizeof bnd);
	run_child(&s, &oc);
	if (!is_root() && strcmp(bnd, "0000000000000000") != 0) {
		/* Not root with a bounding set to empty: that takes a user namespace, which the
		 * kernel refuses a process with threads, and the jail refuses to go on without. */
		if (oc.jailed || !strstr(oc.err, "nor make a user namespace"))
			fail_msg("threads, not root: expected the user-namespace refusal, got jailed %d '%s'",
				 oc.jailed, oc.err);
		return;
	}
	assert_killed_by(&oc, SIGSYS, "openat in a thread started before the jail");
	assert_string_equal(oc.out, "B");
}

/* ---- what a worker needs still works ---- */

static void do_pipe_io(const int *fds, void *arg)
{
	(void)arg;
	char buf[16] = "";
	ssize_t n = read(fds[1], buf, sizeof buf - 1); /* the parent's "ping" */
	if (n != 4 || memcmp(buf, "ping", 4) != 0)
		_exit(10);
	say(fds, "pong");
	/* O_NONBLOCK through fcntl, as an event loop sets it */
	int fl = fcntl(fds[1], F_GETFL);
	if (fl < 0 || fcntl(fds[1], F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0)
		_exit(11);
	errno = 0;
	if (read(fds[1], buf, 1) != -1 || errno != EAGAIN)
		_exit(12);
	struct pollfd pf = {fds[1], POLLIN, 0};
	if (poll(&pf, 1, 0) != 0)
		_exit(13);
	struct timespec ts = {0, 1000000};
	if (nanosleep(&ts, NULL) != 0 || clock_gettime(CLOCK_MONOTONIC, &ts) != 0 || getpid() <= 0)
		_exit(14);
	close(fds[1]);
}

static void test_pipe_io_allowed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct spec s = {.body = do_pipe_io, .keep = {p[0]}, .nkeep = 1};
	struct run r = start(&s);
	close(p[0]);
	struct outcome oc;
	await_jail(&r, &oc);
	assert_int_equal(write(p[1], "ping", 4), 4);
	finish(&r, &oc);
	close(p[1]);
	assert_clean_exit(&oc, "pipe I/O");
	assert_string_equal(oc.out, "pongR");
}

/* Receive a descriptor over SCM_RIGHTS (the signer hands workers connections this way),
 * use it, and send it back with sendmsg; plus send()/recv() on the same socket. */
static void do_scm_rights(const int *fds, void *arg)
{
	(void)arg;
	char byte;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = {&byte, 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	if (recvmsg(fds[1], &m, MSG_CMSG_CLOEXEC) != 1 || byte != 'F')
		_exit(20);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		_exit(21);
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	if (write(fd, "hello", 5) != 5)
		_exit(22);
	byte = 'B';
	memset(u.buf, 0, sizeof u.buf);
	m.msg_controllen = sizeof u.buf;
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(fds[1], &m, 0) != 1)
		_exit(23);
	close(fd);
	if (send(fds[1], "S", 1, 0) != 1 || recv(fds[1], &byte, 1, 0) != 1 || byte != 'r')
		_exit(24);
	say(fds, "ok");
}

static void test_scm_rights_allowed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	int sv[2], p[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct spec s = {.body = do_scm_rights, .keep = {sv[1]}, .nkeep = 1};
	struct run r = start(&s);
	close(sv[1]);
	struct outcome oc;
	await_jail(&r, &oc);
	assert_true(oc.jailed);

	char byte = 'F';
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {&byte, 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &p[1], sizeof p[1]);
	assert_int_equal(sendmsg(sv[0], &m, 0), 1);
	close(p[1]);

	/* the descriptor comes back */
	memset(&u, 0, sizeof u);
	m.msg_controllen = sizeof u.buf;
	assert_int_equal(recvmsg(sv[0], &m, MSG_CMSG_CLOEXEC), 1);
	assert_int_equal(byte, 'B');
	c = CMSG_FIRSTHDR(&m);
	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	int back;
	memcpy(&back, CMSG_DATA(c), sizeof back);
	assert_int_equal(write(back, " back", 5), 5);
	close(back);
	assert_int_equal(read(sv[0], &byte, 1), 1);
	assert_int_equal(byte, 'S');
	assert_int_equal(write(sv[0], "r", 1), 1);

	finish(&r, &oc);
	close(sv[0]);
	assert_clean_exit(&oc, "SCM_RIGHTS");
	assert_string_equal(oc.out, "okR");
	char text[32] = "";
	assert_int_equal(read_rep(p[0], text, sizeof text - 1), 10);
	assert_string_equal(text, "hello back");
	close(p[0]);
}

/* malloc's paths: brk, mmap, mremap, munmap, madvise. */
static void do_memory(const int *fds, void *arg)
{
	(void)arg;
	char *big = malloc(8u << 20);
	if (!big)
		_exit(30);
	memset(big, 1, 8u << 20);
	char *bigger = realloc(big, 32u << 20);
	if (!bigger || bigger[(8u << 20) - 1] != 1)
		_exit(31);
	free(bigger);
	void *small[2000];
	for (int i = 0; i < 2000; i++)
		if (!(small[i] = malloc(100 + i)))
			_exit(32);
	for (int i = 0; i < 2000; i++)
		free(small[i]);
	char *m = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		_exit(33);
	m[0] = 1;
	if (madvise(m, 1u << 20, MADV_DONTNEED) != 0 || munmap(m, 1u << 20) != 0)
		_exit(34);
	say(fds, "M");
}

static void test_memory_allowed(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	struct spec s = {.body = do_memory};
	struct outcome oc;
	run_child(&s, &oc);
	assert_clean_exit(&oc, "memory");
	assert_string_equal(oc.out, "MR");
}

/* Every entry of the base allowlist, called directly (glibc wrappers sometimes use another
 * syscall: nanosleep() is clock_nanosleep), so dropping any entry fails this test. Each step
 * reports its name first, so a SIGSYS names the step that died. */
static volatile sig_atomic_t got_usr2;
static void on_usr2(int sig)
{
	(void)sig;
	got_usr2 = 1;
}
static void pre_handler(void)
{
	struct sigaction sa = {.sa_handler = on_usr2}; /* no SA_RESTART: read returns EINTR */
	sigaction(SIGUSR2, &sa, NULL);
}

static void do_allowlist(const int *fds, void *arg)
{
	(void)arg;
	int sock = fds[1], go = fds[2];
	char b[8];
	struct iovec iov = {b, 2};
	STEP("writev", writev(sock, &(struct iovec){"ab", 2}, 1) == 2);
	STEP("readv", readv(sock, &iov, 1) == 2 && !memcmp(b, "cd", 2));
	STEP("sendto", syscall(SYS_sendto, sock, "e", 1, 0, NULL, 0) == 1);
	STEP("recvfrom", syscall(SYS_recvfrom, sock, b, 1, 0, NULL, NULL) == 1 && b[0] == 'f');
	STEP("poll", syscall(SYS_poll, &(struct pollfd){sock, POLLIN, 0}, 1, 0) == 0);
	struct timespec zero = {0, 0};
	STEP("ppoll", syscall(SYS_ppoll, &(struct pollfd){sock, POLLIN, 0}, 1, &zero, NULL, 8) == 0);
	long ep = syscall(SYS_epoll_create1, EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = sock};
	STEP("epoll_create1", ep >= 0);
	STEP("epoll_ctl", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, sock, &ev) == 0);
	STEP("epoll_wait", syscall(SYS_epoll_wait, ep, &ev, 1, 0) == 0);
	STEP("epoll_pwait", syscall(SYS_epoll_pwait, ep, &ev, 1, 0, NULL, 8) == 0);
	STEP("close", syscall(SYS_close, ep) == 0);
	struct timespec ts;
	struct timeval tv;
	struct timespec nap = {0, 1000};
	STEP("clock_gettime", syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) == 0);
	STEP("gettimeofday", syscall(SYS_gettimeofday, &tv, NULL) == 0);
	STEP("time", syscall(SYS_time, NULL) > 0);
	STEP("nanosleep", syscall(SYS_nanosleep, &nap, NULL) == 0);
	STEP("clock_nanosleep", syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &nap, NULL) == 0);
	sigset_t old;
	STEP("rt_sigprocmask", syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &old, 8) == 0);
	STEP("restart_syscall", syscall(SYS_restart_syscall) == -1 && errno == EINTR);
	STEP("brk", syscall(SYS_brk, 0) > 0);
	char *m = (char *)syscall(SYS_mmap, NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	STEP("mmap", m != MAP_FAILED);
	STEP("madvise", syscall(SYS_madvise, m, 8192, MADV_DONTNEED) == 0);
	m = (char *)syscall(SYS_mremap, m, 8192, 16384, MREMAP_MAYMOVE);
	STEP("mremap", m != MAP_FAILED);
	STEP("munmap", syscall(SYS_munmap, m, 16384) == 0);
	int word = 0;
	STEP("futex", syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) == 0);
	STEP("getpid", syscall(SYS_getpid) > 1);
	STEP("gettid", syscall(SYS_gettid) > 1);
	STEP("getrandom", syscall(SYS_getrandom, b, 4, 0) == 4);
	long fl = syscall(SYS_fcntl, sock, F_GETFL);
	STEP("fcntl F_GETFL", fl >= 0);
	STEP("fcntl F_SETFL", syscall(SYS_fcntl, sock, F_SETFL, fl | O_NONBLOCK) == 0 &&
				  syscall(SYS_fcntl, sock, F_SETFL, fl) == 0); /* blocking again for recvmsg */
	STEP("fcntl F_GETFD", syscall(SYS_fcntl, sock, F_GETFD) >= 0);
	STEP("fcntl F_SETFD", syscall(SYS_fcntl, sock, F_SETFD, FD_CLOEXEC) == 0);
	struct msghdr mh = {.msg_iov = &(struct iovec){"g", 1}, .msg_iovlen = 1};
	STEP("sendmsg", syscall(SYS_sendmsg, sock, &mh, 0) == 1);
	mh.msg_iov = &(struct iovec){b, 1};
	STEP("recvmsg", syscall(SYS_recvmsg, sock, &mh, 0) == 1 && b[0] == 'h');
	STEP("shutdown", syscall(SYS_shutdown, sock, SHUT_WR) == 0);
	/* rt_sigreturn: the parent signals us while we wait on the go pipe */
	while (read(go, b, 1) != 0 && !got_usr2)
		;
	STEP("rt_sigreturn", got_usr2);
	STEP("exit", 1);
	syscall(SYS_exit, 7); /* one thread: the process exits 7 */
}

static void test_allowlist_each_entry(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	int sv[2], go[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	struct spec s = {.body = do_allowlist, .keep = {sv[1], go[0]}, .nkeep = 2, .pre = pre_handler};
	struct run r = start(&s);
	close(sv[1]);
	close(go[0]);
	struct outcome oc;
	await_jail(&r, &oc);
	if (!oc.jailed)
		fail_msg("jail_enter failed: %s", oc.err);
	/* the other end of each I/O step; a short read means the child died: say where */
	char b[4];
	int ok = read_rep(sv[0], b, 2) == 2 && write(sv[0], "cd", 2) == 2		   /* writev, readv */
		 && read_rep(sv[0], b, 1) == 1 && write(sv[0], "f", 1) == 1		   /* sendto, recvfrom */
		 && read_rep(sv[0], b, 1) == 1 && b[0] == 'g' && write(sv[0], "h", 1) == 1 /* sendmsg, recvmsg */
		 && read_rep(sv[0], b, 1) == 0;						   /* shutdown: EOF */
	if (!ok) {
		close(go[1]);
		finish(&r, &oc);
		fail_msg("child status %#x after: %s", oc.status, oc.out);
	}
	assert_int_equal(kill(r.pid, SIGUSR2), 0);
	close(go[1]);
	finish(&r, &oc);
	close(sv[0]);
	if (WIFSIGNALED(oc.status))
		fail_msg("killed by signal %d after: %s", WTERMSIG(oc.status), oc.out);
	if (!WIFEXITED(oc.status) || WEXITSTATUS(oc.status) != 7)
		fail_msg("exited %d after: %s", WEXITSTATUS(oc.status), oc.out);
}

/* abort() stays a SIGABRT: SIGSYS keeps meaning "the filter fired". */
static void do_abort(const int *fds, void *arg)
{
	(void)arg;
	say(fds, "B");
	abort();
}

static void test_abort_is_sigabrt(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	struct spec s = {.body = do_abort};
	struct outcome oc;
	run_child(&s, &oc);
	assert_killed_by(&oc, SIGABRT, "abort()");
}

/* An extra syscall is allowed, and only when asked for: accept4 on a listening socket the
 * parent made, as the HTTP worker will get its listener. */
static void do_accept(const int *fds, void *arg)
{
	(void)arg;
	say(fds, "B");
	int c = accept4(fds[1], NULL, NULL, SOCK_CLOEXEC);
	if (c < 0 || write(c, "hi", 2) != 2)
		_exit(40);
	close(c);
}

static void accept_case(const struct jail_opts *o, struct outcome *oc, char *got)
{
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "assent-jail-test-%d", (int)getpid());
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
	assert_int_equal(bind(l, (struct sockaddr *)&a, alen), 0);
	assert_int_equal(listen(l, 4), 0);
	struct spec s = {.o = o, .body = do_accept, .keep = {l}, .nkeep = 1};
	struct run r = start(&s);
	await_jail(&r, oc);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* still listening here even if the child already died, so the connect cannot race it */
	assert_int_equal(connect(c, (struct sockaddr *)&a, alen), 0);
	finish(&r, oc);
	close(l);
	got[0] = 0;
	struct pollfd pf = {c, POLLIN, 0};
	if (poll(&pf, 1, 0) == 1) {
		ssize_t n = read(c, got, 2);
		got[n > 0 ? n : 0] = 0;
	}
	close(c);
}

static void test_extra_syscalls(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	static const int extra[] = {SCMP_SYS(accept4)};
	struct jail_opts with = {.max_fds = 64, .extra_syscalls = extra, .nextra = 1};
	struct jail_opts without = {.max_fds = 64};
	struct outcome oc;
	char got[4];
	accept_case(&with, &oc, got);
	assert_clean_exit(&oc, "accept4 allowed as extra");
	assert_string_equal(got, "hi");
	accept_case(&without, &oc, got);
	assert_killed_by(&oc, SIGSYS, "accept4 without the extra");
	assert_string_equal(oc.out, "B");
}

/* ---- what the parent can measure of a running jailed child ---- */

static void do_wait_parent(const int *fds, void *arg)
{
	(void)arg;
	char c;
	ssize_t n = read(fds[1], &c, 1); /* returns 0 when the parent closes its end */
	(void)n;
}

struct waiting {
	struct run r;
	int go; /* close to let the child finish */
};

static int start_waiting(const struct spec *base, struct waiting *w, struct outcome *oc)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct spec s = *base;
	s.body = do_wait_parent;
	s.keep[0] = p[0];
	s.nkeep = 1;
	w->r = start(&s);
	close(p[0]);
	w->go = p[1];
	await_jail(&w->r, oc);
	return oc->jailed;
}

static void finish_waiting(struct waiting *w, struct outcome *oc)
{
	close(w->go);
	finish(&w->r, oc);
	assert_clean_exit(oc, "waiting child");
}

/* One "Name:\tvalue" line of /proc/PID/status, value only. */
static void proc_status_field(pid_t pid, const char *name, char *out, size_t n)
{
	char path[64], text[16384];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t len = read(fd, text, sizeof text - 1);
	close(fd);
	assert_true(len > 0);
	text[len] = 0;
	size_t nl = strlen(name);
	for (char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, name, nl) && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (*v == '\t' || *v == ' ')
				v++;
			size_t k = strcspn(v, "\n");
			snprintf(out, n, "%.*s", (int)k, v);
			return;
		}
	}
	fail_msg("%s: no %s line", path, name);
}

/* Supplementary groups the jail must drop (root: 0 and disk). */
static void pre_groups(void)
{
	const gid_t g[2] = {0, 6};
	if (setgroups(2, g) != 0)
		_exit(95);
}

static void test_status_seccomp_nnp_uid(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	/* The reader itself, unjailed, so a parser that always said "2" would fail here. */
	int sc = -1, nnp = -1;
	uid_t uid = 12345;
	assert_int_equal(jail_status(getpid(), &sc, &nnp, &uid, NULL), 0);
	assert_int_equal(sc, 0);
	assert_int_equal(uid, getuid() == 0 || geteuid() == 0 ? 0 : getuid());

	struct spec s = {.pre = is_root() ? pre_groups : NULL};
	struct waiting w;
	struct outcome oc;
	if (!start_waiting(&s, &w, &oc))
		fail_msg("jail_enter failed: %s", oc.err);
	char err[AS_ERRLEN];
	if (jail_status(w.r.pid, &sc, &nnp, &uid, err) != 0)
		fail_msg("jail_status: %s", err);
	char raw[64], gid[64], groups[64], fdpath[64];
	struct stat fdst;
	snprintf(fdpath, sizeof fdpath, "/proc/%d/fd", (int)w.r.pid);
	assert_int_equal(stat(fdpath, &fdst), 0); /* root-owned when the process is not dumpable */
	proc_status_field(w.r.pid, "Seccomp", raw, sizeof raw);
	proc_status_field(w.r.pid, "Gid", gid, sizeof gid);
	proc_status_field(w.r.pid, "Groups", groups, sizeof groups);
	finish_waiting(&w, &oc);

	assert_string_equal(raw, "2");
	assert_int_equal(sc, 2); /* SECCOMP_MODE_FILTER */
	assert_int_equal(nnp, 1);
	if (is_root()) {
		assert_int_not_equal(uid, 0);
		assert_int_equal(uid, TEST_UID); /* its own, not nobody's */
		assert_string_equal(gid, "66100\t66100\t66100\t66100");
		assert_string_equal(groups, "");
		assert_int_equal(fdst.st_uid, 0);
	} else {
		assert_int_equal(uid, getuid());
	}
}

/* "Max open files   64   64   files" from /proc/PID/limits; unlimited as ULLONG_MAX. */
static void proc_limit(pid_t pid, const char *name, unsigned long long *soft, unsigned long long *hard)
{
	char path[64], text[8192];
	snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t len = read(fd, text, sizeof text - 1);
	close(fd);
	assert_true(len > 0);
	text[len] = 0;
	const char *line = strstr(text, name);
	if (!line)
		fail_msg("%s: no '%s' line", path, name);
	char a[32], b[32];
	assert_int_equal(sscanf(line + strlen(name), "%31s %31s", a, b), 2);
	*soft = strcmp(a, "unlimited") ? strtoull(a, NULL, 10) : ULLONG_MAX;
	*hard = strcmp(b, "unlimited") ? strtoull(b, NULL, 10) : ULLONG_MAX;
}

static void test_rlimits_applied(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	struct jail_opts o = {.max_fds = 37};
	struct spec s = {.o = &o};
	struct waiting w;
	struct outcome oc;
	if (!start_waiting(&s, &w, &oc))
		fail_msg("jail_enter failed: %s", oc.err);
	unsigned long long v[4][2];
	proc_limit(w.r.pid, "Max file size", &v[0][0], &v[0][1]);
	proc_limit(w.r.pid, "Max processes", &v[1][0], &v[1][1]);
	proc_limit(w.r.pid, "Max core file size", &v[2][0], &v[2][1]);
	proc_limit(w.r.pid, "Max open files", &v[3][0], &v[3][1]);
	finish_waiting(&w, &oc);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(v[i][0], 0);
		assert_int_equal(v[i][1], 0);
	}
	assert_int_equal(v[3][0], 37);
	assert_int_equal(v[3][1], 37);
}

/* The default root: a removed directory under /tmp, which is also the cwd. */
static void test_root_is_deleted_empty_dir(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	struct spec s = {0};
	struct waiting w;
	struct outcome oc;
	if (!start_waiting(&s, &w, &oc))
		fail_msg("jail_enter failed: %s", oc.err);
	char path[64], link[PATH_MAX] = "";
	struct stat root, cwd;
	snprintf(path, sizeof path, "/proc/%d/root", (int)w.r.pid);
	ssize_t n = readlink(path, link, sizeof link - 1);
	int rerr = errno;
	int rs = stat(path, &root);
	snprintf(path, sizeof path, "/proc/%d/cwd", (int)w.r.pid);
	int cs = stat(path, &cwd);
	finish_waiting(&w, &oc);
	if (!is_root()) {
		/* No chroot without privilege, and the link is out of reach: the child is not
		 * dumpable, so even its own uid (ours) may not follow it. */
		assert_true(n < 0);
		assert_int_equal(rerr, EACCES);
		return;
	}
	assert_true(n > 0);
	link[n] = 0;
	assert_int_equal(rs, 0);
	assert_int_equal(cs, 0);
	if (strncmp(link, "/tmp/assent-jail-", 17) != 0 || !strstr(link, " (deleted)"))
		fail_msg("root is '%s', expected a deleted /tmp/assent-jail-* directory", link);
	assert_true(S_ISDIR(root.st_mode));
	assert_int_equal(root.st_nlink, 0); /* removed: nothing can be created in it */
	assert_int_equal(root.st_uid, 0);
	assert_int_equal(root.st_mode & 0777, 0700);
	assert_int_equal(cwd.st_ino, root.st_ino);
	assert_int_equal(cwd.st_dev, root.st_dev);
}

/* A given empty directory becomes root and cwd. */
static void test_root_is_given_dir(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	if (!is_root())
		return; /* empty_dir is used only by root; CI runs this as root */
	char dir[] = "/tmp/jail-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	struct stat want;
	assert_int_equal(stat(dir, &want), 0);
	struct jail_opts o = {.max_fds = 64, .empty_dir = dir};
	struct spec s = {.o = &o};
	struct waiting w;
	struct outcome oc;
	int jailed = start_waiting(&s, &w, &oc);
	char path[64];
	struct stat root = {0}, cwd = {0};
	snprintf(path, sizeof path, "/proc/%d/root", (int)w.r.pid);
	int rs = stat(path, &root);
	snprintf(path, sizeof path, "/proc/%d/cwd", (int)w.r.pid);
	int cs = stat(path, &cwd);
	if (jailed)
		finish_waiting(&w, &oc);
	rmdir(dir);
	if (!jailed)
		fail_msg("jail_enter failed: %s", oc.err);
	assert_int_equal(rs, 0);
	assert_int_equal(cs, 0);
	assert_int_equal(root.st_ino, want.st_ino);
	assert_int_equal(root.st_dev, want.st_dev);
	assert_int_equal(cwd.st_ino, want.st_ino);
}

/* The unprivileged path: no chroot, no id change, the same filter. */
static void test_not_root_still_filtered(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	struct spec s = {.pre_drop = is_root()};
	struct waiting w;
	struct outcome oc;
	if (!start_waiting(&s, &w, &oc))
		fail_msg("jail_enter failed: %s", oc.err);
	int sc = -1, nnp = -1;
	uid_t uid = 0;
	assert_int_equal(jail_status(w.r.pid, &sc, &nnp, &uid, NULL), 0);
	finish_waiting(&w, &oc);
	assert_int_equal(sc, 2);
	assert_int_equal(nnp, 1);
	assert_int_equal(uid, is_root() ? NOBODY : getuid());

	struct spec k = {
	    .pre_drop = is_root(), .body = do_forbidden, .arg = &(struct forbidden){"openat (not root)", call_openat}};
	run_child(&k, &oc);
	assert_killed_by(&oc, SIGSYS, "openat (not root)");
}

/* No capabilities at all, in either path: not even in the bounding set (root's would let an
 * exec'd file capability back in; the not-root child empties its own in a user namespace). */
static void caps_case(int pre_drop)
{
	struct spec s = {.pre_drop = pre_drop};
	struct waiting w;
	struct outcome oc;
	if (!start_waiting(&s, &w, &oc))
		fail_msg("jail_enter failed (pre_drop %d): %s", pre_drop, oc.err);
	static const char *const names[] = {"CapBnd", "CapEff", "CapPrm", "CapInh", "CapAmb"};
	char v[5][64];
	for (size_t i = 0; i < 5; i++)
		proc_status_field(w.r.pid, names[i], v[i], sizeof v[i]);
	finish_waiting(&w, &oc);
	for (size_t i = 0; i < 5; i++)
		if (strcmp(v[i], "0000000000000000") != 0)
			fail_msg("%s child: %s is %s, expected 0000000000000000", pre_drop ? "not-root" : "default",
				 names[i], v[i]);
}

static void test_no_capabilities(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	char mine[64];
	proc_status_field(getpid(), "CapBnd", mine, sizeof mine);
	if (is_root()) /* so the children had something to drop */
		assert_string_not_equal(mine, "0000000000000000");
	caps_case(0);
	if (is_root())
		caps_case(1);
}

/* What an exec'd worker starts as: dumpable (execve resets it; the pre_drop uid change above
 * had cleared it). */
static void pre_dumpable(void)
{
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		_exit(95);
}

/* From another process running as `as` (the caller's uid when not root): PTRACE_SEIZE, then
 * PTRACE_ATTACH, /proc/PID/root, /proc/PID/mem and kill(pid, 0). Bit i of the result is set
 * when attempt i was refused. */
static int probe_as(pid_t pid, uid_t as)
{
	fflush(NULL);
	pid_t h = fork();
	assert_true(h >= 0);
	if (h == 0) {
		if (is_root() && (setgroups(0, NULL) != 0 || setresgid(as, as, as) != 0 || setresuid(as, as, as) != 0))
			_exit(255);
		int refused = 0;
		if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) != 0 && errno == EPERM)
			refused |= 1;
		if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) != 0 && errno == EPERM)
			refused |= 2;
		char path[64], link[256];
		snprintf(path, sizeof path, "/proc/%d/root", (int)pid);
		if (readlink(path, link, sizeof link) < 0 && errno == EACCES)
			refused |= 4;
		snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			refused |= 8;
		if (kill(pid, 0) != 0 && errno == EPERM)
			refused |= 16;
		_exit(refused);
	}
	int st = 0;
	assert_int_equal(waitpid(h, &st, 0), h);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 255);
	return WEXITSTATUS(st);
}

/* A jailed child cannot be traced or looked into by a process of its own uid: the not-root
 * path (the daemon as its own user, whose uid the workers keep), and as root by a process of
 * the worker's uid; as root, a process of another uid (nobody) cannot signal it either. */
static void test_not_dumpable(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	uid_t same = is_root() ? NOBODY : getuid();
	struct spec s = {.pre_drop = is_root(), .pre = pre_dumpable};
	struct waiting w;
	struct outcome oc;
	if (!start_waiting(&s, &w, &oc))
		fail_msg("jail_enter failed: %s", oc.err);
	int r = probe_as(w.r.pid, same);
	finish_waiting(&w, &oc);
	if ((r & 15) != 15)
		fail_msg("not-root child: a process of its uid %u got in (refused mask %#x, want 0xf)", (unsigned)same,
			 r);
	if (!is_root())
		return;
	struct spec d = {0};
	if (!start_waiting(&d, &w, &oc))
		fail_msg("jail_enter failed: %s", oc.err);
	int own = probe_as(w.r.pid, TEST_UID), other = probe_as(w.r.pid, NOBODY);
	finish_waiting(&w, &oc);
	if ((own & 15) != 15)
		fail_msg("root child: a process of its uid %u got in (refused mask %#x)", TEST_UID, own);
	if (other != 31)
		fail_msg("root child: nobody could trace, look into or signal it (refused mask %#x, want 0x1f)", other);
}

/* ---- an exec'd worker: fresh libraries, empty environment, as assentd starts one ---- */

/* Worker mode of this binary: jail, then use what glibc and jansson would otherwise set up
 * lazily with forbidden calls (stdio's first fstat, /etc/localtime, /dev/urandom, sysinfo). */
static int worker_main(void)
{
	struct jail_opts o = {.max_fds = 16};
	char err[AS_ERRLEN];
	if (geteuid() == 0)
		jail_set_ids(TEST_UID, TEST_UID);
	if (jail_enter(&o, err) != 0) {
		dprintf(1, "jail: %s\n", err);
		return 3;
	}
	time_t t = time(NULL);
	char when[64];
	if (!strftime(when, sizeof when, "%Y-%m-%d %H:%M %Z", localtime(&t)))
		return 4;
	json_t *obj = json_object();
	char key[16];
	for (int i = 199; i >= 0; i--) { /* inserted backwards, so sorting has work to do */
		snprintf(key, sizeof key, "k%03d", i);
		if (json_object_set_new(obj, key, json_integer(i)) != 0)
			return 5;
	}
	char *text = json_dumps(obj, JSON_SORT_KEYS | JSON_COMPACT); /* qsort of 1600 bytes */
	if (!text)
		return 6;
	printf("worker ok %.22s %zu %s\n", text, strlen(text), when);
	fprintf(stderr, "stderr too\n");
	free(text);
	json_decref(obj);
	return 0;
}

static void test_exec_worker_libraries(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(null, 2) < 0)
			_exit(97);
		close_range(3, ~0u, 0);
		char *const argv[] = {"jail_test", WORKER_ARG, NULL}, *const envp[] = {NULL};
		execve("/proc/self/exe", argv, envp);
		_exit(96);
	}
	close(p[1]);
	struct run r = {pid, p[0]};
	struct outcome oc = {.jailed = 1};
	finish(&r, &oc);
	if (WIFSIGNALED(oc.status))
		fail_msg("worker killed by signal %d; output '%s'", WTERMSIG(oc.status), oc.out);
	if (!WIFEXITED(oc.status) || WEXITSTATUS(oc.status) != 0)
		fail_msg("worker exited %d; output '%s'", WEXITSTATUS(oc.status), oc.out);
	/* 200 sorted keys: 2 braces, 200 * 7 for "kNNN":, 490 digits, 199 commas */
	if (strncmp(oc.out, "worker ok {\"k000\":0,\"k001\":1,\"k0 2091 ", 38) != 0)
		fail_msg("worker said '%s'", oc.out);
}

/* ---- refusals: checked before anything changes, so these run in every build ---- */

static void assert_refused(const struct outcome *oc, int code, const char *needle)
{
	if (oc->jailed)
		fail_msg("jail_enter accepted what it should refuse (%s)", needle);
	assert_int_equal(WIFEXITED(oc->status) ? WEXITSTATUS(oc->status) : -1, 99);
	if (oc->rc != code || !strstr(oc->err, needle))
		fail_msg("expected %d '%s', got %d '%s'", code, needle, oc->rc, oc->err);
	/* Refused in the checks: the process is exactly as it was. */
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(oc->after_sc, 0);
	assert_int_equal(oc->after_nnp, 0);
	assert_int_equal(oc->after_fsize, rl.rlim_cur == RLIM_INFINITY ? -1 : (long)rl.rlim_cur);
}

static void refused_with(const struct jail_opts *o, const int *keep, size_t nkeep, int code, const char *needle)
{
	struct spec s = {.o = o, .nkeep = nkeep};
	for (size_t i = 0; i < nkeep; i++)
		s.keep[i] = keep[i];
	struct outcome oc;
	run_child(&s, &oc);
	assert_refused(&oc, code, needle);
	assert_int_equal(oc.after_uid, (long)getuid());
}

static void test_refuses_file_descriptors(void **state)
{
	(void)state;
	struct jail_opts o = {.max_fds = 64};
	int f = open("/proc/self/exe", O_RDONLY | O_CLOEXEC); /* a regular file, like a key */
	assert_true(f >= 0);
	refused_with(&o, &f, 1, AS_EINVAL, "fd 4 is a regular file");
	close(f);
	int d = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* a way out of any chroot */
	assert_true(d >= 0);
	refused_with(&o, &d, 1, AS_EINVAL, "fd 4 is a directory");
	close(d);
	/* a stderr redirected to a log file would raise SIGXFSZ on the first write */
	char tmp[] = "/tmp/jail-test-log-XXXXXX";
	int log = mkstemp(tmp);
	assert_true(log >= 0);
	unlink(tmp);
	struct spec s = {.o = &o, .has_out = 1, .out_fd = log};
	struct outcome oc;
	run_child(&s, &oc);
	assert_refused(&oc, AS_EINVAL, "fd 1 is a regular file");
	close(log);
}

static void test_refuses_fd_above_max_fds(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct jail_opts o = {.max_fds = 4}; /* the child holds 0-3 and the pipe at 4 */
	refused_with(&o, p, 1, AS_EINVAL, "fd 4 is open but max_fds (RLIMIT_NOFILE) is 4");
	close(p[0]);
	close(p[1]);
}

static void test_refuses_bad_options(void **state)
{
	(void)state;
	/* start() stands in defaults for NULL options, so NULL is tried here, in the parent,
	 * where a refusal changes nothing. */
	char err[AS_ERRLEN] = "";
	assert_int_equal(jail_enter(NULL, err), AS_EINVAL);
	assert_non_null(strstr(err, "no options"));

	struct jail_opts o = {.max_fds = 0};
	refused_with(&o, NULL, 0, AS_EINVAL, "max_fds (RLIMIT_NOFILE) must be set");

	static const int exec_extra[] = {SCMP_SYS(accept4), SCMP_SYS(execve)};
	o = (struct jail_opts){.max_fds = 64, .extra_syscalls = exec_extra, .nextra = 2};
	refused_with(&o, NULL, 0, AS_EINVAL, "extra syscall execve is refused");
	static const int refused[] = {SCMP_SYS(openat), SCMP_SYS(socket),    SCMP_SYS(clone), SCMP_SYS(ptrace),
				      SCMP_SYS(kill),	SCMP_SYS(setresuid), SCMP_SYS(prctl), SCMP_SYS(io_uring_setup)};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		o = (struct jail_opts){.max_fds = 64, .extra_syscalls = &refused[i], .nextra = 1};
		refused_with(&o, NULL, 0, AS_EINVAL, "is refused: it would break the jail");
	}
	/* an unconditional mmap would undo the PROT_EXEC check (rules for one syscall are ORed) */
	static const int mmap_extra[] = {SCMP_SYS(mmap)};
	o = (struct jail_opts){.max_fds = 64, .extra_syscalls = mmap_extra, .nextra = 1};
	refused_with(&o, NULL, 0, AS_EINVAL, "extra syscall mmap is refused");
	static const int bogus[] = {99999};
	o = (struct jail_opts){.max_fds = 64, .extra_syscalls = bogus, .nextra = 1};
	refused_with(&o, NULL, 0, AS_EINVAL, "extra syscall 99999 is not a syscall");
	static const int negative[] = {-1};
	o = (struct jail_opts){.max_fds = 64, .extra_syscalls = negative, .nextra = 1};
	refused_with(&o, NULL, 0, AS_EINVAL, "extra syscall -1 is not a syscall");
	o = (struct jail_opts){.max_fds = 64, .extra_syscalls = NULL, .nextra = 1};
	refused_with(&o, NULL, 0, AS_EINVAL, "extra_syscalls is NULL");
	static int many[JAIL_MAX_EXTRA + 1];
	for (size_t i = 0; i < sizeof many / sizeof many[0]; i++)
		many[i] = SCMP_SYS(accept4);
	o = (struct jail_opts){.max_fds = 64, .extra_syscalls = many, .nextra = JAIL_MAX_EXTRA + 1};
	refused_with(&o, NULL, 0, AS_ETOOBIG, "65 extra syscalls, at most 64");
}

static void test_refuses_bad_empty_dir(void **state)
{
	(void)state;
	if (!is_root())
		return; /* empty_dir is used only by root; CI runs this as root */
	char dir[] = "/tmp/jail-test-XXXXXX", file[64], link[64];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	struct jail_opts o = {.max_fds = 64, .empty_dir = dir};

	snprintf(file, sizeof file, "%s/key", dir);
	int f = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(f >= 0);
	close(f);
	refused_with(&o, NULL, 0, AS_EINVAL, "is not empty");
	assert_int_equal(unlink(file), 0);

	assert_int_equal(chmod(dir, 01777), 0);
	refused_with(&o, NULL, 0, AS_EINVAL, "must be owned by root and not group/other writable");
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
	refused_with(&o, NULL, 0, AS_EINVAL, "(owner 65534, mode 0755)");
	assert_int_equal(chown(dir, 0, 0), 0);

	snprintf(link, sizeof link, "%s.lnk", dir);
	assert_int_equal(symlink(dir, link), 0);
	o.empty_dir = link;
	refused_with(&o, NULL, 0, AS_EIO, "Not a directory"); /* O_NOFOLLOW | O_DIRECTORY */
	unlink(link);
	o.empty_dir = "/nonexistent/assent-jail";
	refused_with(&o, NULL, 0, AS_EIO, "No such file or directory");
	rmdir(dir);
}

static void test_refuses_id_change_when_not_root(void **state)
{
	(void)state;
	struct jail_opts o = {.max_fds = 64, .uid = 1234};
	struct spec s = {.o = &o, .pre_drop = is_root()};
	struct outcome oc;
	run_child(&s, &oc);
	assert_refused(&oc, AS_EINVAL, "not root");
	assert_int_equal(oc.after_uid, is_root() ? NOBODY : (long)getuid());
}

static void test_jail_status_reader(void **state)
{
	(void)state;
	int sc = -1, nnp = -1;
	uid_t uid = 1;
	char err[AS_ERRLEN];
	assert_int_equal(jail_status(getpid(), &sc, &nnp, &uid, err), 0);
	assert_int_equal(sc, 0);
	assert_int_equal(nnp, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	assert_int_equal(jail_status(getpid(), NULL, NULL, NULL, err), 0);
	/* a process that is gone */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(jail_status(pid, &sc, &nnp, &uid, err), AS_ENOTFOUND);
	assert_non_null(strstr(err, "/status"));
}

/* The Landlock ruleset alone (the seccomp filter would kill these calls before Landlock is
 * asked): no path opened, created or removed, no TCP port bound or connected and, ABI 6+,
 * no signal to a process outside the domain. Bit i of the exit status: attempt i refused. */
static int landlock_child(void)
{
	int abi = 0;
	char err[AS_ERRLEN];
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || jail_landlock_self(&abi, err) != 0)
		return 200;
	int r = 0;
	if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) < 0 && errno == EACCES)
		r |= 1;
	char d[64];
	snprintf(d, sizeof d, "/tmp/jail-ll-%d", (int)getpid());
	if (mkdir(d, 0700) != 0 && errno == EACCES)
		r |= 2;
	if (open("/proc/self/status", O_RDONLY | O_CLOEXEC) < 0 && errno == EACCES)
		r |= 4;
	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (abi < 4 || (t >= 0 && bind(t, (struct sockaddr *)&a, sizeof a) != 0 && errno == EACCES))
		r |= 8;
	a.sin_port = htons(9);
	if (abi < 4 || (t >= 0 && connect(t, (struct sockaddr *)&a, sizeof a) != 0 && errno == EACCES))
		r |= 16;
	if (abi < 6 || (kill(getppid(), 0) != 0 && errno == EPERM))
		r |= 32;
	return r;
}

static void test_landlock_allows_nothing(void **state)
{
	(void)state;
	PLAIN_BUILD_ONLY();
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(landlock_child());
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 200)
		fail_msg("jail_landlock_self failed: the kernel has no Landlock, or the ruleset was refused");
	if (WEXITSTATUS(st) != 63)
		fail_msg("Landlock let something through: refused mask %#x, want 0x3f "
			 "(open, mkdir, /proc, TCP bind, TCP connect, signal)",
			 WEXITSTATUS(st));
}

/* As root, no ids to drop to is refused: no silent fallback to a shared uid. */
static void test_root_needs_own_ids(void **state)
{
	(void)state;
	if (!is_root())
		return; /* the ids are used only by root; CI runs this as root */
	struct spec s = {.no_ids = 1};
	struct outcome oc;
	run_child(&s, &oc);
	assert_refused(&oc, AS_EINVAL, "no uid and gid of the worker's own");
}

/* The signer's choice of worker uids. */
static void test_worker_uid(void **state)
{
	(void)state;
	uid_t u = 0;
	char err[AS_ERRLEN];
	assert_int_equal(jail_worker_uid(NULL, 0, &u, err), 0);
	assert_int_equal(u, JAIL_WORKER_UID_DEFAULT);
	assert_int_equal(jail_worker_uid("", 1, &u, err), 0);
	assert_int_equal(u, JAIL_WORKER_UID_DEFAULT + 1);
	assert_int_equal(jail_worker_uid("70000", 1, &u, err), 0);
	assert_int_equal(u, 70001);
	assert_int_equal(jail_worker_uid("65530", 0, &u, err), AS_EINVAL); /* would reach nobody */
	assert_non_null(strstr(err, "65534"));
	assert_int_equal(jail_worker_uid("0", 0, &u, err), AS_EINVAL);
	assert_int_equal(jail_worker_uid("4294967290", 0, &u, err), AS_EINVAL);
	assert_int_equal(jail_worker_uid("12x", 0, &u, err), AS_EINVAL);
	assert_int_equal(jail_worker_uid(NULL, JAIL_WORKER_KINDS, &u, err), AS_EINVAL);
	/* uid 1 is the account "daemon" on Debian: a uid other processes run as */
	assert_int_equal(jail_worker_uid("1", 0, &u, err), AS_EINVAL);
	assert_non_null(strstr(err, "is the account"));
}

#if JAIL_SAN
#define JAILED(f)                                                                                                      \
	{                                                                                                              \
#f " # SKIP jailing is tested in the plain build (the ASan runtime trips the filter)", f, NULL, NULL,  \
		    NULL                                                                                               \
	}
#else
#define JAILED(f) cmocka_unit_test(f)
#endif

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], WORKER_ARG))
		return worker_main();
	const struct CMUnitTest tests[] = {
	    JAILED(test_openat_killed),
	    JAILED(test_socket_killed),
	    JAILED(test_execve_killed),
	    JAILED(test_ptrace_killed),
	    JAILED(test_mmap_exec_killed),
	    JAILED(test_fork_killed),
	    JAILED(test_more_forbidden_killed),
	    JAILED(test_arguments_checked),
	    JAILED(test_arguments_allowed),
	    JAILED(test_other_threads_filtered),
	    JAILED(test_pipe_io_allowed),
	    JAILED(test_scm_rights_allowed),
	    JAILED(test_memory_allowed),
	    JAILED(test_allowlist_each_entry),
	    JAILED(test_abort_is_sigabrt),
	    JAILED(test_extra_syscalls),
	    JAILED(test_status_seccomp_nnp_uid),
	    JAILED(test_rlimits_applied),
	    JAILED(test_root_is_deleted_empty_dir),
	    JAILED(test_root_is_given_dir),
	    JAILED(test_not_root_still_filtered),
	    JAILED(test_no_capabilities),
	    JAILED(test_not_dumpable),
	    JAILED(test_landlock_allows_nothing),
	    JAILED(test_exec_worker_libraries),
	    cmocka_unit_test(test_refuses_file_descriptors),
	    cmocka_unit_test(test_refuses_fd_above_max_fds),
	    cmocka_unit_test(test_refuses_bad_options),
	    cmocka_unit_test(test_refuses_bad_empty_dir),
	    cmocka_unit_test(test_refuses_id_change_when_not_root),
	    cmocka_unit_test(test_jail_status_reader),
	    cmocka_unit_test(test_root_needs_own_ids),
	    cmocka_unit_test(test_worker_uid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
