/* Webhooks (issue 17): on a new request, a decision and a deadline approaching, a POST to each
 * webhook of STATE/notify.json (hooks.h) that wants the event. The signer makes each body (a
 * short summary and the review page's link, never the context, never a secret), signs it
 * with the webhook's secret, connects the socket to the address it resolved when the file
 * was read, and hands both to the notify worker (gateway/worker/notify/), which speaks TLS
 * and HTTP with the receiver and says only how it ended (F_NOTIFY_DONE: a status). A
 * failed attempt is retried with backoff (ASSENT_NOTIFY_BACKOFF_MS, doubling, at most a
 * minute), ASSENT_NOTIFY_RETRIES times (default 5), then given up and logged.
 *
 * The signature, for receivers (assent.notify(5), "SIGNATURE"):
 *   X-Assent-Signature: t=UNIX_SECONDS,v1=hex(HMAC-SHA256(secret, "UNIX_SECONDS." || body))
 * the secret being the whole whsec_... string as `assent notify add` printed it. Each attempt
 * is signed anew (its own t), with the same X-Assent-Delivery id, so a receiver can drop a
 * delivery it already has.
 *
 * Names resolve when the file is read (a blocking lookup, as for the upstreams at start):
 * the worker can reach these addresses and nothing else. A file that changed restarts the
 * worker with the new webhooks; deliveries queued for a webhook that is gone are dropped. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "common/redact.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/md.h>

#include "gateway/state/hooks.h"

#define NT_QUEUE 512		 /* deliveries waiting or in flight */
#define NT_SUMMARY 200		 /* characters of the request's message in a body */
#define NT_DEADLINE_MS 300000u	 /* the deadline event: 5 minutes left at most... */
#define NT_BACKOFF_MAX_MS 60000u /* the longest wait between two attempts */

struct delivery {
	int used, inflight;
	char hook[HOOK_NAME_MAX + 1];
	char origin[PROTO_CL_REPLICA_MAX + 1]; /* cluster mode: the replica that made it ("": this one) */
	char event[24];
	uint64_t id, next_at, sent_at;
	unsigned attempt; /* attempts made */
	int last_status;
	char *body;
	size_t len;
};

struct notifier {
	struct hooks hk;
	struct sockaddr_storage addr[HOOKS_MAX];
	socklen_t alen[HOOKS_MAX]; /* 0: the name did not resolve */
	struct timespec mtime;
	off_t size;
	ino_t ino;
	int exists;
	uint64_t next_check, next_id;
	unsigned retries, backoff_ms, inflight;
	unsigned wants; /* the events some webhook wants */
	uint64_t due;	/* the next waiting delivery's time, as the last tick saw (loop.c waits no longer) */
	struct delivery q[NT_QUEUE];
};

static unsigned env_uint(const char *name, unsigned def, unsigned max)
{
	const char *v = getenv(name);
	uint64_t n;
	if (!v || !*v)
		return def;
	if (parse_u64(v, &n) != 0 || n > max) {
		slog("warning", "%s=%.32s: not a number from 0 to %u; %u is used", name, v, max, def);
		return def;
	}
	return (unsigned)n;
}

static void drop(struct notifier *n, struct delivery *d)
{
	if (d->inflight && n->inflight)
		n->inflight--;
	free(d->body);
	memset(d, 0, sizeof *d);
}

/* Delivered, given up, or its webhook gone: cluster mode forgets it too (cluster_dlv_done). */
static void ended(struct signer *s, struct delivery *d)
{
	if (s->cluster)
		cluster_dlv_done(s, d->origin, d->id, d->hook);
	drop(s->nt, d);
}

/* Cluster mode: what a replica that takes this one over checks before it sends a delivery it
 * found in PostgreSQL: HMAC-SHA256 under the webhook's own secret (which PostgreSQL never sees)
 * of the delivery's origin, id, webhook, event and body. 0 and 64 hex digits in out. */
