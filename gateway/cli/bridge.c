/* The stdio bridge: relays bytes, starts the daemon when none runs, and says so
 * when the running daemon was started with other options than this bridge. It
 * parses nothing an agent sends. */
#define _GNU_SOURCE
#include "gateway/cli/bridge.h"
#include "gateway/state/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gateway/proto/limits.h"
#include "gateway/state/token.h"
#include "common/util.h"

/* Start the daemon detached: its own session, stdin from /dev/null, output to
 * STATE/assentd.log. It is always told it is the daemon (--daemon): it inherits this
 * bridge's environment (FEEDBACK_*, read before its workers start; the workers get
 * none of it), and a FEEDBACK_TRANSPORT=stdio there must not make it another bridge,
 * which would start another (the fork loop of a copied client configuration). One
 * fork, not two: the bridge waits for this child and sees it exit. Returns its pid,
 * or -1 with the reason in err; *log_off is where its lines begin in the log. */
static pid_t start_daemon(const struct bridge_opts *o, off_t *log_off, char *err)
{
	char log[4200];
	snprintf(log, sizeof log, "%s/assentd.log", o->state);
	int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	struct stat st;
	if (out < 0 || fstat(out, &st) != 0) {
		snprintf(err, AS_ERRLEN, "cannot write its log assentd.log there: %s", strerror(errno));
		if (out >= 0)
			close(out);
		return -1;
	}
	*log_off = st.st_size;
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, AS_ERRLEN, "cannot start a process: %s", strerror(errno));
		close(out);
		return -1;
	}
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (setsid() < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		char *argv[10] = {"assentd", "--daemon", "--state", (char *)o->state};
		int n = 4;
		if (o->single_user)
			argv[n++] = "--single-user";
		if (o->policy) {
			argv[n++] = "--policy";
			argv[n++] = (char *)o->policy;
		}
		if (o->upstreams) {
			argv[n++] = "--upstreams";
			argv[n++] = (char *)o->upstreams;
		}
		execv(o->daemon_path, argv);
		fprintf(stderr, "assentd --stdio: cannot run %s: %s\n", o->daemon_path, strerror(errno));
		_exit(127);
	}
	close(out);
	return pid;
}

/* Another daemon holds the state directory's lock (two bridges raced: ours lost). */
static int lock_held(const char *state)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/" STATE_LOCK_FILE, state);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* Why the daemon stopped: the message of the last line it logged (a JSON line, or
 * raw text), bounded. */
static void daemon_why(const char *state, off_t off, char *why, size_t cap)
{
	char path[4200], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/assentd.log", state);
	snprintf(why, cap, "it logged nothing");
	struct buf b;
	if (file_read(path, 1 << 20, &b, err) != 0)
		return;
	size_t from = off >= 0 && (size_t)off <= b.len ? (size_t)off : 0, end = b.len;
	while (end > from && (b.p[end - 1] == '\n' || b.p[end - 1] == '\r'))
		end--;
	size_t start = end;
	while (start > from && b.p[start - 1] != '\n')
		start--;
	if (end > start) {
		json_t *j = json_loadb((const char *)b.p + start, end - start, 0, NULL);
		const char *m = json_string_value(json_object_get(j, "msg"));
		if (m)
			snprintf(why, cap, "%.300s", m);
		else
			snprintf(why, cap, "%.*s", (int)(end - start > 300 ? 300 : end - start),
				 (const char *)b.p + start);
		json_decref(j);
	}
	buf_free(&b);
}

/* The daemon this bridge started has exited (status st): say why, from its log. */
static void say_exit(const struct bridge_opts *o, int st, off_t log_off, const char *when)
{
	char why[400];
	daemon_why(o->state, log_off, why, sizeof why);
	fprintf(stderr, "assentd --stdio: the daemon it started for %s exited (%s %d) %s: %s (see %s/assentd.log)\n",
		o->state, WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), when,
		why, o->state);
}

/* Wait for the daemon this bridge started to listen. It is started once: if it
 * exits first, the bridge says why, unless another daemon won the state directory,
 * whose socket it then waits for. */
static int wait_daemon(const struct bridge_opts *o, const char *sock, pid_t pid, off_t log_off)
{
	int fd = -1, waited = 0, limit = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000, st = 0;
	while ((fd = unix_connect(sock)) < 0 && waited < limit) {
		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
			pid = -1;
			if (!lock_held(o->state)) {
				say_exit(o, st, log_off, "before it listened");
				return -2;
			}
		}
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
		waited += 20;
	}
	return fd;
}

