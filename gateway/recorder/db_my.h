/* The MySQL / MariaDB side of db.h, through libmariadb; db.c dispatches to it and nothing
 * else calls it. Statements are db.h's ($1..$n, CAST($n AS TEXT), CAST($n AS BIGINT)),
 * rewritten once per statement to MySQL's '?' placeholders and run as server-side
 * prepared statements (kept like SQLite's, up to DB_STMT_CACHE): no record's text is ever
 * part of the SQL. The session is UTF-8 (utf8mb4), UTC, strict, with ANSI_QUOTES (so the
 * store's "key" is a column name in all three databases), and an UPDATE's changes count the
 * rows it matched, as PostgreSQL's do. */
#ifndef ASSENT_DB_MY_H
#define ASSENT_DB_MY_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/recorder/db.h"

struct dbmy;

/* url: mysql://... or mariadb://... (gateway/proto/myurl.h); connects. err never holds
 * the password. */
int dbmy_open(const char *url, struct dbmy **out, char *err);
void dbmy_close(struct dbmy *m); /* wipes the password */
int dbmy_reconnect(struct dbmy *m, char *err);
int dbmy_run(struct dbmy *m, const char *sql, const char *const *params, size_t n, int64_t *changes, db_row_fn row,
	     void *ctx, char *err);
int dbmy_script(struct dbmy *m, const char *sql, char *err);
void dbmy_rollback(struct dbmy *m);
/* db.c's helpers for error messages, shared with this side. */
#define DB_SQL_SHOWN 48 /* characters of a statement named in an error */
/* The start of a statement, whitespace folded. */
const char *db_sql_shown(const char *sql, char out[DB_SQL_SHOWN + 4]);
/* Each occurrence of secret in s (in place) masked "***". */
void db_mask(char *s, const char *secret);

/* The server's TCP port the URL names; 0 for a unix socket or a URL that does not parse. */
unsigned dbmy_tcp_port(const char *url);

#endif
