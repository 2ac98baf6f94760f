/* Consistency proofs between signed checkpoints (consist.h): made from the ledger's
 * entries, read and checked as C2SP tlog-witness text. */
#include "verify/consist.h"
#include "ledger/tiles.h"

#include <stdlib.h>
#include <string.h>

#define BAD(...) as_fail(err, AS_ECORRUPT, __VA_ARGS__)

/* The size of the newest stored checkpoint, and the root of the one stored at `at` (if any). */
static int ckpt_sizes(MDB_txn *txn, MDB_dbi ckpts, uint64_t at, uint64_t *newest, uint8_t root[32], int *has, char *err)
{
	MDB_cursor *cur;
	MDB_val k, v;
	struct checkpoint cp;
	char e2[AS_ERRLEN];
	if (mdb_cursor_open(txn, ckpts, &cur) != 0)
		return as_fail(err, AS_EIO, "cannot read checkpoints");
	int rc = 0;
	*has = 0;
	if (mdb_cursor_get(cur, &k, &v, MDB_LAST) != 0)
		rc = as_fail(err, AS_ENOTFOUND, "the ledger has no checkpoint yet");
	else if (ckpt_parse(v.mv_data, v.mv_size, &cp, e2) != 0)
		rc = BAD("the newest stored checkpoint is damaged: %s", e2);
	else
		*newest = cp.size;
	uint8_t kb[8];
	be64_put(kb, at);
	k.mv_size = 8;
	k.mv_data = kb;
	if (rc == 0 && mdb_cursor_get(cur, &k, &v, MDB_SET_KEY) == 0) {
		if (ckpt_parse(v.mv_data, v.mv_size, &cp, e2) != 0)
			rc = BAD("the checkpoint stored at size %llu is damaged: %s", (unsigned long long)at, e2);
		memcpy(root, cp.root, 32);
		*has = 1;
	}
	mdb_cursor_close(cur);
	return rc;
}

static int put_text(const uint8_t (*path)[32], size_t np, struct buf *out, char *err)
{
	for (size_t i = 0; i < np; i++)
		if (b64_encode(path[i], 32, out) != 0 || buf_putc(out, '\n') != 0)
			return as_fail(err, AS_ENOMEM, "out of memory");
	return 0;
}

int consist_make_txn(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, uint64_t old_size, uint64_t new_size,
		     struct buf *out, char *err)
{
	uint64_t newest = 0;
	uint8_t signed_new[32], signed_old[32], root[32];
	int has_new, has_old;
	if (old_size == 0 || old_size > new_size)
		return as_fail(err, AS_EINVAL, "no consistency proof from size %llu to %llu: 1 <= old <= new",
			       (unsigned long long)old_size, (unsigned long long)new_size);
	GUARD(ckpt_sizes(txn, ckpts, new_size, &newest, signed_new, &has_new, err));
	if (new_size > newest)
		return as_fail(err, AS_EINVAL, "size %llu is past the newest signed checkpoint (size %llu)",
			       (unsigned long long)new_size, (unsigned long long)newest);
	GUARD(ckpt_sizes(txn, ckpts, old_size, &newest, signed_old, &has_old, err));
	/* Subtree hashes from the ledger's tiles (ledger/tiles.h): a few thousand entries and one
	 * tile per 1,024 leaves read, not every entry; both roots are still compared with the
	 * checkpoints signed at those sizes, so a wrong tile cannot slip a wrong proof out. */
	struct tile_reader tr;
	tile_reader_init(&tr, txn, entries);
	uint8_t path[MERKLE_MAX_CONSISTENCY][32];
	size_t np = 0;
	int rc = has_new ? tile_range_hash(&tr, 0, new_size, root) : 0;
	if (rc == 0 && has_new && memcmp(root, signed_new, 32) != 0)
		return BAD("the root at size %llu differs from its signed checkpoint", (unsigned long long)new_size);
	if (rc == 0 && has_old)
		rc = tile_range_hash(&tr, 0, old_size, root);
	if (rc == 0 && has_old && memcmp(root, signed_old, 32) != 0)
		return BAD("the root at size %llu differs from its signed checkpoint", (unsigned long long)old_size);
	if (rc == 0)
		rc = merkle_consistency_proof_by(tile_range_hash, &tr, old_size, new_size, path, &np);
	if (rc != 0)
		return as_fail(err, rc, "%s", tr.err[0] ? tr.err : "no consistency proof for these sizes");
	return put_text((const uint8_t(*)[32])path, np, out, err);
}

