/* Unit tests for gateway/recorder/db.c, db_my.c and store*.c: every case on SQLite (a
 * scratch file); when ASSENT_TEST_PG names a conninfo (tests/integration/store_pg.sh starts
 * a real server with tests/scripts/pg.sh), on PostgreSQL too; when ASSENT_TEST_MY names a
 * mysql:// URL (tests/integration/store_my.sh, tests/scripts/my.sh), on MariaDB too; the
 * seed's own SQL is run as the seed writes it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "include/assent/err.h"
#include "gateway/recorder/confine.h"
#include "gateway/recorder/db.h"
#include "gateway/recorder/store.h"
#include "tests/unit/scratch.h"

#define T0 1767225600000LL /* 2026-01-01 00:00:00 UTC */
#define MIN_MS 60000LL
#define DAY_MS 86400000LL

struct be {
	enum db_kind kind;
	const char *url; /* PostgreSQL: ASSENT_TEST_PG; MariaDB: ASSENT_TEST_MY */
};

struct ctx {
	const struct be *be;
	char dir[64];
	char url[512];
	struct db *d;
};

static const char *const drop_all = "DROP TABLE IF EXISTS ffb_tool_calls, ffb_events, ffb_feedback, "
				    "ffb_feedback_call_links, old_tool_calls";

static int setup(void **state)
{
	const struct be *be = *state;
	struct ctx *c = calloc(1, sizeof *c);
	char err[AS_ERRLEN] = "";
	if (!c)
		return -1;
	c->be = be;
	if (be->kind == DB_SQLITE) {
		snprintf(c->dir, sizeof c->dir, "/tmp/assent-store.XXXXXX");
		if (!mkdtemp(c->dir))
			return -1;
		snprintf(c->url, sizeof c->url, "sqlite:%s/calls.db", c->dir);
	} else {
		snprintf(c->url, sizeof c->url, "%s", be->url);
	}
	if (db_open(c->url, &c->d, err) < 0) {
		fprintf(stderr, "db_open: %s\n", err);
		return -1;
	}
	if (be->kind != DB_SQLITE && db_script(c->d, drop_all, err) < 0) {
		fprintf(stderr, "drop: %s\n", err);
		return -1;
	}
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	if (c->be->kind != DB_SQLITE && c->d)
		db_script(c->d, drop_all, NULL);
	db_close(c->d);
	if (c->dir[0])
		scratch_rm(c->dir);
	free(c);
	return 0;
}

/* ---- helpers ---- */

/* Rows as a JSON array of arrays of strings (null for NULL). */
static int collect(void *ctx, const char *const *cols, size_t ncols)
{
	json_t *row = json_array();
	for (size_t i = 0; i < ncols; i++)
		json_array_append_new(row, cols[i] ? json_string_nocheck(cols[i]) : json_null()); /* any bytes */
	json_array_append_new(ctx, row);
	return 0;
}

static json_t *rows(struct db *d, const char *sql, const char *const *p, size_t n)
{
	char err[AS_ERRLEN] = "";
	json_t *a = json_array();
	int rc = db_query(d, sql, p, n, collect, a, err);
	if (rc != 0)
		fprintf(stderr, "query failed: %s\n", err);
	assert_int_equal(rc, 0);
	return a;
}

/* The one value of a one-row, one-column answer (a static copy), or NULL. */
static const char *one(struct db *d, const char *sql)
{
	static char v[256];
	json_t *a = rows(d, sql, NULL, 0);
	assert_int_equal(json_array_size(a), 1);
	const json_t *x = json_array_get(json_array_get(a, 0), 0);
	const char *s = json_string_value(x);
	if (s)
		snprintf(v, sizeof v, "%s", s);
	json_decref(a);
	return s ? v : NULL;
}

static long long count(struct db *d, const char *sql)
{
	const char *v = one(d, sql);
	assert_non_null(v);
	return strtoll(v, NULL, 10);
}

static struct store *open_store(struct ctx *c, json_t **migrated)
{
	char err[AS_ERRLEN] = "";
	struct store *st = NULL;
	int rc = store_open(c->d, "ffb_", &st, migrated, err);
	if (rc != 0)
		fprintf(stderr, "store_open: %s\n", err);
	assert_int_equal(rc, 0);
	return st;
}

static struct rec_call call(const char *id, const char *tool, int64_t ms)
{
	struct rec_call c = {
	    .call_id = (char *)id,
	    .tool = (char *)tool,
	    .started_ms = ms,
	    .duration_ms = 1.5,
	    .outcome = "ok",
	    .ok = 1,
	    .args_size = 2,
	    .result_size = -1,
	    .ledger_seq = -1,
	};
	return c;
}

static void write_ok(struct store *st, const struct rec_call *c, size_t nc, const struct rec_event *e, size_t ne)
{
	char err[AS_ERRLEN] = "";
	int rc = store_write(st, c, nc, e, ne, err);
	if (rc != 0)
		fprintf(stderr, "store_write: %s\n", err);
	assert_int_equal(rc, 0);
}

static int has_string(const json_t *a, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return 1;
	return 0;
}

static int64_t ts_of(const char *text)
{
	int64_t ms = -1;
	assert_int_equal(db_ts_parse(text, &ms), 0);
	return ms;
}

static const char *const call_columns[] = {
    "id",	 "call_id",    "tool",		"upstream",	  "started_at", "duration_ms", "outcome",
    "ok",	 "error_type", "error_message", "session_id",	  "request_id", "user_sub",    "caller_kind",
    "client_id", "identity",   "args_size",	"result_size",	  "arguments",	"result",      "decision",
    "rule",	 "ledger_seq", "sample_rate",	"server_version", "extra",
};

static json_t *columns_of(struct ctx *c, const char *table)
{
	const char *q = c->be->kind == DB_SQLITE ? "SELECT name FROM pragma_table_info($1)"
			: c->be->kind == DB_MYSQL
			    ? "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND "
			      "table_name = $1"
			    : "SELECT column_name FROM information_schema.columns WHERE "
			      "table_schema = current_schema() AND table_name = $1";
	const char *p[] = {table};
	json_t *r = rows(c->d, q, p, 1), *names = json_array();
	size_t i;
	json_t *row;
	json_array_foreach(r, i, row) json_array_append(names, json_array_get(row, 0));
	json_decref(r);
	return names;
}

static int index_exists(struct ctx *c, const char *name)
{
	const char *q = c->be->kind == DB_SQLITE
			    ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = $1"
			: c->be->kind == DB_MYSQL
			    ? "SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics WHERE table_schema "
			      "= DATABASE() "
			      "AND index_name = $1"
			    : "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1";
	const char *p[] = {name};
	json_t *r = rows(c->d, q, p, 1);
	int n = (int)strtol(json_string_value(json_array_get(json_array_get(r, 0), 0)), NULL, 10);
	json_decref(r);
	return n;
}

/* ---- db.c on its own ---- */

