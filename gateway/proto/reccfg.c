/* The call records' configuration: defaults, the upstreams file's "records" section, the
 * environment, and the JSON sent to a worker (reccfg.h). */
#include "gateway/proto/reccfg.h"
#include "gateway/proto/myurl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/proto/statedir.h"
#include "common/cbor.h"
#include "common/util.h"

const char *rec_mode_name(enum rec_mode m)
{
	return m == REC_OFF ? "off" : m == REC_FULL ? "full" : "meta";
}

static int mode_parse(const char *s, enum rec_mode *m)
{
	if (!strcmp(s, "off"))
		*m = REC_OFF;
	else if (!strcmp(s, "meta"))
		*m = REC_META;
	else if (!strcmp(s, "full"))
		*m = REC_FULL;
	else
		return -1;
	return 0;
}

int rec_cfg_duration(const char *s, uint64_t *seconds)
{
	size_t n = strlen(s);
	if (n == 0 || n > 12)
		return AS_EINVAL;
	uint64_t mul = 1;
	char num[16];
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'd':
		mul = 86400;
		break;
	case 'h':
		mul = 3600;
		break;
	case 'm':
		mul = 60;
		break;
	case 's':
		mul = 1;
		break;
	default:
		n++; /* a bare number of seconds */
	}
	num[n - 1] = 0;
	uint64_t v;
	if (parse_u64(num, &v) != 0 || v > 100ull * 365 * 86400 / mul)
		return AS_EINVAL;
	*seconds = v * mul;
	return 0;
}

/* A name in a list: a tool as agents name it, a status, a key or a prefix. */
static int list_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.:/", s[i]))
			return 0;
	return 1;
}

/* One list entry into row (width w), checked; err names where it came from. */
static int put_name(char *rows, size_t w, size_t *n, const char *v, size_t max, const char *from, char *err)
{
	if (*n >= RECCFG_LIST_MAX)
		return as_fail(err, AS_EINVAL, "%s: at most %u entries", from, RECCFG_LIST_MAX);
	if (!list_name_ok(v, max))
		return as_fail(err, AS_EINVAL, "%s: \"%.80s\" is not a name (1 to %zu of A-Z a-z 0-9 _ - . : /)", from,
			       v, max);
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(rows + i * w, v))
			return 0;
	snprintf(rows + (*n)++ * w, w, "%s", v);
	return 0;
}

static int put_rate(struct rec_cfg *c, const char *tool, double rate, const char *from, char *err)
{
	if (!(rate > 0 && rate <= 1) || isnan(rate))
		return as_fail(err, AS_EINVAL, "%s: the rate of \"%.80s\" must be in (0, 1], not %g", from, tool, rate);
	if (rate < 1e-6) /* a record carries its rate in millionths (F_CALLREC "rate") */
		return as_fail(err, AS_EINVAL,
			       "%s: the rate of \"%.80s\" is kept to a millionth: at least 0.000001, not %g", from,
			       tool, rate);
	if (!list_name_ok(tool, RECCFG_NAME_MAX))
		return as_fail(err, AS_EINVAL, "%s: \"%.80s\" is not a tool name", from, tool);
	for (size_t i = 0; i < c->nrates; i++)
		if (!strcmp(c->rates[i].tool, tool)) {
			c->rates[i].rate = rate;
			return 0;
		}
	if (c->nrates >= RECCFG_LIST_MAX)
		return as_fail(err, AS_EINVAL, "%s: at most %u tools", from, RECCFG_LIST_MAX);
	snprintf(c->rates[c->nrates].tool, sizeof c->rates[0].tool, "%s", tool);
	c->rates[c->nrates++].rate = rate;
	return 0;
}

