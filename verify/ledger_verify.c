/* av_verify_ledger: the auditor's full check of a ledger. */
#define _GNU_SOURCE
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/assent/verify.h"
#include "common/cbor.h"
#include "common/eckey.h"
#include "ledger/cosig.h"
#include "ledger/entry.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/store.h"
#include "common/util.h"
#include "verify/passkeys.h"
#include "verify/vkeys.h"

/* A root the ledger must have at a given size, and who says so. */
struct expect {
	uint64_t size;
	uint8_t root[32];
	int trusted; /* from an auditor's saved checkpoint, not from the ledger itself */
	char src[64];
	char origin[CKPT_ORIGIN_MAX + 1];
	const uint8_t *text; /* signed note whose signature is still to be checked, or NULL */
	size_t len;
};

struct ctx {
	struct av_ledger_report *rep;
	struct expect *ex;
	size_t nex, capex;
	struct buf file; /* the checkpoint file's text */
	struct vkeys *keys;
	char sig_err[AS_ERRLEN]; /* first signature failure found by the signature thread */
	struct av_passkeys *pk;	 /* the passkey checks (with their pins, when given); NULL: out of memory */
	struct witness wit[COSIG_WITNESS_MAX];
	size_t nwit, need; /* witnesses given, distinct cosignatures required */
};

_Static_assert(AV_WITNESS_MAX == COSIG_WITNESS_MAX, "verify.h and cosig.h agree on the witnesses' maximum");

static int fail_at(struct av_ledger_report *rep, int has_seq, uint64_t seq, const char *fmt, ...) AS_PRINTF(4, 5);
static int fail_at(struct av_ledger_report *rep, int has_seq, uint64_t seq, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rep->reason, sizeof rep->reason, fmt, ap);
	va_end(ap);
	rep->ok = 0;
	rep->has_bad_seq = has_seq;
	rep->bad_seq = seq;
	return 0; /* the check ran; it found damage */
}

static int add_expect(struct ctx *c, const struct checkpoint *cp, int trusted, const char *src, const uint8_t *text,
		      size_t len)
{
	if (c->nex == c->capex) {
		size_t n = c->capex ? c->capex * 2 : 16;
		struct expect *e = realloc(c->ex, n * sizeof *e);
		if (!e)
			return AS_ENOMEM;
		c->ex = e;
		c->capex = n;
	}
	struct expect *e = &c->ex[c->nex++];
	e->size = cp->size;
	memcpy(e->root, cp->root, 32);
	e->trusted = trusted;
	e->text = text;
	e->len = len;
	snprintf(e->src, sizeof e->src, "%s", src);
	snprintf(e->origin, sizeof e->origin, "%s", cp->origin);
	return 0;
}

static int cmp_expect(const void *a, const void *b)
{
	const struct expect *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return y->trusted - x->trusted; /* trusted first: its verdict is the stronger one */
}

/* Stored checkpoints are parsed here; their signatures are checked by a second
 * thread while the entries are walked (ECDSA verification costs about as much as
 * hashing a thousand entries, so on two cores it comes for free). The texts stay
 * valid: they live in the LMDB map for as long as the read transaction is open. */
static int load_stored_checkpoints(struct ctx *c, const char *dir, MDB_txn *txn, MDB_dbi dbi)
{
	MDB_cursor *cur;
	MDB_val k, v;
	char err[AS_ERRLEN];
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc != 0)
		return fail_at(c->rep, 0, 0, "cannot read stored checkpoints: %s", mdb_strerror(rc));
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct checkpoint cp;
		if (k.mv_size != 8) {
			mdb_cursor_close(cur);
			return fail_at(c->rep, 0, 0, "stored checkpoint with a malformed key");
		}
		uint64_t size = be64_get(k.mv_data);
		if (ckpt_parse(v.mv_data, v.mv_size, &cp, err) != 0) {
			mdb_cursor_close(cur);
			return fail_at(c->rep, 0, 0, "stored checkpoint at size %llu: %s", (unsigned long long)size,
				       err);
		}
		if (cp.size != size) {
			mdb_cursor_close(cur);
			return fail_at(c->rep, 0, 0, "stored checkpoint under size %llu says size %llu",
				       (unsigned long long)size, (unsigned long long)cp.size);
		}
		if (add_expect(c, &cp, 0, "stored signed checkpoint", v.mv_data, v.mv_size) != 0)
			break;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND && rc != 0)
		return fail_at(c->rep, 0, 0, "ledger file damaged while reading checkpoints: %s", mdb_strerror(rc));
	/* The checkpoint file beside the environment, when present. */
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, STORE_CKPT_FILE);
	rc = file_read(path, CKPT_MAX, &c->file, err);
	if (rc == AS_ENOTFOUND)
		return 0;
	if (rc != 0)
		return fail_at(c->rep, 0, 0, "checkpoint file: %s", err);
	struct checkpoint cp;
	if (ckpt_parse(c->file.p, c->file.len, &cp, err) != 0)
		return fail_at(c->rep, 0, 0, "checkpoint file %s: %s", path, err);
	return add_expect(c, &cp, 0, "checkpoint file", c->file.p, c->file.len) == 0 ? 0 : AS_ENOMEM;
}

