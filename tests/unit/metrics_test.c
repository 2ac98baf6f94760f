/* Unit tests for gateway/signer/core/metrics.c: decisions counted by outcome, the latency
 * histogram (cumulative buckets at their bounds, cancelled and abandoned requests
 * left out), and the Prometheus text read back line by line: every sample is
 * `name{labels} value` or `name value` of a metric with one HELP and one TYPE before
 * it, the buckets grow to +Inf, which equals the count. */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/signer/core/metrics.h"
#include "common/util.h"

static const char *const outcomes[METRICS_OUTCOMES] = {"approved", "rejected", "answered",  "selected",
						       "denied",   "timeout",  "cancelled", "abandoned"};
/* The bucket bounds in milliseconds, as the documentation states them in seconds. */
static const uint64_t bounds_ms[METRICS_BUCKETS] = {10,	    100,    1000,    5000,     15000,	60000,
						    300000, 900000, 3600000, 14400000, 86400000};

/* ---- the exposition format, parsed ---- */

#define MAX_FAM 32
#define MAX_SAMPLES 128

struct family {
	char name[96], type[16];
	int help, samples;
};

struct sample {
	char name[96], labels[160]; /* labels: the text between the braces, "" when none */
	char key[260];		    /* name{labels} or name: what tests look up */
	double value;
};

struct expo {
	struct family fam[MAX_FAM];
	size_t nfam;
	struct sample s[MAX_SAMPLES];
	size_t ns;
};

static int name_char(char c, int first)
{
	return isalpha((unsigned char)c) || c == '_' || c == ':' || (!first && isdigit((unsigned char)c));
}

static struct family *family(struct expo *e, const char *name)
{
	for (size_t i = 0; i < e->nfam; i++)
		if (!strcmp(e->fam[i].name, name))
			return &e->fam[i];
	return NULL;
}

/* A metric name at *p; returns its length (0: none). */
static size_t metric_name(const char *p)
{
	size_t n = 0;
	while (name_char(p[n], n == 0))
		n++;
	return n;
}

/* The family a sample belongs to: its own name, or a histogram's base. */
static struct family *owner(struct expo *e, const char *name)
{
	struct family *f = family(e, name);
	if (f)
		return f;
	static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(name), k = strlen(suffixes[i]);
		if (n > k && !strcmp(name + n - k, suffixes[i])) {
			char base[96];
			snprintf(base, sizeof base, "%.*s", (int)(n - k), name);
			f = family(e, base);
			if (f && !strcmp(f->type, "histogram"))
				return f;
		}
	}
	return NULL;
}

/* Labels: name="value" pairs separated by commas, values without raw quotes or newlines. */
static void check_labels(const char *l, const char *line)
{
	while (*l) {
		size_t n = metric_name(l);
		if (n == 0 || l[n] != '=' || l[n + 1] != '"')
			fail_msg("bad label in: %s", line);
		l += n + 2;
		while (*l && *l != '"') {
			if (*l == '\\') {
				if (l[1] != '\\' && l[1] != '"' && l[1] != 'n')
					fail_msg("bad escape in a label value: %s", line);
				l++;
			}
			l++;
		}
		if (*l != '"')
			fail_msg("unterminated label value: %s", line);
		l++;
		if (*l == ',')
			l++;
		else if (*l)
			fail_msg("labels not separated by commas: %s", line);
	}
}

static double parse_value(const char *v, const char *line)
{
	if (!strcmp(v, "+Inf"))
		return INFINITY;
	if (!strcmp(v, "-Inf"))
		return -INFINITY;
	if (!strcmp(v, "NaN"))
		return NAN;
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || isspace((unsigned char)v[0]))
		fail_msg("not a number: '%s' in: %s", v, line);
	return d;
}