static void test_db_ts(void **state)
{
	(void)state;
	char out[DB_TS_LEN];
	db_ts(NULL, T0 + 3723004, out); /* SQLite's form when no connection says otherwise */
	assert_string_equal(out, "2026-01-01 01:02:03.004");
	db_ts_iso(T0 + 3723004, out);
	assert_string_equal(out, "2026-01-01T01:02:03.004Z");
	int64_t ms;
	assert_int_equal(db_ts_parse("2026-01-01 01:02:03.004", &ms), 0);
	assert_int_equal(ms, T0 + 3723004);
	assert_int_equal(db_ts_parse("2026-01-01 01:02:03.004+00", &ms), 0);
	assert_int_equal(ms, T0 + 3723004);
	assert_int_equal(db_ts_parse("2026-01-01 01:02:03.4+00", &ms), 0); /* PostgreSQL drops trailing zeros */
	assert_int_equal(ms, T0 + 3723400);
	assert_int_equal(db_ts_parse("2026-01-01 01:02:03+00", &ms), 0);
	assert_int_equal(ms, T0 + 3723000);
	assert_int_equal(db_ts_parse("2026-01-01T01:02:03.004567Z", &ms), 0);
	assert_int_equal(ms, T0 + 3723004);
	assert_int_equal(db_ts_parse("2026-01-01 03:02:03.004+02", &ms), 0);
	assert_int_equal(ms, T0 + 3723004);
	assert_int_equal(db_ts_parse("2025-12-31 20:32:03.004-04:30", &ms), 0);
	assert_int_equal(ms, T0 + 3723004);
	assert_int_equal(db_ts_parse("2026-01-01", &ms), AS_EINVAL);
	assert_int_equal(db_ts_parse("2026-01-01 01:02:03.", &ms), AS_EINVAL);
	assert_int_equal(db_ts_parse("2026-13-01 01:02:03", &ms), AS_EINVAL);
	assert_int_equal(db_ts_parse("2026-01-01 01:02:03 junk", &ms), AS_EINVAL);
	assert_int_equal(db_ts_parse(NULL, &ms), AS_EINVAL);
	assert_true(db_bool("1") && db_bool("t") && db_bool("true"));
	assert_false(db_bool("0") || db_bool("f") || db_bool(NULL) || db_bool(""));
}

static void test_db_open_errors(void **state)
{
	(void)state;
	struct db *d = (struct db *)1;
	char err[AS_ERRLEN] = "";
	assert_int_equal(db_open("oracle://u:pw@h/db", &d, err), AS_EINVAL);
	assert_null(d);
	assert_non_null(strstr(err, "unknown kind"));
	assert_null(strstr(err, "pw@"));
	/* MySQL: a malformed URL names its fault; a server that is not there says so; never the password. */
	assert_int_equal(db_open("mysql://u:Sekrit-Word-42@h", &d, err), AS_EINVAL);
	assert_null(d);
	assert_non_null(strstr(err, "names no database"));
	assert_null(strstr(err, "Sekrit"));
	assert_int_equal(db_open("mariadb://u:Sekrit-Word-42@/db?socket=/nonexistent-dir/my.sock", &d, err), AS_EIO);
	assert_null(d);
	assert_non_null(strstr(err, "cannot connect to MariaDB at socket /nonexistent-dir/my.sock as u, database db"));
	assert_null(strstr(err, "Sekrit"));
	assert_int_equal(db_open("sqlite:", &d, err), AS_EINVAL);
	assert_int_equal(db_open("sqlite:/nonexistent-dir/x/calls.db", &d, err), AS_EIO);
	assert_non_null(strstr(err, "/nonexistent-dir/x/calls.db"));
	/* A server that is not there: the message says so, and never the password. */
	assert_int_equal(
	    db_open("postgresql:host=/nonexistent-dir user=u password=Sekrit-Word-42 connect_timeout=2", &d, err),
	    AS_EIO);
	assert_non_null(strstr(err, "cannot connect to PostgreSQL"));
	assert_null(strstr(err, "Sekrit"));
	assert_int_equal(db_open("postgresql://u:Sekrit-Word-42@/db?host=/nonexistent-dir", &d, err), AS_EIO);
	assert_null(strstr(err, "Sekrit"));
	/* A conninfo libpq cannot parse is quoted back by libpq: not when it holds a password. */
	assert_int_equal(db_open("postgresql:host=/x password='Sekrit-Word-42", &d, err), AS_EINVAL);
	assert_non_null(strstr(err, "connection string"));
	assert_null(strstr(err, "Sekrit"));
	assert_int_equal(db_open("postgresql:host=/x nonsense-key=1", &d, err), AS_EINVAL);
	assert_non_null(strstr(err, "nonsense-key")); /* no password: libpq's own words */
}

/* SQLite: $N binds the Nth parameter wherever it stands; a '$1' in quotes is text; the
 * cache is confirmed by text, so a buffer reused for another statement runs that one. */
