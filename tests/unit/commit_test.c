/* Unit tests for the group commit (gateway/signer/core/commit.c): an entry marked with_prev (a
 * call's dispatch) is on disk only with the entry before it (its decision), also where a long
 * batch is split into transactions of COMMIT_MAX (1,024) entries. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/seamfx.h"
#include "gateway/signer/state.h"

#define MARK "the dispatch that goes with the refused entry"

static int heard = -1; /* the with_prev op's callback: 1 recorded, 0 not */

static void with_prev_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	(void)s;
	(void)o;
	(void)err;
	heard = pos != NULL;
}

static int count_mark(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	(void)seq;
	if (memmem(cbor, len, MARK, strlen(MARK)))
		++*(int *)arg;
	return 0;
}

/* ops: `fill` valid entries, one the ledger refuses (not CBOR), then one with_prev after it. */
static void refused_then_with_prev(size_t fill)
{
	struct sfx x;
	memset(&x, 0, sizeof x);
	sfx_dir(&x, "commit_test");
	sfx_start(&x, "default ask\n", NULL);
	struct signer *s = x.s;
	uint64_t before = signer_test_ledger_size(s);
	for (size_t i = 0; i < fill; i++)
		assert_non_null(append_simple(s, "abandoned", "req-fill", "filler", NULL));
	struct op *bad = append_simple(s, "abandoned", "req-bad", "refused", NULL);
	assert_non_null(bad);
	buf_reset(&bad->enc);
	assert_int_equal(buf_put(&bad->enc, "\xff", 1), 0); /* a CBOR break alone: refused */
	struct op *wp = append_simple(s, "abandoned", "req-wp", MARK, with_prev_done);
	assert_non_null(wp);
	wp->with_prev = 1;
	heard = -1;
	commit_batch(s);
	int marks = 0;
	assert_int_equal(signer_test_ledger_scan(s, count_mark, &marks, x.err), 0);
	assert_int_equal(heard, 0);				     /* its owner hears it was not recorded */
	assert_int_equal(marks, 0);				     /* and it is not on disk */
	assert_int_equal(signer_test_ledger_size(s), before + fill); /* the others are */
	sfx_end(&x);
}

/* In one transaction: the one-by-one retry skips it. */
static void test_with_prev_in_one_transaction(void **state)
{
	(void)state;
	refused_then_with_prev(10);
}

/* The refused entry last of the first 1,024 and its with_prev first of the next: before the
 * fix the second transaction wrote it alone. */
static void test_with_prev_across_transactions(void **state)
{
	(void)state;
	refused_then_with_prev(1023);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_with_prev_in_one_transaction),
	    cmocka_unit_test(test_with_prev_across_transactions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
