/* MCP 2026-07-28 (gateway/worker/mcp/modern.c) and the task shapes of both revisions
 * (gateway/worker/mcp/tasks.c): pure functions, checked on their own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gateway/worker/mcp/modern.h"
#include "gateway/worker/mcp/tasks.h"

static json_t *J(const char *s)
{
	json_t *j = json_loads(s, 0, NULL);
	assert_non_null(j);
	return j;
}

#define META_OK "{\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\",\"" MCP_META_CAPS "\":{}}}"

static void test_meta(void **state)
{
	(void)state;
	struct mcp_modern mm;
	int code;
	json_t *data, *p;
	char err[AS_ERRLEN];
	p = J(META_OK);
	assert_int_equal(mcp_modern_meta(p, &mm, &code, &data, err), 0);
	assert_string_equal(mm.version, "2026-07-28");
	assert_int_equal(mm.client.tasks, 0);
	json_decref(p);
	const char *bad[] = {
	    "{}",
	    "{\"_meta\":[]}",
	    "{\"_meta\":{\"" MCP_META_CAPS "\":{}}}",
	    "{\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\"}}",
	    "{\"_meta\":{\"" MCP_META_VERSION "\":7,\"" MCP_META_CAPS "\":{}}}",
	    "{\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\",\"" MCP_META_CAPS "\":[]}}",
	    "{\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\",\"" MCP_META_CAPS "\":{},\"" MCP_META_CLIENT "\":1}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		p = J(bad[i]);
		assert_int_equal(mcp_modern_meta(p, &mm, &code, &data, err), AS_EINVAL);
		assert_int_equal(code, MCP_INVALID_PARAMS);
		assert_null(data);
		assert_true(err[0] != 0);
		json_decref(p);
	}
	assert_int_equal(mcp_modern_meta(NULL, &mm, &code, &data, err), AS_EINVAL);
	/* another version: -32022, the supported list and the requested one */
	p = J("{\"_meta\":{\"" MCP_META_VERSION "\":\"2025-11-25\",\"" MCP_META_CAPS "\":{}}}");
	assert_int_equal(mcp_modern_meta(p, &mm, &code, &data, err), AS_EINVAL);
	assert_int_equal(code, MCP_UNSUPPORTED_VERSION);
	assert_string_equal(json_string_value(json_object_get(data, "requested")), "2025-11-25");
	assert_int_equal(json_array_size(json_object_get(data, "supported")), 3);
	json_decref(data);
	json_decref(p);
	/* declared: client info (control bytes shown as ?) and the tasks extension */
	p = J("{\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\",\"" MCP_META_CAPS
	      "\":{\"extensions\":{\"" MCP_TASKS_EXT "\":{}}},\"" MCP_META_CLIENT
	      "\":{\"name\":\"a\\u0007b\",\"version\":\"9\"}}}");
	assert_int_equal(mcp_modern_meta(p, &mm, &code, &data, err), 0);
	assert_string_equal(mm.client.name, "a?b");
	assert_string_equal(mm.client.client_version, "9");
	assert_int_equal(mm.client.tasks, 1);
	json_decref(p);
	/* the declared name reaches a terminal reviewer: what initialize hides (a bidi override
	 * that would reorder what the reviewer reads) is hidden here too, the same way */
	const char *name = "\"ok\\u202egpj.exe\\u0085x\"";
	char src[512];
	snprintf(src, sizeof src,
		 "{\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\",\"" MCP_META_CAPS "\":{},\"" MCP_META_CLIENT
		 "\":{\"name\":%s}}}",
		 name);
	p = J(src);
	assert_int_equal(mcp_modern_meta(p, &mm, &code, &data, err), 0);
	json_decref(p);
	snprintf(src, sizeof src, "{\"protocolVersion\":\"2025-11-25\",\"clientInfo\":{\"name\":%s}}", name);
	p = J(src);
	struct mcp_client init;
	json_t *res = NULL;
	assert_int_equal(mcp_initialize(p, "1", &init, &res, err), 0);
	assert_null(strstr(mm.client.name, "\xe2\x80\xae"));
	assert_string_equal(mm.client.name, init.name);
	json_decref(res);
	json_decref(p);
}

