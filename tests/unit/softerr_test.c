/* Unit tests for gateway/worker/mcp/softerr.c: every rule of the soft-error classifier,
 * the results that must not trigger it, operator statuses and their check, and the
 * message's bound at UTF-8 boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/text.h"
#include "gateway/worker/mcp/softerr.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_ALLOW_NUL, &e);
	if (!j)
		fail_msg("test JSON does not parse: %s: %s", e.text, s);
	return j;
}

/* A result whose structuredContent is the JSON text sc. */
static json_t *SC(const char *sc)
{
	json_t *r = json_object();
	json_object_set_new(r, "content", json_array());
	json_object_set_new(r, "structuredContent", J(sc));
	return r;
}

/* A result with one text item holding text. */
static json_t *TX(const char *text)
{
	json_t *r = json_object();
	json_t *c = json_array();
	json_array_append_new(c, json_pack("{s:s, s:s}", "type", "text", "text", text));
	json_object_set_new(r, "content", c);
	return r;
}

/* The verdict on result (taken) with rules r; the message in msg (sentinel when none). */
static int classify(json_t *result, const struct softerr_rules *r, char *msg, size_t max)
{
	memset(msg, 'Z', max);
	int v = softerr_classify(result, r, msg, max);
	if (v == 0)
		assert_int_equal((unsigned char)msg[0], 'Z'); /* untouched */
	else
		assert_true(memchr(msg, 0, max) != NULL);
	json_decref(result);
	return v;
}

static void expect(json_t *result, const struct softerr_rules *r, const char *want)
{
	char msg[512];
	int v = classify(result, r, msg, sizeof msg);
	if (!want) {
		assert_int_equal(v, 0);
		return;
	}
	assert_int_equal(v, 1);
	assert_string_equal(msg, want);
}

static void test_ok_and_success_false(void **st)
{
	(void)st;
	expect(SC("{\"ok\": false}"), NULL, "ok=false");
	expect(SC("{\"success\": false}"), NULL, "success=false");
	expect(SC("{\"ok\": false, \"success\": false}"), NULL, "ok=false");
	expect(SC("{\"ok\": false, \"error\": \"disk full\"}"), NULL, "disk full");
	expect(SC("{\"success\": false, \"reason\": \"quota\"}"), NULL, "quota");
	/* one false is enough, whatever the other says */
	expect(SC("{\"ok\": true, \"success\": false}"), NULL, "success=false");
}

static void test_ok_non_triggers(void **st)
{
	(void)st;
	static const char *const none[] = {
	    "{\"ok\": 0}",
	    "{\"ok\": null}",
	    "{\"ok\": \"false\"}",
	    "{\"ok\": true}",
	    "{\"ok\": 0.0}",
	    "{\"ok\": []}",
	    "{\"success\": 0}",
	    "{\"success\": null}",
	    "{\"success\": \"false\"}",
	    "{\"OK\": false}",
	    "{\"Success\": false}",
	    "{}",
	    /* a detail alone is no failure */
	    "{\"error\": \"disk full\"}",
	    "{\"message\": \"failed\"}",
	    /* nested objects and arrays never count */
	    "{\"data\": {\"ok\": false}}",
	    "{\"result\": {\"status\": \"failed\", \"error\": \"x\"}}",
	    "{\"items\": [{\"success\": false}]}",
	    "{\"error\": {\"status\": \"error\"}}",
	};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
		expect(SC(none[i]), NULL, NULL);
		expect(TX(none[i]), NULL, NULL);
	}
}

