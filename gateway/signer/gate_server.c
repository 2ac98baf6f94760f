/* The gate's servers (gate.c): each upstream's configuration resolved, its server started
 * with its own environment and uid and a jailed upstream worker on its pipes (stdio), or
 * the worker alone with sockets the signer connects (url); their stderr logged, their
 * exits reaped and restarted with backoff. */
#define _GNU_SOURCE
#include "gateway/signer/gate_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- starting the servers ---- */

static int resolve(struct signer *s, size_t i)
{
	const struct upstream *u = &s->gate.ups->u[i];
	char port[8];
	snprintf(port, sizeof port, "%u", (unsigned)u->port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
	int rc = getaddrinfo(u->host, port, &hints, &res);
	if (rc != 0 || !res || res->ai_addrlen > sizeof s->gate.up[i].addr) {
		slog("error", "%s: server \"%s\": cannot resolve %s: %s", s->o->upstreams, u->name, u->host,
		     rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return -1;
	}
	memcpy(&s->gate.up[i].addr, res->ai_addr, res->ai_addrlen);
	s->gate.up[i].addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* A url upstream's configuration for its worker: where (scheme, host, port, path), with
 * which headers (its credentials: to this worker only) and which CA. */
int gate_config(struct signer *s, int k, struct cv_arena *a, struct cv *f)
{
	const struct upstream *u = s->gate.up[k - W_UP0].cfg;
	if (u->kind != UP_HTTP)
		return 0;
	struct cv *m = cv_map(a, u->ca ? 6 : 5), *hs = cv_array(a, u->nheaders), *slot = ipc_put(a, f, "url");
	if (!m || !hs || !slot)
		return AS_ENOMEM;
	size_t i = 0;
	int rc = kv_text(a, m, &i, "scheme", u->scheme, strlen(u->scheme)) |
		 kv_text(a, m, &i, "host", u->host, strlen(u->host)) | kv_uint(a, m, &i, "port", u->port) |
		 kv_text(a, m, &i, "path", u->path, strlen(u->path));
	if (u->ca)
		rc |= kv_text(a, m, &i, "ca", u->ca, strlen(u->ca));
	for (size_t h = 0; h < u->nheaders && !rc; h++) {
		struct cv *p = cv_array(a, 2);
		rc = !p || slot_text(a, &p->items[0], u->headers[h].key, strlen(u->headers[h].key)) ||
		     slot_text(a, &p->items[1], u->headers[h].value, strlen(u->headers[h].value));
		if (!rc)
			hs->items[h] = *p;
	}
	struct cv *x = kv(a, m, &i, "headers");
	if (!x)
		return AS_ENOMEM;
	*x = *hs;
	m->n = i;
	*slot = *m;
	return rc ? AS_ENOMEM : 0;
}

/* A url upstream's worker asks for a connection: the signer makes it, to the one address
 * resolved at start (a compromised worker reaches that server and nothing else), at most
 * 32 in ten seconds. */
int h_up_connect(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	(void)f;
	struct upw *u = upw_of(s, s->cur);
	if (!u || u->cfg->kind != UP_HTTP)
		return as_fail(err, AS_ECORRUPT, "F_UP_CONNECT from a worker of no url upstream");
	uint64_t now = now_ms();
	if (now - u->conn_window > 10000) {
		u->conn_window = now;
		u->conns = 0;
	}
	if (++u->conns > 32) {
		if (u->conns == 33)
			slog("warning",
			     "upstream %s: its worker asks for more than 32 connections in ten seconds: refused",
			     u->cfg->name);
		return 0;
	}
	int fd = socket(u->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
	    (connect(fd, (const struct sockaddr *)&u->addr, u->addrlen) != 0 && errno != EINPROGRESS)) {
		slog("warning", "upstream %s: cannot connect to %s:%u: %s", u->cfg->name, u->cfg->host,
		     (unsigned)u->cfg->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0; /* the worker asks again */
	}
	struct cv_arena a;
	cv_arena_init(&a, 8);
	struct cv *sf = ipc_frame_new(&a, F_UP_SOCKET, 0);
	char e2[AS_ERRLEN];
	if (sf && ipc_conn_send(&s->w[s->cur].ipc, sf, fd, e2) != 0)
		slog("warning", "upstream %s: a connection could not be handed over: %s", u->cfg->name, e2);
	cv_arena_free(&a);
	close(fd);
	return 0;
}

/* An upstream's worker (worker_kind): a stdio server is started first, by the signer, with the
 * environment the upstreams file gives it, and its worker gets its pipes; the configuration
 * names the server and, for a url, how to reach it; its end ends its server and its calls. */
static int up_prepare(struct signer *s, int k, struct spawn *sp)
{
	if (s->gate.up[k - W_UP0].cfg->kind != UP_STDIO)
		return 0;
	if (gate_spawn_server(s, k, &sp->l1, &sp->l2) != 0) {
		slog("error", "upstream worker %d: cannot start its server", k - W_UP0);
		return -1;
	}
	sp->owned = 1;
	return 0;
}

static int up_config(struct signer *s, int k, struct cv_arena *a, struct cv **f)
{
	const char *nm = s->gate.up[k - W_UP0].cfg->name;
	struct cv *uf = ipc_frame_new(a, F_CONFIG, 2);
	if (!uf || ipc_put_text(a, uf, "name", nm, strlen(nm)) || gate_config(s, k, a, uf))
		return -1;
	*f = uf;
	return 0;
}

static void up_down(struct signer *s, int k, const char *why)
{
	gate_worker_down(s, k, why); /* its server and its calls in flight */
	if ((size_t)(k - W_UP0) < s->gate.nup)
		rec_event(s, "upstream.restarted", s->gate.up[k - W_UP0].cfg->name,
			  json_pack("{s:s,s:I}", "reason", why, "restarts", (json_int_t)s->w[k].restarts_total + 1));
}

/* DEBUG: its worker started. The upstream's name only: a url may carry a credential, a
 * command's arguments too. */
static void up_started(const struct signer *s, int k, pid_t pid)
{
	const struct upstream *u = s->gate.up[k - W_UP0].cfg;
	slog("debug", "upstream %s: its worker started (pid %d, %s)", u->name, (int)pid,
	     u->kind == UP_STDIO ? "stdio server" : "url server");
}

static const struct worker_kind up_kind = {up_prepare, up_config, up_down, up_started};

void gate_kinds(struct signer *s)
{
	for (size_t i = 0; i < s->gate.nup; i++)
		worker_kind(s, W_UP0 + (int)i, &up_kind);
}

int gate_start(struct signer *s)
{
	char err[AS_ERRLEN];
	const char *t = getenv("ASSENT_UPSTREAM_CALL_TIMEOUT");
	uint64_t v = 300;
	if (t && *t && (parse_u64(t, &v) != 0 || v < 1 || v > 86400)) {
		slog("error", "ASSENT_UPSTREAM_CALL_TIMEOUT=%.32s: expected seconds from 1 to 86400", t);
		return 2;
	}
	s->gate.call_timeout_s = (unsigned)v;
	if (!s->o->upstreams)
		return 0;
	if (upstreams_load(s->o->upstreams, &s->gate.ups, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (s->gate.ups->n > UP_WORKERS) {
		slog("error", "%s: %zu servers; the gate serves at most %d (one jailed worker, and uid, each)",
		     s->o->upstreams, s->gate.ups->n, UP_WORKERS);
		return 2;
	}

	if (!(s->gate.gcalls = calloc(GCALLS_MAX, sizeof *s->gate.gcalls)) ||
	    !(s->gate.asks = calloc(GASKS_MAX, sizeof *s->gate.asks))) {
		slog("error", "out of memory");
		return 2;
	}
	s->gate.nup = s->gate.ups->n;
	for (size_t i = 0; i < s->gate.nup; i++)
		if (s->gate.ups->u[i].kind == UP_STDIO && geteuid() == 0 && !s->gate.ups->u[i].has_uid)
			slog("warning", "upstream %s: its server runs as root (its entry names no \"uid\" to run as)",
			     s->gate.ups->u[i].name);
	gate_kinds(s);
	for (size_t i = 0; i < s->gate.nup; i++) {
		s->gate.up[i] = (struct upw){.cfg = &s->gate.ups->u[i], .err_fd = -1};
		/* a url's address is resolved once, now: its worker reaches that alone */
		if (s->gate.ups->u[i].kind == UP_HTTP && resolve(s, i) != 0)
			return 2;
		s->w[W_UP0 + i] = (struct worker){.kind = "upstream", .fd = -1};
		if (spawn_worker(s, W_UP0 + (int)i) != 0) {
			slog("error", "cannot start the worker of upstream %s", s->gate.up[i].cfg->name);
			return 2;
		}
	}
	slog("info", "gate: %zu upstream servers from %s", s->gate.nup, s->o->upstreams);
	return 0;
}

/* The server's environment: exactly what the file gives, plus PATH and HOME from the
 * daemon's own when the file names neither (a client starts `npx` so too). */
static char **server_env(const struct upstream *u)
{
	char **e = calloc(u->nenv + 3, sizeof *e);
	size_t n = 0;
	int has_path = 0, has_home = 0;
	for (size_t i = 0; e && i < u->nenv; i++) {
		has_path |= !strcmp(u->env[i].key, "PATH");
		has_home |= !strcmp(u->env[i].key, "HOME");
		if (asprintf(&e[n], "%s=%s", u->env[i].key, u->env[i].value) < 0)
			return NULL; /* in the child, about to exit */
		n++;
	}
	const char *p = getenv("PATH"), *h = getenv("HOME");
	if (e && !has_path && asprintf(&e[n], "PATH=%s", p ? p : "/usr/local/bin:/usr/bin:/bin") >= 0)
		n++;
	if (e && !has_home && h && asprintf(&e[n], "HOME=%s", h) >= 0)
		n++;
	return e;
}

/* The child: its own process group (so that it is stopped whole), the pipes as 0-2, its
 * directory and uid, its environment, then the command. Runs between fork and exec
 * only: the signer's memory is replaced at exec, so the server never holds a key. */
static void server_exec(const struct upstream *u, int in, int out, int errw, pid_t signer)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (setpgid(0, 0) != 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errw, 2) < 0)
		_exit(126);
	closefrom(3);
	if (u->cwd && chdir(u->cwd) != 0) {
		dprintf(2, "assent: cannot enter %s: %s\n", u->cwd, strerror(errno));
		_exit(126);
	}
	if (geteuid() == 0 && u->has_uid &&
	    (setgroups(0, NULL) != 0 || setgid((gid_t)u->uid) != 0 || setuid(u->uid) != 0 || setuid(0) == 0)) {
		dprintf(2, "assent: cannot run as uid %u\n", (unsigned)u->uid);
		_exit(126);
	}
	/* A daemon killed with -9 takes its servers with it (they hold credentials): set after the
	 * uid change, which clears it, and checked against a parent that is gone already. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != signer)
		_exit(126);
	char **argv = calloc(u->nargs + 2, sizeof *argv), **envp = server_env(u);
	if (!argv || !envp)
		_exit(126);
	argv[0] = u->command;
	for (size_t i = 0; i < u->nargs; i++)
		argv[i + 1] = u->args[i];
	/* The command is looked up in the server's own PATH, as a client would. */
	for (char **e = envp; *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			setenv("PATH", *e + 5, 1);
	execvpe(u->command, argv, envp);
	dprintf(2, "assent: cannot run %s: %s\n", u->command, strerror(errno));
	_exit(127);
}

/* Starts upstream k's server: *to_server is its stdin's writing end, *from_server its
 * stdout's reading end (both for the worker). Its stderr stays with the signer (the log). */
int gate_spawn_server(struct signer *s, int k, int *to_server, int *from_server)
{
	struct upw *u = upw_of(s, k);
	int pin[2], pout[2], perr[2];
	if (!u || pipe2(pin, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(pout, O_CLOEXEC) != 0) {
		close(pin[0]);
		close(pin[1]);
		return -1;
	}
	if (pipe2(perr, O_CLOEXEC | O_NONBLOCK) != 0) {
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		return -1;
	}
	pid_t signer = getpid(), pid = fork();
	if (pid == 0)
		server_exec(u->cfg, pin[0], pout[1], perr[1], signer);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (pid < 0) {
		close(pin[1]);
		close(pout[0]);
		close(perr[0]);
		return -1;
	}
	setpgid(pid, pid); /* also here: whichever runs first */
	u->spid = pid;
	if (u->err_fd >= 0)
		close(u->err_fd);
	u->err_fd = perr[0];
	u->errlen = 0;
	*to_server = pin[1];
	*from_server = pout[0];
	slog("info", "upstream %s: started %s (pid %d)", u->cfg->name, u->cfg->command, (int)pid);
	return 0;
}

/* The server's stderr, line by line into the log: printable, cut, at most 50 lines in
 * ten seconds (a server that floods it does not flood the log). */
void gate_stderr(struct signer *s, int i)
{
	struct upw *u = &s->gate.up[i];
	char b[4096];
	for (int turns = 0; turns < 16; turns++) {
		ssize_t r = read(u->err_fd, b, sizeof b);
		if (r <= 0) {
			if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(u->err_fd);
				u->err_fd = -1;
			}
			return;
		}
		for (ssize_t k = 0; k < r; k++) {
			char c = b[k];
			if (c != '\n' && u->errlen < sizeof u->errline - 1) {
				u->errline[u->errlen++] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c;
				continue;
			}
			if (c != '\n')
				continue; /* the rest of a long line is dropped */
			u->errline[u->errlen] = 0;
			uint64_t now = now_ms();
			if (now - u->err_window > 10000) {
				u->err_window = now;
				u->err_lines = 0;
			}
			if (u->errlen && ++u->err_lines <= 50)
				slog("info", "upstream %s stderr: %s%s", u->cfg->name, u->errline,
				     u->err_lines == 50 ? " (more lines in these ten seconds are not logged)" : "");
			u->errlen = 0;
		}
	}
}

size_t gate_fds(struct signer *s, struct pollfd *pf, int *who)
{
	size_t n = 0;
	for (size_t i = 0; i < s->gate.nup; i++)
		if (s->gate.up[i].err_fd >= 0) {
			pf[n] = (struct pollfd){.fd = s->gate.up[i].err_fd, .events = POLLIN};
			who[n++] = (int)i;
		}
	return n;
}

static void server_exited(const struct upw *u, int st)
{
	if (WIFEXITED(st))
		slog("warning", "upstream %s: its server exited with status %d", u->cfg->name, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		slog("warning", "upstream %s: its server died of signal %d", u->cfg->name, WTERMSIG(st));
}

void gate_kill_server(struct upw *u)
{
	if (u->spid <= 0)
		return;
	int st;
	if (waitpid(u->spid, &st, WNOHANG) == u->spid) /* it ended first (and its worker saw it) */
		server_exited(u, st);
	else if (kill(-u->spid, SIGKILL) == 0 && waitpid(u->spid, &st, 0) == u->spid &&
		 !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
		server_exited(u, st); /* it was ending on its own (its pipes closed before it exited): said so */
	kill(-u->spid, SIGKILL);      /* what it left behind in its group */
	u->spid = 0;
}

void gate_reap(struct signer *s, pid_t p, int st)
{
	for (size_t i = 0; i < s->gate.nup; i++)
		if (s->gate.up[i].spid == p) {
			s->gate.up[i].spid = 0;
			server_exited(&s->gate.up[i], st);
			kill(-p, SIGKILL); /* what it left behind in its group */
		}
}

void gate_stop(struct signer *s)
{
	for (size_t i = 0; i < s->gate.nup; i++)
		gate_kill_server(&s->gate.up[i]);
}

/* Upstream worker k is down: its server goes too, and the calls in flight end unknown. */
void gate_worker_down(struct signer *s, int k, const char *why)
{
	struct upw *u = upw_of(s, k);
	if (!u)
		return;
	gate_kill_server(u);
	u->ready = 0;
	for (size_t i = 0; s->gate.gcalls && i < s->gate.gcall_hi; i++) {
		struct gcall *c = &s->gate.gcalls[i];
		if (!c->used || c->k != k)
			continue;
		char text[300];
		snprintf(text, sizeof text,
			 "upstream %s stopped (%s) while the call was in flight: it was forwarded and its outcome is "
			 "unknown",
			 c->upstream, why);
		gate_call_end(s, c, "unknown", NULL, 0, NULL, text);
	}
}