/* The witnesses' cosignatures on a checkpoint the log's key signed: a forged one fails the
 * ledger; the newest checkpoint with enough of them is the witnessed one (c->ex is sorted
 * by size, so the last one met). */
static int count_cosignatures(struct ctx *c, const struct expect *e)
{
	struct av_ledger_report *rep = c->rep;
	struct cosig_result r;
	char err[AS_ERRLEN];
	if (cosig_verify(e->text, e->len, c->wit, c->nwit, &r, err) != 0) {
		as_fail(c->sig_err, 0, "%s at size %llu: %s", e->src, (unsigned long long)e->size, err);
		return -1;
	}
	if (r.count > rep->best_cosigned)
		rep->best_cosigned = r.count;
	/* At one size (a stored checkpoint and the checkpoint file), the one with more cosignatures. */
	if (r.count < c->need || (rep->witnessed && (e->size < rep->witnessed_size ||
						     (e->size == rep->witnessed_size && r.count <= rep->witnessed_by))))
		return 0;
	rep->witnessed = 1;
	rep->witnessed_size = e->size;
	rep->witnessed_by = r.count;
	for (size_t i = 0; i < c->nwit; i++) {
		rep->witness[i].cosigned = r.cosigned[i];
		rep->witness[i].time = r.time[i];
	}
	return 0;
}

static void *verify_signatures(void *arg)
{
	struct ctx *c = arg;
	char err[AS_ERRLEN];
	for (size_t i = 0; i < c->nex; i++) {
		struct expect *e = &c->ex[i];
		struct checkpoint cp;
		if (!e->text)
			continue;
		if (ckpt_verify(e->text, e->len, c->keys->k, c->keys->n, &cp, err) != 0) {
			as_fail(c->sig_err, 0, "%s at size %llu: %s", e->src, (unsigned long long)e->size, err);
			return NULL;
		}
		c->rep->checkpoints++;
		if (c->nwit && count_cosignatures(c, e) != 0)
			return NULL;
	}
	return NULL;
}

/* The walk is a two-stage pipeline: the caller's thread reads LMDB, decodes and
 * checks each entry; a second thread hashes (leaf and interior nodes), checks the
 * prev links and compares roots with the checkpoints. Hashing is most of the cost,
 * and on two cores this keeps verification close to the speed of hashing alone.
 * Items point into the LMDB map, valid while the read transaction is open. */
#define PIPE_BATCH 512
#define PIPE_DEPTH 8

struct item {
	const uint8_t *data, *prev;
	size_t len;
};

struct pipeline {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct item (*b)[PIPE_BATCH];
	size_t n[PIPE_DEPTH];
	size_t head, tail; /* batches published by the reader, taken by the hasher */
	int done;	   /* the reader has published its last batch */
	int stop;	   /* the hasher found damage: the reader may stop */
	struct ctx *c;
	uint64_t total; /* entries LMDB says it holds */
	/* hasher state */
	struct merkle m;
	uint8_t prev[32];
	uint64_t seq;
	size_t ei;
	/* Damage found but not yet blamed on one entry: the next entry tells which. */
	int broken; /* the link into entry `broken_at` does not hold */
	uint64_t broken_at;
	const struct expect *mismatch; /* a checkpoint whose root differs at size p->seq */
};

