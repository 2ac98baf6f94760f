/* Unit tests for gateway/proto/reccfg.c: the call records' defaults, every environment
 * variable, the upstreams file's "records" section (and what it refuses), the environment
 * winning over the section, durations, the JSON a worker gets and back, and the lookups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "gateway/proto/reccfg.h"
#include "include/assent/err.h"

static const char *const VARS[] = {"FEEDBACK_INSTRUMENTATION_MODE",
				   "ASSENT_RECORD_DATABASE",
				   "ASSENT_RECORD_JSONL",
				   "ASSENT_RECORD_PREFIX",
				   "ASSENT_RECORD_RETENTION",
				   "ASSENT_RECORD_EXCLUDE_TOOLS",
				   "ASSENT_RECORD_META_ONLY_TOOLS",
				   "ASSENT_RECORD_SAMPLE_RATES",
				   "ASSENT_RECORD_SOFT_STATUSES",
				   "ASSENT_RECORD_REDACT_KEYS",
				   "ASSENT_RECORD_QUEUE",
				   "ASSENT_QA_PREFIX",
				   "ASSENT_QA_WINDOW"};

/* Every test starts and ends with none of the variables set. */
static int clean_env(void **st)
{
	(void)st;
	for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++)
		unsetenv(VARS[i]);
	return 0;
}

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		fail_msg("test JSON does not parse: %s: %s", e.text, s);
	return j;
}

/* Load with the section s (JSON text or NULL) and state "/st"; the return code. */
static int load(struct rec_cfg *c, const char *s, char *err)
{
	json_t *sec = s ? J(s) : NULL;
	err[0] = 0;
	int rc = rec_cfg_load(c, sec, "/st", err);
	json_decref(sec);
	return rc;
}

static void ok(struct rec_cfg *c, const char *sec)
{
	char err[AS_ERRLEN];
	if (load(c, sec, err) != 0)
		fail_msg("refused: %s: %s", sec ? sec : "(no section)", err);
}

/* Refused, with a message holding want (the variable or key it names). */
static void refused(const char *sec, const char *want)
{
	struct rec_cfg c;
	char err[AS_ERRLEN];
	int rc = load(&c, sec, err);
	if (rc != AS_EINVAL)
		fail_msg("accepted (%d): %s, expected a message with \"%s\"", rc, sec ? sec : "(env)", want);
	if (!strstr(err, want))
		fail_msg("message \"%s\" does not name \"%s\"", err, want);
}

static void env_refused(const char *var, const char *val, const char *want)
{
	setenv(var, val, 1);
	refused(NULL, want);
	unsetenv(var);
}

static void test_defaults(void **st)
{
	(void)st;
	struct rec_cfg c;
	ok(&c, NULL);
	assert_int_equal(c.mode, REC_META);
	assert_string_equal(rec_mode_name(c.mode), "meta");
	assert_string_equal(c.database, "sqlite:/st/records/calls.db");
	assert_string_equal(c.jsonl, "");
	assert_string_equal(c.prefix, "ffb_");
	assert_string_equal(c.qa_prefix, "qa");
	assert_string_equal(c.qa_sep, "_");
	assert_int_equal(c.retention_s, 0);
	assert_int_equal(c.window_s, 900);
	assert_int_equal(c.queue_max, 10000);
	assert_int_equal(c.nexclude + c.nmeta_only + c.nrates + c.nstatuses + c.nkeys + c.nprefixes + c.npatterns, 0);
	/* an empty section is the defaults too */
	struct rec_cfg d;
	ok(&d, "{}");
	assert_memory_equal(&c, &d, sizeof c);
	/* without a state directory there is no default database: it must be named */
	char err[AS_ERRLEN] = "";
	assert_int_equal(rec_cfg_load(&c, NULL, NULL, err), AS_EINVAL);
	assert_non_null(strstr(err, "records database"));
	setenv("ASSENT_RECORD_DATABASE", "off", 1);
	assert_int_equal(rec_cfg_load(&c, NULL, NULL, err), 0);
	assert_string_equal(c.database, "off");
	unsetenv("ASSENT_RECORD_DATABASE");
	/* a state directory too long for the database's path */
	char longst[RECCFG_URL_MAX + 8];
	memset(longst, 'a', sizeof longst - 1);
	longst[0] = '/';
	longst[sizeof longst - 1] = 0;
	assert_int_equal(rec_cfg_load(&c, NULL, longst, err), AS_EINVAL);
	assert_non_null(strstr(err, "too long"));
}

