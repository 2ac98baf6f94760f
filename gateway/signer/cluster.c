/* Cluster mode (issue 32, docs/cluster.md): the signer's end of the shared ledger. With
 * ASSENT_CLUSTER (assentd --cluster URL) the ledger is the cluster's, in PostgreSQL, and the
 * LMDB ledger in the state directory is this replica's mirror of it: every commit takes the
 * cluster's append lock, imports what the other replicas appended (checked by ledger/sync.c:
 * nothing PostgreSQL says is trusted), appends and signs on top, stores its entries there and
 * commits there before the mirror commits. The database client is not in the signer: it is
 * assent-cluster (gateway/recorder/cluster.c), confined like the recorder, which the signer
 * talks to in blocking steps of at most CL_WAIT_MS. When it does not answer, or PostgreSQL
 * cannot be reached, the commit fails and nothing is appended: the replica fails closed, as it
 * does when its disk fails, and the next commit starts a new client. Other replicas' commits
 * arrive as NOTIFY and are imported at once (cluster_input). */
#define _GNU_SOURCE
#include "gateway/signer/cluster.h"
#include "gateway/signer/types.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/proto/frames.h"
#include "gateway/proto/workers.h"
#include "ledger/export.h"
#include "ledger/merkle.h"

#define CL_WAIT_MS 10000 /* the longest one step waits for the client */

struct cluster {
	struct signer *s; /* NULL: an export's or the CLI's (no webhooks) */
	char exe[4200];	  /* assent-cluster, beside assent-worker (or beside the assent CLI) */
	struct ledger_sync sync;
	struct ipc_conn ipc;
	struct cv_arena a, o;
	int fd;	   /* -1: no client now (started by the next step) */
	pid_t pid; /* reaped by the loop's SIGCHLD handler */
	char url[PROTO_CL_URL_MAX + 1];
	char replica[PROTO_CL_REPLICA_MAX + 1];
	char policy[65];
	const char *lock; /* "row" or "advisory" (ASSENT_CLUSTER_LOCK) */
	int adopt;	  /* ASSENT_CLUSTER_POLICY=adopt: at the first start, this policy becomes the cluster's */
	uint64_t shared;  /* the shared ledger's size as last heard */
	uint64_t commits, imported, failures;
	int db_ok;	   /* the last step reached PostgreSQL */
	int stale;	   /* a push was refused: what the others appended is imported before the next apply */
	int starting;	   /* HELLO sent, READY not read yet (cl_spawn) */
	uint64_t lease_ms; /* ASSENT_CLUSTER_LEASE: after this long without a heartbeat a replica is taken over */
	uint64_t retry_at; /* mono_ms: when a client that is down is started again between commits */
	char dead[8][PROTO_CL_REPLICA_MAX + 1]; /* replicas this one took over, not yet ended (cluster_apply) */
	size_t ndead;
	uint64_t taken_over;	       /* replicas this one took over since it started (/health) */
	struct creg *reg;	       /* the shared identity registry (cluster_reg.c) */
	uint64_t apply_from, apply_to; /* imported and not yet applied to the signer's state (cluster_apply.c) */
	char last_err[AS_ERRLEN];
};

static void cl_close(struct cluster *c)
{
	if (c->fd < 0)
		return;
	ipc_conn_free(&c->ipc);
	close(c->fd);
	c->fd = -1;
	c->starting = 0;
	if (c->pid > 0)
		kill(c->pid, SIGKILL);
	c->pid = 0;
}

static void cl_down(struct cluster *c, const char *why)
{
	if (c->fd < 0)
		return;
	slog("error", "cluster: %s; the client is restarted by the next commit", why);
	c->db_ok = 0;
	snprintf(c->last_err, sizeof c->last_err, "%s", why);
	cl_close(c);
}

/* Sent whole before it returns (at most CL_WAIT_MS): a commit's PUT frames can be more than
 * the socket holds, and the client reads them while we wait. */
static int cl_send(struct cluster *c, struct cv *f, char *err)
{
	int rc = ipc_conn_send(&c->ipc, f, -1, err);
	uint64_t end = mono_ms() + CL_WAIT_MS;
	while (rc == 0 && ipc_pending(&c->ipc)) {
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		uint64_t now = mono_ms();
		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			rc = as_fail(err, AS_EIO, "the cluster client does not read");
		else
			rc = ipc_flush(&c->ipc, err);
	}
	cv_arena_reset(&c->o);
	return rc;
}