/* Every entry but the last is pinned by the next entry's prev; so damage is blamed
 * one entry late, when the next link says which entry changed:
 *  - link into k broken, link into k+1 intact: entry k-1 changed (k still records
 *    its old hash); both broken: entry k changed (its prev, and so its own hash);
 *  - a checkpoint's root differs at size S and the link into S is broken: entry S-1
 *    changed; the link holds: the chain was rewritten and recomputed. */
static void hash_item(struct pipeline *p, const struct item *it)
{
	struct ctx *c = p->c;
	struct av_ledger_report *rep = c->rep;
	uint64_t k = p->seq;
	int link_ok = memcmp(it->prev, p->prev, 32) == 0;
	if (p->broken) {
		uint64_t b = p->broken_at;
		if (link_ok)
			fail_at(rep, 1, b - 1,
				"entry %llu was altered: its hash no longer matches the one entry %llu records",
				(unsigned long long)(b - 1), (unsigned long long)b);
		else
			fail_at(rep, 1, b,
				"entry %llu was altered: it no longer links to entry %llu, nor entry %llu to it",
				(unsigned long long)b, (unsigned long long)(b - 1), (unsigned long long)(b + 1));
		return;
	}
	if (p->mismatch) {
		const struct expect *e = p->mismatch;
		if (!link_ok)
			fail_at(rep, 1, k - 1,
				"entry %llu was altered: it matches neither the %s at size %llu nor the hash entry "
				"%llu records",
				(unsigned long long)(k - 1), e->src, (unsigned long long)e->size,
				(unsigned long long)k);
		else
			fail_at(rep, 0, 0,
				"history %s: the chain holds together but its root at size %llu differs from the %s",
				e->trusted ? "rewritten or rolled back" : "rewritten", (unsigned long long)e->size,
				e->src);
		return;
	}
	if (!link_ok) {
		if (k == 0) {
			fail_at(rep, 1, 0, "entry 0 was altered: its prev is not 32 zero bytes");
			return;
		}
		p->broken = 1;
		p->broken_at = k;
	}
	uint8_t leaf[32], root[32];
	merkle_leaf_hash(it->data, it->len, leaf);
	merkle_append(&p->m, leaf);
	memcpy(p->prev, leaf, 32);
	p->seq++;
	if (p->ei < c->nex && c->ex[p->ei].size == p->seq) {
		merkle_root(&p->m, root);
		for (; p->ei < c->nex && c->ex[p->ei].size == p->seq; p->ei++) {
			const struct expect *e = &c->ex[p->ei];
			if (memcmp(e->root, root, 32) != 0) {
				if (!p->broken && !p->mismatch)
					p->mismatch = e;
			} else if (e->trusted) {
				rep->trusted++;
			}
		}
	}
}

/* After the last entry: damage still waiting for a next entry is blamed now. */
static void hash_finish(struct pipeline *p)
{
	struct av_ledger_report *rep = p->c->rep;
	if (rep->reason[0])
		return;
	if (p->broken)
		fail_at(rep, 1, p->broken_at - 1,
			"the link between entries %llu and %llu is broken: one of them was altered",
			(unsigned long long)(p->broken_at - 1), (unsigned long long)p->broken_at);
	else if (p->mismatch)
		/* Nothing links to the last entry: it alone, or the whole chain, changed. */
		fail_at(rep, 1, p->seq - 1,
			"entry %llu was altered, or the history before it rewritten: the root at size %llu differs "
			"from the %s",
			(unsigned long long)(p->seq - 1), (unsigned long long)p->seq, p->mismatch->src);
}

static void *hasher(void *arg)
{
	struct pipeline *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->head == p->tail && !p->done)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->head == p->tail) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		size_t slot = p->tail % PIPE_DEPTH, n = p->n[slot];
		pthread_mutex_unlock(&p->mu);
		for (size_t i = 0; i < n && p->c->rep->reason[0] == 0; i++)
			hash_item(p, &p->b[slot][i]);
		pthread_mutex_lock(&p->mu);
		p->tail++;
		if (p->c->rep->reason[0])
			p->stop = 1;
		pthread_cond_broadcast(&p->cv);
		int stop = p->stop;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			return NULL;
	}
}

