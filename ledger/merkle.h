/* RFC 9162 Merkle tree hashing: leaf and interior hashes, an incremental tree
 * that keeps O(log n) state, and inclusion proofs (generation and verification). */
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

#endif
