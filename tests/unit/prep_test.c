/* Unit tests for gateway/recorder/prep.c: an F_REC_CALL body, as the recorder decodes it,
 * into a call record: every column, the outcomes, required fields, redaction of the error
 * message, arguments and result (built-in shapes and keys at any depth, the operator's
 * keys, prefixes and expressions), the error message's bound, a cut payload, the sample
 * rate, and the JSON line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cbor.h"
#include "common/util.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/reccfg.h"
#include "gateway/recorder/prep.h"
#include "include/assent/err.h"

#define JWT "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
#define GHP "ghp_16C7e42F292c6912E7710c838347Ae178B4a" /* ghp_ + 36 */
#define BEARER "abcDEF1234567890xyz"

/* A frame being built (a) and the body the recorder would decode from its bytes (d). */
struct fx {
	struct cv_arena a, d;
	struct buf wb;
	struct cv *f;
	struct rec_cfg cfg; /* p borrows its keys and prefixes */
	struct prep p;
	int have_p;
	struct rec_call c;
};

static int fx_setup(void **st)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	cv_arena_init(&x->a, 4096);
	cv_arena_init(&x->d, 4096);
	*st = x;
	return 0;
}

static int fx_teardown(void **st)
{
	struct fx *x = *st;
	rec_call_free(&x->c);
	if (x->have_p)
		prep_free(&x->p);
	cv_arena_free(&x->a);
	cv_arena_free(&x->d);
	buf_free(&x->wb);
	free(x);
	return 0;
}

/* The operator's rules from a records section (NULL: none), ids from 0xabc. */
static void rules(struct fx *x, const char *section)
{
	json_error_t je;
	json_t *sec = section ? json_loads(section, 0, &je) : NULL;
	if (section && !sec)
		fail_msg("test section does not parse: %s", je.text);
	char err[AS_ERRLEN];
	if (x->have_p)
		prep_free(&x->p);
	x->have_p = 0;
	if (rec_cfg_load(&x->cfg, sec, "/st", err) != 0)
		fail_msg("section refused: %s", err);
	json_decref(sec);
	if (prep_init(&x->p, &x->cfg, 0xabc, err) != 0)
		fail_msg("prep_init: %s", err);
	x->have_p = 1;
}

static void put_t(struct fx *x, const char *k, const char *v)
{
	assert_int_equal(ipc_put_text(&x->a, x->f, k, v, strlen(v)), 0);
}

static void put_u(struct fx *x, const char *k, uint64_t v)
{
	assert_int_equal(ipc_put_uint(&x->a, x->f, k, v), 0);
}

/* A new frame with what every record has: tool, times, outcome, sizes, request. */
static void frame(struct fx *x, unsigned outcome)
{
	cv_arena_reset(&x->a);
	x->f = ipc_frame_new(&x->a, F_REC_CALL, 40);
	assert_non_null(x->f);
	put_t(x, "rid", "7");
	put_t(x, "tool", "fs__read");
	put_u(x, "t0", 1767225600123ull); /* 2026-01-01T00:00:00.123Z */
	put_u(x, "dur", 1500);		  /* us */
	put_u(x, "outcome", outcome);
	put_u(x, "asz", 17);
}

/* The frame through its canonical bytes, as ipc_next hands the recorder its body (its
 * strings point into x->wb, kept until the next call). */
static const struct cv *wire(struct fx *x)
{
	buf_free(&x->wb);
	buf_init(&x->wb, IPC_FRAME_MAX);
	char err[AS_ERRLEN];
	if (cbor_encode(x->f, &x->wb, err) != 0)
		fail_msg("encode: %s", err);
	cv_arena_reset(&x->d);
	struct cv *v;
	if (cbor_decode(x->wb.p, x->wb.len, &x->d, &v, err) != 0)
		fail_msg("decode: %s", err);
	return v;
}

/* prep_call on the frame; fails the test when refused. */
static struct rec_call *prep(struct fx *x)
{
	rec_call_free(&x->c);
	char err[AS_ERRLEN];
	if (prep_call(&x->p, wire(x), &x->c, err) != 0)
		fail_msg("prep_call refused: %s", err);
	return &x->c;
}

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_DECODE_ANY, &e);
	if (!j)
		fail_msg("not JSON: %s: %.200s", e.text, s);
	return j;
}

static void valid_utf8(const char *s)
{
	if (s && !utf8_valid((const uint8_t *)s, strlen(s)))
		fail_msg("not UTF-8: %.200s", s);
}

static void absent(const char *hay, const char *needle)
{
	if (hay && strstr(hay, needle))
		fail_msg("\"%s\" survives in: %.600s", needle, hay);
}

