/* Unit tests for ledger/entry.c: entry_build and entry_check (kinds, reserved fields,
 * seq and prev links) and the JSON <-> CBOR value mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cbor.h"
#include "ledger/entry.h"

static struct cv_arena A;

static int setup(void **state)
{
	(void)state;
	cv_arena_init(&A, 1u << 22);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cv_arena_free(&A);
	return 0;
}

static void set_text(struct cv *v, const char *s)
{
	assert_int_equal(cv_set_text(&A, v, s, strlen(s)), 0);
}

/* A map of text fields: names[i] -> vals[i]. */
static struct cv *text_map(size_t n, const char *const *names, const char *const *vals)
{
	struct cv *m = cv_map(&A, n);
	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		set_text(&m->items[2 * i], names[i]);
		set_text(&m->items[2 * i + 1], vals[i]);
	}
	return m;
}

/* A copy of m with room for extra pairs at the end (n grows by extra; caller fills them). */
static struct cv *map_plus(const struct cv *m, size_t extra)
{
	struct cv *c = cv_map(&A, m->n + extra);
	assert_non_null(c);
	memcpy(c->items, m->items, 2 * m->n * sizeof *c->items);
	return c;
}

static struct cv *map_without(const struct cv *m, const char *key)
{
	struct cv *c = cv_map(&A, m->n);
	assert_non_null(c);
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (cv_text_eq(&m->items[2 * i], key))
			continue;
		c->items[2 * k] = m->items[2 * i];
		c->items[2 * k + 1] = m->items[2 * i + 1];
		k++;
	}
	assert_int_equal(k + 1, m->n);
	c->n = k;
	return c;
}

static struct cv *value_of(struct cv *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (cv_text_eq(&m->items[2 * i], key))
			return &m->items[2 * i + 1];
	fail_msg("no field %s", key);
	return NULL;
}

static struct cv *request_fields(void)
{
	static const char *const k[] = {"kind", "session_id", "type", "message"};
	static const char *const v[] = {"request", "sess-1", "tool_call", "delete the production database?"};
	return text_map(4, k, v);
}

static void prev_pattern(uint8_t prev[32], uint8_t seed)
{
	for (int i = 0; i < 32; i++)
		prev[i] = (uint8_t)(seed + 7 * i);
}

static int build(const struct cv *fields, uint64_t seq, struct buf *out)
{
	uint8_t prev[32];
	char err[AS_ERRLEN] = "";
	prev_pattern(prev, (uint8_t)seq);
	return entry_build(fields, seq, 1700000000123ull, prev, out, err);
}

/* ---- entry_build ---- */

static void test_build_decodes_and_checks(void **state)
{
	(void)state;
	struct cv *f = map_plus(request_fields(), 3);
	set_text(&f->items[8], "blob");
	const uint8_t raw[] = {0, 1, 0xfe, 0xff};
	assert_int_equal(cv_set_bytes(&A, &f->items[9], raw, sizeof raw), 0);
	set_text(&f->items[10], "count");
	cv_set_int(&f->items[11], -42);
	set_text(&f->items[12], "list");
	struct cv *l = cv_array(&A, 2);
	cv_set_uint(&l->items[0], 1);
	l->items[1].t = CV_NULL;
	f->items[13] = *l;

	struct buf out;
	char err[AS_ERRLEN] = "";
	buf_init(&out, ENTRY_MAX + 1024);
	assert_int_equal(buf_put(&out, "PFX", 3), 0); /* entry_build appends */
	uint8_t prev[32];
	prev_pattern(prev, 9);
	assert_int_equal(entry_build(f, 7, 1700000000123ull, prev, &out, err), 0);
	assert_memory_equal(out.p, "PFX", 3);

	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *e;
	assert_int_equal(cbor_decode(out.p + 3, out.len - 3, &a, &e, err), 0);
	assert_int_equal(entry_check(e, 7, prev, err), 0);
	assert_int_equal(entry_check(e, 7, NULL, err), 0);
	assert_int_equal(e->t, CV_MAP);
	assert_int_equal(e->n, 7 + 4);
	const struct cv *x = cv_get(e, "v");
	assert_true(x && x->t == CV_UINT && x->u == ENTRY_VERSION);
	x = cv_get(e, "seq");
	assert_true(x && x->t == CV_UINT && x->u == 7);
	x = cv_get(e, "time");
	assert_true(x && x->t == CV_UINT && x->u == 1700000000123ull);
	x = cv_get(e, "prev");
	assert_true(x && x->t == CV_BYTES && x->n == 32);
	assert_memory_equal(x->s, prev, 32);
	assert_true(cv_text_eq(cv_get(e, "kind"), "request"));
	assert_true(cv_text_eq(cv_get(e, "message"), "delete the production database?"));
	x = cv_get(e, "blob");
	assert_true(x && x->t == CV_BYTES && x->n == 4);
	assert_memory_equal(x->s, raw, 4);
	x = cv_get(e, "count");
	assert_true(x && x->t == CV_NINT && x->u == 41);
	x = cv_get(e, "list");
	assert_true(x && x->t == CV_ARRAY && x->n == 2 && x->items[1].t == CV_NULL);
	/* canonical: re-encoding the decoded entry gives the same bytes */
	struct buf re;
	buf_init(&re, ENTRY_MAX + 1024);
	assert_int_equal(cbor_encode(e, &re, err), 0);
	assert_int_equal(re.len, out.len - 3);
	assert_memory_equal(re.p, out.p + 3, re.len);
	buf_free(&re);
	buf_free(&out);
	cv_arena_free(&a);
}

