/* The signer: one event loop over the listening sockets, its two workers' IPC
 * sockets, a signalfd and the queue's deadlines. The workers are started before
 * any key or secret is read, with an empty environment; every frame they send is
 * checked against the dispatch table and against state held here. */
#define _GNU_SOURCE
#include "gateway/signer/signer.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netdb.h>
#include <grp.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "ledger/ledger.h"
#include "gateway/proto/action.h"
#include "gateway/cli/bridge.h"
#include "common/cbor.h"
#include "ledger/entry.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/workers.h"
#include "gateway/signer/lim.h"
#include "ledger/merkle.h"
#include "gateway/signer/metrics.h"
#include "gateway/signer/peeruid.h"
#include "policy/policy.h"
#include "gateway/proto/proto.h"
#include "gateway/signer/queue.h"
#include "common/redact.h"
#include "gateway/signer/registry.h"
#include "gateway/signer/token.h"
#include "common/util.h"
#include "gateway/signer/websess.h"

#define CONTROL_SOCK "control.sock"
#define MAX_CONNS 1024
#define MAX_DONE 4096
#define DONE_PER_OWNER (MAX_DONE / 4)
#define PQ_MAX 100000 /* requests pending in all */
#define TIMEOUT_MAX_S 86400
#define MCP_AUD_MAX 128

enum { W_MCP, W_REVIEW, NWORKERS };
enum { S_NEW, S_READY }; /* a worker's state: before and after its hello */

struct worker {
	const char *kind;
	pid_t pid;
	int fd;
	struct ipc_conn ipc;
	uint32_t state;
	uint64_t once;
	unsigned restarts;       /* since it last said hello: the backoff */
	unsigned restarts_total; /* since the daemon started */
	uint64_t start_at; /* when to (re)start it, unix ms; 0: running */
	int backlog;       /* frames read but not yet handled: its queue of answers was too full */
	int rx_full;       /* and its receive buffer is full too: read again once answers drain */
};

struct conn { /* a client connection the signer accepted and handed to a worker, or an MCP session over HTTP */
	uint64_t id;
	int worker; /* W_MCP (an agent) or W_REVIEW (a reviewer) */
	uid_t uid;  /* measured with SO_PEERCRED, never taken from a worker; (uid_t)-1 over HTTP */
	pid_t pid;
	int used;
	char owner[80]; /* whose requests these are: "uid:1000", "agent:NAME" or "anonymous:CONN" (each its own) */
	/* HTTP sessions only: they belong to the signer and outlive the worker. */
	int http;
	char agent[REG_NAME_MAX + 1]; /* the registered agent its API key named; "" when anonymous */
	char session[33];             /* its Mcp-Session-Id */
	char client[160], protocol[16]; /* what its initialize declared */
	uint64_t last_ms;
};

struct req { /* what the signer keeps of a pending request (pq_item.data) */
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	char type[16];
	char audience[MCP_AUD_MAX + 1];
	char action[72];    /* "sha256:" hex */
	json_t *view;       /* what a reviewer is shown */
	char **options;
	size_t noptions;
	json_t *subjects;   /* [{name, sha256, computed}] */
	char owner[80];     /* the requester, as struct conn names it */
	struct pol_decision pd; /* what the policy said (an ask, with its terms), when one is loaded */
	int has_pd;
	char pol_digest[65];    /* of the policy that said it (a reload does not change a pending request's terms) */
	char approvers[16][REG_NAME_MAX + 1]; /* a quorum's approvals so far: distinct people */
	size_t napprovers;
	uint8_t *content[16]; /* a subject's bytes, when the agent sent them (hashed here) */
	size_t content_len[16];
	char client[160];
	uid_t uid; /* the requester's, as measured: SO_PEERCRED, or the loopback HTTP connection's owner */
};

struct done { /* decided requests whose requester may still collect the answer */
	char sid[PQ_SID_LEN + 1];
	uint64_t owner_conn;
	char owner[80];
	json_t *result;
	uint64_t until;
};

/* The uid the signer measured on an HTTP request's TCP connection (F_HTTP_AUTH), kept
 * until the request frame that request leads to (F_REQUEST names its hreq) takes it.
 * One use each; as many as the mcp worker can have connections in flight. */
#define MAX_MEASURED 8192
struct measured {
	uint64_t hreq, conn;
	uid_t uid; /* (uid_t)-1: not a loopback peer, no uid to measure */
	int used;
};

struct waiter { /* a get_feedback call waiting for a decision */
	uint64_t conn;
	char owner[80]; /* whose call it is (struct conn's owner): it counts in their blocking limit */
	char rid[PROTO_RID_MAX + 1];
	char sid[PQ_SID_LEN + 9];
	uint64_t until;
	int used;
};

/* An entry waiting for the end of the event loop's turn, and what to do once it is
 * on disk (pos) or could not be written (pos NULL, err says why). */
struct op;
struct signer;
typedef void (*op_done)(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err);
struct decision; /* below, with decide() */
struct op {
	struct buf enc;      /* the canonical entry */
	op_done done;        /* NULL: nobody waits for it */
	struct pq_item it;   /* the request the entry is about, when someone waits (it.data: struct req *) */
	uint64_t conn;       /* who hears of it: the agent's connection, or the reviewer's */
	int cancelled;       /* a request whose caller cancelled or left before it was on disk */
	int web;             /* conn is a web request of the review worker (hreq), not a control connection */
	struct decision *d;
};

struct recent { /* a decision, for the web page's "recent" list */
	char sid[PQ_SID_LEN + 1], outcome[17], by[80], message[121];
	uint64_t seq, at;
	struct pol_decision pd; /* its terms: shown only to reviewers who could have decided it */
	int restricted;
};

struct signer {
	const struct signer_opts *o;
	struct worker w[NWORKERS];
	int agent_fd, control_fd, sig_fd;
	int http_fd; /* the agent HTTP listener, handed to the mcp worker; -1: none */
	struct http_cfg http;
	/* The reviewer listener (TCP) and the reverse proxy's own (unix socket), both
	 * handed to the review worker; -1: none. Only on the proxy's socket, or with the
	 * proxy's shared secret, is an identity header believed. */
	int review_fd, proxy_fd;
	struct http_cfg review;
	char proxy_path[108], proxy_header[64], proxy_secret[129];
	struct web_sessions *ws;
	struct metrics m;
	struct recent recent[20];
	size_t nrecent;
	uint64_t web_bumps, web_sent; /* the queue's view changed without an entry (a quorum's approval); last pushed */
	uint64_t next_stats, next_sweep;
	size_t stats_pending;
	struct conn conns[MAX_CONNS];
	/* The signer's own copy of each CLI reviewer's connection, watched for its end only
	 * (ctl_watch): slot i of conns, -1 when none. */
	int ctl_ep, ctl_fd[MAX_CONNS];
	uint64_t ctl_id[MAX_CONNS];
	uint64_t next_conn;
	/* Connections and sessions that ended lately. The worker may still be sending
	 * about one (a cancel racing the end of its session): such a frame is stale, not
	 * an attack, and is dropped. A connection never handed out is an attack. */
	uint64_t ended[1024];
	size_t ended_at;
	struct pq *q;
	/* A ring in the order of decision: every entry lives an hour from its insertion, so the
	 * oldest, and the first to expire, is always at done_head (no scan per decision). */
	struct done done[MAX_DONE];
	size_t ndone, done_head;
	struct waiter waiters[MAX_CONNS];
	struct measured measured[MAX_MEASURED];
	size_t measured_at;
	uid_t self_uid; /* the daemon's own: a requester with it could read the keys and the registry */
	struct ledger *ledger;
	struct policy *pol; /* NULL: no --policy, every request waits for a person */
	struct tokkeys *tk;
	struct tok_config tcfg;
	struct registry *reg;
	time_t reg_mtime;
	uint64_t next_regcheck; /* the registry is looked at once a second: a rotated token ends its sessions */
	unsigned web_streams_max, web_stream_s; /* event streams per reviewer, and how long one lasts */
	uint32_t timeout_s;
	struct cv_arena arena;
	struct op **batch; /* entries for the next commit, in order */
	size_t nbatch, batch_cap;
	uint64_t commits, committed; /* durable commits, and the entries they carried */
	uint64_t started_ms;
	size_t peak; /* most requests pending since the heap was last trimmed */
	int cur; /* the worker whose frame is being handled */
	int stop;
	struct lim_state lim; /* limits per principal (lim.h) */
};

static uint64_t now_ms(void) { return now_unix_ms(); }

static void slog(const char *level, const char *fmt, ...) AS_PRINTF(2, 3);
/* FEEDBACK_LOG_LEVEL: DEBUG, INFO (the default), WARNING or ERROR, any case. Security
 * events are written whatever it says. */
static int log_min = 1;
static int log_rank(const char *level)
{
	static const char *const names[] = {"debug", "info", "warning", "error"};
	for (int k = 0; k < 4; k++)
		if (!strcasecmp(level, names[k]))
			return k;
	if (!strcasecmp(level, "warn"))
		return 2;
	return !strcmp(level, "security") ? 9 : -1;
}

static void slog(const char *level, const char *fmt, ...)
{
	int rank = log_rank(level);
	if (rank >= 0 && rank < log_min)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *j = json_pack("{s:I,s:s,s:s}", "ts", (json_int_t)now_ms(), "level", level, "msg", msg);
	char *s = json_dumps(j, JSON_COMPACT);
	fprintf(stderr, "%s\n", s ? s : msg);
	free(s);
	json_decref(j);
}

/* ---- sockets and workers ---- */

/* A limit was hit: logged at most once a minute per limit, with the hits since. */
static void lim_log(struct signer *s, enum lim_kind k, const char *fmt, ...) AS_PRINTF(3, 4);
static void lim_log(struct signer *s, enum lim_kind k, const char *fmt, ...)
{
	uint64_t more = 0;
	if (!lim_hit(&s->lim, k, now_ms(), &more))
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (more)
		slog("warning", "limit: %s (and %llu more times since the last such line)", msg, (unsigned long long)more);
	else
		slog("warning", "limit: %s", msg);
}

static int listen_unix(const char *state, const char *name, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, name);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return as_fail(err, AS_EINVAL, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path); /* we hold the state directory's lock: a socket left here is stale */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(0077);
	int rc = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 64) == 0 ? 0 : -1;
	umask(old);
	if (rc != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return as_fail(err, AS_EIO, "cannot listen on %s: %s", path, strerror(e));
	}
	return fd;
}

/* A socket only its owner and one group may connect to: mode 0660, that group. */
static int sock_group(const char *path, const char *grp, const char *var, char *err)
{
	struct group *g = getgrnam(grp);
	if (!g || chown(path, (uid_t)-1, g->gr_gid) != 0 || chmod(path, 0660) != 0)
		return as_fail(err, AS_EINVAL, "%s '%s': %s", var, grp, g ? strerror(errno) : "no such group");
	return 0;
}

/* ASSENT_CONTROL_GROUP: reviewers in that group reach control.sock (the signer still
 * measures each one's uid and checks it against the registry). The state directory
 * gets that group with search permission only (0710): members can reach the socket
 * by its name, not list or read anything; keys, ledger and registry stay the owner's. */
static int control_group(const char *state, char *err)
{
	const char *grp = getenv("ASSENT_CONTROL_GROUP");
	if (!grp || !*grp)
		return 0;
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, CONTROL_SOCK);
	GUARD(sock_group(path, grp, "ASSENT_CONTROL_GROUP", err));
	struct stat st;
	struct group *g = getgrnam(grp);
	if (stat(state, &st) != 0 || chown(state, (uid_t)-1, g->gr_gid) != 0 || chmod(state, (st.st_mode & 0700) | 0010) != 0)
		return as_fail(err, AS_EIO, "ASSENT_CONTROL_GROUP: cannot open %s to group %s: %s", state, grp, strerror(errno));
	slog("info", "control socket: members of group %s may connect (%s, mode 0660)", grp, path);
	return 0;
}

static int spawn_worker(struct signer *s, int k)
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
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
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
		if (nul < 0 || dup2(sv[1], WORKER_IPC_FD) < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
			_exit(127);
		/* The mcp worker also gets the agent HTTP listener, the review worker the
		 * reviewer listener and the proxy's socket: they may accept, never bind.
		 * Moved out of the way first, so that one dup2 cannot clobber the other. */
		int l1 = k == W_MCP ? s->http_fd : s->review_fd, l2 = k == W_REVIEW ? s->proxy_fd : -1;
		if ((l1 >= 0 && (l1 = fcntl(l1, F_DUPFD_CLOEXEC, 64)) < 0) || (l2 >= 0 && (l2 = fcntl(l2, F_DUPFD_CLOEXEC, 64)) < 0))
			_exit(127);
		if ((l1 >= 0 && dup2(l1, WORKER_HTTP_FD) < 0) || (l2 >= 0 && dup2(l2, WORKER_PROXY_FD) < 0))
			_exit(127);
		closefrom(l2 >= 0 ? WORKER_PROXY_FD + 1 : l1 >= 0 ? WORKER_HTTP_FD + 1 : WORKER_IPC_FD + 1);
		char *argv[] = {WORKER_EXE, (char *)w->kind, uidarg[0] ? "--uid" : NULL, uidarg, NULL};
		char *envp[] = {NULL};
		execve(s->o->worker_exe, argv, envp);
		_exit(127);
	}
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];
	w->state = S_NEW; /* until its hello */
	w->once = 0;
	w->start_at = 0;
	ipc_conn_init(&w->ipc, w->fd, err);
	/* Its configuration comes first: it starts its HTTP server before its jail. */
	struct cv_arena a;
	cv_arena_init(&a, 256);
	int rv = k == W_REVIEW;
	struct cv *f = ipc_frame_new(&a, F_CONFIG, 3), *c = http_cfg_to_cv(rv ? &s->review : &s->http, &a), *slot;
	if (!f || !c || !(slot = ipc_put(&a, f, "http")) || (*slot = *c, 0) ||
	    (rv && ipc_put_uint(&a, f, "proxy", s->proxy_fd >= 0)) ||
	    ipc_put_text(&a, f, "proxy_header", s->proxy_header, strlen(s->proxy_header)) ||
	    ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("error", "cannot send the %s worker its configuration: %s", w->kind, err);
	cv_arena_free(&a);
	return 0;
}

/* A worker died or misbehaved: drop its connections, fail what they waited for,
 * and restart it with backoff. */
static void fail_conn_requests(struct signer *s, uint64_t conn, const char *reason);
static void ctl_unwatch(struct signer *s, size_t i);
static int ctl_gone(struct signer *s, struct conn *c);

static void worker_down(struct signer *s, int k, const char *why)
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

static void security_event(struct signer *s, int k, const char *what)
{
	slog("security", "%s worker: %s: killing it", s->w[k].kind, what);
	worker_down(s, k, what);
}

/* ---- the ledger, with group commit ----
 * Entries wait in s->batch until the end of the event loop's turn and then go to
 * disk together: one write transaction, one fsync. Only after that does anyone
 * hear of them, so decisions that arrive together (several reviewers, a burst of
 * timeouts) share a commit and still no answer precedes its entry. */

#define COMMIT_MAX 1024 /* entries per transaction */

static struct op *op_add(struct signer *s, const struct cv *m, op_done done, char *err)
{
	if (s->nbatch == s->batch_cap) {
		size_t cap = s->batch_cap ? 2 * s->batch_cap : 64;
		struct op **nb = realloc(s->batch, cap * sizeof *nb);
		if (!nb) {
			as_fail(err, AS_ENOMEM, "out of memory");
			return NULL;
		}
		s->batch = nb;
		s->batch_cap = cap;
	}
	struct op *o = calloc(1, sizeof *o);
	if (!o) {
		as_fail(err, AS_ENOMEM, "out of memory");
		return NULL;
	}
	buf_init(&o->enc, ENTRY_MAX);
	if (cbor_encode(m, &o->enc, err) != 0) {
		buf_free(&o->enc);
		free(o);
		return NULL;
	}
	o->done = done;
	s->batch[s->nbatch++] = o;
	return o;
}

static void op_finish(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (o->done)
		o->done(s, o, pos, err);
	else if (!pos)
		slog("error", "ledger: %s", err);
	buf_free(&o->enc);
	free(o);
}

static void commit_batch(struct signer *s)
{
	/* Callbacks may add entries (a request whose caller left gets its `cancelled`):
	 * they go to a fresh batch, committed by the next round of this loop. */
	while (s->nbatch) {
		struct op **ops = s->batch;
		size_t n = s->nbatch;
		s->batch = NULL;
		s->nbatch = s->batch_cap = 0;
		struct ledger_rec *recs = calloc(COMMIT_MAX, sizeof *recs);
		struct ledger_pos *pos = calloc(COMMIT_MAX, sizeof *pos);
		for (size_t at = 0; at < n;) {
			size_t k = n - at < COMMIT_MAX ? n - at : COMMIT_MAX;
			char err[AS_ERRLEN] = "out of memory";
			int rc = AS_ENOMEM;
			if (recs && pos) {
				for (size_t i = 0; i < k; i++)
					recs[i] = (struct ledger_rec){ops[at + i]->enc.p, ops[at + i]->enc.len};
				rc = ledger_append(s->ledger, recs, k, pos, err);
			}
			if (rc == 0) {
				s->commits++;
				s->committed += k;
				for (size_t i = 0; i < k; i++)
					op_finish(s, ops[at + i], &pos[i], NULL);
			} else if (k > 1 && recs && pos) {
				/* One refused entry must not sink the others: commit them one by one. */
				for (size_t i = 0; i < k; i++) {
					rc = ledger_append(s->ledger, &recs[i], 1, &pos[0], err);
					if (rc == 0) {
						s->commits++;
						s->committed++;
					}
					op_finish(s, ops[at + i], rc == 0 ? &pos[0] : NULL, err);
				}
			} else {
				for (size_t i = 0; i < k; i++)
					op_finish(s, ops[at + i], NULL, err);
			}
			at += k;
		}
		free(recs);
		free(pos);
		free(ops);
	}
}

static struct cv *kv(struct cv_arena *a, struct cv *m, size_t *i, const char *k)
{
	cv_set_text(a, &m->items[2 * *i], k, strlen(k));
	return &m->items[2 * (*i)++ + 1];
}

static struct op *append_simple(struct signer *s, const char *kind, const char *sid, const char *reason, op_done done)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *m = cv_map(&a, 3);
	size_t i = 0;
	cv_set_text(&a, kv(&a, m, &i, "kind"), kind, strlen(kind));
	cv_set_text(&a, kv(&a, m, &i, "session_id"), sid, strlen(sid));
	cv_set_text(&a, kv(&a, m, &i, "reason"), reason, strlen(reason));
	char err[AS_ERRLEN];
	struct op *o = op_add(s, m, done, err);
	if (!o)
		slog("error", "ledger: %s entry for %s: %s", kind, sid, err);
	cv_arena_free(&a);
	return o;
}

/* ---- answering ---- */

static void send_result(struct signer *s, uint64_t conn, const char *rid, json_t *result, int iserror)
{
	struct worker *w = &s->w[W_MCP];
	if (w->fd < 0)
		return;
	char *js = json_dumps(result, JSON_COMPACT);
	if (js && strlen(js) > IPC_FRAME_MAX - 1024) { /* a result is one frame */
		char msg[160];
		snprintf(msg, sizeof msg, "{\"error\":\"the result would be %zu bytes, over the limit of %u\"}", strlen(js),
			 IPC_FRAME_MAX - 1024);
		free(js);
		js = strdup(msg);
		iserror = 1;
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_RESULT, 4);
	char err[AS_ERRLEN];
	if (js && f && !ipc_put_uint(&a, f, "conn", conn) && !ipc_put_text(&a, f, "rid", rid, strlen(rid)) &&
	    !ipc_put_text(&a, f, "json", js, strlen(js)) && !ipc_put_bool(&a, f, "iserror", iserror))
		if (ipc_conn_send(&w->ipc, f, -1, err) != 0)
			worker_down(s, W_MCP, "its socket is stuck");
	free(js);
	cv_arena_free(&a);
}

