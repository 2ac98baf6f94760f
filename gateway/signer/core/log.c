/* The signer's log lines (stderr, by level) and the security events it records. */
#define _GNU_SOURCE
#include "gateway/signer/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t now_ms(void)
{
	return now_unix_ms();
}

/* FEEDBACK_LOG_LEVEL: DEBUG, INFO (the default), WARNING or ERROR, any case. Security
 * events are written whatever it says. */
int log_min = 1; /* the lowest level logged (FEEDBACK_LOG_LEVEL); requests.c drops workers' lines below it */

int log_rank(const char *level)
{
	static const char *const names[] = {"debug", "info", "warning", "error"};
	for (int k = 0; k < 4; k++)
		if (!strcasecmp(level, names[k]))
			return k;
	if (!strcasecmp(level, "warn"))
		return 2;
	return !strcmp(level, "security") ? 9 : -1;
}

static void log_line(const char *level, const char *worker, const char *msg)
{
	json_t *j =
	    json_pack("{s:I,s:s,s:s?,s:s}", "ts", (json_int_t)now_ms(), "level", level, "worker", worker, "msg", msg);
	char *s = json_dumps(j, JSON_COMPACT);
	fprintf(stderr, "%s\n", s ? s : msg);
	free(s);
	json_decref(j);
}

/* A jailed worker's line: its own level (debug, info, warning or error; anything else, a
 * "security" too, is written as a warning: a worker's word never makes a security event) and
 * which worker said it. */
void wlog_line(const char *level, const char *worker, const char *msg)
{
	int rank = log_rank(level);
	static const char *const names[] = {"debug", "info", "warning", "error"};
	const char *lv = rank >= 0 && rank < 4 ? names[rank] : "warning";
	if ((rank >= 0 && rank < 4 ? rank : 2) < log_min)
		return;
	log_line(lv, worker, msg);
}

void slog(const char *level, const char *fmt, ...)
{
	int rank = log_rank(level);
	if (rank >= 0 && rank < log_min)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_line(level, NULL, msg);
}

void lim_log(struct signer *s, enum lim_kind k, const char *fmt, ...)
{
	uint64_t more = 0;
	if (!lim_hit(&s->lim, k, now_ms(), &more))
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (more)
		slog("warning", "limit: %s (and %llu more times since the last such line)", msg,
		     (unsigned long long)more);
	else
		slog("warning", "limit: %s", msg);
}