/* The daemon closed the connection. One this bridge started may have stopped on
 * its configuration after it listened (a weak FEEDBACK_TOKEN_SECRET is found once
 * its workers run): give it a second to exit, and say why it did. */
static void after_close(const struct bridge_opts *o, pid_t pid, off_t log_off)
{
	int st = 0;
	for (int i = 0; pid > 0 && i < 50; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			say_exit(o, st, log_off, "after it listened");
			return;
		}
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "assentd --stdio: the daemon for %s closed the connection (see %s/assentd.log)\n", o->state,
		o->state);
}

/* The bridge's own FEEDBACK_INSIGHTS_ENABLED (a client's env block) against the running
 * daemon's, which is the daemon's alone to change: said, never silently ignored. */
static void check_insights(const json_t *info, long long pid)
{
	const char *v = getenv("FEEDBACK_INSIGHTS_ENABLED");
	const json_t *d = json_object_get(info, "insights");
	if (!v || !*v || !json_is_boolean(d))
		return;
	int mine = !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes");
	if (mine != json_is_true(d))
		fprintf(stderr,
			"assentd --stdio: the running daemon (pid %lld) has usage insights %s, not %s as this bridge's "
			"FEEDBACK_INSIGHTS_ENABLED says; stop it to change them\n",
			pid, json_is_true(d) ? "on" : "off", mine ? "on" : "off");
}

/* Compare what this bridge was started with to what the daemon says it runs with. A
 * daemon this bridge started runs with its options (and its assentd.json may still be
 * the previous run's); one whose pid no longer runs wrote a stale file: nothing to say. */
static void check_options(const struct bridge_opts *o, pid_t started)
{
	if (started > 0)
		return;
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
	if (pid <= 0 || pid > INT_MAX || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
		json_decref(j);
		return;
	}
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
	check_insights(j, pid);
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

/* The client's own FEEDBACK_TIMEOUT_SECONDS (its configuration's env block) is this
 * connection's default deadline, whatever the running daemon was started with: told
 * to the daemon in the connection's first line, before any byte of the client's. The
 * daemon caps it as it caps a timeout_override (ASSENT_MAX_TIMEOUT_SECONDS). */
static int send_defaults(int sock)
{
	const char *t = getenv("FEEDBACK_TIMEOUT_SECONDS");
	uint64_t v = 0;
	if (!t || !*t)
		return 0;
	if (parse_u64(t, &v) != 0 || v == 0 || v > MCP_TIMEOUT_MAX) {
		fprintf(stderr,
			"assentd --stdio: FEEDBACK_TIMEOUT_SECONDS must be 1 to %d, not '%.16s': this client's "
			"requests wait the daemon's default\n",
			MCP_TIMEOUT_MAX, t);
		return 0;
	}
	char line[128];
	int n = snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/assent/defaults\","
			 "\"params\":{\"timeoutSeconds\":%llu}}\n",
			 (unsigned long long)v);
	for (int off = 0; off < n;) {
		ssize_t w = write(sock, line + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (int)w;
	}
	return 0;
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
	int fd = unix_connect(path);
	pid_t pid = -1;
	off_t log_off = 0;
	if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED)) {
		if ((pid = start_daemon(o, &log_off, err)) < 0) {
			fprintf(stderr, "assentd --stdio: cannot start the daemon for %s: %s\n", o->state, err);
			return 1;
		}
		if ((fd = wait_daemon(o, path, pid, log_off)) == -2)
			return 1;
		if (fd >= 0 && !o->single_user) /* a one-person trial would find nothing it can approve */
			fprintf(
			    stderr,
			    "assentd --stdio: started the daemon for %s (pid %d, log %s/assentd.log) in multi-user "
			    "mode: a reviewer with this agent's own uid cannot approve its requests; for a one-person "
			    "trial put ASSENT_SINGLE_USER=1 in the client's env (or start it with make run)\n",
			    o->state, (int)pid, o->state);
	}
	if (fd < 0) {
		fprintf(stderr, "assentd --stdio: cannot reach the daemon at %s: %s (see %s/assentd.log)\n", path,
			strerror(errno), o->state);
		return 1;
	}
	check_options(o, pid);
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
	int rc = send_defaults(fd) == 0 ? relay(fd) : 1;
	close(fd);
	if (rc != 0)
		after_close(o, pid, log_off);
	return rc;
}
