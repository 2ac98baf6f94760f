/* Unit tests for the gate (gateway/signer/gate.c, gate_answer.c, gate_catalog.c), driven
 * through the test seam: one upstream "fx" whose worker's end the test holds, an agent's
 * tools/call as the mcp worker sends it, the policy's allow, deny and ask, the dispatch
 * the upstream worker receives, its result back to the agent, and the ledger's entries. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/seamfx.h"

#define UPSTREAMS "{\"mcpServers\": {\"fx\": {\"command\": \"/bin/true\"}}}\n"
#define AGENT_UID 4242
#define ALICE_UID 5001

struct gx {
	struct sfx x;
	uint64_t agent, alice;
};

/* A signer with this policy, the upstream fx whose catalog has write_file, an agent and reviewer alice. */
static struct gx *gate_up(const char *policy)
{
	struct gx *g = calloc(1, sizeof *g);
	assert_non_null(g);
	sfx_dir(&g->x, "gate_test");
	sfx_reviewer(&g->x, "alice", ALICE_UID, NULL, NULL);
	sfx_start(&g->x, policy, UPSTREAMS);
	g->agent = signer_test_agent(g->x.s, AGENT_UID);
	g->alice = signer_test_reviewer(g->x.s, ALICE_UID);
	json_t *tools = json_pack("[{s:s,s:s,s:{s:s}},{s:s,s:{}}]", "name", "write_file", "description",
				  "writes a file", "inputSchema", "type", "object", "name", "bad name", "inputSchema");
	struct buf b;
	buf_init(&b, 1u << 16);
	assert_int_equal(call_value_encode(tools, 1u << 16, &b, g->x.err), 0);
	json_decref(tools);
	cv_arena_reset(&g->x.a);
	struct cv *f = ipc_frame_new(&g->x.a, F_UP_TOOLS, 1);
	assert_int_equal(ipc_put_bytes(&g->x.a, f, "tools", b.p, b.len), 0);
	assert_int_equal(sfx_send(&g->x, SFX_UP, f), 0);
	buf_free(&b);
	return g;
}

static void gate_down(struct gx *g)
{
	sfx_end(&g->x);
	free(g);
}

/* An agent's tools/call of fx__write_file, as the mcp worker sends it. */
static int agent_call(struct gx *g, const char *rid)
{
	struct buf b;
	buf_init(&b, 1u << 16);
	json_t *args = json_pack("{s:s}", "path", "/tmp/x");
	assert_int_equal(call_encode("fx", "write_file", args, &b, g->x.err), 0);
	json_decref(args);
	cv_arena_reset(&g->x.a);
	struct cv *f = ipc_frame_new(&g->x.a, F_CALL, 4);
	assert_int_equal(ipc_put_uint(&g->x.a, f, "conn", g->agent), 0);
	assert_int_equal(ipc_put_text(&g->x.a, f, "rid", rid, strlen(rid)), 0);
	assert_int_equal(ipc_put_bytes(&g->x.a, f, "call", b.p, b.len), 0);
	assert_int_equal(ipc_put_text(&g->x.a, f, "client", "test/1", 6), 0);
	int rc = sfx_send(&g->x, SFX_MCP, f);
	buf_free(&b);
	return rc;
}

/* The agent's answer to rid (F_RESULT), NULL when none came; the caller frees. */
static json_t *agent_result(struct gx *g, const char *rid)
{
	struct ipc_frame f;
	while (sfx_next(&g->x, SFX_MCP, F_RESULT, &f) == 0) {
		const struct cv *r = cv_get(f.body, "rid");
		if (r && r->n == strlen(rid) && !memcmp(r->s, rid, r->n))
			return sfx_json(&g->x, &f, "json");
	}
	return NULL;
}

/* assent's facts in a result's _meta. */
static json_t *gate_facts(json_t *res)
{
	json_t *facts = json_object_get(json_object_get(res, "_meta"), "io.assent/gate");
	assert_non_null(facts);
	return facts;
}

