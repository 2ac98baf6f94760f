/* Unit tests for gateway/worker/mcp/qatools.c: the QA tools' names under a prefix, their
 * definitions (valid JSON, three tools, the prefix on each), and a table of arguments: what
 * each tool accepts into its F_QA fields and what it refuses, naming the argument. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cbor.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/mcp/qatools.h"
#include "include/assent/err.h"

static void test_which(void **st)
{
	(void)st;
	assert_int_equal(qatools_which("qa_", "qa_submit_feedback"), QA_SUBMIT);
	assert_int_equal(qatools_which("qa_", "qa_record_event"), QA_EVENT);
	assert_int_equal(qatools_which("qa_", "qa_link_feedback"), QA_LINK);
	assert_int_equal(qatools_which("qa_", "submit_feedback"), QA_NONE);
	assert_int_equal(qatools_which("qa_", "qa_submit_feedbackx"), QA_NONE);
	assert_int_equal(qatools_which("qa_", "qa_"), QA_NONE);
	assert_int_equal(qatools_which("", "submit_feedback"), QA_NONE); /* no prefix: the tools are off */
	assert_int_equal(qatools_which("x.", "x.record_event"), QA_EVENT);
}

static void test_defs(void **st)
{
	(void)st;
	char *d = qatools_defs("zz_");
	assert_non_null(d);
	char *arr = NULL;
	assert_true(asprintf(&arr, "[%s]", d) > 0);
	json_t *j = json_loads(arr, 0, NULL);
	assert_true(json_is_array(j));
	assert_int_equal(json_array_size(j), 3);
	const char *want[] = {"zz_submit_feedback", "zz_record_event", "zz_link_feedback"};
	for (size_t i = 0; i < 3; i++) {
		json_t *t = json_array_get(j, i);
		assert_string_equal(json_string_value(json_object_get(t, "name")), want[i]);
		assert_true(json_is_object(json_object_get(t, "inputSchema")));
		assert_true(json_is_object(json_object_get(t, "outputSchema")));
	}
	json_decref(j);
	free(arr);
	free(d);
}

struct row {
	const char *name, *args; /* args: JSON, or NULL for none */
	int rc;			 /* 0, AS_EINVAL */
	const char *err;	 /* a part of the error, or the F_QA op on success */
};

static const struct row rows[] = {
    {"qa_submit_feedback", "{\"type\":\"bug\",\"title\":\"t\",\"description\":\"d\"}", 0, "submit"},
    {"qa_submit_feedback", "{\"type\":\"bug\",\"title\":\"t\",\"description\":\"d\",\"contact\":\"me\"}", 0, "submit"},
    {"qa_submit_feedback", "{\"type\":\"rant\",\"title\":\"t\",\"description\":\"d\"}", AS_EINVAL,
     "expected bug, feature, improvement or question"},
    {"qa_submit_feedback", "{\"type\":\"bug\",\"description\":\"d\"}", AS_EINVAL, "title: required"},
    {"qa_submit_feedback", "{\"type\":\"bug\",\"title\":\"\",\"description\":\"d\"}", AS_EINVAL, "title: required"},
    {"qa_submit_feedback", "{\"type\":\"bug\",\"title\":7,\"description\":\"d\"}", AS_EINVAL, "title: required"},
    {"qa_submit_feedback", "{\"type\":\"bug\",\"title\":\"t\",\"description\":\"d\",\"x\":1}", AS_EINVAL,
     "unknown argument \"x\" (qa_submit_feedback takes type, title, description, contact)"},
    {"qa_submit_feedback", "[1]", AS_EINVAL, "arguments: expected an object"},
    {"qa_submit_feedback", NULL, AS_EINVAL, "type: required"},
    {"qa_record_event", "{\"kind\":\"job.finished\",\"key\":\"j1\",\"attrs\":{\"n\":1}}", 0, "event"},
    {"qa_record_event", "{\"kind\":\"llm.call\",\"attrs\":{\"provider\":\"x\"}}", AS_EINVAL, "attrs.model"},
    {"qa_record_event", "{\"kind\":\"llm.call\",\"attrs\":{\"model\":\"m\"}}", 0, "event"},
    {"qa_record_event", "{\"kind\":\"k\",\"attrs\":[1]}", AS_EINVAL, "attrs: expected an object"},
    {"qa_record_event", "{\"kind\":\"k\",\"call_id\":5}", AS_EINVAL, "call_id: expected"},
    {"qa_record_event", "{\"kind\":\"k\",\"feedback_id\":\"f\"}", AS_EINVAL, "unknown argument \"feedback_id\""},
    {"qa_link_feedback", "{\"feedback_id\":\"bug-7Q2X\",\"n\":5}", 0, "link"},
    {"qa_link_feedback", "{\"feedback_id\":\"bug\\u0007\"}", AS_EINVAL, "feedback_id: no control characters"},
    {"qa_link_feedback", "{\"feedback_id\":\"f\",\"n\":21}", AS_EINVAL, "n: expected an integer from 1 to 20"},
    {"qa_link_feedback", "{\"feedback_id\":\"f\",\"n\":0}", AS_EINVAL, "n: expected an integer from 1 to 20"},
    {"qa_link_feedback", "{\"n\":2}", AS_EINVAL, "feedback_id: required"},
    {"qa_link_feedback", "{\"feedback_id\":\"f\",\"kind\":\"k\"}", AS_EINVAL,
     "unknown argument \"kind\" (qa_link_feedback takes feedback_id, n)"},
};

static void test_fields(void **st)
{
	(void)st;
	struct cv_arena a;
	cv_arena_init(&a, 1u << 20);
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		const struct row *r = &rows[i];
		cv_arena_reset(&a);
		struct cv *f = ipc_frame_new(&a, F_QA, 11);
		assert_non_null(f);
		json_t *args = r->args ? json_loads(r->args, 0, NULL) : NULL;
		assert_true(!r->args || args);
		char err[AS_ERRLEN] = "";
		int rc = qatools_fields(qatools_which("qa_", r->name), r->name, &a, f, args, err);
		if (rc != r->rc || (rc && !strstr(err, r->err)))
			fail_msg("row %zu (%s %s): rc %d err '%s', wanted %d '%s'", i, r->name, r->args ? r->args : "-",
				 rc, err, r->rc, r->err);
		if (rc == 0) { /* the F_QA op the signer dispatches on */
			const struct cv *op = cv_get(f, "op");
			assert_non_null(op);
			assert_int_equal(op->n, strlen(r->err));
			assert_memory_equal(op->s, r->err, op->n);
		}
		json_decref(args);
	}
	cv_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_which),
	    cmocka_unit_test(test_defs),
	    cmocka_unit_test(test_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