struct kind_spec {
	const char *kind;
	const char *req[3];
};
static const struct kind_spec kinds[] = {
    {"request", {"session_id", "type", "message"}}, {"decision", {"session_id", "outcome", NULL}},
    {"timeout", {"session_id", "reason", NULL}},    {"cancelled", {"session_id", "reason", NULL}},
    {"abandoned", {"session_id", "reason", NULL}},  {"policy_load", {"digest", "source", NULL}},
    {"key", {"purpose", "kid", "event"}},	    {"identity", {"event", "name", NULL}},
};

static struct cv *kind_fields(const struct kind_spec *k)
{
	const char *names[4] = {"kind"}, *vals[4] = {k->kind};
	size_t n = 1;
	for (int i = 0; i < 3 && k->req[i]; i++, n++) {
		names[n] = k->req[i];
		vals[n] = "some text";
	}
	return text_map(n, names, vals);
}

static void test_build_every_kind_and_required_fields(void **state)
{
	(void)state;
	for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
		struct buf out;
		buf_init(&out, 1 << 16);
		struct cv *f = kind_fields(&kinds[ki]);
		if (build(f, 0, &out) != 0)
			fail_msg("kind %s with its required fields refused", kinds[ki].kind);
		for (int r = 0; r < 3 && kinds[ki].req[r]; r++) {
			buf_reset(&out);
			struct cv *g = map_without(f, kinds[ki].req[r]);
			if (build(g, 0, &out) == 0)
				fail_msg("kind %s without %s accepted", kinds[ki].kind, kinds[ki].req[r]);
			assert_int_equal(out.len, 0);
			/* present but not text */
			g = map_plus(f, 0);
			cv_set_uint(value_of(g, kinds[ki].req[r]), 5);
			if (build(g, 0, &out) == 0)
				fail_msg("kind %s with a non-text %s accepted", kinds[ki].kind, kinds[ki].req[r]);
		}
		buf_free(&out);
	}
}

/* An approval of a quorum (issue 14): session_id (text), reviewer (any: the signer
 * writes a map), n and quorum (unsigned). Each is required, n and quorum as numbers. */
static struct cv *approval_fields(void)
{
	static const char *const k[] = {"kind", "session_id", "reviewer", "n", "quorum"};
	static const char *const v[] = {"approval", "req-1", "", "", ""};
	struct cv *m = text_map(5, k, v);
	struct cv *rv = cv_map(&A, 1);
	assert_non_null(rv);
	set_text(&rv->items[0], "name");
	set_text(&rv->items[1], "alice");
	*value_of(m, "reviewer") = *rv;
	cv_set_uint(value_of(m, "n"), 1);
	cv_set_uint(value_of(m, "quorum"), 2);
	return m;
}

