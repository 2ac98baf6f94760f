/* Unit tests for policy/: the evaluator as a table (each condition, each action,
 * first match, quorum, shadow) and the parser's errors and warnings (line, column,
 * the offending text; never a half-loaded policy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "policy/policy.h"

static struct policy *load(const char *src, struct pol_msgs *m)
{
	struct policy *p = NULL;
	int rc = policy_parse(src, strlen(src), &p, m);
	if (rc != 0) {
		for (size_t i = 0; i < m->n; i++)
			fprintf(stderr, "%u:%u: %s '%s'\n", m->m[i].line, m->m[i].col, m->m[i].msg, m->m[i].text);
		fail_msg("the policy did not load");
	}
	return p;
}

static struct pol_decision decide(const struct policy *p, const char *req)
{
	json_error_t je;
	json_t *j = json_loads(req, 0, &je);
	if (!j)
		fail_msg("bad test request %s: %s", req, je.text);
	const char *names[16];
	int computed[16];
	struct pol_request r;
	pol_request_from_json(j, &r, names, computed);
	struct pol_decision d;
	policy_eval(p, &r, &d);
	json_decref(j);
	return d;
}

/* Each row: one rule under test, then `default ask`; a request it must match (line 1)
 * and one it must not (the default, line 2). */
static const struct {
	const char *rule, *match, *miss;
} conds[] = {
    {"allow type confirmation", "{\"type\":\"confirmation\"}", "{\"type\":\"approval\"}"},
    {"allow type input,selection", "{\"type\":\"selection\"}", "{\"type\":\"approval\"}"},
    {"allow audience tf-*", "{\"type\":\"approval\",\"audience\":\"tf-prod\"}",
     "{\"type\":\"approval\",\"audience\":\"db\"}"},
    {"allow agent ci-bot", "{\"agent\":\"ci-bot\"}", "{\"agent\":\"other\"}"},
    {"allow uid 1000", "{\"uid\":1000}", "{\"uid\":1001}"},
    {"allow client claude*", "{\"client\":\"claude-code\"}", "{\"client\":\"cursor\"}"},
    {"allow subject *.tfplan", "{\"subject\":[{\"name\":\"x\"},{\"name\":\"a.tfplan\"}]}",
     "{\"subject\":{\"name\":\"a.txt\"}}"},
    {"allow subject given", "{\"subject\":{\"name\":\"x\"}}", "{}"},
    {"allow subject computed", "{\"subject\":{\"name\":\"x\",\"content\":\"aGk=\"}}",
     "{\"subject\":[{\"name\":\"x\",\"content\":\"\"},{\"name\":\"y\",\"digest\":{}}]}"},
    {"allow subject asserted", "{\"subject\":{\"name\":\"x\",\"digest\":{}}}",
     "{\"subject\":{\"name\":\"x\",\"content\":\"\"}}"},
    {"allow context.env = production", "{\"context\":{\"env\":\"production\"}}", "{\"context\":{\"env\":\"staging\"}}"},
    {"allow context.env != production", "{\"context\":{\"env\":\"staging\"}}", "{\"context\":{}}"},
    {"allow context.rows < 100", "{\"context\":{\"rows\":99}}", "{\"context\":{\"rows\":100}}"},
    {"allow context.rows > 100", "{\"context\":{\"rows\":100.5}}", "{\"context\":{\"rows\":\"1000\"}}"},
    {"allow context.rows <= 100", "{\"context\":{\"rows\":100}}", "{\"context\":{\"rows\":101}}"},
    {"allow context.rows >= 100", "{\"context\":{\"rows\":100}}", "{\"context\":{\"rows\":-5}}"},
    {"allow context.sql ~ \"^SELECT \"", "{\"context\":{\"sql\":\"SELECT 1\"}}", "{\"context\":{\"sql\":\"DELETE\"}}"},
    {"allow context.a.b.1 = true", "{\"context\":{\"a\":{\"b\":[false,true]}}}",
     "{\"context\":{\"a\":{\"b\":[true]}}}"},
    {"allow context.ticket exists", "{\"context\":{\"ticket\":null}}", "{\"context\":{\"tickets\":1}}"},
    {"allow message ~ \"rm -rf\"", "{\"message\":\"please rm -rf /tmp\"}", "{\"message\":\"ls\"}"},
    {"allow message = \"hi\"", "{\"message\":\"hi\"}", "{\"message\":\"hi!\"}"},
    {"allow risk >= high", "{\"context\":{\"risk\":\"critical\"}}", "{\"context\":{\"risk\":\"medium\"}}"},
    {"allow risk = low", "{\"context\":{\"risk\":\"low\"}}", "{\"context\":{\"risk\":\"unknown\"}}"},
    /* any case, in the request and in the rule; risk_level when there is no risk */
    {"allow risk >= high", "{\"context\":{\"risk\":\"HIGH\"}}", "{\"context\":{\"risk\":\"Medium\"}}"},
    {"allow risk >= HIGH", "{\"context\":{\"risk_level\":\"Critical\"}}", "{\"context\":{\"risk_level\":\"low\"}}"},
    {"allow risk = medium", "{\"context\":{\"risk\":\"medium\",\"risk_level\":\"high\"}}",
     "{\"context\":{\"risk\":\"high\",\"risk_level\":\"medium\"}}"},
    {"allow type approval audience prod", "{\"type\":\"approval\",\"audience\":\"prod\"}",
     "{\"type\":\"approval\",\"audience\":\"dev\"}"},
    /* gated calls to an upstream's tools */
    {"allow upstream fs", "{\"upstream\":\"fs\",\"tool\":\"read\"}", "{\"upstream\":\"db\",\"tool\":\"read\"}"},
    {"allow upstream f*", "{\"upstream\":\"files\"}", "{\"type\":\"approval\"}"},
    {"allow tool \"read_*\"", "{\"upstream\":\"fs\",\"tool\":\"read_file\"}",
     "{\"upstream\":\"fs\",\"tool\":\"write_file\"}"},
    {"allow upstream fs tool read", "{\"upstream\":\"fs\",\"tool\":\"read\"}",
     "{\"upstream\":\"db\",\"tool\":\"read\"}"},
    {"allow args.path ~ \"^/srv/\"", "{\"tool\":\"t\",\"arguments\":{\"path\":\"/srv/a\"}}",
     "{\"tool\":\"t\",\"arguments\":{\"path\":\"/etc/a\"}}"},
    {"allow args.paths.1 exists", "{\"arguments\":{\"paths\":[\"/a\",\"/b\"]}}",
     "{\"arguments\":{\"paths\":[\"/a\"]}}"},
    {"allow args.limit <= 100", "{\"arguments\":{\"limit\":10}}", "{\"arguments\":{\"limit\":1000}}"},
    {"allow args.path exists", "{\"arguments\":{\"path\":\"/a\"}}", "{\"context\":{\"path\":\"/a\"}}"},
    {"allow context.path exists", "{\"context\":{\"path\":\"/a\"}}", "{\"arguments\":{\"path\":\"/a\"}}"},
    {"allow annotation readonly", "{\"annotations\":{\"readOnlyHint\":true}}",
     "{\"annotations\":{\"readOnlyHint\":false}}"},
    {"allow annotation destructive", "{\"annotations\":{\"destructiveHint\":true}}", "{\"annotations\":{}}"},
    {"allow annotation idempotent", "{\"annotations\":{\"idempotentHint\":true}}",
     "{\"annotations\":{\"idempotentHint\":\"true\"}}"},
    {"allow annotation openworld", "{\"annotations\":{\"openWorldHint\":true}}",
     "{\"annotations\":{\"readOnlyHint\":true}}"},
};

