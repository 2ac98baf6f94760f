/* The view against the exact call, by alignment (viewcheck.h). A depth-first search
 * over (position in view, position in exact): at a mark it may skip the stated number
 * of characters of exact, or take the mark's text literally; everywhere else the bytes
 * must be equal. States already tried are remembered, so the search is bounded by
 * VIEWCHECK_STATES_MAX however the agent places literal marks. */
#include "common/viewcheck.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"

struct mark {
	size_t len, chars, lines; /* lines 0: the legacy mark, which states nothing */
};

static size_t num(const char *s, size_t *i)
{
	size_t v = 0;
	while (s[*i] >= '0' && s[*i] <= '9') {
		size_t d = (size_t)(s[*i] - '0');
		v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
		(*i)++;
	}
	return v;
}

/* The mark at s[0..n) (its grammar is redact_mark_len's), or 0. */
static int mark_at(const char *s, size_t n, struct mark *m)
{
	m->len = redact_mark_len(s, n);
	if (!m->len)
		return 0;
	m->chars = m->lines = 0;
	if (m->len == REDACT_MARK_LEN && s[1] == 'R')
		return 1;
	size_t i = 9; /* "[secret: " */
	m->chars = num(s, &i);
	m->lines = 1;
	i += s[i + 5] == 's' ? 6 : 5; /* " chars" or " char" */
	if (s[i] == ',') {
		i += 2;
		m->lines = num(s, &i);
	}
	return 1;
}

/* Skip chars characters of e from j: the end, or (size_t)-1 when e ends first; *nl
 * counts the line feeds passed. */
static size_t skip_chars(const char *e, size_t en, size_t j, size_t chars, size_t *nl)
{
	*nl = 0;
	while (chars > 0) {
		if (j >= en)
			return (size_t)-1;
		if (e[j] == '\n')
			(*nl)++;
		j++;
		while (j < en && ((unsigned char)e[j] & 0xc0) == 0x80)
			j++;
		chars--;
	}
	return j;
}

struct seen {
	uint64_t *k;
	size_t cap, n;
};

/* 1 when (i, j) was new (and is now remembered), 0 when seen, -1 when full or out of
 * memory. The table starts small and doubles: most views align in a few states. */
static int seen_add(struct seen *s, size_t i, size_t j)
{
	uint64_t key = ((uint64_t)i << 32 | (uint64_t)(uint32_t)j) + 1;
	if (s->n * 2 >= s->cap) {
		if (s->n >= VIEWCHECK_STATES_MAX)
			return -1;
		struct seen g = {calloc(s->cap * 2, sizeof(uint64_t)), s->cap * 2, 0};
		if (!g.k)
			return -1;
		for (size_t k = 0; k < s->cap; k++)
			if (s->k[k]) {
				size_t h = (size_t)((s->k[k] * 0x9e3779b97f4a7c15ull) >> 20) & (g.cap - 1);
				while (g.k[h])
					h = (h + 1) & (g.cap - 1);
				g.k[h] = s->k[k];
				g.n++;
			}
		free(s->k);
		*s = g;
	}
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (s->cap - 1);
	while (s->k[h]) {
		if (s->k[h] == key)
			return 0;
		h = (h + 1) & (s->cap - 1);
	}
	s->k[h] = key;
	s->n++;
	return 1;
}

struct st {
	size_t i, j;
};

int viewcheck_text(const char *exact, size_t en, const char *view, size_t vn, char *err)
{
	if (en > UINT32_MAX || vn > UINT32_MAX)
		return as_fail(err, AS_ETOOBIG, "view check: text over 4 GiB");
	struct seen seen = {calloc(64, sizeof(uint64_t)), 64, 0};
	/* each state pushes at most two, and a state is expanded once: 2 * (states + 1) */
	size_t scap = 64;
	struct st *stack = malloc(scap * sizeof *stack);
	if (!seen.k || !stack) {
		free(seen.k);
		free(stack);
		return as_fail(err, AS_ENOMEM, "view check: out of memory");
	}
	size_t sp = 0, far = 0;
	int rc = AS_ECORRUPT;
	stack[sp++] = (struct st){0, 0};
	while (sp > 0 && rc == AS_ECORRUPT) {
		struct st s = stack[--sp];
		int a = seen_add(&seen, s.i, s.j);
		if (a < 0) {
			rc = AS_ETOOBIG;
			break;
		}
		if (a == 0)
			continue;
		if (sp + 2 > scap) {
			struct st *g = realloc(stack, 2 * scap * sizeof *stack);
			if (!g) {
				rc = AS_ENOMEM;
				break;
			}
			stack = g;
			scap *= 2;
		}
		while (s.i < vn && s.j < en && view[s.i] == exact[s.j] && view[s.i] != '[') {
			s.i++;
			s.j++;
		}
		if (s.i > far)
			far = s.i;
		if (s.i == vn) {
			if (s.j == en)
				rc = 0;
			continue;
		}
		struct mark m;
		if (view[s.i] == '[' && mark_at(view + s.i, vn - s.i, &m) && m.chars > 0) {
			size_t nl = 0, j2 = skip_chars(exact, en, s.j, m.chars, &nl);
			int whole = s.i == 0 && m.len == vn && s.j == 0 && j2 == en;
			if (j2 != (size_t)-1 && nl + 1 == m.lines && (nl == 0 || whole))
				stack[sp++] = (struct st){s.i + m.len, j2};
		}
		if (s.j < en && view[s.i] == exact[s.j]) /* the mark's text taken literally */
			stack[sp++] = (struct st){s.i + 1, s.j + 1};
	}
	free(seen.k);
	free(stack);
	if (rc == AS_ENOMEM)
		return as_fail(err, rc, "view check: out of memory");
	if (rc == AS_ETOOBIG)
		return as_fail(err, rc, "view check: too many ways to align the view (over %d)", VIEWCHECK_STATES_MAX);
	if (rc != 0)
		return as_fail(err, rc, "view differs from the call after %zu bytes of the view: '%.*s'", far,
			       (int)(vn - far > 40 ? 40 : vn - far), view + far);
	return 0;
}