/* A comma-separated list from the environment, replacing what the section said. */
static int env_list(const char *var, char *rows, size_t w, size_t *n, size_t max, char *err)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	*n = 0;
	char buf[RECCFG_LIST_MAX * (RECCFG_NAME_MAX + 2)];
	if (strlen(v) >= sizeof buf)
		return as_fail(err, AS_EINVAL, "%s: too long", var);
	snprintf(buf, sizeof buf, "%s", v);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		size_t tl = strlen(t);
		while (tl && t[tl - 1] == ' ')
			t[--tl] = 0;
		if (tl && put_name(rows, w, n, t, max, var, err) != 0)
			return AS_EINVAL;
	}
	return 0;
}

/* A JSON array of names from the section. */
static int json_list(const json_t *sec, const char *key, char *rows, size_t w, size_t *n, size_t max, char *err)
{
	const json_t *a = json_object_get(sec, key);
	char from[80];
	snprintf(from, sizeof from, "records.%s", key);
	if (!a)
		return 0;
	if (!json_is_array(a))
		return as_fail(err, AS_EINVAL, "%s: expected an array of strings", from);
	size_t i;
	const json_t *v;
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v))
			return as_fail(err, AS_EINVAL, "%s[%zu]: expected a string", from, i);
		if (put_name(rows, w, n, json_string_value(v), max, from, err) != 0)
			return AS_EINVAL;
	}
	return 0;
}

static int text_opt(const json_t *sec, const char *key, char *out, size_t outsz, char *err)
{
	const json_t *v = json_object_get(sec, key);
	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) >= outsz)
		return as_fail(err, AS_EINVAL, "records.%s: expected a string of at most %zu bytes", key, outsz - 1);
	snprintf(out, outsz, "%s", json_string_value(v));
	return 0;
}

static int env_text(const char *var, char *out, size_t outsz, char *err)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (strlen(v) >= outsz)
		return as_fail(err, AS_EINVAL, "%s: at most %zu bytes", var, outsz - 1);
	/* The value travels to the workers as JSON, which holds UTF-8 only: a path in another
	 * encoding would silently drop out of their configuration. */
	if (!utf8_valid((const uint8_t *)v, strlen(v)))
		return as_fail(err, AS_EINVAL, "%s: not valid UTF-8", var);
	snprintf(out, outsz, "%s", v);
	return 0;
}

