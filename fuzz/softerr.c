/* Fuzz target: the soft-error classifier (gateway/worker/mcp/softerr.c) over tool results
 * as an upstream sends them. Byte 0 chooses how the rest is read and the message buffer:
 *   bits 0-1: 0 or 3, the rest is the whole CallToolResult (JSON); 1, it is the text of
 *             the result's one text item, as it comes (JSON or not); 2, it is the
 *             result's structuredContent (JSON) beside a text item saying "see data";
 *   bit 2:    modes 1 and 2 mark the result isError: true;
 *   bits 3-7: msgmax, 1..31 (0: 4096).
 * Byte 1 picks operator statuses from a fixed list, one bit each. The properties: the
 * verdict is 0 or 1 and is the one an independent reading of the rules gives; it does not
 * depend on the buffer; the message is non-empty valid UTF-8, NUL-terminated inside
 * msgmax, nothing written past it, and is the longest prefix of the unbounded message
 * that ends at a character boundary; the same result, or a copy of it, gives the same
 * answer again; the result is left unchanged. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/text.h"
#include "gateway/worker/mcp/softerr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define GUARD_BYTES 32

static const char *const operator_pool[8] = {"unknown_target", "TIMEOUT", "denied", "a",
					     "x.y-z_0",	       "ERRORS",  "fail",   "failed"};

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "softerr: property violated: %s: %.200s\n", why, detail ? detail : "");
	abort();
}

/* ---- the oracle: the rules of softerr.h read again, independently ---- */

static int oracle_status(const json_t *v, const struct softerr_rules *r)
{
	static const char *const builtin[] = {"error", "failed", "failure"};
	if (!json_is_string(v))
		return 0;
	size_t n = json_string_length(v);
	const char *s = json_string_value(v);
	if (memchr(s, 0, n))
		return 0;
	for (size_t i = 0; i < 3; i++)
		if (n == strlen(builtin[i]) && strncasecmp(s, builtin[i], n) == 0)
			return 1;
	for (size_t i = 0; i < r->nstatuses; i++)
		if (n == strlen(r->statuses[i]) && strncasecmp(s, r->statuses[i], n) == 0)
			return 1;
	return 0;
}

static int oracle(const json_t *result, const struct softerr_rules *r)
{
	if (!json_is_object(result))
		return 0;
	if (json_object_get(result, "isError") == json_true())
		return 1;
	json_t *p = json_object_get(result, "structuredContent"), *parsed = NULL;
	if (!json_is_object(p)) {
		p = NULL;
		json_t *c = json_object_get(result, "content");
		for (size_t i = 0; json_is_array(c) && i < json_array_size(c); i++) {
			json_t *it = json_array_get(c, i), *t = json_object_get(it, "text");
			const char *ty = json_string_value(json_object_get(it, "type"));
			if (!ty || json_string_length(json_object_get(it, "type")) != 4 || memcmp(ty, "text", 4) ||
			    !json_is_string(t))
				continue;
			if (json_string_length(t) <= SOFTERR_TEXT_MAX) {
				parsed = json_loadb(json_string_value(t), json_string_length(t), JSON_ALLOW_NUL, NULL);
				if (json_is_object(parsed))
					p = parsed;
			}
			break;
		}
	}
	int v = p && (json_object_get(p, "ok") == json_false() || json_object_get(p, "success") == json_false() ||
		      oracle_status(json_object_get(p, "status"), r) || oracle_status(json_object_get(p, "state"), r));
	json_decref(parsed);
	return v;
}

/* ---- the harness ---- */

static json_t *build(const uint8_t *p, size_t n, unsigned mode, int is_error)
{
	json_t *r;
	if (mode == 1) {
		/* The text as it comes; jansson keeps only UTF-8 without NUL, so other bytes are
		 * given unchecked: the classifier must cope with whatever a json_t holds. */
		json_t *text = json_stringn_nocheck((const char *)p, n);
		r = json_pack("{s:[{s:s,s:o}]}", "content", "type", "text", "text", text);
	} else if (mode == 2) {
		json_t *sc = json_loadb((const char *)p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!sc)
			return NULL;
		r = json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text", "see data", "structuredContent",
			      sc);
	} else
		return json_loadb((const char *)p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (r && is_error)
		json_object_set_new(r, "isError", json_true());
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	unsigned mode = data[0] & 3;
	int is_error = (data[0] >> 2) & 1;
	size_t msgmax = data[0] >> 3 ? (size_t)(data[0] >> 3) : 4096;
	const char *chosen[8];
	struct softerr_rules rules = {chosen, 0};
	for (unsigned i = 0; i < 8; i++)
		if (data[1] >> i & 1)
			chosen[rules.nstatuses++] = operator_pool[i];
	if (softerr_rules_check(&rules, NULL) != 0)
		fail("a valid list of operator statuses is refused", chosen[0]);

	json_t *result = build(data + 2, size - 2, mode, is_error);
	if (!result)
		return 0;
	json_t *before = json_deep_copy(result);

	/* the message without a bound that matters: every input byte becomes at most 3 */
	size_t bigmax = 3 * size + 64;
	char *big = malloc(bigmax);
	char *msg = malloc(msgmax + GUARD_BYTES);
	if (!big || !msg || !before)
		abort();
	memset(msg, 0xa5, msgmax + GUARD_BYTES);
	int v = softerr_classify(result, &rules, msg, msgmax);
	if (v != 0 && v != 1)
		fail("a verdict that is neither 0 nor 1", NULL);
	if (v != oracle(result, &rules))
		fail("the verdict is not the one the rules give", v ? "flagged" : "not flagged");
	if (softerr_classify(result, &rules, NULL, 0) != v || softerr_classify(result, &rules, NULL, 16) != v)
		fail("the verdict depends on the message buffer", NULL);
	for (size_t k = msgmax; k < msgmax + GUARD_BYTES; k++)
		if ((uint8_t)msg[k] != 0xa5)
			fail("a byte written past msgmax", NULL);
	if (v == 0) {
		if ((uint8_t)msg[0] != 0xa5)
			fail("a message written for a result that is not a soft error", NULL);
	} else {
		if (softerr_classify(result, &rules, big, bigmax) != 1)
			fail("the verdict changed on a second call", NULL);
		size_t blen = strnlen(big, bigmax);
		size_t n = strnlen(msg, msgmax);
		size_t at;
		uint32_t cp;
		if (blen == bigmax || n == msgmax)
			fail("a message without its NUL", NULL);
		if (blen == 0)
			fail("a soft error with an empty message", NULL);
		if (text_check(TEXT_ANY, big, blen, &at, &cp) != 0 || text_check(TEXT_ANY, msg, n, &at, &cp) != 0)
			fail("a message that is not UTF-8", big);
		if (n != text_cut(big, blen, msgmax - 1) || memcmp(msg, big, n) != 0)
			fail("the bounded message is not the longest whole-character prefix of the full one", big);
		json_t *copy = json_deep_copy(result);
		char *again = malloc(bigmax);
		if (!copy || !again)
			abort();
		if (softerr_classify(copy, &rules, again, bigmax) != 1 || strcmp(again, big) != 0)
			fail("a copy of the result gives another answer", again);
		free(again);
		json_decref(copy);
	}
	if (!json_equal(result, before))
		fail("the result changed", NULL);
	free(msg);
	free(big);
	json_decref(before);
	json_decref(result);
	return 0;
}
