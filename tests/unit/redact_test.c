/* Unit tests for common/redact.c: every secret key name and every text pattern in
 * a test of its own (secret gone, surrounding text kept, exact output), the prose
 * that must survive, operator rules, idempotence, linear time on hostile input,
 * and the exact truncation marker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/redact.h"

/* ---- helpers ---- */

static char *redacted(const char *in, const struct redact_rules *r, struct redact_stats *st)
{
	struct buf b;
	size_t n = strlen(in);
	buf_init(&b, 10 * n + 16);
	assert_int_equal(redact_text(in, n, r, &b, st), 0);
	char *s = malloc(b.len + 1);
	assert_non_null(s);
	if (b.len)
		memcpy(s, b.p, b.len);
	s[b.len] = 0;
	buf_free(&b);
	return s;
}

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (!j)
		fail_msg("test JSON does not parse: %s: %s", je.text, text);
	return j;
}

static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_non_null(s);
	return s;
}

/* ---- one test per secret key name ---- */

struct key_case {
	const char *key;
};

static const struct key_case key_cases[] = {
    {"password"},
    {"passwd"},
    {"passphrase"},
    {"secret"},
    {"token"},
    {"access_token"},
    {"refresh_token"},
    {"id_token"},
    {"api_key"},
    {"apikey"},
    {"authorization"},
    {"proxy-authorization"},
    {"client_secret"},
    {"private_key"},
    {"secret_key"},
    {"secret_access_key"},
    {"aws_secret_access_key"},
    {"cookie"},
    {"set-cookie"},
    /* case and '-' = '_' */
    {"PASSWORD"},
    {"Authorization"},
    {"Set-Cookie"},
    {"API-KEY"},
    {"ApiKey"},
    /* suffix rules */
    {"openai_api_key"},
    {"X-Api-Key"},
    {"github_token"},
    {"X-Auth-Token"},
    {"csrf_token"},
    {"webhook_secret"},
    {"db_password"},
    {"DB_PASSWORD"},
    {"smtp_passwd"},
};

/* A header's value after a scheme word whose word a prefix rule would mask on its own: the
 * second pass consumes the first pass's mark as it did the value, so the scheme word stays
 * shown both times (fuzz/redact found "Cookie: REDACTEDPH...\tcket=T-1" redacted twice over). */
static void test_header_scheme_idempotent(void **state)
{
	(void)state;
	static const char *const prefixes[] = {"tok"};
	const struct redact_rules r = {NULL, 0, prefixes, 1, 0};
	char *once = redacted("Cookie: tokabcdefgh\tx9Kp2mQ7zL4vR8wJ3", &r, NULL);
	assert_non_null(strstr(once, "tokabcdefgh"));
	assert_null(strstr(once, "x9Kp2mQ7zL4vR8wJ3"));
	char *twice = redacted(once, &r, NULL);
	assert_string_equal(once, twice);
	free(once);
	free(twice);
}

static void test_key(void **state)
{
	const struct key_case *c = *state;
	char text[512];
	snprintf(text, sizeof text,
		 "{\"outer\":{\"list\":[{\"%s\":\"s3cr3t-VALUE-123\",\"note\":\"kept\"}],\"other\":\"visible\"}}",
		 c->key);
	json_t *j = parse(text);
	struct redact_stats st = {0, 0, 0};
	assert_int_equal(redact_json(j, NULL, &st), 0);
	json_t *item = json_array_get(json_object_get(json_object_get(j, "outer"), "list"), 0);
	assert_string_equal(json_string_value(json_object_get(item, c->key)), REDACT_MARK);
	assert_string_equal(json_string_value(json_object_get(item, "note")), "kept");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "outer"), "other")), "visible");
	assert_int_equal(st.keys, 1);
	char *s = dump(j);
	assert_null(strstr(s, "s3cr3t"));
	free(s);
	json_decref(j);
	/* the same key in key=value text */
	snprintf(text, sizeof text, "before %s=s3cr3tValue9 after", c->key);
	char *out = redacted(text, NULL, NULL);
	char want[512];
	snprintf(want, sizeof want, "before %s=" REDACT_MARK " after", c->key);
	assert_string_equal(out, want);
	free(out);
}

