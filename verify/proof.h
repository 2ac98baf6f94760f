/* Inclusion proofs for one ledger entry, as a self-contained JSON document:
 *   {"origin", "index", "tree_size", "leaf_hash", "entry" (base64 CBOR),
 *    "path" [hex...], "root", "checkpoint" (signed note text, or null)}
 * so that an entry can be proven to an auditor without handing over the ledger. */
#ifndef ASSENT_PROOF_H
#define ASSENT_PROOF_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/eckey.h"
#include "common/util.h"
#include "ledger/store.h" /* lmdb.h */

#define PROOF_MAX 65536 + 2 * (1u << 20) /* JSON proof: path, checkpoint, a base64 entry */

/* Build the proof of entry seq in the tree of size `size` (0: the latest stored
 * checkpoint's size) of the ledger in dir, checking the entries it reads.
 * Returns 0, AS_ECORRUPT (reason in err) or an I/O error. */
int proof_make(const char *dir, uint64_t seq, uint64_t size, struct eckey *const *keys, size_t nkeys, struct buf *out,
	       char *err);

/* The same, in a read transaction of an environment already open (txn, its entries and
 * checkpoints databases): the signer's own, since LMDB must not open one environment twice
 * in a process. The caller ends txn. */
int proof_make_txn(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, uint64_t seq, uint64_t size, struct eckey *const *keys,
		   size_t nkeys, struct buf *out, char *err);

/* Check a proof. ckpt (may be NULL) is a checkpoint obtained independently; else
 * the proof's own checkpoint is used. Either must verify with one of keys and
 * have the proof's tree size. Returns 0 when the proof holds; AS_ECORRUPT with the
 * reason otherwise (any malformed proof included). */
int proof_check(const uint8_t *proof, size_t n, const uint8_t *ckpt, size_t ckptlen, struct eckey *const *keys,
		size_t nkeys, uint64_t *index, uint64_t *size, char *err);

/* The entry a proof carries, as JSON (byte strings as hex), for saying what a proof that
 * holds proves; NULL when it cannot be read (call it after proof_check). Caller decrefs. */
json_t *proof_entry_json(const uint8_t *proof, size_t n);

#endif
