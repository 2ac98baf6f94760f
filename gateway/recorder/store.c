/* The call records' tables (store.h): their schema for SQLite, PostgreSQL and MySQL, its
 * migration from older releases, and every query on them, each written once with
 * $1..$n parameters over db.h. Table and column names are the seed's (FastMCP
 * Feedback), so its SQL runs on ours unchanged. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/recorder/store.h"
#include "common/cbor.h"
#include "common/text.h"
#include "common/util.h"

#define INSERT_ROWS 64 /* rows per INSERT statement at most (25 parameters each: 1,600 < 32,766) */
/* A batch goes in statements of these many rows, the largest that fits first, so that a
 * batch of 100 is 64 + 16 + 16 + 4 rows: four round trips to PostgreSQL, not 37. */
static const size_t insert_sizes[] = {INSERT_ROWS, 16, 4, 1};
#define INSERT_SIZES 4
#define SQL_MAX (1 << 20) /* the longest statement built */
#define DAY_MS 86400000LL

/* ---- the schema ---- */

enum ctype { T_ID, T_TEXT, T_TS, T_REAL, T_INT, T_BOOL, T_JSON };
#define C_NOTNULL 1u /* in CREATE TABLE only: a column added to an older table is nullable */
#define C_INDEX 2u
#define C_UNIQUE 4u

struct col {
	const char *name;
	enum ctype type;
	unsigned flags;
};

struct table {
	const char *suffix;
	const struct col *cols;
	size_t ncols;
	const char *key;    /* a composite primary key, or NULL */
	const char *my_key; /* the same for MySQL, its text columns by a prefix */
};

static const struct col calls_cols[] = {
    {"id", T_ID, 0},
    {"call_id", T_TEXT, C_NOTNULL | C_INDEX | C_UNIQUE},
    {"tool", T_TEXT, C_NOTNULL | C_INDEX},
    {"upstream", T_TEXT, 0},
    {"started_at", T_TS, C_NOTNULL | C_INDEX},
    {"duration_ms", T_REAL, 0},
    {"outcome", T_TEXT, C_INDEX},
    {"ok", T_BOOL, C_NOTNULL},
    {"error_type", T_TEXT, 0},
    {"error_message", T_TEXT, 0},
    {"session_id", T_TEXT, C_INDEX},
    {"request_id", T_TEXT, 0},
    {"user_sub", T_TEXT, C_INDEX},
    {"caller_kind", T_TEXT, 0},
    {"client_id", T_TEXT, 0},
    {"identity", T_JSON, 0},
    {"args_size", T_INT, 0},
    {"result_size", T_INT, 0},
    {"arguments", T_JSON, 0},
    {"result", T_JSON, 0},
    {"decision", T_TEXT, 0},
    {"rule", T_TEXT, 0},
    {"ledger_seq", T_INT, 0},
    {"sample_rate", T_REAL, 0},
    {"server_version", T_TEXT, 0},
    {"extra", T_JSON, 0},
};
#define CALL_NCOLS 25 /* written: all but id */

static const struct col events_cols[] = {
    {"id", T_ID, 0},
    {"occurred_at", T_TS, C_NOTNULL | C_INDEX},
    {"kind", T_TEXT, C_NOTNULL | C_INDEX},
    {"key", T_TEXT, C_INDEX},
    {"call_id", T_TEXT, C_INDEX},
    {"session_id", T_TEXT, 0},
    {"user_sub", T_TEXT, C_INDEX},
    {"caller_kind", T_TEXT, 0},
    {"client_id", T_TEXT, 0},
    {"server_version", T_TEXT, 0},
    {"attrs", T_JSON, 0},
};
#define EVENT_NCOLS 10

static const struct col feedback_cols[] = {
    {"id", T_ID, 0},
    {"type", T_TEXT, C_NOTNULL | C_INDEX},
    {"title", T_TEXT, C_NOTNULL},
    {"description", T_TEXT, C_NOTNULL},
    {"contact", T_TEXT, 0},
    {"status", T_TEXT, C_NOTNULL | C_INDEX},
    {"created_at", T_TS, C_NOTNULL | C_INDEX},
    {"updated_at", T_TS, 0},
    {"user_sub", T_TEXT, 0},
    {"caller_kind", T_TEXT, 0},
    {"client_id", T_TEXT, 0},
    {"session_id", T_TEXT, 0},
};