static int prefix_ok(const char *p, int tables)
{
	size_t n = strlen(p);
	if (n == 0 || n > RECCFG_PREFIX_MAX || !islower((unsigned char)p[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) && p[i] != '_')
			return 0;
	return tables || p[n - 1] != '_';
}

static const char *const SECTION_KEYS[] = {
    "mode",	   "exclude_tools",   "meta_only_tools", "sample_rates", "soft_error_statuses",
    "redact_keys", "redact_prefixes", "redact_patterns", "database",	 "jsonl",
    "prefix",	   "retention",	      "qa_prefix",	 "qa_separator", "link_window",
    "queue",	   "extra_keys"};

static int section_load(struct rec_cfg *c, const json_t *sec, char *err)
{
	if (!json_is_object(sec))
		return as_fail(err, AS_EINVAL, "records: expected an object");
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)sec, k, v)
	{
		size_t i = 0;
		while (i < sizeof SECTION_KEYS / sizeof *SECTION_KEYS && strcmp(SECTION_KEYS[i], k))
			i++;
		if (i == sizeof SECTION_KEYS / sizeof *SECTION_KEYS)
			return as_fail(err, AS_EINVAL, "records: unknown key \"%.64s\" (assent.records(5) lists them)",
				       k);
	}
	char mode[16] = "";
	if (text_opt(sec, "mode", mode, sizeof mode, err) != 0)
		return AS_EINVAL;
	if (mode[0] && mode_parse(mode, &c->mode) != 0)
		return as_fail(err, AS_EINVAL, "records.mode: \"%s\": expected off, meta or full", mode);
	if (json_list(sec, "exclude_tools", (char *)c->exclude, sizeof c->exclude[0], &c->nexclude, RECCFG_NAME_MAX,
		      err) ||
	    json_list(sec, "meta_only_tools", (char *)c->meta_only, sizeof c->meta_only[0], &c->nmeta_only,
		      RECCFG_NAME_MAX, err) ||
	    json_list(sec, "soft_error_statuses", (char *)c->statuses, sizeof c->statuses[0], &c->nstatuses, 64, err) ||
	    json_list(sec, "redact_keys", (char *)c->keys, sizeof c->keys[0], &c->nkeys, 64, err) ||
	    json_list(sec, "redact_prefixes", (char *)c->prefixes, sizeof c->prefixes[0], &c->nprefixes, 64, err) ||
	    json_list(sec, "extra_keys", (char *)c->extra_keys, sizeof c->extra_keys[0], &c->nextra_keys, 64, err))
		return AS_EINVAL;
	const json_t *rates = json_object_get(sec, "sample_rates");
	if (rates && !json_is_object(rates))
		return as_fail(err, AS_EINVAL, "records.sample_rates: expected an object {\"tool\": rate}");
	json_object_foreach((json_t *)rates, k, v)
	{
		if (!json_is_number(v))
			return as_fail(err, AS_EINVAL, "records.sample_rates.%.80s: expected a number in (0, 1]", k);
		if (put_rate(c, k, json_number_value(v), "records.sample_rates", err) != 0)
			return AS_EINVAL;
	}
	const json_t *pats = json_object_get(sec, "redact_patterns");
	if (pats && !json_is_array(pats))
		return as_fail(err, AS_EINVAL, "records.redact_patterns: expected an array of regular expressions");
	size_t i;
	json_array_foreach(pats, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= sizeof c->patterns[0])
			return as_fail(err, AS_EINVAL,
				       "records.redact_patterns[%zu]: expected a regular expression of 1 "
				       "to 256 bytes",
				       i);
		if (c->npatterns >= RECCFG_LIST_MAX)
			return as_fail(err, AS_EINVAL, "records.redact_patterns: at most %u", RECCFG_LIST_MAX);
		snprintf(c->patterns[c->npatterns++], sizeof c->patterns[0], "%s", json_string_value(v));
	}
	char ret[24] = "", win[24] = "";
	const json_t *q = json_object_get(sec, "queue");
	if (q && (!json_is_integer(q) || json_integer_value(q) < 1 || json_integer_value(q) > 1000000))
		return as_fail(err, AS_EINVAL, "records.queue: expected a number of records, 1 to 1000000");
	if (q)
		c->queue_max = (unsigned)json_integer_value(q);
	if (text_opt(sec, "database", c->database, sizeof c->database, err) ||
	    text_opt(sec, "jsonl", c->jsonl, sizeof c->jsonl, err) ||
	    text_opt(sec, "prefix", c->prefix, sizeof c->prefix, err) ||
	    text_opt(sec, "retention", ret, sizeof ret, err) ||
	    text_opt(sec, "qa_prefix", c->qa_prefix, sizeof c->qa_prefix, err) ||
	    text_opt(sec, "qa_separator", c->qa_sep, sizeof c->qa_sep, err) ||
	    text_opt(sec, "link_window", win, sizeof win, err))
		return AS_EINVAL;
	if (ret[0] && rec_cfg_duration(ret, &c->retention_s) != 0)
		return as_fail(err, AS_EINVAL, "records.retention: \"%s\": expected a duration such as 30d, 12h", ret);
	if (win[0] && (rec_cfg_duration(win, &c->window_s) != 0 || c->window_s == 0))
		return as_fail(err, AS_EINVAL, "records.link_window: \"%s\": expected a duration such as 15m", win);
	return 0;
}