static void test_build_approval_kind(void **state)
{
	(void)state;
	struct buf out;
	buf_init(&out, 1 << 16);
	struct cv *f = approval_fields();
	assert_int_equal(build(f, 0, &out), 0);
	static const char *const req[] = {"session_id", "reviewer", "n", "quorum"};
	for (size_t r = 0; r < 4; r++) {
		buf_reset(&out);
		if (build(map_without(f, req[r]), 0, &out) == 0)
			fail_msg("an approval without %s accepted", req[r]);
	}
	for (size_t r = 2; r < 4; r++) { /* n and quorum as text */
		struct cv *g = map_plus(f, 0);
		set_text(value_of(g, req[r]), "1");
		buf_reset(&out);
		if (build(g, 0, &out) == 0)
			fail_msg("an approval with a text %s accepted", req[r]);
	}
	buf_free(&out);
}

static void test_build_refuses_reserved_fields(void **state)
{
	(void)state;
	static const char *const reserved[] = {"v", "seq", "time", "prev"};
	for (size_t i = 0; i < 4; i++) {
		struct cv *f = map_plus(request_fields(), 1);
		set_text(&f->items[8], reserved[i]);
		cv_set_uint(&f->items[9], 1);
		struct buf out;
		buf_init(&out, 1 << 16);
		int rc = build(f, 3, &out);
		size_t len = out.len;
		buf_free(&out);
		if (rc != AS_EINVAL)
			fail_msg("field '%s' given by the caller: rc %d", reserved[i], rc);
		assert_int_equal(len, 0);
	}
	/* near misses are ordinary fields */
	static const char *const fine[] = {"V", "seq ", "times", "previous", "ver"};
	for (size_t i = 0; i < 5; i++) {
		struct cv *f = map_plus(request_fields(), 1);
		set_text(&f->items[8], fine[i]);
		cv_set_uint(&f->items[9], 1);
		struct buf out;
		buf_init(&out, 1 << 16);
		int rc = build(f, 3, &out);
		buf_free(&out);
		if (rc != 0)
			fail_msg("ordinary field '%s' refused", fine[i]);
	}
}

static void test_build_refuses_bad_kind_or_shape(void **state)
{
	(void)state;
	struct buf out;
	buf_init(&out, 1 << 16);
	static const char *const bad_kinds[] = {"requests", "Request", "", "request\n", "unknown"};
	for (size_t i = 0; i < 5; i++) {
		struct cv *f = map_plus(request_fields(), 0);
		set_text(value_of(f, "kind"), bad_kinds[i]);
		if (build(f, 0, &out) == 0)
			fail_msg("kind '%s' accepted", bad_kinds[i]);
	}
	struct cv *f = map_plus(request_fields(), 0);
	cv_set_uint(value_of(f, "kind"), 1); /* kind not text */
	assert_int_not_equal(build(f, 0, &out), 0);
	assert_int_not_equal(build(map_without(request_fields(), "kind"), 0, &out), 0);
	/* not a map */
	struct cv *arr = cv_array(&A, 1);
	set_text(&arr->items[0], "request");
	assert_int_not_equal(build(arr, 0, &out), 0);
	/* a key that is not text */
	f = map_plus(request_fields(), 1);
	cv_set_uint(&f->items[8], 1);
	cv_set_uint(&f->items[9], 1);
	assert_int_not_equal(build(f, 0, &out), 0);
	/* a duplicate field */
	f = map_plus(request_fields(), 1);
	set_text(&f->items[8], "message");
	set_text(&f->items[9], "again");
	assert_int_not_equal(build(f, 0, &out), 0);
	buf_free(&out);
}

