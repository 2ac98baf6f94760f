/* The reviewer listener's commands: web sessions, the pending list, decisions, metrics, files. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

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
void web_push(struct signer *s, const uint32_t *ended, size_t nended)
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

void web_sweep(struct signer *s, uint64_t now)
{
	reload_registry(s); /* which ends what a changed registry ends */
	web_end_sessions(s, now);
}

/* The registry was loaded anew: a reviewer removed, a token rotated or removed, a
 * proxy identity changed. Every session made with what is gone ends now, and its
 * event streams with it; so do the streams opened with such a credential itself
 * (a reviewer token as a bearer), named by ws_credential_stream_id. */
void web_credentials_changed(struct signer *s, const struct registry *old)
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

int h_web(void *ctx, struct ipc_frame *f, char *err)
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