static void test_db_params(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	const char *p[] = {"a", "b"};
	json_t *r = rows(c->d, "SELECT $2 || $1 || '$1'", p, 2);
	assert_string_equal(json_string_value(json_array_get(json_array_get(r, 0), 0)), "ba$1");
	json_decref(r);
	assert_int_equal(db_query(c->d, "SELECT CAST($1 AS TEXT)", p, 2, NULL, NULL, err), AS_EINVAL);
	assert_non_null(strstr(err, "parameter"));
	assert_string_equal(one(c->d, "SELECT 3"), "3"); /* and the connection is fine */
	assert_int_equal(db_query(c->d, "SELECT nosuchcolumn FROM nosuchtable", NULL, 0, NULL, NULL, err), AS_EINVAL);
	assert_non_null(strstr(err, "nosuchtable"));
	char sql[64];
	snprintf(sql, sizeof sql, "SELECT 1");
	assert_string_equal(one(c->d, sql), "1");
	snprintf(sql, sizeof sql, "SELECT 2");
	assert_string_equal(one(c->d, sql), "2");
	/* NULL parameters are SQL NULL; changes counts rows. */
	assert_int_equal(db_script(c->d, "CREATE TABLE old_tool_calls (a TEXT, b TEXT)", err), 0);
	const char *q[] = {"x", NULL};
	int64_t n = -1;
	assert_int_equal(db_exec(c->d, "INSERT INTO old_tool_calls (a, b) VALUES ($1, $2)", q, 2, &n, err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM old_tool_calls WHERE b IS NULL"), 1);
	assert_int_equal(db_exec(c->d, "DELETE FROM old_tool_calls", NULL, 0, &n, err), 0);
	assert_int_equal(n, 1);
	/* A rolled back transaction leaves nothing. */
	assert_int_equal(db_begin(c->d, err), 0);
	assert_int_equal(db_exec(c->d, "INSERT INTO old_tool_calls (a, b) VALUES ($1, $2)", q, 2, NULL, err), 0);
	db_rollback(c->d);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM old_tool_calls"), 0);
	assert_int_equal(db_script(c->d, "DROP TABLE old_tool_calls", err), 0);
	char ts[DB_TS_LEN];
	db_ts(c->d, T0, ts);
	assert_string_equal(ts, c->be->kind == DB_POSTGRES ? "2026-01-01 00:00:00.000+00" : "2026-01-01 00:00:00.000");
}

/* A lost connection fails with AS_EIO; db_reconnect brings it back. */
static void test_db_reconnect(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	if (c->be->kind == DB_POSTGRES) {
		assert_int_equal(
		    db_query(c->d, "SELECT pg_terminate_backend(pg_backend_pid())", NULL, 0, NULL, NULL, err), AS_EIO);
		assert_int_equal(db_query(c->d, "SELECT 1", NULL, 0, NULL, NULL, err), AS_EIO);
	}
	if (c->be->kind == DB_MYSQL) {
		int rc = db_query(c->d, "KILL CONNECTION_ID()", NULL, 0, NULL, NULL, err);
		if (rc != AS_EIO)
			fail_msg("KILL CONNECTION_ID(): %d %s", rc, err);
		rc = db_query(c->d, "SELECT 1", NULL, 0, NULL, NULL, err);
		if (rc != AS_EIO)
			fail_msg("SELECT 1 on a killed connection: %d %s", rc, err);
	}
	assert_int_equal(db_reconnect(c->d, err), 0);
	assert_string_equal(one(c->d, "SELECT 1"), "1");
}

/* ---- the schema ---- */

static void test_schema(void **state)
{
	struct ctx *c = *state;
	json_t *m = NULL;
	struct store *st = open_store(c, &m);
	assert_int_equal(json_array_size(m), 4);
	assert_true(has_string(m, "CREATE TABLE ffb_tool_calls"));
	assert_true(has_string(m, "CREATE TABLE ffb_events"));
	assert_true(has_string(m, "CREATE TABLE ffb_feedback"));
	assert_true(has_string(m, "CREATE TABLE ffb_feedback_call_links"));
	json_decref(m);

	json_t *cols = columns_of(c, "ffb_tool_calls");
	assert_int_equal(json_array_size(cols), sizeof call_columns / sizeof call_columns[0]);
	for (size_t i = 0; i < sizeof call_columns / sizeof call_columns[0]; i++)
		assert_true(has_string(cols, call_columns[i]));
	json_decref(cols);
	const char *ev[] = {"id",	   "occurred_at", "kind",	    "key",  "call_id", "session_id", "user_sub",
			    "caller_kind", "client_id",	  "server_version", "attrs"};
	cols = columns_of(c, "ffb_events");
	assert_int_equal(json_array_size(cols), 11);
	for (size_t i = 0; i < 11; i++)
		assert_true(has_string(cols, ev[i]));
	json_decref(cols);
	const char *fb[] = {"id",	  "type",	"title",    "description", "contact",	"status",
			    "created_at", "updated_at", "user_sub", "caller_kind", "client_id", "session_id"};
	cols = columns_of(c, "ffb_feedback");
	assert_int_equal(json_array_size(cols), 12);
	for (size_t i = 0; i < 12; i++)
		assert_true(has_string(cols, fb[i]));
	json_decref(cols);
	const char *ln[] = {"feedback_id", "call_id", "position", "rule"};
	cols = columns_of(c, "ffb_feedback_call_links");
	assert_int_equal(json_array_size(cols), 4);
	for (size_t i = 0; i < 4; i++)
		assert_true(has_string(cols, ln[i]));
	json_decref(cols);

	const char *ix[] = {"ix_ffb_tool_calls_started_at", "ix_ffb_tool_calls_tool",	  "ix_ffb_tool_calls_outcome",
			    "ix_ffb_tool_calls_session_id", "ix_ffb_tool_calls_user_sub", "ix_ffb_tool_calls_call_id",
			    "ix_ffb_events_occurred_at",    "ix_ffb_events_kind",	  "ix_ffb_events_key",
			    "ix_ffb_events_call_id",	    "ix_ffb_events_user_sub"};
	for (size_t i = 0; i < sizeof ix / sizeof ix[0]; i++) {
		if (!index_exists(c, ix[i]))
			fail_msg("index %s is missing", ix[i]);
	}
	if (c->be->kind == DB_POSTGRES) {
		assert_string_equal(one(c->d, "SELECT data_type FROM information_schema.columns WHERE table_name = "
					      "'ffb_events' AND column_name = 'attrs'"),
				    "jsonb");
		assert_string_equal(one(c->d, "SELECT data_type FROM information_schema.columns WHERE table_name = "
					      "'ffb_tool_calls' AND column_name = 'started_at'"),
				    "timestamp with time zone");
	}
	if (c->be->kind == DB_MYSQL) { /* JSON is MariaDB's name for LONGTEXT checked by JSON_VALID */
		assert_string_equal(one(c->d,
					"SELECT data_type FROM information_schema.columns WHERE table_schema = "
					"DATABASE() AND table_name = 'ffb_tool_calls' AND column_name = 'started_at'"),
				    "datetime");
		assert_string_equal(one(c->d, "SELECT COUNT(*) FROM information_schema.check_constraints WHERE "
					      "constraint_schema = DATABASE() AND table_name = 'ffb_events' AND "
					      "check_clause LIKE '%json_valid(%attrs%'"),
				    "1");
		assert_string_equal(one(c->d,
					"SELECT table_collation FROM information_schema.tables WHERE table_schema "
					"= DATABASE() AND table_name = 'ffb_tool_calls'"),
				    "utf8mb4_bin");
	}
	store_free(st);

	/* Opened again: nothing to do. */
	st = open_store(c, &m);
	assert_int_equal(json_array_size(m), 0);
	json_decref(m);
	store_free(st);

	/* Prefixes. */
	char err[AS_ERRLEN] = "";
	const char *bad[] = {"", "Ffb_", "1ffb", "ffb-", "ffb;drop", "a23456789012345678901234567890123"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		st = (struct store *)1;
		assert_int_equal(store_open(c->d, bad[i], &st, NULL, err), AS_EINVAL);
		assert_null(st);
		assert_non_null(strstr(err, "table prefix"));
	}
	assert_int_equal(store_open(c->d, "a2345678901234567890123456789012", &st, NULL, err), 0); /* 32 */
	store_free(st);
	db_script(
	    c->d,
	    "DROP TABLE a2345678901234567890123456789012tool_calls; DROP TABLE a2345678901234567890123456789012events; "
	    "DROP TABLE a2345678901234567890123456789012feedback; "
	    "DROP TABLE a2345678901234567890123456789012feedback_call_links",
	    NULL);
}

/* An ffb_tool_calls of the seed's earlier releases: no outcome, no sample_rate, and no
 * other table. store_open adds both columns and the outcome index, creates the rest, and
 * the old rows keep NULL in the new columns. */
static void test_migration(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	int lite = c->be->kind == DB_SQLITE, my = c->be->kind == DB_MYSQL;
	char ddl[2048];
	snprintf(
	    ddl, sizeof ddl,
	    "CREATE TABLE ffb_tool_calls (id %s, call_id VARCHAR(64) NOT NULL, tool VARCHAR(255) NOT NULL, "
	    "upstream TEXT, started_at %s NOT NULL, duration_ms %s, ok BOOLEAN NOT NULL, error_type TEXT, "
	    "error_message TEXT, session_id TEXT, request_id TEXT, user_sub TEXT, caller_kind TEXT, client_id TEXT, "
	    "identity %s, args_size INTEGER, result_size INTEGER, arguments %s, result %s, decision TEXT, rule TEXT, "
	    "ledger_seq INTEGER, server_version TEXT, extra %s); "
	    "CREATE UNIQUE INDEX ix_ffb_tool_calls_call_id ON ffb_tool_calls (call_id); "
	    "CREATE INDEX ix_ffb_tool_calls_started_at ON ffb_tool_calls (started_at); "
	    "INSERT INTO ffb_tool_calls (call_id, tool, started_at, duration_ms, ok) VALUES "
	    "('old1', 'render', '2025-12-01 00:00:00.000', 3.0, %s), "
	    "('old2', 'render', '2025-12-01 00:00:01.000', 4.0, %s)",
	    lite ? "INTEGER PRIMARY KEY AUTOINCREMENT"
	    : my ? "BIGINT AUTO_INCREMENT PRIMARY KEY"
		 : "BIGSERIAL PRIMARY KEY",
	    lite ? "DATETIME"
	    : my ? "DATETIME(3)"
		 : "TIMESTAMPTZ",
	    lite ? "FLOAT" : "DOUBLE PRECISION", "JSON", "JSON", "JSON", "JSON", lite ? "1" : "true",
	    lite ? "0" : "false");
	int rc = db_script(c->d, ddl, err);
	if (rc)
		fail_msg("old schema: %s", err);
	json_t *m = NULL;
	struct store *st = open_store(c, &m);
	char want[128];
	snprintf(want, sizeof want, "ALTER TABLE ffb_tool_calls ADD COLUMN sample_rate %s",
		 lite ? "REAL"
		 : my ? "DOUBLE"
		      : "DOUBLE PRECISION");
	/* MySQL: text is LONGTEXT, indexed by a prefix; the seed's VARCHAR(255) whole. */
	assert_true(has_string(m, my ? "ALTER TABLE ffb_tool_calls ADD COLUMN outcome LONGTEXT"
				     : "ALTER TABLE ffb_tool_calls ADD COLUMN outcome TEXT"));
	assert_true(has_string(m, want));
	assert_true(has_string(m, my ? "CREATE INDEX ix_ffb_tool_calls_outcome ON ffb_tool_calls (outcome(255))"
				     : "CREATE INDEX ix_ffb_tool_calls_outcome ON ffb_tool_calls (outcome)"));
	assert_true(has_string(m, "CREATE INDEX ix_ffb_tool_calls_tool ON ffb_tool_calls (tool)"));
	assert_true(has_string(m, "CREATE TABLE ffb_events"));
	assert_true(has_string(m, "CREATE TABLE ffb_feedback_call_links"));
	assert_false(has_string(m, "CREATE TABLE ffb_tool_calls"));
	assert_int_equal(json_array_size(m), 9); /* 2 columns, 3 indexes (outcome, tool, ...), 3 tables */
	json_decref(m);
	assert_int_equal(
	    count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls WHERE outcome IS NULL AND sample_rate IS NULL"), 2);

	/* New rows beside the old ones; the seed's queries over both. */
	struct rec_call w[2] = {call("new1", "render", T0), call("new2", "render", T0 + 1)};
	w[1].outcome = "error";
	w[1].ok = 0;
	w[1].error_type = "ToolError";
	w[0].sample_rate = 0.5;
	write_ok(st, w, 2, NULL, 0);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls WHERE NOT ok"), 2);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls WHERE outcome = 'error'"), 1);
	json_t *r = rows(
	    c->d, "SELECT tool, SUM(1.0 / COALESCE(sample_rate, 1)) AS est_calls FROM ffb_tool_calls GROUP BY tool;",
	    NULL, 0);
	assert_int_equal(json_array_size(r), 1);
	assert_true(strtod(json_string_value(json_array_get(json_array_get(r, 0), 1)), NULL) == 5.0);
	json_decref(r);
	store_free(st);

	/* Migrated once: nothing more the next time. */
	st = open_store(c, &m);
	assert_int_equal(json_array_size(m), 0);
	json_decref(m);
	store_free(st);
}

/* Every column written is read back as it was. */
static void test_write_read(void **state)
{
	struct ctx *c = *state;
	struct store *st = open_store(c, NULL);
	struct rec_call full = {
	    .call_id = "c0123456789abcdef",
	    .tool = "fs__read_file",
	    .upstream = "fs",
	    .started_ms = T0 + 1234,
	    .duration_ms = 12.25,
	    .outcome = "soft_error",
	    .ok = 0,
	    .error_type = "SoftError",
	    .error_message = "status=failed: disk \xff full", /* a byte that is not UTF-8 */
	    .session_id = "sess-1",
	    .request_id = "7",
	    .user_sub = "uid:1000",
	    .caller_kind = "uid",
	    .client_id = "claude-code/2.0",
	    .identity = "{\"groups\": [\"ops\"]}",
	    .args_size = 31,
	    .result_size = 44,
	    .arguments = "{\"path\": \"/etc/hosts\", \"password\": \"[REDACTED]\"}",
	    .result = "{\"status\": \"failed\", \"error\": \"disk full\", \"nul\": \"a\\u0000b\"}",
	    .decision = "allow",
	    .rule = "fs-read",
	    .ledger_seq = 42,
	    .sample_rate = 0.25,
	    .server_version = "1.4.0",
	    .extra = "{\"job_id\": \"j-9\"}",
	};
	struct rec_call bare = call("c-bare", "assent_status", T0 + 2000);
	struct rec_event ev = {
	    .occurred_ms = T0 + 1500,
	    .kind = "llm.call",
	    .key = "turn-1",
	    .call_id = "c0123456789abcdef",
	    .session_id = "sess-1",
	    .user_sub = "uid:1000",
	    .caller_kind = "uid",
	    .client_id = "claude-code/2.0",
	    .server_version = "1.4.0",
	    .attrs = "{\"model\": \"claude-opus-4\", \"input_tokens\": 1200, \"ok\": true, \"note\": \"x\\u0000y\"}",
	};
	struct rec_call both[2] = {full, bare};
	write_ok(st, both, 2, &ev, 1);
	/* A batch written again (a retry after a commit whose answer was lost) adds no call. */
	write_ok(st, both, 2, NULL, 0);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls"), 2);

	json_t *r =
	    rows(c->d,
		 "SELECT call_id, tool, upstream, started_at, duration_ms, outcome, ok, error_type, error_message, "
		 "session_id, request_id, user_sub, caller_kind, client_id, identity, args_size, result_size, "
		 "arguments, result, decision, rule, ledger_seq, sample_rate, server_version, extra "
		 "FROM ffb_tool_calls ORDER BY started_at",
		 NULL, 0);
	assert_int_equal(json_array_size(r), 2);
	json_t *a = json_array_get(r, 0);
#define COL(i) json_string_value(json_array_get(a, i))
	assert_string_equal(COL(0), full.call_id);
	assert_string_equal(COL(1), full.tool);
	assert_string_equal(COL(2), "fs");
	assert_int_equal(ts_of(COL(3)), T0 + 1234);
	assert_true(strtod(COL(4), NULL) == 12.25);
	assert_string_equal(COL(5), "soft_error");
	assert_false(db_bool(COL(6)));
	assert_string_equal(COL(7), "SoftError");
	/* SQLite keeps the bytes; PostgreSQL (UTF-8 only) gets U+FFFD for the bad one. */
	assert_string_equal(COL(8),
			    c->be->kind == DB_SQLITE ? full.error_message : "status=failed: disk \xef\xbf\xbd full");
	assert_string_equal(COL(9), "sess-1");
	assert_string_equal(COL(10), "7");
	assert_string_equal(COL(11), "uid:1000");
	assert_string_equal(COL(12), "uid");
	assert_string_equal(COL(13), "claude-code/2.0");
	const int json_cols[] = {14, 17, 18, 24};
	const char *json_want[] = {full.identity, full.arguments,
				   c->be->kind == DB_SQLITE
				       ? full.result
				       : "{\"status\": \"failed\", \"error\": \"disk full\", \"nul\": \"a\\ufffdb\"}",
				   full.extra};
	for (size_t i = 0; i < 4; i++) {
		json_t *got = json_loads(COL(json_cols[i]), JSON_ALLOW_NUL, NULL);
		json_t *exp = json_loads(json_want[i], JSON_ALLOW_NUL, NULL);
		assert_non_null(got);
		assert_non_null(exp);
		if (!json_equal(got, exp))
			fail_msg("column %d: %s, wanted %s", json_cols[i], COL(json_cols[i]), json_want[i]);
		json_decref(got);
		json_decref(exp);
	}
	assert_string_equal(COL(15), "31");
	assert_string_equal(COL(16), "44");
	assert_string_equal(COL(19), "allow");
	assert_string_equal(COL(20), "fs-read");
	assert_string_equal(COL(21), "42");
	assert_true(strtod(COL(22), NULL) == 0.25);
	assert_string_equal(COL(23), "1.4.0");
	/* The bare call: every optional column NULL (result_size and ledger_seq -1, sample_rate 0). */
	a = json_array_get(r, 1);
	assert_string_equal(COL(0), "c-bare");
	assert_true(db_bool(COL(6)));
	const int nulls[] = {2, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22, 23, 24};
	for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
		if (!json_is_null(json_array_get(a, nulls[i])))
			fail_msg("column %d of the bare call is not NULL", nulls[i]);
#undef COL
	json_decref(r);

	/* The event, and the seed's attribute queries on either database. */
	r = rows(
	    c->d,
	    "SELECT occurred_at, kind, \"key\", call_id, session_id, user_sub, caller_kind, client_id, server_version "
	    "FROM ffb_events",
	    NULL, 0);
	assert_int_equal(json_array_size(r), 1);
	a = json_array_get(r, 0);
	assert_int_equal(ts_of(json_string_value(json_array_get(a, 0))), T0 + 1500);
	const char *evw[] = {NULL,  "llm.call",	       "turn-1", "c0123456789abcdef", "sess-1", "uid:1000",
			     "uid", "claude-code/2.0", "1.4.0"};
	for (size_t i = 1; i < 9; i++)
		assert_string_equal(json_string_value(json_array_get(a, i)), evw[i]);
	json_decref(r);
	assert_string_equal(one(c->d, c->be->kind == DB_SQLITE ? "SELECT json_extract(attrs, '$.model') FROM ffb_events"
				      : c->be->kind == DB_MYSQL ? "SELECT JSON_VALUE(attrs, '$.model') FROM ffb_events"
								: "SELECT attrs->>'model' FROM ffb_events"),
			    "claude-opus-4");
	assert_int_equal(
	    count(c->d, c->be->kind == DB_SQLITE  ? "SELECT SUM(json_extract(attrs, '$.input_tokens')) FROM ffb_events"
			: c->be->kind == DB_MYSQL ? "SELECT SUM(JSON_VALUE(attrs, '$.input_tokens')) FROM ffb_events"
						  : "SELECT SUM((attrs->>'input_tokens')::int) FROM ffb_events"),
	    1200);
	/* The join the seed promises: an event to its call's row. */
	assert_string_equal(one(c->d, "SELECT c.tool FROM ffb_events e JOIN ffb_tool_calls c ON c.call_id = e.call_id"),
			    "fs__read_file");

	/* What is not a record is refused, naming what is missing. */
	char err[AS_ERRLEN] = "";
	struct rec_call nameless = call(NULL, "x", T0);
	assert_int_equal(store_write(st, &nameless, 1, NULL, 0, err), AS_EINVAL);
	assert_non_null(strstr(err, "call_id"));
	struct rec_event kindless = {.occurred_ms = T0};
	assert_int_equal(store_write(st, NULL, 0, &kindless, 1, err), AS_EINVAL);
	assert_non_null(strstr(err, "kind"));
	store_free(st);
}

/* The seed's estimate of the true number of calls, its query verbatim. */
static void test_estimate(void **state)
{
	struct ctx *c = *state;
	struct store *st = open_store(c, NULL);
	char ids[12][16];
	struct rec_call w[12];
	for (int i = 0; i < 12; i++) {
		snprintf(ids[i], sizeof ids[i], "e%d", i);
		w[i] = call(ids[i], i < 8 ? "pending_dispatches" : "render", T0 + i);
	}
	for (int i = 0; i < 6; i++)
		w[i].sample_rate = 0.01; /* 6 sampled-in ok calls stand for 600 */
	w[6].outcome = "error";		 /* failures of a sampled tool: kept, no rate */
	w[6].ok = 0;
	w[7].outcome = "soft_error";
	w[7].ok = 0;
	w[8].outcome = "error";
	w[8].ok = 0;
	write_ok(st, w, 12, NULL, 0);
	json_t *r = rows(
	    c->d, "SELECT tool, SUM(1.0 / COALESCE(sample_rate, 1)) AS est_calls\nFROM ffb_tool_calls GROUP BY tool;",
	    NULL, 0);
	assert_int_equal(json_array_size(r), 2);
	size_t i;
	json_t *row;
	json_array_foreach(r, i, row)
	{
		const char *tool = json_string_value(json_array_get(row, 0));
		double est = strtod(json_string_value(json_array_get(row, 1)), NULL);
		if (!strcmp(tool, "pending_dispatches"))
			assert_true(est > 601.999 && est < 602.001);
		else
			assert_true(est == 4.0);
	}
	json_decref(r);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls WHERE NOT ok"), 3);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls WHERE outcome = 'error'"), 2);
	store_free(st);
}

