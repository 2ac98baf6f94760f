/* Fuzz target: STATE/notify.json as the signer reads it (gateway/state/hooks.c, hooks_parse).
 * Properties (abort when violated):
 *   - 0 leaves at most HOOKS_MAX webhooks, each with a valid name, a secret of whsec_ and 64
 *     characters, a scheme of https (or http to a loopback host), a port from 1, a path from
 *     '/', and events within HOOK_EV_ALL and not none; names are distinct;
 *   - an error leaves no webhook and says something;
 *   - what hooks_save would write reads back the same (hook_set is its own inverse);
 *   - a scope (reviewers, groups) holds at most HOOK_SCOPE_MAX names of the name charset
 *     each, and hook_scope_set of its text gives the same lists back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/urlsplit.h"
#include "common/util.h"
#include "gateway/state/hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hooks hs;
	char err[AS_ERRLEN] = "";
	int rc = hooks_parse((const char *)data, size, "notify.json", &hs, err);
	if (rc != 0) {
		if (hs.n != 0 || !err[0])
			abort();
		return 0;
	}
	if (hs.n > HOOKS_MAX)
		abort();
	for (size_t i = 0; i < hs.n; i++) {
		const struct hook *h = &hs.h[i];
		if (!h->name[0] || strlen(h->secret) != HOOK_SECRET_LEN || strncmp(h->secret, "whsec_", 6) ||
		    !h->port || h->path[0] != '/' || !h->events || (h->events & ~(unsigned)HOOK_EV_ALL))
			abort();
		if (strcmp(h->scheme, "https") && !(strcmp(h->scheme, "http") == 0 && url_loopback(h->host)))
			abort();
		for (size_t k = 0; k < i; k++)
			if (!strcmp(hs.h[k].name, h->name))
				abort();
		char ev[64];
		hook_events_text(h->events, ev, sizeof ev);
		struct hook back;
		if (hook_set(&back, h->name, h->url, h->slack ? "slack" : "json", ev, h->ca[0] ? h->ca : NULL, err) !=
			0 ||
		    back.events != h->events || back.port != h->port || strcmp(back.host, h->host) ||
		    strcmp(back.path, h->path) || back.slack != h->slack)
			abort();
		char rv[HOOK_SCOPE_MAX * (HOOK_SCOPE_NAME_MAX + 1) + 1], gr[sizeof rv];
		if (h->nreviewers > HOOK_SCOPE_MAX || h->ngroups > HOOK_SCOPE_MAX)
			abort();
		hook_scope_text(h->reviewers, h->nreviewers, rv, sizeof rv);
		hook_scope_text(h->groups, h->ngroups, gr, sizeof gr);
		if (hook_scope_set(&back, rv, gr, err) != 0 || back.nreviewers != h->nreviewers ||
		    back.ngroups != h->ngroups)
			abort();
		for (size_t k = 0; k < h->nreviewers; k++)
			if (strcmp(back.reviewers[k], h->reviewers[k]) || !h->reviewers[k][0] ||
			    strspn(h->reviewers[k],
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
				strlen(h->reviewers[k]))
				abort();
		for (size_t k = 0; k < h->ngroups; k++)
			if (strcmp(back.groups[k], h->groups[k]) || !h->groups[k][0])
				abort();
	}
	return 0;
}