static int dlv_mac(const struct hook *h, const char *origin, uint64_t id, const char *event, const char *body,
		   size_t len, char out[65])
{
	struct buf m;
	uint8_t mac[32];
	buf_init(&m, PROTO_NOTIFY_BODY_MAX + 256);
	int rc =
	    buf_printf(&m, "assent-delivery\n%s\n%llu\n%s\n%s\n", origin, (unsigned long long)id, h->name, event) ||
	    buf_put(&m, body, len) ||
	    mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), (const uint8_t *)h->secret, strlen(h->secret),
			    m.p, m.len, mac) != 0;
	buf_free(&m);
	if (rc == 0)
		hex_encode(mac, sizeof mac, out);
	return rc;
}

static int hook_index(const struct notifier *n, const char *name)
{
	for (size_t i = 0; i < n->hk.n; i++)
		if (!strcmp(n->hk.h[i].name, name))
			return (int)i;
	return -1;
}

static void resolve(struct notifier *n, size_t i)
{
	const struct hook *h = &n->hk.h[i];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
	char port[8];
	snprintf(port, sizeof port, "%u", (unsigned)h->port);
	n->alen[i] = 0;
	int g = getaddrinfo(h->host, port, &hints, &ai);
	if (g != 0 || !ai || ai->ai_addrlen > sizeof n->addr[i]) {
		slog("warning", "webhook %s: cannot resolve %s: %s (its deliveries fail until the file is read again)",
		     h->name, h->host, g ? gai_strerror(g) : "no address");
	} else {
		memcpy(&n->addr[i], ai->ai_addr, ai->ai_addrlen);
		n->alen[i] = ai->ai_addrlen;
	}
	if (ai)
		freeaddrinfo(ai);
}

/* notify.json changed (or came, or went): the new webhooks, their addresses, a new worker. */
static void reload(struct signer *s)
{
	struct notifier *n = s->nt;
	char err[AS_ERRLEN];
	static struct hooks fresh;
	if (hooks_load(s->o->state, &fresh, err) != 0) {
		slog("error", "%s: the webhooks read before stay", err);
		return;
	}
	n->hk = fresh;
	explicit_bzero(&fresh, sizeof fresh);
	n->wants = 0;
	for (size_t i = 0; i < n->hk.n; i++) {
		resolve(n, i);
		n->wants |= n->hk.h[i].events;
	}
	size_t gone = 0;
	for (size_t i = 0; i < NT_QUEUE; i++)
		if (n->q[i].used && hook_index(n, n->q[i].hook) < 0) {
			ended(s, &n->q[i]);
			gone++;
		}
	slog("info", "webhooks: %zu from %s/%s%s", n->hk.n, s->o->state, HOOKS_FILE,
	     gone ? " (deliveries to removed webhooks dropped)" : "");
	cluster_reg_loaded(s); /* cluster mode: a change here is every replica's */
	/* The worker holds each webhook's TLS set-up: a new one for the new file. */
	struct worker *w = &s->w[W_NOTIFY];
	if (w->pid > 0 || w->fd >= 0)
		worker_down(s, W_NOTIFY, "its webhooks changed");
	w->restarts = 0;
	w->start_at = n->hk.n || witness_count(s) ? now_ms() : 0;
}

static void check_file(struct signer *s)
{
	struct notifier *n = s->nt;
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", s->o->state, HOOKS_FILE);
	int exists = stat(path, &st) == 0;
	if (exists == n->exists &&
	    (!exists || (st.st_mtim.tv_sec == n->mtime.tv_sec && st.st_mtim.tv_nsec == n->mtime.tv_nsec &&
			 st.st_size == n->size && st.st_ino == n->ino)))
		return;
	n->exists = exists;
	if (exists) {
		n->mtime = st.st_mtim;
		n->size = st.st_size;
		n->ino = st.st_ino;
	}
	reload(s);
}

static int notify_config(struct signer *s, struct cv_arena *a, struct cv *f);
static void notify_worker_down(struct signer *s);
static void notify_event(struct signer *s, unsigned ev, const struct pq_item *it, const struct req *r,
			 const char *outcome, const char *by);

