/* Exactly-once under kill -9 at every step of a gated call's two ledger commits (issue 33):
 * the first holds its request, its decision and its dispatch (before the call leaves), the
 * second its outcome (before the agent hears). A child runs the signer through its test seam
 * and is killed at one step of one commit's write-ahead record (ledger_wal_hook); a signer
 * restarted over the same state must then never send the call again, and the ledger must
 * hold, for a call with a dispatch entry, exactly one outcome: the server's when that commit
 * was durable, else "unknown". */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ledger/ledger.h"
#include "tests/unit/crashhook.h"
#include "tests/unit/seamfx.h"

#define UPSTREAMS "{\"mcpServers\": {\"fx\": {\"command\": \"/bin/true\"}}}\n"
#define POLICY "allow upstream fx tool write_file\ndefault deny reason \"no\"\n"
#define AGENT_UID 4242

/* The upstream's catalog, as its worker sends it: write_file. */
static void catalog(struct sfx *x)
{
	json_t *tools = json_pack("[{s:s,s:{s:s}}]", "name", "write_file", "inputSchema", "type", "object");
	struct buf b;
	buf_init(&b, 1u << 16);
	assert_int_equal(call_value_encode(tools, 1u << 16, &b, x->err), 0);
	json_decref(tools);
	cv_arena_reset(&x->a);
	struct cv *f = ipc_frame_new(&x->a, F_UP_TOOLS, 1);
	assert_int_equal(ipc_put_bytes(&x->a, f, "tools", b.p, b.len), 0);
	assert_int_equal(sfx_send(x, SFX_UP, f), 0);
	buf_free(&b);
}

static void agent_call(struct sfx *x, uint64_t agent)
{
	struct buf b;
	buf_init(&b, 1u << 16);
	json_t *args = json_pack("{s:s}", "path", "/tmp/x");
	assert_int_equal(call_encode("fx", "write_file", args, &b, x->err), 0);
	json_decref(args);
	cv_arena_reset(&x->a);
	struct cv *f = ipc_frame_new(&x->a, F_CALL, 4);
	assert_int_equal(ipc_put_uint(&x->a, f, "conn", agent), 0);
	assert_int_equal(ipc_put_text(&x->a, f, "rid", "1", 1), 0);
	assert_int_equal(ipc_put_bytes(&x->a, f, "call", b.p, b.len), 0);
	assert_int_equal(ipc_put_text(&x->a, f, "client", "test/1", 6), 0);
	assert_int_equal(sfx_send(x, SFX_MCP, f), 0);
	buf_free(&b);
}

/* The child: the call, its dispatch answered by the server; killed on the way (else exit 0). */
static void child(struct sfx *x, const char *step, int nth)
{
	sfx_start(x, POLICY, UPSTREAMS);
	catalog(x);
	uint64_t agent = signer_test_agent(x->s, AGENT_UID);
	crash_at(step, nth);
	agent_call(x, agent);
	struct ipc_frame f;
	uint64_t cid = 0;
	if (sfx_next(x, SFX_UP, F_DISPATCH, &f) != 0 || ipc_get_uint(f.body, "cid", UINT64_MAX, &cid, x->err) != 0)
		_exit(3);
	json_t *res = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", "written");
	struct buf b;
	buf_init(&b, 1u << 16);
	if (call_value_encode(res, 1u << 16, &b, x->err) != 0)
		_exit(4);
	cv_arena_reset(&x->a);
	struct cv *r = ipc_frame_new(&x->a, F_UP_RESULT, 2);
	if (ipc_put_uint(&x->a, r, "cid", cid) != 0 || ipc_put_bytes(&x->a, r, "result", b.p, b.len) != 0)
		_exit(5);
	(void)sfx_send(x, SFX_UP, r);
	_exit(0);
}

static void one(const char *step, int nth)
{
	struct sfx x;
	sfx_dir(&x, "gate_crash");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(&x, step, nth);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		fail_msg("%s #%d: the child was not killed there (status %d)", step, nth, st);
	sfx_start(&x, POLICY, UPSTREAMS); /* the restart: restore_pending ends what was left */
	catalog(&x);
	uint64_t seq;
	json_t *out = NULL;
	int dispatches = sfx_entries(&x, "dispatch", NULL, &seq, NULL);
	int decisions = sfx_entries(&x, "decision", NULL, &seq, NULL);
	int outcomes = sfx_entries(&x, "outcome", NULL, &seq, &out);
	const char *status = out ? json_string_value(json_object_get(out, "status")) : "";
	/* one commit: request, decision and dispatch are all there or none of them */
	assert_int_equal(dispatches, decisions);
	assert_true(dispatches <= 1);
	if (dispatches == 1 && outcomes != 1)
		fail_msg("%s #%d: a dispatched call has %d outcome entries", step, nth, outcomes);
	if (dispatches == 0)
		assert_int_equal(outcomes, 0);
	/* the server answered in the second commit: its outcome when that commit was durable */
	if (nth == 2 && !strcmp(step, "log-synced"))
		assert_string_equal(status, "ok");
	if (nth == 1 && dispatches == 1)
		assert_string_equal(status, "unknown");
	assert_int_equal(sfx_count(&x, SFX_UP, F_DISPATCH), 0); /* never sent again */
	json_decref(out);
	sfx_end(&x);
}

static void test_kill_at_each_step(void **unused)
{
	(void)unused;
	static const char *steps[] = {"log", "log-half", "log-written", "log-synced"};
	for (int nth = 1; nth <= 2; nth++)
		for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
			one(steps[i], nth);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kill_at_each_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
