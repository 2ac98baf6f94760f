/* The history's, the proof's and the consistency proof's query strings (histq.h). */
#include "gateway/worker/review/histq.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"

static const char *const outcomes[] = {"approved", "rejected", "answered", "selected",
				       "denied",   "timeout",  "cancelled"};

void histq_init(struct histq *q)
{
	memset(q, 0, sizeof *q);
	q->limit = HISTQ_LIMIT_DEFAULT;
}

/* "KEY WHAT": every error names its parameter first. */
static int bad(char *why, const char *key, const char *what)
{
	snprintf(why, HISTQ_WHY_MAX, "%s %s", key, what);
	return -1;
}

/* 1 when every byte of v is a letter, a digit or one of extra. */
static int chars_ok(const char *v, const char *extra)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr(extra, *p)))
			return 0;
	return 1;
}

static int text_arg(const char *key, const char *v, size_t max, const char *extra, char *out, char *why)
{
	if (strlen(v) > max || !chars_ok(v, extra)) {
		snprintf(why, HISTQ_WHY_MAX, "%s must be 1 to %zu characters of letters, digits and %s", key, max,
			 extra);
		return -1;
	}
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

static int num_arg(const char *key, const char *v, uint64_t lo, uint64_t hi, uint64_t *out, char *why)
{
	uint64_t n;
	if (strlen(v) > 20 || parse_u64(v, &n) != 0 || n < lo || n > hi) {
		snprintf(why, HISTQ_WHY_MAX, "%s must be a whole number from %llu to %llu", key, (unsigned long long)lo,
			 (unsigned long long)hi);
		return -1;
	}
	*out = n;
	return 0;
}

static int outcome_arg(const char *v, char *out, char *why)
{
	for (size_t i = 0; i < sizeof outcomes / sizeof *outcomes; i++)
		if (!strcmp(v, outcomes[i])) {
			memcpy(out, v, strlen(v) + 1);
			return 0;
		}
	return bad(why, "outcome", "must be one of approved, rejected, answered, selected, denied, timeout, cancelled");
}

/* A key as an error may quote it: printable ASCII only, cut at 32. */
static void key_shown(const char *key, char *out, size_t max)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)key; *p && n + 1 < max && n < 32; p++)
		out[n++] = *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' ? (char)*p : '?';
	out[n] = 0;
}

int histq_arg(struct histq *q, int proof, const char *key, const char *value, char *why)
{
	static const struct {
		const char *key;
		unsigned bit;
		int proof; /* which query's parameter: HISTQ_* */
	} keys[] = {
	    {"who", HQ_WHO, 0},	    {"outcome", HQ_OUTCOME, 0}, {"audience", HQ_AUDIENCE, 0}, {"rule", HQ_RULE, 0},
	    {"since", HQ_SINCE, 0}, {"until", HQ_UNTIL, 0},	{"limit", HQ_LIMIT, 0},	      {"seq", HQ_SEQ, 1},
	    {"old", HQ_OLD, 2},	    {"new", HQ_NEW, 2},
	};
	static const char *const takes[] = {"the history takes who, outcome, audience, rule, since, until, limit",
					    "the proof takes seq", "the consistency proof takes old and new"};
	if (proof < HISTQ_HISTORY || proof > HISTQ_CONSISTENCY)
		return bad(why, "query", "of no known kind");
	size_t k = 0;
	while (k < sizeof keys / sizeof *keys && (!key || strcmp(key, keys[k].key) || keys[k].proof != proof))
		k++;
	if (k == sizeof keys / sizeof *keys) {
		char shown[40];
		key_shown(key ? key : "", shown, sizeof shown);
		snprintf(why, HISTQ_WHY_MAX, "unknown parameter \"%s\" (%s)", shown, takes[proof]);
		return -1;
	}
	unsigned bit = keys[k].bit;
	if (q->seen & bit)
		return bad(why, keys[k].key, "is given twice");
	q->seen |= bit;
	const char *v = value ? value : "";
	if (!*v)
		return 0; /* an empty form field: no filter */
	int rc;
	switch (bit) {
	case HQ_WHO:
		rc = text_arg("who", v, PROTO_HIST_WHO_MAX, "._-", q->who, why);
		break;
	case HQ_OUTCOME:
		rc = outcome_arg(v, q->outcome, why);
		break;
	case HQ_AUDIENCE:
		rc = text_arg("audience", v, PROTO_HIST_AUD_MAX, "._:/-", q->audience, why);
		break;
	case HQ_RULE:
		rc = num_arg("rule", v, 1, PROTO_HIST_RULE_MAX, &q->rule, why);
		break;
	case HQ_SINCE:
		rc = num_arg("since", v, 0, PROTO_HIST_TIME_MAX, &q->since, why);
		break;
	case HQ_UNTIL:
		rc = num_arg("until", v, 0, PROTO_HIST_TIME_MAX, &q->until, why);
		break;
	case HQ_LIMIT:
		rc = num_arg("limit", v, 1, PROTO_HIST_LIMIT_MAX, &q->limit, why);
		break;
	case HQ_OLD:
		rc = num_arg("old", v, 1, PROTO_SEQ_MAX + 1, &q->old, why);
		break;
	case HQ_NEW:
		rc = num_arg("new", v, 1, PROTO_SEQ_MAX + 1, &q->new, why);
		break;
	default:
		rc = num_arg("seq", v, 0, PROTO_SEQ_MAX, &q->seq, why);
		break;
	}
	if (rc == 0)
		q->has |= bit;
	return rc;
}

int histq_done(struct histq *q, int proof, char *why)
{
	if (proof == HISTQ_CONSISTENCY) {
		if (!(q->has & HQ_OLD))
			return bad(why, "old", "is required: the tree size the witness last cosigned");
		if (!(q->has & HQ_NEW))
			return bad(why, "new", "is required: the tree size of the newer checkpoint");
		if (q->old > q->new)
			return bad(why, "old", "is after new: a tree grows, it never shrinks");
		return 0;
	}
	if (proof == HISTQ_PROOF && !(q->has & HQ_SEQ))
		return bad(why, "seq", "is required: the ledger sequence number of the entry to prove");
	if ((q->has & HQ_SINCE) && (q->has & HQ_UNTIL) && q->since > q->until)
		return bad(why, "since", "is after until: nothing can be decided in between");
	return 0;
}
