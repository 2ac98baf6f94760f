/* RFC 9162 Merkle tree hashing: leaf and interior hashes, an incremental tree
 * that keeps O(log n) state, inclusion and consistency proofs (generation and
 * verification). */
#ifndef ASSENT_MERKLE_H
#define ASSENT_MERKLE_H

#include <stddef.h>
#include <stdint.h>
#include "common/attr.h"

#define MERKLE_HASH 32
#define MERKLE_MAX_PROOF 64

void sha256(const void *data, size_t n, uint8_t out[32]);
void merkle_leaf_hash(const void *data, size_t n, uint8_t out[32]);		  /* SHA-256(0x00 || d) */
void merkle_node_hash(const uint8_t l[32], const uint8_t r[32], uint8_t out[32]); /* SHA-256(0x01 || l || r) */

/* Roots of the perfect subtrees of a tree of `size` leaves: full[i] holds the
 * subtree of 2^i leaves when bit i of size is set. */
struct merkle {
	uint64_t size;
	uint8_t full[64][32];
};
void merkle_init(struct merkle *m);
void merkle_append(struct merkle *m, const uint8_t leaf[32]);
void merkle_root(const struct merkle *m, uint8_t out[32]); /* empty tree: SHA-256("") */
/* Serialised state: 8-byte size then one hash per set bit, smallest subtree first. */
size_t merkle_serialize(const struct merkle *m, uint8_t *out /* 8 + 64*32 */);
int merkle_deserialize(struct merkle *m, const uint8_t *in, size_t n) AS_MUST_USE;

/* Inclusion proof of leaf `index` in the tree of the first `size` leaves.
 * leaves holds those `size` leaf hashes. Writes up to MERKLE_MAX_PROOF hashes. */
int merkle_inclusion_proof(const uint8_t (*leaves)[32], uint64_t size, uint64_t index, uint8_t (*path)[32],
			   size_t *npath) AS_MUST_USE AS_MUST_USE;
/* RFC 9162 section 2.1.3.2. Returns 0 when the proof leads to root, AS_ECORRUPT otherwise. */
int merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t leaf[32], const uint8_t (*path)[32],
			    size_t npath, const uint8_t root[32]) AS_MUST_USE AS_MUST_USE;

/* Consistency proofs (RFC 9162 section 2.1.4): the tree of the first old_size leaves is a
 * prefix of the tree of new_size leaves. A proof has at most ceil(log2(new_size)) + 1
 * hashes; sizes up to 2^63 (any ledger) keep it within MERKLE_MAX_CONSISTENCY, and a
 * proof said to need more is refused rather than read. */
#define MERKLE_MAX_CONSISTENCY 64

/* The number of hashes the proof from old_size to new_size has, or -1 when no proof
 * exists (old_size 0, old_size > new_size) or it would exceed MERKLE_MAX_CONSISTENCY. */
int merkle_consistency_len(uint64_t old_size, uint64_t new_size);

/* PROOF(old_size, D[new_size]) of RFC 9162 2.1.4.1. leaves holds the first new_size leaf
 * hashes; path gets up to MERKLE_MAX_CONSISTENCY hashes (*npath of them; none when the
 * sizes are equal). AS_EINVAL when old_size is 0 or above new_size. */
int merkle_consistency_proof(const uint8_t (*leaves)[32], uint64_t old_size, uint64_t new_size, uint8_t (*path)[32],
			     size_t *npath) AS_MUST_USE;
/* The same with the subtrees' hashes from range(ctx, lo, n, out): MTH(D[lo:lo+n]), 0 or an
 * error, which the proof returns (ledger/tiles.c reads them from the ledger's tiles). */
typedef int (*merkle_range_fn)(void *ctx, uint64_t lo, uint64_t n, uint8_t out[32]);
int merkle_consistency_proof_by(merkle_range_fn range, void *ctx, uint64_t old_size, uint64_t new_size,
				uint8_t (*path)[32], size_t *npath) AS_MUST_USE;
/* Largest power of two strictly less than n (n >= 2): where RFC 9162 splits a tree of n leaves. */
uint64_t merkle_split(uint64_t n);

/* RFC 9162 section 2.1.4.2. 0 when path proves the tree old_root of old_size leaves a
 * prefix of the tree new_root of new_size leaves; AS_ECORRUPT for anything else: old_size
 * 0 or above new_size, equal sizes with a non-empty path or different roots, a path not of
 * the exact length the sizes call for, a path leading to other roots. */
int merkle_verify_consistency(uint64_t old_size, uint64_t new_size, const uint8_t old_root[32],
			      const uint8_t new_root[32], const uint8_t (*path)[32], size_t npath) AS_MUST_USE;

#endif
