/* A signer over a scratch state directory, for tests and fuzzing (see testseam.h). */
#define _GNU_SOURCE
#include "gateway/signer/testseam.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/signer/gate_int.h"
#include "gateway/signer/state.h"

struct seam {
	struct signer s; /* first: a struct signer * is a struct seam * */
	struct signer_opts o;
	char state[4096], policy[4096], upstreams[4096];
	int peer[NWORKERS]; /* each worker's end */
	int ctl[MAX_CONNS]; /* a reviewer's end of each control connection (signer_test_reviewer) */
};

/* Worker k, as if it had just started and said hello. */
static int seam_connect(struct seam *m, int k, char *err)
{
	int sv[2];
	GUARD(ipc_socketpair(sv, err));
	struct worker *w = &m->s.w[k];
	*w = (struct worker){.kind = k == W_MCP	     ? "mcp"
				     : k == W_REVIEW ? "review"
						     : "upstream",
			     .fd = sv[0],
			     .state = S_READY,
			     .once = 1 /* F_HELLO is rule 0 of both tables */};
	if (ipc_conn_init(&w->ipc, sv[0], err) != 0 || fcntl(sv[1], F_SETFL, O_NONBLOCK) != 0 ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
		close(sv[0]);
		close(sv[1]);
		w->fd = -1;
		return as_fail(err, AS_EIO, "test signer: socketpair setup failed");
	}
	m->peer[k] = sv[1];
	return 0;
}

static int seam_open(struct seam *m, char *err)
{
	struct signer *s = &m->s;
	char dir[4200], kdir[4200];
	GUARD(mkdir_p(m->state, 0700, err));
	GUARD(seam_connect(m, W_MCP, err));
	GUARD(seam_connect(m, W_REVIEW, err));
	s->timeout_s = 300;
	GUARD(lim_from_env(&s->lim.c, err));
	GUARD(http_cfg_from_env(&s->http, err));
	snprintf(dir, sizeof dir, "%s/%s", m->state, STATE_LEDGER_DIR);
	snprintf(kdir, sizeof kdir, "%s/%s", m->state, STATE_KEYS_DIR);
	struct ledger_opts lo = {.keys_dir = kdir};
	GUARD(tok_config_from_env(&s->tcfg, err));
	GUARD(ledger_open(dir, &lo, &s->ledger, err));
	GUARD(tokkeys_open(kdir, &s->tcfg, s->ledger, &s->tk, err));
	if (pq_new(PQ_MAX, &s->q) != 0)
		return as_fail(err, AS_ENOMEM, "out of memory");
	reload_registry(s);
	cv_arena_init(&s->arena, 1u << 20);
	restore_pending(s); /* as start_keys does: what a signer before this one left pending */
	restore_history(s); /* and its history of decisions */
	return load_policy(s, err);
}

struct signer *signer_test_new(const char *state, const char *policy, char *err)
{
	struct seam *m = calloc(1, sizeof *m);
	if (!m) {
		as_fail(err, AS_ENOMEM, "out of memory");
		return NULL;
	}
	struct signer *s = &m->s;
	snprintf(m->state, sizeof m->state, "%s", state);
	if (policy)
		snprintf(m->policy, sizeof m->policy, "%s", policy);
	m->o = (struct signer_opts){.state = m->state, .policy = policy ? m->policy : NULL};
	s->o = &m->o;
	s->agent_fd = s->control_fd = s->sig_fd = s->http_fd = s->review_fd = s->proxy_fd = s->ctl_ep = -1;
	for (size_t i = 0; i < MAX_CONNS; i++)
		s->ctl_fd[i] = -1;
	for (int k = 0; k < NWORKERS; k++) {
		s->w[k] = (struct worker){.kind = k == W_MCP ? "mcp" : k == W_REVIEW ? "review" : "upstream", .fd = -1};
		m->peer[k] = -1;
	}
	for (size_t i = 0; i < MAX_CONNS; i++)
		m->ctl[i] = -1;
	signer_register(s); /* as the daemon's signer_main does */
	s->started_ms = now_ms();
	const char *ll = getenv("FEEDBACK_LOG_LEVEL"); /* as signer_main reads it */
	if (ll && *ll && log_rank(ll) >= 0 && log_rank(ll) <= 3)
		log_min = log_rank(ll);
	if (seam_open(m, err) != 0) {
		signer_test_free(s);
		return NULL;
	}
	return s;
}

