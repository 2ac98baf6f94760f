/* The ledger's state, shared by the files of ledger/ that write it (ledger.c, cosign_store.c);
 * nothing outside ledger/ includes this. */
#ifndef ASSENT_LEDGER_INT_H
#define ASSENT_LEDGER_INT_H

#include <lmdb.h>

#include "common/cbor.h"
#include "common/eckey.h"
#include "common/util.h"
#include "ledger/headsign.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"

/* Tree state kept in "meta", rewritten in every append transaction. */
struct tree_state {
	struct merkle m;
	uint8_t head[32];   /* leaf hash of the last entry (prev of the next) */
	uint64_t ckpt_size; /* size of the last signed checkpoint */
	uint64_t ckpt_time; /* unix ms when it was signed */
	uint64_t head_ck;   /* size of the head checkpoint when it is not a periodic one; 0: none */
	uint64_t last_time; /* time of the last entry: entry times never go backwards */
};

struct ledger {
	MDB_env *env;
	MDB_dbi entries, ckpts, meta, tiles;
	struct eckey *key;   /* owned, unless ext */
	struct headsign *hs; /* the same key in OpenSSL: every commit signs, so signing must be cheap */
	note_sign_fn sign;   /* headsign_sign with hs, or an external signer's (ledger_opts.signer) */
	void *sign_ctx;
	int ext; /* key and sign_ctx belong to the caller's signer */
	char dir[4096];
	char origin[CKPT_ORIGIN_MAX + 1];
	uint64_t every;
	uint32_t secs;
	uint64_t size;	    /* as of our last transaction */
	uint64_t ckpt_seen; /* unix ms of the newest checkpoint as of our last transaction; 0: none */
	int demo;	    /* a demo ledger (`assent ledger append`): origin assent-demo/... */
	int known;	    /* size and root below hold the tree we last signed or verified */
	uint64_t high;	    /* the largest tree this process saw signed: a ledger never shrinks under it */
	uint8_t root[32];
	struct cv_arena arena;
	struct buf enc;
	const struct ledger_sync *sync; /* cluster mode (ledger/sync.c); NULL: this ledger alone */
	struct wal *wal;		/* the write-ahead log; NULL in cluster mode (ledger/recover.c) */
	MDB_txn *pin;			/* a read transaction on the log's base: its pages stay as synced */
	uint64_t wal_at;		/* unix ms of the log's last reset */
};

/* ledger/ledger.c, for ledger/sync.c: the tree state in "meta" read and written inside txn,
 * the check that this process saw it signed before it signs on top, an LMDB error as err. */
int tree_load(struct ledger *l, MDB_txn *txn, struct tree_state *s, char *err);
int tree_save(struct ledger *l, MDB_txn *txn, const struct tree_state *s, char *err);
int tree_trusted(struct ledger *l, MDB_txn *txn, const struct tree_state *s, uint64_t adopt, char *err);
int ledger_lmdb_fail(char *err, int rc, const char *what);

/* ledger/sync.c: with l->sync, inside the append's write transaction txn: take the cluster's
 * lock and import what other replicas appended (sync_pull), then store this commit's
 * entries [from, s->m.size) and the head checkpoint note there (sync_push, which commits
 * and releases the lock). After a failure of either, sync_release. */
int sync_pull(struct ledger *l, MDB_txn *txn, struct tree_state *s, int lock, char *err);
int sync_push(struct ledger *l, MDB_txn *txn, uint64_t from, const struct tree_state *s, const struct buf *note,
	      int periodic, char *err);
void sync_release(struct ledger *l);
/* What sync_pull does, from any source of entries and checkpoints (the cluster, the
 * write-ahead log): name starts its error messages ("the cluster's"). */
int sync_import(struct ledger *l, const struct ledger_sync *src, const char *name, MDB_txn *txn, struct tree_state *s,
		int lock, char *err);

/* keyfile.c: the checkpoint key (*created: a new file key, to be recorded) */
int ledger_key_open(struct ledger *l, const struct ledger_opts *o, int *created, char *err);
int ledger_key_publish(struct ledger *l, const struct ledger_opts *o, char *err);
int ledger_key_record(struct ledger *l, char *err);
void ledger_key_free(struct ledger *l);

/* ledger/recover.c: the write-ahead log (ledger/wal.c) as the ledger uses it. Before LMDB is
 * opened: lock, read and (after a restart of the machine) restore the log's base; after:
 * apply what the log has that LMDB lacks, then start a log of this process (none in cluster
 * mode, whose commits are the shared store's and LMDB's own syncs). */
int ledger_wal_open(struct ledger *l, int *alone, char *err);
int ledger_wal_recover(struct ledger *l, int alone, char *err);
/* After a commit that is not in the log (a checkpoint, a cosignature), and every second with
 * records: sync LMDB and start a new log. */
int ledger_wal_sync(struct ledger *l, char *err);
void ledger_wal_close(struct ledger *l);

#endif
