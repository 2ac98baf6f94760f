/* The policy language's parser, a rule's conditions: type, audience, agent, uid, client, subject,
 * upstream, tool, annotation, args.PATH and context.PATH, message, risk (each parsed into a struct cond),
 * and a condition's release; the rest of the parser (words, options, rules, the file) is parse.c. */
#define _GNU_SOURCE
#include "policy/parse_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "include/assent/err.h"

/* ---- conditions ---- */

static const char *const annotation_names[] = {"readonly", "destructive", "idempotent",
					       "openworld"}; /* POL_ANN_* bit order */

static int parse_number(const char *s, double *v)
{
	char *end;
	if (!*s || strchr(s, 'x') || strchr(s, 'X') || strpbrk(s, "nN")) /* no hex, inf, nan */
		return -1;
	*v = strtod(s, &end);
	return *end ? -1 : 0;
}

static int ok_type(const char *s, size_t n)
{
	for (size_t i = 0; i < 4; i++)
		if (strlen(pol_type_names[i]) == n && !strncmp(s, pol_type_names[i], n))
			return 1;
	return 0;
}

static int parse_op(const char *s, enum op *op)
{
	static const struct {
		const char *t;
		enum op op;
	} ops[] = {{"=", OP_EQ}, {"!=", OP_NE}, {"<", OP_LT}, {">", OP_GT}, {"<=", OP_LE}, {">=", OP_GE}, {"~", OP_RE}};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		if (!strcmp(s, ops[i].t)) {
			*op = ops[i].op;
			return 0;
		}
	return -1;
}

static int compile_re(struct pstate *p, const struct word *x, struct cond *c)
{
	char e[AS_ERRLEN];
	if (pol_regex_check(x->s, x->n, e) != 0) {
		pol_bad(p, x, "%s", e);
		return -1;
	}
	if (regcomp(&c->re, x->s, REG_EXTENDED | REG_NOSUB) != 0) {
		pol_bad(p, x, "bad regular expression");
		return -1;
	}
	c->has_re = 1;
	return 0;
}

/* The value side of `context.PATH OP VALUE`, `message OP VALUE`. */
static int value(struct pstate *p, struct cond *c, int allow_order)
{
	const struct word *o = pol_next(p, "an operator (= != < > <= >= ~)");
	if (!o)
		return -1;
	int pathed = c->k == C_CONTEXT || c->k == C_ARGS;
	if (pathed && !o->quoted && !strcmp(o->s, "exists")) {
		c->op = OP_EXISTS;
		return 0;
	}
	if (o->quoted || parse_op(o->s, &c->op) != 0) {
		pol_bad(p, o, "unknown operator (expected = != < > <= >= ~%s)", pathed ? " or exists" : "");
		return -1;
	}
	const struct word *v = pol_next(p, "a value");
	if (!v)
		return -1;
	if (!(c->s = strdup(v->s)))
		return -1;
	c->col = v->col;
	if (c->op == OP_RE)
		return compile_re(p, v, c);
	c->numeric = !v->quoted && parse_number(v->s, &c->v) == 0;
	if (c->op >= OP_LT && c->op <= OP_GE && (!allow_order || !c->numeric)) {
		pol_bad(p, v, "%s compares numbers: '%.40s' is not one", o->s, v->s);
		return -1;
	}
	return 0;
}

/* type: a list of request types. */
static int cond_type(struct pstate *p, struct cond *c)
{
	const struct word *x;
	char items[POL_LIST_MAX][POL_NAME_MAX + 1];
	if (!(x = pol_next(p, "a type (approval, input, selection, confirmation)")))
		return -1;
	size_t n = pol_list(p, x, items, ok_type, "type");
	for (size_t i = 0; i < n; i++)
		for (unsigned t = 0; t < 4; t++)
			if (!strcmp(items[i], pol_type_names[t]))
				c->types |= 1u << t;
	if (!n)
		return -1;
	c->k = C_TYPE;
	return 0;
}

/* subject: given, computed, asserted, or a name glob. */
static int cond_subject(struct pstate *p, struct cond *c)
{
	const struct word *x;
	if (!(x = pol_next(p, "given, computed, asserted or a name glob")))
		return -1;
	if (!x->quoted && !strcmp(x->s, "given"))
		c->k = C_SUBJECT_GIVEN;
	else if (!x->quoted && !strcmp(x->s, "computed"))
		c->k = C_SUBJECT_COMPUTED;
	else if (!x->quoted && !strcmp(x->s, "asserted"))
		c->k = C_SUBJECT_ASSERTED;
	else {
		c->k = C_SUBJECT;
		c->s = strdup(x->s);
	}
	return 0;
}