void signer_test_free(struct signer *s)
{
	struct seam *m = (struct seam *)s;
	if (!s)
		return;
	commit_batch(s);
	struct pq_item it;
	while (s->q && pq_pop_expired(s->q, UINT64_MAX, &it) == 0)
		req_free(it.data);
	pq_free(s->q);
	history_free(s);
	for (size_t i = 0; i < s->ndone; i++)
		json_decref(done_at(s, i)->result);
	free(s->batch);
	cv_arena_free(&s->arena);
	tokkeys_free(s->tk);
	tok_config_clear(&s->tcfg);
	if (s->ledger)
		ledger_close(s->ledger);
	registry_free(s->reg);
	policy_free(s->pol);
	gate_free(s);
	for (int k = 0; k < NWORKERS; k++) {
		if (s->w[k].fd >= 0) {
			ipc_conn_free(&s->w[k].ipc);
			close(s->w[k].fd);
		}
		if (m->peer[k] >= 0)
			close(m->peer[k]);
	}
	if (s->review_fd >= 0)
		close(s->review_fd);
	free(s->ws);
	for (size_t i = 0; i < MAX_CONNS; i++) {
		if (s->ctl_fd[i] >= 0)
			close(s->ctl_fd[i]);
		if (m->ctl[i] >= 0)
			close(m->ctl[i]);
	}
	free(m);
}

int signer_test_peer(const struct signer *s)
{
	return ((const struct seam *)s)->peer[W_MCP];
}

int signer_test_review_peer(const struct signer *s)
{
	return ((const struct seam *)s)->peer[W_REVIEW];
}

int signer_test_up_peer(const struct signer *s, size_t i)
{
	return i < s->gate.nup ? ((const struct seam *)s)->peer[W_UP0 + (int)i] : -1;
}

void signer_test_single_user(struct signer *s, int on)
{
	((struct seam *)s)->o.single_user = on;
}

void signer_test_drain(struct signer *s)
{
	struct seam *m = (struct seam *)s;
	static uint8_t junk[IPC_MSG_MAX];
	char err[AS_ERRLEN];
	for (int k = 0; k < NWORKERS; k++)
		do {
			while (m->peer[k] >= 0 && recv(m->peer[k], junk, sizeof junk, MSG_DONTWAIT) > 0)
				;
		} while (s->w[k].fd >= 0 && ipc_pending(&s->w[k].ipc) && ipc_flush(&s->w[k].ipc, err) == 0 &&
			 m->peer[k] >= 0 && recv(m->peer[k], junk, sizeof junk, MSG_DONTWAIT | MSG_PEEK) > 0);
}

uint64_t signer_test_agent(struct signer *s, uid_t uid)
{
	for (size_t i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		if (c->used)
			continue;
		*c = (struct conn){.id = ++s->next_conn, .worker = W_MCP, .uid = uid, .pid = 1, .used = 1};
		snprintf(c->owner, sizeof c->owner, "uid:%u", (unsigned)uid);
		return c->id;
	}
	return 0;
}

uint64_t signer_test_reviewer(struct signer *s, uid_t uid)
{
	struct seam *m = (struct seam *)s;
	for (size_t i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];
		int sv[2];
		if (c->used || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
			continue;
		*c = (struct conn){.id = ++s->next_conn, .worker = W_REVIEW, .uid = uid, .pid = 1, .used = 1};
		snprintf(c->owner, sizeof c->owner, "uid:%u", (unsigned)uid);
		/* The signer watches the connection's own socket (ctl_gone): the reviewer's end stays open. */
		s->ctl_fd[i] = sv[0];
		s->ctl_id[i] = c->id;
		m->ctl[i] = sv[1];
		return c->id;
	}
	return 0;
}

/* The frame onto worker k's end, a message at a time, each taken off at once by the
 * signer's receiver (a frame can be larger than the socket buffer); passfd (not -1) goes
 * with its first message, as ipc_send passes one. */
static int seam_send(struct seam *m, int k, const uint8_t *body, size_t len, int passfd, char *err)
{
	struct worker *w = &m->s.w[k];
	uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
	static uint8_t msg[IPC_MSG_MAX];
	size_t off = 0, total = 4 + len;
	while (off < total) {
		size_t n = total - off < IPC_MSG_MAX ? total - off : IPC_MSG_MAX;
		for (size_t i = 0; i < n; i++)
			msg[i] = off + i < 4 ? hdr[off + i] : body[off + i - 4];
		struct iovec iov = {msg, n};
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} cm = {0};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		if (off == 0 && passfd >= 0) {
			mh.msg_control = cm.b;
			mh.msg_controllen = sizeof cm.b;
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			*c = (struct cmsghdr){
			    .cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS};
			memcpy(CMSG_DATA(c), &passfd, sizeof passfd);
		}
		if (sendmsg(m->peer[k], &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)
			return as_fail(err, AS_EIO, "test signer: send: %s", strerror(errno));
		off += n;
		int r = ipc_read(&w->ipc, err);
		if (r != 0)
			return r;
	}
	return 0;
}

static int frame_k(struct signer *s, int k, const uint8_t *body, size_t len, int passfd, char *err);

int signer_test_frame(struct signer *s, const uint8_t *body, size_t len, char *err)
{
	return signer_test_frame_from(s, 0, body, len, err);
}

int signer_test_frame_from(struct signer *s, int review, const uint8_t *body, size_t len, char *err)
{
	return frame_k(s, review ? W_REVIEW : W_MCP, body, len, -1, err);
}

