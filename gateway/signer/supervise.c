/* Supervision of the two jailed workers: start, restart, and what their death cancels. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where reviewers open the page: ASSENT_REVIEW_URL (behind a proxy, the proxy's origin), else
 * the reviewer listener's own address; 0 when there is neither. */
int review_origin(const struct signer *s, char *u, size_t cap)
{
	const char *env = getenv("ASSENT_REVIEW_URL");
	if (env && (!strncmp(env, "https://", 8) || !strncmp(env, "http://", 7)) && strlen(env) < cap &&
	    !strpbrk(env, "\"<> \t\r\n")) {
		snprintf(u, cap, "%s", env);
		size_t n = strlen(u);
		while (n > 0 && u[n - 1] == '/')
			u[--n] = 0;
		return 1;
	}
	if (s->review_fd < 0)
		return 0;
	int v6 = strchr(s->review.host, ':') != NULL;
	snprintf(u, cap, "http://%s%s%s:%u", v6 ? "[" : "", s->review.host, v6 ? "]" : "", s->review.port);
	return 1;
}

/* Where the reviewer listener is, for the agent listener's redirects of the seed's reviewer
 * endpoints (/pending, /feedback/submit, /admin/clear-stale-sessions); none when it is off. */
static int review_url_put(struct signer *s, struct cv_arena *a, struct cv *f)
{
	char u[512];
	if (s->review_fd < 0 || !review_origin(s, u, sizeof u))
		return 0;
	return ipc_put_text(a, f, "review_url", u, strlen(u));
}

/* DEBUG: a worker or an upstream started. The upstream's name only: a url may carry a
 * credential, a command's arguments too. */
static void started_debug(const struct signer *s, int k, pid_t pid)
{
	if (IS_UP(k))
		slog("debug", "upstream %s: its worker started (pid %d, %s)", s->up[k - W_UP0].cfg->name, (int)pid,
		     s->up[k - W_UP0].cfg->kind == UP_STDIO ? "stdio server" : "url server");
	else
		slog("debug", "%s worker started (pid %d)", s->w[k].kind, (int)pid);
}