static void present(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" missing from: %.600s", needle, hay ? hay : "(null)");
}

static void test_every_column(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	frame(x, 2);
	put_t(x, "up", "fs");
	put_t(x, "etype", "ToolError");
	put_t(x, "emsg", "disk full");
	put_u(x, "rsz", 42);
	put_t(x, "args", "{\"path\":\"/tmp/a\"}");
	put_t(x, "res", "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}");
	put_t(x, "client", "claude-code/2.1");
	put_t(x, "user", "uid:1000");
	put_t(x, "ckind", "uid");
	put_t(x, "session", "stdio:7");
	put_t(x, "identity", "{\"uid\":1000,\"pid\":42}");
	put_t(x, "version", "0.16.0");
	put_t(x, "decision", "allow");
	put_t(x, "rule", "line 3");
	put_u(x, "seq", 99);
	struct rec_call *c = prep(x);
	assert_string_equal(c->call_id, "c0000000000000abc");
	assert_string_equal(c->tool, "fs__read");
	assert_string_equal(c->upstream, "fs");
	assert_int_equal(c->started_ms, 1767225600123ll);
	assert_true(c->duration_ms == 1.5);
	assert_string_equal(c->outcome, "error");
	assert_int_equal(c->ok, 0);
	assert_string_equal(c->error_type, "ToolError");
	assert_string_equal(c->error_message, "disk full");
	assert_string_equal(c->session_id, "stdio:7");
	assert_string_equal(c->request_id, "7");
	assert_string_equal(c->user_sub, "uid:1000");
	assert_string_equal(c->caller_kind, "uid");
	assert_string_equal(c->client_id, "claude-code/2.1");
	assert_string_equal(c->identity, "{\"uid\":1000,\"pid\":42}");
	assert_int_equal(c->args_size, 17);
	assert_int_equal(c->result_size, 42);
	assert_string_equal(c->arguments, "{\"path\":\"/tmp/a\"}");
	assert_string_equal(c->result, "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}");
	assert_string_equal(c->decision, "allow");
	assert_string_equal(c->rule, "line 3");
	assert_int_equal(c->ledger_seq, 99);
	assert_true(c->sample_rate == 0);
	assert_string_equal(c->server_version, "0.16.0");
	assert_null(c->extra);
	/* the next call has the next id */
	c = prep(x);
	assert_string_equal(c->call_id, "c0000000000000abd");
	rec_call_free(c);
	assert_null(c->tool);
	assert_null(c->call_id);
}

static void test_optional_absent(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	frame(x, 0);
	struct rec_call *c = prep(x);
	assert_string_equal(c->tool, "fs__read");
	assert_null(c->upstream);
	assert_string_equal(c->outcome, "ok");
	assert_int_equal(c->ok, 1);
	assert_null(c->error_type);
	assert_null(c->error_message);
	assert_null(c->session_id);
	assert_null(c->user_sub);
	assert_null(c->caller_kind);
	assert_null(c->client_id);
	assert_null(c->identity);
	assert_int_equal(c->args_size, 17);
	assert_int_equal(c->result_size, -1); /* no result */
	assert_null(c->arguments);	      /* mode meta: no payloads */
	assert_null(c->result);
	assert_null(c->decision);
	assert_null(c->rule);
	assert_int_equal(c->ledger_seq, -1);
	assert_true(c->sample_rate == 0);
	assert_null(c->server_version);
	/* a result of size 0 is a size, not an absent one */
	frame(x, 0);
	put_u(x, "rsz", 0);
	put_u(x, "seq", 0);
	c = prep(x);
	assert_int_equal(c->result_size, 0);
	assert_int_equal(c->ledger_seq, 0);
}

/* The signer's call id (its events name it) is the row's; anything not of its form is not. */
static void test_given_call_id(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	frame(x, 0);
	put_t(x, "id", "c0123456789abcdef");
	assert_string_equal(prep(x)->call_id, "c0123456789abcdef");
	const char *bad[] = {"c0123456789ABCDEF", "c0123456789abcde",  "c0123456789abcdef0",
			     "x0123456789abcdef", "c0123456789abcde'", ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		frame(x, 0);
		put_t(x, "id", bad[i]);
		struct rec_call *c = prep(x);
		if (!strcmp(c->call_id, bad[i]) || strlen(c->call_id) != 17 || c->call_id[0] != 'c')
			fail_msg("id \"%s\" gave call_id \"%s\"", bad[i], c->call_id);
	}
}

