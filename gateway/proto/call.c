/* The canonical call of the gate: its encoder, checker and digest (call.h). */
#include "gateway/proto/call.h"

#include "common/cvjson.h"

#include <mbedtls/sha256.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int up_name_ok(const char *p, size_t n)
{
	if (n < 1 || n > 32 || p[0] == '_' || p[n - 1] == '_')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(p[i] == '_' || p[i] == '-' || (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'z') ||
		      (p[i] >= 'A' && p[i] <= 'Z')) ||
		    (p[i] == '_' && i + 1 < n && p[i + 1] == '_'))
			return 0;
	return 1;
}

int call_tool_name_ok(const char *p, size_t n)
{
	if (n < 1 || n > CALL_TOOL_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(p[i] == '_' || p[i] == '-' || p[i] == '.' || (p[i] >= '0' && p[i] <= '9') ||
		      (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')))
			return 0;
	return 1;
}

/* JSON arguments as the call holds them: reals as byte strings of their text (call.h). */
static const struct cvj_opts args_opts = {CVJ_REALS_BYTES, CALL_DEPTH, "arguments"};
/* Any other JSON value (call_value_encode): nested as deep as CBOR allows below its top. */
static const struct cvj_opts value_opts = {CVJ_REALS_BYTES, CBOR_MAX_DEPTH - 1, "arguments"};

static int put_text(struct cv_arena *a, struct cv *m, size_t i, const char *k, const char *v)
{
	int rc = cv_set_text(a, &m->items[2 * i], k, strlen(k));
	if (rc == 0)
		rc = cv_set_text(a, &m->items[2 * i + 1], v, strlen(v));
	return rc;
}

/* What each method's call holds besides method and upstream: a name (its key, and whether
 * it is a tool or prompt name or a URI), and an object (its key; present always). */
struct call_shape {
	const char *method, *name_key, *obj_key;
	int uri;   /* the name is a URI: 1 to CALL_URI_MAX bytes of printable text */
	int input; /* may carry "input": a retry's inputResponses (MCP 2026-07-28, SEP-2322) */
};
static const struct call_shape shapes[] = {
    {"tools/call", "tool", "arguments", 0, 1},	  {"prompts/get", "prompt", "arguments", 0, 1},
    {"resources/read", "uri", NULL, 1, 0},	  {"resources/subscribe", "uri", NULL, 1, 0},
    {"resources/unsubscribe", "uri", NULL, 1, 0}, {"completion/complete", NULL, "params", 0, 0},
};

static const struct call_shape *shape_of(const char *method, size_t n)
{
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
		if (strlen(shapes[i].method) == n && !memcmp(shapes[i].method, method, n))
			return &shapes[i];
	return NULL;
}

static int uri_ok(const char *p, size_t n)
{
	if (n < 1 || n > CALL_URI_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return 0;
	return 1;
}

int call_encode_ex(const char *method, const char *upstream, const char *name, const json_t *obj, struct buf *out,
		   char *err)
{
	return call_encode_input(method, upstream, name, obj, NULL, out, err);
}

/* A retry's inputResponses: an object whose every member is an object (the answer to one of
 * the server's inputRequests, by its key). */
static int input_ok(const json_t *input, char *err)
{
	if (!json_is_object(input))
		return as_fail(err, AS_EINVAL, "inputResponses: expected an object");
	if (json_object_size(input) > CALL_INPUTS_MAX)
		return as_fail(err, AS_EINVAL, "inputResponses: more than %d answers", CALL_INPUTS_MAX);
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)input, k, v)
	{
		if (!json_is_object(v))
			return as_fail(err, AS_EINVAL,
				       "inputResponses.%.64s: expected an object (a result of its request)", k);
	}
	return 0;
}

int call_encode_input(const char *method, const char *upstream, const char *name, const json_t *obj,
		      const json_t *input, struct buf *out, char *err)
{
	const struct call_shape *sh = shape_of(method, strlen(method));
	if (!sh)
		return as_fail(err, AS_EINVAL, "%s: not a method the gate forwards", method);
	if (!up_name_ok(upstream, strlen(upstream)))
		return as_fail(err, AS_EINVAL, "no upstream server is called that");
	if (sh->name_key && (!name || (sh->uri ? !uri_ok(name, strlen(name)) : !call_tool_name_ok(name, strlen(name)))))
		return as_fail(err, AS_EINVAL,
			       sh->uri ? "uri: 1 to %d bytes without control characters"
				       : "name: 1 to %d of [A-Za-z0-9_.-]",
			       sh->uri ? CALL_URI_MAX : CALL_TOOL_MAX);
	if (obj && !json_is_object(obj))
		return as_fail(err, AS_EINVAL, "%s: expected an object", sh->obj_key ? sh->obj_key : "params");
	if (input && !sh->input)
		return as_fail(err, AS_EINVAL, "%s: carries no inputResponses", method);
	if (input && input_ok(input, err) != 0)
		return AS_EINVAL;
	/* Items: at most one per byte of the result, which is bounded. */
	struct cv_arena a;
	cv_arena_init(&a, CALL_MAX);
	size_t np = 2 + (sh->name_key != NULL) + (sh->obj_key != NULL) + (input != NULL), i = 2;
	struct cv *m = cv_map(&a, np);
	int rc = m ? 0 : AS_ENOMEM;
	if (rc == 0)
		rc = put_text(&a, m, 0, "method", method) | put_text(&a, m, 1, "upstream", upstream);
	if (rc == 0 && sh->name_key)
		rc = put_text(&a, m, i++, sh->name_key, name);
	if (rc == 0 && sh->obj_key) {
		rc = cv_set_text(&a, &m->items[2 * i], sh->obj_key, strlen(sh->obj_key));
		if (rc == 0 && obj)
			rc = cv_from_json_value(&a, obj, &m->items[2 * i + 1], 1, &args_opts, err) ? AS_EINVAL : 0;
		else if (rc == 0)
			m->items[2 * i + 1] = (struct cv){.t = CV_MAP};
		if (rc == AS_EINVAL) {
			cv_arena_free(&a);
			return AS_EINVAL; /* err says why */
		}
		i++;
	}
	if (rc == 0 && input) {
		rc = cv_set_text(&a, &m->items[2 * i], "input", 5);
		if (rc == 0 && cv_from_json_value(&a, input, &m->items[2 * i + 1], 1, &args_opts, err)) {
			cv_arena_free(&a);
			return AS_EINVAL;
		}
	}
	if (rc != 0)
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	if (rc == 0) {
		size_t start = out->len;
		char why[AS_ERRLEN];
		rc = cbor_encode(m, out, why);
		if (rc == 0 && out->len - start > CALL_MAX)
			rc = AS_ETOOBIG;
		if (rc != 0) {
			out->len = start;
			if (rc == AS_ETOOBIG)
				rc = as_fail(err, AS_ETOOBIG, "the call is over %u bytes", CALL_MAX);
			else
				rc = as_fail(err, AS_EINVAL, "the call cannot be encoded: %s", why);
		}
	}
	cv_arena_free(&a);
	return rc;
}

int call_encode(const char *upstream, const char *tool, const json_t *args, struct buf *out, char *err)
{
	return call_encode_ex("tools/call", upstream, tool, args, out, err);
}

static int args_ok(const struct cv *v, int depth, char *err)
{
	if (depth > CALL_DEPTH)
		return as_fail(err, AS_ECORRUPT, "call.arguments: nested deeper than %d", CALL_DEPTH);
	switch (v->t) {
	case CV_MAP:
		for (size_t i = 0; i < v->n; i++) {
			if (v->items[2 * i].t != CV_TEXT)
				return as_fail(err, AS_ECORRUPT, "call.arguments: a key is not text");
			GUARD(args_ok(&v->items[2 * i + 1], depth + 1, err));
		}
		return 0;
	case CV_ARRAY:
		for (size_t i = 0; i < v->n; i++)
			GUARD(args_ok(&v->items[i], depth + 1, err));
		return 0;
	case CV_BYTES: { /* a JSON real's text, exactly as call_encode writes it: one call, one encoding */
		char t[32], canon[32];
		if (v->n == 0 || v->n > 31)
			return as_fail(err, AS_ECORRUPT, "call.arguments: a number of %zu bytes", v->n);
		for (size_t i = 0; i < v->n; i++)
			if (!v->s[i] || !strchr("0123456789+-.e", v->s[i]))
				return as_fail(err, AS_ECORRUPT, "call.arguments: a number is not decimal text");
		memcpy(t, v->s, v->n);
		t[v->n] = 0;
		char *end;
		double d = strtod(t, &end);
		if (*end || d != d || d - d != 0 || cv_real_text(d, canon) != v->n || memcmp(canon, t, v->n))
			return as_fail(err, AS_ECORRUPT, "call.arguments: a number not in its shortest form");
		return 0;
	}
	case CV_UINT:
	case CV_NINT: /* as JSON carries them (jansson's json_int_t): the call's JSON is this exact call */
		if (v->u > INT64_MAX)
			return as_fail(err, AS_ECORRUPT, "call.arguments: an integer outside the signed 64-bit range");
		return 0;
	default:
		return 0; /* text (UTF-8 checked by the decoder), true, false, null */
	}
}

int call_check(const struct cv *c, char *err)
{
	const struct cv *m = c && c->t == CV_MAP ? cv_get(c, "method") : NULL;
	const struct call_shape *sh = m && m->t == CV_TEXT ? shape_of((const char *)m->s, m->n) : NULL;
	if (!sh)
		return as_fail(
		    err, AS_ECORRUPT,
		    "call: expected a map of method, upstream, tool, arguments (or another method's fields)");
	const struct cv *u = cv_get(c, "upstream"), *nm = sh->name_key ? cv_get(c, sh->name_key) : NULL,
			*o = sh->obj_key ? cv_get(c, sh->obj_key) : NULL, *in = sh->input ? cv_get(c, "input") : NULL;
	if (c->n != 2u + (sh->name_key != NULL) + (sh->obj_key != NULL) + (in != NULL) || !u || (sh->name_key && !nm) ||
	    (sh->obj_key && !o))
		return as_fail(err, AS_ECORRUPT, "call: %s: expected method, upstream%s%s%s%s", sh->method,
			       sh->name_key ? ", " : "", sh->name_key ? sh->name_key : "", sh->obj_key ? ", " : "",
			       sh->obj_key ? sh->obj_key : "");
	if (u->t != CV_TEXT || !up_name_ok((const char *)u->s, u->n))
		return as_fail(err, AS_ECORRUPT, "call.upstream: not an upstream's name");
	if (nm && (nm->t != CV_TEXT ||
		   (sh->uri ? !uri_ok((const char *)nm->s, nm->n) : !call_tool_name_ok((const char *)nm->s, nm->n))))
		return as_fail(err, AS_ECORRUPT, "call.%s: not a %s", sh->name_key, sh->uri ? "URI" : "name");
	if (o && o->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "call.%s: expected a map", sh->obj_key);
	if (in && (in->t != CV_MAP || in->n > CALL_INPUTS_MAX))
		return as_fail(err, AS_ECORRUPT, "call.input: expected a map of at most %d answers", CALL_INPUTS_MAX);
	for (size_t i = 0; in && i < in->n; i++)
		if (in->items[2 * i].t != CV_TEXT || in->items[2 * i + 1].t != CV_MAP)
			return as_fail(err, AS_ECORRUPT, "call.input: each answer is a map under a text key");
	if (in)
		GUARD(args_ok(in, 1, err));
	return o ? args_ok(o, 1, err) : 0;
}

json_t *call_input_json(const struct cv *c)
{
	const struct cv *in = cv_get(c, "input");
	return in ? cv_to_json_with(in, &args_opts) : NULL;
}

const char *call_method(const struct cv *c)
{
	const struct cv *m = cv_get(c, "method");
	const struct call_shape *sh = shape_of((const char *)m->s, m->n);
	return sh->method;
}

size_t call_name(const struct cv *c, char *out, size_t max)
{
	const struct cv *m = cv_get(c, "method");
	const struct call_shape *sh = shape_of((const char *)m->s, m->n);
	const struct cv *nm = sh->name_key ? cv_get(c, sh->name_key) : NULL;
	size_t n = nm && nm->n < max ? nm->n : 0;
	if (n)
		memcpy(out, nm->s, n);
	out[n] = 0;
	return n;
}

void call_names(const struct cv *c, char upstream[33], char tool[CALL_TOOL_MAX + 1])
{
	const struct cv *u = cv_get(c, "upstream");
	snprintf(upstream, 33, "%.*s", (int)u->n, (const char *)u->s);
	const struct cv *m = cv_get(c, "method");
	const struct call_shape *sh = shape_of((const char *)m->s, m->n);
	if (sh->uri || !sh->name_key)
		tool[0] = 0;
	else
		call_name(c, tool, CALL_TOOL_MAX + 1);
}

json_t *call_args_json(const struct cv *c)
{
	const struct cv *m = cv_get(c, "method");
	const struct call_shape *sh = shape_of((const char *)m->s, m->n);
	return sh->obj_key ? cv_to_json_with(cv_get(c, sh->obj_key), &args_opts) : json_object();
}

void call_digest(const uint8_t *p, size_t n, char out[72])
{
	uint8_t d[32];
	char hex[65];
	int rc = mbedtls_sha256_ret(p, n, d, 0);
	if (rc != 0)
		memset(d, 0, sizeof d); /* not expected: the software implementation cannot fail */
	hex_encode(d, 32, hex);
	snprintf(out, 72, "sha256:%s", hex);
}

int call_value_encode(const json_t *j, size_t max, struct buf *out, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, max);
	struct cv *v = cv_alloc(&a, 1);
	size_t start = out->len;
	char why[AS_ERRLEN];
	int rc = v ? cv_from_json_value(&a, j, v, 1, &value_opts, err) : as_fail(err, AS_ENOMEM, "out of memory");
	if (rc == 0 && (cbor_encode(v, out, why) != 0 || out->len - start > max)) {
		out->len = start;
		rc = as_fail(err, AS_ETOOBIG, "over %zu bytes once encoded", max);
	}
	cv_arena_free(&a);
	return rc;
}

json_t *call_value_json(const struct cv *v)
{
	return cv_to_json_with(v, &value_opts);
}