/* A replica this one took over (F_CL_DEAD): its ends are written by cluster_apply. */
static void cl_dead(struct cluster *c, const struct ipc_frame *f)
{
	const char *name;
	size_t n;
	char err[AS_ERRLEN];
	if (ipc_get_text(f->body, "replica", PROTO_CL_REPLICA_MAX, &name, &n, err) != 0)
		return;
	if (n == strlen(c->replica) && !memcmp(name, c->replica, n)) { /* never: the client asks for others */
		slog("error", "cluster: the client reported this replica's own lease as expired; ignored");
		return;
	}
	if (c->ndead == sizeof c->dead / sizeof c->dead[0]) {
		slog("error",
		     "cluster: replica %.*s's lease expired, and 8 takeovers wait already: it is left for "
		     "another replica",
		     (int)n, name);
		return;
	}
	snprintf(c->dead[c->ndead++], sizeof c->dead[0], "%.*s", (int)n, name);
	c->taken_over++;
}

/* A webhook delivery a dead replica left (F_CL_DLV): notify.c checks its mac and sends it. */
static void cl_dlv(struct cluster *c, const struct ipc_frame *f)
{
	const char *v[5];
	size_t n[5];
	uint64_t id;
	char err[AS_ERRLEN], origin[PROTO_CL_REPLICA_MAX + 1], hook[PROTO_CL_HOOK_MAX + 1],
	    event[PROTO_CL_EVENT_MAX + 1], mac[65];
	if (!c->s || ipc_get_uint(f->body, "id", UINT64_MAX, &id, err) != 0 ||
	    ipc_get_text(f->body, "origin", PROTO_CL_REPLICA_MAX, &v[0], &n[0], err) != 0 ||
	    ipc_get_text(f->body, "hook", PROTO_CL_HOOK_MAX, &v[1], &n[1], err) != 0 ||
	    ipc_get_text(f->body, "event", PROTO_CL_EVENT_MAX, &v[2], &n[2], err) != 0 ||
	    ipc_get_text(f->body, "body", PROTO_NOTIFY_BODY_MAX, &v[3], &n[3], err) != 0 ||
	    ipc_get_text(f->body, "mac", 64, &v[4], &n[4], err) != 0)
		return;
	snprintf(origin, sizeof origin, "%.*s", (int)n[0], v[0]);
	snprintf(hook, sizeof hook, "%.*s", (int)n[1], v[1]);
	snprintf(event, sizeof event, "%.*s", (int)n[2], v[2]);
	snprintf(mac, sizeof mac, "%.*s", (int)n[4], v[4]);
	if (c->s->dlv_adopt)
		c->s->dlv_adopt(c->s, origin, id, hook, event, v[3], n[3], mac);
	else
		slog("warning",
		     "cluster: a webhook delivery of replica %s was handed over, and no webhook is served here",
		     origin);
}

void cluster_dlv_add(struct signer *s, uint64_t id, const char *hook, const char *event, const char *body,
		     const char *mac)
{
	struct cluster *c = s->cluster;
	char err[AS_ERRLEN];
	if (!c || c->fd < 0)
		return; /* best effort: not kept, so not taken over */
	struct cv *f = ipc_frame_new(&c->o, F_CL_DLV_ADD, 5);
	if (!f || ipc_put_uint(&c->o, f, "id", id) || ipc_put_text(&c->o, f, "hook", hook, strlen(hook)) ||
	    ipc_put_text(&c->o, f, "event", event, strlen(event)) ||
	    ipc_put_text(&c->o, f, "body", body, strlen(body)) || ipc_put_text(&c->o, f, "mac", mac, strlen(mac)) ||
	    cl_send(c, f, err) != 0)
		cv_arena_reset(&c->o);
}

void cluster_dlv_done(struct signer *s, const char *origin, uint64_t id, const char *hook)
{
	struct cluster *c = s->cluster;
	char err[AS_ERRLEN];
	if (!c || c->fd < 0)
		return;
	if (!origin || !*origin)
		origin = c->replica;
	struct cv *f = ipc_frame_new(&c->o, F_CL_DLV_DONE, 3);
	if (!f || ipc_put_text(&c->o, f, "origin", origin, strlen(origin)) || ipc_put_uint(&c->o, f, "id", id) ||
	    ipc_put_text(&c->o, f, "hook", hook, strlen(hook)) || cl_send(c, f, err) != 0)
		cv_arena_reset(&c->o);
}

/* This replica's registry or webhooks to the cluster (F_CL_REG_PUT, never answered); takes
 * p->body. */