/* A request waits for a person (queued), or its decision is on disk (decided): the webhooks'
 * request and decision events (phase_hook). */
static void nt_phase(struct signer *s, enum req_phase ph, const struct phase_ev *e)
{
	if (e->r && e->r->remote) /* cluster mode: the replica that holds the request tells its webhooks */
		return;
	notify_event(s, ph == PH_QUEUED ? NOTIFY_REQUEST : NOTIFY_DECISION, e->it, e->r, e->outcome, e->by);
}

/* The notify worker (worker_kind): the webhooks it may be given deliveries for come first;
 * its end puts its deliveries in flight back to be tried again. */
static int nt_config(struct signer *s, int k, struct cv_arena *a, struct cv **f)
{
	(void)k;
	struct cv *nf = ipc_frame_new(a, F_CONFIG, 2);
	if (!nf || notify_config(s, a, nf) != 0)
		return -1;
	*f = nf;
	return 0;
}

static void nt_down(struct signer *s, int k, const char *why)
{
	(void)k, (void)why;
	notify_worker_down(s);
}

static const struct worker_kind nt_kind = {NULL, nt_config, nt_down, NULL};

int notify_start(struct signer *s)
{
	if (!(s->nt = calloc(1, sizeof *s->nt))) {
		slog("error", "out of memory");
		return -1;
	}
	s->nt->retries = env_uint("ASSENT_NOTIFY_RETRIES", 5, 20);
	s->nt->backoff_ms = env_uint("ASSENT_NOTIFY_BACKOFF_MS", 1000, NT_BACKOFF_MAX_MS);
	s->w[W_NOTIFY] = (struct worker){.kind = "notify", .fd = -1};
	worker_kind(s, W_NOTIFY, &nt_kind);
	phase_hook(s, PH_QUEUED, nt_phase);
	phase_hook(s, PH_DECIDED, nt_phase);
	s->dlv_adopt = notify_adopt;
	s->nt->due = UINT64_MAX;
	/* Receivers drop a delivery id they have seen: ids are unique across restarts, so
	 * each run counts on from its start's wall clock in milliseconds (2^22 ids for each
	 * millisecond since the previous run's start; the top bit stays clear). */
	s->nt->next_id = (now_unix_ms() & ((1ull << 41) - 1)) << 22;
	check_file(s);
	if (witness_count(s) && !s->w[W_NOTIFY].start_at) /* witnesses, no webhook: the worker all the same */
		s->w[W_NOTIFY].start_at = now_ms();
	return 0;
}

void notify_free(struct signer *s)
{
	if (!s->nt)
		return;
	for (size_t i = 0; i < NT_QUEUE; i++)
		drop(s->nt, &s->nt->q[i]);
	explicit_bzero(s->nt, sizeof *s->nt);
	free(s->nt);
	s->nt = NULL;
}

static int notify_config(struct signer *s, struct cv_arena *a, struct cv *f)
{
	const struct notifier *n = s->nt;
	struct cv *arr = n ? cv_array(a, n->hk.n) : NULL, *slot = arr ? ipc_put(a, f, "hooks") : NULL;
	if (!slot)
		return -1;
	for (size_t i = 0; i < n->hk.n; i++) {
		const struct hook *h = &n->hk.h[i];
		struct cv *m = cv_map(a, 5);
		size_t k = 0;
		if (!m || kv_text(a, m, &k, "scheme", h->scheme, strlen(h->scheme)) ||
		    kv_text(a, m, &k, "host", h->host, strlen(h->host)) ||
		    kv_text(a, m, &k, "path", h->path, strlen(h->path)) || kv_uint(a, m, &k, "port", h->port) ||
		    (h->ca[0] && kv_text(a, m, &k, "ca", h->ca, strlen(h->ca))))
			return -1;
		m->n = k;
		arr->items[i] = *m;
	}
	*slot = *arr;
	return witness_config(s, a, f);
}