static void test_outcomes(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	static const char *const names[] = {"ok", "soft_error", "error"};
	for (unsigned o = 0; o < 3; o++) {
		frame(x, o);
		put_t(x, "etype", o == 1 ? "SoftError" : "ToolError");
		put_t(x, "emsg", "status=failed: disk full");
		struct rec_call *c = prep(x);
		assert_string_equal(c->outcome, names[o]);
		assert_int_equal(c->ok, o == 0);
		if (o == 0) { /* an ok call carries no error, whatever the frame says */
			assert_null(c->error_type);
			assert_null(c->error_message);
		} else {
			assert_string_equal(c->error_type, o == 1 ? "SoftError" : "ToolError");
			assert_string_equal(c->error_message, "status=failed: disk full");
		}
	}
	/* an error without a message or type */
	frame(x, 2);
	struct rec_call *c = prep(x);
	assert_null(c->error_type);
	assert_null(c->error_message);
	/* no fourth outcome */
	frame(x, 3);
	char err[AS_ERRLEN] = "";
	rec_call_free(&x->c);
	assert_int_equal(prep_call(&x->p, wire(x), &x->c, err), AS_EINVAL);
	assert_non_null(strstr(err, "outcome"));
}

/* A frame with the required fields but one: left out, or of another type. */
static void test_required(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	static const char *const req[] = {"tool", "t0", "dur", "outcome"};
	for (size_t i = 0; i < 4; i++)
		for (int wrong = 0; wrong < 2; wrong++) {
			cv_arena_reset(&x->a);
			x->f = ipc_frame_new(&x->a, F_REC_CALL, 8);
			if (strcmp(req[i], "tool"))
				put_t(x, "tool", "t");
			else if (wrong)
				assert_int_equal(ipc_put_bytes(&x->a, x->f, "tool", (const uint8_t *)"t", 1), 0);
			static const char *const nums[] = {"t0", "dur", "outcome"};
			for (size_t k = 0; k < 3; k++) {
				if (strcmp(req[i], nums[k]))
					put_u(x, nums[k], 1);
				else if (wrong)
					put_t(x, nums[k], "1");
			}
			char err[AS_ERRLEN] = "";
			rec_call_free(&x->c);
			if (prep_call(&x->p, wire(x), &x->c, err) != AS_EINVAL)
				fail_msg("a record without a good %s accepted", req[i]);
			assert_non_null(strstr(err, "call record without"));
		}
	/* and with all four it is a record */
	cv_arena_reset(&x->a);
	x->f = ipc_frame_new(&x->a, F_REC_CALL, 8);
	put_t(x, "tool", "t");
	put_u(x, "t0", 1);
	put_u(x, "dur", 1);
	put_u(x, "outcome", 1);
	struct rec_call *c = prep(x);
	assert_string_equal(c->tool, "t");
	assert_int_equal(c->args_size, 0);
}

static void test_error_message_redacted(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	frame(x, 2);
	put_t(x, "emsg",
	      "auth failed for " JWT " (sent Bearer " BEARER ")\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\n"
	      "password=hunter2; retry with " GHP " or sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t");
	struct rec_call *c = prep(x);
	absent(c->error_message, "eyJhbGci");
	absent(c->error_message, BEARER);
	absent(c->error_message, "dXNlcjpw");
	absent(c->error_message, "hunter2");
	absent(c->error_message, "ghp_");
	absent(c->error_message, "sk-proj");
	assert_string_equal(c->error_message, "auth failed for [REDACTED] (sent Bearer [REDACTED])\n"
					      "Authorization: Basic [REDACTED]\n"
					      "password=[REDACTED]; retry with [REDACTED] or [REDACTED]");
}

