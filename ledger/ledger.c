/* The ledger writer: group-committed appends, incremental Merkle root, signed
 * checkpoints. See ledger/ledger.h for the format. */
#define _GNU_SOURCE
#include "ledger/ledger.h"
#include "ledger/ledger_int.h"
#include "ledger/tiles.h"
#include "ledger/wal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lmdb.h>

#include "common/cbor.h"
#include "common/eckey.h"
#include "ledger/entry.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/store.h"
#include "common/util.h"

/* The write-ahead log is reset after the commit that takes it past this many bytes or records:
 * while it lives LMDB reuses none of the pages its base holds, so the data file grows by the
 * pages each commit copies (about 14 KB here) until the next reset. */
#define WAL_RESET_BYTES ((off_t)8 << 20)
#define WAL_RESET_RECORDS 128

int ledger_lmdb_fail(char *err, int rc, const char *what)
{
	return as_fail(err, rc == MDB_MAP_FULL ? AS_ETOOBIG : AS_EIO, "ledger: %s: %s", what, mdb_strerror(rc));
}

static int get_meta(MDB_txn *txn, MDB_dbi dbi, const char *key, MDB_val *v)
{
	MDB_val k = {strlen(key), (void *)key};
	return mdb_get(txn, dbi, &k, v);
}

static int put_meta(MDB_txn *txn, MDB_dbi dbi, const char *key, const void *data, size_t n)
{
	MDB_val k = {strlen(key), (void *)key}, v = {n, (void *)data};
	return mdb_put(txn, dbi, &k, &v, 0);
}

/* A ledger written before entry times were kept in "meta": read the last entry's. */
static int last_entry_time(struct ledger *l, MDB_txn *txn, uint64_t seq, uint64_t *t, char *err)
{
	uint8_t k[8];
	be64_put(k, seq);
	MDB_val key = {8, k}, val;
	struct cv *e;
	const struct cv *tv;
	char e2[AS_ERRLEN];
	cv_arena_reset(&l->arena);
	if (mdb_get(txn, l->entries, &key, &val) != 0 || val.mv_size > ENTRY_MAX ||
	    cbor_decode(val.mv_data, val.mv_size, &l->arena, &e, e2) != 0 || !(tv = cv_get(e, "time")) ||
	    tv->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT,
			       "ledger %s: the last entry (%llu) is unreadable; run assent-verify ledger", l->dir,
			       (unsigned long long)seq);
	*t = tv->u;
	return 0;
}

int tree_load(struct ledger *l, MDB_txn *txn, struct tree_state *s, char *err)
{
	memset(s, 0, sizeof *s);
	merkle_init(&s->m);
	MDB_val v;
	int rc = get_meta(txn, l->meta, "merkle", &v);
	if (rc == MDB_NOTFOUND) {
		MDB_stat st;
		mdb_stat(txn, l->entries, &st);
		if (st.ms_entries != 0)
			return as_fail(err, AS_ECORRUPT, "ledger %s: entries exist but the tree state is missing",
				       l->dir);
		return 0;
	}
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "reading tree state");
	if (merkle_deserialize(&s->m, v.mv_data, v.mv_size) != 0)
		return as_fail(err, AS_ECORRUPT, "ledger %s: tree state is damaged", l->dir);
	if ((rc = get_meta(txn, l->meta, "head", &v)) != 0 || v.mv_size != 32)
		return as_fail(err, AS_ECORRUPT, "ledger %s: head hash missing", l->dir);
	memcpy(s->head, v.mv_data, 32);
	if ((rc = get_meta(txn, l->meta, "ckpt", &v)) == 0 && v.mv_size == 16) {
		s->ckpt_size = be64_get(v.mv_data);
		s->ckpt_time = be64_get((const uint8_t *)v.mv_data + 8);
	}
	if ((rc = get_meta(txn, l->meta, "headck", &v)) == 0 && v.mv_size == 8)
		s->head_ck = be64_get(v.mv_data);
	if ((rc = get_meta(txn, l->meta, "time", &v)) == 0 && v.mv_size == 8)
		s->last_time = be64_get(v.mv_data);
	else if (s->m.size > 0)
		GUARD(last_entry_time(l, txn, s->m.size - 1, &s->last_time, err));
	return 0;
}

