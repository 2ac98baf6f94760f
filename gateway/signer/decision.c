/* Who may decide a request, and what the decision means (decision.h): pure, so that
 * every rule of "Who may decide a request" has a unit test (tests/unit/decision_test.c). */
#include "gateway/signer/decision.h"

#include <stdio.h>
#include <string.h>

int decision_reviewer_named(const struct pol_decision *pd, const char *reviewer, const char *const *groups,
			    size_t ngroups)
{
	if (!pd || !pd->nreviewers)
		return 1;
	for (size_t k = 0; k < pd->nreviewers; k++) {
		const char *want = pd->reviewers[k];
		if (strncmp(want, "group:", 6) != 0) {
			if (!strcmp(want, reviewer))
				return 1;
			continue;
		}
		for (size_t i = 0; i < ngroups; i++)
			if (groups[i] && !strcmp(groups[i], want + 6))
				return 1;
	}
	return 0;
}

/* The owner an agent names (assent agent add --owner) never decides its requests, on
 * any channel: not even in single-user mode. */
static int owner_rule(const struct decision_in *in, struct decision_verdict *v)
{
	for (size_t i = 0; i < DECISION_AGENTS; i++) {
		if (in->agents[i] && in->agent_owners[i] && !strcmp(in->agent_owners[i], in->reviewer)) {
			v->agent = in->agents[i];
			return DECISION_OWNER;
		}
	}
	return DECISION_OK;
}

/* Separation of duties: the requester's uid is one person whatever channel they decide
 * on: measured (the terminal), or one of the reviewer's registered uids (either). A
 * request from the daemon's own uid is everybody's: that uid reads the keys and writes
 * the registry, so it could have registered any reviewer for itself. Same-user needs
 * the daemon's single-user mode and, under a policy, the rule's same-user ok. */
static int same_user_rule(const struct decision_in *in, struct decision_verdict *v)
{
	uid_t ru = in->requester_uid;
	int self = ru != (uid_t)-1 && ru == in->self_uid;
	int same = self || (in->reviewer_uid != (uid_t)-1 && in->reviewer_uid == ru) ||
		   (ru != (uid_t)-1 && in->reviewer_has_requester_uid);
	int rule_says_no = in->pd && !in->pd->same_user_ok;
	if (self && !in->single_user)
		return DECISION_SELF_SINGLE;
	if (self && rule_says_no)
		return DECISION_SELF_POLICY;
	if (!same)
		return DECISION_OK;
	if (in->web && (!in->single_user || rule_says_no))
		return DECISION_SAME_WEB;
	if (!in->single_user)
		return DECISION_SAME_SINGLE;
	if (rule_says_no) /* with a policy, the daemon's opt-in alone is not enough */
		return DECISION_SAME_POLICY;
	v->assurance = "same-user";
	return DECISION_OK;
}

/* A rejection the owner or same-user rule refused, from someone the policy names (or
 * the requester itself, whom it need not name): let it through. */
static int rejecting_own(const struct decision_in *in, struct decision_verdict *v)
{
	if (strcmp(in->outcome, "rejected") != 0)
		return 0;
	int same = in->requester_uid != (uid_t)-1 &&
		   ((in->reviewer_uid != (uid_t)-1 && in->reviewer_uid == in->requester_uid) ||
		    in->reviewer_has_requester_uid);
	if (v->reason == DECISION_NOT_NAMED)
		return same ? (v->assurance = "same-user", 1) : 0;
	if (v->reason >= DECISION_SELF_SINGLE && v->reason <= DECISION_SAME_POLICY) {
		v->assurance = "same-user";
		return 1;
	}
	return v->reason == DECISION_OWNER;
}

/* What the outcome means for this type of request, and what the agent is told. */
static int answer_rule(const struct decision_in *in, struct decision_verdict *v)
{
	const char *t = in->type, *oc = in->outcome;
	int yesno = !strcmp(t, "approval") || !strcmp(t, "confirmation") || !strcmp(t, "call"); /* call: the gate */
	v->response = in->text;
	if (!strcmp(oc, "approved") && yesno) {
		v->approved = 1;
	} else if (!strcmp(oc, "rejected")) {
		if (!in->text || !*in->text)
			return DECISION_NO_REASON;
	} else if (!strcmp(oc, "answered") && !strcmp(t, "input")) {
		if (!in->text)
			return DECISION_NO_TEXT;
		if (!*in->text && in->input_default)
			v->response = in->input_default;
	} else if (!strcmp(oc, "selected") && !strcmp(t, "selection")) {
		if (in->n < 1 || in->n > in->noptions)
			return DECISION_NO_OPTION;
		v->response = in->options[in->n - 1];
	} else {
		return DECISION_WRONG_OUTCOME;
	}
	return DECISION_OK;
}

/* A quorum counts people: each reviewer once, whatever channel they use. */
static int quorum_rule(const struct decision_in *in, const struct decision_verdict *v)
{
	if (!v->approved || !in->pd || in->pd->quorum <= 1)
		return DECISION_OK;
	for (size_t k = 0; k < in->napprovers; k++)
		if (!strcmp(in->approvers[k], in->reviewer))
			return DECISION_APPROVED_ALREADY;
	if (in->napprovers + 1 < in->pd->quorum && in->napprovers < 16)
		return DECISION_QUORUM_WAIT;
	return DECISION_OK;
}