/* Publish the batch in slot; returns 0 when the hasher asked to stop. */
static int publish(struct pipeline *p, size_t n)
{
	pthread_mutex_lock(&p->mu);
	p->n[p->head % PIPE_DEPTH] = n;
	p->head++;
	pthread_cond_broadcast(&p->cv);
	while (p->head - p->tail == PIPE_DEPTH && !p->stop)
		pthread_cond_wait(&p->cv, &p->mu);
	int go = !p->stop;
	pthread_mutex_unlock(&p->mu);
	return go;
}

/* One stored entry before it is hashed: its key is its sequence number, it is at most
 * ENTRY_MAX bytes and a valid entry. 0, or -1 with *mine blamed (the walk stops). */
static int read_entry(struct av_ledger_report *mine, uint64_t seq, const MDB_val *k, const MDB_val *v,
		      struct cv_arena *a, struct cv **e)
{
	char err[AS_ERRLEN];
	if (k->mv_size != 8) {
		fail_at(mine, 1, seq, "entry %llu: stored under a key of %zu bytes, not 8", (unsigned long long)seq,
			k->mv_size);
		return -1;
	}
	uint64_t kseq = be64_get(k->mv_data);
	if (kseq != seq) {
		fail_at(mine, 1, seq, "entry %llu is missing (the next stored entry is %llu)", (unsigned long long)seq,
			(unsigned long long)kseq);
		return -1;
	}
	cv_arena_reset(a);
	if (v->mv_size > ENTRY_MAX) {
		fail_at(mine, 1, seq, "entry %llu is %zu bytes, over the maximum", (unsigned long long)seq, v->mv_size);
		return -1;
	}
	if (cbor_decode(v->mv_data, v->mv_size, a, e, err) != 0 || entry_check(*e, seq, NULL, err) != 0) {
		fail_at(mine, 1, seq, "entry %llu: %s", (unsigned long long)seq, err);
		return -1;
	}
	return 0;
}

/* The first entry whose time is before the one before it. */
struct time_back {
	int bad;
	uint64_t seq, prev, cur;
};

/* The walk's verdict, once the hasher is done: its own failure first (earlier entries),
 * then the reader's, a time going backwards, a checkpoint past the end; else the head. */
static void walk_report(struct pipeline *p, const struct av_ledger_report *mine, const struct time_back *tb)
{
	struct ctx *c = p->c;
	struct av_ledger_report *rep = c->rep;
	hash_finish(p);
	if (!rep->reason[0] && mine->reason[0])
		fail_at(rep, mine->has_bad_seq, mine->bad_seq, "%s", mine->reason);
	if (!rep->reason[0] && tb->bad)
		fail_at(
		    rep, 1, tb->seq,
		    "entry %llu: its time (%llu ms) is before entry %llu's (%llu ms): ledger times never go backwards",
		    (unsigned long long)tb->seq, (unsigned long long)tb->cur, (unsigned long long)(tb->seq - 1),
		    (unsigned long long)tb->prev);
	if (!rep->reason[0] && p->ei < c->nex) {
		const struct expect *ex = &c->ex[p->ei];
		fail_at(rep, 1, p->seq, "the ledger has %llu entries but the %s covers %llu: truncated or rolled back",
			(unsigned long long)p->seq, ex->src, (unsigned long long)ex->size);
	}
	if (!rep->reason[0]) {
		rep->entries = p->seq;
		rep->head_seq = p->seq ? p->seq - 1 : 0;
		memcpy(rep->head_leaf, p->prev, 32);
		merkle_root(&p->m, rep->root);
	}
}

/* The last, partial batch: to the hasher, which then ends, or hashed here. */
static void walk_drain(struct pipeline *p, int threaded, pthread_t *th, size_t n)
{
	if (threaded) {
		pthread_mutex_lock(&p->mu);
		p->n[p->head % PIPE_DEPTH] = n;
		p->head++;
		p->done = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(*th, NULL);
	} else {
		for (size_t i = 0; i < n && p->c->rep->reason[0] == 0; i++)
			hash_item(p, &p->b[0][i]);
	}
}