int tree_save(struct ledger *l, MDB_txn *txn, const struct tree_state *s, char *err)
{
	uint8_t mbuf[8 + 64 * 32], c[16], h[8], t[8];
	size_t n = merkle_serialize(&s->m, mbuf);
	be64_put(c, s->ckpt_size);
	be64_put(c + 8, s->ckpt_time);
	be64_put(h, s->head_ck);
	be64_put(t, s->last_time);
	int rc = put_meta(txn, l->meta, "merkle", mbuf, n);
	if (rc == 0)
		rc = put_meta(txn, l->meta, "head", s->head, 32);
	if (rc == 0)
		rc = put_meta(txn, l->meta, "ckpt", c, sizeof c);
	if (rc == 0)
		rc = put_meta(txn, l->meta, "headck", h, sizeof h);
	if (rc == 0)
		rc = put_meta(txn, l->meta, "time", t, sizeof t);
	if (rc == 0)
		rc = put_meta(txn, l->meta, "origin", l->origin, strlen(l->origin));
	return rc ? ledger_lmdb_fail(err, rc, "writing tree state") : 0;
}

/* Sign a checkpoint of the current tree inside txn; the caller writes the file after commit.
 * periodic: kept for good (every N entries or seconds, and on close); otherwise this is
 * the head checkpoint, which replaces the previous head unless that one was periodic,
 * so the stored checkpoints stay few however many commits there are. Being in the
 * commit's own transaction, the signature is durable exactly when the entries are:
 * a crash leaves no unsigned tail. */
static int sign_checkpoint(struct ledger *l, MDB_txn *txn, struct tree_state *s, int periodic, struct buf *note,
			   char *err)
{
	struct checkpoint c;
	snprintf(c.origin, sizeof c.origin, "%s", l->origin);
	c.size = s->m.size;
	merkle_root(&s->m, c.root);
	buf_reset(note);
	GUARD(ckpt_sign_with(l->key, l->sign, l->sign_ctx, &c, note, err));
	uint8_t k[8];
	be64_put(k, c.size);
	MDB_val key = {8, k}, val = {note->len, note->p};
	int rc = mdb_put(txn, l->ckpts, &key, &val, 0);
	if (rc == 0 && s->head_ck && s->head_ck != c.size) {
		be64_put(k, s->head_ck);
		rc = mdb_del(txn, l->ckpts, &key, NULL);
		if (rc == MDB_NOTFOUND)
			rc = 0;
	}
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "storing checkpoint");
	s->head_ck = periodic ? 0 : c.size;
	if (periodic) {
		s->ckpt_size = c.size;
		s->ckpt_time = now_unix_ms();
	}
	memcpy(l->root, c.root, 32);
	l->known = 1;
	if (c.size > l->high)
		l->high = c.size;
	return 0;
}

/* Adopting an unsigned tail: the stored entries must still be the tree the newest
 * signed checkpoint covers (its root at its size) and the tree state the writer
 * would extend (the same root and head at the end). One pass over the entries, once. */
