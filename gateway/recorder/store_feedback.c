/* The call records' tables (store.h), QA reports: adding, linking to the calls that preceded
 * them, listing, counting, moving along their statuses, deleting and showing; and reading events
 * (events_for). The schema and the queries' texts are store.c's (store_int.h: what the store's
 * files share). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/recorder/store_int.h"
#include "common/util.h"

#define DAY_MS 86400000LL

/* ---- rows as JSON ---- */

/* Rows to JSON objects, each column by its kind. */
enum jt { J_TEXT, J_INT, J_REAL, J_TS, J_JSON };
struct jcol {
	const char *name;
	enum jt t;
};
struct jrows {
	const struct jcol *spec;
	size_t n;
	json_t *arr;
};

static json_t *jvalue(enum jt t, const char *v)
{
	if (!v)
		return json_null();
	switch (t) {
	case J_INT:
		return json_integer(strtoll(v, NULL, 10));
	case J_REAL: {
		double x = strtod(v, NULL);
		return isfinite(x) ? json_real(x) : json_null();
	}
	case J_TS: {
		int64_t ms;
		char iso[DB_TS_LEN];
		if (db_ts_parse(v, &ms) < 0)
			return json_string(v);
		db_ts_iso(ms, iso);
		return json_string(iso);
	}
	case J_JSON: {
		json_t *j = json_loads(v, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		return j ? j : json_string(v);
	}
	default:
		return json_string(v);
	}
}

static int row_json(void *ctx, const char *const *cols, size_t ncols)
{
	struct jrows *j = ctx;
	json_t *o = json_object();
	if (!o)
		return AS_ENOMEM;
	for (size_t i = 0; i < j->n && i < ncols; i++) {
		json_t *v = jvalue(j->spec[i].t, cols[i]);
		if (!v)
			v = json_string_nocheck(cols[i]); /* not UTF-8 (SQLite keeps any bytes) */
		if (json_object_set_new(o, j->spec[i].name, v ? v : json_null()) < 0) {
			json_decref(o);
			return AS_ENOMEM;
		}
	}
	if (json_array_append_new(j->arr, o) < 0)
		return AS_ENOMEM;
	return 0;
}

static const struct jcol fb_spec[] = {
    {"id", J_INT},	  {"type", J_TEXT},	   {"title", J_TEXT},	  {"description", J_TEXT},
    {"contact", J_TEXT},  {"status", J_TEXT},	   {"created_at", J_TS},  {"updated_at", J_TS},
    {"user_sub", J_TEXT}, {"caller_kind", J_TEXT}, {"client_id", J_TEXT}, {"session_id", J_TEXT},
};

/* ---- QA reports ---- */

static const char *const fb_types[] = {"bug", "feature", "improvement", "question"};
static const char *const fb_statuses[] = {"open", "in_progress", "resolved", "closed"};

static int index_of(const char *const *set, size_t n, const char *v)
{
	for (size_t i = 0; v && i < n; i++)
		if (!strcmp(set[i], v))
			return (int)i;
	return -1;
}

int store_feedback_add(struct store *st, const struct store_feedback *f, int64_t *id, char *err)
{
	*id = 0;
	if (index_of(fb_types, N(fb_types), f->type) < 0)
		return as_fail(err, AS_EINVAL,
			       "feedback type \"%.32s\" is not one of bug, feature, improvement, question",
			       f->type ? f->type : "(none)");
	if (!f->title || !*f->title || !f->description || !*f->description)
		return as_fail(err, AS_EINVAL, "feedback needs a title and a description");
	char ts[DB_TS_LEN];
	db_ts(st->d, f->created_ms, ts);
	struct owned o = {0};
	const char *raw[] = {f->type,	  f->title,	  f->description, f->contact,	ts,
			     f->user_sub, f->caller_kind, f->client_id,	  f->session_id};
	const char *p[N(raw)];
	for (size_t i = 0; i < N(raw); i++) {
		p[i] = raw[i];
		if (db_kind(st->d) != DB_SQLITE && store_pg_clean(raw[i], 0, &o, &p[i]) < 0) {
			store_owned_free(&o);
			return as_fail(err, AS_ENOMEM, "out of memory adding feedback");
		}
	}
	int rc = db_query(st->d, st->q[Q_FB_ADD], p, N(p), store_row_int, id, err);
	store_owned_free(&o);
	if (rc == 0 && *id <= 0)
		rc = as_fail(err, AS_EIO, "the database returned no id for the new feedback");
	return rc;
}

struct one_text {
	char v[32];
	int found;
};

static int row_text(void *ctx, const char *const *cols, size_t ncols)
{
	struct one_text *t = ctx;
	t->found = 1;
	snprintf(t->v, sizeof t->v, "%s", ncols && cols[0] ? cols[0] : "");
	return 0;
}

struct link_row {
	int64_t id, ms;
	char *call_id;
	const char *rule;
};
struct link_set {
	struct link_row rows[STORE_LINKS_MAX];
	size_t n, max;
	const char *rule;
};

static int row_link(void *ctx, const char *const *cols, size_t ncols)
{
	struct link_set *s = ctx;
	if (ncols < 3 || !cols[1] || s->n >= s->max)
		return 0;
	struct link_row *r = &s->rows[s->n];
	r->id = cols[0] ? strtoll(cols[0], NULL, 10) : 0;
	if (db_ts_parse(cols[2], &r->ms) < 0)
		r->ms = 0;
	if (!(r->call_id = strdup(cols[1])))
		return AS_ENOMEM;
	r->rule = s->rule;
	s->n++;
	return 0;
}

static int link_cmp(const void *a, const void *b)
{
	const struct link_row *x = a, *y = b;
	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The links of report idt (text): the calls of session_id, then of user_sub in the window,
 * at most max, replacing its links (all of them, or with mine set only those of this caller's
 * calls: an outside report's id is shared by whoever links under it). */
static int link_calls(struct store *st, const char *idt, const char *session_id, const char *user_sub,
		      int64_t window_ms, int64_t now_ms, size_t max, int mine, size_t *linked, char *err)
{
	char now[DB_TS_LEN], since[DB_TS_LEN], room[24];
	db_ts(st->d, now_ms, now);
	db_ts(st->d, now_ms - (window_ms > 0 ? window_ms : 0), since);
	int rc = 0;
	struct link_set s = {.n = 0, .max = max && max < STORE_LINKS_MAX ? max : STORE_LINKS_MAX};
	if (session_id) {
		s.rule = "session";
		const char *p[] = {session_id, now};
		rc = db_query(st->d, st->q[Q_LINK_SESSION], p, 2, row_link, &s, err);
	}
	if (rc == 0 && user_sub && window_ms > 0 && s.n < s.max) {
		s.rule = "user_window";
		snprintf(room, sizeof room, "%zu", s.max - s.n);
		const char *p[] = {user_sub, since, now, session_id, room};
		rc = db_query(st->d, st->q[Q_LINK_USER], p, 5, row_link, &s, err);
	}
	if (rc == 0) {
		qsort(s.rows, s.n, sizeof s.rows[0], link_cmp);
		rc = db_begin(st->d, err);
		const char *pc[] = {idt, user_sub, session_id};
		if (rc == 0)
			rc =
			    db_exec(st->d, st->q[mine ? Q_LINK_CLEAR_MINE : Q_LINK_CLEAR], pc, mine ? 3 : 1, NULL, err);
		for (size_t i = 0; rc == 0 && i < s.n; i++) {
			char pos[24];
			snprintf(pos, sizeof pos, "%zu", i + 1);
			const char *p[] = {idt, s.rows[i].call_id, pos, s.rows[i].rule};
			rc = db_exec(st->d, st->q[Q_LINK_ADD], p, 4, NULL, err);
		}
		if (rc == 0)
			rc = db_commit(st->d, err);
		if (rc < 0)
			db_rollback(st->d);
	}
	for (size_t i = 0; i < s.n; i++)
		free(s.rows[i].call_id);
	if (rc == 0 && linked)
		*linked = s.n;
	return rc;
}

int store_link(struct store *st, int64_t id, const char *session_id, const char *user_sub, int64_t window_ms,
	       int64_t now_ms, size_t *linked, char *err)
{
	if (linked)
		*linked = 0;
	char idt[24];
	snprintf(idt, sizeof idt, "%lld", (long long)id);
	const char *pid[] = {idt};
	struct one_text cur = {.found = 0};
	GUARD(db_query(st->d, st->q[Q_FB_STATUS], pid, 1, row_text, &cur, err));
	if (!cur.found)
		return as_fail(err, AS_ENOTFOUND, "no feedback %lld", (long long)id);
	return link_calls(st, idt, session_id, user_sub, window_ms, now_ms, STORE_LINKS_MAX, 0, linked, err);
}

int store_link_ref(struct store *st, const char *ref, const char *session_id, const char *user_sub, int64_t window_ms,
		   int64_t now_ms, size_t max, size_t *linked, char *err)
{
	if (linked)
		*linked = 0;
	size_t n = ref ? strlen(ref) : 0;
	if (!n || n > STORE_REF_MAX)
		return as_fail(err, AS_EINVAL, "feedback_id: 1 to %d bytes", STORE_REF_MAX);
	if (strspn(ref, "0123456789") == n)
		return as_fail(err, AS_EINVAL,
			       "feedback_id \"%.32s\": digits alone name assent's own reports (qa_submit_feedback's "
			       "ids); give yours a prefix, such as ext-%.32s",
			       ref, ref);
	if (!session_id && !user_sub)
		return as_fail(err, AS_EINVAL, "a caller with neither a session nor a name has no calls to link");
	return link_calls(st, ref, session_id, user_sub, window_ms, now_ms, max, 1, linked, err);
}

int store_feedback_list(struct store *st, const char *type, const char *status, size_t offset, size_t limit,
			json_t **out, char *err)
{
	*out = NULL;
	if (type && index_of(fb_types, N(fb_types), type) < 0)
		return as_fail(err, AS_EINVAL,
			       "feedback type \"%.32s\" is not one of bug, feature, improvement, question", type);
	if (status && index_of(fb_statuses, N(fb_statuses), status) < 0)
		return as_fail(err, AS_EINVAL,
			       "feedback status \"%.32s\" is not one of open, in_progress, resolved, closed", status);
	if (limit == 0)
		limit = STORE_LIST_LIMIT;
	if (limit > STORE_LIST_MAX)
		return as_fail(err, AS_EINVAL, "a feedback page of %zu: at most %d", limit, STORE_LIST_MAX);
	if (offset > INT64_MAX)
		return as_fail(err, AS_EINVAL, "feedback offset %zu is too large", offset);
	char lim[24], off[24];
	snprintf(lim, sizeof lim, "%zu", limit);
	snprintf(off, sizeof off, "%zu", offset);
	const char *p[] = {type, status, lim, off};
	int64_t total = 0;
	GUARD(db_query(st->d, st->q[Q_FB_COUNT], p, 2, store_row_int, &total, err));
	struct jrows j = {fb_spec, N(fb_spec), json_array()};
	if (!j.arr)
		return as_fail(err, AS_ENOMEM, "out of memory listing feedback");
	int rc = db_query(st->d, st->q[Q_FB_LIST], p, 4, row_json, &j, err);
	if (rc < 0) {
		json_decref(j.arr);
		return rc;
	}
	*out = json_pack("{s:o, s:I, s:I, s:I}", "items", j.arr, "total", (json_int_t)total, "offset",
			 (json_int_t)offset, "limit", (json_int_t)limit);
	return *out ? 0 : as_fail(err, AS_ENOMEM, "out of memory listing feedback");
}

/* Counts by a column into an object (its keys already there with 0: zeros). */
static int row_count(void *ctx, const char *const *cols, size_t ncols)
{
	json_t *o = ctx;
	if (ncols < 2 || !cols[0])
		return 0;
	return json_object_set_new(o, cols[0], json_integer(cols[1] ? strtoll(cols[1], NULL, 10) : 0)) < 0 ? AS_ENOMEM
													   : 0;
}

static json_t *zeros(const char *const *set, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < n; i++)
		if (json_object_set_new(o, set[i], json_integer(0)) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

int store_feedback_stats(struct store *st, int64_t now_ms, json_t **out, char *err)
{
	*out = NULL;
	int64_t total = 0, recent = 0;
	char since[DB_TS_LEN];
	db_ts(st->d, now_ms - 7 * DAY_MS, since);
	const char *p[] = {since};
	json_t *by_type = zeros(fb_types, N(fb_types)), *by_status = zeros(fb_statuses, N(fb_statuses));
	const char *none[] = {NULL, NULL};
	int rc = by_type && by_status ? 0 : as_fail(err, AS_ENOMEM, "out of memory counting feedback");
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_COUNT], none, 2, store_row_int, &total, err);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_BY_TYPE], NULL, 0, row_count, by_type, err);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_BY_STATUS], NULL, 0, row_count, by_status, err);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_SINCE], p, 1, store_row_int, &recent, err);
	if (rc < 0) {
		json_decref(by_type);
		json_decref(by_status);
		return rc;
	}
	*out = json_pack("{s:I, s:o, s:o, s:I}", "total", (json_int_t)total, "by_type", by_type, "by_status", by_status,
			 "last_7_days", (json_int_t)recent);
	return *out ? 0 : as_fail(err, AS_ENOMEM, "out of memory counting feedback");
}

