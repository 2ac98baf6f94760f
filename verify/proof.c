/* RFC 9162 inclusion proofs of ledger entries, made from and checked against
 * signed checkpoints. */
#include "verify/proof.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "common/cvjson.h"
#include "ledger/entry.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/store.h"

int proof_make(const char *dir, uint64_t seq, uint64_t size, struct eckey *const *keys, size_t nkeys, struct buf *out,
	       char *err)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi entries, ckpts;
	int nolock;
	GUARD(store_open_ro(dir, &env, &txn, &entries, &ckpts, &nolock, err));
	int rc = proof_make_txn(txn, entries, ckpts, seq, size, keys, nkeys, out, err);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}

/* The checkpoint at *size, or the latest one when *size is 0 (*size becomes its size),
 * verified with keys, its note kept in *note. None at a size asked for is no error: the
 * proof then carries none (*note stays empty). */
static int find_checkpoint(MDB_txn *txn, MDB_dbi ckpts, uint64_t *size, struct eckey *const *keys, size_t nkeys,
			   struct buf *note, struct checkpoint *cp, char *err)
{
	MDB_cursor *cur;
	MDB_val k, v;
	if (mdb_cursor_open(txn, ckpts, &cur) != 0)
		return as_fail(err, AS_EIO, "cannot read checkpoints");
	int g, rc = 0;
	if (*size == 0) {
		g = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	} else {
		uint8_t kb[8];
		be64_put(kb, *size);
		k.mv_size = 8;
		k.mv_data = kb;
		g = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
	}
	if (g == 0) {
		if (ckpt_verify(v.mv_data, v.mv_size, keys, nkeys, cp, err) != 0)
			rc = AS_ECORRUPT;
		else if (buf_put(note, v.mv_data, v.mv_size) != 0)
			rc = as_fail(err, AS_ENOMEM, "out of memory");
		else
			*size = cp->size;
	} else if (*size == 0) {
		rc = as_fail(err, AS_ENOTFOUND, "the ledger has no checkpoint yet; pass --size");
	}
	mdb_cursor_close(cur);
	return rc;
}

/* The leaf hashes of the first size entries, each entry checked as it is read (its key, its
 * link to the one before); entry seq's bytes are kept in *entry. */
static int read_leaves(MDB_txn *txn, MDB_dbi entries, uint64_t seq, uint64_t size, uint8_t (*leaves)[32],
		       struct buf *entry, char *err)
{
	MDB_cursor *cur;
	MDB_val k, v;
	if (mdb_cursor_open(txn, entries, &cur) != 0)
		return as_fail(err, AS_EIO, "cannot read entries");
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	int g, rc = 0;
	uint64_t i = 0;
	uint8_t prev[32] = {0};
	for (g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0 && i < size;
	     g = mdb_cursor_get(cur, &k, &v, MDB_NEXT), i++) {
		struct cv *e;
		char e2[AS_ERRLEN];
		cv_arena_reset(&a);
		if (k.mv_size != 8 || be64_get(k.mv_data) != i || v.mv_size > ENTRY_MAX ||
		    cbor_decode(v.mv_data, v.mv_size, &a, &e, e2) != 0 || entry_check(e, i, prev, e2) != 0) {
			rc = as_fail(err, AS_ECORRUPT, "entry %llu is damaged; run assent-verify ledger",
				     (unsigned long long)i);
			break;
		}
		merkle_leaf_hash(v.mv_data, v.mv_size, leaves[i]);
		memcpy(prev, leaves[i], 32);
		if (i == seq && buf_put(entry, v.mv_data, v.mv_size) != 0) {
			rc = as_fail(err, AS_ENOMEM, "out of memory");
			break;
		}
	}
	mdb_cursor_close(cur);
	cv_arena_free(&a);
	if (rc == 0 && i < size)
		rc = as_fail(err, AS_ECORRUPT, "the ledger has %llu entries, fewer than the tree size %llu",
			     (unsigned long long)i, (unsigned long long)size);
	return rc;
}