static void test_status_and_state(void **st)
{
	(void)st;
	expect(SC("{\"status\": \"failed\", \"error\": \"disk full\"}"), NULL, "status=failed: disk full");
	expect(SC("{\"status\": \"error\"}"), NULL, "status=error");
	expect(SC("{\"status\": \"failure\"}"), NULL, "status=failure");
	/* any case; the value as the payload spells it */
	expect(SC("{\"status\": \"Failed\"}"), NULL, "status=Failed");
	expect(SC("{\"status\": \"FAILURE\", \"message\": \"m\"}"), NULL, "status=FAILURE: m");
	expect(SC("{\"state\": \"eRRoR\", \"detail\": \"d\"}"), NULL, "state=eRRoR: d");
	/* status before state; a status wins over ok for the message */
	expect(SC("{\"state\": \"failed\", \"status\": \"error\"}"), NULL, "status=error");
	expect(SC("{\"status\": \"done\", \"state\": \"failed\"}"), NULL, "state=failed");
	expect(SC("{\"ok\": false, \"status\": \"failed\", \"error\": \"e\"}"), NULL, "status=failed: e");
	/* a status that does not trigger leaves ok to decide */
	expect(SC("{\"ok\": false, \"status\": \"done\"}"), NULL, "ok=false");
}

static void test_status_non_triggers(void **st)
{
	(void)st;
	static const char *const none[] = {
	    "{\"status\": \"failing\"}",
	    "{\"status\": \"fail\"}",
	    "{\"status\": \"errors\"}",
	    "{\"status\": \" failed\"}",
	    "{\"status\": \"failed \"}",
	    "{\"status\": \"failed\\u0000\"}",
	    "{\"status\": \"\"}",
	    "{\"status\": \"ok\"}",
	    "{\"status\": 1}",
	    "{\"status\": false}",
	    "{\"status\": [\"failed\"]}",
	    "{\"status\": {\"state\": \"failed\"}}",
	    "{\"Status\": \"failed\"}",
	    "{\"state\": \"success\"}",
	    "{\"STATE\": \"error\"}",
	    "{\"status\": \"unknown_target\"}", /* only with the operator's status */
	    "{\"status\": \"f\\u00e4iled\"}",
	};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++)
		expect(SC(none[i]), NULL, NULL);
}

static void test_detail_order(void **st)
{
	(void)st;
	expect(SC("{\"ok\": false, \"reason\": \"r\", \"detail\": \"d\", \"message\": \"m\", \"error\": \"e\"}"), NULL,
	       "e");
	expect(SC("{\"ok\": false, \"reason\": \"r\", \"detail\": \"d\", \"message\": \"m\"}"), NULL, "m");
	expect(SC("{\"ok\": false, \"reason\": \"r\", \"detail\": \"d\"}"), NULL, "d");
	/* an error object gives its message */
	expect(SC("{\"status\": \"failed\", \"error\": {\"code\": 5, \"message\": \"no space\"}, \"message\": \"m\"}"),
	       NULL, "status=failed: no space");
	/* ... and without one, the next member */
	expect(SC("{\"status\": \"failed\", \"error\": {\"code\": 5}, \"reason\": \"r\"}"), NULL, "status=failed: r");
	/* non-strings and empty strings are passed over */
	expect(SC("{\"ok\": false, \"error\": 42, \"message\": \"\", \"detail\": null, \"reason\": \"r\"}"), NULL, "r");
	expect(SC("{\"ok\": false, \"error\": true}"), NULL, "ok=false");
	expect(SC("{\"status\": \"failed\", \"error\": \"\"}"), NULL, "status=failed");
	expect(SC("{\"ok\": false, \"error\": {\"message\": {\"text\": \"deep\"}}}"), NULL, "ok=false");
}

