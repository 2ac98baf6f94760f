/* Unit tests for gateway/worker/mcp/mcp.c: every kind of bad line with its JSON-RPC code (one
 * named test per case), the method table, initialize negotiation, tools/list
 * schemas, request_feedback argument errors each naming the argument (one named
 * test per case), the canonical action, and the outgoing line builders. */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cbor.h"
#include "gateway/worker/mcp/mcp.h"

/* ---- helpers ---- */

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
	if (!j)
		fail_msg("test JSON does not parse: %s: %s", je.text, text);
	return j;
}

/* Check one built line: a single '\n' at its end, valid JSON before it, under max. */
static json_t *line_json(const struct buf *b, size_t from)
{
	assert_true(b->len > from);
	const char *p = (const char *)b->p + from;
	size_t n = b->len - from;
	assert_int_equal(p[n - 1], '\n');
	assert_null(memchr(p, '\n', n - 1));
	assert_true(n <= b->max);
	json_error_t je;
	json_t *j = json_loadb(p, n - 1, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fail_msg("built line is not JSON: %s: %.*s", je.text, (int)n, p);
	assert_string_equal(json_string_value(json_object_get(j, "jsonrpc")), "2.0");
	return j;
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* ---- good lines ---- */

static void test_parse_request(void **state)
{
	(void)state;
	struct mcp_msg m;
	char err[AS_ERRLEN];
	const char *l = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_REQUEST);
	assert_int_equal(m.id.t, MCP_ID_INT);
	assert_int_equal(m.id.i, 7);
	assert_int_equal(m.m, MCP_M_TOOLS_LIST);
	assert_string_equal(m.method, "tools/list");
	assert_null(m.params);
	assert_int_equal(m.progress_token.t, MCP_ID_NONE);
	mcp_msg_free(&m);

	/* SDK clients put method first; a trailing \r (CRLF) is whitespace */
	l = "{\"method\":\"tools/"
	    "call\",\"params\":{\"name\":\"request_feedback\",\"_meta\":{\"progressToken\":\"pt-1\"}},"
	    "\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\"}\r";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_REQUEST);
	assert_int_equal(m.id.t, MCP_ID_STR);
	assert_string_equal(m.id.s, "a\"b");
	assert_int_equal(m.m, MCP_M_TOOLS_CALL);
	assert_non_null(m.params);
	assert_int_equal(m.progress_token.t, MCP_ID_STR);
	assert_string_equal(m.progress_token.s, "pt-1");
	mcp_msg_free(&m);

	l = "{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"ping\",\"params\":{\"_meta\":{\"progressToken\":42}}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.id.i, -3);
	assert_int_equal(m.progress_token.t, MCP_ID_INT);
	assert_int_equal(m.progress_token.i, 42);
	mcp_msg_free(&m);
}

static void test_parse_notification_and_response(void **state)
{
	(void)state;
	struct mcp_msg m;
	char err[AS_ERRLEN];
	const char *l = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_NOTIFICATION);
	assert_int_equal(m.m, MCP_M_INITIALIZED);
	mcp_msg_free(&m);

	l = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
	    "cancelled\",\"params\":{\"requestId\":3,\"reason\":\"user\"}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.m, MCP_M_CANCELLED);
	struct mcp_id rid;
	char reason[MCP_REASON_MAX + 1];
	assert_int_equal(mcp_cancelled(m.params, &rid, reason, err), 0);
	assert_int_equal(rid.t, MCP_ID_INT);
	assert_int_equal(rid.i, 3);
	assert_string_equal(reason, "user");
	mcp_msg_free(&m);

	l = "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_RESPONSE);
	assert_non_null(m.result);
	assert_null(m.error);
	mcp_msg_free(&m);

	/* an error response may carry a null id (the client could not read ours) */
	l = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_RESPONSE);
	assert_non_null(m.error);
	mcp_msg_free(&m);
}

/* ---- bad lines: one named test per case ---- */

struct bad_line {
	const char *name, *line;
	int code, answer;
	enum mcp_id_type idt;
	long long idi;
	const char *why; /* a substring of the error message */
};

