/* The reviewer listener's commands: web sessions, the pending list, decisions, metrics, files
 * (the history's decisions and chart are webhist.c's). */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/decision.h"
#include "gateway/signer/webhist.h"
#include "gateway/signer/web_int.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

/* ---- the reviewer listener ----
 * The review worker parses HTTP and sends each request it cannot answer alone as a
 * frame of the endpoint's own type (F_WEB_*: {hreq, credentials, its fields}) with the
 * connection's descriptor; each type has its handler here (h_web_*). The
 * signer decides who is asking: a session cookie (hash held here), a reviewer or
 * admin token (hashes in the registry), or a proxy's identity header, believed only
 * when the connection came through the proxy's own unix socket (measured here with
 * getsockname) or carries the proxy's shared secret. */

#define WEB_VIEWS_MAX 100 /* requests sent whole to the page; the rest are counted */

#define WEB_CONTENT_BUDGET (1u << 20) /* subject bytes (base64) in one answer */

static int opt_text(const struct cv *m, const char *k, size_t max, const char **v, size_t *n, char *err)
{
	*v = NULL;
	*n = 0;
	return cv_get(m, k) ? ipc_get_text(m, k, max, v, n, err) : 0;
}

void web_error(struct signer *s, uint64_t hreq, enum proto_status status, const char *fmt, ...)
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

static void web_auth_failed(struct signer *s, const struct web_req *q, enum proto_status status, const char *why)
{
	s->m.auth_fail_review++;
	slog("warning", "a reviewer listener request refused (%s): %s",
	     status == PS_UNAUTHORIZED ? "unauthorized" : "forbidden", why);
	web_error(s, q->hreq, status, "%s", why);
}