int spawn_worker(struct signer *s, int k)
{
	struct worker *w = &s->w[k];
	int sv[2];
	char err[AS_ERRLEN];
	/* As root, each kind of worker drops to a uid (and gid) of its own, never shared with
	 * another service or with the other worker (jail_worker_uid says which and why). */
	char uidarg[16] = "";
	uid_t wuid;
	if (geteuid() == 0) {
		if (jail_worker_uid(getenv("ASSENT_WORKER_UID"), (unsigned)k, &wuid, err) != 0) {
			slog("error", "%s", err);
			return -1;
		}
		snprintf(uidarg, sizeof uidarg, "%u", (unsigned)wuid);
	}
	if (ipc_socketpair(sv, err) != 0)
		return -1;
	/* An upstream worker gets its server's pipes: the server is started first, by the
	 * signer, with the environment the upstreams file gives it (gate.c). */
	int up_in = -1, up_out = -1;
	if (IS_UP(k) && s->up[k - W_UP0].cfg->kind == UP_STDIO && gate_spawn_server(s, k, &up_in, &up_out) != 0) {
		close(sv[0]);
		close(sv[1]);
		slog("error", "upstream worker %d: cannot start its server", k - W_UP0);
		return -1;
	}
	int jsonl = -1; /* the recorder's JSON lines, opened here */
	struct cv_arena ra;
	cv_arena_init(&ra, 4096);
	struct cv *rf = k == W_REC ? ipc_frame_new(&ra, F_CONFIG, 2) : NULL;
	if (k == W_REC && (!rf || records_recorder_cfg(s, &ra, rf, &jsonl) != 0)) {
		close(sv[0]);
		close(sv[1]);
		cv_arena_free(&ra);
		slog("error", "cannot make the recorder's configuration");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		if (up_in >= 0) {
			close(up_in);
			close(up_out);
		}
		return -1;
	}
	if (pid == 0) {
		/* The worker starts from nothing: descriptor 3 is its IPC socket, 0-2 are
		 * /dev/null, the environment is empty, and it is a fresh exec of assent-worker,
		 * a binary with no key, ledger, registry or policy code in it. */
		sigset_t none; /* the signer blocks these for its signalfd; a worker must not inherit that */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL); /* SIGPIPE stays ignored: a gone client is EPIPE, not death */
		int nul = open("/dev/null", O_RDWR);
		if (nul < 0 || dup2(sv[1], WORKER_IPC_FD) < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 ||
		    dup2(nul, 2) < 0)
			_exit(127);
		/* The mcp worker also gets the agent HTTP listener, the review worker the
		 * reviewer listener and the proxy's socket: they may accept, never bind.
		 * Moved out of the way first, so that one dup2 cannot clobber the other. */
		int l1 = k == W_MCP	 ? s->http_fd
			 : k == W_REVIEW ? s->review_fd
			 : k == W_REC	 ? jsonl
					 : up_in,
		    l2 = k == W_REVIEW ? s->proxy_fd
			 : IS_UP(k)    ? up_out
				       : -1;
		if ((l1 >= 0 && (l1 = fcntl(l1, F_DUPFD_CLOEXEC, 64)) < 0) ||
		    (l2 >= 0 && (l2 = fcntl(l2, F_DUPFD_CLOEXEC, 64)) < 0))
			_exit(127);
		if ((l1 >= 0 && dup2(l1, WORKER_HTTP_FD) < 0) || (l2 >= 0 && dup2(l2, WORKER_PROXY_FD) < 0))
			_exit(127);
		closefrom(l2 >= 0 ? WORKER_PROXY_FD + 1 : l1 >= 0 ? WORKER_HTTP_FD + 1 : WORKER_IPC_FD + 1);
		char *argv[] = {WORKER_EXE, (char *)w->kind, uidarg[0] ? "--uid" : NULL, uidarg, NULL};
		char *envp[] = {NULL};
		if (k == W_REC) {
			char exe[4200];
			const char *sl = strrchr(s->o->worker_exe, '/');
			snprintf(exe, sizeof exe, "%.*s%s", sl ? (int)(sl - s->o->worker_exe + 1) : 0, s->o->worker_exe,
				 RECORDER_EXE);
			char *rargv[] = {RECORDER_EXE, uidarg[0] ? "--uid" : NULL, uidarg, NULL};
			execve(exe, rargv, envp);
			_exit(127);
		}
		execve(s->o->worker_exe, argv, envp);
		_exit(127);
	}
	close(sv[1]);
	if (jsonl > 2)
		close(jsonl);
	if (up_in >= 0) { /* the worker's now */
		close(up_in);
		close(up_out);
	}
	w->pid = pid;
	w->fd = sv[0];
	w->state = S_NEW; /* until its hello */
	started_debug(s, k, pid);
	w->once = 0;
	w->start_at = 0;
	if (ipc_conn_init(&w->ipc, w->fd, err) != 0) { /* not expected: sv is our own socketpair */
		slog("error", "%s worker: %s", w->kind, err);
		worker_down(s, k, "its IPC socket could not be set up");
		return 0; /* restarted with backoff, as a worker that died */
	}
	if (k == W_REC) { /* where records go, and how they are redacted */
		if (ipc_conn_send(&w->ipc, rf, -1, err) != 0)
			slog("error", "cannot send the recorder its configuration: %s", err);
		cv_arena_free(&ra);
		return 0;
	}
	cv_arena_free(&ra);
	if (k == W_NOTIFY) { /* the webhooks it may be given deliveries for */
		struct cv_arena na;
		cv_arena_init(&na, 8192);
		struct cv *nf = ipc_frame_new(&na, F_CONFIG, 1);
		if (!nf || notify_config(s, &na, nf) != 0 || ipc_conn_send(&w->ipc, nf, -1, err) != 0)
			slog("error", "cannot send the notify worker its configuration");
		cv_arena_free(&na);
		return 0;
	}
	/* Its configuration comes first: it starts its HTTP server before its jail. */
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	if (IS_UP(k)) { /* an upstream worker: which server it speaks for, and for a url how */
		const char *nm = s->up[k - W_UP0].cfg->name;
		struct cv *uf = ipc_frame_new(&a, F_CONFIG, 2);
		if (!uf || ipc_put_text(&a, uf, "name", nm, strlen(nm)) || gate_config(s, k, &a, uf) ||
		    ipc_conn_send(&w->ipc, uf, -1, err) != 0)
			slog("error", "cannot send the upstream worker of %s its configuration", nm);
		cv_arena_free(&a);
		return 0;
	}
	int rv = k == W_REVIEW;
	struct cv *f = ipc_frame_new(&a, F_CONFIG, 5), *c = http_cfg_to_cv(rv ? &s->review : &s->http, &a), *slot;
	if (!f || !c || !(slot = ipc_put(&a, f, "http")) || (*slot = *c, 0) ||
	    (rv && ipc_put_uint(&a, f, "proxy", s->proxy_fd >= 0)) ||
	    ipc_put_text(&a, f, "proxy_header", s->proxy_header, strlen(s->proxy_header)) ||
	    records_worker_cfg(s, &a, f) || /* the mcp worker's records, both workers' QA tools */
	    (k == W_MCP && review_url_put(s, &a, f)) || ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("error", "cannot send the %s worker its configuration: %s", w->kind, err);
	cv_arena_free(&a);
	return 0;
}

