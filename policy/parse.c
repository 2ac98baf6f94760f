/* The policy language's parser: FILE:LINE:COL diagnostics, the words of a line, a rule's options,
 * the rules' lifecycle, warnings for rules that never match, and the file-level parse; a rule's
 * conditions are parse_cond.c's, the evaluator is eval.c, the regular expressions' cost guard regex.c. */
#define _GNU_SOURCE
#include "policy/parse_int.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "common/cbor.h"   /* utf8_valid */
#include "ledger/merkle.h" /* sha256 */
#include "common/util.h"

const char *const pol_type_names[4] = {"approval", "input", "selection", "confirmation"};
const char *const pol_risk_names[4] = {"low", "medium", "high", "critical"};
static const char *const action_names[] = {"allow", "deny", "ask"};

const char *pol_action_name(enum pol_action a)
{
	return (unsigned)a < 3 ? action_names[a] : "?";
}

/* ---- diagnostics ---- */

void pol_printable(char *dst, size_t cap, const char *s, size_t n)
{
	size_t j = 0;
	for (size_t i = 0; i < n && j + 1 < cap; i++)
		dst[j++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	dst[j] = 0;
}

static void diag(struct pol_msgs *m, int warning, unsigned line, unsigned col, const char *text, size_t tn,
		 const char *fmt, ...) AS_PRINTF(7, 8);
static void diag(struct pol_msgs *m, int warning, unsigned line, unsigned col, const char *text, size_t tn,
		 const char *fmt, ...)
{
	if (warning)
		m->warnings++;
	else
		m->errors++;
	if (m->n == POL_MSGS_MAX) {
		m->dropped++;
		return;
	}
	struct pol_msg *d = &m->m[m->n++];
	memset(d, 0, sizeof *d);
	d->line = line;
	d->col = col;
	d->warning = warning;
	if (text)
		pol_printable(d->text, sizeof d->text, text, tn);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
	va_end(ap);
}

/* ---- words of a line ---- */

/* Split one line into words: blanks separate, "..." quotes (with \" and \\), # starts a
 * comment outside quotes. Returns the count, or -1 after a diagnostic. buf receives the
 * unquoted words. */
static int split(const char *line, size_t len, unsigned lineno, char *buf, struct word *w, struct pol_msgs *m)
{
	int nw = 0;
	size_t i = 0, o = 0;
	while (i < len) {
		while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			i++;
		if (i == len || line[i] == '#')
			break;
		if (nw == POL_WORDS_MAX) {
			diag(m, 0, lineno, (unsigned)i + 1, line + i, len - i, "more than %d words on one line",
			     POL_WORDS_MAX);
			return -1;
		}
		struct word *x = &w[nw++];
		x->col = (unsigned)i + 1;
		x->s = buf + o;
		x->quoted = line[i] == '"';
		if (x->quoted) {
			size_t start = i++;
			for (;;) {
				if (i == len) {
					diag(m, 0, lineno, (unsigned)start + 1, line + start, len - start,
					     "unterminated quoted string");
					return -1;
				}
				if (line[i] == '"')
					break;
				if (line[i] == '\\' && i + 1 < len && (line[i + 1] == '"' || line[i + 1] == '\\'))
					i++;
				buf[o++] = line[i++];
			}
			i++;
			if (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '#') {
				diag(m, 0, lineno, (unsigned)i + 1, line + i, 1,
				     "a quoted string must be followed by a blank");
				return -1;
			}
		} else {
			while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '#')
				buf[o++] = line[i++];
		}
		x->n = (size_t)(buf + o - x->s);
		buf[o++] = 0;
	}
	return nw;
}

/* ---- parsing ---- */

const struct word *pol_next(struct pstate *p, const char *what)
{
	if (p->i >= p->nw) {
		const struct word *last = &p->w[p->nw - 1];
		diag(p->m, 0, p->line, last->col + (unsigned)last->n, NULL, 0, "%s expected after '%.40s'", what,
		     last->s);
		p->failed = 1;
		return NULL;
	}
	return &p->w[p->i++];
}

void pol_bad(struct pstate *p, const struct word *x, const char *fmt, ...)
{
	char msg[POL_MSG_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag(p->m, 0, p->line, x->col, x->s, x->n, "%s", msg);
	p->failed = 1;
}

int pol_is_name(const char *s, size_t n)
{
	if (n == 0 || n > POL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      strchr("._:/-", s[i])))
			return 0;
	return 1;
}

