/* Strict canonical CBOR decoder and canonical encoder; see cbor.h for why. */
#include "common/cbor.h"

#include <stdlib.h>
#include <string.h>

struct cv_chunk {
	struct cv_chunk *next;
	size_t cap, used;
	struct cv items[];
};

struct cv_strcopy {
	struct cv_strcopy *next;
	uint8_t data[];
};

void cv_arena_init(struct cv_arena *a, size_t max_items)
{
	memset(a, 0, sizeof *a);
	a->max = max_items;
}

static void free_strs(struct cv_arena *a)
{
	while (a->strs) {
		struct cv_strcopy *n = a->strs->next;
		free(a->strs);
		a->strs = n;
	}
}

void cv_arena_reset(struct cv_arena *a)
{
	for (struct cv_chunk *c = a->head; c; c = c->next)
		c->used = 0;
	a->cur = a->head;
	a->used = 0;
	free_strs(a);
}

void cv_arena_free(struct cv_arena *a)
{
	free_strs(a);
	while (a->head) {
		struct cv_chunk *n = a->head->next;
		free(a->head);
		a->head = n;
	}
	a->cur = NULL;
	a->used = 0;
}

struct cv *cv_alloc(struct cv_arena *a, size_t n)
{
	if (n == 0)
		n = 1;
	if (n > a->max || a->used > a->max - n)
		return NULL;
	for (struct cv_chunk *c = a->cur; c; c = c->next) {
		if (c->cap - c->used >= n) {
			struct cv *r = &c->items[c->used];
			c->used += n;
			a->cur = c;
			a->used += n;
			memset(r, 0, n * sizeof *r);
			return r;
		}
	}
	size_t cap = n < 1024 ? 1024 : n;
	if (cap > a->max)     /* a small arena (a reply frame) needs no 1024-item chunk zeroed for it */
		cap = a->max; /* >= n, checked above */
	struct cv_chunk *c = calloc(1, sizeof *c + cap * sizeof(struct cv));
	if (!c)
		return NULL;
	c->cap = cap;
	c->used = n;
	/* Append after the last chunk so reset walks every chunk in order. */
	if (!a->head) {
		a->head = c;
	} else {
		struct cv_chunk *t = a->cur ? a->cur : a->head;
		while (t->next)
			t = t->next;
		t->next = c;
	}
	a->cur = c;
	a->used += n;
	return c->items;
}

int utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		/* Fast path: eight ASCII bytes at a time (most ledger text is ASCII). */
		if (n - i >= 8) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if ((w & 0x8080808080808080ull) == 0) {
				i += 8;
				continue;
			}
		}
		uint8_t c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len;
		uint32_t cp;
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (n - i < len)
			return 0;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

/* ---- decoder ---- */

struct dec {
	struct rd r;
	struct cv_arena *a;
	char *err;
};

static int dec_fail(struct dec *d, size_t off, const char *what)
{
	return as_fail(d->err, AS_ECORRUPT, "CBOR at byte %zu: %s", off, what);
}

/* Read an item head: major type and argument, refusing indefinite lengths and
 * any argument not in its shortest form (RFC 8949 section 4.2.1). */
static int dec_head(struct dec *d, uint8_t *major, uint8_t *minor, uint64_t *arg)
{
	size_t off = d->r.off;
	uint8_t ib;
	if (rd_u8(&d->r, &ib) != 0)
		return dec_fail(d, off, "truncated: expected an item");
	*major = ib >> 5;
	*minor = ib & 31;
	if (*minor < 24) {
		*arg = *minor;
		return 0;
	}
	if (*minor > 27)
		return dec_fail(d, off, *minor == 31 ? "indefinite length is not allowed" : "reserved additional info");
	if (*major == 7)
		return dec_fail(d, off, "floating point and extended simple values are not allowed");
	size_t nb = (size_t)1 << (*minor - 24);
	if (rd_be(&d->r, nb, arg) != 0)
		return dec_fail(d, off, "truncated item head");
	uint64_t floor = nb == 1 ? 24 : nb == 2 ? 0x100 : nb == 4 ? 0x10000 : 0x100000000ull;
	if (*arg < floor)
		return dec_fail(d, off, "integer or length not in shortest form");
	return 0;
}

