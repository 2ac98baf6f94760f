/* Entry kinds, building and checking entries, and the JSON mapping. */
#include "ledger/entry.h"

#include "common/eckey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ft { F_TEXT, F_UINT, F_ANY };
struct field {
	const char *name;
	enum ft type;
};
struct kind {
	const char *name;
	struct field req[4];
};

/* Required fields per kind (DESIGN.md lists the full set; the rest are optional here
 * so that the gateway can grow them without a format break). */
static const struct kind kinds[] = {
	{"request", {{"session_id", F_TEXT}, {"type", F_TEXT}, {"message", F_TEXT}, {NULL, F_ANY}}},
	{"decision", {{"session_id", F_TEXT}, {"outcome", F_TEXT}, {NULL, F_ANY}}},
	{"timeout", {{"session_id", F_TEXT}, {"reason", F_TEXT}, {NULL, F_ANY}}},
	{"cancelled", {{"session_id", F_TEXT}, {"reason", F_TEXT}, {NULL, F_ANY}}},
	{"abandoned", {{"session_id", F_TEXT}, {"reason", F_TEXT}, {NULL, F_ANY}}},
	{"policy_load", {{"digest", F_TEXT}, {"source", F_TEXT}, {NULL, F_ANY}}},
	{"key", {{"purpose", F_TEXT}, {"kid", F_TEXT}, {"event", F_TEXT}, {NULL, F_ANY}}},
	{"identity", {{"event", F_TEXT}, {"name", F_TEXT}, {NULL, F_ANY}}},
};

static const char *reserved[] = {"v", "seq", "time", "prev"};

static int check_kind_fields(const struct cv *m, const char *where, char *err)
{
	const struct cv *kind = cv_get(m, "kind");
	if (!kind || kind->t != CV_TEXT)
		return as_fail(err, AS_ECORRUPT, "%s: missing text field 'kind'", where);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (!cv_text_eq(kind, kinds[i].name))
			continue;
		for (const struct field *f = kinds[i].req; f->name; f++) {
			const struct cv *v = cv_get(m, f->name);
			if (!v)
				return as_fail(err, AS_ECORRUPT, "%s: kind '%s' requires field '%s'", where,
					       kinds[i].name, f->name);
			if ((f->type == F_TEXT && v->t != CV_TEXT) || (f->type == F_UINT && v->t != CV_UINT))
				return as_fail(err, AS_ECORRUPT, "%s: field '%s' must be %s", where, f->name,
					       f->type == F_TEXT ? "text" : "an unsigned integer");
		}
		return 0;
	}
	return as_fail(err, AS_ECORRUPT, "%s: unknown kind '%.*s'", where, (int)(kind->n > 40 ? 40 : kind->n),
		       (const char *)kind->s);
}

int entry_check(const struct cv *e, uint64_t expect_seq, const uint8_t *expect_prev, char *err)
{
	if (e->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "entry is not a CBOR map");
	/* One pass over the keys picks out the ledger's own fields; keys are text,
	 * since anything else would not survive the JSON export. */
	const struct cv *v = NULL, *seq = NULL, *t = NULL, *prev = NULL;
	for (size_t i = 0; i < e->n; i++) {
		const struct cv *k = &e->items[2 * i], *val = &e->items[2 * i + 1];
		if (k->t != CV_TEXT)
			return as_fail(err, AS_ECORRUPT, "entry has a key that is not text");
		if (k->n == 1 && k->s[0] == 'v')
			v = val;
		else if (k->n == 3 && !memcmp(k->s, "seq", 3))
			seq = val;
		else if (k->n == 4 && !memcmp(k->s, "time", 4))
			t = val;
		else if (k->n == 4 && !memcmp(k->s, "prev", 4))
			prev = val;
	}
	if (!v || v->t != CV_UINT || v->u != ENTRY_VERSION)
		return as_fail(err, AS_ECORRUPT, "entry: field 'v' must be %d", ENTRY_VERSION);
	if (!seq || seq->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT, "entry: missing unsigned field 'seq'");
	if (seq->u != expect_seq)
		return as_fail(err, AS_ECORRUPT, "entry stored under seq %llu says seq %llu",
			       (unsigned long long)expect_seq, (unsigned long long)seq->u);
	if (!t || t->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT, "entry: missing unsigned field 'time'");
	if (!prev || prev->t != CV_BYTES || prev->n != 32)
		return as_fail(err, AS_ECORRUPT, "entry: field 'prev' must be 32 bytes");
	GUARD(check_kind_fields(e, "entry", err));
	if (expect_prev && memcmp(prev->s, expect_prev, 32) != 0)
		return as_fail(err, AS_ECORRUPT, "prev does not match the leaf hash of entry %llu",
			       (unsigned long long)(expect_seq - 1));
	return 0;
}

