/* Supervision of the jailed workers: start, restart, and what their death cancels. What one
 * kind of worker needs beyond that (its descriptors, its configuration, what its end takes
 * with it) its capability registers here (worker_kind): the gate its upstreams, the records
 * their recorder, the webhooks the notify worker, the loop the mcp and review workers. */
#define _GNU_SOURCE
#include "gateway/signer/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

/* DEBUG: a worker started; its kind may say more (the gate names the upstream). */
static void started_debug(const struct signer *s, int k, pid_t pid)
{
	if (s->kinds[k] && s->kinds[k]->started)
		s->kinds[k]->started(s, k, pid);
	else
		slog("debug", "%s worker started (pid %d)", s->w[k].kind, (int)pid);
}

void worker_kind(struct signer *s, int k, const struct worker_kind *wk)
{
	s->kinds[k] = wk;
}

/* The child's side: descriptor 3 is its IPC socket, 0-2 are /dev/null, the environment is
 * empty, and it is a fresh exec of assent-worker (or of sp->exe beside it), a binary with no
 * key, ledger, registry or policy code in it. Never returns. */
static void exec_worker(struct signer *s, struct worker *w, int ipc, const struct spawn *sp, const char *uidarg)
{
	sigset_t none; /* the signer blocks these for its signalfd; a worker must not inherit that */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* SIGPIPE stays ignored: a gone client is EPIPE, not death */
	int nul = open("/dev/null", O_RDWR);
	if (nul < 0 || dup2(ipc, WORKER_IPC_FD) < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
		_exit(127);
	/* Its listeners or pipes (the mcp worker the agent HTTP listener, the review worker the
	 * reviewer listener and the proxy's socket: they may accept, never bind). Moved out of the
	 * way first, so that one dup2 cannot clobber the other. */
	int l1 = sp->l1, l2 = sp->l2;
	if ((l1 >= 0 && (l1 = fcntl(l1, F_DUPFD_CLOEXEC, 64)) < 0) ||
	    (l2 >= 0 && (l2 = fcntl(l2, F_DUPFD_CLOEXEC, 64)) < 0))
		_exit(127);
	if ((l1 >= 0 && dup2(l1, WORKER_HTTP_FD) < 0) || (l2 >= 0 && dup2(l2, WORKER_PROXY_FD) < 0))
		_exit(127);
	closefrom(l2 >= 0 ? WORKER_PROXY_FD + 1 : l1 >= 0 ? WORKER_HTTP_FD + 1 : WORKER_IPC_FD + 1);
	char *envp[] = {NULL};
	if (sp->exe) {
		char exe[4200];
		const char *sl = strrchr(s->o->worker_exe, '/');
		snprintf(exe, sizeof exe, "%.*s%s", sl ? (int)(sl - s->o->worker_exe + 1) : 0, s->o->worker_exe,
			 sp->exe);
		char *rargv[] = {(char *)sp->exe, uidarg[0] ? "--uid" : NULL, (char *)uidarg, NULL};
		execve(exe, rargv, envp);
		_exit(127);
	}
	char *argv[] = {WORKER_EXE, (char *)w->kind, uidarg[0] ? "--uid" : NULL, (char *)uidarg, NULL};
	execve(s->o->worker_exe, argv, envp);
	_exit(127);
}

static void spawn_close(struct spawn *sp)
{
	if (sp->owned && sp->l1 > 2)
		close(sp->l1);
	if (sp->owned && sp->l2 > 2)
		close(sp->l2);
	sp->l1 = sp->l2 = -1;
}

/* Its configuration comes first (an HTTP worker starts its server before its jail): the one its
 * kind made before the fork, or the one it makes now. */
static void send_config(struct signer *s, int k, struct spawn *sp)
{
	struct worker *w = &s->w[k];
	const struct worker_kind *wk = s->kinds[k];
	char err[AS_ERRLEN] = "";
	struct cv_arena a;
	cv_arena_init(&a, 8192);
	struct cv *f = sp->config;
	if (!f && wk && wk->config && wk->config(s, k, &a, &f) != 0)
		slog("error", "cannot make the %s worker's configuration", w->kind);
	else if (f && ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("error", "cannot send the %s worker its configuration: %s", w->kind, err);
	cv_arena_free(&a);
}

int spawn_worker(struct signer *s, int k)
{
	struct worker *w = &s->w[k];
	const struct worker_kind *wk = s->kinds[k];
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
	struct spawn sp = {.l1 = -1, .l2 = -1};
	cv_arena_init(&sp.a, 4096);
	if (wk && wk->prepare && wk->prepare(s, k, &sp) != 0) { /* the kind logged why */
		close(sv[0]);
		close(sv[1]);
		cv_arena_free(&sp.a);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		spawn_close(&sp);
		cv_arena_free(&sp.a);
		return -1;
	}
	if (pid == 0)
		exec_worker(s, w, sv[1], &sp, uidarg);
	close(sv[1]);
	spawn_close(&sp); /* the worker's now */
	w->pid = pid;
	w->fd = sv[0];
	w->state = S_NEW; /* until its hello */
	started_debug(s, k, pid);
	w->once = 0;
	w->start_at = 0;
	if (ipc_conn_init(&w->ipc, w->fd, err) != 0) { /* not expected: sv is our own socketpair */
		slog("error", "%s worker: %s", w->kind, err);
		cv_arena_free(&sp.a);
		worker_down(s, k, "its IPC socket could not be set up");
		return 0; /* restarted with backoff, as a worker that died */
	}
	send_config(s, k, &sp);
	cv_arena_free(&sp.a);
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
	if (s->kinds[k] && s->kinds[k]->down) /* what its kind loses with it: calls in flight, connections */
		s->kinds[k]->down(s, k, why);
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

int worker_send(struct signer *s, int k, const struct cv *f)
{
	struct worker *w = &s->w[k];
	char err[AS_ERRLEN];
	if (!f || w->fd < 0)
		return -1;
	if (ipc_conn_send(&w->ipc, f, -1, err) == 0)
		return 0;
	worker_down(s, k, "its socket is stuck");
	return -1;
}