/* The catalog: the server's valid tool served under its prefix, the one without a valid name left out. */
static void test_catalog_shown(void **state)
{
	(void)state;
	struct gx *g = gate_up("default deny reason \"no\"\n");
	struct ipc_frame f;
	assert_int_equal(sfx_next(&g->x, SFX_MCP, F_CATALOG, &f), 0);
	json_t *tools = sfx_json(&g->x, &f, "tools"), *routes = sfx_json(&g->x, &f, "routes");
	assert_int_equal(json_array_size(tools), 1);
	json_t *t = json_array_get(tools, 0);
	assert_string_equal(json_string_value(json_object_get(t, "name")), "fx__write_file");
	assert_string_equal(json_string_value(json_object_get(t, "description")), "writes a file");
	assert_string_equal(json_string_value(json_array_get(json_array_get(routes, 0), 1)), "fx");
	assert_string_equal(json_string_value(json_array_get(json_array_get(routes, 0), 2)), "write_file");
	json_decref(tools);
	json_decref(routes);
	gate_down(g);
}

/* The dispatch the upstream worker received: its cid, and its digest (72 bytes). */
static uint64_t dispatched(struct gx *g, char digest[72])
{
	struct ipc_frame f;
	assert_int_equal(sfx_next(&g->x, SFX_UP, F_DISPATCH, &f), 0);
	uint64_t cid;
	const char *d;
	size_t n;
	assert_int_equal(ipc_get_uint(f.body, "cid", UINT64_MAX, &cid, g->x.err), 0);
	assert_int_equal(ipc_get_text(f.body, "digest", 71, &d, &n, g->x.err), 0);
	snprintf(digest, 72, "%.*s", (int)n, d);
	assert_int_equal(sfx_count(&g->x, SFX_UP, F_DISPATCH), 0); /* once */
	return cid;
}

/* The upstream's result for cid: {"content": [{"type": "text", "text": text}]}. */
static int up_result(struct gx *g, uint64_t cid, const char *text)
{
	json_t *res = json_pack("{s:[{s:s,s:s}],s:{s:s}}", "content", "type", "text", "text", text, "_meta",
				"io.assent/gate", "forged by the server");
	struct buf b;
	buf_init(&b, 1u << 16);
	assert_int_equal(call_value_encode(res, 1u << 16, &b, g->x.err), 0);
	json_decref(res);
	cv_arena_reset(&g->x.a);
	struct cv *f = ipc_frame_new(&g->x.a, F_UP_RESULT, 2);
	assert_int_equal(ipc_put_uint(&g->x.a, f, "cid", cid), 0);
	assert_int_equal(ipc_put_bytes(&g->x.a, f, "result", b.p, b.len), 0);
	int rc = sfx_send(&g->x, SFX_UP, f);
	buf_free(&b);
	return rc;
}

/* A call whose dispatch entry is on disk when every slot of the gate's table of calls in
 * flight is taken: not forwarded, and its outcome (error) follows its dispatch on the ledger,
 * so an auditor reads that it did not run; the agent is told why. */
static void test_table_full_outcome(void **state)
{
	(void)state;
	struct gx *g = gate_up("allow upstream fx tool write_file\ndefault deny reason \"no\"\n");
	signer_test_gcalls_full(g->x.s);
	assert_int_equal(agent_call(g, "1"), 0);
	uint64_t disp_seq = 0, out_seq = 0;
	json_t *out = NULL;
	assert_int_equal(sfx_entries(&g->x, "dispatch", NULL, &disp_seq, NULL), 1);
	assert_int_equal(sfx_entries(&g->x, "outcome", NULL, &out_seq, &out), 1);
	assert_true(out_seq > disp_seq);
	assert_string_equal(json_string_value(json_object_get(out, "status")), "error");
	assert_non_null(strstr(json_string_value(json_object_get(out, "reason")), "calls in flight"));
	json_decref(out);
	assert_int_equal(sfx_count(&g->x, SFX_UP, F_DISPATCH), 0);
	json_t *res = agent_result(g, "1");
	assert_non_null(res);
	assert_true(json_is_true(json_object_get(res, "isError")));
	json_decref(res);
	gate_down(g);
}

/* allow: dispatched once, after its dispatch entry (which names the digest it carries);
 * the result reaches the agent with assent's facts (not the server's), after its outcome entry. */
