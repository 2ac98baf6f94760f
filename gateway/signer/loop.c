/* The signer: one event loop over the listening sockets, its two workers' IPC
 * sockets, a signalfd and the queue's deadlines. The workers are started before
 * any key or secret is read, with an empty environment; every frame they send is
 * checked against the dispatch table and against state held here. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/proto/frames.h"

#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- dispatch tables: which frames each worker may send, and when ---- */

#define READY IPC_STATE(S_READY)

static const struct ipc_rule mcp_rules[] = {
    {F_HELLO, IPC_STATE(S_NEW), IPC_ONCE, h_hello},
    {F_LOG, READY | IPC_STATE(S_NEW), 0, h_log},
    {F_CONN_CLOSED, READY, 0, h_conn_closed},
    {F_REQUEST, READY, 0, h_request},
    {F_COLLECT, READY, 0, h_collect},
    {F_LIST, READY, 0, h_list},
    {F_CANCEL, READY, 0, h_cancel},
    {F_TASK, READY, 0, h_task},
    {F_INPUT, READY, 0, h_input},
    {F_CALL, READY, 0, h_call},
    {F_ANSWER, READY, 0, h_answer},
    {F_HTTP_AUTH, READY, IPC_FDS, h_http_auth},
    {F_SESSION_INFO, READY, 0, h_session_info},
    {F_SESSION_END, READY, 0, h_session_end},
    {F_CALLRECS, READY, 0, h_callrecs},
    {F_QA, READY, 0, h_qa},
};

static const struct ipc_rule review_rules[] = {
    {F_HELLO, IPC_STATE(S_NEW), IPC_ONCE, h_hello},
    {F_LOG, READY | IPC_STATE(S_NEW), 0, h_log},
    {F_CONN_CLOSED, READY, 0, h_conn_closed},
    /* a reviewer's commands on the control socket (ctl.c) */
    {F_CTL_WHOAMI, READY, 0, h_ctl_whoami},
    {F_CTL_STATUS, READY, 0, h_ctl_status},
    {F_CTL_PENDING, READY, 0, h_ctl_pending},
    {F_CTL_SHOW, READY, 0, h_ctl_show},
    {F_CTL_REVEAL, READY, 0, h_ctl_reveal},
    {F_CTL_DECIDE, READY, 0, h_ctl_decide},
    {F_CTL_QA, READY, 0, h_ctl_qa},
    /* the reviewer listener's requests, each with its HTTP connection (web.c) */
    {F_WEB_METRICS, READY, IPC_FDS, h_web_metrics},
    {F_WEB_JWKS, READY, IPC_FDS, h_web_jwks},
    {F_WEB_CHECKPOINT, READY, IPC_FDS, h_web_checkpoint},
    {F_WEB_LOGIN, READY, IPC_FDS, h_web_login},
    {F_WEB_ME, READY, IPC_FDS, h_web_me},
    {F_WEB_LOGOUT, READY, IPC_FDS, h_web_logout},
    {F_WEB_EVENTS, READY, IPC_FDS, h_web_events},
    {F_WEB_PENDING, READY, IPC_FDS, h_web_pending},
    {F_WEB_LIST, READY, IPC_FDS, h_web_list},
    {F_WEB_DECIDE, READY, IPC_FDS, h_web_decide},
    {F_WEB_REVEAL, READY, IPC_FDS, h_web_reveal},
    {F_WEB_SUBMIT, READY, IPC_FDS, h_web_submit},
    {F_WEB_ADMIN_CLEAR, READY, IPC_FDS, h_web_admin_clear},
    {F_WEB_QA, READY, IPC_FDS, h_web_qa},
    {F_WEB_HISTORY, READY, IPC_FDS, h_web_history},
    {F_WEB_PROOF, READY, IPC_FDS, h_web_proof},
    {F_WEB_CONSISTENCY, READY, IPC_FDS, h_web_consistency},
    {F_WEB_PASSKEY, READY, IPC_FDS, h_web_passkey},
};

