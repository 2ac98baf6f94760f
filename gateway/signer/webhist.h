/* The reviewer page's history of decisions (gateway/signer/webhist.c), for web.c's
 * GET /review/api/history and its proofs. */
#ifndef ASSENT_WEBHIST_H
#define ASSENT_WEBHIST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct signer;
struct recent;

/* The filters of GET /review/api/history (the review worker parsed them, histq.h): a NULL
 * text matches any, rule 0 any rule, until only with has_until; limit: how many are listed. */
struct hist_filter {
	const char *who, *outcome, *audience;
	size_t whon, outcomen, audiencen;
	uint64_t rule, since, until, limit;
	int has_until;
};

/* Whether reviewer may see x: a decision whose rule named its reviewers is shown to them
 * only, as its request was. */
int webhist_may_see(struct signer *s, const char *reviewer, const struct recent *x);
/* The decisions reviewer may see that match hf (the newest hf->limit), with the chart's
 * hours; NULL when out of memory. The caller owns the answer. */
json_t *webhist_json(struct signer *s, const char *reviewer, const struct hist_filter *hf);

#endif