int pol_parse_uint(const struct word *x, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	uint64_t v;
	if (x->quoted || parse_u64(x->s, &v) != 0 || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A comma-separated list; each item checked by ok(). */
size_t pol_list(struct pstate *p, const struct word *x, char out[][POL_NAME_MAX + 1], int (*ok)(const char *, size_t),
		const char *what)
{
	size_t n = 0;
	const char *s = x->s;
	for (;;) {
		size_t k = strcspn(s, ",");
		if (n == POL_LIST_MAX || k > POL_NAME_MAX || !ok(s, k)) {
			pol_bad(p, x, "%s: '%.*s' is not one", what, (int)(k > 60 ? 60 : k), s);
			return 0;
		}
		memcpy(out[n], s, k);
		out[n++][k] = 0;
		if (!s[k])
			return n;
		s += k + 1;
	}
}

/* ---- options ---- */

static int ok_reviewer(const char *s, size_t n)
{
	return n > 6 && !strncmp(s, "group:", 6) ? pol_is_name(s + 6, n - 6) && !memchr(s + 6, ':', n - 6)
						 : pol_is_name(s, n) && !memchr(s, ':', n);
}
static int ok_channel(const char *s, size_t n)
{
	return (n == 8 && !strncmp(s, "terminal", 8)) || (n == 3 && !strncmp(s, "web", 3)) ||
	       (n == 6 && !strncmp(s, "client", 6));
}

/* An option only rules of what may carry (it returns from the function that uses it). */
#define ONLY(cond, what)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			pol_bad(p, k, "%s is an option of %s rules", k->s, what);                                      \
			return -1;                                                                                     \
		}                                                                                                      \
	} while (0)

/* The options that say who reviews and how: reviewers, quorum, on-timeout, channels,
 * same-user, assurance (all of ask rules). 1 when k is none of them. */
static int option_review(struct pstate *p, const struct word *k, struct rule *r)
{
	struct pol_decision *o = &r->opts;
	const struct word *x;
	unsigned long long v;
	int ask = r->action == POL_ASK;
	if (!strcmp(k->s, "reviewers")) {
		ONLY(ask, "ask");
		if (!(x = pol_next(p, "reviewers (NAME or group:NAME, comma-separated)")) ||
		    !(o->nreviewers = pol_list(p, x, o->reviewers, ok_reviewer, "reviewer")))
			return -1;
	} else if (!strcmp(k->s, "quorum")) {
		ONLY(ask, "ask");
		if (!(x = pol_next(p, "a number of reviewers")) || pol_parse_uint(x, 1, 16, &v) != 0) {
			if (x)
				pol_bad(p, x, "a quorum is 1 to 16 distinct reviewers");
			return -1;
		}
		o->quorum = (unsigned)v;
	} else if (!strcmp(k->s, "on-timeout")) {
		ONLY(ask, "ask");
		if (!(x = pol_next(p, "deny or timeout")))
			return -1;
		if (strcmp(x->s, "deny") && strcmp(x->s, "timeout")) {
			pol_bad(p, x, "on-timeout is deny or timeout");
			return -1;
		}
		o->timeout_denies = x->s[0] == 'd';
	} else if (!strcmp(k->s, "channels")) {
		ONLY(ask, "ask");
		char items[POL_LIST_MAX][POL_NAME_MAX + 1];
		if (!(x = pol_next(p, "channels (terminal, web, client)")))
			return -1;
		size_t n = pol_list(p, x, items, ok_channel, "channel");
		if (!n)
			return -1;
		for (size_t i = 0; i < n; i++)
			o->channels |= items[i][0] == 't'   ? POL_CH_TERMINAL
				       : items[i][0] == 'w' ? POL_CH_WEB
							    : POL_CH_CLIENT;
	} else if (!strcmp(k->s, "same-user")) {
		ONLY(ask, "ask");
		if (!(x = pol_next(p, "ok")))
			return -1;
		if (strcmp(x->s, "ok")) {
			pol_bad(p, x, "same-user takes ok");
			return -1;
		}
		o->same_user_ok = 1;
	} else if (!strcmp(k->s, "assurance")) {
		ONLY(ask, "ask");
		if (!(x = pol_next(p, "passkey")))
			return -1;
		if (strcmp(x->s, "passkey")) {
			pol_bad(p, x, "assurance takes passkey (a reviewer's WebAuthn assertion on the page)");
			return -1;
		}
		o->passkey = 1;
	} else {
		return 1; /* not one of these */
	}
	return 0;
}

