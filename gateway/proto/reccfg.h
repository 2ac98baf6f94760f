/* What the call records are configured with (issue 16, assent.records(5)): read by
 * the signer at start from the environment and the upstreams file's "records" section,
 * checked there (a bad value stops the daemon with a message naming it), then sent as JSON
 * to the mcp worker (what to record and how to classify) and to the recorder (where records
 * go and how they are redacted). Nothing in it is secret, except what a database URL may
 * hold: rec_cfg_json leaves the URL out unless asked (only the recorder gets it). */
#ifndef ASSENT_RECCFG_H
#define ASSENT_RECCFG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum rec_mode { REC_OFF, REC_META, REC_FULL };

#define RECCFG_LIST_MAX 64	 /* tools in one list, statuses, keys, prefixes, patterns */
#define RECCFG_NAME_MAX 160	 /* a tool name as agents see it (NAME__TOOL) */
#define RECCFG_URL_MAX 1024	 /* the database URL, the JSON lines file */
#define RECCFG_PREFIX_MAX 32	 /* the tables' prefix, the QA tools' prefix */
#define RECCFG_PAYLOAD_MAX 65536 /* bytes of arguments or result kept in mode full (then cut) */

struct rec_rate {
	char tool[RECCFG_NAME_MAX + 1];
	double rate; /* in (0, 1] */
};

struct rec_cfg {
	enum rec_mode mode;				    /* FEEDBACK_INSTRUMENTATION_MODE, default meta */
	char exclude[RECCFG_LIST_MAX][RECCFG_NAME_MAX + 1]; /* never recorded, never linked */
	size_t nexclude;
	char meta_only[RECCFG_LIST_MAX][RECCFG_NAME_MAX + 1]; /* kept at meta in mode full */
	size_t nmeta_only;
	struct rec_rate rates[RECCFG_LIST_MAX]; /* ok calls kept at this rate */
	size_t nrates;
	char statuses[RECCFG_LIST_MAX][65]; /* more status values that make a soft error */
	size_t nstatuses;
	char keys[RECCFG_LIST_MAX][65]; /* more secret key names (redact.h) */
	size_t nkeys;
	char prefixes[RECCFG_LIST_MAX][65]; /* more secret token prefixes (redact.h) */
	size_t nprefixes;
	char extra_keys[RECCFG_LIST_MAX][65]; /* the enricher: these keys of a result's structuredContent, into extra */
	size_t nextra_keys;
	char patterns[RECCFG_LIST_MAX][257]; /* regular expressions (POSIX ERE, the policy's cost guard) */
	size_t npatterns;
	char database[RECCFG_URL_MAX + 1];     /* "sqlite:PATH", "postgresql://...", or "off" */
	char jsonl[RECCFG_URL_MAX + 1];	       /* "", "stderr" or a file path */
	char prefix[RECCFG_PREFIX_MAX + 1];    /* tables, default "ffb_" */
	uint64_t retention_s;		       /* 0: keep everything */
	char qa_prefix[RECCFG_PREFIX_MAX + 1]; /* "qa" */
	char qa_sep[8];			       /* "_" */
	uint64_t window_s;		       /* feedback links by user within this (900) */
	unsigned queue_max;		       /* records queued toward the recorder before drops (10000) */
};

/* The defaults, then the section (a JSON object, or NULL), then the environment, which wins:
 * FEEDBACK_INSTRUMENTATION_MODE, ASSENT_RECORD_DATABASE, ASSENT_RECORD_JSONL,
 * ASSENT_RECORD_PREFIX, ASSENT_RECORD_RETENTION, ASSENT_RECORD_EXCLUDE_TOOLS,
 * ASSENT_RECORD_META_ONLY_TOOLS, ASSENT_RECORD_SAMPLE_RATES (tool=rate,...),
 * ASSENT_RECORD_SOFT_STATUSES, ASSENT_RECORD_REDACT_KEYS, ASSENT_RECORD_QUEUE,
 * ASSENT_QA_PREFIX, ASSENT_QA_WINDOW, ASSENT_RECORD_EXTRA_KEYS (section: extra_keys). state: the state directory (the
 * SQLite default is STATE/records/calls.db). err names the variable or the section's key and what is wrong. */
int rec_cfg_load(struct rec_cfg *c, const json_t *section, const char *state, char *err);

/* The configuration as JSON for a worker's F_CONFIG (with_url: include database), and back. */
json_t *rec_cfg_json(const struct rec_cfg *c, int with_url);
int rec_cfg_from_json(struct rec_cfg *c, const json_t *j, char *err);

/* Lookups for one call: 1 when tool is in the list; the rate of tool, 1.0 when none. */
int rec_cfg_excluded(const struct rec_cfg *c, const char *tool);
int rec_cfg_meta_only(const struct rec_cfg *c, const char *tool);
double rec_cfg_rate(const struct rec_cfg *c, const char *tool);

/* "30d", "12h", "15m", "90s" or a number of seconds; AS_EINVAL otherwise. */
int rec_cfg_duration(const char *s, uint64_t *seconds);

const char *rec_mode_name(enum rec_mode m);

#endif