static void parse(const char *text, size_t len, struct expo *e)
{
	memset(e, 0, sizeof *e);
	if (len == 0 || text[len - 1] != '\n')
		fail_msg("the text does not end with a newline");
	if (strlen(text) != len)
		fail_msg("a NUL byte inside the text");
	const char *p = text;
	while (p < text + len) {
		const char *nl = strchr(p, '\n');
		char line[512];
		if ((size_t)(nl - p) >= sizeof line)
			fail_msg("a line of %zu bytes", (size_t)(nl - p));
		snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
		p = nl + 1;
		if (!line[0] || line[strlen(line) - 1] == ' ' || line[0] == ' ')
			fail_msg("an empty line, or one with a leading or trailing space: '%s'", line);
		if (line[0] == '#') {
			char kind[8], name[96];
			int off = 0;
			if (sscanf(line, "# %7s %95s %n", kind, name, &off) != 2 || off == 0)
				fail_msg("a comment that is neither HELP nor TYPE: %s", line);
			if (metric_name(name) != strlen(name))
				fail_msg("bad metric name in: %s", line);
			struct family *f = family(e, name);
			if (!f) {
				if (e->nfam == MAX_FAM)
					fail_msg("too many metrics");
				f = &e->fam[e->nfam++];
				snprintf(f->name, sizeof f->name, "%s", name);
			}
			if (f->samples)
				fail_msg("HELP or TYPE after the samples of %s", name);
			const char *rest = line + off;
			if (!strcmp(kind, "HELP")) {
				if (f->help++ || !*rest)
					fail_msg("a second or empty HELP: %s", line);
			} else if (!strcmp(kind, "TYPE")) {
				if (f->type[0] ||
				    (strcmp(rest, "counter") && strcmp(rest, "gauge") && strcmp(rest, "histogram") &&
				     strcmp(rest, "summary") && strcmp(rest, "untyped")))
					fail_msg("a second or unknown TYPE: %s", line);
				snprintf(f->type, sizeof f->type, "%s", rest);
			} else {
				fail_msg("a comment that is neither HELP nor TYPE: %s", line);
			}
			continue;
		}
		/* A sample: name, optional {labels}, one space, a value, nothing more. */
		if (e->ns == MAX_SAMPLES)
			fail_msg("too many samples");
		struct sample *s = &e->s[e->ns++];
		size_t n = metric_name(line);
		if (n == 0 || n >= sizeof s->name)
			fail_msg("a sample without a metric name: %s", line);
		snprintf(s->name, sizeof s->name, "%.*s", (int)n, line);
		const char *q = line + n;
		if (*q == '{') {
			const char *close = strchr(q, '}');
			if (!close || (size_t)(close - q - 1) >= sizeof s->labels)
				fail_msg("unclosed labels: %s", line);
			snprintf(s->labels, sizeof s->labels, "%.*s", (int)(close - q - 1), q + 1);
			check_labels(s->labels, line);
			q = close + 1;
		}
		if (*q != ' ' || strchr(q + 1, ' '))
			fail_msg("not `name{labels} value` nor `name value`: %s", line);
		s->value = parse_value(q + 1, line);
		snprintf(s->key, sizeof s->key, s->labels[0] ? "%s{%s}" : "%s%s", s->name, s->labels);
		for (size_t i = 0; i + 1 < e->ns; i++)
			if (!strcmp(e->s[i].key, s->key))
				fail_msg("a sample given twice: %s", s->key);
		struct family *f = owner(e, s->name);
		if (!f || !f->help || !f->type[0])
			fail_msg("a sample before its HELP and TYPE: %s", line);
		f->samples++;
		if (!strcmp(f->type, "counter") || !strcmp(f->type, "gauge")) {
			if (strcmp(s->name, f->name))
				fail_msg("a %s with a suffixed sample: %s", f->type, line);
			if (!(s->value >= 0) || isinf(s->value))
				fail_msg("a counter or gauge that is not a finite count: %s", line);
		}
	}
	for (size_t i = 0; i < e->nfam; i++)
		if (!e->fam[i].help || !e->fam[i].type[0] || !e->fam[i].samples)
			fail_msg("metric %s lacks HELP, TYPE or samples", e->fam[i].name);
}

/* A histogram's buckets: le strictly increasing to +Inf, counts non-decreasing,
 * +Inf equal to _count, and a _sum. Returns the bucket counts in order. */
