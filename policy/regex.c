/* The policy's regular expressions (POSIX extended, glibc's): the cost guard every one passes
 * before it is compiled, and the anchors `assent policy check` reads to warn about an allow rule
 * whose pattern holds at one end of a string only. */
#define _GNU_SOURCE
#include "policy/policy.h"

#include <regex.h>
#include <string.h>

#include "include/assent/err.h"
#include "common/util.h"

/* The index of the ']' that closes the bracket expression opening at s[i] ('['), or n when
 * it is unterminated (regcomp says so). "[]a]" and "[^]a]" hold a ']'; "[[:alpha:]]" and
 * "[[.-.]]" hold their own brackets. */
static size_t bracket_end(const char *s, size_t i, size_t n)
{
	size_t j = i + 1;
	if (j < n && s[j] == '^')
		j++;
	if (j < n && s[j] == ']')
		j++;
	while (j < n && s[j] != ']') {
		if (s[j] == '[' && j + 1 < n && (s[j + 1] == ':' || s[j + 1] == '.' || s[j + 1] == '=')) {
			char close[3] = {s[j + 1], ']', 0};
			const char *e = strstr(s + j + 2, close);
			if (!e || (size_t)(e - s) >= n)
				return n;
			j = (size_t)(e - s) + 2;
		} else {
			j++;
		}
	}
	return j;
}

/* ---- cost guard ---- */

static const char *re_too_costly(const char *s, size_t n)
{
	int prev_quant = 0, depth = 0, group_quant[12] = {0};
	unsigned counts = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '\\') { /* an escaped character is an atom */
			i++;
			prev_quant = 0;
			continue;
		}
		if (ch == '[') { /* a bracket expression is an atom */
			i = bracket_end(s, i, n);
			prev_quant = 0;
			continue;
		}
		if (ch == '(') {
			if (++depth > 10)
				return "groups nested more than 10 deep";
			group_quant[depth] = 0;
			prev_quant = 0;
			continue;
		}
		if (ch == ')') {
			/* a group that holds a quantifier, itself quantified, multiplies */
			int inner = depth > 0 && depth < 12 ? group_quant[depth] : 0;
			if (depth > 0)
				depth--;
			if (i + 1 < n && strchr("*+?{", s[i + 1]) && inner)
				return "a repeated group that repeats inside ((a+)+, (a*){2})";
			if (inner && depth < 12)
				group_quant[depth] = 1;
			prev_quant = 0;
			continue;
		}
		if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
			if (prev_quant)
				return "stacked quantifiers (a++, a*{2})";
			if (ch == '{') {
				unsigned long a = 0, b = 0;
				size_t j = i + 1;
				while (j < n && s[j] >= '0' && s[j] <= '9' && a <= 1000)
					a = a * 10 + (unsigned long)(s[j++] - '0');
				b = a;
				if (j < n && s[j] == ',') {
					j++;
					b = 0;
					while (j < n && s[j] >= '0' && s[j] <= '9' && b <= 1000)
						b = b * 10 + (unsigned long)(s[j++] - '0');
				}
				if (a > 100 || b > 100)
					return "a repetition count over 100";
				counts += (unsigned)(b > a ? b : a);
				if (counts > 256)
					return "repetition counts adding up to more than 256";
				while (j < n && s[j] != '}')
					j++;
				i = j;
			}
			if (depth < 12)
				group_quant[depth] = 1;
			prev_quant = 1;
			continue;
		}
		prev_quant = 0;
	}
	return NULL;
}

/* glibc compiles a regular expression by expanding its repetitions: stacked quantifiers
 * (a++++, (a*)*), large or nested counts ((a{100}){100}) cost time and memory without bound,
 * and back-references make matching exponential. The language keeps to what a rule needs. */