/* feedback_id is text, as the seed has it: its reports' ids can be anything. */
static const struct col links_cols[] = {
    {"feedback_id", T_TEXT, C_NOTNULL},
    {"call_id", T_TEXT, C_NOTNULL | C_INDEX},
    {"position", T_INT, C_NOTNULL},
    {"rule", T_TEXT, 0},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define STR_(x) #x
#define STR(x) STR_(x)
/* MySQL indexes a text column by a prefix of it: this many characters (4 bytes each in
 * utf8mb4, within InnoDB's 3072-byte key). Every indexed text the recorder writes is
 * shorter (call ids are 17 bytes), so a UNIQUE prefix is as unique as the column. */
#define MY_KEY_CHARS 255
enum { TB_CALLS, TB_EVENTS, TB_FEEDBACK, TB_LINKS, TB_COUNT };
static const struct table tables[TB_COUNT] = {
    {"tool_calls", calls_cols, N(calls_cols), NULL, NULL},
    {"events", events_cols, N(events_cols), NULL, NULL},
    {"feedback", feedback_cols, N(feedback_cols), NULL, NULL},
    {"feedback_call_links", links_cols, N(links_cols), "feedback_id, call_id",
     "feedback_id(" STR(STORE_REF_MAX) "), call_id(" STR(MY_KEY_CHARS) ")"},
};

static const char *type_name(enum db_kind k, enum ctype t)
{
	static const char *const lite[] = {
	    "INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", "TEXT", "REAL", "INTEGER", "BOOLEAN", "TEXT"};
	static const char *const pg[] = {
	    "BIGSERIAL PRIMARY KEY", "TEXT", "TIMESTAMPTZ", "DOUBLE PRECISION", "BIGINT", "BOOLEAN", "JSONB"};
	/* MySQL: LONGTEXT, as long as PostgreSQL's TEXT (TEXT is 64 KB); times in UTC with ms. */
	static const char *const my[] = {
	    "BIGINT AUTO_INCREMENT PRIMARY KEY", "LONGTEXT", "DATETIME(3)", "DOUBLE", "BIGINT", "BOOLEAN", "JSON"};
	return k == DB_SQLITE ? lite[t] : k == DB_MYSQL ? my[t] : pg[t];
}

/* A column's name in SQL: "key" is reserved in MySQL, so it is quoted everywhere (MySQL
 * runs with ANSI_QUOTES: db_my.h). */
static const char *ident(const char *name)
{
	return strcmp(name, "key") ? name : "\"key\"";
}

/* ---- the queries ---- */

enum q {
	Q_PRUNE_CALLS,
	Q_PRUNE_EVENTS,
	Q_FB_ADD,
	Q_FB_STATUS,
	Q_LINK_SESSION,
	Q_LINK_USER,
	Q_LINK_CLEAR,
	Q_LINK_CLEAR_MINE,
	Q_LINK_ADD,
	Q_FB_LIST,
	Q_FB_COUNT,
	Q_FB_BY_TYPE,
	Q_FB_BY_STATUS,
	Q_FB_SINCE,
	Q_FB_SET_STATUS,
	Q_FB_DELETE,
	Q_FB_GET,
	Q_FB_CALLS,
	Q_COUNT
};

#define FB_COLS                                                                                                        \
	"id, type, title, description, contact, status, created_at, updated_at, user_sub, caller_kind, client_id, "    \
	"session_id"

/* {C} {E} {F} {L}: the calls, events, feedback and links tables. */
static const char *const q_text[Q_COUNT] = {
    [Q_PRUNE_CALLS] = "DELETE FROM {C} WHERE id IN (SELECT c.id FROM {C} c WHERE c.started_at < $1 AND NOT EXISTS "
		      "(SELECT 1 FROM {L} l WHERE l.call_id = c.call_id) LIMIT " STR(STORE_PRUNE_BATCH) ")",
    [Q_PRUNE_EVENTS] =
	"DELETE FROM {E} WHERE id IN (SELECT id FROM {E} WHERE occurred_at < $1 LIMIT " STR(STORE_PRUNE_BATCH) ")",
    [Q_FB_ADD] = "INSERT INTO {F} (type, title, description, contact, status, created_at, updated_at, user_sub, "
		 "caller_kind, client_id, session_id) VALUES ($1, $2, $3, $4, 'open', $5, $5, $6, $7, $8, $9) "
		 "RETURNING id",
    [Q_FB_STATUS] = "SELECT status FROM {F} WHERE id = CAST($1 AS BIGINT)",
    [Q_LINK_SESSION] = "SELECT id, call_id, started_at FROM {C} WHERE session_id = $1 AND started_at <= $2 "
		       "ORDER BY started_at DESC, id DESC LIMIT " STR(STORE_LINKS_MAX),
    [Q_LINK_USER] = "SELECT id, call_id, started_at FROM {C} WHERE user_sub = $1 AND started_at >= $2 AND "
		    "started_at <= $3 AND (CAST($4 AS TEXT) IS NULL OR session_id IS NULL OR session_id <> $4) "
		    "ORDER BY started_at DESC, id DESC LIMIT CAST($5 AS BIGINT)",
    [Q_LINK_CLEAR] = "DELETE FROM {L} WHERE feedback_id = $1",
    [Q_LINK_CLEAR_MINE] = "DELETE FROM {L} WHERE feedback_id = $1 AND call_id IN (SELECT call_id FROM {C} WHERE "
			  "user_sub = CAST($2 AS TEXT) OR session_id = CAST($3 AS TEXT))",
    [Q_LINK_ADD] = "INSERT INTO {L} (feedback_id, call_id, position, rule) VALUES ($1, $2, $3, $4)",
    [Q_FB_LIST] = "SELECT " FB_COLS " FROM {F} WHERE (CAST($1 AS TEXT) IS NULL OR type = $1) AND "
		  "(CAST($2 AS TEXT) IS NULL OR status = $2) ORDER BY created_at DESC, id DESC "
		  "LIMIT CAST($3 AS BIGINT) OFFSET CAST($4 AS BIGINT)",
    [Q_FB_COUNT] = "SELECT COUNT(*) FROM {F} WHERE (CAST($1 AS TEXT) IS NULL OR type = $1) AND "
		   "(CAST($2 AS TEXT) IS NULL OR status = $2)",
    [Q_FB_BY_TYPE] = "SELECT type, COUNT(*) FROM {F} GROUP BY type",
    [Q_FB_BY_STATUS] = "SELECT status, COUNT(*) FROM {F} GROUP BY status",
    [Q_FB_SINCE] = "SELECT COUNT(*) FROM {F} WHERE created_at >= $1",
    [Q_FB_SET_STATUS] = "UPDATE {F} SET status = $1, updated_at = $2 WHERE id = CAST($3 AS BIGINT) AND status = $4",
    [Q_FB_DELETE] = "DELETE FROM {F} WHERE id = CAST($1 AS BIGINT)",
    [Q_FB_GET] = "SELECT " FB_COLS " FROM {F} WHERE id = CAST($1 AS BIGINT)",
    [Q_FB_CALLS] = "SELECT l.position, l.rule, l.call_id, c.tool, c.outcome, c.error_type, c.error_message, "
		   "c.started_at, c.duration_ms FROM {L} l LEFT JOIN {C} c ON c.call_id = l.call_id "
		   "WHERE l.feedback_id = $1 ORDER BY l.position",
};

/* MySQL cannot take LIMIT in an IN subquery nor select from the table a DELETE deletes
 * from; its single-table DELETE takes a LIMIT itself. */
static const char *const q_my[Q_COUNT] = {
    [Q_PRUNE_CALLS] = "DELETE FROM {C} WHERE started_at < $1 AND NOT EXISTS (SELECT 1 FROM {L} l WHERE l.call_id = "
		      "{C}.call_id) LIMIT " STR(STORE_PRUNE_BATCH),
    [Q_PRUNE_EVENTS] = "DELETE FROM {E} WHERE occurred_at < $1 LIMIT " STR(STORE_PRUNE_BATCH),
};

struct store {
	struct db *d;
	char name[TB_COUNT][STORE_PREFIX_MAX + 24];
	char *q[Q_COUNT];
	char *ins_calls[INSERT_SIZES], *ins_events[INSERT_SIZES]; /* by insert_sizes */
	char *events_q[STORE_EVENT_KINDS_MAX + 1]; /* events_for by number of kinds, made when first used */
};

/* A growing SQL text; bad once an allocation failed or SQL_MAX was reached. */
struct sb {
	struct buf b;
	int bad;
};

static void sb_add(struct sb *s, const char *t)
{
	if (!s->bad && buf_put(&s->b, t, strlen(t)) < 0)
		s->bad = 1;
}

AS_PRINTF(2, 3) static void sb_addf(struct sb *s, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		s->bad = 1;
	else
		sb_add(s, tmp);
}

/* The NUL-terminated text (the caller frees it), or NULL. */
static char *sb_done(struct sb *s)
{
	if (!s->bad && buf_putc(&s->b, 0) < 0)
		s->bad = 1;
	if (s->bad) {
		buf_free(&s->b);
		return NULL;
	}
	return (char *)s->b.p;
}

static char *expand(const struct store *st, const char *tmpl)
{
	struct sb s = {0};
	buf_init(&s.b, SQL_MAX);
	for (const char *p = tmpl; *p; p++) {
		const char *t = NULL;
		if (p[0] == '{' && p[1] && p[2] == '}') {
			switch (p[1]) {
			case 'C':
				t = st->name[TB_CALLS];
				break;
			case 'E':
				t = st->name[TB_EVENTS];
				break;
			case 'F':
				t = st->name[TB_FEEDBACK];
				break;
			case 'L':
				t = st->name[TB_LINKS];
				break;
			}
		}
		if (t) {
			sb_add(&s, t);
			p += 2;
		} else if (!s.bad && buf_putc(&s.b, (uint8_t)*p) < 0) {
			s.bad = 1;
		}
	}
	return sb_done(&s);
}

/* INSERT INTO table (cols of t, but id) VALUES (...) x rows, then tail. */
static char *insert_text(const struct store *st, int tb, size_t rows, const char *tail)
{
	const struct table *t = &tables[tb];
	struct sb s = {0};
	buf_init(&s.b, SQL_MAX);
	sb_addf(&s, "INSERT INTO %s (", st->name[tb]);
	size_t n = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		if (t->cols[i].type == T_ID)
			continue;
		sb_add(&s, n++ ? ", " : "");
		sb_add(&s, ident(t->cols[i].name));
	}
	sb_add(&s, ") VALUES ");
	for (size_t r = 0; r < rows; r++) {
		sb_add(&s, r ? ", (" : "(");
		for (size_t i = 0; i < n; i++)
			sb_addf(&s, "%s$%zu", i ? ", " : "", r * n + i + 1);
		sb_add(&s, ")");
	}
	sb_add(&s, tail);
	return sb_done(&s);
}

