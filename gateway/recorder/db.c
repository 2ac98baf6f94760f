/* The recorder's database connection (db.h): SQLite through libsqlite3, PostgreSQL
 * through libpq, MySQL / MariaDB through libmariadb (db_my.c), all taking $1..$n text
 * parameters and answering text columns, so that store.c writes each query once. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <postgresql/libpq-fe.h>
#include <sqlite3.h>

#include "gateway/recorder/db.h"
#include "gateway/recorder/db_my.h"
#include "gateway/proto/myurl.h"
#include "common/util.h"

#define DB_COLS_STACK 64 /* columns of a row without an allocation */

struct db_stmt {
	const char *key; /* the caller's SQL pointer */
	char *sql;	 /* its text, to confirm a hit (the pointer may be reused) */
	sqlite3_stmt *st;
	unsigned long used;
};

struct db {
	enum db_kind kind;
	char *target; /* SQLite path or libpq conninfo; may hold a password: wiped when freed */
	sqlite3 *lite;
	PGconn *pg;
	struct dbmy *my;
	struct db_stmt cache[DB_STMT_CACHE];
	unsigned long clock;
};

/* The start of a statement, whitespace folded, for error messages. */
const char *db_sql_shown(const char *sql, char out[DB_SQL_SHOWN + 4])
{
	size_t o = 0;
	int space = 0;
	for (const char *p = sql; *p && o < DB_SQL_SHOWN; p++) {
		if (isspace((unsigned char)*p)) {
			space = o > 0;
			continue;
		}
		if (space && o < DB_SQL_SHOWN)
			out[o++] = ' ';
		space = 0;
		out[o++] = *p;
	}
	out[o] = 0;
	if (strlen(sql) > o)
		memcpy(out + (o < DB_SQL_SHOWN ? o : DB_SQL_SHOWN), "...", 4);
	return out;
}

/* The first line of a libpq message, without its trailing newline. */
static void first_line(const char *msg, char *out, size_t n)
{
	if (!msg || !*msg)
		msg = "no message";
	size_t k = strcspn(msg, "\r\n");
	if (k >= n)
		k = n - 1;
	memcpy(out, msg, k);
	out[k] = 0;
}

/* Replaces each occurrence of secret in s (NUL-terminated, in place) with "***". */
void db_mask(char *s, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	if (n == 0)
		return;
	char *p = s;
	while ((p = strstr(p, secret))) {
		size_t keep = n < 3 ? n : 3;
		memset(p, '*', keep);
		memmove(p + keep, p + n, strlen(p + n) + 1);
		p += keep;
	}
}

/* libpq's messages never quote a password, but a conninfo it cannot parse is quoted
 * back; mask the password wherever it appears, and drop the text when the conninfo did
 * not parse and may hold one. */
static void pg_mask(char *msg, const char *target)
{
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(target, &perr);
	if (!opts) {
		PQfreemem(perr);
		if (strchr(target, '@') || strcasestr(target, "password"))
			snprintf(msg, AS_ERRLEN,
				 "libpq did not parse it (its message is not shown: it may quote the password)");
		return;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val)
			db_mask(msg, o->val);
	PQconninfoFree(opts);
}

static void cache_drop(struct db *d)
{
	for (size_t i = 0; i < DB_STMT_CACHE; i++) {
		sqlite3_finalize(d->cache[i].st);
		free(d->cache[i].sql);
		memset(&d->cache[i], 0, sizeof d->cache[i]);
	}
}

/* A relative path stays relative: the default VFS would make it absolute from getcwd, and
 * the recorder, once its uid is dropped, cannot walk the state directory's path (0700, the
 * signer's) but only its own directory, which is its working directory. */
static sqlite3_vfs rel_vfs;
static sqlite3_vfs *rel_base;