static int tail_consistent(struct ledger *l, MDB_txn *txn, const struct tree_state *s, const struct checkpoint *cp,
			   int have_cp, char *e2, size_t e2n)
{
	MDB_cursor *cur;
	MDB_val k, v;
	struct merkle m;
	uint8_t leaf[32] = {0}, root[32], want[32];
	merkle_init(&m);
	if (mdb_cursor_open(txn, l->entries, &cur) != 0)
		return snprintf(e2, e2n, "cannot read the entries"), AS_EIO;
	int rc = 0, g;
	for (g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0; g = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		merkle_leaf_hash(v.mv_data, v.mv_size, leaf);
		merkle_append(&m, leaf);
		if (have_cp && m.size == cp->size) {
			merkle_root(&m, root);
			if (memcmp(root, cp->root, 32) != 0) {
				rc = AS_ECORRUPT;
				snprintf(e2, e2n, "its entries no longer have the signed root at size %llu",
					 (unsigned long long)cp->size);
				break;
			}
		}
	}
	mdb_cursor_close(cur);
	merkle_root(&m, root);
	merkle_root(&s->m, want);
	if (rc == 0 && (g != MDB_NOTFOUND || m.size != s->m.size || memcmp(root, want, 32) != 0 ||
			memcmp(leaf, s->head, 32) != 0)) {
		rc = AS_ECORRUPT;
		snprintf(e2, e2n, "its stored tree state is not the tree of its entries");
	}
	return rc;
}

/* Before signing a tree we must have seen it signed: either it is the tree our own
 * last transaction left (size and root in memory), or the newest stored checkpoint
 * verifies with our key and covers exactly this tree (another writer holding the key,
 * an `assent` command, signed it). Otherwise someone without the key wrote the ledger
 * (entries or tree state), and signing would vouch for their history. Entries after
 * the newest signature (an unsigned tail: an older assent, which signed only
 * periodically, crashed; or someone without the key appended them) are signed only
 * when the operator adopts that many (opts.adopt_unsigned_tail) and the rest of the
 * ledger is still what was signed. */
int tree_trusted(struct ledger *l, MDB_txn *txn, const struct tree_state *s, uint64_t adopt, char *err)
{
	uint8_t root[32];
	merkle_root(&s->m, root);
	if (l->known && l->size == s->m.size && memcmp(l->root, root, 32) == 0)
		return 0;
	/* Cut back under us to an older signed size (every commit's head is signed, so one
	 * exists for each): the checkpoints below would accept it; what we saw signed does not. */
	if (s->m.size < l->high)
		return as_fail(
		    err, AS_ECORRUPT,
		    "ledger %s shrank from %llu to %llu entries under this process (cut back to an older signed "
		    "size without the checkpoint key): refusing to sign it; run assent-verify ledger --trusted",
		    l->dir, (unsigned long long)l->high, (unsigned long long)s->m.size);
	if (s->m.size == 0)
		return 0; /* a new ledger */
	MDB_cursor *cur;
	MDB_val k, v;
	struct checkpoint cp;
	char e2[AS_ERRLEN] = "";
	int rc = mdb_cursor_open(txn, l->ckpts, &cur), have = 0;
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "reading checkpoints");
	if (mdb_cursor_get(cur, &k, &v, MDB_LAST) == 0) {
		have = 1;
		if (v.mv_size > CKPT_MAX || ckpt_verify(v.mv_data, v.mv_size, &l->key, 1, &cp, e2) != 0) {
			rc = AS_ECORRUPT;
		} else if (cp.size > s->m.size) {
			rc = AS_ECORRUPT;
			snprintf(e2, sizeof e2, "the newest signed checkpoint covers %llu entries, the ledger has %llu",
				 (unsigned long long)cp.size, (unsigned long long)s->m.size);
		} else if (cp.size == s->m.size && memcmp(cp.root, root, 32) != 0) {
			rc = AS_ECORRUPT;
			snprintf(e2, sizeof e2, "its tree is not the one the newest signed checkpoint covers");
		}
	}
	mdb_cursor_close(cur);
	uint64_t tail = s->m.size - (have && rc == 0 ? cp.size : 0);
	if (rc == 0 && !have && tail > adopt) {
		rc = AS_ECORRUPT;
		snprintf(e2, sizeof e2, "no signed checkpoint covers its %llu entries", (unsigned long long)s->m.size);
	}
	if (rc != 0)
		return as_fail(err, AS_ECORRUPT,
			       "ledger %s was changed without the checkpoint key (%s): refusing to sign it; run "
			       "assent-verify ledger",
			       l->dir, e2);
	if (tail > adopt)
		return as_fail(
		    err, AS_ECORRUPT,
		    "ledger %s has an unsigned tail: %llu entries after its newest signed checkpoint (an older "
		    "assent's "
		    "crash, or written without the key); check them with assent-verify ledger, then adopt them with "
		    "ASSENT_ADOPT_UNSIGNED_TAIL=%llu",
		    l->dir, (unsigned long long)tail, (unsigned long long)tail);
	if (tail > 0 && (rc = tail_consistent(l, txn, s, &cp, have, e2, sizeof e2)) != 0)
		return as_fail(err, AS_ECORRUPT,
			       "ledger %s was changed without the checkpoint key (%s): refusing to sign it; run "
			       "assent-verify ledger",
			       l->dir, e2);
	memcpy(l->root, root, 32);
	l->size = s->m.size;
	l->known = 1;
	if (s->m.size > l->high)
		l->high = s->m.size;
	return 0;
}