static void reg_put(struct cluster *c, struct creg_push *p)
{
	char err[AS_ERRLEN];
	struct cv *f = c->fd >= 0 ? ipc_frame_new(&c->o, F_CL_REG_PUT, 5) : NULL;
	if (!f || ipc_put_uint(&c->o, f, "version", p->version) ||
	    (p->which && ipc_put_uint(&c->o, f, "file", (uint64_t)p->which)) ||
	    (p->base && ipc_put_uint(&c->o, f, "base", p->base)) ||
	    ipc_put_text(&c->o, f, "body", (const char *)p->body.p, p->body.len) ||
	    ipc_put_text(&c->o, f, "mac", p->mac, strlen(p->mac)) || cl_send(c, f, err) != 0)
		cv_arena_reset(&c->o);
	buf_free(&p->body);
}

/* The cluster's identity registry or webhooks (F_CL_REG): cluster_reg.c checks its mac. */
static void cl_reg(struct cluster *c, const struct ipc_frame *f)
{
	const char *body, *mac;
	size_t bn, mn;
	uint64_t v, which = 0;
	char err[AS_ERRLEN], m[65];
	if (!c->s || ipc_get_uint(f->body, "version", UINT64_MAX, &v, err) != 0 ||
	    (cv_get(f->body, "file") && ipc_get_uint(f->body, "file", CREG_FILES - 1, &which, err) != 0) ||
	    ipc_get_text(f->body, "body", PROTO_CL_REG_MAX, &body, &bn, err) != 0 ||
	    ipc_get_text(f->body, "mac", 64, &mac, &mn, err) != 0)
		return;
	snprintf(m, sizeof m, "%.*s", (int)mn, mac);
	struct creg_push p;
	if (c->reg && creg_in(c->reg, c->s->o->state, (int)which, v, body, bn, m, &p))
		reg_put(c, &p);
}

/* A web session made, used or ended here, to the cluster (F_CL_WS_PUT, never answered). */
static void ws_share(struct signer *s, const struct ws_session *ss, int ended)
{
	struct cluster *c = s->cluster;
	struct creg_push p;
	char key[65], err[AS_ERRLEN];
	if (!c || !c->reg || c->fd < 0 || c->starting || creg_ws_out(c->reg, ss, &p) != 0)
		return;
	hex_encode(ss->hash, 32, key);
	struct cv *f = ipc_frame_new(&c->o, F_CL_WS_PUT, 4);
	if (!f || ipc_put_text(&c->o, f, "key", key, 64) ||
	    ipc_put_text(&c->o, f, "body", (const char *)p.body.p, p.body.len) ||
	    ipc_put_text(&c->o, f, "mac", p.mac, 64) || ipc_put_bool(&c->o, f, "ended", ended) ||
	    cl_send(c, f, err) != 0)
		cv_arena_reset(&c->o);
	buf_free(&p.body);
}

/* One from the cluster (F_CL_WS): cluster_reg.c checks its mac. */
static void cl_ws(struct cluster *c, const struct ipc_frame *f)
{
	const char *body, *mac;
	size_t bn, mn;
	int ended;
	char err[AS_ERRLEN], m[65];
	if (!c->s || !c->s->ws || !c->reg || ipc_get_text(f->body, "body", PROTO_CL_WS_MAX, &body, &bn, err) != 0 ||
	    ipc_get_text(f->body, "mac", 64, &mac, &mn, err) != 0 || ipc_get_bool(f->body, "ended", &ended, err) != 0)
		return;
	snprintf(m, sizeof m, "%.*s", (int)mn, mac);
	creg_ws_in(c->reg, c->s->ws, body, bn, m, ended, now_ms());
}

void cluster_reg_loaded(struct signer *s)
{
	struct cluster *c = s->cluster;
	struct creg_push p;
	for (int k = 0; c && c->reg && k < CREG_FILES; k++)
		if (creg_local(c->reg, s->o->state, k, &p))
			reg_put(c, &p);
}

/* A frame the client sends whenever it has one (a takeover, a delivery, the registry, a web
 * session): handled, 1; else 0. */
static int cl_aside(struct cluster *c, const struct ipc_frame *f)
{
	if (f->type == F_CL_DEAD)
		cl_dead(c, f);
	else if (f->type == F_CL_DLV)
		cl_dlv(c, f);
	else if (f->type == F_CL_REG)
		cl_reg(c, f);
	else if (f->type == F_CL_WS)
		cl_ws(c, f);
	return f->type == F_CL_DEAD || f->type == F_CL_DLV || f->type == F_CL_REG || f->type == F_CL_WS;
}