static void ctl_reply(struct signer *s, uint64_t conn, json_t *j)
{
	struct worker *w = &s->w[W_REVIEW];
	char *js = json_dumps(j, JSON_COMPACT);
	if (js && strlen(js) > IPC_FRAME_MAX - 1024) { /* a reply is one frame */
		char msg[160];
		snprintf(msg, sizeof msg, "{\"ok\":false,\"error\":\"the reply would be %zu bytes, over the limit of %u\"}",
			 strlen(js), IPC_FRAME_MAX - 1024);
		free(js);
		js = strdup(msg);
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_CTL_REPLY, 2);
	char err[AS_ERRLEN];
	if (w->fd >= 0 && js && f && !ipc_put_uint(&a, f, "conn", conn) && !ipc_put_text(&a, f, "json", js, strlen(js)))
		if (ipc_conn_send(&w->ipc, f, -1, err) != 0)
			worker_down(s, W_REVIEW, "its socket is stuck");
	free(js);
	cv_arena_free(&a);
	json_decref(j);
}

/* The answer to a web request of the review worker: an HTTP status and JSON (or,
 * with text set, a text body of that content type). cookie: a new session's
 * secret for Set-Cookie; clear: end the browser's cookie. */
struct web_out {
	unsigned status;
	const char *cookie, *ctype;
	int clear;
	unsigned retry_s;
	uint32_t wsid;
	const char *text;
	size_t textn;
};

static void web_send(struct signer *s, uint64_t hreq, const struct web_out *w, json_t *j)
{
	struct worker *wk = &s->w[W_REVIEW];
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	const char *body = w->text ? w->text : js;
	size_t n = w->text ? w->textn : js ? strlen(js) : 0;
	unsigned status = w->status;
	if (!body || n > IPC_FRAME_MAX - 1024) {
		free(js);
		js = strdup("{\"error\":\"the answer would not fit in one frame\"}");
		body = js;
		n = js ? strlen(js) : 0;
		status = 500;
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_WEB_REPLY, 8);
	char err[AS_ERRLEN];
	if (wk->fd >= 0 && body && f && !ipc_put_uint(&a, f, "hreq", hreq) && !ipc_put_uint(&a, f, "status", status) &&
	    !ipc_put_text(&a, f, "body", body, n) &&
	    !(w->ctype && ipc_put_text(&a, f, "ctype", w->ctype, strlen(w->ctype))) &&
	    !(w->cookie && ipc_put_text(&a, f, "cookie", w->cookie, strlen(w->cookie))) &&
	    !(w->clear && ipc_put_bool(&a, f, "clear", 1)) && !(w->retry_s && ipc_put_uint(&a, f, "retry", w->retry_s)) &&
	    !(w->wsid && ipc_put_uint(&a, f, "wsid", w->wsid)))
		if (ipc_conn_send(&wk->ipc, f, -1, err) != 0)
			worker_down(s, W_REVIEW, "its socket is stuck");
	free(js);
	cv_arena_free(&a);
}

/* What a command's JSON answer means in HTTP. */
static unsigned web_status(const json_t *j)
{
	if (json_is_true(json_object_get(j, "ok")) || !json_object_get(j, "error"))
		return 200;
	const char *e = json_string_value(json_object_get(j, "error"));
	if (!e)
		return 400;
	if (!strncmp(e, "refused", 7))
		return 403;
	if (!strncmp(e, "no pending request", 18))
		return 404;
	if (strstr(e, "could not be recorded"))
		return 503;
	return 400;
}

/* Answer whoever issued a command: a control connection, or a web request. */
static void reply_to(struct signer *s, uint64_t to, int web, json_t *j)
{
	if (!web) {
		ctl_reply(s, to, j);
		return;
	}
	struct web_out w = {.status = web_status(j)};
	web_send(s, to, &w, j);
	json_decref(j);
}

static struct conn *conn_get(struct signer *s, uint64_t id, int worker)
{
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].used && s->conns[i].id == id && s->conns[i].worker == worker)
			return &s->conns[i];
	return NULL;
}

static void req_free(struct req *r)
{
	if (!r)
		return;
	json_decref(r->view);
	json_decref(r->subjects);
	for (size_t i = 0; i < 16; i++)
		free(r->content[i]);
	for (size_t i = 0; i < r->noptions; i++)
		free(r->options[i]);
	free(r->options);
	free(r);
}

static struct done *done_at(struct signer *s, size_t i) { return &s->done[(s->done_head + i) % MAX_DONE]; }

static void remember_done(struct signer *s, const char *sid, uint64_t conn, const char *owner, json_t *result)
{
	uint64_t now = now_ms();
	/* Drop what expired. */
	while (s->ndone && done_at(s, 0)->until < now) {
		json_decref(done_at(s, 0)->result);
		done_at(s, 0)->result = NULL;
		s->done_head = (s->done_head + 1) % MAX_DONE;
		s->ndone--;
	}
	/* One owner keeps at most DONE_PER_OWNER answers: past it their own oldest gives way
	 * (in its slot: it then outlives its hour a little), so one agent flooding decisions
	 * never pushes another's approval out. Only when the ring is full of many owners'
	 * does the oldest of all go. */
	struct done *d = NULL;
	size_t mine = 0;
	for (size_t i = 0; i < s->ndone; i++) { /* by `until`: a slot reused in place is younger than its place */
		struct done *x = done_at(s, i);
		if (x->result && !strcmp(x->owner, owner) && (mine++, !d || x->until < d->until))
			d = x;
	}
	if (mine >= DONE_PER_OWNER) {
		json_decref(d->result);
	} else {
		if (s->ndone == MAX_DONE) {
			json_decref(done_at(s, 0)->result);
			done_at(s, 0)->result = NULL;
			s->done_head = (s->done_head + 1) % MAX_DONE;
			s->ndone--;
		}
		d = done_at(s, s->ndone++);
	}
	snprintf(d->sid, sizeof d->sid, "%s", sid);
	d->owner_conn = conn;
	snprintf(d->owner, sizeof d->owner, "%s", owner);
	d->result = json_incref(result);
	d->until = now + 3600 * 1000u;
	/* A get_feedback already waiting for it gets it now. */
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++) {
		struct waiter *w = &s->waiters[i];
		if (w->used && !strcmp(w->sid, sid)) {
			send_result(s, w->conn, w->rid, result, 0);
			w->used = 0;
		}
	}
}

/* One structured JSON line per finished request (stderr, the daemon's log). */
/* A request left the queue: one log line, the metrics, and (decisions) the web page's recent list. */
static void request_log(struct signer *s, const struct pq_item *it, const struct req *r, const char *outcome,
			const char *reviewer, uint64_t seq)
{
	const char *msg = json_string_value(json_object_get(r->view, "message"));
	char summary[121];
	snprintf(summary, sizeof summary, "%s", msg ? msg : "");
	for (char *p = summary; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	metrics_decided(&s->m, outcome, now_ms() - it->created_ms);
	if (seq && strcmp(outcome, "cancelled")) {
		memmove(&s->recent[1], &s->recent[0], sizeof s->recent - sizeof s->recent[0]);
		struct recent *x = &s->recent[0];
		snprintf(x->sid, sizeof x->sid, "%s", it->session_id);
		snprintf(x->outcome, sizeof x->outcome, "%s", outcome);
		snprintf(x->by, sizeof x->by, "%s", reviewer ? reviewer : r->has_pd ? "policy" : "deadline");
		memcpy(x->message, summary, sizeof x->message);
		x->seq = seq;
		x->at = now_ms() / 1000;
		x->restricted = r->has_pd && r->pd.nreviewers;
		if (x->restricted)
			x->pd = r->pd;
		if (s->nrecent < sizeof s->recent / sizeof s->recent[0])
			s->nrecent++;
	}
	json_t *j = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s?,s:I,s:s}", "event", "request_finished", "session_id",
			      it->session_id, "timestamp", (json_int_t)(now_ms() / 1000), "type", r->type, "outcome",
			      outcome, "reviewer", reviewer, "latency_ms", (json_int_t)(now_ms() - it->created_ms),
			      "summary", summary);
	char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (line)
		fprintf(stderr, "%s\n", line);
	free(line);
	json_decref(j);
}

/* Finish a request: the entry is on disk before anyone hears of it. */
static void finish(struct signer *s, struct pq_item *it, json_t *result)
{
	struct req *r = it->data;
	if (it->blocking)
		send_result(s, r->conn, r->rid, result, 0);
	remember_done(s, it->session_id, r->conn, r->owner, result);
	json_decref(result);
	req_free(r);
}

static json_t *result_base(const char *sid, const char *status, int approved)
{
	return json_pack("{s:s,s:s,s:b,s:I}", "session_id", sid, "status", status, "approved", approved, "timestamp",
			 (json_int_t)(now_ms() / 1000));
}

struct collect_ctx {
	uint64_t conn;
	char (*sids)[PQ_SID_LEN + 1];
	size_t n, max;
};

static void collect_blocking(const struct pq_item *x, void *arg)
{
	struct collect_ctx *c = arg;
	const struct req *r = x->data;
	if (x->blocking && r->conn == c->conn && c->n < c->max)
		snprintf(c->sids[c->n++], PQ_SID_LEN + 1, "%s", x->session_id);
}

static void fail_conn_requests(struct signer *s, uint64_t conn, const char *reason)
{
	/* Blocking requests whose caller went away are cancelled and ledgered as such;
	 * a non-blocking request belongs to its requester and waits for its deadline. */
	char sids[64][PQ_SID_LEN + 1];
	struct collect_ctx c = {conn, sids, 0, 64};
	do {
		c.n = 0;
		pq_each(s->q, collect_blocking, &c);
		for (size_t i = 0; i < c.n; i++) {
			struct pq_item out;
			if (pq_remove(s->q, sids[i], &out) == 0) {
				append_simple(s, "cancelled", out.session_id, reason, NULL);
				request_log(s, &out, out.data, "cancelled", NULL, 0);
				req_free(out.data);
			}
		}
	} while (c.n == c.max);
	for (size_t i = 0; i < s->nbatch; i++) /* requests not yet on disk: cancelled once they are */
		if (s->batch[i]->it.data && s->batch[i]->it.blocking && s->batch[i]->conn == conn && !s->batch[i]->d)
			s->batch[i]->cancelled = 1;
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++)
		if (s->waiters[i].used && s->waiters[i].conn == conn)
			s->waiters[i].used = 0;
}

/* ---- frames from the mcp worker ---- */

static void conn_end(struct signer *s, struct conn *c)
{
	ctl_unwatch(s, (size_t)(c - s->conns)); /* the reviewer sees the end too */
	s->ended[s->ended_at++ % (sizeof s->ended / sizeof *s->ended)] = c->id;
	c->used = 0;
}

static int conn_ended(const struct signer *s, uint64_t id)
{
	for (size_t i = 0; i < sizeof s->ended / sizeof *s->ended; i++)
		if (s->ended[i] == id && id)
			return 1;
	return 0;
}

static int get_conn(struct signer *s, struct ipc_frame *f, int worker, struct conn **c, char *err)
{
	uint64_t id;
	GUARD(ipc_get_uint(f->body, "conn", UINT64_MAX, &id, err));
	if ((*c = conn_get(s, id, worker)))
		return 0;
	if (conn_ended(s, id))
		return as_fail(err, AS_ENOTFOUND, "a frame about connection %llu, which has ended: dropped",
			       (unsigned long long)id);
	return as_fail(err, AS_ECORRUPT, "frame names connection %llu, which it was never given", (unsigned long long)id);
}

static int text_of(const struct cv *v, char *out, size_t max)
{
	if (!v || v->t != CV_TEXT || v->n >= max)
		return -1;
	memcpy(out, v->s, v->n);
	out[v->n] = 0;
	return 0;
}

/* The action is the worker's claim of what the agent asked: check its shape here. */
static int check_action(const struct cv *a, const struct cv *contents, struct req *r, char *err)
{
	GUARD(action_check(a, err)); /* the field table the worker built it by (action.c) */
	if (text_of(cv_get(a, "type"), r->type, sizeof r->type) != 0 ||
	    (strcmp(r->type, "approval") && strcmp(r->type, "input") && strcmp(r->type, "selection") &&
	     strcmp(r->type, "confirmation")))
		return as_fail(err, AS_ECORRUPT, "action.type is not approval, input, selection or confirmation");
	const struct cv *m = cv_get(a, "message"), *o = cv_get(a, "options"), *aud = cv_get(a, "audience");
	if (!m || m->t != CV_TEXT || m->n == 0 || m->n > 65536)
		return as_fail(err, AS_ECORRUPT, "action.message missing or over 64 KiB");
	r->audience[0] = 0;
	if (aud && text_of(aud, r->audience, sizeof r->audience) != 0)
		return as_fail(err, AS_ECORRUPT, "action.audience is not text of at most 128 bytes");
	int is_sel = strcmp(r->type, "selection") == 0, has_opts = o && o->t == CV_ARRAY && o->n > 0 && o->n <= 32;
	if (is_sel != has_opts || (o && !has_opts))
		return as_fail(err, AS_ECORRUPT, "action.options must be 1-32 texts for a selection, and only then");
	if (o) {
		r->options = calloc(o->n, sizeof *r->options);
		for (size_t i = 0; r->options && i < o->n; i++) {
			if (o->items[i].t != CV_TEXT)
				return as_fail(err, AS_ECORRUPT, "action.options[%zu] is not text", i);
			r->options[i] = strndup((const char *)o->items[i].s, o->items[i].n);
			r->noptions++;
		}
	}
	r->subjects = json_array();
	const struct cv *sub = cv_get(a, "subject");
	if (sub && (sub->t != CV_ARRAY || sub->n == 0 || sub->n > 16))
		return as_fail(err, AS_ECORRUPT, "action.subject is not an array of 1-16 subjects");
	if ((sub != NULL) != (contents != NULL) || (contents && (contents->t != CV_ARRAY || contents->n != sub->n)))
		return as_fail(err, AS_ECORRUPT, "contents must hold one item per action.subject, and only then");
	for (size_t i = 0; sub && i < sub->n; i++) {
		const struct cv *x = &sub->items[i], *d = cv_get(x, "digest"), *c = &contents->items[i];
		char name[300], hex[65];
		uint8_t want[32], got[32];
		const struct cv *comp = cv_get(x, "computed"), *size = cv_get(x, "size");
		if (text_of(cv_get(x, "name"), name, sizeof name) || text_of(cv_get(d, "sha256"), hex, sizeof hex) ||
		    hex_decode(hex, strlen(hex), want, 32) != 0 || !comp || (comp->t != CV_TRUE && comp->t != CV_FALSE))
			return as_fail(err, AS_ECORRUPT, "action.subject[%zu] malformed", i);
		/* "computed" is the worker's claim; the signer holds it true only for bytes it
		 * hashed itself and that match the digest and size recorded. */
		if (comp->t == CV_TRUE) {
			if (c->t != CV_BYTES || !size || size->t != CV_UINT || size->u != c->n)
				return as_fail(err, AS_ECORRUPT, "action.subject[%zu] is computed but its bytes are missing", i);
			sha256(c->s, c->n, got);
			if (memcmp(got, want, 32) != 0)
				return as_fail(err, AS_ECORRUPT, "action.subject[%zu]: the bytes do not hash to its digest", i);
			if (!(r->content[i] = malloc(c->n ? c->n : 1)))
				return as_fail(err, AS_ENOMEM, "out of memory");
			memcpy(r->content[i], c->s, c->n);
			r->content_len[i] = c->n;
		} else if (c->t != CV_NULL || size) {
			return as_fail(err, AS_ECORRUPT, "action.subject[%zu] is asserted yet comes with bytes or a size", i);
		}
		json_array_append_new(r->subjects,
				      json_pack("{s:s,s:s,s:b}", "name", name, "sha256", hex, "computed", comp->t == CV_TRUE));
	}
	return 0;
}

static void request_refused(struct signer *s, uint64_t conn, struct req *r, const char *why)
{
	json_t *j = json_pack("{s:s}", "error", "the gateway could not record the request");
	slog("error", "request refused: %s", why);
	send_result(s, conn, r->rid, j, 1);
	json_decref(j);
	req_free(r);
}

/* The request entry is on disk: now it is pending, and a reviewer may see it. */
static void request_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct req *r = o->it.data;
	if (!pos) {
		request_refused(s, o->conn, r, err);
		return;
	}
	if (o->cancelled || (o->it.blocking && !conn_get(s, o->conn, W_MCP))) {
		append_simple(s, "cancelled", o->it.session_id,
			      o->cancelled ? "the agent cancelled the call" : "the agent disconnected", NULL);
		req_free(r);
		return;
	}
	if (pq_add(s->q, &o->it) != 0) {
		append_simple(s, "cancelled", o->it.session_id, "the queue of pending requests is full", NULL);
		request_refused(s, o->conn, r, "the queue of pending requests is full");
		return;
	}
	slog("info", "request %s (%s) from %s queued, deadline in %llu s", o->it.session_id, r->type, r->owner,
	     (unsigned long long)((o->it.deadline_ms - o->it.created_ms) / 1000));
	if (!o->it.blocking) {
		json_t *res = result_base(o->it.session_id, "pending", 0);
		json_object_set_new(res, "deadline", json_integer((json_int_t)(o->it.deadline_ms / 1000)));
		send_result(s, o->conn, r->rid, res, 0);
		json_decref(res);
	}
}

static void reload_registry(struct signer *s);
static void web_credentials_changed(struct signer *s, const struct registry *old);

/* ---- the policy (policy/): decide at once, or ask with its terms ---- */

/* The subjects of a request as a token and the policy name them (at most 16). */
static size_t req_subjects(const struct req *r, struct tok_subject out[16])
{
	size_t ns = 0, k;
	json_t *x;
	json_array_foreach(r->subjects, k, x) {
		if (ns == 16)
			break;
		out[ns].name = json_string_value(json_object_get(x, "name"));
		snprintf(out[ns].sha256, sizeof out[ns].sha256, "%s", json_string_value(json_object_get(x, "sha256")));
		out[ns++].computed = json_is_true(json_object_get(x, "computed"));
	}
	return ns;
}

/* Whom a token for r is for: the policy's token-audience, else the request's, else "assent". */
static const char *req_token_aud(const struct req *r)
{
	return r->has_pd && r->pd.token_audience[0] ? r->pd.token_audience : r->audience[0] ? r->audience : "assent";
}

/* The token a decision entry names: {jti, kid, exp}. */
static void put_token(struct cv_arena *a, struct cv *slot, const struct tok_ticket *t)
{
	*slot = *cv_map(a, 3);
	cv_set_text(a, &slot->items[0], "jti", 3);
	cv_set_text(a, &slot->items[1], t->jti, strlen(t->jti));
	cv_set_text(a, &slot->items[2], "kid", 3);
	cv_set_text(a, &slot->items[3], t->kid, strlen(t->kid));
	cv_set_text(a, &slot->items[4], "exp", 3);
	cv_set_uint(&slot->items[5], t->exp);
}