/* Slack's mrkdwn reads <...> as links and mentions (<!channel>): the agent's words are escaped. */
static void slack_escape(struct buf *b, const char *t)
{
	for (; *t; t++) {
		int rc = *t == '&'   ? buf_printf(b, "&amp;")
			 : *t == '<' ? buf_printf(b, "&lt;")
			 : *t == '>' ? buf_printf(b, "&gt;")
				     : buf_put(b, t, 1);
		(void)rc; /* a full buffer cuts the text */
	}
}

/* At most max characters of t (UTF-8, which jansson checked), line breaks as spaces. */
static void summary_cut(const char *t, char *out, size_t max)
{
	size_t n = 0, chars = 0;
	for (const unsigned char *p = (const unsigned char *)(t ? t : ""); *p && chars < max; chars++) {
		size_t len = *p < 0x80 ? 1 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
		size_t k = 0;
		for (; k < len && p[k]; k++)
			out[n++] = p[k] == '\n' || p[k] == '\r' || p[k] == '\t' ? ' ' : (char)p[k];
		p += k;
	}
	out[n] = 0;
}

/* A reviewer's reason as the ledger keeps it (secrets redacted), cut as a summary. */
static void reason_cut(const char *t, char *out, size_t max)
{
	struct buf red;
	struct redact_stats st;
	size_t n = strlen(t) < 4096 ? strlen(t) : 4096;
	buf_init(&red, REDACT_OUT_MAX(n) + 1);
	if (redact_text(t, n, NULL, &red, &st) != 0 || buf_put(&red, "", 1) != 0)
		snprintf(out, max, "%s", "(the reason could not be redacted)");
	else
		summary_cut((const char *)red.p, out, max);
	buf_free(&red);
}

/* Restricted requests (their rule names their reviewers, as the web page and the proofs
 * keep them, web.c): a webhook is told their summary, requester, type, audience, risk
 * and who decided only when its scope (hooks.h) could see them; any other learns the id,
 * the event, the times, the outcome and that the request is restricted, with the review
 * page's link, where a reviewer who may see it does. Told, not skipped: a channel still
 * learns that something waits, and a quiet channel would look like an idle queue. */
static int restricted(const struct req *r)
{
	return r->has_pd && r->pd.nreviewers;
}

static int hook_may_see(struct signer *s, const struct hook *h, const struct req *r)
{
	if (!restricted(r))
		return 1;
	for (size_t i = 0; i < h->nreviewers; i++)
		if (reviewer_allowed(s, h->reviewers[i], &r->pd))
			return 1;
	for (size_t i = 0; i < h->ngroups; i++)
		for (size_t k = 0; k < r->pd.nreviewers; k++)
			if (!strncmp(r->pd.reviewers[k], "group:", 6) && !strcmp(r->pd.reviewers[k] + 6, h->groups[i]))
				return 1;
	return 0;
}

struct body_in {
	const char *event, *outcome, *by, *link, *did;
	const struct pq_item *it;
	const struct req *r;
	int full; /* the webhook may read this request's contents */
};

static char *json_body(const struct body_in *b, const char *summary, const char *risk)
{
	const struct pq_item *it = b->it;
	const struct req *r = b->r;
	json_t *req = json_pack("{s:s,s:I,s:I}", "id", it->session_id, "created", (json_int_t)(it->created_ms / 1000),
				"deadline", (json_int_t)(it->deadline_ms / 1000));
	if (req && restricted(r))
		json_object_set_new(req, "restricted", json_true());
	if (req && b->full) {
		json_object_set_new(req, "type", json_string(r->type));
		json_object_set_new(req, "summary", json_string(summary));
		json_object_set_new(req, "requester", json_string(r->owner));
		if (r->audience[0])
			json_object_set_new(req, "audience", json_string(r->audience));
		if (risk[0])
			json_object_set_new(req, "risk", json_string(risk));
	}
	if (req && b->link[0])
		json_object_set_new(req, "url", json_string(b->link));
	json_t *j = json_pack("{s:s,s:s,s:I,s:o}", "event", b->event, "delivery", b->did, "time",
			      (json_int_t)(now_ms() / 1000), "request", req);
	if (j && b->outcome)
		json_object_set_new(j, "decision",
				    b->full ? json_pack("{s:s,s:s}", "outcome", b->outcome, "by", b->by ? b->by : "")
					    : json_pack("{s:s}", "outcome", b->outcome));
	if (j && b->outcome && b->full && r->why) { /* a rejection's reason, redacted as the ledger keeps it */
		char why[NT_SUMMARY * 4 + 1];
		reason_cut(r->why, why, NT_SUMMARY);
		json_object_set_new(json_object_get(j, "decision"), "reason", json_string(why));
	}
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return t;
}