static int dec_item(struct dec *d, struct cv *v, int depth);

/* Map keys are a few bytes long: a loop beats a call to memcmp here. */
static inline int short_cmp(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static int dec_item(struct dec *d, struct cv *v, int depth)
{
	size_t off = d->r.off;
	uint8_t major = 0, minor = 0;
	uint64_t arg = 0;
	GUARD(dec_head(d, &major, &minor, &arg));
	switch (major) {
	case 0:
		v->t = CV_UINT;
		v->u = arg;
		return 0;
	case 1:
		v->t = CV_NINT;
		v->u = arg;
		return 0;
	case 2:
	case 3: {
		/* The declared length never exceeds what is left: nothing is allocated for it. */
		if (arg > rd_left(&d->r))
			return dec_fail(d, off, "string length exceeds the input");
		v->t = major == 2 ? CV_BYTES : CV_TEXT;
		v->n = (size_t)arg;
		if (rd_take(&d->r, v->n, &v->s) != 0) /* cannot fail: checked against rd_left above */
			return dec_fail(d, off, "string length exceeds the input");
		if (major == 3 && !utf8_valid(v->s, v->n))
			return dec_fail(d, off, "text string is not valid UTF-8");
		return 0;
	}
	case 4:
	case 5: {
		if (depth >= CBOR_MAX_DEPTH)
			return dec_fail(d, off, "nesting deeper than 32");
		uint64_t nitems = major == 5 ? arg * 2 : arg;
		/* Every item takes at least one byte: bound the count before allocating. */
		if (arg > rd_left(&d->r) || nitems > rd_left(&d->r))
			return dec_fail(d, off, "container length exceeds the input");
		v->t = major == 4 ? CV_ARRAY : CV_MAP;
		v->n = (size_t)arg;
		v->items = NULL;
		if (nitems == 0)
			return 0;
		v->items = cv_alloc(d->a, (size_t)nitems);
		if (!v->items)
			return as_fail(d->err, AS_ETOOBIG, "CBOR at byte %zu: too many items", off);
		size_t prev_key_off = 0, prev_key_len = 0;
		for (size_t i = 0; i < nitems; i++) {
			size_t ioff = d->r.off;
			GUARD(dec_item(d, &v->items[i], depth + 1));
			if (major == 5 && i % 2 == 0) {
				/* Keys sorted bytewise by their encoding, no duplicates (RFC 8949 4.2.1). */
				size_t klen = d->r.off - ioff;
				if (i > 0) {
					size_t m = prev_key_len < klen ? prev_key_len : klen;
					int c = short_cmp(d->r.p + prev_key_off, d->r.p + ioff, m);
					if (c == 0 && prev_key_len == klen)
						return dec_fail(d, ioff, "duplicate map key");
					if (c > 0 || (c == 0 && prev_key_len > klen))
						return dec_fail(d, ioff, "map keys not in canonical order");
				}
				prev_key_off = ioff;
				prev_key_len = klen;
			}
		}
		return 0;
	}
	case 6:
		return dec_fail(d, off, "tags are not allowed");
	default: /* major 7 with a direct simple value */
		if (minor == 20)
			v->t = CV_FALSE;
		else if (minor == 21)
			v->t = CV_TRUE;
		else if (minor == 22)
			v->t = CV_NULL;
		else
			return dec_fail(d, off, "simple value other than false, true, null");
		return 0;
	}
}

int cbor_decode(const uint8_t *data, size_t len, struct cv_arena *a, struct cv **out, char *err)
{
	struct dec d = {.a = a, .err = err};
	rd_init(&d.r, data, len);
	struct cv *root = cv_alloc(a, 1);
	if (!root)
		return as_fail(err, AS_ENOMEM, "CBOR: out of memory");
	GUARD(dec_item(&d, root, 0));
	if (rd_left(&d.r) != 0)
		return as_fail(err, AS_ECORRUPT, "CBOR at byte %zu: %zu trailing bytes after the item", d.r.off,
			       rd_left(&d.r));
	*out = root;
	return 0;
}

/* ---- encoder ---- */

static int enc_head(struct buf *b, uint8_t major, uint64_t arg)
{
	uint8_t h[9];
	size_t n;
	if (arg < 24) {
		h[0] = (uint8_t)(major << 5 | arg);
		n = 1;
	} else if (arg <= 0xff) {
		h[0] = (uint8_t)(major << 5 | 24);
		h[1] = (uint8_t)arg;
		n = 2;
	} else if (arg <= 0xffff) {
		h[0] = (uint8_t)(major << 5 | 25);
		h[1] = (uint8_t)(arg >> 8);
		h[2] = (uint8_t)arg;
		n = 3;
	} else if (arg <= 0xffffffffu) {
		h[0] = (uint8_t)(major << 5 | 26);
		for (int i = 0; i < 4; i++)
			h[1 + i] = (uint8_t)(arg >> (24 - 8 * i));
		n = 5;
	} else {
		h[0] = (uint8_t)(major << 5 | 27);
		be64_put(h + 1, arg);
		n = 9;
	}
	return buf_put(b, h, n);
}

static int enc_item(const struct cv *v, struct buf *b, int depth, char *err);

struct kv_span {
	size_t koff, klen, end;
};

static const uint8_t *sort_base;
static int kv_cmp(const void *x, const void *y)
{
	const struct kv_span *a = x, *b = y;
	size_t m = a->klen < b->klen ? a->klen : b->klen;
	int c = memcmp(sort_base + a->koff, sort_base + b->koff, m);
	if (c)
		return c;
	return (a->klen > b->klen) - (a->klen < b->klen);
}

static int enc_map(const struct cv *v, struct buf *b, int depth, char *err)
{
	GUARD(enc_head(b, 5, v->n));
	if (v->n == 0)
		return 0;
	/* Encode pairs into scratch, sort by encoded key, then copy in order. */
	struct buf tmp;
	buf_init(&tmp, b->max);
	struct kv_span *sp = calloc(v->n, sizeof *sp);
	int rc = sp ? 0 : AS_ENOMEM;
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		sp[i].koff = tmp.len;
		rc = enc_item(&v->items[2 * i], &tmp, depth + 1, err);
		if (rc == 0) {
			sp[i].klen = tmp.len - sp[i].koff;
			rc = enc_item(&v->items[2 * i + 1], &tmp, depth + 1, err);
			sp[i].end = tmp.len;
		}
	}
	if (rc == 0) {
		/* qsort has no context argument in C; encoding is single-threaded per process. */
		sort_base = tmp.p;
		qsort(sp, v->n, sizeof *sp, kv_cmp);
		for (size_t i = 0; rc == 0 && i < v->n; i++) {
			if (i > 0 && kv_cmp(&sp[i - 1], &sp[i]) == 0)
				rc = as_fail(err, AS_EINVAL, "CBOR encode: duplicate map key");
			else
				rc = buf_put(b, tmp.p + sp[i].koff, sp[i].end - sp[i].koff);
		}
	}
	free(sp);
	buf_free(&tmp);
	return rc;
}