static void test_line_complete(void **state)
{
	(void)state;
	struct buf b;
	struct mcp_id ids[] = {{.t = MCP_ID_INT, .i = -42}, {.t = MCP_ID_STR, .s = "a\",\"result\":{\\", .len = 14}};
	for (size_t k = 0; k < 2; k++) {
		buf_init(&b, 1 << 16);
		assert_int_equal(mcp_line_result(&b, &ids[k], json_pack("{s:i}", "x", 1), NULL), 0);
		size_t second = b.len;
		assert_int_equal(mcp_line_result(&b, &ids[k], json_object(), NULL), 0);
		size_t third = b.len;
		assert_int_equal(mcp_line_error(&b, &ids[k], -32602, "bad", NULL, NULL), 0);
		assert_int_equal(mcp_line_complete(&b, third, NULL, NULL), 0); /* an error line: left alone */
		assert_int_equal(mcp_line_complete(&b, second, NULL, NULL), 0);
		assert_int_equal(mcp_line_complete(&b, 0, MCP_LIST_CACHE_HINTS, NULL), 0);
		json_error_t je;
		const char *p = (const char *)b.p;
		const char *nl1 = memchr(p, '\n', b.len), *nl2 = memchr(nl1 + 1, '\n', b.len - (size_t)(nl1 + 1 - p));
		json_t *l1 = json_loadb(p, (size_t)(nl1 - p), JSON_REJECT_DUPLICATES, &je);
		json_t *l2 = json_loadb(nl1 + 1, (size_t)(nl2 - nl1 - 1), JSON_REJECT_DUPLICATES, &je);
		json_t *l3 = json_loadb(nl2 + 1, b.len - (size_t)(nl2 + 1 - p) - 1, JSON_REJECT_DUPLICATES, &je);
		assert_non_null(l1);
		assert_non_null(l2);
		assert_non_null(l3);
		const json_t *r1 = json_object_get(l1, "result");
		assert_string_equal(json_string_value(json_object_get(r1, "resultType")), "complete");
		assert_int_equal(json_integer_value(json_object_get(r1, "ttlMs")), MCP_LIST_TTL_MS);
		assert_string_equal(json_string_value(json_object_get(r1, "cacheScope")), "public");
		assert_int_equal(json_integer_value(json_object_get(r1, "x")), 1);
		assert_int_equal(json_object_size(json_object_get(l2, "result")), 1);
		assert_null(json_object_get(l3, "result"));
		assert_int_equal(mcp_line_error_code(nl2 + 1, b.len - (size_t)(nl2 + 1 - p)), -32602);
		assert_int_equal(mcp_line_error_code(p, (size_t)(nl1 - p)), 0);
		json_decref(l1);
		json_decref(l2);
		json_decref(l3);
		buf_free(&b);
	}
	/* past the line limit: refused, the line unchanged */
	buf_init(&b, 60);
	struct mcp_id one = {.t = MCP_ID_INT, .i = 1};
	assert_int_equal(mcp_line_result(&b, &one, json_object(), NULL), 0);
	size_t n = b.len;
	assert_int_equal(mcp_line_complete(&b, 0, MCP_LIST_CACHE_HINTS, NULL), AS_ETOOBIG);
	assert_int_equal(b.len, n);
	buf_free(&b);
}

static void test_http_status(void **state)
{
	(void)state;
	assert_int_equal(mcp_http_status(0), 200);
	assert_int_equal(mcp_http_status(MCP_METHOD_NOT_FOUND), 404);
	assert_int_equal(mcp_http_status(MCP_INTERNAL_ERROR), 500);
	int four[] = {MCP_PARSE_ERROR,	   MCP_INVALID_REQUEST,	   MCP_INVALID_PARAMS,
		      MCP_HEADER_MISMATCH, MCP_MISSING_CLIENT_CAP, MCP_UNSUPPORTED_VERSION};
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(mcp_http_status(four[i]), 400);
}