static size_t histogram(const struct expo *e, const char *name, double *le, double *counts, double *sum, double *count)
{
	char bucket[128], sname[128], cname[128];
	snprintf(bucket, sizeof bucket, "%s_bucket", name);
	snprintf(sname, sizeof sname, "%s_sum", name);
	snprintf(cname, sizeof cname, "%s_count", name);
	size_t nb = 0;
	int have_sum = 0, have_count = 0;
	for (size_t i = 0; i < e->ns; i++) {
		const struct sample *s = &e->s[i];
		if (!strcmp(s->name, bucket)) {
			if (strncmp(s->labels, "le=\"", 4) || s->labels[strlen(s->labels) - 1] != '"' ||
			    strchr(s->labels, ','))
				fail_msg("a bucket without exactly one le label: %s", s->key);
			char v[64];
			snprintf(v, sizeof v, "%.*s", (int)(strlen(s->labels) - 5), s->labels + 4);
			le[nb] = parse_value(v, s->key);
			counts[nb] = s->value;
			if (nb > 0 && !(le[nb] > le[nb - 1]))
				fail_msg("bucket bounds not increasing at %s", s->key);
			if (nb > 0 && counts[nb] < counts[nb - 1])
				fail_msg("bucket counts decrease at %s", s->key);
			if (have_sum || have_count)
				fail_msg("a bucket after _sum or _count: %s", s->key);
			nb++;
		} else if (!strcmp(s->name, sname)) {
			*sum = s->value;
			have_sum = 1;
		} else if (!strcmp(s->name, cname)) {
			*count = s->value;
			have_count = 1;
		}
	}
	if (nb == 0 || !isinf(le[nb - 1]) || !have_sum || !have_count)
		fail_msg("histogram %s: no buckets, no +Inf bucket, no _sum or no _count", name);
	if (counts[nb - 1] != *count)
		fail_msg("histogram %s: +Inf bucket %.0f, count %.0f", name, counts[nb - 1], *count);
	return nb;
}

static double value(const struct expo *e, const char *key)
{
	for (size_t i = 0; i < e->ns; i++)
		if (!strcmp(e->s[i].key, key))
			return e->s[i].value;
	fail_msg("no sample %s", key);
	return -1;
}

/* metrics_text into a fresh buffer, parsed; the raw text stays in text. */
static void render(const struct metrics *m, const struct metrics_gauges *g, struct expo *e, struct buf *text)
{
	buf_init(text, 1 << 16);
	assert_int_equal(metrics_text(m, g, text), 0);
	assert_non_null(text->p);
	assert_true(text->len > 0 && text->len < text->cap);
	text->p[text->len] = 0;
	parse((const char *)text->p, text->len, e);
}

static struct expo E; /* large: not on the stack */

/* ---- tests ---- */

static void test_empty(void **state)
{
	(void)state;
	struct metrics m;
	struct metrics_gauges g;
	memset(&m, 0, sizeof m);
	memset(&g, 0, sizeof g);
	struct buf t;
	render(&m, &g, &E, &t);
	static const struct {
		const char *name, *type;
	} want[] = {
	    {"assent_pending", "gauge"},
	    {"assent_decisions_total", "counter"},
	    {"assent_decision_latency_seconds", "histogram"},
	    {"assent_ledger_entries", "gauge"},
	    {"assent_ledger_bytes", "gauge"},
	    {"assent_worker_restarts_total", "counter"},
	    {"assent_auth_failures_total", "counter"},
	    {"assent_webhook_deliveries_total", "counter"},
	    {"assent_witness_cosignatures_total", "counter"},
	    {"assent_witness_conflicts_total", "counter"},
	    {"assent_web_sessions", "gauge"},
	    {"assent_uptime_seconds", "gauge"},
	};
	assert_int_equal(E.nfam, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct family *f = family(&E, want[i].name);
		if (!f || strcmp(f->type, want[i].type))
			fail_msg("%s: %s, want a %s", want[i].name, f ? f->type : "missing", want[i].type);
		if (!strcmp(f->type, "counter") && strlen(f->name) > 6 &&
		    strcmp(f->name + strlen(f->name) - 6, "_total"))
			fail_msg("counter %s does not end in _total", f->name);
	}
	for (size_t i = 0; i < E.ns; i++)
		if (E.s[i].value != 0)
			fail_msg("%s is %g with nothing counted", E.s[i].key, E.s[i].value);
	/* One sample per outcome, per bucket and per label value, all there at zero. */
	char key[128];
	for (size_t i = 0; i < METRICS_OUTCOMES; i++) {
		snprintf(key, sizeof key, "assent_decisions_total{outcome=\"%s\"}", outcomes[i]);
		assert_true(value(&E, key) == 0);
	}
	double le[32], counts[32], sum = -1, count = -1;
	assert_int_equal(histogram(&E, "assent_decision_latency_seconds", le, counts, &sum, &count),
			 METRICS_BUCKETS + 1);
	for (size_t i = 0; i < METRICS_BUCKETS; i++)
		if (fabs(le[i] - (double)bounds_ms[i] / 1000) > 1e-12)
			fail_msg("bucket %zu: le %g, want %g", i, le[i], (double)bounds_ms[i] / 1000);
	assert_true(value(&E, "assent_worker_restarts_total{worker=\"mcp\"}") == 0);
	assert_true(value(&E, "assent_worker_restarts_total{worker=\"review\"}") == 0);
	assert_true(value(&E, "assent_auth_failures_total{listener=\"agent\"}") == 0);
	assert_true(value(&E, "assent_auth_failures_total{listener=\"review\"}") == 0);
	assert_true(value(&E, "assent_webhook_deliveries_total{result=\"gave_up\"}") == 0);
	buf_free(&t);
}