static char *slack_body(const struct body_in *in, const char *summary)
{
	const struct pq_item *it = in->it;
	const struct req *r = in->r;
	const char *type = in->full ? r->type : "request", *owner = in->full ? r->owner : NULL;
	const char *by = in->full ? in->by : NULL;
	uint64_t left = it->deadline_ms > now_ms() ? (it->deadline_ms - now_ms()) / 1000 : 0;
	struct buf b;
	buf_init(&b, PROTO_NOTIFY_BODY_MAX / 2);
	int rc = buf_printf(&b, "assent: ");
	if (in->link[0])
		rc |= buf_printf(&b, "<%s|%s %s>", in->link, type, it->session_id);
	else
		rc |= buf_printf(&b, "%s %s", type, it->session_id);
	if (owner)
		rc |= buf_printf(&b, " from %s", owner);
	else
		rc |= buf_printf(&b, " (restricted to its reviewers: see the review page)");
	if (!strcmp(in->event, "request.created"))
		rc |= buf_printf(&b, " waits for a decision (%llu s left)", (unsigned long long)left);
	else if (!strcmp(in->event, "request.deadline"))
		rc |= buf_printf(&b, ": its deadline is in %llu s", (unsigned long long)left);
	else
		rc |= buf_printf(&b, ": %s%s%s", in->outcome ? in->outcome : "decided", by ? " by " : "", by ? by : "");
	if (in->full && in->outcome && r->why) {
		char why[NT_SUMMARY * 4 + 1];
		reason_cut(r->why, why, NT_SUMMARY);
		rc |= buf_printf(&b, " (");
		slack_escape(&b, why);
		rc |= buf_printf(&b, ")");
	}
	if (in->full) {
		rc |= buf_printf(&b, "\n>");
		slack_escape(&b, summary);
	}
	(void)rc; /* a full buffer cuts the text */
	json_t *j = json_pack("{s:s%}", "text", (const char *)b.p, b.len);
	buf_free(&b);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return t;
}

static char *make_body(struct signer *s, const struct hook *h, const char *event, uint64_t id, const struct pq_item *it,
		       const struct req *r, const char *outcome, const char *by)
{
	char summary[NT_SUMMARY * 4 + 1], origin[512], link[700] = "", did[40];
	summary_cut(json_string_value(json_object_get(r->view, "message")), summary, NT_SUMMARY);
	if (review_origin(s, origin, sizeof origin))
		snprintf(link, sizeof link, "%s/review#%s", origin, it->session_id);
	snprintf(did, sizeof did, "whd_%016llx", (unsigned long long)id);
	char risk[33] = "";
	summary_cut(view_risk(r->view), risk, 8); /* a word such as "high", not a text */
	struct body_in in = {.event = event,
			     .outcome = outcome,
			     .by = by,
			     .link = link,
			     .did = did,
			     .it = it,
			     .r = r,
			     .full = hook_may_see(s, h, r)};
	return h->slack ? slack_body(&in, summary) : json_body(&in, summary, risk);
}