static void test_conditions(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof conds / sizeof *conds; i++) {
		char src[512];
		snprintf(src, sizeof src, "%s\ndefault ask\n", conds[i].rule);
		struct pol_msgs m;
		struct policy *p = load(src, &m);
		struct pol_decision a = decide(p, conds[i].match), b = decide(p, conds[i].miss);
		if (a.action != POL_ALLOW || a.line != 1 || b.action != POL_ASK || b.line != 2 || !b.by_default)
			fail_msg("row %zu (%s): match -> %s line %u, miss -> %s line %u", i, conds[i].rule,
				 pol_action_name(a.action), a.line, pol_action_name(b.action), b.line);
		policy_free(p);
	}
}

static void test_actions_and_options(void **state)
{
	(void)state;
	struct pol_msgs m;
	struct policy *p =
	    load("# first match wins\n"
		 "deny context.sql ~ \"DROP[[:space:]]+COLUMN\" reason \"dropping columns needs a migration review\"\n"
		 "ask audience tf-prod reviewers group:infra quorum 2 deadline 1800 on-timeout deny "
		 "channels terminal,web token-ttl 600 token-audience tf-apply\n"
		 "allow type confirmation context.readonly = true token-ttl 60\n"
		 "ask reviewers alice,bob quorum 2 same-user ok\n"
		 "default deny reason \"not covered by the policy\"\n",
		 &m);
	assert_int_equal(policy_nrules(p), 5);
	assert_int_equal(strlen(policy_digest(p)), 64);
	struct pol_decision d = decide(
	    p, "{\"type\":\"approval\",\"audience\":\"tf-prod\",\"context\":{\"sql\":\"ALTER t DROP  COLUMN c\"}}");
	assert_int_equal(d.action, POL_DENY);
	assert_int_equal(d.line, 2);
	assert_string_equal(d.reason, "dropping columns needs a migration review");
	d = decide(p, "{\"type\":\"approval\",\"audience\":\"tf-prod\"}");
	assert_int_equal(d.action, POL_ASK);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.nreviewers, 1);
	assert_string_equal(d.reviewers[0], "group:infra");
	assert_int_equal(d.quorum, 2);
	assert_int_equal(d.deadline_s, 1800);
	assert_true(d.timeout_denies);
	assert_int_equal(d.channels, POL_CH_TERMINAL | POL_CH_WEB);
	assert_int_equal(d.token_ttl_s, 600);
	assert_string_equal(d.token_audience, "tf-apply");
	d = decide(p, "{\"type\":\"confirmation\",\"context\":{\"readonly\":true}}");
	assert_int_equal(d.action, POL_ALLOW);
	assert_int_equal(d.token_ttl_s, 60);
	d = decide(p, "{\"type\":\"input\"}");
	assert_int_equal(d.action, POL_ASK);
	assert_int_equal(d.line, 5);
	assert_int_equal(d.nreviewers, 2);
	assert_true(d.same_user_ok);
	assert_false(d.passkey);
	policy_free(p);
	/* assurance passkey: the rule's approvals need the reviewer's passkey; a host enforces it */
	p = load("ask type approval assurance passkey quorum 2\ndefault ask\n", &m);
	d = decide(p, "{\"type\":\"approval\"}");
	assert_true(d.passkey);
	assert_int_equal(d.quorum, 2);
	unsigned first;
	assert_int_equal(policy_uses(p, POL_USES_PASSKEY, &first), POL_USES_PASSKEY);
	assert_int_equal(first, 1);
	d = decide(p, "{\"type\":\"input\"}");
	assert_false(d.passkey);
	policy_free(p);
	/* the default decides when nothing matches */
	p = load("allow type confirmation\ndefault deny reason \"no\"\n", &m);
	d = decide(p, "{\"type\":\"approval\"}");
	assert_int_equal(d.action, POL_DENY);
	assert_true(d.by_default);
	assert_string_equal(d.reason, "no");
	policy_free(p);
}