void store_free(struct store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < Q_COUNT; i++)
		free(st->q[i]);
	for (size_t i = 0; i < INSERT_SIZES; i++) {
		free(st->ins_calls[i]);
		free(st->ins_events[i]);
	}
	for (size_t i = 0; i <= STORE_EVENT_KINDS_MAX; i++)
		free(st->events_q[i]);
	free(st);
}

struct db *store_db(struct store *st)
{
	return st->d;
}

/* ---- small row readers ---- */

/* The first column of the first row as an integer. */
static int row_int(void *ctx, const char *const *cols, size_t ncols)
{
	int64_t *v = ctx;
	*v = ncols && cols[0] ? strtoll(cols[0], NULL, 10) : 0;
	return 0;
}

/* Every row's first column, into a JSON array of strings (column names, statuses). */
static int row_names(void *ctx, const char *const *cols, size_t ncols)
{
	json_t *a = ctx;
	if (ncols && cols[0] && json_array_append_new(a, json_string(cols[0])) < 0)
		return AS_ENOMEM;
	return 0;
}

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

/* ---- opening: create and migrate ---- */

static int valid_prefix(const char *p)
{
	size_t n = strlen(p);
	if (n < 1 || n > STORE_PREFIX_MAX || p[0] < 'a' || p[0] > 'z')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
			return 0;
	return 1;
}

