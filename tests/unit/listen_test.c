/* subscriptions/listen (gateway/worker/mcp/listen.c): the filter a client sends, what is
 * granted, the bounds, and which subscription hears which change, with its id stamped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "gateway/worker/mcp/listen.h"

static json_t *J(const char *s)
{
	json_t *j = json_loads(s, JSON_ALLOW_NUL, NULL); /* a NUL in a URI must be refused too */
	assert_non_null(j);
	return j;
}

/* The JSON lines in out, as an array. */
static json_t *lines_of(const struct buf *out)
{
	json_t *a = json_array();
	const char *p = (const char *)out->p, *end = p + out->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		assert_non_null(nl);
		json_array_append_new(a, json_loadb(p, (size_t)(nl - p), 0, NULL));
		p = nl + 1;
	}
	return a;
}

static void test_filter_parse(void **state)
{
	(void)state;
	struct listen_filter f;
	char err[AS_ERRLEN];
	json_t *p = J("{\"notifications\":{\"toolsListChanged\":true,\"promptsListChanged\":false,"
		      "\"resourceSubscriptions\":[\"a://1\",\"a://2\",\"a://1\"],\"later\":7}}");
	assert_int_equal(listen_filter_parse(p, &f, err), 0);
	assert_int_equal(f.kinds, LISTEN_TOOLS | LISTEN_UPDATED);
	assert_int_equal(f.nuris, 2); /* a duplicate is kept once */
	assert_string_equal(f.uris[1], "a://2");
	listen_filter_free(&f);
	json_decref(p);
	static const struct {
		const char *params, *says;
	} bad[] = {
	    {"{}", "params.notifications is required"},
	    {"{\"notifications\":[]}", "params.notifications must be an object"},
	    {"{\"notifications\":{\"toolsListChanged\":\"yes\"}}", "toolsListChanged must be a boolean, not a string"},
	    {"{\"notifications\":{\"promptsListChanged\":1}}", "promptsListChanged must be a boolean, not a number"},
	    {"{\"notifications\":{\"resourcesListChanged\":null}}", "resourcesListChanged must be a boolean"},
	    {"{\"notifications\":{\"resourceSubscriptions\":\"a://1\"}}", "resourceSubscriptions must be an array"},
	    {"{\"notifications\":{\"resourceSubscriptions\":[\"a://1\",\"\"]}}", "resourceSubscriptions[1] must be"},
	    {"{\"notifications\":{\"resourceSubscriptions\":[3]}}", "resourceSubscriptions[0] must be"},
	    {"{\"notifications\":{\"resourceSubscriptions\":[\"a\\u0000b\"]}}", "resourceSubscriptions[0] must be"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = J(bad[i].params);
		assert_int_not_equal(listen_filter_parse(p, &f, err), 0);
		if (!strstr(err, bad[i].says))
			fail_msg("%s: said \"%s\", not \"%s\"", bad[i].params, err, bad[i].says);
		assert_int_equal(f.nuris, 0);
		json_decref(p);
	}
	/* too many URIs, and one too long: named with the bound */
	json_t *many = json_array();
	char u[32];
	for (int i = 0; i <= LISTEN_URIS_MAX; i++) {
		snprintf(u, sizeof u, "a://%d", i);
		json_array_append_new(many, json_string(u));
	}
	p = json_pack("{s:{s:o}}", "notifications", "resourceSubscriptions", many);
	assert_int_equal(listen_filter_parse(p, &f, err), AS_ETOOBIG);
	assert_non_null(strstr(err, "at most 64"));
	json_decref(p);
	char *longu = calloc(1, LISTEN_URI_MAX + 2);
	memset(longu, 'x', LISTEN_URI_MAX + 1);
	p = json_pack("{s:{s:[s]}}", "notifications", "resourceSubscriptions", longu);
	assert_int_equal(listen_filter_parse(p, &f, err), AS_ETOOBIG);
	assert_non_null(strstr(err, "at most 4096"));
	json_decref(p);
	free(longu);
}

static void test_honor_and_caps(void **state)
{
	(void)state;
	struct listen_filter f;
	char err[AS_ERRLEN];
	json_t *p = J("{\"notifications\":{\"toolsListChanged\":true,\"promptsListChanged\":true,"
		      "\"resourceSubscriptions\":[\"a://1\"]}}");
	assert_int_equal(listen_filter_parse(p, &f, err), 0);
	json_t *caps = J("{\"tools\":{\"listChanged\":true},\"prompts\":{},\"resources\":{\"listChanged\":true}}");
	assert_int_equal(listen_caps_kinds(caps), LISTEN_TOOLS | LISTEN_RESOURCES);
	listen_filter_honor(&f, listen_caps_kinds(caps));
	assert_int_equal(f.kinds, LISTEN_TOOLS); /* prompts cannot be told; the URIs cannot be subscribed */
	assert_int_equal(f.nuris, 0);
	json_t *shown = listen_filter_json(&f), *want = J("{\"toolsListChanged\":true}");
	assert_true(json_equal(shown, want));
	json_t *full = J("{\"tools\":{\"listChanged\":true},\"prompts\":{\"listChanged\":true},"
			 "\"resources\":{\"listChanged\":true,\"subscribe\":true}}");
	assert_int_equal(listen_caps_kinds(full), LISTEN_TOOLS | LISTEN_PROMPTS | LISTEN_RESOURCES | LISTEN_UPDATED);
	json_t *all[] = {p, caps, shown, want, full};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		json_decref(all[i]);
	listen_filter_free(&f);
	/* which lists changed between two catalogs */
	json_t *a = J("{\"prompts\":[{\"name\":\"p\"}],\"resources\":[],\"resourceTemplates\":[]}");
	json_t *b = J("{\"prompts\":[{\"name\":\"p\"}],\"resources\":[{\"uri\":\"a://1\"}],\"resourceTemplates\":[]}");
	assert_int_equal(listen_lists_changed(a, a), 0);
	assert_int_equal(listen_lists_changed(a, b), LISTEN_RESOURCES);
	assert_int_equal(listen_lists_changed(NULL, a), LISTEN_PROMPTS | LISTEN_RESOURCES);
	json_decref(a);
	json_decref(b);
}

static void parse_req(const char *line, struct mcp_msg *m)
{
	assert_int_equal(mcp_parse_line(line, strlen(line), m, NULL), 0);
	assert_int_equal(m->m, MCP_M_LISTEN);
}

#define LISTEN_REQ(id, filter)                                                                                         \
	"{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"subscriptions/listen\",\"params\":{\"_meta\":{},"             \
	"\"notifications\":" filter "}}"

struct sink {
	struct buf out[3]; /* connections 1, 2, 3 */
	int sent[3];
};

static struct buf *sink_out(void *ctx, uint64_t conn)
{
	struct sink *s = ctx;
	return conn >= 1 && conn <= 3 ? &s->out[conn - 1] : NULL;
}

static void sink_sent(void *ctx, uint64_t conn, const struct mcp_id *id)
{
	(void)id;
	((struct sink *)ctx)->sent[conn - 1]++;
}

static void test_request_and_route(void **state)
{
	(void)state;
	static struct listen_set ls;
	memset(&ls, 0, sizeof ls);
	struct sink sk = {0};
	for (int i = 0; i < 3; i++)
		buf_init(&sk.out[i], 1u << 20);
	struct mcp_msg m;
	/* connection 1 (an agent "a"): tools; connection 2 (agent "b"): prompts */
	parse_req(LISTEN_REQ("\"L1\"", "{\"toolsListChanged\":true,\"promptsListChanged\":true}"), &m);
	assert_int_equal(listen_request(&ls, &sk.out[0], 1, "a", &m, LISTEN_TOOLS, "9.9"), 1);
	mcp_msg_free(&m);
	parse_req(LISTEN_REQ("7", "{\"promptsListChanged\":true}"), &m);
	assert_int_equal(listen_request(&ls, &sk.out[1], 2, "b", &m, LISTEN_TOOLS | LISTEN_PROMPTS, "9.9"), 1);
	mcp_msg_free(&m);
	json_t *l1 = lines_of(&sk.out[0]), *l2 = lines_of(&sk.out[1]);
	json_t *want1 =
	    J("[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":"
	      "{\"notifications\":{\"toolsListChanged\":true},\"_meta\":{\"" LISTEN_META_ID "\":\"L1\"}}}]");
	json_t *want2 = J("[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":"
			  "{\"notifications\":{\"promptsListChanged\":true},\"_meta\":{\"" LISTEN_META_ID "\":7}}}]");
	assert_true(json_equal(l1, want1));
	assert_true(json_equal(l2, want2));
	json_decref(l1), json_decref(l2), json_decref(want1), json_decref(want2);
	buf_reset(&sk.out[0]);
	buf_reset(&sk.out[1]);
	/* a change of the tools reaches connection 1 only, stamped with its id */
	const struct listen_io io = {&sk, sink_out, sink_sent};
	listen_notify_lists(&ls, &io, LISTEN_TOOLS);
	assert_int_equal(sk.sent[0], 1);
	assert_int_equal(sk.sent[1], 0);
	l1 = lines_of(&sk.out[0]);
	want1 = J("[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":"
		  "{\"_meta\":{\"" LISTEN_META_ID "\":\"L1\"}}}]");
	assert_true(json_equal(l1, want1));
	json_decref(l1), json_decref(want1);
	listen_notify_lists(&ls, &io, LISTEN_PROMPTS | LISTEN_RESOURCES);
	assert_int_equal(sk.sent[0], 1);
	assert_int_equal(sk.sent[1], 1);
	/* the same id again on the same connection is refused; on another it is another subscription */
	buf_reset(&sk.out[0]);
	parse_req(LISTEN_REQ("\"L1\"", "{\"toolsListChanged\":true}"), &m);
	assert_int_equal(listen_request(&ls, &sk.out[0], 1, "a", &m, LISTEN_TOOLS, "9.9"), 0);
	assert_non_null(strstr((const char *)sk.out[0].p, "already open on this connection"));
	assert_int_equal(listen_request(&ls, &sk.out[2], 3, "a", &m, LISTEN_TOOLS, "9.9"), 1);
	mcp_msg_free(&m);
	assert_int_equal(listen_count(&ls, 3), 1);
	/* nothing granted: acknowledged, and ended with the result at once */
	buf_reset(&sk.out[2]);
	parse_req(LISTEN_REQ("\"L9\"", "{\"resourceSubscriptions\":[\"a://1\"]}"), &m);
	assert_int_equal(listen_request(&ls, &sk.out[2], 3, "a", &m, LISTEN_TOOLS, "9.9"), 0);
	mcp_msg_free(&m);
	l1 = lines_of(&sk.out[2]);
	assert_int_equal(json_array_size(l1), 2);
	const json_t *granted = json_object_get(json_object_get(json_array_get(l1, 0), "params"), "notifications");
	assert_true(json_is_object(granted) && json_object_size(granted) == 0);
	json_t *res = json_object_get(json_array_get(l1, 1), "result");
	assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
	assert_string_equal(json_string_value(json_object_get(json_object_get(res, "_meta"), LISTEN_META_ID)), "L9");
	json_decref(l1);
	/* cancel and a connection's end take theirs away */
	struct mcp_id l1id = {.t = MCP_ID_STR, .len = 2, .s = "L1"};
	assert_int_equal(listen_cancel(&ls, 1, &l1id), 1);
	assert_int_equal(listen_cancel(&ls, 1, &l1id), 0);
	listen_conn_gone(&ls, 2);
	assert_int_equal(listen_count(&ls, 2), 0);
	assert_int_equal(listen_count(&ls, 3), 1);
	listen_conn_gone(&ls, 3);
	for (int i = 0; i < 3; i++)
		buf_free(&sk.out[i]);
}

static void test_bounds(void **state)
{
	(void)state;
	static struct listen_set ls;
	memset(&ls, 0, sizeof ls);
	struct buf out;
	buf_init(&out, 1u << 20);
	struct mcp_msg m;
	char line[300], agent[16];
	/* one agent: LISTEN_PER_AGENT streams, whatever its connections */
	for (int i = 0; i <= LISTEN_PER_AGENT; i++) {
		snprintf(line, sizeof line, LISTEN_REQ("%d", "{\"toolsListChanged\":true}"), i);
		parse_req(line, &m);
		buf_reset(&out);
		int open = listen_request(&ls, &out, 100 + (uint64_t)i, "a", &m, LISTEN_TOOLS, "9.9");
		mcp_msg_free(&m);
		assert_int_equal(open, i < LISTEN_PER_AGENT);
	}
	assert_non_null(strstr((const char *)out.p, "\"code\":-32603"));
	assert_non_null(strstr((const char *)out.p, "this agent already holds 8 subscriptions/listen streams"));
	/* over stdio (no agent), the connection is the bound */
	for (int i = 0; i <= LISTEN_PER_AGENT; i++) {
		snprintf(line, sizeof line, LISTEN_REQ("%d", "{\"toolsListChanged\":true}"), i);
		parse_req(line, &m);
		buf_reset(&out);
		int open = listen_request(&ls, &out, 7, NULL, &m, LISTEN_TOOLS, "9.9");
		mcp_msg_free(&m);
		assert_int_equal(open, i < LISTEN_PER_AGENT);
	}
	assert_non_null(strstr((const char *)out.p, "this connection already holds 8"));
	/* and the whole table */
	int opened = 2 * LISTEN_PER_AGENT;
	for (int i = 0; opened < LISTEN_MAX + 1; i++, opened++) {
		snprintf(agent, sizeof agent, "x%d", i);
		snprintf(line, sizeof line, LISTEN_REQ("%d", "{\"toolsListChanged\":true}"), i);
		parse_req(line, &m);
		buf_reset(&out);
		int open = listen_request(&ls, &out, 1000 + (uint64_t)i, agent, &m, LISTEN_TOOLS, "9.9");
		mcp_msg_free(&m);
		assert_int_equal(open, opened < LISTEN_MAX);
	}
	assert_non_null(strstr((const char *)out.p, "the gateway holds 64 subscriptions/listen streams"));
	/* a stream that ends frees its place */
	listen_conn_gone(&ls, 100);
	parse_req(LISTEN_REQ("1", "{\"toolsListChanged\":true}"), &m);
	buf_reset(&out);
	assert_int_equal(listen_request(&ls, &out, 99, "a", &m, LISTEN_TOOLS, "9.9"), 1);
	mcp_msg_free(&m);
	for (uint64_t c = 0; c < 2000; c++)
		listen_conn_gone(&ls, c);
	buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_filter_parse),
	    cmocka_unit_test(test_honor_and_caps),
	    cmocka_unit_test(test_request_and_route),
	    cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