static void test_shadow(void **state)
{
	(void)state;
	struct pol_msgs m;
	/* A shadow rule: recorded, and a person is asked all the same. */
	struct policy *p =
	    load("shadow allow type confirmation\nallow type confirmation audience dev\ndefault ask\n", &m);
	struct pol_decision d = decide(p, "{\"type\":\"confirmation\",\"audience\":\"dev\"}");
	assert_int_equal(d.action, POL_ASK);
	assert_true(d.shadowed);
	assert_int_equal(d.shadow_action, POL_ALLOW);
	assert_int_equal(d.shadow_line, 1);
	assert_int_equal(d.line, 2); /* the rule that would decide without the shadow one */
	d = decide(p, "{\"type\":\"approval\"}");
	assert_false(d.shadowed);
	assert_true(d.by_default);
	policy_free(p);
	/* A shadow policy: every decision is recorded, every request asked. */
	p = load("policy shadow\ndeny type approval reason \"r\"\ndefault allow\n", &m);
	d = decide(p, "{\"type\":\"approval\"}");
	assert_int_equal(d.action, POL_ASK);
	assert_int_equal(d.shadow_action, POL_DENY);
	assert_int_equal(d.shadow_line, 2);
	assert_string_equal(d.reason, "");
	d = decide(p, "{\"type\":\"input\"}");
	assert_int_equal(d.action, POL_ASK);
	assert_int_equal(d.shadow_action, POL_ALLOW);
	policy_free(p);
	/* a decision on a declared client name says so; check warns about allowing on it */
	p = load("allow client claude*\ndefault ask\n", &m);
	assert_int_equal(m.warnings, 1);
	assert_non_null(strstr(m.m[0].msg, "declares"));
	d = decide(p, "{\"client\":\"claude-code\"}");
	assert_int_equal(d.action, POL_ALLOW);
	assert_true(d.on_declared);
	d = decide(p, "{\"client\":\"x\"}");
	assert_false(d.on_declared);
	policy_free(p);
}