static const struct bad_line bad_lines[] = {
    {"malformed JSON", "{\"jsonrpc\":\"2.0\",", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0, "byte"},
    {"trailing garbage", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0,
     "end of file expected"},
    {"two messages on one line", "{}{}", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0, "end of file"},
    {"non-object number", "42", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0, "got an integer"},
    {"non-object string", "\"hello\"", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0, "got a string"},
    {"non-object null", "null", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0, "got null"},
    {"batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "batches"},
    {"empty batch", "[]", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0, "batches"},
    {"missing jsonrpc", "{\"id\":1,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_INT, 1, "jsonrpc"},
    {"jsonrpc 1.0", "{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_INT, 2,
     "jsonrpc"},
    {"jsonrpc number", "{\"jsonrpc\":2.0,\"id\":\"x\",\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_STR, 0,
     "jsonrpc"},
    {"jsonrpc with a space", "{\"jsonrpc\":\"2.0 \",\"id\":1,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_INT,
     1, "jsonrpc"},
    {"request id null", "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "not null"},
    {"id real", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "got a real number"},
    {"id integral real", "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "id:"},
    {"id object", "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "got an object"},
    {"id array", "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "got an array"},
    {"id boolean", "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0,
     "got true"},
    {"id too big for jansson", "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"ping\"}", MCP_PARSE_ERROR,
     1, MCP_ID_NULL, 0, "too big integer"},
    {"method number", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":5}", MCP_INVALID_REQUEST, 1, MCP_ID_INT, 3,
     "method: expected a string"},
    {"no method, result or error", "{\"jsonrpc\":\"2.0\",\"id\":4}", MCP_INVALID_REQUEST, 1, MCP_ID_INT, 4,
     "expected method"},
    {"params array", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":[1]}", MCP_INVALID_PARAMS, 1,
     MCP_ID_INT, 5, "params"},
    {"params string", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":\"x\"}", MCP_INVALID_REQUEST, 1,
     MCP_ID_INT, 6, "params"},
    {"params null", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":null}", MCP_INVALID_REQUEST, 1,
     MCP_ID_INT, 6, "params"},
    {"progress token boolean",
     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":true}}}",
     MCP_INVALID_PARAMS, 1, MCP_ID_INT, 7, "progressToken"},
    {"progress token real",
     "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":1.5}}}",
     MCP_INVALID_PARAMS, 1, MCP_ID_INT, 7, "progressToken"},
    {"_meta not an object", "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{\"_meta\":[]}}",
     MCP_INVALID_PARAMS, 1, MCP_ID_INT, 8, "_meta"},
    {"request carrying a result", "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"result\":{}}",
     MCP_INVALID_REQUEST, 1, MCP_ID_INT, 9, "no result"},
    {"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\xfeg\"}", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0,
     "decode byte"},
    {"overlong UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\xaf\"}", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0,
     "decode byte"},
    {"escaped NUL", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0000b\"}", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0,
     "u0000"},
    {"lone surrogate", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\ud800\"}", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0,
     "Unicode"},
    {"raw control character", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\x01\"}", MCP_PARSE_ERROR, 1, MCP_ID_NULL, 0,
     "control character"},
    {"duplicate key", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":\"tools/call\"}",
     MCP_INVALID_REQUEST, 1, MCP_ID_NULL, 0, "duplicate"},
    /* never answered: notifications, responses, blank lines */
    {"notification with array params", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":[]}",
     MCP_INVALID_PARAMS, 0, MCP_ID_NULL, 0, "params"},
    {"notification with wrong jsonrpc", "{\"jsonrpc\":\"1.0\",\"method\":\"notifications/initialized\"}",
     MCP_INVALID_REQUEST, 0, MCP_ID_NULL, 0, "jsonrpc"},
    {"response with result and error", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}",
     MCP_INVALID_REQUEST, 0, MCP_ID_INT, 1, "not both"},
    {"response without id", "{\"jsonrpc\":\"2.0\",\"result\":{}}", MCP_INVALID_REQUEST, 0, MCP_ID_NULL, 0, "id"},
    {"response error without code", "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\"}}", MCP_INVALID_REQUEST,
     0, MCP_ID_INT, 1, "integer code"},
    {"empty line", "", MCP_PARSE_ERROR, 0, MCP_ID_NULL, 0, "empty"},
    {"blank line", " \t\r", MCP_PARSE_ERROR, 0, MCP_ID_NULL, 0, "empty"},
};

/* The error line for a bad message: the right code, the id or null, a one-line
 * message that starts with the JSON-RPC phrase. */
static void check_error_line(const struct mcp_msg *m, const char *err)
{
	struct buf b;
	buf_init(&b, MCP_OUT_MAX);
	assert_int_equal(mcp_line_invalid(&b, m, err, NULL), 0);
	json_t *j = line_json(&b, 0);
	const json_t *e = json_object_get(j, "error"), *id = json_object_get(j, "id");
	assert_int_equal(json_integer_value(json_object_get(e, "code")), m->code);
	const char *msg = json_string_value(json_object_get(e, "message"));
	assert_non_null(msg);
	const char *phrase = m->code == MCP_PARSE_ERROR	     ? "Parse error: "
			     : m->code == MCP_INVALID_PARAMS ? "Invalid params: "
							     : "Invalid Request: ";
	assert_int_equal(strncmp(msg, phrase, strlen(phrase)), 0);
	if (m->id.t == MCP_ID_INT)
		assert_int_equal(json_integer_value(id), m->id.i);
	else if (m->id.t == MCP_ID_STR)
		assert_string_equal(json_string_value(id), m->id.s);
	else
		assert_true(json_is_null(id));
	json_decref(j);
	buf_free(&b);
}

static void test_bad_line(void **state)
{
	const struct bad_line *c = *state;
	struct mcp_msg m;
	char err[AS_ERRLEN];
	memset(err, 'X', sizeof err);
	assert_int_equal(mcp_parse_line(c->line, strlen(c->line), &m, err), AS_EINVAL);
	assert_int_equal(m.kind, MCP_MSG_INVALID);
	assert_int_equal(m.code, c->code);
	assert_int_equal(m.answer, c->answer);
	assert_int_equal(m.id.t, c->idt);
	if (c->idt == MCP_ID_INT)
		assert_int_equal(m.id.i, c->idi);
	assert_non_null(memchr(err, 0, sizeof err));
	if (!strstr(err, c->why))
		fail_msg("error \"%s\" does not mention \"%s\"", err, c->why);
	/* err is printable ASCII: it goes into a JSON-RPC message as is */
	for (const char *p = err; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	if (c->answer)
		check_error_line(&m, err);
	mcp_msg_free(&m);
}

static void test_line_over_limit(void **state)
{
	(void)state;
	struct mcp_msg m;
	char err[AS_ERRLEN];
	/* classified by length alone, before any byte is read (the transport passes NULL) */
	assert_int_equal(mcp_parse_line(NULL, (size_t)MCP_LINE_MAX + 1, &m, err), AS_ETOOBIG);
	assert_int_equal(m.code, MCP_INVALID_REQUEST);
	assert_int_equal(m.answer, 1);
	assert_int_equal(m.id.t, MCP_ID_NULL);
	assert_non_null(strstr(err, "over the limit"));
	check_error_line(&m, err);
	mcp_msg_free(&m);
	/* exactly at the limit is parsed */
	char *big = repeat(' ', MCP_LINE_MAX + 1);
	const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	memcpy(big, msg, strlen(msg));
	assert_int_equal(mcp_parse_line(big, MCP_LINE_MAX, &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_REQUEST);
	mcp_msg_free(&m);
	assert_int_equal(mcp_parse_line(big, (size_t)MCP_LINE_MAX + 1, &m, err), AS_ETOOBIG);
	mcp_msg_free(&m);
	free(big);
}

/* mcp_peek_id on a head, a tail, or both: 1 and the id, or 0. */
static int peek(const char *head, const char *tail, struct mcp_id *id)
{
	memset(id, 0, sizeof *id);
	return mcp_peek_id(head, head ? strlen(head) : 0, tail, tail ? strlen(tail) : 0, id);
}

static void test_peek_id(void **state)
{
	(void)state;
	struct mcp_id id;
	/* the head: a top-level id before anything longer than the head */
	assert_int_equal(peek("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"ping\",\"params\":{\"x\":\"aaa", NULL, &id),
			 1);
	assert_int_equal(id.t, MCP_ID_INT);
	assert_int_equal(id.i, 42);
	assert_int_equal(peek(" { \"a\" : [1, {\"id\": 9}, \"}\"] , \"id\" : \"x\\\"y\" , \"p\":", NULL, &id), 1);
	assert_int_equal(id.t, MCP_ID_STR);
	assert_string_equal(id.s, "x\"y");
	/* a nested id is not the message's */
	assert_int_equal(peek("{\"params\":{\"id\":3},\"method\":\"x\",\"params2\":\"aaaa", NULL, &id), 0);
	assert_int_equal(peek("{\"method\":\"x\",\"params\":{\"x\":\"aaaaa", NULL, &id), 0);
	assert_int_equal(peek("[{\"id\":1}", NULL, &id), 0);
	assert_int_equal(peek("{\"id\":true,", NULL, &id), 0);
	assert_int_equal(peek("{\"id\":1.5,", NULL, &id), 0);
	assert_int_equal(peek("{\"id\":null,", NULL, &id), 0);
	/* the tail, as the SDKs write it: "jsonrpc" and "id" last */
	assert_int_equal(peek(NULL, "aaaa\"}},\"jsonrpc\":\"2.0\",\"id\":7}\r\n", &id), 1);
	assert_int_equal(id.i, 7);
	assert_int_equal(peek(NULL, "aa\"},\"id\" :  -3 }", &id), 1);
	assert_int_equal(id.i, -3);
	assert_int_equal(peek(NULL, "aa\"},\"id\":\"r-\\\"1\\\"\"}", &id), 1);
	assert_string_equal(id.s, "r-\"1\"");
	/* an id that closes an inner object, one inside a string, or one cut off: not read */
	assert_int_equal(peek(NULL, "\"x\":{\"id\":3}}", &id), 0);
	assert_int_equal(peek(NULL, "\"x\":\"say \\\"id\\\":3}", &id), 0);
	assert_int_equal(peek(NULL, "\"id\":3", &id), 0);
	assert_int_equal(peek(NULL, "id\":3}", &id), 0);
	/* a string id over MCP_ID_MAX is not an id */
	char tail[2 * MCP_ID_MAX];
	snprintf(tail, sizeof tail, ",\"id\":\"%0*d\"}", MCP_ID_MAX + 1, 0);
	assert_int_equal(peek(NULL, tail, &id), 0);
	/* the head wins; the tail is tried when the head shows none */
	assert_int_equal(peek("{\"id\":1,", ",\"id\":2}", &id), 1);
	assert_int_equal(id.i, 1);
	assert_int_equal(peek("{\"method\":\"aaaa", ",\"id\":2}", &id), 1);
	assert_int_equal(id.i, 2);
}

static void test_deep_nesting(void **state)
{
	(void)state;
	struct mcp_msg m;
	char err[AS_ERRLEN];
	char *deep = repeat('[', 100000);
	assert_int_equal(mcp_parse_line(deep, 100000, &m, err), AS_EINVAL);
	assert_int_equal(m.code, MCP_INVALID_REQUEST);
	assert_non_null(strstr(err, "nesting deeper than 64"));
	check_error_line(&m, err);
	mcp_msg_free(&m);
	free(deep);
	/* 64 levels in all are fine, 65 are not: params holds 62 nested arrays */
	char line[512];
	for (int levels = 62; levels <= 63; levels++) {
		int o =
		    snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":");
		for (int i = 0; i < levels; i++)
			line[o++] = '[';
		for (int i = 0; i < levels; i++)
			line[o++] = ']';
		o += snprintf(line + o, sizeof line - o, "}}");
		int rc = mcp_parse_line(line, (size_t)o, &m, err);
		assert_int_equal(rc, levels == 62 ? 0 : AS_EINVAL);
		mcp_msg_free(&m);
	}
	/* brackets inside strings (and escaped quotes) are not nesting */
	char *s = malloc(300);
	assert_non_null(s);
	int o = snprintf(s, 300, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\\"");
	for (int i = 0; i < 200; i++)
		s[o++] = '[';
	o += snprintf(s + o, 300 - o, "\"}");
	assert_int_equal(mcp_parse_line(s, (size_t)o, &m, err), 0);
	mcp_msg_free(&m);
	free(s);
}

/* ---- the method table ---- */

static void test_method_known(void **state)
{
	(void)state;
	const char *req[] = {"initialize", "ping", "tools/list", "tools/call", "logging/setLevel", "server/discover"};
	const char *notif[] = {"notifications/initialized", "notifications/cancelled", "notifications/progress",
			       "notifications/roots/list_changed"};
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(mcp_method_known(req[i], strlen(req[i]), MCP_MSG_REQUEST), 1);
		assert_int_equal(mcp_method_known(req[i], strlen(req[i]), MCP_MSG_NOTIFICATION), 0);
	}
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(mcp_method_known(notif[i], strlen(notif[i]), MCP_MSG_NOTIFICATION), 1);
		assert_int_equal(mcp_method_known(notif[i], strlen(notif[i]), MCP_MSG_REQUEST), 0);
	}
	const char *unknown[] = {"resources/list",   "prompts/list",	   "tools/lis", "tools/listx", "Tools/List", "",
				 "server/discovery", "completion/complete"};
	for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
		assert_int_equal(mcp_method_known(unknown[i], strlen(unknown[i]), MCP_MSG_REQUEST), 0);
	/* the parsed message carries the lookup; a notification name sent as a request is unknown */
	struct mcp_msg m;
	const char *l = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notifications/cancelled\",\"params\":{}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, NULL), 0);
	assert_int_equal(m.kind, MCP_MSG_REQUEST);
	assert_int_equal(m.m, MCP_M_UNKNOWN);
	/* the dispatcher's answer to it */
	struct buf b;
	buf_init(&b, MCP_OUT_MAX);
	assert_int_equal(
	    mcp_line_error(&b, &m.id, MCP_METHOD_NOT_FOUND, "Method not found: notifications/cancelled", NULL, NULL),
	    0);
	json_t *j = line_json(&b, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "error"), "code")), -32601);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 1);
	json_decref(j);
	buf_free(&b);
	mcp_msg_free(&m);
}