static void test_error_message_bound(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	/* "a" then 2-byte characters: byte REC_ERROR_MAX is the middle of one */
	char m[1 + 2 * 1200 + 1];
	m[0] = 'a';
	for (size_t i = 0; i < 1200; i++)
		memcpy(m + 1 + 2 * i, "\xc3\xa9", 2);
	m[sizeof m - 1] = 0;
	frame(x, 2);
	put_t(x, "emsg", m);
	struct rec_call *c = prep(x);
	size_t n = strlen(c->error_message);
	assert_true(n <= REC_ERROR_MAX);
	assert_int_equal(n, REC_ERROR_MAX - 1); /* the longest whole-character prefix */
	valid_utf8(c->error_message);
	assert_memory_equal(c->error_message, m, n);
	/* short enough: kept whole */
	m[REC_ERROR_MAX - 1] = 0; /* 999 bytes, ending on a whole character */
	frame(x, 2);
	put_t(x, "emsg", m);
	c = prep(x);
	assert_string_equal(c->error_message, m);
	/* a secret across the cut: redacted first, then cut, so none of it is kept */
	char s[REC_ERROR_MAX + 64];
	memset(s, 'w', REC_ERROR_MAX - 10);
	snprintf(s + REC_ERROR_MAX - 10, sizeof s - (REC_ERROR_MAX - 10), " " GHP);
	frame(x, 1);
	put_t(x, "emsg", s);
	c = prep(x);
	assert_int_equal(strlen(c->error_message), REC_ERROR_MAX);
	absent(c->error_message, "ghp_");
	present(c->error_message, "w [REDACTED");
	/* the worker cut the message (PROTO_REC_ERROR_MAX) inside a secret: its last word goes */
	char cut[PROTO_REC_ERROR_MAX + 1];
	memset(cut, ' ', sizeof cut - 1);
	memcpy(cut, "JWT", 3);
	for (size_t i = 4; i + sizeof JWT < 4000; i += sizeof JWT)
		memcpy(cut + i, JWT, sizeof JWT - 1); /* these shrink to 10 bytes each */
	memcpy(cut + PROTO_REC_ERROR_MAX - 30, "ghp_16C7e42F292c6912E7710c8383", 30);
	cut[PROTO_REC_ERROR_MAX] = 0;
	frame(x, 2);
	put_t(x, "emsg", cut);
	c = prep(x);
	absent(c->error_message, "eyJ");
	absent(c->error_message, "ghp_");
	present(c->error_message, "JWT [REDACTED]");
	/* a short message is whole: its last word is no cut one */
	frame(x, 2);
	put_t(x, "emsg", "no such file: notes_2026.txt");
	c = prep(x);
	assert_string_equal(c->error_message, "no such file: notes_2026.txt");
	/* the longest message the worker sends, 4096 bytes of 4-byte characters */
	char big[PROTO_REC_ERROR_MAX + 1];
	for (size_t i = 0; i < PROTO_REC_ERROR_MAX; i += 4)
		memcpy(big + i, "\xf0\x9f\x98\x80", 4);
	big[PROTO_REC_ERROR_MAX] = 0;
	frame(x, 2);
	put_t(x, "emsg", big);
	c = prep(x);
	assert_int_equal(strlen(c->error_message), REC_ERROR_MAX);
	valid_utf8(c->error_message);
}

/* Secrets at every depth of arguments and of a result, in mode full. */
static const char DEEP[] =
    "{\"a\":{\"b\":[{\"password\":\"p1-secret\"},{\"name\":\"DB_PASSWORD\",\"value\":\"p2-secret\"},"
    "\"Bearer " BEARER "\",[[[{\"Authorization\":\"Basic dXNlcjpwYXNz\"}]]]]},"
    "\"api\":{\"client_secret\":{\"nested\":\"p3-secret\"}},\"GITHUB_TOKEN\":\"p4-secret\","
    "\"x_api_key\":[\"p5-secret\"],\"note\":\"use " GHP " here\",\"url\":\"https://u:p6-secret@db.example/x\","
    "\"max_tokens\":5,\"password\":\"\",\"token\":null,\"tokenizer\":\"bpe\",\"n\":1.5,\"ok\":true}";

static void check_deep(const char *text)
{
	static const char *const gone[] = {"p1-secret", "p2-secret", "p3-secret",    "p4-secret", "p5-secret",
					   "p6-secret", BEARER,	     "dXNlcjpwYXNz", "ghp_"};
	for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
		absent(text, gone[i]);
	json_t *j = J(text);
	/* the shape is kept: same members, same arrays */
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "a"), "b")), 4);
	json_t *b = json_object_get(json_object_get(j, "a"), "b");
	assert_string_equal(json_string_value(json_object_get(json_array_get(b, 0), "password")), REDACT_MARK);
	assert_string_equal(json_string_value(json_object_get(json_array_get(b, 1), "name")), "DB_PASSWORD");
	assert_string_equal(json_string_value(json_object_get(json_array_get(b, 1), "value")), REDACT_MARK);
	assert_string_equal(json_string_value(json_array_get(b, 2)), "Bearer [REDACTED]");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "api"), "client_secret")),
			    REDACT_MARK); /* an object under a secret key goes whole */
	assert_string_equal(json_string_value(json_object_get(j, "x_api_key")), REDACT_MARK);
	assert_string_equal(json_string_value(json_object_get(j, "note")), "use [REDACTED] here");
	assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 5);
	assert_string_equal(json_string_value(json_object_get(j, "password")), ""); /* none was set */
	assert_true(json_is_null(json_object_get(j, "token")));
	assert_string_equal(json_string_value(json_object_get(j, "tokenizer")), "bpe");
	assert_true(json_real_value(json_object_get(j, "n")) == 1.5);
	assert_true(json_is_true(json_object_get(j, "ok")));
	json_decref(j);
}

