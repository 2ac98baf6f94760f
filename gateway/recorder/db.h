/* The recorder's one database connection, SQLite or PostgreSQL behind the same calls, so
 * that the schema and the queries (store.c) are written once. Runs only in the confined
 * recorder process, never in the signer.
 *
 * SQL is written in PostgreSQL's parameter style, $1 .. $n, and must use every one of
 * them (PostgreSQL refuses a parameter it cannot type); for SQLite each "$N" outside
 * quotes and comments is rewritten "?N", so $N binds the Nth parameter in any order.
 * Parameters are text or NULL; each backend converts (SQLite by the column's affinity,
 * PostgreSQL from the context; cast in the SQL where neither says, portably with
 * CAST($1 AS TEXT) or CAST($2 AS BIGINT), e.g. "CAST($1 AS TEXT) IS NULL" and LIMIT; for
 * MySQL, db_my.c makes each $N, and each such CAST whole, a '?' bound as text or integer).
 * Results come back as text or NULL per column (SQLite's own text rendering of integers
 * and reals; booleans: SQLite and MySQL 0/1, PostgreSQL t/f, all read with db_bool; timestamps:
 * read with db_ts_parse).
 *
 * Errors: AS_EIO when the database could not run the statement (connection lost, locked
 * past the busy timeout, disk, server shutting down: retry, after db_reconnect for
 * PostgreSQL and MySQL), AS_EINVAL when it refused the statement or its data (syntax, missing
 * table or column, constraint, type: retrying the same will fail again), AS_ENOMEM.
 *
 * SQLite keeps up to DB_STMT_CACHE prepared statements, found by the SQL text's pointer
 * and confirmed by its text, so SQL kept in one place (a static string, or one built
 * once) is parsed once. One connection, for one thread at a time. */
#ifndef ASSENT_DB_H
#define ASSENT_DB_H

#include <stddef.h>
#include <stdint.h>

#define DB_STMT_CACHE 32 /* SQLite prepared statements kept */
#define DB_TS_LEN 40	 /* db_ts, db_ts_iso */

enum db_kind { DB_SQLITE, DB_POSTGRES, DB_MYSQL };

struct db;

/* "sqlite:PATH" (a file; created when missing, WAL journal, busy timeout 5 s), a libpq
 * connection URI "postgresql://..." / "postgres://..." or key=value conninfo prefixed
 * "postgresql:", or "mysql://..." / "mariadb://..." (gateway/proto/myurl.h; MySQL's SQL
 * differs: store.c writes a dialect of its own where it must). err (AS_ERRLEN) names what
 * failed, never a password. */
int db_open(const char *url, struct db **out, char *err);
void db_close(struct db *d);
enum db_kind db_kind(const struct db *d);
/* Drop and reopen the connection (PostgreSQL or MySQL after a failure; SQLite reopens the file). */
int db_reconnect(struct db *d, char *err);
/* Whether url's database is reached over a socket (PostgreSQL, MySQL), and the TCP port it
 * names: what the recorder's confinement lets it connect to (0: a unix socket, or none). */
int db_url_net(const char *url);
unsigned db_url_tcp_port(const char *url);

/* Called once per result row; return non-zero to stop (db_query then returns that value). */
typedef int (*db_row_fn)(void *ctx, const char *const *cols, size_t ncols);

/* Run one statement with n parameters (NULL pointers are SQL NULL). *changes (may be NULL)
 * gets the rows inserted, updated or deleted. */
int db_exec(struct db *d, const char *sql, const char *const *params, size_t n, int64_t *changes, char *err);
/* Run one query, calling row for each row (row may be NULL). */
int db_query(struct db *d, const char *sql, const char *const *params, size_t n, db_row_fn row, void *ctx, char *err);
/* Several statements without parameters, separated by ';' (schema). */
int db_script(struct db *d, const char *sql, char *err);
int db_begin(struct db *d, char *err);
int db_commit(struct db *d, char *err);
void db_rollback(struct db *d);

/* "1"/"t"/"true" -> 1; anything else (NULL too) -> 0. */
int db_bool(const char *v);

/* The text to bind for a timestamp column, unix ms in UTC: SQLite "YYYY-MM-DD
 * HH:MM:SS.mmm" (TEXT columns, so these sort and compare as times), PostgreSQL the same
 * with "+00" (TIMESTAMPTZ); d NULL: SQLite's. Times are clamped to 1970 .. 9999. */
void db_ts(const struct db *d, int64_t unix_ms, char out[DB_TS_LEN]);
/* A timestamp as either backend returns it ("YYYY-MM-DD HH:MM:SS[.fff...]" then
 * nothing, "Z", or an offset "+HH", "-HH:MM"; 'T' for the space too) back to unix ms
 * (fractions past ms truncated). AS_EINVAL when it is not one. */
int db_ts_parse(const char *text, int64_t *unix_ms);
/* ISO 8601 UTC with ms, "YYYY-MM-DDTHH:MM:SS.mmmZ": what store_feedback.c answers; such texts
 * sort as times. */
void db_ts_iso(int64_t unix_ms, char out[DB_TS_LEN]);

/* PostgreSQL's LISTEN (the cluster client): the connection's socket to poll (-1: none), and
 * each notification that arrived, read without blocking. AS_EIO when the connection failed. */
int db_socket(const struct db *d);
int db_notifies(struct db *d, void (*fn)(void *ctx, const char *channel, const char *payload), void *ctx);

#endif