/* ---- initialize ---- */

static json_t *init_with(const char *params_text, struct mcp_client *c, int *rc, char *err)
{
	json_t *p = params_text ? parse(params_text) : NULL, *res = NULL;
	*rc = mcp_initialize(p, "1.2.3", c, &res, err);
	json_decref(p);
	return res;
}

static void test_initialize_negotiation(void **state)
{
	(void)state;
	struct {
		const char *asked, *answered;
	} cases[] = {
	    {"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"},	 {"2025-03-26", "2025-11-25"},
	    {"2024-11-05", "2025-11-25"}, {"2026-07-28", "2025-11-25"},	 {"garbage", "2025-11-25"},
	    {"", "2025-11-25"},		  {"2025-06-18 ", "2025-11-25"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char params[256], err[AS_ERRLEN];
		snprintf(params, sizeof params,
			 "{\"protocolVersion\":\"%s\",\"capabilities\":{\"roots\":{},\"elicitation\":{}},"
			 "\"clientInfo\":{\"name\":\"claude-code\",\"version\":\"2.0.1\"}}",
			 cases[i].asked);
		struct mcp_client c;
		int rc;
		json_t *r = init_with(params, &c, &rc, err);
		assert_int_equal(rc, 0);
		assert_string_equal(json_string_value(json_object_get(r, "protocolVersion")), cases[i].answered);
		assert_string_equal(c.version, cases[i].answered);
		assert_string_equal(mcp_negotiate_version(cases[i].asked), cases[i].answered);
		json_decref(r);
	}
	assert_string_equal(mcp_negotiate_version(NULL), MCP_VERSION_LATEST);
}

static void test_initialize_result_shape(void **state)
{
	(void)state;
	struct mcp_client c;
	int rc;
	char err[AS_ERRLEN];
	json_t *r = init_with("{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"elicitation\":{}},"
			      "\"clientInfo\":{\"name\":\"evil\\u001b[2Jname\",\"version\":\"1\\u202e2\\u0085\"}}",
			      &c, &rc, err);
	assert_int_equal(rc, 0);
	const json_t *caps = json_object_get(r, "capabilities");
	assert_true(json_is_false(json_object_get(json_object_get(caps, "tools"), "listChanged")));
	assert_true(json_is_object(json_object_get(caps, "logging")));
	/* 2025-11-25 tasks: a tools/call may be one, and they can be listed and cancelled */
	const json_t *tk = json_object_get(caps, "tasks");
	assert_true(json_is_object(json_object_get(tk, "list")) && json_is_object(json_object_get(tk, "cancel")));
	assert_true(json_is_object(json_object_get(json_object_get(json_object_get(tk, "requests"), "tools"), "call")));
	assert_int_equal(json_object_size(caps), 3);
	const json_t *si = json_object_get(r, "serverInfo");
	assert_string_equal(json_string_value(json_object_get(si, "name")), "assent");
	assert_string_equal(json_string_value(json_object_get(si, "version")), "1.2.3");
	assert_non_null(strstr(json_string_value(json_object_get(r, "instructions")), "request_feedback"));
	assert_non_null(strstr(json_string_value(json_object_get(r, "instructions")), "get_feedback"));
	/* declared client info is recorded, control characters made harmless */
	assert_string_equal(c.name, "evil?[2Jname");
	assert_string_equal(c.client_version, "1???2??"); /* U+202E is 3 bytes, U+0085 two */
	assert_int_equal(c.elicitation, 1);
	assert_int_equal(c.roots, 0);
	/* the answer is one valid line */
	struct buf b;
	buf_init(&b, MCP_OUT_MAX);
	struct mcp_id id = {MCP_ID_INT, 0, 0, ""};
	assert_int_equal(mcp_line_result(&b, &id, r, err), 0);
	json_t *j = line_json(&b, 0);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 0);
	json_decref(j);
	buf_free(&b);
}

static void test_initialize_bad_params(void **state)
{
	(void)state;
	const char *bad[] = {NULL,
			     "{}",
			     "{\"protocolVersion\":20250618}",
			     "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":[]}",
			     "{\"protocolVersion\":\"2025-06-18\",\"clientInfo\":\"me\"}",
			     "{\"protocolVersion\":\"2025-06-18\",\"clientInfo\":{\"name\":5}}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct mcp_client c;
		int rc;
		char err[AS_ERRLEN] = "";
		json_t *r = init_with(bad[i], &c, &rc, err);
		assert_int_equal(rc, AS_EINVAL);
		assert_null(r);
		assert_non_null(strstr(err, "initialize: params"));
	}
}

/* ---- tools/list ---- */

static void test_tools_list(void **state)
{
	(void)state;
	json_t *r = mcp_tools_list();
	assert_non_null(r);
	const json_t *tools = json_object_get(r, "tools");
	assert_int_equal(json_array_size(tools), 4);
	const char *names[] = {"request_feedback", "get_feedback", "list_pending_feedback", "submit_feedback"};
	for (size_t i = 0; i < 4; i++) {
		const json_t *t = json_array_get(tools, i);
		assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
		assert_true(json_string_length(json_object_get(t, "description")) > 20);
		const json_t *in = json_object_get(t, "inputSchema"), *out = json_object_get(t, "outputSchema");
		assert_true(json_is_object(in));
		assert_true(json_is_object(out));
		assert_string_equal(json_string_value(json_object_get(in, "type")), "object");
		assert_string_equal(json_string_value(json_object_get(out, "type")), "object");
		assert_true(json_is_object(json_object_get(in, "properties")));
		assert_true(json_is_object(json_object_get(out, "properties")));
	}
	const json_t *rf = json_object_get(json_array_get(tools, 0), "inputSchema");
	const json_t *props = json_object_get(rf, "properties");
	const char *args[] = {"type",	 "message",  "context", "options", "default", "timeout_override",
			      "subject", "audience", "wait"};
	for (size_t i = 0; i < 9; i++)
		assert_non_null(json_object_get(props, args[i]));
	assert_int_equal(json_object_size(props), 9);
	const json_t *req = json_object_get(rf, "required");
	assert_string_equal(json_string_value(json_array_get(req, 0)), "type");
	assert_string_equal(json_string_value(json_array_get(req, 1)), "message");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(props, "message"), "maxLength")),
			 MCP_MESSAGE_MAX);
	const json_t *os = json_object_get(json_object_get(json_array_get(tools, 0), "outputSchema"), "properties");
	const char *outs[] = {"approved", "response", "session_id", "timestamp", "approval_token", "error", "status"};
	for (size_t i = 0; i < 7; i++)
		assert_non_null(json_object_get(os, outs[i]));
	/* as a line */
	struct buf b;
	buf_init(&b, MCP_OUT_MAX);
	struct mcp_id id = {MCP_ID_STR, 0, 2, "t1"};
	assert_int_equal(mcp_line_result(&b, &id, r, NULL), 0);
	json_t *j = line_json(&b, 0);
	assert_string_equal(json_string_value(json_object_get(j, "id")), "t1");
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "result"), "tools")), 4);
	json_decref(j);
	/* the fast path writes exactly the same line */
	struct buf fast;
	buf_init(&fast, MCP_OUT_MAX);
	assert_int_equal(mcp_line_tools_list(&fast, &id, NULL), 0);
	assert_int_equal(fast.len, b.len);
	assert_memory_equal(fast.p, b.p, b.len);
	struct mcp_id nid = {MCP_ID_INT, -7, 0, ""}, none = {MCP_ID_NULL, 0, 0, ""};
	size_t mark = fast.len;
	assert_int_equal(mcp_line_tools_list(&fast, &nid, NULL), 0);
	j = line_json(&fast, mark);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), -7);
	json_decref(j);
	mark = fast.len;
	assert_int_equal(mcp_line_tools_list(&fast, &none, NULL), AS_EINVAL);
	assert_int_equal(fast.len, mark);
	buf_free(&fast);
	buf_init(&fast, 1000); /* the line is about 7 KB: refused whole */
	assert_int_equal(mcp_line_tools_list(&fast, &id, NULL), AS_ETOOBIG);
	assert_int_equal(fast.len, 0);
	buf_free(&fast);
	buf_free(&b);
}

/* The tool-result fast path splices the signer's JSON: it must write the very line the
 * parse-and-print path writes, whatever the strings hold. */
