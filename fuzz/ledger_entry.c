/* Fuzz target: stored ledger entries, i.e. the bytes assent-verify reads from LMDB.
 * The whole input is one entry value, so stored entries are seeds as they are.
 * Properties: the decoder accepts only canonical CBOR (decode then encode gives
 * the input back), libcbor's cbor_load reads whatever it accepts as the same item
 * (an independent decoder as oracle: fuzz/cbor_oracle.h), the JSON export says
 * what the value says, and an entry that entry_check accepts is exactly what
 * entry_build writes for its fields. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "common/util.h"
#include "fuzz/cbor_oracle.h"
#include "ledger/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void dump(const char *what, const uint8_t *p, size_t n)
{
	fprintf(stderr, "%s (%zu bytes):", what, n);
	for (size_t i = 0; i < n && i < 128; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, "%s\n", n > 128 ? " ..." : "");
}

static void fail(const char *why, const uint8_t *data, size_t size)
{
	fprintf(stderr, "ledger_entry: property violated: %s\n", why);
	dump("input", data, size);
	abort();
}

/* Every refusal must come with a message (err was filled with 'X' beforehand). */
static void check_err(const char *err, const char *fn, const uint8_t *data, size_t size)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0) {
		fprintf(stderr, "ledger_entry: %s failed without an error message\n", fn);
		fail("error message missing", data, size);
	}
}

/* Decimal of a 65-bit value, for the numbers JSON cannot hold as integers. */
static int dec_eq(const char *s, size_t n, unsigned __int128 want)
{
	unsigned __int128 v = 0;
	if (n == 0 || n > 20 || (s[0] == '0' && n > 1))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v == want;
}

/* cv_to_json must say what the value says (entry.h: integers as integers while they
 * fit, byte strings as lowercase hex, text keys as keys). */
static int export_ok(const struct cv *v, const json_t *j)
{
	if (!j)
		return 0;
	switch (v->t) {
	case CV_UINT:
		if (v->u <= INT64_MAX)
			return json_is_integer(j) && (uint64_t)json_integer_value(j) == v->u;
		return json_is_string(j) && dec_eq(json_string_value(j), json_string_length(j), v->u);
	case CV_NINT:
		if (v->u <= INT64_MAX)
			return json_is_integer(j) && json_integer_value(j) == -(json_int_t)v->u - 1;
		return json_is_string(j) && json_string_length(j) > 1 && json_string_value(j)[0] == '-' &&
		       dec_eq(json_string_value(j) + 1, json_string_length(j) - 1, (unsigned __int128)v->u + 1);
	case CV_TEXT:
		return json_is_string(j) && json_string_length(j) == v->n &&
		       memcmp(json_string_value(j), v->s, v->n) == 0;
	case CV_BYTES: {
		if (!json_is_string(j) || json_string_length(j) != 2 * v->n)
			return 0;
		char *h = malloc(2 * v->n + 1);
		if (!h)
			abort();
		hex_encode(v->s, v->n, h);
		int same = memcmp(h, json_string_value(j), 2 * v->n) == 0;
		free(h);
		return same;
	}
	case CV_ARRAY:
		if (!json_is_array(j) || json_array_size(j) != v->n)
			return 0;
		for (size_t i = 0; i < v->n; i++)
			if (!export_ok(&v->items[i], json_array_get(j, i)))
				return 0;
		return 1;
	case CV_MAP: {
		if (!json_is_object(j))
			return 0;
		size_t ntext = 0;
		for (size_t i = 0; i < v->n; i++) {
			const struct cv *k = &v->items[2 * i];
			if (k->t != CV_TEXT)
				continue; /* exported as "#i", which a text key may also be */
			ntext++;
			if (!export_ok(&v->items[2 * i + 1], json_object_getn(j, (const char *)k->s, k->n)))
				return 0;
		}
		return ntext == v->n ? json_object_size(j) == v->n : json_object_size(j) <= v->n;
	}
	case CV_FALSE:
		return json_is_false(j);
	case CV_TRUE:
		return json_is_true(j);
	case CV_NULL:
		return json_is_null(j);
	}
	return 0;
}

