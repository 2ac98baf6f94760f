/* Witnesses' cosignatures beside the checkpoints they cosigned (ledger.h, "witnesses'
 * cosignatures"): the newest periodic checkpoint for the signer to send, and the verified
 * cosignature lines appended to its stored note and to DIR/checkpoint. */
#define _GNU_SOURCE
#include "ledger/ledger.h"
#include "ledger/ledger_int.h"

#include <stdio.h>
#include <string.h>

#include "ledger/note.h"
#include "ledger/store.h"

static int lmdb_err(char *err, int rc, const char *what)
{
	return as_fail(err, rc == MDB_MAP_FULL ? AS_ETOOBIG : AS_EIO, "ledger: %s: %s", what, mdb_strerror(rc));
}

/* The newest periodic checkpoint's size, from "meta" (ledger.c keeps it there as "ckpt": size
 * and time, 8 bytes each), and its stored note. */
static int periodic_txn(struct ledger *l, MDB_txn *txn, uint64_t *size, MDB_val *note, char *err)
{
	MDB_val k = {4, (void *)"ckpt"}, v;
	int rc = mdb_get(txn, l->meta, &k, &v);
	if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size == 16 && be64_get(v.mv_data) == 0))
		return as_fail(err, AS_ENOTFOUND, "no periodic checkpoint is signed yet");
	if (rc != 0)
		return lmdb_err(err, rc, "reading the tree state");
	if (v.mv_size != 16)
		return as_fail(err, AS_ECORRUPT, "ledger: the tree state's checkpoint is %zu bytes, not 16", v.mv_size);
	*size = be64_get(v.mv_data);
	uint8_t kb[8];
	be64_put(kb, *size);
	MDB_val ck = {8, kb};
	rc = mdb_get(txn, l->ckpts, &ck, note);
	if (rc == MDB_NOTFOUND)
		return as_fail(err, AS_ECORRUPT, "ledger: no checkpoint stored at the periodic size %llu",
			       (unsigned long long)*size);
	if (rc != 0)
		return lmdb_err(err, rc, "reading a checkpoint");
	if (note->mv_size > CKPT_MAX)
		return as_fail(err, AS_ECORRUPT, "ledger: the checkpoint at %llu is %zu bytes, over %d",
			       (unsigned long long)*size, note->mv_size, CKPT_MAX);
	return 0;
}

int ledger_periodic(struct ledger *l, uint64_t *size, struct buf *note, char *err)
{
	MDB_txn *txn;
	MDB_val v;
	int rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return lmdb_err(err, rc, "begin");
	buf_reset(note);
	rc = periodic_txn(l, txn, size, &v, err);
	if (rc == 0 && buf_put(note, v.mv_data, v.mv_size) != 0)
		rc = as_fail(err, AS_ENOMEM, "out of memory for a checkpoint");
	mdb_txn_abort(txn);
	return rc;
}

/* The length of a note's body: up to and including the LF before the blank line. */
static size_t body_len(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (p[i] == '\n' && p[i + 1] == '\n')
			return i + 1;
	return 0;
}

/* Whether signature line (without its prefix, name first) is by name with key ID id. */
static int same_signer(struct rd line, const struct ledger_cosig *c)
{
	struct rd name;
	uint8_t blob[128];
	size_t bl = 0;
	if (rd_expect(&line, NOTE_SIG_PREFIX) != 0 || rd_token(&line, " ", &name) != 0 || rd_cmp(&name, c->name) != 0 ||
	    rd_expect(&line, " ") != 0)
		return 0;
	return b64_decode((const char *)line.p + line.off, rd_left(&line), blob, sizeof blob, &bl) == 0 && bl >= 4 &&
	       memcmp(blob, c->keyid, 4) == 0;
}

