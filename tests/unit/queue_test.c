/* Unit tests for gateway/queue: the signer's pending queue (lookup by session id,
 * deadlines in order), checked against a plain array model under random operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "gateway/signer/core/queue.h"

static struct pq_item item(const char *sid, uint64_t deadline)
{
	struct pq_item it;
	memset(&it, 0, sizeof it);
	snprintf(it.session_id, sizeof it.session_id, "%s", sid);
	it.deadline_ms = deadline;
	return it;
}

static void test_add_find_remove(void **state)
{
	(void)state;
	struct pq *q;
	assert_int_equal(pq_new(4, &q), 0);
	struct pq_item a = item("req-a", 300), b = item("req-b", 100), c = item("req-c", 200);
	a.requester_uid = 1000;
	assert_int_equal(pq_add(q, &a), 0);
	assert_int_equal(pq_add(q, &b), 0);
	assert_int_equal(pq_add(q, &c), 0);
	assert_int_equal(pq_add(q, &a), AS_EEXIST);
	assert_int_equal(pq_count(q), 3);
	struct pq_item *f = pq_find(q, "req-a");
	assert_non_null(f);
	assert_int_equal(f->requester_uid, 1000);
	assert_null(pq_find(q, "req-x"));
	uint64_t d;
	assert_int_equal(pq_next_deadline(q, &d), 0);
	assert_int_equal(d, 100);
	struct pq_item out;
	assert_int_equal(pq_remove(q, "req-b", &out), 0);
	assert_string_equal(out.session_id, "req-b");
	assert_int_equal(pq_remove(q, "req-b", &out), AS_ENOTFOUND);
	assert_int_equal(pq_next_deadline(q, &d), 0);
	assert_int_equal(d, 200);
	pq_free(q);
}

static void test_full_and_bad_ids(void **state)
{
	(void)state;
	struct pq *q;
	assert_int_equal(pq_new(2, &q), 0);
	struct pq_item a = item("req-1", 1), b = item("req-2", 2), c = item("req-3", 3);
	assert_int_equal(pq_add(q, &a), 0);
	assert_int_equal(pq_add(q, &b), 0);
	assert_int_equal(pq_add(q, &c), AS_ETOOBIG);
	struct pq_item bad;
	memset(&bad, 'x', sizeof bad);
	assert_int_equal(pq_add(q, &bad), AS_EINVAL); /* no terminating NUL within the id */
	assert_int_equal(pq_new(0, &q), AS_EINVAL);
	pq_free(q);
}

static void test_pop_expired_in_order(void **state)
{
	(void)state;
	struct pq *q;
	assert_int_equal(pq_new(8, &q), 0);
	uint64_t ds[] = {50, 10, 40, 20, 30};
	for (int i = 0; i < 5; i++) {
		char sid[16];
		snprintf(sid, sizeof sid, "req-%d", i);
		struct pq_item it = item(sid, ds[i]);
		assert_int_equal(pq_add(q, &it), 0);
	}
	struct pq_item out;
	assert_int_equal(pq_pop_expired(q, 5, &out), AS_ENOTFOUND);
	uint64_t want[] = {10, 20, 30};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pq_pop_expired(q, 30, &out), 0);
		assert_int_equal(out.deadline_ms, want[i]);
	}
	assert_int_equal(pq_pop_expired(q, 30, &out), AS_ENOTFOUND);
	assert_int_equal(pq_count(q), 2);
	pq_free(q);
}

static void test_session_ids(void **state)
{
	(void)state;
	char a[PQ_SID_LEN + 1], b[PQ_SID_LEN + 1];
	assert_int_equal(pq_new_session_id(a), 0);
	assert_int_equal(pq_new_session_id(b), 0);
	assert_int_equal(strlen(a), PQ_SID_LEN);
	assert_memory_equal(a, "req-", 4);
	assert_string_not_equal(a, b);
	for (size_t i = 4; i < PQ_SID_LEN; i++)
		assert_true((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'));
}

struct collect {
	uint64_t last;
	size_t n;
	int ordered;
};

static void collect_fn(const struct pq_item *it, void *arg)
{
	struct collect *c = arg;
	if (c->n && it->deadline_ms < c->last)
		c->ordered = 0;
	c->last = it->deadline_ms;
	c->n++;
}

/* Random adds, removes and expiries against an array model, with enough churn to
 * exercise tombstones and the rehash. */
static void test_random_against_model(void **state)
{
	(void)state;
	enum { MAX = 300, OPS = 20000 };
	struct pq *q;
	assert_int_equal(pq_new(MAX, &q), 0);
	struct {
		char sid[PQ_SID_LEN + 1];
		uint64_t d;
		int live;
	} model[MAX * 4];
	size_t nmodel = 0, live = 0;
	srand(12345);
	uint64_t now = 0;
	for (int op = 0; op < OPS; op++) {
		int r = rand() % 10;
		if (r < 5 && nmodel < sizeof model / sizeof model[0]) {
			struct pq_item it = item("", now + 1 + (uint64_t)(rand() % 1000));
			snprintf(it.session_id, sizeof it.session_id, "req-%d-%d", op, rand());
			int rc = pq_add(q, &it);
			if (live == MAX) {
				assert_int_equal(rc, AS_ETOOBIG);
			} else {
				assert_int_equal(rc, 0);
				snprintf(model[nmodel].sid, sizeof model[nmodel].sid, "%s", it.session_id);
				model[nmodel].d = it.deadline_ms;
				model[nmodel++].live = 1;
				live++;
			}
		} else if (r < 8 && nmodel) {
			size_t k = (size_t)rand() % nmodel;
			int rc = pq_remove(q, model[k].sid, NULL);
			assert_int_equal(rc, model[k].live ? 0 : AS_ENOTFOUND);
			if (model[k].live) {
				model[k].live = 0;
				live--;
			}
		} else {
			now += (uint64_t)(rand() % 50);
			struct pq_item out;
			uint64_t prev = 0;
			while (pq_pop_expired(q, now, &out) == 0) {
				assert_true(out.deadline_ms <= now);
				assert_true(out.deadline_ms >= prev);
				prev = out.deadline_ms;
				size_t k;
				for (k = 0; k < nmodel; k++)
					if (model[k].live && !strcmp(model[k].sid, out.session_id))
						break;
				assert_true(k < nmodel);
				model[k].live = 0;
				live--;
			}
			for (size_t k = 0; k < nmodel; k++)
				if (model[k].live)
					assert_true(model[k].d > now);
		}
		if (nmodel == sizeof model / sizeof model[0]) { /* compact the model */
			size_t w = 0;
			for (size_t k = 0; k < nmodel; k++)
				if (model[k].live)
					model[w++] = model[k];
			nmodel = w;
		}
		assert_int_equal(pq_count(q), live);
	}
	for (size_t k = 0; k < nmodel; k++)
		assert_int_equal(pq_find(q, model[k].sid) != NULL, model[k].live);
	struct collect c = {0, 0, 1};
	assert_int_equal(pq_each(q, collect_fn, &c), 0);
	assert_int_equal(c.n, live);
	assert_true(c.ordered);
	pq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_find_remove),	 cmocka_unit_test(test_full_and_bad_ids),
	    cmocka_unit_test(test_pop_expired_in_order), cmocka_unit_test(test_session_ids),
	    cmocka_unit_test(test_random_against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
