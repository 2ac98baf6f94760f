/* Fuzz target: a witness's answer to add-checkpoint, as the jailed notify worker reads it
 * (gateway/worker/notify/wresp.c). The input's first byte picks the HTTP status (200, 409 or
 * another), the rest is the body. The properties: a 200 taken gives at most
 * PROTO_WITNESS_COSIGS_MAX lines, each a name of 1 to 255 printable bytes without space or
 * '+', a timestamp below 2^63, and each line's fields found again in the body as a line of
 * the note signature format (so nothing is invented); a 409 taken gives a size below 2^63
 * whose decimal and a newline are the whole body; another status reads nothing; a refusal
 * says why; the same input gives the same answer again. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gateway/worker/notify/wresp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why)
{
	fprintf(stderr, "witness_resp: property violated: %s\n", why);
	abort();
}

/* The line "\xe2\x80\x94 NAME BASE64(keyid || time || sig)\n" that c says, found in body. */
static void found(const struct wresp_cosig *c, const uint8_t *body, size_t n)
{
	uint8_t blob[76];
	struct buf line;
	memcpy(blob, c->keyid, 4);
	be64_put(blob + 4, c->time);
	memcpy(blob + 12, c->sig, 64);
	buf_init(&line, 512);
	if (buf_printf(&line, "\xe2\x80\x94 %s ", c->name) || b64_encode(blob, sizeof blob, &line) ||
	    buf_putc(&line, '\n'))
		fail("cannot rebuild a line");
	if (!memmem(body, n, line.p, line.len))
		fail("a cosignature's fields are not a line of the body");
	buf_free(&line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int status = data[0] == 0 ? 200 : data[0] == 1 ? 409 : 200 + data[0];
	const uint8_t *body = data + 1;
	size_t n = size - 1;
	static struct wresp r, again;
	char err[AS_ERRLEN] = "", err2[AS_ERRLEN] = "";
	int rc = wresp_parse(status, body, n, &r, err);
	int rc2 = wresp_parse(status, body, n, &again, err2);
	if (rc != rc2 || (rc == 0 && memcmp(&r, &again, sizeof r)) || strcmp(err, err2))
		fail("the same input gave another answer");
	if (rc != 0) {
		if (!err[0])
			fail("a refusal without a reason");
		return 0;
	}
	if (status != 200 && status != 409 && (r.n || r.has_size))
		fail("another status read something");
	if (status == 409) {
		char want[32];
		int k = snprintf(want, sizeof want, "%llu\n", (unsigned long long)r.size);
		if (!r.has_size || r.size > PROTO_WITNESS_SIZE_MAX || (size_t)k != n || memcmp(want, body, n))
			fail("a 409's size is not its whole body");
	}
	if (r.n > PROTO_WITNESS_COSIGS_MAX)
		fail("too many cosignatures");
	for (size_t i = 0; i < r.n; i++) {
		size_t l = strnlen(r.c[i].name, sizeof r.c[i].name);
		if (l == 0 || l > PROTO_WITNESS_NAME_MAX || r.c[i].time > PROTO_WITNESS_SIZE_MAX)
			fail("a cosignature's name or time is out of bounds");
		for (size_t k = 0; k < l; k++)
			if (r.c[i].name[k] < 0x21 || r.c[i].name[k] > 0x7e || r.c[i].name[k] == '+')
				fail("a name with a byte it may not have");
		found(&r.c[i], body, n);
	}
	return 0;
}