/* The next frame that is not a NOTIFY (those are hints, dropped here) or a takeover (kept). */
static int cl_next(struct cluster *c, struct ipc_frame *f, char *err)
{
	for (;;) {
		int rc = ipc_next_wait(&c->ipc, &c->a, f, CL_WAIT_MS, err);
		if (rc == 0 && frame_fields_check(frame_table_find(f->type), f->body, err) != 0)
			rc = AS_ECORRUPT;
		if (rc == 0 && f->nfds)
			rc = as_fail(err, AS_ECORRUPT, "the cluster client sent a descriptor");
		if (rc != 0) {
			char why[AS_ERRLEN + 40];
			snprintf(why, sizeof why, "the cluster client: %s", err);
			cl_down(c, why);
			return as_fail(err, AS_EIO, "%s", why);
		}
		if (!cl_aside(c, f) && f->type != F_CL_NOTIFY)
			return 0;
		/* a NOTIFY here is only a hint that a catch-up would find more: the next commit imports */
	}
}

/* The END that answers a step: 0, or AS_EIO with the client's reason. */
static int cl_end(struct cluster *c, struct ipc_frame *f, char *err)
{
	int ok = 0;
	const char *msg = NULL;
	size_t n = 0;
	uint64_t size;
	if (f->type != F_CL_END || ipc_get_bool(f->body, "ok", &ok, err) != 0) {
		cl_down(c, "the cluster client answered out of turn");
		return as_fail(err, AS_EIO, "the cluster client answered out of turn");
	}
	if (ok && ipc_get_uint(f->body, "size", UINT64_MAX, &size, err) == 0)
		c->shared = size; /* as the last step's transaction saw it (for /health) */
	c->db_ok = ok;
	if (ok)
		return 0;
	if (ipc_get_text(f->body, "err", PROTO_CL_ERR_MAX, &msg, &n, err) != 0)
		msg = "no reason given", n = 15;
	c->failures++;
	snprintf(c->last_err, sizeof c->last_err, "%.*s", (int)n, msg);
	return as_fail(err, AS_EIO, "cluster: %.*s", (int)n, msg);
}

static void child(struct cluster *c, int fd, const char *uidarg)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int nul = open("/dev/null", O_RDWR);
	if (nul < 0 || dup2(fd, 3) != 3 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
		_exit(127);
	closefrom(4);
	char *argv[] = {CLUSTER_EXE, uidarg[0] ? "--uid" : NULL, (char *)uidarg, NULL}, *envp[] = {NULL};
	execve(c->exe, argv, envp);
	_exit(127);
}