static void write_ckpt_file(struct ledger *l, const struct buf *note)
{
	char path[4200], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/%s", l->dir, STORE_CKPT_FILE);
	/* The signed copy in LMDB is authoritative; the file is a convenience for
	 * auditors and witnesses, so a failure here is reported but not fatal. */
	if (file_write_atomic(path, note->p, note->len, 0644, err) != 0)
		fprintf(stderr, "assent: warning: %s\n", err);
}

/* force: 1 = whenever the tree grew, 0 = only when the interval passed. */
static int checkpoint_txn(struct ledger *l, int force, char *err)
{
	/* Cluster mode: a checkpoint signed here alone would be the mirror's, not the cluster's;
	 * the cluster's periodic checkpoints are signed by the commits (ledger_append). */
	if (l->sync)
		return 0;
	MDB_txn *txn;
	int rc = mdb_txn_begin(l->env, NULL, 0, &txn);
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "begin");
	struct tree_state s;
	struct buf note;
	buf_init(&note, CKPT_MAX);
	int signed_one = 0;
	rc = tree_load(l, txn, &s, err);
	if (rc == 0 && s.m.size > s.ckpt_size && (force || now_unix_ms() - s.ckpt_time >= (uint64_t)l->secs * 1000u)) {
		rc = tree_trusted(l, txn, &s, 0, err);
		if (rc == 0)
			rc = sign_checkpoint(l, txn, &s, 1, &note, err);
		if (rc == 0)
			rc = tree_save(l, txn, &s, err);
		signed_one = rc == 0;
	}
	if (rc == 0 && signed_one) {
		int c = mdb_txn_commit(txn);
		rc = c ? ledger_lmdb_fail(err, c, "commit") : 0;
		if (rc == 0) /* not in the write-ahead log: durable by LMDB's sync */
			rc = ledger_wal_sync(l, err);
		if (rc == 0)
			write_ckpt_file(l, &note);
	} else {
		mdb_txn_abort(txn);
	}
	l->size = s.m.size;
	if (rc == 0)
		l->ckpt_seen = s.ckpt_time;
	else
		l->known = 0; /* what was signed in the aborted transaction is not on disk */
	buf_free(&note);
	return rc;
}

int ledger_checkpoint(struct ledger *l, char *err)
{
	return checkpoint_txn(l, 1, err);
}
int ledger_tick(struct ledger *l, char *err)
{
	/* Called every turn of the signer's loop: skip the write transaction while the newest
	 * checkpoint we saw is younger than the interval. Checkpoints only move forward, so
	 * one another writer signed meanwhile is younger still. */
	uint64_t now = now_unix_ms();
	/* A second with records in the write-ahead log: sync LMDB and start a new one. */
	if (l->wal && wal_records(l->wal) > 0 && now - l->wal_at >= 1000)
		GUARD(ledger_wal_sync(l, err));
	if (l->ckpt_seen && now >= l->ckpt_seen && now - l->ckpt_seen < (uint64_t)l->secs * 1000u)
		return 0;
	return checkpoint_txn(l, 0, err);
}
uint64_t ledger_size(const struct ledger *l)
{
	return l->size;
}
const char *ledger_origin(const struct ledger *l)
{
	return l->origin;
}

