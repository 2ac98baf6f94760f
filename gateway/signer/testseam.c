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

#include "gateway/signer/state.h"

struct seam {
	struct signer s; /* first: a struct signer * is a struct seam * */
	struct signer_opts o;
	char state[4096], policy[4096];
	int peer; /* the mcp worker's end */
};

/* The mcp worker, as if it had just started and said hello. */
static int seam_connect(struct seam *m, char *err)
{
	int sv[2];
	GUARD(ipc_socketpair(sv, err));
	struct worker *w = &m->s.w[W_MCP];
	*w = (struct worker){.kind = "mcp", .fd = sv[0], .state = S_READY, .once = 1 /* F_HELLO is rule 0 */};
	if (ipc_conn_init(&w->ipc, sv[0], err) != 0 || fcntl(sv[1], F_SETFL, O_NONBLOCK) != 0 ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
		close(sv[0]);
		close(sv[1]);
		w->fd = -1;
		return as_fail(err, AS_EIO, "test signer: socketpair setup failed");
	}
	m->peer = sv[1];
	return 0;
}

static int seam_open(struct seam *m, char *err)
{
	struct signer *s = &m->s;
	char dir[4200], kdir[4200];
	GUARD(mkdir_p(m->state, 0700, err));
	GUARD(seam_connect(m, err));
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
	s->w[W_REVIEW] = (struct worker){.kind = "review", .fd = -1};
	m->peer = -1;
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
	if (s->w[W_MCP].fd >= 0) {
		ipc_conn_free(&s->w[W_MCP].ipc);
		close(s->w[W_MCP].fd);
	}
	if (m->peer >= 0)
		close(m->peer);
	free(m);
}

int signer_test_peer(const struct signer *s)
{
	return ((const struct seam *)s)->peer;
}

void signer_test_drain(struct signer *s)
{
	struct seam *m = (struct seam *)s;
	static uint8_t junk[IPC_MSG_MAX];
	char err[AS_ERRLEN];
	do {
		while (m->peer >= 0 && recv(m->peer, junk, sizeof junk, MSG_DONTWAIT) > 0)
			;
	} while (s->w[W_MCP].fd >= 0 && ipc_pending(&s->w[W_MCP].ipc) && ipc_flush(&s->w[W_MCP].ipc, err) == 0 &&
		 m->peer >= 0 && recv(m->peer, junk, sizeof junk, MSG_DONTWAIT | MSG_PEEK) > 0);
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

/* The frame onto the worker's end, a message at a time, each taken off at once by the
 * signer's receiver (a frame can be larger than the socket buffer). */
static int seam_send(struct seam *m, const uint8_t *body, size_t len, char *err)
{
	struct worker *w = &m->s.w[W_MCP];
	uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
	static uint8_t msg[IPC_MSG_MAX];
	size_t off = 0, total = 4 + len;
	while (off < total) {
		size_t n = total - off < IPC_MSG_MAX ? total - off : IPC_MSG_MAX;
		for (size_t i = 0; i < n; i++)
			msg[i] = off + i < 4 ? hdr[off + i] : body[off + i - 4];
		if (send(m->peer, msg, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)
			return as_fail(err, AS_EIO, "test signer: send: %s", strerror(errno));
		off += n;
		int r = ipc_read(&w->ipc, err);
		if (r != 0)
			return r;
	}
	return 0;
}

int signer_test_frame(struct signer *s, const uint8_t *body, size_t len, char *err)
{
	struct seam *m = (struct seam *)s;
	struct worker *w = &s->w[W_MCP];
	if (w->fd < 0 && seam_connect(m, err) != 0) /* restarted, as the daemon would */
		return AS_EIO;
	int rc = len > IPC_FRAME_MAX ? as_fail(err, AS_ECORRUPT, "test signer: frame over IPC_FRAME_MAX")
				     : seam_send(m, body, len, err);
	struct cv_arena a;
	cv_arena_init(&a, IPC_FRAME_MAX);
	while (rc == 0) {
		struct ipc_frame f;
		cv_arena_reset(&a);
		int g = ipc_next(&w->ipc, &a, &f, err);
		if (g == AS_ENOTFOUND)
			break;
		rc = g ? g : signer_dispatch(s, W_MCP, &f, err);
	}
	cv_arena_free(&a);
	if (rc != 0 && rc != AS_ENOTFOUND && w->fd >= 0) { /* what the daemon does with a violation */
		char why[AS_ERRLEN];
		snprintf(why, sizeof why, "%s", err);
		security_event(s, W_MCP, why);
		close(m->peer);
		m->peer = -1;
	}
	commit_batch(s); /* the end of the loop's turn */
	expire(s);
	commit_batch(s);
	return rc;
}

uint64_t signer_test_ledger_size(const struct signer *s)
{
	return ledger_size(s->ledger);
}

size_t signer_test_pending(const struct signer *s)
{
	return pq_count(s->q);
}
