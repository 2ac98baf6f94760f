/* Unit tests for ledger/merkle.c against a naive RFC 9162 reference written here:
 * roots, inclusion and consistency proofs (and their refusal when anything is altered),
 * state serialisation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mbedtls/sha256.h>

#include "include/assent/err.h"
#include "ledger/merkle.h"

#define MAXLEAVES 4200

static uint8_t (*leaves)[32];	 /* leaf hashes 0..MAXLEAVES-1, from the reference */
static uint8_t (*ref_roots)[32]; /* ref_roots[n] = MTH of the first n leaves, computed when first needed */
static uint8_t *have_root;

/* ---- reference, straight from RFC 9162 section 2.1 (hashing done here with mbedTLS) ---- */

static void ref_sha(const uint8_t *d, size_t n, uint8_t out[32])
{
	mbedtls_sha256_ret(d, n, out, 0);
}

static void ref_leaf(const void *d, size_t n, uint8_t out[32])
{
	uint8_t b[64];
	assert_true(n < sizeof b);
	b[0] = 0;
	memcpy(b + 1, d, n);
	ref_sha(b, n + 1, out);
}

static void ref_node(const uint8_t l[32], const uint8_t r[32], uint8_t out[32])
{
	uint8_t b[65];
	b[0] = 1;
	memcpy(b + 1, l, 32);
	memcpy(b + 33, r, 32);
	ref_sha(b, 65, out);
}

static uint64_t ref_split(uint64_t n) /* largest power of two < n */
{
	uint64_t k = 1;
	while (2 * k < n)
		k *= 2;
	return k;
}

/* MTH(D[n]) */
static void ref_mth(const uint8_t (*d)[32], uint64_t n, uint8_t out[32])
{
	if (n == 0) {
		ref_sha((const uint8_t *)"", 0, out);
		return;
	}
	if (n == 1) {
		memcpy(out, d[0], 32);
		return;
	}
	uint64_t k = ref_split(n);
	uint8_t l[32], r[32];
	ref_mth(d, k, l);
	ref_mth(d + k, n - k, r);
	ref_node(l, r, out);
}

/* PATH(m, D[n]); dir[i] = 1 when path[i] is the right sibling. */
static void ref_path(uint64_t m, const uint8_t (*d)[32], uint64_t n, uint8_t (*path)[32], int *dir, size_t *np)
{
	if (n == 1) {
		*np = 0;
		return;
	}
	uint64_t k = ref_split(n);
	if (m < k) {
		ref_path(m, d, k, path, dir, np);
		ref_mth(d + k, n - k, path[*np]);
		dir[*np] = 1;
	} else {
		ref_path(m - k, d + k, n - k, path, dir, np);
		ref_mth(d, k, path[*np]);
		dir[*np] = 0;
	}
	(*np)++;
}

/* The left/right pattern of PATH(m, D[n]) without hashing. */
static void ref_shape(uint64_t m, uint64_t n, int *dir, size_t *np)
{
	if (n == 1) {
		*np = 0;
		return;
	}
	uint64_t k = ref_split(n);
	if (m < k) {
		ref_shape(m, k, dir, np);
		dir[*np] = 1;
	} else {
		ref_shape(m - k, n - k, dir, np);
		dir[*np] = 0;
	}
	(*np)++;
}

static void ref_root(uint64_t n, uint8_t out[32])
{
	assert_true(n <= MAXLEAVES);
	if (!have_root[n]) {
		ref_mth((const uint8_t(*)[32])leaves, n, ref_roots[n]);
		have_root[n] = 1;
	}
	memcpy(out, ref_roots[n], 32);
}

static int same_shape(uint64_t m1, uint64_t n1, uint64_t m2, uint64_t n2)
{
	int d1[70], d2[70];
	size_t a, b;
	ref_shape(m1, n1, d1, &a);
	ref_shape(m2, n2, d2, &b);
	return a == b && memcmp(d1, d2, a * sizeof d1[0]) == 0;
}