static void evaluate(struct signer *s, const struct conn *c, const struct req *r, struct pol_decision *d)
{
	struct tok_subject subj[16];
	const char *names[16];
	int computed[16];
	size_t ns = req_subjects(r, subj);
	for (size_t k = 0; k < ns; k++) {
		names[k] = subj[k].name;
		computed[k] = subj[k].computed;
	}
	char client[160];
	snprintf(client, sizeof client, "%s", r->client);
	client[strcspn(client, "/")] = 0; /* "name/version": rules match the name */
	struct pol_request q = {.type = r->type,
				.audience = r->audience[0] ? r->audience : NULL,
				.message = json_string_value(json_object_get(r->view, "message")),
				.agent = c->http ? (c->agent[0] ? c->agent : NULL)
					 : s->reg ? registry_agent_by_uid(s->reg, c->uid) /* measured: as good as a key */
						  : NULL,
				.uid = r->uid == (uid_t)-1 ? -1 : (long long)r->uid, /* measured, on either transport */
				.client = client,
				.context = json_object_get(r->view, "context"),
				.nsubjects = ns,
				.subject_names = names,
				.subject_computed = computed};
	policy_eval(s->pol, &q, d);
}

/* The policy's citation in an entry: {rule, digest, decision[, shadow {rule, would}]}. */
static void put_policy(struct cv_arena *a, struct cv *slot, const struct pol_decision *d, const char *digest)
{
	struct cv *m = cv_map(a, 3 + (d->shadowed ? 1 : 0) + (d->on_declared ? 1 : 0));
	size_t i = 0;
	cv_set_uint(kv(a, m, &i, "rule"), d->line);
	cv_set_text(a, kv(a, m, &i, "digest"), digest, strlen(digest));
	const char *act = pol_action_name(d->action);
	cv_set_text(a, kv(a, m, &i, "decision"), act, strlen(act));
	if (d->on_declared) /* the rule matched a name the agent declared, not one anyone checked */
		kv(a, m, &i, "on_declared_client")->t = CV_TRUE;
	if (d->shadowed) {
		struct cv *sh = cv_map(a, 2);
		size_t j = 0;
		cv_set_uint(kv(a, sh, &j, "rule"), d->shadow_line);
		const char *w = pol_action_name(d->shadow_action);
		cv_set_text(a, kv(a, sh, &j, "would"), w, strlen(w));
		*kv(a, m, &i, "shadow") = *sh;
	}
	*slot = *m;
}

struct pdecided { /* a decision the policy made at once, waiting for its commit */
	struct tok_request tr;
	struct tok_ticket t;
	struct tok_subject subj[16];
	char rule[24];
	int with_token;
};

static void finish(struct signer *s, struct pq_item *it, json_t *result);
static void request_log(struct signer *s, const struct pq_item *it, const struct req *r, const char *outcome,
			const char *reviewer, uint64_t seq);

static void policy_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct req *r = o->it.data;
	struct pdecided *pd = (struct pdecided *)o->d;
	o->d = NULL;
	int allow = r->pd.action == POL_ALLOW;
	json_t *res;
	if (!pos) {
		slog("error", "policy decision on %s not recorded: %s", o->it.session_id, err);
		res = json_pack("{s:s}", "error", "the gateway could not record the decision");
		send_result(s, r->conn, r->rid, res, 1);
		json_decref(res);
		req_free(r);
		free(pd);
		return;
	}
	char *jwt = NULL;
	char e2[AS_ERRLEN];
	if (pd->with_token && tok_issue(s->tk, &pd->tr, &pd->t, pos->seq, pos->leaf, &jwt, e2) != 0)
		slog("error", "token for %s: %s", o->it.session_id, e2);
	res = result_base(o->it.session_id, allow ? "approved" : "denied", allow);
	json_object_set_new(res, "response", allow ? json_null() : json_string(r->pd.reason));
	json_object_set_new(res, "policy", json_pack("{s:I,s:s}", "rule", (json_int_t)r->pd.line, "digest",
						      r->pol_digest));
	if (jwt)
		json_object_set_new(res, "approval_token", json_string(jwt));
	free(jwt);
	request_log(s, &o->it, r, allow ? "approved" : "denied", NULL, pos->seq);
	o->it.blocking = 1; /* decided at once: every caller hears now, waiting or not */
	finish(s, &o->it, res);
	free(pd);
}

static void policy_decide(struct signer *s, const struct conn *c, const struct pq_item *it, struct req *r)
{
	(void)c;
	int allow = r->pd.action == POL_ALLOW;
	struct pdecided *pd = calloc(1, sizeof *pd);
	char err[AS_ERRLEN] = "out of memory";
	if (pd) {
		snprintf(pd->rule, sizeof pd->rule, "line %u", r->pd.line);
		size_t ns = req_subjects(r, pd->subj);
		pd->tr = (struct tok_request){.aud = req_token_aud(r),
					      .session_id = it->session_id,
					      .policy_rule = pd->rule,
					      .policy_digest = r->pol_digest,
					      .subjects = pd->subj,
					      .nsubjects = ns,
					      .assurance = "policy",
					      .ttl = r->pd.token_ttl_s};
		snprintf(pd->tr.action_sha256, sizeof pd->tr.action_sha256, "%s", r->action + 7);
		pd->with_token = allow && s->tcfg.mode != TOK_OFF;
	}
	if (!pd || (pd->with_token && tok_prepare(s->tk, &pd->tr, &pd->t, err) != 0)) {
		request_refused(s, r->conn, r, err);
		free(pd);
		return;
	}
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 8);
	size_t i = 0;
	cv_set_text(a, kv(a, m, &i, "kind"), "decision", 8);
	cv_set_text(a, kv(a, m, &i, "session_id"), it->session_id, strlen(it->session_id));
	cv_set_text(a, kv(a, m, &i, "outcome"), allow ? "approved" : "denied", allow ? 8 : 6);
	cv_set_text(a, kv(a, m, &i, "assurance"), "policy", 6);
	put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	cv_set_text(a, kv(a, m, &i, "action"), r->action, strlen(r->action));
	if (!allow)
		cv_set_text(a, kv(a, m, &i, "response"), r->pd.reason, strlen(r->pd.reason));
	if (pd->with_token)
		put_token(a, kv(a, m, &i, "token"), &pd->t);
	m->n = i;
	struct op *o = op_add(s, m, policy_done, err);
	if (!o) {
		request_refused(s, r->conn, r, err);
		free(pd);
		return;
	}
	o->it = *it;
	o->conn = r->conn;
	o->d = (struct decision *)pd; /* policy_done's own record; never a struct decision */
	pd->tr.session_id = o->it.session_id; /* *it is the caller's, gone by the commit */
}

/* Load --policy FILE: at start (a bad one stops the daemon) and on SIGHUP (a bad one
 * leaves the running one in force). Each load is a policy_load entry. */
static int load_policy(struct signer *s, char *err)
{
	if (!s->o->policy)
		return 0;
	struct buf src;
	buf_init(&src, POL_FILE_MAX + 1);
	int rc = file_read(s->o->policy, POL_FILE_MAX, &src, err);
	if (rc != 0) {
		buf_free(&src);
		return rc;
	}
	struct policy *p;
	struct pol_msgs m;
	rc = policy_parse((const char *)src.p, src.len, &p, &m);
	for (size_t i = 0; i < m.n; i++)
		slog(m.m[i].warning ? "warning" : "error", "policy %s:%u:%u: %s%s%s%s", s->o->policy, m.m[i].line,
		     m.m[i].col, m.m[i].msg, m.m[i].text[0] ? ": '" : "", m.m[i].text, m.m[i].text[0] ? "'" : "");
	unsigned line = 0;
	/* Every option is enforced; a feature added to the language later and not yet here
	 * is refused at load (never applied weaker): list it in the mask below. */
	if (rc == 0 && policy_uses(p, 0, &line)) {
		policy_free(p);
		buf_free(&src);
		return as_fail(err, AS_EINVAL, "policy %s: line %u uses what this daemon does not enforce", s->o->policy,
			       line);
	}
	if (rc != 0) {
		buf_free(&src);
		return as_fail(err, AS_EINVAL, "policy %s has %zu errors (above)", s->o->policy, m.errors);
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *e = cv_map(&a, 5);
	size_t i = 0;
	char path[4096];
	snprintf(path, sizeof path, "%s", s->o->policy);
	cv_set_text(&a, kv(&a, e, &i, "kind"), "policy_load", 11);
	cv_set_text(&a, kv(&a, e, &i, "digest"), policy_digest(p), 64);
	cv_set_text(&a, kv(&a, e, &i, "source"), (const char *)src.p, src.len);
	cv_set_text(&a, kv(&a, e, &i, "path"), path, strlen(path));
	cv_set_uint(kv(&a, e, &i, "rules"), policy_nrules(p));
	rc = op_add(s, e, NULL, err) ? 0 : AS_ENOMEM;
	cv_arena_free(&a);
	buf_free(&src);
	if (rc != 0) {
		policy_free(p);
		return rc;
	}
	commit_batch(s);
	/* Requests already pending keep the terms they were asked under. */
	policy_free(s->pol);
	s->pol = p;
	slog("info", "policy %s loaded: %zu rules, sha256 %s", s->o->policy, policy_nrules(p), policy_digest(p));
	return 0;
}

static void measured_put(struct signer *s, uint64_t hreq, uint64_t conn, uid_t uid)
{
	s->measured[s->measured_at] = (struct measured){.hreq = hreq, .conn = conn, .uid = uid, .used = 1};
	s->measured_at = (s->measured_at + 1) % MAX_MEASURED;
}

/* The uid measured for HTTP request hreq of session conn, once. A request frame that
 * names no request the signer authenticated for that session is an attack. */
static int measured_take(struct signer *s, uint64_t hreq, uint64_t conn, uid_t *uid, char *err)
{
	for (size_t k = 1; k <= MAX_MEASURED; k++) { /* newest first: it is almost always the last one */
		struct measured *m = &s->measured[(s->measured_at + MAX_MEASURED - k) % MAX_MEASURED];
		if (!m->used)
			break;
		if (m->hreq == hreq && m->conn == conn) {
			*uid = m->uid;
			m->used = 0;
			m->hreq = 0;
			return 0;
		}
	}
	return as_fail(err, AS_ECORRUPT, "a request over HTTP (hreq %llu) that the signer never authenticated for that session",
		       (unsigned long long)hreq);
}

/* The audiences an agent may ask for, on every path (allow, ask, deny): the default
 * one, and those the registry lists for its API key (HTTP) or for the uid the signer
 * measured (stdio, assent agent add --uid). Anonymous clients and unregistered uids
 * get the default only. A refusal names the audience and what is allowed, and
 * nothing is recorded (as for an unknown key). NULL: allowed. */
static json_t *audience_refusal(struct signer *s, const struct conn *c, const struct req *r)
{
	reload_registry(s); /* evaluate() reads it next: a stdio agent registered by uid is that agent */
	if (!r->audience[0] || !strcmp(r->audience, POL_DEFAULT_AUDIENCE))
		return NULL;
	const char *agent = !s->reg ? NULL : c->http ? (c->agent[0] ? c->agent : NULL) : registry_agent_by_uid(s->reg, c->uid);
	if (agent && registry_agent_allows(s->reg, agent, r->audience))
		return NULL;
	json_t *e;
	if (agent)
		e = json_sprintf("audience \"%s\" refused: agent %s may ask for \"%s\" and %s only (an operator adds "
				 "one: assent agent add NAME --audience A)",
				 r->audience, agent, POL_DEFAULT_AUDIENCE, registry_groups_json(s->reg, "agent", agent));
	else if (c->http)
		e = json_sprintf("audience \"%s\" refused: an anonymous client may ask for the default audience \"%s\" "
				 "only (an API key names more: assent agent add NAME --audience A)",
				 r->audience, POL_DEFAULT_AUDIENCE);
	else
		e = json_sprintf("audience \"%s\" refused: uid %u is no registered agent, so it may ask for the default "
				 "audience \"%s\" only (an operator registers it: assent agent add NAME --uid %u "
				 "--audience %s)",
				 r->audience, (unsigned)c->uid, POL_DEFAULT_AUDIENCE, (unsigned)c->uid, r->audience);
	slog("warning", "request from %s refused: audience \"%s\" not allowed", c->owner, r->audience);
	return json_pack("{s:o}", "error", e);
}

struct owner_count {
	const char *owner;
	size_t pending, blocking;
	uid_t anon_uid; /* an anonymous client: all anonymous sessions of this measured uid count as one */
};

/* Each anonymous session owns its requests (listing, collecting), but sessions cost
 * nothing to make: for the limits, anonymous clients count by the uid the signer measured. */
static int same_principal(const struct req *r, const struct owner_count *oc)
{
	if (!strcmp(r->owner, oc->owner))
		return 1;
	return oc->anon_uid != (uid_t)-1 && r->uid == oc->anon_uid && !strncmp(r->owner, "anonymous", 9);
}

static void count_owner(const struct pq_item *it, void *arg)
{
	struct owner_count *oc = arg;
	if (!same_principal(it->data, oc))
		return;
	oc->pending++;
	oc->blocking += it->blocking != 0;
}

/* One principal (a uid, an agent key, an anonymous client) may hold at most
 * ASSENT_MAX_PENDING_PER_AGENT requests pending, ASSENT_MAX_BLOCKING_PER_AGENT of
 * them as calls held open: past either, the call is answered with an error naming
 * the limit (and logged), and the queue stays for everyone else. */
/* get_feedback calls of this owner waiting now. */
static size_t waiters_of(const struct signer *s, const char *owner)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++)
		n += s->waiters[i].used && !strcmp(s->waiters[i].owner, owner);
	return n;
}

/* How many calls one principal may hold open: ASSENT_MAX_BLOCKING_PER_AGENT; over HTTP,
 * where each holds one of ASSENT_HTTP_MAX_CONNECTIONS, a quarter of them at most. */
static unsigned blocking_limit(const struct signer *s, const struct conn *c)
{
	unsigned max = s->lim.c.blocking_per_agent;
	if (c->http && s->http.conns_max / 4 < max)
		max = s->http.conns_max / 4 ? s->http.conns_max / 4 : 1;
	return max;
}

static int request_over_limit(struct signer *s, const struct conn *c, uid_t uid, const char *rid, size_t ridn, int wait)
{
	struct owner_count oc = {c->owner, 0, 0, !strncmp(c->owner, "anonymous", 9) ? uid : (uid_t)-1};
	pq_each(s->q, count_owner, &oc);
	oc.blocking += waiters_of(s, c->owner); /* get_feedback calls held open count too */
	for (size_t i = 0; i < s->nbatch; i++) { /* requests not yet on disk count too */
		const struct op *o = s->batch[i];
		if (o->it.data && !o->d && same_principal(o->it.data, &oc)) {
			oc.pending++;
			oc.blocking += o->it.blocking != 0;
		}
	}
	/* Over HTTP each waiting call holds one of ASSENT_HTTP_MAX_CONNECTIONS: one
	 * principal gets a quarter of them at most. */
	unsigned blocking_max = blocking_limit(s, c);
	char msg[300], who[96];
	if (oc.anon_uid != (uid_t)-1)
		snprintf(who, sizeof who, "the anonymous clients of uid %u", (unsigned)oc.anon_uid);
	else
		snprintf(who, sizeof who, "%s", c->owner);
	if (oc.pending >= s->lim.c.pending_per_agent) {
		snprintf(msg, sizeof msg, "%s: %zu requests pending, the limit (ASSENT_MAX_PENDING_PER_AGENT=%u): wait "
			 "for decisions or cancel some", who, oc.pending, s->lim.c.pending_per_agent);
		lim_log(s, LIM_PENDING, "request refused: %s", msg);
	} else if (wait && oc.blocking >= blocking_max) {
		snprintf(msg, sizeof msg, "%s: %zu calls waiting for a decision, the limit (ASSENT_MAX_BLOCKING_PER_AGENT=%u%s): "
			 "ask with wait: false and collect with get_feedback", who, oc.blocking, blocking_max,
			 blocking_max < s->lim.c.blocking_per_agent ? ", a quarter of ASSENT_HTTP_MAX_CONNECTIONS over HTTP" : "");
		lim_log(s, LIM_BLOCKING, "request refused: %s", msg);
	} else {
		return 0;
	}
	char r[PROTO_RID_MAX + 1];
	snprintf(r, sizeof r, "%.*s", (int)ridn, rid);
	json_t *j = json_pack("{s:s}", "error", msg);
	send_result(s, c->id, r, j, 1);
	json_decref(j);
	return 1;
}

_Static_assert(ACTION_CLIENT_MAX < sizeof ((struct req *)0)->client && ACTION_CLIENT_MAX < sizeof ((struct conn *)0)->client,
	       "the signer keeps every client name the table allows");

/* A client name as declared (shown to reviewers): the worker turned what a terminal
 * would act on into '?', so anything else is an attack. */
static int client_ok(const char *s, size_t n, char *err)
{
	size_t at;
	uint32_t cp;
	if (text_check(TEXT_LINE, s, n, &at, &cp) != 0)
		return as_fail(err, AS_ECORRUPT, "client: character U+%04X at byte %zu is not allowed", (unsigned)cp, at);
	return 0;
}

