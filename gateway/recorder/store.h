/* The call records' tables and every query on them, written once over db.h for SQLite,
 * PostgreSQL and MySQL / MariaDB (a dialect of its own only where MySQL's SQL differs:
 * column types, the upsert, DELETE ... LIMIT, prefix indexes). Tables carry a prefix
 * (default "ffb_") and the seed's names and columns (FastMCP Feedback), so its queries run
 * unchanged:
 *   PREFIXtool_calls           one row per recorded call (struct rec_call)
 *   PREFIXevents               one row per event (struct rec_event); no foreign key
 *   PREFIXfeedback             QA reports
 *   PREFIXfeedback_call_links  a report's calls, in order, with the rule that linked each
 * Answers are jansson values the caller owns. err is AS_ERRLEN. */
#ifndef ASSENT_STORE_H
#define ASSENT_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/recorder/db.h"
#include "gateway/recorder/record.h"

#define STORE_PREFIX_MAX 32	 /* [a-z0-9_], starting with a letter */
#define STORE_PRUNE_BATCH 5000	 /* rows per transaction */
#define STORE_LINKS_MAX 20	 /* calls linked to one report */
#define STORE_REF_MAX 128	 /* an outside report's id (PROTO_FEEDBACK_REF_MAX) */
#define STORE_EVENTS_LIMIT 1000	 /* events_for's default limit */
#define STORE_EVENTS_MAX 10000	 /* events_for's largest limit */
#define STORE_EVENT_KINDS_MAX 16 /* kinds events_for filters on */
#define STORE_LIST_LIMIT 50	 /* feedback_list's default page */
#define STORE_LIST_MAX 500	 /* feedback_list's largest page */

struct store;

/* Create the tables and indexes that are missing and bring an older schema up to date
 * (ALTER TABLE ... ADD COLUMN for each column an earlier release lacked, nullable, so old
 * rows hold NULL there), all in one transaction. prefix NULL means "ffb_". *migrated (may
 * be NULL) gets a JSON array of strings, for the log: "CREATE TABLE ffb_events" for each
 * table created, and for a table that existed the statements run on it ("ALTER TABLE
 * ffb_tool_calls ADD COLUMN outcome TEXT", "CREATE INDEX ix_ffb_tool_calls_outcome ON
 * ffb_tool_calls (outcome)"); [] when nothing was done. Indexes are named
 * ix_TABLE_COLUMN (SQLAlchemy's default, so the seed's own are recognised); call_id's is
 * UNIQUE. The store keeps d (it does not close it) and its statements' texts. */
int store_open(struct db *d, const char *prefix, struct store **out, json_t **migrated, char *err);
void store_free(struct store *st);
struct db *store_db(struct store *st);

/* Calls first in their own transaction, then events in theirs (a database without the
 * events table still stores calls). Either count may be 0. Calls are inserted ON
 * CONFLICT (call_id) DO NOTHING (MySQL: ON DUPLICATE KEY UPDATE call_id = call_id), so a
 * batch retried after an AS_EIO whose commit did go through adds no call twice; a failure
 * of the events says "events (the calls are stored): ...". AS_EINVAL: the database refused
 * the rows (a missing column, a value it cannot store) and the same batch will fail again;
 * AS_EIO: retry, after db_reconnect. For PostgreSQL and MySQL, bytes that are not UTF-8 are
 * stored as U+FFFD and a JSON \u0000 as \ufffd (JSONB refuses it); SQLite stores the bytes
 * as they are. */
int store_write(struct store *st, const struct rec_call *calls, size_t ncalls, const struct rec_event *events,
		size_t nevents, char *err);

/* Delete calls started and events occurred before cutoff_ms, STORE_PRUNE_BATCH rows per
 * transaction, until none is left; never a call linked to a report, never a link. On a
 * failure the counts say what was deleted before it (those batches stay deleted). */
int store_prune(struct store *st, int64_t cutoff_ms, int64_t *calls_deleted, int64_t *events_deleted, char *err);

/* QA reports. type: bug | feature | improvement | question; status: open | in_progress |
 * resolved | closed. */