static size_t chars_of(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* A view value that is one whole mark standing for exact: 1 when it fits. */
static int whole_mark(const json_t *exact, const json_t *view)
{
	const char *v = json_string_value(view);
	size_t vn = json_string_length(view);
	struct mark m;
	if (!v || !mark_at(v, vn, &m) || m.len != vn || !m.lines)
		return 0;
	if (json_is_string(exact)) {
		const char *e = json_string_value(exact);
		size_t en = json_string_length(exact), nl = 0;
		for (size_t i = 0; i < en; i++)
			nl += e[i] == '\n';
		return en > 0 && chars_of(e, en) == m.chars && nl + 1 == m.lines;
	}
	char *t = json_dumps(exact, JSON_COMPACT | JSON_ENCODE_ANY);
	int ok = t && chars_of(t, strlen(t)) == m.chars && m.lines == 1;
	free(t);
	return ok;
}

static int check_at(const json_t *exact, const json_t *view, char *path, size_t plen, int depth, char *err);

static int check_object(const json_t *exact, const json_t *view, char *path, size_t plen, int depth, char *err)
{
	if (json_object_size(exact) != json_object_size(view))
		return as_fail(err, AS_ECORRUPT, "view at %s: %zu members, the call has %zu", plen ? path : "/",
			       json_object_size(view), json_object_size(exact));
	const char *k;
	const json_t *ev;
	json_object_foreach((json_t *)exact, k, ev)
	{
		const json_t *vv = json_object_get(view, k);
		if (!vv)
			return as_fail(err, AS_ECORRUPT, "view at %s: member '%.40s' missing", plen ? path : "/", k);
		int w = snprintf(path + plen, 256 - plen, "/%s", k);
		size_t np = w > 0 && (size_t)w < 256 - plen ? plen + (size_t)w : plen;
		GUARD(check_at(ev, vv, path, np, depth + 1, err));
		path[plen] = 0;
	}
	return 0;
}

static int check_at(const json_t *exact, const json_t *view, char *path, size_t plen, int depth, char *err)
{
	if (depth > 64)
		return as_fail(err, AS_ECORRUPT, "view at %s: nested too deep", path);
	if (json_is_string(view) && whole_mark(exact, view))
		return 0;
	if (json_typeof(exact) != json_typeof(view))
		return as_fail(err, AS_ECORRUPT, "view at %s: a different type from the call's", plen ? path : "/");
	switch (json_typeof(exact)) {
	case JSON_OBJECT:
		return check_object(exact, view, path, plen, depth, err);
	case JSON_ARRAY:
		if (json_array_size(exact) != json_array_size(view))
			return as_fail(err, AS_ECORRUPT, "view at %s: %zu items, the call has %zu", plen ? path : "/",
				       json_array_size(view), json_array_size(exact));
		for (size_t i = 0; i < json_array_size(exact); i++) {
			int w = snprintf(path + plen, 256 - plen, "/%zu", i);
			size_t np = w > 0 && (size_t)w < 256 - plen ? plen + (size_t)w : plen;
			GUARD(check_at(json_array_get(exact, i), json_array_get(view, i), path, np, depth + 1, err));
			path[plen] = 0;
		}
		return 0;
	case JSON_STRING: {
		char e2[AS_ERRLEN];
		int rc = viewcheck_text(json_string_value(exact), json_string_length(exact), json_string_value(view),
					json_string_length(view), e2);
		return rc ? as_fail(err, rc, "view at %s: %s", plen ? path : "/", e2) : 0;
	}
	default:
		return json_equal(exact, view)
			   ? 0
			   : as_fail(err, AS_ECORRUPT, "view at %s: a different value from the call's",
				     plen ? path : "/");
	}
}

int viewcheck_json(const json_t *exact, const json_t *view, char *err)
{
	char path[256] = "";
	if (!exact || !view)
		return as_fail(err, AS_EINVAL, "view check: nothing to compare");
	return check_at(exact, view, path, 0, 0, err);
}