static int h_request(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *rid, *client;
	size_t ridn, clientn;
	uint64_t timeout;
	int wait;
	const struct cv *action;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	GUARD(ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err));
	GUARD(ipc_get_text(f->body, "client", ACTION_CLIENT_MAX, &client, &clientn, err));
	GUARD(client_ok(client, clientn, err));
	GUARD(ipc_get_uint(f->body, "timeout", TIMEOUT_MAX_S, &timeout, err));
	GUARD(ipc_get_bool(f->body, "wait", &wait, err));
	GUARD(ipc_get(f->body, "action", CV_MAP, &action, err));
	const struct cv *contents = cv_get(f->body, "contents");
	/* Who asked: measured on the unix socket (SO_PEERCRED), or on this HTTP request's
	 * own TCP connection when it came over loopback (inet_diag, in h_http_auth). */
	uid_t uid = c->uid;
	if (c->http) {
		uint64_t hreq;
		GUARD(ipc_get_uint(f->body, "hreq", UINT64_MAX, &hreq, err));
		GUARD(measured_take(s, hreq, c->id, &uid, err));
	}
	if (request_over_limit(s, c, uid, rid, ridn, wait))
		return 0;
	if (timeout > s->lim.c.max_timeout_s) /* timeout_override is capped, never refused */
		timeout = s->lim.c.max_timeout_s;
	struct req *r = calloc(1, sizeof *r);
	if (!r)
		return AS_ENOMEM;
	r->conn = c->id;
	r->uid = uid;
	memcpy(r->rid, rid, ridn);
	snprintf(r->client, sizeof r->client, "%.*s", (int)clientn, client);
	snprintf(r->owner, sizeof r->owner, "%s", c->owner);
	int rc = check_action(action, contents, r, err);
	if (rc != 0) {
		req_free(r);
		return rc;
	}
	json_t *refused = audience_refusal(s, c, r);
	if (refused) {
		send_result(s, c->id, r->rid, refused, 1);
		json_decref(refused);
		req_free(r);
		return 0;
	}
	/* The digest covers the canonical action exactly as recorded and shown. */
	struct buf enc;
	buf_init(&enc, IPC_FRAME_MAX);
	uint8_t h[32];
	char hex[65];
	if (cbor_encode(action, &enc, err) != 0) {
		buf_free(&enc);
		req_free(r);
		return AS_ECORRUPT;
	}
	sha256(enc.p, enc.len, h);
	buf_free(&enc);
	hex_encode(h, 32, hex);
	snprintf(r->action, sizeof r->action, "sha256:%s", hex);
	struct pq_item it = {0};
	pq_new_session_id(it.session_id);
	it.created_ms = now_ms();
	r->view = cv_to_json(action); /* what a reviewer is shown, and what the policy reads */
	struct pol_decision pd;
	if (s->pol) {
		evaluate(s, c, r, &pd);
		r->pd = pd;
		r->has_pd = 1;
		snprintf(r->pol_digest, sizeof r->pol_digest, "%s", policy_digest(s->pol));
		/* The policy's deadline bounds the agent's: an override may shorten it only. */
		if (pd.deadline_s && (!timeout || timeout > pd.deadline_s))
			timeout = pd.deadline_s;
	}
	it.deadline_ms = it.created_ms + 1000u * (timeout ? timeout : s->timeout_s);
	it.requester_id = c->id;
	it.requester_uid = uid;
	it.blocking = wait;
	it.data = r;
	/* The request entry: the action's fields, who asked (measured uid, declared client), digest, deadline. */
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, action->n + 6);
	size_t i = 0;
	for (size_t k = 0; k < action->n; k++) {
		m->items[2 * i] = action->items[2 * k];
		m->items[2 * i++ + 1] = action->items[2 * k + 1];
	}
	cv_set_text(a, kv(a, m, &i, "kind"), "request", 7);
	cv_set_text(a, kv(a, m, &i, "session_id"), it.session_id, strlen(it.session_id));
	struct cv *rq = kv(a, m, &i, "requester");
	rq->t = CV_MAP;
	rq->n = 2;
	rq->items = cv_alloc(a, 6);
	if (!c->http) { /* measured: SO_PEERCRED */
		cv_set_text(a, &rq->items[0], "uid", 3);
		cv_set_uint(&rq->items[1], (uint64_t)c->uid);
	} else if (c->agent[0]) { /* authenticated: its API key */
		cv_set_text(a, &rq->items[0], "agent", 5);
		cv_set_text(a, &rq->items[1], c->agent, strlen(c->agent));
	} else {
		cv_set_text(a, &rq->items[0], "anonymous", 9);
		rq->items[1].t = CV_TRUE;
	}
	cv_set_text(a, &rq->items[2], "client", 6);
	cv_set_text(a, &rq->items[3], r->client, strlen(r->client));
	/* A stdio agent registered by uid is that agent (assent agent add NAME --uid UID). */
	const char *uid_agent = !c->http && s->reg ? registry_agent_by_uid(s->reg, c->uid) : NULL;
	if (c->http && uid != (uid_t)-1) { /* measured: the owner of its loopback connection */
		cv_set_text(a, &rq->items[4], "uid", 3);
		cv_set_uint(&rq->items[5], (uint64_t)uid);
		rq->n = 3;
	} else if (uid_agent) {
		cv_set_text(a, &rq->items[4], "agent", 5);
		cv_set_text(a, &rq->items[5], uid_agent, strlen(uid_agent));
		rq->n = 3;
	}
	cv_set_text(a, kv(a, m, &i, "action"), r->action, strlen(r->action));
	cv_set_uint(kv(a, m, &i, "deadline"), it.deadline_ms);
	if (r->has_pd)
		put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	m->n = i;
	json_object_set_new(r->view, "session_id", json_string(it.session_id));
	json_t *who = !c->http      ? json_pack("{s:I,s:s}", "uid", (json_int_t)c->uid, "client", r->client)
		      : c->agent[0] ? json_pack("{s:s,s:s}", "agent", c->agent, "client", r->client)
				    : json_pack("{s:b,s:s}", "anonymous", 1, "client", r->client);
	if (c->http && uid != (uid_t)-1)
		json_object_set_new(who, "uid", json_integer((json_int_t)uid));
	else if (uid_agent) { /* known by its measured uid, not by a key */
		json_object_set_new(who, "agent", json_string(uid_agent));
		json_object_set_new(who, "agent_by", json_string("uid"));
	}
	json_object_set_new(r->view, "requester", who);
	json_object_set_new(r->view, "created", json_integer((json_int_t)(it.created_ms / 1000)));
	json_object_set_new(r->view, "deadline", json_integer((json_int_t)(it.deadline_ms / 1000)));
	json_object_set_new(r->view, "action", json_string(r->action));
	if (r->has_pd) {
		json_object_set_new(r->view, "policy", json_pack("{s:I,s:s}", "rule", (json_int_t)r->pd.line, "digest",
								 r->pol_digest));
		if (r->pd.nreviewers) {
			json_t *rv = json_array();
			for (size_t k = 0; k < r->pd.nreviewers; k++)
				json_array_append_new(rv, json_string(r->pd.reviewers[k]));
			json_object_set_new(json_object_get(r->view, "policy"), "reviewers", rv);
		}
	}
	char e2[AS_ERRLEN];
	int decided = r->has_pd && r->pd.action != POL_ASK;
	struct op *o = op_add(s, m, decided ? NULL : request_done, e2);
	if (!o) {
		request_refused(s, c->id, r, e2);
		return 0;
	}
	if (decided) { /* allowed or denied at once: the decision follows in the same commit */
		policy_decide(s, c, &it, r);
		return 0;
	}
	o->it = it;
	o->conn = c->id;
	return 0;
}

static int h_collect(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *rid, *sid;
	size_t ridn, sidn;
	uint64_t wait;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	GUARD(ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err));
	GUARD(ipc_get_text(f->body, "sid", PQ_SID_LEN + 8, &sid, &sidn, err));
	GUARD(ipc_get_uint(f->body, "wait", 60, &wait, err));
	char r[PROTO_RID_MAX + 1], id[PQ_SID_LEN + 9];
	snprintf(r, sizeof r, "%.*s", (int)ridn, rid);
	snprintf(id, sizeof id, "%.*s", (int)sidn, sid);
	/* A request belongs to its requester (the measured uid), not to a connection. */
	for (size_t i = 0; i < s->ndone; i++) {
		struct done *d = done_at(s, i);
		if (d->result && !strcmp(d->sid, id) && !strcmp(d->owner, c->owner)) {
			send_result(s, c->id, r, d->result, 0);
			return 0;
		}
	}
	struct pq_item *it = pq_find(s->q, id);
	if (!it || strcmp(((struct req *)it->data)->owner, c->owner) != 0) {
		json_t *j = json_pack("{s:s}", "error", "no request of yours has this session_id");
		send_result(s, c->id, r, j, 1);
		json_decref(j);
		return 0;
	}
	if (wait == 0) {
		json_t *res = result_base(id, "pending", 0);
		json_object_set_new(res, "deadline", json_integer((json_int_t)(it->deadline_ms / 1000)));
		send_result(s, c->id, r, res, 0);
		json_decref(res);
		return 0;
	}
	/* A waiting get_feedback is a call held open: it counts in its principal's blocking
	 * limit, so one agent cannot take every waiter slot (or connection) from the others. */
	struct owner_count oc = {c->owner, 0, 0, (uid_t)-1};
	pq_each(s->q, count_owner, &oc);
	size_t held = oc.blocking + waiters_of(s, c->owner);
	unsigned max = blocking_limit(s, c);
	if (held >= max) {
		char msg[300];
		snprintf(msg, sizeof msg, "%s has %zu calls waiting for a decision, the limit (ASSENT_MAX_BLOCKING_PER_AGENT=%u%s): "
			 "call get_feedback with wait_seconds 0, or fewer at once", c->owner, held, max,
			 max < s->lim.c.blocking_per_agent ? ", a quarter of ASSENT_HTTP_MAX_CONNECTIONS over HTTP" : "");
		lim_log(s, LIM_BLOCKING, "get_feedback refused: %s", msg);
		json_t *j = json_pack("{s:s}", "error", msg);
		send_result(s, c->id, r, j, 1);
		json_decref(j);
		return 0;
	}
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++) {
		struct waiter *w = &s->waiters[i];
		if (w->used)
			continue;
		*w = (struct waiter){.conn = c->id, .until = now_ms() + 1000 * wait, .used = 1};
		snprintf(w->owner, sizeof w->owner, "%s", c->owner);
		snprintf(w->rid, sizeof w->rid, "%s", r);
		snprintf(w->sid, sizeof w->sid, "%s", id);
		return 0;
	}
	json_t *j = json_pack("{s:s}", "error", "too many get_feedback calls waiting; try again");
	send_result(s, c->id, r, j, 1);
	json_decref(j);
	return 0;
}

/* Lists hold summaries, never whole requests: a reply is one frame, and a thousand
 * 64 KiB messages would not fit. `show` (reviewers) has everything. */
#define LIST_MAX 1000
#define LIST_MESSAGE_MAX 512

/* Reviewer and agent views are pages: items go in while their JSON fits in
 * VIEW_PAGE_BYTES, so that an answer is one frame (IPC_FRAME_MAX) whatever the
 * queue holds; the rest are counted ("more") and the next page starts at
 * "next_offset". */
#define VIEW_PAGE_BYTES (IPC_FRAME_MAX / 2)

static size_t json_size(const json_t *j) { return json_dumpb(j, NULL, 0, JSON_COMPACT); }

/* Add v to a page, or count it as one more when it does not fit (v is taken either way). */
static void page_add(json_t *arr, json_t *v, size_t *used, size_t *more, size_t max_items)
{
	size_t n = json_size(v);
	if (*more || json_array_size(arr) >= max_items || *used + n > VIEW_PAGE_BYTES) {
		(*more)++;
		json_decref(v);
		return;
	}
	*used += n;
	json_array_append_new(arr, v);
}

static int reviewer_allowed(struct signer *s, const char *reviewer, const struct pol_decision *pd);

/* A reviewer sees what they may decide: a rule that names its reviewers hides its
 * requests from everyone else (their existence too, in lists, show and recent). */
static int reviewer_may_see(struct signer *s, const char *reviewer, const struct req *r)
{
	return !reviewer || !r->has_pd || !r->pd.nreviewers || reviewer_allowed(s, reviewer, &r->pd);
}

struct list_ctx {
	struct signer *s;
	const char *owner;    /* an agent's own list; NULL: a reviewer's */
	const char *reviewer; /* a reviewer's list: only what they may decide */
	json_t *arr;
	size_t more, offset, skipped, used;
};

static void list_one(const struct pq_item *it, void *arg)
{
	struct list_ctx *l = arg;
	const struct req *r = it->data;
	if (l->owner && strcmp(r->owner, l->owner) != 0)
		return;
	if (!l->owner && !reviewer_may_see(l->s, l->reviewer, r))
		return;
	if (l->skipped < l->offset) {
		l->skipped++;
		return;
	}
	if (l->more || json_array_size(l->arr) == LIST_MAX) {
		l->more++;
		return;
	}
	const char *msg = json_string_value(json_object_get(r->view, "message"));
	size_t n = strlen(msg);
	if (n > LIST_MESSAGE_MAX) /* cut on a character boundary */
		for (n = LIST_MESSAGE_MAX; n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80; n--)
			;
	json_t *v = json_pack("{s:s,s:s,s:s%,s:I,s:I}", "session_id", it->session_id, "type", r->type, "message", msg,
			      n, "created", (json_int_t)(it->created_ms / 1000), "deadline",
			      (json_int_t)(it->deadline_ms / 1000));
	if (n < strlen(msg))
		json_object_set_new(v, "message_truncated", json_true());
	if (r->audience[0])
		json_object_set_new(v, "audience", json_string(r->audience));
	if (!l->owner)
		json_object_set(v, "requester", json_object_get(r->view, "requester"));
	page_add(l->arr, v, &l->used, &l->more, LIST_MAX);
}

/* owner: an agent's own requests; else the reviewer's (what they may decide). From
 * the offset-th on, in deadline order. */
static json_t *list_reply_page(struct signer *s, const char *owner, const char *reviewer, size_t offset)
{
	struct list_ctx l = {.s = s, .owner = owner, .reviewer = reviewer, .arr = json_array(), .offset = offset};
	pq_each(s->q, list_one, &l);
	size_t shown = json_array_size(l.arr);
	json_t *j = json_pack("{s:o}", "requests", l.arr);
	if (l.more) {
		json_object_set_new(j, "more", json_integer((json_int_t)l.more));
		json_object_set_new(j, "next_offset", json_integer((json_int_t)(offset + shown)));
	}
	return j;
}

static json_t *list_reply(struct signer *s, const char *owner) { return list_reply_page(s, owner, NULL, 0); }

/* A view over max bytes of JSON (a context of escapes: each byte may print as six)
 * loses its context, with a note saying so, so that it fits in an answer. */
static void view_fit(json_t *v, size_t max)
{
	size_t n = json_size(v);
	if (n <= max || !json_object_get(v, "context"))
		return;
	json_object_del(v, "context");
	json_object_set_new(v, "context_omitted",
			    json_sprintf("the context is too large to show here (the request is %zu bytes as JSON)", n));
}

/* A request as a reviewer sees it, with the subjects' bytes (base64) when they fit in a reply. */
static json_t *show_reply(const struct req *r)
{
	json_t *v = json_deep_copy(r->view);
	json_t *subs = json_object_get(v, "subject"), *x;
	size_t i, total = 0;
	for (i = 0; i < 16; i++)
		total += r->content_len[i];
	int fits = total / 3 * 4 < IPC_FRAME_MAX / 2; /* the rest of the view takes at most the other half */
	view_fit(v, IPC_FRAME_MAX / 2);
	json_array_foreach(subs, i, x) {
		if (i >= 16 || !r->content[i])
			continue;
		if (!fits) {
			json_object_set_new(x, "content_omitted", json_string("too large to show here with the rest"));
			continue;
		}
		struct buf b;
		buf_init(&b, IPC_FRAME_MAX);
		if (b64_encode(r->content[i], r->content_len[i], &b) == 0)
			json_object_set_new(x, "content_base64", json_stringn((const char *)b.p, b.len));
		buf_free(&b);
	}
	return json_pack("{s:b,s:o}", "ok", 1, "request", v);
}

static int h_list(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *rid;
	size_t ridn;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	GUARD(ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err));
	char r[PROTO_RID_MAX + 1];
	snprintf(r, sizeof r, "%.*s", (int)ridn, rid);
	json_t *res = list_reply(s, c->owner);
	send_result(s, c->id, r, res, 0);
	json_decref(res);
	return 0;
}

struct find_ctx {
	uint64_t conn;
	const char *rid;
	char sid[PQ_SID_LEN + 1];
};

static void find_rid(const struct pq_item *it, void *arg)
{
	struct find_ctx *fc = arg;
	const struct req *r = it->data;
	if (it->blocking && r->conn == fc->conn && !strcmp(r->rid, fc->rid))
		snprintf(fc->sid, sizeof fc->sid, "%s", it->session_id);
}

static int h_cancel(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *rid;
	size_t ridn;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	GUARD(ipc_get_text(f->body, "rid", PROTO_RID_MAX, &rid, &ridn, err));
	char r[PROTO_RID_MAX + 1];
	snprintf(r, sizeof r, "%.*s", (int)ridn, rid);
	struct find_ctx fc = {c->id, r, ""};
	pq_each(s->q, find_rid, &fc);
	struct pq_item out;
	if (fc.sid[0] && pq_remove(s->q, fc.sid, &out) == 0) {
		append_simple(s, "cancelled", out.session_id, "the agent cancelled the call", NULL);
		request_log(s, &out, out.data, "cancelled", NULL, 0);
		req_free(out.data);
	}
	for (size_t i = 0; i < s->nbatch; i++) { /* not yet on disk: cancelled once it is */
		struct op *o = s->batch[i];
		if (o->it.data && o->it.blocking && !o->d && o->conn == c->id && !strcmp(((struct req *)o->it.data)->rid, r))
			o->cancelled = 1;
	}
	return 0;
}

static int h_conn_closed(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t id;
	GUARD(ipc_get_uint(f->body, "conn", UINT64_MAX, &id, err));
	struct conn *c = conn_get(s, id, s->cur);
	if (!c && conn_ended(s, id))
		return 0;
	/* The signer ends connections itself too (a reviewer hanging up, a swept session):
	 * the worker's notice of one may come after more than the ended ring remembers.
	 * A connection handed out once and live for no worker now is stale, not an attack. */
	if (!c && id && id <= s->next_conn) {
		int live = 0;
		for (size_t i = 0; i < MAX_CONNS && !live; i++)
			live = s->conns[i].used && s->conns[i].id == id;
		if (!live)
			return 0;
	}
	if (!c)
		return as_fail(err, AS_ECORRUPT, "closes connection %llu, which it was never given", (unsigned long long)id);
	if (s->cur == W_MCP)
		fail_conn_requests(s, id, "the agent disconnected");
	conn_end(s, c);
	return 0;
}

static int h_log(void *ctx, struct ipc_frame *f, char *err)
{
	(void)ctx;
	const char *lv, *txt;
	size_t lvn, txtn;
	GUARD(ipc_get_text(f->body, "level", 16, &lv, &lvn, err));
	GUARD(ipc_get_text(f->body, "text", 1024, &txt, &txtn, err));
	char lvl[17];
	snprintf(lvl, sizeof lvl, "%.*s", (int)lvn, lv);
	int rank = log_rank(lvl);
	if (rank >= 0 && rank < 9 && rank < log_min) /* a worker's word cannot raise itself to a security event */
		return 0;
	slog("worker", "%.*s: %.*s", (int)lvn, lv, (int)txtn, txt);
	return 0;
}

static int h_hello(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	const char *kind;
	size_t n;
	GUARD(ipc_get_text(f->body, "kind", 16, &kind, &n, err));
	if (strlen(s->w[s->cur].kind) != n || memcmp(kind, s->w[s->cur].kind, n) != 0)
		return as_fail(err, AS_ECORRUPT, "hello from the %s worker says it is '%.*s'", s->w[s->cur].kind, (int)n, kind);
	s->w[s->cur].state = S_READY;
	s->w[s->cur].restarts = 0;
	return 0;
}

/* ---- a reviewer's commands ---- */

static void reload_registry(struct signer *s)
{
	char path[4200], err[AS_ERRLEN];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", s->o->state, REG_FILE);
	time_t mt = stat(path, &st) == 0 ? st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec : 0;
	if (s->reg && mt == s->reg_mtime)
		return;
	struct registry *r;
	if (registry_load(s->o->state, &r, err) != 0) {
		slog("error", "identity registry: %s (keeping the one loaded)", err);
		return;
	}
	struct registry *old = s->reg;
	s->reg = r;
	s->reg_mtime = mt;
	if (old)
		web_credentials_changed(s, old);
	registry_free(old);
}

static json_t *ctl_error(const char *fmt, ...) AS_PRINTF(1, 2);
static json_t *ctl_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b,s:s}", "ok", 0, "error", msg);
}

struct decision {
	char rule[24];
	char *reviewer, *response;
	char outcome[17];
	int approved, with_token;
	uint64_t n;
	struct tok_request tr;
	struct tok_ticket t;
	struct tok_subject subj[16];
	size_t ns;
};

static void decision_free(struct decision *d)
{
	if (!d)
		return;
	free(d->reviewer);
	free(d->response);
	free(d);
}

/* The decision is on disk: now the token, then the answers (agent and reviewer). */
static void decision_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct decision *d = o->d;
	const char *sid = o->it.session_id;
	if (!pos) {
		slog("error", "decision on %s not recorded: %s", sid, err);
		reply_to(s, o->conn, o->web, ctl_error("the decision could not be recorded: %s", err));
		if (pq_add(s->q, &o->it) != 0) /* still pending; its deadline still holds */
			req_free(o->it.data);
		decision_free(d);
		return;
	}
	struct req *r = o->it.data;
	char *jwt = NULL;
	char e2[AS_ERRLEN];
	if (d->with_token && tok_issue(s->tk, &d->tr, &d->t, pos->seq, pos->leaf, &jwt, e2) != 0)
		slog("error", "token for %s: %s", sid, e2);
	json_t *res = result_base(sid, d->outcome, d->approved);
	json_object_set_new(res, "response", d->response ? json_string(d->response) : json_null());
	json_object_set_new(res, "reviewer", json_string(d->reviewer));
	if (!strcmp(d->outcome, "selected"))
		json_object_set_new(res, "selection", json_integer((json_int_t)d->n));
	if (jwt)
		json_object_set_new(res, "approval_token", json_string(jwt));
	free(jwt);
	request_log(s, &o->it, r, d->outcome, d->reviewer, pos->seq);
	reply_to(s, o->conn, o->web,
		 json_pack("{s:b,s:s,s:s,s:b,s:I}", "ok", 1, "session_id", sid, "outcome", d->outcome, "token",
			   d->with_token, "seq", (json_int_t)pos->seq));
	finish(s, &o->it, res);
	decision_free(d);
}