/* Key names that look related but are not secrets: left alone. */
static void test_key_lookalikes_kept(void **state)
{
	(void)state;
	const char *keys[] = {"tokenizer",	     "max_tokens", "tokens", "passwordless",
			      "password_hint_shown", "secretary",  "author", "cookies_enabled",
			      "token_count",	     "key",	   "name"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		assert_int_equal(redact_key_secret(keys[i], strlen(keys[i]), NULL), 0);
		char text[256];
		snprintf(text, sizeof text, "{\"%s\":\"value-42\"}", keys[i]);
		json_t *j = parse(text);
		struct redact_stats st = {0, 0, 0};
		assert_int_equal(redact_json(j, NULL, &st), 0);
		assert_string_equal(json_string_value(json_object_get(j, keys[i])), "value-42");
		assert_int_equal(st.keys, 0);
		json_decref(j);
	}
	/* "_token" alone is not "something ending in _token" */
	assert_int_equal(redact_key_secret("_token", 6, NULL), 0);
	assert_int_equal(redact_key_secret("a_token", 7, NULL), 1);
}

static void test_key_value_types(void **state)
{
	(void)state;
	json_t *j = parse("{\"password\":null,\"token\":true,\"secret\":false,\"api_key\":\"\","
			  "\"authorization\":{\"type\":\"oauth\",\"scopes\":[\"a\"]},\"cookie\":[\"a=1\"],"
			  "\"passwd\":12345,\"client_secret\":1.5}");
	struct redact_stats st = {0, 0, 0};
	assert_int_equal(redact_json(j, NULL, &st), 0);
	char *s = dump(j);
	/* null, booleans and "" carry no secret and stay; everything else goes whole */
	assert_string_equal(s, "{\"password\":null,\"token\":true,\"secret\":false,\"api_key\":\"\","
			       "\"authorization\":\"[REDACTED]\",\"cookie\":\"[REDACTED]\",\"passwd\":\"[REDACTED]\","
			       "\"client_secret\":\"[REDACTED]\"}");
	assert_int_equal(st.keys, 4);
	free(s);
	json_decref(j);
}

static void test_name_value_entries(void **state)
{
	(void)state;
	/* Kubernetes env and HAR headers: the secret's name is a sibling */
	json_t *j = parse("{\"env\":[{\"name\":\"DB_PASSWORD\",\"value\":\"hunter2\"},{\"name\":\"LOG_LEVEL\","
			  "\"value\":\"debug\"}],\"headers\":[{\"key\":\"Authorization\",\"value\":\"xyz\"}]}");
	struct redact_stats st = {0, 0, 0};
	assert_int_equal(redact_json(j, NULL, &st), 0);
	char *s = dump(j);
	assert_string_equal(
	    s, "{\"env\":[{\"name\":\"DB_PASSWORD\",\"value\":\"[REDACTED]\"},{\"name\":\"LOG_LEVEL\","
	       "\"value\":\"debug\"}],\"headers\":[{\"key\":\"Authorization\",\"value\":\"[REDACTED]\"}]}");
	assert_int_equal(st.keys, 2);
	free(s);
	json_decref(j);
}

/* ---- one test per text pattern ---- */

struct pattern_case {
	const char *name, *in, *want, *secret;
};