static void test_build_limits(void **state)
{
	(void)state;
	struct buf out;
	buf_init(&out, 4 * ENTRY_MAX);
	/* 64 fields is the most */
	for (size_t total = 64; total <= 65; total++) {
		struct cv *f = map_plus(request_fields(), total - 4);
		for (size_t i = 4; i < total; i++) {
			char name[32];
			snprintf(name, sizeof name, "extra%zu", i);
			set_text(&f->items[2 * i], name);
			cv_set_uint(&f->items[2 * i + 1], i);
		}
		buf_reset(&out);
		int rc = build(f, 0, &out);
		if (total == 64)
			assert_int_equal(rc, 0);
		else
			assert_int_equal(rc, AS_ETOOBIG);
	}
	/* the encoded entry may not pass ENTRY_MAX */
	char *big = malloc(ENTRY_MAX + 1);
	assert_non_null(big);
	memset(big, 'm', ENTRY_MAX);
	big[ENTRY_MAX] = 0;
	struct cv *f = map_plus(request_fields(), 0);
	assert_int_equal(cv_set_text(&A, value_of(f, "message"), big, ENTRY_MAX), 0);
	buf_reset(&out);
	assert_int_equal(build(f, 0, &out), AS_ETOOBIG);
	assert_int_equal(cv_set_text(&A, value_of(f, "message"), big, ENTRY_MAX - 400), 0);
	buf_reset(&out);
	assert_int_equal(build(f, 0, &out), 0);
	assert_true(out.len <= ENTRY_MAX);
	free(big);
	buf_free(&out);
}

/* ---- entry_check ---- */

/* A decoded-looking entry with v, seq 5, time, prev (pattern 5) and a request's fields. */
static struct cv *good_entry(void)
{
	struct cv *f = map_plus(request_fields(), 4);
	uint8_t prev[32];
	prev_pattern(prev, 5);
	set_text(&f->items[8], "v");
	cv_set_uint(&f->items[9], 1);
	set_text(&f->items[10], "seq");
	cv_set_uint(&f->items[11], 5);
	set_text(&f->items[12], "time");
	cv_set_uint(&f->items[13], 1700000000000ull);
	set_text(&f->items[14], "prev");
	assert_int_equal(cv_set_bytes(&A, &f->items[15], prev, 32), 0);
	return f;
}

static int check5(const struct cv *e)
{
	uint8_t prev[32];
	char err[AS_ERRLEN] = "";
	prev_pattern(prev, 5);
	return entry_check(e, 5, prev, err);
}

static void test_check_refuses_wrong_seq_and_prev(void **state)
{
	(void)state;
	struct cv *e = good_entry();
	uint8_t prev[32];
	char err[AS_ERRLEN] = "";
	prev_pattern(prev, 5);
	assert_int_equal(entry_check(e, 5, prev, err), 0);
	assert_int_equal(entry_check(e, 4, prev, err), AS_ECORRUPT);
	assert_int_equal(entry_check(e, 6, prev, err), AS_ECORRUPT);
	assert_int_equal(entry_check(e, 5 + (1ull << 32), prev, err), AS_ECORRUPT);
	for (int b = 0; b < 32; b++) {
		prev[b] ^= 0x01;
		if (entry_check(e, 5, prev, err) != AS_ECORRUPT)
			fail_msg("prev differing in byte %d accepted", b);
		prev[b] ^= 0x01;
	}
}

static void test_check_refuses_bad_ledger_fields(void **state)
{
	(void)state;
	struct cv *e;
	/* v */
	e = good_entry();
	cv_set_uint(value_of(e, "v"), 2);
	assert_int_equal(check5(e), AS_ECORRUPT);
	cv_set_uint(value_of(e, "v"), 0);
	assert_int_equal(check5(e), AS_ECORRUPT);
	set_text(value_of(e, "v"), "1");
	assert_int_equal(check5(e), AS_ECORRUPT);
	assert_int_equal(check5(map_without(good_entry(), "v")), AS_ECORRUPT);
	/* seq */
	e = good_entry();
	set_text(value_of(e, "seq"), "5");
	assert_int_equal(check5(e), AS_ECORRUPT);
	cv_set_int(value_of(e, "seq"), -6);
	assert_int_equal(check5(e), AS_ECORRUPT);
	assert_int_equal(check5(map_without(good_entry(), "seq")), AS_ECORRUPT);
	/* time */
	e = good_entry();
	cv_set_int(value_of(e, "time"), -1);
	assert_int_equal(check5(e), AS_ECORRUPT);
	assert_int_equal(check5(map_without(good_entry(), "time")), AS_ECORRUPT);
	/* prev: 32 bytes exactly, as a byte string */
	uint8_t p[33];
	prev_pattern(p, 5);
	p[32] = 0;
	e = good_entry();
	assert_int_equal(cv_set_bytes(&A, value_of(e, "prev"), p, 31), 0);
	assert_int_equal(check5(e), AS_ECORRUPT);
	assert_int_equal(cv_set_bytes(&A, value_of(e, "prev"), p, 33), 0);
	assert_int_equal(check5(e), AS_ECORRUPT);
	char ptext[33];
	memcpy(ptext, p, 32);
	ptext[32] = 0;
	assert_int_equal(cv_set_text(&A, value_of(e, "prev"), ptext, 32), 0);
	assert_int_equal(check5(e), AS_ECORRUPT);
	assert_int_equal(check5(map_without(good_entry(), "prev")), AS_ECORRUPT);
	/* the kind and its fields are checked as on build */
	e = good_entry();
	set_text(value_of(e, "kind"), "nonsense");
	assert_int_equal(check5(e), AS_ECORRUPT);
	assert_int_equal(check5(map_without(good_entry(), "session_id")), AS_ECORRUPT);
	assert_int_equal(check5(map_without(good_entry(), "kind")), AS_ECORRUPT);
	/* a key that is not text */
	e = map_plus(good_entry(), 1);
	cv_set_uint(&e->items[16], 99);
	cv_set_uint(&e->items[17], 0);
	assert_int_equal(check5(e), AS_ECORRUPT);
	/* the unchanged entry still passes */
	assert_int_equal(check5(good_entry()), 0);
}