int ledger_append(struct ledger *l, const struct ledger_rec *recs, size_t n, struct ledger_pos *pos, char *err)
{
	return ledger_append_fields(l, recs, NULL, n, pos, err);
}

/* The append's transaction txn (rc: 0, or what refused it) made durable and committed:
 * its write-ahead record (one fdatasync; LMDB runs with MDB_NOSYNC), or in cluster mode
 * LMDB's own syncs after the shared store's commit. A log grown past its bounds is reset
 * after (the commit is durable already: a failure there only lets the log grow on). */
static int commit_logged(struct ledger *l, MDB_txn *txn, int rc, uint64_t from, uint64_t n, const struct buf *note,
			 int periodic, char *err)
{
	off_t logged = l->wal ? wal_len(l->wal) : 0;
	if (rc == 0 && l->wal)
		rc = wal_append(l->wal, txn, l->entries, from, n, note->p, note->len, periodic, err);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	int c = mdb_txn_commit(txn);
	if (c != 0) {
		if (l->wal)
			wal_undo(l->wal, logged);
		return ledger_lmdb_fail(err, c, "commit");
	}
	char e3[AS_ERRLEN];
	if (l->wal && (wal_len(l->wal) > WAL_RESET_BYTES || wal_records(l->wal) >= WAL_RESET_RECORDS) &&
	    ledger_wal_sync(l, e3) != 0)
		fprintf(stderr, "assent: warning: %s\n", e3);
	return 0;
}

