/* The call records' tables (store.h), writing: calls and events in batches of multi-row INSERTs,
 * their texts made storable for PostgreSQL and MySQL, and pruning what is older than a cutoff;
 * the schema and the queries' texts are store.c's (store_int.h: what the store's files share). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/recorder/store_int.h"
#include "common/cbor.h"
#include "common/text.h"
#include "common/util.h"

/* ---- writing ---- */

void store_owned_free(struct owned *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->p[i]);
	free(o->p);
	o->p = NULL;
	o->n = o->cap = 0;
}

int store_pg_clean(const char *s, int json, struct owned *o, const char **out)
{
	*out = s;
	if (!s)
		return 0;
	size_t n = strlen(s);
	int bad = !utf8_valid((const uint8_t *)s, n);
	if (!bad && !(json && strstr(s, "\\u0000")))
		return 0;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 16;
		char **p = realloc(o->p, cap * sizeof *p);
		if (!p)
			return AS_ENOMEM;
		o->p = p;
		o->cap = cap;
	}
	char *c = malloc(3 * n + 1);
	if (!c)
		return AS_ENOMEM;
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		if (json && s[i] == '\\' && i + 1 < n && (unsigned char)s[i + 1] < 0x80) {
			if (s[i + 1] == 'u' && !strncmp(s + i + 2, "0000", 4)) {
				memcpy(c + w, "\\ufffd", 6);
				w += 6;
				i += 6;
			} else {
				c[w++] = s[i++];
				c[w++] = s[i++];
			}
			continue;
		}
		size_t len;
		if (text_cp((const uint8_t *)s, n, i, &len) == TEXT_BAD_BYTE) {
			memcpy(c + w, "\xef\xbf\xbd", 3);
			w += 3;
			i++;
			continue;
		}
		memcpy(c + w, s + i, len);
		w += len;
		i += len;
	}
	c[w] = 0;
	o->p[o->n++] = c;
	*out = c;
	return 0;
}

/* The numbers of one call, as text. */
struct call_text {
	char ts[DB_TS_LEN], dur[32], args[24], res[24], seq[24], rate[32];
};

static const char *num_real(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		return NULL;
	snprintf(buf, n, "%.17g", v);
	return buf;
}

static const char *num_int(char *buf, size_t n, int64_t v, int64_t none)
{
	if (v == none)
		return NULL;
	snprintf(buf, n, "%lld", (long long)v);
	return buf;
}

static int call_params(struct store *st, const struct rec_call *c, struct call_text *t, const char **v, struct owned *o)
{
	db_ts(st->d, c->started_ms, t->ts);
	const char *const text[CALL_NCOLS] = {
	    c->call_id,
	    c->tool,
	    c->upstream,
	    t->ts,
	    num_real(t->dur, sizeof t->dur, c->duration_ms),
	    c->outcome,
	    c->ok ? "1" : "0",
	    c->error_type,
	    c->error_message,
	    c->session_id,
	    c->request_id,
	    c->user_sub,
	    c->caller_kind,
	    c->client_id,
	    c->identity,
	    num_int(t->args, sizeof t->args, c->args_size, -1),
	    num_int(t->res, sizeof t->res, c->result_size, -1),
	    c->arguments,
	    c->result,
	    c->decision,
	    c->rule,
	    num_int(t->seq, sizeof t->seq, c->ledger_seq, -1),
	    c->sample_rate > 0 ? num_real(t->rate, sizeof t->rate, c->sample_rate) : NULL,
	    c->server_version,
	    c->extra,
	};
	for (size_t i = 0; i < CALL_NCOLS; i++) {
		v[i] = text[i];
		if (db_kind(st->d) != DB_SQLITE)
			GUARD(store_pg_clean(text[i], store_calls_cols[i + 1].type == T_JSON, o, &v[i]));
	}
	return 0;
}

static int event_params(struct store *st, const struct rec_event *e, char ts[DB_TS_LEN], const char **v,
			struct owned *o)
{
	db_ts(st->d, e->occurred_ms, ts);
	const char *const text[EVENT_NCOLS] = {
	    ts,		 e->kind,	 e->key,       e->call_id,	  e->session_id,
	    e->user_sub, e->caller_kind, e->client_id, e->server_version, e->attrs};
	for (size_t i = 0; i < EVENT_NCOLS; i++) {
		v[i] = text[i];
		if (db_kind(st->d) != DB_SQLITE)
			GUARD(store_pg_clean(text[i], store_events_cols[i + 1].type == T_JSON, o, &v[i]));
	}
	return 0;
}