int store_feedback_status(struct store *st, int64_t id, const char *status, int64_t now_ms, char *err)
{
	int want = index_of(fb_statuses, N(fb_statuses), status);
	if (want < 0)
		return as_fail(err, AS_EINVAL,
			       "feedback status \"%.32s\" is not one of open, in_progress, resolved, closed",
			       status ? status : "(none)");
	char idt[24], ts[DB_TS_LEN];
	snprintf(idt, sizeof idt, "%lld", (long long)id);
	const char *pid[] = {idt};
	struct one_text cur = {.found = 0};
	GUARD(db_query(st->d, st->q[Q_FB_STATUS], pid, 1, row_text, &cur, err));
	if (!cur.found)
		return as_fail(err, AS_ENOTFOUND, "no feedback %lld", (long long)id);
	int now = index_of(fb_statuses, N(fb_statuses), cur.v);
	if (now < 0 || want != now + 1) {
		const char *next = now >= 0 && now + 1 < (int)N(fb_statuses) ? fb_statuses[now + 1] : NULL;
		if (next)
			return as_fail(err, AS_EINVAL, "feedback %lld is %s: it can only move to %s, not to %s",
				       (long long)id, cur.v, next, status);
		return as_fail(err, AS_EINVAL, "feedback %lld is %.32s: it can move no further", (long long)id, cur.v);
	}
	db_ts(st->d, now_ms, ts);
	const char *p[] = {status, ts, idt, cur.v};
	int64_t n = 0;
	GUARD(db_exec(st->d, st->q[Q_FB_SET_STATUS], p, 4, &n, err));
	if (n != 1)
		return as_fail(err, AS_EINVAL, "feedback %lld changed status while this moved it; try again",
			       (long long)id);
	return 0;
}