/* A pending request as the page shows it (the subjects' bytes while the budget lasts). */
static json_t *web_view(const struct req *r, size_t *budget)
{
	json_t *v = json_deep_copy(r->view), *x;
	size_t i;
	json_array_foreach(json_object_get(v, "subject"), i, x)
	{
		if (i >= 16 || !r->content[i])
			continue;
		size_t need = (r->content_len[i] + 2) / 3 * 4;
		if (need > *budget) {
			json_object_set_new(x, "content_omitted",
					    json_string("too large to show with the rest: assent show"));
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
	const char *risk = view_risk(v);
	if (risk)
		json_object_set_new(v, "risk", json_string(risk));
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
	/* No live button the signer would refuse after a click: why not, and whether Reject is left. */
	struct who w = {.reviewer = l->reviewer, .channel = "web", .via = "", .uid = (uid_t)-1, .web = 1};
	char why[DECISION_MSG_MAX];
	int may_reject = decide_may(l->s, &w, it, why, sizeof why);
	if (v && why[0])
		json_object_set_new(v, "may_not_decide", json_string(why));
	if (v && !may_reject)
		json_object_set_new(v, "may_reject", json_false());
	page_add(l->arr, v, &l->used, &l->more, WEB_VIEWS_MAX);
}

static json_t *web_pending(struct signer *s, const char *reviewer, size_t offset)
{
	struct web_list l = {s, reviewer, json_array(), 0, 0, WEB_CONTENT_BUDGET, 0, offset};
	pq_each(s->q, web_one, &l);
	json_t *rec = json_array();
	const struct recent *x;
	for (size_t i = 0; (x = history_nth(s, i)) && json_array_size(rec) < HISTORY_RECENT; i++) {
		if (!webhist_may_see(s, reviewer, x))
			continue;
		json_array_append_new(rec, json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "session_id", x->sid, "outcome",
						     x->outcome, "by", x->by, "seq", (json_int_t)x->seq, "at",
						     (json_int_t)x->at, "message", x->message));
	}
	json_t *j =
	    json_pack("{s:I,s:I,s:o,s:o,s:I,s:s}", "pending", (json_int_t)l.total, "more", (json_int_t)l.more,
		      "requests", l.arr, "recent", rec, "now", (json_int_t)(now_ms() / 1000), "reviewer", reviewer);
	if (l.more) /* ?offset= this for the next page */
		json_object_set_new(j, "next_offset", json_integer((json_int_t)(offset + json_array_size(l.arr))));
	return j;
}

static json_t *metrics_reply(struct signer *s, struct buf *out)
{
	struct stat st;
	char path[4200];
	snprintf(path, sizeof path, "%s/" STATE_LEDGER_DIR "/data.mdb", s->o->state);
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
	return metrics_text(&s->m, &g, out) == 0 && records_metrics(s, out) == 0 && insights_metrics(s, out) == 0
		   ? NULL
		   : json_pack("{s:s}", "error", "out of memory");
}

static void web_file(struct signer *s, uint64_t hreq, const char *rel, const char *ctype, const char *missing)
{
	char path[4200], err[AS_ERRLEN];
	struct buf b;
	snprintf(path, sizeof path, "%s/%s", s->o->state, rel);
	if (file_read(path, 1 << 20, &b, err) != 0) {
		web_error(s, hreq, PS_NOT_FOUND, "%s", missing);
		return;
	}
	struct web_out w = {.status = PS_OK, .ctype = ctype, .text = (const char *)b.p, .textn = b.len};
	web_send(s, hreq, &w, NULL);
	buf_free(&b);
}

/* The session this browser request carries, refreshed; NULL when none (or expired). */
static struct ws_session *web_session(struct signer *s, const struct web_req *q)
{
	uint64_t now = now_ms();
	struct ws_session *ss = q->cookie ? ws_find(s->ws, q->cookie, q->cookien, now) : NULL;
	if (ss && !web_session_alive(s, ss)) { /* its reviewer removed, or its token rotated, since */
		ws_end(ss);
		return NULL;
	}
	if (ss && s->ws_share && now - ss->told >= WS_TELL_MS) { /* the other replicas keep it alive too */
		ss->told = now;
		s->ws_share(s, ss, 0);
	}
	return ss;
}

static void web_login_reply(struct signer *s, const struct web_req *q, const char *reviewer, const char *via)
{
	char cookie[WS_COOKIE_LEN + 1];
	uint8_t cred[32];
	struct ws_session *ss = NULL;
	if (registry_reviewer_credential(s->reg, reviewer, via, cred) != 0) { /* just found by it: cannot be */
		web_error(s, q->hreq, PS_INTERNAL, "the reviewer's credential is not in the registry");
		return;
	}
	if (!(ss = ws_create(s->ws, reviewer, via, cred, now_ms(), cookie))) {
		web_error(s, q->hreq, PS_INTERNAL, "cannot read random bytes for a session");
		return;
	}
	if (s->ws->evicted) /* a session made room for this one: its event streams end too */
		web_push(s, &s->ws->evicted, 1);
	if (s->ws_share) /* cluster mode: every replica knows it (docs/cluster.md) */
		s->ws_share(s, ss, 0);
	slog("info", "web: %s logged in (%s, from %s)", reviewer, via, q->peer);
	/* The secret goes in the body, never in a cookie: the page holds it and sends it
	 * in a header (gateway/web/README.md says why). */
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:s}", "reviewer", reviewer, "csrf", ss->csrf, "via", via, "session", cookie);
	struct web_out w = {.status = PS_OK};
	web_send(s, q->hreq, &w, j);
	json_decref(j);
	explicit_bzero(cookie, sizeof cookie);
}

/* ---- one request: its fields, its connection, who asks ---- */

/* The fields of a web frame (they passed its type's table in gateway/proto/frames.c:
 * only its own, the required ones present, each within its bound). */
