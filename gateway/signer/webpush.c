/* The reviewers' pages and event streams, kept current: a push when the queue changes,
 * and the web sessions that end (logout, time, a credential changed in the registry)
 * with their streams; the registry loaded again when its file changed. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <sys/stat.h>

/* A web session lives while the credential it was made with does: the reviewer is
 * registered, and their token (or proxy identity) is still the one it came from. */
int web_session_alive(void *arg, const struct ws_session *ss)
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
	worker_send(s, W_REVIEW, frame_web_push(&a, s->committed + s->web_bumps, pq_count(s->q), ended, nended));
	cv_arena_free(&a);
	s->web_sent = s->committed + s->web_bumps;
}

/* A request queued or decided: the reviewers' pages refresh on the loop's next turn (loop.c
 * pushes when what was committed or bumped is more than what was sent). */
static void web_phase(struct signer *s, enum req_phase ph, const struct phase_ev *e)
{
	(void)ph;
	(void)e;
	s->web_bumps++;
}

void webpush_register(struct signer *s)
{
	phase_hook(s, PH_QUEUED, web_phase);
	phase_hook(s, PH_DECIDED, web_phase);
}

/* End the sessions that are past their time or whose credential ended, and their
 * event streams (a push names at most PROTO_PUSH_ENDED_MAX: as many pushes as it takes). */
static size_t web_end_sessions(struct signer *s, uint64_t now)
{
	uint32_t ended[WS_MAX];
	size_t n = ws_sweep(s->ws, now, web_session_alive, s, ended, WS_MAX);
	for (size_t i = 0; i < n; i += PROTO_PUSH_ENDED_MAX)
		web_push(s, ended + i, n - i < PROTO_PUSH_ENDED_MAX ? n - i : PROTO_PUSH_ENDED_MAX);
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

/* The registry file changed (its mtime): loaded again; web sessions whose credentials it
 * no longer holds end (web_credentials_changed). A file that does not load keeps the old. */
void reload_registry(struct signer *s)
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
	if (s->cluster) /* a change made here goes to the other replicas (cluster_reg.c) */
		cluster_reg_loaded(s);
}
