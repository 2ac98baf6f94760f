/* av_verify_ledger: the auditor's full check of a ledger. */
#define _GNU_SOURCE
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "assent/verify.h"
#include "cbor.h"
#include "eckey.h"
#include "entry.h"
#include "merkle.h"
#include "note.h"
#include "store.h"
#include "util.h"
#include "vkeys.h"

/* A root the ledger must have at a given size, and who says so. */
struct expect {
	uint64_t size;
	uint8_t root[32];
	int trusted; /* from an auditor's saved checkpoint, not from the ledger itself */
	char src[64];
};

struct ctx {
	struct av_ledger_report *rep;
	struct expect *ex;
	size_t nex, capex;
};

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

static int add_expect(struct ctx *c, const struct checkpoint *cp, int trusted, const char *src)
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
	snprintf(e->src, sizeof e->src, "%s", src);
	return 0;
}

static int cmp_expect(const void *a, const void *b)
{
	const struct expect *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return y->trusted - x->trusted; /* trusted first: its verdict is the stronger one */
}

/* Check one expected root against the tree as computed up to its size. */
static int check_root(struct ctx *c, const struct expect *e, const uint8_t root[32], uint64_t total)
{
	if (memcmp(e->root, root, 32) == 0) {
		if (e->trusted)
			c->rep->trusted++;
		return 1;
	}
	if (e->trusted)
		fail_at(c->rep, 0, 0,
			"history rewritten or rolled back: the root at size %llu differs from the %s",
			(unsigned long long)e->size, e->src);
	else if (e->size == total && e->size > 0)
		/* Every earlier entry is pinned by its successor's prev link; the last is not. */
		fail_at(c->rep, 1, e->size - 1, "entry %llu does not match the %s (root at size %llu differs)",
			(unsigned long long)(e->size - 1), e->src, (unsigned long long)e->size);
	else
		fail_at(c->rep, 0, 0, "the root at size %llu differs from the %s: history rewritten",
			(unsigned long long)e->size, e->src);
	return 0;
}

static int load_stored_checkpoints(struct ctx *c, const char *dir, MDB_txn *txn, MDB_dbi dbi,
				   struct eckey *const *keys, size_t nkeys)
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
		if (ckpt_verify(v.mv_data, v.mv_size, keys, nkeys, &cp, err) != 0) {
			mdb_cursor_close(cur);
			return fail_at(c->rep, 0, 0, "stored checkpoint at size %llu: %s", (unsigned long long)size, err);
		}
		if (cp.size != size) {
			mdb_cursor_close(cur);
			return fail_at(c->rep, 0, 0, "stored checkpoint under size %llu says size %llu",
				       (unsigned long long)size, (unsigned long long)cp.size);
		}
		if (add_expect(c, &cp, 0, "stored signed checkpoint") != 0)
			break;
		c->rep->checkpoints++;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND && rc != 0)
		return fail_at(c->rep, 0, 0, "ledger file damaged while reading checkpoints: %s", mdb_strerror(rc));
	/* The checkpoint file beside the environment, when present. */
	char path[4200];
	struct buf b;
	snprintf(path, sizeof path, "%s/%s", dir, STORE_CKPT_FILE);
	rc = file_read(path, CKPT_MAX, &b, err);
	if (rc == AS_ENOTFOUND)
		return 0;
	if (rc != 0)
		return fail_at(c->rep, 0, 0, "checkpoint file: %s", err);
	struct checkpoint cp;
	rc = ckpt_verify(b.p, b.len, keys, nkeys, &cp, err);
	buf_free(&b);
	if (rc != 0)
		return fail_at(c->rep, 0, 0, "checkpoint file %s: %s", path, err);
	c->rep->checkpoints++;
	return add_expect(c, &cp, 0, "checkpoint file") == 0 ? 0 : AS_ENOMEM;
}

