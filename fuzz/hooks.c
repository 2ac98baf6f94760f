/* Fuzz target: STATE/notify.json as the signer reads it (gateway/signer/hooks.c, hooks_parse).
 * Properties (abort when violated):
 *   - 0 leaves at most HOOKS_MAX webhooks, each with a valid name, a secret of whsec_ and 64
 *     characters, a scheme of https (or http to a loopback host), a port from 1, a path from
 *     '/', and events within HOOK_EV_ALL and not none; names are distinct;
 *   - an error leaves no webhook and says something;
 *   - what hooks_save would write reads back the same (hook_set is its own inverse). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/urlsplit.h"
#include "common/util.h"
#include "gateway/signer/hooks.h"

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
	}
	return 0;
}
