/* MCP sessions over HTTP: authentication of each HTTP request, measured peers, session ends. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

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
	struct frame_http_reply r = {.hreq = hreq, .status = status, .error = error, .retry = retry_s};
	if (c) { /* it goes on as this connection */
		r.conn = c->id;
		r.session = c->session;
		r.principal = c->agent[0] ? c->agent : "anonymous";
		r.client = c->client;
		r.protocol = c->protocol;
	}
	worker_send(s, W_MCP, frame_http_reply(&a, &r));
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
		if (!c->used || !c->http || c->stateless || !session_owned_by(c, owner))
			continue;
		mine++;
		uint64_t end = c->last_ms + 1000ull * s->http.session_idle_s;
		first_end = end < first_end ? end : first_end;
	}
	if (mine < s->http.sessions_per_agent)
		return 0;
	unsigned retry = first_end > now ? (unsigned)((first_end - now + 999) / 1000) : 1;
	char msg[200];
	snprintf(msg, sizeof msg,
		 "%s has %zu MCP sessions open, the limit (ASSENT_HTTP_MAX_SESSIONS_PER_AGENT=%u): end "
		 "one (DELETE /mcp) or wait",
		 owner, mine, s->http.sessions_per_agent);
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

/* Who owns the agent's end of the connection, asked of the kernel: the same-person
 * rule needs it for HTTP agents as much as for stdio ones. Asked whatever the peer's
 * address: a local process may connect from any of the host's addresses (binding its
 * source), not only loopback. No socket known for that end is a remote peer, unless
 * its address is this host's. A local peer whose owner cannot be measured (it closed
 * already) is not served: 0 and *uid, or 1 when refused (answered). */
static int http_peer_uid(struct signer *s, uint64_t hreq, int fd, int loopback, uid_t *uid)
{
	char e[AS_ERRLEN];
	if (peeruid_tcp(fd, uid, e) == 0)
		return 0;
	*uid = (uid_t)-1;
	if (!loopback && !peeruid_peer_is_local(fd))
		return 0;
	slog("warning", "an HTTP request refused: the owner of its local connection cannot be measured (%s)", e);
	http_reply(s, hreq, 403, "the gateway cannot tell which user owns this connection", NULL);
	return 1;
}

/* Whose request it is: the agent its API key names ("agent:NAME", agent = NAME), or an
 * anonymous loopback client when the operator allows them. 1 when refused (answered). */
static int http_owner(struct signer *s, uint64_t hreq, const struct cv *bearer, int loopback, uid_t peer_uid,
		      char owner[80], char agent[REG_NAME_MAX + 1])
{
	if (!bearer) {
		if (s->http.anonymous && loopback) {
			snprintf(owner, 80, "anonymous");
			return 0;
		}
		http_reply(s, hreq, 401,
			   s->http.anonymous
			       ? "an API key is required (Authorization: Bearer KEY) from other than loopback"
			       : "an API key is required (Authorization: Bearer KEY; assent agent add NAME)",
			   NULL);
		return 1;
	}
	const char *key = (const char *)bearer->s;
	reload_registry(s);
	const char *name = registry_agent_by_key(s->reg, key, bearer->n);
	if (!name &&
	    (registry_reviewer_by_token(s->reg, key, bearer->n) || registry_admin_by_token(s->reg, key, bearer->n))) {
		s->m.auth_fail_agent++;
		slog("warning", "an HTTP agent refused (uid %d): a reviewer's or admin's token on the agent listener",
		     peer_uid == (uid_t)-1 ? -1 : (int)peer_uid);
		http_reply(s, hreq, 403,
			   "a reviewer's or admin's token is not accepted on the agent listener (reviewers use the "
			   "reviewer listener)",
			   NULL);
		return 1;
	}
	if (!name) {
		s->m.auth_fail_agent++;
		slog("warning", "an HTTP agent refused (%s, uid %d): invalid or revoked API key",
		     loopback		     ? "loopback"
		     : peer_uid != (uid_t)-1 ? "local"
					     : "remote",
		     peer_uid == (uid_t)-1 ? -1 : (int)peer_uid);
		http_reply(s, hreq, 401, "invalid or revoked API key", NULL);
		return 1;
	}
	snprintf(agent, REG_NAME_MAX + 1, "%s", name);
	snprintf(owner, 80, "agent:%s", name);
	return 0;
}

/* initialize without a session: a new MCP session for owner, within the limits. A
 * stateless request (2026-07-28) gets a connection without a session id, which the
 * worker ends with the request; it does not count as a session. An anonymous one is
 * known by its measured uid, so that what it left pending (a task, a non-blocking
 * request) is its own again on its next request, and no other user's. */
