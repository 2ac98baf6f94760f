/* assent ledger: an append-only, hash-chained LMDB ledger with signed checkpoints.
 *
 * Layout (DESIGN.md): an LMDB environment in a directory; named database
 * "entries" maps a big-endian u64 sequence number (from 0) to a deterministic
 * CBOR map {v, seq, time, kind, prev, ...fields of the kind}. Leaf hash =
 * SHA-256(0x00 || entry bytes) (RFC 9162); prev = previous leaf hash (zeros for
 * entry 0). Named database "checkpoints" maps a big-endian tree size to a signed
 * checkpoint (C2SP tlog-checkpoint + signed note, ECDSA P-256). Every append
 * signs the new tree head in its own write transaction (the head checkpoint, which
 * replaces the previous head); every N entries or seconds the head checkpoint is a
 * periodic one, kept for good, and also written to the file DIR/checkpoint.
 *
 * One process writes at a time (LMDB's writer lock); every append re-reads the
 * tree state inside its write transaction, so two writers never fork the chain. */
#ifndef ASSENT_LEDGER_H
#define ASSENT_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include <lmdb.h>

#include "include/assent/err.h"
#include "common/attr.h"
#include "ledger/note.h"

struct ledger;

/* A checkpoint signer outside the key files: a key in a PKCS#11 token (common/p11.h).
 * key is its public key, sign a note_sign_fn called with ctx. The caller keeps all three
 * until ledger_close. */
struct ledger_signer {
	const struct eckey *key;
	note_sign_fn sign;
	void *ctx;
};

/* One entry to append: a canonical CBOR map holding `kind` and the kind's fields
 * (never v, seq, time or prev, which the ledger sets). */
struct ledger_rec {
	const uint8_t *cbor;
	size_t len;
};

/* A shared sequencer: cluster mode (docs/cluster.md), where replicas append to one ledger in
 * PostgreSQL through gateway/signer/cluster.c and each keeps this LMDB ledger as its mirror.
 * With one, every append runs inside the cluster's append lock: pull hands over what other
 * replicas appended after the mirror's `have` entries, which ledger/sync.c checks before it
 * stores them (seq, prev, time, kind; the tree they make against the cluster's newest
 * checkpoint, which must verify with this ledger's key), then this commit's entries are built
 * on top, signed, and given to push, which stores them there and commits; only then does LMDB
 * commit. A failed pull or push appends nothing anywhere (release drops the lock). */
struct ledger_sync_take {
	/* each entry after `have`, in order: seq and its canonical bytes */
	int (*entry)(void *arg, uint64_t seq, const uint8_t *p, size_t n, char *err);
	/* then the cluster's checkpoints after `have`: periodic ones (kept for good) and the head */
	int (*ckpt)(void *arg, uint64_t size, const uint8_t *note, size_t n, int periodic, char *err);
};
struct ledger_sync {
	void *ctx;
	/* lock: 1 for an append (held until push or release), 0 for a catch-up (a consistent read,
	 * no lock: the other replicas' commits do not wait on it; still released after) */
	int (*pull)(void *ctx, uint64_t have, int lock, const struct ledger_sync_take *take, void *arg, char *err);
	/* entries ents[0..n) are seq from..from+n-1; note signs the tree after them. claims[i] (NULL:
	 * none) is what entry i takes once for the whole cluster ("end:SID" for a decision, timeout,
	 * cancellation or abandonment, "dispatch:SID", "outcome:SID", "approval:SID:REVIEWER",
	 * "request:SID", "passkey:EVENT:CREDENTIAL"): a claim another replica's entry took already
	 * fails the push, and so the commit, naming it (AS_EEXIST): decided once, dispatched once,
	 * whatever races. */
	int (*push)(void *ctx, uint64_t from, const struct ledger_rec *ents, const char *const *claims, size_t n,
		    const uint8_t *note, size_t nlen, int periodic, char *err);
	void (*release)(void *ctx);
	/* after an LMDB commit that imported entries [from, to): the caller's state may follow them */
	void (*imported)(void *ctx, uint64_t from, uint64_t to);
};

