/* Limits per principal, so that no one agent, client or address uses up what
 * others need: read from the environment by the signer at start. Each limit,
 * when hit, is answered with an error naming its variable and is logged (at most
 * once a minute per limit, so that a flood does not flood the log too). */
#ifndef ASSENT_LIM_H
#define ASSENT_LIM_H

#include <stdint.h>

struct lim_config {
	unsigned pending_per_agent;  /* ASSENT_MAX_PENDING_PER_AGENT (100): requests one principal has pending */
	unsigned blocking_per_agent; /* ASSENT_MAX_BLOCKING_PER_AGENT (64): of those, calls held open waiting */
	unsigned conns_per_uid;	     /* ASSENT_MAX_CONNECTIONS_PER_UID (64): unix-socket connections of one uid */
	unsigned max_timeout_s;	     /* ASSENT_MAX_TIMEOUT_SECONDS (3600): the longest a request may wait */
};

enum lim_kind { LIM_PENDING, LIM_BLOCKING, LIM_CONNS_UID, LIM_CONNS_TOTAL, LIM_SESSIONS, LIM_NKINDS };

struct lim_state {
	struct lim_config c;
	uint64_t last_log_ms[LIM_NKINDS];
	uint64_t hits[LIM_NKINDS];     /* since the daemon started */
	uint64_t unlogged[LIM_NKINDS]; /* hits since the last log line */
};

/* From the environment (defaults above); err names the variable that was wrong. */
int lim_from_env(struct lim_config *c, char *err);
/* Count a hit of a limit; 1 when it should be logged now (the first in a minute),
 * with *suppressed set to the hits not logged since the last line. */
int lim_hit(struct lim_state *l, enum lim_kind k, uint64_t now_ms, uint64_t *suppressed);

#endif