static int rel_full(sqlite3_vfs *v, const char *z, int n, char *out)
{
	(void)v;
	if (z[0] == '/')
		return rel_base->xFullPathname(rel_base, z, n, out);
	if ((int)strlen(z) >= n)
		return SQLITE_CANTOPEN;
	snprintf(out, (size_t)n, "%s", z);
	return SQLITE_OK;
}

static const char *rel_vfs_name(void)
{
	if (!rel_base && (rel_base = sqlite3_vfs_find(NULL))) {
		rel_vfs = *rel_base;
		rel_vfs.zName = "assent-relative";
		rel_vfs.pNext = NULL;
		rel_vfs.xFullPathname = rel_full;
		if (sqlite3_vfs_register(&rel_vfs, 0) != SQLITE_OK)
			rel_base = NULL;
	}
	return rel_base ? rel_vfs.zName : NULL;
}

static int lite_connect(struct db *d, char *err)
{
	const char *path = d->target;
	/* The records are private: the file (and so its -wal and -shm, which SQLite makes
	 * with the database's mode) is created 0600 whatever the umask. */
	if (*path && strcmp(path, ":memory:") && strncmp(path, "file:", 5)) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return as_fail(err, AS_EIO, "cannot open SQLite database %s: %s", path, strerror(errno));
		close(fd);
	}
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(
	    path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
	    *path && *path != '/' && strncmp(path, "file:", 5) && strcmp(path, ":memory:") ? rel_vfs_name() : NULL);
	if (rc != SQLITE_OK) {
		as_fail(err, AS_EIO, "cannot open SQLite database %s: %s", path,
			db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close_v2(db);
		return AS_EIO;
	}
	sqlite3_busy_timeout(db, 5000);
	char *msg = NULL;
	/* temp_store MEMORY: a large statement's journal (a batch of rows) and temporary
	 * tables stay in memory, never a file in /var/tmp or /tmp, which the recorder's
	 * confinement refuses ("unable to open database file" on a batch's INSERT). */
	rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY",
			  NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		as_fail(err, AS_EIO, "SQLite database %s: cannot set WAL mode and temp_store: %s", path,
			msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		sqlite3_close_v2(db);
		return AS_EIO;
	}
	d->lite = db;
	return 0;
}

/* The server's notices ("table ... does not exist, skipping") are not errors: libpq
 * would print each on stderr. */
static void pg_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static int pg_connect(struct db *d, char *err)
{
	/* Later keywords override what the conninfo (dbname, expanded) says: a default
	 * connect timeout the conninfo may change, UTF-8 it may not. */
	const char *kw[] = {"connect_timeout", "application_name", "dbname", "client_encoding", NULL};
	const char *val[] = {"10", "assent-recorder", d->target, "UTF8", NULL};
	PGconn *c = PQconnectdbParams(kw, val, 1);
	if (!c)
		return as_fail(err, AS_ENOMEM, "PostgreSQL: out of memory connecting");
	if (PQstatus(c) != CONNECTION_OK) {
		char line[AS_ERRLEN];
		first_line(PQerrorMessage(c), line, sizeof line);
		pg_mask(line, d->target);
		PQfinish(c);
		return as_fail(err, AS_EIO, "cannot connect to PostgreSQL: %s", line);
	}
	/* Timestamps come back in UTC and ISO form (db_ts_parse reads any offset anyway). */
	PGresult *r = PQexec(c, "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		char line[AS_ERRLEN];
		first_line(PQresultErrorMessage(r), line, sizeof line);
		PQclear(r);
		PQfinish(c);
		return as_fail(err, AS_EIO, "PostgreSQL: cannot set the session's time zone to UTC: %s", line);
	}
	PQclear(r);
	PQsetNoticeProcessor(c, pg_notice, NULL);
	d->pg = c;
	return 0;
}

