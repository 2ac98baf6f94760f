/* Fuzz target: witness vkeys and cosignature lines (ledger/cosig.c), as assent-verify reads
 * them from --witness, --witness-file and the signature lines of stored checkpoints. The
 * input's first line is a vkey, the rest a signed note.
 * Properties: a vkey that parses is spelled canonically (NAME+KEYIDHEX+base64(0x04 || key))
 * and its key ID is the key's; every refusal has a message; a note cosig_verify accepts has a
 * body ckpt_parse accepts, counts each witness at most once, and has a line named after each
 * witness it counts; ignoring every witness never turns an accepted note into a refused one. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "ledger/cosig.h"
#include "ledger/merkle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tests/vectors/keys/w1.vkey and w2.vkey: the seed corpus carries their cosignatures. */
static const char *const known[] = {
    "witness.example/w1+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr",
    "witness.example/w2+1fcab208+BM8Bp0zdKAYvyw+MuL3lvPIh6d/J8BuYYCKJOyMGBKuj",
};

static void fail(const char *why, const uint8_t *data, size_t size)
{
	fprintf(stderr, "cosig: property violated: %s\ninput (%zu bytes):", why, size);
	for (size_t i = 0; i < size && i < 256; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "%s\n", size > 256 ? " ..." : "");
	abort();
}

static void check_err(const char *err, const uint8_t *data, size_t size)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0)
		fail("refused without an error message", data, size);
}

/* A parsed vkey is spelled as the input, and its key ID is SHA-256(name || "\n" || 0x04 || key)[:4]. */
static void check_vkey(const struct witness *w, const uint8_t *s, size_t n, const uint8_t *data, size_t size)
{
	char hex[9];
	uint8_t in[CKPT_ORIGIN_MAX + 34], h[32], typed[33];
	struct buf b;
	buf_init(&b, COSIG_VKEY_MAX + 1);
	hex_encode(w->id, 4, hex);
	typed[0] = COSIG_TYPE_ED25519;
	memcpy(typed + 1, w->pub, 32);
	if (buf_printf(&b, "%s+%s+", w->name, hex) != 0 || b64_encode(typed, 33, &b) != 0)
		abort();
	if (b.len != n || memcmp(b.p, s, n) != 0)
		fail("witness_parse accepted a vkey that is not spelled canonically", data, size);
	buf_free(&b);
	size_t nl = strlen(w->name);
	memcpy(in, w->name, nl);
	in[nl] = '\n';
	memcpy(in + nl + 1, typed, 33);
	sha256(in, nl + 34, h);
	if (memcmp(h, w->id, 4) != 0)
		fail("witness_parse accepted a key ID that is not the key's", data, size);
}

/* Every witness counted has a line "\n— NAME " in the note. */
static void check_counted(const struct witness *w, size_t nw, const struct cosig_result *r, const uint8_t *note,
			  size_t n, const uint8_t *data, size_t size)
{
	size_t count = 0;
	for (size_t i = 0; i < nw; i++) {
		if (!r->cosigned[i])
			continue;
		count++;
		char needle[8 + CKPT_ORIGIN_MAX];
		int l = snprintf(needle, sizeof needle, "\n\xe2\x80\x94 %s ", w[i].name);
		if (l < 0 || !memmem(note, n, needle, (size_t)l))
			fail("a witness counted without a line named after it", data, size);
	}
	if (count != r->count || r->count > nw)
		fail("the count is not the number of distinct witnesses marked", data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct witness w[3];
	struct cosig_result r;
	struct checkpoint cp;
	char err[AS_ERRLEN];
	for (size_t i = 0; i < 2; i++)
		if (witness_parse(known[i], strlen(known[i]), &w[i], err) != 0)
			abort();
	const uint8_t *nlp = memchr(data, '\n', size);
	size_t vl = nlp ? (size_t)(nlp - data) : size;
	const uint8_t *note = nlp ? nlp + 1 : data + size;
	size_t n = size - (size_t)(note - data);
	size_t nw = 2;

	memset(err, 'X', sizeof err);
	if (witness_parse((const char *)data, vl, &w[2], err) != 0) {
		check_err(err, data, size);
	} else {
		check_vkey(&w[2], data, vl, data, size);
		memset(err, 'X', sizeof err);
		if (witness_set_ok(w, 3, err) == 0)
			nw = 3;
		else
			check_err(err, data, size);
	}

	memset(err, 'X', sizeof err);
	int rc = cosig_verify(note, n, w, nw, &r, err);
	if (rc != 0) {
		check_err(err, data, size);
		if (r.count != 0)
			fail("a refused note reports a count", data, size);
	} else {
		if (ckpt_parse(note, n, &cp, err) != 0)
			fail("cosig_verify accepted a note whose body ckpt_parse refuses", data, size);
		check_counted(w, nw, &r, note, n, data, size);
	}

	memset(err, 'X', sizeof err);
	int rc0 = cosig_verify(note, n, w, 0, &r, err);
	if (rc0 != 0)
		check_err(err, data, size);
	if (rc == 0 && rc0 != 0)
		fail("a note accepted with witnesses is refused with none", data, size);
	if (rc0 == 0 && r.count != 0)
		fail("a note counts cosignatures with no witness given", data, size);
	return 0;
}
