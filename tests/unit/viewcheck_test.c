/* Unit tests for common/viewcheck.c: a view passes only when every character of the
 * call is in it or inside a mark that states how much it hides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/viewcheck.h"

static int text(const char *exact, const char *view)
{
	char err[AS_ERRLEN];
	return viewcheck_text(exact, strlen(exact), view, strlen(view), err);
}

static void test_text(void **state)
{
	(void)state;
	assert_int_equal(text("ls -l", "ls -l"), 0);
	assert_int_equal(text("pw=hunter2 ok", "pw=[secret: 7 chars] ok"), 0);
	assert_int_equal(text("pw=x", "pw=[secret: 1 char]"), 0);
	assert_int_equal(text("a\xc3\xa9z", "a[secret: 1 char]z"), 0); /* characters, not bytes */
	/* what the old redactor showed for the attack of issue 28: a mark that hides a line */
	assert_int_equal(text("ls # password=\"\nrm -rf /srv", "ls # password=\"[secret: 12 chars]"), AS_ECORRUPT);
	assert_int_equal(text("ls # password=\"\nrm -rf /srv", "ls # password=\"[REDACTED]"), AS_ECORRUPT);
	/* a wrong count, a dropped or changed character */
	assert_int_equal(text("pw=hunter2 ok", "pw=[secret: 6 chars] ok"), AS_ECORRUPT);
	assert_int_equal(text("pw=hunter2 ok", "pw=[secret: 7 chars]ok"), AS_ECORRUPT);
	assert_int_equal(text("rm -rf /a", "rm -rf /b"), AS_ECORRUPT);
	assert_int_equal(text("rm -rf /a", "rm -rf /a "), AS_ECORRUPT);
	/* a multi-line mark only as the whole text */
	assert_int_equal(text("a\nb", "[secret: 3 chars, 2 lines]"), 0);
	assert_int_equal(text("x a\nb", "x [secret: 3 chars, 2 lines]"), AS_ECORRUPT);
	assert_int_equal(text("a\nb", "[secret: 3 chars]"), AS_ECORRUPT);
	/* a mark the agent wrote itself stands for itself */
	assert_int_equal(text("note [secret: 3 chars] pw=abc", "note [secret: 3 chars] pw=[secret: 3 chars]"), 0);
}

static void test_json(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	json_t *e = json_loads("{\"cmd\":\"ls\",\"password\":\"a\\nb\",\"token\":{\"x\":[1,2]},\"n\":3}", 0, NULL);
	json_t *v = json_loads(
	    "{\"cmd\":\"ls\",\"password\":\"[secret: 3 chars, 2 lines]\",\"token\":\"[secret: 11 chars]\",\"n\":3}", 0,
	    NULL);
	assert_int_equal(viewcheck_json(e, v, err), 0);
	json_object_set_new(v, "n", json_integer(4));
	assert_int_equal(viewcheck_json(e, v, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "/n"));
	json_object_set_new(v, "n", json_integer(3));
	json_object_set_new(v, "cmd", json_string("ls -l"));
	assert_int_equal(viewcheck_json(e, v, err), AS_ECORRUPT);
	json_object_set_new(v, "cmd", json_string("ls"));
	json_object_del(v, "token");
	assert_int_equal(viewcheck_json(e, v, err), AS_ECORRUPT);
	json_decref(e);
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