struct ledger_opts {
	const char *keys_dir;		    /* checkpoint.key (0600) and checkpoint.pub; NULL: DIR/../keys */
	const struct ledger_signer *signer; /* not NULL: checkpoints are signed by it; no checkpoint.key is
					     * read or made, and keys_dir gets its public key (checkpoint.pub).
					     * Its `key` entry is recorded when the ledger has no entry yet. */
	const char *origin;		    /* checkpoint origin line; NULL: "assent/<key id hex>" */
	uint64_t checkpoint_every;	    /* sign a checkpoint every N entries; 0: 10000 */
	uint32_t checkpoint_secs;	    /* or when this many seconds passed with new entries; 0: 60 */
	size_t map_size;		    /* LMDB map size; 0: 64 GiB (sparse) */
	uint64_t adopt_unsigned_tail;	    /* ledger_open: sign up to this many entries after the newest signed
					     * checkpoint (an older assent's crash left them); 0: refuse any */
	const struct ledger_sync *sync;	    /* not NULL: cluster mode (above); the caller keeps it until ledger_close */
	int demo; /* 1: a demo ledger (`assent ledger append`): origin "assent-demo/<key id hex>";
		   * 0: a gateway's ledger; each refuses to be opened as the other.
		   * LEDGER_EITHER: whichever it is (maintenance: `assent ledger checkpoint`) */
};

/* Test seams of the write-ahead log (ledger/wal.c); NULL in the product. ledger_wal_hook is
 * called with the ledger's directory at each step of a commit's record ("log", "log-half",
 * "log-written", "log-synced"), of a reset ("reset", "synced", "new-log", "renamed") and of a
 * recovery ("restored"); ledger_wal_boot stands in for the machine's boot id;
 * ledger_wal_space is the zeros a new log file starts with (9 MiB; the fuzz harness's less). */
extern void (*ledger_wal_hook)(const char *step, const char *dir);
extern const char *ledger_wal_boot;
extern size_t ledger_wal_space;

/* In the keys directory of a ledger opened with an external signer: without one, that
 * ledger_open refuses to make a key file in its place. */
#define LEDGER_EXT_MARK "checkpoint.pkcs11"

/* Checkpoint origins of demo ledgers start with this; assent-verify names them. */
#define LEDGER_DEMO_PREFIX "assent-demo/"
#define LEDGER_EITHER 2

struct ledger_pos {
	uint64_t seq;
	uint8_t leaf[32];
};

/* Open (creating when absent) the ledger in dir; generates the checkpoint key on
 * first use and then records it as the ledger's `key` entry (with opts.signer: the
 * signer's key, recorded when the ledger is new). A ledger this key did
 * not sign as it is (changed without the key, or with an unsigned tail longer than
 * opts.adopt_unsigned_tail) is refused with AS_ECORRUPT; so is an append that finds
 * the ledger changed that way since this process last wrote it. The caller frees the
 * ledger with ledger_close. err (AS_ERRLEN bytes, may be NULL) says what failed. */
int ledger_open(const char *dir, const struct ledger_opts *opts, struct ledger **out, char *err) AS_MUST_USE;

/* Append n entries in one write transaction with one durable commit (group
 * commit). On return 0 every entry is on disk and pos[i] (n of them, owned by the
 * caller) holds its sequence number and leaf hash. On error nothing is appended;
 * err names the entry that was refused. */
int ledger_append(struct ledger *l, const struct ledger_rec *recs, size_t n, struct ledger_pos *pos,
		  char *err) AS_MUST_USE;
/* The same, where entry i's fields may come already decoded: fields[i] when fields and
 * fields[i] are not NULL (recs[i] is then not read), else decoded from recs[i]. The
 * signer hands its request entry over this way: the action in it was decoded once, on
 * receipt, and the entry is encoded once, here (no encode-decode round trip). */