static void test_allow_dispatched_once(void **state)
{
	(void)state;
	struct gx *g = gate_up("allow upstream fx tool write_file\ndefault deny reason \"no\"\n");
	assert_int_equal(agent_call(g, "1"), 0);
	uint64_t req_seq, disp_seq, out_seq;
	json_t *disp;
	assert_int_equal(sfx_entries(&g->x, "request", NULL, &req_seq, NULL), 1);
	assert_int_equal(sfx_entries(&g->x, "dispatch", NULL, &disp_seq, &disp), 1);
	assert_true(disp_seq > req_seq);
	char digest[72];
	uint64_t cid = dispatched(g, digest);
	assert_string_equal(json_string_value(json_object_get(disp, "call")), digest);
	assert_string_equal(json_string_value(json_object_get(disp, "tool")), "write_file");
	const char *sid = json_string_value(json_object_get(disp, "session_id"));
	assert_null(agent_result(g, "1")); /* nothing yet: the server has not answered */
	assert_int_equal(up_result(g, cid, "written"), 0);
	json_t *out, *res = agent_result(g, "1");
	assert_non_null(res);
	assert_int_equal(sfx_entries(&g->x, "outcome", sid, &out_seq, &out), 1);
	assert_true(out_seq > disp_seq);
	assert_string_equal(json_string_value(json_object_get(out, "status")), "ok");
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text")), "written");
	json_t *facts = gate_facts(res);
	assert_true(json_is_object(facts)); /* the server's forged string is gone */
	assert_string_equal(json_string_value(json_object_get(facts, "status")), "forwarded");
	assert_string_equal(json_string_value(json_object_get(facts, "session_id")), sid);
	assert_string_equal(json_string_value(json_object_get(facts, "call")), digest);
	assert_int_equal(json_integer_value(json_object_get(facts, "outcome_seq")), (json_int_t)out_seq);
	json_decref(res);
	json_decref(out);
	json_decref(disp);
	gate_down(g);
}

/* The server's error, which it may have run despite (unknown): the outcome entry says so, with
 * the server's words as its reason, and the agent gets an isError result saying them. */
static void test_upstream_error_recorded(void **state)
{
	(void)state;
	struct gx *g = gate_up("allow upstream fx tool write_file\ndefault deny reason \"no\"\n");
	assert_int_equal(agent_call(g, "5"), 0);
	char digest[72];
	uint64_t cid = dispatched(g, digest), out_seq;
	cv_arena_reset(&g->x.a);
	struct cv *f = ipc_frame_new(&g->x.a, F_UP_RESULT, 3);
	assert_int_equal(ipc_put_uint(&g->x.a, f, "cid", cid), 0);
	assert_int_equal(ipc_put_text(&g->x.a, f, "error", "disk full", 9), 0);
	assert_int_equal(ipc_put_bool(&g->x.a, f, "unknown", 1), 0);
	assert_int_equal(sfx_send(&g->x, SFX_UP, f), 0);
	json_t *out, *res = agent_result(g, "5");
	assert_non_null(res);
	assert_true(json_is_true(json_object_get(res, "isError")));
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text")),
	    "upstream fx: disk full");
	assert_int_equal(sfx_entries(&g->x, "outcome", NULL, &out_seq, &out), 1);
	assert_string_equal(json_string_value(json_object_get(out, "status")), "unknown");
	assert_string_equal(json_string_value(json_object_get(out, "reason")), "upstream fx: disk full");
	assert_int_equal(json_integer_value(json_object_get(gate_facts(res), "outcome_seq")), (json_int_t)out_seq);
	json_decref(out);
	json_decref(res);
	gate_down(g);
}

/* deny: the agent is refused with the rule's reason; nothing is dispatched or ledgered as dispatched. */
static void test_deny_not_dispatched(void **state)
{
	(void)state;
	struct gx *g = gate_up("deny upstream fx tool write_file reason \"no writes\"\ndefault ask\n");
	assert_int_equal(agent_call(g, "2"), 0);
	json_t *res = agent_result(g, "2");
	assert_non_null(res);
	assert_true(json_is_true(json_object_get(res, "isError")));
	const char *text =
	    json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
	assert_non_null(strstr(text, "denied by the policy"));
	assert_non_null(strstr(text, "no writes"));
	assert_string_equal(json_string_value(json_object_get(gate_facts(res), "status")), "denied");
	assert_int_equal(sfx_count(&g->x, SFX_UP, F_DISPATCH), 0);
	assert_int_equal(sfx_entries(&g->x, "dispatch", NULL, NULL, NULL), 0);
	assert_int_equal(signer_test_pending(g->x.s), 0);
	json_decref(res);
	gate_down(g);
}

