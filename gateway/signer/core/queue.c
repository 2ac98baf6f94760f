/* Pending queue: an open-addressing hash table of items (by session id) and a
 * binary min-heap of slot indexes ordered by deadline, each slot knowing its heap
 * position so removal by id is O(log n). */
#define _GNU_SOURCE
#include "gateway/signer/core/queue.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "include/assent/err.h"
#include "common/util.h"

struct slot {
	struct pq_item it;
	int used; /* 0 empty, 1 used, 2 deleted (a tombstone keeps probe chains intact) */
	size_t heappos;
};

/* The table starts small and doubles as the queue fills (at most half full),
 * and halves again as it empties: a daemon that once held many requests does
 * not keep their memory. */
#define PQ_MIN_SLOTS 64

struct pq {
	struct slot *slots;
	size_t nslots, count, tombs, max, max_slots;
	size_t *heap; /* slot indexes */
	size_t heap_cap;
};

static uint64_t sid_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a: ids are random, no attacker chooses them */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

int pq_new(size_t max, struct pq **out)
{
	if (max == 0 || max > (1u << 24))
		return AS_EINVAL;
	struct pq *q = calloc(1, sizeof *q);
	size_t n = 16;
	while (n < 2 * max)
		n <<= 1;
	size_t start = n < PQ_MIN_SLOTS ? n : PQ_MIN_SLOTS, hcap = max < 32 ? max : 32;
	if (!q || !(q->slots = calloc(start, sizeof *q->slots)) || !(q->heap = calloc(hcap, sizeof *q->heap))) {
		if (q)
			free(q->slots);
		free(q);
		return AS_ENOMEM;
	}
	q->nslots = start;
	q->max_slots = n;
	q->heap_cap = hcap;
	q->max = max;
	*out = q;
	return 0;
}

void pq_free(struct pq *q)
{
	if (!q)
		return;
	free(q->slots);
	free(q->heap);
	free(q);
}

int pq_new_session_id(char out[PQ_SID_LEN + 1])
{
	uint8_t r[16];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return AS_EIO;
	memcpy(out, "req-", 4);
	hex_encode(r, sizeof r, out + 4);
	return 0;
}

/* ---- heap ---- */

static int before(const struct pq *q, size_t a, size_t b)
{
	const struct pq_item *x = &q->slots[q->heap[a]].it, *y = &q->slots[q->heap[b]].it;
	if (x->deadline_ms != y->deadline_ms)
		return x->deadline_ms < y->deadline_ms;
	return strcmp(x->session_id, y->session_id) < 0; /* a total order: listings are stable */
}

static void heap_swap(struct pq *q, size_t a, size_t b)
{
	size_t t = q->heap[a];
	q->heap[a] = q->heap[b];
	q->heap[b] = t;
	q->slots[q->heap[a]].heappos = a;
	q->slots[q->heap[b]].heappos = b;
}