int pol_regex_check(const char *s, size_t n, char *err)
{
	if (n > POL_REGEX_MAX)
		return as_fail(err, AS_EINVAL, "a regular expression is at most %d bytes", POL_REGEX_MAX);
	const char *why = re_too_costly(s, n);
	if (why)
		return as_fail(err, AS_EINVAL, "regular expression refused: %s", why);
	for (size_t i = 0; i + 1 < n; i++)
		if (s[i] == '\\' && s[i + 1] >= '1' && s[i + 1] <= '9')
			return as_fail(err, AS_EINVAL, "back-references (\\%c) are not allowed in regular expressions",
				       s[i + 1]);
	char z[POL_REGEX_MAX + 1];
	memcpy(z, s, n);
	z[n] = 0;
	regex_t re;
	int rc = regcomp(&re, z, REG_EXTENDED);
	if (rc != 0) {
		char e[120];
		regerror(rc, &re, e, sizeof e);
		return as_fail(err, AS_EINVAL, "bad regular expression: %s", e);
	}
	regfree(&re);
	return 0;
}

/* ---- anchors ---- */

enum { A_START = 1, A_END = 2 };

static int is_quant(char c)
{
	return c == '*' || c == '+' || c == '?' || c == '{';
}

/* One past the token at s[i]: an escape, a bracket expression, a whole group, a {m,n}
 * count, or one character. Groups nest at most 10 deep (the cost guard), so does this. */
static size_t tok_end(const char *s, size_t i, size_t n)
{
	if (s[i] == '\\')
		return i + 2 < n ? i + 2 : n;
	if (s[i] == '[') {
		size_t e = bracket_end(s, i, n);
		return e < n ? e + 1 : n;
	}
	if (s[i] == '{') {
		const char *e = memchr(s + i, '}', n - i);
		return e ? (size_t)(e - s) + 1 : n;
	}
	if (s[i] == '(') {
		for (size_t j = i + 1; j < n; j = tok_end(s, j, n))
			if (s[j] == ')')
				return j + 1;
		return n;
	}
	return i + 1;
}

static unsigned alt_anchors(const char *s, size_t a, size_t b, int *one);

/* The group at s[a] ('(' through ')' at e - 1): the anchors all of its branches have. */
static unsigned group_anchors(const char *s, size_t a, size_t e)
{
	int ignored = 0;
	if (e < a + 2 || s[e - 1] != ')')
		return 0;
	return alt_anchors(s, a + 1, e - 1, &ignored);
}

/* A branch (no '|' at its level) is anchored at its start when it begins with ^ or \` (or a
 * group, not optional, whose every branch does), at its end when it ends with $ or \' (or a
 * group whose every branch does; a quantified last token anchors nothing). */
static unsigned branch_anchors(const char *s, size_t a, size_t b)
{
	if (a >= b)
		return 0;
	unsigned x = 0;
	size_t e = tok_end(s, a, b);
	if (s[a] == '^' || (s[a] == '\\' && a + 1 < b && s[a + 1] == '`'))
		x |= A_START;
	else if (s[a] == '(' && !(e < b && is_quant(s[e]) && s[e] != '+'))
		x |= group_anchors(s, a, e) & A_START;
	size_t last = a, i = a;
	int quant = 0;
	while (i < b) {
		size_t t = tok_end(s, i, b);
		quant = is_quant(s[i]);
		if (!quant)
			last = i;
		i = t;
	}
	if (quant)
		return x;
	if (s[last] == '$' || (s[last] == '\\' && last + 1 < b && s[last + 1] == '\''))
		x |= A_END;
	else if (s[last] == '(')
		x |= group_anchors(s, last, tok_end(s, last, b)) & A_END;
	return x;
}

/* The anchors every branch of s[a..b) has; *one is set when a branch has exactly one. */
static unsigned alt_anchors(const char *s, size_t a, size_t b, int *one)
{
	unsigned all = A_START | A_END;
	size_t from = a, i = a;
	for (;;) {
		if (i < b && s[i] != '|') {
			i = tok_end(s, i, b);
			continue;
		}
		unsigned x = branch_anchors(s, from, i);
		if (x == A_START || x == A_END)
			*one = (int)x;
		all &= x;
		if (i >= b)
			return all;
		from = ++i;
	}
}

int pol_regex_one_end(const char *s, size_t n)
{
	int one = 0;
	if (n <= POL_REGEX_MAX)
		alt_anchors(s, 0, n, &one);
	return one == A_START ? 1 : one == A_END ? 2 : 0;
}