static int walk_entries(struct ctx *c, MDB_txn *txn, MDB_dbi dbi)
{
	struct av_ledger_report *rep = c->rep;
	MDB_stat st;
	mdb_stat(txn, dbi, &st);
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc != 0)
		return fail_at(rep, 0, 0, "cannot read entries: %s", mdb_strerror(rc));
	struct pipeline *p = calloc(1, sizeof *p);
	if (!p || !(p->b = calloc(PIPE_DEPTH, sizeof *p->b))) {
		free(p);
		mdb_cursor_close(cur);
		return AS_ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->c = c;
	p->total = st.ms_entries;
	merkle_init(&p->m);
	/* A checkpoint of the empty tree must carry the empty root. */
	uint8_t root[32];
	merkle_root(&p->m, root);
	for (; p->ei < c->nex && c->ex[p->ei].size == 0; p->ei++)
		if (memcmp(c->ex[p->ei].root, root, 32) != 0 && !rep->reason[0])
			fail_at(rep, 0, 0, "the %s of the empty tree has a wrong root", c->ex[p->ei].src);
	pthread_t th;
	int threaded = rep->reason[0] == 0 && pthread_create(&th, NULL, hasher, p) == 0;

	/* The reader's own verdict; the hasher's (earlier entries) takes precedence. */
	struct av_ledger_report mine = {0};
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	struct time_back tb = {0};
	struct av_passkeys *pk = c->pk; /* NULL: out of memory, said at the end */
	uint64_t seq = 0, last_time = 0;
	size_t n = 0;
	int go = rep->reason[0] == 0;
	for (rc = go ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : MDB_NOTFOUND; go && rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), seq++) {
		struct cv *e;
		if (read_entry(&mine, seq, &k, &v, &a, &e) != 0)
			break;
		char perr[AS_ERRLEN];
		if (pk && av_passkeys_entry(pk, c->nex ? c->ex[c->nex - 1].origin : "", seq, e, perr) != 0) {
			fail_at(&mine, 1, seq, "%s", perr);
			break;
		}
		/* Blamed only when nothing else is wrong: an altered time also breaks a link,
		 * and the hash chain says better which entry changed. */
		uint64_t t = cv_get(e, "time")->u;
		if (t < last_time && !tb.bad) {
			tb.bad = 1;
			tb.seq = seq;
			tb.prev = last_time;
			tb.cur = t;
		}
		last_time = t;
		struct item *it = &p->b[p->head % PIPE_DEPTH][n++];
		it->data = v.mv_data;
		it->len = v.mv_size;
		it->prev = cv_get(e, "prev")->s;
		if (n == PIPE_BATCH) {
			if (threaded) {
				go = publish(p, n);
			} else {
				for (size_t i = 0; i < n && rep->reason[0] == 0; i++)
					hash_item(p, &p->b[0][i]);
				go = rep->reason[0] == 0;
			}
			n = 0;
		}
	}
	if (rc != 0 && rc != MDB_NOTFOUND && !mine.reason[0])
		fail_at(&mine, 1, seq, "ledger file damaged at entry %llu: %s", (unsigned long long)seq,
			mdb_strerror(rc));
	if (!pk && !mine.reason[0])
		fail_at(&mine, 0, 0, "out of memory for the passkey checks");
	walk_drain(p, threaded, &th, n);
	mdb_cursor_close(cur);
	cv_arena_free(&a);
	walk_report(p, &mine, &tb);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->b);
	free(p);
	return 0;
}

/* Which key the ledger is checked with: a --key copy, or the state directory's key
 * pinned by its digest or by the auditor's saved checkpoints, or (asked for) unpinned. */
/* Every checkpoint left in c->ex was signed by a pinned key (or the check failed):
 * the largest one must cover the head, but for the tail the caller allows. */
static void check_tail(struct ctx *c, const struct av_ledger_opts *o)
{
	struct av_ledger_report *rep = c->rep;
	const struct expect *top = NULL;
	for (size_t i = 0; i < c->nex; i++) {
		if (!top || c->ex[i].size >= top->size)
			top = &c->ex[i];
		if (!strncmp(c->ex[i].origin, "assent-demo/", 12))
			rep->demo = 1;
	}
	rep->signed_size = top ? top->size : 0;
	if (top)
		snprintf(rep->origin, sizeof rep->origin, "%s", top->origin);
	rep->unsigned_tail = rep->entries - rep->signed_size;
	rep->tail_known = 1;
	if (rep->unsigned_tail > o->allow_unsigned_tail)
		fail_at(rep, 1, rep->signed_size,
			"unsigned tail: entries %llu to %llu (%llu) come after the newest checkpoint a pinned key "
			"signed (size %llu); "
			"--allow-unsigned-tail %llu accepts them",
			(unsigned long long)rep->signed_size, (unsigned long long)(rep->entries - 1),
			(unsigned long long)rep->unsigned_tail, (unsigned long long)rep->signed_size,
			(unsigned long long)rep->unsigned_tail);
}