struct cv;
int ledger_append_fields(struct ledger *l, const struct ledger_rec *recs, const struct cv *const *fields, size_t n,
			 struct ledger_pos *pos, char *err) AS_MUST_USE;

/* Cluster mode: import what other replicas appended since this mirror's last commit, in one
 * commit of its own (nothing of ours is appended). */
int ledger_catch_up(struct ledger *l, char *err) AS_MUST_USE;

/* Sign and store a periodic checkpoint now if the tree grew since the last periodic one. */
int ledger_checkpoint(struct ledger *l, char *err) AS_MUST_USE;
/* Call periodically: signs a checkpoint when checkpoint_secs passed with new entries. */
int ledger_tick(struct ledger *l, char *err) AS_MUST_USE;

/* Number of entries (the tree size) as of the last transaction of this process. */
uint64_t ledger_size(const struct ledger *l);
/* Idle: the ledger's pages this process has mapped are let go (madvise MADV_DONTNEED on LMDB's
 * read-only map: they stay in the page cache and fault back in when read), so that an idle
 * daemon's resident size is its own, not the ledger's it last read or wrote. */
void ledger_release_pages(struct ledger *l);
/* The checkpoint key's origin line. Valid until ledger_close. */
const char *ledger_origin(const struct ledger *l);

/* Call fn for every entry in order (seq, canonical CBOR bytes valid during the
 * call), in one read transaction; fn returns non-zero to stop, which is returned. */
int ledger_scan(struct ledger *l, int (*fn)(uint64_t seq, const uint8_t *cbor, size_t len, void *arg), void *arg,
		char *err) AS_MUST_USE AS_MUST_USE;

/* Call fn in one read transaction of l's own environment, with its entries and checkpoints
 * databases and l's checkpoint key (to check the checkpoints it reads; l keeps it): what
 * reads the store directly (an inclusion proof) without opening the environment a second
 * time in this process, which LMDB forbids. fn's result is returned. */
struct eckey;
int ledger_read(struct ledger *l,
		int (*fn)(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err),
		void *arg, char *err) AS_MUST_USE;

/* Writes a final checkpoint when the tree grew (clean shutdown), then frees l. */
void ledger_close(struct ledger *l);

/* ---- witnesses' cosignatures (C2SP tlog-cosignature): ledger/cosign_store.c ---- */
#define LEDGER_COSIG_MAX 8 /* cosignature lines stored by one ledger_cosign call */

/* The newest periodic checkpoint (the one witnesses are sent): its size, and in note (at
 * most CKPT_MAX bytes, reset first) the note as stored, with its log signature and any
 * cosignatures stored since. AS_ENOTFOUND when none is signed yet. */
int ledger_periodic(struct ledger *l, uint64_t *size, struct buf *note, char *err) AS_MUST_USE;

/* One verified cosignature: its signer's name and key ID, and the whole note signature
 * line the caller rebuilt: NOTE_SIG_PREFIX, NAME, a space, BASE64(keyid || timestamp ||
 * signature), LF. */
struct ledger_cosig {
	const char *name;
	uint8_t keyid[4];
	const char *line;
};
/* Appends n verified cosignature lines to the checkpoint stored at size, whose body (the
 * note up to its blank line) must be body (blen bytes): the one the witnesses cosigned.
 * A stored line with the same name and key ID is replaced (the newer cosignature wins: one
 * line per witness). Rewrites DIR/checkpoint when size is the newest periodic checkpoint.
 * The note must still verify with the log's key and stay within CKPT_MAX bytes; a
 * cosignature whose key ID is the log key's is refused (ckpt_verify would read it as the
 * log's). 0, AS_ENOTFOUND (no checkpoint at size), AS_ECORRUPT (another body), AS_ETOOBIG,
 * AS_EINVAL or AS_EIO, with err. */
int ledger_cosign(struct ledger *l, uint64_t size, const char *body, size_t blen, const struct ledger_cosig *c,
		  size_t n, char *err) AS_MUST_USE;

#endif
