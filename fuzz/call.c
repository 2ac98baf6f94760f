/* Fuzz target: the gate's canonical call (gateway/proto/call.c), on both sides of it. The
 * first byte chooses:
 *   even: the rest is CBOR as an upstream worker or the signer receives it: decoded and
 *         checked (call_check); what is accepted names a valid upstream and tool, its
 *         arguments (and input) come back as JSON objects, and encoding that again
 *         gives the very bytes accepted (one call, one encoding, one digest);
 *   odd:  the rest is JSON arguments as an agent sends them (with bit 1: an object of
 *         "arguments" and a retry's "input", its inputResponses): what call_encode_input
 *         accepts decodes, passes call_check, and gives back JSON equal to what went in
 *         (reals as the same doubles), so the upstream receives what the agent sent. */
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
	char up[33], tool[CALL_TOOL_MAX + 1], name[CALL_URI_MAX + 1];
	call_names(c, up, tool);
	const char *method = call_method(c);
	int named = !strcmp(method, "tools/call") || !strcmp(method, "prompts/get");
	if (!up_name_ok(up, strlen(up)) || (named && !call_tool_name_ok(tool, strlen(tool))))
		fail("a call accepted with an invalid name", up);
	call_name(c, name, sizeof name);
	json_t *args = call_args_json(c), *input = call_input_json(c);
	if (!json_is_object(args))
		fail("an accepted call's arguments are not an object", NULL);
	if (input && (!named || !json_is_object(input)))
		fail("an accepted call's input is not an object of a tools/call or prompts/get", NULL);
	struct buf b;
	buf_init(&b, CALL_MAX);
	if (call_encode_input(method, up, name[0] ? name : NULL, args, input, &b, err) != 0)
		fail("an accepted call cannot be encoded again", err);
	if (b.len != n || memcmp(b.p, p, n) != 0)
		fail("an accepted call encodes to other bytes", NULL);
	json_decref(input);
	char d1[72], d2[72];
	call_digest(p, n, d1);
	call_digest(b.p, b.len, d2);
	if (strcmp(d1, d2) || strncmp(d1, "sha256:", 7) || strlen(d1) != 71)
		fail("digests differ or are malformed", d1);
	buf_free(&b);
	json_decref(args);
	cv_arena_free(&a);
}

/* with_input: j is {"arguments": ..., "input": ...}, a retry's (SEP-2322) */
static void from_json(const uint8_t *p, size_t n, int with_input)
{
	json_t *j = json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL), *in = NULL;
	if (!j)
		return;
	if (with_input) {
		json_t *o = j;
		j = json_incref(json_object_get(o, "arguments"));
		in = json_incref(json_object_get(o, "input"));
		json_decref(o);
		if (!j || !in) {
			json_decref(j);
			json_decref(in);
			return;
		}
	}
	struct buf b;
	buf_init(&b, CALL_MAX);
	char err[AS_ERRLEN];
	if (call_encode_input("tools/call", "fs", "write_file", j, in, &b, err) != 0) {
		if (json_is_object(j) && !err[0])
			fail("a refusal without a reason", NULL);
		buf_free(&b);
		json_decref(j);
		json_decref(in);
		return;
	}
	if (!json_is_object(j) || (in && !json_is_object(in)))
		fail("arguments or input that are not an object accepted", NULL);
	struct cv_arena a;
	cv_arena_init(&a, b.len + 16);
	struct cv *c;
	if (cbor_decode(b.p, b.len, &a, &c, err) != 0 || call_check(c, err) != 0)
		fail("an encoded call is refused by the other side", err);
	json_t *back = call_args_json(c), *inb = call_input_json(c);
	if (!json_equal(back, j) || (in ? !json_equal(inb, in) : inb != NULL))
		fail("the arguments or the input changed on the way", NULL);
	json_decref(back);
	json_decref(inb);
	json_decref(in);
	cv_arena_free(&a);
	buf_free(&b);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		from_json(data + 1, size - 1, (data[0] & 2) != 0);
	else
		from_cbor(data + 1, size - 1);
	return 0;
}