static void test_payloads_redacted(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	frame(x, 0);
	put_t(x, "args", DEEP);
	put_t(x, "res", DEEP);
	put_u(x, "rsz", sizeof DEEP - 1);
	struct rec_call *c = prep(x);
	check_deep(c->arguments);
	check_deep(c->result);
	/* a result that is a JSON string, or an array, at the top */
	frame(x, 0);
	put_t(x, "args", "\"token " GHP "\"");
	put_t(x, "res", "[\"password=hunter2\", {\"token\": \"abc\"}]");
	c = prep(x);
	assert_string_equal(c->arguments, "\"token [REDACTED]\"");
	assert_string_equal(c->result, "[\"password=[REDACTED]\",{\"token\":\"[REDACTED]\"}]");
	/* nested past what the redactor walks: not kept at all */
	char deep[2 * 200 + 64];
	size_t n = 0;
	for (int i = 0; i < 200; i++)
		deep[n++] = '[';
	n += (size_t)snprintf(deep + n, sizeof deep - n, "\"%s\"", "password=hunter2");
	for (int i = 0; i < 200; i++)
		deep[n++] = ']';
	deep[n] = 0;
	frame(x, 0);
	put_t(x, "args", deep);
	c = prep(x);
	absent(c->arguments, "hunter2");
	present(c->arguments, "\"error\":\"too deeply nested");
}

static void test_operator_keys_prefixes(void **st)
{
	struct fx *x = *st;
	rules(x, "{\"redact_keys\": [\"license\"], \"redact_prefixes\": [\"acme_\"]}");
	frame(x, 2);
	put_t(x, "emsg", "license=L-789 refused; key acme_abcdefgh12 and acme_short");
	put_t(x, "args",
	      "{\"license\":\"L-123\",\"deep\":[{\"LICENSE\":\"L-456\"}],\"msg\":\"key acme_abcdefgh12 and "
	      "acme_short\"}");
	put_t(x, "res", "{\"x\":{\"y\":\"acme_ZZZZZZZZZZ\"}}");
	struct rec_call *c = prep(x);
	absent(c->error_message, "L-789");
	present(c->error_message, "license=[REDACTED] refused; key [REDACTED] and acme_short");
	absent(c->arguments, "L-123");
	absent(c->arguments, "L-456");
	absent(c->arguments, "acme_abcdefgh12");
	present(c->arguments, "\"msg\":\"key [REDACTED] and acme_short\"");
	assert_string_equal(c->result, "{\"x\":{\"y\":\"[REDACTED]\"}}");
	/* without the operator's rules the same text is kept */
	rules(x, NULL);
	c = prep(x);
	present(c->arguments, "L-123");
	present(c->arguments, "acme_abcdefgh12");
}

static void test_operator_patterns(void **st)
{
	struct fx *x = *st;
	rules(x, "{\"redact_patterns\": [\"tok[0-9]{4}\", \"x*\"]}");
	frame(x, 2);
	/* several matches in one string; "x*" matches empty everywhere and must still end */
	put_t(x, "emsg", "tok1234 then tok5678, and tok12; boxes");
	put_t(x, "args", "{\"a\":[\"tok0000tok1111\",{\"b\":\"no match here\"}],\"c\":\"xx\"}");
	put_t(x, "res", "\"abc\"");
	struct rec_call *c = prep(x);
	assert_string_equal(c->error_message, "[REDACTED] then [REDACTED], and tok12; bo[REDACTED]es");
	assert_string_equal(c->arguments,
			    "{\"a\":[\"[REDACTED][REDACTED]\",{\"b\":\"no match here\"}],\"c\":\"[REDACTED]\"}");
	assert_string_equal(c->result, "\"abc\"");
	/* empty matches only, over a long text: it ends, and the text is unchanged */
	rules(x, "{\"redact_patterns\": [\"q*\", \"z?$\", \"^\"]}");
	static char lng[RECCFG_PAYLOAD_MAX];
	memset(lng, 'a', sizeof lng - 3);
	memcpy(lng + sizeof lng - 3, "\"", 2);
	lng[0] = '"';
	frame(x, 2);
	put_t(x, "emsg", "abc");
	put_t(x, "args", lng);
	c = prep(x);
	assert_string_equal(c->error_message, "abc");
	assert_string_equal(c->arguments, lng);
	/* an anchored expression matches at the start of the text only */
	rules(x, "{\"redact_patterns\": [\"^a\"]}");
	frame(x, 2);
	put_t(x, "emsg", "aaa");
	c = prep(x);
	assert_string_equal(c->error_message, "[REDACTED]aa");
	/* a built-in redaction first, then the operator's expression over the result */
	rules(x, "{\"redact_patterns\": [\"REDACTED\"]}");
	frame(x, 2);
	put_t(x, "emsg", "password=x");
	c = prep(x);
	assert_string_equal(c->error_message, "password=[[REDACTED]]");
}