static int option(struct pstate *p, const struct word *k, struct rule *r)
{
	struct pol_decision *o = &r->opts;
	const struct word *x;
	unsigned long long v;
	int ask = r->action == POL_ASK, allow = r->action == POL_ALLOW;
	int rc;
	if (!strcmp(k->s, "reason")) {
		ONLY(r->action == POL_DENY, "deny");
		if (!(x = pol_next(p, "a reason")))
			return -1;
		if (x->n == 0 || x->n > POL_REASON_MAX) {
			pol_bad(p, x, "a reason is 1 to %d bytes", POL_REASON_MAX);
			return -1;
		}
		memcpy(o->reason, x->s, x->n + 1);
	} else if (!strcmp(k->s, "deadline") || !strcmp(k->s, "token-ttl")) {
		int dl = k->s[0] == 'd';
		ONLY(dl ? ask : ask || allow, dl ? "ask" : "allow and ask");
		if (!(x = pol_next(p, "seconds")) || pol_parse_uint(x, 1, 86400, &v) != 0) {
			if (x)
				pol_bad(p, x, "seconds from 1 to 86400");
			return -1;
		}
		*(dl ? &o->deadline_s : &o->token_ttl_s) = (unsigned)v;
	} else if (!strcmp(k->s, "token-audience")) {
		ONLY(ask || allow, "allow and ask");
		if (!(x = pol_next(p, "an audience")))
			return -1;
		if (!pol_is_name(x->s, x->n)) {
			pol_bad(p, x, "not an audience name");
			return -1;
		}
		memcpy(o->token_audience, x->s, x->n + 1);
	} else if (!strcmp(k->s, "record")) {
		ONLY(allow, "allow");
		if (!(x = pol_next(p, "ledger or calls")))
			return -1;
		if (strcmp(x->s, "ledger") && strcmp(x->s, "calls")) {
			pol_bad(p, x,
				"record is ledger (an entry per call, durable before it is forwarded) or calls (the "
				"call record only)");
			return -1;
		}
		o->record_calls = x->s[0] == 'c';
	} else if (!strcmp(k->s, "token")) {
		ONLY(ask, "ask");
		if (!(x = pol_next(p, "yes")))
			return -1;
		if (strcmp(x->s, "yes")) {
			pol_bad(p, x, "token takes yes (a token for a forwarded call, in its result's _meta)");
			return -1;
		}
		o->call_token = 1;
	} else if ((rc = option_review(p, k, r)) != 1) {
		return rc;
	} else {
		pol_bad(
		    p, k,
		    "unknown word: expected a condition (type, audience, agent, uid, client, subject, context.PATH, "
		    "message, risk, upstream, tool, args.PATH, annotation) or an option (reason, reviewers, quorum, "
		    "deadline, on-timeout, token-ttl, token-audience, channels, same-user, assurance, record, token)");
		return -1;
	}
	return 0;
#undef ONLY
}

static void rule_free(struct rule *r)
{
	for (size_t i = 0; i < r->nconds; i++)
		pol_cond_free(&r->conds[i]);
	free(r->conds);
	free(r->key);
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		rule_free(&p->rules[i]);
	free(p->rules);
	free(p);
}

size_t policy_nrules(const struct policy *p)
{
	return p->n;
}

unsigned policy_uses(const struct policy *p, unsigned mask, unsigned *first_line)
{
	unsigned u = 0;
	*first_line = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct pol_decision *o = &p->rules[i].opts;
		unsigned r = (o->quorum > 1 ? POL_USES_QUORUM : 0) | (o->channels ? POL_USES_CHANNELS : 0) |
			     (o->same_user_ok ? POL_USES_SAME_USER : 0) | (o->passkey ? POL_USES_PASSKEY : 0);
		r &= mask;
		if (r && !*first_line)
			*first_line = p->rules[i].line;
		u |= r;
	}
	return u;
}
const char *policy_digest(const struct policy *p)
{
	return p->digest;
}