int store_feedback_delete(struct store *st, int64_t id, char *err)
{
	char idt[24];
	snprintf(idt, sizeof idt, "%lld", (long long)id);
	const char *p[] = {idt};
	int64_t n = 0;
	/* The report's links go with it (its calls may then be pruned). */
	int rc = db_begin(st->d, err);
	if (rc == 0)
		rc = db_exec(st->d, st->q[Q_LINK_CLEAR], p, 1, NULL, err);
	if (rc == 0)
		rc = db_exec(st->d, st->q[Q_FB_DELETE], p, 1, &n, err);
	if (rc == 0 && n == 0)
		rc = as_fail(err, AS_ENOTFOUND, "no feedback %lld", (long long)id);
	if (rc == 0)
		rc = db_commit(st->d, err);
	if (rc < 0)
		db_rollback(st->d);
	return rc;
}

static const struct jcol link_spec[] = {
    {"position", J_INT},       {"rule", J_TEXT},     {"call_id", J_TEXT},
    {"tool", J_TEXT},	       {"outcome", J_TEXT},  {"error_type", J_TEXT},
    {"error_message", J_TEXT}, {"started_at", J_TS}, {"duration_ms", J_REAL},
};

int store_feedback_show(struct store *st, int64_t id, json_t **out, char *err)
{
	*out = NULL;
	char idt[24];
	snprintf(idt, sizeof idt, "%lld", (long long)id);
	const char *p[] = {idt};
	struct jrows fb = {fb_spec, N(fb_spec), json_array()};
	struct jrows calls = {link_spec, N(link_spec), json_array()};
	int rc = fb.arr && calls.arr ? 0 : as_fail(err, AS_ENOMEM, "out of memory reading feedback %s", idt);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_GET], p, 1, row_json, &fb, err);
	if (rc == 0 && json_array_size(fb.arr) == 0)
		rc = as_fail(err, AS_ENOTFOUND, "no feedback %s", idt);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_CALLS], p, 1, row_json, &calls, err);
	if (rc == 0) {
		*out = json_pack("{s:O, s:O}", "feedback", json_array_get(fb.arr, 0), "calls", calls.arr);
		if (!*out)
			rc = as_fail(err, AS_ENOMEM, "out of memory reading feedback %s", idt);
	}
	json_decref(fb.arr);
	json_decref(calls.arr);
	return rc;
}