static int note(json_t *migrated, const char *what)
{
	if (migrated && json_array_append_new(migrated, json_string(what)) < 0)
		return AS_ENOMEM;
	return 0;
}

static int has_name(const json_t *names, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(names, i, v) if (!strcasecmp(json_string_value(v), name)) return 1;
	return 0;
}

static int create_table(struct store *st, int tb, char *err)
{
	const struct table *t = &tables[tb];
	enum db_kind k = db_kind(st->d);
	struct sb s = {0};
	buf_init(&s.b, SQL_MAX);
	sb_addf(&s, "CREATE TABLE %s (", st->name[tb]);
	for (size_t i = 0; i < t->ncols; i++) {
		const struct col *c = &t->cols[i];
		sb_addf(&s, "%s%s %s%s", i ? ", " : "", ident(c->name), type_name(k, c->type),
			c->flags & C_NOTNULL ? " NOT NULL" : "");
	}
	if (t->key)
		sb_addf(&s, ", PRIMARY KEY (%s)", k == DB_MYSQL ? t->my_key : t->key);
	/* Text compared byte for byte, as the other two do (MySQL's default collations fold case
	 * and ignore trailing spaces: "Alice" would see alice's calls). */
	sb_add(&s, k == DB_MYSQL ? ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin" : ")");
	char *sql = sb_done(&s);
	if (!sql)
		return as_fail(err, AS_ENOMEM, "out of memory creating %s", st->name[tb]);
	int rc = db_script(st->d, sql, err);
	free(sql);
	return rc;
}