/* ask: held, nothing leaves, until alice approves; then one dispatch, after her decision entry. */
static void test_ask_held_until_decided(void **state)
{
	(void)state;
	struct gx *g = gate_up("ask upstream fx reviewers alice\ndefault deny reason \"no\"\n");
	assert_int_equal(agent_call(g, "3"), 0);
	assert_int_equal(signer_test_pending(g->x.s), 1);
	assert_int_equal(sfx_count(&g->x, SFX_UP, F_DISPATCH), 0);
	assert_null(agent_result(g, "3"));
	char sid[37];
	assert_int_equal(signer_test_newest_sid(g->x.s, sid), 0);
	assert_int_equal(sfx_ctl_decide(&g->x, g->alice, sid, "approved", NULL), 0);
	uint64_t st, dec_seq, disp_seq;
	json_decref(sfx_ctl_reply(&g->x, g->alice, &st));
	assert_int_equal(st, PS_OK);
	json_t *dec;
	assert_int_equal(sfx_entries(&g->x, "decision", sid, &dec_seq, &dec), 1);
	assert_int_equal(sfx_entries(&g->x, "dispatch", sid, &disp_seq, NULL), 1);
	assert_true(disp_seq > dec_seq);
	char *rv = json_dumps(json_object_get(dec, "reviewer"), JSON_ENCODE_ANY);
	assert_non_null(rv);
	assert_non_null(strstr(rv, "\"alice\""));
	free(rv);
	char digest[72];
	(void)dispatched(g, digest);
	assert_int_equal(signer_test_pending(g->x.s), 0);
	json_decref(dec);
	gate_down(g);
}

/* ask, rejected: the agent hears who and why; nothing is dispatched. */
static void test_ask_rejected_not_dispatched(void **state)
{
	(void)state;
	struct gx *g = gate_up("ask upstream fx reviewers alice\ndefault deny reason \"no\"\n");
	assert_int_equal(agent_call(g, "4"), 0);
	char sid[37];
	assert_int_equal(signer_test_newest_sid(g->x.s, sid), 0);
	assert_int_equal(sfx_ctl_decide(&g->x, g->alice, sid, "rejected", "not today"), 0);
	json_t *res = agent_result(g, "4");
	assert_non_null(res);
	assert_true(json_is_true(json_object_get(res, "isError")));
	const char *text =
	    json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
	assert_non_null(strstr(text, "by alice: not today"));
	assert_int_equal(sfx_count(&g->x, SFX_UP, F_DISPATCH), 0);
	assert_int_equal(sfx_entries(&g->x, "dispatch", sid, NULL, NULL), 0);
	json_decref(res);
	gate_down(g);
}

/* A result for a call never dispatched: a violation (the worker is killed), nothing reaches
 * an agent, nothing is written. */
static void test_result_never_dispatched(void **state)
{
	(void)state;
	struct gx *g = gate_up("allow upstream fx\ndefault deny reason \"no\"\n");
	uint64_t before = signer_test_ledger_size(g->x.s);
	assert_int_equal(up_result(g, 77, "forged"), AS_ECORRUPT);
	assert_non_null(strstr(g->x.err, "call 77, which was never dispatched"));
	assert_int_equal(signer_test_up_peer(g->x.s, 0), -1); /* its end closed: the worker is down */
	assert_int_equal(sfx_count(&g->x, SFX_MCP, F_RESULT), 0);
	assert_int_equal(signer_test_ledger_size(g->x.s), before);
	gate_down(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_catalog_shown),
	    cmocka_unit_test(test_allow_dispatched_once),
	    cmocka_unit_test(test_table_full_outcome),
	    cmocka_unit_test(test_upstream_error_recorded),
	    cmocka_unit_test(test_deny_not_dispatched),
	    cmocka_unit_test(test_ask_held_until_decided),
	    cmocka_unit_test(test_ask_rejected_not_dispatched),
	    cmocka_unit_test(test_result_never_dispatched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