static int enc_item(const struct cv *v, struct buf *b, int depth, char *err)
{
	/* The decoder's limit exactly: a container inside 32 others is refused even when
	 * empty, or a value built from JSON could be written and then refused by every reader. */
	if (depth > CBOR_MAX_DEPTH || (depth == CBOR_MAX_DEPTH && (v->t == CV_ARRAY || v->t == CV_MAP)))
		return as_fail(err, AS_EINVAL, "CBOR encode: nesting deeper than %d", CBOR_MAX_DEPTH);
	int rc;
	switch (v->t) {
	case CV_UINT:
		rc = enc_head(b, 0, v->u);
		break;
	case CV_NINT:
		rc = enc_head(b, 1, v->u);
		break;
	case CV_BYTES:
	case CV_TEXT:
		if (v->t == CV_TEXT && !utf8_valid(v->s, v->n))
			return as_fail(err, AS_EINVAL, "CBOR encode: text is not valid UTF-8");
		rc = enc_head(b, v->t == CV_BYTES ? 2 : 3, v->n);
		if (rc == 0)
			rc = buf_put(b, v->s, v->n);
		break;
	case CV_ARRAY:
		rc = enc_head(b, 4, v->n);
		if (rc != 0)
			break;
		for (size_t i = 0; i < v->n; i++)
			GUARD(enc_item(&v->items[i], b, depth + 1, err)); /* err already says what failed */
		return 0;
	case CV_MAP:
		return enc_map(v, b, depth, err);
	case CV_FALSE:
		rc = buf_putc(b, 0xf4);
		break;
	case CV_TRUE:
		rc = buf_putc(b, 0xf5);
		break;
	case CV_NULL:
		rc = buf_putc(b, 0xf6);
		break;
	default:
		return as_fail(err, AS_EINVAL, "CBOR encode: unknown value type %d", (int)v->t);
	}
	if (rc == AS_ETOOBIG)
		return as_fail(err, rc, "CBOR encode: output over its maximum of %zu bytes", b->max);
	if (rc != 0)
		return as_fail(err, rc, "CBOR encode: %s", as_strerror(rc));
	return 0;
}