#define GH36 "1234567890abcdefghijABCDEFGHIJ123456"
static const struct pattern_case pattern_cases[] = {
    {"jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.abc_DEF-123 end", "jwt [REDACTED] end", "eyJhbGci"},
    {"jwt in a sentence", "token was (eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.sig).", "token was ([REDACTED]).", "eyJhIjox"},
    {"bearer", "use Bearer abc123def456ghi789 here", "use Bearer [REDACTED] here", "abc123def456"},
    {"bearer long opaque", "bearer abcdefghijklmnopqrstuvwxyz now", "bearer [REDACTED] now", "abcdefghijklmnop"},
    {"bearer jwt", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "Bearer [REDACTED]", "eyJ"},
    {"basic", "Basic dXNlcjpwYXNzd29yZA== sent", "Basic [REDACTED] sent", "dXNlcjpw"},
    {"authorization header", "curl -H 'Authorization: Bearer abc123def456' https://x.example/",
     "curl -H 'Authorization: Bearer [REDACTED]' https://x.example/", "abc123def456"},
    {"openai sk", "key sk-proj-Abc123def456GHI789jkl012 ok", "key [REDACTED] ok", "Abc123def"},
    {"openai sk legacy", "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl", "[REDACTED]", "AbCdEf"},
    {"anthropic sk-ant", "ANTHROPIC=sk-ant-api03-AbC123xyz456_def789-ghiJKL0 done", "ANTHROPIC=[REDACTED] done",
     "api03"},
    {"github ghp", "push with ghp_" GH36 " now", "push with [REDACTED] now", GH36},
    {"github gho", "gho_" GH36, "[REDACTED]", GH36},
    {"github ghu", "(ghu_" GH36 ")", "([REDACTED])", GH36},
    {"github ghs", "ghs_" GH36 ",", "[REDACTED],", GH36},
    {"github ghr", "x ghr_" GH36, "x [REDACTED]", GH36},
    {"github fine-grained pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123 end", "[REDACTED] end",
     "11ABCDEFG"},
    {"slack xoxb", "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx ok", "slack [REDACTED] ok",
     "AbCdEf"},
    {"slack xoxp", "xoxp-1234567890-abcdefghij", "[REDACTED]", "abcdefghij"},
    {"slack xoxa", "xoxa-2-1234567890-abcdef", "[REDACTED]", "1234567890"},
    {"slack xoxr", "xoxr-1234567890-abcdef", "[REDACTED]", "1234567890"},
    {"slack xoxs", "xoxs-1234567890-abcdef", "[REDACTED]", "1234567890"},
    {"aws akia", "id AKIAIOSFODNN7EXAMPLE, region", "id [REDACTED], region", "IOSFODNN"},
    {"aws asia", "ASIAY34FZKBOKMUTVV7A", "[REDACTED]", "Y34FZKB"},
    {"aws secret access key", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion=us-east-1",
     "aws_secret_access_key=[REDACTED]\nregion=us-east-1", "wJalrX"},
    {"aws secret in ini", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = [REDACTED]", "wJalrX"},
    {"pypi", "TWINE_PASSWORD pypi-AgEIcHlwaS5vcmcCJGE0ZjQ1YjYtYjYwZC00 set", "TWINE_PASSWORD [REDACTED] set",
     "AgEIcHl"},
    {"password in query string", "https://x.example/login?user=bob&password=hunter2&next=/",
     "https://x.example/login?user=bob&password=[REDACTED]&next=/", "hunter2"},
    {"passwd key=value", "mysql passwd=s3cr3t host=db", "mysql passwd=[REDACTED] host=db", "s3cr3t"},
    {"password colon with digits", "password: hunter2", "password: [REDACTED]", "hunter2"},
    {"quoted json in text", "config {\"client_secret\": \"abc\", \"id\": 7}",
     "config {\"client_secret\": \"[REDACTED]\", \"id\": 7}", "abc"},
    {"escaped json in text", "{\\\"password\\\":\\\"pw xyz\\\"}", "{\\\"password\\\":\\\"[REDACTED]\\\"}", "pw xyz"},
    {"python dict", "{'api_key': 'k-1', 'x': 1}", "{'api_key': '[REDACTED]', 'x': 1}", "k-1"},
    {"env export", "export GITHUB_TOKEN=abc; DB_PASSWORD='x y' && go",
     "export GITHUB_TOKEN=[REDACTED]; DB_PASSWORD='[REDACTED]' && go", "x y"},
    {"url userinfo", "dsn postgres://app:s3cret@db:5432/prod ok", "dsn postgres://app:[REDACTED]@db:5432/prod ok",
     "s3cret"},
    {"url userinfo empty user", "redis://:pa55word@cache:6379/0", "redis://:[REDACTED]@cache:6379/0", "pa55word"},
    {"cookie header", "Cookie: session=abc123; theme=dark\nnext line", "Cookie: [REDACTED]; theme=dark\nnext line",
     "abc123"},
    {"api key header", "X-Api-Key: 9f8e7d6c", "X-Api-Key: [REDACTED]", "9f8e7d6c"},
    {"go assignment", "token := \"tok-1\"", "token := \"[REDACTED]\"", "tok-1"},
    {"ruby hash", "'secret' => 'xyz'", "'secret' => '[REDACTED]'", "xyz"},
};

static void test_pattern(void **state)
{
	const struct pattern_case *c = *state;
	struct redact_stats st = {0, 0, 0};
	char *out = redacted(c->in, NULL, &st);
	assert_string_equal(out, c->want);
	assert_null(strstr(out, c->secret));
	assert_true(st.patterns >= 1);
	/* idempotent: a second pass changes nothing and finds nothing new */
	struct redact_stats st2 = {0, 0, 0};
	char *again = redacted(out, NULL, &st2);
	assert_string_equal(again, out);
	assert_int_equal(st2.patterns, 0);
	free(again);
	/* the same text as a JSON string value at depth, under an innocent key */
	json_t *j = json_pack("{s:[{s:s}]}", "items", "text", c->in);
	assert_non_null(j);
	assert_int_equal(redact_json(j, NULL, NULL), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "text")),
			    c->want);
	json_decref(j);
	free(out);
}