int ledger_append_fields(struct ledger *l, const struct ledger_rec *recs, const struct cv *const *given, size_t n,
			 struct ledger_pos *pos, char *err)
{
	if (n == 0)
		return 0;
	MDB_txn *txn;
	int rc = mdb_txn_begin(l->env, NULL, 0, &txn);
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "begin");
	struct tree_state s;
	struct buf note;
	buf_init(&note, CKPT_MAX);
	int did_ckpt = 0, periodic = 0;
	char e2[AS_ERRLEN] = "";
	rc = tree_load(l, txn, &s, err);
	if (rc == 0)
		rc = tree_trusted(l, txn, &s, 0, err);
	uint64_t mirrored = s.m.size;		 /* cluster mode: what the mirror had; [mirrored, from) is imported */
	uint64_t high = l->high, size = l->size; /* what this process saw, unless this commit lands */
	int locked = rc == 0 && l->sync && (rc = sync_pull(l, txn, &s, 1, err)) == 0;
	uint64_t from = s.m.size;
	/* Entry times never go backwards, even when the clock does (the verifier checks). */
	uint64_t now = now_unix_ms();
	if (now < s.last_time)
		now = s.last_time;
	s.last_time = now;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct cv *decoded = NULL;
		const struct cv *fields = given ? given[i] : NULL;
		uint64_t seq = s.m.size;
		cv_arena_reset(&l->arena);
		buf_reset(&l->enc);
		if (!fields && recs[i].len > ENTRY_MAX) {
			rc = as_fail(err, AS_ETOOBIG, "entry %zu of the batch is %zu bytes, over %u", i, recs[i].len,
				     ENTRY_MAX);
			break;
		}
		if (!fields && (rc = cbor_decode(recs[i].cbor, recs[i].len, &l->arena, &decoded, e2)) == 0)
			fields = decoded;
		if (rc == 0)
			rc = entry_build(fields, seq, now, s.head, &l->enc, e2);
		if (rc != 0) {
			rc = as_fail(err, AS_EINVAL, "entry %zu of the batch refused: %s", i, e2);
			break;
		}
		uint8_t k[8];
		be64_put(k, seq);
		MDB_val key = {8, k}, val = {l->enc.len, l->enc.p};
		/* MDB_APPEND fails unless the key sorts after the last: the chain cannot fork. */
		int mrc = mdb_put(txn, l->entries, &key, &val, MDB_APPEND | MDB_NOOVERWRITE);
		if (mrc != 0) {
			rc = ledger_lmdb_fail(err, mrc, "storing entry");
			break;
		}
		merkle_leaf_hash(l->enc.p, l->enc.len, s.head);
		if ((rc = tile_put(txn, l->tiles, &s.m, s.head, err)) != 0) /* before the append: see tiles.h */
			break;
		merkle_append(&s.m, s.head);
		pos[i].seq = seq;
		memcpy(pos[i].leaf, s.head, 32);
	}
	if (rc == 0) {
		/* Every commit signs its tree head (one signature per group commit); every N
		 * entries or seconds that signature is a periodic checkpoint, kept for good. */
		periodic = s.m.size - s.ckpt_size >= l->every || now - s.ckpt_time >= (uint64_t)l->secs * 1000u;
		rc = sign_checkpoint(l, txn, &s, periodic, &note, err);
		did_ckpt = rc == 0 && periodic;
	}
	if (rc == 0)
		rc = tree_save(l, txn, &s, err);
	if (locked) { /* the shared ledger first: what it refuses is not appended here either */
		locked = 0;
		if (rc == 0)
			rc = sync_push(l, txn, from, &s, &note, did_ckpt, err);
		else
			sync_release(l);
	}
	rc = commit_logged(l, txn, rc, from, s.m.size - from, &note, periodic, err);
	if (rc == 0) {
		l->size = s.m.size;
		l->ckpt_seen = s.ckpt_time;
		if (did_ckpt)
			write_ckpt_file(l, &note);
		if (l->sync && from > mirrored && l->sync->imported)
			l->sync->imported(l->sync->ctx, mirrored, from);
	} else {
		l->known = 0; /* what was signed in the aborted transaction is not on disk */
		l->high = high;
		l->size = size;
	}
	buf_free(&note);
	return rc;
}

static int is_demo(const char *origin)
{
	return !strncmp(origin, LEDGER_DEMO_PREFIX, strlen(LEDGER_DEMO_PREFIX));
}

/* The origin a ledger was made with is stored with it: a gateway never writes to a
 * demo ledger (whose entries anyone with the tool could have chosen), nor the demo
 * tool to a gateway's ledger. */
static int check_origin(struct ledger *l, MDB_txn *txn, int given, int either, uint64_t size, char *err)
{
	MDB_val v;
	if (get_meta(txn, l->meta, "origin", &v) != 0) {
		if (l->demo && size > 0)
			return as_fail(err, AS_EINVAL,
				       "ledger %s is not a demo ledger: `assent ledger append` writes only demo "
				       "ledgers of its own",
				       l->dir);
		return 0; /* new, or written by an older assent: the origin is stored at the next commit */
	}
	char stored[CKPT_ORIGIN_MAX + 1];
	snprintf(stored, sizeof stored, "%.*s", (int)(v.mv_size < CKPT_ORIGIN_MAX ? v.mv_size : CKPT_ORIGIN_MAX),
		 (const char *)v.mv_data);
	if (either)
		l->demo = is_demo(stored);
	if (is_demo(stored) && !l->demo)
		return as_fail(err, AS_EINVAL,
			       "ledger %s is a demo ledger (origin %s, written by `assent ledger append`): a gateway "
			       "does not use it",
			       l->dir, stored);
	if (!is_demo(stored) && l->demo)
		return as_fail(
		    err, AS_EINVAL,
		    "ledger %s is a gateway's ledger (origin %s): `assent ledger append` writes only demo ledgers",
		    l->dir, stored);
	if (given && strcmp(stored, l->origin) != 0)
		return as_fail(err, AS_EINVAL, "ledger %s has origin %s, not %s", l->dir, stored, l->origin);
	snprintf(l->origin, sizeof l->origin, "%s", stored);
	return 0;
}

