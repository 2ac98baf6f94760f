/* Unit tests for common/text.c: the character classes of agents' text (what the worker
 * and the signer refuse) and the neutraliser every CLI view shows text through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/text.h"

/* s neutralised (no marks unless given), as a NUL-terminated string in out. */
static size_t neut(const char *s, size_t n, int lines, const char *on, const char *off, char *out, size_t max)
{
	struct buf b;
	size_t marked = 0;
	buf_init(&b, max - 1);
	assert_int_equal(text_neutralise(s, n, lines, on, off, &b, &marked), 0);
	memcpy(out, b.p ? (const char *)b.p : "", b.len);
	out[b.len] = 0;
	buf_free(&b);
	return marked;
}

static void test_neutralise_every_class(void **st)
{
	(void)st;
	char out[512];
	/* ESC sequence, C1 CSI, DEL, each bidi override and isolate, zero-width, LRM/RLM/ALM, BOM, separators */
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"a\x1b[2Jb", "a\\u001b[2Jb"},
	    {"a\xc2\x9b"
	     "31mb",
	     "a\\u009b31mb"},
	    {"a\x7f", "a\\u007f"},
	    {"x\xe2\x80\xaey", "x\\u202ey"},
	    {"\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "\\u202a\\u202b\\u202c\\u202d"},
	    {"\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", "\\u2066\\u2067\\u2068\\u2069"},
	    {"p\xe2\x80\x8bq\xe2\x80\x8c\xe2\x80\x8d", "p\\u200bq\\u200c\\u200d"},
	    {"\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c"},
	    {"\xe2\x81\xa0\xef\xbb\xbf", "\\u2060\\ufeff"},
	    {"l\xe2\x80\xa8m\xe2\x80\xa9", "l\\u2028m\\u2029"},
	    {"bad \xff byte", "bad \\xff byte"},
	    /* default-ignorable and format characters: soft hyphen, variation selector, tag
	     * characters spelling hidden ASCII ("ASCII smuggling"), Hangul filler */
	    {"de\xc2\xadploy\xef\xb8\x8f", "de\\u00adploy\\ufe0f"},
	    {"ok\xf3\xa0\x81\x84\xf3\xa0\x81\xb2", "ok\\u{e0044}\\u{e0072}"},
	    {"\xe3\x85\xa4\xcd\x8f", "\\u3164\\u034f"},
	    {"caf\xc3\xa9 \xf0\x9f\x99\x82 ok", "caf\xc3\xa9 \xf0\x9f\x99\x82 ok"}, /* ordinary text stays */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		size_t marked = neut(cases[i].in, strlen(cases[i].in), 1, "", "", out, sizeof out);
		assert_string_equal(out, cases[i].want);
		assert_true((marked == 0) == (strcmp(cases[i].in, cases[i].want) == 0));
	}
}

static void test_neutralise_lines_and_marks(void **st)
{
	(void)st;
	char out[256];
	assert_int_equal(neut("a\nb\tc\r\nd\re", 10, 1, "", "", out, sizeof out), 1);
	assert_string_equal(out, "a\nb\tc\r\nd\\u000de"); /* a lone \r could overwrite the line */
	assert_int_equal(neut("a\nb", 3, 0, "", "", out, sizeof out), 1);
	assert_string_equal(out, "a\\u000ab");
	assert_int_equal(neut("x\xe2\x80\xaey", 5, 0, "[", "]", out, sizeof out), 1);
	assert_string_equal(out, "x[\\u202e]y");
	/* a NUL inside is shown, not a place where the text ends */
	assert_int_equal(neut("a\0b", 3, 0, "", "", out, sizeof out), 1);
	assert_string_equal(out, "a\\u0000b");
	/* bounded: a buffer too small says so */
	struct buf b;
	buf_init(&b, 4);
	assert_int_equal(text_neutralise("\x1b\x1b", 2, 0, "", "", &b, NULL), AS_ETOOBIG);
	buf_free(&b);
}

static void test_check_classes(void **st)
{
	(void)st;
	size_t at;
	uint32_t cp;
	assert_int_equal(text_check(TEXT_LINE, "plain text", 10, &at, &cp), 0);
	assert_int_equal(text_check(TEXT_LINE, "a\nb", 3, &at, &cp), AS_EINVAL);
	assert_int_equal(at, 1);
	assert_int_equal(cp, '\n');
	assert_int_equal(text_check(TEXT_MULTILINE, "a\nb\tc\r\n", 7, &at, &cp), 0);
	assert_int_equal(text_check(TEXT_MULTILINE, "a\rb", 3, &at, &cp), AS_EINVAL);
	assert_int_equal(text_check(TEXT_MULTILINE, "go \x1b[2J", 7, &at, &cp), AS_EINVAL);
	assert_int_equal(cp, 0x1b);
	assert_int_equal(text_check(TEXT_MULTILINE, "ab\xe2\x80\xae", 5, &at, &cp), AS_EINVAL);
	assert_int_equal(at, 2);
	assert_int_equal(cp, 0x202e);
	assert_int_equal(text_check(TEXT_LINE, "\xe2\x81\xa6", 3, &at, &cp), AS_EINVAL);
	assert_int_equal(text_check(TEXT_LINE, "\xc2\x85", 2, &at, &cp), AS_EINVAL); /* C1 NEL */
	assert_int_equal(text_check(TEXT_TOKEN, "tf-prod:eu/1.x_y", 16, &at, &cp), 0);
	assert_int_equal(text_check(TEXT_TOKEN, "tf prod", 7, &at, &cp), AS_EINVAL);
	assert_int_equal(text_check(TEXT_TOKEN, "caf\xc3\xa9", 5, &at, &cp), AS_EINVAL);
	assert_int_equal(text_check(TEXT_ANY, "\x1b\xe2\x80\xae", 4, &at, &cp), 0);
	/* not UTF-8: overlong, surrogate, truncated, beyond U+10FFFF */
	assert_int_equal(text_check(TEXT_ANY, "\xc0\xaf", 2, &at, &cp), AS_EINVAL);
	assert_int_equal(cp, TEXT_BAD_BYTE);
	assert_int_equal(text_check(TEXT_ANY, "\xed\xa0\x80", 3, &at, &cp), AS_EINVAL);
	assert_int_equal(text_check(TEXT_ANY, "ok\xe2\x80", 4, &at, &cp), AS_EINVAL);
	assert_int_equal(at, 2);
	assert_int_equal(text_check(TEXT_ANY, "\xf4\x90\x80\x80", 4, &at, &cp), AS_EINVAL);
	/* what is refused is always neutralised when shown */
	for (uint32_t c = 0; c < 0x30000; c++)
		if (text_refused_cp(c))
			assert_true(text_hidden_cp(c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_neutralise_every_class),
	    cmocka_unit_test(test_neutralise_lines_and_marks),
	    cmocka_unit_test(test_check_classes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
