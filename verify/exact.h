/* A retained exact call against its ledger entry (issue 28): STATE/exact/sha256-HEX.cbor
 * holds the canonical call of a gated call whose view masked something; the ledger's
 * request entry holds its digest (action) and the view (arguments). Verify-only. */
#ifndef ASSENT_VERIFY_EXACT_H
#define ASSENT_VERIFY_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include <lmdb.h>

#include "common/cbor.h"

#define EXACT_FILE_MAX (512u << 10) /* a call's bound (CALL_MAX) */

/* 0 when the bytes p[0..n) hash to digest ("sha256:HEX"), decode as one canonical call
 * map, and the entry's view arguments show every character of its arguments but in
 * marks that say how much they hide (common/viewcheck.h). Else AS_ECORRUPT and err. */
int exact_check(const uint8_t *p, size_t n, const char *digest, const struct cv *entry, char *err);

/* The file at path against the request entry of the ledger whose action is digest. */
int exact_one(MDB_txn *txn, MDB_dbi ent, const char *path, const char *digest, char *err);

/* 0 when every request entry that masked its view has its file in edir. */
int exact_missing(MDB_txn *txn, MDB_dbi ent, const char *edir, char *err);

#endif