/* One rule line, words w[0..nw). 0, or -1 after a diagnostic. */
static int parse_rule(struct pstate *p, struct rule *r)
{
	const struct word *x = pol_next(p, "a rule");
	if (!x)
		return -1;
	if (!x->quoted && !strcmp(x->s, "shadow")) {
		r->shadow = 1;
		if (!(x = pol_next(p, "allow, deny or ask")))
			return -1;
	}
	if (!x->quoted && !strcmp(x->s, "default")) {
		r->is_default = 1;
		if (!(x = pol_next(p, "allow, deny or ask")))
			return -1;
	}
	int a = -1;
	for (int i = 0; i < 3; i++)
		if (!x->quoted && !strcmp(x->s, action_names[i]))
			a = i;
	if (a < 0) {
		pol_bad(p, x, "a rule starts with allow, deny or ask (or default, shadow)");
		return -1;
	}
	r->action = (enum pol_action)a;
	r->opts.action = r->action;
	r->opts.quorum = 1;
	if (!(r->conds = calloc((size_t)p->nw, sizeof *r->conds)))
		return -1;
	struct buf key;
	buf_init(&key, 1u << 16);
	int rc = 0;
	while (rc == 0 && p->i < p->nw) {
		const struct word *k = &p->w[p->i++];
		size_t before = r->nconds;
		int start = p->i - 1;
		rc = k->quoted ? 1 : pol_condition(p, k, r);
		if (rc < 0) /* what a half-read condition holds */
			pol_cond_free(&r->conds[r->nconds]);
		if (rc == 1)
			rc = option(p, k, r);
		else if (rc == 0 && r->is_default) {
			pol_bad(p, k, "the default rule takes no conditions: it is what happens when no rule matches");
			rc = -1;
		}
		if (rc == 0 && r->nconds > before) /* the condition's words, normalised, for duplicates */
			for (int j = start; j < p->i && rc == 0; j++)
				if (buf_put(&key, p->w[j].s, p->w[j].n) != 0 || buf_putc(&key, 0x1f) != 0)
					rc = -1; /* out of memory: the rule is dropped, and strndup below is not reached
						  */
		if (p->failed)
			rc = -1;
	}
	if (rc == 0 && r->action == POL_DENY && !r->opts.reason[0]) {
		diag(p->m, 0, p->line, p->w[0].col, p->w[0].s, p->w[0].n,
		     "a deny rule needs a reason \"...\" for the agent");
		rc = -1;
	}
	if (rc == 0 && r->opts.passkey && r->opts.channels && !(r->opts.channels & POL_CH_WEB)) {
		diag(p->m, 0, p->line, p->w[0].col, p->w[0].s, p->w[0].n,
		     "assurance passkey is given on the review page only: its channels must include web");
		rc = -1;
	}
	if (rc == 0 && r->opts.nreviewers && r->opts.quorum > 1) {
		int groups = 0;
		for (size_t i = 0; i < r->opts.nreviewers; i++)
			groups |= !strncmp(r->opts.reviewers[i], "group:", 6);
		if (!groups && r->opts.quorum > r->opts.nreviewers) {
			diag(p->m, 0, p->line, p->w[0].col, p->w[0].s, p->w[0].n,
			     "quorum %u needs at least %u reviewers; %zu are named", r->opts.quorum, r->opts.quorum,
			     r->opts.nreviewers);
			rc = -1;
		}
	}
	if (buf_putc(&key, 0) != 0)
		rc = -1;
	r->key = rc == 0 ? strndup((const char *)key.p, key.len) : NULL;
	buf_free(&key);
	return rc == 0 && r->key ? 0 : -1;
}

/* Warnings, since the file still means what it says: rules that can never match, and allow
 * rules that trust what the agent declares or a pattern that holds at one end only. */
static void rule_warnings(struct pol_msgs *m, const struct policy *p, const struct rule *r, const struct word *w0,
			  unsigned catch_all)
{
	if (!r->is_default && catch_all)
		diag(m, 1, r->line, w0->col, w0->s, w0->n,
		     "can never match: the rule on line %u matches every request first", catch_all);
	else if (!r->is_default)
		for (size_t j = 0; j + 1 < p->n; j++)
			if (!p->rules[j].shadow && !p->shadow_all && !strcmp(p->rules[j].key, r->key)) {
				diag(m, 1, r->line, w0->col, w0->s, w0->n,
				     "can never match: line %u has the same conditions and comes first",
				     p->rules[j].line);
				break;
			}
	unsigned types = 0xf;
	for (size_t j = 0; j < r->nconds; j++)
		if (r->conds[j].k == C_TYPE)
			types &= r->conds[j].types;
	if (!types)
		diag(m, 1, r->line, w0->col, w0->s, w0->n, "can never match: its type conditions exclude each other");
	for (size_t j = 0; j < r->nconds; j++)
		if (r->conds[j].k == C_CLIENT && r->action == POL_ALLOW) {
			diag(m, 1, r->line, w0->col, w0->s, w0->n,
			     "allows on the client name an agent declares: any agent can declare any name");
			break;
		}
	for (size_t j = 0; j < r->nconds && r->action == POL_ALLOW; j++) {
		const struct cond *c = &r->conds[j];
		int end = c->has_re ? pol_regex_one_end(c->s, strlen(c->s)) : 0;
		if (end)
			diag(m, 1, r->line, c->col, c->s, strlen(c->s),
			     "allows on a pattern anchored at its %s only: %s; anchor both ends (^...$)",
			     end == 1 ? "start" : "end",
			     end == 1 ? "whatever follows a match is allowed too (^SELECT allows 'SELECT 1; "
					"DROP TABLE t')"
				      : "whatever comes before a match is allowed too");
	}
}

