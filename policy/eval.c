/* The policy's evaluator: the first rule whose conditions all hold decides (policy.h). */
#define _GNU_SOURCE
#include "policy/rules.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

/* ---- evaluation ---- */

static const json_t *ctx_get(const json_t *ctx, const struct cond *c)
{
	const json_t *v = ctx;
	for (size_t i = 0; v && i < c->npath; i++) {
		if (json_is_object(v)) {
			v = json_object_get(v, c->path[i]);
		} else if (json_is_array(v)) {
			uint64_t k;
			v = parse_u64(c->path[i], &k) == 0 && k < json_array_size(v) ? json_array_get(v, (size_t)k)
										     : NULL;
		} else {
			v = NULL;
		}
	}
	return v;
}

static int order(enum op op, double a, double b)
{
	switch (op) {
	case OP_EQ:
		return a == b;
	case OP_NE:
		return a != b;
	case OP_LT:
		return a < b;
	case OP_GT:
		return a > b;
	case OP_LE:
		return a <= b;
	case OP_GE:
		return a >= b;
	default:
		return 0;
	}
}

static int text_cmp(const struct cond *c, const char *s)
{
	if (c->op == OP_RE)
		return regexec(&c->re, s, 0, NULL, 0) == 0;
	int eq = !strcmp(s, c->s);
	return c->op == OP_EQ ? eq : c->op == OP_NE ? !eq : 0;
}

static int cond_match(const struct cond *c, const struct pol_request *r)
{
	switch (c->k) {
	case C_TYPE:
		for (unsigned t = 0; t < 4; t++)
			if (r->type && !strcmp(r->type, pol_type_names[t]))
				return (c->types >> t) & 1;
		return 0;
	case C_AUDIENCE:
		return fnmatch(c->s, r->audience ? r->audience : "", 0) == 0;
	case C_CLIENT:
		return r->client && fnmatch(c->s, r->client, 0) == 0;
	case C_AGENT:
		return r->agent && !strcmp(r->agent, c->s);
	case C_UID:
		return r->uid >= 0 && r->uid == c->n;
	case C_SUBJECT:
		for (size_t i = 0; i < r->nsubjects; i++)
			if (r->subject_names[i] && fnmatch(c->s, r->subject_names[i], 0) == 0)
				return 1;
		return 0;
	case C_SUBJECT_GIVEN:
		return r->nsubjects > 0;
	case C_SUBJECT_COMPUTED:
		for (size_t i = 0; i < r->nsubjects; i++)
			if (!r->subject_computed[i])
				return 0;
		return r->nsubjects > 0;
	case C_SUBJECT_ASSERTED:
		for (size_t i = 0; i < r->nsubjects; i++)
			if (!r->subject_computed[i])
				return 1;
		return 0;
	case C_MESSAGE:
		return r->message && text_cmp(c, r->message);
	case C_RISK: {
		/* `risk` or else `risk_level`, in any case ("HIGH" is high): what agents write, and
		 * what the review page's badge reads, so the rule and the badge never disagree. */
		const json_t *v = r->context ? json_object_get(r->context, "risk") : NULL;
		if (!json_is_string(v) && r->context)
			v = json_object_get(r->context, "risk_level");
		const char *s = json_string_value(v);
		for (int i = 0; s && i < 4; i++)
			if (!strcasecmp(s, pol_risk_names[i]))
				return order(c->op, i, (double)c->n);
		return 0;
	}
	case C_UPSTREAM:
		return r->upstream && fnmatch(c->s, r->upstream, 0) == 0;
	case C_TOOL:
		return r->tool && fnmatch(c->s, r->tool, 0) == 0;
	case C_ANNOTATION:
		return (r->annotations >> c->n) & 1;
	case C_ARGS:
	case C_CONTEXT: {
		const json_t *root = c->k == C_ARGS ? r->args : r->context;
		const json_t *v = root ? ctx_get(root, c) : NULL;
		if (!v) /* a condition on an absent field never matches, whatever its operator */
			return 0;
		if (c->op == OP_EXISTS)
			return 1;
		if (json_is_string(v))
			return c->op >= OP_LT && c->op <= OP_GE ? 0 : text_cmp(c, json_string_value(v));
		if (json_is_number(v)) {
			if (c->op == OP_RE)
				return 0;
			return c->numeric && order(c->op, json_number_value(v), c->v);
		}
		if (json_is_boolean(v) || json_is_null(v)) {
			const char *t = json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null";
			return c->op == OP_EQ || c->op == OP_NE || c->op == OP_RE ? text_cmp(c, t) : 0;
		}
		return 0; /* objects and arrays: only `exists` */
	}
	}
	return 0;
}