int cbor_encode(const struct cv *v, struct buf *out, char *err)
{
	return enc_item(v, out, 0, err);
}

struct cv *cv_map(struct cv_arena *a, size_t npairs)
{
	struct cv *v = cv_alloc(a, 1);
	if (!v)
		return NULL;
	v->t = CV_MAP;
	v->n = npairs;
	if (npairs && !(v->items = cv_alloc(a, 2 * npairs)))
		return NULL;
	return v;
}

struct cv *cv_array(struct cv_arena *a, size_t n)
{
	struct cv *v = cv_alloc(a, 1);
	if (!v)
		return NULL;
	v->t = CV_ARRAY;
	v->n = n;
	if (n && !(v->items = cv_alloc(a, n)))
		return NULL;
	return v;
}

void cv_set_uint(struct cv *v, uint64_t u)
{
	v->t = CV_UINT;
	v->u = u;
}

void cv_set_int(struct cv *v, int64_t i)
{
	if (i >= 0) {
		cv_set_uint(v, (uint64_t)i);
	} else {
		v->t = CV_NINT;
		v->u = (uint64_t)(-(i + 1));
	}
}

static int set_str(struct cv_arena *a, struct cv *v, enum cv_type t, const uint8_t *s, size_t n)
{
	struct cv_strcopy *c = malloc(sizeof *c + (n ? n : 1));
	if (!c)
		return AS_ENOMEM;
	if (n)
		memcpy(c->data, s, n);
	c->next = a->strs;
	a->strs = c;
	v->t = t;
	v->s = c->data;
	v->n = n;
	return 0;
}

int cv_set_text(struct cv_arena *a, struct cv *v, const char *s, size_t n)
{
	return set_str(a, v, CV_TEXT, (const uint8_t *)s, n);
}

int cv_set_bytes(struct cv_arena *a, struct cv *v, const uint8_t *s, size_t n)
{
	return set_str(a, v, CV_BYTES, s, n);
}

int cv_text_eq(const struct cv *v, const char *s)
{
	size_t n = strlen(s);
	return v && v->t == CV_TEXT && v->n == n && memcmp(v->s, s, n) == 0;
}

const struct cv *cv_get(const struct cv *m, const char *key)
{
	if (!m || m->t != CV_MAP)
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		if (cv_text_eq(&m->items[2 * i], key))
			return &m->items[2 * i + 1];
	return NULL;
}
