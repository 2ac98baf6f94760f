/* The ledger, with group commit: entries wait in a batch written in one transaction per turn. */
#define _GNU_SOURCE
#include "gateway/signer/types.h"

#include <stdlib.h>
#include <string.h>

/* ---- the ledger, with group commit ----
 * Entries wait in s->batch until the end of the event loop's turn and then go to
 * disk together: one write transaction, one fsync. Only after that does anyone
 * hear of them, so decisions that arrive together (several reviewers, a burst of
 * timeouts) share a commit and still no answer precedes its entry. */

#define COMMIT_MAX 1024 /* entries per transaction */

/* A new op at the end of the batch; NULL (err set) when out of memory. */
static struct op *op_new(struct signer *s, char *err)
{
	if (s->nbatch == s->batch_cap) {
		size_t cap = s->batch_cap ? 2 * s->batch_cap : 64;
		struct op **nb = realloc(s->batch, cap * sizeof *nb);
		if (!nb) {
			as_fail(err, AS_ENOMEM, "out of memory");
			return NULL;
		}
		s->batch = nb;
		s->batch_cap = cap;
	}
	struct op *o = calloc(1, sizeof *o);
	if (!o) {
		as_fail(err, AS_ENOMEM, "out of memory");
		return NULL;
	}
	buf_init(&o->enc, ENTRY_MAX);
	s->batch[s->nbatch++] = o;
	return o;
}

struct op *op_add(struct signer *s, const struct cv *m, op_done done, char *err)
{
	struct buf enc;
	buf_init(&enc, ENTRY_MAX);
	if (cbor_encode(m, &enc, err) != 0) {
		buf_free(&enc);
		return NULL;
	}
	struct op *o = op_new(s, err);
	if (!o) {
		buf_free(&enc);
		return NULL;
	}
	o->enc = enc;
	o->done = done;
	return o;
}

/* Fields kept decoded until their commit, with everything they point into. */
struct op_held {
	struct cv_arena a; /* their items */
	uint8_t *bytes;	   /* a copy of the received bytes their strings point into */
};

int held_decode(const uint8_t *p, size_t n, size_t max_items, struct op_held **out, const struct cv **v, char *err)
{
	struct op_held *h = calloc(1, sizeof *h);
	if (!h || !(h->bytes = malloc(n ? n : 1))) {
		free(h);
		return as_fail(err, AS_ENOMEM, "out of memory");
	}
	memcpy(h->bytes, p, n);
	cv_arena_init(&h->a, max_items);
	struct cv *d = NULL;
	int rc = cbor_decode(h->bytes, n, &h->a, &d, err);
	if (rc != 0) {
		held_free(h);
		return rc;
	}
	*out = h;
	*v = d;
	return 0;
}

struct cv_arena *held_arena(struct op_held *h)
{
	return &h->a;
}

void held_free(struct op_held *h)
{
	if (!h)
		return;
	cv_arena_free(&h->a);
	free(h->bytes);
	free(h);
}

struct op *op_add_held(struct signer *s, struct op_held *h, const struct cv *m, op_done done, char *err)
{
	struct op *o = op_new(s, err);
	if (!o) {
		held_free(h);
		return NULL;
	}
	o->held = h;
	o->fields = m;
	o->done = done;
	return o;
}

static void op_finish(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (o->done)
		o->done(s, o, pos, err);
	else if (!pos)
		slog("error", "ledger: %s", err);
	buf_free(&o->enc);
	held_free(o->held);
	free(o);
}

void commit_batch(struct signer *s)
{
	/* Callbacks may add entries (a request whose caller left gets its `cancelled`):
	 * they go to a fresh batch, committed by the next round of this loop. */
	while (s->nbatch) {
		struct op **ops = s->batch;
		size_t n = s->nbatch;
		s->batch = NULL;
		s->nbatch = s->batch_cap = 0;
		struct ledger_rec *recs = calloc(COMMIT_MAX, sizeof *recs);
		struct ledger_pos *pos = calloc(COMMIT_MAX, sizeof *pos);
		const struct cv **fv = calloc(COMMIT_MAX, sizeof *fv); /* fields kept decoded (op_add_held) */
		for (size_t at = 0; at < n;) {
			size_t k = n - at < COMMIT_MAX ? n - at : COMMIT_MAX;
			while (k > 1 && at + k < n && ops[at + k]->with_prev)
				k--; /* an entry that goes with the one before it is never the first of a transaction */
			char err[AS_ERRLEN] = "out of memory";
			int rc = AS_ENOMEM;
			if (recs && pos && fv) {
				for (size_t i = 0; i < k; i++) {
					recs[i] = (struct ledger_rec){ops[at + i]->enc.p, ops[at + i]->enc.len};
					fv[i] = ops[at + i]->fields;
				}
				rc = ledger_append_fields(s->ledger, recs, fv, k, pos, err);
			}
			if (rc == 0) {
				s->commits++;
				s->committed += k;
				for (size_t i = 0; i < k; i++)
					op_finish(s, ops[at + i], &pos[i], NULL);
			} else if (k > 1 && recs && pos && fv) {
				/* One refused entry must not sink the others: commit them one by one
				 * (an entry that goes only with the one before it, without it). */
				for (size_t i = 0; i < k; i++) {
					if (i > 0 && ops[at + i]->with_prev && rc != 0)
						snprintf(err, sizeof err, "the entry it goes with was not recorded");
					else
						rc = ledger_append_fields(s->ledger, &recs[i], &fv[i], 1, &pos[0], err);
					if (rc == 0) {
						s->commits++;
						s->committed++;
					}
					op_finish(s, ops[at + i], rc == 0 ? &pos[0] : NULL, err);
				}
			} else {
				for (size_t i = 0; i < k; i++)
					op_finish(s, ops[at + i], NULL, err);
			}
			at += k;
		}
		free(recs);
		free(pos);
		free(fv);
		free(ops);
	}
}

struct op *append_simple(struct signer *s, const char *kind, const char *sid, const char *reason, op_done done)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *m = cv_map(&a, 3);
	size_t i = 0;
	char err[AS_ERRLEN] = "out of memory";
	struct op *o = NULL;
	if ((kv_text(&a, m, &i, "kind", kind, strlen(kind)) | kv_text(&a, m, &i, "session_id", sid, strlen(sid)) |
	     kv_text(&a, m, &i, "reason", reason, strlen(reason))) == 0)
		o = op_add(s, m, done, err);
	if (!o)
		slog("error", "ledger: %s entry for %s: %s", kind, sid, err);
	cv_arena_free(&a);
	return o;
}
