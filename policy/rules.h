/* The policy module's own types, shared by its parser (parse.c, parse_cond.c) and its evaluator (eval.c);
 * nothing outside policy/ includes this (policy.h is the module's interface). */
#ifndef ASSENT_POLICY_RULES_H
#define ASSENT_POLICY_RULES_H

#include <regex.h>

#include "policy/policy.h"

enum cond_kind {
	C_TYPE,
	C_AUDIENCE,
	C_AGENT,
	C_UID,
	C_CLIENT,
	C_SUBJECT,
	C_SUBJECT_GIVEN,
	C_SUBJECT_COMPUTED,
	C_SUBJECT_ASSERTED,
	C_CONTEXT,
	C_MESSAGE,
	C_RISK,
	/* a gated call to an upstream server's tool (issue 15) */
	C_UPSTREAM,
	C_TOOL,
	C_ARGS,
	C_ANNOTATION,
};
enum op { OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE, OP_RE, OP_EXISTS };

struct cond {
	enum cond_kind k;
	enum op op;
	unsigned types; /* C_TYPE: bit per type */
	char *s;	/* a glob, a name or the value to compare with */
	long long n;	/* C_UID; C_RISK: the level */
	int numeric;	/* s is a number: v */
	double v;
	regex_t re;
	int has_re;
	unsigned col; /* where the value is written, for warnings */
	char *path[POL_PATH_MAX];
	size_t npath;
};

struct rule {
	unsigned line;
	int shadow, is_default;
	enum pol_action action;
	struct cond *conds;
	size_t nconds;
	struct pol_decision opts; /* the options, ready to copy into a decision */
	char *key;		  /* the conditions as written, for "can never match" */
};

struct policy {
	struct rule *rules;
	size_t n;
	int shadow_all;
	char digest[65];
};

extern const char *const pol_type_names[4]; /* C_TYPE's bits, in order */
extern const char *const pol_risk_names[4]; /* C_RISK's levels, in order */

/* s[0..n) with control bytes as '?', NUL-terminated in dst[cap]: for a diagnostic or a reason. */
void pol_printable(char *dst, size_t cap, const char *s, size_t n);

#endif