/* Expressions run per byte (the C locale): a match is widened to whole characters. */
static void test_patterns_keep_utf8(void **st)
{
	struct fx *x = *st;
	rules(x, "{\"redact_patterns\": [\"k=.{3}\", \"[^a-z ]\\\\.\"]}");
	frame(x, 2);
	put_t(x, "emsg", "k=\xc3\xa9\xc3\xa9! and \xe2\x82\xac.");
	put_t(x, "args", "{\"v\":\"k=\xc3\xa9\xe2\x82\xac\xc3\xa9\"}");
	struct rec_call *c = prep(x);
	valid_utf8(c->error_message);
	assert_string_equal(c->error_message, "[REDACTED]! and [REDACTED]");
	valid_utf8(c->arguments);
	assert_string_equal(c->arguments, "{\"v\":\"[REDACTED]\xc3\xa9\"}");
}

/* Expressions that grow the text past the redactor's bound: the text is not kept, never
 * kept half redacted. Each pass makes every character a 10-byte marker. */
static void test_patterns_fail_closed(void **st)
{
	struct fx *x = *st;
#ifdef __SANITIZE_ADDRESS__
	return; /* see PLAIN_ONLY */
#endif
	rules(x, "{\"redact_patterns\": [\"[a-z]\", \"[][ACDERT]\", \"[][ACDERT]\", \"[][ACDERT]|Z+9+\"]}");
	char m[PROTO_REC_ERROR_MAX + 1];
	memset(m, 'a', PROTO_REC_ERROR_MAX - 9);
	memcpy(m + PROTO_REC_ERROR_MAX - 9, " ZZZZ9999", 10);
	frame(x, 2);
	put_t(x, "emsg", m);
	struct rec_call *c = prep(x);
	absent(c->error_message, "ZZZZ9999");
	/* a short one goes through all four */
	frame(x, 2);
	put_t(x, "emsg", "a ZZZZ9999");
	c = prep(x);
	absent(c->error_message, "ZZZZ9999");
	assert_non_null(c->error_message);
}

static void test_cut_payload(void **st)
{
	struct fx *x = *st;
	rules(x, "{\"redact_patterns\": [\"tok[0-9]{4}\"]}");
	frame(x, 0);
	/* the worker cut the arguments at RECCFG_PAYLOAD_MAX: not JSON any more */
	put_t(x, "args",
	      "{\"password\": \"hunter2\", \"q\": \"Bearer " BEARER "\", \"t\": \"tok1234\", \"rest\": \"aaaa");
	put_u(x, "atot", 100000);
	put_t(x, "res", "{\"content\": [{\"text\": \"" GHP);
	put_u(x, "rtot", 70000);
	struct rec_call *c = prep(x);
	json_t *a = J(c->arguments);
	assert_true(json_is_true(json_object_get(a, "truncated")));
	assert_int_equal(json_integer_value(json_object_get(a, "total_bytes")), 100000);
	const char *head = json_string_value(json_object_get(a, "head"));
	assert_non_null(head);
	absent(head, "hunter2");
	absent(head, BEARER);
	absent(head, "tok1234");
	present(head, "\"password\": \"[REDACTED]\", \"q\": \"Bearer [REDACTED]\"");
	/* the cut word is left out */
	assert_string_equal(head + strlen(head) - 9, "\"rest\": \"");
	assert_int_equal(json_object_size(a), 3);
	json_decref(a);
	json_t *r = J(c->result);
	assert_int_equal(json_integer_value(json_object_get(r, "total_bytes")), 70000);
	absent(json_string_value(json_object_get(r, "head")), "ghp_");
	json_decref(r);
	/* cut inside a secret too short to be recognised: the cut word goes */
	frame(x, 0);
	put_t(x, "args", "{\"q\": \"see ghp_16C7e42F292c6912E7710c83834");
	put_u(x, "atot", 90000);
	put_t(x, "res", "[\"xoxb-12345");
	put_u(x, "rtot", 90000);
	c = prep(x);
	a = J(c->arguments);
	assert_string_equal(json_string_value(json_object_get(a, "head")), "{\"q\": \"see ");
	json_decref(a);
	r = J(c->result);
	assert_string_equal(json_string_value(json_object_get(r, "head")), "[\"");
	json_decref(r);
	/* a whole payload that happens to say truncated is its own JSON, not the marker */
	frame(x, 0);
	put_t(x, "args", "{\"truncated\":false}");
	c = prep(x);
	assert_string_equal(c->arguments, "{\"truncated\":false}");
}

