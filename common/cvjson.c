/* JSON <-> CBOR values (struct cv), the one bridge: what the ledger tools export and
 * import, how the mcp worker turns an agent's JSON context into the action's CBOR, and the
 * canonical call's arguments (call.c), each with its options (cvjson.h). */
#include "common/cvjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct cvj_opts cvj_ledger = {CVJ_REALS_REFUSE, CBOR_MAX_DEPTH, NULL};
const struct cvj_opts cvj_context = {CVJ_REALS_TEXT, CBOR_MAX_DEPTH, NULL};

size_t cv_real_text(double d, char out[32])
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, 32, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	return strlen(out);
}

/* A builder failed with rc: the arena is full. The ledger's messages name what did not fit
 * (or none: rc as the builder gave it); with o->what, the arena is the input's bound. */
static int full(const struct cvj_opts *o, int rc, const char *ledger_msg, char *err)
{
	if (o->what)
		return as_fail(err, AS_ETOOBIG, "%s: too many values", o->what);
	return ledger_msg ? as_fail(err, AS_ENOMEM, "%s", ledger_msg) : rc;
}

static int from_object(struct cv_arena *a, const json_t *j, struct cv *v, int depth, const struct cvj_opts *o,
		       char *err)
{
	size_t n = json_object_size(j), i = 0;
	*v = (struct cv){.t = CV_MAP, .n = n};
	if (n && !(v->items = cv_alloc(a, 2 * n)))
		return full(o, AS_ENOMEM, "JSON object too large", err);
	for (void *it = json_object_iter((json_t *)j); it; it = json_object_iter_next((json_t *)j, it), i++) {
		int rc = cv_set_text(a, &v->items[2 * i], json_object_iter_key(it), json_object_iter_key_len(it));
		if (rc != 0)
			return full(o, rc, NULL, err);
		GUARD(cv_from_json_value(a, json_object_iter_value(it), &v->items[2 * i + 1], depth + 1, o, err));
	}
	return 0;
}

static int from_array(struct cv_arena *a, const json_t *j, struct cv *v, int depth, const struct cvj_opts *o, char *err)
{
	size_t n = json_array_size(j);
	*v = (struct cv){.t = CV_ARRAY, .n = n};
	if (n && !(v->items = cv_alloc(a, n)))
		return full(o, AS_ENOMEM, "JSON array too large", err);
	for (size_t i = 0; i < n; i++)
		GUARD(cv_from_json_value(a, json_array_get(j, i), &v->items[i], depth + 1, o, err));
	return 0;
}

static int from_real(struct cv_arena *a, double d, struct cv *v, const struct cvj_opts *o, char *err)
{
	if (o->reals == CVJ_REALS_REFUSE)
		return o->what ? as_fail(err, AS_EINVAL, "%s: a number %g where integers only", o->what, d)
			       : as_fail(err, AS_EINVAL, "JSON number %g: entries hold integers only", d);
	char t[32];
	size_t n = cv_real_text(d, t);
	int rc = o->reals == CVJ_REALS_TEXT ? cv_set_text(a, v, t, n) : cv_set_bytes(a, v, (const uint8_t *)t, n);
	return rc ? full(o, rc, NULL, err) : 0;
}

int cv_from_json_value(struct cv_arena *a, const json_t *j, struct cv *v, int depth, const struct cvj_opts *o,
		       char *err)
{
	if (depth > o->max_depth)
		return o->what ? as_fail(err, AS_EINVAL, "%s: nested deeper than %d", o->what, o->max_depth)
			       : as_fail(err, AS_EINVAL, "JSON nested deeper than %d", o->max_depth);
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return from_object(a, j, v, depth, o, err);
	case JSON_ARRAY:
		return from_array(a, j, v, depth, o, err);
	case JSON_STRING: {
		int rc = cv_set_text(a, v, json_string_value(j), json_string_length(j));
		return rc ? full(o, rc, NULL, err) : 0;
	}
	case JSON_INTEGER:
		cv_set_int(v, (int64_t)json_integer_value(j));
		return 0;
	case JSON_REAL:
		return from_real(a, json_real_value(j), v, o, err);
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
	return o->what ? as_fail(err, AS_EINVAL, "%s: a value of no JSON type", o->what)
		       : as_fail(err, AS_EINVAL, "unknown JSON type");
}

