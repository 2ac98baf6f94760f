/* The two front workers (worker_kind): the mcp worker (agents, with the agent HTTP listener)
 * and the review worker (reviewers, with the reviewer listener and the reverse proxy's
 * socket). Both get their listener's configuration and the records' (the mcp worker's
 * records, both workers' QA tools) before their jail; when one ends, the requests of its
 * connections are failed, and its connections end with it except MCP sessions over HTTP.
 * And signer_register: what every capability registers with the core before the start. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <string.h>

/* Where the reviewer listener is, for the agent listener's redirects of the seed's reviewer
 * endpoints (/pending, /feedback/submit, /admin/clear-stale-sessions); none when it is off. */
static int review_url_put(struct signer *s, struct cv_arena *a, struct cv *f)
{
	char u[512];
	if (s->review_fd < 0 || !review_origin(s, u, sizeof u))
		return 0;
	return ipc_put_text(a, f, "review_url", u, strlen(u));
}

/* They may accept on their listeners, never bind: the signer's own, not closed here. */
static int front_prepare(struct signer *s, int k, struct spawn *sp)
{
	sp->l1 = k == W_MCP ? s->http_fd : s->review_fd;
	sp->l2 = k == W_REVIEW ? s->proxy_fd : -1;
	return 0;
}

static int front_config(struct signer *s, int k, struct cv_arena *a, struct cv **out)
{
	int rv = k == W_REVIEW;
	struct cv *f = ipc_frame_new(a, F_CONFIG, 5), *c = http_cfg_to_cv(rv ? &s->review : &s->http, a), *slot;
	if (!f || !c || !(slot = ipc_put(a, f, "http")) || (*slot = *c, 0) ||
	    (rv && ipc_put_uint(a, f, "proxy", s->proxy_fd >= 0)) ||
	    ipc_put_text(a, f, "proxy_header", s->proxy_header, strlen(s->proxy_header)) ||
	    records_worker_cfg(s, a, f) || /* the mcp worker's records, both workers' QA tools */
	    (k == W_MCP && review_url_put(s, a, f)))
		return -1;
	*out = f;
	return 0;
}

static void front_down(struct signer *s, int k, const char *why)
{
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
}

static const struct worker_kind front_kind = {front_prepare, front_config, front_down, NULL};

/* What the capabilities register with the core, before anything starts: the call records'
 * notes, their dispatched and ended phases and assent's own events, the history ring's and
 * the pages' decided (and queued) phases, the gate's part of a request's end, these two
 * workers' kind.
 * (What needs its configuration first registers when it starts: the upstreams' workers in
 * gate_start, the recorder in records_start, the webhooks in notify_start.) */
void signer_register(struct signer *s)
{
	records_register(s);
	qa_register(s);
	history_register(s);
	webpush_register(s);
	gate_register(s);
	worker_kind(s, W_MCP, &front_kind);
	worker_kind(s, W_REVIEW, &front_kind);
}
