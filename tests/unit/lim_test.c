/* Unit tests for gateway/lim: the limits per principal read from the environment
 * (defaults, bounds, refusals naming the variable) and how often a hit is logged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "gateway/signer/core/lim.h"

static const char *const names[] = {"ASSENT_MAX_PENDING_PER_AGENT", "ASSENT_MAX_BLOCKING_PER_AGENT",
				    "ASSENT_MAX_CONNECTIONS_PER_UID", "ASSENT_MAX_TIMEOUT_SECONDS"};

static int clear(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		unsetenv(names[i]);
	return 0;
}

static void test_defaults(void **state)
{
	(void)state;
	struct lim_config c;
	char err[AS_ERRLEN];
	memset(&c, 0x5a, sizeof c);
	assert_int_equal(lim_from_env(&c, err), 0);
	assert_int_equal(c.pending_per_agent, 100);
	assert_int_equal(c.blocking_per_agent, 64);
	assert_int_equal(c.conns_per_uid, 64);
	assert_int_equal(c.max_timeout_s, 3600);
	setenv("ASSENT_MAX_TIMEOUT_SECONDS", "", 1); /* empty: unset */
	assert_int_equal(lim_from_env(&c, err), 0);
	assert_int_equal(c.max_timeout_s, 3600);
}

static void test_values_and_refusals(void **state)
{
	(void)state;
	struct lim_config c;
	char err[AS_ERRLEN];
	setenv("ASSENT_MAX_PENDING_PER_AGENT", "100000", 1);
	setenv("ASSENT_MAX_TIMEOUT_SECONDS", "86400", 1);
	assert_int_equal(lim_from_env(&c, err), 0);
	assert_int_equal(c.pending_per_agent, 100000);
	assert_int_equal(c.max_timeout_s, 86400);
	static const struct {
		const char *name, *bad;
	} bad[] = {{"ASSENT_MAX_PENDING_PER_AGENT", "0"},     {"ASSENT_MAX_PENDING_PER_AGENT", "100001"},
		   {"ASSENT_MAX_BLOCKING_PER_AGENT", "1025"}, {"ASSENT_MAX_CONNECTIONS_PER_UID", "-1"},
		   {"ASSENT_MAX_TIMEOUT_SECONDS", "86401"},   {"ASSENT_MAX_TIMEOUT_SECONDS", "1h"},
		   {"ASSENT_MAX_CONNECTIONS_PER_UID", " 5"}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		clear(NULL);
		setenv(bad[i].name, bad[i].bad, 1);
		assert_int_equal(lim_from_env(&c, err), AS_EINVAL);
		assert_non_null(strstr(err, bad[i].name));
	}
}

static void test_log_once_a_minute(void **state)
{
	(void)state;
	struct lim_state l;
	memset(&l, 0, sizeof l);
	uint64_t more = 99;
	assert_int_equal(lim_hit(&l, LIM_PENDING, 1000, &more), 1);
	assert_int_equal(more, 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(lim_hit(&l, LIM_PENDING, 2000 + (uint64_t)i, &more), 0);
	assert_int_equal(lim_hit(&l, LIM_SESSIONS, 3000, &more), 1); /* each limit on its own */
	assert_int_equal(lim_hit(&l, LIM_PENDING, 60999, &more), 0);
	assert_int_equal(lim_hit(&l, LIM_PENDING, 61000, &more), 1);
	assert_int_equal(more, 6); /* the hits not logged since the last line */
	assert_int_equal(l.hits[LIM_PENDING], 8);
	assert_int_equal(lim_hit(&l, LIM_PENDING, 130000, &more), 1);
	assert_int_equal(more, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_defaults, clear),
	    cmocka_unit_test_setup(test_values_and_refusals, clear),
	    cmocka_unit_test(test_log_once_a_minute),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
