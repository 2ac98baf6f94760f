/* Consistency proofs between two signed checkpoints of the ledger (RFC 9162 2.1.4), in the
 * text form of C2SP tlog-witness: one standard base64 SHA-256 hash per line, each line
 * ending in "\n", nothing else (the empty text is the proof between equal sizes). A
 * witness that cosigned the checkpoint of size M asks for the proof from M to N before it
 * cosigns the checkpoint of size N (docs/audit.md, "Witnessing the ledger"). */
#ifndef ASSENT_CONSIST_H
#define ASSENT_CONSIST_H

#include <stddef.h>
#include <stdint.h>

#include "common/eckey.h"
#include "common/util.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/store.h" /* lmdb.h */

#define CONSIST_LINE 45 /* 44 base64 characters and "\n" */
#define CONSIST_TEXT_MAX (MERKLE_MAX_CONSISTENCY * CONSIST_LINE)

/* The proof from old_size to new_size of the ledger in an open read transaction, as text
 * appended to out. new_size may be at most the newest stored checkpoint's size (a tree the
 * ledger signed); 1 <= old_size <= new_size. Reads and hashes the first new_size entries
 * (their bytes, each key in order, no CBOR decoding: the roots are checked instead) and,
 * when a checkpoint is stored at new_size or old_size, compares its root with the one
 * computed. Returns 0, AS_EINVAL (sizes; reason in err), AS_ENOTFOUND (no checkpoint
 * yet), AS_ECORRUPT (reason in err) or AS_EIO / AS_ENOMEM. The caller ends txn. */
int consist_make_txn(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, uint64_t old_size, uint64_t new_size,
		     struct buf *out, char *err) AS_MUST_USE;

/* consist_make_txn as ledger_read's callback (the signer's): arg is a struct consist_req,
 * whose out gets the text. */
struct consist_req {
	uint64_t old, new;
	struct buf out;
};
int consist_make_cb(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err);

/* The same on the ledger in dir, opened read-only. */
int consist_make(const char *dir, uint64_t old_size, uint64_t new_size, struct buf *out, char *err) AS_MUST_USE;

/* Parse a proof text into path (MERKLE_MAX_CONSISTENCY hashes; *np of them). Refuses
 * anything but complete lines of canonical base64 of 32 bytes. 0 or AS_ECORRUPT. */
int consist_parse(const uint8_t *text, size_t n, uint8_t (*path)[32], size_t *np, char *err) AS_MUST_USE;

/* Check that the signed checkpoint newck (n2 bytes) extends oldck (n1 bytes): both verify
 * with one of keys, name the same origin, 1 <= old size <= new size, and proof (a text as
 * consist_parse reads it) leads from the old root to the new. *o and *nw get the two
 * checkpoints (either may be NULL). 0 when it holds, AS_ECORRUPT with the reason otherwise. */
int consist_check(const uint8_t *oldck, size_t n1, const uint8_t *newck, size_t n2, const uint8_t *proof, size_t plen,
		  struct eckey *const *keys, size_t nkeys, struct checkpoint *o, struct checkpoint *nw,
		  char *err) AS_MUST_USE;

#endif