static void heap_up(struct pq *q, size_t i)
{
	while (i > 0 && before(q, i, (i - 1) / 2)) {
		heap_swap(q, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct pq *q, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q->count && before(q, l, m))
			m = l;
		if (r < q->count && before(q, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(q, i, m);
		i = m;
	}
}

/* ---- table ---- */

static size_t probe(const struct pq *q, const char *sid, int *found)
{
	size_t mask = q->nslots - 1, i = sid_hash(sid) & mask, first_tomb = SIZE_MAX;
	for (size_t n = 0; n < q->nslots; n++, i = (i + 1) & mask) {
		const struct slot *s = &q->slots[i];
		if (s->used == 0) {
			*found = 0;
			return first_tomb != SIZE_MAX ? first_tomb : i;
		}
		if (s->used == 2) {
			if (first_tomb == SIZE_MAX)
				first_tomb = i;
		} else if (strcmp(s->it.session_id, sid) == 0) {
			*found = 1;
			return i;
		}
	}
	*found = 0;
	return first_tomb;
}

/* Rebuild the table with n slots: to grow, to shrink, or to clear tombstones. */
static int rehash(struct pq *q, size_t n)
{
	struct slot *old = q->slots;
	struct slot *fresh = calloc(n, sizeof *fresh);
	if (!fresh)
		return AS_ENOMEM; /* keep the old table; probing stays correct */
	q->slots = fresh;
	q->nslots = n;
	q->tombs = 0;
	for (size_t h = 0; h < q->count; h++) {
		const struct slot *s = &old[q->heap[h]];
		int found;
		size_t i = probe(q, s->it.session_id, &found);
		q->slots[i] = *s;
		q->slots[i].heappos = h;
		q->heap[h] = i;
	}
	free(old);
	return 0;
}

int pq_add(struct pq *q, const struct pq_item *it)
{
	if (strnlen(it->session_id, sizeof it->session_id) > PQ_SID_LEN)
		return AS_EINVAL;
	int found;
	size_t i = probe(q, it->session_id, &found);
	if (found)
		return AS_EEXIST;
	if (q->count == q->max)
		return AS_ETOOBIG;
	if (2 * (q->count + q->tombs + 1) > q->nslots) {
		/* Keep the load at most half: grow, or just sweep the tombstones. */
		size_t n = 2 * (q->count + 1) > q->nslots / 2 && q->nslots < q->max_slots ? 2 * q->nslots : q->nslots;
		if (rehash(q, n) != 0 && i == SIZE_MAX)
			return AS_ENOMEM;
		i = probe(q, it->session_id, &found);
	}
	if (q->count == q->heap_cap) {
		size_t cap = 2 * q->heap_cap < q->max ? 2 * q->heap_cap : q->max;
		size_t *h = realloc(q->heap, cap * sizeof *h);
		if (!h)
			return AS_ENOMEM;
		q->heap = h;
		q->heap_cap = cap;
	}
	if (i == SIZE_MAX)
		return AS_ENOMEM;
	if (q->slots[i].used == 2)
		q->tombs--;
	q->slots[i].it = *it;
	q->slots[i].used = 1;
	q->heap[q->count] = i;
	q->slots[i].heappos = q->count;
	q->count++;
	heap_up(q, q->count - 1);
	return 0;
}

struct pq_item *pq_find(struct pq *q, const char *sid)
{
	int found;
	size_t i = probe(q, sid, &found);
	return found ? &q->slots[i].it : NULL;
}

static void remove_slot(struct pq *q, size_t i, struct pq_item *out)
{
	struct slot *s = &q->slots[i];
	if (out)
		*out = s->it;
	size_t h = s->heappos;
	q->count--;
	if (h != q->count) {
		heap_swap(q, h, q->count);
		heap_down(q, h);
		heap_up(q, h);
	}
	s->used = 2;
	q->tombs++;
	if (q->nslots > PQ_MIN_SLOTS && 8 * q->count < q->nslots)
		rehash(q, q->nslots / 2);
	else if (q->tombs > q->nslots / 4)
		rehash(q, q->nslots);
}

int pq_remove(struct pq *q, const char *sid, struct pq_item *out)
{
	int found;
	size_t i = probe(q, sid, &found);
	if (!found)
		return AS_ENOTFOUND;
	remove_slot(q, i, out);
	return 0;
}

int pq_next_deadline(const struct pq *q, uint64_t *deadline_ms)
{
	if (q->count == 0)
		return AS_ENOTFOUND;
	*deadline_ms = q->slots[q->heap[0]].it.deadline_ms;
	return 0;
}

int pq_pop_expired(struct pq *q, uint64_t now_ms, struct pq_item *out)
{
	if (q->count == 0 || q->slots[q->heap[0]].it.deadline_ms > now_ms)
		return AS_ENOTFOUND;
	remove_slot(q, q->heap[0], out);
	return 0;
}

size_t pq_count(const struct pq *q)
{
	return q->count;
}

static const struct pq *sort_q;
static int cmp_heapidx(const void *a, const void *b)
{
	const struct pq_item *x = &sort_q->slots[*(const size_t *)a].it, *y = &sort_q->slots[*(const size_t *)b].it;
	if (x->deadline_ms != y->deadline_ms)
		return x->deadline_ms < y->deadline_ms ? -1 : 1;
	return strcmp(x->session_id, y->session_id);
}

int pq_each(const struct pq *q, void (*fn)(const struct pq_item *it, void *arg), void *arg)
{
	size_t *idx = malloc((q->count ? q->count : 1) * sizeof *idx);
	if (!idx)
		return AS_ENOMEM;
	memcpy(idx, q->heap, q->count * sizeof *idx);
	sort_q = q; /* the signer is single-threaded */
	qsort(idx, q->count, sizeof *idx, cmp_heapidx);
	for (size_t i = 0; i < q->count; i++)
		fn(&q->slots[idx[i]].it, arg);
	free(idx);
	return 0;
}
