/* The policy language (assent.policy(5)): a line-oriented rule file read top to
 * bottom, first match wins, an explicit `default` last. Parsing and evaluation are
 * pure (no I/O): the signer loads files, the CLI checks and tests them, and both
 * are fuzzed. */
#ifndef ASSENT_POLICY_H
#define ASSENT_POLICY_H

#include <jansson.h>
#include <stddef.h>

#define POL_FILE_MAX (256u << 10) /* bytes of source */
#define POL_RULES_MAX 4096
#define POL_REGEX_MAX 256 /* bytes of one regular expression */
#define POL_WORDS_MAX 128 /* words on one line */
#define POL_PATH_MAX 16	  /* keys in a context path */
#define POL_LIST_MAX 16	  /* items of a list (types, reviewers, channels) */
#define POL_NAME_MAX 128
#define POL_REASON_MAX 256
#define POL_MSGS_MAX 32
/* The audience of a request that names none, and of its token: what an allow rule
 * without an audience condition (or token-audience) may issue a token for. */
#define POL_DEFAULT_AUDIENCE "assent"

#define POL_MSG_MAX 400
/* One diagnostic: an error, or a warning (a rule that can never match). */
struct pol_msg {
	unsigned line, col; /* 1-based; col 0 when the whole line is meant */
	int warning;
	char text[POL_REGEX_MAX + 1]; /* the offending text, printable (a whole regular expression fits) */
	char msg[POL_MSG_MAX + 1];    /* the longest, the list of words a rule may hold, fits whole */
};
struct pol_msgs {
	struct pol_msg m[POL_MSGS_MAX];
	size_t n, dropped;
	size_t errors, warnings;
};

enum pol_action { POL_ALLOW = 0, POL_DENY, POL_ASK };
enum { POL_CH_TERMINAL = 1, POL_CH_WEB = 2, POL_CH_CLIENT = 4 };

struct policy;

/* Parse src (len bytes, at most POL_FILE_MAX). 0 with *out, or AS_EINVAL with every
 * error (up to POL_MSGS_MAX) in msgs and *out NULL: a policy with an error is never
 * half loaded. Warnings come with success too. */
int policy_parse(const char *src, size_t len, struct policy **out, struct pol_msgs *msgs);
void policy_free(struct policy *p);
size_t policy_nrules(const struct policy *p);
/* SHA-256 of the source, lowercase hex: decisions cite it. */
const char *policy_digest(const struct policy *p);

/* What a rule sees of a request. Any pointer may be NULL (absent). */
struct pol_request {
	const char *type, *audience, *message;
	const char *agent;  /* the registered agent its API key names (HTTP) */
	long long uid;	    /* the measured uid of a unix peer, -1 when none */
	const char *client; /* the client name it declared (never trusted) */
	const json_t *context;
	size_t nsubjects;
	const char *const *subject_names;
	const int *subject_computed; /* 1: the gateway hashed the bytes; 0: asserted */
	/* a gated call to an upstream's tool: its server, the tool, the call's arguments, and
	 * the annotations the server declared for the tool (POL_ANN_*: its word, not a fact) */
	const char *upstream, *tool;
	const json_t *args;
	unsigned annotations;
};
enum { POL_ANN_READONLY = 1, POL_ANN_DESTRUCTIVE = 2, POL_ANN_IDEMPOTENT = 4, POL_ANN_OPENWORLD = 8 };

struct pol_decision {
	enum pol_action action;
	unsigned line;			 /* the rule that decided; 0: none matched, impossible with a default */
	int by_default;			 /* the `default` line decided */
	int on_declared;		 /* the deciding rule matched the client name the agent declared (not proven) */
	int on_annotation;		 /* it matched a tool annotation, as the upstream declared it (not proven) */
	char reason[POL_REASON_MAX + 1]; /* deny */
	/* ask */
	char reviewers[POL_LIST_MAX][POL_NAME_MAX + 1]; /* names, or "group:NAME"; none: any reviewer */
	size_t nreviewers;
	unsigned quorum;		       /* distinct reviewers (people), >= 1 */
	unsigned deadline_s;		       /* 0: the daemon's FEEDBACK_TIMEOUT_SECONDS */
	int timeout_denies;		       /* on-timeout deny: a passed deadline is a denial, not a plain timeout */
	unsigned token_ttl_s;		       /* 0: the default lifetime */
	char token_audience[POL_NAME_MAX + 1]; /* "": the request's */
	unsigned channels;		       /* POL_CH_*; 0: every channel */
	int same_user_ok;		       /* same-user decisions count (still subject to the daemon's opt-in) */
	int passkey; /* assurance passkey: approved only with the reviewer's WebAuthn assertion (page only) */
	/* gated calls (issue 15): record calls: an allowed call leaves no ledger entry, only its
	 * call record (reads, so that read-heavy agents are not bound by fsync); token yes: an
	 * approved call's result carries a token for it */
	int record_calls, call_token;
	/* shadow: a rule in shadow mode (or a shadow policy) matched first: what it would
	 * have decided is recorded, and a person is asked all the same */
	int shadowed;
	enum pol_action shadow_action;
	unsigned shadow_line;
};

/* Features a policy uses that its host may not enforce yet: the first rule (line)
 * using each. A host refuses to load a policy it cannot enforce in full. */
enum { POL_USES_QUORUM = 1, POL_USES_CHANNELS = 2, POL_USES_SAME_USER = 4, POL_USES_PASSKEY = 8 };
unsigned policy_uses(const struct policy *p, unsigned mask, unsigned *first_line);

/* A request from JSON shaped like request_feedback's arguments, plus "agent", "uid"
 * and "client" for who asks (assent policy test; the fuzz harness), or a gated call:
 * "upstream", "tool", "arguments", "annotations" ({readOnlyHint, destructiveHint,
 * idempotentHint, openWorldHint} as the server declared them). Strings point into j;
 * names and computed hold up to 16 subjects (a content = computed). */
void pol_request_from_json(const json_t *j, struct pol_request *r, const char *names[16], int computed[16]);

/* Evaluate: first matching rule wins. Never fails: a policy always has a default.
 * An allow rule that names no audience (no audience condition, no token-audience)
 * allows the default audience only: for a request naming another audience it
 * decides deny, with a reason naming both (no token says more than a rule said). */
void policy_eval(const struct policy *p, const struct pol_request *r, struct pol_decision *d);

const char *pol_action_name(enum pol_action a);

/* 0 when the POSIX extended regular expression s[0..n) passes the policy's cost guard (no
 * stacked or nested repetition, counts bounded, no back-references, at most POL_REGEX_MAX
 * bytes) and compiles; else AS_EINVAL with err (AS_ERRLEN) saying why. For other callers that
 * take operators' expressions (the call records' redaction patterns). */
int pol_regex_check(const char *s, size_t n, char *err);

/* Whether the regular expression s[0..n) (one that passed pol_regex_check) has a branch anchored
 * at one end of the string only: 1 at its start (^, \`, without $ or \'), 2 at its end, 0 when
 * every branch is anchored at both ends or at neither. A rule that allows on ^SELECT allows
 * "SELECT 1; DROP TABLE t" too: `assent policy check` warns about such an allow rule. */
int pol_regex_one_end(const char *s, size_t n);

#endif
