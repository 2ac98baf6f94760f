/* The policy parser's files (parse.c: diagnostics, words, options, rules, the file; parse_cond.c:
 * a rule's conditions), what they share. Private to policy/: nothing else includes this. */
#ifndef ASSENT_POLICY_PARSE_INT_H
#define ASSENT_POLICY_PARSE_INT_H

#include <stddef.h>

#include "policy/rules.h"
#include "common/util.h"

/* ---- words of a line ---- */

struct word {
	char *s; /* unquoted, NUL-terminated (owned by the line buffer) */
	size_t n;
	unsigned col;
	int quoted;
};

/* ---- parsing ---- */

struct pstate {
	struct pol_msgs *m;
	unsigned line;
	struct word *w;
	int nw, i;
	int failed;
};

/* parse.c: the next word of the line, or NULL after "WHAT expected" (p->failed set). */
const struct word *pol_next(struct pstate *p, const char *what);
/* parse.c: an error at word x (p->failed set). */
void pol_bad(struct pstate *p, const struct word *x, const char *fmt, ...) AS_PRINTF(3, 4);
/* parse.c: whether s[0..n) is a name (1 to POL_NAME_MAX of [A-Za-z0-9._:/-]). */
int pol_is_name(const char *s, size_t n);
/* parse.c: x as an unquoted number from min to max. 0, or -1. */
int pol_parse_uint(const struct word *x, unsigned long long min, unsigned long long max, unsigned long long *out);
/* parse.c: a comma-separated list; each item checked by ok(). The count, 0 after a diagnostic. */
size_t pol_list(struct pstate *p, const struct word *x, char out[][POL_NAME_MAX + 1], int (*ok)(const char *, size_t),
		const char *what);

/* parse_cond.c: the condition that word k starts, into r->conds[r->nconds]. 0; -1 after a
 * diagnostic (the caller frees what it holds: pol_cond_free); 1 when k names no condition. */
int pol_condition(struct pstate *p, const struct word *k, struct rule *r);
/* parse_cond.c: what a condition holds, freed. */
void pol_cond_free(struct cond *c);

#endif