int proof_make_txn(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, uint64_t seq, uint64_t size, struct eckey *const *keys,
		   size_t nkeys, struct buf *out, char *err)
{
	int rc = 0;
	uint8_t(*leaves)[32] = NULL;
	struct buf note, entry;
	buf_init(&note, CKPT_MAX);
	buf_init(&entry, ENTRY_MAX);
	/* The checkpoint at the requested size, or the latest one. */
	struct checkpoint cp;
	if ((rc = find_checkpoint(txn, ckpts, &size, keys, nkeys, &note, &cp, err)) != 0)
		goto out;
	if (seq >= size) {
		rc = as_fail(err, AS_EINVAL, "entry %llu is not in a tree of size %llu", (unsigned long long)seq,
			     (unsigned long long)size);
		goto out;
	}
	if (size > (1ull << 32) || !(leaves = malloc(size * 32))) {
		rc = as_fail(err, AS_ENOMEM, "tree of size %llu too large", (unsigned long long)size);
		goto out;
	}
	if ((rc = read_leaves(txn, entries, seq, size, leaves, &entry, err)) != 0)
		goto out;
	uint8_t path[MERKLE_MAX_PROOF][32], root[32];
	size_t np;
	if (merkle_inclusion_proof((const uint8_t(*)[32])leaves, size, seq, path, &np) != 0) {
		rc = as_fail(err, AS_EINVAL, "no inclusion proof for entry %llu in a tree of size %llu",
			     (unsigned long long)seq, (unsigned long long)size);
		goto out;
	}
	struct merkle m;
	merkle_init(&m);
	for (uint64_t j = 0; j < size; j++)
		merkle_append(&m, leaves[j]);
	merkle_root(&m, root);
	if (note.len && memcmp(root, cp.root, 32) != 0) {
		rc = as_fail(err, AS_ECORRUPT, "the root at size %llu differs from its signed checkpoint",
			     (unsigned long long)size);
		goto out;
	}
	char hex[65];
	json_t *o = json_object(), *pa = json_array();
	hex_encode(leaves[seq], 32, hex);
	json_object_set_new(o, "origin", note.len ? json_string(cp.origin) : json_null());
	json_object_set_new(o, "index", json_integer((json_int_t)seq));
	json_object_set_new(o, "tree_size", json_integer((json_int_t)size));
	json_object_set_new(o, "leaf_hash", json_string(hex));
	struct buf b64;
	buf_init(&b64, 2 * ENTRY_MAX);
	if (b64_encode(entry.p, entry.len, &b64) != 0)
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	json_object_set_new(o, "entry", json_stringn((const char *)b64.p, b64.len));
	buf_free(&b64);
	for (size_t j = 0; j < np; j++) {
		hex_encode(path[j], 32, hex);
		json_array_append_new(pa, json_string(hex));
	}
	json_object_set_new(o, "path", pa);
	hex_encode(root, 32, hex);
	json_object_set_new(o, "root", json_string(hex));
	json_object_set_new(o, "checkpoint", note.len ? json_stringn((const char *)note.p, note.len) : json_null());
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (rc == 0 && (!s || buf_put(out, s, strlen(s)) != 0 || buf_putc(out, '\n') != 0))
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	free(s);
out:
	free(leaves);
	buf_free(&note);
	buf_free(&entry);
	return rc;
}

static int get_hex32(json_t *o, const char *name, uint8_t out[32])
{
	json_t *s = json_object_get(o, name);
	return json_is_string(s) && hex_decode(json_string_value(s), json_string_length(s), out, 32) == 0 ? 0 : -1;
}