/* ---- events ---- */

static const struct jcol event_spec[] = {
    {"id", J_INT},	   {"occurred_at", J_TS},      {"kind", J_TEXT},     {"key", J_TEXT},
    {"call_id", J_TEXT},   {"session_id", J_TEXT},     {"user_sub", J_TEXT}, {"caller_kind", J_TEXT},
    {"client_id", J_TEXT}, {"server_version", J_TEXT}, {"attrs", J_JSON},
};

static const char *events_text(struct store *st, size_t nkinds)
{
	if (st->events_q[nkinds])
		return st->events_q[nkinds];
	struct sb s = {0};
	buf_init(&s.b, SQL_MAX);
	const char *cols = "id, occurred_at, kind, \"key\", call_id, session_id, user_sub, caller_kind, client_id, "
			   "server_version, attrs";
	store_sb_add(&s, "SELECT ");
	store_sb_add(&s, cols);
	store_sb_add(&s, " FROM (SELECT ");
	store_sb_add(&s, cols);
	store_sb_addf(&s, " FROM %s WHERE \"key\" = $1 AND (CAST($3 AS TEXT) IS NULL OR user_sub = $3)",
		      st->name[TB_EVENTS]);
	for (size_t i = 0; i < nkinds; i++)
		store_sb_addf(&s, "%s$%zu", i ? ", " : " AND kind IN (", i + 4);
	store_sb_add(&s, nkinds ? ")" : "");
	store_sb_add(&s,
		     " ORDER BY occurred_at DESC, id DESC LIMIT CAST($2 AS BIGINT)) recent ORDER BY occurred_at, id");
	return st->events_q[nkinds] = store_sb_done(&s);
}