/* May this reviewer decide under the policy's terms: named, or in a named group? */
static int reviewer_allowed(struct signer *s, const char *reviewer, const struct pol_decision *pd)
{
	const char *gj = registry_groups_json(s->reg, "reviewer", reviewer);
	json_t *groups = gj ? json_loads(gj, JSON_DECODE_ANY, NULL) : NULL;
	int ok = 0;
	for (size_t k = 0; k < pd->nreviewers && !ok; k++) {
		const char *want = pd->reviewers[k];
		if (strncmp(want, "group:", 6) != 0) {
			ok = !strcmp(want, reviewer);
			continue;
		}
		size_t i;
		json_t *g;
		json_array_foreach(groups, i, g) {
			if (json_is_string(g) && !strcmp(json_string_value(g), want + 6))
				ok = 1;
		}
	}
	json_decref(groups);
	return ok;
}

/* Who decides, as the signer measured it: the reviewer's name, the channel (cli:
 * the control socket, uid from SO_PEERCRED; web: the reviewer listener, by session
 * cookie, proxy identity or reviewer token), and where the answer goes. */
struct who {
	const char *reviewer;
	const char *channel; /* "cli" | "web" */
	const char *via;     /* web: "session" | "proxy" | "token" */
	uid_t uid;           /* cli only; (uid_t)-1 on the web */
	uint64_t reply;      /* the control connection, or the web request */
	int web;
};

/* The reviewer an agent names as responsible for it (assent agent add --owner) never
 * decides its requests, on any channel: an HTTP agent by its key, a stdio agent by the
 * uid it was registered with. NULL: not the owner. */
static json_t *owner_refusal(const struct signer *s, const struct req *r, const char *reviewer, const char *sid)
{
	const char *agent = NULL;
	uint64_t uid;
	if (!s->reg)
		return NULL;
	if (!strncmp(r->owner, "agent:", 6))
		agent = r->owner + 6;
	else if (!strncmp(r->owner, "uid:", 4) && parse_u64(r->owner + 4, &uid) == 0 && uid <= 0xffffffffu)
		agent = registry_agent_by_uid(s->reg, (uid_t)uid);
	const char *own = agent ? registry_agent_owner(s->reg, agent) : NULL;
	/* The agent registered for the uid measured on an HTTP request is the same agent,
	 * whatever key it used: its owner is held to it too. */
	if ((!own || strcmp(own, reviewer) != 0) && r->uid != (uid_t)-1 && strncmp(r->owner, "uid:", 4) != 0) {
		const char *by_uid = registry_agent_by_uid(s->reg, r->uid);
		const char *own2 = by_uid ? registry_agent_owner(s->reg, by_uid) : NULL;
		if (own2 && !strcmp(own2, reviewer)) {
			agent = by_uid;
			own = own2;
		}
	}
	if (!own || strcmp(own, reviewer) != 0)
		return NULL;
	slog("warning", "decision on %s by %s refused: the owner of agent %s", sid, reviewer, agent);
	return ctl_error("refused: %s is the owner of agent %s, which asked for %s; a decision must come from "
			 "someone else",
			 reviewer, agent, sid);
}

static json_t *decide_checked(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		      uint64_t n)
{
	const char *reviewer = c->reviewer;
	struct pq_item *it = pq_find(s->q, sid);
	if (!it)
		return ctl_error("no pending request %s (decided, timed out or cancelled?)", sid);
	struct req *r = it->data;
	/* A reviewer outside the rule's set is not shown the request either: they learn no more here. */
	if (r->has_pd && r->pd.nreviewers && !reviewer_allowed(s, reviewer, &r->pd))
		return ctl_error("no pending request %s that %s may decide (the policy names other reviewers, or it "
				 "was decided, timed out or cancelled)",
				 sid, reviewer);
	json_t *owned = owner_refusal(s, r, reviewer, sid);
	if (owned)
		return owned;
	const char *assurance = "reviewer";
	/* Separation of duties: the requester's uid is one person whatever channel they
	 * decide on: measured here (cli), or one of the reviewer's registered uids (web).
	 * A request from the daemon's own uid is everybody's: that uid reads the keys and
	 * writes the registry, so it could have registered any reviewer for itself. */
	uid_t ru = it->requester_uid;
	int self = ru != (uid_t)-1 && ru == s->self_uid;
	int same = self || (c->uid != (uid_t)-1 && c->uid == ru) ||
		   (ru != (uid_t)-1 && registry_reviewer_has_uid(s->reg, reviewer, ru));
	if (self && !s->o->single_user)
		return ctl_error("refused: %s came from uid %u, the daemon's own (it can read the keys and register "
				 "reviewers), so nobody can decide it as another person (single-user mode is off)",
				 sid, (unsigned)ru);
	if (self && r->has_pd && !r->pd.same_user_ok)
		return ctl_error("refused: %s came from uid %u, the daemon's own, and the policy (line %u) does not let "
				 "the requester's own uid decide (same-user ok)",
				 sid, (unsigned)ru, r->pd.line);
	if (same && c->web) {
		if (!s->o->single_user || (r->has_pd && !r->pd.same_user_ok))
			return ctl_error("refused: %s asked for %s (uid %u) and cannot decide it", reviewer, sid,
					 (unsigned)it->requester_uid);
		assurance = "same-user";
	} else if (same) {
		if (!s->o->single_user)
			return ctl_error("refused: uid %u asked for %s itself; a decision must come from another person "
					 "(single-user mode is off)",
					 (unsigned)c->uid, sid);
		/* With a policy, the rule must say so too: the daemon's opt-in alone is not enough. */
		if (r->has_pd && !r->pd.same_user_ok)
			return ctl_error("refused: uid %u asked for %s itself, and the policy (line %u) does not let the "
					 "requester's own uid decide (same-user ok)",
					 (unsigned)c->uid, sid, r->pd.line);
		assurance = "same-user";
	}
	/* The terminal (the control socket) and the web are channels; a rule may leave one out. */
	if (r->has_pd && r->pd.channels && !(r->pd.channels & (c->web ? POL_CH_WEB : POL_CH_TERMINAL)))
		return ctl_error("refused: the policy (line %u) does not take decisions on %s from the %s", r->pd.line, sid,
				 c->web ? "web" : "terminal");
	int yesno = !strcmp(r->type, "approval") || !strcmp(r->type, "confirmation");
	const char *response = text;
	int approved = 0;
	if (!strcmp(outcome, "approved") && yesno) {
		approved = 1;
	} else if (!strcmp(outcome, "rejected")) {
		if (!text || !*text)
			return ctl_error("a rejection needs a reason (-m TEXT)");
	} else if (!strcmp(outcome, "answered") && !strcmp(r->type, "input")) {
		if (!text)
			return ctl_error("answer needs the text");
		if (!*text && json_is_string(json_object_get(r->view, "default")))
			response = json_string_value(json_object_get(r->view, "default"));
	} else if (!strcmp(outcome, "selected") && !strcmp(r->type, "selection")) {
		if (n < 1 || n > r->noptions)
			return ctl_error("option %llu does not exist: choose 1 to %zu", (unsigned long long)n, r->noptions);
		response = r->options[n - 1];
	} else {
		return ctl_error("a %s request cannot be %s", r->type, outcome);
	}
	if (approved && r->has_pd && r->pd.quorum > 1) {
		/* A quorum counts people: each reviewer once, whatever channel they use. The
		 * approvals so far are kept here; the decision entry lists them all. */
		for (size_t k = 0; k < r->napprovers; k++)
			if (!strcmp(r->approvers[k], reviewer))
				return ctl_error("%s has approved %s already; it needs %zu more distinct reviewer%s", reviewer,
						 sid, (size_t)r->pd.quorum - r->napprovers,
						 r->pd.quorum - r->napprovers == 1 ? "" : "s");
		if (r->napprovers + 1 < r->pd.quorum && r->napprovers < 16) {
			snprintf(r->approvers[r->napprovers++], sizeof r->approvers[0], "%s", reviewer);
			json_t *ap = json_array();
			for (size_t k = 0; k < r->napprovers; k++)
				json_array_append_new(ap, json_string(r->approvers[k]));
			json_object_set_new(r->view, "approvals", ap);
			s->web_bumps++; /* the page shows who approved so far */
			slog("info", "request %s: approval %zu of %u, by %s", sid, r->napprovers, r->pd.quorum, reviewer);
			return json_pack("{s:b,s:s,s:s,s:b,s:I,s:I}", "ok", 1, "session_id", sid, "outcome", "approved", "pending",
					 1, "approvals", (json_int_t)r->napprovers, "quorum", (json_int_t)r->pd.quorum);
		}
	}
	/* The decision entry names the token it will carry (jti, kid, exp): prepare it first. */
	struct decision *d = calloc(1, sizeof *d);
	if (!d)
		return ctl_error("out of memory");
	d->reviewer = strdup(reviewer);
	d->response = response ? strdup(response) : NULL;
	snprintf(d->outcome, sizeof d->outcome, "%s", outcome);
	d->approved = approved;
	d->n = n;
	d->ns = req_subjects(r, d->subj);
	d->tr = (struct tok_request){.aud = req_token_aud(r),
				     .reviewer_name = d->reviewer,
				     .reviewer_channel = c->channel,
				     .subjects = d->subj,
				     .nsubjects = d->ns,
				     .assurance = assurance,
				     .ttl = r->has_pd ? r->pd.token_ttl_s : 0};
	if (r->has_pd) { /* the token names the rule that sent the request to a person */
		snprintf(d->rule, sizeof d->rule, "line %u", r->pd.line);
		d->tr.policy_rule = d->rule;
		d->tr.policy_digest = r->pol_digest;
	}
	snprintf(d->tr.action_sha256, sizeof d->tr.action_sha256, "%s", r->action + 7);
	char err[AS_ERRLEN] = "out of memory";
	d->with_token = approved && s->tcfg.mode != TOK_OFF;
	if (!d->reviewer || (response && !d->response) ||
	    (d->with_token && tok_prepare(s->tk, &d->tr, &d->t, err) != 0)) {
		json_t *e = ctl_error("cannot prepare the token: %s", d->reviewer ? err : "out of memory");
		decision_free(d);
		return e;
	}
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 9 + (response ? 1 : 0) + (d->with_token ? 1 : 0));
	size_t i = 0;
	cv_set_text(a, kv(a, m, &i, "kind"), "decision", 8);
	cv_set_text(a, kv(a, m, &i, "session_id"), sid, strlen(sid));
	cv_set_text(a, kv(a, m, &i, "outcome"), outcome, strlen(outcome));
	cv_set_text(a, kv(a, m, &i, "assurance"), assurance, strlen(assurance));
	struct cv *rv = kv(a, m, &i, "reviewer");
	*rv = *cv_map(a, 3);
	cv_set_text(a, &rv->items[0], "name", 4);
	cv_set_text(a, &rv->items[1], reviewer, strlen(reviewer));
	cv_set_text(a, &rv->items[2], "channel", 7);
	cv_set_text(a, &rv->items[3], c->channel, strlen(c->channel));
	if (c->web) { /* how the signer knew the person: session, proxy identity or token */
		cv_set_text(a, &rv->items[4], "via", 3);
		cv_set_text(a, &rv->items[5], c->via, strlen(c->via));
	} else {
		cv_set_text(a, &rv->items[4], "uid", 3);
		cv_set_uint(&rv->items[5], (uint64_t)c->uid);
	}
	cv_set_text(a, kv(a, m, &i, "action"), r->action, strlen(r->action));
	cv_set_uint(kv(a, m, &i, "latency_ms"), now_ms() - it->created_ms);
	if (r->has_pd)
		put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	/* What a reviewer typed goes to the ledger with secret-shaped values replaced, as a
	 * request's text does; the agent still gets it as typed (an input may be the secret). */
	struct buf red;
	buf_init(&red, response ? 10 * strlen(response) + 16 : 16);
	struct redact_stats rst = {0};
	if (response && redact_text(response, strlen(response), NULL, &red, &rst) != 0) {
		buf_free(&red);
		decision_free(d);
		return ctl_error("the response could not be recorded: too large");
	}
	if (response)
		cv_set_text(a, kv(a, m, &i, "response"), red.len ? (const char *)red.p : "", red.len);
	if (d->with_token)
		put_token(a, kv(a, m, &i, "token"), &d->t);
	if (approved && r->napprovers) { /* a quorum: everyone who approved, this reviewer last */
		struct cv *ap = cv_array(a, r->napprovers + 1);
		for (size_t v = 0; v < r->napprovers; v++)
			cv_set_text(a, &ap->items[v], r->approvers[v], strlen(r->approvers[v]));
		cv_set_text(a, &ap->items[r->napprovers], reviewer, strlen(reviewer));
		*kv(a, m, &i, "approvers") = *ap;
	}
	m->n = i;
	struct op *o = op_add(s, m, decision_done, err);
	buf_free(&red);
	if (!o) {
		decision_free(d);
		return ctl_error("the decision could not be recorded: %s", err);
	}
	/* Out of the queue until the entry is on disk: nobody else can decide, cancel or
	 * time it out meanwhile. The reviewer hears back from decision_done. */
	pq_remove(s->q, sid, &o->it);
	o->d = d;
	o->conn = c->reply;
	o->web = c->web;
	d->tr.session_id = o->it.session_id;
	return NULL;
}

/* Every refused decision is logged with who tried, on which channel, and why. */
static json_t *decide(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		      uint64_t n)
{
	json_t *rep = decide_checked(s, c, sid, outcome, text, n);
	if (rep && json_is_false(json_object_get(rep, "ok")))
		slog("warning", "decision %s on %s by %s (%s%s%s, uid %d) refused: %s", outcome, sid, c->reviewer, c->channel,
		     c->web ? " via " : "", c->web ? c->via : "", c->uid == (uid_t)-1 ? -1 : (int)c->uid,
		     json_string_value(json_object_get(rep, "error")) ?: "?");
	return rep;
}

static int h_ctl(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *cmd, *sid = NULL, *outcome = NULL, *text = NULL;
	size_t cmdn, sidn = 0, outn = 0, textn = 0;
	uint64_t n = 0;
	GUARD(get_conn(s, f, W_REVIEW, &c, err));
	if (ctl_gone(s, c))
		return as_fail(err, AS_ENOTFOUND, "a command on connection %llu, whose reviewer has left: refused",
			       (unsigned long long)c->id);
	GUARD(ipc_get_text(f->body, "cmd", 16, &cmd, &cmdn, err));
	if (cv_get(f->body, "sid"))
		GUARD(ipc_get_text(f->body, "sid", 64, &sid, &sidn, err));
	if (cv_get(f->body, "outcome"))
		GUARD(ipc_get_text(f->body, "outcome", 16, &outcome, &outn, err));
	if (cv_get(f->body, "text"))
		GUARD(ipc_get_text(f->body, "text", 16384, &text, &textn, err));
	if (cv_get(f->body, "n"))
		GUARD(ipc_get_uint(f->body, "n", 64, &n, err));
	uint64_t offset = 0; /* pending: the page from this request on */
	if (cv_get(f->body, "offset"))
		GUARD(ipc_get_uint(f->body, "offset", PQ_MAX, &offset, err));
	char cm[17], id[65] = "", oc[17] = "", *tx = text ? strndup(text, textn) : NULL;
	snprintf(cm, sizeof cm, "%.*s", (int)cmdn, cmd);
	if (sid)
		snprintf(id, sizeof id, "%.*s", (int)sidn, sid);
	if (outcome)
		snprintf(oc, sizeof oc, "%.*s", (int)outn, outcome);
	reload_registry(s);
	const char *reviewer = registry_reviewer_by_uid(s->reg, c->uid);
	json_t *rep;
	if (!reviewer)
		rep = ctl_error("uid %u is not a registered reviewer (an operator runs: assent reviewer add NAME --uid %u)",
				(unsigned)c->uid, (unsigned)c->uid);
	else if (!strcmp(cm, "whoami"))
		rep = json_pack("{s:b,s:s,s:I}", "ok", 1, "reviewer", reviewer, "uid", (json_int_t)c->uid);
	else if (!strcmp(cm, "status"))
		rep = json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ok", 1, "pid", (json_int_t)getpid(), "pending",
				(json_int_t)pq_count(s->q), "uptime_seconds", (json_int_t)((now_ms() - s->started_ms) / 1000),
				"ledger_size", (json_int_t)ledger_size(s->ledger), "entries_written",
				(json_int_t)s->committed, "commits", (json_int_t)s->commits, "mcp_worker_restarts",
				(json_int_t)s->w[W_MCP].restarts_total, "review_worker_restarts",
				(json_int_t)s->w[W_REVIEW].restarts_total);
	else if (!strcmp(cm, "pending")) {
		rep = list_reply_page(s, NULL, reviewer, (size_t)offset);
		json_object_set_new(rep, "ok", json_true());
	} else if (!strcmp(cm, "show")) {
		struct pq_item *it = id[0] ? pq_find(s->q, id) : NULL;
		rep = it && reviewer_may_see(s, reviewer, it->data) ? show_reply(it->data) : ctl_error("no pending request %s", id);
	} else if (!strcmp(cm, "decide") && id[0] && oc[0]) {
		struct who w = {reviewer, "cli", NULL, c->uid, c->id, 0};
		rep = decide(s, &w, id, oc, tx, n);
	} else {
		rep = ctl_error("malformed command");
	}
	free(tx);
	if (rep) /* NULL: a decision, answered once it is on disk */
		ctl_reply(s, c->id, rep);
	return 0;
}

/* ---- deadlines ---- */

static void timeout_answer(struct signer *s, struct pq_item *it, uint64_t seq)
{
	const struct req *r = it->data;
	int denies = r->has_pd && r->pd.timeout_denies;
	json_t *res = result_base(it->session_id, denies ? "denied" : "timeout", 0);
	json_object_set_new(res, "error", json_string("timeout"));
	request_log(s, it, it->data, denies ? "denied" : "timeout", NULL, seq);
	finish(s, it, res);
}

/* A passed deadline is answered even when its entry could not be written: the
 * caller must not wait forever, and nothing was approved. */
static void timeout_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (!pos)
		slog("error", "ledger: timeout entry for %s: %s", o->it.session_id, err);
	timeout_answer(s, &o->it, pos ? pos->seq : 0);
}