static void test_sample_rate(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	static const struct {
		uint64_t ppm;
		double rate;
	} rates[] = {{10000, 0.01}, {1000000, 1.0}, {1, 1e-6}, {250000, 0.25}};
	for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
		frame(x, 0);
		put_u(x, "rate", rates[i].ppm);
		struct rec_call *c = prep(x);
		assert_true(c->sample_rate == rates[i].rate);
	}
	frame(x, 0);
	struct rec_call *c = prep(x);
	assert_true(c->sample_rate == 0); /* recorded unconditionally: NULL in the table */
}

/* The seed's columns (ffb_tool_calls, but id), each a member of the JSON line. */
static const char *const COLUMNS[] = {"call_id",    "tool",	   "upstream",	  "started_at",	    "duration_ms",
				      "outcome",    "ok",	   "error_type",  "error_message",  "session_id",
				      "request_id", "user_sub",	   "caller_kind", "client_id",	    "identity",
				      "args_size",  "result_size", "arguments",	  "result",	    "decision",
				      "rule",	    "ledger_seq",  "sample_rate", "server_version", "extra"};

static void test_call_json(void **st)
{
	struct fx *x = *st;
	rules(x, NULL);
	frame(x, 1);
	put_t(x, "up", "fs");
	put_t(x, "etype", "SoftError");
	put_t(x, "emsg", "status=failed: disk full");
	put_u(x, "rsz", 42);
	put_u(x, "rate", 500000);
	put_t(x, "args", "{\"path\":\"/tmp/a\",\"token\":\"t-1\"}");
	put_t(x, "res", "{\"status\":\"failed\"}");
	put_t(x, "client", "cli");
	put_t(x, "user", "agent:ci");
	put_t(x, "ckind", "key");
	put_t(x, "session", "s-1");
	put_t(x, "identity", "{\"agent\":\"ci\"}");
	put_t(x, "version", "0.16.0");
	put_t(x, "decision", "ask");
	put_t(x, "rule", "line 9");
	put_u(x, "seq", 12);
	struct rec_call *c = prep(x);
	json_t *j = prep_call_json(c);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "record")), "tool_call");
	assert_int_equal(json_object_size(j), 1 + sizeof COLUMNS / sizeof *COLUMNS);
	for (size_t i = 0; i < sizeof COLUMNS / sizeof *COLUMNS; i++)
		if (!json_object_get(j, COLUMNS[i]))
			fail_msg("the JSON line has no %s", COLUMNS[i]);
	assert_string_equal(json_string_value(json_object_get(j, "call_id")), c->call_id);
	assert_string_equal(json_string_value(json_object_get(j, "tool")), "fs__read");
	assert_string_equal(json_string_value(json_object_get(j, "upstream")), "fs");
	assert_string_equal(json_string_value(json_object_get(j, "started_at")), "2026-01-01T00:00:00.123Z");
	assert_true(json_number_value(json_object_get(j, "duration_ms")) == 1.5);
	assert_string_equal(json_string_value(json_object_get(j, "outcome")), "soft_error");
	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_string_equal(json_string_value(json_object_get(j, "error_type")), "SoftError");
	assert_string_equal(json_string_value(json_object_get(j, "error_message")), "status=failed: disk full");
	assert_string_equal(json_string_value(json_object_get(j, "session_id")), "s-1");
	assert_string_equal(json_string_value(json_object_get(j, "request_id")), "7");
	assert_string_equal(json_string_value(json_object_get(j, "user_sub")), "agent:ci");
	assert_string_equal(json_string_value(json_object_get(j, "caller_kind")), "key");
	assert_string_equal(json_string_value(json_object_get(j, "client_id")), "cli");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "identity"), "agent")), "ci");
	assert_int_equal(json_integer_value(json_object_get(j, "args_size")), 17);
	assert_int_equal(json_integer_value(json_object_get(j, "result_size")), 42);
	json_t *args = json_object_get(j, "arguments");
	assert_string_equal(json_string_value(json_object_get(args, "path")), "/tmp/a");
	assert_string_equal(json_string_value(json_object_get(args, "token")), REDACT_MARK);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "result"), "status")), "failed");
	assert_string_equal(json_string_value(json_object_get(j, "decision")), "ask");
	assert_string_equal(json_string_value(json_object_get(j, "rule")), "line 9");
	assert_int_equal(json_integer_value(json_object_get(j, "ledger_seq")), 12);
	assert_true(json_real_value(json_object_get(j, "sample_rate")) == 0.5);
	assert_string_equal(json_string_value(json_object_get(j, "server_version")), "0.16.0");
	assert_true(json_is_null(json_object_get(j, "extra")));
	char *line = json_dumps(j, JSON_COMPACT);
	assert_non_null(line);
	assert_null(strchr(line, '\n'));
	free(line);
	json_decref(j);

	/* the least record: absent columns are null, the payloads are left out (mode meta) */
	frame(x, 0);
	c = prep(x);
	j = prep_call_json(c);
	assert_non_null(j);
	static const char *const nulls[] = {"upstream",	   "error_type", "error_message", "session_id",	    "user_sub",
					    "caller_kind", "client_id",	 "identity",	  "result_size",    "decision",
					    "rule",	   "ledger_seq", "sample_rate",	  "server_version", "extra"};
	for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++)
		if (!json_is_null(json_object_get(j, nulls[i])))
			fail_msg("%s is not null in the least record", nulls[i]);
	assert_null(json_object_get(j, "arguments"));
	assert_null(json_object_get(j, "result"));
	assert_true(json_is_true(json_object_get(j, "ok")));
	json_decref(j);
}