int entry_build(const struct cv *fields, uint64_t seq, uint64_t time_ms, const uint8_t prev[32], struct buf *out,
		char *err)
{
	if (fields->t != CV_MAP)
		return as_fail(err, AS_EINVAL, "an entry must be an object of fields");
	for (size_t i = 0; i < fields->n; i++) {
		const struct cv *k = &fields->items[2 * i];
		if (k->t != CV_TEXT)
			return as_fail(err, AS_EINVAL, "entry field names must be text");
		for (size_t r = 0; r < sizeof reserved / sizeof reserved[0]; r++)
			if (cv_text_eq(k, reserved[r]))
				return as_fail(err, AS_EINVAL, "field '%s' is set by the ledger, not by the caller",
					       reserved[r]);
	}
	int rc = check_kind_fields(fields, "entry", err);
	if (rc != 0)
		return AS_EINVAL;
	/* A shallow copy of the caller's map with the four ledger fields added. */
	struct cv items[2 * 64 + 8];
	if (fields->n > 64)
		return as_fail(err, AS_ETOOBIG, "an entry may have at most 64 fields");
	memcpy(items, fields->items, 2 * fields->n * sizeof items[0]);
	size_t n = fields->n;
	struct cv *kv = &items[2 * n];
	memset(kv, 0, 8 * sizeof *kv);
	kv[0] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"v", .n = 1};
	kv[1] = (struct cv){.t = CV_UINT, .u = ENTRY_VERSION};
	kv[2] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"seq", .n = 3};
	kv[3] = (struct cv){.t = CV_UINT, .u = seq};
	kv[4] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"time", .n = 4};
	kv[5] = (struct cv){.t = CV_UINT, .u = time_ms};
	kv[6] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"prev", .n = 4};
	kv[7] = (struct cv){.t = CV_BYTES, .s = prev, .n = 32};
	struct cv m = {.t = CV_MAP, .n = n + 4, .items = items};
	size_t start = out->len;
	rc = cbor_encode(&m, out, err);
	if (rc == 0 && out->len - start > ENTRY_MAX)
		rc = as_fail(err, AS_ETOOBIG, "entry is %zu bytes, over the maximum of %u", out->len - start, ENTRY_MAX);
	return rc;
}

int entry_key_fields(const char *purpose, const char *kid, const char *event, const struct eckey *k,
		     struct buf *out, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct buf pem;
	buf_init(&pem, 4096);
	int rc = k ? eckey_public_pem(k, &pem) : 0;
	struct cv *m = cv_map(&a, k ? 5 : 4);
	const char *kv[5][2] = {{"kind", "key"}, {"purpose", purpose}, {"kid", kid}, {"event", event}, {"public_key", NULL}};
	if (!m)
		rc = AS_ENOMEM;
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		rc = cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0]));
		if (rc == 0)
			rc = kv[i][1] ? cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1]))
				      : cv_set_text(&a, &m->items[2 * i + 1], (const char *)pem.p, pem.len);
	}
	if (rc == 0)
		rc = cbor_encode(m, out, err);
	else
		as_fail(err, rc, "cannot build a key entry: %s", as_strerror(rc));
	buf_free(&pem);
	cv_arena_free(&a);
	return rc;
}

/* Shortest text that reads back as the same double (C locale). */
static void real_text(double d, char out[32])
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, 32, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

