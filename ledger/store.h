/* The LMDB layout shared by the ledger writer and the verifier, and a read-only
 * opener that works for an auditor who cannot write the directory. */
#ifndef ASSENT_STORE_H
#define ASSENT_STORE_H

#include <lmdb.h>
#include "common/attr.h"

#define STORE_DB_ENTRIES "entries"
#define STORE_DB_CHECKPOINTS "checkpoints"
#define STORE_DB_META "meta"
#define STORE_DB_TILES "tiles" /* ledger/tiles.h */
#define STORE_MAXDBS 4
#define STORE_CKPT_FILE "checkpoint"

/* Open dir read-only; never creates a file there. If lock.mdb is missing or cannot
 * be opened for writing (an auditor without write access), use MDB_NOLOCK and set *nolock: that is safe on a
 * stopped ledger or a copy, not while a writer runs. Returns 0, AS_ENOTFOUND when
 * there is no ledger, AS_EIO when it cannot be read, AS_ECORRUPT when LMDB says the
 * file is not a valid environment. */
int store_open_ro(const char *dir, MDB_env **env, MDB_txn **txn, MDB_dbi *entries, MDB_dbi *ckpts, int *nolock,
		  char *err) AS_MUST_USE AS_MUST_USE;

#endif