static void test_check_refuses_non_map(void **state)
{
	(void)state;
	struct cv *v = cv_array(&A, 0);
	assert_int_equal(check5(v), AS_ECORRUPT);
	cv_set_uint(v, 5);
	assert_int_equal(check5(v), AS_ECORRUPT);
	set_text(v, "request");
	assert_int_equal(check5(v), AS_ECORRUPT);
	v->t = CV_NULL;
	assert_int_equal(check5(v), AS_ECORRUPT);
	/* an array holding what a good entry holds */
	struct cv *g = good_entry();
	struct cv as_array = {.t = CV_ARRAY, .n = 2 * g->n, .items = g->items};
	assert_int_equal(check5(&as_array), AS_ECORRUPT);
}

/* ---- JSON ---- */

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
	if (!j)
		fail_msg("test JSON does not parse: %s", je.text);
	return j;
}

static void test_cv_from_json_types(void **state)
{
	(void)state;
	json_t *j = parse("{\"u\": 18, \"n\": -2, \"t\": \"x\\u00e9\", \"a\": [true, false, null], "
			  "\"o\": {\"max\": 9223372036854775807, \"min\": -9223372036854775808}}");
	struct cv *v = NULL;
	char err[AS_ERRLEN] = "";
	assert_int_equal(cv_from_json(&A, j, &v, err), 0);
	json_decref(j);
	assert_int_equal(v->t, CV_MAP);
	assert_int_equal(v->n, 5);
	const struct cv *x = cv_get(v, "u");
	assert_true(x && x->t == CV_UINT && x->u == 18);
	x = cv_get(v, "n");
	assert_true(x && x->t == CV_NINT && x->u == 1);
	x = cv_get(v, "t");
	assert_true(x && x->t == CV_TEXT && x->n == 3 && memcmp(x->s, "x\xc3\xa9", 3) == 0);
	x = cv_get(v, "a");
	assert_true(x && x->t == CV_ARRAY && x->n == 3);
	assert_int_equal(x->items[0].t, CV_TRUE);
	assert_int_equal(x->items[1].t, CV_FALSE);
	assert_int_equal(x->items[2].t, CV_NULL);
	const struct cv *o = cv_get(v, "o");
	x = cv_get(o, "max");
	assert_true(x && x->t == CV_UINT && x->u == (uint64_t)INT64_MAX);
	x = cv_get(o, "min");
	assert_true(x && x->t == CV_NINT && x->u == (uint64_t)INT64_MAX);
}

