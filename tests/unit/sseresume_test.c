/* Resumable SSE answers (gateway/worker/mcp/sseresume.c): the priming event, ids, the
 * log a resume replays from, ids bound to their session, parking and its grace period,
 * the bounds, and the Last-Event-ID parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/worker/mcp/sseresume.h"
#include "include/assent/err.h"

static void out_is(struct buf *out, const char *want)
{
	char got[4096];
	snprintf(got, sizeof got, "%.*s", (int)out->len, (const char *)out->p);
	assert_string_equal(got, want);
	buf_reset(out);
}

static void test_stream(void **state)
{
	(void)state;
	struct sse_set set = {0};
	struct buf out;
	buf_init(&out, 1u << 20);
	struct sse_stream *s = sse_open(&set, 7, "\"r1\"", &out);
	assert_non_null(s);
	out_is(&out, "id: 1-0\nretry: 2000\ndata: \n\n");
	assert_int_equal(sse_put(s, "{\"p\":1}", 7, &out), 0);
	out_is(&out, "id: 1-1\nevent: message\ndata: {\"p\":1}\n\n");
	/* held: no resume; parked: found by its call, not by another session */
	unsigned st;
	char why[200];
	assert_null(sse_resume(&set, 7, 1, 0, &out, &st, why, sizeof why));
	assert_int_equal(st, 409);
	assert_null(sse_parked(&set, 7, "\"r1\"", 4));
	sse_park(s, 1000);
	assert_ptr_equal(sse_parked(&set, 7, "\"r1\"", 4), s);
	assert_null(sse_parked(&set, 8, "\"r1\"", 4));
	assert_int_equal(sse_put(s, "{\"answer\":2}", 12, NULL), 0); /* while parked: to the log only */
	s->done = 1;
	assert_int_equal(out.len, 0);
	assert_null(sse_resume(&set, 8, 1, 0, &out, &st, why, sizeof why)); /* another session */
	assert_int_equal(st, 400);
	assert_non_null(strstr(why, "not an event of this session's streams"));
	assert_null(sse_resume(&set, 7, 1, 3, &out, &st, why, sizeof why)); /* an event it never sent */
	assert_int_equal(st, 400);
	assert_null(sse_resume(&set, 7, 2, 0, &out, &st, why, sizeof why)); /* no such stream */
	assert_ptr_equal(sse_resume(&set, 7, 1, 1, &out, &st, why, sizeof why), s);
	out_is(&out, "id: 1-2\nevent: message\ndata: {\"answer\":2}\n\n");
	/* parked again: resumed from the priming event, everything after it comes */
	sse_park(s, 2000);
	assert_ptr_equal(sse_resume(&set, 7, 1, 0, &out, &st, why, sizeof why), s);
	out_is(&out, "id: 1-1\nevent: message\ndata: {\"p\":1}\n\nid: 1-2\nevent: message\ndata: {\"answer\":2}\n\n");
	sse_park(s, 2000);
	assert_int_equal(sse_has_conn(&set, 7), 1);
	sse_close(&set, s);
	assert_int_equal(sse_has_conn(&set, 7), 0);
	assert_int_equal(set.n, 0);
	buf_free(&out);
}

static int gone_n;
static char gone_rid[64];
static void gone(void *arg, uint64_t conn, const char *rid)
{
	assert_int_equal(conn, (uintptr_t)arg);
	gone_n++;
	snprintf(gone_rid, sizeof gone_rid, "%s", rid);
}

static void test_expire(void **state)
{
	(void)state;
	struct sse_set set = {0};
	struct buf out;
	buf_init(&out, 1u << 20);
	struct sse_stream *a = sse_open(&set, 5, "1", &out), *b = sse_open(&set, 5, "2", &out),
			  *c = sse_open(&set, 5, "3", &out);
	assert_true(a && b && c && set.n == 3);
	sse_park(a, 100);
	sse_park(b, 100);
	b->done = 1; /* answered while parked: dropped without a cancel */
	/* before the grace period ends nothing goes; a held stream never expires */
	sse_expire(&set, 100 + SSE_GRACE_MS - 1, gone, (void *)(uintptr_t)5);
	assert_int_equal(gone_n, 0);
	assert_int_equal(set.n, 3);
	sse_expire(&set, 100 + SSE_GRACE_MS, gone, (void *)(uintptr_t)5);
	assert_int_equal(gone_n, 1);
	assert_string_equal(gone_rid, "1");
	assert_int_equal(set.n, 1);
	sse_drop_conn(&set, 5);
	assert_int_equal(set.n, 0);
	buf_free(&out);
}

static void test_bounds(void **state)
{
	(void)state;
	struct sse_set set = {0};
	struct buf out, tiny;
	buf_init(&out, 1u << 20);
	for (size_t i = 0; i < SSE_STREAMS_MAX; i++)
		assert_non_null(sse_open(&set, 9, "1", &out));
	assert_null(sse_open(&set, 9, "1", &out)); /* too many */
	sse_drop_conn(&set, 9);
	/* a client that does not read: the event stays in the log for a resume */
	buf_init(&tiny, 40);
	struct sse_stream *s = sse_open(&set, 9, "1", &tiny);
	assert_non_null(s);
	assert_int_equal(sse_put(s, "{\"a\":\"0123456789\"}", 18, &tiny), -1);
	assert_int_equal(s->nev, 2);
	sse_park(s, 0);
	unsigned st;
	char why[200];
	assert_ptr_equal(sse_resume(&set, 9, s->no, 0, &out, &st, why, sizeof why), s);
	assert_non_null(strstr((const char *)out.p, "0123456789"));
	sse_drop_conn(&set, 9);
	buf_free(&tiny);
	buf_free(&out);
}

static void test_id_parse(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint64_t no;
		uint32_t seq;
	} rows[] = {
	    {"1-0", 0, 1, 0},
	    {"9999999999999999999-4294967295", 0, 9999999999999999999ull, UINT32_MAX},
	    {"0-0", 0, 0, 0},
	    {"1-4294967296", -1, 0, 0},
	    {"10000000000000000000-1", -1, 0, 0}, /* 20 digits */
	    {"01-1", -1, 0, 0},
	    {"1-01", -1, 0, 0},
	    {"1", -1, 0, 0},
	    {"1-", -1, 0, 0},
	    {"-1", -1, 0, 0},
	    {"", -1, 0, 0},
	    {"1-1-1", -1, 0, 0},
	    {"1-1\n", -1, 0, 0},
	    {" 1-1", -1, 0, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		uint64_t no = 99;
		uint32_t seq = 99;
		int rc = sse_id_parse(rows[i].s, &no, &seq);
		if (rc != rows[i].rc || (rc == 0 && (no != rows[i].no || seq != rows[i].seq)))
			fail_msg("%s: rc %d %llu-%u", rows[i].s, rc, (unsigned long long)no, seq);
	}
	uint64_t no;
	uint32_t seq;
	assert_int_equal(sse_id_parse(NULL, &no, &seq), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream),
	    cmocka_unit_test(test_expire),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_id_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
