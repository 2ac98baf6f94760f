/* Fuzz target: redaction alone, with the fuzzer steering which rules apply. The
 * first byte picks the operator rules (none or a fixed set) and the bound; the rest
 * is text to redact and, when it parses, a JSON value to redact and bound.
 * Properties (abort when violated): redact_text and redact_json are idempotent,
 * never fail with room for their output, keep UTF-8 text UTF-8, and only ever
 * replace spans with the marker (the text outside the markers is the input's, in
 * order); redact_bound keeps its bound and leaves small values alone. */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "common/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *why)
{
	fprintf(stderr, "redact: property violated: %s\n", why);
	fprintf(stderr, "input (%zu bytes): %.*s\n", cur_size, cur_size > 2048 ? 2048 : (int)cur_size,
		(const char *)cur_data);
	abort();
}

/* "RED" and "k" are there to try to make the marker itself, or a one-letter key,
 * start a match. */
static const char *const op_keys[] = {"ticket", "x-vault-token", "k"};
static const char *const op_prefixes[] = {"acme_", "glpat-", "RED"};
static const struct redact_rules op_rules = {op_keys, 3, op_prefixes, 3, 0};

/* out is in with some disjoint, non-empty spans each replaced by one marker: the
 * pieces between markers are pieces of in, in order, the first one at its start and
 * the last one at its end. Only meaningful when in has no '[' (then every marker in
 * out was put there by redaction); placing each piece as early as possible finds a
 * fit whenever there is one. */
static int only_spans_replaced(const uint8_t *in, size_t n, const uint8_t *out, size_t m)
{
	size_t pos = 0, j = 0;
	int first = 1;
	for (;;) {
		const uint8_t *mk =
		    m - j >= REDACT_MARK_LEN ? memmem(out + j, m - j, REDACT_MARK, REDACT_MARK_LEN) : NULL;
		size_t k = mk ? (size_t)(mk - out) : m, len = k - j;
		if (!mk) { /* the last piece ends the input */
			if (first)
				return len == n && (n == 0 || memcmp(in, out, n) == 0);
			return len <= n && n - len >= pos + 1 && (len == 0 || memcmp(in + n - len, out + j, len) == 0);
		}
		if (first) {
			if (len > n || (len && memcmp(in, out + j, len)))
				return 0;
			pos = len;
		} else {
			if (pos + 1 > n)
				return 0;
			const uint8_t *f = len ? memmem(in + pos + 1, n - pos - 1, out + j, len) : in + pos + 1;
			if (!f)
				return 0;
			pos = (size_t)(f - in) + len;
		}
		first = 0;
		j = k + REDACT_MARK_LEN;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cur_data = data;
	cur_size = size;
	if (size < 1)
		return 0;
	const struct redact_rules *r = data[0] & 1 ? &op_rules : NULL;
	size_t bound = REDACT_BOUND_MIN + (size_t)(data[0] >> 1) * 8;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;

	struct buf a, b;
	buf_init(&a, 10 * n + 16);
	buf_init(&b, 10 * (10 * n + 16) + 16);
	if (redact_text(s, n, r, &a, NULL) != 0)
		fail("redact_text failed with room for its output");
	if (redact_text(a.len ? (const char *)a.p : "", a.len, r, &b, NULL) != 0)
		fail("redact_text failed on its own output");
	if (a.len != b.len || (a.len && memcmp(a.p, b.p, a.len)))
		fail("redact_text is not idempotent");
	if (utf8_valid((const uint8_t *)s, n) && !utf8_valid(a.p, a.len))
		fail("redact_text broke UTF-8");
	if (!memchr(s, '[', n) && !only_spans_replaced((const uint8_t *)s, n, a.p, a.len))
		fail("redact_text changed text outside the spans it marked");
	buf_free(&a);
	buf_free(&b);

	json_t *j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	if (redact_json(j, r, NULL) == 0) {
		char *once = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		if (redact_json(j, r, NULL) != 0)
			fail("redact_json refused its own output");
		char *twice = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!once || !twice || strcmp(once, twice))
			fail("redact_json is not idempotent");
		free(once);
		free(twice);
		size_t total = 0, now = 0;
		json_t *before = j;
		if (redact_json_size(j, &total) != 0 || redact_bound(&j, bound) != 0 || redact_json_size(j, &now) != 0)
			fail("sizing or bounding failed");
		if (now > bound || (total <= bound && (j != before || now != total)) || (total > bound && j == before))
			fail("redact_bound broke its bound");
	}
	json_decref(j);
	return 0;
}