static void test_cv_from_json_refuses_reals(void **state)
{
	(void)state;
	static const char *const texts[] = {"1.5",
					    "1.0",
					    "0.0",
					    "-0.0",
					    "1e3",
					    "2E-2",
					    "[1, 2.5]",
					    "{\"a\": {\"b\": 0.1}}",
					    "{\"kind\": \"request\", \"n\": 3.0}",
					    "[[[[1e0]]]]"};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		json_t *j = parse(texts[i]);
		struct cv *v = NULL;
		char err[AS_ERRLEN] = "";
		int rc = cv_from_json(&A, j, &v, err);
		json_decref(j);
		if (rc != AS_EINVAL)
			fail_msg("JSON %s: rc %d, wanted AS_EINVAL", texts[i], rc);
	}
	/* too deep to be an entry: refused, not a stack overflow */
	char deep[2 * 200 + 2];
	memset(deep, '[', 200);
	memset(deep + 200, ']', 200);
	deep[400] = 0;
	json_t *j = parse(deep);
	struct cv *v;
	char err[AS_ERRLEN];
	assert_int_equal(cv_from_json(&A, j, &v, err), AS_EINVAL);
	json_decref(j);
}

static char *to_json_text(const struct cv *v)
{
	json_t *j = cv_to_json(v);
	assert_non_null(j);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(j);
	assert_non_null(s);
	return s;
}

static void expect_json(const struct cv *v, const char *want)
{
	char *s = to_json_text(v);
	int same = strcmp(s, want) == 0;
	if (!same) {
		char got[256];
		snprintf(got, sizeof got, "%s", s);
		free(s);
		fail_msg("cv_to_json gave %s, wanted %s", got, want);
	}
	free(s);
}

static void test_cv_to_json_bytes_as_hex(void **state)
{
	(void)state;
	struct cv *b = cv_alloc(&A, 1);
	const uint8_t raw[] = {0x00, 0xab, 0xff, 0x10, 0x9c};
	assert_int_equal(cv_set_bytes(&A, b, raw, sizeof raw), 0);
	expect_json(b, "\"00abff109c\"");
	assert_int_equal(cv_set_bytes(&A, b, raw, 0), 0);
	expect_json(b, "\"\"");
	/* inside a map and an array */
	struct cv *m = cv_map(&A, 2);
	set_text(&m->items[0], "prev");
	assert_int_equal(cv_set_bytes(&A, &m->items[1], raw, 2), 0);
	set_text(&m->items[2], "list");
	struct cv *a = cv_array(&A, 2);
	assert_int_equal(cv_set_bytes(&A, &a->items[0], raw + 2, 3), 0);
	cv_set_int(&a->items[1], -3);
	m->items[3] = *a;
	expect_json(m, "{\"list\":[\"ff109c\",-3],\"prev\":\"00ab\"}");
}

static void test_cv_to_json_integers(void **state)
{
	(void)state;
	struct cv *v = cv_alloc(&A, 1);
	cv_set_uint(v, 0);
	expect_json(v, "0");
	cv_set_uint(v, (uint64_t)INT64_MAX);
	expect_json(v, "9223372036854775807");
	cv_set_int(v, INT64_MIN);
	expect_json(v, "-9223372036854775808");
	cv_set_int(v, -1);
	expect_json(v, "-1");
	/* beyond JSON integers: decimal strings, never a wrong number */
	cv_set_uint(v, UINT64_MAX);
	expect_json(v, "\"18446744073709551615\"");
	v->t = CV_NINT;
	v->u = (uint64_t)INT64_MAX + 1; /* -2^63 - 1 */
	expect_json(v, "\"-9223372036854775809\"");
	v->u = UINT64_MAX; /* -2^64, the smallest CBOR integer */
	expect_json(v, "\"-18446744073709551616\"");
	v->t = CV_TRUE;
	expect_json(v, "true");
	v->t = CV_NULL;
	expect_json(v, "null");
}

static void test_json_roundtrip(void **state)
{
	(void)state;
	static const char *const texts[] = {
	    "{\"kind\":\"request\",\"message\":\"h\\u00e9llo \\\"q\\\"\",\"n\":[1,-1,0,null,true,false],"
	    "\"o\":{\"a\":{},\"b\":[]},\"session_id\":\"s\",\"type\":\"t\"}",
	    "[]",
	    "{}",
	    "\"\"",
	    "-9223372036854775808",
	    "[[[[[[1]]]]]]"};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		json_t *j = parse(texts[i]);
		struct cv *v = NULL;
		char err[AS_ERRLEN] = "";
		assert_int_equal(cv_from_json(&A, j, &v, err), 0);
		struct buf b;
		buf_init(&b, 1 << 16);
		assert_int_equal(cbor_encode(v, &b, err), 0);
		struct cv_arena a;
		cv_arena_init(&a, 4096);
		struct cv *d;
		assert_int_equal(cbor_decode(b.p, b.len, &a, &d, err), 0);
		json_t *back = cv_to_json(d);
		assert_non_null(back);
		int eq = json_equal(j, back);
		json_decref(back);
		json_decref(j);
		cv_arena_free(&a);
		buf_free(&b);
		if (!eq)
			fail_msg("JSON %s changed in the round trip", texts[i]);
	}
}

