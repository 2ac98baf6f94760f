/* Resumable SSE answers on the agent listener (sseresume.h). */
#include "gateway/worker/mcp/sseresume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends event text (its id already in it) to s's log, remembering where it starts. */
static int log_event(struct sse_stream *s, const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn)
{
	if (s->nev == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		size_t *off = realloc(s->off, cap * sizeof *off);
		if (!off)
			return -1;
		s->off = off;
		s->cap = cap;
	}
	size_t at = s->log.len;
	if (buf_put(&s->log, a, an) != 0 || buf_put(&s->log, b, bn) != 0 || buf_put(&s->log, c, cn) != 0) {
		s->log.len = at;
		return -1;
	}
	s->off[s->nev++] = at;
	return 0;
}

/* The last event of s's log, to out too (whole or not at all). */
static int copy_last(const struct sse_stream *s, struct buf *out)
{
	size_t at = s->off[s->nev - 1];
	return out ? buf_put(out, s->log.p + at, s->log.len - at) : 0;
}

struct sse_stream *sse_open(struct sse_set *set, uint64_t conn, const char *rid, struct buf *out)
{
	if (set->n >= SSE_STREAMS_MAX)
		return NULL;
	struct sse_stream *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->no = ++set->next_no;
	s->conn = conn;
	snprintf(s->rid, sizeof s->rid, "%s", rid);
	buf_init(&s->log, SSE_LOG_MAX);
	char ev[96];
	int k = snprintf(ev, sizeof ev, "id: %llu-0\nretry: %u\ndata: \n\n", (unsigned long long)s->no,
			 (unsigned)SSE_RETRY_MS);
	if (log_event(s, ev, (size_t)k, "", 0, "", 0) != 0 || copy_last(s, out) != 0) {
		buf_free(&s->log);
		free(s->off);
		free(s);
		return NULL;
	}
	s->held = 1;
	s->next = set->head;
	set->head = s;
	set->n++;
	return s;
}

int sse_put(struct sse_stream *s, const char *json, size_t n, struct buf *out)
{
	char id[64];
	int k =
	    snprintf(id, sizeof id, "id: %llu-%u\nevent: message\ndata: ", (unsigned long long)s->no, (unsigned)s->nev);
	if (s->nev == UINT32_MAX || log_event(s, id, (size_t)k, json, n, "\n\n", 2) != 0)
		return -1;
	/* a client that does not read: its request ends; the event stays in the log for a resume */
	return copy_last(s, out) != 0 ? -1 : 0;
}

struct sse_stream *sse_parked(struct sse_set *set, uint64_t conn, const char *rid, size_t ridn)
{
	for (struct sse_stream *s = set->head; s; s = s->next)
		if (!s->held && s->conn == conn && strlen(s->rid) == ridn && !memcmp(s->rid, rid, ridn))
			return s;
	return NULL;
}

int sse_has_conn(const struct sse_set *set, uint64_t conn)
{
	for (const struct sse_stream *s = set->head; s; s = s->next)
		if (s->conn == conn)
			return 1;
	return 0;
}

void sse_park(struct sse_stream *s, uint64_t now)
{
	s->held = 0;
	s->deadline = now + SSE_GRACE_MS;
}

struct sse_stream *sse_resume(struct sse_set *set, uint64_t conn, uint64_t no, uint32_t seq, struct buf *out,
			      unsigned *status, char *why, size_t whyn)
{
	*status = 400;
	struct sse_stream *s = set->head;
	while (s && s->no != no)
		s = s->next;
	/* Another session's stream is answered as one that does not exist: ids tell nothing. */
	if (!s || s->conn != conn || seq >= s->nev) {
		snprintf(why, whyn,
			 "Last-Event-ID %llu-%u is not an event of this session's streams (unknown, another "
			 "session's, or its call ended over %u s ago)",
			 (unsigned long long)no, (unsigned)seq, (unsigned)(SSE_GRACE_MS / 1000));
		return NULL;
	}
	if (s->held) {
		*status = 409;
		snprintf(why, whyn, "the stream of Last-Event-ID %llu-%u is being read by another request",
			 (unsigned long long)no, (unsigned)seq);
		return NULL;
	}
	size_t at = seq + 1 < s->nev ? s->off[seq + 1] : s->log.len;
	buf_reset(out);
	if (buf_put(out, s->log.p + at, s->log.len - at) != 0) {
		*status = 500;
		snprintf(why, whyn, "the events after Last-Event-ID %llu-%u are too many to send",
			 (unsigned long long)no, (unsigned)seq);
		return NULL;
	}
	s->held = 1;
	s->deadline = 0;
	return s;
}

void sse_close(struct sse_set *set, struct sse_stream *s)
{
	for (struct sse_stream **p = &set->head; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			set->n--;
			break;
		}
	buf_free(&s->log);
	free(s->off);
	free(s);
}

void sse_expire(struct sse_set *set, uint64_t now, void (*gone)(void *arg, uint64_t conn, const char *rid), void *arg)
{
	struct sse_stream *s = set->head;
	while (s) {
		struct sse_stream *next = s->next;
		if (!s->held && now >= s->deadline) {
			if (!s->done && gone)
				gone(arg, s->conn, s->rid);
			sse_close(set, s);
		}
		s = next;
	}
}

void sse_drop_conn(struct sse_set *set, uint64_t conn)
{
	struct sse_stream *s = set->head;
	while (s) {
		struct sse_stream *next = s->next;
		if (s->conn == conn)
			sse_close(set, s);
		s = next;
	}
}

/* One decimal number of at most maxd digits, no leading zero unless it is 0. */
static int number(const char **p, int maxd, uint64_t *v)
{
	const char *s = *p;
	int d = 0;
	*v = 0;
	while (s[d] >= '0' && s[d] <= '9' && d < maxd)
		*v = *v * 10 + (uint64_t)(s[d++] - '0');
	if (d == 0 || (d > 1 && s[0] == '0') || (s[d] >= '0' && s[d] <= '9'))
		return -1;
	*p = s + d;
	return 0;
}

int sse_id_parse(const char *s, uint64_t *no, uint32_t *seq)
{
	uint64_t q;
	if (!s || number(&s, 19, no) != 0 || *s++ != '-' || number(&s, 10, &q) != 0 || *s || q > UINT32_MAX)
		return -1;
	*seq = (uint32_t)q;
	return 0;
}