static int web_fields(const struct ipc_frame *f, struct web_req *q, char *err)
{
	const struct cv *b = f->body;
	GUARD(ipc_get_uint(b, "hreq", UINT64_MAX, &q->hreq, err));
	GUARD(opt_text(b, "cookie", 64, &q->cookie, &q->cookien, err));
	GUARD(opt_text(b, "csrf", 64, &q->csrf, &q->csrfn, err));
	GUARD(opt_text(b, "bearer", 512, &q->bearer, &q->bearern, err));
	GUARD(opt_text(b, "proxy_user", 254, &q->proxy_user, &q->proxy_usern, err));
	GUARD(opt_text(b, "proxy_secret", 256, &q->proxy_secret, &q->proxy_secretn, err));
	GUARD(opt_text(b, "token", 512, &q->token, &q->tokenn, err));
	GUARD(opt_text(b, "sid", 64, &q->sid, &q->sidn, err));
	GUARD(opt_text(b, "outcome", 16, &q->outcome, &q->outcomen, err));
	GUARD(opt_text(b, "text", 16384, &q->text, &q->textn, err));
	GUARD(opt_text(b, "op", PROTO_PK_OP_MAX, &q->op, &q->opn, err));
	GUARD(opt_text(b, "pk_cred", PROTO_PK_CRED_MAX, &q->pk.cred, &q->pk.credn, err));
	GUARD(opt_text(b, "pk_authdata", PROTO_PK_AUTHDATA_MAX, &q->pk.authdata, &q->pk.authdatan, err));
	GUARD(opt_text(b, "pk_cdj", PROTO_PK_CDJ_MAX, &q->pk.cdj, &q->pk.cdjn, err));
	GUARD(opt_text(b, "pk_sig", PROTO_PK_SIG_MAX, &q->pk.sig, &q->pk.sign, err));
	if (cv_get(b, "n"))
		GUARD(ipc_get_uint(b, "n", 64, &q->n, err));
	if (cv_get(b, "offset"))
		GUARD(ipc_get_uint(b, "offset", PQ_MAX, &q->offset, err));
	if (cv_get(b, "approved"))
		GUARD(ipc_get_bool(b, "approved", &q->approved, err));
	return 0;
}