int consist_make_cb(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err)
{
	struct consist_req *c = arg;
	(void)key;
	return consist_make_txn(txn, entries, ckpts, c->old, c->new, &c->out, err);
}

int consist_make(const char *dir, uint64_t old_size, uint64_t new_size, struct buf *out, char *err)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi entries, ckpts;
	int nolock;
	GUARD(store_open_ro(dir, &env, &txn, &entries, &ckpts, &nolock, err));
	int rc = consist_make_txn(txn, entries, ckpts, old_size, new_size, out, err);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}

int consist_parse(const uint8_t *text, size_t n, uint8_t (*path)[32], size_t *np, char *err)
{
	*np = 0;
	if (n > CONSIST_TEXT_MAX)
		return BAD("consistency proof: %zu bytes, over the %d of %d hashes", n, CONSIST_TEXT_MAX,
			   MERKLE_MAX_CONSISTENCY);
	struct rd r, line;
	rd_init(&r, text, n);
	while (rd_left(&r) > 0) {
		size_t got = 0;
		if (rd_line(&r, &line) != 0)
			return BAD("consistency proof: line %zu does not end in a newline", *np + 1);
		if (*np == MERKLE_MAX_CONSISTENCY)
			return BAD("consistency proof: more than %d hashes", MERKLE_MAX_CONSISTENCY);
		if (line.len != CONSIST_LINE - 1 ||
		    b64_decode((const char *)line.p, line.len, path[*np], 32, &got) != 0 || got != 32)
			return BAD("consistency proof: line %zu is not the base64 of a SHA-256 hash", *np + 1);
		(*np)++;
	}
	return 0;
}

int consist_check(const uint8_t *oldck, size_t n1, const uint8_t *newck, size_t n2, const uint8_t *proof, size_t plen,
		  struct eckey *const *keys, size_t nkeys, struct checkpoint *o, struct checkpoint *nw, char *err)
{
	struct checkpoint a, b;
	char e2[AS_ERRLEN];
	uint8_t path[MERKLE_MAX_CONSISTENCY][32];
	size_t np;
	if (ckpt_verify(oldck, n1, keys, nkeys, &a, e2) != 0)
		return BAD("the old checkpoint: %s", e2);
	if (ckpt_verify(newck, n2, keys, nkeys, &b, e2) != 0)
		return BAD("the new checkpoint: %s", e2);
	if (o)
		*o = a;
	if (nw)
		*nw = b;
	if (strcmp(a.origin, b.origin) != 0)
		return BAD("the checkpoints are of two logs: origin '%s' and '%s'", a.origin, b.origin);
	if (a.size == 0 || a.size > b.size)
		return BAD("the old checkpoint's size %llu is not between 1 and the new one's %llu",
			   (unsigned long long)a.size, (unsigned long long)b.size);
	GUARD(consist_parse(proof, plen, path, &np, err));
	int want = merkle_consistency_len(a.size, b.size);
	if (want < 0 || np != (size_t)want)
		return BAD("consistency proof: %zu hashes, the proof from size %llu to %llu has %d", np,
			   (unsigned long long)a.size, (unsigned long long)b.size, want);
	if (merkle_verify_consistency(a.size, b.size, a.root, b.root, (const uint8_t(*)[32])path, np) != 0)
		return BAD("the tree of size %llu is not a prefix of the tree of size %llu: the proof does not "
			   "lead from one signed root to the other (a forked or rewritten ledger, or a wrong proof)",
			   (unsigned long long)a.size, (unsigned long long)b.size);
	return 0;
}