static void test_outcomes(void **state)
{
	(void)state;
	struct metrics m;
	memset(&m, 0, sizeof m);
	/* Outcome i, i + 1 times. */
	for (size_t i = 0; i < METRICS_OUTCOMES; i++)
		for (size_t k = 0; k <= i; k++)
			metrics_decided(&m, outcomes[i], 500);
	for (size_t i = 0; i < METRICS_OUTCOMES; i++)
		assert_int_equal(m.decisions[i], i + 1);
	/* A name that is none of them, nearly one, or one in another case: counted under none. */
	static const char *const other[] = {"", "bogus", "Approved", "approved ", "approve", "cancel"};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
		metrics_decided(&m, other[i], 500);
	for (size_t i = 0; i < METRICS_OUTCOMES; i++)
		assert_int_equal(m.decisions[i], i + 1);
	struct metrics_gauges g;
	memset(&g, 0, sizeof g);
	struct buf t;
	render(&m, &g, &E, &t);
	char key[128];
	for (size_t i = 0; i < METRICS_OUTCOMES; i++) {
		snprintf(key, sizeof key, "assent_decisions_total{outcome=\"%s\"}", outcomes[i]);
		if (value(&E, key) != (double)(i + 1))
			fail_msg("%s = %g, want %zu", key, value(&E, key), i + 1);
	}
	buf_free(&t);
}

/* Each latency lands in every bucket whose bound it does not exceed; the bound itself is in. */
static void test_buckets(void **state)
{
	(void)state;
	static const uint64_t lat[] = {
	    0,	    1,	     9,	      10,      11,	 99,	   100,	     101,      999,	 1000,	    1001,
	    4999,   5000,    5001,    15000,   15001,	 59999,	   60000,    60001,    300000,	 300001,    900000,
	    900001, 3599999, 3600000, 3600001, 14400000, 14400001, 86399999, 86400000, 86400001, 604800000, UINT32_MAX};
	const size_t n = sizeof lat / sizeof lat[0];
	struct metrics m;
	memset(&m, 0, sizeof m);
	double want_sum = 0;
	for (size_t i = 0; i < n; i++) {
		metrics_decided(&m, outcomes[i % 6], lat[i]); /* the six that are decisions */
		want_sum += (double)lat[i] / 1000;
	}
	assert_int_equal(m.lat_count, n);
	assert_true(fabs(m.lat_sum_s - want_sum) < 1e-6 * want_sum);
	for (size_t b = 0; b < METRICS_BUCKETS; b++) {
		uint64_t want = 0;
		for (size_t i = 0; i < n; i++)
			want += lat[i] <= bounds_ms[b];
		if (m.lat_bucket[b] != want)
			fail_msg("bucket le=%g: %llu, want %llu", (double)bounds_ms[b] / 1000,
				 (unsigned long long)m.lat_bucket[b], (unsigned long long)want);
	}
	/* The same, read back from the text. */
	struct metrics_gauges g;
	memset(&g, 0, sizeof g);
	struct buf t;
	render(&m, &g, &E, &t);
	double le[32], counts[32], sum = -1, count = -1;
	size_t nb = histogram(&E, "assent_decision_latency_seconds", le, counts, &sum, &count);
	assert_int_equal(nb, METRICS_BUCKETS + 1);
	for (size_t b = 0; b < METRICS_BUCKETS; b++)
		assert_true(counts[b] == (double)m.lat_bucket[b]);
	assert_true(count == (double)n);
	assert_true(counts[METRICS_BUCKETS] == (double)n);
	assert_true(fabs(sum - want_sum) <= 0.0005 + 1e-9 * want_sum); /* printed to the millisecond */
	buf_free(&t);
}