static int get_u64(json_t *o, const char *name, uint64_t *out)
{
	json_t *i = json_object_get(o, name);
	if (!json_is_integer(i) || json_integer_value(i) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(i);
	return 0;
}

#define BAD(...) as_fail(err, AS_ECORRUPT, __VA_ARGS__)

/* A proof checked against a checkpoint of another size: how to get one that fits. */
static int size_hint(char *err, uint64_t index, uint64_t size, uint64_t cpsize)
{
	return BAD("proof: it is for the tree of size %llu, the checkpoint given is of size %llu: make the proof "
		   "at that size (assent-verify proof LEDGER %llu --size %llu --key PUB.pem), or check it against "
		   "a checkpoint of size %llu",
		   (unsigned long long)size, (unsigned long long)cpsize, (unsigned long long)index,
		   (unsigned long long)cpsize, (unsigned long long)size);
}

/* The proof's shape: an object of exactly the fields of a proof, its numbers, hashes and
 * path (*np hashes). */
static int proof_fields(json_t *o, uint64_t *index, uint64_t *size, uint8_t leaf[32], uint8_t root[32],
			uint8_t path[MERKLE_MAX_PROOF][32], size_t *np, char *err)
{
	static const char *fields[] = {"origin", "index", "tree_size", "leaf_hash",
				       "entry",	 "path",  "root",      "checkpoint"};
	if (!json_is_object(o) || json_object_size(o) != sizeof fields / sizeof fields[0])
		return BAD("proof must be an object with exactly the fields of a proof");
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (!json_object_get(o, fields[i]))
			return BAD("proof has no '%s'", fields[i]);
	if (get_u64(o, "index", index) || get_u64(o, "tree_size", size) || get_hex32(o, "leaf_hash", leaf) ||
	    get_hex32(o, "root", root))
		return BAD("proof: index, tree_size, leaf_hash or root malformed");
	json_t *pa = json_object_get(o, "path");
	*np = json_array_size(pa);
	if (!json_is_array(pa) || *np > MERKLE_MAX_PROOF)
		return BAD("proof: path must be an array of at most %d hashes", MERKLE_MAX_PROOF);
	for (size_t i = 0; i < *np; i++) {
		json_t *s = json_array_get(pa, i);
		if (!json_is_string(s) || hex_decode(json_string_value(s), json_string_length(s), path[i], 32) != 0)
			return BAD("proof: path[%zu] is not a lowercase hex SHA-256 hash", i);
	}
	return 0;
}

/* The entry bytes must hash to the leaf and be a well-formed entry at index. *entry (the
 * caller frees it) holds them. */
static int proof_entry(json_t *o, uint64_t index, const uint8_t leaf[32], struct cv_arena *a, uint8_t **entry,
		       char *err)
{
	uint8_t h[32];
	json_t *es = json_object_get(o, "entry");
	size_t elen = 0;
	if (!json_is_string(es) || !(*entry = malloc(ENTRY_MAX + 3)) ||
	    b64_decode(json_string_value(es), json_string_length(es), *entry, ENTRY_MAX + 3, &elen) != 0)
		return BAD("proof: entry is not base64");
	merkle_leaf_hash(*entry, elen, h);
	struct cv *e;
	char e2[AS_ERRLEN];
	if (memcmp(h, leaf, 32) != 0)
		return BAD("proof: the entry does not hash to leaf_hash");
	if (cbor_decode(*entry, elen, a, &e, e2) != 0 || entry_check(e, index, NULL, e2) != 0)
		return BAD("proof: entry %llu is malformed: %s", (unsigned long long)index, e2);
	return 0;
}

int proof_check(const uint8_t *proof, size_t n, const uint8_t *ckpt, size_t ckptlen, struct eckey *const *keys,
		size_t nkeys, uint64_t *index, uint64_t *size, char *err)
{
	if (n > PROOF_MAX)
		return BAD("proof is %zu bytes, over the maximum", n);
	json_error_t je;
	json_t *o = json_loadb((const char *)proof, n, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return BAD("proof is not valid JSON: %s (line %d)", je.text, je.line);
	int rc = AS_ECORRUPT;
	uint8_t leaf[32], root[32], path[MERKLE_MAX_PROOF][32];
	size_t np = 0;
	uint8_t *entry = NULL;
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	if ((rc = proof_fields(o, index, size, leaf, root, path, &np, err)) != 0 ||
	    (rc = proof_entry(o, *index, leaf, &a, &entry, err)) != 0)
		goto out;
	/* The root must come from a signed checkpoint of the same size. */
	json_t *cs = json_object_get(o, "checkpoint"), *og = json_object_get(o, "origin");
	struct checkpoint cp;
	char e2[AS_ERRLEN];
	int given = ckpt != NULL; /* a checkpoint the auditor saved, not the proof's own */
	if (!ckpt) {
		if (!json_is_string(cs)) {
			rc = BAD("proof carries no checkpoint for size %llu: pass --checkpoint",
				 (unsigned long long)*size);
			goto out;
		}
		ckpt = (const uint8_t *)json_string_value(cs);
		ckptlen = json_string_length(cs);
	}
	if (ckpt_verify(ckpt, ckptlen, keys, nkeys, &cp, e2) != 0) {
		rc = BAD("proof's checkpoint: %s", e2);
		goto out;
	}
	if (!(json_is_null(og) && json_is_null(cs)) &&
	    (!json_is_string(og) || strcmp(json_string_value(og), cp.origin) != 0)) {
		rc = BAD("proof: origin does not match the checkpoint's");
		goto out;
	}
	if (given && cp.size != *size) {
		rc = size_hint(err, *index, *size, cp.size); /* a checkpoint saved earlier or later */
		goto out;
	}
	if (json_is_string(cs) &&
	    (json_string_length(cs) != ckptlen || memcmp(json_string_value(cs), ckpt, ckptlen) != 0)) {
		rc = BAD("proof: its checkpoint differs from the one given");
		goto out;
	}
	if (cp.size != *size || memcmp(cp.root, root, 32) != 0) {
		rc = BAD("proof: tree size or root differs from the signed checkpoint (size %llu)",
			 (unsigned long long)cp.size);
		goto out;
	}
	if (merkle_verify_inclusion(*index, *size, leaf, (const uint8_t(*)[32])path, np, cp.root) != 0) {
		rc = BAD("proof: the path does not lead from entry %llu to the checkpoint's root",
			 (unsigned long long)*index);
		goto out;
	}
	rc = 0;
out:
	free(entry);
	cv_arena_free(&a);
	json_decref(o);
	return rc;
}

json_t *proof_entry_json(const uint8_t *proof, size_t n)
{
	json_t *o = n <= PROOF_MAX ? json_loadb((const char *)proof, n, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *es = json_object_get(o, "entry"), *out = NULL;
	uint8_t *entry = malloc(ENTRY_MAX + 3);
	size_t elen = 0;
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	struct cv *e;
	char err[AS_ERRLEN];
	if (json_is_string(es) && entry &&
	    b64_decode(json_string_value(es), json_string_length(es), entry, ENTRY_MAX + 3, &elen) == 0 &&
	    cbor_decode(entry, elen, &a, &e, err) == 0)
		out = cv_to_json(e);
	free(entry);
	cv_arena_free(&a);
	json_decref(o);
	return out;
}