static void test_headers_agree(void **state)
{
	(void)state;
	struct mcp_msg m;
	const char *l = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"get_feedback\","
			"\"_meta\":{\"" MCP_META_VERSION "\":\"2026-07-28\"}}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, NULL), 0);
	char msg[200];
	struct mh_verdict v = {
	    .modern = 1, .protocol = "2026-07-28", .method_hdr = " tools/call ", .name_hdr = "get_feedback"};
	assert_int_equal(mcp_http_headers_agree(&v, &m, msg, sizeof msg), 0);
	v.name_hdr = "\tget_feedback  ";
	assert_int_equal(mcp_http_headers_agree(&v, &m, msg, sizeof msg), 0);
	struct mh_verdict bad[] = {
	    {.protocol = "", .method_hdr = "tools/call", .name_hdr = "get_feedback"},
	    {.protocol = "2025-11-25", .method_hdr = "tools/call", .name_hdr = "get_feedback"},
	    {.protocol = "2026-07-28", .method_hdr = NULL, .name_hdr = "get_feedback"},
	    {.protocol = "2026-07-28", .method_hdr = "TOOLS/CALL", .name_hdr = "get_feedback"},
	    {.protocol = "2026-07-28", .method_hdr = "tools/call", .name_hdr = NULL},
	    {.protocol = "2026-07-28", .method_hdr = "tools/call", .name_hdr = "get_feedbackx"},
	    {.protocol = "2026-07-28", .method_hdr = "tools/call", .name_hdr = "get feedback"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		memset(msg, 0, sizeof msg);
		assert_int_equal(mcp_http_headers_agree(&bad[i], &m, msg, sizeof msg), MCP_HEADER_MISMATCH);
		assert_true(msg[0] != 0);
	}
	mcp_msg_free(&m);
}

static void test_task_shapes(void **state)
{
	(void)state;
	struct mcp_msg m;
	const char *l =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"task\":{}}}";
	assert_int_equal(mcp_parse_line(l, strlen(l), &m, NULL), 0);
	assert_int_equal(mcp_task_wanted(&m, 0, 0), MCP_TASK_2025);
	assert_int_equal(mcp_task_wanted(&m, 1, 0), MCP_TASK_NONE); /* a v1 hint on a 2026 request: ignored */
	assert_int_equal(mcp_task_wanted(&m, 1, 1), MCP_TASK_2026);
	mcp_msg_free(&m);

	char id[MCP_SESSION_ID_MAX + 1], err[AS_ERRLEN];
	json_t *p = J("{\"taskId\":\"req-0a\"}");
	assert_int_equal(mcp_task_id(p, id, err), 0);
	assert_string_equal(id, "req-0a");
	json_decref(p);
	const char *badid[] = {"{}", "{\"taskId\":1}", "{\"taskId\":\"\"}", "{\"taskId\":\"a b\"}",
			       "{\"taskId\":\"../x/\"}"};
	for (size_t i = 0; i < 5; i++) {
		p = J(badid[i]);
		assert_int_equal(mcp_task_id(p, id, err), AS_EINVAL);
		json_decref(p);
	}

	/* created: pending is a working task; a decision made at once is the result itself (2026) */
	json_t *pend = J("{\"session_id\":\"req-1\",\"status\":\"pending\",\"deadline\":2000}");
	int sync;
	json_t *c25 = mcp_task_created(MCP_TASK_2025, pend, 1000000, &sync);
	assert_int_equal(sync, 0);
	const json_t *t = json_object_get(c25, "task");
	assert_string_equal(json_string_value(json_object_get(t, "taskId")), "req-1");
	assert_string_equal(json_string_value(json_object_get(t, "status")), "working");
	assert_int_equal(json_integer_value(json_object_get(t, "ttl")), 1000000 + MCP_TASK_KEEP_MS);
	assert_non_null(json_object_get(t, "pollInterval"));
	assert_string_equal(json_string_value(json_object_get(t, "createdAt")), "1970-01-01T00:16:40.000Z");
	json_t *c26 = mcp_task_created(MCP_TASK_2026, pend, 1000000, &sync);
	assert_string_equal(json_string_value(json_object_get(c26, "resultType")), "task");
	assert_null(json_object_get(c26, "task"));
	assert_null(json_object_get(c26, "ttl"));
	assert_non_null(json_object_get(c26, "ttlMs"));
	assert_non_null(json_object_get(c26, "pollIntervalMs"));
	json_t *now = J("{\"session_id\":\"req-2\",\"status\":\"denied\",\"approved\":false}");
	json_t *s26 = mcp_task_created(MCP_TASK_2026, now, 1000000, &sync);
	assert_int_equal(sync, 1);
	assert_non_null(json_object_get(s26, "structuredContent"));
	json_t *s25 = mcp_task_created(MCP_TASK_2025, now, 1000000, &sync);
	assert_int_equal(sync, 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(s25, "task"), "status")), "failed");

	/* get: unknown is NULL; done in either revision's terms */
	json_t *unk = J("{\"state\":\"unknown\"}");
	assert_null(mcp_task_get(MCP_TASK_2025, unk));
	assert_null(mcp_task_get(MCP_TASK_2026, unk));
	json_t *den = J("{\"state\":\"done\",\"session_id\":\"req-3\",\"created_ms\":1,\"updated_ms\":2,"
			"\"result\":{\"status\":\"timeout\",\"approved\":false}}");
	json_t *g25 = mcp_task_get(MCP_TASK_2025, den), *g26 = mcp_task_get(MCP_TASK_2026, den);
	assert_string_equal(json_string_value(json_object_get(g25, "status")), "failed");
	assert_null(json_object_get(g25, "result"));
	assert_string_equal(json_string_value(json_object_get(g26, "status")), "completed");
	assert_false(json_is_true(json_object_get(json_object_get(g26, "result"), "isError")));
	assert_string_equal(json_string_value(json_object_get(g26, "resultType")), "complete");
	/* the inlined result is one of 2026-07-28 too: resultType "complete" (issue 29) */
	assert_string_equal(json_string_value(json_object_get(json_object_get(g26, "result"), "resultType")),
			    "complete");
	assert_null(json_object_get(json_object_get(g25, "result"), "resultType"));
	/* a gated call's own result (the upstream's CallToolResult) inlined the same way */
	json_t *gdone = J("{\"state\":\"done\",\"session_id\":\"req-7\",\"created_ms\":1,\"updated_ms\":2,"
			  "\"result\":{\"io.assent/call_result\":{\"content\":[],\"isError\":false}}}");
	json_t *gg26 = mcp_task_get(MCP_TASK_2026, gdone);
	assert_string_equal(json_string_value(json_object_get(json_object_get(gg26, "result"), "resultType")),
			    "complete");
	assert_non_null(json_object_get(json_object_get(gg26, "result"), "content"));
	json_decref(gdone);
	json_decref(gg26);
	json_t *can = J("{\"state\":\"cancelled\",\"session_id\":\"req-4\",\"created_ms\":1,\"updated_ms\":2}");
	assert_string_equal(mcp_task_status(MCP_TASK_2026, can), "cancelled");
	json_t *lst = J("{\"tasks\":[{\"state\":\"working\",\"session_id\":\"req-5\",\"created_ms\":1},"
			"{\"state\":\"done\",\"session_id\":\"req-6\",\"created_ms\":1,\"status\":\"approved\"},"
			"{\"state\":\"unknown\"}]}");
	json_t *l25 = mcp_task_list(lst);
	assert_int_equal(json_array_size(json_object_get(l25, "tasks")), 2);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(json_object_get(l25, "tasks"), 1), "status")),
	    "completed");
	json_t *all[] = {pend, c25, c26, now, s26, s25, unk, den, g25, g26, can, lst, l25};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		json_decref(all[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_meta),	cmocka_unit_test(test_line_complete),
	    cmocka_unit_test(test_http_status), cmocka_unit_test(test_headers_agree),
	    cmocka_unit_test(test_task_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