/* Prose and near misses that must come out unchanged (the false positives we
 * decided against; see redact.h). */
static void test_prose_kept(void **state)
{
	(void)state;
	const char *texts[] = {
	    "tokenize the input before the passwordless login",
	    "the password is stored hashed; reset it via the portal",
	    "password: use a strong one",
	    "Bearer tokens are described in RFC 6750",
	    "Basic authentication is disabled",
	    "pip install sk-learn-compatible-estimators-and-pipelines",
	    "task-1234567890abcdefghijklmnopqrstuvwxyz is a task id",
	    "max_tokens=100 and tokens: many",
	    "eyJhbGciOiJIUzI1NiJ9 alone is just base64",
	    "AKIAIOSFODNN7EXAMPLEXX is too long, AKIA1234 too short",
	    "https://example.com:8080/path?q=1 and mailto:user@example.com",
	    "ghp_short and xoxb-123 are too short",
	    "the secret sauce; a token gesture",
	    "",
	};
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		struct redact_stats st = {0, 0, 0};
		char *out = redacted(texts[i], NULL, &st);
		if (strcmp(out, texts[i]) != 0)
			fail_msg("prose changed: \"%s\" -> \"%s\"", texts[i], out);
		assert_int_equal(st.patterns, 0);
		free(out);
	}
}

static void test_non_ascii_kept(void **state)
{
	(void)state;
	const char *in = "Größe ✓ password=pässwört zwölf";
	char *out = redacted(in, NULL, NULL);
	assert_string_equal(out, "Größe ✓ password=[REDACTED] zwölf");
	free(out);
}

/* ---- operator rules ---- */

static void test_operator_key(void **state)
{
	(void)state;
	const char *keys[] = {"session_key", "X-Vault.Role"};
	struct redact_rules r = {keys, 2, NULL, 0, 0};
	assert_int_equal(redact_rules_check(&r, NULL), 0);
	json_t *j = parse("{\"Session-Key\":\"abc\",\"x-vault.role\":\"r\",\"session\":\"kept\"}");
	struct redact_stats st = {0, 0, 0};
	assert_int_equal(redact_json(j, &r, &st), 0);
	char *s = dump(j);
	assert_string_equal(s, "{\"Session-Key\":\"[REDACTED]\",\"x-vault.role\":\"[REDACTED]\",\"session\":\"kept\"}");
	free(s);
	json_decref(j);
	char *out = redacted("login session_key=abc ok", &r, NULL);
	assert_string_equal(out, "login session_key=[REDACTED] ok");
	free(out);
	/* without the rules the same input is untouched */
	out = redacted("login session_key=abc ok", NULL, NULL);
	assert_string_equal(out, "login session_key=abc ok");
	free(out);
}

static void test_operator_prefix(void **state)
{
	(void)state;
	const char *prefixes[] = {"glpat-", "ACME_"};
	struct redact_rules r = {NULL, 0, prefixes, 2, 0};
	assert_int_equal(redact_rules_check(&r, NULL), 0);
	char *out = redacted("gitlab glpat-abcdefghijklmnopqrst and ACME_0123456789 but glpat-short, xglpat-abcdefghij",
			     &r, NULL);
	assert_string_equal(out, "gitlab [REDACTED] and [REDACTED] but glpat-short, xglpat-abcdefghij");
	free(out);
	out = redacted("gitlab glpat-abcdefghijklmnopqrst", NULL, NULL);
	assert_string_equal(out, "gitlab glpat-abcdefghijklmnopqrst");
	free(out);
}