static void test_text_content(void **st)
{
	(void)st;
	/* no structuredContent: the first text item, when it is a JSON object */
	expect(TX("{\"status\": \"failed\", \"error\": \"disk full\"}"), NULL, "status=failed: disk full");
	expect(TX("  {\"ok\": false}\n"), NULL, "ok=false");
	/* text that is not a JSON object is no payload */
	static const char *const none[] = {
	    "failed",
	    "error: disk full",
	    "",
	    "[{\"ok\": false}]",
	    "\"status\"",
	    "false",
	    "{\"ok\": false} and more",
	    "{\"ok\": false",
	    "{'ok': False}",
	};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++)
		expect(TX(none[i]), NULL, NULL);

	/* only the first text item is looked at; non-text items are passed over */
	json_t *r = J("{\"content\": [{\"type\": \"image\", \"data\": \"AAAA\", \"mimeType\": \"image/png\"},"
		      "{\"type\": \"text\", \"text\": \"{\\\"ok\\\": false}\"},"
		      "{\"type\": \"text\", \"text\": \"{\\\"status\\\": \\\"error\\\"}\"}]}");
	expect(r, NULL, "ok=false");
	r = J("{\"content\": [{\"type\": \"text\", \"text\": \"Here is the answer:\"},"
	      "{\"type\": \"text\", \"text\": \"{\\\"ok\\\": false}\"}]}");
	expect(r, NULL, NULL);
	/* an item without a string text is not a text item */
	r = J("{\"content\": [{\"type\": \"text\", \"text\": 5}, {\"type\": \"text\", \"text\": \"{\\\"ok\\\": "
	      "false}\"}]}");
	expect(r, NULL, "ok=false");
	r = J("{\"content\": [{\"type\": \"Text\", \"text\": \"{\\\"ok\\\": false}\"}]}");
	expect(r, NULL, NULL);
	r = J("{\"content\": {\"type\": \"text\", \"text\": \"{\\\"ok\\\": false}\"}}");
	expect(r, NULL, NULL);
	/* \u0000 inside the text's JSON does not stop it being a payload */
	expect(TX("{\"ok\": false, \"note\": \"a\\u0000b\"}"), NULL, "ok=false");
}

static void test_structured_first(void **st)
{
	(void)st;
	/* structuredContent, when an object, is the payload; the text is not looked at */
	json_t *r = TX("{\"ok\": false}");
	json_object_set_new(r, "structuredContent", J("{\"ok\": true}"));
	expect(r, NULL, NULL);
	r = TX("{\"ok\": true}");
	json_object_set_new(r, "structuredContent", J("{\"status\": \"failed\"}"));
	expect(r, NULL, "status=failed");
	/* a structuredContent that is not an object falls back on the text */
	r = TX("{\"ok\": false}");
	json_object_set_new(r, "structuredContent", J("[1]"));
	expect(r, NULL, "ok=false");
	r = TX("{\"ok\": false}");
	json_object_set_new(r, "structuredContent", json_null());
	expect(r, NULL, "ok=false");
}

static void test_text_bound(void **st)
{
	(void)st;
	/* {"ok":false,"pad":"xxx..."} of exactly SOFTERR_TEXT_MAX bytes is parsed; one more is not */
	static const char head[] = "{\"ok\":false,\"pad\":\"";
	size_t n = SOFTERR_TEXT_MAX;
	char *s = malloc(n + 2);
	assert_non_null(s);
	memcpy(s, head, sizeof head - 1);
	memset(s + sizeof head - 1, 'x', n - (sizeof head - 1) - 2);
	memcpy(s + n - 2, "\"}", 3);
	assert_int_equal(strlen(s), n);
	expect(TX(s), NULL, "ok=false");
	memcpy(s + n - 2, "x\"}", 4);
	assert_int_equal(strlen(s), n + 1);
	expect(TX(s), NULL, NULL);
	/* still a soft error by isError, with the text as its message, cut to fit */
	json_t *r = TX(s);
	json_object_set_new(r, "isError", json_true());
	char msg[16];
	assert_int_equal(classify(r, NULL, msg, sizeof msg), 1);
	assert_string_equal(msg, "{\"ok\":false,\"pa");
	free(s);
}