static int env_load(struct rec_cfg *c, char *err)
{
	const char *v = getenv("FEEDBACK_INSTRUMENTATION_MODE");
	if (v && mode_parse(v, &c->mode) != 0)
		return as_fail(err, AS_EINVAL, "FEEDBACK_INSTRUMENTATION_MODE: \"%.32s\": expected off, meta or full",
			       v);
	if (env_list("ASSENT_RECORD_EXCLUDE_TOOLS", (char *)c->exclude, sizeof c->exclude[0], &c->nexclude,
		     RECCFG_NAME_MAX, err) ||
	    env_list("ASSENT_RECORD_META_ONLY_TOOLS", (char *)c->meta_only, sizeof c->meta_only[0], &c->nmeta_only,
		     RECCFG_NAME_MAX, err) ||
	    env_list("ASSENT_RECORD_SOFT_STATUSES", (char *)c->statuses, sizeof c->statuses[0], &c->nstatuses, 64,
		     err) ||
	    env_list("ASSENT_RECORD_REDACT_KEYS", (char *)c->keys, sizeof c->keys[0], &c->nkeys, 64, err) ||
	    env_list("ASSENT_RECORD_EXTRA_KEYS", (char *)c->extra_keys, sizeof c->extra_keys[0], &c->nextra_keys, 64,
		     err))
		return AS_EINVAL;
	if ((v = getenv("ASSENT_RECORD_SAMPLE_RATES"))) {
		c->nrates = 0;
		char buf[RECCFG_LIST_MAX * (RECCFG_NAME_MAX + 16)];
		if (strlen(v) >= sizeof buf)
			return as_fail(err, AS_EINVAL, "ASSENT_RECORD_SAMPLE_RATES: too long");
		snprintf(buf, sizeof buf, "%s", v);
		char *save = NULL;
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			char *eq = strrchr(t, '=');
			while (*t == ' ')
				t++;
			if (!eq || eq == t)
				return as_fail(
				    err, AS_EINVAL,
				    "ASSENT_RECORD_SAMPLE_RATES: \"%.80s\": expected tool=rate, rate in (0, 1]", t);
			*eq = 0;
			char *end;
			double r = strtod(eq + 1, &end);
			if (end == eq + 1 || *end)
				return as_fail(err, AS_EINVAL,
					       "ASSENT_RECORD_SAMPLE_RATES: \"%.80s\": \"%.32s\" is not a "
					       "number in (0, 1]",
					       t, eq + 1);
			if (put_rate(c, t, r, "ASSENT_RECORD_SAMPLE_RATES", err) != 0)
				return AS_EINVAL;
		}
	}
	char ret[24] = "", win[24] = "", q[24] = "";
	if (env_text("ASSENT_RECORD_DATABASE", c->database, sizeof c->database, err) ||
	    env_text("ASSENT_RECORD_JSONL", c->jsonl, sizeof c->jsonl, err) ||
	    env_text("ASSENT_RECORD_PREFIX", c->prefix, sizeof c->prefix, err) ||
	    env_text("ASSENT_RECORD_RETENTION", ret, sizeof ret, err) ||
	    env_text("ASSENT_RECORD_QUEUE", q, sizeof q, err) ||
	    env_text("ASSENT_QA_PREFIX", c->qa_prefix, sizeof c->qa_prefix, err) ||
	    env_text("ASSENT_QA_WINDOW", win, sizeof win, err))
		return AS_EINVAL;
	if (ret[0] && rec_cfg_duration(ret, &c->retention_s) != 0)
		return as_fail(err, AS_EINVAL, "ASSENT_RECORD_RETENTION: \"%s\": expected a duration such as 30d, 12h",
			       ret);
	if (win[0] && (rec_cfg_duration(win, &c->window_s) != 0 || c->window_s == 0))
		return as_fail(err, AS_EINVAL, "ASSENT_QA_WINDOW: \"%s\": expected a duration such as 15m", win);
	uint64_t qn;
	if (q[0] && (parse_u64(q, &qn) != 0 || qn < 1 || qn > 1000000))
		return as_fail(err, AS_EINVAL,
			       "ASSENT_RECORD_QUEUE: \"%s\": expected a number of records, 1 to 1000000", q);
	if (q[0])
		c->queue_max = (unsigned)qn;
	return 0;
}