static void notify_event(struct signer *s, unsigned ev, const struct pq_item *it, const struct req *r,
			 const char *outcome, const char *by)
{
	struct notifier *n = s->nt;
	if (!n || !r)
		return;
	/* A decision is told of what waited for a person (request_done marks it), never of a
	 * call the policy alone decided: a busy gate would flood the receivers. */
	if (!(n->wants & ev) || (ev == NOTIFY_DECISION && !(r->told & NOTIFY_REQUEST)))
		return;
	const char *event = ev == NOTIFY_REQUEST    ? "request.created"
			    : ev == NOTIFY_DECISION ? "request.decided"
						    : "request.deadline";
	for (size_t i = 0; i < n->hk.n; i++) {
		const struct hook *h = &n->hk.h[i];
		if (!(h->events & ev))
			continue;
		size_t k = 0;
		while (k < NT_QUEUE && n->q[k].used)
			k++;
		if (k == NT_QUEUE) {
			s->m.hook_dropped++;
			slog("warning", "webhook %s: %s of %s dropped: %d deliveries wait already", h->name, event,
			     it->session_id, NT_QUEUE);
			continue;
		}
		struct delivery *d = &n->q[k];
		uint64_t id = ++n->next_id;
		char *body = make_body(s, h, event, id, it, r, outcome, by);
		if (!body || strlen(body) > PROTO_NOTIFY_BODY_MAX) {
			free(body);
			s->m.hook_dropped++;
			slog("error", "webhook %s: %s of %s: no body could be made", h->name, event, it->session_id);
			continue;
		}
		*d = (struct delivery){.used = 1, .id = id, .next_at = now_ms(), .body = body, .len = strlen(body)};
		snprintf(d->hook, sizeof d->hook, "%s", h->name);
		snprintf(d->event, sizeof d->event, "%s", event);
		char mac[65];
		if (s->cluster && dlv_mac(h, cluster_replica(s), id, event, body, d->len, mac) == 0)
			cluster_dlv_add(s, id, h->name, event, body, mac);
	}
}

void notify_adopt(struct signer *s, const char *origin, uint64_t id, const char *hook, const char *event,
		  const char *body, size_t len, const char *mac)
{
	struct notifier *n = s->nt;
	int hi = n ? hook_index(n, hook) : -1;
	char want[65];
	size_t k = 0;
	if (hi < 0) {
		slog("warning",
		     "webhook %s: delivery whd_%016llx that replica %s left names no webhook of this replica: "
		     "not sent",
		     hook, (unsigned long long)id, origin);
		return;
	}
	if (strlen(mac) != 64 || dlv_mac(&n->hk.h[hi], origin, id, event, body, len, want) != 0 ||
	    ct_memcmp(want, mac, 64) != 0) {
		s->m.hook_dropped++;
		slog("error",
		     "webhook %s: delivery whd_%016llx that replica %s left does not verify with the "
		     "webhook's secret (changed in PostgreSQL?): not sent",
		     hook, (unsigned long long)id, origin);
		return;
	}
	for (size_t i = 0; i < NT_QUEUE; i++) {
		const struct delivery *q = &n->q[i];
		if (q->used && q->id == id && !strcmp(q->hook, hook) &&
		    !strcmp(q->origin[0] ? q->origin : cluster_replica(s), origin))
			return; /* queued already */
	}
	while (k < NT_QUEUE && n->q[k].used)
		k++;
	char *copy = k < NT_QUEUE ? strndup(body, len) : NULL;
	if (!copy) {
		s->m.hook_dropped++;
		slog("warning", "webhook %s: delivery whd_%016llx of replica %s dropped: %d deliveries wait already",
		     hook, (unsigned long long)id, origin, NT_QUEUE);
		return;
	}
	struct delivery *d = &n->q[k];
	*d = (struct delivery){.used = 1, .id = id, .next_at = now_ms(), .body = copy, .len = len};
	snprintf(d->hook, sizeof d->hook, "%s", hook);
	snprintf(d->event, sizeof d->event, "%s", event);
	if (strcmp(origin, cluster_replica(s)) != 0)
		snprintf(d->origin, sizeof d->origin, "%s", origin);
	slog("info", "webhook %s: delivery whd_%016llx (%s) of replica %s is this replica's to send now", hook,
	     (unsigned long long)id, event, origin);
}