struct store_feedback {
	const char *type, *title, *description, *contact; /* contact may be NULL; all redacted */
	const char *user_sub, *caller_kind, *client_id, *session_id;
	int64_t created_ms;
};
/* Status open, created_at = updated_at = created_ms; AS_EINVAL for another type or an
 * empty title or description. */
int store_feedback_add(struct store *st, const struct store_feedback *f, int64_t *id, char *err);
/* Link the calls that preceded report id: first those of session_id (when not NULL)
 * started at or before now_ms, then (when user_sub is not NULL and window_ms > 0) those of
 * user_sub started within window_ms before now_ms in no session or another one, newest
 * first up to STORE_LINKS_MAX in all, stored in the order they started with position
 * 1.. and rule "session" | "user_window". Only calls already written are seen: write the
 * queued ones first. Linking a report again replaces its links. AS_ENOTFOUND: no report id.
 * Note that user_sub "anonymous" is shared by every anonymous caller. */
int store_link(struct store *st, int64_t id, const char *session_id, const char *user_sub, int64_t window_ms,
	       int64_t now_ms, size_t *linked, char *err);
/* The same for a report kept elsewhere (the seed's capture_recent_calls + link_feedback): ref
 * its id there (1..STORE_REF_MAX bytes, not digits alone, which name assent's own reports), at
 * most max calls (0: STORE_LINKS_MAX). Linking again under ref replaces this caller's links
 * (its calls: user_sub's or session_id's), never another caller's. AS_EINVAL for a bad ref. */
int store_link_ref(struct store *st, const char *ref, const char *session_id, const char *user_sub, int64_t window_ms,
		   int64_t now_ms, size_t max, size_t *linked, char *err);
/* {items: [{id, type, title, description, contact, status, created_at, updated_at,
 * user_sub, caller_kind, client_id, session_id}, ...] newest first, total (matching),
 * offset, limit}; type and status may be NULL (any); limit 0 means STORE_LIST_LIMIT, more
 * than STORE_LIST_MAX is AS_EINVAL. Times are ISO 8601 UTC (db_ts_iso). */
int store_feedback_list(struct store *st, const char *type, const char *status, size_t offset, size_t limit,
			json_t **out, char *err);
/* {total, by_type: {bug: n, ...}, by_status: {open: n, ...}, last_7_days}: every type
 * and status is there, 0 when none; last_7_days counts those created since now_ms - 7 d. */
int store_feedback_stats(struct store *st, int64_t now_ms, json_t **out, char *err);
/* open -> in_progress -> resolved -> closed, one step forward only; AS_ENOTFOUND, AS_EINVAL. */
int store_feedback_status(struct store *st, int64_t id, const char *status, int64_t now_ms, char *err);
/* The report and its links (its calls stay, and may then be pruned); AS_ENOTFOUND. */
int store_feedback_delete(struct store *st, int64_t id, char *err);
/* The report and its calls: {feedback: {...}, calls: [{position, rule, call_id, tool, outcome,
 * error_type, error_message, started_at, duration_ms}, ...]} by position; a link whose call
 * is not (or no longer) in the table has null for all but position, rule and call_id. */
int store_feedback_show(struct store *st, int64_t id, json_t **out, char *err);

/* Events of key recorded by `by` (user_sub, who recorded each: "agent:NAME", "uid:N",
 * "assent"; NULL: anyone) (kinds: any of nkinds, at most STORE_EVENT_KINDS_MAX, or all when 0), the
 * newest limit (0: STORE_EVENTS_LIMIT; at most STORE_EVENTS_MAX), oldest first: [{id,
 * occurred_at (db_ts_iso's form, so texts sort as times), kind, key, call_id, session_id,
 * user_sub, caller_kind, client_id, server_version, attrs (parsed JSON)}, ...]. Only
 * events already written: merge queued ones by occurred_at. */
int store_events_for(struct store *st, const char *key, const char *by, const char *const *kinds, size_t nkinds,
		     size_t limit, json_t **out, char *err);

#endif