/* MySQL indexes a TEXT column only by a prefix, and a VARCHAR (the seed's older tables)
 * only whole when it is shorter than the prefix: *text is 1 when the column is a TEXT. */
static int my_text_column(struct store *st, int tb, const char *col, int *text, char *err)
{
	json_t *a = json_array();
	if (!a)
		return as_fail(err, AS_ENOMEM, "out of memory reading %s's columns", st->name[tb]);
	const char *p[] = {st->name[tb], col};
	int rc = db_query(st->d,
			  "SELECT data_type FROM information_schema.columns WHERE table_schema = DATABASE() AND "
			  "table_name = $1 AND column_name = $2",
			  p, 2, row_names, a, err);
	const char *t = json_string_value(json_array_get(a, 0));
	*text = t && (strcasestr(t, "text") || strcasestr(t, "blob"));
	json_decref(a);
	return rc;
}

static int make_indexes(struct store *st, int tb, int report, json_t *migrated, char *err)
{
	const struct table *t = &tables[tb];
	enum db_kind k = db_kind(st->d);
	const char *exists = k == DB_SQLITE ? "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = $1"
			     : k == DB_MYSQL
				 ? "SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() AND "
				   "index_name = $1 LIMIT 1"
				 : "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1";
	for (size_t i = 0; i < t->ncols; i++) {
		const struct col *c = &t->cols[i];
		if (!(c->flags & C_INDEX))
			continue;
		char ix[STORE_PREFIX_MAX + 64], sql[2 * STORE_PREFIX_MAX + 160];
		snprintf(ix, sizeof ix, "ix_%s_%s", st->name[tb], c->name);
		int64_t have = 0;
		const char *p[] = {ix};
		GUARD(db_query(st->d, exists, p, 1, row_int, &have, err));
		if (have)
			continue;
		int prefix = 0;
		if (k == DB_MYSQL && c->type == T_TEXT)
			GUARD(my_text_column(st, tb, c->name, &prefix, err));
		snprintf(sql, sizeof sql, "CREATE %sINDEX %s ON %s (%s%s)", c->flags & C_UNIQUE ? "UNIQUE " : "", ix,
			 st->name[tb], ident(c->name), prefix ? "(" STR(MY_KEY_CHARS) ")" : "");
		GUARD(db_script(st->d, sql, err));
		if (report)
			GUARD(note(migrated, sql));
	}
	return 0;
}