/* On another failure, the count still says how much no signature covers: the entries
 * LMDB holds past the newest checkpoint whose signature verified. */
static void count_tail(struct ctx *c, MDB_txn *txn, MDB_dbi entries)
{
	MDB_stat st;
	uint64_t top = 0;
	for (size_t i = 0; i < c->nex; i++)
		if (c->ex[i].size > top)
			top = c->ex[i].size;
	if (mdb_stat(txn, entries, &st) != 0 || st.ms_entries < top)
		return;
	c->rep->signed_size = top;
	c->rep->unsigned_tail = st.ms_entries - top;
	c->rep->tail_known = 1;
}

/* The witnesses opts give, parsed into c; the threshold 1..n (0 given: 1). */
static int load_witnesses(struct ctx *c, const struct av_ledger_opts *o, struct av_ledger_report *rep)
{
	char err[AS_ERRLEN];
	if (o->nwitnesses > AV_WITNESS_MAX)
		return as_fail(rep->reason, AS_EINVAL, "%zu witnesses given, at most %d", o->nwitnesses,
			       AV_WITNESS_MAX);
	c->nwit = o->nwitnesses;
	c->need = o->witness_threshold ? o->witness_threshold : 1;
	if (c->nwit && c->need > c->nwit)
		return as_fail(rep->reason, AS_EINVAL, "witness threshold %zu is more than the %zu witnesses given",
			       c->need, c->nwit);
	for (size_t i = 0; i < c->nwit; i++) {
		if (witness_parse(o->witness_vkeys[i], strlen(o->witness_vkeys[i]), &c->wit[i], err) != 0)
			return as_fail(rep->reason, AS_EINVAL, "%s", err);
		snprintf(rep->witness[i].name, sizeof rep->witness[i].name, "%s", c->wit[i].name);
	}
	if (witness_set_ok(c->wit, c->nwit, err) != 0)
		return as_fail(rep->reason, AS_EINVAL, "%s", err);
	rep->witnesses = c->nwit;
	rep->witness_threshold = c->nwit ? c->need : 0;
	return 0;
}

/* With witnesses, once the ledger is intact: a checkpoint carries enough cosignatures. */
static void check_witnessed(struct ctx *c)
{
	struct av_ledger_report *rep = c->rep;
	if (!c->nwit)
		return;
	if (!rep->witnessed) {
		fail_at(rep, 0, 0,
			"no stored checkpoint is cosigned by %zu of the %zu witnesses given (the most any carries: "
			"%zu)",
			c->need, c->nwit, rep->best_cosigned);
		return;
	}
	rep->after_witnessed = rep->entries - rep->witnessed_size;
}

static int pin_keys(const char *dir, const struct av_ledger_opts *o, struct vkeys *keys, struct av_ledger_report *rep)
{
	int pinned_by_state = o->key_sha256 || o->ntrusted || o->key_from_state;
	int rc = vkeys_load(keys, o->nkeys == 0 && pinned_by_state ? dir : NULL, o->key_paths, o->nkeys, rep->reason);
	if (rc != 0)
		return rc;
	int match = 0;
	for (size_t i = 0; i < keys->n; i++) {
		char hex[65];
		if (vkeys_sha256(keys->k[i], hex) != 0) {
			vkeys_free(keys);
			return as_fail(rep->reason, AS_EINVAL, "cannot export a checkpoint key");
		}
		if (i == 0)
			snprintf(rep->key_sha256, sizeof rep->key_sha256, "%s", hex);
		if (o->key_sha256 && strcmp(o->key_sha256, hex) == 0) {
			match = 1;
			snprintf(rep->key_sha256, sizeof rep->key_sha256, "%s", hex);
		}
	}
	if (o->key_sha256 && !match) {
		fail_at(rep, 0, 0, "the checkpoint key %s is not the pinned one: its sha256 is %.16s..., not %.16s...",
			keys->from_state ? "in the state directory" : "given", rep->key_sha256, o->key_sha256);
		vkeys_free(keys);
		return 1; /* the check ran and does not hold */
	}
	rep->key_from_state = keys->from_state && !o->key_sha256 && o->ntrusted == 0;
	return 0;
}