/* ---- retention ---- */

static void test_prune(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	struct store *st = open_store(c, NULL);
	enum { OLD = 2 * STORE_PRUNE_BATCH + 1234, NEW = 3, OLD_EV = STORE_PRUNE_BATCH + 7 };
	char(*ids)[16] = calloc(OLD + NEW, sizeof *ids);
	struct rec_call *w = calloc(OLD + NEW, sizeof *w);
	struct rec_event *e = calloc(OLD_EV + NEW, sizeof *e);
	assert_true(ids && w && e);
	int64_t cutoff = T0 - 30 * DAY_MS;
	for (int i = 0; i < OLD + NEW; i++) {
		snprintf(ids[i], sizeof ids[i], "p%d", i);
		w[i] = call(ids[i], "poll", i < OLD ? cutoff - DAY_MS + i : cutoff + i);
		w[i].session_id = i < 3 ? "sess-old" : NULL;
		w[i].user_sub = "uid:1";
	}
	for (int i = 0; i < OLD_EV + NEW; i++)
		e[i] = (struct rec_event){.occurred_ms = i < OLD_EV ? cutoff - 1 - i : cutoff + i,
					  .kind = "job.step",
					  .key = "job-1",
					  .attrs = "{}"};
	write_ok(st, w, OLD + NEW, e, OLD_EV + NEW);
	/* A report linked to three old calls keeps them, and its links. */
	struct store_feedback f = {
	    .type = "bug", .title = "hung", .description = "the poll hung", .created_ms = cutoff - DAY_MS + 10};
	int64_t id = 0;
	size_t linked = 0;
	assert_int_equal(store_feedback_add(st, &f, &id, err), 0);
	assert_int_equal(store_link(st, id, "sess-old", NULL, 0, cutoff - DAY_MS + 10, &linked, err), 0);
	assert_int_equal(linked, 3);

	int64_t nc = -1, ne = -1;
	assert_int_equal(store_prune(st, cutoff, &nc, &ne, err), 0);
	/* More than one batch each: a prune that stopped after one would say 5000. */
	assert_int_equal(nc, OLD - 3);
	assert_int_equal(ne, OLD_EV);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls"), NEW + 3);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_tool_calls WHERE call_id IN ('p0', 'p1', 'p2')"), 3);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_feedback_call_links"), 3);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_events"), NEW);
	/* Nothing left to prune. */
	assert_int_equal(store_prune(st, cutoff, &nc, &ne, err), 0);
	assert_int_equal(nc, 0);
	assert_int_equal(ne, 0);
	/* Once the report is deleted, its links go and its calls may be pruned. */
	assert_int_equal(store_feedback_delete(st, id, err), 0);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_feedback_call_links"), 0);
	assert_int_equal(store_prune(st, cutoff, &nc, &ne, err), 0);
	assert_int_equal(nc, 3);
	free(ids);
	free(w);
	free(e);
	store_free(st);
}