static void test_line_tool_json(void **state)
{
	(void)state;
	static const char *const results[] = {
	    "{\"session_id\":\"req-1\",\"status\":\"approved\",\"approved\":true,\"timestamp\":1796024765}",
	    "{\"response\":\"a \\\"quoted\\\" word, a back\\\\slash, a\\nnew line, a\\ttab\",\"n\":null}",
	    "{\"ctl\":\"\\u0001\\u001F\\b\\f\\r\",\"del\":\"\x7f\",\"slash\":\"a/b\"}",
	    "{\"utf8\":\"Gr\xc3\xbc\xc3\x9f"
	    "e \xe2\x9c\x93 \xf0\x9f\x94\x91\",\"nested\":{\"a\":[1,2,{\"b\":\"c\"}]}}",
	    "{}",
	};
	struct mcp_id ids[] = {{MCP_ID_STR, 0, 2, "t1"}, {MCP_ID_INT, 42, 0, ""}};
	for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
		for (size_t k = 0; k < 2; k++) {
			/* the signer's text is jansson's compact print */
			json_t *v = json_loads(results[i], 0, NULL);
			assert_non_null(v);
			char *js = json_dumps(v, JSON_COMPACT);
			struct buf slow, fast;
			buf_init(&slow, MCP_OUT_MAX);
			buf_init(&fast, MCP_OUT_MAX);
			assert_int_equal(mcp_line_result(&slow, &ids[k], mcp_tool_result(v), NULL), 0);
			assert_int_equal(mcp_line_tool_json(&fast, &ids[k], js, strlen(js), NULL), 0);
			if (fast.len != slow.len || memcmp(fast.p, slow.p, slow.len))
				fail_msg("result %zu: fast %.*s\nslow %.*s", i, (int)fast.len, fast.p, (int)slow.len,
					 slow.p);
			free(js);
			buf_free(&slow);
			buf_free(&fast);
		}
	struct buf b;
	buf_init(&b, 64);
	struct mcp_id none = {MCP_ID_NULL, 0, 0, ""};
	assert_int_equal(mcp_line_tool_json(&b, &none, "{}", 2, NULL), AS_EINVAL);
	assert_int_equal(mcp_line_tool_json(&b, &ids[0], "[1]", 3, NULL), AS_EINVAL);
	assert_int_equal(
	    mcp_line_tool_json(&b, &ids[0], "{\"a\":\"0123456789012345678901234567890123456789\"}", 46, NULL),
	    AS_ETOOBIG);
	assert_int_equal(b.len, 0);
	buf_free(&b);
}