int rec_cfg_load(struct rec_cfg *c, const json_t *section, const char *state, char *err)
{
	memset(c, 0, sizeof *c);
	c->mode = REC_META;
	snprintf(c->prefix, sizeof c->prefix, "ffb_");
	snprintf(c->qa_prefix, sizeof c->qa_prefix, "qa");
	snprintf(c->qa_sep, sizeof c->qa_sep, "_");
	c->window_s = 900;
	c->queue_max = 10000;
	if (section && section_load(c, section, err) != 0)
		return AS_EINVAL;
	if (env_load(c, err) != 0)
		return AS_EINVAL;
	if (!c->database[0] && state &&
	    (size_t)snprintf(c->database, sizeof c->database, "sqlite:%s/%s/%s", state, STATE_RECORDS_DIR,
			     STATE_RECORDS_DB) >= sizeof c->database)
		return as_fail(err, AS_EINVAL, "the state directory's path is too long for the records database");
	if (myurl_is(c->database)) {
		/* Checked here, so that a malformed URL stops the daemon; the recorder connects. */
		struct myurl u;
		char why[AS_ERRLEN];
		int bad = myurl_parse(c->database, &u, why);
		explicit_bzero(&u, sizeof u);
		if (bad)
			return as_fail(err, AS_EINVAL,
				       "records %s (expected mysql://USER:PASSWORD@HOST[:PORT]/DATABASE "
				       "or ...@/DATABASE?socket=PATH; the URL is not shown: it holds a password)",
				       why);
	} else if (strcmp(c->database, "off") && strncmp(c->database, "sqlite:", 7) &&
		   strncmp(c->database, "postgresql:", 11) && strncmp(c->database, "postgres:", 9))
		return as_fail(err, AS_EINVAL,
			       "records database: expected off, sqlite:PATH, a postgresql:// URL or a mysql:// "
			       "(mariadb://) URL (the URL is not shown: it may hold a password)");
	if (!prefix_ok(c->prefix, 1))
		return as_fail(err, AS_EINVAL,
			       "records prefix \"%.40s\": expected a-z, 0-9 and _, starting with a letter", c->prefix);
	if (!prefix_ok(c->qa_prefix, 0))
		return as_fail(err, AS_EINVAL, "QA tools' prefix \"%.40s\": expected a-z, 0-9 and _", c->qa_prefix);
	if (!c->qa_sep[0] || strspn(c->qa_sep, "_-.") != strlen(c->qa_sep))
		return as_fail(err, AS_EINVAL, "records.qa_separator: expected one or more of _ - .");
	return 0;
}

static json_t *names_json(const char *rows, size_t w, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(rows + i * w));
	return a;
}

json_t *rec_cfg_json(const struct rec_cfg *c, int with_url)
{
	json_t *rates = json_object();
	for (size_t i = 0; i < c->nrates; i++)
		json_object_set_new(rates, c->rates[i].tool, json_real(c->rates[i].rate));
	json_t *j = json_pack(
	    "{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:s,s:I,s:s,s:s,s:I,s:I}", "mode", rec_mode_name(c->mode),
	    "exclude_tools", names_json((const char *)c->exclude, sizeof c->exclude[0], c->nexclude), "meta_only_tools",
	    names_json((const char *)c->meta_only, sizeof c->meta_only[0], c->nmeta_only), "sample_rates", rates,
	    "soft_error_statuses", names_json((const char *)c->statuses, sizeof c->statuses[0], c->nstatuses),
	    "redact_keys", names_json((const char *)c->keys, sizeof c->keys[0], c->nkeys), "redact_prefixes",
	    names_json((const char *)c->prefixes, sizeof c->prefixes[0], c->nprefixes), "redact_patterns",
	    names_json((const char *)c->patterns, sizeof c->patterns[0], c->npatterns), "jsonl", c->jsonl, "prefix",
	    c->prefix, "retention_s", (json_int_t)c->retention_s, "qa_prefix", c->qa_prefix, "qa_separator", c->qa_sep,
	    "link_window_s", (json_int_t)c->window_s, "queue", (json_int_t)c->queue_max);
	if (j)
		json_object_set_new(j, "extra_keys",
				    names_json((const char *)c->extra_keys, sizeof c->extra_keys[0], c->nextra_keys));
	if (j && with_url)
		json_object_set_new(j, "database", json_string(c->database));
	return j;
}

