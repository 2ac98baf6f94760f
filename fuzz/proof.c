/* Fuzz target: inclusion proofs as `assent-verify proof --check` reads them (JSON,
 * a base64 entry, a hex path and a signed checkpoint), against one trusted key.
 * Properties: an accepted proof names an index inside its tree, and it is accepted
 * the same way when its own checkpoint is handed in as the independent one. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/eckey.h"
#include "verify/proof.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz/fuzz_key.h"

static void fail(const char *why, const char *err, const uint8_t *data, size_t size)
{
	fprintf(stderr, "proof: property violated: %s\n", why);
	if (err)
		fprintf(stderr, "proof: error was: %.*s\n", AS_ERRLEN, err);
	fprintf(stderr, "input (%zu bytes): %.*s\n", size, size > 2048 ? 2048 : (int)size, (const char *)data);
	abort();
}

static void check_err(const char *err, const uint8_t *data, size_t size)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0)
		fail("proof_check failed without an error message", NULL, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eckey *keys[1] = {fuzz_key()};
	uint64_t idx = 0, sz = 0;
	char err[AS_ERRLEN];
	memset(err, 'X', sizeof err);
	int rc = proof_check(data, size, NULL, 0, keys, 1, &idx, &sz, err);
	if (rc != 0) {
		check_err(err, data, size);
		return 0;
	}
	if (idx >= sz)
		fail("an accepted proof has its index outside its tree", NULL, data, size);

	/* Its own checkpoint, given as the independent one, must be accepted too. */
	json_t *o = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *cs = json_object_get(o, "checkpoint");
	if (!json_is_string(cs))
		fail("an accepted proof has no checkpoint text", NULL, data, size);
	uint64_t idx2 = 0, sz2 = 0;
	memset(err, 'X', sizeof err);
	rc = proof_check(data, size, (const uint8_t *)json_string_value(cs), json_string_length(cs), keys, 1, &idx2,
			 &sz2, err);
	if (rc != 0 || idx2 != idx || sz2 != sz)
		fail("a proof is refused with its own checkpoint given as the independent one", rc ? err : NULL, data,
		     size);
	json_decref(o);
	return 0;
}