/* ---- QA reports ---- */

static int64_t add_fb(struct store *st, const char *type, int64_t ms, const char *session, const char *user)
{
	char err[AS_ERRLEN] = "";
	struct store_feedback f = {.type = type,
				   .title = "t",
				   .description = "d",
				   .contact = NULL,
				   .user_sub = user,
				   .caller_kind = "uid",
				   .client_id = "cli",
				   .session_id = session,
				   .created_ms = ms};
	int64_t id = 0;
	int rc = store_feedback_add(st, &f, &id, err);
	if (rc)
		fail_msg("store_feedback_add: %s", err);
	assert_true(id > 0);
	return id;
}

/* Session matches first, user matches fill the slots left, stored oldest first. */
static void test_link(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	struct store *st = open_store(c, NULL);
	int64_t now = T0 + 60 * MIN_MS, win = 15 * MIN_MS;
	struct rec_call w[40];
	char ids[40][16];
	size_t n = 0;
	/* 15 calls of session S1 by u1, a minute apart, now - 20 .. now - 6 min: the session
	 * takes them all, the five before the window too. */
	for (int i = 0; i < 15; i++, n++) {
		snprintf(ids[n], sizeof ids[n], "s%02d", i);
		w[n] = call(ids[n], "render", now - (20 - i) * MIN_MS);
		w[n].session_id = "S1";
		w[n].user_sub = "u1";
	}
	/* 10 calls of u1 without a session inside the window (now - 10 .. now - 1 min, 30 s
	 * after the minute), one before the window, one after now, and another user's. */
	for (int i = 0; i < 10; i++, n++) {
		snprintf(ids[n], sizeof ids[n], "u%02d", i);
		w[n] = call(ids[n], "ci_step", now - (10 - i) * MIN_MS + 30000);
		w[n].user_sub = "u1";
		w[n].outcome = i == 9 ? "error" : "ok";
		w[n].ok = i != 9;
		w[n].error_type = i == 9 ? "ToolError" : NULL;
	}
	snprintf(ids[n], sizeof ids[n], "u-early");
	w[n] = call(ids[n], "ci_step", now - win - MIN_MS);
	w[n++].user_sub = "u1";
	snprintf(ids[n], sizeof ids[n], "u-late");
	w[n] = call(ids[n], "ci_step", now + MIN_MS);
	w[n++].user_sub = "u1";
	snprintf(ids[n], sizeof ids[n], "s-late");
	w[n] = call(ids[n], "render", now + MIN_MS);
	w[n].session_id = "S1";
	w[n++].user_sub = "u1";
	snprintf(ids[n], sizeof ids[n], "other");
	w[n] = call(ids[n], "ci_step", now - MIN_MS);
	w[n++].user_sub = "u2";
	write_ok(st, w, n, NULL, 0);

	int64_t id = add_fb(st, "bug", now, "S1", "u1");
	size_t linked = 0;
	assert_int_equal(store_link(st, id, "S1", "u1", win, now, &linked, err), 0);
	assert_int_equal(linked, STORE_LINKS_MAX); /* 15 of the session, the 5 newest of the user's */
	json_t *show = NULL;
	assert_int_equal(store_feedback_show(st, id, &show, err), 0);
	json_t *calls = json_object_get(show, "calls");
	assert_int_equal(json_array_size(calls), 20);
	assert_string_equal(json_string_value(json_object_get(json_object_get(show, "feedback"), "type")), "bug");
	assert_string_equal(json_string_value(json_object_get(json_object_get(show, "feedback"), "status")), "open");
	/* Oldest first: s00..s14 (now - 20 .. now - 6 min), then u05..u09 (now - 4.5 .. now -
	 * 0.5 min); the user's calls fill the slots with their newest, never S1's again. */
	const char *want[20];
	char wbuf[20][16];
	for (int i = 0; i < 15; i++) {
		snprintf(wbuf[i], sizeof wbuf[i], "s%02d", i);
		want[i] = wbuf[i];
	}
	for (int i = 0; i < 5; i++) {
		snprintf(wbuf[15 + i], sizeof wbuf[15 + i], "u%02d", 5 + i);
		want[15 + i] = wbuf[15 + i];
	}
	char prev[DB_TS_LEN] = "";
	for (size_t i = 0; i < 20; i++) {
		json_t *l = json_array_get(calls, i);
		assert_int_equal(json_integer_value(json_object_get(l, "position")), (json_int_t)i + 1);
		assert_string_equal(json_string_value(json_object_get(l, "call_id")), want[i]);
		assert_string_equal(json_string_value(json_object_get(l, "rule")), i < 15 ? "session" : "user_window");
		assert_string_equal(json_string_value(json_object_get(l, "tool")), i < 15 ? "render" : "ci_step");
		const char *at = json_string_value(json_object_get(l, "started_at"));
		assert_non_null(at);
		assert_int_equal(strlen(at), 24); /* YYYY-MM-DDTHH:MM:SS.mmmZ */
		assert_true(strcmp(prev, at) < 0);
		snprintf(prev, sizeof prev, "%s", at);
		assert_true(json_real_value(json_object_get(l, "duration_ms")) == 1.5);
	}
	json_t *last = json_array_get(calls, 19);
	assert_string_equal(json_string_value(json_object_get(last, "outcome")), "error");
	assert_string_equal(json_string_value(json_object_get(last, "error_type")), "ToolError");
	json_decref(show);

	/* A client without sessions: by user alone, within the window (now - 15 min, S1's
	 * s05 exactly then, included), the 20 newest, by time: s05..s09, then S1's and the
	 * sessionless ones interleaved (s10 at -10, u00 at -9.5, s11 at -9, ...). */
	int64_t id2 = add_fb(st, "question", now, NULL, "u1");
	assert_int_equal(store_link(st, id2, NULL, "u1", win, now, &linked, err), 0);
	assert_int_equal(linked, 20);
	assert_int_equal(store_feedback_show(st, id2, &show, err), 0);
	calls = json_object_get(show, "calls");
	const char *order[] = {"s05", "s06", "s07", "s08", "s09", "s10", "u00", "s11", "u01", "s12"};
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(calls, i), "call_id")), order[i]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 19), "call_id")), "u09");
	for (size_t i = 0; i < json_array_size(calls); i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(calls, i), "rule")),
				    "user_window");
	json_decref(show);
	/* A narrower window: fewer. */
	assert_int_equal(store_link(st, id2, NULL, "u1", 2 * MIN_MS, now, &linked, err), 0);
	assert_int_equal(linked, 2); /* u08, u09 */

	/* Linking again replaces the links; a session with room left takes user calls from
	 * other sessions only, never the session's own twice. */
	assert_int_equal(store_link(st, id, "S1", "u1", win, now, &linked, err), 0);
	assert_int_equal(linked, 20);
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_feedback_call_links"), 20 + 2);
	/* Nothing to link: 0, and no report: AS_ENOTFOUND. */
	int64_t id3 = add_fb(st, "bug", now, "S-none", "u-none");
	assert_int_equal(store_link(st, id3, "S-none", "u-none", win, now, &linked, err), 0);
	assert_int_equal(linked, 0);
	assert_int_equal(store_link(st, 999999, "S1", "u1", win, now, &linked, err), AS_ENOTFOUND);
	assert_non_null(strstr(err, "999999"));

	/* A report kept elsewhere (store_link_ref): its own id, at most max calls; linking again
	 * replaces the caller's own links under it, never another's; digits alone are refused. */
	const char *q_ref = "SELECT COUNT(*) FROM ffb_feedback_call_links WHERE feedback_id = 'bug-7Q2X'";
	assert_int_equal(store_link_ref(st, "bug-7Q2X", "S1", "u1", win, now, 5, &linked, err), 0);
	assert_int_equal(linked, 5);
	assert_int_equal(store_link_ref(st, "bug-7Q2X", NULL, "u2", win, now, 0, &linked, err), 0);
	assert_int_equal(linked, 1); /* u2's one call */
	assert_int_equal(count(c->d, q_ref), 6);
	assert_int_equal(store_link_ref(st, "bug-7Q2X", "S1", "u1", win, now, 3, &linked, err), 0);
	assert_int_equal(linked, 3);
	assert_int_equal(count(c->d, q_ref), 4); /* u1's five replaced by three, u2's kept */
	assert_int_equal(count(c->d, "SELECT COUNT(*) FROM ffb_feedback"), 3); /* no report made */
	assert_int_equal(store_link_ref(st, "42", "S1", "u1", win, now, 0, &linked, err), AS_EINVAL);
	assert_non_null(strstr(err, "digits alone"));
	assert_int_equal(store_link_ref(st, "", "S1", "u1", win, now, 0, &linked, err), AS_EINVAL);
	assert_int_equal(store_link_ref(st, "x", NULL, NULL, win, now, 0, &linked, err), AS_EINVAL);
	store_free(st);
}

