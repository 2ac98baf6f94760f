/* A retained exact call against its ledger entry (exact.h). */
#include "verify/exact.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "common/cvjson.h"
#include "ledger/merkle.h"
#include "common/viewcheck.h"
#include "ledger/entry.h"

int exact_check(const uint8_t *p, size_t n, const char *digest, const struct cv *entry, char *err)
{
	uint8_t d[32];
	char hex[65];
	sha256(p, n, d);
	hex_encode(d, 32, hex);
	if (strlen(digest) != 71 || strncmp(digest, "sha256:", 7) || strcmp(digest + 7, hex))
		return as_fail(err, AS_ECORRUPT, "its bytes hash to sha256:%s, not %.80s", hex, digest);
	struct cv_arena a;
	cv_arena_init(&a, EXACT_FILE_MAX);
	struct cv *call;
	char e2[AS_ERRLEN];
	if (cbor_decode(p, n, &a, &call, e2) != 0 || call->t != CV_MAP) {
		cv_arena_free(&a);
		return as_fail(err, AS_ECORRUPT, "not a canonical call: %s", e2);
	}
	const struct cv *args = cv_get(call, "arguments");
	const struct cv *shown = cv_get(entry, "arguments");
	if (!args || !shown) {
		cv_arena_free(&a);
		return as_fail(err, AS_ECORRUPT, "%s",
			       args ? "its entry has no arguments" : "the call has no arguments");
	}
	/* a call's reals travel as byte strings of their decimal text (gateway/proto/call.h) and
	 * the entry's as text: both read as that text */
	json_t *ej = cv_to_json_with(args, &cvj_context), *vj = cv_to_json(shown);
	int rc = ej && vj ? viewcheck_json(ej, vj, e2) : as_fail(e2, AS_ENOMEM, "out of memory");
	json_decref(ej);
	json_decref(vj);
	/* a retry's answers (MCP 2026-07-28 inputResponses) run with it: shown as its arguments are */
	const struct cv *in = cv_get(call, "input");
	const struct cv *in_shown = cv_get(entry, "input");
	if (rc == 0 && !in != !in_shown)
		rc = as_fail(e2, AS_ECORRUPT, "%s",
			     in ? "the call has input its entry does not show"
				: "its entry shows "
				  "input the call has not");
	if (rc == 0 && in) {
		ej = cv_to_json_with(in, &cvj_context);
		vj = cv_to_json(in_shown);
		rc = ej && vj ? viewcheck_json(ej, vj, e2) : as_fail(e2, AS_ENOMEM, "out of memory");
		json_decref(ej);
		json_decref(vj);
	}
	cv_arena_free(&a);
	return rc ? as_fail(err, rc, "the entry's view is not the call's: %s", e2) : 0;
}

/* The request entry whose action is digest, in the order the ledger holds them: one
 * pass per file is enough for the small number of masked calls a store holds. */
int exact_one(MDB_txn *txn, MDB_dbi ent, const char *path, const char *digest, char *err)
{
	uint8_t *buf = malloc(EXACT_FILE_MAX + 1);
	FILE *f = fopen(path, "rb");
	size_t n = f && buf ? fread(buf, 1, EXACT_FILE_MAX + 1, f) : 0;
	if (f)
		fclose(f);
	int rc = !f || !buf	      ? as_fail(err, AS_EIO, "cannot read it")
		 : n > EXACT_FILE_MAX ? as_fail(err, AS_ECORRUPT, "over %u bytes", EXACT_FILE_MAX)
				      : AS_ECORRUPT;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	struct cv_arena ar;
	cv_arena_init(&ar, ENTRY_MAX);
	if (rc == AS_ECORRUPT && n <= EXACT_FILE_MAX && mdb_cursor_open(txn, ent, &cur) == 0) {
		rc = as_fail(err, AS_ECORRUPT, "no request entry has action %s", digest);
		for (int g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0;
		     g = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			struct cv *e;
			char e2[AS_ERRLEN];
			cv_arena_reset(&ar);
			if (v.mv_size > ENTRY_MAX || cbor_decode(v.mv_data, v.mv_size, &ar, &e, e2) != 0)
				continue; /* `ledger` reports a bad entry; this checks the store */
			if (!cv_text_eq(cv_get(e, "kind"), "request") || !cv_text_eq(cv_get(e, "action"), digest))
				continue;
			rc = exact_check(buf, n, digest, e, err);
			break;
		}
		mdb_cursor_close(cur);
	}
	cv_arena_free(&ar);
	free(buf);
	return rc;
}

/* Every request entry that says its view masked something names a file that is there. */
int exact_missing(MDB_txn *txn, MDB_dbi ent, const char *edir, char *err)
{
	MDB_cursor *cur;
	MDB_val k, v;
	struct cv_arena ar;
	int rc = 0;
	if (mdb_cursor_open(txn, ent, &cur) != 0)
		return as_fail(err, AS_EIO, "cannot read the entries");
	cv_arena_init(&ar, ENTRY_MAX);
	for (int g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0 && !rc; g = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct cv *e;
		char e2[AS_ERRLEN], path[PATH_MAX + 96];
		cv_arena_reset(&ar);
		if (v.mv_size > ENTRY_MAX || cbor_decode(v.mv_data, v.mv_size, &ar, &e, e2) != 0 || k.mv_size != 8)
			continue;
		const struct cv *act = cv_get(e, "action");
		if (!cv_text_eq(cv_get(e, "kind"), "request") || !cv_get(e, "masked") || !act || act->t != CV_TEXT ||
		    act->n != 71)
			continue;
		snprintf(path, sizeof path, "%s/sha256-%.64s.cbor", edir, (const char *)act->s + 7);
		if (access(path, R_OK) != 0)
			rc = as_fail(err, AS_ECORRUPT, "entry %llu masked its view, but its exact call %s is missing",
				     (unsigned long long)be64_get(k.mv_data), path);
	}
	mdb_cursor_close(cur);
	cv_arena_free(&ar);
	return rc;
}
