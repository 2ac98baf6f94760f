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
};

#endif
