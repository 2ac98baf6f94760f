/* Fuzz target: consistency proofs as a witness reads them (verify/consist.h): the proof
 * text (one base64 hash a line) and RFC 9162 verification, and consist_check over two
 * checkpoints and a proof. The first byte picks the mode:
 *   'p': 8 + 8 bytes of sizes (big-endian) then a proof text, checked against the true
 *        roots of a synthetic tree of CONSIST_FUZZ_LEAVES leaves. Properties: an accepted
 *        text re-encodes to itself; an accepted proof is the generator's, byte for byte.
 *   'c': old checkpoint, "\n===\n", new checkpoint, "\n===\n", proof, with the fuzz key.
 *        Property: an accepted pair is of one origin and its sizes are in order. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "ledger/merkle.h"
#include "verify/consist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz/fuzz_key.h"

#define CONSIST_FUZZ_LEAVES 4096

static void fail(const char *why, const uint8_t *data, size_t size)
{
	fprintf(stderr, "consistency: property violated: %s\n", why);
	fprintf(stderr, "input (%zu bytes): %.*s\n", size, size > 2048 ? 2048 : (int)size, (const char *)data);
	abort();
}

static const uint8_t (*tree(void))[32]
{
	static uint8_t(*leaves)[32];
	if (!leaves) {
		leaves = malloc(CONSIST_FUZZ_LEAVES * 32);
		if (!leaves)
			abort();
		for (uint64_t i = 0; i < CONSIST_FUZZ_LEAVES; i++) {
			uint8_t b[8];
			be64_put(b, i);
			merkle_leaf_hash(b, 8, leaves[i]);
		}
	}
	return (const uint8_t(*)[32])leaves;
}

static void root(uint64_t n, uint8_t out[32])
{
	struct merkle m;
	merkle_init(&m);
	for (uint64_t i = 0; i < n; i++)
		merkle_append(&m, tree()[i]);
	merkle_root(&m, out);
}

static void proof_mode(const uint8_t *data, size_t size)
{
	uint8_t path[MERKLE_MAX_CONSISTENCY][32], want[MERKLE_MAX_CONSISTENCY][32], ro[32], rn[32];
	size_t np, nw;
	char err[AS_ERRLEN];
	if (size < 16)
		return;
	uint64_t m = be64_get(data), n = be64_get(data + 8);
	if (consist_parse(data + 16, size - 16, path, &np, err) != 0)
		return;
	struct buf again;
	buf_init(&again, CONSIST_TEXT_MAX);
	for (size_t i = 0; i < np; i++)
		if (b64_encode(path[i], 32, &again) != 0 || buf_putc(&again, '\n') != 0)
			fail("cannot re-encode", data, size);
	if (again.len != size - 16 || (again.len && memcmp(again.p, data + 16, again.len) != 0))
		fail("an accepted proof text is not the one encoding of its hashes", data, size);
	buf_free(&again);
	if (m > CONSIST_FUZZ_LEAVES || n > CONSIST_FUZZ_LEAVES)
		return;
	root(m, ro);
	root(n, rn);
	if (merkle_verify_consistency(m, n, ro, rn, (const uint8_t(*)[32])path, np) != 0)
		return;
	if (merkle_consistency_proof(tree(), m, n, want, &nw) != 0 || nw != np || memcmp(want, path, np * 32) != 0)
		fail("a proof other than the generator's is accepted", data, size);
}

static const uint8_t *part(const uint8_t **p, const uint8_t *end, size_t *n)
{
	static const char sep[] = "\n===\n";
	const uint8_t *s = *p, *q = memmem(s, (size_t)(end - s), sep, sizeof sep - 1);
	*n = q ? (size_t)(q - s) : (size_t)(end - s);
	*p = q ? q + sizeof sep - 1 : end;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] == 'p') {
		proof_mode(data + 1, size - 1);
		return 0;
	}
	if (data[0] != 'c')
		return 0;
	const uint8_t *p = data + 1, *end = data + size;
	size_t n1, n2, n3;
	const uint8_t *a = part(&p, end, &n1), *b = part(&p, end, &n2), *c = part(&p, end, &n3);
	struct eckey *keys[1] = {fuzz_key()};
	struct checkpoint o, nw;
	char err[AS_ERRLEN];
	memset(err, 'X', sizeof err);
	if (consist_check(a, n1, b, n2, c, n3, keys, 1, &o, &nw, err) != 0) {
		if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0)
			fail("consist_check failed without an error message", data, size);
		return 0;
	}
	if (strcmp(o.origin, nw.origin) != 0 || o.size == 0 || o.size > nw.size)
		fail("an accepted pair of checkpoints is of two origins or out of order", data, size);
	return 0;
}
