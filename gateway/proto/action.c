/* The canonical action's field table and its checker (see action.h). */
#include "gateway/proto/action.h"

#include <stdio.h>
#include <string.h>

const struct action_field action_fields[] = {
    {"type", AF_TEXT, 5, 12, 0, TEXT_TOKEN, 1},
    {"message", AF_TEXT, 1, MCP_MESSAGE_MAX, 0, TEXT_MULTILINE, 1},
    {"context", AF_CONTEXT, 0, 0, 0, TEXT_ANY, 0},
    {"options", AF_TEXTS, 1, MCP_OPTIONS_MAX, MCP_OPTION_MAX, TEXT_LINE, 0},
    {"default", AF_TEXT, 0, MCP_DEFAULT_MAX, 0, TEXT_MULTILINE, 0},
    {"subject", AF_SUBJECTS, 1, MCP_SUBJECTS_MAX, MCP_NAME_MAX, TEXT_LINE, 0},
    {"audience", AF_TEXT, 1, MCP_AUDIENCE_MAX, 0, TEXT_TOKEN, 0},
};
const size_t action_nfields = sizeof action_fields / sizeof *action_fields;

static int text_ok(const struct cv *v, size_t min, size_t max, enum text_class cls, const char *what, char *err)
{
	size_t at;
	uint32_t cp;
	if (!v || v->t != CV_TEXT)
		return as_fail(err, AS_ECORRUPT, "action.%s: expected text", what);
	if (v->n < min || v->n > max)
		return as_fail(err, AS_ECORRUPT, "action.%s: %zu bytes, expected %zu to %zu", what, v->n, min, max);
	if (text_check(cls, (const char *)v->s, v->n, &at, &cp) != 0)
		return as_fail(err, AS_ECORRUPT, "action.%s: character U+%04X at byte %zu is not allowed here", what,
			       (unsigned)cp, at);
	return 0;
}

static int context_ok(const struct cv *v, int depth, char *err)
{
	if (v->t == CV_TEXT || v->t == CV_UINT || v->t == CV_NINT || v->t == CV_TRUE || v->t == CV_FALSE ||
	    v->t == CV_NULL)
		return 0; /* CBOR text was checked for UTF-8 when decoded; shown neutralised */
	if ((v->t != CV_MAP && v->t != CV_ARRAY) || depth > MCP_CONTEXT_DEPTH)
		return as_fail(err, AS_ECORRUPT, "action.context: not JSON-shaped or nested deeper than %d",
			       MCP_CONTEXT_DEPTH);
	size_t n = v->t == CV_MAP ? 2 * v->n : v->n;
	for (size_t i = 0; i < n; i++) {
		if (v->t == CV_MAP && i % 2 == 0) {
			if (v->items[i].t != CV_TEXT)
				return as_fail(err, AS_ECORRUPT, "action.context: a key is not text");
			continue;
		}
		GUARD(context_ok(&v->items[i], depth + 1, err));
	}
	return 0;
}

static int subject_ok(const struct cv *x, const struct action_field *f, size_t i, char *err)
{
	char what[48];
	snprintf(what, sizeof what, "subject[%zu].name", i);
	if (x->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "action.subject[%zu]: expected a map", i);
	const struct cv *d = cv_get(x, "digest"), *c = cv_get(x, "computed"), *sz = cv_get(x, "size");
	GUARD(text_ok(cv_get(x, "name"), 1, f->item_max, f->cls, what, err));
	const struct cv *h = d && d->t == CV_MAP && d->n == 1 ? cv_get(d, "sha256") : NULL;
	if (!h || h->t != CV_TEXT || h->n != 64 || !c || (c->t != CV_TRUE && c->t != CV_FALSE) ||
	    (sz && sz->t != CV_UINT) || x->n != 3u + (sz != NULL))
		return as_fail(err, AS_ECORRUPT,
			       "action.subject[%zu]: expected {name, digest {sha256}, computed, size?}", i);
	for (size_t k = 0; k < 64; k++)
		if (!((h->s[k] >= '0' && h->s[k] <= '9') || (h->s[k] >= 'a' && h->s[k] <= 'f')))
			return as_fail(err, AS_ECORRUPT, "action.subject[%zu].digest.sha256: not lowercase hex", i);
	return 0;
}

static int field_ok(const struct action_field *f, const struct cv *v, char *err)
{
	switch (f->shape) {
	case AF_TEXT:
		return text_ok(v, f->min, f->max, f->cls, f->key, err);
	case AF_CONTEXT:
		if (v->t != CV_TEXT && v->t != CV_MAP)
			return as_fail(err, AS_ECORRUPT, "action.context: expected a text or a map");
		return context_ok(v, v->t == CV_MAP ? 1 : 0, err);
	case AF_TEXTS:
	case AF_SUBJECTS:
		if (v->t != CV_ARRAY || v->n < f->min || v->n > f->max)
			return as_fail(err, AS_ECORRUPT, "action.%s: expected an array of %zu to %zu items", f->key,
				       f->min, f->max);
		for (size_t i = 0; i < v->n; i++) {
			char what[48];
			snprintf(what, sizeof what, "%s[%zu]", f->key, i);
			if (f->shape == AF_TEXTS)
				GUARD(text_ok(&v->items[i], 1, f->item_max, f->cls, what, err));
			else
				GUARD(subject_ok(&v->items[i], f, i, err));
		}
		return 0;
	}
	return as_fail(err, AS_ECORRUPT, "action.%s: unknown shape", f->key);
}

size_t action_client(char *out, const char *name, const char *version)
{
	char full[2 * MCP_NAME_MAX + 2];
	snprintf(full, sizeof full, "%s/%s", name, version);
	size_t n = text_cut(full, strlen(full), ACTION_CLIENT_MAX);
	memcpy(out, full, n);
	out[n] = 0;
	return n;
}

int action_check(const struct cv *a, char *err)
{
	if (!a || a->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "action is not a map");
	unsigned seen = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct cv *k = &a->items[2 * i];
		size_t f = 0;
		while (f < action_nfields && !(k->t == CV_TEXT && cv_text_eq(k, action_fields[f].key)))
			f++;
		if (f == action_nfields)
			return as_fail(err, AS_ECORRUPT, "action: unknown or non-text key");
		if (seen & (1u << f))
			return as_fail(err, AS_ECORRUPT, "action.%s: repeated", action_fields[f].key);
		seen |= 1u << f;
		GUARD(field_ok(&action_fields[f], &a->items[2 * i + 1], err));
	}
	for (size_t f = 0; f < action_nfields; f++)
		if (action_fields[f].required && !(seen & (1u << f)))
			return as_fail(err, AS_ECORRUPT, "action.%s: missing", action_fields[f].key);
	return 0;
}