static void test_rules_check(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	const char *empty[] = {""}, *space[] = {"a b"}, *shortp[] = {"ab"}, *dotp[] = {"ab.c"}, *nul[] = {NULL};
	char big[REDACT_NAME_MAX + 2];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	const char *bigp[] = {big};
	struct redact_rules bad[] = {
	    {empty, 1, NULL, 0, 0}, {space, 1, NULL, 0, 0},  {nul, 1, NULL, 0, 0},
	    {bigp, 1, NULL, 0, 0},  {NULL, 0, shortp, 1, 0}, {NULL, 0, dotp, 1, 0},
	    {NULL, 0, bigp, 1, 0},  {NULL, 1, NULL, 0, 0},   {NULL, REDACT_RULES_MAX + 1, NULL, 0, 0},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = 0;
		assert_int_equal(redact_rules_check(&bad[i], err), AS_EINVAL);
		assert_true(strlen(err) > 10);
	}
	assert_int_equal(redact_rules_check(NULL, err), 0);
	const char *ok[] = {"abc"};
	struct redact_rules good = {ok, 1, ok, 1, 0};
	assert_int_equal(redact_rules_check(&good, err), 0);
}

/* ---- JSON walking ---- */

static void test_json_any_depth_and_top_level(void **state)
{
	(void)state;
	json_t *s = json_string("call with Bearer abc123def456ghi please");
	assert_int_equal(redact_json(s, NULL, NULL), 0);
	assert_string_equal(json_string_value(s), "call with Bearer [REDACTED] please");
	json_decref(s);
	/* 100 levels of arrays with a secret at the bottom */
	char text[1024];
	memset(text, '[', 100);
	memcpy(text + 100, "{\"token\":\"t-1\"}", 15);
	memset(text + 115, ']', 100);
	text[215] = 0;
	json_t *j = parse(text);
	assert_int_equal(redact_json(j, NULL, NULL), 0);
	char *d = dump(j);
	assert_null(strstr(d, "t-1"));
	free(d);
	json_decref(j);
	/* past REDACT_DEPTH_MAX: refused rather than walked */
	json_t *deep = json_array(), *cur = deep;
	for (int i = 0; i < REDACT_DEPTH_MAX + 2; i++) {
		json_t *n = json_array();
		json_array_append_new(cur, n);
		cur = n;
	}
	assert_int_equal(redact_json(deep, NULL, NULL), AS_EINVAL);
	json_decref(deep);
	assert_int_equal(redact_json(NULL, NULL, NULL), AS_EINVAL);
}

static void test_json_idempotent(void **state)
{
	(void)state;
	json_t *j = parse("{\"a\":\"password=x&token=eyJa.eyJb.c\",\"token\":{\"x\":1},\"b\":[\"ghp_" GH36 "\"],"
			  "\"env\":[{\"name\":\"API_KEY\",\"value\":\"v\"}]}");
	struct redact_stats st = {0, 0, 0};
	assert_int_equal(redact_json(j, NULL, &st), 0);
	char *first = dump(j);
	assert_true(st.keys == 2 && st.patterns == 3);
	struct redact_stats st2 = {0, 0, 0};
	assert_int_equal(redact_json(j, NULL, &st2), 0);
	char *second = dump(j);
	assert_string_equal(first, second);
	assert_int_equal(st2.keys + st2.patterns, 0);
	free(first);
	free(second);
	json_decref(j);
}

static void test_text_output_bound(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b, 12);
	assert_int_equal(buf_put(&b, "ab", 2), 0);
	/* "password=x" becomes 19 bytes: over the buffer's 12, and nothing is appended */
	assert_int_equal(redact_text("password=x", 10, NULL, &b, NULL), AS_ETOOBIG);
	assert_int_equal(b.len, 2);
	buf_free(&b);
}

/* Hostile text must cost time linear in its length: each of these would be
 * quadratic for a matcher that rescans from every position. */
