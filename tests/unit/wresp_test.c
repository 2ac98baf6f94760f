/* Unit tests for gateway/worker/notify/wresp.c: a witness's 200 (its Ed25519 cosignature
 * lines taken field by field, other signature types skipped), its 409 (the size), and each
 * malformed answer refused with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "gateway/worker/notify/wresp.h"

static void line(struct buf *b, const char *name, const uint8_t *blob, size_t n)
{
	assert_int_equal(buf_printf(b, "\xe2\x80\x94 %s ", name), 0);
	assert_int_equal(b64_encode(blob, n, b), 0);
	assert_int_equal(buf_putc(b, '\n'), 0);
}

static void test_cosignatures(void **st)
{
	(void)st;
	uint8_t blob[76], other[100];
	memset(blob, 7, sizeof blob);
	memset(other, 1, sizeof other);
	blob[4] = 0, blob[5] = 0, blob[6] = 0, blob[7] = 0; /* time 0x07070707 */
	struct buf b;
	buf_init(&b, 4096);
	line(&b, "witness.example/w1", blob, sizeof blob);
	line(&b, "witness.example/mldsa", other, sizeof other);
	line(&b, "w2", blob, sizeof blob);
	static struct wresp r;
	char err[AS_ERRLEN] = "";
	assert_int_equal(wresp_parse(200, b.p, b.len, &r, err), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.c[0].name, "witness.example/w1");
	assert_string_equal(r.c[1].name, "w2");
	assert_memory_equal(r.c[0].keyid, blob, 4);
	assert_int_equal(r.c[0].time, 0x07070707u);
	assert_memory_equal(r.c[0].sig, blob + 12, 64);
	assert_false(r.has_size);
	/* another status: nothing read */
	assert_int_equal(wresp_parse(404, b.p, b.len, &r, err), 0);
	assert_int_equal(r.n, 0);
	buf_free(&b);
}

static void test_size(void **st)
{
	(void)st;
	static struct wresp r;
	char err[AS_ERRLEN] = "";
	assert_int_equal(wresp_parse(409, (const uint8_t *)"20852014\n", 9, &r, err), 0);
	assert_true(r.has_size);
	assert_int_equal(r.size, 20852014u);
	assert_int_equal(wresp_parse(409, (const uint8_t *)"0\n", 2, &r, err), 0);
	assert_int_equal(r.size, 0);
	const char *bad[] = {"012\n", "12", "12\n\n", "-1\n", "9223372036854775808\n", "", "1 2\n"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(wresp_parse(409, (const uint8_t *)bad[i], strlen(bad[i]), &r, err), AS_EINVAL);
	assert_non_null(strstr(err, "409"));
}

static void test_refused(void **st)
{
	(void)st;
	static struct wresp r;
	char err[AS_ERRLEN] = "";
	uint8_t blob[76] = {0};
	struct buf b;
	buf_init(&b, 8192);
	line(&b, "w1", blob, sizeof blob);
	b.p[b.len - 1] = 'x'; /* no final newline */
	assert_int_equal(wresp_parse(200, b.p, b.len, &r, err), AS_EINVAL);
	assert_non_null(strstr(err, "no newline"));
	const char *bad[] = {"- w1 AAAA\n", "\xe2\x80\x94 w1\n", "\xe2\x80\x94 w+1 AAAAAAAA\n",
			     "\xe2\x80\x94 w1 !!!!\n"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(wresp_parse(200, (const uint8_t *)bad[i], strlen(bad[i]), &r, err), AS_EINVAL);
	blob[4] = 0x80; /* a timestamp of 2^63 and more */
	buf_reset(&b);
	line(&b, "w1", blob, sizeof blob);
	assert_int_equal(wresp_parse(200, b.p, b.len, &r, err), AS_EINVAL);
	assert_non_null(strstr(err, "timestamp"));
	blob[4] = 0;
	buf_reset(&b);
	for (int i = 0; i < PROTO_WITNESS_COSIGS_MAX + 1; i++)
		line(&b, "w1", blob, sizeof blob);
	assert_int_equal(wresp_parse(200, b.p, b.len, &r, err), AS_EINVAL);
	assert_non_null(strstr(err, "more than"));
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cosignatures),
	    cmocka_unit_test(test_size),
	    cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
