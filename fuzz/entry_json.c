/* Fuzz target: one JSON line of `assent ledger append`, through the same steps
 * (gateway/cli/cmd_ledger.c line_to_cbor, then ledger_append): JSON to CBOR fields, the
 * canonical encoding the tool hands to ledger_append, and the entry built from it.
 * Properties: whatever the tool's check accepts, ledger_append accepts too, and
 * the entry it writes is canonical and passes entry_check (so a verifier never
 * finds a freshly appended entry damaged). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "ledger/entry.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why, const char *err, const uint8_t *data, size_t size)
{
	fprintf(stderr, "entry_json: property violated: %s\n", why);
	if (err)
		fprintf(stderr, "entry_json: error was: %.*s\n", AS_ERRLEN, err);
	fprintf(stderr, "input (%zu bytes): %.*s\n", size, size > 2048 ? 2048 : (int)size, (const char *)data);
	abort();
}

static void check_err(const char *err, const char *fn, const uint8_t *data, size_t size)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 'X' || err[0] == 0) {
		fprintf(stderr, "entry_json: %s failed without an error message\n", fn);
		fail("error message missing", NULL, data, size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t zero[32];
	json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!j)
		return 0;
	if (!json_is_object(j)) { /* the tool refuses these before converting */
		json_decref(j);
		return 0;
	}
	struct cv_arena a, a2;
	struct buf fields, entry, entry2;
	struct cv *v = NULL, *f2 = NULL, *e = NULL;
	char err[AS_ERRLEN];
	cv_arena_init(&a, ENTRY_MAX);
	cv_arena_init(&a2, ENTRY_MAX);
	buf_init(&fields, ENTRY_MAX);
	buf_init(&entry, ENTRY_MAX + 256);
	buf_init(&entry2, ENTRY_MAX + 256);

	/* The tool's check: convert, encode the fields, build a trial entry. */
	memset(err, 'X', sizeof err);
	int rc = cv_from_json(&a, j, &v, err);
	if (rc != 0)
		check_err(err, "cv_from_json", data, size);
	if (rc == 0 && (memset(err, 'X', sizeof err), rc = cbor_encode(v, &fields, err)) != 0)
		check_err(err, "cbor_encode", data, size);
	if (rc == 0 && (memset(err, 'X', sizeof err), rc = entry_build(v, 0, 0, zero, &entry, err)) != 0)
		check_err(err, "entry_build", data, size);
	if (rc != 0)
		goto out;

	/* ledger_append: decode the fields the tool handed over and build the entry from them. */
	if (cbor_decode(fields.p, fields.len, &a2, &f2, err) != 0)
		fail("ledger_append cannot decode fields the append tool accepted", err, data, size);
	if (entry_build(f2, 0, 0, zero, &entry2, err) != 0)
		fail("ledger_append refuses fields the append tool accepted", err, data, size);
	if (entry2.len != entry.len || memcmp(entry2.p, entry.p, entry.len) != 0)
		fail("the entry built from the decoded fields differs from the tool's trial entry", NULL, data, size);

	/* What is stored must read back as a valid entry. */
	cv_arena_reset(&a2);
	if (cbor_decode(entry.p, entry.len, &a2, &e, err) != 0)
		fail("a built entry does not decode", err, data, size);
	if (entry_check(e, 0, zero, err) != 0)
		fail("a built entry fails entry_check", err, data, size);
out:
	buf_free(&fields);
	buf_free(&entry);
	buf_free(&entry2);
	cv_arena_free(&a);
	cv_arena_free(&a2);
	json_decref(j);
	return 0;
}
