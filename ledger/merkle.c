/* RFC 9162 Merkle tree: incremental root and inclusion proofs. */
#include "ledger/merkle.h"

#include <string.h>

/* SHA-256 through libcrypto's low-level interface: it uses the CPU's SHA instructions (about
 * six times mbedTLS's software SHA-256 here, NOTES.md) and, unlike EVP_Digest, fetches no
 * algorithm per call. Deprecated in OpenSSL 3 but kept there; the static assent-verify links
 * libcrypto.a already. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "include/assent/err.h"
#include "common/util.h"

void sha256(const void *data, size_t n, uint8_t out[32])
{
	SHA256(data, n, out);
}

void merkle_leaf_hash(const void *data, size_t n, uint8_t out[32])
{
	static const uint8_t zero = 0;
	SHA256_CTX c;
	SHA256_Init(&c);
	SHA256_Update(&c, &zero, 1);
	SHA256_Update(&c, data, n);
	SHA256_Final(out, &c);
}

void merkle_node_hash(const uint8_t l[32], const uint8_t r[32], uint8_t out[32])
{
	uint8_t b[65];
	b[0] = 1;
	memcpy(b + 1, l, 32);
	memcpy(b + 33, r, 32);
	SHA256(b, sizeof b, out);
}

void merkle_init(struct merkle *m)
{
	memset(m, 0, sizeof *m);
}

void merkle_append(struct merkle *m, const uint8_t leaf[32])
{
	uint8_t h[32];
	memcpy(h, leaf, 32);
	int i = 0;
	/* Like a binary counter: each set low bit is a full subtree that merges to the left. */
	while (i < 64 && ((m->size >> i) & 1)) {
		merkle_node_hash(m->full[i], h, h);
		i++;
	}
	if (i < 64)
		memcpy(m->full[i], h, 32);
	m->size++;
}

void merkle_root(const struct merkle *m, uint8_t out[32])
{
	if (m->size == 0) {
		sha256("", 0, out);
		return;
	}
	uint8_t h[32];
	int have = 0;
	for (int i = 0; i < 64; i++) {
		if (!((m->size >> i) & 1))
			continue;
		if (!have) {
			memcpy(h, m->full[i], 32);
			have = 1;
		} else {
			merkle_node_hash(m->full[i], h, h);
		}
	}
	memcpy(out, h, 32);
}

size_t merkle_serialize(const struct merkle *m, uint8_t *out)
{
	be64_put(out, m->size);
	size_t off = 8;
	for (int i = 0; i < 64; i++) {
		if ((m->size >> i) & 1) {
			memcpy(out + off, m->full[i], 32);
			off += 32;
		}
	}
	return off;
}

int merkle_deserialize(struct merkle *m, const uint8_t *in, size_t n)
{
	if (n < 8)
		return AS_ECORRUPT;
	merkle_init(m);
	m->size = be64_get(in);
	size_t off = 8;
	for (int i = 0; i < 64; i++) {
		if (!((m->size >> i) & 1))
			continue;
		if (n - off < 32)
			return AS_ECORRUPT;
		memcpy(m->full[i], in + off, 32);
		off += 32;
	}
	return off == n ? 0 : AS_ECORRUPT;
}

uint64_t merkle_split(uint64_t n)
{
	uint64_t k = 1;
	while (k < (1ull << 63) && k << 1 < n) /* past 2^63, k << 1 would wrap to 0 */
		k <<= 1;
	return k;
}

static void subtree_hash(const uint8_t (*leaves)[32], uint64_t n, uint8_t out[32])
{
	if (n == 1) {
		memcpy(out, leaves[0], 32);
		return;
	}
	uint64_t k = merkle_split(n);
	uint8_t l[32], r[32];
	subtree_hash(leaves, k, l);
	subtree_hash(leaves + k, n - k, r);
	merkle_node_hash(l, r, out);
}

int merkle_inclusion_proof(const uint8_t (*leaves)[32], uint64_t size, uint64_t index, uint8_t (*path)[32],
			   size_t *npath)
{
	if (index >= size)
		return AS_EINVAL;
	/* PATH(m, D[n]) of RFC 9162 2.1.3.1, unrolled; siblings are collected from the
	 * root downwards and then reversed so the path starts at the leaf. */
	uint8_t tmp[MERKLE_MAX_PROOF][32];
	size_t k = 0;
	uint64_t lo = 0, n = size, m = index;
	while (n > 1) {
		uint64_t s = merkle_split(n);
		if (m < s) {
			subtree_hash(leaves + lo + s, n - s, tmp[k++]);
			n = s;
		} else {
			subtree_hash(leaves + lo, s, tmp[k++]);
			lo += s;
			m -= s;
			n -= s;
		}
	}
	for (size_t i = 0; i < k; i++)
		memcpy(path[i], tmp[k - 1 - i], 32);
	*npath = k;
	return 0;
}

int merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t leaf[32], const uint8_t (*path)[32],
			    size_t npath, const uint8_t root[32])
{
	if (index >= size)
		return AS_ECORRUPT;
	uint64_t fn = index, sn = size - 1;
	uint8_t r[32];
	memcpy(r, leaf, 32);
	for (size_t i = 0; i < npath; i++) {
		if (sn == 0)
			return AS_ECORRUPT;
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(path[i], r, r);
			if (!(fn & 1)) {
				while (!(fn & 1) && fn != 0) {
					fn >>= 1;
					sn >>= 1;
				}
			}
		} else {
			merkle_node_hash(r, path[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	if (sn != 0)
		return AS_ECORRUPT;
	return ct_memcmp(r, root, 32) == 0 ? 0 : AS_ECORRUPT;
}

/* ---- consistency proofs (RFC 9162 2.1.4) ----
 * SUBPROOF(m, D[lo:lo+n], b) unrolled: while m < n the descent goes left (m <= k: the right
 * subtree D[k:n] is a sibling) or right (m > k: the left subtree D[0:k] is, and b becomes
 * false). The recursion emits the deepest part first, so the siblings are reversed, and a
 * descent that went right at least once ends with MTH(D[m]) itself. */

int merkle_consistency_len(uint64_t old_size, uint64_t new_size)
{
	if (old_size == 0 || old_size > new_size)
		return -1;
	uint64_t m = old_size, n = new_size;
	int k = 0, b = 1;
	while (m < n) {
		uint64_t s = merkle_split(n);
		if (m <= s) {
			n = s;
		} else {
			m -= s;
			n -= s;
			b = 0;
		}
		k++;
	}
	k += !b;
	return k <= MERKLE_MAX_CONSISTENCY ? k : -1;
}

static int array_range(void *ctx, uint64_t lo, uint64_t n, uint8_t out[32])
{
	subtree_hash((const uint8_t(*)[32])ctx + lo, n, out);
	return 0;
}

int merkle_consistency_proof(const uint8_t (*leaves)[32], uint64_t old_size, uint64_t new_size, uint8_t (*path)[32],
			     size_t *npath)
{
	return merkle_consistency_proof_by(array_range, (void *)leaves, old_size, new_size, path, npath);
}

int merkle_consistency_proof_by(merkle_range_fn range, void *ctx, uint64_t old_size, uint64_t new_size,
				uint8_t (*path)[32], size_t *npath)
{
	int want = merkle_consistency_len(old_size, new_size);
	if (want < 0)
		return AS_EINVAL;
	uint8_t tmp[MERKLE_MAX_CONSISTENCY][32];
	size_t k = 0;
	uint64_t lo = 0, m = old_size, n = new_size;
	int b = 1;
	while (m < n) {
		uint64_t s = merkle_split(n);
		if (m <= s) {
			GUARD(range(ctx, lo + s, n - s, tmp[k++]));
			n = s;
		} else {
			GUARD(range(ctx, lo, s, tmp[k++]));
			lo += s;
			m -= s;
			n -= s;
			b = 0;
		}
	}
	size_t o = 0;
	if (!b)
		GUARD(range(ctx, lo, n, path[o++]));
	for (size_t i = 0; i < k; i++)
		memcpy(path[o++], tmp[k - 1 - i], 32);
	*npath = o;
	return o == (size_t)want ? 0 : AS_EINVAL;
}

int merkle_verify_consistency(uint64_t old_size, uint64_t new_size, const uint8_t old_root[32],
			      const uint8_t new_root[32], const uint8_t (*path)[32], size_t npath)
{
	int want = merkle_consistency_len(old_size, new_size);
	if (want < 0 || npath != (size_t)want)
		return AS_ECORRUPT;
	if (old_size == new_size) /* the empty proof: the same tree */
		return ct_memcmp(old_root, new_root, 32) == 0 ? 0 : AS_ECORRUPT;
	/* RFC 9162 2.1.4.2 steps 2 to 7; a power-of-two old tree is its own first hash. */
	uint64_t fn = old_size - 1, sn = new_size - 1;
	size_t i = 0;
	uint8_t fr[32], sr[32];
	int pow2 = (old_size & (old_size - 1)) == 0;
	memcpy(fr, pow2 ? old_root : path[i++], 32);
	memcpy(sr, fr, 32);
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	for (; i < npath; i++) {
		if (sn == 0)
			return AS_ECORRUPT;
		if ((fn & 1) || fn == sn) {
			merkle_node_hash(path[i], fr, fr);
			merkle_node_hash(path[i], sr, sr);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			merkle_node_hash(sr, path[i], sr);
		}
		fn >>= 1;
		sn >>= 1;
	}
	if (sn != 0)
		return AS_ECORRUPT;
	int ok = ct_memcmp(fr, old_root, 32) == 0;
	ok &= ct_memcmp(sr, new_root, 32) == 0;
	return ok ? 0 : AS_ECORRUPT;
}
