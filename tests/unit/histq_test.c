/* Unit tests for gateway/worker/review/histq.c (the history's and the proof's query
 * strings): every parameter at its bounds and one past them, empty values, repeats,
 * unknown names (shown bounded and printable), the history's parameters refused on the
 * proof and the proof's on the history, and what histq_done checks across them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/worker/review/histq.h"

/* Parse "k=v&k2=v2" (no percent-decoding: libmicrohttpd does that before histq sees it;
 * a key without '=' has a NULL value). 0 or -1, why filled. */
static int parse(struct histq *q, int proof, const char *query, char *why)
{
	char buf[4096];
	histq_init(q);
	why[0] = 0;
	snprintf(buf, sizeof buf, "%s", query);
	char *p = buf;
	while (*query && p) {
		char *amp = strchr(p, '&');
		if (amp)
			*amp = 0;
		char *eq = strchr(p, '=');
		if (eq)
			*eq = 0;
		if (histq_arg(q, proof, p, eq ? eq + 1 : NULL, why) != 0)
			return -1;
		p = amp ? amp + 1 : NULL;
	}
	return histq_done(q, proof, why);
}

static void ok(const char *query, int proof, struct histq *q)
{
	char why[HISTQ_WHY_MAX];
	if (parse(q, proof, query, why) != 0)
		fail_msg("'%s' refused: %s", query, why);
}

static void refused(const char *query, int proof, const char *starts)
{
	char why[HISTQ_WHY_MAX];
	struct histq q;
	if (parse(&q, proof, query, why) == 0)
		fail_msg("'%s' accepted", query);
	if (strncmp(why, starts, strlen(starts)))
		fail_msg("'%s': \"%s\", want it to start \"%s\"", query, why, starts);
	if (strlen(why) >= HISTQ_WHY_MAX)
		fail_msg("'%s': an unterminated error", query);
}

static void test_defaults(void **state)
{
	(void)state;
	struct histq q;
	ok("", 0, &q);
	assert_int_equal(q.has, 0);
	assert_int_equal(q.limit, HISTQ_LIMIT_DEFAULT);
	ok("who=&outcome=&audience=&rule=&since=&until=&limit=", 0, &q);
	assert_int_equal(q.has, 0);
	assert_int_equal(q.limit, HISTQ_LIMIT_DEFAULT);
	ok("who", 0, &q); /* no '=': as empty */
	assert_int_equal(q.has, 0);
}

static void test_each(void **state)
{
	(void)state;
	struct histq q;
	ok("who=alice.b-c_d&outcome=timeout&audience=tf-prod:eu/1.x_y&rule=12&since=0&until=99999999999&limit=1000", 0,
	   &q);
	assert_int_equal(q.has, HQ_WHO | HQ_OUTCOME | HQ_AUDIENCE | HQ_RULE | HQ_SINCE | HQ_UNTIL | HQ_LIMIT);
	assert_string_equal(q.who, "alice.b-c_d");
	assert_string_equal(q.outcome, "timeout");
	assert_string_equal(q.audience, "tf-prod:eu/1.x_y");
	assert_int_equal(q.rule, 12);
	assert_int_equal(q.since, 0);
	assert_int_equal(q.until, 99999999999ull);
	assert_int_equal(q.limit, 1000);
	static const char *const outcomes[] = {"approved", "rejected", "answered", "selected",
					       "denied",   "timeout",  "cancelled"};
	for (size_t i = 0; i < 7; i++) {
		char b[64];
		snprintf(b, sizeof b, "outcome=%s", outcomes[i]);
		ok(b, 0, &q);
		assert_string_equal(q.outcome, outcomes[i]);
	}
	ok("since=5&until=5", 0, &q); /* one second */
	ok("seq=0", 1, &q);
	assert_int_equal(q.seq, 0);
	ok("seq=9007199254740992", 1, &q);
	assert_int_equal(q.seq, 9007199254740992ull);
}