/* The passkey checks, with the pins of --passkeys: a file that cannot be read or says
 * something else is a usage error, before anything is read. */
static int passkeys_start(struct ctx *c, const struct av_ledger_opts *o)
{
	c->pk = av_passkeys_new();
	if (c->pk && o->passkeys_path && av_passkeys_pin_file(c->pk, o->passkeys_path, c->rep->reason) != 0) {
		av_passkeys_free(c->pk);
		c->pk = NULL;
		return AS_EINVAL;
	}
	return 0;
}

int av_verify_ledger(const char *dir, const struct av_ledger_opts *o, struct av_ledger_report *rep)
{
	memset(rep, 0, sizeof *rep);
	struct ctx c = {.rep = rep};
	struct vkeys keys;
	c.keys = &keys;
	GUARD(passkeys_start(&c, o));
	int rc = load_witnesses(&c, o, rep);
	if (rc == 0)
		rc = pin_keys(dir, o, &keys, rep);
	if (rc != 0)
		av_passkeys_free(c.pk);
	if (rc == 1)
		return 0;
	if (rc != 0)
		return rc;
	buf_init(&c.file, CKPT_MAX);
	for (size_t i = 0; i < o->ntrusted; i++) {
		struct buf b;
		struct checkpoint cp;
		char err[AS_ERRLEN];
		rc = file_read(o->trusted_paths[i], CKPT_MAX, &b, err);
		if (rc == 0) {
			rc = ckpt_verify(b.p, b.len, keys.k, keys.n, &cp, err);
			buf_free(&b);
			if (rc != 0 && keys.from_state) {
				/* The saved checkpoint is what pins the state directory's key: the key
				 * there did not sign it, so it is not the key the auditor saw. */
				fail_at(rep, 0, 0,
					"trusted checkpoint %s is not signed by the key in the state directory (%s)",
					o->trusted_paths[i], err);
				vkeys_free(&keys);
				free(c.ex);
				av_passkeys_free(c.pk);
				return 0;
			}
		}
		if (rc == 0)
			rc = add_expect(&c, &cp, 1, "trusted checkpoint", NULL, 0);
		if (rc != 0) {
			as_fail(rep->reason, rc == AS_ENOTFOUND ? rc : AS_EINVAL, "trusted checkpoint %s: %s",
				o->trusted_paths[i], err);
			vkeys_free(&keys);
			free(c.ex);
			av_passkeys_free(c.pk);
			return rc == AS_ENOTFOUND || rc == AS_EIO ? rc : AS_EINVAL;
		}
	}
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi entries, ckpts;
	rc = store_open_ro(dir, &env, &txn, &entries, &ckpts, &rep->nolock, rep->reason);
	if (rc == AS_ECORRUPT) {
		rep->ok = 0;
		vkeys_free(&keys);
		free(c.ex);
		av_passkeys_free(c.pk);
		return 0; /* damage, not an I/O problem */
	}
	if (rc != 0) {
		vkeys_free(&keys);
		free(c.ex);
		av_passkeys_free(c.pk);
		return rc;
	}
	rep->ok = 1;
	rc = load_stored_checkpoints(&c, dir, txn, ckpts);
	if (rc == 0 && rep->reason[0] == 0) {
		if (c.nex > 1) /* with none, c.ex is NULL, which qsort may not be given */
			qsort(c.ex, c.nex, sizeof *c.ex, cmp_expect);
		pthread_t th;
		int threaded = pthread_create(&th, NULL, verify_signatures, &c) == 0;
		if (!threaded)
			verify_signatures(&c);
		rc = walk_entries(&c, txn, entries);
		if (threaded)
			pthread_join(th, NULL);
		/* A checkpoint that is not genuinely signed explains any root mismatch: report it first. */
		if (c.sig_err[0])
			fail_at(rep, 0, 0, "%s", c.sig_err);
		if (rc == 0 && !rep->reason[0])
			check_tail(&c, o);
		if (rc == 0 && !rep->reason[0])
			check_witnessed(&c);
		else if (rc == 0 && !c.sig_err[0])
			count_tail(&c, txn, entries);
	}
	if (rep->reason[0])
		rep->ok = 0;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	vkeys_free(&keys);
	buf_free(&c.file);
	free(c.ex);
	av_passkeys_free(c.pk);
	return rc;
}