static void unhex32(const char *h, uint8_t out[32])
{
	for (int i = 0; i < 32; i++) {
		unsigned v;
		assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static int setup(void **state)
{
	(void)state;
	leaves = calloc(MAXLEAVES, 32);
	ref_roots = calloc(MAXLEAVES + 1, 32);
	have_root = calloc(MAXLEAVES + 1, 1);
	if (!leaves || !ref_roots || !have_root)
		return -1;
	for (uint32_t i = 0; i < MAXLEAVES; i++) {
		uint8_t d[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
		ref_leaf(d, 4, leaves[i]);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(leaves);
	free(ref_roots);
	free(have_root);
	return 0;
}

/* ---- hashes ---- */

static void test_empty_root(void **state)
{
	(void)state;
	struct merkle m;
	uint8_t root[32], want[32];
	merkle_init(&m);
	memset(root, 0xaa, sizeof root);
	merkle_root(&m, root);
	unhex32("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", want);
	assert_memory_equal(root, want, 32);
	sha256("", 0, root);
	assert_memory_equal(root, want, 32);
}

static void test_leaf_and_node_hash(void **state)
{
	(void)state;
	uint8_t h[32], want[32];
	/* RFC 6962 test vector: the leaf hash of the empty string */
	merkle_leaf_hash("", 0, h);
	unhex32("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d", want);
	assert_memory_equal(h, want, 32);
	for (int n = 0; n < 40; n++) {
		uint8_t d[40];
		for (int i = 0; i < n; i++)
			d[i] = (uint8_t)(i * 7 + n);
		merkle_leaf_hash(d, (size_t)n, h);
		ref_leaf(d, (size_t)n, want);
		assert_memory_equal(h, want, 32);
	}
	merkle_node_hash(leaves[0], leaves[1], h);
	ref_node(leaves[0], leaves[1], want);
	assert_memory_equal(h, want, 32);
	merkle_node_hash(leaves[1], leaves[0], h); /* order matters */
	assert_memory_not_equal(h, want, 32);
	/* the output may alias an input, as merkle_append relies on */
	memcpy(h, leaves[2], 32);
	merkle_node_hash(leaves[3], h, h);
	ref_node(leaves[3], leaves[2], want);
	assert_memory_equal(h, want, 32);
}

/* The Merkle tree test vectors of RFC 6962's reference implementation. */
static void test_rfc6962_vectors(void **state)
{
	(void)state;
	static const char *const data[8] = {
	    "", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"};
	static const char *const roots[8] = {
	    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	};
	struct merkle m;
	merkle_init(&m);
	for (int i = 0; i < 8; i++) {
		uint8_t d[16], leaf[32], root[32], want[32];
		size_t n = strlen(data[i]) / 2;
		for (size_t j = 0; j < n; j++) {
			unsigned v;
			assert_int_equal(sscanf(data[i] + 2 * j, "%2x", &v), 1);
			d[j] = (uint8_t)v;
		}
		merkle_leaf_hash(d, n, leaf);
		merkle_append(&m, leaf);
		assert_int_equal(m.size, (uint64_t)i + 1);
		merkle_root(&m, root);
		unhex32(roots[i], want);
		if (memcmp(root, want, 32) != 0)
			fail_msg("root of the first %d test leaves differs from RFC 6962's", i + 1);
	}
}

static void test_root_matches_reference(void **state)
{
	(void)state;
	static const uint64_t big[] = {127, 128, 129, 255, 256, 257, 511, 1000, 1023, 1024, 1025, 2047, 4096, 4097};
	struct merkle m;
	uint8_t got[32], want[32];
	merkle_init(&m);
	size_t bi = 0;
	for (uint64_t n = 0; n <= 4097; n++) {
		if (n > 0)
			merkle_append(&m, leaves[n - 1]);
		assert_int_equal(m.size, n);
		int check = n <= 70;
		if (bi < sizeof big / sizeof big[0] && big[bi] == n) {
			check = 1;
			bi++;
		}
		if (!check)
			continue;
		merkle_root(&m, got);
		ref_mth(leaves, n, want);
		if (memcmp(got, want, 32) != 0)
			fail_msg("root after %llu appends differs from the RFC 9162 MTH", (unsigned long long)n);
		/* merkle_root does not change the state */
		merkle_root(&m, got);
		assert_memory_equal(got, want, 32);
	}
	assert_int_equal(bi, sizeof big / sizeof big[0]);
}

/* ---- inclusion proofs ---- */

struct pair {
	uint64_t size, index;
};

/* sizes 1..70 with every index, then a few larger trees */
static size_t make_pairs(struct pair *p, size_t max)
{
	size_t n = 0;
	for (uint64_t s = 1; s <= 70; s++)
		for (uint64_t i = 0; i < s; i++)
			if (n < max)
				p[n++] = (struct pair){s, i};
	static const uint64_t sizes[] = {127, 128, 129, 1000, 1024, 1025, 4097};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint64_t s = sizes[k];
		const uint64_t idx[] = {0, 1, s / 2, s / 2 + 1, s - 2, s - 1, 63, 64};
		for (size_t j = 0; j < sizeof idx / sizeof idx[0]; j++)
			if (idx[j] < s && n < max)
				p[n++] = (struct pair){s, idx[j]};
	}
	return n;
}

static void test_inclusion_proofs_match_reference(void **state)
{
	(void)state;
	static struct pair pairs[3000];
	size_t np = make_pairs(pairs, 3000);
	assert_true(np > 2485);
	for (size_t k = 0; k < np; k++) {
		uint64_t s = pairs[k].size, i = pairs[k].index;
		uint8_t path[MERKLE_MAX_PROOF][32], rpath[MERKLE_MAX_PROOF][32], root[32];
		int dir[MERKLE_MAX_PROOF];
		size_t n = 999, rn = 0;
		assert_int_equal(merkle_inclusion_proof((const uint8_t(*)[32])leaves, s, i, path, &n), 0);
		ref_path(i, (const uint8_t(*)[32])leaves, s, rpath, dir, &rn);
		if (n != rn || memcmp(path, rpath, 32 * n) != 0)
			fail_msg("proof for index %llu of size %llu differs from RFC 9162 PATH", (unsigned long long)i,
				 (unsigned long long)s);
		ref_root(s, root);
		if (merkle_verify_inclusion(i, s, leaves[i], (const uint8_t(*)[32])path, n, root) != 0)
			fail_msg("valid proof for index %llu of size %llu refused", (unsigned long long)i,
				 (unsigned long long)s);
	}
}

static void tamper_one(uint64_t s, uint64_t i)
{
	uint8_t path[MERKLE_MAX_PROOF + 1][32], root[32], leaf[32];
	size_t n = 0;
	char what[160] = "";
	assert_int_equal(merkle_inclusion_proof((const uint8_t(*)[32])leaves, s, i, path, &n), 0);
	ref_root(s, root);
	memcpy(leaf, leaves[i], 32);
#define PATH ((const uint8_t(*)[32])path)
	assert_int_equal(merkle_verify_inclusion(i, s, leaf, PATH, n, root), 0);
	/* every byte of every path element, leaf and root for small trees; three bytes of
	 * each otherwise (keeps the suite fast under the sanitizers) */
	int step = s <= 16 ? 1 : 15;
	for (size_t e = 0; e < n && !what[0]; e++)
		for (int b = 0; b < 32 && !what[0]; b += step) {
			path[e][b] ^= 0x01;
			if (merkle_verify_inclusion(i, s, leaf, PATH, n, root) != AS_ECORRUPT)
				snprintf(what, sizeof what, "byte %d of path element %zu", b, e);
			path[e][b] ^= 0x01;
		}
	for (int b = 0; b < 32 && !what[0]; b += step) {
		leaf[b] ^= 0x80;
		if (merkle_verify_inclusion(i, s, leaf, PATH, n, root) != AS_ECORRUPT)
			snprintf(what, sizeof what, "byte %d of the leaf", b);
		leaf[b] ^= 0x80;
		root[b] ^= 0x80;
		if (merkle_verify_inclusion(i, s, leaf, PATH, n, root) != AS_ECORRUPT)
			snprintf(what, sizeof what, "byte %d of the root", b);
		root[b] ^= 0x80;
	}
	/* truncated and extended paths */
	for (size_t t = 0; t < n && !what[0]; t++)
		if (merkle_verify_inclusion(i, s, leaf, PATH, t, root) != AS_ECORRUPT)
			snprintf(what, sizeof what, "path truncated to %zu of %zu", t, n);
	memcpy(path[n], leaves[0], 32);
	if (!what[0] && merkle_verify_inclusion(i, s, leaf, PATH, n + 1, root) != AS_ECORRUPT)
		snprintf(what, sizeof what, "path extended by one element");
	if (n > 0) {
		memcpy(path[n], path[n - 1], 32);
		if (!what[0] && merkle_verify_inclusion(i, s, leaf, PATH, n + 1, root) != AS_ECORRUPT)
			snprintf(what, sizeof what, "path extended by repeating its last element");
	}
	/* Another index or size: refused unless it walks the tree the same way (then the
	 * computation is identical, e.g. index 0 of size 3 and of size 4, and RFC 9162's
	 * algorithm accepts it: the root, not the size, pins the tree). */
	/* candidates: everything below 80, and around i and s in large trees */
	for (uint64_t x = 0; x < 80 + 2 * 20 && !what[0]; x++) {
		uint64_t i2 = x < 80 ? x : x < 100 ? i + x - 90 : s + x - 110;
		if (i2 == i || (x >= 80 && s <= 70) || i2 > s + 9)
			continue;
		int want = i2 < s && same_shape(i, s, i2, s) ? 0 : AS_ECORRUPT;
		if (merkle_verify_inclusion(i2, s, leaf, PATH, n, root) != want)
			snprintf(what, sizeof what, "index changed to %llu (%s)", (unsigned long long)i2,
				 want ? "accepted" : "refused");
		uint64_t s2 = i2;
		if (s2 == s)
			continue;
		want = i < s2 && same_shape(i, s, i, s2) ? 0 : AS_ECORRUPT;
		if (merkle_verify_inclusion(i, s2, leaf, PATH, n, root) != want)
			snprintf(what, sizeof what, "size changed to %llu (%s)", (unsigned long long)s2,
				 want ? "accepted" : "refused");
	}
	if (merkle_verify_inclusion(i, UINT64_MAX, leaf, PATH, n, root) != AS_ECORRUPT)
		snprintf(what, sizeof what, "size changed to 2^64-1");
#undef PATH
	if (what[0])
		fail_msg("proof for index %llu of size %llu: wrong verdict with %s", (unsigned long long)i,
			 (unsigned long long)s, what);
}

static void test_inclusion_refuses_alterations(void **state)
{
	(void)state;
	static struct pair pairs[3000];
	size_t np = make_pairs(pairs, 3000);
	for (size_t k = 0; k < np; k++)
		tamper_one(pairs[k].size, pairs[k].index);
}

/* The shape rule above is not vacuous: some other sizes must be accepted, most refused. */
static void test_inclusion_size_not_bound_by_path(void **state)
{
	(void)state;
	uint8_t path[MERKLE_MAX_PROOF][32], root[32];
	size_t n;
	assert_int_equal(merkle_inclusion_proof((const uint8_t(*)[32])leaves, 3, 0, path, &n), 0);
	assert_int_equal(n, 2);
	ref_mth(leaves, 3, root);
	assert_int_equal(merkle_verify_inclusion(0, 4, leaves[0], (const uint8_t(*)[32])path, n, root), 0);
	assert_int_equal(merkle_verify_inclusion(0, 5, leaves[0], (const uint8_t(*)[32])path, n, root), AS_ECORRUPT);
	assert_int_equal(merkle_verify_inclusion(0, 2, leaves[0], (const uint8_t(*)[32])path, n, root), AS_ECORRUPT);
}

static void test_inclusion_bad_arguments(void **state)
{
	(void)state;
	uint8_t path[MERKLE_MAX_PROOF][32], root[32];
	size_t n = 0;
	assert_int_equal(merkle_inclusion_proof((const uint8_t(*)[32])leaves, 5, 5, path, &n), AS_EINVAL);
	assert_int_equal(merkle_inclusion_proof((const uint8_t(*)[32])leaves, 0, 0, path, &n), AS_EINVAL);
	/* a tree of one leaf: empty path, the root is the leaf */
	assert_int_equal(merkle_inclusion_proof((const uint8_t(*)[32])leaves, 1, 0, path, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(merkle_verify_inclusion(0, 1, leaves[0], (const uint8_t(*)[32])path, 0, leaves[0]), 0);
	assert_int_equal(merkle_verify_inclusion(0, 1, leaves[0], (const uint8_t(*)[32])path, 0, leaves[1]),
			 AS_ECORRUPT);
	ref_mth(leaves, 0, root);
	assert_int_equal(merkle_verify_inclusion(0, 0, leaves[0], (const uint8_t(*)[32])path, 0, root), AS_ECORRUPT);
}

/* ---- state serialisation ---- */

static int popcount64(uint64_t x)
{
	int c = 0;
	for (; x; x &= x - 1)
		c++;
	return c;
}

static void test_serialize_roundtrip(void **state)
{
	(void)state;
	struct merkle m, m2;
	uint8_t ser[8 + 64 * 32], r1[32], r2[32];
	merkle_init(&m);
	for (uint64_t n = 0; n <= 300; n++) {
		if (n > 0)
			merkle_append(&m, leaves[n - 1]);
		size_t len = merkle_serialize(&m, ser);
		assert_int_equal(len, 8 + 32 * (size_t)popcount64(n));
		/* big-endian size first */
		for (int b = 0; b < 8; b++)
			assert_int_equal(ser[b], (uint8_t)(n >> (56 - 8 * b)));
		memset(&m2, 0x5a, sizeof m2);
		assert_int_equal(merkle_deserialize(&m2, ser, len), 0);
		assert_int_equal(m2.size, n);
		merkle_root(&m, r1);
		merkle_root(&m2, r2);
		assert_memory_equal(r1, r2, 32);
		if (n % 37 == 0) {
			/* the restored state keeps growing into the same tree */
			struct merkle a = m, b = m2;
			for (uint64_t k = n; k < n + 20; k++) {
				merkle_append(&a, leaves[k]);
				merkle_append(&b, leaves[k]);
			}
			merkle_root(&a, r1);
			merkle_root(&b, r2);
			assert_memory_equal(r1, r2, 32);
			ref_mth(leaves, n + 20, r2);
			assert_memory_equal(r1, r2, 32);
		}
	}
}

static void test_deserialize_rejects_wrong_lengths(void **state)
{
	(void)state;
	struct merkle m, m2;
	uint8_t ser[8 + 64 * 32 + 64];
	merkle_init(&m);
	for (int i = 0; i < 11; i++) /* size 11 = 0b1011: three subtrees */
		merkle_append(&m, leaves[i]);
	size_t len = merkle_serialize(&m, ser);
	assert_int_equal(len, 8 + 3 * 32);
	memset(ser + len, 0, 64);
	assert_int_equal(merkle_deserialize(&m2, ser, len), 0);
	for (size_t l = 0; l < len + 64; l++) {
		if (l == len)
			continue;
		if (merkle_deserialize(&m2, ser, l) != AS_ECORRUPT)
			fail_msg("deserialize accepted %zu bytes for a state of %zu", l, len);
	}
	/* a size field that does not match the number of hashes that follow */
	uint8_t alt[sizeof ser];
	memcpy(alt, ser, sizeof ser);
	alt[7] = 12; /* 0b1100: two hashes, but three follow */
	assert_int_equal(merkle_deserialize(&m2, alt, len), AS_ECORRUPT);
	alt[7] = 15; /* four hashes wanted, three given */
	assert_int_equal(merkle_deserialize(&m2, alt, len), AS_ECORRUPT);
	memset(alt, 0xff, 8); /* 2^64-1 leaves: 64 hashes */
	assert_int_equal(merkle_deserialize(&m2, alt, len), AS_ECORRUPT);
	memset(alt, 0, 8); /* the empty tree is 8 bytes exactly */
	assert_int_equal(merkle_deserialize(&m2, alt, 8), 0);
	assert_int_equal(m2.size, 0);
	assert_int_equal(merkle_deserialize(&m2, alt, 40), AS_ECORRUPT);
}

/* ---- consistency proofs ---- */

/* SUBPROOF(m, D[n], b) of RFC 9162 2.1.4.1, recursive as written there. */
static void ref_subproof(uint64_t m, const uint8_t (*d)[32], uint64_t n, int b, uint8_t (*out)[32], size_t *np)
{
	if (m == n) {
		if (!b)
			ref_mth(d, n, out[(*np)++]);
		return;
	}
	uint64_t k = ref_split(n);
	if (m <= k) {
		ref_subproof(m, d, k, b, out, np);
		ref_mth(d + k, n - k, out[(*np)++]);
	} else {
		ref_subproof(m - k, d + k, n - k, 0, out, np);
		ref_mth(d, k, out[(*np)++]);
	}
}

static int verify_c(uint64_t m, uint64_t n, const uint8_t a[32], const uint8_t b[32], uint8_t (*p)[32], size_t np)
{
	return merkle_verify_consistency(m, n, a, b, (const uint8_t(*)[32])p, np);
}

/* Every pair of sizes up to 64: the proof is the RFC's, it verifies, and altering a bit
 * of it, its length or its roots makes it refused. (Its sizes are bound by the signed
 * checkpoints, not the hashes: test_consistency_size_not_bound_by_path.) */
static void test_consistency_all_small(void **state)
{
	(void)state;
	const uint8_t(*lv)[32] = (const uint8_t(*)[32])leaves;
	for (uint64_t n = 1; n <= 64; n++) {
		for (uint64_t m = 1; m <= n; m++) {
			uint8_t p[MERKLE_MAX_CONSISTENCY + 1][32], want[MERKLE_MAX_CONSISTENCY][32], ra[32], rb[32];
			size_t np = 99, nw = 0;
			ref_subproof(m, lv, n, 1, want, &nw);
			assert_int_equal(merkle_consistency_proof(lv, m, n, p, &np), 0);
			assert_int_equal(np, nw);
			assert_int_equal(merkle_consistency_len(m, n), (int)nw);
			assert_memory_equal(p, want, np * 32);
			ref_root(m, ra);
			ref_root(n, rb);
			assert_int_equal(verify_c(m, n, ra, rb, p, np), 0);
			/* every bit up to 32 leaves; past that every ninth (each byte, a different bit),
			 * which keeps the test at a second instead of ten */
			int step = n <= 32 ? 1 : 9;
			for (size_t i = 0; i < np; i++)
				for (int bit = 0; bit < 256; bit += step) {
					p[i][bit / 8] ^= (uint8_t)(1u << (bit % 8));
					assert_int_equal(verify_c(m, n, ra, rb, p, np), AS_ECORRUPT);
					p[i][bit / 8] ^= (uint8_t)(1u << (bit % 8));
				}
			if (np) /* one hash short, or the first dropped */
				assert_int_equal(verify_c(m, n, ra, rb, p, np - 1), AS_ECORRUPT);
			if (np > 1)
				assert_int_equal(verify_c(m, n, ra, rb, p + 1, np - 1), AS_ECORRUPT);
			memcpy(p[np], p[0], 32); /* one hash too many */
			assert_int_equal(verify_c(m, n, ra, rb, p, np + 1), AS_ECORRUPT);
			if (m == n) /* the same tree: roots must be equal */
				continue;
			assert_int_equal(verify_c(m, n, rb, ra, p, np), AS_ECORRUPT);
			assert_int_equal(verify_c(m, n, ra, ra, p, np), AS_ECORRUPT);
			assert_int_equal(verify_c(m, n, rb, rb, p, np), AS_ECORRUPT);
		}
	}
}

/* Larger trees, sampled: the same against the reference. */
static void test_consistency_sampled(void **state)
{
	(void)state;
	const uint8_t(*lv)[32] = (const uint8_t(*)[32])leaves;
	uint64_t x = 88172645463325252ull;
	for (int t = 0; t < 400; t++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		uint64_t n = 1 + x % MAXLEAVES, m = 1 + (x >> 20) % n;
		uint8_t p[MERKLE_MAX_CONSISTENCY][32], want[MERKLE_MAX_CONSISTENCY][32], ra[32], rb[32];
		size_t np, nw = 0;
		ref_subproof(m, lv, n, 1, want, &nw);
		assert_int_equal(merkle_consistency_proof(lv, m, n, p, &np), 0);
		assert_int_equal(np, nw);
		assert_memory_equal(p, want, np * 32);
		ref_root(m, ra);
		ref_root(n, rb);
		assert_int_equal(verify_c(m, n, ra, rb, p, np), 0);
		if (np) {
			p[np - 1][31] ^= 1;
			assert_int_equal(verify_c(m, n, ra, rb, p, np), AS_ECORRUPT);
		}
	}
}

static void test_consistency_bad_arguments(void **state)
{
	(void)state;
	const uint8_t(*lv)[32] = (const uint8_t(*)[32])leaves;
	uint8_t p[MERKLE_MAX_CONSISTENCY][32], r[32];
	size_t np;
	ref_root(5, r);
	assert_int_equal(merkle_consistency_proof(lv, 0, 5, p, &np), AS_EINVAL);
	assert_int_equal(merkle_consistency_proof(lv, 6, 5, p, &np), AS_EINVAL);
	assert_int_equal(merkle_consistency_len(0, 5), -1);
	assert_int_equal(merkle_consistency_len(6, 5), -1);
	assert_int_equal(merkle_consistency_len(5, 5), 0);
	/* the empty tree is no old tree; a size past the limit gets no proof */
	assert_int_equal(verify_c(0, 5, r, r, p, 0), AS_ECORRUPT);
	assert_int_equal(verify_c(6, 5, r, r, p, 3), AS_ECORRUPT);
	assert_int_equal(merkle_consistency_len(3, UINT64_MAX), -1);
	assert_true(merkle_consistency_len(3, 1ull << 63) <= MERKLE_MAX_CONSISTENCY);
	/* equal sizes: the empty proof and equal roots, nothing else */
	assert_int_equal(verify_c(5, 5, r, r, p, 0), 0);
	memcpy(p[0], r, 32);
	assert_int_equal(verify_c(5, 5, r, r, p, 1), AS_ECORRUPT);
	uint8_t r2[32];
	ref_root(4, r2);
	assert_int_equal(verify_c(5, 5, r, r2, p, 0), AS_ECORRUPT);
	/* an empty proof between different sizes */
	assert_int_equal(verify_c(4, 5, r2, r, p, 0), AS_ECORRUPT);
}

/* As with inclusion proofs, the hashes do not commit to the new size: the proof from 2 to
 * 3 (one hash, leaf 2) also leads to the size-3 root when called a proof from 2 to 4, since
 * a lone right subtree hashes to itself. What binds the sizes is the checkpoints' signature
 * over size and root together, which the callers check (verify/consist.c). */
static void test_consistency_size_not_bound_by_path(void **state)
{
	(void)state;
	const uint8_t(*lv)[32] = (const uint8_t(*)[32])leaves;
	uint8_t p[MERKLE_MAX_CONSISTENCY][32], r2[32], r3[32];
	size_t np;
	assert_int_equal(merkle_consistency_proof(lv, 2, 3, p, &np), 0);
	ref_root(2, r2);
	ref_root(3, r3);
	assert_int_equal(verify_c(2, 4, r2, r3, p, np), 0);
	uint8_t r4[32];
	ref_root(4, r4);
	assert_int_equal(verify_c(2, 4, r2, r4, p, np), AS_ECORRUPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_root),
	    cmocka_unit_test(test_leaf_and_node_hash),
	    cmocka_unit_test(test_rfc6962_vectors),
	    cmocka_unit_test(test_root_matches_reference),
	    cmocka_unit_test(test_inclusion_proofs_match_reference),
	    cmocka_unit_test(test_inclusion_refuses_alterations),
	    cmocka_unit_test(test_inclusion_size_not_bound_by_path),
	    cmocka_unit_test(test_inclusion_bad_arguments),
	    cmocka_unit_test(test_serialize_roundtrip),
	    cmocka_unit_test(test_deserialize_rejects_wrong_lengths),
	    cmocka_unit_test(test_consistency_all_small),
	    cmocka_unit_test(test_consistency_sampled),
	    cmocka_unit_test(test_consistency_bad_arguments),
	    cmocka_unit_test(test_consistency_size_not_bound_by_path),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
