/* Unit tests for who may decide a request (gateway/signer/decide.c over decision.c's rule),
 * driven through the test seam: an agent's approval request as the mcp worker sends it,
 * reviewers' decisions as the review worker forwards them from the control socket, what
 * each reviewer is answered, what the agent hears and what the ledger holds. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "tests/unit/seamfx.h"

#define AGENT_UID 4242
#define ALICE_UID 5001
#define BOB_UID 5002

struct dx {
	struct sfx x;
	uint64_t agent, alice, bob, carol; /* carol: the agent's own uid */
	char sid[37];
};

/* A signer with this policy; alice, bob and carol (registered with the agent's uid) on the terminal. */
static struct dx *decide_up(const char *policy)
{
	struct dx *d = calloc(1, sizeof *d);
	assert_non_null(d);
	sfx_dir(&d->x, "decide_test");
	sfx_reviewer(&d->x, "alice", ALICE_UID, NULL, NULL);
	sfx_reviewer(&d->x, "bob", BOB_UID, NULL, NULL);
	sfx_reviewer(&d->x, "carol", AGENT_UID, NULL, NULL);
	sfx_start(&d->x, policy, NULL);
	d->agent = signer_test_agent(d->x.s, AGENT_UID);
	d->alice = signer_test_reviewer(d->x.s, ALICE_UID);
	d->bob = signer_test_reviewer(d->x.s, BOB_UID);
	d->carol = signer_test_reviewer(d->x.s, AGENT_UID);
	return d;
}

static void decide_down(struct dx *d)
{
	sfx_end(&d->x);
	free(d);
}

/* The agent's approval request that waits for its answer (timeout in seconds); d->sid its id. */
static void ask(struct dx *d, uint64_t timeout)
{
	assert_int_equal(sfx_request(&d->x, d->agent, "1", "approval", "deploy?", timeout, 1), 0);
	assert_int_equal(signer_test_pending(d->x.s), 1);
	assert_int_equal(signer_test_newest_sid(d->x.s, d->sid), 0);
}

/* reviewer (connection conn) decides: the status they are answered; why: their error, if any. */
static uint64_t decide_as(struct dx *d, uint64_t conn, const char *outcome, const char *text, char why[512])
{
	assert_int_equal(sfx_ctl_decide(&d->x, conn, d->sid, outcome, text), 0);
	uint64_t st;
	json_t *j = sfx_ctl_reply(&d->x, conn, &st);
	snprintf(why, 512, "%s", json_string_value(json_object_get(j, "error")) ?: "");
	json_decref(j);
	return st;
}

/* The agent's answer to its request: approved or not. */
static int agent_approved(struct dx *d)
{
	struct ipc_frame f;
	assert_int_equal(sfx_next(&d->x, SFX_MCP, F_RESULT, &f), 0);
	json_t *j = sfx_json(&d->x, &f, "json");
	int yes = json_is_true(json_object_get(j, "approved"));
	json_decref(j);
	return yes;
}

/* The name in the request's decision entry, and its outcome and assurance; 0 when there is none. */
static int decision_of(struct dx *d, char name[32], char outcome[16], char assurance[16])
{
	json_t *e;
	if (sfx_entries(&d->x, "decision", d->sid, NULL, &e) != 1)
		return 0;
	snprintf(name, 32, "%s", json_string_value(json_object_get(json_object_get(e, "reviewer"), "name")) ?: "");
	snprintf(outcome, 16, "%s", json_string_value(json_object_get(e, "outcome")) ?: "");
	snprintf(assurance, 16, "%s", json_string_value(json_object_get(e, "assurance")) ?: "");
	json_decref(e);
	return 1;
}

/* The policy names alice: bob is answered as if there were no such request, and nothing is
 * written; alice's approval is the decision entry, naming her, and the agent's answer. */
static void test_only_named_reviewers(void **state)
{
	(void)state;
	struct dx *d = decide_up("ask type approval reviewers alice\ndefault deny reason \"no\"\n");
	ask(d, 600);
	uint64_t before = signer_test_ledger_size(d->x.s);
	char why[512], name[32], oc[16], as[16];
	assert_int_equal(decide_as(d, d->bob, "approved", NULL, why), PS_NOT_FOUND);
	assert_non_null(strstr(why, "that bob may decide"));
	assert_int_equal(signer_test_pending(d->x.s), 1);
	assert_int_equal(signer_test_ledger_size(d->x.s), before);
	assert_int_equal(decide_as(d, d->alice, "approved", NULL, why), PS_OK);
	assert_int_equal(signer_test_pending(d->x.s), 0);
	assert_int_equal(decision_of(d, name, oc, as), 1);
	assert_string_equal(name, "alice");
	assert_string_equal(oc, "approved");
	assert_string_equal(as, "reviewer");
	assert_true(agent_approved(d));
	decide_down(d);
}

/* quorum 2: alice's approval counts once (an approval entry, still pending); hers again is
 * refused; bob's makes the decision, whose entry lists both, bob last. */