int signer_test_frame_up(struct signer *s, size_t i, const uint8_t *body, size_t len, char *err)
{
	if (i >= s->gate.nup)
		return as_fail(err, AS_EINVAL, "test signer: no upstream %zu", i);
	return frame_k(s, W_UP0 + (int)i, body, len, -1, err);
}

int signer_test_upstreams(struct signer *s, const char *file, char *err)
{
	struct seam *m = (struct seam *)s;
	snprintf(m->upstreams, sizeof m->upstreams, "%s", file);
	m->o.upstreams = m->upstreams;
	s->gate.call_timeout_s = 300;
	GUARD(upstreams_load(file, &s->gate.ups, err));
	if (s->gate.ups->n > UP_WORKERS)
		return as_fail(err, AS_EINVAL, "test signer: at most %d upstreams", UP_WORKERS);
	if (!(s->gate.gcalls = calloc(GCALLS_MAX, sizeof *s->gate.gcalls)) ||
	    !(s->gate.asks = calloc(GASKS_MAX, sizeof *s->gate.asks)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	s->gate.nup = s->gate.ups->n;
	gate_kinds(s);
	for (size_t i = 0; i < s->gate.nup; i++) {
		s->gate.up[i] = (struct upw){.cfg = &s->gate.ups->u[i], .err_fd = -1};
		GUARD(seam_connect(m, W_UP0 + (int)i, err));
	}
	return 0;
}

int signer_test_web(struct signer *s, char *err)
{
	if (!s->ws && !(s->ws = calloc(1, sizeof *s->ws)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	if (s->review_fd < 0)
		GUARD(review_listen(s, err));
	return s->review_fd >= 0 ? 0 : as_fail(err, AS_EIO, "test signer: the reviewer listener is off");
}

int signer_test_frame_web(struct signer *s, const uint8_t *body, size_t len, char *err)
{
	if (s->review_fd < 0)
		return as_fail(err, AS_EINVAL, "test signer: no reviewer listener (signer_test_web)");
	return frame_k(s, W_REVIEW, body, len, s->review_fd, err);
}

/* body from worker k, through the receiver and k's dispatch table; the turn ends. */
static int frame_k(struct signer *s, int k, const uint8_t *body, size_t len, int passfd, char *err)
{
	struct seam *m = (struct seam *)s;
	struct worker *w = &s->w[k];
	if (w->fd < 0 && seam_connect(m, k, err) != 0) /* restarted, as the daemon would */
		return AS_EIO;
	int rc = len > IPC_FRAME_MAX ? as_fail(err, AS_ECORRUPT, "test signer: frame over IPC_FRAME_MAX")
				     : seam_send(m, k, body, len, passfd, err);
	struct cv_arena a;
	cv_arena_init(&a, IPC_FRAME_MAX);
	while (rc == 0) {
		struct ipc_frame f;
		cv_arena_reset(&a);
		int g = ipc_next(&w->ipc, &a, &f, err);
		if (g == AS_ENOTFOUND)
			break;
		rc = g ? g : signer_dispatch(s, k, &f, err);
	}
	cv_arena_free(&a);
	if (rc != 0 && rc != AS_ENOTFOUND && w->fd >= 0) { /* what the daemon does with a violation */
		char why[AS_ERRLEN];
		snprintf(why, sizeof why, "%s", err);
		security_event(s, k, why);
		close(m->peer[k]);
		m->peer[k] = -1;
	}
	commit_batch(s); /* the end of the loop's turn */
	expire(s);
	commit_batch(s);
	return rc;
}

struct newest {
	uint64_t at;
	char sid[PQ_SID_LEN + 1];
};

static void newer(const struct pq_item *it, void *arg)
{
	struct newest *n = arg;
	if (!n->sid[0] || it->created_ms >= n->at) {
		n->at = it->created_ms;
		snprintf(n->sid, sizeof n->sid, "%s", it->session_id);
	}
}

int signer_test_newest_sid(const struct signer *s, char sid[PQ_SID_LEN + 1])
{
	struct newest n = {0};
	if (pq_each(s->q, newer, &n) != 0 || !n.sid[0])
		return AS_ENOTFOUND;
	memcpy(sid, n.sid, sizeof n.sid);
	return 0;
}

uint64_t signer_test_ledger_size(const struct signer *s)
{
	return ledger_size(s->ledger);
}

int signer_test_ledger_scan(struct signer *s, int (*fn)(uint64_t seq, const uint8_t *cbor, size_t len, void *arg),
			    void *arg, char *err)
{
	return ledger_scan(s->ledger, fn, arg, err);
}

size_t signer_test_pending(const struct signer *s)
{
	return pq_count(s->q);
}

void signer_test_gcalls_full(struct signer *s)
{
	for (size_t i = 0; s->gate.gcalls && i < GCALLS_MAX; i++)
		s->gate.gcalls[i] = (struct gcall){.used = 1, .k = -1, .until_ms = UINT64_MAX};
	s->gate.gcall_hi = GCALLS_MAX;
}