static void test_bounds(void **state)
{
	(void)state;
	char b[512];
	struct histq q;
	memset(b, 0, sizeof b);
	memcpy(b, "who=", 4);
	memset(b + 4, 'a', 64);
	ok(b, 0, &q);
	b[4 + 64] = 'a';
	refused(b, 0, "who must be 1 to 64 characters");
	memcpy(b, "audience=", 9);
	memset(b + 9, 'a', 128);
	b[9 + 128] = 0;
	ok(b, 0, &q);
	b[9 + 128] = 'a';
	refused(b, 0, "audience must be 1 to 128 characters");
	refused("who=al ice", 0, "who must be");
	refused("who=al/ice", 0, "who must be");
	refused("who=\xc3\xa9", 0, "who must be");
	refused("audience=a b", 0, "audience must be");
	refused("outcome=APPROVED", 0, "outcome must be one of");
	refused("outcome=withdrawn", 0, "outcome must be one of");
	refused("rule=0", 0, "rule must be a whole number from 1 to 1000000");
	refused("rule=1000001", 0, "rule must be");
	refused("rule=012", 0, "rule must be"); /* one spelling per number */
	refused("rule=+3", 0, "rule must be");
	refused("rule= 3", 0, "rule must be");
	refused("since=-1", 0, "since must be a whole number from 0 to 99999999999");
	refused("since=100000000000", 0, "since must be");
	refused("until=1e9", 0, "until must be");
	refused("limit=0", 0, "limit must be a whole number from 1 to 1000");
	refused("limit=1001", 0, "limit must be");
	refused("limit=18446744073709551616", 0, "limit must be");
	refused("seq=9007199254740993", 1, "seq must be a whole number from 0 to 9007199254740992");
	refused("seq=x", 1, "seq must be");
	refused("seq=", 1, "seq is required");
	refused("", 1, "seq is required");
	refused("since=6&until=5", 0, "since is after until");
}

static void test_names(void **state)
{
	(void)state;
	refused("who=a&who=b", 0, "who is given twice");
	refused("who=&who=b", 0, "who is given twice"); /* an empty one counts */
	refused("seq=1&seq=1", 1, "seq is given twice");
	refused("colour=red", 0, "unknown parameter \"colour\" (the history takes who,");
	refused("WHO=alice", 0, "unknown parameter \"WHO\"");
	refused("seq=3", 0, "unknown parameter \"seq\""); /* the proof's, not the history's */
	refused("seq=3&who=alice", 1, "unknown parameter \"who\" (the proof takes seq)");
	refused("=1", 0, "unknown parameter \"\"");
	refused("a\"b\\c\x01=1", 0, "unknown parameter \"a?b?c?\"");
	char b[200];
	memset(b, 'k', 100);
	b[100] = 0;
	char why[HISTQ_WHY_MAX];
	struct histq q;
	assert_int_equal(parse(&q, 0, b, why), -1);
	assert_non_null(strstr(why, "\"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\" ")); /* cut at 32 */
	histq_init(&q);
	assert_int_equal(histq_arg(&q, 0, NULL, "1", why), -1);
}

/* The consistency proof's query: old and new, both required, 1 <= old <= new. */
static void test_consistency(void **state)
{
	(void)state;
	struct histq q;
	ok("old=3&new=7", HISTQ_CONSISTENCY, &q);
	assert_int_equal(q.old, 3);
	assert_int_equal(q.new, 7);
	ok("old=7&new=7", HISTQ_CONSISTENCY, &q);
	ok("old=9007199254740993&new=9007199254740993", HISTQ_CONSISTENCY, &q); /* PROTO_SEQ_MAX + 1 */
	refused("old=9007199254740994&new=9007199254740994", HISTQ_CONSISTENCY, "old must be a whole number from 1");
	refused("old=0&new=7", HISTQ_CONSISTENCY, "old must be a whole number from 1");
	refused("old=8&new=7", HISTQ_CONSISTENCY, "old is after new");
	refused("old=3", HISTQ_CONSISTENCY, "new is required");
	refused("new=3", HISTQ_CONSISTENCY, "old is required");
	refused("old=&new=3", HISTQ_CONSISTENCY, "old is required");
	refused("old=1&old=1&new=3", HISTQ_CONSISTENCY, "old is given twice");
	refused("old=x&new=3", HISTQ_CONSISTENCY, "old must be a whole number");
	refused("old=1&new=3&seq=1", HISTQ_CONSISTENCY,
		"unknown parameter \"seq\" (the consistency proof takes old and new)");
	refused("old=1", HISTQ_PROOF, "unknown parameter \"old\" (the proof takes seq)");
	refused("new=1", HISTQ_HISTORY, "unknown parameter \"new\"");
	char why[HISTQ_WHY_MAX];
	histq_init(&q);
	assert_int_equal(histq_arg(&q, 3, "old", "1", why), -1); /* no such query */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults), cmocka_unit_test(test_each),	 cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_names),    cmocka_unit_test(test_consistency),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
