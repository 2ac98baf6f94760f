/* The counters behind /metrics, kept by the signer (see metrics.h): counting and formatting only. */
#include "gateway/signer/core/metrics.h"

#include <stdio.h>
#include <string.h>

static const char *const outcomes[METRICS_OUTCOMES] = {"approved", "rejected", "answered",  "selected",
						       "denied",   "timeout",  "cancelled", "abandoned"};
/* Seconds: people decide in seconds to hours, policies in microseconds. */
static const double bounds[METRICS_BUCKETS] = {0.01, 0.1, 1, 5, 15, 60, 300, 900, 3600, 14400, 86400};

void metrics_decided(struct metrics *m, const char *outcome, uint64_t latency_ms)
{
	for (size_t i = 0; i < METRICS_OUTCOMES; i++)
		if (!strcmp(outcome, outcomes[i]))
			m->decisions[i]++;
	if (!strcmp(outcome, "cancelled") || !strcmp(outcome, "abandoned"))
		return; /* nobody decided: not a decision's latency */
	double s = (double)latency_ms / 1000.0;
	for (size_t i = 0; i < METRICS_BUCKETS; i++)
		if (s <= bounds[i])
			m->lat_bucket[i]++;
	m->lat_count++;
	m->lat_sum_s += s;
}

int metrics_text(const struct metrics *m, const struct metrics_gauges *g, struct buf *o)
{
	int rc = 0;
	rc |= buf_printf(o,
			 "# HELP assent_pending Requests waiting for a decision.\n# TYPE assent_pending gauge\n"
			 "assent_pending %llu\n",
			 (unsigned long long)g->pending);
	rc |= buf_printf(o, "# HELP assent_decisions_total Requests that left the queue, by outcome.\n"
			    "# TYPE assent_decisions_total counter\n");
	for (size_t i = 0; i < METRICS_OUTCOMES; i++)
		rc |= buf_printf(o, "assent_decisions_total{outcome=\"%s\"} %llu\n", outcomes[i],
				 (unsigned long long)m->decisions[i]);
	rc |= buf_printf(o, "# HELP assent_decision_latency_seconds From request to decision (people, policy, "
			    "deadline).\n# TYPE assent_decision_latency_seconds histogram\n");
	for (size_t i = 0; i < METRICS_BUCKETS; i++)
		rc |= buf_printf(o, "assent_decision_latency_seconds_bucket{le=\"%g\"} %llu\n", bounds[i],
				 (unsigned long long)m->lat_bucket[i]);
	rc |= buf_printf(o,
			 "assent_decision_latency_seconds_bucket{le=\"+Inf\"} %llu\n"
			 "assent_decision_latency_seconds_sum %.3f\nassent_decision_latency_seconds_count %llu\n",
			 (unsigned long long)m->lat_count, m->lat_sum_s, (unsigned long long)m->lat_count);
	rc |=
	    buf_printf(o,
		       "# HELP assent_ledger_entries Entries on the ledger.\n# TYPE assent_ledger_entries gauge\n"
		       "assent_ledger_entries %llu\n"
		       "# HELP assent_ledger_bytes Size of the ledger's data file.\n# TYPE assent_ledger_bytes gauge\n"
		       "assent_ledger_bytes %llu\n",
		       (unsigned long long)g->ledger_entries, (unsigned long long)g->ledger_bytes);
	rc |= buf_printf(
	    o,
	    "# HELP assent_worker_restarts_total Jailed workers restarted since the daemon started.\n"
	    "# TYPE assent_worker_restarts_total counter\n"
	    "assent_worker_restarts_total{worker=\"mcp\"} %llu\nassent_worker_restarts_total{worker=\"review\"} %llu\n",
	    (unsigned long long)g->mcp_restarts, (unsigned long long)g->review_restarts);
	rc |= buf_printf(o,
			 "# HELP assent_auth_failures_total Refused credentials, by listener.\n"
			 "# TYPE assent_auth_failures_total counter\n"
			 "assent_auth_failures_total{listener=\"agent\"} "
			 "%llu\nassent_auth_failures_total{listener=\"review\"} %llu\n",
			 (unsigned long long)m->auth_fail_agent, (unsigned long long)m->auth_fail_review);
	rc |= buf_printf(o,
			 "# HELP assent_webhook_deliveries_total Webhook deliveries and attempts, by result.\n"
			 "# TYPE assent_webhook_deliveries_total counter\n"
			 "assent_webhook_deliveries_total{result=\"delivered\"} %llu\n"
			 "assent_webhook_deliveries_total{result=\"retried\"} %llu\n"
			 "assent_webhook_deliveries_total{result=\"gave_up\"} %llu\n"
			 "assent_webhook_deliveries_total{result=\"dropped\"} %llu\n",
			 (unsigned long long)m->hook_delivered, (unsigned long long)m->hook_retried,
			 (unsigned long long)m->hook_gave_up, (unsigned long long)m->hook_dropped);
	rc |= buf_printf(o,
			 "# HELP assent_witness_cosignatures_total Witnesses' cosignatures, by result.\n"
			 "# TYPE assent_witness_cosignatures_total counter\n"
			 "assent_witness_cosignatures_total{result=\"stored\"} %llu\n"
			 "assent_witness_cosignatures_total{result=\"refused\"} %llu\n"
			 "assent_witness_cosignatures_total{result=\"retried\"} %llu\n"
			 "# HELP assent_witness_conflicts_total Witnesses that saw another tree of this ledger.\n"
			 "# TYPE assent_witness_conflicts_total counter\n"
			 "assent_witness_conflicts_total %llu\n",
			 (unsigned long long)m->witness_cosigned, (unsigned long long)m->witness_refused,
			 (unsigned long long)m->witness_failed, (unsigned long long)m->witness_conflicts);
	rc |=
	    buf_printf(o,
		       "# HELP assent_web_sessions Reviewers logged in on the web.\n# TYPE assent_web_sessions gauge\n"
		       "assent_web_sessions %llu\n"
		       "# HELP assent_uptime_seconds Since the daemon started.\n# TYPE assent_uptime_seconds gauge\n"
		       "assent_uptime_seconds %llu\n",
		       (unsigned long long)g->web_sessions, (unsigned long long)g->uptime_s);
	return rc ? -1 : 0;
}