/* An upstream worker speaks for one server: its tools, and the ends of calls dispatched to it. */
static const struct ipc_rule upstream_rules[] = {
    {F_HELLO, IPC_STATE(S_NEW), IPC_ONCE, h_hello},
    {F_LOG, READY | IPC_STATE(S_NEW), 0, h_log},
    {F_UP_TOOLS, READY, 0, h_up_tools},
    {F_UP_RESULT, READY, 0, h_up_result},
    {F_UP_NOTE, READY, 0, h_up_note},
    {F_UP_ASK, READY, 0, h_up_ask},
    {F_UP_CONNECT, READY, 0, h_up_connect},
};

/* The notify worker: how each webhook delivery and witness request ended. */
static const struct ipc_rule notify_rules[] = {
    {F_HELLO, IPC_STATE(S_NEW), IPC_ONCE, h_hello},
    {F_LOG, READY | IPC_STATE(S_NEW), 0, h_log},
    {F_NOTIFY_DONE, READY, 0, h_notify_done},
    {F_WITNESS_DONE, READY, 0, h_witness_done},
};

/* The recorder: its counters (and, with the QA tools, its answers). */
static const struct ipc_rule recorder_rules[] = {
    {F_HELLO, IPC_STATE(S_NEW), IPC_ONCE, h_hello},
    {F_LOG, READY | IPC_STATE(S_NEW), 0, h_log},
    {F_REC_STATS, READY, 0, h_rec_stats},
    {F_REC_ANSWER, READY, 0, h_rec_answer},
};

int signer_dispatch(struct signer *s, int k, struct ipc_frame *f, char *err)
{
	struct worker *w = &s->w[k];
	s->cur = k;
	if (log_min == 0 && f->type != F_LOG) { /* DEBUG: what each worker asks, by frame type (never its bytes) */
		const struct frame_table *ft = frame_table_find(f->type);
		slog("debug", "frame %s (%u, %zu bytes) from the %s worker", ft ? ft->name : "unknown",
		     (unsigned)f->type, f->len, w->kind);
	}
	if (k == W_NOTIFY)
		return ipc_dispatch(notify_rules, sizeof notify_rules / sizeof *notify_rules, IPC_STATE(w->state),
				    &w->once, s, f, err);
	if (k == W_REC)
		return ipc_dispatch(recorder_rules, sizeof recorder_rules / sizeof *recorder_rules, IPC_STATE(w->state),
				    &w->once, s, f, err);
	if (k >= W_UP0)
		return ipc_dispatch(upstream_rules, sizeof upstream_rules / sizeof *upstream_rules, IPC_STATE(w->state),
				    &w->once, s, f, err);
	return k == W_MCP ? ipc_dispatch(mcp_rules, sizeof mcp_rules / sizeof *mcp_rules, IPC_STATE(w->state), &w->once,
					 s, f, err)
			  : ipc_dispatch(review_rules, sizeof review_rules / sizeof *review_rules, IPC_STATE(w->state),
					 &w->once, s, f, err);
}

static int worker_throttled(const struct signer *s, int k)
{
	return s->w[k].fd >= 0 && ipc_pending(&s->w[k].ipc) > IPC_TXQ_MAX / 2;
}

void worker_input(struct signer *s, int k)
{
	struct worker *w = &s->w[k];
	char err[AS_ERRLEN];
	/* Take what is there (bounded, so that one worker cannot starve the other):
	 * frames handled in one turn share the turn's commit. */
	w->rx_full = 0;
	for (int m = 0; m < 64; m++) {
		int r = ipc_read(&w->ipc, err);
		if (r == AS_ECORRUPT) {
			security_event(s, k, err);
			return;
		}
		w->rx_full = r == AS_ETOOBIG;
		if (r != 0)
			break;
	}
	struct cv_arena a;
	cv_arena_init(&a, IPC_FRAME_MAX);
	w->backlog = 0;
	for (;;) {
		/* Answers go out as fast as the worker reads them; a client that pipelines
		 * thousands of calls must not pile more than that up in one turn (past
		 * IPC_TXQ_MAX the worker would count as stuck, and everyone's calls with it).
		 * The rest waits, read but not handled, for the next turns. */
		if (worker_throttled(s, k)) {
			w->backlog = 1;
			break;
		}
		cv_arena_reset(&a);
		struct ipc_frame f;
		int g = ipc_next(&w->ipc, &a, &f, err);
		if (g == AS_ENOTFOUND)
			break;
		if (g == AS_EIO) {
			cv_arena_free(&a);
			worker_down(s, k, "it exited");
			return;
		}
		if (g != 0) {
			cv_arena_free(&a);
			security_event(s, k, err);
			return;
		}
		int rc = signer_dispatch(s, k, &f, err);
		if (rc == AS_ENOTFOUND) { /* stale: about a connection that ended meanwhile */
			slog("info", "%s worker: %s", w->kind, err);
			continue;
		}
		if (rc != 0) {
			cv_arena_free(&a);
			security_event(s, k, err);
			return;
		}
	}
	cv_arena_free(&a);
}