/* open -> in_progress -> resolved -> closed, one step forward only. */
static void test_feedback_workflow(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	struct store *st = open_store(c, NULL);
	int64_t id = add_fb(st, "bug", T0, "S1", "u1");
	assert_int_equal(store_feedback_status(st, id, "resolved", T0 + 1, err), AS_EINVAL); /* a skip */
	assert_non_null(strstr(err, "in_progress"));
	assert_int_equal(store_feedback_status(st, id, "closed", T0 + 1, err), AS_EINVAL);
	assert_int_equal(store_feedback_status(st, id, "open", T0 + 1, err), AS_EINVAL); /* no move */
	assert_int_equal(store_feedback_status(st, id, "done", T0 + 1, err), AS_EINVAL);
	assert_non_null(strstr(err, "done"));
	assert_int_equal(store_feedback_status(st, id, "in_progress", T0 + 1000, err), 0);
	assert_int_equal(store_feedback_status(st, id, "open", T0 + 1, err), AS_EINVAL); /* back */
	assert_int_equal(store_feedback_status(st, id, "in_progress", T0 + 1, err), AS_EINVAL);
	assert_int_equal(store_feedback_status(st, id, "resolved", T0 + 2000, err), 0);
	assert_int_equal(store_feedback_status(st, id, "in_progress", T0 + 1, err), AS_EINVAL);
	assert_int_equal(store_feedback_status(st, id, "closed", T0 + 3000, err), 0);
	assert_int_equal(store_feedback_status(st, id, "closed", T0 + 1, err), AS_EINVAL);
	assert_non_null(strstr(err, "no further"));
	assert_int_equal(store_feedback_status(st, 424242, "in_progress", T0, err), AS_ENOTFOUND);
	json_t *show = NULL;
	assert_int_equal(store_feedback_show(st, id, &show, err), 0);
	json_t *f = json_object_get(show, "feedback");
	assert_string_equal(json_string_value(json_object_get(f, "status")), "closed");
	assert_string_equal(json_string_value(json_object_get(f, "created_at")), "2026-01-01T00:00:00.000Z");
	assert_string_equal(json_string_value(json_object_get(f, "updated_at")), "2026-01-01T00:00:03.000Z");
	assert_string_equal(json_string_value(json_object_get(f, "session_id")), "S1");
	assert_true(json_is_null(json_object_get(f, "contact")));
	assert_int_equal(json_array_size(json_object_get(show, "calls")), 0);
	json_decref(show);

	/* What a report must have. */
	int64_t bad = 0;
	struct store_feedback nt = {.type = "complaint", .title = "t", .description = "d"};
	assert_int_equal(store_feedback_add(st, &nt, &bad, err), AS_EINVAL);
	assert_non_null(strstr(err, "complaint"));
	struct store_feedback nd = {.type = "bug", .title = "t", .description = ""};
	assert_int_equal(store_feedback_add(st, &nd, &bad, err), AS_EINVAL);

	/* Listing: newest first, filtered, paged. */
	int64_t ids[5];
	const char *types[] = {"feature", "bug", "feature", "question", "feature"};
	for (int i = 0; i < 5; i++)
		ids[i] = add_fb(st, types[i], T0 + (i + 1) * MIN_MS, NULL, "u1");
	json_t *l = NULL;
	assert_int_equal(store_feedback_list(st, NULL, NULL, 0, 0, &l, err), 0);
	assert_int_equal(json_integer_value(json_object_get(l, "total")), 6);
	assert_int_equal(json_integer_value(json_object_get(l, "limit")), STORE_LIST_LIMIT);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(l, "items"), 0), "id")),
			 ids[4]);
	json_decref(l);
	assert_int_equal(store_feedback_list(st, "feature", NULL, 1, 1, &l, err), 0);
	assert_int_equal(json_integer_value(json_object_get(l, "total")), 3);
	assert_int_equal(json_array_size(json_object_get(l, "items")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(l, "items"), 0), "id")),
			 ids[2]);
	assert_int_equal(json_integer_value(json_object_get(l, "offset")), 1);
	json_decref(l);
	assert_int_equal(store_feedback_list(st, NULL, "closed", 0, 10, &l, err), 0);
	assert_int_equal(json_integer_value(json_object_get(l, "total")), 1);
	json_decref(l);
	assert_int_equal(store_feedback_list(st, "complaint", NULL, 0, 10, &l, err), AS_EINVAL);
	assert_int_equal(store_feedback_list(st, NULL, "done", 0, 10, &l, err), AS_EINVAL);
	assert_int_equal(store_feedback_list(st, NULL, NULL, 0, STORE_LIST_MAX + 1, &l, err), AS_EINVAL);

	assert_int_equal(store_feedback_delete(st, ids[0], err), 0);
	assert_int_equal(store_feedback_delete(st, ids[0], err), AS_ENOTFOUND);
	assert_int_equal(store_feedback_show(st, ids[0], &show, err), AS_ENOTFOUND);
	assert_null(show);
	store_free(st);
}

