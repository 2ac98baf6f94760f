/* The ledger's write-ahead log: one device sync per durable commit (ledger/wal.c has the
 * design). Only ledger/ uses it; ledger.h has the test seams (ledger_wal_hook). */
#ifndef ASSENT_LEDGER_WAL_H
#define ASSENT_LEDGER_WAL_H

#include <sys/types.h>

#include <lmdb.h>

#include "ledger/ledger.h"

struct wal;

/* Open the log's directory (the ledger's) and lock it: *alone when no other process has it
 * open (this one may recover it; call wal_shared once done), else shared. */
int wal_open(const char *dir, struct wal **out, int *alone, char *err) AS_MUST_USE;
int wal_shared(struct wal *w, char *err) AS_MUST_USE;
/* Read DIR/wal when there is one (alone only). */
int wal_read(struct wal *w, char *err) AS_MUST_USE;
/* Before LMDB is opened: after a restart of the machine, put back the meta pages the log's
 * header holds (*restored). Same boot: nothing (LMDB is consistent). */
int wal_restore_base(struct wal *w, int *restored, char *err) AS_MUST_USE;
/* struct ledger_sync's pull over what wal_read read: the records after entry `have`. */
int wal_pull(void *ctx, uint64_t have, int lock, const struct ledger_sync_take *take, void *arg, char *err);
uint64_t wal_applied(const struct wal *w); /* records wal_pull handed over */
uint64_t wal_base(const struct wal *w);	   /* the LMDB txnid of the log's base */

/* Inside the write transaction txn, before its commit: entries [from, from+n) as txn holds
 * them and the checkpoint note, written and fdatasync'd. The commit is durable on return. */
int wal_append(struct wal *w, MDB_txn *txn, MDB_dbi entries, uint64_t from, uint64_t n, const uint8_t *note,
	       size_t nlen, int periodic, char *err) AS_MUST_USE;
/* The commit after wal_append failed: cut the log back to len (wal_len before the append). */
void wal_undo(struct wal *w, off_t len);
off_t wal_len(const struct wal *w);
uint64_t wal_records(const struct wal *w); /* records since the last reset */
/* Under LMDB's write lock: sync LMDB, start a new log whose base is now, and hold *pin, a read
 * transaction on that snapshot (the previous *pin is ended). */
int wal_reset(struct wal *w, MDB_env *env, MDB_txn **pin, char *err) AS_MUST_USE;
/* At close: when no other process has the ledger open, remove the log (1: removed). */
int wal_remove_if_alone(struct wal *w);
void wal_free(struct wal *w);

#endif