/* A slot for a connection on a unix socket, or NULL: the table is full, or this uid
 * holds ASSENT_MAX_CONNECTIONS_PER_UID already. The client is told why in its own
 * protocol (a JSON-RPC error for agents, a reply line for the assent CLI). */
static struct conn *conn_admit(struct signer *s, int fd, int k, uid_t uid)
{
	struct conn *c = NULL;
	size_t mine = 0;
	for (size_t i = 0; i < MAX_CONNS; i++) {
		if (!s->conns[i].used)
			c = c ? c : &s->conns[i];
		else if (!s->conns[i].http && s->conns[i].uid == uid && s->conns[i].worker == k)
			mine++; /* per socket: a uid's agents holding agent.sock never lock its reviewer out of
				   control.sock */
	}
	char why[200];
	if (!c) {
		snprintf(why, sizeof why, "the gateway serves %d connections already; try again later", MAX_CONNS);
		lim_log(s, LIM_CONNS_TOTAL, "connection from uid %u refused: all %d connection slots are in use",
			(unsigned)uid, MAX_CONNS);
	} else if (mine >= s->lim.c.conns_per_uid) {
		snprintf(why, sizeof why,
			 "uid %u has %zu connections open on %s, the limit (ASSENT_MAX_CONNECTIONS_PER_UID=%u)",
			 (unsigned)uid, mine, k == W_MCP ? "agent.sock" : "control.sock", s->lim.c.conns_per_uid);
		lim_log(s, LIM_CONNS_UID, "connection refused: %s", why);
		c = NULL;
	} else {
		return c;
	}
	json_t *j = k == W_MCP ? json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error", "code", -32000,
					   "message", why)
			       : json_pack("{s:b,s:s}", "ok", 0, "error", why);
	char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n'; /* replaces the terminator: written with its length */
		ssize_t w = write(fd, line, n + 1);
		(void)w; /* a fresh socket takes a line; if not, the client sees the end only */
	}
	/* What the client sent already is read and dropped: closing with unread data
	 * would reset the connection, and the client would not see the line. */
	char junk[4096];
	for (int m = 0; m < 16 && recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0; m++)
		;
	free(line);
	json_decref(j);
	return NULL;
}

/* ---- a CLI reviewer's connection ends when its socket does ---- */

/* The review worker serves the control socket's connections, but a compromised one
 * could keep deciding over them after the reviewer left (and never say it closed
 * them): the signer keeps its own copy of each, never reads it, and watches it for
 * the peer's hang-up only, forgetting the connection the moment it ends. */
