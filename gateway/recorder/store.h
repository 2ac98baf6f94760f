/* The call records' tables and every query on them, written once over db.h for SQLite
 * and PostgreSQL. Tables carry a prefix (default "ffb_") and the seed's names and columns
 * (FastMCP Feedback), so its queries run unchanged:
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
#define STORE_EVENTS_LIMIT 1000	 /* events_for's default limit */
#define STORE_EVENTS_MAX 10000	 /* events_for's largest limit */
#define STORE_EVENT_KINDS_MAX 16 /* kinds events_for filters on */
#define STORE_LIST_LIMIT 50	 /* feedback_list's default page */
#define STORE_LIST_MAX 500	 /* feedback_list's largest page */

struct store;

/* Create the tables and indexes that are missing and bring an older schema up to date
 * (ALTER TABLE ... ADD COLUMN for each column an earlier release lacked); *migrated (may
 * be NULL) gets a JSON array of what was altered, for the log. */
int store_open(struct db *d, const char *prefix, struct store **out, json_t **migrated, char *err);
void store_free(struct store *st);
struct db *store_db(struct store *st);

/* Calls first in their own transaction, then events in theirs (a database without the
 * events table still stores calls). Either count may be 0. */
int store_write(struct store *st, const struct rec_call *calls, size_t ncalls, const struct rec_event *events,
		size_t nevents, char *err);

/* Delete calls started and events occurred before cutoff_ms, STORE_PRUNE_BATCH rows per
 * transaction; never a call linked to a report, never a link. */
int store_prune(struct store *st, int64_t cutoff_ms, int64_t *calls_deleted, int64_t *events_deleted, char *err);

/* QA reports. type: bug | feature | improvement | question; status: open | in_progress |
 * resolved | closed. */
struct store_feedback {
	const char *type, *title, *description, *contact; /* contact may be NULL; all redacted */
	const char *user_sub, *caller_kind, *client_id, *session_id;
	int64_t created_ms;
};
int store_feedback_add(struct store *st, const struct store_feedback *f, int64_t *id, char *err);
/* Link the calls that preceded report id: first those of session_id (when not NULL), then
 * those of user_sub started within window_ms before now_ms, newest first up to
 * STORE_LINKS_MAX, stored oldest first with position 1.. and rule "session" | "user_window". */
int store_link(struct store *st, int64_t id, const char *session_id, const char *user_sub, int64_t window_ms,
	       int64_t now_ms, size_t *linked, char *err);
/* {items: [...], total, offset, limit}; type and status may be NULL. */
int store_feedback_list(struct store *st, const char *type, const char *status, size_t offset, size_t limit,
			json_t **out, char *err);
/* {total, by_type: {...}, by_status: {...}, last_7_days} */
int store_feedback_stats(struct store *st, int64_t now_ms, json_t **out, char *err);
/* open -> in_progress -> resolved -> closed, one step forward only; AS_ENOTFOUND, AS_EINVAL. */
int store_feedback_status(struct store *st, int64_t id, const char *status, int64_t now_ms, char *err);
int store_feedback_delete(struct store *st, int64_t id, char *err);
/* The report and its calls: {feedback: {...}, calls: [{position, rule, call_id, tool, outcome,
 * error_type, error_message, started_at, duration_ms}, ...]}. */
int store_feedback_show(struct store *st, int64_t id, json_t **out, char *err);

/* Events of key (kinds: any of nkinds, or all when 0), the newest limit, oldest first. */
int store_events_for(struct store *st, const char *key, const char *const *kinds, size_t nkinds, size_t limit,
		     json_t **out, char *err);

#endif