static int migrate_table(struct store *st, int tb, json_t *migrated, char *err)
{
	const struct table *t = &tables[tb];
	enum db_kind k = db_kind(st->d);
	const char *cols_q = k == DB_SQLITE  ? "SELECT name FROM pragma_table_info($1)"
			     : k == DB_MYSQL ? "SELECT column_name FROM information_schema.columns WHERE "
					       "table_schema = DATABASE() AND table_name = $1"
					     : "SELECT column_name FROM information_schema.columns WHERE "
					       "table_schema = current_schema() AND table_name = $1";
	json_t *have = json_array();
	if (!have)
		return as_fail(err, AS_ENOMEM, "out of memory reading %s's columns", st->name[tb]);
	const char *p[] = {st->name[tb]};
	int rc = db_query(st->d, cols_q, p, 1, row_names, have, err);
	if (rc == 0 && json_array_size(have) == 0) {
		rc = create_table(st, tb, err);
		if (rc == 0) {
			char what[STORE_PREFIX_MAX + 48];
			snprintf(what, sizeof what, "CREATE TABLE %s", st->name[tb]);
			rc = note(migrated, what);
		}
		if (rc == 0)
			rc = make_indexes(st, tb, 0, migrated, err);
		json_decref(have);
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < t->ncols; i++) {
		const struct col *c = &t->cols[i];
		if (has_name(have, c->name))
			continue;
		if (c->type == T_ID) {
			rc =
			    as_fail(err, AS_EINVAL,
				    "table %s exists without an id column: not a table this can migrate", st->name[tb]);
			break;
		}
		char sql[STORE_PREFIX_MAX + 160];
		snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", st->name[tb], ident(c->name),
			 type_name(k, c->type));
		rc = db_script(st->d, sql, err);
		if (rc == 0)
			rc = note(migrated, sql);
	}
	json_decref(have);
	if (rc == 0)
		rc = make_indexes(st, tb, 1, migrated, err);
	return rc;
}

int store_open(struct db *d, const char *prefix, struct store **out, json_t **migrated, char *err)
{
	*out = NULL;
	if (migrated)
		*migrated = NULL;
	if (!prefix)
		prefix = "ffb_";
	if (!valid_prefix(prefix))
		return as_fail(err, AS_EINVAL,
			       "table prefix \"%.*s\" is not 1-%d characters of [a-z0-9_] starting with a letter",
			       STORE_PREFIX_MAX + 8, prefix, STORE_PREFIX_MAX);
	struct store *st = calloc(1, sizeof *st);
	if (!st)
		return as_fail(err, AS_ENOMEM, "out of memory opening the call store");
	st->d = d;
	for (int i = 0; i < TB_COUNT; i++)
		snprintf(st->name[i], sizeof st->name[i], "%s%s", prefix, tables[i].suffix);
	int rc = 0;
	enum db_kind k = db_kind(d);
	for (int i = 0; i < Q_COUNT && rc == 0; i++)
		if (!(st->q[i] = expand(st, k == DB_MYSQL && q_my[i] ? q_my[i] : q_text[i])))
			rc = AS_ENOMEM;
	if (rc == 0) {
		/* A retried batch whose first commit did go through adds no call twice. */
		const char *conflict =
		    k == DB_MYSQL ? " ON DUPLICATE KEY UPDATE call_id = call_id" : " ON CONFLICT (call_id) DO NOTHING";
		for (size_t i = 0; i < INSERT_SIZES; i++) {
			st->ins_calls[i] = insert_text(st, TB_CALLS, insert_sizes[i], conflict);
			st->ins_events[i] = insert_text(st, TB_EVENTS, insert_sizes[i], "");
			if (!st->ins_calls[i] || !st->ins_events[i])
				rc = AS_ENOMEM;
		}
	}
	if (rc < 0) {
		store_free(st);
		return as_fail(err, rc, "out of memory preparing the call store's statements");
	}
	json_t *m = json_array();
	if (!m) {
		store_free(st);
		return as_fail(err, AS_ENOMEM, "out of memory opening the call store");
	}
	rc = db_begin(d, err);
	for (int i = 0; i < TB_COUNT && rc == 0; i++)
		rc = migrate_table(st, i, m, err);
	if (rc == 0)
		rc = db_commit(d, err);
	if (rc < 0) {
		db_rollback(d);
		json_decref(m);
		store_free(st);
		return rc;
	}
	if (migrated)
		*migrated = m;
	else
		json_decref(m);
	*out = st;
	return 0;
}