/* annotation: one of the tool annotations. */
static int cond_annotation(struct pstate *p, struct cond *c)
{
	const struct word *x;
	if (!(x = pol_next(p, "readonly, destructive, idempotent or openworld")))
		return -1;
	c->n = -1;
	for (int i = 0; i < 4; i++)
		if (!x->quoted && !strcmp(x->s, annotation_names[i]))
			c->n = i;
	if (c->n < 0) {
		pol_bad(p, x, "not an annotation (readonly, destructive, idempotent, openworld)");
		return -1;
	}
	c->k = C_ANNOTATION;
	return 0;
}

/* args.PATH and context.PATH: the path, then an operator and a value. */
static int cond_path(struct pstate *p, const struct word *k, struct cond *c)
{
	int args = k->s[0] == 'a';
	c->k = args ? C_ARGS : C_CONTEXT;
	const char *s = k->s + (args ? 5 : 8);
	for (;;) {
		size_t n = strcspn(s, ".");
		if (n == 0 || c->npath == POL_PATH_MAX) {
			pol_bad(p, k, "a %s path is %s.KEY[.KEY...] with at most %d keys",
				args ? "call's arguments" : "context", args ? "args" : "context", POL_PATH_MAX);
			return -1;
		}
		c->path[c->npath++] = strndup(s, n);
		if (!s[n])
			break;
		s += n + 1;
	}
	if (value(p, c, 1) != 0)
		return -1;
	return 0;
}

/* risk: an operator and a level. */
static int cond_risk(struct pstate *p, struct cond *c)
{
	const struct word *x;
	c->k = C_RISK;
	const struct word *o = pol_next(p, "an operator");
	if (!o)
		return -1;
	if (o->quoted || parse_op(o->s, &c->op) != 0 || c->op == OP_RE) {
		pol_bad(p, o, "risk compares with = != < > <= >=");
		return -1;
	}
	if (!(x = pol_next(p, "a risk level (low, medium, high, critical)")))
		return -1;
	c->n = -1;
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(x->s, pol_risk_names[i]))
			c->n = i;
	if (c->n < 0) {
		pol_bad(p, x, "not a risk level (low, medium, high, critical)");
		return -1;
	}
	return 0;
}

int pol_condition(struct pstate *p, const struct word *k, struct rule *r)
{
	struct cond *c = &r->conds[r->nconds];
	memset(c, 0, sizeof *c);
	const struct word *x;
	if (!strcmp(k->s, "type")) {
		if (cond_type(p, c) != 0)
			return -1;
	} else if (!strcmp(k->s, "audience") || !strcmp(k->s, "client")) {
		if (!(x = pol_next(p, "a name or glob")))
			return -1;
		c->k = k->s[0] == 'a' ? C_AUDIENCE : C_CLIENT;
		c->s = strdup(x->s);
	} else if (!strcmp(k->s, "agent")) {
		if (!(x = pol_next(p, "an agent's name")))
			return -1;
		if (!pol_is_name(x->s, x->n)) {
			pol_bad(p, x, "not an agent name");
			return -1;
		}
		c->k = C_AGENT;
		c->s = strdup(x->s);
	} else if (!strcmp(k->s, "uid")) {
		unsigned long long v;
		if (!(x = pol_next(p, "a uid")))
			return -1;
		if (pol_parse_uint(x, 0, 4294967294ull, &v) != 0) {
			pol_bad(p, x, "not a uid");
			return -1;
		}
		c->k = C_UID;
		c->n = (long long)v;
	} else if (!strcmp(k->s, "subject")) {
		if (cond_subject(p, c) != 0)
			return -1;
	} else if (!strcmp(k->s, "upstream") || !strcmp(k->s, "tool")) {
		if (!(x = pol_next(p, k->s[0] == 'u' ? "an upstream server's name or glob" : "a tool's name or glob")))
			return -1;
		c->k = k->s[0] == 'u' ? C_UPSTREAM : C_TOOL;
		c->s = strdup(x->s);
	} else if (!strcmp(k->s, "annotation")) {
		if (cond_annotation(p, c) != 0)
			return -1;
	} else if (!strncmp(k->s, "args.", 5) || !strncmp(k->s, "context.", 8)) {
		if (cond_path(p, k, c) != 0)
			return -1;
	} else if (!strcmp(k->s, "message")) {
		c->k = C_MESSAGE;
		if (value(p, c, 0) != 0)
			return -1;
	} else if (!strcmp(k->s, "risk")) {
		if (cond_risk(p, c) != 0)
			return -1;
	} else {
		return 1; /* not a condition */
	}
	r->nconds++;
	return 0;
}

void pol_cond_free(struct cond *c)
{
	free(c->s);
	if (c->has_re)
		regfree(&c->re);
	for (size_t i = 0; i < c->npath; i++)
		free(c->path[i]);
}