static void test_is_error(void **st)
{
	(void)st;
	/* without a payload: the first text item's text */
	json_t *r = TX("Error executing tool: disk full");
	json_object_set_new(r, "isError", json_true());
	expect(r, NULL, "Error executing tool: disk full");
	/* without any text: "isError" */
	r = J("{\"content\": [], \"isError\": true}");
	expect(r, NULL, "isError");
	r = J("{\"isError\": true}");
	expect(r, NULL, "isError");
	r = J("{\"content\": [{\"type\": \"text\", \"text\": \"\"}], \"isError\": true}");
	expect(r, NULL, "isError");
	/* with a payload that does not trigger by itself: its detail */
	r = SC("{\"error\": \"not found\", \"ok\": true}");
	json_object_set_new(r, "isError", json_true());
	expect(r, NULL, "not found");
	/* with a payload that triggers: the payload's message */
	r = SC("{\"status\": \"failed\", \"reason\": \"r\"}");
	json_object_set_new(r, "isError", json_true());
	expect(r, NULL, "status=failed: r");
	r = TX("{\"success\": false}");
	json_object_set_new(r, "isError", json_true());
	expect(r, NULL, "success=false");
	/* a payload without detail nor trigger: the text */
	r = TX("{\"code\": 7}");
	json_object_set_new(r, "isError", json_true());
	expect(r, NULL, "{\"code\": 7}");
	r = SC("{\"code\": 7}");
	json_array_append_new(json_object_get(r, "content"), json_pack("{s:s, s:s}", "type", "text", "text", "boom"));
	json_object_set_new(r, "isError", json_true());
	expect(r, NULL, "boom");
	/* only JSON true counts */
	static const char *const none[] = {
	    "{\"isError\": false, \"content\": [{\"type\": \"text\", \"text\": \"x\"}]}",
	    "{\"isError\": 1, \"content\": [{\"type\": \"text\", \"text\": \"x\"}]}",
	    "{\"isError\": \"true\", \"content\": [{\"type\": \"text\", \"text\": \"x\"}]}",
	    "{\"isError\": null}",
	    "{\"IsError\": true}",
	    "{\"structuredContent\": {\"isError\": true}}",
	};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++)
		expect(J(none[i]), NULL, NULL);
}

static void test_not_results(void **st)
{
	(void)st;
	char msg[8];
	assert_int_equal(softerr_classify(NULL, NULL, msg, sizeof msg), 0);
	expect(J("[{\"ok\": false}]"), NULL, NULL);
	json_t *s = json_string("failed");
	expect(s, NULL, NULL);
	expect(json_false(), NULL, NULL);
	/* the result's own ok/status are not the payload */
	expect(J("{\"ok\": false, \"status\": \"failed\", \"content\": []}"), NULL, NULL);
}

static void test_operator_statuses(void **st)
{
	(void)st;
	static const char *const extra[] = {"unknown_target", "TIMED-OUT", "v1.rejected"};
	struct softerr_rules r = {extra, 3};
	char err[AS_ERRLEN];
	assert_int_equal(softerr_rules_check(&r, err), 0);
	expect(SC("{\"status\": \"unknown_target\", \"message\": \"no Cube\"}"), &r, "status=unknown_target: no Cube");
	expect(SC("{\"status\": \"UNKNOWN_TARGET\"}"), &r, "status=UNKNOWN_TARGET");
	expect(SC("{\"state\": \"timed-out\"}"), &r, "state=timed-out");
	expect(SC("{\"status\": \"v1.rejected\"}"), &r, "status=v1.rejected");
	/* the built-in ones still count; near misses do not */
	expect(SC("{\"status\": \"failed\"}"), &r, "status=failed");
	expect(SC("{\"status\": \"unknown_targets\"}"), &r, NULL);
	expect(SC("{\"status\": \"unknown\"}"), &r, NULL);
	expect(SC("{\"status\": \"v1xrejected\"}"), &r, NULL);
	/* no statuses at all */
	struct softerr_rules none = {NULL, 0};
	assert_int_equal(softerr_rules_check(&none, err), 0);
	assert_int_equal(softerr_rules_check(NULL, err), 0);
	expect(SC("{\"status\": \"unknown_target\"}"), &none, NULL);
	expect(SC("{\"status\": \"error\"}"), &none, "status=error");
}