/* ---- writing ---- */

/* Texts PostgreSQL (and strict MySQL) would refuse, made storable: bytes that are not UTF-8
 * become U+FFFD, and in JSON the escape \u0000 (JSONB refuses it) becomes \ufffd. SQLite
 * stores any bytes, so this runs for the other two only. */
struct owned {
	char **p;
	size_t n, cap;
};

static void owned_free(struct owned *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->p[i]);
	free(o->p);
	o->p = NULL;
	o->n = o->cap = 0;
}

static int pg_clean(const char *s, int json, struct owned *o, const char **out)
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
			GUARD(pg_clean(text[i], calls_cols[i + 1].type == T_JSON, o, &v[i]));
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
			GUARD(pg_clean(text[i], events_cols[i + 1].type == T_JSON, o, &v[i]));
	}
	return 0;
}

/* The index in insert_sizes of the largest statement for left rows. */
static size_t insert_size(size_t left)
{
	size_t k = 0;
	while (insert_sizes[k] > left)
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
		size_t k = insert_size(n - i), rows = insert_sizes[k];
		for (size_t r = 0; rc == 0 && r < rows; r++) {
			if (!calls[i + r].call_id || !calls[i + r].tool || !calls[i + r].outcome)
				rc = as_fail(err, AS_EINVAL, "call record %zu has no call_id, tool or outcome", i + r);
			else if (call_params(st, &calls[i + r], &t[r], v + r * CALL_NCOLS, &o) < 0)
				rc = as_fail(err, AS_ENOMEM, "out of memory writing %zu calls", n);
		}
		if (rc == 0)
			rc = db_exec(st->d, st->ins_calls[k], v, rows * CALL_NCOLS, NULL, err);
		owned_free(&o);
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
		size_t k = insert_size(n - i), rows = insert_sizes[k];
		for (size_t r = 0; rc == 0 && r < rows; r++) {
			if (!ev[i + r].kind)
				rc = as_fail(err, AS_EINVAL, "event %zu has no kind", i + r);
			else if (event_params(st, &ev[i + r], ts[r], v + r * EVENT_NCOLS, &o) < 0)
				rc = as_fail(err, AS_ENOMEM, "out of memory writing %zu events", n);
		}
		if (rc == 0)
			rc = db_exec(st->d, st->ins_events[k], v, rows * EVENT_NCOLS, NULL, err);
		owned_free(&o);
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
		if (db_kind(st->d) != DB_SQLITE && pg_clean(raw[i], 0, &o, &p[i]) < 0) {
			owned_free(&o);
			return as_fail(err, AS_ENOMEM, "out of memory adding feedback");
		}
	}
	int rc = db_query(st->d, st->q[Q_FB_ADD], p, N(p), row_int, id, err);
	owned_free(&o);
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
	GUARD(db_query(st->d, st->q[Q_FB_COUNT], p, 2, row_int, &total, err));
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
		rc = db_query(st->d, st->q[Q_FB_COUNT], none, 2, row_int, &total, err);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_BY_TYPE], NULL, 0, row_count, by_type, err);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_BY_STATUS], NULL, 0, row_count, by_status, err);
	if (rc == 0)
		rc = db_query(st->d, st->q[Q_FB_SINCE], p, 1, row_int, &recent, err);
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
	sb_add(&s, "SELECT ");
	sb_add(&s, cols);
	sb_add(&s, " FROM (SELECT ");
	sb_add(&s, cols);
	sb_addf(&s, " FROM %s WHERE \"key\" = $1 AND (CAST($3 AS TEXT) IS NULL OR user_sub = $3)", st->name[TB_EVENTS]);
	for (size_t i = 0; i < nkinds; i++)
		sb_addf(&s, "%s$%zu", i ? ", " : " AND kind IN (", i + 4);
	sb_add(&s, nkinds ? ")" : "");
	sb_add(&s, " ORDER BY occurred_at DESC, id DESC LIMIT CAST($2 AS BIGINT)) recent ORDER BY occurred_at, id");
	return st->events_q[nkinds] = sb_done(&s);
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