static void test_tools_call_params(void **state)
{
	(void)state;
	enum mcp_tool t;
	const json_t *a;
	char err[AS_ERRLEN];
	json_t *p = parse("{\"name\":\"request_feedback\",\"arguments\":{\"type\":\"input\"}}");
	assert_int_equal(mcp_tools_call(p, &t, &a, err), 0);
	assert_int_equal(t, MCP_TOOL_REQUEST_FEEDBACK);
	assert_ptr_equal(a, json_object_get(p, "arguments"));
	json_decref(p);
	p = parse("{\"name\":\"list_pending_feedback\",\"arguments\":null}");
	assert_int_equal(mcp_tools_call(p, &t, &a, err), 0);
	assert_int_equal(t, MCP_TOOL_LIST_PENDING);
	assert_null(a);
	json_decref(p);
	struct {
		const char *params, *why;
	} bad[] = {
	    {NULL, "params.name"},
	    {"{}", "params.name"},
	    {"{\"name\":7}", "params.name: expected a string, got an integer"},
	    {"{\"name\":\"rm_rf\"}", "Unknown tool: \"rm_rf\""},
	    {"{\"name\":\"request_feedback\\u0000\"}", "Unknown tool"},
	    {"{\"name\":\"request_feedback\",\"arguments\":[]}", "arguments: expected an object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *q = NULL;
		if (bad[i].params) {
			json_error_t je;
			q = json_loads(bad[i].params, JSON_ALLOW_NUL, &je);
			assert_non_null(q);
		}
		assert_int_equal(mcp_tools_call(q, &t, &a, err), AS_EINVAL);
		if (!strstr(err, bad[i].why))
			fail_msg("\"%s\" does not mention \"%s\"", err, bad[i].why);
		json_decref(q);
	}
}

/* notifications/assent/defaults: the bridge's FEEDBACK_TIMEOUT_SECONDS, 1..MCP_TIMEOUT_MAX or refused. */
static void test_defaults_params(void **state)
{
	(void)state;
	uint32_t t = 7;
	char err[AS_ERRLEN];
	struct mcp_msg m;
	const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/assent/defaults\","
			   "\"params\":{\"timeoutSeconds\":120}}";
	assert_int_equal(mcp_parse_line(line, strlen(line), &m, err), 0);
	assert_int_equal(m.kind, MCP_MSG_NOTIFICATION);
	assert_int_equal(m.m, MCP_M_ASSENT_DEFAULTS);
	assert_int_equal(mcp_defaults(m.params, &t, err), 0);
	assert_int_equal(t, 120);
	mcp_msg_free(&m);
	const char *bad[] = {"{}",
			     "{\"timeoutSeconds\":0}",
			     "{\"timeoutSeconds\":86401}",
			     "{\"timeoutSeconds\":\"9\"}",
			     "{\"timeoutSeconds\":-5}",
			     "{\"timeoutSeconds\":1.5}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *p = parse(bad[i]);
		assert_int_equal(mcp_defaults(p, &t, err), AS_EINVAL);
		assert_int_equal(t, 0);
		assert_non_null(strstr(err, "timeoutSeconds"));
		json_decref(p);
	}
	assert_int_equal(mcp_defaults(NULL, &t, err), AS_EINVAL);
}

static void test_cancelled_params(void **state)
{
	(void)state;
	struct mcp_id rid;
	char reason[MCP_REASON_MAX + 1], err[AS_ERRLEN];
	json_t *p = parse("{\"requestId\":\"r-9\"}");
	assert_int_equal(mcp_cancelled(p, &rid, reason, err), 0);
	assert_int_equal(rid.t, MCP_ID_STR);
	assert_string_equal(rid.s, "r-9");
	assert_string_equal(reason, "");
	json_decref(p);
	char *long_reason = repeat('r', 2000);
	p = json_pack("{s:i, s:s}", "requestId", 1, "reason", long_reason);
	assert_int_equal(mcp_cancelled(p, &rid, reason, err), 0);
	assert_int_equal(strlen(reason), MCP_REASON_MAX);
	json_decref(p);
	free(long_reason);
	const char *bad[] = {"{}", "{\"requestId\":null}", "{\"requestId\":1.5}", "{\"requestId\":1,\"reason\":5}"};
	for (size_t i = 0; i < 4; i++) {
		p = parse(bad[i]);
		assert_int_equal(mcp_cancelled(p, &rid, reason, err), AS_EINVAL);
		assert_non_null(strstr(err, "notifications/cancelled"));
		json_decref(p);
	}
}

static void test_log_set_level(void **state)
{
	(void)state;
	const char *names[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
	for (int i = 0; i < 8; i++) {
		char text[64];
		snprintf(text, sizeof text, "{\"level\":\"%s\"}", names[i]);
		json_t *p = parse(text);
		enum mcp_log_level l;
		assert_int_equal(mcp_log_set_level(p, &l, NULL), 0);
		assert_int_equal(l, i);
		assert_string_equal(mcp_log_level_name(l), names[i]);
		json_decref(p);
	}
	const char *bad[] = {"{}", "{\"level\":\"verbose\"}", "{\"level\":3}", "{\"level\":\"INFO\"}"};
	for (int i = 0; i < 4; i++) {
		json_t *p = parse(bad[i]);
		enum mcp_log_level l;
		char err[AS_ERRLEN];
		assert_int_equal(mcp_log_set_level(p, &l, err), AS_EINVAL);
		assert_non_null(strstr(err, "params.level"));
		json_decref(p);
	}
}

/* ---- request_feedback ---- */

#define SHA_HELLO "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
#define SHA_OTHER "0000000000000000000000000000000000000000000000000000000000000001"

static void test_feedback_valid_full(void **state)
{
	(void)state;
	json_t *a =
	    parse("{\"type\":\"selection\",\"message\":\"Pick an index\\nstrategy\",\"context\":{\"table\":\"users\","
		  "\"rows\":47,\"ratio\":0.1},\"options\":[\"composite\",\"partial\",\"full-text\"],\"default\":"
		  "\"partial\",\"timeout_override\":600,\"subject\":[{\"name\":\"plan.tfplan\",\"content\":"
		  "\"aGVs\\nbG8=\"},{\"name\":\"image\",\"digest\":{\"sha256\":\"" SHA_OTHER "\"}}],"
		  "\"audience\":\"tf-prod\",\"wait\":false}");
	struct mcp_feedback f;
	char err[AS_ERRLEN] = "";
	int rc = mcp_check_request_feedback(a, &f, err);
	if (rc != 0)
		fail_msg("refused: %s", err);
	assert_int_equal(f.type, MCP_FB_SELECTION);
	assert_string_equal(f.message, "Pick an index\nstrategy");
	assert_int_equal(f.noptions, 3);
	assert_string_equal(f.options[2], "full-text");
	assert_string_equal(f.dflt, "partial");
	assert_int_equal(f.timeout, 600);
	assert_int_equal(f.nsubjects, 2);
	assert_string_equal(f.subjects[0].name, "plan.tfplan");
	assert_string_equal(f.subjects[0].sha256, SHA_HELLO); /* base64 of "hello", with a line break */
	assert_int_equal(f.subjects[0].computed, 1);
	assert_int_equal(f.subjects[0].content_len, 5);
	assert_memory_equal(f.subjects[0].content, "hello", 5);
	assert_string_equal(f.subjects[1].sha256, SHA_OTHER);
	assert_int_equal(f.subjects[1].computed, 0);
	assert_null(f.subjects[1].content);
	assert_string_equal(f.audience, "tf-prod");
	assert_int_equal(f.wait, 0);
	assert_true(json_is_object(f.context));
	assert_ptr_not_equal(f.context, json_object_get(a, "context")); /* a copy */
	assert_int_equal(f.redacted, 0);
	json_decref(a);
	mcp_feedback_free(&f);
	assert_null(f.message);

	/* the minimum, with optional arguments given as null; wait defaults to true */
	a = parse("{\"type\":\"approval\",\"message\":\"m\",\"context\":null,\"options\":null,\"default\":null,"
		  "\"timeout_override\":null,\"subject\":null,\"audience\":null,\"wait\":null}");
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	assert_int_equal(f.wait, 1);
	assert_null(f.context);
	assert_int_equal(f.nsubjects, 0);
	assert_string_equal(f.audience, "");
	assert_int_equal(f.timeout, 0);
	/* a digest given with content must match it; one subject as an object */
	json_decref(a);
	mcp_feedback_free(&f);
	a = parse("{\"type\":\"confirmation\",\"message\":\"m\",\"context\":\"a diff\",\"subject\":{\"name\":\"x\","
		  "\"digest\":{\"sha256\":\"" SHA_HELLO "\"},\"content\":\"aGVsbG8=\"}}");
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	assert_int_equal(f.subjects[0].computed, 1);
	assert_true(json_is_string(f.context));
	json_decref(a);
	mcp_feedback_free(&f);
}

struct bad_args {
	const char *name, *args, *prefix; /* the error starts with prefix: it names the argument */
};

static const struct bad_args bad_args_cases[] = {
    {"arguments not an object", "[1]", "arguments: expected an object"},
    {"unknown argument", "{\"type\":\"input\",\"message\":\"m\",\"timeout\":5}", "unknown argument \"timeout\""},
    {"missing type", "{\"message\":\"m\"}", "type: required"},
    {"type wrong type", "{\"type\":5,\"message\":\"m\"}", "type: expected one of approval"},
    {"type unknown", "{\"type\":\"vote\",\"message\":\"m\"}", "type: expected one of approval"},
    {"missing message", "{\"type\":\"approval\"}", "message: required"},
    {"message wrong type", "{\"type\":\"approval\",\"message\":[\"m\"]}", "message: expected a string, got an array"},
    {"message empty", "{\"type\":\"approval\",\"message\":\"\"}", "message: must not be empty"},
    {"message escape sequence", "{\"type\":\"approval\",\"message\":\"ok\\u001b[2Jhidden\"}",
     "message: character U+001B"},
    {"message bidi override", "{\"type\":\"approval\",\"message\":\"rm \\u202e-rf\"}", "message: character U+202E"},
    {"message bidi isolate", "{\"type\":\"approval\",\"message\":\"a\\u2066b\"}", "message: character U+2066"},
    {"message C1 control", "{\"type\":\"approval\",\"message\":\"a\\u009bb\"}", "message: character U+009B"},
    {"message bare CR", "{\"type\":\"approval\",\"message\":\"a\\rb\"}", "message: character U+000D"},
    {"message DEL", "{\"type\":\"approval\",\"message\":\"a\\u007fb\"}", "message: character U+007F"},
    {"selection without options", "{\"type\":\"selection\",\"message\":\"m\"}", "options: required for type selection"},
    {"options on approval", "{\"type\":\"approval\",\"message\":\"m\",\"options\":[\"a\"]}", "options: only valid"},
    {"options not an array", "{\"type\":\"selection\",\"message\":\"m\",\"options\":\"a,b\"}",
     "options: expected an array"},
    {"options empty", "{\"type\":\"selection\",\"message\":\"m\",\"options\":[]}", "options: expected 1 to 32"},
    {"option not a string", "{\"type\":\"selection\",\"message\":\"m\",\"options\":[\"a\",2]}",
     "options[1]: expected a string"},
    {"option empty", "{\"type\":\"selection\",\"message\":\"m\",\"options\":[\"\"]}", "options[0]: must not be empty"},
    {"option newline", "{\"type\":\"selection\",\"message\":\"m\",\"options\":[\"a\\nb\"]}",
     "options[0]: character U+000A"},
    {"options duplicate", "{\"type\":\"selection\",\"message\":\"m\",\"options\":[\"a\",\"b\",\"a\"]}",
     "options[2]: duplicate of options[0]"},
    {"default on approval", "{\"type\":\"approval\",\"message\":\"m\",\"default\":\"yes\"}", "default: only valid"},
    {"default on confirmation", "{\"type\":\"confirmation\",\"message\":\"m\",\"default\":\"y\"}",
     "default: only valid"},
    {"default not an option", "{\"type\":\"selection\",\"message\":\"m\",\"options\":[\"a\"],\"default\":\"b\"}",
     "default: must be one of options"},
    {"default wrong type", "{\"type\":\"input\",\"message\":\"m\",\"default\":1}", "default: expected a string"},
    {"context array", "{\"type\":\"input\",\"message\":\"m\",\"context\":[1]}",
     "context: expected an object or a string"},
    {"context number", "{\"type\":\"input\",\"message\":\"m\",\"context\":5}",
     "context: expected an object or a string"},
    {"context too deep", "{\"type\":\"input\",\"message\":\"m\",\"context\":{\"a\":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}}",
     "context: nested deeper than 16"},
    {"timeout zero", "{\"type\":\"input\",\"message\":\"m\",\"timeout_override\":0}",
     "timeout_override: expected 1 to 86400 seconds, got 0"},
    {"timeout negative", "{\"type\":\"input\",\"message\":\"m\",\"timeout_override\":-5}",
     "timeout_override: expected 1 to 86400"},
    {"timeout too long", "{\"type\":\"input\",\"message\":\"m\",\"timeout_override\":86401}",
     "timeout_override: expected 1 to 86400 seconds, got 86401"},
    {"timeout real", "{\"type\":\"input\",\"message\":\"m\",\"timeout_override\":1.5}",
     "timeout_override: expected an integer number of seconds, got a real number"},
    {"timeout string", "{\"type\":\"input\",\"message\":\"m\",\"timeout_override\":\"600\"}",
     "timeout_override: expected an integer number of seconds, got a string"},
    {"subject string", "{\"type\":\"approval\",\"message\":\"m\",\"subject\":\"plan.tfplan\"}",
     "subject: expected an object"},
    {"subject missing name",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"digest\":{\"sha256\":\"" SHA_OTHER "\"}}}",
     "subject.name: required"},
    {"subject name empty", "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"\",\"content\":\"\"}}",
     "subject.name: must not be empty"},
    {"subject name control",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"a\\tb\",\"content\":\"\"}}",
     "subject.name: character U+0009"},
    {"subject without digest or content", "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\"}}",
     "subject: expected digest"},
    {"subject unknown member",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"uri\":\"u\",\"content\":\"\"}}",
     "subject: unknown member \"uri\""},
    {"digest uppercase",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"digest\":{\"sha256\":"
     "\"2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824\"}}}",
     "subject.digest.sha256: expected 64 lowercase hex digits, got 64 characters"},
    {"digest 63 digits",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"digest\":{\"sha256\":"
     "\"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b982\"}}}",
     "subject.digest.sha256: expected 64 lowercase hex digits, got 63 characters"},
    {"digest not hex",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"digest\":{\"sha256\":"
     "\"zz24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b98244\"}}}",
     "subject.digest.sha256: expected 64 lowercase hex digits"},
    {"digest number",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"digest\":{\"sha256\":1}}}",
     "subject.digest.sha256: expected 64 lowercase hex digits, got an integer"},
    {"digest not an object",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"digest\":\"" SHA_OTHER "\"}}",
     "subject.digest: expected an object"},
    {"digest sha512",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"digest\":{\"sha512\":\"ab\"}}}",
     "subject.digest: only sha256 is supported, got \"sha512\""},
    {"content not base64",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"content\":\"hello!\"}}",
     "subject.content: expected standard base64"},
    {"content missing padding",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"content\":\"aGVsbG8\"}}",
     "subject.content: expected standard base64"},
    {"content not a string", "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"content\":[1]}}",
     "subject.content: expected a base64 string"},
    {"digest does not match content",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":{\"name\":\"x\",\"content\":\"aGVsbG8=\",\"digest\":"
     "{\"sha256\":\"" SHA_OTHER "\"}}}",
     "subject.digest.sha256: does not match the content, whose SHA-256 is " SHA_HELLO},
    {"subject array empty", "{\"type\":\"approval\",\"message\":\"m\",\"subject\":[]}", "subject: expected 1 to 16"},
    {"subject array bad item",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":[{\"name\":\"a\",\"content\":\"\"},"
     "{\"name\":\"b\"}]}",
     "subject[1]: expected digest"},
    {"subject names duplicate",
     "{\"type\":\"approval\",\"message\":\"m\",\"subject\":[{\"name\":\"a\",\"content\":\"\"},{\"name\":\"a\","
     "\"content\":\"\"}]}",
     "subject[1].name: duplicate of subject[0].name"},
    {"audience charset", "{\"type\":\"approval\",\"message\":\"m\",\"audience\":\"tf prod\"}",
     "audience: expected only [A-Za-z0-9._:/-], got \"tf prod\""},
    {"audience empty", "{\"type\":\"approval\",\"message\":\"m\",\"audience\":\"\"}", "audience: must not be empty"},
    {"audience number", "{\"type\":\"approval\",\"message\":\"m\",\"audience\":7}", "audience: expected a string"},
    {"audience unicode", "{\"type\":\"approval\",\"message\":\"m\",\"audience\":\"pr\\u00f6d\"}",
     "audience: expected only"},
    {"wait string", "{\"type\":\"approval\",\"message\":\"m\",\"wait\":\"no\"}",
     "wait: expected true or false, got a string"},
};

static void test_bad_args(void **state)
{
	const struct bad_args *c = *state;
	json_t *a = parse(c->args);
	struct mcp_feedback f;
	char err[AS_ERRLEN] = "";
	int rc = mcp_check_request_feedback(a, &f, err);
	assert_true(rc == AS_EINVAL || rc == AS_ETOOBIG);
	if (strncmp(err, c->prefix, strlen(c->prefix)) != 0)
		fail_msg("error \"%s\" does not start with \"%s\"", err, c->prefix);
	/* nothing left allocated, and freeing again is harmless */
	assert_null(f.message);
	assert_null(f.context);
	assert_null(f.options);
	mcp_feedback_free(&f);
	/* what the worker sends back: an isError result carrying the message */
	json_t *r = mcp_tool_error(err);
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")), err);
	json_decref(r);
	json_decref(a);
}

static void expect_refused(json_t *a, const char *prefix, int code)
{
	struct mcp_feedback f;
	char err[AS_ERRLEN] = "";
	assert_int_equal(mcp_check_request_feedback(a, &f, err), code);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		fail_msg("error \"%s\" does not start with \"%s\"", err, prefix);
	mcp_feedback_free(&f);
	json_decref(a);
}

/* Size limits, built rather than written out. */
static void test_bad_args_sizes(void **state)
{
	(void)state;
	char *s = repeat('m', MCP_MESSAGE_MAX + 1);
	expect_refused(json_pack("{s:s, s:s}", "type", "approval", "message", s),
		       "message: 65537 bytes is over the limit", AS_ETOOBIG);
	s[MCP_MESSAGE_MAX] = 0;
	json_t *ok = json_pack("{s:s, s:s}", "type", "approval", "message", s);
	struct mcp_feedback f;
	assert_int_equal(mcp_check_request_feedback(ok, &f, NULL), 0);
	mcp_feedback_free(&f);
	json_decref(ok);
	free(s);

	s = repeat('o', MCP_OPTION_MAX + 1);
	expect_refused(json_pack("{s:s, s:s, s:[s]}", "type", "selection", "message", "m", "options", s),
		       "options[0]: 1025 bytes", AS_ETOOBIG);
	free(s);
	json_t *opts = json_array();
	for (int i = 0; i <= MCP_OPTIONS_MAX; i++)
		json_array_append_new(opts, json_sprintf("option %d", i));
	expect_refused(json_pack("{s:s, s:s, s:o}", "type", "selection", "message", "m", "options", opts),
		       "options: expected 1 to 32 options, got 33", AS_EINVAL);

	s = repeat('n', MCP_NAME_MAX + 1);
	expect_refused(json_pack("{s:s, s:s, s:{s:s, s:s}}", "type", "approval", "message", "m", "subject", "name", s,
				 "content", ""),
		       "subject.name: 257 bytes", AS_ETOOBIG);
	free(s);
	s = repeat('a', MCP_AUDIENCE_MAX + 1);
	expect_refused(json_pack("{s:s, s:s, s:s}", "type", "approval", "message", "m", "audience", s),
		       "audience: 129 bytes", AS_ETOOBIG);
	free(s);
	s = repeat('x', MCP_DEFAULT_MAX + 1);
	expect_refused(json_pack("{s:s, s:s, s:s}", "type", "input", "message", "m", "default", s),
		       "default: 4097 bytes", AS_ETOOBIG);
	free(s);

	json_t *subs = json_array();
	for (int i = 0; i <= MCP_SUBJECTS_MAX; i++)
		json_array_append_new(subs, json_pack("{s:o, s:s}", "name", json_sprintf("n%d", i), "content", ""));
	expect_refused(json_pack("{s:s, s:s, s:o}", "type", "approval", "message", "m", "subject", subs),
		       "subject: expected 1 to 16 subjects, got 17", AS_EINVAL);

	/* content: 1 MiB decoded is the most, over all subjects together */
	size_t b64n = (MCP_CONTENT_MAX + 3) / 3 * 4; /* decodes to 1 MiB + 2 */
	s = repeat('A', b64n);
	expect_refused(json_pack("{s:s, s:s, s:{s:s, s:s}}", "type", "approval", "message", "m", "subject", "name",
				 "big", "content", s),
		       "subject.content: 1048578 bytes decoded is over the limit of 1048576 bytes", AS_ETOOBIG);
	s[MCP_CONTENT_MAX / 3 * 4] = 0; /* 1048575 bytes */
	ok = json_pack("{s:s, s:s, s:{s:s, s:s}}", "type", "approval", "message", "m", "subject", "name", "big",
		       "content", s);
	assert_int_equal(mcp_check_request_feedback(ok, &f, NULL), 0);
	assert_int_equal(f.subjects[0].content_len, MCP_CONTENT_MAX / 3 * 3);
	mcp_feedback_free(&f);
	json_decref(ok);
	s[(600u << 10) / 3 * 4] = 0; /* 600 KiB each: the second one is over */
	expect_refused(json_pack("{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "type", "approval", "message", "m",
				 "subject", "name", "a", "content", s, "name", "b", "content", s),
		       "subject[1].content:", AS_ETOOBIG);
	free(s);
}

/* ---- redaction of a request and its action ---- */

static struct cv *decode_action(const struct buf *b, struct cv_arena *a)
{
	struct cv *v = NULL;
	char err[AS_ERRLEN];
	if (cbor_decode(b->p, b->len, a, &v, err) != 0)
		fail_msg("the action is not canonical CBOR: %s", err);
	assert_int_equal(v->t, CV_MAP);
	return v;
}

static void test_action_cbor(void **state)
{
	(void)state;
	json_t *a =
	    parse("{\"type\":\"selection\",\"message\":\"deploy with token=abc123 please\",\"context\":{\"password\":"
		  "\"hunter2\",\"ratio\":0.1,\"n\":-5,\"big\":1e300,\"ok\":true,\"none\":null,\"list\":[\"ghp_"
		  "1234567890abcdefghijABCDEFGHIJ123456\"]},\"options\":[\"a\",\"b\"],\"default\":\"b\","
		  "\"timeout_override\":60,\"subject\":{\"name\":\"plan\",\"content\":\"aGVsbG8=\"},\"audience\":"
		  "\"tf-prod\",\"wait\":false}");
	struct mcp_feedback f;
	char err[AS_ERRLEN];
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	struct buf b;
	buf_init(&b, MCP_ACTION_MAX);
	/* not redacted yet: refused, so no unredacted action can be digested */
	assert_int_equal(mcp_feedback_action(&f, &b, err), AS_EINVAL);
	assert_int_equal(b.len, 0);
	assert_int_equal(mcp_feedback_redact(&f, NULL, 0, err), 0);
	assert_string_equal(f.message, "deploy with token=[REDACTED] please");
	assert_true(f.stats.keys == 1 && f.stats.patterns == 2);
	assert_int_equal(mcp_feedback_action(&f, &b, err), 0);
	assert_null(memmem(b.p, b.len, "hunter2", 7));
	assert_null(memmem(b.p, b.len, "abc123", 6));
	assert_null(memmem(b.p, b.len, "ghp_", 4));

	struct cv_arena ar;
	cv_arena_init(&ar, 1u << 16);
	struct cv *v = decode_action(&b, &ar);
	assert_int_equal(v->n, 7); /* type message context options default subject audience */
	assert_true(cv_text_eq(cv_get(v, "type"), "selection"));
	assert_true(cv_text_eq(cv_get(v, "message"), "deploy with token=[REDACTED] please"));
	assert_true(cv_text_eq(cv_get(v, "default"), "b"));
	assert_true(cv_text_eq(cv_get(v, "audience"), "tf-prod"));
	assert_null(cv_get(v, "timeout_override"));
	assert_null(cv_get(v, "wait"));
	const struct cv *ctx = cv_get(v, "context");
	assert_true(cv_text_eq(cv_get(ctx, "password"), "[REDACTED]"));
	assert_true(cv_text_eq(cv_get(ctx, "ratio"), "0.1")); /* shortest round trip, as text */
	assert_true(cv_text_eq(cv_get(ctx, "big"), "1e+300"));
	assert_int_equal(cv_get(ctx, "n")->t, CV_NINT);
	assert_int_equal(cv_get(ctx, "n")->u, 4);
	assert_int_equal(cv_get(ctx, "ok")->t, CV_TRUE);
	assert_int_equal(cv_get(ctx, "none")->t, CV_NULL);
	assert_true(cv_text_eq(&cv_get(ctx, "list")->items[0], "[REDACTED]"));
	const struct cv *opts = cv_get(v, "options");
	assert_int_equal(opts->n, 2);
	const struct cv *sub = &cv_get(v, "subject")->items[0];
	assert_true(cv_text_eq(cv_get(sub, "name"), "plan"));
	assert_true(cv_text_eq(cv_get(cv_get(sub, "digest"), "sha256"), SHA_HELLO));
	assert_int_equal(cv_get(sub, "computed")->t, CV_TRUE);
	assert_int_equal(cv_get(sub, "size")->u, 5);
	/* canonical: encoding the decoded value gives the same bytes */
	struct buf again;
	buf_init(&again, MCP_ACTION_MAX);
	assert_int_equal(cbor_encode(v, &again, err), 0);
	assert_int_equal(again.len, b.len);
	assert_memory_equal(again.p, b.p, b.len);
	buf_free(&again);
	cv_arena_free(&ar);
	mcp_feedback_free(&f);
	json_decref(a);

	/* the same request with members in another order and different delivery options:
	 * the same action bytes */
	a = parse(
	    "{\"wait\":true,\"audience\":\"tf-prod\",\"subject\":[{\"content\":\"aGVsbG8=\",\"name\":\"plan\"}],"
	    "\"timeout_override\":999,\"default\":\"b\",\"options\":[\"a\",\"b\"],\"context\":{\"list\":[\"ghp_"
	    "1234567890abcdefghijABCDEFGHIJ123456\"],\"none\":null,\"ok\":true,\"big\":1e300,\"n\":-5,\"ratio\":0.1,"
	    "\"password\":\"other\"},\"message\":\"deploy with token=xyz please\",\"type\":\"selection\"}");
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	assert_int_equal(mcp_feedback_redact(&f, NULL, 0, err), 0);
	struct buf b2;
	buf_init(&b2, MCP_ACTION_MAX);
	assert_int_equal(mcp_feedback_action(&f, &b2, err), 0);
	assert_int_equal(b2.len, b.len);
	assert_memory_equal(b2.p, b.p, b.len);
	buf_free(&b2);
	mcp_feedback_free(&f);
	json_decref(a);
	buf_free(&b);
}

static void test_feedback_redact_bounds(void **state)
{
	(void)state;
	/* a context over the bound is cut to the marker, and redacted before it is cut */
	char *big = repeat('x', 5000);
	json_t *a = json_pack("{s:s, s:s, s:{s:s, s:s}}", "type", "approval", "message", "m", "context", "api_key",
			      "sk-proj-Abc123def456GHI789jkl012", "log", big);
	free(big);
	struct mcp_feedback f;
	char err[AS_ERRLEN];
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	assert_int_equal(mcp_feedback_redact(&f, NULL, 1024, err), 0);
	assert_int_equal(f.truncated, 1);
	assert_true(json_is_true(json_object_get(f.context, "truncated")));
	const char *head = json_string_value(json_object_get(f.context, "head"));
	assert_non_null(strstr(head, "[REDACTED]"));
	assert_null(strstr(head, "Abc123"));
	size_t sz = 0;
	assert_int_equal(redact_json_size(f.context, &sz), 0);
	assert_true(sz <= 1024);
	/* redacting twice changes nothing */
	char *first = json_dumps(f.context, JSON_COMPACT);
	assert_int_equal(mcp_feedback_redact(&f, NULL, 1024, err), 0);
	char *second = json_dumps(f.context, JSON_COMPACT);
	assert_string_equal(first, second);
	free(first);
	free(second);
	struct buf b;
	buf_init(&b, MCP_ACTION_MAX);
	assert_int_equal(mcp_feedback_action(&f, &b, err), 0);
	buf_free(&b);
	/* bad bounds */
	assert_int_equal(mcp_feedback_redact(&f, NULL, 10, err), AS_EINVAL);
	assert_int_equal(mcp_feedback_redact(&f, NULL, MCP_ACTION_MAX, err), AS_EINVAL);
	mcp_feedback_free(&f);
	json_decref(a);

	/* a message that grows past its maximum once secrets are marked is refused */
	size_t n = MCP_MESSAGE_MAX / 11 * 11;
	char *msg = malloc(n + 1);
	assert_non_null(msg);
	for (size_t i = 0; i < n; i += 11)
		memcpy(msg + i, "password=x ", 11);
	msg[n] = 0;
	a = json_pack("{s:s, s:s}", "type", "approval", "message", msg);
	free(msg);
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	assert_int_equal(mcp_feedback_redact(&f, NULL, 0, err), AS_ETOOBIG);
	assert_int_equal(strncmp(err, "message: over 65536 bytes", 25), 0);
	assert_int_equal(f.redacted, 0);
	mcp_feedback_free(&f);
	json_decref(a);

	/* operator rules reach message, options and context */
	const char *keys[] = {"ticket"}, *prefixes[] = {"acme_"};
	struct redact_rules r = {keys, 1, prefixes, 1, 0};
	a = parse("{\"type\":\"selection\",\"message\":\"use acme_0123456789abcdef\",\"options\":[\"ticket=42\",\"b\"],"
		  "\"context\":{\"ticket\":\"T-1\"}}");
	assert_int_equal(mcp_check_request_feedback(a, &f, err), 0);
	assert_int_equal(mcp_feedback_redact(&f, &r, 0, err), 0);
	assert_string_equal(f.message, "use [REDACTED]");
	assert_string_equal(f.options[0], "ticket=[REDACTED]");
	assert_string_equal(json_string_value(json_object_get(f.context, "ticket")), "[REDACTED]");
	mcp_feedback_free(&f);
	json_decref(a);
}

/* ---- the other tools' arguments ---- */

static void test_get_feedback_args(void **state)
{
	(void)state;
	char sid[MCP_SESSION_ID_MAX + 1], err[AS_ERRLEN];
	uint32_t w;
	json_t *a = parse("{\"session_id\":\"req-0123456789abcdef0123456789abcdef\"}");
	assert_int_equal(mcp_check_get_feedback(a, sid, &w, err), 0);
	assert_string_equal(sid, "req-0123456789abcdef0123456789abcdef");
	assert_int_equal(w, MCP_WAIT_DEFAULT);
	json_decref(a);
	a = parse("{\"session_id\":\"s\",\"wait_seconds\":0}");
	assert_int_equal(mcp_check_get_feedback(a, sid, &w, err), 0);
	assert_int_equal(w, 0);
	json_decref(a);
	struct {
		const char *args, *prefix;
	} bad[] = {
	    {"{}", "session_id: required"},
	    {"{\"session_id\":\"\"}", "session_id: must not be empty"},
	    {"{\"session_id\":\"a/b\"}", "session_id: expected only"},
	    {"{\"session_id\":5}", "session_id: expected a string"},
	    {"{\"session_id\":\"s\",\"wait_seconds\":51}", "wait_seconds: expected 0 to 50, got 51"},
	    {"{\"session_id\":\"s\",\"wait_seconds\":-1}", "wait_seconds: expected 0 to 50"},
	    {"{\"session_id\":\"s\",\"wait_seconds\":2.5}", "wait_seconds: expected an integer"},
	    {"{\"session_id\":\"s\",\"wait\":5}", "unknown argument \"wait\""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		a = parse(bad[i].args);
		assert_int_equal(mcp_check_get_feedback(a, sid, &w, err), AS_EINVAL);
		if (strncmp(err, bad[i].prefix, strlen(bad[i].prefix)) != 0)
			fail_msg("\"%s\" does not start with \"%s\"", err, bad[i].prefix);
		json_decref(a);
	}
	assert_int_equal(mcp_check_get_feedback(NULL, sid, &w, err), AS_EINVAL);
	char *longid = repeat('a', MCP_SESSION_ID_MAX + 1);
	a = json_pack("{s:s}", "session_id", longid);
	assert_int_equal(mcp_check_get_feedback(a, sid, &w, err), AS_ETOOBIG);
	json_decref(a);
	free(longid);
}

static void test_list_pending_args(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	assert_int_equal(mcp_check_list_pending(NULL, err), 0);
	json_t *a = json_object();
	assert_int_equal(mcp_check_list_pending(a, err), 0);
	json_object_set_new(a, "all", json_true());
	assert_int_equal(mcp_check_list_pending(a, err), AS_EINVAL);
	assert_non_null(strstr(err, "unknown argument \"all\""));
	json_decref(a);
}

/* ---- results and lines ---- */

static void test_tool_results(void **state)
{
	(void)state;
	json_t *s = json_pack("{s:s, s:s, s:b, s:s, s:I}", "session_id", "req-1", "status", "approved", "approved", 1,
			      "approval_token", "eyJ.x.y", "timestamp", (json_int_t)1706624000);
	json_t *r = mcp_tool_result(s);
	assert_non_null(r);
	const json_t *c0 = json_array_get(json_object_get(r, "content"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "type")), "text");
	char *text = json_dumps(s, JSON_COMPACT);
	assert_string_equal(json_string_value(json_object_get(c0, "text")), text);
	free(text);
	assert_ptr_equal(json_object_get(r, "structuredContent"), s);
	assert_true(json_is_false(json_object_get(r, "isError")));
	json_decref(r);
	assert_null(mcp_tool_result(NULL));

	r = mcp_tool_error("bad \xff byte");
	const char *t = json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
	assert_string_equal(t, "bad \\xff byte");
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_null(json_object_get(r, "structuredContent"));
	json_decref(r);
}

static void test_line_result_and_error(void **state)
{
	(void)state;
	struct buf b;
	char err[AS_ERRLEN];
	buf_init(&b, MCP_OUT_MAX);
	struct mcp_id id = {MCP_ID_STR, 0, 5, "a\n\"b\\"};
	assert_int_equal(mcp_line_result(&b, &id, json_pack("{s:s}", "text", "two\nlines"), err), 0);
	json_t *j = line_json(&b, 0);
	assert_string_equal(json_string_value(json_object_get(j, "id")), "a\n\"b\\");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "result"), "text")), "two\nlines");
	json_decref(j);
	/* lines append */
	size_t mark = b.len;
	struct mcp_id nid = {MCP_ID_INT, 0, 0, ""};
	nid.i = -9007199254740993LL;
	assert_int_equal(
	    mcp_line_error(&b, &nid, MCP_INVALID_PARAMS, "bad \xc3 byte", json_pack("{s:s}", "k", "v"), err), 0);
	j = line_json(&b, mark);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), nid.i);
	const json_t *e = json_object_get(j, "error");
	assert_int_equal(json_integer_value(json_object_get(e, "code")), -32602);
	assert_string_equal(json_string_value(json_object_get(e, "message")), "bad \\xc3 byte");
	assert_string_equal(json_string_value(json_object_get(json_object_get(e, "data"), "k")), "v");
	json_decref(j);
	/* a message is cut to 1024 bytes */
	mark = b.len;
	char *longmsg = repeat('e', 5000);
	assert_int_equal(mcp_line_error(&b, NULL, MCP_INTERNAL_ERROR, longmsg, NULL, err), 0);
	free(longmsg);
	j = line_json(&b, mark);
	assert_true(json_is_null(json_object_get(j, "id")));
	assert_int_equal(json_string_length(json_object_get(json_object_get(j, "error"), "message")), 1024);
	json_decref(j);
	/* a result needs an id */
	struct mcp_id none = {MCP_ID_NULL, 0, 0, ""};
	mark = b.len;
	assert_int_equal(mcp_line_result(&b, &none, json_object(), err), AS_EINVAL);
	assert_int_equal(mcp_line_result(&b, &id, NULL, err), AS_EINVAL);
	assert_int_equal(b.len, mark);
	buf_free(&b);

	/* over the buffer's max: nothing appended */
	buf_init(&b, 64);
	assert_int_equal(buf_put(&b, "x", 1), 0);
	char *big = repeat('r', 100);
	assert_int_equal(mcp_line_result(&b, &id, json_pack("{s:s}", "r", big), err), AS_ETOOBIG);
	free(big);
	assert_int_equal(b.len, 1);
	assert_non_null(strstr(err, "over the limit"));
	buf_free(&b);
}

