/* Unit tests for gateway/signer/decision: every rule of docs/review.md's "Who may decide a
 * request" and assent.policy(5) WHO MAY DECIDE, as a table of cases run through the pure
 * decision function, and the words each refusal has always had. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/signer/decision.h"

#define NOUID ((uid_t)-1)
#define REQUESTER 1000 /* the agent's uid, unless a case says otherwise */
#define REVIEWER 2000  /* the reviewer's uid on the terminal */
#define DAEMON 999     /* the daemon's own uid */

/* Zero fields take the defaults above: an approval from uid 1000, decided by alice on
 * the terminal as uid 2000, approved, no policy, no registry facts. */
struct tcase {
	const char *name;
	/* the request */
	const char *type;
	uid_t requester; /* 0: REQUESTER */
	int policy;	 /* 1: under a policy rule (line 7) with the terms below */
	const char *reviewers[4];
	unsigned channels, quorum;
	int same_ok;
	const char *approvers[3];
	const char *def; /* an input's default */
	/* who decides */
	const char *reviewer; /* NULL: alice */
	int web;
	uid_t ruid; /* 0: REVIEWER on the terminal; the web has none */
	const char *groups[3];
	int has_uid; /* the requester's uid is one of the reviewer's */
	const char *agents[2], *owners[2];
	/* the daemon */
	int single;
	/* the decision */
	const char *outcome, *text;
	uint64_t n;
	/* what must come of it */
	enum decision_reason want;
	const char *assurance; /* NULL: "reviewer" when accepted */
	int approved;
	const char *response;
	const char *agent; /* DECISION_OWNER */
};

static char *const options[] = {"red", "green", "blue"};

static size_t count(const char *const *v, size_t max)
{
	size_t n = 0;
	while (n < max && v[n])
		n++;
	return n;
}

static void build(const struct tcase *c, struct pol_decision *pd, char (*approvers)[REG_NAME_MAX + 1],
		  struct decision_in *in)
{
	memset(pd, 0, sizeof *pd);
	pd->action = POL_ASK;
	pd->line = 7;
	pd->quorum = c->quorum ? c->quorum : 1;
	pd->channels = c->channels;
	pd->same_user_ok = c->same_ok;
	pd->nreviewers = count(c->reviewers, 4);
	for (size_t k = 0; k < pd->nreviewers; k++)
		snprintf(pd->reviewers[k], sizeof pd->reviewers[k], "%s", c->reviewers[k]);
	size_t na = count(c->approvers, 3);
	for (size_t k = 0; k < na; k++)
		snprintf(approvers[k], REG_NAME_MAX + 1, "%s", c->approvers[k]);
	*in = (struct decision_in){
	    .sid = "fb_0123456789abcdef",
	    .type = c->type ? c->type : "approval",
	    .requester_uid = c->requester ? c->requester : REQUESTER,
	    .pd = c->policy ? pd : NULL,
	    .options = options,
	    .noptions = 3,
	    .input_default = c->def,
	    .approvers = (const char(*)[REG_NAME_MAX + 1]) approvers,
	    .napprovers = na,
	    .reviewer = c->reviewer ? c->reviewer : "alice",
	    .web = c->web,
	    .reviewer_uid = c->web    ? NOUID
			    : c->ruid ? c->ruid
				      : REVIEWER,
	    .outcome = c->outcome ? c->outcome : "approved",
	    .text = c->text,
	    .n = c->n,
	    .self_uid = DAEMON,
	    .single_user = c->single,
	    .groups = c->groups,
	    .ngroups = count(c->groups, 3),
	    .reviewer_has_requester_uid = c->has_uid,
	    .agents = {c->agents[0], c->agents[1]},
	    .agent_owners = {c->owners[0], c->owners[1]},
	};
}