int cv_from_json(struct cv_arena *a, const json_t *j, struct cv **out, char *err)
{
	struct cv *v = cv_alloc(a, 1);
	if (!v)
		return as_fail(err, AS_ENOMEM, "out of memory");
	GUARD(cv_from_json_value(a, j, v, 0, &cvj_ledger, err));
	*out = v;
	return 0;
}

/* An integer: exact, NULL beyond what JSON's integers (jansson's json_int_t) hold; else
 * those as decimal strings. */
static json_t *int_json(const struct cv *v, int exact)
{
	if (v->u <= INT64_MAX)
		return json_integer(v->t == CV_UINT ? (json_int_t)v->u : -(json_int_t)v->u - 1);
	if (exact)
		return NULL;
	if (v->t == CV_UINT)
		return json_sprintf("%llu", (unsigned long long)v->u); /* beyond JSON's safe range */
	if (v->u == UINT64_MAX)					       /* -2^64: u + 1 would wrap to 0 and print "-0" */
		return json_string("-18446744073709551616");
	return json_sprintf("-%llu", (unsigned long long)v->u + 1);
}

/* A byte string: the real it holds (CVJ_REALS_BYTES), its text (CVJ_REALS_TEXT: a call's
 * reals read as an entry's), else lowercase hex. */
static json_t *bytes_json(const struct cv *v, enum cvj_reals reals)
{
	if (reals == CVJ_REALS_TEXT)
		return json_stringn((const char *)v->s, v->n);
	if (reals == CVJ_REALS_BYTES) {
		char t[32];
		snprintf(t, sizeof t, "%.*s", (int)v->n, (const char *)v->s);
		return json_real(strtod(t, NULL));
	}
	char *h = malloc(2 * v->n + 1);
	if (!h)
		return NULL;
	hex_encode(v->s, v->n, h);
	json_t *s = json_string(h);
	free(h);
	return s;
}

static json_t *map_json(const struct cv *v, const struct cvj_opts *o, int exact)
{
	json_t *m = json_object();
	for (size_t i = 0; m && i < v->n; i++) {
		const struct cv *k = &v->items[2 * i];
		char alt[32];
		const char *key = (const char *)k->s;
		size_t klen = k->n;
		int text = k->t == CV_TEXT || (k->t == CV_BYTES && o->reals == CVJ_REALS_TEXT);
		if (!text && exact)
			key = NULL;
		else if (!text) { /* entry_check refuses such keys; export names them by position */
			klen = (size_t)snprintf(alt, sizeof alt, "#%zu", i);
			key = alt;
		}
		if (!key || json_object_setn_new(m, key, klen, cv_to_json_with(&v->items[2 * i + 1], o)) != 0) {
			json_decref(m);
			return NULL;
		}
	}
	return m;
}

json_t *cv_to_json_with(const struct cv *v, const struct cvj_opts *o)
{
	int exact = o->reals == CVJ_REALS_BYTES;
	switch (v->t) {
	case CV_UINT:
	case CV_NINT:
		return int_json(v, exact);
	case CV_TEXT:
		return json_stringn((const char *)v->s, v->n);
	case CV_BYTES:
		return bytes_json(v, o->reals);
	case CV_ARRAY: {
		json_t *a = json_array();
		for (size_t i = 0; a && i < v->n; i++)
			if (json_array_append_new(a, cv_to_json_with(&v->items[i], o)) != 0) {
				json_decref(a);
				return NULL;
			}
		return a;
	}
	case CV_MAP:
		return map_json(v, o, exact);
	case CV_FALSE:
		return json_false();
	case CV_TRUE:
		return json_true();
	case CV_NULL:
		return json_null();
	}
	return NULL;
}

json_t *cv_to_json(const struct cv *v)
{
	return cv_to_json_with(v, &cvj_ledger);
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