int store_events_for(struct store *st, const char *key, const char *by, const char *const *kinds, size_t nkinds,
		     size_t limit, json_t **out, char *err)
{
	*out = NULL;
	if (!key)
		return as_fail(err, AS_EINVAL, "events_for needs a key");
	if (nkinds > STORE_EVENT_KINDS_MAX)
		return as_fail(err, AS_EINVAL, "%zu event kinds: at most %d", nkinds, STORE_EVENT_KINDS_MAX);
	if (limit == 0)
		limit = STORE_EVENTS_LIMIT;
	if (limit > STORE_EVENTS_MAX)
		return as_fail(err, AS_EINVAL, "an events limit of %zu: at most %d", limit, STORE_EVENTS_MAX);
	const char *sql = events_text(st, nkinds);
	if (!sql)
		return as_fail(err, AS_ENOMEM, "out of memory reading events");
	char lim[24];
	snprintf(lim, sizeof lim, "%zu", limit);
	const char *p[3 + STORE_EVENT_KINDS_MAX] = {key, lim, by};
	for (size_t i = 0; i < nkinds; i++) {
		if (!kinds[i])
			return as_fail(err, AS_EINVAL, "event kind %zu is missing", i);
		p[3 + i] = kinds[i];
	}
	struct jrows j = {event_spec, N(event_spec), json_array()};
	if (!j.arr)
		return as_fail(err, AS_ENOMEM, "out of memory reading events");
	int rc = db_query(st->d, sql, p, 3 + nkinds, row_json, &j, err);
	if (rc < 0) {
		json_decref(j.arr);
		return rc;
	}
	*out = j.arr;
	return 0;
}