static void attempt_failed(struct signer *s, struct delivery *d, int status, const char *why)
{
	struct notifier *n = s->nt;
	char what[80];
	if (status)
		snprintf(what, sizeof what, "HTTP %d", status);
	else
		snprintf(what, sizeof what, "%.72s", why && *why ? why : "no response");
	if (d->inflight) {
		d->inflight = 0;
		n->inflight--;
	}
	if (d->attempt > n->retries) {
		s->m.hook_gave_up++;
		slog("error", "webhook %s: gave up on delivery whd_%016llx (%s) after %u attempts: %s", d->hook,
		     (unsigned long long)d->id, d->event, d->attempt, what);
		ended(s, d);
		return;
	}
	uint64_t wait = n->backoff_ms;
	for (unsigned i = 1; i < d->attempt && wait < NT_BACKOFF_MAX_MS; i++)
		wait *= 2;
	if (wait > NT_BACKOFF_MAX_MS)
		wait = NT_BACKOFF_MAX_MS;
	d->next_at = now_ms() + wait;
	s->m.hook_retried++;
	slog("warning", "webhook %s: delivery whd_%016llx (%s) attempt %u failed: %s; again in %llu ms", d->hook,
	     (unsigned long long)d->id, d->event, d->attempt, what, (unsigned long long)wait);
}

static int put_header(struct cv_arena *a, struct cv *arr, size_t i, const char *k, const char *v)
{
	struct cv *p = cv_array(a, 2);
	if (!p || slot_text(a, &p->items[0], k, strlen(k)) || slot_text(a, &p->items[1], v, strlen(v)))
		return -1;
	arr->items[i] = *p;
	return 0;
}

/* One attempt: sign, connect, hand over. */
static void send_one(struct signer *s, struct delivery *d)
{
	struct notifier *n = s->nt;
	int hi = hook_index(n, d->hook);
	const struct hook *h = hi >= 0 ? &n->hk.h[hi] : NULL;
	d->attempt++;
	if (!h || !n->alen[hi]) {
		attempt_failed(s, d, 0, h ? "its host did not resolve" : "the webhook is gone");
		return;
	}
	char t[24], sig[96], did[40];
	uint8_t mac[32];
	snprintf(t, sizeof t, "%llu", (unsigned long long)(now_ms() / 1000));
	struct buf m;
	buf_init(&m, PROTO_NOTIFY_BODY_MAX + 64);
	int rc = buf_printf(&m, "%s.", t) || buf_put(&m, d->body, d->len) ||
		 mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), (const uint8_t *)h->secret,
				 strlen(h->secret), m.p, m.len, mac) != 0;
	buf_free(&m);
	char hex[65];
	hex_encode(mac, sizeof mac, hex);
	snprintf(sig, sizeof sig, "t=%s,v1=%s", t, hex);
	snprintf(did, sizeof did, "whd_%016llx", (unsigned long long)d->id);
	int fd = rc ? -1 : socket(n->addr[hi].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
	    (connect(fd, (const struct sockaddr *)&n->addr[hi], n->alen[hi]) != 0 && errno != EINPROGRESS)) {
		char why[128];
		snprintf(why, sizeof why, "cannot connect to %s port %u: %s", h->host, (unsigned)h->port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		attempt_failed(s, d, 0, why);
		return;
	}
	struct cv_arena a;
	cv_arena_init(&a, d->len + 4096);
	struct cv *f = ipc_frame_new(&a, F_NOTIFY_POST, 4), *hs = cv_array(&a, 4), *slot;
	char err[AS_ERRLEN] = "";
	rc = !f || !hs || ipc_put_uint(&a, f, "id", d->id) || ipc_put_uint(&a, f, "hook", (uint64_t)hi) ||
	     ipc_put_text(&a, f, "body", d->body, d->len) || put_header(&a, hs, 0, "X-Assent-Signature", sig) ||
	     put_header(&a, hs, 1, "X-Assent-Event", d->event) || put_header(&a, hs, 2, "X-Assent-Delivery", did) ||
	     put_header(&a, hs, 3, "User-Agent", "assent/" ASSENT_VERSION) || !(slot = ipc_put(&a, f, "headers"));
	if (!rc) {
		*slot = *hs;
		rc = ipc_conn_send(&s->w[W_NOTIFY].ipc, f, fd, err) != 0;
	}
	cv_arena_free(&a);
	close(fd); /* the worker has its own copy */
	if (rc) {
		attempt_failed(s, d, 0, err[0] ? err : "the delivery could not be handed to the notify worker");
		return;
	}
	d->inflight = 1;
	d->sent_at = now_ms();
	n->inflight++;
}

