/* Unit tests for gateway/proto/call.c: the canonical call's bytes pinned for reals, integers,
 * nesting and every message the encoder writes; the digest binds approvals to these bytes,
 * so a change to how JSON becomes CBOR here must show up as a failing pin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/proto/call.h"

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
	if (!j)
		fail_msg("test JSON does not parse: %s", je.text);
	return j;
}

/* The call's bytes as hex (malloc'd), or NULL with err. */
static char *encode_hex(const char *args, int *rc, char *err)
{
	json_t *j = parse(args);
	struct buf b;
	buf_init(&b, 1u << 20);
	*rc = call_encode("up", "t", j, &b, err);
	json_decref(j);
	char *h = NULL;
	if (*rc == 0) {
		h = malloc(2 * b.len + 1);
		assert_non_null(h);
		hex_encode(b.p, b.len, h);
	}
	buf_free(&b);
	return h;
}

static void expect_call(const char *args, const char *want)
{
	char err[AS_ERRLEN] = "";
	int rc;
	char *h = encode_hex(args, &rc, err);
	if (!h)
		fail_msg("%s: rc %d: %s", args, rc, err);
	if (strcmp(h, want) != 0)
		fail_msg("%s: encoded %s, pinned %s", args, h, want);
	free(h);
}

static void expect_refused(const char *args, int want_rc, const char *want_err)
{
	char err[AS_ERRLEN] = "";
	int rc;
	char *h = encode_hex(args, &rc, err);
	free(h);
	if (rc != want_rc || strcmp(err, want_err) != 0)
		fail_msg("%s: rc %d \"%s\", wanted rc %d \"%s\"", args, rc, err, want_rc, want_err);
}

/* n levels of arrays around 1 */
static char *nested(int n)
{
	char *s = malloc((size_t)(2 * n + 2));
	assert_non_null(s);
	memset(s, '[', (size_t)n);
	s[n] = '1';
	memset(s + n + 1, ']', (size_t)n);
	s[2 * n + 1] = 0;
	return s;
}

static void test_reals_as_bytes(void **state)
{
	(void)state;
	expect_call("{\"a\": 0.1, \"b\": 1e300, \"c\": -2.5}",
		    "a464746f6f6c6174666d6574686f646a746f6f6c732f63616c6c68757073747265616d62757069617267756d656e7473a3"
		    "616143302e3161624631652b3330306163442d322e35");
	expect_call("{\"x\": [1.0, 0.0, -0.0, 2E-2, 123456789.125]}",
		    "a464746f6f6c6174666d6574686f646a746f6f6c732f63616c6c68757073747265616d62757069617267756d656e7473a1"
		    "61788541314130422d3044302e30324d3132333435363738392e313235");
	expect_call("{\"max\": 9223372036854775807, \"min\": -9223372036854775808, \"s\": \"\\u00e9\", \"n\": null, "
		    "\"t\": true, \"f\": false}",
		    "a464746f6f6c6174666d6574686f646a746f6f6c732f63616c6c68757073747265616d62757069617267756d656e7473a6"
		    "6166f4616ef6617362c3a96174f5636d61781b7fffffffffffffff636d696e3b7fffffffffffffff");
}

static void test_depth(void **state)
{
	(void)state;
	char args[64 + 2 * CALL_DEPTH];
	char *n = nested(CALL_DEPTH - 2); /* arguments at depth 1, "a" at 2, the innermost 1 at CALL_DEPTH */
	snprintf(args, sizeof args, "{\"a\": %s}", n);
	free(n);
	expect_call(args, "a464746f6f6c6174666d6574686f646a746f6f6c732f63616c6c68757073747265616d62757069617267756d656e"
			  "7473a16161818181818181818181818181818101");
	n = nested(CALL_DEPTH - 1);
	snprintf(args, sizeof args, "{\"a\": %s}", n);
	free(n);
	expect_refused(args, AS_EINVAL, "arguments: nested deeper than 16");
}

static void test_messages(void **state)
{
	(void)state;
	expect_refused("[1]", AS_EINVAL, "arguments: expected an object");
	char err[AS_ERRLEN] = "";
	struct buf b;
	buf_init(&b, 1u << 20);
	assert_int_equal(call_encode_ex("tools/list", "up", "t", NULL, &b, err), AS_EINVAL);
	assert_string_equal(err, "tools/list: not a method the gate forwards");
	assert_int_equal(call_encode("u__p", "t", NULL, &b, err), AS_EINVAL);
	assert_string_equal(err, "no upstream server is called that");
	assert_int_equal(call_encode("up", "t t", NULL, &b, err), AS_EINVAL);
	assert_string_equal(err, "name: 1 to 128 of [A-Za-z0-9_.-]");
	/* more values than the call has bytes */
	json_t *big = json_array();
	for (int i = 0; i < (int)CALL_MAX + 1; i++)
		json_array_append_new(big, json_null());
	json_t *args = json_pack("{s:o}", "a", big);
	/* AS_EINVAL: call_encode says every refusal of the arguments so */
	assert_int_equal(call_encode("up", "t", args, &b, err), AS_EINVAL);
	assert_string_equal(err, "arguments: too many values");
	json_decref(args);
	/* bytes enough, but over CALL_MAX once encoded */
	char *s = malloc(CALL_MAX + 1);
	assert_non_null(s);
	memset(s, 'x', CALL_MAX);
	s[CALL_MAX] = 0;
	args = json_pack("{s:s}", "a", s);
	free(s);
	assert_int_equal(call_encode("up", "t", args, &b, err), AS_ETOOBIG);
	assert_string_equal(err, "the call is over 524288 bytes");
	json_decref(args);
	assert_int_equal(b.len, 0);
	buf_free(&b);
}

