/* Unit tests for gateway/worker/mhdreq's body reading: chunks up to the buffer's maximum,
 * past it the flag and the rest dropped, and the end of the body said once it is whole;
 * and an event stream's reader handing out what it holds, then its end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/worker/mhdreq.h"

static void test_body(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b, 8);
	int too_big = 0;
	size_t n = 5;
	assert_int_equal(mr_body(&b, "hello", &n, &too_big), 1);
	assert_int_equal(n, 0); /* taken: libmicrohttpd is told so */
	assert_int_equal(too_big, 0);
	n = 3;
	assert_int_equal(mr_body(&b, "abc", &n, &too_big), 1);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.p, "helloabc", 8);
	n = 0;
	assert_int_equal(mr_body(&b, NULL, &n, &too_big), 0); /* whole, at the maximum exactly */
	assert_int_equal(too_big, 0);
	buf_free(&b);

	buf_init(&b, 8);
	n = 5;
	assert_int_equal(mr_body(&b, "hello", &n, &too_big), 1);
	n = 4;
	assert_int_equal(mr_body(&b, "wxyz", &n, &too_big), 1); /* one byte past it */
	assert_int_equal(too_big, 1);
	assert_int_equal(n, 0);
	n = 2;
	assert_int_equal(mr_body(&b, "ok", &n, &too_big), 1); /* read to its end, dropped */
	assert_int_equal(n, 0);
	assert_true(b.len <= 8);
	assert_memory_equal(b.p, "hello", 5); /* its start stays: a 413 may name the request's id */
	n = 0;
	assert_int_equal(mr_body(&b, NULL, &n, &too_big), 0);
	assert_int_equal(too_big, 1);
	buf_free(&b);
}

static void test_stream(void **state)
{
	(void)state;
	struct buf out;
	buf_init(&out, 64);
	assert_int_equal(buf_put(&out, "data: 1\n\n", 9), 0);
	char got[4];
	int suspended = 0;
	assert_int_equal(mr_stream_read(NULL, &suspended, &out, 0, got, sizeof got), 4);
	assert_memory_equal(got, "data", 4);
	assert_int_equal(mr_stream_read(NULL, &suspended, &out, 1, got, sizeof got), 4); /* what it holds first */
	assert_memory_equal(got, ": 1\n", 4);
	assert_int_equal(mr_stream_read(NULL, &suspended, &out, 1, got, sizeof got), 1);
	assert_int_equal(mr_stream_read(NULL, &suspended, &out, 1, got, sizeof got), MHD_CONTENT_READER_END_OF_STREAM);
	assert_int_equal(suspended, 0);
	buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_body), cmocka_unit_test(test_stream)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
