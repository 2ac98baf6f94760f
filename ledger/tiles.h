/* The ledger's tiles: the hash of every complete, aligned run of TILE_LEAVES leaves (the
 * Merkle tree's nodes at level TILE_LEVEL), kept in the named database "tiles" under the
 * run's index (8 bytes, big-endian), written by the ledger writer in the transaction that
 * completes the run. With them a subtree hash reads one tile per TILE_LEAVES leaves instead
 * of every entry, so a consistency proof for a witness reads about n/1024 tiles and a few
 * thousand entries rather than n entries. A tile that is missing (a ledger written before
 * tiles, or a copy without them) or not 32 bytes is computed from the entries instead: a
 * tile only saves work, and every root made with them is compared with a signed checkpoint
 * or checked by the witness that asked (verify/consist.c). */
#ifndef ASSENT_TILES_H
#define ASSENT_TILES_H

#include <stdint.h>

#include "common/attr.h"
#include "include/assent/err.h"
#include "ledger/merkle.h"
#include "ledger/store.h"

#define TILE_LEVEL 10
#define TILE_LEAVES (1ull << TILE_LEVEL)

/* The writer, before merkle_append(m, leaf): when leaf completes a run, store its tile. */
int tile_put(MDB_txn *txn, MDB_dbi tiles, const struct merkle *m, const uint8_t leaf[32], char *err) AS_MUST_USE;

/* A reader of subtree hashes in a read transaction (tiles when the database has them). */
struct tile_reader {
	MDB_txn *txn;
	MDB_dbi entries, tiles;
	int have_tiles;
	uint64_t entries_read, tiles_read; /* what the hashes cost */
	char err[AS_ERRLEN];
};
void tile_reader_init(struct tile_reader *r, MDB_txn *txn, MDB_dbi entries);
/* MTH(D[lo:lo+n]) of the ledger (a merkle_range_fn; r->err says why not): AS_ECORRUPT when
 * an entry in the range is missing. */
int tile_range_hash(void *r, uint64_t lo, uint64_t n, uint8_t out[32]) AS_MUST_USE;

#endif
