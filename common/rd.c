/* The bounded reader's text operations (declared with struct rd in common/util.h):
 * lines, tokens, whitespace and expected words, so that every text parser reads
 * through the same bounds checks as the binary ones. Unit-tested in tests/unit/rd_test.c;
 * fuzzed through the parsers that read with it: fuzz/checkpoint.c (ledger/note.c),
 * fuzz/mhttp.c, fuzz/webroute.c, fuzz/mcp_line.c and fuzz/action.c (the id peek in
 * gateway/worker/mcp/mcp.c). */
#include <string.h>

#include "common/util.h"

/* Whether c is in set (a C string): its terminator is not a member, so NUL never is. */
static int in_set(uint8_t c, const char *set)
{
	return c != 0 && strchr(set, c) != NULL;
}

/* The cursor's address; a reader over no bytes may have p == NULL, and NULL + 0 is undefined. */
static const uint8_t *cur(const struct rd *r)
{
	return r->off ? r->p + r->off : r->p;
}

static uint8_t fold(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}

/* Whether the n bytes at p are s[0..n), exactly or up to ASCII case. */
static int same(const uint8_t *p, const char *s, size_t n, int ci)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t a = p[i], b = (uint8_t)s[i];
		if (ci ? fold(a) != fold(b) : a != b)
			return 0;
	}
	return 1;
}

int rd_line(struct rd *r, struct rd *line)
{
	const uint8_t *nl = rd_left(r) ? memchr(cur(r), '\n', rd_left(r)) : NULL;
	if (!nl)
		return AS_EINVAL;
	size_t n = (size_t)(nl - cur(r));
	rd_init(line, cur(r), n);
	r->off += n + 1;
	return 0;
}

int rd_token(struct rd *r, const char *stop, struct rd *tok)
{
	size_t n = 0;
	while (n < rd_left(r) && !in_set(r->p[r->off + n], stop))
		n++;
	rd_init(tok, cur(r), n);
	r->off += n;
	return n ? 0 : AS_EINVAL;
}

size_t rd_skip_ws(struct rd *r, const char *ws)
{
	size_t n = 0;
	while (r->off < r->len && in_set(r->p[r->off], ws)) {
		r->off++;
		n++;
	}
	return n;
}

size_t rd_trim_end(struct rd *r, const char *ws)
{
	size_t n = 0;
	while (r->len > r->off && in_set(r->p[r->len - 1], ws)) {
		r->len--;
		n++;
	}
	return n;
}

static int expect(struct rd *r, const char *s, int ci)
{
	size_t n = strlen(s);
	if (rd_left(r) < n || !same(cur(r), s, n, ci))
		return AS_EINVAL;
	r->off += n;
	return 0;
}

int rd_expect(struct rd *r, const char *s)
{
	return expect(r, s, 0);
}
int rd_expect_ci(struct rd *r, const char *s)
{
	return expect(r, s, 1);
}

int rd_expect_end(struct rd *r, const char *s)
{
	size_t n = strlen(s);
	if (rd_left(r) < n || (n && !same(cur(r) + rd_left(r) - n, s, n, 0)))
		return AS_EINVAL;
	r->len -= n;
	return 0;
}

static int cmp(const struct rd *r, const char *s, int ci)
{
	size_t n = strlen(s);
	return rd_left(r) == n && same(cur(r), s, n, ci) ? 0 : AS_EINVAL;
}

int rd_cmp(const struct rd *r, const char *s)
{
	return cmp(r, s, 0);
}
int rd_casecmp(const struct rd *r, const char *s)
{
	return cmp(r, s, 1);
}
