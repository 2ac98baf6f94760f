/* JSON <-> CBOR values (struct cv): what the ledger tools export and import, and how
 * the mcp worker turns an agent's JSON context into the action's CBOR. Moved from
 * ledger/entry.c so that a jailed worker links it without the ledger. */
#include "common/cvjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
			return as_fail(err, AS_EINVAL, "JSON number %g: entries hold integers only",
				       json_real_value(j));
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

const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		return "null";
	}
	return "an unknown value";
}
