/* Who may decide a request, and what a decision means: the rule of docs/review.md's "Who may
 * decide a request" and assent.policy(5) WHO MAY DECIDE, as a pure function of what the
 * signer measured and what the registry and the policy say. No I/O, no signer state, no
 * ledger: decide.c gathers the inputs, records the verdict and answers. */
#ifndef ASSENT_DECISION_H
#define ASSENT_DECISION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "gateway/state/registry.h"

#define DECISION_AGENTS 2 /* the agents behind one request: its credential's, its measured uid's */
#define DECISION_MSG_MAX 512

/* In the order the checks run: the first that fails is the verdict. */
enum decision_reason {
	DECISION_OK = 0,	   /* decide now: the entry, the token, the answer */
	DECISION_QUORUM_WAIT,	   /* one approval of a quorum: counted, the request stays pending */
	DECISION_NOT_NAMED,	   /* the policy names other reviewers (or groups the reviewer is not in) */
	DECISION_OWNER,		   /* the reviewer is the registered owner of the requesting agent */
	DECISION_SELF_SINGLE,	   /* from the daemon's own uid, and single-user mode is off */
	DECISION_SELF_POLICY,	   /* from the daemon's own uid, and the rule does not say same-user ok */
	DECISION_SAME_WEB,	   /* a web reviewer who is the requester, not accepted as same-user */
	DECISION_SAME_SINGLE,	   /* the requester on the terminal, and single-user mode is off */
	DECISION_SAME_POLICY,	   /* the requester on the terminal, and the rule does not say same-user ok */
	DECISION_CHANNEL,	   /* the rule does not take decisions from this channel */
	DECISION_NO_REASON,	   /* a rejection without a reason */
	DECISION_NO_TEXT,	   /* an answer without its text */
	DECISION_NO_OPTION,	   /* a selection of an option that does not exist */
	DECISION_WRONG_OUTCOME,	   /* an outcome this type of request cannot have */
	DECISION_APPROVED_ALREADY, /* this reviewer's approval already counts toward the quorum */
};

struct decision_in {
	/* the request */
	const char *sid;
	const char *type;	       /* approval | confirmation | input | selection */
	uid_t requester_uid;	       /* measured when it was made; (uid_t)-1: none */
	const struct pol_decision *pd; /* the policy's terms; NULL: no policy loaded */
	char *const *options;	       /* a selection's */
	size_t noptions;
	const char *input_default;		   /* an input's default answer; NULL: none */
	const char (*approvers)[REG_NAME_MAX + 1]; /* a quorum's approvals so far */
	size_t napprovers;
	/* who decides, as measured */
	const char *reviewer;
	int web;	    /* 1: the web; 0: the terminal (control socket) */
	uid_t reviewer_uid; /* on the terminal; (uid_t)-1 on the web */
	/* what they decide */
	const char *outcome; /* approved | rejected | answered | selected */
	const char *text;    /* may be NULL */
	uint64_t n;	     /* selected: the option, from 1 */
	/* the daemon */
	uid_t self_uid;
	int single_user;
	/* the registry's facts */
	const char *const *groups; /* the reviewer's groups */
	size_t ngroups;
	int reviewer_has_requester_uid;		   /* the requester's uid is one of the reviewer's registered uids */
	const char *agents[DECISION_AGENTS];	   /* the agents the request came from (NULL: none), */
	const char *agent_owners[DECISION_AGENTS]; /* and the reviewer each names as its owner (NULL: none) */
};

struct decision_verdict {
	enum decision_reason reason;
	const char *assurance; /* DECISION_OK / _QUORUM_WAIT: "reviewer" | "same-user" | "self-attested" */
	int approved;
	const char *response; /* what the agent is told: the text, the input's default or the option; NULL: none */
	const char *agent;    /* DECISION_OWNER: the agent whose owner the reviewer is */
};

/* Is reviewer one of the names, or in one of the "group:NAME" groups, a rule's
 * reviewers list holds (pd->nreviewers of them; none: any reviewer)? */
int decision_reviewer_named(const struct pol_decision *pd, const char *reviewer, const char *const *groups,
			    size_t ngroups);
/* The verdict on in (every pointer field of v points into in). */
void decision_make(const struct decision_in *in, struct decision_verdict *v);
/* The verdict on an input or selection answered by the requesting client's own user
 * (multi-round input, gateway/signer/mrtr.c): the answer's own rules only, assurance
 * self-attested; anything that would approve is refused. */
void decision_self_attested(const struct decision_in *in, struct decision_verdict *v);
/* A refusal: reason above DECISION_QUORUM_WAIT. */
int decision_refused(const struct decision_verdict *v);
/* What the reviewer is told of a refusal (""  for none), as the signer has always said it. */
void decision_message(const struct decision_in *in, const struct decision_verdict *v, char *out, size_t n);

#endif
