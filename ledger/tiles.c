/* The ledger's tiles: see tiles.h. */
#include "ledger/tiles.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"

int tile_put(MDB_txn *txn, MDB_dbi tiles, const struct merkle *m, const uint8_t leaf[32], char *err)
{
	if ((m->size + 1) % TILE_LEAVES != 0)
		return 0;
	/* The run's left subtrees are the frontier's nodes below TILE_LEVEL, all present now:
	 * fold the leaf into them as merkle_append's carry would. */
	uint8_t h[32], k[8];
	memcpy(h, leaf, 32);
	for (int i = 0; i < TILE_LEVEL; i++)
		merkle_node_hash(m->full[i], h, h);
	be64_put(k, (m->size + 1) / TILE_LEAVES - 1);
	MDB_val key = {8, k}, val = {32, h};
	int rc = mdb_put(txn, tiles, &key, &val, 0);
	return rc == 0 ? 0 : as_fail(err, AS_EIO, "storing a tile of the ledger: %s", mdb_strerror(rc));
}

void tile_reader_init(struct tile_reader *r, MDB_txn *txn, MDB_dbi entries)
{
	memset(r, 0, sizeof *r);
	r->txn = txn;
	r->entries = entries;
	r->have_tiles = mdb_dbi_open(txn, STORE_DB_TILES, 0, &r->tiles) == 0;
}

static int leaf_at(struct tile_reader *r, uint64_t i, uint8_t out[32])
{
	uint8_t k[8];
	be64_put(k, i);
	MDB_val key = {8, k}, val;
	if (mdb_get(r->txn, r->entries, &key, &val) != 0)
		return as_fail(r->err, AS_ECORRUPT, "entry %llu is missing; run assent-verify ledger",
			       (unsigned long long)i);
	r->entries_read++;
	merkle_leaf_hash(val.mv_data, val.mv_size, out);
	return 0;
}

static int tile_at(struct tile_reader *r, uint64_t t, uint8_t out[32])
{
	uint8_t k[8];
	be64_put(k, t);
	MDB_val key = {8, k}, val;
	if (!r->have_tiles || mdb_get(r->txn, r->tiles, &key, &val) != 0 || val.mv_size != 32)
		return -1;
	r->tiles_read++;
	memcpy(out, val.mv_data, 32);
	return 0;
}

int tile_range_hash(void *arg, uint64_t lo, uint64_t n, uint8_t out[32])
{
	struct tile_reader *r = arg;
	if (n == 0)
		return as_fail(r->err, AS_EINVAL, "an empty subtree");
	if (n == 1)
		return leaf_at(r, lo, out);
	if (n == TILE_LEAVES && lo % TILE_LEAVES == 0 && tile_at(r, lo / TILE_LEAVES, out) == 0)
		return 0;
	uint64_t k = merkle_split(n);
	uint8_t left[32], right[32];
	GUARD(tile_range_hash(r, lo, k, left));
	GUARD(tile_range_hash(r, lo + k, n - k, right));
	merkle_node_hash(left, right, out);
	return 0;
}