/* Each row: a policy that must not load, the line and column of its first error,
 * and a word of the message. */
static const struct {
	const char *src;
	unsigned line, col;
	const char *says;
} errors[] = {
    {"allow\n", 1, 0, "no default"},
    {"allow type approvals\ndefault ask\n", 1, 12, "type"},
    {"allow colour red\ndefault ask\n", 1, 7, "unknown word"},
    {"allow annotation sideways\ndefault ask\n", 1, 18, "not an annotation"},
    {"allow args. = 1\ndefault ask\n", 1, 7, "args.KEY"},
    {"allow args.path like x\ndefault ask\n", 1, 17, "unknown operator"},
    {"allow upstream\ndefault ask\n", 1, 15, "upstream server"},
    {"deny type approval\ndefault ask\n", 1, 1, "reason"},
    {"allow context.sql ~ \"(\"\ndefault ask\n", 1, 21, "regular expression"},
    {"allow message ~ \"(a+)+\"\ndefault ask\n", 1, 17, "refused"},
    {"allow message ~ \"(x)\\1\"\ndefault ask\n", 1, 17, "back-references"},
    {"allow context.rows < many\ndefault ask\n", 1, 22, "numbers"},
    {"allow context..x exists\ndefault ask\n", 1, 7, "context path"},
    {"ask quorum 17\ndefault ask\n", 1, 12, "quorum"},
    {"ask reviewers alice quorum 2\ndefault ask\n", 1, 1, "quorum 2 needs"},
    {"allow quorum 2\ndefault ask\n", 1, 7, "option of ask"},
    {"allow message ~ \"x\ndefault ask\n", 1, 17, "unterminated"},
    {"default ask\nallow type input\n", 2, 1, "after the default"},
    {"default ask type input\n", 1, 13, "no conditions"},
    {"allow risk > huge\ndefault ask\n", 1, 14, "risk level"},
    {"allow\npolicy shadow\ndefault ask\n", 2, 1, "before every rule"},
    {"allow uid -1\ndefault ask\n", 1, 11, "uid"},
    {"ask deadline 0\ndefault ask\n", 1, 14, "seconds"},
    {"ask channels phone\ndefault ask\n", 1, 14, "channel"},
    {"ask assurance fingerprint\ndefault ask\n", 1, 15, "assurance takes passkey"},
    {"allow assurance passkey\ndefault ask\n", 1, 7, "option of ask"},
    {"ask assurance passkey channels terminal\ndefault ask\n", 1, 1, "must include web"},
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
		struct policy *p = (struct policy *)1;
		struct pol_msgs m;
		int rc = policy_parse(errors[i].src, strlen(errors[i].src), &p, &m);
		if (rc != AS_EINVAL || p || m.errors == 0 || m.m[0].warning || m.m[0].line != errors[i].line ||
		    m.m[0].col != errors[i].col || !strstr(m.m[0].msg, errors[i].says))
			fail_msg("row %zu: rc %d, %zu errors, first %u:%u '%s' (%s)", i, rc, m.errors,
				 m.n ? m.m[0].line : 0, m.n ? m.m[0].col : 0, m.n ? m.m[0].msg : "",
				 m.n ? m.m[0].text : "");
	}
	/* limits: the file size, the rule count, control characters, invalid UTF-8 */
	struct policy *p;
	struct pol_msgs m;
	char *big = malloc(POL_FILE_MAX + 2);
	memset(big, '#', POL_FILE_MAX + 1);
	big[POL_FILE_MAX + 1] = 0;
	assert_int_equal(policy_parse(big, POL_FILE_MAX + 1, &p, &m), AS_EINVAL);
	assert_non_null(strstr(m.m[0].msg, "over the limit"));
	size_t n = 0;
	for (int i = 0; i <= POL_RULES_MAX; i++)
		n += (size_t)snprintf(big + n, POL_FILE_MAX + 2 - n, "allow uid %d\n", i);
	snprintf(big + n, POL_FILE_MAX + 2 - n, "default ask\n");
	assert_int_equal(policy_parse(big, strlen(big), &p, &m), AS_EINVAL);
	assert_non_null(strstr(m.m[0].msg, "more than"));
	free(big);
	assert_int_equal(policy_parse("allow\001\ndefault ask\n", 19, &p, &m), AS_EINVAL);
	assert_int_equal(policy_parse("allow \xff\ndefault ask\n", 19, &p, &m), AS_EINVAL);
}