/* Nobody decided a cancelled or abandoned request: counted, but not a latency. */
static void test_not_decisions(void **state)
{
	(void)state;
	struct metrics m;
	memset(&m, 0, sizeof m);
	metrics_decided(&m, "cancelled", 5);
	metrics_decided(&m, "abandoned", 86400000ull * 30);
	metrics_decided(&m, "cancelled", 0);
	assert_int_equal(m.decisions[6], 2);
	assert_int_equal(m.decisions[7], 1);
	assert_int_equal(m.lat_count, 0);
	assert_true(m.lat_sum_s == 0);
	for (size_t b = 0; b < METRICS_BUCKETS; b++)
		assert_int_equal(m.lat_bucket[b], 0);
	metrics_decided(&m, "approved", 1500);
	assert_int_equal(m.lat_count, 1);
	assert_true(fabs(m.lat_sum_s - 1.5) < 1e-12);
	struct metrics_gauges g;
	memset(&g, 0, sizeof g);
	struct buf t;
	render(&m, &g, &E, &t);
	assert_true(value(&E, "assent_decisions_total{outcome=\"cancelled\"}") == 2);
	assert_true(value(&E, "assent_decisions_total{outcome=\"abandoned\"}") == 1);
	assert_true(value(&E, "assent_decision_latency_seconds_count") == 1);
	assert_true(value(&E, "assent_decision_latency_seconds_sum") == 1.5);
	assert_true(value(&E, "assent_decision_latency_seconds_bucket{le=\"1\"}") == 0);
	assert_true(value(&E, "assent_decision_latency_seconds_bucket{le=\"5\"}") == 1);
	assert_true(value(&E, "assent_decision_latency_seconds_bucket{le=\"+Inf\"}") == 1);
	buf_free(&t);
}

/* Each gauge and counter where it belongs, printed exactly however large. */
static void test_gauges(void **state)
{
	(void)state;
	struct metrics m;
	memset(&m, 0, sizeof m);
	m.auth_fail_agent = 11;
	m.auth_fail_review = 12;
	m.hook_delivered = 13;
	m.hook_dropped = 14;
	struct metrics_gauges g = {.pending = 1,
				   .ledger_entries = 2,
				   .ledger_bytes = UINT64_MAX,
				   .uptime_s = 4,
				   .mcp_restarts = 5,
				   .review_restarts = 6,
				   .web_sessions = 7};
	struct buf t;
	render(&m, &g, &E, &t);
	assert_true(value(&E, "assent_pending") == 1);
	assert_true(value(&E, "assent_ledger_entries") == 2);
	assert_true(value(&E, "assent_uptime_seconds") == 4);
	assert_true(value(&E, "assent_worker_restarts_total{worker=\"mcp\"}") == 5);
	assert_true(value(&E, "assent_worker_restarts_total{worker=\"review\"}") == 6);
	assert_true(value(&E, "assent_web_sessions") == 7);
	assert_true(value(&E, "assent_auth_failures_total{listener=\"agent\"}") == 11);
	assert_true(value(&E, "assent_auth_failures_total{listener=\"review\"}") == 12);
	assert_true(value(&E, "assent_webhook_deliveries_total{result=\"delivered\"}") == 13);
	assert_true(value(&E, "assent_webhook_deliveries_total{result=\"dropped\"}") == 14);
	assert_non_null(strstr((const char *)t.p, "\nassent_ledger_bytes 18446744073709551615\n"));
	buf_free(&t);
}

/* A buffer with too little room: an error, never a cut-off text passed off as whole. */
static void test_small_buffer(void **state)
{
	(void)state;
	struct metrics m;
	struct metrics_gauges g;
	memset(&m, 0, sizeof m);
	memset(&g, 0, sizeof g);
	struct buf t;
	buf_init(&t, 1 << 16);
	assert_int_equal(metrics_text(&m, &g, &t), 0);
	size_t full = t.len;
	buf_free(&t);
	for (size_t max = 1; max < full; max += 97) {
		buf_init(&t, max);
		assert_int_equal(metrics_text(&m, &g, &t), -1);
		assert_true(t.len <= max);
		buf_free(&t);
	}
	buf_init(&t, full + 1);
	assert_int_equal(metrics_text(&m, &g, &t), 0);
	assert_int_equal(t.len, full);
	buf_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),	  cmocka_unit_test(test_outcomes), cmocka_unit_test(test_buckets),
	    cmocka_unit_test(test_not_decisions), cmocka_unit_test(test_gauges),   cmocka_unit_test(test_small_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