static int walk_entries(struct ctx *c, MDB_txn *txn, MDB_dbi dbi)
{
	struct av_ledger_report *rep = c->rep;
	MDB_stat st;
	mdb_stat(txn, dbi, &st);
	uint64_t total = st.ms_entries;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc != 0)
		return fail_at(rep, 0, 0, "cannot read entries: %s", mdb_strerror(rc));
	struct merkle m;
	merkle_init(&m);
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	uint8_t prev[32] = {0}, leaf[32], root[32];
	char err[AS_ERRLEN];
	size_t ei = 0;
	/* A checkpoint of the empty tree must carry the empty root. */
	merkle_root(&m, root);
	while (ei < c->nex && c->ex[ei].size == 0 && rep->reason[0] == 0)
		check_root(c, &c->ex[ei++], root, total);
	uint64_t seq = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && rep->reason[0] == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), seq++) {
		if (k.mv_size != 8) {
			fail_at(rep, 1, seq, "entry %llu: stored under a key of %zu bytes, not 8", (unsigned long long)seq,
				k.mv_size);
			break;
		}
		uint64_t kseq = be64_get(k.mv_data);
		if (kseq != seq) {
			fail_at(rep, 1, seq, "entry %llu is missing (the next stored entry is %llu)",
				(unsigned long long)seq, (unsigned long long)kseq);
			break;
		}
		struct cv *e;
		cv_arena_reset(&a);
		if (v.mv_size > ENTRY_MAX) {
			fail_at(rep, 1, seq, "entry %llu is %zu bytes, over the maximum", (unsigned long long)seq, v.mv_size);
			break;
		}
		if (cbor_decode(v.mv_data, v.mv_size, &a, &e, err) != 0 || entry_check(e, seq, NULL, err) != 0) {
			fail_at(rep, 1, seq, "entry %llu: %s", (unsigned long long)seq, err);
			break;
		}
		const struct cv *p = cv_get(e, "prev");
		if (memcmp(p->s, prev, 32) != 0) {
			/* The link is broken: the earlier entry changed, or this one's prev did. */
			if (seq == 0)
				fail_at(rep, 1, 0, "entry 0: prev is not 32 zero bytes");
			else
				fail_at(rep, 1, seq - 1, "entry %llu does not match the hash that entry %llu links to",
					(unsigned long long)(seq - 1), (unsigned long long)seq);
			break;
		}
		merkle_leaf_hash(v.mv_data, v.mv_size, leaf);
		merkle_append(&m, leaf);
		memcpy(prev, leaf, 32);
		if (ei < c->nex && c->ex[ei].size == seq + 1) {
			merkle_root(&m, root);
			while (ei < c->nex && c->ex[ei].size == seq + 1 && rep->reason[0] == 0)
				check_root(c, &c->ex[ei++], root, total);
		}
	}
	mdb_cursor_close(cur);
	cv_arena_free(&a);
	if (rep->reason[0])
		return 0;
	if (rc != MDB_NOTFOUND)
		return fail_at(rep, 1, seq, "ledger file damaged at entry %llu: %s", (unsigned long long)seq,
			       mdb_strerror(rc));
	if (ei < c->nex) {
		const struct expect *e = &c->ex[ei];
		return fail_at(rep, 1, seq, "the ledger has %llu entries but the %s covers %llu: truncated or rolled back",
			       (unsigned long long)seq, e->src, (unsigned long long)e->size);
	}
	rep->entries = seq;
	rep->head_seq = seq ? seq - 1 : 0;
	memcpy(rep->head_leaf, prev, 32);
	merkle_root(&m, rep->root);
	return 0;
}

int av_verify_ledger(const char *dir, const struct av_ledger_opts *o, struct av_ledger_report *rep)
{
	memset(rep, 0, sizeof *rep);
	struct ctx c = {.rep = rep};
	struct vkeys keys;
	int rc = vkeys_load(&keys, dir, o->key_paths, o->nkeys, rep->reason);
	if (rc != 0)
		return rc;
	rep->key_from_state = keys.from_state;
	for (size_t i = 0; i < o->ntrusted; i++) {
		struct buf b;
		struct checkpoint cp;
		char err[AS_ERRLEN];
		rc = file_read(o->trusted_paths[i], CKPT_MAX, &b, err);
		if (rc == 0) {
			rc = ckpt_verify(b.p, b.len, keys.k, keys.n, &cp, err);
			buf_free(&b);
		}
		if (rc == 0)
			rc = add_expect(&c, &cp, 1, "trusted checkpoint");
		if (rc != 0) {
			as_fail(rep->reason, rc == AS_ENOTFOUND ? rc : AS_EINVAL, "trusted checkpoint %s: %s",
				o->trusted_paths[i], err);
			vkeys_free(&keys);
			free(c.ex);
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
		return 0; /* damage, not an I/O problem */
	}
	if (rc != 0) {
		vkeys_free(&keys);
		free(c.ex);
		return rc;
	}
	rep->ok = 1;
	rc = load_stored_checkpoints(&c, dir, txn, ckpts, keys.k, keys.n);
	if (rc == 0 && rep->reason[0] == 0) {
		qsort(c.ex, c.nex, sizeof *c.ex, cmp_expect);
		rc = walk_entries(&c, txn, entries);
	}
	if (rep->reason[0])
		rep->ok = 0;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	vkeys_free(&keys);
	free(c.ex);
	return rc;
}