void pol_request_from_json(const json_t *j, struct pol_request *r, const char *names[16], int computed[16])
{
	size_t ns = 0, i;
	const json_t *sub = json_object_get(j, "subject"), *x, *uid = json_object_get(j, "uid");
	if (json_is_object(sub)) {
		names[0] = json_string_value(json_object_get(sub, "name"));
		computed[0] = json_object_get(sub, "content") != NULL;
		ns = 1;
	}
	json_array_foreach(sub, i, x)
	{
		if (ns < 16) {
			names[ns] = json_string_value(json_object_get(x, "name"));
			computed[ns++] = json_object_get(x, "content") != NULL;
		}
	}
	*r = (struct pol_request){.type = json_string_value(json_object_get(j, "type")),
				  .audience = json_string_value(json_object_get(j, "audience")),
				  .message = json_string_value(json_object_get(j, "message")),
				  .agent = json_string_value(json_object_get(j, "agent")),
				  .uid = json_is_integer(uid) ? json_integer_value(uid) : -1,
				  .client = json_string_value(json_object_get(j, "client")),
				  .context = json_object_get(j, "context"),
				  .nsubjects = ns,
				  .subject_names = names,
				  .subject_computed = computed,
				  .upstream = json_string_value(json_object_get(j, "upstream")),
				  .tool = json_string_value(json_object_get(j, "tool")),
				  .args = json_object_get(j, "arguments")};
	/* The tool's annotations as its server declared them (MCP ToolAnnotations). */
	const json_t *an = json_object_get(j, "annotations");
	static const char *const hints[] = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"};
	for (unsigned k = 0; k < 4; k++)
		if (json_is_true(json_object_get(an, hints[k])))
			r->annotations |= 1u << k;
}

/* An allow rule issues a token without a person: for an audience only when the
 * rule names it (an audience condition, or token-audience, which sets it). A rule
 * about something else (a type, a context flag) never reaches another audience:
 * it denies, saying why, instead of issuing a token the operator did not write. */
static void allow_audience(const struct rule *x, const struct pol_request *r, struct pol_decision *d)
{
	if (d->action != POL_ALLOW || d->token_audience[0] || !r->audience || !*r->audience ||
	    !strcmp(r->audience, POL_DEFAULT_AUDIENCE))
		return;
	for (size_t j = 0; j < x->nconds; j++)
		if (x->conds[j].k == C_AUDIENCE)
			return;
	d->action = POL_DENY;
	d->token_ttl_s = 0;
	char aud[64];
	pol_printable(aud, sizeof aud, r->audience, strlen(r->audience));
	snprintf(
	    d->reason, sizeof d->reason,
	    "the allow rule (line %u) names no audience: it allows only the default audience \"%s\", not \"%.63s\" "
	    "(a rule must name it: audience %.63s)",
	    x->line, POL_DEFAULT_AUDIENCE, aud, aud);
}

void policy_eval(const struct policy *p, const struct pol_request *r, struct pol_decision *d)
{
	memset(d, 0, sizeof *d);
	d->action = POL_ASK;
	d->quorum = 1;
	for (size_t i = 0; i < p->n; i++) {
		const struct rule *x = &p->rules[i];
		size_t k = 0;
		while (k < x->nconds && cond_match(&x->conds[k], r))
			k++;
		if (k < x->nconds)
			continue;
		if (x->shadow || p->shadow_all) {
			/* Record what it would decide; a person is asked all the same. */
			if (!d->shadowed) {
				d->shadowed = 1;
				d->shadow_action = x->action;
				d->shadow_line = x->line;
			}
			if (!x->is_default && !p->shadow_all)
				continue;
		}
		int shadowed = d->shadowed;
		enum pol_action sa = d->shadow_action;
		unsigned sl = d->shadow_line;
		*d = x->opts;
		d->line = x->line;
		d->by_default = x->is_default;
		for (size_t j = 0; j < x->nconds; j++) {
			d->on_declared |= x->conds[j].k == C_CLIENT;
			d->on_annotation |= x->conds[j].k == C_ANNOTATION;
		}
		d->shadowed = shadowed;
		d->shadow_action = sa;
		d->shadow_line = sl;
		if (!shadowed)
			allow_audience(x, r, d);
		if (shadowed && d->action != POL_ASK) { /* asked all the same, with the default ask options */
			memset(d->reason, 0, sizeof d->reason);
			d->action = POL_ASK;
			d->quorum = 1;
			d->token_ttl_s = 0;
			d->token_audience[0] = 0;
		}
		return;
	}
}