static void test_env_mode(void **st)
{
	(void)st;
	struct rec_cfg c;
	static const struct {
		const char *v;
		enum rec_mode m;
	} modes[] = {{"off", REC_OFF}, {"meta", REC_META}, {"full", REC_FULL}};
	for (size_t i = 0; i < 3; i++) {
		setenv("FEEDBACK_INSTRUMENTATION_MODE", modes[i].v, 1);
		ok(&c, NULL);
		assert_int_equal(c.mode, modes[i].m);
		assert_string_equal(rec_mode_name(c.mode), modes[i].v);
	}
	unsetenv("FEEDBACK_INSTRUMENTATION_MODE");
	env_refused("FEEDBACK_INSTRUMENTATION_MODE", "FULL", "FEEDBACK_INSTRUMENTATION_MODE");
	env_refused("FEEDBACK_INSTRUMENTATION_MODE", "", "FEEDBACK_INSTRUMENTATION_MODE");
	env_refused("FEEDBACK_INSTRUMENTATION_MODE", "verbose", "\"verbose\"");
}

static void test_env_database(void **st)
{
	(void)st;
	struct rec_cfg c;
	static const char *const good[] = {"off",
					   "sqlite:/var/lib/assent/c.db",
					   "sqlite:rel.db",
					   "postgresql://u:pw@db.example/rec",
					   "postgres://db/rec",
					   "mysql://u:pw@db.example:3307/rec",
					   "mariadb://u@/rec?socket=/run/my.sock"};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		setenv("ASSENT_RECORD_DATABASE", good[i], 1);
		ok(&c, NULL);
		assert_string_equal(c.database, good[i]);
	}
	/* a malformed MySQL URL is refused naming what is wrong, never showing the password */
	static const struct {
		const char *url, *why;
	} bad[] = {
	    {"mysql://u:hunter2@db", "names no database"},
	    {"mariadb://u:hunter2@db:99999/rec", "port 99999"},
	    {"mysql://u:hunter2%zz@db/rec", "the password has a '%'"},
	    {"mysql://u:hunter2@db/rec?sslmode=on", "unknown parameter \"sslmode\""},
	    {"mysql://u:hunter2@db/rec?socket=/s", "a socket is local"},
	    {"MySQL:u:hunter2@db/rec", "no \"//\""},
	};
	char err[AS_ERRLEN];
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		setenv("ASSENT_RECORD_DATABASE", bad[i].url, 1);
		assert_int_equal(load(&c, NULL, err), AS_EINVAL);
		assert_non_null(strstr(err, "records database"));
		if (!strstr(err, bad[i].why))
			fail_msg("%s: %s", bad[i].url, err);
		assert_null(strstr(err, "hunter2"));
	}
	setenv("ASSENT_RECORD_DATABASE", "mongodb://u:hunter2@db/rec", 1);
	assert_int_equal(load(&c, NULL, err), AS_EINVAL);
	assert_non_null(strstr(err, "mysql://"));
	assert_null(strstr(err, "hunter2"));
	char big[RECCFG_URL_MAX + 2];
	memset(big, 'x', sizeof big - 1);
	memcpy(big, "sqlite:", 7);
	big[sizeof big - 1] = 0;
	env_refused("ASSENT_RECORD_DATABASE", big, "ASSENT_RECORD_DATABASE");
	/* not UTF-8: it could not reach the recorder in its JSON configuration */
	env_refused("ASSENT_RECORD_DATABASE", "sqlite:/tmp/\xe9t\xe9.db", "ASSENT_RECORD_DATABASE");
}

