/* Building an entry's fields (a CBOR map) in the signer's arena. Every builder returns 0
 * or AS_ENOMEM, and a failure passes on: kv gives a NULL slot when the map is NULL or full
 * or its key cannot be copied, and every builder given a NULL slot fails. So a caller
 * ORs the results of a whole entry and checks once, before op_add: an entry that could
 * not be built whole is never written. */
#include "gateway/signer/types.h"

#include <string.h>

struct cv *kv(struct cv_arena *a, struct cv *m, size_t *i, const char *k)
{
	if (!m || *i >= m->n || cv_set_text(a, &m->items[2 * *i], k, strlen(k)) != 0)
		return NULL;
	return &m->items[2 * (*i)++ + 1];
}

int slot_text(struct cv_arena *a, struct cv *slot, const char *v, size_t n)
{
	return slot ? cv_set_text(a, slot, v, n) : AS_ENOMEM;
}

int slot_map(struct cv_arena *a, struct cv *slot, size_t npairs)
{
	struct cv *m = slot ? cv_map(a, npairs) : NULL;
	if (!m)
		return AS_ENOMEM;
	*slot = *m;
	return 0;
}

int kv_text(struct cv_arena *a, struct cv *m, size_t *i, const char *k, const char *v, size_t n)
{
	return slot_text(a, kv(a, m, i, k), v, n);
}

int kv_uint(struct cv_arena *a, struct cv *m, size_t *i, const char *k, uint64_t v)
{
	struct cv *slot = kv(a, m, i, k);
	if (!slot)
		return AS_ENOMEM;
	cv_set_uint(slot, v);
	return 0;
}

/* A text field copied as a C string (no NUL inside, shorter than max); -1 when it is not one. */
int text_copy(const struct cv *v, char *out, size_t max)
{
	if (!v || v->t != CV_TEXT || v->n >= max || memchr(v->s, 0, v->n))
		return -1;
	memcpy(out, v->s, v->n);
	out[v->n] = 0;
	return 0;
}

/* An unsigned field of at most max; -1 when it is not one. */
int uint_of(const struct cv *v, uint64_t max, uint64_t *out)
{
	if (!v || v->t != CV_UINT || v->u > max)
		return -1;
	*out = v->u;
	return 0;
}