static void test_stats(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	struct store *st = open_store(c, NULL);
	int64_t now = T0 + 30 * DAY_MS;
	add_fb(st, "bug", now - 8 * DAY_MS, NULL, NULL); /* before the last 7 days */
	int64_t b = add_fb(st, "bug", now - 6 * DAY_MS, NULL, NULL);
	add_fb(st, "feature", now - DAY_MS, NULL, NULL);
	add_fb(st, "question", now, NULL, NULL);
	assert_int_equal(store_feedback_status(st, b, "in_progress", now, err), 0);
	json_t *s = NULL;
	assert_int_equal(store_feedback_stats(st, now, &s, err), 0);
	assert_int_equal(json_integer_value(json_object_get(s, "total")), 4);
	assert_int_equal(json_integer_value(json_object_get(s, "last_7_days")), 3);
	json_t *bt = json_object_get(s, "by_type"), *bs = json_object_get(s, "by_status");
	assert_int_equal(json_integer_value(json_object_get(bt, "bug")), 2);
	assert_int_equal(json_integer_value(json_object_get(bt, "feature")), 1);
	assert_int_equal(json_integer_value(json_object_get(bt, "question")), 1);
	assert_non_null(json_object_get(bt, "improvement"));
	assert_int_equal(json_integer_value(json_object_get(bt, "improvement")), 0);
	assert_int_equal(json_integer_value(json_object_get(bs, "open")), 3);
	assert_int_equal(json_integer_value(json_object_get(bs, "in_progress")), 1);
	assert_int_equal(json_integer_value(json_object_get(bs, "closed")), 0);
	json_decref(s);
	store_free(st);
}

/* ---- events ---- */