static void expire(struct signer *s)
{
	uint64_t now = now_ms();
	struct pq_item it;
	while (pq_pop_expired(s->q, now, &it) == 0) {
		struct req *r = it.data;
		if (r->has_pd && r->pd.timeout_denies) { /* the policy says a passed deadline is a denial */
			struct cv_arena *a = &s->arena;
			cv_arena_reset(a);
			struct cv *m = cv_map(a, 6);
			size_t i = 0;
			static const char why[] = "no decision before the deadline: the policy denies on timeout";
			cv_set_text(a, kv(a, m, &i, "kind"), "decision", 8);
			cv_set_text(a, kv(a, m, &i, "session_id"), it.session_id, strlen(it.session_id));
			cv_set_text(a, kv(a, m, &i, "outcome"), "denied", 6);
			cv_set_text(a, kv(a, m, &i, "assurance"), "policy", 6);
			cv_set_text(a, kv(a, m, &i, "response"), why, sizeof why - 1);
			put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
			char err[AS_ERRLEN];
			struct op *o = op_add(s, m, timeout_done, err);
			if (o)
				o->it = it;
			else
				timeout_answer(s, &it, 0);
			continue;
		}
		struct op *o = append_simple(s, "timeout", it.session_id, "no decision before the deadline", timeout_done);
		if (o)
			o->it = it;
		else
			timeout_answer(s, &it, 0);
	}
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++) {
		struct waiter *w = &s->waiters[i];
		if (!w->used || w->until > now)
			continue;
		struct pq_item *p = pq_find(s->q, w->sid);
		json_t *res = result_base(w->sid, "pending", 0);
		if (p)
			json_object_set_new(res, "deadline", json_integer((json_int_t)(p->deadline_ms / 1000)));
		send_result(s, w->conn, w->rid, res, 0);
		json_decref(res);
		w->used = 0;
	}
}

/* ---- MCP sessions over HTTP ----
 * The worker parses HTTP; the signer decides who is asking: it checks the bearer
 * key against the registry's hashes, measures the peer address itself on the TCP
 * connection the worker passes along (anonymous agents: loopback only), and holds
 * the sessions, so a restarted worker loses none. */

/* Anonymous clients share no owner: each session is its own ("anonymous:ID"), so
 * that one local process can neither list another's requests nor collect their
 * tokens. Its session id is its only credential. An agent key is one owner. */
static void session_set_owner(struct conn *c, const char *owner)
{
	if (!strcmp(owner, "anonymous"))
		snprintf(c->owner, sizeof c->owner, "anonymous:%llu", (unsigned long long)c->id);
	else
		snprintf(c->owner, sizeof c->owner, "%s", owner);
}

static int session_owned_by(const struct conn *c, const char *owner)
{
	if (!strcmp(owner, "anonymous"))
		return !c->agent[0] && !strncmp(c->owner, "anonymous:", 10);
	return !strcmp(c->owner, owner);
}

/* retry_s: a refusal for a limit says when to try again (Retry-After). */
static void http_reply_retry(struct signer *s, uint64_t hreq, unsigned status, const char *error, const struct conn *c,
			     unsigned retry_s)
{
	struct cv_arena a;
	cv_arena_init(&a, 32);
	struct cv *f = ipc_frame_new(&a, F_HTTP_REPLY, 9);
	char err[AS_ERRLEN];
	int rc = !f || ipc_put_uint(&a, f, "hreq", hreq) || ipc_put_uint(&a, f, "status", status);
	if (!rc && error)
		rc = ipc_put_text(&a, f, "error", error, strlen(error));
	if (!rc && retry_s)
		rc = ipc_put_uint(&a, f, "retry", retry_s);
	if (!rc && c) {
		const char *principal = c->agent[0] ? c->agent : "anonymous";
		rc = ipc_put_uint(&a, f, "conn", c->id) || ipc_put_text(&a, f, "session", c->session, strlen(c->session)) ||
		     ipc_put_text(&a, f, "principal", principal, strlen(principal)) ||
		     ipc_put_text(&a, f, "client", c->client, strlen(c->client)) ||
		     ipc_put_text(&a, f, "protocol", c->protocol, strlen(c->protocol));
	}
	if (!rc && ipc_conn_send(&s->w[W_MCP].ipc, f, -1, err) != 0)
		worker_down(s, W_MCP, "its socket is stuck");
	cv_arena_free(&a);
}

static void http_reply(struct signer *s, uint64_t hreq, unsigned status, const char *error, const struct conn *c)
{
	http_reply_retry(s, hreq, status, error, c, 0);
}

/* One agent key (or all anonymous clients together) holds at most
 * ASSENT_HTTP_MAX_SESSIONS_PER_AGENT sessions, so that it cannot fill the table
 * others need: past it, 429 with Retry-After (when its oldest idle session ends). */
static int sessions_over_limit(struct signer *s, uint64_t hreq, const char *owner)
{
	size_t mine = 0;
	uint64_t now = now_ms(), first_end = UINT64_MAX;
	for (size_t i = 0; i < MAX_CONNS; i++) {
		const struct conn *c = &s->conns[i];
		if (!c->used || !c->http || !session_owned_by(c, owner))
			continue;
		mine++;
		uint64_t end = c->last_ms + 1000ull * s->http.session_idle_s;
		first_end = end < first_end ? end : first_end;
	}
	if (mine < s->http.sessions_per_agent)
		return 0;
	unsigned retry = first_end > now ? (unsigned)((first_end - now + 999) / 1000) : 1;
	char msg[200];
	snprintf(msg, sizeof msg, "%s has %zu MCP sessions open, the limit (ASSENT_HTTP_MAX_SESSIONS_PER_AGENT=%u): end "
		 "one (DELETE /mcp) or wait", owner, mine, s->http.sessions_per_agent);
	lim_log(s, LIM_SESSIONS, "initialize refused: %s", msg);
	http_reply_retry(s, hreq, 429, msg, NULL, retry);
	return 1;
}

static struct conn *session_find(struct signer *s, const char *sid, size_t n)
{
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].used && s->conns[i].http && strlen(s->conns[i].session) == n &&
		    ct_memcmp(s->conns[i].session, sid, n) == 0)
			return &s->conns[i];
	return NULL;
}

static int h_http_auth(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t hreq;
	int init;
	const char *bearer = NULL, *sid = NULL;
	size_t bn = 0, sn = 0;
	GUARD(ipc_get_uint(f->body, "hreq", UINT64_MAX, &hreq, err));
	GUARD(ipc_get_bool(f->body, "init", &init, err));
	if (cv_get(f->body, "bearer"))
		GUARD(ipc_get_text(f->body, "bearer", 512, &bearer, &bn, err));
	if (cv_get(f->body, "session"))
		GUARD(ipc_get_text(f->body, "session", 64, &sid, &sn, err));
	if (f->nfds != 1)
		return as_fail(err, AS_ECORRUPT, "an HTTP request without its connection");
	if (!s->http.on)
		return as_fail(err, AS_ECORRUPT, "an HTTP request, but HTTP is off");
	int loopback = peeruid_peer_is_loopback(f->fds[0]);
	/* Who owns the agent's end of the connection, asked of the kernel: the same-person
	 * rule needs it for HTTP agents as much as for stdio ones. A loopback peer whose
	 * owner cannot be measured (it closed already) is not served. */
	uid_t peer_uid = (uid_t)-1;
	{
		/* Asked of the kernel whatever the peer's address: a local process may connect
		 * from any of the host's addresses (binding its source), not only loopback. No
		 * socket known for that end is a remote peer, unless its address is this host's. */
		char e[AS_ERRLEN];
		if (peeruid_tcp(f->fds[0], &peer_uid, e) != 0) {
			peer_uid = (uid_t)-1;
			if (loopback || peeruid_peer_is_local(f->fds[0])) {
				slog("warning", "an HTTP request refused: the owner of its local connection cannot be measured (%s)", e);
				http_reply(s, hreq, 403, "the gateway cannot tell which user owns this connection", NULL);
				return 0;
			}
		}
	}
	char owner[80], agent[REG_NAME_MAX + 1] = "";
	if (bearer) {
		reload_registry(s);
		const char *name = registry_agent_by_key(s->reg, bearer, bn);
		if (!name && (registry_reviewer_by_token(s->reg, bearer, bn) || registry_admin_by_token(s->reg, bearer, bn))) {
			s->m.auth_fail_agent++;
			slog("warning", "an HTTP agent refused (uid %d): a reviewer's or admin's token on the agent listener",
			     peer_uid == (uid_t)-1 ? -1 : (int)peer_uid);
			http_reply(s, hreq, 403,
				   "a reviewer's or admin's token is not accepted on the agent listener (reviewers use the "
				   "reviewer listener)",
				   NULL);
			return 0;
		}
		if (!name) {
			s->m.auth_fail_agent++;
			slog("warning", "an HTTP agent refused (%s, uid %d): invalid or revoked API key",
			     loopback ? "loopback" : peer_uid != (uid_t)-1 ? "local" : "remote",
			     peer_uid == (uid_t)-1 ? -1 : (int)peer_uid);
			http_reply(s, hreq, 401, "invalid or revoked API key", NULL);
			return 0;
		}
		snprintf(agent, sizeof agent, "%s", name);
		snprintf(owner, sizeof owner, "agent:%s", name);
	} else if (s->http.anonymous && loopback) {
		snprintf(owner, sizeof owner, "anonymous");
	} else {
		http_reply(s, hreq, 401,
			   s->http.anonymous ? "an API key is required (Authorization: Bearer KEY) from other than loopback"
					     : "an API key is required (Authorization: Bearer KEY; assent agent add NAME)",
			   NULL);
		return 0;
	}
	if (sid) {
		struct conn *c = session_find(s, sid, sn);
		/* Someone else's session is as unknown as an expired one: 404 either way. */
		if (!c || !session_owned_by(c, owner)) {
			http_reply(s, hreq, 404, "unknown or expired session (initialize again)", NULL);
			return 0;
		}
		c->last_ms = now_ms();
		measured_put(s, hreq, c->id, peer_uid);
		http_reply(s, hreq, 200, NULL, c);
		return 0;
	}
	if (!init) {
		http_reply(s, hreq, 400, "Mcp-Session-Id header required: call initialize first", NULL);
		return 0;
	}
	if (sessions_over_limit(s, hreq, owner))
		return 0;
	size_t nsess = 0;
	struct conn *c = NULL;
	for (size_t i = 0; i < MAX_CONNS; i++) {
		nsess += s->conns[i].used && s->conns[i].http;
		if (!c && !s->conns[i].used)
			c = &s->conns[i];
	}
	if (!c || nsess >= s->http.sessions_max) {
		http_reply(s, hreq, 503, "too many MCP sessions; try again later", NULL);
		return 0;
	}
	uint8_t rnd[16];
	char hex[33];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		http_reply(s, hreq, 500, "no randomness for a session id", NULL);
		return 0;
	}
	hex_encode(rnd, sizeof rnd, hex);
	*c = (struct conn){.id = ++s->next_conn, .worker = W_MCP, .uid = (uid_t)-1, .used = 1, .http = 1,
			   .last_ms = now_ms()};
	session_set_owner(c, owner);
	snprintf(c->agent, sizeof c->agent, "%s", agent);
	snprintf(c->session, sizeof c->session, "%s", hex);
	slog("info", "MCP session %.8s... opened over HTTP by %s", c->session, owner);
	measured_put(s, hreq, c->id, peer_uid);
	http_reply(s, hreq, 200, NULL, c);
	return 0;
}

static int h_session_info(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *cl, *pr;
	size_t cn, pn;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	GUARD(ipc_get_text(f->body, "client", ACTION_CLIENT_MAX, &cl, &cn, err));
	GUARD(ipc_get_text(f->body, "protocol", sizeof c->protocol - 1, &pr, &pn, err));
	GUARD(client_ok(cl, cn, err));
	if (!c->http)
		return as_fail(err, AS_ECORRUPT, "session info for a connection that is not an HTTP session");
	snprintf(c->client, sizeof c->client, "%.*s", (int)cn, cl);
	snprintf(c->protocol, sizeof c->protocol, "%.*s", (int)pn, pr);
	return 0;
}

static void session_end(struct signer *s, struct conn *c, const char *why)
{
	slog("info", "MCP session %.8s... of %s ended: %s", c->session, c->owner, why);
	fail_conn_requests(s, c->id, why);
	conn_end(s, c);
}

static int h_session_end(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	if (!c->http)
		return as_fail(err, AS_ECORRUPT, "ends a connection that is not an HTTP session");
	session_end(s, c, "the agent ended it (DELETE)");
	return 0;
}

struct busy_ctx {
	uint64_t conn;
	int busy;
};

static void is_busy(const struct pq_item *it, void *arg)
{
	struct busy_ctx *b = arg;
	if (it->blocking && ((const struct req *)it->data)->conn == b->conn)
		b->busy = 1;
}

/* Sessions unused for session_idle_s end, unless a call of theirs is still waiting. */
static void sweep_sessions(struct signer *s, uint64_t now)
{
	for (size_t i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		if (!c->used || !c->http || now - c->last_ms < 1000ull * s->http.session_idle_s)
			continue;
		struct busy_ctx b = {c->id, 0};
		pq_each(s->q, is_busy, &b);
		if (!b.busy)
			session_end(s, c, "unused for too long");
	}
}

static void send_stats(struct signer *s)
{
	for (int k = 0; k < NWORKERS; k++) {
		struct worker *w = &s->w[k];
		if (w->fd < 0 || w->state != S_READY || (k == W_MCP ? !s->http.on : s->review_fd < 0))
			continue;
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *f = ipc_frame_new(&a, F_STATS, 2);
		char err[AS_ERRLEN];
		if (f && !ipc_put_uint(&a, f, "pending", pq_count(s->q)) &&
		    !ipc_put_uint(&a, f, "uptime", (now_ms() - s->started_ms) / 1000) &&
		    ipc_conn_send(&w->ipc, f, -1, err) != 0)
			worker_down(s, k, "its socket is stuck");
		cv_arena_free(&a);
	}
}

/* ---- the reviewer listener ----
 * The review worker parses HTTP and sends each request it cannot answer alone as
 * F_WEB {hreq, cmd, credentials, arguments} with the connection's descriptor. The
 * signer decides who is asking: a session cookie (hash held here), a reviewer or
 * admin token (hashes in the registry), or a proxy's identity header, believed only
 * when the connection came through the proxy's own unix socket (measured here with
 * getsockname) or carries the proxy's shared secret. */

#define WEB_VIEWS_MAX 100          /* requests sent whole to the page; the rest are counted */
#define WEB_CONTENT_BUDGET (1u << 20) /* subject bytes (base64) in one answer */

struct web_req {
	uint64_t hreq;
	char cmd[17];
	const char *cookie, *csrf, *bearer, *proxy_user, *proxy_secret, *token, *sid, *outcome, *text;
	size_t cookien, csrfn, bearern, proxy_usern, proxy_secretn, tokenn, sidn, outcomen, textn;
	uint64_t n, offset;
	int has_n, approved, has_approved, has_offset;
	int on_proxy;   /* the connection came in on the proxy's socket */
	char peer[64];  /* its address, for the failed-login limiter */
};

static int opt_text(const struct cv *m, const char *k, size_t max, const char **v, size_t *n, char *err)
{
	*v = NULL;
	*n = 0;
	return cv_get(m, k) ? ipc_get_text(m, k, max, v, n, err) : 0;
}

static void web_error(struct signer *s, uint64_t hreq, unsigned status, const char *fmt, ...) AS_PRINTF(4, 5);
static void web_error(struct signer *s, uint64_t hreq, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *j = json_pack("{s:s}", "error", msg);
	struct web_out w = {.status = status};
	web_send(s, hreq, &w, j);
	json_decref(j);
}

static void web_auth_failed(struct signer *s, const struct web_req *q, unsigned status, const char *why)
{
	s->m.auth_fail_review++;
	slog("warning", "a reviewer listener request refused (%u): %s", status, why);
	web_error(s, q->hreq, status, "%s", why);
}

/* A pending request as the page shows it (the subjects' bytes while the budget lasts). */
static json_t *web_view(const struct req *r, size_t *budget)
{
	json_t *v = json_deep_copy(r->view), *x;
	size_t i;
	json_array_foreach(json_object_get(v, "subject"), i, x) {
		if (i >= 16 || !r->content[i])
			continue;
		size_t need = (r->content_len[i] + 2) / 3 * 4;
		if (need > *budget) {
			json_object_set_new(x, "content_omitted", json_string("too large to show with the rest: assent show"));
			continue;
		}
		struct buf b;
		buf_init(&b, need + 4);
		if (b64_encode(r->content[i], r->content_len[i], &b) == 0) {
			json_object_set_new(x, "content_base64", json_stringn((const char *)b.p, b.len));
			*budget -= need;
		}
		buf_free(&b);
	}
	if (r->has_pd && r->pd.quorum > 1)
		json_object_set_new(v, "quorum", json_integer(r->pd.quorum));
	const json_t *risk = json_object_get(json_object_get(v, "context"), "risk");
	if (json_is_string(risk))
		json_object_set_new(v, "risk", json_string(json_string_value(risk)));
	return v;
}

struct web_list {
	struct signer *s;
	const char *reviewer;
	json_t *arr;
	size_t total, more, budget, used, offset;
};

static void web_one(const struct pq_item *it, void *arg)
{
	struct web_list *l = arg;
	const struct req *r = it->data;
	if (!reviewer_may_see(l->s, l->reviewer, r))
		return; /* everything this reviewer may decide, nothing else */
	if (l->total++ < l->offset)
		return; /* on an earlier page */
	if (l->more || json_array_size(l->arr) >= WEB_VIEWS_MAX) {
		l->more++;
		return;
	}
	json_t *v = web_view(r, &l->budget);
	view_fit(v, VIEW_PAGE_BYTES / 4); /* one huge request does not take the page */
	page_add(l->arr, v, &l->used, &l->more, WEB_VIEWS_MAX);
}

static json_t *web_pending(struct signer *s, const char *reviewer, size_t offset)
{
	struct web_list l = {s, reviewer, json_array(), 0, 0, WEB_CONTENT_BUDGET, 0, offset};
	pq_each(s->q, web_one, &l);
	json_t *rec = json_array();
	for (size_t i = 0; i < s->nrecent; i++) {
		const struct recent *x = &s->recent[i];
		if (x->restricted && !reviewer_allowed(s, reviewer, &x->pd))
			continue;
		json_array_append_new(rec, json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "session_id", x->sid, "outcome",
						     x->outcome, "by", x->by, "seq", (json_int_t)x->seq, "at",
						     (json_int_t)x->at, "message", x->message));
	}
	json_t *j = json_pack("{s:I,s:I,s:o,s:o,s:I,s:s}", "pending", (json_int_t)l.total, "more", (json_int_t)l.more,
			      "requests", l.arr, "recent", rec, "now", (json_int_t)(now_ms() / 1000), "reviewer", reviewer);
	if (l.more) /* ?offset= this for the next page */
		json_object_set_new(j, "next_offset", json_integer((json_int_t)(offset + json_array_size(l.arr))));
	return j;
}

/* A web session lives while the credential it was made with does: the reviewer is
 * registered, and their token (or proxy identity) is still the one it came from. */
static int session_alive(void *arg, const struct ws_session *ss)
{
	struct signer *s = arg;
	uint8_t cred[32];
	return registry_reviewer_credential(s->reg, ss->reviewer, ss->via, cred) == 0 &&
	       ct_memcmp(cred, ss->cred, sizeof cred) == 0;
}

/* Sessions that ended (logout, time, a reviewer removed): their event streams close. */
static void web_push(struct signer *s, const uint32_t *ended, size_t nended)
{
	struct worker *w = &s->w[W_REVIEW];
	if (w->fd < 0 || w->state != S_READY || s->review_fd < 0)
		return;
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_WEB_PUSH, 3), *arr = cv_array(&a, nended > 64 ? 64 : nended), *slot;
	char err[AS_ERRLEN];
	for (size_t i = 0; arr && i < arr->n; i++)
		cv_set_uint(&arr->items[i], ended[i]);
	if (f && arr && !ipc_put_uint(&a, f, "version", s->committed + s->web_bumps) &&
	    !ipc_put_uint(&a, f, "pending", pq_count(s->q)) && (slot = ipc_put(&a, f, "ended"))) {
		*slot = *arr;
		if (ipc_conn_send(&w->ipc, f, -1, err) != 0)
			worker_down(s, W_REVIEW, "its socket is stuck");
	}
	cv_arena_free(&a);
	s->web_sent = s->committed + s->web_bumps;
}

