/* Unit tests for the signer's history of decisions (gateway/signer/ended.c: history_push,
 * history_nth, history_summary, history_free): the ring keeps the newest HISTORY_MAX in
 * order across its wrap, frees the terms of what it drops (the sanitizers' leak check
 * sees it), and a message is cut on a character boundary with its line breaks as spaces. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/signer/state.h"

static void push(struct signer *s, uint64_t seq, int restricted)
{
	struct recent x = {.seq = seq, .restricted = restricted};
	snprintf(x.sid, sizeof x.sid, "req-%llu", (unsigned long long)seq);
	if (restricted) {
		x.pd = calloc(1, sizeof *x.pd);
		assert_non_null(x.pd);
		snprintf(x.pd->reviewers[0], sizeof x.pd->reviewers[0], "bob");
		x.pd->nreviewers = 1;
	}
	history_push(s, &x);
}

static void test_ring(void **state)
{
	(void)state;
	struct signer *s = calloc(1, sizeof *s);
	assert_non_null(s);
	assert_null(history_nth(s, 0));
	push(s, 1, 0);
	push(s, 2, 1);
	assert_int_equal(history_nth(s, 0)->seq, 2);
	assert_int_equal(history_nth(s, 1)->seq, 1);
	assert_null(history_nth(s, 2));
	assert_string_equal(history_nth(s, 0)->pd->reviewers[0], "bob");
	/* past the ring's size: the oldest go, restricted ones' terms with them */
	for (uint64_t q = 3; q <= HISTORY_MAX + 7; q++)
		push(s, q, q % 3 == 0);
	assert_int_equal(s->nrecent, HISTORY_MAX);
	for (size_t i = 0; i < HISTORY_MAX; i++) {
		const struct recent *x = history_nth(s, i);
		assert_non_null(x);
		assert_int_equal(x->seq, HISTORY_MAX + 7 - i);
		assert_int_equal(x->restricted, x->seq % 3 == 0);
		assert_true(!x->restricted || (x->pd && x->pd->nreviewers == 1));
	}
	assert_null(history_nth(s, HISTORY_MAX));
	history_free(s);
	assert_null(history_nth(s, 0));
	free(s);
}

static void test_summary(void **state)
{
	(void)state;
	char out[HISTORY_MESSAGE_MAX + 1], msg[400];
	history_summary(out, "two\nlines\r\n", 11);
	assert_string_equal(out, "two lines  ");
	history_summary(out, "", 0);
	assert_string_equal(out, "");
	/* 119 ASCII bytes, then a 3-byte character across byte 120: cut before it */
	memset(msg, 'a', 119);
	memcpy(msg + 119,
	       "\xe2\x82\xac"
	       "bc",
	       5);
	history_summary(out, msg, 124);
	assert_int_equal(strlen(out), 119);
	/* exactly 120 bytes ending a character: kept whole */
	memset(msg, 'a', 117);
	memcpy(msg + 117, "\xe2\x82\xac", 3);
	history_summary(out, msg, 120);
	assert_int_equal(strlen(out), 120);
	/* a message of 4-byte characters only: cut on one of their starts */
	for (size_t i = 0; i < 100; i++)
		memcpy(msg + 4 * i, "\xf0\x9f\x98\x80", 4);
	history_summary(out, msg, 400);
	assert_int_equal(strlen(out), 120);
	history_summary(out, msg + 1, 399); /* starts inside one: never more than the bound */
	assert_true(strlen(out) <= HISTORY_MESSAGE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring),
	    cmocka_unit_test(test_summary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