static void test_linear_time(void **state)
{
	(void)state;
	const char *units[] = {"eyJ", "eyJa.", "password=\"", "://a:", "Bearer ", "a:b:", "sk-", "token: "};
	size_t n = 1u << 20;
	char *in = malloc(n + 1);
	assert_non_null(in);
	for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
		size_t k = strlen(units[u]);
		for (size_t i = 0; i < n; i++)
			in[i] = units[u][i % k];
		in[n] = 0;
		struct buf b;
		buf_init(&b, 10 * n + 16);
		clock_t t0 = clock();
		assert_int_equal(redact_text(in, n, NULL, &b, NULL), 0);
		double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
		if (secs > 3.0)
			fail_msg("redacting 1 MiB of \"%s\" took %.1f s", units[u], secs);
		buf_free(&b);
	}
	free(in);
}

/* ---- size bound ---- */

static void test_bound_under_limit_untouched(void **state)
{
	(void)state;
	json_t *j = parse("{\"a\":\"hello\"}"), *before = j;
	size_t sz = 0;
	assert_int_equal(redact_json_size(j, &sz), 0);
	assert_int_equal(sz, 13);
	assert_int_equal(redact_bound(&j, 64), 0);
	assert_ptr_equal(j, before);
	json_decref(j);
	/* exactly at the limit is kept too */
	char x62[63];
	memset(x62, 'x', 62);
	x62[62] = 0;
	json_t *s = json_string(x62);
	before = s;
	assert_int_equal(redact_bound(&s, 64), 0); /* "xxx...": 62 + 2 quotes */
	assert_ptr_equal(s, before);
	json_decref(s);
}

static void test_bound_marker_exact_object(void **state)
{
	(void)state;
	json_t *j = parse("{\"diff\":\"line1\\nline2\",\"n\":12345,\"list\":[1,2,3,4,5,6,7,8,9,10,11,12]}");
	size_t total = 0;
	assert_int_equal(redact_json_size(j, &total), 0);
	assert_int_equal(total, 69);
	json_t *before = j;
	assert_int_equal(redact_bound(&j, REDACT_BOUND_MIN - 1), AS_EINVAL);
	assert_ptr_equal(j, before);
	assert_int_equal(redact_bound(&j, 64), 0);
	assert_ptr_not_equal(j, before);
	char *s = dump(j);
	/* 32 + 2 digits + 9 + 2 = 45 bytes of frame leave 19 for the escaped head: each '"'
	 * and the '\\' cost 2, so the head is the 15 bytes {"diff":"line1\ */
	assert_string_equal(s, "{\"truncated\":true,\"total_bytes\":69,\"head\":\"{\\\"diff\\\":\\\"line1\\\\\"}");
	assert_true(strlen(s) <= 64);
	free(s);
	json_decref(j);
}

static void test_bound_marker_exact_string(void **state)
{
	(void)state;
	/* A string keeps its own text as head (a diff stays readable), cut at a character:
	 * total 76 (74 bytes and 2 quotes, the '\n' escaped), so the frame is 45 bytes and
	 * max 67 leaves 22 for the head: 18 + 2 for "\n" + 1 for "+" = 21, and 'ü' (2 bytes)
	 * no longer fits; max 68 takes it. */
	const char *text = "diff --git a/x b/x\n+\xc3\xbcmlaut line that goes on and on and on and on and on";
	json_t *s = json_string(text);
	size_t total = 0;
	assert_int_equal(redact_json_size(s, &total), 0);
	assert_int_equal(total, 76);
	assert_int_equal(redact_bound(&s, 67), 0);
	char *d = dump(s);
	assert_string_equal(d, "{\"truncated\":true,\"total_bytes\":76,\"head\":\"diff --git a/x b/x\\n+\"}");
	assert_int_equal(strlen(d), 66);
	free(d);
	json_decref(s);
	s = json_string(text);
	assert_int_equal(redact_bound(&s, 68), 0);
	d = dump(s);
	assert_string_equal(d, "{\"truncated\":true,\"total_bytes\":76,\"head\":\"diff --git a/x b/x\\n+\xc3\xbc\"}");
	assert_int_equal(strlen(d), 68);
	free(d);
	json_decref(s);
}