/* The index in store_insert_sizes of the largest statement for left rows. */
static size_t insert_size(size_t left)
{
	size_t k = 0;
	while (store_insert_sizes[k] > left)
		k++;
	return k;
}

static int write_calls(struct store *st, const struct rec_call *calls, size_t n, char *err)
{
	const char **v = calloc((size_t)INSERT_ROWS * CALL_NCOLS, sizeof *v);
	struct call_text *t = calloc(INSERT_ROWS, sizeof *t);
	struct owned o = {0};
	int rc = v && t ? db_begin(st->d, err) : as_fail(err, AS_ENOMEM, "out of memory writing %zu calls", n);
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t k = insert_size(n - i), rows = store_insert_sizes[k];
		for (size_t r = 0; rc == 0 && r < rows; r++) {
			if (!calls[i + r].call_id || !calls[i + r].tool || !calls[i + r].outcome)
				rc = as_fail(err, AS_EINVAL, "call record %zu has no call_id, tool or outcome", i + r);
			else if (call_params(st, &calls[i + r], &t[r], v + r * CALL_NCOLS, &o) < 0)
				rc = as_fail(err, AS_ENOMEM, "out of memory writing %zu calls", n);
		}
		if (rc == 0)
			rc = db_exec(st->d, st->ins_calls[k], v, rows * CALL_NCOLS, NULL, err);
		store_owned_free(&o);
		i += rows;
	}
	if (rc == 0)
		rc = db_commit(st->d, err);
	if (rc < 0 && v && t)
		db_rollback(st->d);
	free(v);
	free(t);
	return rc;
}

static int write_events(struct store *st, const struct rec_event *ev, size_t n, char *err)
{
	const char **v = calloc((size_t)INSERT_ROWS * EVENT_NCOLS, sizeof *v);
	char(*ts)[DB_TS_LEN] = calloc(INSERT_ROWS, sizeof *ts);
	struct owned o = {0};
	int rc = v && ts ? db_begin(st->d, err) : as_fail(err, AS_ENOMEM, "out of memory writing %zu events", n);
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t k = insert_size(n - i), rows = store_insert_sizes[k];
		for (size_t r = 0; rc == 0 && r < rows; r++) {
			if (!ev[i + r].kind)
				rc = as_fail(err, AS_EINVAL, "event %zu has no kind", i + r);
			else if (event_params(st, &ev[i + r], ts[r], v + r * EVENT_NCOLS, &o) < 0)
				rc = as_fail(err, AS_ENOMEM, "out of memory writing %zu events", n);
		}
		if (rc == 0)
			rc = db_exec(st->d, st->ins_events[k], v, rows * EVENT_NCOLS, NULL, err);
		store_owned_free(&o);
		i += rows;
	}
	if (rc == 0)
		rc = db_commit(st->d, err);
	if (rc < 0 && v && ts)
		db_rollback(st->d);
	free(v);
	free(ts);
	return rc;
}

int store_write(struct store *st, const struct rec_call *calls, size_t ncalls, const struct rec_event *events,
		size_t nevents, char *err)
{
	if (ncalls)
		GUARD(write_calls(st, calls, ncalls, err));
	if (nevents) {
		char e[AS_ERRLEN];
		int rc = write_events(st, events, nevents, e);
		if (rc < 0)
			return as_fail(err, rc, "events (the calls are stored): %s", e);
	}
	return 0;
}

int store_prune(struct store *st, int64_t cutoff_ms, int64_t *calls_deleted, int64_t *events_deleted, char *err)
{
	int64_t nc = 0, ne = 0, got;
	char ts[DB_TS_LEN];
	db_ts(st->d, cutoff_ms, ts);
	const char *p[] = {ts};
	int rc = 0;
	/* Each DELETE is a transaction of its own, so no lock is held longer than one batch. */
	do {
		got = 0;
		rc = db_exec(st->d, st->q[Q_PRUNE_CALLS], p, 1, &got, err);
		nc += got;
	} while (rc == 0 && got >= STORE_PRUNE_BATCH);
	while (rc == 0) {
		got = 0;
		rc = db_exec(st->d, st->q[Q_PRUNE_EVENTS], p, 1, &got, err);
		ne += got;
		if (got < STORE_PRUNE_BATCH)
			break;
	}
	if (calls_deleted)
		*calls_deleted = nc;
	if (events_deleted)
		*events_deleted = ne;
	return rc;
}
