/* Unit tests for the bounded reader's text operations (common/rd.c): lines, tokens,
 * whitespace, expected words; each at the edge of its bounds, with NUL, CR and
 * bytes that a loose case fold would confuse. The binary reads are in util_test.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"

/* A reader over the first n bytes of s (s may go on: nothing past n may be read). */
static struct rd over(const char *s, size_t n)
{
	struct rd r;
	rd_init(&r, s, n);
	return r;
}

static void is(const struct rd *r, const char *want, size_t n)
{
	assert_int_equal(r->off, 0);
	assert_int_equal(rd_left(r), n);
	assert_memory_equal(r->p, want, n);
}

static void test_line(void **state)
{
	(void)state;
	const char t[] = "a\nb\r\n\nx\0y\nlast";
	struct rd r = over(t, sizeof t - 1), line;
	assert_int_equal(rd_line(&r, &line), 0);
	is(&line, "a", 1);
	assert_ptr_equal(line.p, t);
	assert_int_equal(rd_line(&r, &line), 0);
	is(&line, "b\r", 2); /* CR is an ordinary byte */
	assert_int_equal(rd_line(&r, &line), 0);
	is(&line, "", 0);
	assert_int_equal(rd_line(&r, &line), 0);
	is(&line, "x\0y", 3); /* so is NUL */
	size_t off = r.off;
	assert_int_equal(rd_line(&r, &line), AS_EINVAL); /* "last" has no newline */
	assert_int_equal(r.off, off);
	assert_int_equal(rd_left(&r), 4);

	/* The LF just past the end is not seen. */
	r = over("abc\n", 3);
	assert_int_equal(rd_line(&r, &line), AS_EINVAL);
	assert_int_equal(r.off, 0);
	r = over("\n", 1);
	assert_int_equal(rd_line(&r, &line), 0);
	is(&line, "", 0);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(rd_line(&r, &line), AS_EINVAL);
	r = over(NULL, 0);
	assert_int_equal(rd_line(&r, &line), AS_EINVAL);
}

static void test_token(void **state)
{
	(void)state;
	const char t[] = "GET /x?y a\0b c";
	struct rd r = over(t, sizeof t - 1), tok;
	assert_int_equal(rd_token(&r, " ", &tok), 0);
	is(&tok, "GET", 3);
	/* The stop byte stays; an empty run fails and leaves the empty reader at the cursor. */
	assert_int_equal(rd_token(&r, " ", &tok), AS_EINVAL);
	assert_int_equal(r.off, 3);
	assert_ptr_equal(tok.p, t + 3);
	assert_int_equal(rd_left(&tok), 0);
	assert_int_equal(rd_expect(&r, " "), 0);
	assert_int_equal(rd_token(&r, "?# ", &tok), 0);
	is(&tok, "/x", 2);
	assert_int_equal(rd_expect(&r, "?"), 0);
	assert_int_equal(rd_token(&r, " ", &tok), 0);
	is(&tok, "y", 1);
	assert_int_equal(rd_expect(&r, " "), 0);
	/* NUL is in no set, though strchr(" ", 0) finds the terminator. */
	assert_int_equal(rd_token(&r, " ", &tok), 0);
	is(&tok, "a\0b", 3);
	assert_int_equal(rd_expect(&r, " "), 0);
	assert_int_equal(rd_token(&r, " ", &tok), 0); /* to the end */
	is(&tok, "c", 1);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(rd_token(&r, " ", &tok), AS_EINVAL);
	/* An empty stop set takes everything; the bound holds. */
	r = over("abc def", 3);
	assert_int_equal(rd_token(&r, "", &tok), 0);
	is(&tok, "abc", 3);
	assert_int_equal(rd_left(&r), 0);
	r = over(NULL, 0);
	assert_int_equal(rd_token(&r, " ", &tok), AS_EINVAL);
	assert_int_equal(rd_left(&tok), 0);
}

static void test_skip_trim(void **state)
{
	(void)state;
	struct rd r = over(" \t\r\nx", 5);
	assert_int_equal(rd_skip_ws(&r, RD_OWS), 2);
	assert_int_equal(rd_skip_ws(&r, RD_OWS), 0);
	assert_int_equal(rd_skip_ws(&r, RD_JSON_WS), 2);
	assert_int_equal(rd_left(&r), 1);
	r = over("\0 x", 3); /* NUL is not whitespace */
	assert_int_equal(rd_skip_ws(&r, RD_JSON_WS), 0);
	r = over("    x", 2); /* stops at the bound, not at the x */
	assert_int_equal(rd_skip_ws(&r, " "), 2);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(rd_skip_ws(&r, " "), 0);

	r = over("x \t\0 \t y", 6);
	assert_int_equal(rd_trim_end(&r, RD_OWS), 2); /* to the NUL */
	assert_int_equal(rd_left(&r), 4);
	assert_int_equal(rd_trim_end(&r, RD_OWS), 0);
	/* Never below the cursor. */
	r = over("a   ", 4);
	assert_int_equal(rd_expect(&r, "a"), 0);
	assert_int_equal(rd_trim_end(&r, " "), 3);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(r.off, 1);
	assert_int_equal(rd_trim_end(&r, "a "), 0);
	r = over(NULL, 0);
	assert_int_equal(rd_skip_ws(&r, " "), 0);
	assert_int_equal(rd_trim_end(&r, " "), 0);
}