static void session_open(struct signer *s, uint64_t hreq, const char *owner, const char *agent, uid_t peer_uid,
			 int stateless)
{
	if (!stateless && sessions_over_limit(s, hreq, owner))
		return;
	size_t nsess = 0;
	struct conn *c = NULL;
	for (size_t i = 0; i < MAX_CONNS; i++) {
		nsess += s->conns[i].used && s->conns[i].http && !s->conns[i].stateless;
		if (!c && !s->conns[i].used)
			c = &s->conns[i];
	}
	if (!c || (!stateless && nsess >= s->http.sessions_max)) {
		http_reply(s, hreq, 503, "too many MCP sessions; try again later", NULL);
		return;
	}
	if (stateless) {
		*c = (struct conn){.id = ++s->next_conn,
				   .worker = W_MCP,
				   .uid = (uid_t)-1,
				   .used = 1,
				   .http = 1,
				   .stateless = 1,
				   .last_ms = now_ms()};
		if (!strcmp(owner, "anonymous") && peer_uid != (uid_t)-1)
			snprintf(c->owner, sizeof c->owner, "anonymous:uid:%u", (unsigned)peer_uid);
		else
			session_set_owner(c, owner);
		snprintf(c->agent, sizeof c->agent, "%s", agent);
		snprintf(c->protocol, sizeof c->protocol, "2026-07-28");
		measured_put(s, hreq, c->id, peer_uid);
		http_reply(s, hreq, 200, NULL, c);
		return;
	}
	uint8_t rnd[16];
	char hex[33];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		http_reply(s, hreq, 500, "no randomness for a session id", NULL);
		return;
	}
	hex_encode(rnd, sizeof rnd, hex);
	*c = (struct conn){
	    .id = ++s->next_conn, .worker = W_MCP, .uid = (uid_t)-1, .used = 1, .http = 1, .last_ms = now_ms()};
	session_set_owner(c, owner);
	snprintf(c->agent, sizeof c->agent, "%s", agent);
	snprintf(c->session, sizeof c->session, "%s", hex);
	slog("info", "MCP session %.8s... opened over HTTP by %s", c->session, owner);
	measured_put(s, hreq, c->id, peer_uid);
	http_reply(s, hreq, 200, NULL, c);
}

int h_http_auth(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t hreq = cv_get(f->body, "hreq")->u;
	int init = cv_get(f->body, "init")->t == CV_TRUE;
	const struct cv *bearer = cv_get(f->body, "bearer"), *sid = cv_get(f->body, "session");
	if (f->nfds != 1)
		return as_fail(err, AS_ECORRUPT, "an HTTP request without its connection");
	if (!s->http.on)
		return as_fail(err, AS_ECORRUPT, "an HTTP request, but HTTP is off");
	int loopback = peeruid_peer_is_loopback(f->fds[0]);
	uid_t peer_uid = (uid_t)-1;
	char owner[80], agent[REG_NAME_MAX + 1] = "";
	if (http_peer_uid(s, hreq, f->fds[0], loopback, &peer_uid) ||
	    http_owner(s, hreq, bearer, loopback, peer_uid, owner, agent))
		return 0;
	const struct cv *sl = cv_get(f->body, "stateless");
	int stateless = sl && sl->t == CV_TRUE;
	if (stateless && sid)
		return as_fail(err, AS_ECORRUPT, "a stateless HTTP request that names a session");
	if (sid) {
		struct conn *c = session_find(s, (const char *)sid->s, sid->n);
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
	session_open(s, hreq, owner, agent, peer_uid, stateless);
	return 0;
}

int h_session_info(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const struct cv *client = cv_get(f->body, "client"), *protocol = cv_get(f->body, "protocol");
	const char *cl = (const char *)client->s, *pr = (const char *)protocol->s;
	size_t cn = client->n, pn = protocol->n;
	_Static_assert(PROTO_PROTOCOL_MAX < sizeof((struct conn *)0)->protocol,
		       "the signer keeps what the table allows");
	GUARD(get_conn(s, f, W_MCP, &c, err));
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

int h_session_end(void *ctx, struct ipc_frame *f, char *err)
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
void sweep_sessions(struct signer *s, uint64_t now)
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

void send_stats(struct signer *s)
{
	json_t *cj = cluster_health(s);
	char *cluster = cj ? json_dumps(cj, JSON_COMPACT) : NULL;
	json_decref(cj);
	for (int k = 0; k < NWORKERS; k++) {
		struct worker *w = &s->w[k];
		if (w->fd < 0 || w->state != S_READY || k >= W_UP0 || (k == W_MCP ? !s->http.on : s->review_fd < 0))
			continue;
		struct cv_arena a;
		char alarm[WITNESS_ALARM_MAX + 1];
		witness_alarm_text(s, alarm, sizeof alarm);
		cv_arena_init(&a, 16);
		worker_send(s, k, frame_stats(&a, pq_count(s->q), (now_ms() - s->started_ms) / 1000, alarm, cluster));
		cv_arena_free(&a);
	}
	free(cluster);
}