/* Start the client and say hello; READY (or END: its reason) is read by cl_ready. */
static int cl_spawn(struct cluster *c, char *err)
{
	char uidarg[16] = "";
	uid_t wuid;
	int sv[2];
	if (geteuid() == 0) {
		GUARD(jail_worker_uid(getenv("ASSENT_WORKER_UID"), JAIL_CLUSTER_KIND, &wuid, err));
		snprintf(uidarg, sizeof uidarg, "%u", (unsigned)wuid);
	}
	GUARD(ipc_socketpair(sv, err));
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		child(c, sv[1], uidarg);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return as_fail(err, AS_EIO, "cannot start %s", CLUSTER_EXE);
	}
	c->fd = sv[0];
	c->pid = pid;
	GUARD(ipc_conn_init(&c->ipc, c->fd, err));
	struct cv *f = ipc_frame_new(&c->o, F_CL_HELLO, 6);
	if (!f || ipc_put_text(&c->o, f, "url", c->url, strlen(c->url)) ||
	    ipc_put_text(&c->o, f, "replica", c->replica, strlen(c->replica)) ||
	    ipc_put_text(&c->o, f, "policy", c->policy, strlen(c->policy)) ||
	    ipc_put_text(&c->o, f, "lock", c->lock, strlen(c->lock)) || ipc_put_bool(&c->o, f, "adopt", c->adopt) ||
	    (c->lease_ms && ipc_put_uint(&c->o, f, "lease", c->lease_ms)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	if (cl_send(c, f, err) != 0) {
		cl_down(c, "the cluster client did not start");
		return AS_EIO;
	}
	c->starting = 1;
	return 0;
}

/* The client's answer to HELLO (r): READY, or END with its reason (the policy, PostgreSQL). */
static int cl_ready(struct cluster *c, const struct ipc_frame *fr, char *err)
{
	struct ipc_frame r = *fr;
	c->starting = 0;
	if (r.type == F_CL_END) {
		int rc = cl_end(c, &r, err);
		cl_close(c);
		return rc ? rc : as_fail(err, AS_EIO, "the cluster client ended");
	}
	uint64_t replicas = 0;
	if (r.type != F_CL_READY || ipc_get_uint(r.body, "size", UINT64_MAX, &c->shared, err) != 0 ||
	    ipc_get_uint(r.body, "replicas", UINT32_MAX, &replicas, err) != 0) {
		cl_down(c, "the cluster client's first frame is not READY");
		return as_fail(err, AS_EIO, "the cluster client's first frame is not READY");
	}
	c->adopt = 0; /* once: a client started again later checks, as every other replica does */
	c->db_ok = 1;
	if (strcmp(c->policy, "-") != 0) /* not for an export */
		slog("info", "cluster: replica %s joined (%llu replicas known; the shared ledger has %llu entries)",
		     c->replica, (unsigned long long)replicas, (unsigned long long)c->shared);
	return 0;
}

/* Started, and its READY read (blocking, at most CL_WAIT_MS). */
static int cl_start(struct cluster *c, char *err)
{
	struct ipc_frame r;
	if (c->fd < 0)
		GUARD(cl_spawn(c, err));
	if (cl_next(c, &r, err) != 0) {
		cl_down(c, "the cluster client did not start");
		return AS_EIO;
	}
	return cl_ready(c, &r, err);
}

/* ---- struct ledger_sync ---- */

static int cl_pull(void *ctx, uint64_t have, int lock, const struct ledger_sync_take *take, void *arg, char *err)
{
	struct cluster *c = ctx;
	if (c->fd < 0 || c->starting)
		GUARD(cl_start(c, err));
	struct cv *f = ipc_frame_new(&c->o, F_CL_PULL, 2);
	if (!f || ipc_put_uint(&c->o, f, "have", have) != 0 || ipc_put_bool(&c->o, f, "lock", lock) != 0)
		return as_fail(err, AS_ENOMEM, "out of memory");
	if (cl_send(c, f, err) != 0) {
		cl_down(c, err);
		return AS_EIO;
	}
	int refused = 0; /* a take refused: the rest is read and dropped, then the lock released */
	for (;;) {
		struct ipc_frame r;
		const uint8_t *p;
		size_t n;
		uint64_t u;
		int periodic;
		char e2[AS_ERRLEN];
		GUARD(cl_next(c, &r, e2) ? as_fail(err, AS_EIO, "%s", e2) : 0);
		if (r.type == F_CL_END) {
			int rc = cl_end(c, &r, e2);
			if (rc != 0)
				return refused ? refused : as_fail(err, rc, "%s", e2);
			if (refused)
				c->sync.release(c);
			return refused;
		}
		if (refused)
			continue;
		if (r.type == F_CL_ENT && ipc_get_uint(r.body, "seq", UINT64_MAX, &u, err) == 0 &&
		    ipc_get_bytes(r.body, "e", PROTO_CL_ENTRY_MAX, &p, &n, err) == 0)
			refused = take->entry(arg, u, p, n, err);
		else if (r.type == F_CL_CKPT && ipc_get_uint(r.body, "size", UINT64_MAX, &u, err) == 0 &&
			 ipc_get_bytes(r.body, "note", PROTO_CL_NOTE_MAX, &p, &n, err) == 0 &&
			 ipc_get_bool(r.body, "periodic", &periodic, err) == 0)
			refused = take->ckpt(arg, u, p, n, periodic, err);
		else
			refused = as_fail(err, AS_ECORRUPT, "the cluster client sent frame %u in a pull", r.type);
	}
}

static int cl_push(void *ctx, uint64_t from, const struct ledger_rec *ents, const char *const *claims, size_t n,
		   const uint8_t *note, size_t nlen, int periodic, char *err)
{
	struct cluster *c = ctx;
	for (size_t i = 0; i < n; i++) {
		struct cv *f = ipc_frame_new(&c->o, F_CL_PUT, 3);
		if (!f || ipc_put_uint(&c->o, f, "seq", from + i) ||
		    ipc_put_bytes(&c->o, f, "e", ents[i].cbor, ents[i].len) ||
		    (claims[i] && ipc_put_text(&c->o, f, "claim", claims[i], strlen(claims[i])))) {
			cl_down(c, "out of memory in a commit"); /* its transaction and lock go with it */
			return as_fail(err, AS_ENOMEM, "out of memory");
		}
		if (cl_send(c, f, err) != 0) {
			cl_down(c, err);
			return AS_EIO;
		}
	}
	struct cv *f = ipc_frame_new(&c->o, F_CL_PUSH, 4);
	if (!f || ipc_put_uint(&c->o, f, "from", from) || ipc_put_uint(&c->o, f, "n", n) ||
	    ipc_put_bytes(&c->o, f, "note", note, nlen) || ipc_put_bool(&c->o, f, "periodic", periodic)) {
		cl_down(c, "out of memory in a commit");
		return as_fail(err, AS_ENOMEM, "out of memory");
	}
	struct ipc_frame r;
	if (cl_send(c, f, err) != 0) {
		cl_down(c, err);
		return AS_EIO;
	}
	GUARD(cl_next(c, &r, err));
	if (cl_end(c, &r, err) != 0) {
		c->stale = 1; /* most often another replica took a claim first: its entry is news here */
		return AS_EIO;
	}
	c->commits++;
	return 0;
}

static void cl_release(void *ctx)
{
	struct cluster *c = ctx;
	char err[AS_ERRLEN];
	struct ipc_frame r;
	struct cv *f = ipc_frame_new(&c->o, F_CL_RELEASE, 0);
	if (c->fd < 0 || !f)
		return;
	if (cl_send(c, f, err) != 0 || cl_next(c, &r, err) != 0 || cl_end(c, &r, err) != 0)
		cl_down(c, "the cluster client did not release the append lock");
}

static void cl_imported(void *ctx, uint64_t from, uint64_t to)
{
	struct cluster *c = ctx;
	c->imported += to - from;
	if (c->apply_to == c->apply_from)
		c->apply_from = from;
	c->apply_to = to;
	slog("debug", "cluster: imported entries %llu..%llu from other replicas", (unsigned long long)from,
	     (unsigned long long)(to - 1));
}

/* ---- the signer's side ---- */

static int policy_sha(const char *path, char out[65], char *err)
{
	if (!path) {
		snprintf(out, 65, "none");
		return 0;
	}
	struct buf b;
	buf_init(&b, 1u << 20);
	int rc = file_read(path, 1u << 20, &b, err);
	if (rc == 0) {
		uint8_t h[32];
		sha256(b.p, b.len, h);
		hex_encode(h, 32, out);
	}
	buf_free(&b);
	return rc;
}

int cluster_setup(struct signer *s, struct ledger_opts *lo, char *err)
{
	const char *url = getenv("ASSENT_CLUSTER");
	if (!url || !*url)
		return 0;
	struct cluster *c = calloc(1, sizeof *c);
	if (!c)
		return as_fail(err, AS_ENOMEM, "out of memory");
	const char *w = s->o->worker_exe, *sl = strrchr(w, '/');
	snprintf(c->exe, sizeof c->exe, "%.*s%s", sl ? (int)(sl - w + 1) : 0, w, CLUSTER_EXE);
	c->fd = -1;
	c->s = s;
	cv_arena_init(&c->a, 4096);
	cv_arena_init(&c->o, 64);
	s->cluster = c;
	if (strlen(url) > PROTO_CL_URL_MAX)
		return as_fail(err, AS_EINVAL, "ASSENT_CLUSTER is over %u bytes", PROTO_CL_URL_MAX);
	snprintf(c->url, sizeof c->url, "%s", url);
	const char *name = getenv("ASSENT_REPLICA"), *lock = getenv("ASSENT_CLUSTER_LOCK");
	char host[256] = "", dflt[PROTO_CL_REPLICA_MAX + 1];
	if (!name || !*name) { /* the host and its state directory: unique, and the same at every start */
		uint8_t h[32];
		char hex[65];
		sha256(s->o->state, strlen(s->o->state), h);
		hex_encode(h, 4, hex);
		if (gethostname(host, sizeof host - 1) != 0 || !host[0])
			snprintf(host, sizeof host, "replica");
		snprintf(dflt, sizeof dflt, "%.*s-%.8s", (int)(PROTO_CL_REPLICA_MAX - 9), host, hex);
		name = dflt;
	}
	if (strlen(name) > PROTO_CL_REPLICA_MAX || strchr(name, ' '))
		return as_fail(err, AS_EINVAL, "ASSENT_REPLICA: at most %u bytes, no space: '%.64s'",
			       PROTO_CL_REPLICA_MAX, name);
	snprintf(c->replica, sizeof c->replica, "%.*s", (int)PROTO_CL_REPLICA_MAX, name);
	if (lock && *lock && strcmp(lock, "row") && strcmp(lock, "advisory"))
		return as_fail(err, AS_EINVAL, "ASSENT_CLUSTER_LOCK is row or advisory, not '%.16s'", lock);
	c->lock = lock && !strcmp(lock, "advisory") ? "advisory" : "row";
	const char *pol = getenv("ASSENT_CLUSTER_POLICY");
	if (pol && *pol && strcmp(pol, "adopt") && strcmp(pol, "check"))
		return as_fail(err, AS_EINVAL, "ASSENT_CLUSTER_POLICY is check or adopt, not '%.16s'", pol);
	c->adopt = pol && !strcmp(pol, "adopt");
	const char *lease = getenv("ASSENT_CLUSTER_LEASE");
	uint64_t secs = 10;
	if (lease && *lease && (parse_u64(lease, &secs) != 0 || secs < 2 || secs > 3600))
		return as_fail(err, AS_EINVAL, "ASSENT_CLUSTER_LEASE is seconds from 2 to 3600, not '%.16s'", lease);
	c->lease_ms = secs * 1000;
	GUARD(policy_sha(s->o->policy, c->policy, err));
	c->sync = (struct ledger_sync){
	    .ctx = c, .pull = cl_pull, .push = cl_push, .release = cl_release, .imported = cl_imported};
	lo->sync = &c->sync;
	unsetenv("ASSENT_CLUSTER"); /* it may hold a password: nothing started later inherits it */
	GUARD(cl_start(c, err));
	s->ws_share = ws_share;
	if (!(c->reg = cluster_reg_setup(s->o->state, err)))
		return AS_EIO;
	cluster_reg_loaded(s); /* this replica's registry: the cluster's if newer than the cluster's */
	/* The mark that makes the assent CLI write this state directory's entries (reviewer add,
	 * keygen) to the shared ledger, never to the mirror alone (cluster_cli_sync). No URL in it. */
	char path[4200], body[200];
	snprintf(path, sizeof path, "%s/" CLUSTER_MARK, s->o->state);
	int n = snprintf(body, sizeof body, "{\"replica\":\"%s\",\"lock\":\"%s\"}\n", c->replica, c->lock);
	return file_write_atomic(path, body, (size_t)n, 0644, err);
}

int cluster_cli_sync(const char *state, const char *exe, const struct ledger_sync **sync, char *err)
{
	char path[4200];
	struct buf b;
	snprintf(path, sizeof path, "%s/" CLUSTER_MARK, state);
	buf_init(&b, 4096);
	*sync = NULL;
	int rc = file_read(path, 4096, &b, err);
	if (rc != 0) {
		buf_free(&b);
		return rc == AS_ENOTFOUND ? 0 : rc; /* none: not a replica's state directory */
	}
	json_t *j = json_loadb((const char *)b.p, b.len, 0, NULL);
	buf_free(&b);
	const char *name = json_string_value(json_object_get(j, "replica")),
		   *lock = json_string_value(json_object_get(j, "lock")), *url = getenv("ASSENT_CLUSTER");
	struct cluster *c = calloc(1, sizeof *c);
	const struct ledger_sync *out = NULL;
	if (!name || !lock || strlen(name) > PROTO_CL_REPLICA_MAX)
		as_fail(err, AS_ECORRUPT, "%s cannot be read", path);
	else if (!url || !*url || strlen(url) > PROTO_CL_URL_MAX)
		as_fail(err, AS_EINVAL,
			"%s is replica %s of a cluster (%s), whose ledger is shared: set ASSENT_CLUSTER to its "
			"--cluster URL, so that this entry goes to the shared ledger",
			state, name, path);
	else if (!c)
		as_fail(err, AS_ENOMEM, "out of memory");
	else {
		*c = (struct cluster){.fd = -1, .lock = !strcmp(lock, "advisory") ? "advisory" : "row"};
		snprintf(c->exe, sizeof c->exe, "%s", exe);
		snprintf(c->url, sizeof c->url, "%s", url);
		snprintf(c->replica, sizeof c->replica, "%s", name);
		snprintf(c->policy, sizeof c->policy, "-"); /* the daemon checks the policy; this only appends */
		cv_arena_init(&c->a, 4096);
		cv_arena_init(&c->o, 64);
		c->sync = (struct ledger_sync){.ctx = c, .pull = cl_pull, .push = cl_push, .release = cl_release};
		out = &c->sync;
	}
	if (!out)
		free(c);
	json_decref(j);
	*sync = out; /* kept until the command exits */
	return out ? 0 : AS_EINVAL;
}

int cluster_fd(const struct signer *s)
{
	return s->cluster ? s->cluster->fd : -1;
}

void cluster_input(struct signer *s)
{
	struct cluster *c = s->cluster;
	char err[AS_ERRLEN];
	int r = ipc_read(&c->ipc, err);
	if (r != 0 && r != AS_ENOTFOUND) {
		cl_down(c, c->ipc.eof ? "the cluster client exited" : err);
		return;
	}
	uint64_t told = 0; /* a hint, not a fact: anyone who may connect can NOTIFY */
	for (;;) {
		struct ipc_frame f;
		cv_arena_reset(&c->a);
		int g = ipc_next(&c->ipc, &c->a, &f, err);
		if (g == AS_ENOTFOUND)
			break;
		uint64_t size;
		if (g != 0 || frame_fields_check(frame_table_find(f.type), f.body, err) != 0) {
			cl_down(c, err);
			return;
		}
		if (c->starting && (f.type == F_CL_READY || f.type == F_CL_END)) { /* started between commits */
			if (cl_ready(c, &f, err) != 0)
				slog("error", "cluster: the client did not start: %s", err);
			if (c->fd < 0)
				return;
		} else if (cl_aside(c, &f)) {
			continue;
		} else if (f.type == F_CL_NOTIFY && ipc_get_uint(f.body, "size", UINT64_MAX, &size, err) == 0) {
			told = size > told ? size : told;
		} else {
			cl_down(c, "the cluster client sent a frame out of turn");
			return;
		}
	}
	if (told > ledger_size(s->ledger) && ledger_catch_up(s->ledger, err) != 0)
		slog("error", "cluster: importing the other replicas' entries: %s", err);
}

int cluster_imported(struct signer *s, uint64_t *from, uint64_t *to)
{
	struct cluster *c = s->cluster;
	char err[AS_ERRLEN];
	if (!c)
		return 0;
	/* A client that went down is started again between commits too: its heartbeat keeps this
	 * replica's lease, and a replica without one would be taken over. Not waited for here. */
	if (c->fd < 0 && mono_ms() >= c->retry_at) {
		c->retry_at = mono_ms() + 2000;
		if (cl_spawn(c, err) != 0)
			slog("error", "cluster: starting the client: %s", err);
	}
	if (c->stale) {
		c->stale = 0;
		if (ledger_catch_up(s->ledger, err) != 0)
			slog("error", "cluster: importing the other replicas' entries: %s", err);
	}
	if (c->apply_to == c->apply_from)
		return 0;
	*from = c->apply_from;
	*to = c->apply_to;
	c->apply_from = c->apply_to = 0;
	return 1;
}

int cluster_taken_over(struct signer *s, char name[PROTO_CL_REPLICA_MAX + 1])
{
	struct cluster *c = s->cluster;
	if (!c || !c->ndead)
		return 0;
	snprintf(name, PROTO_CL_REPLICA_MAX + 1, "%s", c->dead[0]);
	memmove(&c->dead[0], &c->dead[1], --c->ndead * sizeof c->dead[0]);
	return 1;
}

const char *cluster_replica(const struct signer *s)
{
	return s->cluster ? s->cluster->replica : NULL;
}

const char *cluster_hint(const struct signer *s)
{
	return s->cluster && !s->cluster->db_ok ? ": the cluster's shared ledger cannot be reached now (nothing was "
						  "decided; try again)"
						: "";
}

json_t *cluster_health(const struct signer *s)
{
	const struct cluster *c = s->cluster;
	if (!c)
		return NULL;
	return json_pack("{s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "replica", c->replica, "lock", c->lock,
			 "connected", c->fd >= 0 && c->db_ok, "lease_seconds", (json_int_t)(c->lease_ms / 1000),
			 "taken_over", (json_int_t)c->taken_over, "shared_size", (json_int_t)c->shared, "commits",
			 (json_int_t)c->commits, "imported", (json_int_t)c->imported, "failures",
			 (json_int_t)c->failures, "last_error", c->last_err);
}

/* ---- assent ledger export ---- */

/* The whole shared ledger, read once without the lock, into ledger_export_dir's take. */
static int exp_pull(void *ctx, const struct ledger_sync_take *take, void *arg, char *err)
{
	struct cluster *c = ctx;
	int rc = cl_start(c, err);
	if (rc == 0 && (rc = cl_pull(c, 0, 0, take, arg, err)) == 0)
		cl_release(c);
	return rc;
}

/* The export is a copy, not a judgement: assent-verify judges it (ledger/export.c writes it). */
int cluster_export(const char *url, const char *exe, const char *dir, uint64_t *entries, uint64_t *ckpts, char *err)
{
	struct cluster c = {.fd = -1, .lock = "row"};
	snprintf(c.exe, sizeof c.exe, "%s", exe);
	snprintf(c.url, sizeof c.url, "%s", url);
	snprintf(c.replica, sizeof c.replica, "export");
	snprintf(c.policy, sizeof c.policy, "-"); /* a reader: no policy to check, no replica to register */
	cv_arena_init(&c.a, 4096);
	cv_arena_init(&c.o, 64);
	int rc = ledger_export_dir(dir, exp_pull, &c, entries, ckpts, err);
	cl_close(&c);
	cv_arena_free(&c.a);
	cv_arena_free(&c.o);
	return rc;
}