static void test_env_jsonl_prefix(void **st)
{
	(void)st;
	struct rec_cfg c;
	setenv("ASSENT_RECORD_JSONL", "stderr", 1);
	ok(&c, NULL);
	assert_string_equal(c.jsonl, "stderr");
	setenv("ASSENT_RECORD_JSONL", "/var/log/assent/calls.jsonl", 1);
	ok(&c, NULL);
	assert_string_equal(c.jsonl, "/var/log/assent/calls.jsonl");
	unsetenv("ASSENT_RECORD_JSONL");
	env_refused("ASSENT_RECORD_JSONL", "/tmp/\xff.jsonl", "ASSENT_RECORD_JSONL");

	setenv("ASSENT_RECORD_PREFIX", "acme_rec_", 1);
	ok(&c, NULL);
	assert_string_equal(c.prefix, "acme_rec_");
	setenv("ASSENT_RECORD_PREFIX", "t2", 1);
	ok(&c, NULL);
	assert_string_equal(c.prefix, "t2");
	unsetenv("ASSENT_RECORD_PREFIX");
	static const char *const bad[] = {"", "1ffb_", "Ffb_", "ffb-", "ffb_;drop", "_ffb"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		env_refused("ASSENT_RECORD_PREFIX", bad[i], "records prefix");
	env_refused("ASSENT_RECORD_PREFIX", "abcdefghijklmnopqrstuvwxyzabcdefg", "ASSENT_RECORD_PREFIX");
}

static void test_env_durations(void **st)
{
	(void)st;
	struct rec_cfg c;
	setenv("ASSENT_RECORD_RETENTION", "30d", 1);
	ok(&c, NULL);
	assert_int_equal(c.retention_s, 30 * 86400);
	setenv("ASSENT_RECORD_RETENTION", "0", 1);
	ok(&c, NULL);
	assert_int_equal(c.retention_s, 0);
	unsetenv("ASSENT_RECORD_RETENTION");
	env_refused("ASSENT_RECORD_RETENTION", "a month", "ASSENT_RECORD_RETENTION");
	env_refused("ASSENT_RECORD_RETENTION", "-1d", "ASSENT_RECORD_RETENTION");

	setenv("ASSENT_QA_WINDOW", "5m", 1);
	ok(&c, NULL);
	assert_int_equal(c.window_s, 300);
	setenv("ASSENT_QA_WINDOW", "3600", 1);
	ok(&c, NULL);
	assert_int_equal(c.window_s, 3600);
	unsetenv("ASSENT_QA_WINDOW");
	env_refused("ASSENT_QA_WINDOW", "0", "ASSENT_QA_WINDOW"); /* no window links nothing */
	env_refused("ASSENT_QA_WINDOW", "15 m", "ASSENT_QA_WINDOW");
}

static void test_env_lists(void **st)
{
	(void)st;
	struct rec_cfg c;
	setenv("ASSENT_RECORD_EXCLUDE_TOOLS", " heartbeat, fs__poll ,,heartbeat,qa_ping ", 1);
	ok(&c, NULL);
	assert_int_equal(c.nexclude, 3); /* blanks skipped, the repeat kept once */
	assert_string_equal(c.exclude[0], "heartbeat");
	assert_string_equal(c.exclude[1], "fs__poll");
	assert_string_equal(c.exclude[2], "qa_ping");
	unsetenv("ASSENT_RECORD_EXCLUDE_TOOLS");
	env_refused("ASSENT_RECORD_EXCLUDE_TOOLS", "ok,not a tool", "ASSENT_RECORD_EXCLUDE_TOOLS");
	env_refused("ASSENT_RECORD_EXCLUDE_TOOLS", "ok,semi;colon", "\"semi;colon\"");

	setenv("ASSENT_RECORD_META_ONLY_TOOLS", "run_code,create_token", 1);
	ok(&c, NULL);
	assert_int_equal(c.nmeta_only, 2);
	assert_string_equal(c.meta_only[1], "create_token");
	unsetenv("ASSENT_RECORD_META_ONLY_TOOLS");
	env_refused("ASSENT_RECORD_META_ONLY_TOOLS", "a'b", "ASSENT_RECORD_META_ONLY_TOOLS");

	setenv("ASSENT_RECORD_SOFT_STATUSES", "unknown_target,TIMEOUT", 1);
	ok(&c, NULL);
	assert_int_equal(c.nstatuses, 2);
	assert_string_equal(c.statuses[0], "unknown_target");
	unsetenv("ASSENT_RECORD_SOFT_STATUSES");
	char s65[66];
	memset(s65, 's', 65);
	s65[65] = 0;
	env_refused("ASSENT_RECORD_SOFT_STATUSES", s65, "ASSENT_RECORD_SOFT_STATUSES");

	setenv("ASSENT_RECORD_REDACT_KEYS", "license,X-Acme-Key", 1);
	ok(&c, NULL);
	assert_int_equal(c.nkeys, 2);
	assert_string_equal(c.keys[1], "X-Acme-Key");
	unsetenv("ASSENT_RECORD_REDACT_KEYS");
	env_refused("ASSENT_RECORD_REDACT_KEYS", "a b", "ASSENT_RECORD_REDACT_KEYS");

	/* at most RECCFG_LIST_MAX entries */
	char many[RECCFG_LIST_MAX * 8 + 16] = "";
	size_t n = 0;
	for (unsigned i = 0; i <= RECCFG_LIST_MAX; i++)
		n += (size_t)snprintf(many + n, sizeof many - n, "%st%u", i ? "," : "", i);
	env_refused("ASSENT_RECORD_EXCLUDE_TOOLS", many, "at most");
	many[strrchr(many, ',') - many] = 0; /* one fewer: exactly the most */
	setenv("ASSENT_RECORD_EXCLUDE_TOOLS", many, 1);
	ok(&c, NULL);
	assert_int_equal(c.nexclude, RECCFG_LIST_MAX);
	unsetenv("ASSENT_RECORD_EXCLUDE_TOOLS");
}

static void test_env_sample_rates(void **st)
{
	(void)st;
	struct rec_cfg c;
	setenv("ASSENT_RECORD_SAMPLE_RATES", "pending_dispatches=0.01, fs__stat=1,x=0.5,x=0.25", 1);
	ok(&c, NULL);
	assert_int_equal(c.nrates, 3); /* the second x replaces the first */
	assert_string_equal(c.rates[0].tool, "pending_dispatches");
	assert_true(c.rates[0].rate == 0.01);
	assert_true(c.rates[1].rate == 1.0);
	assert_true(c.rates[2].rate == 0.25);
	unsetenv("ASSENT_RECORD_SAMPLE_RATES");
	/* outside (0, 1], or not a rate at all: refused, naming the variable */
	static const char *const bad[] = {"t=0",    "t=1.5", "t=-0.1", "t=nan", "t=inf",   "t=",     "t=abc",
					  "t=0.5x", "t",     "=0.5",   " =0.5", "a b=0.5", "t=0.5,u"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		env_refused("ASSENT_RECORD_SAMPLE_RATES", bad[i], "ASSENT_RECORD_SAMPLE_RATES");
	env_refused("ASSENT_RECORD_SAMPLE_RATES", "t=2", "(0, 1]");
}

static void test_env_queue_qa(void **st)
{
	(void)st;
	struct rec_cfg c;
	setenv("ASSENT_RECORD_QUEUE", "1", 1);
	ok(&c, NULL);
	assert_int_equal(c.queue_max, 1);
	setenv("ASSENT_RECORD_QUEUE", "1000000", 1);
	ok(&c, NULL);
	assert_int_equal(c.queue_max, 1000000);
	unsetenv("ASSENT_RECORD_QUEUE");
	static const char *const bad[] = {"0", "1000001", "-5", "10k", "012", ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		setenv("ASSENT_RECORD_QUEUE", bad[i], 1);
		char err[AS_ERRLEN];
		int rc = load(&c, NULL, err);
		unsetenv("ASSENT_RECORD_QUEUE");
		if (!bad[i][0]) { /* set and empty: the default */
			assert_int_equal(rc, 0);
			assert_int_equal(c.queue_max, 10000);
			continue;
		}
		assert_int_equal(rc, AS_EINVAL);
		assert_non_null(strstr(err, "ASSENT_RECORD_QUEUE"));
	}

	setenv("ASSENT_QA_PREFIX", "feedback", 1);
	ok(&c, NULL);
	assert_string_equal(c.qa_prefix, "feedback");
	unsetenv("ASSENT_QA_PREFIX");
	/* the tools' prefix may not end in '_' (the separator follows it) */
	static const char *const badqa[] = {"qa_", "QA", "9qa", "q-a", ""};
	for (size_t i = 0; i < sizeof badqa / sizeof *badqa; i++)
		env_refused("ASSENT_QA_PREFIX", badqa[i], "QA tools' prefix");
}

static void test_section_keys(void **st)
{
	(void)st;
	struct rec_cfg c;
	ok(&c, "{\"mode\": \"full\", \"exclude_tools\": [\"heartbeat\"], \"meta_only_tools\": [\"run_code\"],"
	       " \"sample_rates\": {\"poll\": 0.01, \"fs__stat\": 1}, \"soft_error_statuses\": [\"unknown_target\"],"
	       " \"redact_keys\": [\"license\"], \"redact_prefixes\": [\"acme_\"],"
	       " \"redact_patterns\": [\"acme_[A-Za-z0-9]{32}\", \"x*\"], \"database\": \"postgresql://db/rec\","
	       " \"jsonl\": \"stderr\", \"prefix\": \"rec_\", \"retention\": \"12h\", \"qa_prefix\": \"fb\","
	       " \"qa_separator\": \"-\", \"link_window\": \"90s\", \"queue\": 64}");
	assert_int_equal(c.mode, REC_FULL);
	assert_int_equal(c.nexclude, 1);
	assert_string_equal(c.exclude[0], "heartbeat");
	assert_int_equal(c.nmeta_only, 1);
	assert_string_equal(c.meta_only[0], "run_code");
	assert_int_equal(c.nrates, 2);
	assert_true(rec_cfg_rate(&c, "poll") == 0.01);
	assert_true(rec_cfg_rate(&c, "fs__stat") == 1.0);
	assert_int_equal(c.nstatuses, 1);
	assert_string_equal(c.statuses[0], "unknown_target");
	assert_int_equal(c.nkeys, 1);
	assert_string_equal(c.keys[0], "license");
	assert_int_equal(c.nprefixes, 1);
	assert_string_equal(c.prefixes[0], "acme_");
	assert_int_equal(c.npatterns, 2);
	assert_string_equal(c.patterns[0], "acme_[A-Za-z0-9]{32}");
	assert_string_equal(c.patterns[1], "x*");
	assert_string_equal(c.database, "postgresql://db/rec");
	assert_string_equal(c.jsonl, "stderr");
	assert_string_equal(c.prefix, "rec_");
	assert_int_equal(c.retention_s, 12 * 3600);
	assert_string_equal(c.qa_prefix, "fb");
	assert_string_equal(c.qa_sep, "-");
	assert_int_equal(c.window_s, 90);
	assert_int_equal(c.queue_max, 64);
	ok(&c, "{\"mode\": \"off\"}");
	assert_int_equal(c.mode, REC_OFF);
}

static void test_section_refused(void **st)
{
	(void)st;
	refused("[]", "records: expected an object");
	refused("{\"mode\": \"meta\", \"exlude_tools\": []}", "unknown key \"exlude_tools\"");
	refused("{\"sample_rate\": {}}", "unknown key \"sample_rate\"");
	refused("{\"mode\": \"loud\"}", "records.mode");
	refused("{\"mode\": 1}", "records.mode");
	/* sample rates outside (0, 1], named by the key */
	refused("{\"sample_rates\": {\"poll\": 0}}", "records.sample_rates");
	refused("{\"sample_rates\": {\"poll\": 0}}", "(0, 1]");
	refused("{\"sample_rates\": {\"poll\": 1.0000001}}", "records.sample_rates");
	refused("{\"sample_rates\": {\"poll\": -0.5}}", "\"poll\"");
	refused("{\"sample_rates\": {\"poll\": 2}}", "records.sample_rates");
	refused("{\"sample_rates\": {\"poll\": \"0.5\"}}", "records.sample_rates.poll");
	refused("{\"sample_rates\": {\"poll\": null}}", "records.sample_rates.poll");
	refused("{\"sample_rates\": [0.5]}", "records.sample_rates");
	refused("{\"sample_rates\": {\"bad tool\": 0.5}}", "records.sample_rates");
	/* lists */
	refused("{\"exclude_tools\": \"heartbeat\"}", "records.exclude_tools");
	refused("{\"exclude_tools\": [\"ok\", 3]}", "records.exclude_tools[1]");
	refused("{\"meta_only_tools\": [\"\"]}", "records.meta_only_tools");
	refused("{\"soft_error_statuses\": [\"two words\"]}", "records.soft_error_statuses");
	refused("{\"redact_keys\": {\"a\": 1}}", "records.redact_keys");
	refused("{\"redact_prefixes\": [\"p;x\"]}", "records.redact_prefixes");
	refused("{\"redact_patterns\": \"x\"}", "records.redact_patterns");
	refused("{\"redact_patterns\": [\"\"]}", "records.redact_patterns[0]");
	refused("{\"redact_patterns\": [\"a\", 7]}", "records.redact_patterns[1]");
	/* texts and numbers */
	refused("{\"database\": 5}", "records.database");
	refused("{\"database\": \"mysql://db\"}", "records database");
	refused("{\"jsonl\": true}", "records.jsonl");
	refused("{\"prefix\": \"Rec\"}", "records prefix");
	refused("{\"prefix\": \"abcdefghijklmnopqrstuvwxyzabcdefg\"}", "records.prefix");
	refused("{\"qa_prefix\": \"qa_\"}", "QA tools' prefix");
	refused("{\"qa_separator\": \"/\"}", "records.qa_separator");
	refused("{\"qa_separator\": \"\"}", "records.qa_separator");
	refused("{\"queue\": 0}", "records.queue");
	refused("{\"queue\": 1000001}", "records.queue");
	refused("{\"queue\": \"64\"}", "records.queue");
	refused("{\"queue\": 6.4}", "records.queue");
	/* durations */
	refused("{\"retention\": \"thirty days\"}", "records.retention");
	refused("{\"retention\": 30}", "records.retention"); /* a duration is a string */
	refused("{\"link_window\": \"0\"}", "records.link_window");
	refused("{\"link_window\": \"15x\"}", "records.link_window");
}

static void test_section_lists_bounded(void **st)
{
	(void)st;
	struct buf b;
	buf_init(&b, 1u << 20);
	assert_int_equal(buf_printf(&b, "{\"exclude_tools\": ["), 0);
	for (unsigned i = 0; i <= RECCFG_LIST_MAX; i++)
		assert_int_equal(buf_printf(&b, "%s\"t%u\"", i ? "," : "", i), 0);
	assert_int_equal(buf_printf(&b, "]}"), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	refused((const char *)b.p, "records.exclude_tools: at most");
	buf_reset(&b);
	assert_int_equal(buf_printf(&b, "{\"redact_patterns\": ["), 0);
	for (unsigned i = 0; i <= RECCFG_LIST_MAX; i++)
		assert_int_equal(buf_printf(&b, "%s\"p%u\"", i ? "," : "", i), 0);
	assert_int_equal(buf_printf(&b, "]}"), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	refused((const char *)b.p, "records.redact_patterns: at most");
	buf_reset(&b);
	/* a pattern of 257 bytes is one too many */
	assert_int_equal(buf_printf(&b, "{\"redact_patterns\": [\"%0257d\"]}", 0), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	refused((const char *)b.p, "records.redact_patterns[0]");
	buf_free(&b);
	/* a tool name longer than RECCFG_NAME_MAX */
	char sec[RECCFG_NAME_MAX + 64];
	snprintf(sec, sizeof sec, "{\"exclude_tools\": [\"%0*d\"]}", RECCFG_NAME_MAX + 1, 0);
	refused(sec, "records.exclude_tools");
	snprintf(sec, sizeof sec, "{\"exclude_tools\": [\"%0*d\"]}", RECCFG_NAME_MAX, 0);
	struct rec_cfg c;
	ok(&c, sec);
	assert_int_equal(c.nexclude, 1);
}

static void test_durations(void **st)
{
	(void)st;
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {{"30d", 30 * 86400ull},
		    {"12h", 12 * 3600ull},
		    {"15m", 900},
		    {"90s", 90},
		    {"0", 0},
		    {"0d", 0},
		    {"7", 7},
		    {"36500d", 36500 * 86400ull}};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		uint64_t v = 12345;
		if (rec_cfg_duration(good[i].s, &v) != 0)
			fail_msg("duration \"%s\" refused", good[i].s);
		assert_int_equal(v, good[i].v);
	}
	static const char *const bad[] = {"",	 "d",	"junk", "30days", "30D",  "1.5h",	   "-1",
					  " 5m", "5m ", "5 m",	"05m",	  "0x10", "1234567890123", "36501d",
					  "1e3", "+5",	"h5",	"5w",	  "5ms"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		uint64_t v = 12345;
		if (rec_cfg_duration(bad[i], &v) != AS_EINVAL)
			fail_msg("duration \"%s\" accepted as %llu", bad[i], (unsigned long long)v);
		assert_int_equal(v, 12345); /* untouched */
	}
}

static void test_env_overrides_section(void **st)
{
	(void)st;
	static const char *sec =
	    "{\"mode\": \"full\", \"exclude_tools\": [\"a\", \"b\"], \"sample_rates\": {\"s\": 0.5},"
	    " \"database\": \"sqlite:/x.db\", \"retention\": \"30d\", \"queue\": 5,"
	    " \"redact_keys\": [\"k1\"], \"qa_prefix\": \"fb\", \"link_window\": \"1h\"}";
	struct rec_cfg c;
	setenv("FEEDBACK_INSTRUMENTATION_MODE", "off", 1);
	setenv("ASSENT_RECORD_EXCLUDE_TOOLS", "c", 1);
	setenv("ASSENT_RECORD_SAMPLE_RATES", "t=0.25", 1);
	setenv("ASSENT_RECORD_DATABASE", "postgresql://db/r", 1);
	setenv("ASSENT_RECORD_RETENTION", "1d", 1);
	setenv("ASSENT_RECORD_QUEUE", "7", 1);
	setenv("ASSENT_RECORD_REDACT_KEYS", "", 1); /* set and empty: the list is emptied */
	setenv("ASSENT_QA_PREFIX", "qq", 1);
	setenv("ASSENT_QA_WINDOW", "2m", 1);
	ok(&c, sec);
	assert_int_equal(c.mode, REC_OFF);
	assert_int_equal(c.nexclude, 1); /* replaced, not added to */
	assert_string_equal(c.exclude[0], "c");
	assert_false(rec_cfg_excluded(&c, "a"));
	assert_int_equal(c.nrates, 1);
	assert_true(rec_cfg_rate(&c, "s") == 1.0);
	assert_true(rec_cfg_rate(&c, "t") == 0.25);
	assert_string_equal(c.database, "postgresql://db/r");
	assert_int_equal(c.retention_s, 86400);
	assert_int_equal(c.queue_max, 7);
	assert_int_equal(c.nkeys, 0);
	assert_string_equal(c.qa_prefix, "qq");
	assert_int_equal(c.window_s, 120);
	clean_env(NULL);
	/* the same section alone */
	ok(&c, sec);
	assert_int_equal(c.mode, REC_FULL);
	assert_int_equal(c.nexclude, 2);
	assert_true(rec_cfg_rate(&c, "s") == 0.5);
	assert_string_equal(c.database, "sqlite:/x.db");
	assert_int_equal(c.nkeys, 1);
	/* a bad variable is refused even when the section is good */
	setenv("ASSENT_RECORD_SAMPLE_RATES", "s=0", 1);
	refused(sec, "ASSENT_RECORD_SAMPLE_RATES");
	unsetenv("ASSENT_RECORD_SAMPLE_RATES");
}

/* The configuration through JSON text, as F_CONFIG carries it. */
static void round_trip(const struct rec_cfg *c, int with_url, struct rec_cfg *back)
{
	json_t *j = rec_cfg_json(c, with_url);
	assert_non_null(j);
	assert_int_equal(json_object_get(j, "database") != NULL, with_url);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_non_null(s);
	json_t *k = J(s);
	free(s);
	char err[AS_ERRLEN];
	if (rec_cfg_from_json(back, k, err) != 0)
		fail_msg("the configuration's JSON is refused: %s", err);
	json_decref(k);
}

static void test_json_round_trip(void **st)
{
	(void)st;
	struct rec_cfg c, back;
	ok(&c, "{\"mode\": \"full\", \"exclude_tools\": [\"heartbeat\", \"fs__poll\"], \"meta_only_tools\": [\"run\"],"
	       " \"sample_rates\": {\"poll\": 0.01, \"a\": 0.3333333333333333, \"b\": 1e-6},"
	       " \"soft_error_statuses\": [\"unknown_target\"], \"redact_keys\": [\"license\", \"x-k\"],"
	       " \"redact_prefixes\": [\"acme_\"], \"redact_patterns\": [\"acme_[A-Za-z0-9]{32}\", \"\\\"q\\\\d\"],"
	       " \"database\": \"postgresql://u:pw@db/rec\", \"jsonl\": \"/var/log/c.jsonl\", \"prefix\": \"rec_\","
	       " \"retention\": \"30d\", \"qa_prefix\": \"fb\", \"qa_separator\": \"-.\", \"link_window\": \"90s\","
	       " \"queue\": 77}");
	round_trip(&c, 1, &back);
	assert_memory_equal(&c, &back, sizeof c);
	/* without the URL the receiver has no database */
	round_trip(&c, 0, &back);
	assert_string_equal(back.database, "off");
	snprintf(back.database, sizeof back.database, "%s", c.database);
	assert_memory_equal(&c, &back, sizeof c);
	json_t *j = rec_cfg_json(&c, 0);
	char *s = json_dumps(j, JSON_COMPACT);
	assert_null(strstr(s, "pw@"));
	free(s);
	json_decref(j);
	/* the defaults too */
	ok(&c, NULL);
	round_trip(&c, 1, &back);
	assert_memory_equal(&c, &back, sizeof c);
	/* a JSON without a mode is refused */
	char err[AS_ERRLEN];
	json_t *bad = J("{\"exclude_tools\": []}");
	assert_int_equal(rec_cfg_from_json(&back, bad, err), AS_EINVAL);
	json_decref(bad);
	bad = J("{\"mode\": \"meta\", \"sample_rates\": {\"t\": 3}}");
	assert_int_equal(rec_cfg_from_json(&back, bad, err), AS_EINVAL);
	json_decref(bad);
}

static void test_lookups(void **st)
{
	(void)st;
	struct rec_cfg c;
	ok(&c, "{\"exclude_tools\": [\"heartbeat\", \"fs__poll\"], \"meta_only_tools\": [\"run_code\"],"
	       " \"sample_rates\": {\"poll\": 0.01, \"fs__stat\": 0.5}}");
	assert_true(rec_cfg_excluded(&c, "heartbeat"));
	assert_true(rec_cfg_excluded(&c, "fs__poll"));
	assert_false(rec_cfg_excluded(&c, "fs__pol"));
	assert_false(rec_cfg_excluded(&c, "Heartbeat"));
	assert_false(rec_cfg_excluded(&c, "run_code"));
	assert_false(rec_cfg_excluded(&c, ""));
	assert_true(rec_cfg_meta_only(&c, "run_code"));
	assert_false(rec_cfg_meta_only(&c, "heartbeat"));
	assert_false(rec_cfg_meta_only(&c, "run_code2"));
	assert_true(rec_cfg_rate(&c, "poll") == 0.01);
	assert_true(rec_cfg_rate(&c, "fs__stat") == 0.5);
	assert_true(rec_cfg_rate(&c, "pol") == 1.0);
	assert_true(rec_cfg_rate(&c, "heartbeat") == 1.0);
	ok(&c, NULL);
	assert_false(rec_cfg_excluded(&c, "heartbeat"));
	assert_false(rec_cfg_meta_only(&c, "run_code"));
	assert_true(rec_cfg_rate(&c, "poll") == 1.0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, clean_env, clean_env)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_defaults),
	    T(test_env_mode),
	    T(test_env_database),
	    T(test_env_jsonl_prefix),
	    T(test_env_durations),
	    T(test_env_lists),
	    T(test_env_sample_rates),
	    T(test_env_queue_qa),
	    T(test_section_keys),
	    T(test_section_refused),
	    T(test_section_lists_bounded),
	    T(test_durations),
	    T(test_env_overrides_section),
	    T(test_json_round_trip),
	    T(test_lookups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