static void test_warnings(void **state)
{
	(void)state;
	struct pol_msgs m;
	struct policy *p = load("allow type input\nallow type input\nallow type input type approval\nask\n"
				"deny type approval reason \"r\"\ndefault ask\n",
				&m);
	assert_int_equal(m.errors, 0);
	assert_int_equal(m.warnings, 3);
	assert_int_equal(m.m[0].line, 2); /* same conditions as line 1 */
	assert_non_null(strstr(m.m[0].msg, "line 1"));
	assert_int_equal(m.m[1].line, 3); /* types exclude each other */
	assert_int_equal(m.m[2].line, 5); /* after the catch-all on line 4 */
	assert_non_null(strstr(m.m[2].msg, "line 4"));
	policy_free(p);
}

/* A pattern anchored at one end only (issue 28): 1 at its start, 2 at its end, 0 otherwise. */
static const struct {
	const char *re;
	int want;
} one_end[] = {
    {"^SELECT", 1},
    {"^[[:space:]]*SELECT[[:space:]]", 1},
    {"done$", 2},
    {"^SELECT[^;]*$", 0},
    {"\\`SELECT[^;]*\\'", 0}, /* glibc's buffer anchors count as anchors */
    {"\\`SELECT", 1},
    {"SELECT\\'", 2},
    {"SELECT", 0}, /* anchored at neither end: a search, not a broken whole-string match */
    {"^a\\$", 1},  /* an escaped $ is a dollar sign */
    {"^a[$]", 1},  /* so is one in brackets */
    {"^a$|^b", 1}, /* every branch counts */
    {"^a$|b$", 2},
    {"^a$|b", 0}, /* a branch anchored at neither end */
    {"^(a|b)$", 0},
    {"^(a$|b$)", 0}, /* the group's branches carry the end */
    {"^(a$|b)", 1},  /* ... all of them, or it is not anchored */
    {"(^a|^b)x$", 0},
    {"(^a)?b$", 2}, /* an optional group anchors nothing */
    {"(^a)+b$", 0},
    {"^a(b$)*", 1}, /* nor does a repeated last group */
    {"^(S|s)[^;]*([^;]|$)", 1},
    {"", 0},
};