void decision_make(const struct decision_in *in, struct decision_verdict *v)
{
	*v = (struct decision_verdict){.reason = DECISION_OK, .assurance = "reviewer"};
	const struct pol_decision *pd = in->pd;
	/* A reviewer outside the rule's set is not shown the request either: they learn no more here. */
	if (!decision_reviewer_named(pd, in->reviewer, in->groups, in->ngroups))
		v->reason = DECISION_NOT_NAMED;
	if (!v->reason)
		v->reason = owner_rule(in, v);
	if (!v->reason)
		v->reason = same_user_rule(in, v);
	/* A rejection grants nothing: the requester, or the agent's owner, may always end a
	 * request they may not approve, and the agent hears at once instead of waiting out
	 * the deadline. It is recorded as what it is (assurance same-user, or the owner). */
	if (rejecting_own(in, v))
		v->reason = DECISION_OK;
	/* The terminal (the control socket) and the web are channels; a rule may leave one out. */
	if (!v->reason && pd && pd->channels && !(pd->channels & (in->web ? POL_CH_WEB : POL_CH_TERMINAL)))
		v->reason = DECISION_CHANNEL;
	if (!v->reason)
		v->reason = answer_rule(in, v);
	if (!v->reason)
		v->reason = quorum_rule(in, v);
	if (decision_refused(v)) {
		v->approved = 0;
		v->response = NULL;
	}
}

void decision_self_attested(const struct decision_in *in, struct decision_verdict *v)
{
	*v = (struct decision_verdict){.reason = DECISION_OK, .assurance = "self-attested"};
	/* Only an answer the requester may give itself: never an approval (nor a confirmation). */
	if (strcmp(in->type, "input") && strcmp(in->type, "selection"))
		v->reason = DECISION_WRONG_OUTCOME;
	if (!v->reason)
		v->reason = answer_rule(in, v);
	if (!v->reason && v->approved)
		v->reason = DECISION_WRONG_OUTCOME;
	if (decision_refused(v)) {
		v->approved = 0;
		v->response = NULL;
	}
}

int decision_refused(const struct decision_verdict *v)
{
	return v->reason > DECISION_QUORUM_WAIT;
}

/* The wording of the refusals that name who decides. */
static void who_message(const struct decision_in *in, const struct decision_verdict *v, char *out, size_t n)
{
	unsigned ru = (unsigned)in->requester_uid, cu = (unsigned)in->reviewer_uid, line = in->pd ? in->pd->line : 0;
	switch (v->reason) {
	case DECISION_NOT_NAMED:
		snprintf(out, n,
			 "no pending request %s that %s may decide (the policy names other reviewers, or it was "
			 "decided, timed out or cancelled)",
			 in->sid, in->reviewer);
		break;
	case DECISION_OWNER:
		snprintf(out, n,
			 "refused: %s is the owner of agent %s, which asked for %s; a decision must come from "
			 "someone else",
			 in->reviewer, v->agent, in->sid);
		break;
	case DECISION_SELF_SINGLE:
		snprintf(out, n,
			 "refused: %s came from uid %u, the daemon's own (it can read the keys and register "
			 "reviewers), so nobody can decide it as another person (single-user mode is off)",
			 in->sid, ru);
		break;
	case DECISION_SELF_POLICY:
		snprintf(out, n,
			 "refused: %s came from uid %u, the daemon's own, and the policy (line %u) does not let "
			 "the requester's own uid decide (same-user ok)",
			 in->sid, ru, line);
		break;
	case DECISION_SAME_WEB:
		snprintf(out, n, "refused: %s asked for %s (uid %u) and cannot decide it", in->reviewer, in->sid, ru);
		break;
	case DECISION_SAME_SINGLE:
		snprintf(out, n,
			 "refused: uid %u asked for %s itself; a decision must come from another person "
			 "(single-user mode is off)",
			 cu, in->sid);
		break;
	case DECISION_SAME_POLICY:
		snprintf(out, n,
			 "refused: uid %u asked for %s itself, and the policy (line %u) does not let the "
			 "requester's own uid decide (same-user ok)",
			 cu, in->sid, line);
		break;
	default:
		snprintf(out, n, "%s", "");
	}
}

void decision_message(const struct decision_in *in, const struct decision_verdict *v, char *out, size_t n)
{
	size_t left = in->pd && in->pd->quorum > in->napprovers ? in->pd->quorum - in->napprovers : 0;
	switch (v->reason) {
	case DECISION_CHANNEL:
		snprintf(out, n, "refused: the policy (line %u) does not take decisions on %s from the %s",
			 in->pd ? in->pd->line : 0, in->sid, in->web ? "web" : "terminal");
		break;
	case DECISION_NO_REASON:
		snprintf(out, n, "%s", "a rejection needs a reason (-m TEXT)");
		break;
	case DECISION_NO_TEXT:
		snprintf(out, n, "%s", "answer needs the text");
		break;
	case DECISION_NO_OPTION:
		snprintf(out, n, "option %llu does not exist: choose 1 to %zu", (unsigned long long)in->n,
			 in->noptions);
		break;
	case DECISION_WRONG_OUTCOME:
		snprintf(out, n, "a %s request cannot be %s", in->type, in->outcome);
		break;
	case DECISION_APPROVED_ALREADY:
		snprintf(out, n, "%s has approved %s already; it needs %zu more distinct reviewer%s", in->reviewer,
			 in->sid, left, left == 1 ? "" : "s");
		break;
	default:
		who_message(in, v, out, n);
	}
}