static void test_rules_check(void **st)
{
	(void)st;
	char err[AS_ERRLEN];
	char s64[65], s65[66];
	memset(s64, 'a', 64);
	s64[64] = 0;
	memset(s65, 'a', 65);
	s65[65] = 0;
	const char *ok[] = {s64, "a", "A-Z_0.9"};
	struct softerr_rules r = {ok, 3};
	assert_int_equal(softerr_rules_check(&r, err), 0);

	static const struct {
		const char *s, *want;
	} bad[] = {
	    {"", "soft-error status 1: 0 bytes long, expected 1..64"},
	    {"has space", "soft-error status 1: byte 0x20 at offset 3 after \"has\", expected only A-Z a-z 0-9 _ . -"},
	    {"caf\xc3\xa9", "soft-error status 1: byte 0xc3 at offset 3 after \"caf\""},
	    {"new\nline", "byte 0x0a at offset 3"},
	    {"a/b", "byte 0x2f at offset 1 after \"a\""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *list[] = {"fine", bad[i].s};
		struct softerr_rules b = {list, 2};
		err[0] = 0;
		assert_int_equal(softerr_rules_check(&b, err), AS_EINVAL);
		assert_non_null(strstr(err, bad[i].want));
	}
	const char *toolong[] = {s65};
	struct softerr_rules b = {toolong, 1};
	assert_int_equal(softerr_rules_check(&b, err), AS_EINVAL);
	assert_string_equal(err, "soft-error status 0: more than 64 bytes long, expected 1..64");
	const char *withnull[] = {"a", NULL};
	b = (struct softerr_rules){withnull, 2};
	assert_int_equal(softerr_rules_check(&b, err), AS_EINVAL);
	assert_string_equal(err, "soft-error status 1: missing (NULL)");
	b = (struct softerr_rules){NULL, 1};
	assert_int_equal(softerr_rules_check(&b, err), AS_EINVAL);
	assert_string_equal(err, "soft-error statuses: 1 announced but no list given");
	/* 32 statuses are fine, 33 are not */
	const char *many[SOFTERR_STATUSES_MAX + 1];
	for (size_t i = 0; i <= SOFTERR_STATUSES_MAX; i++)
		many[i] = "s";
	b = (struct softerr_rules){many, SOFTERR_STATUSES_MAX};
	assert_int_equal(softerr_rules_check(&b, err), 0);
	b.nstatuses++;
	assert_int_equal(softerr_rules_check(&b, err), AS_EINVAL);
	assert_string_equal(err, "soft-error statuses: 33 given, at most 32");
	/* err may be NULL */
	assert_int_equal(softerr_rules_check(&b, NULL), AS_EINVAL);
}

static void test_truncation(void **st)
{
	(void)st;
	/* "status=failed: " then é (2 bytes), € (3 bytes), 🙂 (4 bytes), "z" */
	const char *full = "status=failed: \xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82z";
	const char *p = "{\"status\": \"failed\", \"error\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82z\"}";
	size_t flen = strlen(full);
	for (size_t max = 1; max <= flen + 3; max++) {
		char msg[64];
		memset(msg, 'Z', sizeof msg);
		json_t *r = SC(p);
		assert_int_equal(softerr_classify(r, NULL, msg, max), 1);
		json_decref(r);
		size_t n = strlen(msg);
		assert_true(n < max);
		/* a prefix of the full message, at a character boundary, as long as fits */
		assert_memory_equal(msg, full, n);
		assert_int_equal(n, text_cut(full, flen, max - 1));
		size_t at;
		uint32_t cp;
		assert_int_equal(text_check(TEXT_ANY, msg, n, &at, &cp), 0);
		/* nothing written past the buffer */
		for (size_t k = max; k < sizeof msg; k++)
			assert_int_equal(msg[k], 'Z');
	}
	/* cases by hand: the 2-byte é needs 2 bytes; with one left it is left out */
	char m[32];
	json_t *r = SC(p);
	assert_int_equal(softerr_classify(r, NULL, m, 17), 1);
	assert_string_equal(m, "status=failed: ");
	assert_int_equal(softerr_classify(r, NULL, m, 18), 1);
	assert_string_equal(m, "status=failed: \xc3\xa9");
	assert_int_equal(softerr_classify(r, NULL, m, 20), 1);
	assert_string_equal(m, "status=failed: \xc3\xa9");
	assert_int_equal(softerr_classify(r, NULL, m, 21), 1);
	assert_string_equal(m, "status=failed: \xc3\xa9\xe2\x82\xac");
	/* once a character did not fit, nothing after it is written, even if it would fit */
	assert_int_equal(softerr_classify(r, NULL, m, 24), 1);
	assert_string_equal(m, "status=failed: \xc3\xa9\xe2\x82\xac");
	/* no buffer: only the verdict */
	assert_int_equal(softerr_classify(r, NULL, NULL, 64), 1);
	memset(m, 'Z', sizeof m);
	assert_int_equal(softerr_classify(r, NULL, m, 0), 1);
	assert_int_equal(m[0], 'Z');
	json_decref(r);
}

static void test_message_is_utf8(void **st)
{
	(void)st;
	/* a string jansson was told not to check, with a bad byte and a NUL: U+FFFD each */
	json_t *r = json_object();
	json_t *sc = json_object();
	json_object_set_new(sc, "ok", json_false());
	json_object_set_new(sc, "error",
			    json_stringn_nocheck("a\xff"
						 "b\0c\xe2\x82",
						 7));
	json_object_set_new(r, "structuredContent", sc);
	char msg[64];
	assert_int_equal(softerr_classify(r, NULL, msg, sizeof msg), 1);
	assert_string_equal(msg, "a\xef\xbf\xbd"
				 "b\xef\xbf\xbd"
				 "c\xef\xbf\xbd\xef\xbf\xbd");
	/* a replacement is cut whole too */
	assert_int_equal(softerr_classify(r, NULL, msg, 4), 1);
	assert_string_equal(msg, "a");
	json_decref(r);
	/* an escaped NUL in text JSON becomes U+FFFD rather than ending the message */
	expect(TX("{\"ok\": false, \"error\": \"x\\u0000y\"}"), NULL, "x\xef\xbf\xbdy");
}

static void test_deterministic(void **st)
{
	(void)st;
	/* the same result twice, and a copy of it, give the same verdict and message */
	json_t *r = TX("{\"state\": \"Error\", \"message\": \"m\", \"error\": {\"message\": \"e\"}}");
	json_object_set_new(r, "isError", json_true());
	json_t *c = json_deep_copy(r);
	char a[64], b[64], d[64];
	assert_int_equal(softerr_classify(r, NULL, a, sizeof a), 1);
	assert_int_equal(softerr_classify(r, NULL, b, sizeof b), 1);
	assert_int_equal(softerr_classify(c, NULL, d, sizeof d), 1);
	assert_string_equal(a, "state=Error: e");
	assert_string_equal(a, b);
	assert_string_equal(a, d);
	/* the result is not changed */
	assert_true(json_equal(r, c));
	json_decref(r);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ok_and_success_false),
	    cmocka_unit_test(test_ok_non_triggers),
	    cmocka_unit_test(test_status_and_state),
	    cmocka_unit_test(test_status_non_triggers),
	    cmocka_unit_test(test_detail_order),
	    cmocka_unit_test(test_text_content),
	    cmocka_unit_test(test_structured_first),
	    cmocka_unit_test(test_text_bound),
	    cmocka_unit_test(test_is_error),
	    cmocka_unit_test(test_not_results),
	    cmocka_unit_test(test_operator_statuses),
	    cmocka_unit_test(test_rules_check),
	    cmocka_unit_test(test_truncation),
	    cmocka_unit_test(test_message_is_utf8),
	    cmocka_unit_test(test_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