int db_open(const char *url, struct db **out, char *err)
{
	*out = NULL;
	if (!url)
		return as_fail(err, AS_EINVAL, "no database URL");
	enum db_kind kind;
	const char *target;
	if (myurl_is(url)) {
		struct db *d = calloc(1, sizeof *d);
		if (!d)
			return as_fail(err, AS_ENOMEM, "out of memory opening the database");
		d->kind = DB_MYSQL;
		int rc = dbmy_open(url, &d->my, err);
		if (rc < 0) {
			free(d);
			return rc;
		}
		*out = d;
		return 0;
	}
	if (!strncmp(url, "sqlite:", 7)) {
		kind = DB_SQLITE;
		target = url + 7;
		if (!*target)
			return as_fail(err, AS_EINVAL, "database URL \"sqlite:\" names no file (sqlite:PATH)");
	} else if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11)) {
		kind = DB_POSTGRES;
		target = url;
	} else if (!strncmp(url, "postgresql:", 11)) {
		kind = DB_POSTGRES;
		target = url + 11;
	} else {
		char shown[24];
		size_t k = strcspn(url, ":/@ ");
		snprintf(shown, sizeof shown, "%.*s", (int)(k < 16 ? k : 16), url);
		return as_fail(err, AS_EINVAL,
			       "database URL of unknown kind \"%s...\": expected sqlite:PATH, postgresql://..., "
			       "postgresql:CONNINFO or mysql://... (mariadb://...)",
			       shown);
	}
	if (kind == DB_POSTGRES) {
		char *perr = NULL;
		PQconninfoOption *opts = PQconninfoParse(target, &perr);
		if (!opts) {
			char line[AS_ERRLEN];
			first_line(perr ? perr : "out of memory", line, sizeof line);
			PQfreemem(perr);
			pg_mask(line, target);
			return as_fail(err, AS_EINVAL, "PostgreSQL connection string refused: %s", line);
		}
		PQconninfoFree(opts);
	}
	struct db *d = calloc(1, sizeof *d);
	if (!d || !(d->target = strdup(target))) {
		free(d);
		return as_fail(err, AS_ENOMEM, "out of memory opening the database");
	}
	d->kind = kind;
	int rc = kind == DB_SQLITE ? lite_connect(d, err) : pg_connect(d, err);
	if (rc < 0) {
		db_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

static void disconnect(struct db *d)
{
	cache_drop(d);
	if (d->lite)
		sqlite3_close_v2(d->lite);
	d->lite = NULL;
	if (d->pg)
		PQfinish(d->pg);
	d->pg = NULL;
}

void db_close(struct db *d)
{
	if (!d)
		return;
	disconnect(d);
	dbmy_close(d->my);
	if (d->target) {
		explicit_bzero(d->target, strlen(d->target));
		free(d->target);
	}
	free(d);
}

enum db_kind db_kind(const struct db *d)
{
	return d->kind;
}

int db_reconnect(struct db *d, char *err)
{
	if (d->kind == DB_MYSQL)
		return dbmy_reconnect(d->my, err);
	disconnect(d);
	return d->kind == DB_SQLITE ? lite_connect(d, err) : pg_connect(d, err);
}

/* The PostgreSQL server's TCP port (5432 unless the conninfo says); 0 for a unix socket. */
static unsigned pg_tcp_port(const char *url)
{
	const char *ci = !strncmp(url, "postgresql:", 11) && strncmp(url, "postgresql://", 13) ? url + 11 : url;
	char *e = NULL;
	PQconninfoOption *o = PQconninfoParse(ci, &e);
	PQfreemem(e);
	unsigned port = 5432;
	int unix_sock = 0;
	for (PQconninfoOption *x = o; x && x->keyword; x++) {
		uint64_t v;
		if (!strcmp(x->keyword, "port") && x->val && *x->val && parse_u64(x->val, &v) == 0 && v && v < 65536)
			port = (unsigned)v;
		if (!strcmp(x->keyword, "host") && x->val && x->val[0] == '/')
			unix_sock = 1;
	}
	PQconninfoFree(o);
	return unix_sock ? 0 : port;
}

int db_url_net(const char *url)
{
	return url && (!strncmp(url, "postgres", 8) || myurl_is(url));
}

unsigned db_url_tcp_port(const char *url)
{
	if (url && !strncmp(url, "postgres", 8))
		return pg_tcp_port(url);
	return url && myurl_is(url) ? dbmy_tcp_port(url) : 0;
}

int db_bool(const char *v)
{
	return v && (!strcmp(v, "1") || !strcmp(v, "t") || !strcmp(v, "true"));
}

/* ---- SQLite ---- */

static int lite_code(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_ERROR:
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_TOOBIG:
	case SQLITE_RANGE:
		return AS_EINVAL;
	case SQLITE_NOMEM:
		return AS_ENOMEM;
	default:
		return AS_EIO;
	}
}

