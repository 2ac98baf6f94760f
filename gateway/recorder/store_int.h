/* The call store's files (store.c: the schema, its migration and the queries' texts; store_write.c:
 * writing and pruning calls and events; store_feedback.c: QA reports and reading events), what they
 * share. Private to gateway/recorder/: nothing else includes this (store.h is the interface). */
#ifndef ASSENT_RECORDER_STORE_INT_H
#define ASSENT_RECORDER_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/recorder/store.h"
#include "common/util.h"

#define INSERT_ROWS 64 /* rows per INSERT statement at most (25 parameters each: 1,600 < 32,766) */
#define INSERT_SIZES 4
/* store.c: the rows of a batch's statements, largest first (INSERT_ROWS, ..., 1). */
extern const size_t store_insert_sizes[INSERT_SIZES];
#define SQL_MAX (1 << 20) /* the longest statement built */
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the schema ---- */

enum ctype { T_ID, T_TEXT, T_TS, T_REAL, T_INT, T_BOOL, T_JSON };

struct col {
	const char *name;
	enum ctype type;
	unsigned flags;
};

/* store.c: the columns of the calls and the events tables, id first. */
extern const struct col store_calls_cols[];
extern const struct col store_events_cols[];
#define CALL_NCOLS 25 /* written: all but id */
#define EVENT_NCOLS 10

enum { TB_CALLS, TB_EVENTS, TB_FEEDBACK, TB_LINKS, TB_COUNT };

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

struct store {
	struct db *d;
	char name[TB_COUNT][STORE_PREFIX_MAX + 24];
	char *q[Q_COUNT];
	char *ins_calls[INSERT_SIZES], *ins_events[INSERT_SIZES]; /* by store_insert_sizes */
	char *events_q[STORE_EVENT_KINDS_MAX + 1]; /* events_for by number of kinds, made when first used */
};

/* store.c: a growing SQL text; bad once an allocation failed or SQL_MAX was reached. */
struct sb {
	struct buf b;
	int bad;
};
void store_sb_add(struct sb *s, const char *t);
void store_sb_addf(struct sb *s, const char *fmt, ...) AS_PRINTF(2, 3);
/* The NUL-terminated text (the caller frees it), or NULL. */
char *store_sb_done(struct sb *s);

/* store.c: the first column of the first row as an integer (a db_query row reader). */
int store_row_int(void *ctx, const char *const *cols, size_t ncols);

/* store_write.c: texts PostgreSQL (and strict MySQL) would refuse, made storable: bytes that are not
 * UTF-8 become U+FFFD, and in JSON the escape \u0000 (JSONB refuses it) becomes \ufffd. SQLite
 * stores any bytes, so this runs for the other two only. The copies made are o's. */
struct owned {
	char **p;
	size_t n, cap;
};
void store_owned_free(struct owned *o);
int store_pg_clean(const char *s, int json, struct owned *o, const char **out);

#endif