static void test_events_for(void **state)
{
	struct ctx *c = *state;
	char err[AS_ERRLEN] = "";
	struct store *st = open_store(c, NULL);
	struct rec_event e[8];
	const char *kinds[] = {"job.submitted", "step.started",	 "step.finished",
			       "step.started",	"step.finished", "job.finished"};
	/* Written newest first: the answer's order is the events' times, not the ids. */
	for (int i = 0; i < 6; i++)
		e[i] = (struct rec_event){.occurred_ms = T0 + (6 - i) * 1000,
					  .kind = (char *)kinds[5 - i],
					  .key = "job-wing",
					  .attrs = "{\"n\": 1, \"nan\": \"nan\"}"};
	e[0].user_sub = "agent:ci"; /* who recorded them: two principals under one key */
	e[1].user_sub = "agent:other";
	e[6] = (struct rec_event){.occurred_ms = T0 + 500, .kind = "step.started", .key = "job-other", .attrs = NULL};
	e[7] = (struct rec_event){.occurred_ms = T0 + 600, .kind = "loose", .key = NULL, .attrs = "{}"};
	write_ok(st, NULL, 0, e, 8);

	json_t *a = NULL;
	assert_int_equal(store_events_for(st, "job-wing", NULL, NULL, 0, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 6);
	for (int i = 0; i < 6; i++) {
		json_t *ev = json_array_get(a, i);
		assert_string_equal(json_string_value(json_object_get(ev, "kind")), kinds[i]);
		char want[DB_TS_LEN];
		db_ts_iso(T0 + (i + 1) * 1000, want);
		assert_string_equal(json_string_value(json_object_get(ev, "occurred_at")), want);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "attrs"), "n")), 1);
		assert_true(json_is_null(json_object_get(ev, "call_id")));
	}
	json_decref(a);
	const char *steps[] = {"step.started", "step.finished"};
	assert_int_equal(store_events_for(st, "job-wing", NULL, steps, 2, 100, &a, err), 0);
	assert_int_equal(json_array_size(a), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "kind")), "step.started");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 3), "kind")), "step.finished");
	json_decref(a);
	/* More than limit: the newest, still oldest first. */
	assert_int_equal(store_events_for(st, "job-wing", NULL, steps, 2, 3, &a, err), 0);
	assert_int_equal(json_array_size(a), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "kind")), "step.finished");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "occurred_at")),
			    "2026-01-01T00:00:03.000Z");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 2), "occurred_at")),
			    "2026-01-01T00:00:05.000Z");
	json_decref(a);
	/* by: only the events that principal recorded under the key (each its own namespace). */
	assert_int_equal(store_events_for(st, "job-wing", "agent:ci", NULL, 0, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "user_sub")), "agent:ci");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "kind")), "job.finished");
	json_decref(a);
	assert_int_equal(store_events_for(st, "job-wing", "agent:other", steps, 2, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "kind")), "step.finished");
	json_decref(a);
	assert_int_equal(store_events_for(st, "job-wing", "agent:nobody", NULL, 0, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	const char *fin[] = {"job.finished"};
	assert_int_equal(store_events_for(st, "job-wing", NULL, fin, 1, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 1);
	json_decref(a);
	assert_int_equal(store_events_for(st, "job-none", NULL, NULL, 0, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	assert_int_equal(store_events_for(st, "job-other", NULL, NULL, 0, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 1);
	assert_true(json_is_null(json_object_get(json_array_get(a, 0), "attrs")));
	json_decref(a);
	assert_int_equal(store_events_for(st, "job-wing", NULL, NULL, 0, STORE_EVENTS_MAX + 1, &a, err), AS_EINVAL);
	const char *many[STORE_EVENT_KINDS_MAX + 1];
	for (int i = 0; i <= STORE_EVENT_KINDS_MAX; i++)
		many[i] = "k";
	assert_int_equal(store_events_for(st, "job-wing", NULL, many, STORE_EVENT_KINDS_MAX + 1, 0, &a, err),
			 AS_EINVAL);
	assert_int_equal(store_events_for(st, "job-wing", NULL, many, STORE_EVENT_KINDS_MAX, 0, &a, err), 0);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	store_free(st);
}

/* The recorder's batch as the recorder writes it: from inside its confinement (Landlock keeps
 * it to its directory), 512 rows in one store_write. SQLite spills a large statement's
 * journal to a temporary file, by default in /var/tmp, which the confinement refuses: the
 * write must not need one. A child process enters the confinement (it cannot be left) and
 * answers with its exit status: 0 written, 1 refused, 2 could not be confined. It leaves by
 * exit_group itself: the sanitizers' _exit makes calls the seccomp filter kills. */
static void test_confined_batch(void **state)
{
	struct ctx *c = *state; /* SQLite only: the sqlite group alone runs it */
	enum { N = 512 };
	uid_t uid = 65534;
	if (geteuid() == 0)
		assert_int_equal(chown(c->dir, uid, uid), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[AS_ERRLEN] = "";
		struct confine_opts o = {.dir = c->dir, .uid = uid};
		if (confine_enter(&o, err) != 0) {
			fprintf(stderr, "confine_enter: %s\n", err);
			syscall(SYS_exit_group, 2);
		}
		static char ids[N][24], msg[N][256];
		static struct rec_call calls[N];
		for (int i = 0; i < N; i++) {
			snprintf(ids[i], sizeof ids[i], "cconfined%05d", i);
			memset(msg[i], 'x', sizeof msg[i] - 1);
			calls[i] = call(ids[i], "fs__echo", T0 + i);
			calls[i].error_message = msg[i];
		}
		struct db *d = NULL;
		struct store *st = NULL;
		int rc = db_open("sqlite:confined.db", &d, err);
		rc = rc ? rc : store_open(d, "ffb_", &st, NULL, err);
		rc = rc ? rc : store_write(st, calls, N, NULL, 0, err);
		if (rc)
			fprintf(stderr, "confined write: %s\n", err);
		syscall(SYS_exit_group, rc ? 1 : 0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2 && geteuid() != 0)
		skip(); /* no Landlock here for an unprivileged test */
	assert_int_equal(WEXITSTATUS(status), 0);
	char url[600];
	snprintf(url, sizeof url, "sqlite:%s/confined.db", c->dir);
	struct db *d = NULL;
	char err[AS_ERRLEN] = "";
	assert_int_equal(db_open(url, &d, err), 0);
	assert_int_equal(count(d, "SELECT COUNT(*) FROM ffb_tool_calls"), N);
	db_close(d);
}

#define CASES(be)                                                                                                      \
	cmocka_unit_test_prestate_setup_teardown(test_db_params, setup, teardown, be),                                 \
	    cmocka_unit_test_prestate_setup_teardown(test_db_reconnect, setup, teardown, be),                          \
	    cmocka_unit_test_prestate_setup_teardown(test_schema, setup, teardown, be),                                \
	    cmocka_unit_test_prestate_setup_teardown(test_migration, setup, teardown, be),                             \
	    cmocka_unit_test_prestate_setup_teardown(test_write_read, setup, teardown, be),                            \
	    cmocka_unit_test_prestate_setup_teardown(test_estimate, setup, teardown, be),                              \
	    cmocka_unit_test_prestate_setup_teardown(test_prune, setup, teardown, be),                                 \
	    cmocka_unit_test_prestate_setup_teardown(test_link, setup, teardown, be),                                  \
	    cmocka_unit_test_prestate_setup_teardown(test_feedback_workflow, setup, teardown, be),                     \
	    cmocka_unit_test_prestate_setup_teardown(test_stats, setup, teardown, be),                                 \
	    cmocka_unit_test_prestate_setup_teardown(test_events_for, setup, teardown, be)

int main(void)
{
	static struct be lite = {DB_SQLITE, NULL}, pg = {DB_POSTGRES, NULL}, my = {DB_MYSQL, NULL};
	const struct CMUnitTest db_tests[] = {
	    cmocka_unit_test(test_db_ts),
	    cmocka_unit_test(test_db_open_errors),
	};
	const struct CMUnitTest lite_tests[] = {
	    CASES(&lite), cmocka_unit_test_prestate_setup_teardown(test_confined_batch, setup, teardown, &lite)};
	const struct CMUnitTest pg_tests[] = {CASES(&pg)};
	const struct CMUnitTest my_tests[] = {CASES(&my)};
	int rc = cmocka_run_group_tests_name("db", db_tests, NULL, NULL);
	rc += cmocka_run_group_tests_name("sqlite", lite_tests, NULL, NULL);
	pg.url = getenv("ASSENT_TEST_PG");
	if (pg.url && *pg.url)
		rc += cmocka_run_group_tests_name("postgresql", pg_tests, NULL, NULL);
	my.url = getenv("ASSENT_TEST_MY");
	if (my.url && *my.url)
		rc += cmocka_run_group_tests_name("mysql", my_tests, NULL, NULL);
	return rc;
}