/* The note old with the cosignatures c appended, each replacing a line by the same signer. */
static int merge(const uint8_t *old, size_t n, size_t blen, const struct ledger_cosig *c, size_t nc, struct buf *out,
		 char *err)
{
	struct rd r, line;
	rd_init(&r, old, n);
	r.off = blen + 1; /* past the blank line */
	if (buf_put(out, old, blen + 1) != 0)
		return as_fail(err, AS_ETOOBIG, "the checkpoint's note is too long");
	while (rd_left(&r) > 0) {
		if (rd_line(&r, &line) != 0)
			return as_fail(err, AS_ECORRUPT, "the stored checkpoint's last line has no newline");
		int replaced = 0;
		for (size_t i = 0; i < nc && !replaced; i++)
			replaced = same_signer(line, &c[i]);
		if (!replaced && (buf_put(out, line.p, line.len) != 0 || buf_putc(out, '\n') != 0))
			return as_fail(err, AS_ETOOBIG, "the checkpoint with its cosignatures is over %d bytes",
				       CKPT_MAX);
	}
	for (size_t i = 0; i < nc; i++)
		if (buf_put(out, c[i].line, strlen(c[i].line)) != 0)
			return as_fail(err, AS_ETOOBIG, "the checkpoint with its cosignatures is over %d bytes",
				       CKPT_MAX);
	return 0;
}

static int cosign_txn(struct ledger *l, MDB_txn *txn, uint64_t size, const char *body, size_t blen,
		      const struct ledger_cosig *c, size_t n, struct buf *out, int *latest, char *err)
{
	uint8_t kb[8], logid[4];
	be64_put(kb, size);
	MDB_val k = {8, kb}, v;
	int rc = mdb_get(txn, l->ckpts, &k, &v);
	if (rc == MDB_NOTFOUND)
		return as_fail(err, AS_ENOTFOUND, "no checkpoint is stored at size %llu", (unsigned long long)size);
	if (rc != 0)
		return lmdb_err(err, rc, "reading a checkpoint");
	size_t have = body_len(v.mv_data, v.mv_size);
	if (have != blen || memcmp(v.mv_data, body, blen) != 0)
		return as_fail(err, AS_ECORRUPT, "the checkpoint stored at size %llu is not the one cosigned",
			       (unsigned long long)size);
	GUARD(note_key_id(l->key, logid));
	for (size_t i = 0; i < n; i++)
		if (memcmp(c[i].keyid, logid, 4) == 0)
			return as_fail(err, AS_EINVAL, "witness %s has the log key's key ID", c[i].name);
	GUARD(merge(v.mv_data, v.mv_size, blen, c, n, out, err));
	struct checkpoint cp;
	char e2[AS_ERRLEN];
	if (ckpt_verify(out->p, out->len, &l->key, 1, &cp, e2) != 0)
		return as_fail(err, AS_EINVAL, "the checkpoint with its cosignatures does not verify: %s", e2);
	MDB_val nv = {out->len, out->p};
	if ((rc = mdb_put(txn, l->ckpts, &k, &nv, 0)) != 0)
		return lmdb_err(err, rc, "storing a checkpoint");
	uint64_t psize;
	MDB_val pv;
	*latest = periodic_txn(l, txn, &psize, &pv, e2) == 0 && psize == size;
	return 0;
}

int ledger_cosign(struct ledger *l, uint64_t size, const char *body, size_t blen, const struct ledger_cosig *c,
		  size_t n, char *err)
{
	if (n == 0 || n > LEDGER_COSIG_MAX)
		return as_fail(err, AS_EINVAL, "%zu cosignatures (1 to %d)", n, LEDGER_COSIG_MAX);
	MDB_txn *txn;
	int rc = mdb_txn_begin(l->env, NULL, 0, &txn), latest = 0;
	if (rc != 0)
		return lmdb_err(err, rc, "begin");
	struct buf out;
	buf_init(&out, CKPT_MAX);
	rc = cosign_txn(l, txn, size, body, blen, c, n, &out, &latest, err);
	if (rc == 0) {
		int cr = mdb_txn_commit(txn);
		rc = cr ? lmdb_err(err, cr, "commit") : 0;
		if (rc == 0) /* not in the write-ahead log: durable by LMDB's sync */
			rc = ledger_wal_sync(l, err);
	} else {
		mdb_txn_abort(txn);
	}
	if (rc == 0 && latest) {
		/* As ledger.c's: the stored note is authoritative, the file a convenience. */
		char path[4200], e2[AS_ERRLEN];
		snprintf(path, sizeof path, "%s/%s", l->dir, STORE_CKPT_FILE);
		if (file_write_atomic(path, out.p, out.len, 0644, e2) != 0)
			fprintf(stderr, "assent: warning: %s\n", e2);
	}
	buf_free(&out);
	return rc;
}