void worker_down(struct signer *s, int k, const char *why)
{
	struct worker *w = &s->w[k];
	if (w->pid > 0) {
		int st = 0;
		if (waitpid(w->pid, &st, WNOHANG) == 0) {
			kill(w->pid, SIGKILL);
			waitpid(w->pid, &st, 0);
		} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
			slog("security", "%s worker was killed by the seccomp filter (SIGSYS): a forbidden system call",
			     w->kind);
		} else if (WIFSIGNALED(st)) {
			slog("warning", "%s worker died of signal %d", w->kind, WTERMSIG(st));
		}
	}
	if (w->fd >= 0) {
		ipc_conn_free(&w->ipc);
		close(w->fd);
	}
	w->fd = -1;
	w->pid = 0;
	w->state = S_NEW;
	gate_worker_down(s, k, why); /* an upstream's: its server and its calls in flight */
	if (k == W_NOTIFY)
		notify_worker_down(s); /* its deliveries in flight are tried again */
	if (IS_UP(k) && (size_t)(k - W_UP0) < s->nup)
		rec_event(s, "upstream.restarted", s->up[k - W_UP0].cfg->name,
			  json_pack("{s:s,s:I}", "reason", why, "restarts", (json_int_t)w->restarts_total + 1));
	for (size_t i = 0; i < MAX_CONNS; i++) {
		if (s->conns[i].used && s->conns[i].worker == k) {
			fail_conn_requests(s, s->conns[i].id, why);
			/* An MCP session over HTTP is the signer's: the restarted worker serves it
			 * again (its blocking calls went with their streams). */
			if (!s->conns[i].http) {
				ctl_unwatch(s, i);
				s->conns[i].used = 0;
			}
		}
	}
	unsigned backoff = w->restarts < 5 ? 1000u << w->restarts : 30000u;
	w->restarts++;
	w->restarts_total++;
	w->start_at = now_ms() + backoff;
	slog("warning", "%s worker down (%s); restarting in %u ms", w->kind, why, backoff);
}

void security_event(struct signer *s, int k, const char *what)
{
	slog("security", "%s worker: %s: killing it", s->w[k].kind, what);
	worker_down(s, k, what);
}