/* The ledger's side of the JSON bridge pinned: reals refused, or as text for an agent's
 * context; nesting to CBOR_MAX_DEPTH; the messages as they are written. */
static void test_cv_from_json_reals_and_depth(void **state)
{
	(void)state;
	static const char *const reals[][2] = {{"0.1", "0.1"}, {"1e300", "1e+300"}, {"-2.5", "-2.5"}};
	for (size_t i = 0; i < 3; i++) {
		json_t *j = parse(reals[i][0]);
		struct cv *v = NULL;
		char err[AS_ERRLEN] = "", want[64];
		assert_int_equal(cv_from_json(&A, j, &v, err), AS_EINVAL);
		snprintf(want, sizeof want, "JSON number %g: entries hold integers only", json_real_value(j));
		assert_string_equal(err, want);
		struct cv t;
		assert_int_equal(cv_from_json_value(&A, j, &t, 0, &cvj_context, err), 0);
		json_decref(j);
		assert_int_equal(t.t, CV_TEXT);
		assert_int_equal(t.n, strlen(reals[i][1]));
		assert_memory_equal(t.s, reals[i][1], t.n);
	}
	char deep[2 * (CBOR_MAX_DEPTH + 1) + 2];
	for (int n = CBOR_MAX_DEPTH; n <= CBOR_MAX_DEPTH + 1; n++) {
		memset(deep, '[', (size_t)n);
		deep[n] = '1';
		memset(deep + n + 1, ']', (size_t)n);
		deep[2 * n + 1] = 0;
		json_t *j = parse(deep);
		struct cv *v = NULL;
		char err[AS_ERRLEN] = "";
		int rc = cv_from_json(&A, j, &v, err);
		json_decref(j);
		if (n == CBOR_MAX_DEPTH) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, AS_EINVAL);
			assert_string_equal(err, "JSON nested deeper than 32");
		}
	}
	/* a map key that is not text is named by its position */
	struct cv *m = cv_map(&A, 1);
	cv_set_uint(&m->items[0], 7);
	cv_set_uint(&m->items[1], 8);
	expect_json(m, "{\"#0\":8}");
	/* a call's reals (byte strings) read as an entry's text, keys too (verify/exact.c) */
	struct cv *r = cv_map(&A, 2);
	assert_int_equal(cv_set_bytes(&A, &r->items[0], (const uint8_t *)"k", 1), 0);
	assert_int_equal(cv_set_bytes(&A, &r->items[1], (const uint8_t *)"-2.5", 4), 0);
	set_text(&r->items[2], "t");
	assert_int_equal(cv_set_bytes(&A, &r->items[3], (const uint8_t *)"1e+300", 6), 0);
	json_t *j = cv_to_json_with(r, &cvj_context);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"k\":\"-2.5\",\"t\":\"1e+300\"}");
	free(s);
	json_decref(j);
	expect_json(r, "{\"#0\":\"2d322e35\",\"t\":\"31652b333030\"}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	    T_(test_build_decodes_and_checks),
	    T_(test_build_every_kind_and_required_fields),
	    T_(test_build_approval_kind),
	    T_(test_build_refuses_reserved_fields),
	    T_(test_build_refuses_bad_kind_or_shape),
	    T_(test_build_limits),
	    T_(test_check_refuses_wrong_seq_and_prev),
	    T_(test_check_refuses_bad_ledger_fields),
	    T_(test_check_refuses_non_map),
	    T_(test_cv_from_json_types),
	    T_(test_cv_from_json_refuses_reals),
	    T_(test_cv_to_json_bytes_as_hex),
	    T_(test_cv_to_json_integers),
	    T_(test_json_roundtrip),
	    T_(test_cv_from_json_reals_and_depth),
#undef T_
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