struct deadline_scan {
	struct signer *s;
	uint64_t now;
};

static void deadline_one(const struct pq_item *it, void *arg)
{
	struct deadline_scan *x = arg;
	struct req *r = it->data;
	uint64_t span = it->deadline_ms - it->created_ms, warn = span / 5 < NT_DEADLINE_MS ? span / 5 : NT_DEADLINE_MS;
	if ((r->told & NOTIFY_DEADLINE) || it->deadline_ms <= x->now || it->deadline_ms - x->now > warn)
		return;
	r->told |= NOTIFY_DEADLINE;
	notify_event(x->s, NOTIFY_DEADLINE, it, r, NULL, NULL);
}

void notify_tick(struct signer *s)
{
	struct notifier *n = s->nt;
	if (!n)
		return;
	uint64_t now = now_ms();
	if (now >= n->next_check) { /* once a second: the file, the deadlines */
		n->next_check = now + 1000;
		check_file(s);
		if (n->wants & NOTIFY_DEADLINE) {
			struct deadline_scan x = {s, now};
			if (pq_each(s->q, deadline_one, &x) != 0)
				slog("warning", "webhooks: out of memory scanning the deadlines");
		}
	}
	const struct worker *w = &s->w[W_NOTIFY];
	int ready = w->fd >= 0 && w->state == S_READY;
	n->due = UINT64_MAX;
	for (size_t i = 0; i < NT_QUEUE; i++) {
		struct delivery *d = &n->q[i];
		if (!d->used)
			continue;
		if (d->inflight && now - d->sent_at > PROTO_NOTIFY_TIMEOUT_MS + 5000) /* the worker's own ran out */
			attempt_failed(s, d, 0, "the notify worker did not say how it ended");
		else if (!d->inflight && d->next_at <= now && ready && n->inflight < PROTO_NOTIFY_INFLIGHT)
			send_one(s, d);
		if (d->used && !d->inflight && ready && d->next_at < n->due)
			n->due = d->next_at;
	}
}

uint64_t notify_due(const struct signer *s)
{
	return s->nt ? s->nt->due : UINT64_MAX;
}

static void notify_worker_down(struct signer *s)
{
	struct notifier *n = s->nt;
	for (size_t i = 0; n && i < NT_QUEUE; i++)
		if (n->q[i].used && n->q[i].inflight)
			attempt_failed(s, &n->q[i], 0, "the notify worker stopped");
}

int h_notify_done(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct notifier *n = s->nt;
	uint64_t id = cv_get(f->body, "id")->u, status = cv_get(f->body, "status")->u;
	const struct cv *e = cv_get(f->body, "error");
	(void)err;
	for (size_t i = 0; n && i < NT_QUEUE; i++) {
		struct delivery *d = &n->q[i];
		if (!d->used || !d->inflight || d->id != id)
			continue;
		if (status >= 200 && status < 300) {
			s->m.hook_delivered++;
			slog("info", "webhook %s: delivery whd_%016llx (%s) delivered: HTTP %llu, attempt %u", d->hook,
			     (unsigned long long)d->id, d->event, (unsigned long long)status, d->attempt);
			ended(s, d);
			return 0;
		}
		char why[PROTO_NOTIFY_ERROR_MAX + 1] = "";
		if (e)
			snprintf(why, sizeof why, "%.*s", (int)e->n, (const char *)e->s);
		for (char *p = why; *p; p++) /* the worker's words, logged: no control bytes */
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		attempt_failed(s, d, (int)status, why);
		return 0;
	}
	return 0; /* a delivery given up already (timed out here): not an attack */
}