/* End the sessions that are past their time or whose credential ended, and their
 * event streams (a push names at most 64: as many pushes as it takes). */
static size_t web_end_sessions(struct signer *s, uint64_t now)
{
	uint32_t ended[WS_MAX];
	size_t n = ws_sweep(s->ws, now, session_alive, s, ended, WS_MAX);
	for (size_t i = 0; i < n; i += 64)
		web_push(s, ended + i, n - i < 64 ? n - i : 64);
	return n;
}

static void web_sweep(struct signer *s, uint64_t now)
{
	reload_registry(s); /* which ends what a changed registry ends */
	web_end_sessions(s, now);
}

/* The registry was loaded anew: a reviewer removed, a token rotated or removed, a
 * proxy identity changed. Every session made with what is gone ends now, and its
 * event streams with it; so do the streams opened with such a credential itself
 * (a reviewer token as a bearer), named by ws_credential_stream_id. */
static void web_credentials_changed(struct signer *s, const struct registry *old)
{
	static const char *const vias[] = {"token", "proxy"};
	uint32_t gone[64];
	size_t ngone = 0;
	const char *name;
	for (size_t i = 0; (name = registry_reviewer_name(old, i)) != NULL; i++)
		for (size_t v = 0; v < 2; v++) {
			uint8_t was[32], now[32];
			if (registry_reviewer_credential(old, name, vias[v], was) != 0)
				continue;
			if (registry_reviewer_credential(s->reg, name, vias[v], now) == 0 && !ct_memcmp(was, now, 32))
				continue;
			gone[ngone++] = ws_credential_stream_id(was);
			if (ngone == 64) {
				web_push(s, gone, ngone);
				ngone = 0;
			}
		}
	if (ngone)
		web_push(s, gone, ngone);
	size_t n = s->ws ? web_end_sessions(s, now_ms()) : 0;
	if (n)
		slog("info", "web: %zu session%s ended: the credential %s made with changed in the registry", n,
		     n == 1 ? "" : "s", n == 1 ? "it was" : "they were");
}

static json_t *metrics_reply(struct signer *s, struct buf *out)
{
	struct stat st;
	char path[4200];
	snprintf(path, sizeof path, "%s/ledger/data.mdb", s->o->state);
	size_t nws = 0;
	for (size_t i = 0; i < WS_MAX; i++)
		nws += s->ws->s[i].used;
	struct metrics_gauges g = {pq_count(s->q),
				   ledger_size(s->ledger),
				   stat(path, &st) == 0 ? (uint64_t)st.st_size : 0,
				   (now_ms() - s->started_ms) / 1000,
				   s->w[W_MCP].restarts_total,
				   s->w[W_REVIEW].restarts_total,
				   nws};
	buf_init(out, 1 << 16);
	return metrics_text(&s->m, &g, out) == 0 ? NULL : json_pack("{s:s}", "error", "out of memory");
}

static void web_file(struct signer *s, uint64_t hreq, const char *rel, const char *ctype, const char *missing)
{
	char path[4200], err[AS_ERRLEN];
	struct buf b;
	snprintf(path, sizeof path, "%s/%s", s->o->state, rel);
	if (file_read(path, 1 << 20, &b, err) != 0) {
		web_error(s, hreq, 404, "%s", missing);
		return;
	}
	struct web_out w = {.status = 200, .ctype = ctype, .text = (const char *)b.p, .textn = b.len};
	web_send(s, hreq, &w, NULL);
	buf_free(&b);
}

/* The session this browser request carries, refreshed; NULL when none (or expired). */
static struct ws_session *web_session(struct signer *s, const struct web_req *q)
{
	struct ws_session *ss = q->cookie ? ws_find(s->ws, q->cookie, q->cookien, now_ms()) : NULL;
	if (ss && !session_alive(s, ss)) { /* its reviewer removed, or its token rotated, since */
		ws_end(ss);
		return NULL;
	}
	return ss;
}

static void web_login_reply(struct signer *s, const struct web_req *q, const char *reviewer, const char *via)
{
	char cookie[WS_COOKIE_LEN + 1];
	uint8_t cred[32];
	struct ws_session *ss = NULL;
	if (registry_reviewer_credential(s->reg, reviewer, via, cred) != 0) { /* just found by it: cannot be */
		web_error(s, q->hreq, 500, "the reviewer's credential is not in the registry");
		return;
	}
	if (!(ss = ws_create(s->ws, reviewer, via, cred, now_ms(), cookie))) {
		web_error(s, q->hreq, 500, "cannot read random bytes for a session");
		return;
	}
	if (s->ws->evicted) /* a session made room for this one: its event streams end too */
		web_push(s, &s->ws->evicted, 1);
	slog("info", "web: %s logged in (%s, from %s)", reviewer, via, q->peer);
	/* The secret goes in the body, never in a cookie: the page holds it and sends it
	 * in a header (gateway/web/README.md says why). */
	json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "reviewer", reviewer, "csrf", ss->csrf, "via", via, "session", cookie);
	struct web_out w = {.status = 200};
	web_send(s, q->hreq, &w, j);
	json_decref(j);
	explicit_bzero(cookie, sizeof cookie);
}

static void web_command(struct signer *s, struct web_req *q)
{
	const char *cmd = q->cmd;
	/* Open to anyone who reaches the listener: nothing secret, nothing changes. */
	if (!strcmp(cmd, "metrics")) {
		struct buf b;
		json_t *e = metrics_reply(s, &b);
		struct web_out w = {.status = e ? 500 : 200, .ctype = "text/plain; version=0.0.4; charset=utf-8",
				    .text = e ? NULL : (const char *)b.p, .textn = b.len};
		web_send(s, q->hreq, &w, e);
		json_decref(e);
		buf_free(&b);
		return;
	}
	if (!strcmp(cmd, "jwks")) {
		web_file(s, q->hreq, "keys/jwks.json", "application/json",
			 "no public token keys: tokens are HS256 (shared secret) or off");
		return;
	}
	if (!strcmp(cmd, "checkpoint")) {
		web_file(s, q->hreq, "ledger/checkpoint", "text/plain; charset=utf-8", "no checkpoint signed yet");
		return;
	}
	reload_registry(s);
	/* Who is asking. Each credential is refused loudly when it is the wrong kind,
	 * so a misconfigured client learns why instead of being treated as nobody. */
	const char *reviewer = NULL, *admin = NULL, *via = NULL;
	if (q->proxy_user) {
		int secret_ok = s->proxy_secret[0] && q->proxy_secret && q->proxy_secretn == strlen(s->proxy_secret) &&
				ct_memcmp(q->proxy_secret, s->proxy_secret, q->proxy_secretn) == 0;
		if (!q->on_proxy && !secret_ok) {
			web_auth_failed(s, q, 403,
					"refused: a reviewer identity header is accepted only from the reverse proxy's own "
					"listener (ASSENT_REVIEW_PROXY_SOCKET) or with its shared secret");
			return;
		}
		char id[256];
		snprintf(id, sizeof id, "%.*s", (int)q->proxy_usern, q->proxy_user);
		reviewer = registry_reviewer_by_proxy_id(s->reg, id);
		if (!reviewer) {
			web_auth_failed(s, q, 403, "refused: the proxy's identity is not a registered reviewer's (assent "
						   "reviewer add NAME --proxy-id ID)");
			return;
		}
		via = "proxy";
	} else if (q->bearer) {
		if (registry_agent_by_key(s->reg, q->bearer, q->bearern)) {
			web_auth_failed(s, q, 403, "refused: an agent's API key is not accepted on the reviewer listener");
			return;
		}
		reviewer = registry_reviewer_by_token(s->reg, q->bearer, q->bearern);
		admin = reviewer ? NULL : registry_admin_by_token(s->reg, q->bearer, q->bearern);
		if (!reviewer && !admin) {
			web_auth_failed(s, q, 401, "invalid or revoked token");
			return;
		}
		via = "token";
	}
	struct ws_session *ss = web_session(s, q);
	if (ss && reviewer && strcmp(ss->reviewer, reviewer))
		ss = NULL; /* a cookie of someone else than the proxy or token names: not theirs */
	if (!reviewer && !admin && ss) {
		reviewer = ss->reviewer;
		via = "session";
	}
	if (!strcmp(cmd, "login")) {
		/* The token is checked first, whatever failed before: a right one always logs in
		 * (websess.h says why); the limiter only decides how a wrong one is answered. */
		const char *who = via && !strcmp(via, "proxy") ? reviewer : NULL;
		if (!who && q->token)
			who = registry_reviewer_by_token(s->reg, q->token, q->tokenn);
		if (!who) {
			unsigned retry = 0, all = 0;
			int limited = ws_login_failed(s->ws, q->peer, now_ms(), &retry, &all);
			if (all)
				slog("warning", "web: %u failed logins in the last minute from all sources (the latest from %s)", all,
				     q->peer);
			if (!limited) {
				web_auth_failed(s, q, 401, "login refused: unknown or revoked reviewer token");
				return;
			}
			s->m.auth_fail_review++;
			json_t *j = json_pack("{s:s}", "error",
					      "login refused: unknown or revoked reviewer token, and too many failed logins "
					      "from this address in the last minute (all loopback addresses count as one): "
					      "wait before trying again");
			struct web_out w = {.status = 429, .retry_s = retry};
			web_send(s, q->hreq, &w, j);
			json_decref(j);
			return;
		}
		web_login_reply(s, q, who, who == reviewer && via && !strcmp(via, "proxy") ? "proxy" : "token");
		return;
	}
	if (!strcmp(cmd, "admin_clear")) {
		if (!admin) {
			web_auth_failed(s, q, admin || reviewer ? 403 : 401,
					"refused: an admin endpoint needs an admin token (assent admin add NAME)");
			return;
		}
		size_t before = pq_count(s->q), sessions = 0;
		expire(s);
		for (size_t i = 0; i < MAX_CONNS; i++)
			sessions += s->conns[i].used && s->conns[i].http;
		sweep_sessions(s, now_ms());
		for (size_t i = 0; i < MAX_CONNS; i++)
			sessions -= s->conns[i].used && s->conns[i].http;
		web_sweep(s, now_ms());
		slog("info", "admin %s cleared stale sessions: %zu requests past their deadline, %zu MCP sessions", admin,
		     before - pq_count(s->q), sessions);
		json_t *j = json_pack("{s:b,s:I,s:I}", "ok", 1, "expired_requests", (json_int_t)(before - pq_count(s->q)),
				      "ended_sessions", (json_int_t)sessions);
		reply_to(s, q->hreq, 1, j);
		return;
	}
	if (!reviewer) {
		web_auth_failed(s, q, admin ? 403 : 401,
				admin ? "refused: an admin token is not a reviewer's" : "log in first (no or expired session)");
		return;
	}
	/* A browser's state-changing request carries the CSRF token of its session; a
	 * proxy-identified browser has a session too (made by "me"). A bearer token is
	 * not ambient (no browser sends it by itself): no CSRF token. */
	int browser = strcmp(via, "token") != 0;
	int changes = !strcmp(cmd, "decide") || !strcmp(cmd, "logout") || !strcmp(cmd, "submit");
	if (browser && changes && (!ss || !ws_csrf_ok(ss, q->csrf, q->csrfn))) {
		web_auth_failed(s, q, 403, "refused: missing or wrong CSRF token (X-CSRF-Token)");
		return;
	}
	if (!strcmp(cmd, "me")) {
		if (!ss && !strcmp(via, "proxy")) { /* the page needs a session for its CSRF token */
			web_login_reply(s, q, reviewer, "proxy");
			return;
		}
		json_t *j = ss ? json_pack("{s:s,s:s,s:s}", "reviewer", reviewer, "csrf", ss->csrf, "via", ss->via)
			       : json_pack("{s:s,s:s}", "reviewer", reviewer, "via", via);
		reply_to(s, q->hreq, 1, j);
	} else if (!strcmp(cmd, "logout")) {
		uint32_t id = ss->id;
		slog("info", "web: %s logged out", ss->reviewer);
		ws_end(ss);
		web_push(s, &id, 1);
		struct web_out w = {.status = 200};
		json_t *j = json_pack("{s:b}", "ok", 1);
		web_send(s, q->hreq, &w, j);
		json_decref(j);
	} else if (!strcmp(cmd, "events")) {
		/* The worker holds the streams: it keeps to these limits (they guard its own slots). */
		json_t *j = json_pack("{s:b,s:s,s:I,s:I}", "ok", 1, "reviewer", reviewer, "streams_max",
				      (json_int_t)s->web_streams_max, "stream_seconds", (json_int_t)s->web_stream_s);
		/* A stream ends with what opened it: the session, or the credential itself. */
		uint8_t cred[32];
		uint32_t wsid = ss ? ss->id
				   : registry_reviewer_credential(s->reg, reviewer, via, cred) == 0 ? ws_credential_stream_id(cred)
												     : 0;
		struct web_out w = {.status = 200, .wsid = wsid};
		web_send(s, q->hreq, &w, j);
		json_decref(j);
	} else if (!strcmp(cmd, "pending")) {
		reply_to(s, q->hreq, 1, web_pending(s, reviewer, q->has_offset ? q->offset : 0));
	} else if (!strcmp(cmd, "list")) {
		reply_to(s, q->hreq, 1, list_reply_page(s, NULL, reviewer, q->has_offset ? q->offset : 0));
	} else if ((!strcmp(cmd, "decide") && q->sid && q->outcome) || (!strcmp(cmd, "submit") && q->sid && q->has_approved)) {
		char id[65], oc[17], *tx = q->text ? strndup(q->text, q->textn) : NULL;
		snprintf(id, sizeof id, "%.*s", (int)q->sidn, q->sid);
		snprintf(oc, sizeof oc, "%.*s", (int)q->outcomen, q->outcome ? q->outcome : "");
		if (!q->outcome) { /* submit: {approved, response, selection}, the outcome follows from the type */
			struct pq_item *it = pq_find(s->q, id);
			const char *type = it ? ((struct req *)it->data)->type : "";
			snprintf(oc, sizeof oc, "%s",
				 !q->approved			   ? "rejected"
				 : !strcmp(type, "input")	   ? "answered"
				 : !strcmp(type, "selection") ? "selected"
							       : "approved");
			if (!q->approved && !tx)
				tx = strdup("rejected by the reviewer");
			if (!strcmp(oc, "answered") && !tx)
				tx = strdup("");
		}
		struct who w = {reviewer, "web", via, (uid_t)-1, q->hreq, 1};
		json_t *rep = (q->text && !tx) ? ctl_error("out of memory") : decide(s, &w, id, oc, tx, q->has_n ? q->n : 0);
		free(tx);
		if (rep)
			reply_to(s, q->hreq, 1, rep);
	} else {
		web_error(s, q->hreq, 400, "malformed command");
	}
}

static int h_web(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q = {0};
	const char *cmd;
	size_t cmdn;
	const struct cv *b = f->body;
	GUARD(ipc_get_uint(b, "hreq", UINT64_MAX, &q.hreq, err));
	GUARD(ipc_get_text(b, "cmd", 16, &cmd, &cmdn, err));
	GUARD(opt_text(b, "cookie", 64, &q.cookie, &q.cookien, err));
	GUARD(opt_text(b, "csrf", 64, &q.csrf, &q.csrfn, err));
	GUARD(opt_text(b, "bearer", 512, &q.bearer, &q.bearern, err));
	GUARD(opt_text(b, "proxy_user", 254, &q.proxy_user, &q.proxy_usern, err));
	GUARD(opt_text(b, "proxy_secret", 256, &q.proxy_secret, &q.proxy_secretn, err));
	GUARD(opt_text(b, "token", 512, &q.token, &q.tokenn, err));
	GUARD(opt_text(b, "sid", 64, &q.sid, &q.sidn, err));
	GUARD(opt_text(b, "outcome", 16, &q.outcome, &q.outcomen, err));
	GUARD(opt_text(b, "text", 16384, &q.text, &q.textn, err));
	const char *ca;
	size_t can;
	GUARD(opt_text(b, "client_addr", 45, &ca, &can, err));
	if (cv_get(b, "n")) {
		GUARD(ipc_get_uint(b, "n", 64, &q.n, err));
		q.has_n = 1;
	}
	if (cv_get(b, "offset")) {
		GUARD(ipc_get_uint(b, "offset", PQ_MAX, &q.offset, err));
		q.has_offset = 1;
	}
	if (cv_get(b, "approved")) {
		GUARD(ipc_get_bool(b, "approved", &q.approved, err));
		q.has_approved = 1;
	}
	if (f->nfds != 1)
		return as_fail(err, AS_ECORRUPT, "a web request without its connection");
	if (s->review_fd < 0)
		return as_fail(err, AS_ECORRUPT, "a web request, but the reviewer listener is off");
	snprintf(q.cmd, sizeof q.cmd, "%.*s", (int)cmdn, cmd);
	/* Which listener, and from where: measured on the connection, not said by the worker. */
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getsockname(f->fds[0], (struct sockaddr *)&ss, &sl) != 0)
		return as_fail(err, AS_ECORRUPT, "a web request's descriptor is not a socket");
	if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
		q.on_proxy = s->proxy_fd >= 0 && sl > offsetof(struct sockaddr_un, sun_path) &&
			     !strncmp(un->sun_path, s->proxy_path, sizeof un->sun_path);
		if (!q.on_proxy)
			return as_fail(err, AS_ECORRUPT, "a web request on a unix socket that is not the proxy's");
		snprintf(q.peer, sizeof q.peer, "proxy:%.*s", (int)can, ca ? ca : ""); /* its client (X-Real-IP) */
	} else {
		unsigned port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							       : ((struct sockaddr_in *)&ss)->sin_port);
		if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) || port != s->review.port)
			return as_fail(err, AS_ECORRUPT, "a web request on a socket that is not the reviewer listener's");
		sl = sizeof ss;
		char host[INET6_ADDRSTRLEN] = "?";
		if (getpeername(f->fds[0], (struct sockaddr *)&ss, &sl) == 0)
			getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, NULL, 0, NI_NUMERICHOST);
		snprintf(q.peer, sizeof q.peer, "%s", host);
	}
	web_command(s, &q);
	return 0;
}

/* A TCP listener (agents or reviewers). A port given explicitly must be had; the
 * default one may be taken (another state directory's daemon): then that listener
 * is off and the log says why. Returns the descriptor, or -1 (off). */
static int tcp_listen(struct http_cfg *c, const char *what, const char *port_var, char *err)
{
	if (!c->on)
		return -1;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char port[8];
	snprintf(port, sizeof port, "%u", c->port);
	const char *host = !strcmp(c->host, "localhost") ? "127.0.0.1" : c->host;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
		as_fail(err, AS_EINVAL, "the %s listener's host '%s' is not an IP address", what, c->host);
		return -2;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, e = 0;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0)
		e = errno;
	freeaddrinfo(ai);
	if (e) {
		if (fd >= 0)
			close(fd);
		if (c->port_explicit) {
			as_fail(err, AS_EIO, "cannot listen on %s:%u: %s", c->host, c->port, strerror(e));
			return -2;
		}
		slog("warning", "%s listener off: cannot listen on %s:%u (%s); set %s to another port (0: any free one)",
		     what, c->host, c->port, strerror(e), port_var);
		c->on = 0;
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	unsigned bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							: ((struct sockaddr_in *)&ss)->sin_port);
	int loopback = ss.ss_family == AF_INET
			       ? (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127
			       : IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr) ||
					 (IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr) &&
					  ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr[12] == 127);
	http_cfg_finish(c, bound, loopback);
	if (!c->nhosts)
		slog("warning", "the %s listener on %s:%u accepts any Host header: set its ALLOWED_HOSTS variable to the "
				"names clients use",
		     what, c->host, bound);
	return fd;
}