static void test_one_end(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof one_end / sizeof *one_end; i++) {
		char err[AS_ERRLEN];
		const char *re = one_end[i].re;
		if (pol_regex_check(re, strlen(re), err) != 0)
			fail_msg("row %zu: '%s' does not compile: %s", i, re, err);
		int got = pol_regex_one_end(re, strlen(re));
		if (got != one_end[i].want)
			fail_msg("row %zu: '%s': %d, wanted %d", i, re, got, one_end[i].want);
	}
	/* A warning for an allow rule, at the pattern's column, naming it; never an error, and
	 * none for ask and deny rules (a person or a refusal is what their pattern leads to). */
	struct pol_msgs m;
	struct policy *p = load("ask upstream db args.sql ~ \"^DROP\"\n"
				"deny message ~ \"^rm\" reason \"r\"\n"
				"allow upstream db tool query args.sql ~ \"^[[:space:]]*SELECT[[:space:]]\"\n"
				"allow message ~ \"^yes$\"\n"
				"default ask\n",
				&m);
	assert_int_equal(m.errors, 0);
	assert_int_equal(m.warnings, 1);
	assert_int_equal(m.m[0].warning, 1);
	assert_int_equal(m.m[0].line, 3);
	assert_int_equal(m.m[0].col, 41);
	assert_string_equal(m.m[0].text, "^[[:space:]]*SELECT[[:space:]]");
	assert_non_null(strstr(m.m[0].msg, "anchored at its start only"));
	policy_free(p);
}

/* An allow rule issues tokens only for an audience it names (issue 12, section 5). */
static void test_allow_audience(void **state)
{
	(void)state;
	struct pol_msgs m;
	struct policy *p = load("allow type confirmation\n"
				"allow agent ci audience staging\n"
				"allow type approval token-audience build\n"
				"ask audience production\n"
				"default allow\n",
				&m);
	struct pol_decision d = decide(p, "{\"type\":\"confirmation\",\"audience\":\"production\"}");
	assert_int_equal(d.action, POL_DENY); /* not the ask on line 4: the first match decides, and it may not issue */
	assert_int_equal(d.line, 1);
	assert_non_null(strstr(d.reason, "\"production\""));
	assert_non_null(strstr(d.reason, "\"assent\""));
	d = decide(p, "{\"type\":\"confirmation\"}");
	assert_int_equal(d.action, POL_ALLOW);
	d = decide(p, "{\"type\":\"confirmation\",\"audience\":\"assent\"}");
	assert_int_equal(d.action, POL_ALLOW);
	d = decide(p, "{\"type\":\"input\",\"agent\":\"ci\",\"audience\":\"staging\"}");
	assert_int_equal(d.action, POL_ALLOW); /* the rule names it */
	d = decide(p, "{\"type\":\"approval\",\"audience\":\"production\"}");
	assert_int_equal(d.action, POL_ALLOW); /* token-audience sets the token's: build */
	assert_string_equal(d.token_audience, "build");
	d = decide(p, "{\"type\":\"input\",\"audience\":\"production\"}");
	assert_int_equal(d.action, POL_ASK);
	d = decide(p, "{\"type\":\"input\",\"audience\":\"other\"}");
	assert_int_equal(d.action, POL_DENY); /* default allow names no audience either */
	assert_int_equal(d.line, 5);
	policy_free(p);
	/* In shadow mode a person is asked all the same: nothing to refuse. */
	p = load("shadow allow type confirmation\ndefault ask\n", &m);
	d = decide(p, "{\"type\":\"confirmation\",\"audience\":\"production\"}");
	assert_int_equal(d.action, POL_ASK);
	policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conditions),	   cmocka_unit_test(test_actions_and_options),
	    cmocka_unit_test(test_shadow),	   cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_warnings),	   cmocka_unit_test(test_one_end),
	    cmocka_unit_test(test_allow_audience),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
