/* The call records' tables (store.h): their schema for SQLite, PostgreSQL and MySQL, its
 * migration from older releases, and every query on them, each written once with
 * $1..$n parameters over db.h. Table and column names are the seed's (FastMCP
 * Feedback), so its SQL runs on ours unchanged. This file holds the schema, the queries' texts,
 * and opening (create and migrate); store_write.c writes and prunes calls and events,
 * store_feedback.c holds the QA reports and reads events (store_int.h: what they share). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/recorder/store_int.h"
#include "common/util.h"

/* A batch goes in statements of these many rows, the largest that fits first, so that a
 * batch of 100 is 64 + 16 + 16 + 4 rows: four round trips to PostgreSQL, not 37. */
const size_t store_insert_sizes[INSERT_SIZES] = {INSERT_ROWS, 16, 4, 1};

/* ---- the schema ---- */

#define C_NOTNULL 1u /* in CREATE TABLE only: a column added to an older table is nullable */
#define C_INDEX 2u
#define C_UNIQUE 4u

struct table {
	const char *suffix;
	const struct col *cols;
	size_t ncols;
	const char *key;    /* a composite primary key, or NULL */
	const char *my_key; /* the same for MySQL, its text columns by a prefix */
};

const struct col store_calls_cols[] = {
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

const struct col store_events_cols[] = {
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

#define STR_(x) #x
#define STR(x) STR_(x)
/* MySQL indexes a text column by a prefix of it: this many characters (4 bytes each in
 * utf8mb4, within InnoDB's 3072-byte key). Every indexed text the recorder writes is
 * shorter (call ids are 17 bytes), so a UNIQUE prefix is as unique as the column. */
#define MY_KEY_CHARS 255
static const struct table tables[TB_COUNT] = {
    {"tool_calls", store_calls_cols, N(store_calls_cols), NULL, NULL},
    {"events", store_events_cols, N(store_events_cols), NULL, NULL},
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

void store_sb_add(struct sb *s, const char *t)
{
	if (!s->bad && buf_put(&s->b, t, strlen(t)) < 0)
		s->bad = 1;
}

AS_PRINTF(2, 3) void store_sb_addf(struct sb *s, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		s->bad = 1;
	else
		store_sb_add(s, tmp);
}

/* The NUL-terminated text (the caller frees it), or NULL. */
char *store_sb_done(struct sb *s)
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
			store_sb_add(&s, t);
			p += 2;
		} else if (!s.bad && buf_putc(&s.b, (uint8_t)*p) < 0) {
			s.bad = 1;
		}
	}
	return store_sb_done(&s);
}

/* INSERT INTO table (cols of t, but id) VALUES (...) x rows, then tail. */
static char *insert_text(const struct store *st, int tb, size_t rows, const char *tail)
{
	const struct table *t = &tables[tb];
	struct sb s = {0};
	buf_init(&s.b, SQL_MAX);
	store_sb_addf(&s, "INSERT INTO %s (", st->name[tb]);
	size_t n = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		if (t->cols[i].type == T_ID)
			continue;
		store_sb_add(&s, n++ ? ", " : "");
		store_sb_add(&s, ident(t->cols[i].name));
	}
	store_sb_add(&s, ") VALUES ");
	for (size_t r = 0; r < rows; r++) {
		store_sb_add(&s, r ? ", (" : "(");
		for (size_t i = 0; i < n; i++)
			store_sb_addf(&s, "%s$%zu", i ? ", " : "", r * n + i + 1);
		store_sb_add(&s, ")");
	}
	store_sb_add(&s, tail);
	return store_sb_done(&s);
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
int store_row_int(void *ctx, const char *const *cols, size_t ncols)
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
	store_sb_addf(&s, "CREATE TABLE %s (", st->name[tb]);
	for (size_t i = 0; i < t->ncols; i++) {
		const struct col *c = &t->cols[i];
		store_sb_addf(&s, "%s%s %s%s", i ? ", " : "", ident(c->name), type_name(k, c->type),
			      c->flags & C_NOTNULL ? " NOT NULL" : "");
	}
	if (t->key)
		store_sb_addf(&s, ", PRIMARY KEY (%s)", k == DB_MYSQL ? t->my_key : t->key);
	/* Text compared byte for byte, as the other two do (MySQL's default collations fold case
	 * and ignore trailing spaces: "Alice" would see alice's calls). */
	store_sb_add(&s, k == DB_MYSQL ? ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin" : ")");
	char *sql = store_sb_done(&s);
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
		GUARD(db_query(st->d, exists, p, 1, store_row_int, &have, err));
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
			st->ins_calls[i] = insert_text(st, TB_CALLS, store_insert_sizes[i], conflict);
			st->ins_events[i] = insert_text(st, TB_EVENTS, store_insert_sizes[i], "");
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