/* The reviewer listener, and the reverse proxy's own socket when configured. */
static int review_listen(struct signer *s, char *err)
{
	s->review_fd = s->proxy_fd = -1;
	GUARD(http_cfg_review_from_env(&s->review, err));
	uint64_t v;
	GUARD(http_cfg_env_uint("ASSENT_REVIEW_STREAMS_PER_REVIEWER", 1, 1024, 8, &v, err));
	s->web_streams_max = (unsigned)v;
	GUARD(http_cfg_env_uint("ASSENT_REVIEW_STREAM_SECONDS", 1, 86400, 900, &v, err));
	s->web_stream_s = (unsigned)v;
	if ((s->review_fd = tcp_listen(&s->review, "reviewer", "ASSENT_REVIEW_PORT", err)) == -2)
		return AS_EIO;
	const char *hdr = getenv("ASSENT_REVIEW_PROXY_HEADER"), *sec = getenv("ASSENT_REVIEW_PROXY_SECRET");
	const char *sock = getenv("ASSENT_REVIEW_PROXY_SOCKET"), *grp = getenv("ASSENT_REVIEW_PROXY_GROUP");
	snprintf(s->proxy_header, sizeof s->proxy_header, "%s", hdr && *hdr ? hdr : "X-Reviewer-Email");
	for (const char *p = s->proxy_header; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return as_fail(err, AS_EINVAL, "ASSENT_REVIEW_PROXY_HEADER: a header name (A-Z a-z 0-9 -)");
	if (sec && *sec) {
		if (strlen(sec) < 32 || strlen(sec) >= sizeof s->proxy_secret)
			return as_fail(err, AS_EINVAL, "ASSENT_REVIEW_PROXY_SECRET: 32 to 128 characters");
		snprintf(s->proxy_secret, sizeof s->proxy_secret, "%s", sec);
		unsetenv("ASSENT_REVIEW_PROXY_SECRET");
	}
	if (!sock || !*sock)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof sa.sun_path || sock[0] != '/')
		return as_fail(err, AS_EINVAL, "ASSENT_REVIEW_PROXY_SOCKET: an absolute path under %zu bytes",
			       sizeof sa.sun_path);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	unlink(sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(0077);
	int rc = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 128) == 0 ? 0 : -1;
	umask(old);
	if (rc == 0 && grp && *grp && sock_group(sock, grp, "ASSENT_REVIEW_PROXY_GROUP", err) != 0) {
		close(fd); /* only the proxy's group may connect: mode 0660 */
		return AS_EINVAL;
	}
	if (rc != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return as_fail(err, AS_EIO, "cannot listen on %s: %s", sock, strerror(e));
	}
	snprintf(s->proxy_path, sizeof s->proxy_path, "%s", sock);
	s->proxy_fd = fd;
	return 0;
}

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
	{F_HTTP_AUTH, READY, IPC_FDS, h_http_auth},
	{F_SESSION_INFO, READY, 0, h_session_info},
	{F_SESSION_END, READY, 0, h_session_end},
};
static const struct ipc_rule review_rules[] = {
	{F_HELLO, IPC_STATE(S_NEW), IPC_ONCE, h_hello},
	{F_LOG, READY | IPC_STATE(S_NEW), 0, h_log},
	{F_CONN_CLOSED, READY, 0, h_conn_closed},
	{F_CTL, READY, 0, h_ctl},
	{F_WEB, READY, IPC_FDS, h_web},
};

static int worker_throttled(const struct signer *s, int k)
{
	return s->w[k].fd >= 0 && ipc_pending(&s->w[k].ipc) > IPC_TXQ_MAX / 2;
}

static void worker_input(struct signer *s, int k)
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
		s->cur = k;
		int rc = k == W_MCP ? ipc_dispatch(mcp_rules, sizeof mcp_rules / sizeof *mcp_rules, IPC_STATE(w->state),
						   &w->once, s, &f, err)
				    : ipc_dispatch(review_rules, sizeof review_rules / sizeof *review_rules,
						   IPC_STATE(w->state), &w->once, s, &f, err);
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
			mine++; /* per socket: a uid's agents holding agent.sock never lock its reviewer out of control.sock */
	}
	char why[200];
	if (!c) {
		snprintf(why, sizeof why, "the gateway serves %d connections already; try again later", MAX_CONNS);
		lim_log(s, LIM_CONNS_TOTAL, "connection from uid %u refused: all %d connection slots are in use",
			(unsigned)uid, MAX_CONNS);
	} else if (mine >= s->lim.c.conns_per_uid) {
		snprintf(why, sizeof why, "uid %u has %zu connections open on %s, the limit (ASSENT_MAX_CONNECTIONS_PER_UID=%u)",
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

static void ctl_unwatch(struct signer *s, size_t i)
{
	if (s->ctl_fd[i] < 0)
		return;
	/* Deleted by hand: the worker's copy keeps the socket, and so the epoll entry, alive. */
	epoll_ctl(s->ctl_ep, EPOLL_CTL_DEL, s->ctl_fd[i], NULL);
	close(s->ctl_fd[i]);
	s->ctl_fd[i] = -1;
}

static int ctl_watch(struct signer *s, const struct conn *c, int fd)
{
	size_t i = (size_t)(c - s->conns);
	ctl_unwatch(s, i);
	int d = s->ctl_ep < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	struct epoll_event ev = {.events = EPOLLRDHUP, .data.u64 = i};
	if (d < 0 || epoll_ctl(s->ctl_ep, EPOLL_CTL_ADD, d, &ev) != 0) {
		if (d >= 0)
			close(d);
		slog("error", "cannot watch a control connection (%s): refused", strerror(errno));
		return -1;
	}
	s->ctl_fd[i] = d;
	s->ctl_id[i] = c->id;
	return 0;
}

/* Whether the reviewer behind c is still connected, asked of the socket itself at the
 * moment a command is acted on: a frame the worker sent after the reviewer left is
 * about a connection that has ended, even if the epoll turn has not come yet. */
static int ctl_gone(struct signer *s, struct conn *c)
{
	size_t i = (size_t)(c - s->conns);
	struct pollfd p = {.fd = s->ctl_fd[i], .events = POLLRDHUP};
	if (s->ctl_fd[i] >= 0 && s->ctl_id[i] == c->id && poll(&p, 1, 0) == 0)
		return 0;
	conn_end(s, c);
	return 1;
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
	struct cv *f = ipc_frame_new(&a, F_CONN_NEW, 1);
	char err[AS_ERRLEN];
	if (!f || ipc_put_uint(&a, f, "conn", c->id) != 0 || ipc_conn_send(&w->ipc, f, fd, err) != 0)
		c->used = 0;
	cv_arena_free(&a);
	close(fd); /* the worker has its own copy now */
	return 0;
}

/* Requests a previous run left pending: every request entry with no decision,
 * timeout, cancelled or abandoned entry after it. They get an `abandoned` entry:
 * their callers are gone with that run. One pass over the ledger at start. */
struct open_scan {
	json_t *open; /* session_id -> true */
	struct cv_arena a;
};

static int scan_open(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	(void)seq;
	struct open_scan *o = arg;
	struct cv *e;
	cv_arena_reset(&o->a);
	if (cbor_decode(cbor, len, &o->a, &e, NULL) != 0)
		return 0; /* assent-verify reports damage; here we only look for open requests */
	const struct cv *kind = cv_get(e, "kind"), *sid = cv_get(e, "session_id");
	if (!kind || !sid || sid->t != CV_TEXT || sid->n > PQ_SID_LEN)
		return 0;
	char id[PQ_SID_LEN + 1];
	memcpy(id, sid->s, sid->n);
	id[sid->n] = 0;
	if (cv_text_eq(kind, "request"))
		json_object_set_new(o->open, id, json_true());
	else
		json_object_del(o->open, id);
	return 0;
}

static void abandon_leftovers(struct signer *s)
{
	struct open_scan o = {.open = json_object()};
	char err[AS_ERRLEN];
	cv_arena_init(&o.a, ENTRY_MAX);
	if (ledger_scan(s->ledger, scan_open, &o, err) != 0)
		slog("error", "scanning the ledger for pending requests: %s", err);
	const char *sid;
	json_t *v;
	size_t n = 0;
	json_object_foreach(o.open, sid, v) {
		if (append_simple(s, "abandoned", sid, "the daemon restarted; the caller is gone", NULL))
			n++;
	}
	commit_batch(s);
	if (n)
		slog("warning", "%zu requests left pending by a previous run were marked abandoned", n);
	cv_arena_free(&o.a);
	json_decref(o.open);
}

static int write_info(struct signer *s, char *err)
{
	char path[4200], rp[4096], kid[24] = "";
	snprintf(path, sizeof path, "%s/%s", s->o->state, BRIDGE_INFO_FILE);
	if (s->tcfg.mode == TOK_HS256)
		hs256_kid(s->tcfg.secret, s->tcfg.secret_len, kid);
	char http[300] = "", review[300] = "";
	if (s->http_fd >= 0)
		snprintf(http, sizeof http, strchr(s->http.host, ':') ? "[%s]:%u" : "%s:%u", s->http.host, s->http.port);
	if (s->review_fd >= 0)
		snprintf(review, sizeof review, strchr(s->review.host, ':') ? "[%s]:%u" : "%s:%u", s->review.host,
			 s->review.port);
	json_t *j = json_pack("{s:I,s:s,s:s?,s:s,s:s?,s:b,s:I,s:s?,s:b}", "pid", (json_int_t)getpid(), "version", ASSENT_VERSION,
			      "policy", s->o->policy && realpath(s->o->policy, rp) ? rp : s->o->policy, "token_mode",
			      s->tcfg.mode == TOK_ES256 ? "ES256" : s->tcfg.mode == TOK_HS256 ? "HS256" : "off",
			      "token_secret_kid", kid[0] ? kid : NULL, "single_user", s->o->single_user, "timeout_seconds",
			      (json_int_t)s->timeout_s, "http", http[0] ? http : NULL, "anonymous",
			      s->http_fd >= 0 && s->http.anonymous);
	if (j && review[0])
		json_object_set_new(j, "review", json_string(review));
	if (j && s->proxy_fd >= 0)
		json_object_set_new(j, "review_proxy", json_string(s->proxy_path));
	char *txt = json_dumps(j, JSON_INDENT(2));
	json_decref(j);
	int rc = txt ? file_write_atomic(path, txt, strlen(txt), 0644, err) : AS_ENOMEM;
	free(txt);
	return rc;
}

int signer_main(const struct signer_opts *o)
{
	static struct signer S;
	struct signer *s = &S;
	s->o = o;
	s->started_ms = now_ms();
	s->self_uid = getuid();
	const char *ll = getenv("FEEDBACK_LOG_LEVEL");
	if (ll && *ll) {
		int r = log_rank(ll);
		if (r < 0 || r > 3) {
			slog("error", "FEEDBACK_LOG_LEVEL: expected DEBUG, INFO, WARNING or ERROR, got '%.32s'", ll);
			return 2;
		}
		log_min = r;
	}
	char err[AS_ERRLEN], path[4200];
	if (mkdir_p(o->state, 0700, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	/* One daemon per state directory. */
	snprintf(path, sizeof path, "%s/assentd.lock", o->state);
	int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) {
		slog("error", "another assentd already serves %s", o->state);
		return 1;
	}
	s->w[W_MCP] = (struct worker){.kind = "mcp", .fd = -1};
	if (!(s->ws = calloc(1, sizeof *s->ws))) {
		slog("error", "out of memory");
		return 2;
	}
	s->w[W_REVIEW] = (struct worker){.kind = "review", .fd = -1};
	ctl_init(s);
	if ((s->agent_fd = listen_unix(o->state, BRIDGE_AGENT_SOCK, err)) < 0 ||
	    (s->control_fd = listen_unix(o->state, CONTROL_SOCK, err)) < 0 || control_group(o->state, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (http_cfg_from_env(&s->http, err) != 0 || (s->http_fd = tcp_listen(&s->http, "agent HTTP", "FEEDBACK_SSE_PORT", err)) == -2 ||
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
	/* Workers first: they are forked before any key or secret is in this process. */
	if (spawn_worker(s, W_MCP) != 0 || spawn_worker(s, W_REVIEW) != 0) {
		slog("error", "cannot start the workers");
		return 2;
	}
	const char *t = getenv("FEEDBACK_TIMEOUT_SECONDS");
	uint64_t tv = 300;
	if (t && *t && (parse_u64(t, &tv) != 0 || tv == 0 || tv > TIMEOUT_MAX_S)) {
		slog("error", "FEEDBACK_TIMEOUT_SECONDS must be 1 to %d, not '%.16s'", TIMEOUT_MAX_S, t);
		return 2;
	}
	s->timeout_s = (uint32_t)tv;
	if (lim_from_env(&s->lim.c, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (s->timeout_s > s->lim.c.max_timeout_s) { /* the cap holds for the default too */
		slog("warning", "FEEDBACK_TIMEOUT_SECONDS=%u is over ASSENT_MAX_TIMEOUT_SECONDS=%u: requests wait %u s", s->timeout_s,
		     s->lim.c.max_timeout_s, s->lim.c.max_timeout_s);
		s->timeout_s = s->lim.c.max_timeout_s;
	}
	char ldir[4200], kdir[4200];
	snprintf(ldir, sizeof ldir, "%s/ledger", o->state);
	snprintf(kdir, sizeof kdir, "%s/keys", o->state);
	struct ledger_opts lo = {.keys_dir = kdir};
	/* An unsigned tail (an older assent crashed) is signed only when the operator says how long it is. */
	const char *adopt = getenv("ASSENT_ADOPT_UNSIGNED_TAIL");
	if (adopt && *adopt && parse_u64(adopt, &lo.adopt_unsigned_tail) != 0) {
		slog("error", "ASSENT_ADOPT_UNSIGNED_TAIL must be a number of entries, not '%.16s'", adopt);
		return 2;
	}
	if (tok_config_from_env(&s->tcfg, err) != 0 || ledger_open(ldir, &lo, &s->ledger, err) != 0 ||
	    tokkeys_open(kdir, &s->tcfg, s->ledger, &s->tk, err) != 0 || pq_new(PQ_MAX, &s->q) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	/* Secrets stay in the signer: clear them from the environment it may pass on. */
	unsetenv("FEEDBACK_TOKEN_SECRET");
	reload_registry(s);
	cv_arena_init(&s->arena, 1u << 20);
	abandon_leftovers(s);
	if (load_policy(s, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (write_info(s, err) != 0)
		slog("warning", "%s", err);
	if (o->single_user)
		slog("warning", "SINGLE-USER MODE: a decision from the same uid as the requester is accepted and recorded "
				"as assurance same-user. An agent running as your user can approve its own requests: this "
				"protects against mistakes, not against a hostile agent.");
	slog("info", "assentd %s serving %s (pid %d)", ASSENT_VERSION, o->state, (int)getpid());
	if (s->http_fd >= 0)
		slog("info", "agents over HTTP: http://%s:%u/mcp (%s)", s->http.host, s->http.port,
		     s->http.anonymous ? "API key, or none from loopback" : "API key required");
	if (s->review_fd >= 0)
		slog("info", "reviewers on the web: http://%s:%u/review", s->review.host, s->review.port);
	if (s->proxy_fd >= 0)
		slog("info", "reverse proxy's socket: %s (identity header %s)", s->proxy_path, s->proxy_header);
	while (!s->stop) {
		struct pollfd pf[6];
		size_t n = 0;
		pf[n++] = (struct pollfd){.fd = s->sig_fd, .events = POLLIN};
		/* Connections wait in the listen backlog until their worker is ready for them. */
		pf[n++] = (struct pollfd){.fd = s->w[W_MCP].state == S_READY && s->w[W_MCP].fd >= 0 ? s->agent_fd : -1,
					  .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = s->w[W_REVIEW].state == S_READY && s->w[W_REVIEW].fd >= 0 ? s->control_fd : -1,
					  .events = POLLIN};
		for (int k = 0; k < NWORKERS; k++)
			pf[n++] = (struct pollfd){.fd = s->w[k].fd,
						  /* a worker whose answers back up is read again once they drain */
						  .events = (short)((s->w[k].rx_full && worker_throttled(s, k) ? 0 : POLLIN) |
								    (s->w[k].fd >= 0 && ipc_pending(&s->w[k].ipc) ? POLLOUT : 0))};
		pf[n++] = (struct pollfd){.fd = s->ctl_ep, .events = POLLIN}; /* last: a worker's frames go first */
		uint64_t now = now_ms(), next = now + 1000, d;
		if (pq_next_deadline(s->q, &d) == 0 && d < next)
			next = d;
		for (int k = 0; k < NWORKERS; k++)
			if (s->w[k].start_at && s->w[k].start_at < next)
				next = s->w[k].start_at;
		int ms = next > now ? (int)(next - now) : 0;
		for (int k = 0; k < NWORKERS; k++)
			if (s->w[k].fd >= 0 && s->w[k].backlog && !worker_throttled(s, k))
				ms = 0; /* frames wait to be handled: only look what else came */
		if (poll(pf, n, ms) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
					s->stop = 1;
				if (si.ssi_signo == SIGHUP && s->o->policy && load_policy(s, err) != 0)
					slog("error", "%s: the policy loaded before stays in force", err);
				if (si.ssi_signo == SIGCHLD) {
					int st;
					pid_t p;
					while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
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
			}
		}
		for (int m = 0; m < 64 && (pf[1].revents & POLLIN) && accept_conn(s, s->agent_fd, W_MCP) == 0; m++)
			;
		for (int m = 0; m < 64 && (pf[2].revents & POLLIN) && accept_conn(s, s->control_fd, W_REVIEW) == 0; m++)
			;
		for (int k = 0; k < NWORKERS; k++) {
			if (s->w[k].fd < 0)
				continue;
			if (pf[3 + k].revents & POLLOUT)
				ipc_flush(&s->w[k].ipc, err);
			if ((pf[3 + k].revents & (POLLIN | POLLHUP | POLLERR)) || (s->w[k].backlog && !worker_throttled(s, k)))
				worker_input(s, k);
		}
		if (pf[3 + NWORKERS].revents & POLLIN)
			ctl_ended(s);
		now = now_ms();
		for (int k = 0; k < NWORKERS; k++)
			if (s->w[k].fd < 0 && s->w[k].start_at && s->w[k].start_at <= now && spawn_worker(s, k) != 0)
				s->w[k].start_at = now + 5000;
		expire(s);
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
	}
	commit_batch(s);
	slog("info", "assentd stopping: %zu requests stay pending; this run wrote %llu ledger entries in %llu commits",
	     pq_count(s->q), (unsigned long long)s->committed, (unsigned long long)s->commits);
	for (int k = 0; k < NWORKERS; k++)
		if (s->w[k].pid > 0) { /* workers hold nothing worth flushing */
			kill(s->w[k].pid, SIGKILL);
			waitpid(s->w[k].pid, NULL, 0);
		}
	ledger_close(s->ledger); /* signs a final checkpoint */
	tokkeys_free(s->tk);
	tok_config_clear(&s->tcfg);
	policy_free(s->pol);
	snprintf(path, sizeof path, "%s/%s", o->state, BRIDGE_AGENT_SOCK);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s", o->state, CONTROL_SOCK);
	unlink(path);
	if (s->proxy_fd >= 0)
		unlink(s->proxy_path);
	return 0;
}