static void ctl_init(struct signer *s)
{
	/* One descriptor per reviewer connection on top of the listeners, the workers' and
	 * the ledger's: raise the soft limit toward the hard one if it is below that. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < MAX_CONNS + 256) {
		rl.rlim_cur = rl.rlim_max < MAX_CONNS + 256 ? rl.rlim_max : MAX_CONNS + 256;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	s->ctl_ep = epoll_create1(EPOLL_CLOEXEC);
	for (size_t i = 0; i < MAX_CONNS; i++)
		s->ctl_fd[i] = -1;
}

/* Connections whose reviewer hung up: ended here, whatever the worker says later. */
static void ctl_ended(struct signer *s)
{
	struct epoll_event ev[64];
	int n = epoll_wait(s->ctl_ep, ev, 64, 0);
	for (int k = 0; k < n; k++) {
		size_t i = (size_t)ev[k].data.u64;
		if (i >= MAX_CONNS)
			continue;
		struct conn *c = &s->conns[i];
		if (c->used && c->worker == W_REVIEW && c->id == s->ctl_id[i])
			conn_end(s, c);
		ctl_unwatch(s, i);
	}
}

/* -1 when there was nothing to accept (the caller stops trying this turn). */
static int accept_conn(struct signer *s, int lfd, int k)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return -1;
	struct ucred cr;
	socklen_t cl = sizeof cr;
	struct worker *w = &s->w[k];
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || w->fd < 0 || w->state != S_READY) {
		close(fd);
		return 0;
	}
	struct conn *c = conn_admit(s, fd, k, cr.uid);
	if (!c) {
		close(fd);
		return 0;
	}
	*c = (struct conn){.id = ++s->next_conn, .worker = k, .uid = cr.uid, .pid = cr.pid, .used = 1};
	snprintf(c->owner, sizeof c->owner, "uid:%u", (unsigned)cr.uid);
	if (k == W_REVIEW && ctl_watch(s, c, fd) != 0) {
		c->used = 0;
		close(fd);
		return 0;
	}
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = frame_conn_new(&a, c->id);
	char err[AS_ERRLEN];
	if (!f || ipc_conn_send(&w->ipc, f, fd, err) != 0)
		c->used = 0;
	cv_arena_free(&a);
	close(fd); /* the worker has its own copy now */
	return 0;
}

static int all_ready(const struct signer *s)
{
	for (size_t i = 0; i < s->gate.nup; i++)
		if (!s->gate.up[i].ready)
			return 0;
	return 1;
}

/* Before agents are served: the upstreams' tools, so that a client's first tools/list (an
 * editor lists them as soon as it starts the bridge) has them. Only the upstream workers'
 * frames are read meanwhile (agents wait in the listen backlog, HTTP agents for their
 * F_HTTP_AUTH), for at most ASSENT_UPSTREAM_START_SECONDS (10); a server slower than that
 * adds its tools later, and clients hear notifications/tools/list_changed. */
static void gate_settle(struct signer *s)
{
	uint64_t v = 10;
	const char *t = getenv("ASSENT_UPSTREAM_START_SECONDS");
	if (t && *t && (parse_u64(t, &v) != 0 || v > 600))
		v = 10;
	uint64_t until = now_ms() + 1000 * v;
	while (!all_ready(s) && now_ms() < until) {
		struct pollfd pf[2 * UP_WORKERS];
		int ks[2 * UP_WORKERS], errs[UP_WORKERS];
		size_t n = 0;
		for (size_t i = 0; i < s->gate.nup; i++) {
			struct worker *w = &s->w[W_UP0 + i];
			if (w->fd < 0)
				continue;
			ks[n] = W_UP0 + (int)i;
			pf[n++] = (struct pollfd){.fd = w->fd, .events = POLLIN};
		}
		size_t nw = n;
		n += gate_fds(s, pf + n, errs);
		if (poll(pf, n, 200) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < nw; i++)
			if (pf[i].revents)
				worker_input(s, ks[i]);
		for (size_t i = nw; i < n; i++)
			if (pf[i].revents)
				gate_stderr(s, errs[i - nw]);
	}
	for (size_t i = 0; i < s->gate.nup; i++)
		if (!s->gate.up[i].ready)
			slog("warning", "upstream %s: no tools yet after %llu s; agents get them when it is ready",
			     s->gate.up[i].cfg->name, (unsigned long long)v);
}

/* The listening sockets, the signals, then the workers: they are forked before any
 * key or secret is in this process. */
