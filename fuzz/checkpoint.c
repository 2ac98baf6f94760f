/* Fuzz target: signed checkpoints (C2SP signed notes), as read from a ledger's
 * checkpoint file, its "checkpoints" database and --trusted files.
 * Properties: parsing is strict (a parsed body has exactly one spelling), a note
 * that verifies parses to the same checkpoint and carries a signature line named
 * after its origin, and no note verifies against an empty key set. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/eckey.h"
#include "ledger/note.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz/fuzz_key.h"

static void fail(const char *why, const uint8_t *data, size_t size)
{
	fprintf(stderr, "checkpoint: property violated: %s\ninput (%zu bytes):", why, size);
	for (size_t i = 0; i < size && i < 256; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "%s\n", size > 256 ? " ..." : "");
	abort();
}

static void check_err(const char *err, const char *fn, const uint8_t *data, size_t size)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0) {
		fprintf(stderr, "checkpoint: %s failed without an error message\n", fn);
		fail("error message missing", data, size);
	}
}

/* A parsed body is spelled "origin\nsize\nbase64(root)\n\n" and nothing else. */
static void check_spelling(const struct checkpoint *c, const uint8_t *data, size_t size)
{
	struct buf b;
	buf_init(&b, CKPT_MAX);
	if (buf_printf(&b, "%s\n%llu\n", c->origin, (unsigned long long)c->size) != 0 ||
	    b64_encode(c->root, 32, &b) != 0 || buf_put(&b, "\n\n", 2) != 0)
		abort();
	if (b.len > size || memcmp(b.p, data, b.len) != 0)
		fail("ckpt_parse accepted a body that is not spelled canonically", data, size);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eckey *keys[1] = {fuzz_key()};
	struct checkpoint parsed, verified, none;
	char err[AS_ERRLEN];
	memset(&parsed, 0, sizeof parsed);
	memset(&verified, 0, sizeof verified);

	memset(err, 'X', sizeof err);
	int rp = ckpt_parse(data, size, &parsed, err);
	if (rp != 0)
		check_err(err, "ckpt_parse", data, size);
	else
		check_spelling(&parsed, data, size);

	memset(err, 'X', sizeof err);
	int rv = ckpt_verify(data, size, keys, 1, &verified, err);
	if (rv != 0)
		check_err(err, "ckpt_verify", data, size);
	if (rv == 0) {
		if (rp != 0)
			fail("ckpt_verify accepts a note ckpt_parse refuses", data, size);
		if (strcmp(parsed.origin, verified.origin) != 0 || parsed.size != verified.size ||
		    memcmp(parsed.root, verified.root, 32) != 0)
			fail("ckpt_verify and ckpt_parse disagree on the checkpoint", data, size);
		/* A verified note has a signature line "— <origin> <base64>". */
		char needle[8 + CKPT_ORIGIN_MAX];
		int nl = snprintf(needle, sizeof needle, "\n\xe2\x80\x94 %s ", verified.origin);
		if (nl < 0 || !memmem(data, size, needle, (size_t)nl))
			fail("ckpt_verify accepts a note without a signature line named after its origin", data, size);
	}

	memset(err, 'X', sizeof err);
	if (ckpt_verify(data, size, keys, 0, &none, err) == 0)
		fail("ckpt_verify accepts a note with no trusted key", data, size);
	check_err(err, "ckpt_verify", data, size);
	return 0;
}