static void test_bound_never_over(void **state)
{
	(void)state;
	/* Every max from the minimum up: the marker never exceeds it, and a head never
	 * ends inside a UTF-8 character (json_stringn would refuse it). */
	const char *src = "{\"k\":\"\\u0001\\\"\\\\é漢字🙂 \\t end\",\"x\":[true,false,null,1.5]}";
	for (size_t max = REDACT_BOUND_MIN; max < 140; max++) {
		json_t *j = parse(src);
		size_t total = 0;
		assert_int_equal(redact_json_size(j, &total), 0);
		assert_int_equal(redact_bound(&j, max), 0);
		size_t now = 0;
		assert_int_equal(redact_json_size(j, &now), 0);
		assert_true(now <= max);
		if (total > max) {
			assert_true(json_is_true(json_object_get(j, "truncated")));
			assert_int_equal(json_integer_value(json_object_get(j, "total_bytes")), total);
		}
		json_decref(j);
	}
	json_t *j = parse("[1]");
	assert_int_equal(redact_bound(&j, REDACT_BOUND_MIN - 1), AS_EINVAL);
	json_decref(j);
	assert_int_equal(redact_bound(NULL, 100), AS_EINVAL);
}

static void test_bound_huge_count(void **state)
{
	(void)state;
	/* 300 KiB of context under the 256 KiB default: cut, and the marker is at most the bound */
	size_t n = 300u << 10;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = 0;
	json_t *j = json_pack("{s:s}", "log", big);
	free(big);
	assert_int_equal(redact_bound(&j, REDACT_CONTEXT_MAX), 0);
	size_t now = 0;
	assert_int_equal(redact_json_size(j, &now), 0);
	assert_true(now <= REDACT_CONTEXT_MAX && now > REDACT_CONTEXT_MAX - 16);
	assert_int_equal(json_integer_value(json_object_get(j, "total_bytes")), n + 10);
	json_decref(j);
}

/* ---- issue 28: an agent cannot steer a mask over what runs ---- */

/* Each of these once hid text after a secret-looking key from the reviewer (a quote
 * left open blanked the rest of the string) or could hide code in a masked value.
 * Every one must keep the dangerous text visible, in view style as in records style. */
static const char *const steered[][2] = {
    {"ls -l /srv/data # password=\"\nrm -rf /srv/data", "rm -rf /srv/data"},
    {"ls -l /srv/data # password=\"", "password=\""},
    {"SELECT * FROM t WHERE note = 'password=\"'; DROP TABLE users; --", "DROP TABLE users"},
    {"UPDATE t SET x = 1 WHERE password = '; DROP TABLE users; --", "DROP TABLE users"},
    {"psql -c \"password='x\\'; DROP TABLE users; --'\"", "DROP TABLE users"},
    {"echo password=\"x\\\"; rm -rf /srv; echo \\\"\"", "rm -rf /srv"},
    {"run password=$(rm${IFS}-rf${IFS}/srv)", "rm${IFS}-rf${IFS}/srv"},
    {"run password=\"$(rm -rf /srv)\"", "$(rm -rf /srv)"},
    {"run token=`rm -rf /srv`", "rm -rf /srv"},
    {"curl -H 'Authorization: Bearer1 rm -rf /srv'", "rm -rf /srv"},
    {"curl http://u:x;rm$IFS-rf$IFS/srv;@host", "rm$IFS-rf$IFS/srv"},
    {"Cookie: a=b1\nrm -rf /srv", "rm -rf /srv"},
    {"api_key: 'k1\nrm -rf /srv'", "rm -rf /srv"},
};

static void test_steered_masks_never_hide(void **state)
{
	(void)state;
	static const char *const vk[] = {"ticket"};
	struct redact_rules view = {vk, 1, NULL, 0, 1};
	for (size_t i = 0; i < sizeof steered / sizeof *steered; i++) {
		for (int v = 0; v < 2; v++) {
			char *out = redacted(steered[i][0], v ? &view : NULL, NULL);
			if (!strstr(out, steered[i][1]))
				fail_msg("case %zu: '%s' hidden in '%s'", i, steered[i][1], out);
			free(out);
		}
	}
}

/* View style: each mark says how much it hides; a multi-line value under a secret key
 * says how many lines; the stats count the characters. */