static int start_workers(struct signer *s)
{
	char err[AS_ERRLEN];
	for (int k = 0; k < NWORKERS; k++) /* unused upstream slots too: a zero fd would be stdin */
		s->w[k] = (struct worker){.kind = "upstream", .fd = -1};
	s->w[W_MCP] = (struct worker){.kind = "mcp", .fd = -1};
	if (!(s->ws = calloc(1, sizeof *s->ws))) {
		slog("error", "out of memory");
		return 2;
	}
	s->w[W_REVIEW] = (struct worker){.kind = "review", .fd = -1};
	s->w[W_REC] = (struct worker){.kind = "recorder", .fd = -1};
	ctl_init(s);
	if ((s->agent_fd = listen_unix(s->o->state, STATE_AGENT_SOCK, err)) < 0 ||
	    (s->control_fd = listen_unix(s->o->state, STATE_CONTROL_SOCK, err)) < 0 ||
	    control_group(s->o->state, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (http_cfg_from_env(&s->http, err) != 0 ||
	    (s->http_fd = tcp_listen(&s->http, "agent HTTP", "FEEDBACK_SSE_PORT", err)) == -2 ||
	    review_listen(s, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (records_start(s) != 0) /* the recorder first, and what the mcp worker is to record */
		return 2;
	if (spawn_worker(s, W_MCP) != 0 || spawn_worker(s, W_REVIEW) != 0) {
		slog("error", "cannot start the workers");
		return 2;
	}
	int rc = gate_start(s); /* the upstream servers and their workers, before any key too */
	if (rc == 0 && s->gate.nup)
		gate_settle(s);
	/* The webhooks: their worker starts in the loop's first turn (it execs at once, so it
	 * inherits nothing of this process's memory). */
	return rc == 0 && (witness_start(s) != 0 || notify_start(s) != 0) ? 2 : rc;
}

/* ---- one turn of the event loop ---- */

/* What to wait for: signals, the listeners whose worker is ready, the workers, the
 * control connections' ends (pf[3 + NWORKERS]: a worker's frames go first), then the
 * upstream servers' stderr (gate.c). */
#define TURN_FDS (5 + NWORKERS + UP_WORKERS)
static size_t turn_fds(struct signer *s, struct pollfd pf[TURN_FDS], int err_of[UP_WORKERS])
{
	size_t n = 0;
	pf[n++] = (struct pollfd){.fd = s->sig_fd, .events = POLLIN};
	/* Connections wait in the listen backlog until their worker is ready for them. */
	pf[n++] = (struct pollfd){.fd = s->w[W_MCP].state == S_READY && s->w[W_MCP].fd >= 0 ? s->agent_fd : -1,
				  .events = POLLIN};
	pf[n++] = (struct pollfd){.fd = s->w[W_REVIEW].state == S_READY && s->w[W_REVIEW].fd >= 0 ? s->control_fd : -1,
				  .events = POLLIN};
	for (int k = 0; k < NWORKERS; k++)
		pf[n++] =
		    (struct pollfd){.fd = s->w[k].fd,
				    /* a worker whose answers back up is read again once they drain */
				    .events = (short)((s->w[k].rx_full && worker_throttled(s, k) ? 0 : POLLIN) |
						      (s->w[k].fd >= 0 && ipc_pending(&s->w[k].ipc) ? POLLOUT : 0))};
	pf[n++] = (struct pollfd){.fd = s->ctl_ep, .events = POLLIN};
	pf[n++] = (struct pollfd){.fd = cluster_fd(s), .events = POLLIN}; /* other replicas' commits */
	return n + gate_fds(s, pf + n, err_of);
}

/* How long to wait: until the next deadline or worker start, at most a second. */
static int turn_timeout(struct signer *s)
{
	uint64_t now = now_ms(), next = now + 1000, d;
	if (pq_next_deadline(s->q, &d) == 0 && d < next)
		next = d;
	for (int k = 0; k < NWORKERS; k++)
		if (s->w[k].start_at && s->w[k].start_at < next)
			next = s->w[k].start_at;
	if (notify_due(s) < next) /* a webhook's retry */
		next = notify_due(s);
	int ms = next > now ? (int)(next - now) : 0;
	for (int k = 0; k < NWORKERS; k++)
		if (s->w[k].fd >= 0 && s->w[k].backlog && !worker_throttled(s, k))
			ms = 0; /* frames wait to be handled: only look what else came */
	return ms;
}

/* A worker exited: a security event when its seccomp filter killed it. */
static void reap_workers(struct signer *s)
{
	int st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		gate_reap(s, p, st); /* an upstream server */
		for (int k = 0; k < NWORKERS; k++) {
			if (s->w[k].pid != p)
				continue;
			s->w[k].pid = 0;
			if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
				security_event(s, k, "killed by the seccomp filter (SIGSYS)");
			else
				worker_down(s, k, "it exited");
		}
	}
}

static void on_signals(struct signer *s)
{
	char err[AS_ERRLEN];
	struct signalfd_siginfo si;
	while (read(s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			s->stop = 1;
		if (si.ssi_signo == SIGHUP && s->cluster)
			slog("error", "SIGHUP: a replica keeps the cluster's policy; to change it, stop every replica, "
				      "then start them with the new one (docs/cluster.md, \"Changing the policy\")");
		else if (si.ssi_signo == SIGHUP && s->o->policy && load_policy(s, err) != 0)
			slog("error", "%s: the policy loaded before stays in force", err);
		if (si.ssi_signo == SIGCHLD)
			reap_workers(s);
	}
}

/* What is due whatever came: restarts, deadlines, the registry, idle sessions, the
 * turn's commit, /health's figures, the pages' refresh, the heap, checkpoints. */
static void turn_chores(struct signer *s)
{
	char err[AS_ERRLEN];
	uint64_t now = now_ms();
	for (int k = 0; k < NWORKERS; k++)
		if (s->w[k].fd < 0 && s->w[k].start_at && s->w[k].start_at <= now && spawn_worker(s, k) != 0)
			s->w[k].start_at = now + 5000;
	expire(s);
	gate_tick(s);
	records_tick(s);
	notify_tick(s);
	if (now >= s->next_regcheck) { /* a rotated token or a removed reviewer: their sessions end now */
		reload_registry(s);
		s->next_regcheck = now + 1000;
	}
	if (now >= s->next_sweep) {
		sweep_sessions(s, now);
		web_sweep(s, now);
		s->next_sweep = now + 1000ull * s->http.cleanup_s;
	}
	commit_batch(s); /* everything this turn brought, in one commit */
	if (s->cluster) {
		cluster_apply(s); /* what the other replicas appended (its answers go out at once) */
		commit_batch(s);
	}
	if (now_ms() >= s->next_stats || pq_count(s->q) != s->stats_pending) { /* /health is never stale */
		send_stats(s);
		s->stats_pending = pq_count(s->q);
		s->next_stats = now_ms() + 1000;
	}
	if (s->committed + s->web_bumps != s->web_sent) /* the reviewers' pages refresh */
		web_push(s, NULL, 0);
	/* After a crowd of requests is gone, give the heap back: a long-running
	 * daemon should sit at its idle size, not at its peak. */
	if (pq_count(s->q) > s->peak)
		s->peak = pq_count(s->q);
	if (pq_count(s->q) == 0 && s->peak >= 64) {
		malloc_trim(0);
		s->peak = 0;
	}
	if (ledger_tick(s->ledger, err) != 0)
		slog("error", "checkpoint: %s", err);
	witness_tick(s); /* after the checkpoint it may send */
}

/* One turn: wait, then handle what came; -1 when poll fails. */
static int turn(struct signer *s)
{
	char err[AS_ERRLEN];
	struct pollfd pf[TURN_FDS];
	int err_of[UP_WORKERS];
	size_t n = turn_fds(s, pf, err_of);
	int got = heap_idle(poll(pf, n, turn_timeout(s)));
	if (got < 0 && errno != EINTR)
		return -1;
	if (got > 0) /* a second idle after work: the ledger's pages go too (heap_idle gives the heap) */
		s->idle_from = now_ms();
	else if (s->idle_from && now_ms() - s->idle_from >= HEAP_IDLE_MS) {
		ledger_release_pages(s->ledger);
		s->idle_from = 0;
	}
	if (heap_went_idle()) { /* the loop's arena, kept at the last burst's size, goes too */
		cv_arena_free(&s->arena);
		malloc_trim(0);
	}
	if (pf[0].revents & POLLIN)
		on_signals(s);
	for (int m = 0; m < 64 && (pf[1].revents & POLLIN) && accept_conn(s, s->agent_fd, W_MCP) == 0; m++)
		;
	for (int m = 0; m < 64 && (pf[2].revents & POLLIN) && accept_conn(s, s->control_fd, W_REVIEW) == 0; m++)
		;
	for (int k = 0; k < NWORKERS; k++) {
		if (s->w[k].fd < 0)
			continue;
		if ((pf[3 + k].revents & POLLOUT) && ipc_flush(&s->w[k].ipc, err) != 0)
			slog("debug", "%s worker: %s", s->w[k].kind, err); /* gone: its input says so next */
		if ((pf[3 + k].revents & (POLLIN | POLLHUP | POLLERR)) || (s->w[k].backlog && !worker_throttled(s, k)))
			worker_input(s, k);
	}
	if (pf[3 + NWORKERS].revents & POLLIN)
		ctl_ended(s);
	if (pf[4 + NWORKERS].revents && cluster_fd(s) >= 0)
		cluster_input(s);
	for (size_t i = 5 + NWORKERS; i < n; i++)
		if (pf[i].revents)
			gate_stderr(s, err_of[i - 5 - NWORKERS]);
	turn_chores(s);
	return 0;
}

/* The last commit, the workers, the final checkpoint, the keys, the sockets. */
static void stop_all(struct signer *s)
{
	char path[4200];
	commit_batch(s);
	slog("info", "assentd stopping: %zu requests stay pending; this run wrote %llu ledger entries in %llu commits",
	     pq_count(s->q), (unsigned long long)s->committed, (unsigned long long)s->commits);
	if (s->w[W_REC].pid > 0) { /* the recorder writes what it holds once its socket closes */
		ipc_conn_free(&s->w[W_REC].ipc);
		close(s->w[W_REC].fd);
		s->w[W_REC].fd = -1;
		for (int i = 0; i < 300 && s->w[W_REC].pid > 0; i++) /* 3 s at most */
			if (waitpid(s->w[W_REC].pid, NULL, WNOHANG) == s->w[W_REC].pid)
				s->w[W_REC].pid = 0;
			else
				usleep(10000);
	}
	for (int k = 0; k < NWORKERS; k++)
		if (s->w[k].pid > 0) { /* workers hold nothing worth flushing */
			kill(s->w[k].pid, SIGKILL);
			waitpid(s->w[k].pid, NULL, 0);
		}
	gate_stop(s);
	notify_free(s);
	witness_free(s);
	ledger_close(s->ledger); /* signs a final checkpoint */
	tokkeys_free(s->tk);
	tok_config_clear(&s->tcfg);
	hsm_close(&s->hsm); /* after the last signature: C_Finalize */
	passkey_free(s);
	policy_free(s->pol);
	snprintf(path, sizeof path, "%s/%s", s->o->state, STATE_AGENT_SOCK);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s", s->o->state, STATE_CONTROL_SOCK);
	unlink(path);
	if (s->proxy_fd >= 0)
		unlink(s->proxy_path);
}

int signer_main(const struct signer_opts *o)
{
	static struct signer S;
	struct signer *s = &S;
	s->o = o;
	s->started_ms = now_ms();
	s->self_uid = getuid();
	signer_register(s);
	int rc = start_state(o);
	if (!rc)
		rc = start_workers(s);
	if (!rc)
		rc = start_limits(s);
	if (!rc)
		rc = start_keys(s);
	if (rc)
		return rc;
	start_banner(s);
	while (!s->stop && turn(s) == 0)
		;
	/* Calls waiting on a connection would end with it, unanswered, and some clients then
	 * wait out their own timeout: each is told it is cancelled, and the workers get a
	 * moment to deliver that before they are stopped. */
	if (cancel_waiting(s))
		for (uint64_t until = now_ms() + 500; now_ms() < until && turn(s) == 0;)
			;
	stop_all(s);
	return 0;
}