static void test_quorum_two_distinct(void **state)
{
	(void)state;
	struct dx *d = decide_up("ask type approval quorum 2\ndefault deny reason \"no\"\n");
	ask(d, 600);
	char why[512], name[32], oc[16], as[16];
	assert_int_equal(decide_as(d, d->alice, "approved", NULL, why), PS_OK);
	assert_int_equal(signer_test_pending(d->x.s), 1);
	assert_int_equal(sfx_entries(&d->x, "approval", d->sid, NULL, NULL), 1);
	assert_int_equal(decision_of(d, name, oc, as), 0);
	assert_int_equal(decide_as(d, d->alice, "approved", NULL, why), PS_BAD_REQUEST);
	assert_int_equal(signer_test_pending(d->x.s), 1);
	assert_int_equal(sfx_entries(&d->x, "approval", d->sid, NULL, NULL), 1);
	assert_int_equal(decision_of(d, name, oc, as), 0);
	assert_int_equal(decide_as(d, d->bob, "approved", NULL, why), PS_OK);
	assert_int_equal(signer_test_pending(d->x.s), 0);
	json_t *e;
	assert_int_equal(sfx_entries(&d->x, "decision", d->sid, NULL, &e), 1);
	json_t *ap = json_object_get(e, "approvers");
	assert_int_equal(json_array_size(ap), 2);
	assert_string_equal(json_string_value(json_array_get(ap, 0)), "alice");
	assert_string_equal(json_string_value(json_array_get(ap, 1)), "bob");
	json_decref(e);
	assert_true(agent_approved(d));
	decide_down(d);
}

/* The requester's own uid (carol) may not approve: not without single-user mode, not in it
 * without the rule's same-user ok; her rejection ends the request all the same. */
static void test_self_approval_refused(void **state)
{
	(void)state;
	struct dx *d = decide_up("ask type approval\ndefault deny reason \"no\"\n");
	ask(d, 600);
	char why[512], name[32], oc[16], as[16];
	assert_int_equal(decide_as(d, d->carol, "approved", NULL, why), PS_FORBIDDEN);
	assert_non_null(strstr(why, "must come from another person"));
	signer_test_single_user(d->x.s, 1);
	assert_int_equal(decide_as(d, d->carol, "approved", NULL, why), PS_FORBIDDEN);
	assert_non_null(strstr(why, "same-user ok"));
	assert_int_equal(signer_test_pending(d->x.s), 1);
	assert_int_equal(decision_of(d, name, oc, as), 0);
	assert_int_equal(decide_as(d, d->carol, "rejected", "changed my mind", why), PS_OK);
	assert_int_equal(decision_of(d, name, oc, as), 1);
	assert_string_equal(name, "carol");
	assert_string_equal(oc, "rejected");
	assert_string_equal(as, "same-user");
	assert_false(agent_approved(d));
	decide_down(d);
}

/* With single-user mode and the rule's same-user ok, the requester's approval counts, as same-user. */
static void test_self_approval_same_user_ok(void **state)
{
	(void)state;
	struct dx *d = decide_up("ask type approval same-user ok\ndefault deny reason \"no\"\n");
	signer_test_single_user(d->x.s, 1);
	ask(d, 600);
	char why[512], name[32], oc[16], as[16];
	assert_int_equal(decide_as(d, d->carol, "approved", NULL, why), PS_OK);
	assert_int_equal(decision_of(d, name, oc, as), 1);
	assert_string_equal(name, "carol");
	assert_string_equal(as, "same-user");
	assert_true(agent_approved(d));
	decide_down(d);
}

/* Once the deadline has passed (the request's own timeout of 1 s), the request is timed out
 * (a `timeout` entry, the agent told) and a decision finds nothing to decide. */
static void test_decision_after_deadline_refused(void **state)
{
	(void)state;
	struct dx *d = decide_up("ask type approval\ndefault deny reason \"no\"\n");
	ask(d, 1);
	for (int i = 0; i < 100 && signer_test_pending(d->x.s); i++) { /* each frame ends a turn: expire() */
		nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
		cv_arena_reset(&d->x.a);
		struct cv *f = ipc_frame_new(&d->x.a, F_LIST, 2);
		assert_int_equal(ipc_put_uint(&d->x.a, f, "conn", d->agent), 0);
		assert_int_equal(ipc_put_text(&d->x.a, f, "rid", "2", 1), 0);
		assert_int_equal(sfx_send(&d->x, SFX_MCP, f), 0);
	}
	assert_int_equal(signer_test_pending(d->x.s), 0);
	assert_int_equal(sfx_entries(&d->x, "timeout", d->sid, NULL, NULL), 1);
	char why[512], name[32], oc[16], as[16];
	assert_int_equal(decide_as(d, d->alice, "approved", NULL, why), PS_NOT_FOUND);
	assert_non_null(strstr(why, "no pending request"));
	assert_int_equal(decision_of(d, name, oc, as), 0);
	assert_false(agent_approved(d));
	decide_down(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_only_named_reviewers),
	    cmocka_unit_test(test_quorum_two_distinct),
	    cmocka_unit_test(test_self_approval_refused),
	    cmocka_unit_test(test_self_approval_same_user_ok),
	    cmocka_unit_test(test_decision_after_deadline_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