static void test_line_progress(void **state)
{
	(void)state;
	struct buf b;
	char err[AS_ERRLEN];
	buf_init(&b, MCP_OUT_MAX);
	struct mcp_id tok = {MCP_ID_INT, 0, 0, ""};
	tok.i = 17;
	assert_int_equal(mcp_line_progress(&b, &tok, 30, -1, "waiting for a reviewer (30 s)", err), 0);
	json_t *j = line_json(&b, 0);
	assert_string_equal(json_string_value(json_object_get(j, "method")), "notifications/progress");
	assert_null(json_object_get(j, "id"));
	const json_t *p = json_object_get(j, "params");
	assert_int_equal(json_integer_value(json_object_get(p, "progressToken")), 17);
	assert_true(json_is_integer(json_object_get(p, "progress")));
	assert_int_equal(json_integer_value(json_object_get(p, "progress")), 30);
	assert_null(json_object_get(p, "total"));
	assert_string_equal(json_string_value(json_object_get(p, "message")), "waiting for a reviewer (30 s)");
	json_decref(j);
	size_t mark = b.len;
	struct mcp_id stok = {MCP_ID_STR, 0, 3, "abc"};
	assert_int_equal(mcp_line_progress(&b, &stok, 1.5, 300, NULL, err), 0);
	j = line_json(&b, mark);
	p = json_object_get(j, "params");
	assert_string_equal(json_string_value(json_object_get(p, "progressToken")), "abc");
	assert_true(json_real_value(json_object_get(p, "progress")) == 1.5);
	assert_int_equal(json_integer_value(json_object_get(p, "total")), 300);
	assert_null(json_object_get(p, "message"));
	json_decref(j);
	mark = b.len;
	struct mcp_id none = {MCP_ID_NONE, 0, 0, ""};
	assert_int_equal(mcp_line_progress(&b, &none, 1, -1, NULL, err), AS_EINVAL);
	assert_int_equal(mcp_line_progress(&b, &tok, -1, -1, NULL, err), AS_EINVAL);
	assert_int_equal(mcp_line_progress(&b, &tok, NAN, -1, NULL, err), AS_EINVAL);
	assert_int_equal(mcp_line_progress(&b, &tok, 1, INFINITY, NULL, err), AS_EINVAL);
	assert_int_equal(b.len, mark);
	buf_free(&b);
}