static void test_expect(void **state)
{
	(void)state;
	struct rd r = over("Bearer key", 10);
	assert_int_equal(rd_expect(&r, "bearer "), AS_EINVAL);
	assert_int_equal(r.off, 0);
	assert_int_equal(rd_expect(&r, ""), 0);
	assert_int_equal(rd_expect(&r, "Bearer "), 0);
	assert_int_equal(rd_left(&r), 3);
	assert_int_equal(rd_expect(&r, "keys"), AS_EINVAL); /* longer than what is left */
	assert_int_equal(rd_left(&r), 3);
	assert_int_equal(rd_expect(&r, "key"), 0);
	assert_int_equal(rd_left(&r), 0);
	/* The byte past the bound does not complete a match. */
	r = over("Bearer", 5);
	assert_int_equal(rd_expect(&r, "Bearer"), AS_EINVAL);
	assert_int_equal(rd_expect_ci(&r, "BEARER"), AS_EINVAL);
	assert_int_equal(r.off, 0);

	r = over("bEaReR key", 10);
	assert_int_equal(rd_expect_ci(&r, "Bearer "), 0);
	assert_int_equal(rd_left(&r), 3);
	/* ASCII letters only: '[' and '{', '@' and '`', 0xc0 and 0xe0 differ by 0x20 but are not one letter. */
	r = over("[@\xc0", 3);
	assert_int_equal(rd_expect_ci(&r, "{"), AS_EINVAL);
	assert_int_equal(rd_expect_ci(&r, "["), 0);
	assert_int_equal(rd_expect_ci(&r, "`"), AS_EINVAL);
	assert_int_equal(rd_expect_ci(&r, "@"), 0);
	assert_int_equal(rd_expect_ci(&r, "\xe0"), AS_EINVAL);
	assert_int_equal(rd_expect_ci(&r, "\xc0"), 0);
	/* NUL in the input matches nothing (s ends at its first NUL). */
	r = over("\0a", 2);
	assert_int_equal(rd_expect(&r, "a"), AS_EINVAL);

	r = over("{\"id\" : 1 }", 11);
	assert_int_equal(rd_expect_end(&r, "]"), AS_EINVAL);
	assert_int_equal(rd_left(&r), 11);
	assert_int_equal(rd_expect_end(&r, " }"), 0);
	assert_int_equal(rd_left(&r), 9);
	assert_int_equal(rd_expect_end(&r, ""), 0);
	assert_int_equal(rd_expect(&r, "{"), 0);
	assert_int_equal(rd_expect_end(&r, "\"id\" : 1"), 0);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(rd_expect_end(&r, "{"), AS_EINVAL); /* the consumed '{' is not the end's */
	r = over(NULL, 0);
	assert_int_equal(rd_expect(&r, ""), 0);
	assert_int_equal(rd_expect(&r, "a"), AS_EINVAL);
	assert_int_equal(rd_expect_end(&r, ""), 0);
	assert_int_equal(rd_expect_end(&r, "a"), AS_EINVAL);
}

static void test_cmp_peek(void **state)
{
	(void)state;
	struct rd r = over("/review/x", 7);
	assert_int_equal(rd_cmp(&r, "/review"), 0);
	assert_int_equal(rd_cmp(&r, "/REVIEW"), AS_EINVAL);
	assert_int_equal(rd_casecmp(&r, "/REVIEW"), 0);
	assert_int_equal(rd_cmp(&r, "/revie"), AS_EINVAL);   /* a prefix is not equal */
	assert_int_equal(rd_cmp(&r, "/review/"), AS_EINVAL); /* nor is what goes past the bound */
	assert_int_equal(rd_casecmp(&r, "/review/x"), AS_EINVAL);
	assert_int_equal(r.off, 0); /* nothing consumed */
	assert_int_equal(rd_expect(&r, "/"), 0);
	assert_int_equal(rd_cmp(&r, "review"), 0); /* the unread bytes only */
	r = over(NULL, 0);
	assert_int_equal(rd_cmp(&r, ""), 0);
	assert_int_equal(rd_casecmp(&r, "a"), AS_EINVAL);

	uint8_t c = 0;
	r = over("ab", 1);
	assert_int_equal(rd_peek(&r, &c), 0);
	assert_int_equal(c, 'a');
	assert_int_equal(r.off, 0);
	assert_int_equal(rd_u8(&r, &c), 0);
	assert_int_equal(rd_peek(&r, &c), AS_EINVAL); /* the 'b' is past the bound */
	assert_int_equal(c, 'a');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_line),   cmocka_unit_test(test_token),    cmocka_unit_test(test_skip_trim),
	    cmocka_unit_test(test_expect), cmocka_unit_test(test_cmp_peek),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