/* The LMDB environment and its three databases, in a write transaction left open in *txn
 * (NULL after a failure). */
static int open_env(struct ledger *l, const char *dir, const struct ledger_opts *o, MDB_txn **txn, char *err)
{
	int m = mdb_env_create(&l->env);
	if (m == 0)
		m = mdb_env_set_maxdbs(l->env, STORE_MAXDBS);
	if (m == 0)
		m = mdb_env_set_mapsize(l->env, o && o->map_size ? o->map_size : (size_t)64 << 30);
	if (m == 0)
		m = mdb_env_open(l->env, dir, MDB_NOTLS, 0600);
	if (m == 0)
		m = mdb_txn_begin(l->env, NULL, 0, txn);
	if (m == 0)
		m = mdb_dbi_open(*txn, STORE_DB_ENTRIES, MDB_CREATE, &l->entries);
	if (m == 0)
		m = mdb_dbi_open(*txn, STORE_DB_CHECKPOINTS, MDB_CREATE, &l->ckpts);
	if (m == 0)
		m = mdb_dbi_open(*txn, STORE_DB_META, MDB_CREATE, &l->meta);
	if (m == 0)
		m = mdb_dbi_open(*txn, STORE_DB_TILES, MDB_CREATE, &l->tiles);
	if (m != 0) {
		if (*txn)
			mdb_txn_abort(*txn);
		*txn = NULL;
		return ledger_lmdb_fail(err, m, "opening the environment");
	}
	return 0;
}

/* A cheap consistency check before we extend the chain: as many entries as the tree has,
 * and the last one hashes to the stored head. A full check is assent-verify's job. */
static int check_head(const struct ledger *l, MDB_txn *txn, const struct tree_state *s, const char *dir, char *err)
{
	uint8_t k[8], h[32];
	be64_put(k, s->m.size - 1);
	MDB_val key = {8, k}, val;
	MDB_stat st;
	mdb_stat(txn, l->entries, &st);
	if (st.ms_entries != s->m.size || mdb_get(txn, l->entries, &key, &val) != 0)
		return as_fail(err, AS_ECORRUPT,
			       "ledger %s: %zu entries stored but the tree has %llu; run assent-verify ledger", dir,
			       (size_t)st.ms_entries, (unsigned long long)s->m.size);
	merkle_leaf_hash(val.mv_data, val.mv_size, h);
	if (memcmp(h, s->head, 32) != 0)
		return as_fail(err, AS_ECORRUPT,
			       "ledger %s: the last entry does not match the stored head hash; "
			       "run assent-verify ledger",
			       dir);
	return 0;
}