static int back_list(const json_t *j, const char *key, char *rows, size_t w, size_t *n, size_t max, char *err)
{
	*n = 0;
	return json_list(j, key, rows, w, n, max, err);
}

int rec_cfg_from_json(struct rec_cfg *c, const json_t *j, char *err)
{
	memset(c, 0, sizeof *c);
	const char *mode = json_string_value(json_object_get(j, "mode"));
	if (!mode || mode_parse(mode, &c->mode) != 0)
		return as_fail(err, AS_EINVAL, "records configuration: no mode");
	if (back_list(j, "exclude_tools", (char *)c->exclude, sizeof c->exclude[0], &c->nexclude, RECCFG_NAME_MAX,
		      err) ||
	    back_list(j, "meta_only_tools", (char *)c->meta_only, sizeof c->meta_only[0], &c->nmeta_only,
		      RECCFG_NAME_MAX, err) ||
	    back_list(j, "soft_error_statuses", (char *)c->statuses, sizeof c->statuses[0], &c->nstatuses, 64, err) ||
	    back_list(j, "redact_keys", (char *)c->keys, sizeof c->keys[0], &c->nkeys, 64, err) ||
	    back_list(j, "redact_prefixes", (char *)c->prefixes, sizeof c->prefixes[0], &c->nprefixes, 64, err) ||
	    back_list(j, "extra_keys", (char *)c->extra_keys, sizeof c->extra_keys[0], &c->nextra_keys, 64, err))
		return AS_EINVAL;
	const char *k;
	const json_t *v;
	json_object_foreach(json_object_get(j, "sample_rates"), k, v)
	{
		if (put_rate(c, k, json_number_value(v), "records configuration", err) != 0)
			return AS_EINVAL;
	}
	size_t i;
	json_array_foreach(json_object_get(j, "redact_patterns"), i, v)
	{
		if (c->npatterns < RECCFG_LIST_MAX && json_is_string(v))
			snprintf(c->patterns[c->npatterns++], sizeof c->patterns[0], "%s", json_string_value(v));
	}
	snprintf(c->database, sizeof c->database, "%s", json_string_value(json_object_get(j, "database")) ?: "off");
	snprintf(c->jsonl, sizeof c->jsonl, "%s", json_string_value(json_object_get(j, "jsonl")) ?: "");
	snprintf(c->prefix, sizeof c->prefix, "%s", json_string_value(json_object_get(j, "prefix")) ?: "ffb_");
	snprintf(c->qa_prefix, sizeof c->qa_prefix, "%s", json_string_value(json_object_get(j, "qa_prefix")) ?: "qa");
	snprintf(c->qa_sep, sizeof c->qa_sep, "%s", json_string_value(json_object_get(j, "qa_separator")) ?: "_");
	c->retention_s = (uint64_t)json_integer_value(json_object_get(j, "retention_s"));
	c->window_s = (uint64_t)json_integer_value(json_object_get(j, "link_window_s"));
	c->queue_max = (unsigned)json_integer_value(json_object_get(j, "queue"));
	return 0;
}

static int in_list(const char *rows, size_t w, size_t n, const char *tool)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows + i * w, tool))
			return 1;
	return 0;
}

int rec_cfg_excluded(const struct rec_cfg *c, const char *tool)
{
	return in_list((const char *)c->exclude, sizeof c->exclude[0], c->nexclude, tool);
}

int rec_cfg_meta_only(const struct rec_cfg *c, const char *tool)
{
	return in_list((const char *)c->meta_only, sizeof c->meta_only[0], c->nmeta_only, tool);
}

double rec_cfg_rate(const struct rec_cfg *c, const char *tool)
{
	for (size_t i = 0; i < c->nrates; i++)
		if (!strcmp(c->rates[i].tool, tool))
			return c->rates[i].rate;
	return 1.0;
}