static void test_line_log(void **state)
{
	(void)state;
	struct buf b;
	char err[AS_ERRLEN];
	buf_init(&b, MCP_OUT_MAX);
	assert_int_equal(mcp_line_log(&b, MCP_LOG_WARNING, "assent", json_pack("{s:s}", "event", "timeout"), err), 0);
	json_t *j = line_json(&b, 0);
	assert_string_equal(json_string_value(json_object_get(j, "method")), "notifications/message");
	const json_t *p = json_object_get(j, "params");
	assert_string_equal(json_string_value(json_object_get(p, "level")), "warning");
	assert_string_equal(json_string_value(json_object_get(p, "logger")), "assent");
	assert_string_equal(json_string_value(json_object_get(json_object_get(p, "data"), "event")), "timeout");
	json_decref(j);
	size_t mark = b.len;
	assert_int_equal(mcp_line_log(&b, MCP_LOG_DEBUG, NULL, json_string("plain"), err), 0);
	j = line_json(&b, mark);
	assert_null(json_object_get(json_object_get(j, "params"), "logger"));
	json_decref(j);
	mark = b.len;
	assert_int_equal(mcp_line_log(&b, (enum mcp_log_level)9, NULL, json_string("x"), err), AS_EINVAL);
	assert_int_equal(mcp_line_log(&b, MCP_LOG_INFO, NULL, NULL, err), AS_EINVAL);
	assert_int_equal(b.len, mark);
	buf_free(&b);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(mcp_fb_type_name(MCP_FB_APPROVAL), "approval");
	assert_string_equal(mcp_fb_type_name(MCP_FB_INPUT), "input");
	assert_string_equal(mcp_fb_type_name(MCP_FB_SELECTION), "selection");
	assert_string_equal(mcp_fb_type_name(MCP_FB_CONFIRMATION), "confirmation");
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_parse_request),
	    cmocka_unit_test(test_peek_id),
	    cmocka_unit_test(test_parse_notification_and_response),
	    cmocka_unit_test(test_line_over_limit),
	    cmocka_unit_test(test_deep_nesting),
	    cmocka_unit_test(test_method_known),
	    cmocka_unit_test(test_initialize_negotiation),
	    cmocka_unit_test(test_initialize_result_shape),
	    cmocka_unit_test(test_initialize_bad_params),
	    cmocka_unit_test(test_tools_list),
	    cmocka_unit_test(test_line_tool_json),
	    cmocka_unit_test(test_tools_call_params),
	    cmocka_unit_test(test_cancelled_params),
	    cmocka_unit_test(test_defaults_params),
	    cmocka_unit_test(test_log_set_level),
	    cmocka_unit_test(test_feedback_valid_full),
	    cmocka_unit_test(test_bad_args_sizes),
	    cmocka_unit_test(test_action_cbor),
	    cmocka_unit_test(test_feedback_redact_bounds),
	    cmocka_unit_test(test_get_feedback_args),
	    cmocka_unit_test(test_list_pending_args),
	    cmocka_unit_test(test_tool_results),
	    cmocka_unit_test(test_line_result_and_error),
	    cmocka_unit_test(test_line_progress),
	    cmocka_unit_test(test_line_log),
	    cmocka_unit_test(test_type_names),
	};
	size_t nl = sizeof bad_lines / sizeof *bad_lines, na = sizeof bad_args_cases / sizeof *bad_args_cases;
	size_t nf = sizeof fixed / sizeof *fixed, total = nl + na + nf;
	struct CMUnitTest *tests = calloc(total, sizeof *tests);
	char(*names)[96] = calloc(nl + na, sizeof *names);
	if (!tests || !names)
		return 1;
	/* One named test per bad line and per bad argument set. */
	for (size_t i = 0; i < nl; i++) {
		snprintf(names[i], sizeof names[i], "bad line: %s", bad_lines[i].name);
		tests[i] = (struct CMUnitTest){names[i], test_bad_line, NULL, NULL, (void *)&bad_lines[i]};
	}
	for (size_t i = 0; i < na; i++) {
		snprintf(names[nl + i], sizeof names[nl + i], "request_feedback: %s", bad_args_cases[i].name);
		tests[nl + i] =
		    (struct CMUnitTest){names[nl + i], test_bad_args, NULL, NULL, (void *)&bad_args_cases[i]};
	}
	memcpy(tests + nl + na, fixed, sizeof fixed);
	int rc = _cmocka_run_group_tests("mcp", tests, total, NULL, NULL);
	free(tests);
	free(names);
	return rc;
}