int cv_from_json_value(struct cv_arena *a, const json_t *j, struct cv *v, int depth, int reals_as_text, char *err)
{
	if (depth > CBOR_MAX_DEPTH)
		return as_fail(err, AS_EINVAL, "JSON nested deeper than %d", CBOR_MAX_DEPTH);
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		size_t n = json_object_size(j), i = 0;
		v->t = CV_MAP;
		v->n = n;
		if (n && !(v->items = cv_alloc(a, 2 * n)))
			return as_fail(err, AS_ENOMEM, "JSON object too large");
		for (void *it = json_object_iter((json_t *)j); it; it = json_object_iter_next((json_t *)j, it), i++) {
			GUARD(cv_set_text(a, &v->items[2 * i], json_object_iter_key(it), json_object_iter_key_len(it)));
			GUARD(cv_from_json_value(a, json_object_iter_value(it), &v->items[2 * i + 1], depth + 1,
						 reals_as_text, err));
		}
		return 0;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(j);
		v->t = CV_ARRAY;
		v->n = n;
		if (n && !(v->items = cv_alloc(a, n)))
			return as_fail(err, AS_ENOMEM, "JSON array too large");
		for (size_t i = 0; i < n; i++)
			GUARD(cv_from_json_value(a, json_array_get(j, i), &v->items[i], depth + 1, reals_as_text, err));
		return 0;
	}
	case JSON_STRING:
		return cv_set_text(a, v, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		cv_set_int(v, (int64_t)json_integer_value(j));
		return 0;
	case JSON_REAL: {
		if (!reals_as_text)
			return as_fail(err, AS_EINVAL, "JSON number %g: entries hold integers only", json_real_value(j));
		char t[32];
		real_text(json_real_value(j), t);
		return cv_set_text(a, v, t, strlen(t));
	}
	case JSON_TRUE:
		v->t = CV_TRUE;
		return 0;
	case JSON_FALSE:
		v->t = CV_FALSE;
		return 0;
	case JSON_NULL:
		v->t = CV_NULL;
		return 0;
	}
	return as_fail(err, AS_EINVAL, "unknown JSON type");
}

int cv_from_json(struct cv_arena *a, const json_t *j, struct cv **out, char *err)
{
	struct cv *v = cv_alloc(a, 1);
	if (!v)
		return as_fail(err, AS_ENOMEM, "out of memory");
	GUARD(cv_from_json_value(a, j, v, 0, 0, err));
	*out = v;
	return 0;
}

json_t *cv_to_json(const struct cv *v)
{
	switch (v->t) {
	case CV_UINT:
		if (v->u > INT64_MAX)
			return json_sprintf("%llu", (unsigned long long)v->u); /* beyond JSON's safe range */
		return json_integer((json_int_t)v->u);
	case CV_NINT:
		if (v->u == UINT64_MAX) /* -2^64: u + 1 would wrap to 0 and print "-0" */
			return json_string("-18446744073709551616");
		if (v->u > INT64_MAX)
			return json_sprintf("-%llu", (unsigned long long)v->u + 1);
		return json_integer(-(json_int_t)v->u - 1);
	case CV_TEXT:
		return json_stringn((const char *)v->s, v->n);
	case CV_BYTES: {
		char *h = malloc(2 * v->n + 1);
		if (!h)
			return NULL;
		hex_encode(v->s, v->n, h);
		json_t *s = json_string(h);
		free(h);
		return s;
	}
	case CV_ARRAY: {
		json_t *a = json_array();
		for (size_t i = 0; a && i < v->n; i++)
			if (json_array_append_new(a, cv_to_json(&v->items[i])) != 0) {
				json_decref(a);
				return NULL;
			}
		return a;
	}
	case CV_MAP: {
		json_t *o = json_object();
		for (size_t i = 0; o && i < v->n; i++) {
			const struct cv *k = &v->items[2 * i];
			char alt[32];
			const char *key = (const char *)k->s;
			size_t klen = k->n;
			if (k->t != CV_TEXT) { /* entry_check refuses such keys; export names them by position */
				klen = (size_t)snprintf(alt, sizeof alt, "#%zu", i);
				key = alt;
			}
			if (json_object_setn_new(o, key, klen, cv_to_json(&v->items[2 * i + 1])) != 0) {
				json_decref(o);
				return NULL;
			}
		}
		return o;
	}
	case CV_FALSE:
		return json_false();
	case CV_TRUE:
		return json_true();
	case CV_NULL:
		return json_null();
	}
	return NULL;
}