static void test_init_refuses(void **st)
{
	struct fx *x = *st;
	struct rec_cfg cfg;
	char err[AS_ERRLEN];
	assert_int_equal(rec_cfg_load(&cfg, NULL, "/st", err), 0);
	snprintf(cfg.patterns[0], sizeof cfg.patterns[0], "ok[0-9]");
	snprintf(cfg.patterns[1], sizeof cfg.patterns[1], "(unclosed");
	cfg.npatterns = 2;
	assert_int_equal(prep_init(&x->p, &cfg, 1, err), AS_EINVAL);
	assert_non_null(strstr(err, "redact_patterns[1]"));
	cfg.npatterns = 0;
	snprintf(cfg.prefixes[0], sizeof cfg.prefixes[0], "ab"); /* too short: would eat every word */
	cfg.nprefixes = 1;
	err[0] = 0;
	assert_int_equal(prep_init(&x->p, &cfg, 1, err), AS_EINVAL);
	assert_true(err[0] != 0);
}

/* prep_text and prep_json on their own. */
static void test_text_and_json(void **st)
{
	struct fx *x = *st;
	rules(x, "{\"redact_patterns\": [\"tok[0-9]{4}\"]}");
	char *t = prep_text(&x->p, "a tok1234 password=x", 20, 64);
	assert_string_equal(t, "a [REDACTED] password=[REDACTED]");
	free(t);
	t = prep_text(&x->p, "a tok1234 password=x", 20, 5); /* cut after redaction */
	assert_string_equal(t, "a [RE");
	free(t);
	t = prep_text(&x->p, "", 0, 5);
	assert_string_equal(t, "");
	free(t);
	json_t *j = J("{\"k\": [\"tok9999\", {\"secret\": 1}], \"tok1234\": \"v\"}");
	assert_int_equal(prep_json(&x->p, j), 0);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	/* a stored payload's keys are redacted too (a forwarded request's never are: redact.h) */
	assert_string_equal(s, "{\"[REDACTED]\":\"v\",\"k\":[\"[REDACTED]\",{\"secret\":\"[REDACTED]\"}]}");
	free(s);
	json_decref(j);
	/* two keys redacted alike keep both values */
	j = J("{\"tok1111\": 1, \"tok2222\": 2, \"[REDACTED]\": 0}");
	assert_int_equal(prep_json(&x->p, j), 0);
	assert_int_equal(json_object_size(j), 3);
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"[REDACTED]\":0,\"[REDACTED]#2\":1,\"[REDACTED]#3\":2}");
	free(s);
	json_decref(j);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
/* AddressSanitizer's regexec measures the whole text on every call, so the millions of
 * matches of test_patterns_fail_closed would take minutes: it runs in the plain build, and
 * under ASan it is named "# SKIP" (cmocka's own skip() reads "not ok", which run.sh counts). */
#ifdef __SANITIZE_ADDRESS__
#define PLAIN_ONLY(f)                                                                                                  \
	{                                                                                                              \
#f " # SKIP run in the plain build (ASan's regexec measures the text on every call)", f, fx_setup,     \
		    fx_teardown, NULL                                                                                  \
	}
#else
#define PLAIN_ONLY(f) T(f)
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_every_column),
	    T(test_optional_absent),
	    T(test_given_call_id),
	    T(test_outcomes),
	    T(test_required),
	    T(test_error_message_redacted),
	    T(test_error_message_bound),
	    T(test_payloads_redacted),
	    T(test_operator_keys_prefixes),
	    T(test_operator_patterns),
	    T(test_patterns_keep_utf8),
	    PLAIN_ONLY(test_patterns_fail_closed),
	    T(test_cut_payload),
	    T(test_sample_rate),
	    T(test_call_json),
	    T(test_init_refuses),
	    T(test_text_and_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