int policy_parse(const char *src, size_t len, struct policy **out, struct pol_msgs *m)
{
	memset(m, 0, sizeof *m);
	*out = NULL;
	if (len > POL_FILE_MAX) {
		diag(m, 0, 0, 0, NULL, 0, "the policy is %zu bytes, over the limit of %u", len, POL_FILE_MAX);
		return AS_EINVAL;
	}
	if (!utf8_valid((const uint8_t *)src, len) || memchr(src, 0, len)) {
		diag(m, 0, 0, 0, NULL, 0, "the policy is not UTF-8 text");
		return AS_EINVAL;
	}
	struct policy *p = calloc(1, sizeof *p);
	char *buf = malloc(len + 1);
	struct word *w = calloc(POL_WORDS_MAX, sizeof *w);
	if (!p || !buf || !w) {
		free(p);
		free(buf);
		free(w);
		diag(m, 0, 0, 0, NULL, 0, "out of memory");
		return AS_ENOMEM;
	}
	uint8_t h[32];
	sha256(src, len, h);
	hex_encode(h, 32, p->digest);
	size_t cap = 0;
	unsigned lineno = 0, seen_default = 0, catch_all = 0;
	for (size_t at = 0; at < len || (at == len && len == 0 && lineno == 0);) {
		const char *line = src + at;
		const char *nl = memchr(line, '\n', len - at);
		size_t n = nl ? (size_t)(nl - line) : len - at;
		at += n + 1;
		lineno++;
		if (len == 0)
			break;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)line[i] < 0x20 && line[i] != '\t' && line[i] != '\r') {
				diag(m, 0, lineno, (unsigned)i + 1, NULL, 0, "a control character in the policy");
				goto next_line;
			}
		int nw = split(line, n, lineno, buf, w, m);
		if (nw <= 0)
			goto next_line;
		if (!w[0].quoted && !strcmp(w[0].s, "policy")) {
			if (nw != 2 || strcmp(w[1].s, "shadow"))
				diag(m, 0, lineno, w[0].col, w[0].s, w[0].n,
				     "the only file-wide setting is `policy shadow`");
			else if (p->n)
				diag(m, 0, lineno, w[0].col, w[0].s, w[0].n,
				     "`policy shadow` must come before every rule");
			else
				p->shadow_all = 1;
			goto next_line;
		}
		if (seen_default) {
			diag(m, 0, lineno, w[0].col, w[0].s, w[0].n,
			     "a rule after the default (line %u) would never be read", seen_default);
			goto next_line;
		}
		if (p->n == POL_RULES_MAX) {
			diag(m, 0, lineno, w[0].col, w[0].s, w[0].n, "more than %d rules", POL_RULES_MAX);
			break;
		}
		if (p->n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct rule *nr = realloc(p->rules, nc * sizeof *nr);
			if (!nr) {
				diag(m, 0, lineno, 0, NULL, 0, "out of memory");
				break;
			}
			p->rules = nr;
			cap = nc;
		}
		struct rule *r = &p->rules[p->n];
		memset(r, 0, sizeof *r);
		r->line = lineno;
		struct pstate ps = {m, lineno, w, nw, 0, 0};
		if (parse_rule(&ps, r) != 0) {
			rule_free(r);
			goto next_line;
		}
		p->n++;
		if (r->is_default)
			seen_default = lineno;
		rule_warnings(m, p, r, &w[0], catch_all);
		if (!r->is_default && !r->nconds && !r->shadow && !catch_all)
			catch_all = lineno;
	next_line:;
	}
	if (!m->errors && !seen_default)
		diag(m, 0, lineno, 0, NULL, 0, "no default rule: end the policy with `default ask` (or allow, deny)");
	free(buf);
	free(w);
	if (m->errors) {
		policy_free(p);
		return AS_EINVAL;
	}
	*out = p;
	return 0;
}