static void test_view_marks(void **state)
{
	(void)state;
	struct redact_rules view = {NULL, 0, NULL, 0, 1};
	struct redact_stats st = {0, 0, 0};
	char *out = redacted("login password=hunter2 and ghp_" GH36 " done", &view, &st);
	assert_string_equal(out, "login password=[secret: 7 chars] and [secret: 40 chars] done");
	assert_int_equal(st.patterns, 2);
	assert_int_equal(st.chars, 47);
	/* a second pass leaves the marks alone (the word "secret" in them starts no match) */
	char *again = redacted(out, &view, &st);
	assert_string_equal(again, out);
	free(again);
	free(out);
	out = redacted("password=x", &view, NULL);
	assert_string_equal(out, "password=[secret: 1 char]");
	free(out);

	json_t *j = parse("{\"private_key\":\"-----BEGIN-----\\nAAAA\\n-----END-----\",\"token\":{\"a\":1},"
			  "\"cmd\":\"ls # password=\\\"\\nrm -rf /\",\"api_key\":\"\",\"secret\":null}");
	struct redact_stats js = {0, 0, 0};
	assert_int_equal(redact_json(j, &view, &js), 0);
	char *d = dump(j);
	assert_string_equal(d, "{\"private_key\":\"[secret: 34 chars, 3 lines]\",\"token\":\"[secret: 7 chars]\","
			       "\"cmd\":\"ls # password=\\\"\\nrm -rf /\",\"api_key\":\"\",\"secret\":null}");
	assert_int_equal(js.keys, 2);
	assert_int_equal(js.chars, 41);
	free(d);
	json_decref(j);
	/* the mark grammar */
	assert_int_equal(redact_mark_len("[secret: 12 chars]x", 19), 18);
	assert_int_equal(redact_mark_len("[secret: 1 char]", 16), 16);
	assert_int_equal(redact_mark_len("[secret: 9 chars, 2 lines]", 26), 26);
	assert_int_equal(redact_mark_len("[REDACTED]", 10), 10);
	assert_int_equal(redact_mark_len("[secret: chars]", 15), 0);
	assert_int_equal(redact_mark_len("[secret: 9 chars", 16), 0);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_header_scheme_idempotent),
	    cmocka_unit_test(test_steered_masks_never_hide),
	    cmocka_unit_test(test_view_marks),
	    cmocka_unit_test(test_key_lookalikes_kept),
	    cmocka_unit_test(test_key_value_types),
	    cmocka_unit_test(test_name_value_entries),
	    cmocka_unit_test(test_prose_kept),
	    cmocka_unit_test(test_non_ascii_kept),
	    cmocka_unit_test(test_operator_key),
	    cmocka_unit_test(test_operator_prefix),
	    cmocka_unit_test(test_rules_check),
	    cmocka_unit_test(test_json_any_depth_and_top_level),
	    cmocka_unit_test(test_json_idempotent),
	    cmocka_unit_test(test_text_output_bound),
	    cmocka_unit_test(test_linear_time),
	    cmocka_unit_test(test_bound_under_limit_untouched),
	    cmocka_unit_test(test_bound_marker_exact_object),
	    cmocka_unit_test(test_bound_marker_exact_string),
	    cmocka_unit_test(test_bound_never_over),
	    cmocka_unit_test(test_bound_huge_count),
	};
	size_t nk = sizeof key_cases / sizeof *key_cases, np = sizeof pattern_cases / sizeof *pattern_cases;
	size_t nf = sizeof fixed / sizeof *fixed, total = nk + np + nf;
	struct CMUnitTest *tests = calloc(total, sizeof *tests);
	char(*names)[80] = calloc(nk + np, sizeof *names);
	if (!tests || !names)
		return 1;
	/* One named test per key and per pattern, so a failure names what broke. */
	for (size_t i = 0; i < nk; i++) {
		snprintf(names[i], sizeof names[i], "key %s", key_cases[i].key);
		tests[i] = (struct CMUnitTest){names[i], test_key, NULL, NULL, (void *)&key_cases[i]};
	}
	for (size_t i = 0; i < np; i++) {
		snprintf(names[nk + i], sizeof names[nk + i], "pattern %s", pattern_cases[i].name);
		tests[nk + i] = (struct CMUnitTest){names[nk + i], test_pattern, NULL, NULL, (void *)&pattern_cases[i]};
	}
	memcpy(tests + nk + np, fixed, sizeof fixed);
	int rc = _cmocka_run_group_tests("redact", tests, total, NULL, NULL);
	free(tests);
	free(names);
	return rc;
}
