/* Fuzz target: the history's and the proof's query strings (gateway/worker/review/histq.c),
 * as libmicrohttpd hands them over: key and value pairs (split here at '&' and '=', each
 * its own NUL-terminated allocation). The first byte picks the proof's query or the
 * history's. Properties (abort when violated):
 *   - an accepted query has every field it set within its bounds and character set, the
 *     limit 1..1000, since <= until when both are set, a proof's seq set;
 *   - a refused one says why in a terminated text of printable ASCII that starts with a
 *     parameter's name or "unknown parameter" (nothing the client sent but a cut,
 *     sanitised key). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/worker/review/histq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int charset(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr(extra, *s)))
			return 0;
	return 1;
}

static char *dup_n(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static void check_ok(const struct histq *q, int proof)
{
	if ((q->has & ~q->seen) || q->limit < 1 || q->limit > PROTO_HIST_LIMIT_MAX)
		abort();
	if ((q->has & HQ_WHO) && (!q->who[0] || strlen(q->who) > PROTO_HIST_WHO_MAX || !charset(q->who, "._-")))
		abort();
	if ((q->has & HQ_AUDIENCE) &&
	    (!q->audience[0] || strlen(q->audience) > PROTO_HIST_AUD_MAX || !charset(q->audience, "._:/-")))
		abort();
	char word[40];
	snprintf(word, sizeof word, " %s ", q->outcome); /* a whole word of the list, not a part of one */
	if ((q->has & HQ_OUTCOME) && !strstr(" approved rejected answered selected denied timeout cancelled ", word))
		abort();
	if ((q->has & HQ_RULE) && (q->rule < 1 || q->rule > PROTO_HIST_RULE_MAX))
		abort();
	if ((q->has & HQ_SINCE && q->since > PROTO_HIST_TIME_MAX) ||
	    (q->has & HQ_UNTIL && q->until > PROTO_HIST_TIME_MAX))
		abort();
	if ((q->has & HQ_SINCE) && (q->has & HQ_UNTIL) && q->since > q->until)
		abort();
	if (proof != !!(q->has & HQ_SEQ) || q->seq > PROTO_SEQ_MAX || (proof && (q->has & ~HQ_SEQ)))
		abort();
}

static void check_why(const char *why)
{
	size_t n = strnlen(why, HISTQ_WHY_MAX);
	if (n == 0 || n == HISTQ_WHY_MAX)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)why[i] < 0x20 || (unsigned char)why[i] >= 0x7f)
			abort();
	static const char *const starts[] = {"who ",   "outcome ", "audience ",		  "rule ", "since ", "until ",
					     "limit ", "seq ",	   "unknown parameter \""};
	for (size_t i = 0; i < sizeof starts / sizeof *starts; i++)
		if (!strncmp(why, starts[i], strlen(starts[i])))
			return;
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4096)
		return 0;
	int proof = data[0] & 1;
	struct histq q;
	char why[HISTQ_WHY_MAX];
	memset(why, 'x', sizeof why);
	histq_init(&q);
	int rc = 0;
	for (size_t i = 1; i < size && rc == 0;) {
		const uint8_t *amp = memchr(data + i, '&', size - i);
		size_t end = amp ? (size_t)(amp - data) : size;
		const uint8_t *eq = memchr(data + i, '=', end - i);
		size_t kend = eq ? (size_t)(eq - data) : end;
		char *k = dup_n(data + i, kend - i), *v = eq ? dup_n(eq + 1, end - kend - 1) : NULL;
		rc = histq_arg(&q, proof, k, v, why);
		free(k);
		free(v);
		i = end + 1;
	}
	if (rc == 0)
		rc = histq_done(&q, proof, why);
	if (rc == 0)
		check_ok(&q, proof);
	else
		check_why(why);
	return 0;
}
