/* The counters behind /metrics (Prometheus text exposition format 0.0.4), kept by
 * the signer. Pure: counting and formatting, no I/O. */
#ifndef ASSENT_METRICS_H
#define ASSENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define METRICS_BUCKETS 11
#define METRICS_OUTCOMES 8

struct metrics {
	uint64_t decisions[METRICS_OUTCOMES]; /* by outcome, in metrics.c's order */
	uint64_t lat_bucket[METRICS_BUCKETS]; /* decision latency, cumulative as Prometheus wants */
	uint64_t lat_count;
	double lat_sum_s;
	uint64_t auth_fail_agent, auth_fail_review; /* refused credentials, by listener */
	/* webhook deliveries (notify.c): delivered (a 2xx), attempts that failed and are retried,
	 * given up after the last retry, dropped because the queue was full */
	uint64_t hook_delivered, hook_retried, hook_gave_up, hook_dropped;
	/* witnesses (witness.c): cosignatures stored, refused (a signature that does not verify),
	 * attempts that failed and are retried, conflicts (a witness saw another tree) */
	uint64_t witness_cosigned, witness_refused, witness_failed, witness_conflicts;
};

/* A request left the queue: outcome approved|rejected|answered|selected|denied|
 * timeout|cancelled|abandoned, latency_ms since it was made. */
void metrics_decided(struct metrics *m, const char *outcome, uint64_t latency_ms);

struct metrics_gauges {
	uint64_t pending, ledger_entries, ledger_bytes, uptime_s, mcp_restarts, review_restarts, web_sessions;
};
int metrics_text(const struct metrics *m, const struct metrics_gauges *g, struct buf *out);

#endif