/* An accepted entry is what entry_build writes for its own fields at its seq, time and prev. */
static void check_rebuild(const struct cv *e, const uint8_t *data, size_t size)
{
	const struct cv *seq = cv_get(e, "seq"), *t = cv_get(e, "time"), *prev = cv_get(e, "prev");
	if (e->n - 4 > 64)
		return; /* entry_build refuses more than 64 fields; entry_check has no such limit */
	struct cv *items = calloc(2 * e->n, sizeof *items);
	if (!items)
		abort();
	struct cv fields = {.t = CV_MAP, .items = items};
	for (size_t i = 0; i < e->n; i++) {
		const struct cv *k = &e->items[2 * i];
		if (cv_text_eq(k, "v") || cv_text_eq(k, "seq") || cv_text_eq(k, "time") || cv_text_eq(k, "prev"))
			continue;
		items[2 * fields.n] = *k;
		items[2 * fields.n + 1] = e->items[2 * i + 1];
		fields.n++;
	}
	if (fields.n != e->n - 4)
		fail("entry_check accepted an entry without exactly one v, seq, time and prev", data, size);
	struct buf out;
	char err[AS_ERRLEN];
	buf_init(&out, ENTRY_MAX + 256);
	int rc = entry_build(&fields, seq->u, t->u, prev->s, &out, err);
	if (rc != 0 && size <= ENTRY_MAX) {
		fprintf(stderr, "entry_build: %s\n", err);
		fail("entry_check accepts an entry that entry_build refuses", data, size);
	}
	if (rc == 0 && (out.len != size || memcmp(out.p, data, size) != 0)) {
		dump("rebuilt", out.p, out.len);
		fail("entry_build does not rebuild an accepted entry byte for byte", data, size);
	}
	buf_free(&out);
	free(items);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t zero[32];
	struct cv_arena a;
	struct cv *e = NULL;
	char err[AS_ERRLEN];
	cv_arena_init(&a, 1 << 20);
	memset(err, 'X', sizeof err);
	if (cbor_decode(data, size, &a, &e, err) != 0) {
		check_err(err, "cbor_decode", data, size);
		cv_arena_free(&a);
		return 0;
	}

	/* Canonical form: one encoding per value, so decode then encode is the identity. */
	struct buf out;
	buf_init(&out, 2 * size + 64);
	memset(err, 'X', sizeof err);
	if (cbor_encode(e, &out, err) != 0) {
		check_err(err, "cbor_encode", data, size);
		fprintf(stderr, "cbor_encode: %s\n", err);
		fail("cbor_encode refuses a value cbor_decode accepted", data, size);
	}
	if (out.len != size || memcmp(out.p, data, size) != 0) {
		dump("re-encoded", out.p, out.len);
		fail("decode then encode is not the identity", data, size);
	}
	buf_free(&out);

	const char *why = NULL;
	if (!cbor_oracle_check(e, data, size, &why)) {
		fprintf(stderr, "libcbor: %s\n", why);
		fail("libcbor does not read what cbor_decode accepted as the same item", data, size);
	}

	json_t *j = cv_to_json(e);
	if (!export_ok(e, j))
		fail("cv_to_json does not say what the value says", data, size);
	json_decref(j);

	/* Check at the seq the entry claims (a verifier knows it from the key), without and
	 * with a prev: the all-zero prev of entry 0 is what a genesis entry must carry. */
	const struct cv *seq = cv_get(e, "seq");
	uint64_t s = seq && seq->t == CV_UINT ? seq->u : 0;
	memset(err, 'X', sizeof err);
	int rc1 = entry_check(e, s, NULL, err);
	if (rc1 != 0)
		check_err(err, "entry_check", data, size);
	memset(err, 'X', sizeof err);
	int rc2 = entry_check(e, 0, zero, err);
	if (rc2 != 0)
		check_err(err, "entry_check", data, size);
	if (rc2 == 0 && rc1 != 0)
		fail("entry_check accepts with a prev what it refuses without one", data, size);
	if (rc1 == 0)
		check_rebuild(e, data, size);
	cv_arena_free(&a);
	return 0;
}