/* Which listener, and from where: measured on the connection, not said by the worker. */
static int web_peer(struct signer *s, const struct ipc_frame *f, struct web_req *q, char *err)
{
	const char *ca;
	size_t can;
	GUARD(opt_text(f->body, "client_addr", 45, &ca, &can, err));
	if (f->nfds != 1)
		return as_fail(err, AS_ECORRUPT, "a web request without its connection");
	if (s->review_fd < 0)
		return as_fail(err, AS_ECORRUPT, "a web request, but the reviewer listener is off");
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getsockname(f->fds[0], (struct sockaddr *)&ss, &sl) != 0)
		return as_fail(err, AS_ECORRUPT, "a web request's descriptor is not a socket");
	if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
		q->on_proxy = s->proxy_fd >= 0 && sl > offsetof(struct sockaddr_un, sun_path) &&
			      !strncmp(un->sun_path, s->proxy_path, sizeof un->sun_path);
		if (!q->on_proxy)
			return as_fail(err, AS_ECORRUPT, "a web request on a unix socket that is not the proxy's");
		snprintf(q->peer, sizeof q->peer, "proxy:%.*s", (int)can, ca ? ca : ""); /* its client (X-Real-IP) */
		return 0;
	}
	unsigned port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						       : ((struct sockaddr_in *)&ss)->sin_port);
	if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) || port != s->review.port)
		return as_fail(err, AS_ECORRUPT, "a web request on a socket that is not the reviewer listener's");
	sl = sizeof ss;
	char host[INET6_ADDRSTRLEN] = "?";
	if (getpeername(f->fds[0], (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, NULL, 0, NI_NUMERICHOST);
	snprintf(q->peer, sizeof q->peer, "%s", host);
	return 0;
}

/* Every web handler starts here: the frame's fields, then its connection. */
int web_begin(struct signer *s, const struct ipc_frame *f, struct web_req *q, char *err)
{
	*q = (struct web_req){0};
	GUARD(web_fields(f, q, err));
	return web_peer(s, f, q, err);
}

/* A proxy's identity header: believed only on its own socket or with its secret. */
static int web_identify_proxy(struct signer *s, struct web_req *q)
{
	int secret_ok = s->proxy_secret[0] && q->proxy_secret && q->proxy_secretn == strlen(s->proxy_secret) &&
			ct_memcmp(q->proxy_secret, s->proxy_secret, q->proxy_secretn) == 0;
	if (!q->on_proxy && !secret_ok) {
		web_auth_failed(s, q, PS_FORBIDDEN,
				"refused: a reviewer identity header is accepted only from the reverse proxy's own "
				"listener (ASSENT_REVIEW_PROXY_SOCKET) or with its shared secret");
		return -1;
	}
	char id[256];
	snprintf(id, sizeof id, "%.*s", (int)q->proxy_usern, q->proxy_user);
	q->reviewer = registry_reviewer_by_proxy_id(s->reg, id);
	if (!q->reviewer) {
		web_auth_failed(s, q, PS_FORBIDDEN,
				"refused: the proxy's identity is not a registered reviewer's (assent "
				"reviewer add NAME --proxy-id ID)");
		return -1;
	}
	q->via = "proxy";
	return 0;
}

/* A bearer token: a reviewer's or an admin's, never an agent's. */
static int web_identify_bearer(struct signer *s, struct web_req *q)
{
	if (registry_agent_by_key(s->reg, q->bearer, q->bearern)) {
		web_auth_failed(s, q, PS_FORBIDDEN,
				"refused: an agent's API key is not accepted on the reviewer listener");
		return -1;
	}
	q->reviewer = registry_reviewer_by_token(s->reg, q->bearer, q->bearern);
	q->admin = q->reviewer ? NULL : registry_admin_by_token(s->reg, q->bearer, q->bearern);
	if (!q->reviewer && !q->admin) {
		web_auth_failed(s, q, PS_UNAUTHORIZED, "invalid or revoked token");
		return -1;
	}
	q->via = "token";
	return 0;
}

/* Who is asking. Each credential is refused loudly when it is the wrong kind, so a
 * misconfigured client learns why instead of being treated as nobody. 0, or -1:
 * refused (and answered). */
static int web_identify(struct signer *s, struct web_req *q)
{
	reload_registry(s);
	if (q->proxy_user && web_identify_proxy(s, q) != 0)
		return -1;
	if (!q->proxy_user && q->bearer && web_identify_bearer(s, q) != 0)
		return -1;
	q->ss = web_session(s, q);
	if (q->ss && q->reviewer && strcmp(q->ss->reviewer, q->reviewer))
		q->ss = NULL; /* a cookie of someone else than the proxy or token names: not theirs */
	if (!q->reviewer && !q->admin && q->ss) {
		q->reviewer = q->ss->reviewer;
		q->via = "session";
	}
	return 0;
}

/* A reviewer's request (after web_begin): a reviewer behind it, and for one that
 * changes something, from a browser, its session's CSRF token. 1: go on; 0: refused,
 * and answered. */
int web_reviewer_ok(struct signer *s, struct web_req *q, int changes)
{
	if (web_identify(s, q) != 0)
		return 0;
	if (!q->reviewer) {
		web_auth_failed(s, q, q->admin ? PS_FORBIDDEN : PS_UNAUTHORIZED,
				q->admin ? "refused: an admin token is not a reviewer's"
					 : "log in first (no or expired session)");
		return 0;
	}
	/* A browser's state-changing request carries the CSRF token of its session; a
	 * proxy-identified browser has a session too (made by "me"). A bearer token is
	 * not ambient (no browser sends it by itself): no CSRF token. */
	int browser = strcmp(q->via, "token") != 0;
	if (browser && changes && (!q->ss || !ws_csrf_ok(q->ss, q->csrf, q->csrfn))) {
		web_auth_failed(s, q, PS_FORBIDDEN, "refused: missing or wrong CSRF token (X-CSRF-Token)");
		return 0;
	}
	return 1;
}

/* ---- open to anyone who reaches the listener: nothing secret, nothing changes ---- */

int h_web_metrics(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	struct buf b;
	json_t *e = metrics_reply(s, &b);
	struct web_out w = {.status = e ? PS_INTERNAL : PS_OK,
			    .ctype = "text/plain; version=0.0.4; charset=utf-8",
			    .text = e ? NULL : (const char *)b.p,
			    .textn = b.len};
	web_send(s, q.hreq, &w, e);
	json_decref(e);
	buf_free(&b);
	return 0;
}

int h_web_jwks(void *ctx, struct ipc_frame *f, char *err)
{
	struct web_req q;
	GUARD(web_begin(ctx, f, &q, err));
	web_file(ctx, q.hreq, "keys/jwks.json", "application/json",
		 "no public token keys: tokens are HS256 (shared secret) or off");
	return 0;
}

int h_web_checkpoint(void *ctx, struct ipc_frame *f, char *err)
{
	struct web_req q;
	GUARD(web_begin(ctx, f, &q, err));
	web_file(ctx, q.hreq, "ledger/checkpoint", "text/plain; charset=utf-8", "no checkpoint signed yet");
	return 0;
}

/* ---- sessions ---- */

/* A wrong token, counted by the failed-login limiter: 401, or 429 past its limit. */
static void web_login_refused(struct signer *s, const struct web_req *q)
{
	unsigned retry = 0, all = 0;
	int limited = ws_login_failed(s->ws, q->peer, now_ms(), &retry, &all);
	if (all)
		slog("warning", "web: %u failed logins in the last minute from all sources (the latest from %s)", all,
		     q->peer);
	if (!limited) {
		web_auth_failed(s, q, PS_UNAUTHORIZED, "login refused: unknown or revoked reviewer token");
		return;
	}
	s->m.auth_fail_review++;
	json_t *j = json_pack("{s:s}", "error",
			      "login refused: unknown or revoked reviewer token, and too many failed logins "
			      "from this address in the last minute (all loopback addresses count as one): "
			      "wait before trying again");
	struct web_out w = {.status = PS_TOO_MANY, .retry_s = retry};
	web_send(s, q->hreq, &w, j);
	json_decref(j);
}

int h_web_login(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (web_identify(s, &q) != 0)
		return 0;
	/* The token is checked first, whatever failed before: a right one always logs in
	 * (websess.h says why); the limiter only decides how a wrong one is answered. */
	int by_proxy = q.via && !strcmp(q.via, "proxy");
	const char *who = by_proxy ? q.reviewer : NULL;
	if (!who && q.token)
		who = registry_reviewer_by_token(s->reg, q.token, q.tokenn);
	if (!who)
		web_login_refused(s, &q);
	else
		web_login_reply(s, &q, who, who == q.reviewer && by_proxy ? "proxy" : "token");
	return 0;
}

int h_web_me(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	const struct cv *mcp = cv_get(f->body, "mcp");
	if (mcp && mcp->t == CV_TRUE) { /* /review/mcp: a reviewer's tools, or an admin's QA tools */
		if (web_identify(s, &q) != 0)
			return 0;
		if (q.admin) {
			reply_to(s, q.hreq, 1, answer_ok(json_pack("{s:s}", "admin", q.admin)));
			return 0;
		}
		if (!q.reviewer) {
			web_auth_failed(s, &q, PS_UNAUTHORIZED, "log in first (no or expired session)");
			return 0;
		}
	} else if (!web_reviewer_ok(s, &q, 0)) {
		return 0;
	}
	if (!q.ss && !strcmp(q.via, "proxy")) { /* the page needs a session for its CSRF token */
		web_login_reply(s, &q, q.reviewer, "proxy");
		return 0;
	}
	json_t *j = q.ss ? json_pack("{s:s,s:s,s:s}", "reviewer", q.reviewer, "csrf", q.ss->csrf, "via", q.ss->via)
			 : json_pack("{s:s,s:s}", "reviewer", q.reviewer, "via", q.via);
	reply_to(s, q.hreq, 1, answer_ok(j));
	return 0;
}

int h_web_logout(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (!web_reviewer_ok(s, &q, 1))
		return 0;
	if (!q.ss) { /* a reviewer token (not ambient: no CSRF token asked) is no session to end */
		web_error(
		    s, q.hreq, PS_BAD_REQUEST,
		    "no web session to end: a reviewer token is not one (assent reviewer token NAME replaces it)");
		return 0;
	}
	uint32_t id = q.ss->id;
	slog("info", "web: %s logged out", q.ss->reviewer);
	if (s->ws_share) /* and out of every replica */
		s->ws_share(s, q.ss, 1);
	ws_end(q.ss);
	web_push(s, &id, 1);
	reply_to(s, q.hreq, 1, answer_ok(json_pack("{s:b}", "ok", 1)));
	return 0;
}

int h_web_events(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (!web_reviewer_ok(s, &q, 0))
		return 0;
	/* The worker holds the streams: it keeps to these limits (they guard its own slots). */
	json_t *j = json_pack("{s:b,s:s,s:I,s:I}", "ok", 1, "reviewer", q.reviewer, "streams_max",
			      (json_int_t)s->web_streams_max, "stream_seconds", (json_int_t)s->web_stream_s);
	/* A stream ends with what opened it: the session, or the credential itself. */
	uint8_t cred[32];
	uint32_t wsid = q.ss ? q.ss->id
			: registry_reviewer_credential(s->reg, q.reviewer, q.via, cred) == 0
			    ? ws_credential_stream_id(cred)
			    : 0;
	struct web_out w = {.status = PS_OK, .wsid = wsid};
	web_send(s, q.hreq, &w, j);
	json_decref(j);
	return 0;
}

/* ---- the queue and decisions ---- */

int h_web_pending(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (web_reviewer_ok(s, &q, 0))
		reply_to(s, q.hreq, 1, answer_ok(web_pending(s, q.reviewer, q.offset)));
	return 0;
}

int h_web_list(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (web_reviewer_ok(s, &q, 0))
		reply_to(s, q.hreq, 1, answer_ok(list_reply_page(s, NULL, q.reviewer, q.offset)));
	return 0;
}

/* Decide q's request as its reviewer; text: the response, or NULL (NULL tx of a
 * non-NULL text: out of memory). */
static void web_decide_as(struct signer *s, const struct web_req *q, const char *outcome, const char *text, char *tx)
{
	char id[65];
	snprintf(id, sizeof id, "%.*s", (int)q->sidn, q->sid);
	struct who w = {q->reviewer, "web", q->via, (uid_t)-1, q->hreq, 1, q->pk.cred ? &q->pk : NULL};
	struct answer rep =
	    text && !tx ? ctl_error(PS_INTERNAL, "out of memory") : decide(s, &w, id, outcome, tx, q->n);
	if (rep.j) /* none: a decision, answered once it is on disk */
		reply_to(s, q->hreq, 1, rep);
}

int h_web_decide(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (!web_reviewer_ok(s, &q, 1))
		return 0;
	if (q.pk.cred && (!q.pk.authdata || !q.pk.cdj || !q.pk.sig)) {
		web_error(
		    s, q.hreq, PS_BAD_REQUEST,
		    "a passkey assertion needs credential_id, authenticator_data, client_data_json and signature");
		return 0;
	}
	char oc[17], *tx = q.text ? strndup(q.text, q.textn) : NULL;
	snprintf(oc, sizeof oc, "%.*s", (int)q.outcomen, q.outcome);
	web_decide_as(s, &q, oc, q.text, tx);
	free(tx);
	return 0;
}

/* The page's Reveal: a pending gated call's exact arguments, ledgered as revealed (exact.c). */
int h_web_reveal(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (!web_reviewer_ok(s, &q, 1))
		return 0;
	char id[65];
	snprintf(id, sizeof id, "%.*s", (int)q.sidn, q.sid);
	struct who w = {q.reviewer, "web", q.via, (uid_t)-1, q.hreq, 1, NULL};
	reveal(s, &w, id);
	return 0;
}

/* submit_feedback's {approved, response, selection}: the outcome follows from the
 * request's type (an unknown request: "approved", which decide() refuses as such). */
static const char *submit_outcome(struct signer *s, const struct web_req *q)
{
	char id[65];
	snprintf(id, sizeof id, "%.*s", (int)q->sidn, q->sid);
	const struct pq_item *it = pq_find(s->q, id);
	const char *type = it ? ((const struct req *)it->data)->type : "";
	return !q->approved		    ? "rejected"
	       : !strcmp(type, "input")	    ? "answered"
	       : !strcmp(type, "selection") ? "selected"
					    : "approved";
}

int h_web_submit(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (!web_reviewer_ok(s, &q, 1))
		return 0;
	const char *oc = submit_outcome(s, &q);
	/* A rejection needs a reason and an answer a text: these stand in when none came. */
	const char *text = q.text		     ? NULL
			   : !q.approved	     ? "rejected by the reviewer"
			   : !strcmp(oc, "answered") ? ""
						     : NULL;
	char *tx = q.text ? strndup(q.text, q.textn) : text ? strdup(text) : NULL;
	web_decide_as(s, &q, oc, q.text ? q.text : text, tx);
	free(tx);
	return 0;
}

/* ---- the history and its proofs ---- */

int h_web_history(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	struct hist_filter hf = {.limit = PROTO_HIST_LIMIT_MAX};
	const struct cv *b = f->body;
	/* The worker parsed the query; its fields passed frames.c's bounds, checked again here. */
	GUARD(opt_text(b, "who", PROTO_HIST_WHO_MAX, &hf.who, &hf.whon, err));
	GUARD(opt_text(b, "audience", PROTO_HIST_AUD_MAX, &hf.audience, &hf.audiencen, err));
	hf.outcome = q.outcome;
	hf.outcomen = q.outcomen;
	if (cv_get(b, "rule"))
		GUARD(ipc_get_uint(b, "rule", PROTO_HIST_RULE_MAX, &hf.rule, err));
	if (cv_get(b, "since"))
		GUARD(ipc_get_uint(b, "since", PROTO_HIST_TIME_MAX, &hf.since, err));
	if ((hf.has_until = cv_get(b, "until") != NULL))
		GUARD(ipc_get_uint(b, "until", PROTO_HIST_TIME_MAX, &hf.until, err));
	if (cv_get(b, "limit"))
		GUARD(ipc_get_uint(b, "limit", PROTO_HIST_LIMIT_MAX, &hf.limit, err));
	if (!web_reviewer_ok(s, &q, 0))
		return 0;
	json_t *j = webhist_json(s, q.reviewer, &hf);
	reply_to(s, q.hreq, 1, j ? answer_ok(j) : ctl_error(PS_INTERNAL, "out of memory"));
	return 0;
}

/* ---- operators ---- */

/* Requests past their deadline and MCP sessions past their idle time, ended now. */
static void clear_stale(struct signer *s, size_t *expired, size_t *sessions)
{
	size_t before = pq_count(s->q), n = 0;
	expire(s);
	for (size_t i = 0; i < MAX_CONNS; i++)
		n += s->conns[i].used && s->conns[i].http;
	sweep_sessions(s, now_ms());
	for (size_t i = 0; i < MAX_CONNS; i++)
		n -= s->conns[i].used && s->conns[i].http;
	web_sweep(s, now_ms());
	*expired = before - pq_count(s->q);
	*sessions = n;
}

/* /review/mcp's qa_* tools and the page's reports: reviewers read, admins change (qa.c). */
int h_web_qa(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (web_identify(s, &q) != 0)
		return 0;
	if (!q.reviewer && !q.admin) {
		web_auth_failed(s, &q, PS_UNAUTHORIZED, "refused: the records are for reviewers and admins");
		return 0;
	}
	qa_web(s, f, q.hreq, q.reviewer, q.admin);
	return 0;
}

int h_web_admin_clear(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (web_identify(s, &q) != 0)
		return 0;
	if (!q.admin) {
		web_auth_failed(s, &q, q.reviewer ? PS_FORBIDDEN : PS_UNAUTHORIZED,
				"refused: an admin endpoint needs an admin token (assent admin add NAME)");
		return 0;
	}
	size_t expired, sessions;
	clear_stale(s, &expired, &sessions);
	slog("info", "admin %s cleared stale sessions: %zu requests past their deadline, %zu MCP sessions", q.admin,
	     expired, sessions);
	reply_to(s, q.hreq, 1,
		 answer_ok(json_pack("{s:b,s:I,s:I}", "ok", 1, "expired_requests", (json_int_t)expired,
				     "ended_sessions", (json_int_t)sessions)));
	return 0;
}
