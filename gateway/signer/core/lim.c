/* Limits per principal: the environment's values, and when a hit is logged. */
#define _GNU_SOURCE
#include "gateway/signer/core/lim.h"

#include <stdlib.h>

#include "include/assent/err.h"
#include "common/util.h"

static int env_u(const char *name, uint64_t min, uint64_t max, uint64_t dflt, unsigned *out, char *err)
{
	const char *v = getenv(name);
	uint64_t x = dflt;
	if (v && *v && (parse_u64(v, &x) != 0 || x < min || x > max))
		return as_fail(err, AS_EINVAL, "%s must be a number from %llu to %llu, not '%.32s'", name,
			       (unsigned long long)min, (unsigned long long)max, v);
	*out = (unsigned)x;
	return 0;
}

int lim_from_env(struct lim_config *c, char *err)
{
	GUARD(env_u("ASSENT_MAX_PENDING_PER_AGENT", 1, 100000, 100, &c->pending_per_agent, err));
	GUARD(env_u("ASSENT_MAX_BLOCKING_PER_AGENT", 1, 1024, 64, &c->blocking_per_agent, err));
	GUARD(env_u("ASSENT_MAX_CONNECTIONS_PER_UID", 1, 1024, 64, &c->conns_per_uid, err));
	GUARD(env_u("ASSENT_MAX_TIMEOUT_SECONDS", 1, 86400, 3600, &c->max_timeout_s, err));
	return 0;
}

int lim_hit(struct lim_state *l, enum lim_kind k, uint64_t now_ms, uint64_t *suppressed)
{
	l->hits[k]++;
	if (l->last_log_ms[k] && now_ms - l->last_log_ms[k] < 60000) {
		l->unlogged[k]++;
		return 0;
	}
	*suppressed = l->unlogged[k];
	l->unlogged[k] = 0;
	l->last_log_ms[k] = now_ms;
	return 1;
}
