/* Fuzz target: the gate's canonical call (gateway/proto/call.c), on both sides of it. The
 * first byte chooses:
 *   even: the rest is CBOR as an upstream worker or the signer receives it: decoded and
 *         checked (call_check); what is accepted names a valid upstream and tool, its
 *         arguments come back as a JSON object, and encoding that again (call_encode)
 *         gives the very bytes accepted (one call, one encoding, one digest);
 *   odd:  the rest is JSON arguments as an agent sends them: what call_encode accepts
 *         decodes, passes call_check, and gives back JSON equal to what went in (reals
 *         as the same doubles), so the upstream receives what the agent sent. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "gateway/proto/call.h"
#include "include/assent/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "call: property violated: %s: %s\n", why, detail ? detail : "");
	abort();
}

static void from_cbor(const uint8_t *p, size_t n)
{
	struct cv_arena a;
	cv_arena_init(&a, n + 16);
	struct cv *c;
	char err[AS_ERRLEN];
	if (cbor_decode(p, n, &a, &c, err) != 0 || call_check(c, err) != 0) {
		cv_arena_free(&a);
		return;
	}
	char up[33], tool[CALL_TOOL_MAX + 1];
	call_names(c, up, tool);
	if (!up_name_ok(up, strlen(up)) || !call_tool_name_ok(tool, strlen(tool)))
		fail("a call accepted with an invalid name", up);
	json_t *args = call_args_json(c);
	if (!json_is_object(args))
		fail("an accepted call's arguments are not an object", NULL);
	struct buf b;
	buf_init(&b, CALL_MAX);
	if (call_encode(up, tool, args, &b, err) != 0)
		fail("an accepted call cannot be encoded again", err);
	if (b.len != n || memcmp(b.p, p, n) != 0)
		fail("an accepted call encodes to other bytes", NULL);
	char d1[72], d2[72];
	call_digest(p, n, d1);
	call_digest(b.p, b.len, d2);
	if (strcmp(d1, d2) || strncmp(d1, "sha256:", 7) || strlen(d1) != 71)
		fail("digests differ or are malformed", d1);
	buf_free(&b);
	json_decref(args);
	cv_arena_free(&a);
}

static void from_json(const uint8_t *p, size_t n)
{
	json_t *j = json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL);
	if (!j)
		return;
	struct buf b;
	buf_init(&b, CALL_MAX);
	char err[AS_ERRLEN];
	if (call_encode("fs", "write_file", j, &b, err) != 0) {
		if (json_is_object(j) && !err[0])
			fail("a refusal without a reason", NULL);
		buf_free(&b);
		json_decref(j);
		return;
	}
	if (!json_is_object(j))
		fail("arguments that are not an object accepted", NULL);
	struct cv_arena a;
	cv_arena_init(&a, b.len + 16);
	struct cv *c;
	if (cbor_decode(b.p, b.len, &a, &c, err) != 0 || call_check(c, err) != 0)
		fail("an encoded call is refused by the other side", err);
	json_t *back = call_args_json(c);
	if (!json_equal(back, j))
		fail("the arguments changed on the way", NULL);
	json_decref(back);
	cv_arena_free(&a);
	buf_free(&b);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		from_json(data + 1, size - 1);
	else
		from_cbor(data + 1, size - 1);
	return 0;
}
