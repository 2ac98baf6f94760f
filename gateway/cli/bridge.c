/* The stdio bridge: relays bytes, starts the daemon when none runs, and says so
 * when the running daemon was started with other options than this bridge. It
 * parses nothing an agent sends. */
#define _GNU_SOURCE
#include "gateway/cli/bridge.h"
#include "gateway/signer/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gateway/signer/token.h"
#include "common/util.h"

static int try_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Start the daemon detached: its own session, stdin from /dev/null, output to
 * STATE/assentd.log. It inherits this bridge's environment (FEEDBACK_*), which it
 * reads before its workers start; the workers get none of it. */
static int start_daemon(const struct bridge_opts *o)
{
	char log[4200];
	snprintf(log, sizeof log, "%s/assentd.log", o->state);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setsid() < 0)
			_exit(1);
		pid_t p2 = fork();
		if (p2 != 0)
			_exit(p2 < 0);
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(1);
		char *argv[8] = {"assentd", "--state", (char *)o->state};
		int n = 3;
		if (o->policy) {
			argv[n++] = "--policy";
			argv[n++] = (char *)o->policy;
		}
		if (o->upstreams) {
			argv[n++] = "--upstreams";
			argv[n++] = (char *)o->upstreams;
		}
		execv(o->daemon_path, argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Compare what this bridge was started with to what the daemon says it runs with. */
static void check_options(const struct bridge_opts *o)
{
	char path[4200], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/%s", o->state, STATE_INFO_FILE);
	struct buf b;
	if (file_read(path, 65536, &b, err) != 0)
		return;
	json_error_t je;
	json_t *j = json_loadb((const char *)b.p, b.len, 0, &je);
	buf_free(&b);
	if (!j)
		return;
	const char *dpol = json_string_value(json_object_get(j, "policy"));
	const char *dup = json_string_value(json_object_get(j, "upstreams"));
	const char *dmode = json_string_value(json_object_get(j, "token_mode"));
	const char *dkid = json_string_value(json_object_get(j, "token_secret_kid"));
	long long pid = json_integer_value(json_object_get(j, "pid"));
	char rp[4096];
	const char *mine = o->policy && realpath(o->policy, rp) ? rp : o->policy;
	if ((mine || dpol) && (!mine || !dpol || strcmp(mine, dpol) != 0))
		fprintf(stderr,
			"assentd --stdio: the running daemon (pid %lld) uses policy %s, not %s as this bridge was "
			"started; stop it (kill %lld) to change it\n",
			pid, dpol ? dpol : "(built-in: every request waits for a person)", mine ? mine : "(built-in)",
			pid);
	char ru[4096];
	const char *myup = o->upstreams && realpath(o->upstreams, ru) ? ru : o->upstreams;
	if ((myup || dup) && (!myup || !dup || strcmp(myup, dup) != 0))
		fprintf(stderr,
			"assentd --stdio: the running daemon (pid %lld) serves upstreams %s, not %s as this bridge was "
			"started; stop it (kill %lld) to change them\n",
			pid, dup ? dup : "(none)", myup ? myup : "(none)", pid);
	struct tok_config c;
	char e2[AS_ERRLEN];
	if (tok_config_from_env(&c, e2) == 0) {
		const char *m = c.mode == TOK_ES256 ? "ES256" : c.mode == TOK_HS256 ? "HS256" : "off";
		char kid[24] = "";
		if (c.mode == TOK_HS256)
			hs256_kid(c.secret, c.secret_len, kid);
		if (dmode && strcmp(m, dmode) != 0)
			fprintf(stderr,
				"assentd --stdio: the running daemon (pid %lld) signs tokens %s, not %s as this "
				"bridge's FEEDBACK_SIGN_TOKENS says; stop it to change it\n",
				pid, dmode, m);
		else if (c.mode == TOK_HS256 && dkid && strcmp(kid, dkid) != 0)
			fprintf(stderr,
				"assentd --stdio: the running daemon (pid %lld) uses another "
				"FEEDBACK_TOKEN_SECRET than this bridge; stop it to change it\n",
				pid);
		tok_config_clear(&c);
	}
	json_decref(j);
}

static int relay(int sock)
{
	char buf[65536];
	struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(p[i].fd, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return i == 0 ? 0 : 1; /* stdin ended: the client is gone; the daemon went: fail */
			int to = i == 0 ? sock : 1;
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(to, buf + off, (size_t)(n - off));
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					return 1;
				off += w;
			}
		}
	}
}

int bridge_run(const struct bridge_opts *o)
{
	char path[4200], err[AS_ERRLEN];
	signal(SIGPIPE, SIG_IGN);
	if (mkdir_p(o->state, 0700, err) != 0) {
		fprintf(stderr, "assentd --stdio: %s\n", err);
		return 2;
	}
	snprintf(path, sizeof path, "%s/%s", o->state, STATE_AGENT_SOCK);
	int fd = try_connect(path);
	if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED)) {
		if (start_daemon(o) != 0) {
			fprintf(stderr, "assentd --stdio: cannot start the daemon for %s (see %s/assentd.log)\n",
				o->state, o->state);
			return 1;
		}
		int waited = 0, limit = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000;
		while ((fd = try_connect(path)) < 0 && waited < limit) {
			struct timespec ts = {0, 20 * 1000000};
			nanosleep(&ts, NULL);
			waited += 20;
		}
	}
	if (fd < 0) {
		fprintf(stderr, "assentd --stdio: cannot reach the daemon at %s: %s (see %s/assentd.log)\n", path,
			strerror(errno), o->state);
		return 1;
	}
	check_options(o);
	struct registry *reg = NULL;
	char rerr[AS_ERRLEN];
	if (registry_load(o->state, &reg, rerr) == 0 &&
	    !registry_reviewer_name(reg, 0)) /* unreadable: not ours to say */
		fprintf(
		    stderr,
		    "assentd --stdio: WARNING: no reviewer is registered for %s: requests that wait for a person can "
		    "only time out. An operator adds one: assent --state %s reviewer add NAME --uid %u\n",
		    o->state, o->state, (unsigned)getuid());
	registry_free(reg);
	int rc = relay(fd);
	close(fd);
	return rc;
}