int ledger_open(const char *dir, const struct ledger_opts *o, struct ledger **out, char *err)
{
	struct ledger *l = calloc(1, sizeof *l);
	if (!l)
		return as_fail(err, AS_ENOMEM, "out of memory");
	if (snprintf(l->dir, sizeof l->dir, "%s", dir) >= (int)sizeof l->dir) {
		free(l);
		return as_fail(err, AS_EINVAL, "ledger path too long");
	}
	cv_arena_init(&l->arena, ENTRY_MAX);
	buf_init(&l->enc, ENTRY_MAX + 256);
	/* Each stored checkpoint costs a verifier one ECDSA check (about as much as hashing
	 * 700 entries with mbedTLS); every 10,000 entries keeps that near 7%, and the
	 * timer keeps checkpoints fresh when traffic is light. */
	l->every = o && o->checkpoint_every ? o->checkpoint_every : 10000;
	l->secs = o && o->checkpoint_secs ? o->checkpoint_secs : 60;
	int created = 0, rc = mkdir_p(dir, 0700, err);
	if (rc == 0)
		rc = ledger_key_open(l, o, &created, err);
	uint8_t id[4];
	if (rc == 0 && note_key_id(l->key, id) != 0)
		rc = as_fail(err, AS_EIO, "cannot compute the checkpoint key's id");
	if (rc == 0) {
		char hex[9];
		hex_encode(id, 4, hex);
		l->demo = o && o->demo == 1;
		if (o && o->origin)
			snprintf(l->origin, sizeof l->origin, "%s", o->origin);
		else
			snprintf(l->origin, sizeof l->origin, "%s%s", l->demo ? LEDGER_DEMO_PREFIX : "assent/", hex);
	}
	MDB_txn *txn = NULL;
	int alone = 0;
	if (rc == 0)
		rc = ledger_wal_open(l, &alone, err);
	if (rc == 0)
		rc = open_env(l, dir, o, &txn, err);
	if (rc == 0) {
		struct tree_state s;
		rc = tree_load(l, txn, &s, err);
		if (rc == 0)
			rc = check_origin(l, txn, o && o->origin, o && o->demo == LEDGER_EITHER, s.m.size, err);
		/* A key in a token is not created here: its `key` entry goes into a new ledger (one
		 * already signed was signed with it, else state_trusted refuses it below). */
		if (l->ext && s.m.size == 0)
			created = 1;
		if (rc == 0)
			rc = tree_trusted(l, txn, &s, o ? o->adopt_unsigned_tail : 0, err);
		if (rc == 0 && s.m.size > 0)
			rc = check_head(l, txn, &s, dir, err);
		l->size = s.m.size;
		int c = rc == 0 ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), 0);
		if (rc == 0 && c != 0)
			rc = ledger_lmdb_fail(err, c, "commit");
	}
	if (rc == 0 && l->ext)
		rc = ledger_key_publish(l, o, err);
	l->sync = o ? o->sync : NULL;
	if (rc == 0)
		rc = ledger_wal_recover(l, alone, err);
	/* Cluster mode: the shared ledger's entries first; only a cluster with none gets our key entry. */
	if (rc == 0 && l->sync && (rc = ledger_catch_up(l, err)) == 0)
		created = l->size == 0;
	if (rc == 0 && created)
		rc = ledger_key_record(l, err);
	if (rc != 0) {
		if (l->pin)
			mdb_txn_abort(l->pin);
		wal_free(l->wal);
		if (l->env)
			mdb_env_close(l->env);
		ledger_key_free(l);
		cv_arena_free(&l->arena);
		buf_free(&l->enc);
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

int ledger_scan(struct ledger *l, int (*fn)(uint64_t seq, const uint8_t *cbor, size_t len, void *arg), void *arg,
		char *err)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "begin");
	if ((rc = mdb_cursor_open(txn, l->entries, &cur)) != 0) {
		mdb_txn_abort(txn);
		return ledger_lmdb_fail(err, rc, "cursor");
	}
	int out = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && out == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		out = k.mv_size == 8 ? fn(be64_get(k.mv_data), v.mv_data, v.mv_size, arg) : AS_ECORRUPT;
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (out == 0 && rc != MDB_NOTFOUND)
		return ledger_lmdb_fail(err, rc, "reading entries");
	return out;
}

int ledger_read(struct ledger *l,
		int (*fn)(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err),
		void *arg, char *err)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "begin");
	rc = fn(txn, l->entries, l->ckpts, l->key, arg, err);
	mdb_txn_abort(txn);
	return rc;
}

void ledger_close(struct ledger *l)
{
	if (!l)
		return;
	char err[AS_ERRLEN];
	if (ledger_checkpoint(l, err) != 0)
		fprintf(stderr, "assent: warning: final checkpoint: %s\n", err);
	ledger_wal_close(l);
	mdb_env_close(l->env);
	ledger_key_free(l);
	cv_arena_free(&l->arena);
	buf_free(&l->enc);
	free(l);
}
