/* The history of decisions as the reviewer page shows it (GET /review/api/history, answered
 * in web.c): the decisions a reviewer may see, filtered, and the chart of the last hours. */
#define _GNU_SOURCE
#include "gateway/signer/webhist.h"

#include <stdlib.h>
#include <string.h>

#include "gateway/signer/state.h"

/* A decision whose rule named its reviewers is shown to them only, as its request was. */
int webhist_may_see(struct signer *s, const char *reviewer, const struct recent *x)
{
	return !x->restricted || (x->pd && reviewer_allowed(s, reviewer, x->pd));
}

static int text_is(const char *want, size_t n, const char *have)
{
	return !want || (strlen(have) == n && !memcmp(have, want, n));
}

static int history_match(const struct hist_filter *h, const struct recent *x)
{
	return text_is(h->who, h->whon, x->by) && text_is(h->outcome, h->outcomen, x->outcome) &&
	       text_is(h->audience, h->audiencen, x->audience) && (!h->rule || x->rule == h->rule) &&
	       x->at >= h->since && (!h->has_until || x->at <= h->until);
}

#define HIST_HOURS 24

/* The chart's figures: per hour of the last HIST_HOURS (UTC hours), the requests asked
 * (decided ones in the history and pending ones), the decisions made, the timeouts, and
 * the reviewers' time to decision (p50, p90; the policy's and the deadline's are not a
 * reviewer keeping up). All this reviewer may see, whatever the filters. */
struct hist_hours {
	uint64_t first; /* the oldest hour's start, unix s */
	uint64_t requests[HIST_HOURS], decisions[HIST_HOURS], timeouts[HIST_HOURS];
	uint64_t *ms[HIST_HOURS]; /* reviewers' times to decision, per hour */
	size_t nms[HIST_HOURS];
	const char *reviewer;
	struct signer *s;
};

static int hour_of(const struct hist_hours *hh, uint64_t t_s)
{
	return t_s >= hh->first && t_s < hh->first + HIST_HOURS * 3600 ? (int)((t_s - hh->first) / 3600) : -1;
}

static void hours_pending(const struct pq_item *it, void *arg)
{
	struct hist_hours *hh = arg;
	int h = hour_of(hh, it->created_ms / 1000);
	if (h >= 0 && reviewer_may_see(hh->s, hh->reviewer, it->data))
		hh->requests[h]++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static json_t *hours_json(struct signer *s, const char *reviewer)
{
	struct hist_hours hh = {.reviewer = reviewer, .s = s};
	uint64_t now = now_ms() / 1000;
	hh.first = (now / 3600 - (HIST_HOURS - 1)) * 3600;
	uint64_t *all = malloc(HISTORY_MAX * sizeof *all);
	json_t *out = json_array();
	if (!all || !out) {
		free(all);
		json_decref(out);
		return NULL;
	}
	/* Each hour's times go to one stretch of all: two passes, count then place. */
	const struct recent *x;
	for (size_t i = 0; (x = history_nth(s, i)); i++) {
		if (!webhist_may_see(s, reviewer, x))
			continue;
		int hc = hour_of(&hh, x->created_ms / 1000), hd = hour_of(&hh, x->at);
		if (hc >= 0)
			hh.requests[hc]++;
		if (hd < 0)
			continue;
		hh.decisions[hd]++;
		hh.timeouts[hd] += !strcmp(x->outcome, "timeout");
		hh.nms[hd] += strcmp(x->by, "policy") && strcmp(x->by, "deadline");
	}
	size_t at = 0;
	for (int h = 0; h < HIST_HOURS; h++) {
		hh.ms[h] = all + at;
		at += hh.nms[h];
		hh.nms[h] = 0;
	}
	for (size_t i = 0; (x = history_nth(s, i)); i++) {
		int hd = hour_of(&hh, x->at);
		if (hd >= 0 && webhist_may_see(s, reviewer, x) && strcmp(x->by, "policy") && strcmp(x->by, "deadline"))
			hh.ms[hd][hh.nms[hd]++] = x->at_ms > x->created_ms ? x->at_ms - x->created_ms : 0;
	}
	pq_each(s->q, hours_pending, &hh);
	for (int h = 0; h < HIST_HOURS; h++) {
		json_t *o = json_pack("{s:I,s:I,s:I,s:I}", "hour", (json_int_t)(hh.first + (uint64_t)h * 3600),
				      "requests", (json_int_t)hh.requests[h], "decisions", (json_int_t)hh.decisions[h],
				      "timeouts", (json_int_t)hh.timeouts[h]);
		size_t n = hh.nms[h];
		if (o && n) { /* nearest rank */
			qsort(hh.ms[h], n, sizeof *hh.ms[h], cmp_u64);
			json_object_set_new(o, "p50_ms", json_integer((json_int_t)hh.ms[h][(n - 1) / 2]));
			json_object_set_new(o, "p90_ms", json_integer((json_int_t)hh.ms[h][(n * 9 + 9) / 10 - 1]));
		}
		json_array_append_new(out, o);
	}
	free(all);
	return out;
}

json_t *webhist_json(struct signer *s, const char *reviewer, const struct hist_filter *hf)
{
	json_t *arr = json_array();
	size_t matched = 0, seen = 0;
	const struct recent *x;
	for (size_t i = 0; (x = history_nth(s, i)); i++) {
		if (!webhist_may_see(s, reviewer, x))
			continue;
		seen++;
		if (!history_match(hf, x) || matched++ >= hf->limit)
			continue;
		json_t *d =
		    json_pack("{s:s,s:I,s:s,s:s,s:s,s:s?,s:s,s:I,s:I,s:I}", "session_id", x->sid, "seq",
			      (json_int_t)x->seq, "outcome", x->outcome, "by", x->by, "requester", x->requester,
			      "audience", x->audience[0] ? x->audience : NULL, "message", x->message, "requested_at",
			      (json_int_t)(x->created_ms / 1000), "decided_at", (json_int_t)x->at, "decision_ms",
			      (json_int_t)(x->at_ms > x->created_ms ? x->at_ms - x->created_ms : 0));
		if (d && x->rule)
			json_object_set_new(d, "rule", json_integer(x->rule));
		json_array_append_new(arr, d);
	}
	json_t *hours = hours_json(s, reviewer);
	if (!hours) {
		json_decref(arr);
		return NULL;
	}
	/* matched: all that match, of which the newest `limit` are listed; kept: the history's
	 * size for this reviewer (its oldest may have left the ring) */
	return json_pack("{s:o,s:I,s:I,s:I,s:o,s:I}", "decisions", arr, "matched", (json_int_t)matched, "kept",
			 (json_int_t)seen, "kept_max", (json_int_t)HISTORY_MAX, "hours", hours, "now",
			 (json_int_t)(now_ms() / 1000));
}