/* call_value_encode: any JSON value, nested up to CBOR_MAX_DEPTH - 1 below its top */
static void test_value_encode(void **state)
{
	(void)state;
	char err[AS_ERRLEN] = "";
	struct buf b;
	buf_init(&b, 1u << 20);
	json_t *j = parse("[0.1, 1e300, -2.5, {\"k\": \"v\"}]");
	assert_int_equal(call_value_encode(j, 1024, &b, err), 0);
	char h[256];
	hex_encode(b.p, b.len, h);
	if (strcmp(h, "8443302e314631652b333030442d322e35a1616b6176") != 0)
		fail_msg("call_value_encode: %s", h);
	json_decref(j);
	b.len = 0;
	char *n = nested(CBOR_MAX_DEPTH - 2);
	j = parse(n);
	free(n);
	assert_int_equal(call_value_encode(j, 1024, &b, err), 0);
	json_decref(j);
	buf_free(&b);
	buf_init(&b, 1u << 20);
	n = nested(CBOR_MAX_DEPTH - 1);
	j = parse(n);
	free(n);
	assert_int_equal(call_value_encode(j, 1024, &b, err), AS_EINVAL);
	assert_string_equal(err, "arguments: nested deeper than 31");
	json_decref(j);
	j = parse("[1, 2, 3]");
	assert_int_equal(call_value_encode(j, 3, &b, err), AS_ETOOBIG);
	assert_string_equal(err, "arguments: too many values");
	json_decref(j);
	j = json_pack("[s]", "twelve bytes");
	assert_int_equal(call_value_encode(j, 8, &b, err), AS_ETOOBIG);
	assert_string_equal(err, "over 8 bytes once encoded");
	json_decref(j);
	assert_int_equal(b.len, 0);
	buf_free(&b);
}

static char *value_json_text(const uint8_t *p, size_t n)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *v;
	char err[AS_ERRLEN];
	assert_int_equal(cbor_decode(p, n, &a, &v, err), 0);
	json_t *j = call_value_json(v);
	cv_arena_free(&a);
	if (!j)
		return NULL;
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(j);
	return s;
}

/* and back: byte strings are reals; what JSON cannot carry exactly is NULL */
static void test_value_json(void **state)
{
	(void)state;
	static const uint8_t reals[] = {0x83, 0x43, '0', '.',  '1', 0x46, '1', 'e', '+',
					'3',  '0',  '0', 0x44, '-', '2',  '.', '5'};
	char *s = value_json_text(reals, sizeof reals);
	assert_string_equal(s, "[0.10000000000000001,1.0000000000000001e300,-2.5]");
	free(s);
	static const uint8_t big[] = {0x81, 0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0}; /* [2^63] */
	assert_null(value_json_text(big, sizeof big));
	static const uint8_t nbig[] = {0x3b, 0x80, 0, 0, 0, 0, 0, 0, 0}; /* -2^63 - 1 */
	assert_null(value_json_text(nbig, sizeof nbig));
	static const uint8_t edge[] = {0x82, 0x1b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	s = value_json_text(edge, sizeof edge);
	assert_string_equal(s, "[9223372036854775807,-9223372036854775808]");
	free(s);
	static const uint8_t intkey[] = {0xa1, 0x01, 0x02}; /* {1: 2} */
	assert_null(value_json_text(intkey, sizeof intkey));
}

/* the call read back: call_check takes what call_encode wrote and call_args_json gives the reals */
static void test_check_and_back(void **state)
{
	(void)state;
	json_t *args = parse("{\"a\": 0.1, \"b\": [1e300, -2.5]}");
	struct buf b;
	buf_init(&b, 1u << 20);
	char err[AS_ERRLEN] = "";
	assert_int_equal(call_encode("up", "t", args, &b, err), 0);
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *c;
	assert_int_equal(cbor_decode(b.p, b.len, &a, &c, err), 0);
	assert_int_equal(call_check(c, err), 0);
	json_t *back = call_args_json(c);
	assert_true(json_equal(back, args));
	json_decref(back);
	json_decref(args);
	cv_arena_free(&a);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reals_as_bytes), cmocka_unit_test(test_depth),
	    cmocka_unit_test(test_messages),	   cmocka_unit_test(test_value_encode),
	    cmocka_unit_test(test_value_json),	   cmocka_unit_test(test_check_and_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
