/* The recorder's one database connection, SQLite or PostgreSQL behind the same calls, so
 * that the schema and the queries (store.c) are written once. Runs only in the confined
 * recorder process, never in the signer.
 *
 * SQL is written in PostgreSQL's parameter style, $1 .. $n, numbered in the order each
 * first appears (SQLite numbers "$1" style parameters that way too). Parameters are
 * text or NULL; each backend converts (PostgreSQL: untyped text parameters, cast in the
 * SQL where a type matters, e.g. $3::double precision). Results come back as text or NULL
 * per column (SQLite's own text rendering of integers and reals; booleans: SQLite 0/1,
 * PostgreSQL t/f, both read with db_bool). */
#ifndef ASSENT_DB_H
#define ASSENT_DB_H

#include <stddef.h>
#include <stdint.h>

enum db_kind { DB_SQLITE, DB_POSTGRES };

struct db;

/* "sqlite:PATH" (a file; created when missing, WAL journal, busy timeout 5 s) or a libpq
 * connection URI "postgresql://..." / "postgres://..." or key=value conninfo prefixed
 * "postgresql:". err (AS_ERRLEN) names what failed, never a password. */
int db_open(const char *url, struct db **out, char *err);
void db_close(struct db *d);
enum db_kind db_kind(const struct db *d);
/* Drop and reopen the connection (PostgreSQL after a failure; SQLite reopens the file). */
int db_reconnect(struct db *d, char *err);

/* Called once per result row; return non-zero to stop (db_query then returns that value). */
typedef int (*db_row_fn)(void *ctx, const char *const *cols, size_t ncols);

/* Run one statement with n parameters (NULL pointers are SQL NULL). *changes (may be NULL)
 * gets the rows inserted, updated or deleted. */
int db_exec(struct db *d, const char *sql, const char *const *params, size_t n, int64_t *changes, char *err);
/* Run one query, calling row for each row (row may be NULL). */
int db_query(struct db *d, const char *sql, const char *const *params, size_t n, db_row_fn row, void *ctx,
	     char *err);
/* Several statements without parameters, separated by ';' (schema). */
int db_script(struct db *d, const char *sql, char *err);
int db_begin(struct db *d, char *err);
int db_commit(struct db *d, char *err);
void db_rollback(struct db *d);

/* "1"/"t"/"true" -> 1; anything else (NULL too) -> 0. */
int db_bool(const char *v);

#endif