static const struct tcase cases[] = {
    /* No rule in the way: any reviewer, recorded as a reviewer's decision. */
    {.name = "another person on the terminal", .want = DECISION_OK, .approved = 1},
    {.name = "another person on the web", .web = 1, .want = DECISION_OK, .approved = 1},
    /* (1) the reviewer's measured uid is the requester's */
    {.name = "(1) same uid on the terminal", .ruid = REQUESTER, .want = DECISION_SAME_SINGLE},
    {.name = "(1) same uid, single-user: same-user",
     .ruid = REQUESTER,
     .single = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    {.name = "(1) same uid, single-user, policy without same-user ok",
     .ruid = REQUESTER,
     .single = 1,
     .policy = 1,
     .want = DECISION_SAME_POLICY},
    {.name = "(1) same uid, single-user, policy with same-user ok",
     .ruid = REQUESTER,
     .single = 1,
     .policy = 1,
     .same_ok = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    {.name = "(1) same-user ok alone is not the daemon's opt-in",
     .ruid = REQUESTER,
     .policy = 1,
     .same_ok = 1,
     .want = DECISION_SAME_SINGLE},
    /* A rejection grants nothing: whoever the same-user or owner rule keeps from approving
     * may still end the request (issue 29, 3), recorded as same-user. */
    {.name = "(1) the requester may reject its own request",
     .ruid = REQUESTER,
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .assurance = "same-user",
     .response = "no"},
    {.name = "(1) the requester may reject under a policy without same-user ok",
     .ruid = REQUESTER,
     .single = 1,
     .policy = 1,
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .assurance = "same-user",
     .response = "no"},
    {.name = "(1) the requester the policy does not name may still reject",
     .ruid = REQUESTER,
     .policy = 1,
     .reviewers = {"bob"},
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .assurance = "same-user",
     .response = "no"},
    {.name = "(1) another reviewer the policy does not name may not reject",
     .policy = 1,
     .reviewers = {"bob"},
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_NOT_NAMED},
    {.name = "(1) a rejection on the web by the requester",
     .web = 1,
     .has_uid = 1,
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .assurance = "same-user",
     .response = "no"},
    {.name = "(1) a rejection still needs its reason",
     .ruid = REQUESTER,
     .outcome = "rejected",
     .want = DECISION_NO_REASON},
    {.name = "(1) the owner of the agent may reject",
     .agents = {"bot"},
     .owners = {"alice"},
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .response = "no"},
    /* (2) the requester's uid is one of the reviewer's registered uids */
    {.name = "(2) registered uid, terminal", .has_uid = 1, .want = DECISION_SAME_SINGLE},
    {.name = "(2) registered uid, web", .web = 1, .has_uid = 1, .want = DECISION_SAME_WEB},
    {.name = "(2) registered uid, web, single-user",
     .web = 1,
     .has_uid = 1,
     .single = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    {.name = "(2) registered uid, web, single-user, policy without same-user ok",
     .web = 1,
     .has_uid = 1,
     .single = 1,
     .policy = 1,
     .want = DECISION_SAME_WEB},
    {.name = "(2) registered uid, web, single-user, same-user ok",
     .web = 1,
     .has_uid = 1,
     .single = 1,
     .policy = 1,
     .same_ok = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    {.name = "(2) a requester without a measured uid is nobody's",
     .requester = NOUID,
     .web = 1,
     .has_uid = 1,
     .want = DECISION_OK,
     .approved = 1},
    {.name = "(2) a web reviewer without a uid decides others' requests", .web = 1, .want = DECISION_OK, .approved = 1},
    /* (3) the reviewer is the owner of the requesting agent, on any channel, never accepted */
    {.name = "(3) owner of the agent key, terminal",
     .agents = {"bot"},
     .owners = {"alice"},
     .want = DECISION_OWNER,
     .agent = "bot"},
    {.name = "(3) owner of the agent key, web",
     .web = 1,
     .agents = {"bot"},
     .owners = {"alice"},
     .want = DECISION_OWNER,
     .agent = "bot"},
    {.name = "(3) owner, single-user and same-user ok",
     .single = 1,
     .policy = 1,
     .same_ok = 1,
     .agents = {"bot"},
     .owners = {"alice"},
     .want = DECISION_OWNER,
     .agent = "bot"},
    {.name = "(3) owner of the agent registered for the measured uid",
     .agents = {"keybot", "uidbot"},
     .owners = {"bob", "alice"},
     .want = DECISION_OWNER,
     .agent = "uidbot"},
    {.name = "(3) owner of the uid's agent, key without owner",
     .agents = {"keybot", "uidbot"},
     .owners = {NULL, "alice"},
     .want = DECISION_OWNER,
     .agent = "uidbot"},
    {.name = "(3) someone else's agent",
     .agents = {"bot", "bot2"},
     .owners = {"bob", "carol"},
     .want = DECISION_OK,
     .approved = 1},
    {.name = "(3) an owner named for no agent counts for nothing",
     .agents = {NULL},
     .owners = {"alice"},
     .want = DECISION_OK,
     .approved = 1},
    /* (4) the daemon's own uid is everybody's own */
    {.name = "(4) daemon's uid, another reviewer", .requester = DAEMON, .want = DECISION_SELF_SINGLE},
    {.name = "(4) daemon's uid, on the web", .requester = DAEMON, .web = 1, .want = DECISION_SELF_SINGLE},
    {.name = "(4) daemon's uid: anyone may reject it",
     .requester = DAEMON,
     .web = 1,
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .assurance = "same-user",
     .response = "no"},
    {.name = "(4) daemon's uid, single-user",
     .requester = DAEMON,
     .single = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    {.name = "(4) daemon's uid, single-user, web",
     .requester = DAEMON,
     .single = 1,
     .web = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    {.name = "(4) daemon's uid, single-user, policy without same-user ok",
     .requester = DAEMON,
     .single = 1,
     .policy = 1,
     .want = DECISION_SELF_POLICY},
    {.name = "(4) daemon's uid, single-user, same-user ok",
     .requester = DAEMON,
     .single = 1,
     .policy = 1,
     .same_ok = 1,
     .want = DECISION_OK,
     .assurance = "same-user",
     .approved = 1},
    /* reviewers: the rule names who may decide */
    {.name = "reviewers: named", .policy = 1, .reviewers = {"bob", "alice"}, .want = DECISION_OK, .approved = 1},
    {.name = "reviewers: not named", .policy = 1, .reviewers = {"bob"}, .want = DECISION_NOT_NAMED},
    {.name = "reviewers: in a named group",
     .policy = 1,
     .reviewers = {"bob", "group:ops"},
     .groups = {"dev", "ops"},
     .want = DECISION_OK,
     .approved = 1},
    {.name = "reviewers: in another group",
     .policy = 1,
     .reviewers = {"group:ops"},
     .groups = {"dev"},
     .want = DECISION_NOT_NAMED},
    {.name = "reviewers: a group named like the reviewer",
     .policy = 1,
     .reviewers = {"group:alice"},
     .want = DECISION_NOT_NAMED},
    {.name = "reviewers: a name is not a group",
     .policy = 1,
     .reviewers = {"ops"},
     .groups = {"ops"},
     .want = DECISION_NOT_NAMED},
    {.name = "reviewers: checked before the owner",
     .policy = 1,
     .reviewers = {"bob"},
     .agents = {"bot"},
     .owners = {"alice"},
     .want = DECISION_NOT_NAMED},
    /* channels */
    {.name = "channels: terminal only, on the terminal",
     .policy = 1,
     .channels = POL_CH_TERMINAL,
     .want = DECISION_OK,
     .approved = 1},
    {.name = "channels: terminal only, on the web",
     .policy = 1,
     .channels = POL_CH_TERMINAL,
     .web = 1,
     .want = DECISION_CHANNEL},
    {.name = "channels: web only, on the terminal", .policy = 1, .channels = POL_CH_WEB, .want = DECISION_CHANNEL},
    {.name = "channels: client only leaves both out",
     .policy = 1,
     .channels = POL_CH_CLIENT,
     .web = 1,
     .want = DECISION_CHANNEL},
    {.name = "channels: after separation of duties",
     .policy = 1,
     .channels = POL_CH_WEB,
     .ruid = REQUESTER,
     .want = DECISION_SAME_SINGLE},
    /* what the outcome means */
    {.name = "confirmation approved", .type = "confirmation", .want = DECISION_OK, .approved = 1},
    {.name = "approval with a comment", .text = "ok", .want = DECISION_OK, .approved = 1, .response = "ok"},
    {.name = "rejection with a reason",
     .outcome = "rejected",
     .text = "too risky",
     .want = DECISION_OK,
     .response = "too risky"},
    {.name = "rejection without a reason", .outcome = "rejected", .want = DECISION_NO_REASON},
    {.name = "rejection with an empty reason", .outcome = "rejected", .text = "", .want = DECISION_NO_REASON},
    {.name = "input answered",
     .type = "input",
     .outcome = "answered",
     .text = "42",
     .want = DECISION_OK,
     .response = "42"},
    {.name = "input answered empty takes the default",
     .type = "input",
     .outcome = "answered",
     .text = "",
     .def = "7",
     .want = DECISION_OK,
     .response = "7"},
    {.name = "input answered empty, no default",
     .type = "input",
     .outcome = "answered",
     .text = "",
     .want = DECISION_OK,
     .response = ""},
    {.name = "input without the text", .type = "input", .outcome = "answered", .want = DECISION_NO_TEXT},
    {.name = "input approved", .type = "input", .want = DECISION_WRONG_OUTCOME},
    {.name = "selection of option 2",
     .type = "selection",
     .outcome = "selected",
     .n = 2,
     .want = DECISION_OK,
     .response = "green"},
    {.name = "selection of option 3",
     .type = "selection",
     .outcome = "selected",
     .n = 3,
     .want = DECISION_OK,
     .response = "blue"},
    {.name = "selection of option 0", .type = "selection", .outcome = "selected", .n = 0, .want = DECISION_NO_OPTION},
    {.name = "selection of option 4", .type = "selection", .outcome = "selected", .n = 4, .want = DECISION_NO_OPTION},
    {.name = "approval selected", .outcome = "selected", .n = 1, .want = DECISION_WRONG_OUTCOME},
    {.name = "approval answered", .outcome = "answered", .text = "x", .want = DECISION_WRONG_OUTCOME},
    {.name = "an unknown outcome", .outcome = "maybe", .want = DECISION_WRONG_OUTCOME},
    /* quorum: distinct people */
    {.name = "quorum 2, first approval", .policy = 1, .quorum = 2, .want = DECISION_QUORUM_WAIT, .approved = 1},
    {.name = "quorum 2, second person",
     .policy = 1,
     .quorum = 2,
     .approvers = {"bob"},
     .want = DECISION_OK,
     .approved = 1},
    {.name = "quorum 2, the same person again",
     .policy = 1,
     .quorum = 2,
     .approvers = {"alice"},
     .want = DECISION_APPROVED_ALREADY},
    {.name = "quorum 3, second of three",
     .policy = 1,
     .quorum = 3,
     .approvers = {"bob"},
     .want = DECISION_QUORUM_WAIT,
     .approved = 1},
    {.name = "quorum 3, the same person on the web",
     .policy = 1,
     .quorum = 3,
     .web = 1,
     .approvers = {"bob", "alice"},
     .want = DECISION_APPROVED_ALREADY},
    {.name = "quorum: a rejection decides at once",
     .policy = 1,
     .quorum = 3,
     .approvers = {"bob"},
     .outcome = "rejected",
     .text = "no",
     .want = DECISION_OK,
     .response = "no"},
    {.name = "quorum: the requester is not counted",
     .policy = 1,
     .quorum = 2,
     .ruid = REQUESTER,
     .want = DECISION_SAME_SINGLE},
};

static void test_table(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct tcase *c = &cases[i];
		struct pol_decision pd;
		char approvers[3][REG_NAME_MAX + 1];
		struct decision_in in;
		struct decision_verdict v;
		build(c, &pd, approvers, &in);
		decision_make(&in, &v);
		const char *as = c->assurance ? c->assurance : "reviewer";
		int refused = c->want > DECISION_QUORUM_WAIT;
		int ok = v.reason == c->want && decision_refused(&v) == refused && v.approved == c->approved &&
			 (refused || !strcmp(v.assurance, as)) &&
			 (c->response ? v.response && !strcmp(v.response, c->response)
				      : !v.response || (c->text && v.response == c->text)) &&
			 (c->want != DECISION_OWNER || (v.agent && !strcmp(v.agent, c->agent)));
		if (!ok) {
			print_error("case %zu '%s': reason %d (want %d), approved %d, assurance %s, response %s\n", i,
				    c->name, (int)v.reason, (int)c->want, v.approved, v.assurance ? v.assurance : "-",
				    v.response ? v.response : "-");
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* The words each refusal has always had (the integration tests match some of them). */
static void test_messages(void **state)
{
	(void)state;
	static const struct {
		struct tcase c;
		const char *msg;
	} m[] = {
	    {{.policy = 1, .reviewers = {"bob"}, .want = DECISION_NOT_NAMED},
	     "no pending request fb_0123456789abcdef that alice may decide (the policy names other reviewers, or it "
	     "was decided, timed out or cancelled)"},
	    {{.agents = {"bot"}, .owners = {"alice"}},
	     "refused: alice is the owner of agent bot, which asked for fb_0123456789abcdef; a decision must come "
	     "from someone else"},
	    {{.requester = DAEMON},
	     "refused: fb_0123456789abcdef came from uid 999, the daemon's own (it can read the keys and register "
	     "reviewers), so nobody can decide it as another person (single-user mode is off)"},
	    {{.requester = DAEMON, .single = 1, .policy = 1},
	     "refused: fb_0123456789abcdef came from uid 999, the daemon's own, and the policy (line 7) does not let "
	     "the requester's own uid decide (same-user ok)"},
	    {{.web = 1, .has_uid = 1}, "refused: alice asked for fb_0123456789abcdef (uid 1000) and cannot decide it"},
	    {{.has_uid = 1},
	     "refused: uid 2000 asked for fb_0123456789abcdef itself; a decision must come from another person "
	     "(single-user mode is off)"},
	    {{.ruid = REQUESTER, .single = 1, .policy = 1},
	     "refused: uid 1000 asked for fb_0123456789abcdef itself, and the policy (line 7) does not let the "
	     "requester's own uid decide (same-user ok)"},
	    {{.policy = 1, .channels = POL_CH_TERMINAL, .web = 1},
	     "refused: the policy (line 7) does not take decisions on fb_0123456789abcdef from the web"},
	    {{.policy = 1, .channels = POL_CH_WEB},
	     "refused: the policy (line 7) does not take decisions on fb_0123456789abcdef from the terminal"},
	    {{.outcome = "rejected"}, "a rejection needs a reason (-m TEXT)"},
	    {{.type = "input", .outcome = "answered"}, "answer needs the text"},
	    {{.type = "selection", .outcome = "selected", .n = 9}, "option 9 does not exist: choose 1 to 3"},
	    {{.type = "input"}, "a input request cannot be approved"},
	    {{.policy = 1, .quorum = 3, .approvers = {"alice"}},
	     "alice has approved fb_0123456789abcdef already; it needs 2 more distinct reviewers"},
	    {{.policy = 1, .quorum = 3, .approvers = {"bob", "alice"}},
	     "alice has approved fb_0123456789abcdef already; it needs 1 more distinct reviewer"},
	    {{.want = DECISION_OK}, ""},
	};
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		struct pol_decision pd;
		char approvers[3][REG_NAME_MAX + 1];
		struct decision_in in;
		struct decision_verdict v;
		char out[DECISION_MSG_MAX];
		build(&m[i].c, &pd, approvers, &in);
		decision_make(&in, &v);
		decision_message(&in, &v, out, sizeof out);
		assert_string_equal(out, m[i].msg);
	}
}

/* A rule's reviewers list, as the web page and `assent pending` use it to show a request. */
static void test_reviewer_named(void **state)
{
	(void)state;
	struct pol_decision pd = {.action = POL_ASK};
	const char *g[] = {"ops", "sre"};
	assert_true(decision_reviewer_named(NULL, "alice", NULL, 0)); /* no policy: anyone */
	assert_true(decision_reviewer_named(&pd, "alice", NULL, 0));  /* none named: anyone */
	snprintf(pd.reviewers[pd.nreviewers++], sizeof pd.reviewers[0], "group:sre");
	assert_true(decision_reviewer_named(&pd, "alice", g, 2));
	assert_false(decision_reviewer_named(&pd, "alice", g, 1)); /* only "ops" */
	assert_false(decision_reviewer_named(&pd, "sre", NULL, 0));
	assert_false(decision_reviewer_named(&pd, "group:sre", NULL, 0));
	snprintf(pd.reviewers[pd.nreviewers++], sizeof pd.reviewers[0], "alice");
	assert_true(decision_reviewer_named(&pd, "alice", NULL, 0));
	assert_false(decision_reviewer_named(&pd, "alic", NULL, 0));
	assert_false(decision_reviewer_named(&pd, "alicee", NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_messages),
	    cmocka_unit_test(test_reviewer_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