static int lite_fail(struct db *d, int rc, const char *sql, char *err)
{
	char shown[DB_SQL_SHOWN + 4];
	return as_fail(err, lite_code(rc), "SQLite: %s (in %s)", d->lite ? sqlite3_errmsg(d->lite) : sqlite3_errstr(rc),
		       db_sql_shown(sql, shown));
}

/* $N outside quotes and comments becomes ?N (same length): SQLite binds ?N at index N. */
static char *lite_rewrite(const char *sql)
{
	char *s = strdup(sql);
	if (!s)
		return NULL;
	for (char *p = s; *p; p++) {
		if (*p == '\'' || *p == '"') {
			char q = *p;
			while (p[1] && p[1] != q)
				p++;
			if (p[1])
				p++; /* the closing quote; a doubled quote reopens on the next turn */
		} else if (p[0] == '-' && p[1] == '-') {
			while (p[1] && p[1] != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			p++;
			while (p[1] && !(p[1] == '*' && p[2] == '/'))
				p++;
			if (p[1])
				p += 2;
		} else if (*p == '$' && isdigit((unsigned char)p[1])) {
			*p = '?';
		}
	}
	return s;
}

static int lite_prepare(struct db *d, const char *sql, sqlite3_stmt **out, char *err)
{
	struct db_stmt *slot = &d->cache[0];
	for (size_t i = 0; i < DB_STMT_CACHE; i++) {
		struct db_stmt *c = &d->cache[i];
		if (c->key == sql && c->sql && !strcmp(c->sql, sql)) {
			c->used = ++d->clock;
			*out = c->st;
			return 0;
		}
		if (c->used < slot->used)
			slot = c;
	}
	char *rw = lite_rewrite(sql);
	char *copy = strdup(sql);
	if (!rw || !copy) {
		free(rw);
		free(copy);
		return as_fail(err, AS_ENOMEM, "out of memory preparing a statement");
	}
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	int rc = sqlite3_prepare_v3(d->lite, rw, -1, SQLITE_PREPARE_PERSISTENT, &st, &tail);
	if (rc == SQLITE_OK) {
		while (tail && (isspace((unsigned char)*tail) || *tail == ';'))
			tail++;
		if (tail && *tail) {
			sqlite3_finalize(st);
			free(rw);
			free(copy);
			char shown[DB_SQL_SHOWN + 4];
			return as_fail(err, AS_EINVAL, "more than one statement (in %s): use db_script",
				       db_sql_shown(sql, shown));
		}
	}
	free(rw);
	if (rc != SQLITE_OK || !st) {
		free(copy);
		if (rc == SQLITE_OK) {
			char shown[DB_SQL_SHOWN + 4];
			return as_fail(err, AS_EINVAL, "no statement in %s", db_sql_shown(sql, shown));
		}
		return lite_fail(d, rc, sql, err);
	}
	sqlite3_finalize(slot->st);
	free(slot->sql);
	slot->key = sql;
	slot->sql = copy;
	slot->st = st;
	slot->used = ++d->clock;
	*out = st;
	return 0;
}

static int lite_run(struct db *d, const char *sql, const char *const *params, size_t n, int64_t *changes, db_row_fn row,
		    void *ctx, char *err)
{
	if (!d->lite)
		return as_fail(err, AS_EIO, "SQLite database %s is not open (reconnect failed)", d->target);
	sqlite3_stmt *st = NULL;
	GUARD(lite_prepare(d, sql, &st, err));
	int rc = 0;
	int want = sqlite3_bind_parameter_count(st);
	if ((size_t)want != n) {
		char shown[DB_SQL_SHOWN + 4];
		rc = as_fail(err, AS_EINVAL, "statement takes %d parameters, %zu given (in %s)", want, n,
			     db_sql_shown(sql, shown));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int b = params[i] ? sqlite3_bind_text(st, (int)i + 1, params[i], -1, SQLITE_STATIC)
				  : sqlite3_bind_null(st, (int)i + 1);
		if (b != SQLITE_OK) {
			rc = lite_fail(d, b, sql, err);
			goto out;
		}
	}
	const char *stack[DB_COLS_STACK];
	const char **cols = stack;
	int ncols = sqlite3_column_count(st);
	if (ncols > DB_COLS_STACK && !(cols = calloc((size_t)ncols, sizeof *cols))) {
		rc = as_fail(err, AS_ENOMEM, "out of memory reading %d columns", ncols);
		goto out;
	}
	for (;;) {
		int s = sqlite3_step(st);
		if (s == SQLITE_DONE)
			break;
		if (s != SQLITE_ROW) {
			rc = lite_fail(d, s, sql, err);
			break;
		}
		if (!row)
			continue;
		for (int c = 0; c < ncols; c++)
			cols[c] = (const char *)sqlite3_column_text(st, c);
		int stop = row(ctx, cols, (size_t)ncols);
		if (stop) {
			rc = stop;
			break;
		}
	}
	if (cols != stack)
		free(cols);
	if (rc == 0 && changes)
		*changes = sqlite3_changes64(d->lite);
out:
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}

static int lite_script(struct db *d, const char *sql, char *err)
{
	if (!d->lite)
		return as_fail(err, AS_EIO, "SQLite database %s is not open (reconnect failed)", d->target);
	char *msg = NULL;
	int rc = sqlite3_exec(d->lite, sql, NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		return 0;
	char shown[DB_SQL_SHOWN + 4];
	as_fail(err, lite_code(rc), "SQLite: %s (in %s)", msg ? msg : sqlite3_errstr(rc), db_sql_shown(sql, shown));
	sqlite3_free(msg);
	return lite_code(rc);
}

/* ---- PostgreSQL ---- */

static int pg_code(const struct db *d, const PGresult *r)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (!state || strlen(state) != 5)
		return AS_EIO; /* no answer: the connection */
	if (!strncmp(state, "22", 2) || !strncmp(state, "23", 2) || !strncmp(state, "42", 2) ||
	    !strncmp(state, "0A", 2))
		return AS_EINVAL; /* data, integrity, syntax or access rule, unsupported */
	if (!strcmp(state, "08P01") && PQstatus(d->pg) == CONNECTION_OK)
		return AS_EINVAL; /* a protocol violation the server survived: parameters that do not fit */
	return AS_EIO;
}

static int pg_fail(struct db *d, PGresult *r, const char *sql, char *err)
{
	char line[AS_ERRLEN], shown[DB_SQL_SHOWN + 4];
	const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	first_line(primary ? primary : PQerrorMessage(d->pg), line, sizeof line);
	int code = pg_code(d, r);
	if (PQstatus(d->pg) == CONNECTION_BAD)
		code = AS_EIO;
	return as_fail(err, code, "PostgreSQL: %s (in %s)", line, db_sql_shown(sql, shown));
}

static int pg_run(struct db *d, const char *sql, const char *const *params, size_t n, int64_t *changes, db_row_fn row,
		  void *ctx, char *err)
{
	if (!d->pg)
		return as_fail(err, AS_EIO, "PostgreSQL: not connected (reconnect failed)");
	if (n > 65535)
		return as_fail(err, AS_EINVAL, "PostgreSQL takes at most 65535 parameters, %zu given", n);
	PGresult *r = PQexecParams(d->pg, sql, (int)n, NULL, params, NULL, NULL, 0);
	ExecStatusType s = PQresultStatus(r);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		int rc = pg_fail(d, r, sql, err);
		PQclear(r);
		return rc;
	}
	int rc = 0;
	int nrows = PQntuples(r), ncols = PQnfields(r);
	const char *stack[DB_COLS_STACK];
	const char **cols = stack;
	if (row && nrows > 0 && ncols > DB_COLS_STACK && !(cols = calloc((size_t)ncols, sizeof *cols))) {
		PQclear(r);
		return as_fail(err, AS_ENOMEM, "out of memory reading %d columns", ncols);
	}
	for (int i = 0; row && i < nrows && rc == 0; i++) {
		for (int c = 0; c < ncols; c++)
			cols[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
		rc = row(ctx, cols, (size_t)ncols);
	}
	if (cols != stack)
		free(cols);
	if (rc == 0 && changes) {
		const char *t = PQcmdTuples(r);
		*changes = t && *t ? strtoll(t, NULL, 10) : 0;
	}
	PQclear(r);
	return rc;
}

static int pg_script(struct db *d, const char *sql, char *err)
{
	if (!d->pg)
		return as_fail(err, AS_EIO, "PostgreSQL: not connected (reconnect failed)");
	PGresult *r = PQexec(d->pg, sql);
	ExecStatusType s = PQresultStatus(r);
	int rc = 0;
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		rc = pg_fail(d, r, sql, err);
	PQclear(r);
	return rc;
}

/* ---- the calls ---- */

int db_exec(struct db *d, const char *sql, const char *const *params, size_t n, int64_t *changes, char *err)
{
	if (changes)
		*changes = 0;
	if (d->kind == DB_MYSQL)
		return dbmy_run(d->my, sql, params, n, changes, NULL, NULL, err);
	return d->kind == DB_SQLITE ? lite_run(d, sql, params, n, changes, NULL, NULL, err)
				    : pg_run(d, sql, params, n, changes, NULL, NULL, err);
}

int db_query(struct db *d, const char *sql, const char *const *params, size_t n, db_row_fn row, void *ctx, char *err)
{
	if (d->kind == DB_MYSQL)
		return dbmy_run(d->my, sql, params, n, NULL, row, ctx, err);
	return d->kind == DB_SQLITE ? lite_run(d, sql, params, n, NULL, row, ctx, err)
				    : pg_run(d, sql, params, n, NULL, row, ctx, err);
}

int db_script(struct db *d, const char *sql, char *err)
{
	if (d->kind == DB_MYSQL)
		return dbmy_script(d->my, sql, err);
	return d->kind == DB_SQLITE ? lite_script(d, sql, err) : pg_script(d, sql, err);
}

int db_begin(struct db *d, char *err)
{
	/* IMMEDIATE: take SQLite's write lock now (waiting up to the busy timeout), never
	 * fail to upgrade a read lock halfway through. */
	return db_script(d, d->kind == DB_SQLITE ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

int db_commit(struct db *d, char *err)
{
	return db_script(d, "COMMIT", err);
}

void db_rollback(struct db *d)
{
	if (d->kind == DB_MYSQL) {
		dbmy_rollback(d->my);
	} else if (d->kind == DB_SQLITE) {
		if (d->lite && !sqlite3_get_autocommit(d->lite))
			sqlite3_exec(d->lite, "ROLLBACK", NULL, NULL, NULL);
	} else if (d->pg && PQtransactionStatus(d->pg) != PQTRANS_IDLE) {
		PQclear(PQexec(d->pg, "ROLLBACK"));
	}
}

/* ---- timestamps ---- */

#define DB_TS_MAX 253402300799999LL /* 9999-12-31 23:59:59.999 */

struct ts_fields {
	unsigned y, mo, d, h, mi, s, ms;
};

/* Clamped to 1970 .. 9999, so every field has its width. */
static struct ts_fields ts_parts(int64_t unix_ms)
{
	if (unix_ms < 0)
		unix_ms = 0;
	if (unix_ms > DB_TS_MAX)
		unix_ms = DB_TS_MAX;
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof tm);
	return (struct ts_fields){(unsigned)(tm.tm_year + 1900) % 10000u,
				  (unsigned)(tm.tm_mon + 1) % 100u,
				  (unsigned)tm.tm_mday % 100u,
				  (unsigned)tm.tm_hour % 100u,
				  (unsigned)tm.tm_min % 100u,
				  (unsigned)tm.tm_sec % 100u,
				  (unsigned)(unix_ms % 1000)};
}

void db_ts(const struct db *d, int64_t unix_ms, char out[DB_TS_LEN])
{
	struct ts_fields f = ts_parts(unix_ms);
	snprintf(out, DB_TS_LEN, "%04u-%02u-%02u %02u:%02u:%02u.%03u%s", f.y, f.mo, f.d, f.h, f.mi, f.s, f.ms % 1000u,
		 d && d->kind == DB_POSTGRES ? "+00" : "");
}

void db_ts_iso(int64_t unix_ms, char out[DB_TS_LEN])
{
	struct ts_fields f = ts_parts(unix_ms);
	snprintf(out, DB_TS_LEN, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", f.y, f.mo, f.d, f.h, f.mi, f.s, f.ms % 1000u);
}

/* n decimal digits at *p into *v; advances. */
static int digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return AS_EINVAL;
		*v = *v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return 0;
}

int db_ts_parse(const char *text, int64_t *unix_ms)
{
	if (!text)
		return AS_EINVAL;
	const char *p = text;
	int y, mo, da, h, mi, s, ms = 0;
	GUARD(digits(&p, 4, &y));
	if (*p++ != '-')
		return AS_EINVAL;
	GUARD(digits(&p, 2, &mo));
	if (*p++ != '-')
		return AS_EINVAL;
	GUARD(digits(&p, 2, &da));
	if (*p != ' ' && *p != 'T')
		return AS_EINVAL;
	p++;
	GUARD(digits(&p, 2, &h));
	if (*p++ != ':')
		return AS_EINVAL;
	GUARD(digits(&p, 2, &mi));
	if (*p++ != ':')
		return AS_EINVAL;
	GUARD(digits(&p, 2, &s));
	if (*p == '.') {
		p++;
		int i = 0;
		for (; isdigit((unsigned char)*p); i++, p++)
			if (i < 3)
				ms = ms * 10 + (*p - '0');
		if (i == 0)
			return AS_EINVAL;
		for (; i < 3; i++)
			ms *= 10;
	}
	int off = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
		GUARD(digits(&p, 2, &oh));
		if (*p == ':')
			p++;
		if (isdigit((unsigned char)*p))
			GUARD(digits(&p, 2, &om));
		off = sign * (oh * 3600 + om * 60);
	}
	if (*p || mo < 1 || mo > 12 || da < 1 || da > 31 || h > 23 || mi > 59 || s > 60)
		return AS_EINVAL;
	struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = da, .tm_hour = h, .tm_min = mi, .tm_sec = s};
	time_t t = timegm(&tm);
	*unix_ms = ((int64_t)t - off) * 1000 + ms;
	return 0;
}

int db_socket(const struct db *d)
{
	return d->kind == DB_POSTGRES && d->pg ? PQsocket(d->pg) : -1;
}

int db_notifies(struct db *d, void (*fn)(void *ctx, const char *channel, const char *payload), void *ctx)
{
	if (d->kind != DB_POSTGRES || !d->pg)
		return 0;
	if (!PQconsumeInput(d->pg))
		return AS_EIO;
	PGnotify *n;
	while ((n = PQnotifies(d->pg))) {
		fn(ctx, n->relname, n->extra);
		PQfreemem(n);
	}
	return 0;
}
