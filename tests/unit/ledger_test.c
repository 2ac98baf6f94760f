/* Unit tests for ledger/ledger.c (and av_verify_ledger) on real LMDB environments in temporary
 * directories: appends, refused batches, checkpoints, reopen, tampering; read back with LMDB directly. */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <lmdb.h>

#include "ledger/ledger.h"
#include "include/assent/verify.h"
#include "common/cbor.h"
#include "common/eckey.h"
#include "ledger/entry.h"
#include "ledger/headsign.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "common/util.h"
#include "tests/unit/scratch.h"

/* ---- per-test state directory: STATE/ledger and STATE/keys ---- */

struct t {
	char state[64];
	char dir[128];	/* STATE/ledger */
	char pub[128];	/* STATE/keys/checkpoint.pub */
	char priv[128]; /* STATE/keys/checkpoint.key */
	char ckfile[160];
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof *t);
	if (!t)
		return -1;
	strcpy(t->state, "/tmp/assent-ledger-test.XXXXXX");
	if (!mkdtemp(t->state)) {
		free(t);
		return -1;
	}
	snprintf(t->dir, sizeof t->dir, "%s/ledger", t->state);
	snprintf(t->pub, sizeof t->pub, "%s/keys/checkpoint.pub", t->state);
	snprintf(t->priv, sizeof t->priv, "%s/keys/checkpoint.key", t->state);
	snprintf(t->ckfile, sizeof t->ckfile, "%s/checkpoint", t->dir);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	scratch_rm(t->state);
	free(t);
	return 0;
}

static struct ledger_opts opts_every(uint64_t every)
{
	struct ledger_opts o = {0};
	o.checkpoint_every = every;
	o.map_size = (size_t)64 << 20;
	return o;
}

static struct ledger *open_ok(const struct t *t, const struct ledger_opts *o)
{
	struct ledger *l = NULL;
	char err[AS_ERRLEN] = "";
	int rc = ledger_open(t->dir, o, &l, err);
	if (rc != 0)
		fail_msg("ledger_open: %d %s", rc, err);
	return l;
}

/* ---- records ---- */

/* A request record {kind, session_id, type, message} (plus extra text fields), canonical CBOR. */
static void rec_request(struct buf *out, const char *msg)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *m = cv_map(&a, 4);
	const char *kv[4][2] = {{"kind", "request"}, {"session_id", "sess-7"}, {"type", "tool_call"}, {"message", msg}};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0])), 0);
		assert_int_equal(cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1])), 0);
	}
	buf_init(out, 1 << 16);
	char err[AS_ERRLEN];
	assert_int_equal(cbor_encode(m, out, err), 0);
	cv_arena_free(&a);
}

struct batch {
	size_t n;
	struct buf *b;
	struct ledger_rec *recs;
	struct ledger_pos *pos;
};

static void batch_make(struct batch *bt, size_t n, const char *tag)
{
	bt->n = n;
	bt->b = calloc(n, sizeof *bt->b);
	bt->recs = calloc(n, sizeof *bt->recs);
	bt->pos = calloc(n, sizeof *bt->pos);
	assert_true(bt->b && bt->recs && bt->pos);
	for (size_t i = 0; i < n; i++) {
		char msg[96];
		snprintf(msg, sizeof msg, "%s message %zu", tag, i);
		rec_request(&bt->b[i], msg);
		bt->recs[i].cbor = bt->b[i].p;
		bt->recs[i].len = bt->b[i].len;
	}
}

static void batch_free(struct batch *bt)
{
	for (size_t i = 0; i < bt->n; i++)
		buf_free(&bt->b[i]);
	free(bt->b);
	free(bt->recs);
	free(bt->pos);
}

/* ---- reading LMDB directly ---- */

struct row {
	uint64_t key;
	uint8_t *data;
	size_t len;
};

struct rows {
	struct row *r;
	size_t n;
};

static void rows_free(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->r[i].data);
	free(rs->r);
	rs->r = NULL;
	rs->n = 0;
}

/* Read every record of a named database (8-byte big-endian keys). Only with the ledger closed:
 * a second environment handle in one process would drop the first one's locks. */
static void read_db(const char *dir, const char *name, struct rows *out)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, name, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	out->r = NULL;
	out->n = 0;
	size_t cap = 0;
	int rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		assert_int_equal(k.mv_size, 8);
		if (out->n == cap) {
			cap = cap ? 2 * cap : 64;
			out->r = realloc(out->r, cap * sizeof *out->r);
			assert_non_null(out->r);
		}
		struct row *r = &out->r[out->n++];
		r->key = be64_get(k.mv_data);
		r->len = v.mv_size;
		r->data = malloc(v.mv_size ? v.mv_size : 1);
		assert_non_null(r->data);
		memcpy(r->data, v.mv_data, v.mv_size);
	}
	assert_int_equal(rc, MDB_NOTFOUND);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* Check every stored entry: keys 0..n-1, canonical, entry_check with the prev chain.
 * Fills leaves (n of them, caller frees) and returns n. */
static size_t check_chain(const struct t *t, uint8_t (**leaves)[32], struct rows *rs)
{
	read_db(t->dir, "entries", rs);
	*leaves = calloc(rs->n ? rs->n : 1, 32);
	assert_non_null(*leaves);
	uint8_t prev[32] = {0};
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	for (size_t i = 0; i < rs->n; i++) {
		char err[AS_ERRLEN] = "";
		struct cv *e;
		if (rs->r[i].key != i)
			fail_msg("stored entry %zu has key %llu", i, (unsigned long long)rs->r[i].key);
		cv_arena_reset(&a);
		if (cbor_decode(rs->r[i].data, rs->r[i].len, &a, &e, err) != 0 || entry_check(e, i, prev, err) != 0)
			fail_msg("stored entry %zu: %s", i, err);
		merkle_leaf_hash(rs->r[i].data, rs->r[i].len, (*leaves)[i]);
		memcpy(prev, (*leaves)[i], 32);
	}
	cv_arena_free(&a);
	return rs->n;
}

static void root_of(const uint8_t (*leaves)[32], size_t n, uint8_t root[32])
{
	struct merkle m;
	merkle_init(&m);
	for (size_t i = 0; i < n; i++)
		merkle_append(&m, leaves[i]);
	merkle_root(&m, root);
}

static struct eckey *load_pub(const struct t *t)
{
	struct eckey *k = NULL;
	char err[AS_ERRLEN];
	if (eckey_load_public(t->pub, &k, err) != 0)
		fail_msg("checkpoint.pub: %s", err);
	return k;
}

/* Verify the checkpoint file with keys/checkpoint.pub; returns its checkpoint. */
static struct checkpoint verify_ckpt_file(const struct t *t)
{
	struct buf b;
	char err[AS_ERRLEN] = "";
	struct checkpoint c;
	struct eckey *k = load_pub(t);
	assert_int_equal(file_read(t->ckfile, CKPT_MAX, &b, err), 0);
	int rc = ckpt_verify(b.p, b.len, &k, 1, &c, err);
	buf_free(&b);
	eckey_free(k);
	if (rc != 0)
		fail_msg("checkpoint file does not verify: %s", err);
	return c;
}

static const struct cv *field(const struct cv *e, const char *k)
{
	const struct cv *v = cv_get(e, k);
	if (!v)
		fail_msg("entry without field %s", k);
	return v;
}

/* ---- tests ---- */

static void test_open_creates_key_and_key_entry(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0);
	struct ledger *l = open_ok(t, &o);
	assert_int_equal(ledger_size(l), 1);
	char origin[CKPT_ORIGIN_MAX + 1];
	snprintf(origin, sizeof origin, "%s", ledger_origin(l));
	ledger_close(l);

	struct stat st;
	assert_int_equal(stat(t->priv, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(t->pub, &st), 0);

	struct eckey *k = load_pub(t);
	uint8_t id[4];
	char hex[9], want_origin[32];
	assert_int_equal(note_key_id(k, id), 0);
	eckey_free(k);
	hex_encode(id, 4, hex);
	snprintf(want_origin, sizeof want_origin, "assent/%s", hex);
	assert_string_equal(origin, want_origin);

	struct rows rs;
	uint8_t(*leaves)[32];
	assert_int_equal(check_chain(t, &leaves, &rs), 1);
	struct cv_arena a;
	cv_arena_init(&a, 1024);
	struct cv *e;
	char err[AS_ERRLEN];
	assert_int_equal(cbor_decode(rs.r[0].data, rs.r[0].len, &a, &e, err), 0);
	assert_true(cv_text_eq(field(e, "kind"), "key"));
	assert_true(cv_text_eq(field(e, "purpose"), "checkpoint"));
	assert_true(cv_text_eq(field(e, "event"), "created"));
	assert_true(cv_text_eq(field(e, "kid"), hex));
	const struct cv *pk = field(e, "public_key");
	struct buf pem;
	assert_int_equal(file_read(t->pub, 16384, &pem, err), 0);
	assert_int_equal(pk->t, CV_TEXT);
	assert_int_equal(pk->n, pem.len);
	assert_memory_equal(pk->s, pem.p, pem.len);
	buf_free(&pem);
	const struct cv *prev = field(e, "prev");
	static const uint8_t zero[32];
	assert_memory_equal(prev->s, zero, 32);
	cv_arena_free(&a);
	free(leaves);
	rows_free(&rs);
}

static void test_open_uses_keys_dir_and_origin(void **state)
{
	struct t *t = *state;
	char kdir[160], kpub[200], kpriv[200];
	snprintf(kdir, sizeof kdir, "%s/elsewhere/keys", t->state);
	snprintf(kpub, sizeof kpub, "%s/checkpoint.pub", kdir);
	snprintf(kpriv, sizeof kpriv, "%s/checkpoint.key", kdir);
	struct ledger_opts o = opts_every(0);
	o.keys_dir = kdir;
	o.origin = "example.org/audit-log";
	struct ledger *l = open_ok(t, &o);
	assert_string_equal(ledger_origin(l), "example.org/audit-log");
	ledger_close(l);
	struct stat st;
	assert_int_equal(stat(kpriv, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(kpub, &st), 0);
	assert_int_not_equal(stat(t->pub, &st), 0); /* nothing in the default place */
	/* the checkpoint is signed by that key under that origin */
	struct eckey *k = NULL;
	struct buf b;
	struct checkpoint c;
	char err[AS_ERRLEN] = "";
	assert_int_equal(eckey_load_public(kpub, &k, err), 0);
	assert_int_equal(file_read(t->ckfile, CKPT_MAX, &b, err), 0);
	int rc = ckpt_verify(b.p, b.len, &k, 1, &c, err);
	buf_free(&b);
	eckey_free(k);
	if (rc != 0)
		fail_msg("checkpoint file: %s", err);
	assert_string_equal(c.origin, "example.org/audit-log");
	assert_int_equal(c.size, 1);
}

static void test_append_batches(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0);
	struct ledger *l = open_ok(t, &o);
	static const size_t sizes[] = {1, 16, 256};
	struct batch bt[3];
	char err[AS_ERRLEN] = "";
	uint64_t expect = 1;
	assert_int_equal(ledger_append(l, NULL, 0, NULL, err), 0); /* an empty batch is a no-op */
	assert_int_equal(ledger_size(l), 1);
	for (int b = 0; b < 3; b++) {
		char tag[24];
		snprintf(tag, sizeof tag, "batch%d", b);
		batch_make(&bt[b], sizes[b], tag);
		memset(bt[b].pos, 0xee, sizes[b] * sizeof *bt[b].pos);
		int rc = ledger_append(l, bt[b].recs, sizes[b], bt[b].pos, err);
		if (rc != 0)
			fail_msg("append of %zu: %s", sizes[b], err);
		for (size_t i = 0; i < sizes[b]; i++)
			if (bt[b].pos[i].seq != expect + i)
				fail_msg("batch %d item %zu got seq %llu, wanted %llu", b, i,
					 (unsigned long long)bt[b].pos[i].seq, (unsigned long long)(expect + i));
		expect += sizes[b];
		assert_int_equal(ledger_size(l), expect);
	}
	ledger_close(l);

	struct rows rs;
	uint8_t(*leaves)[32];
	size_t n = check_chain(t, &leaves, &rs);
	assert_int_equal(n, 1 + 1 + 16 + 256);
	struct cv_arena a;
	cv_arena_init(&a, 1024);
	for (int b = 0; b < 3; b++)
		for (size_t i = 0; i < sizes[b]; i++) {
			uint64_t s = bt[b].pos[i].seq;
			/* the leaf hash handed back is the hash of the stored bytes */
			if (memcmp(bt[b].pos[i].leaf, leaves[s], 32) != 0)
				fail_msg("leaf of seq %llu differs from the hash of its stored bytes",
					 (unsigned long long)s);
			/* and the stored entry holds the fields given */
			struct cv *e;
			cv_arena_reset(&a);
			assert_int_equal(cbor_decode(rs.r[s].data, rs.r[s].len, &a, &e, err), 0);
			char msg[96];
			snprintf(msg, sizeof msg, "batch%d message %zu", b, i);
			assert_true(cv_text_eq(field(e, "message"), msg));
			assert_true(cv_text_eq(field(e, "session_id"), "sess-7"));
		}
	/* one group commit: a batch shares one time */
	struct cv *e;
	uint64_t t0, t1;
	cv_arena_reset(&a);
	assert_int_equal(cbor_decode(rs.r[18].data, rs.r[18].len, &a, &e, err), 0);
	t0 = field(e, "time")->u;
	cv_arena_reset(&a);
	assert_int_equal(cbor_decode(rs.r[273].data, rs.r[273].len, &a, &e, err), 0);
	t1 = field(e, "time")->u;
	assert_true(t0 == t1);
	cv_arena_free(&a);
	for (int b = 0; b < 3; b++)
		batch_free(&bt[b]);
	free(leaves);
	rows_free(&rs);
}

static void test_bad_record_appends_nothing(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0);
	struct ledger *l = open_ok(t, &o);
	struct batch good;
	batch_make(&good, 3, "good");
	char err[AS_ERRLEN] = "";
	assert_int_equal(ledger_append(l, good.recs, 3, good.pos, err), 0);
	uint64_t size = ledger_size(l);
	assert_int_equal(size, 4);

	/* bad records, each put in the middle of a batch of three */
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct buf bad[8];
	size_t nbad = 0;
	/* 1. a reserved field */
	{
		struct cv *m = cv_map(&a, 5);
		const char *kv[5][2] = {
		    {"kind", "request"}, {"session_id", "s"}, {"type", "t"}, {"message", "m"}, {"seq", NULL}};
		for (int i = 0; i < 5; i++) {
			assert_int_equal(cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0])), 0);
			if (kv[i][1])
				assert_int_equal(cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1])), 0);
			else
				cv_set_uint(&m->items[2 * i + 1], 99);
		}
		buf_init(&bad[nbad], 4096);
		assert_int_equal(cbor_encode(m, &bad[nbad++], err), 0);
	}
	/* 2. an unknown kind; 3. a request without session_id */
	{
		struct cv *m = cv_map(&a, 2);
		assert_int_equal(cv_set_text(&a, &m->items[0], "kind", 4), 0);
		assert_int_equal(cv_set_text(&a, &m->items[1], "gossip", 6), 0);
		assert_int_equal(cv_set_text(&a, &m->items[2], "message", 7), 0);
		assert_int_equal(cv_set_text(&a, &m->items[3], "m", 1), 0);
		buf_init(&bad[nbad], 4096);
		assert_int_equal(cbor_encode(m, &bad[nbad++], err), 0);
		assert_int_equal(cv_set_text(&a, &m->items[1], "request", 7), 0);
		buf_init(&bad[nbad], 4096);
		assert_int_equal(cbor_encode(m, &bad[nbad++], err), 0);
	}
	/* 4. a valid record with a non-shortest map head (0xb8 0x04 for 0xa4) */
	buf_init(&bad[nbad], 4096);
	assert_int_equal(good.b[0].p[0], 0xa4);
	assert_int_equal(buf_put(&bad[nbad], "\xb8\x04", 2), 0);
	assert_int_equal(buf_put(&bad[nbad], good.b[0].p + 1, good.b[0].len - 1), 0);
	nbad++;
	/* 5. a valid record with a trailing byte */
	buf_init(&bad[nbad], 4096);
	assert_int_equal(buf_put(&bad[nbad], good.b[0].p, good.b[0].len), 0);
	assert_int_equal(buf_putc(&bad[nbad], 0), 0);
	nbad++;
	/* 6. not a map; 7. nothing at all */
	buf_init(&bad[nbad], 16);
	assert_int_equal(buf_put(&bad[nbad], "\x81\x01", 2), 0);
	nbad++;
	buf_init(&bad[nbad], 16);
	nbad++;
	/* 8. a record over ENTRY_MAX */
	buf_init(&bad[nbad], ENTRY_MAX + 16);
	assert_int_equal(buf_reserve(&bad[nbad], ENTRY_MAX + 1), 0);
	memset(bad[nbad].p, 0, ENTRY_MAX + 1);
	bad[nbad].len = ENTRY_MAX + 1;
	nbad++;

	struct batch mix;
	batch_make(&mix, 3, "refused");
	for (size_t i = 0; i < nbad; i++) {
		mix.recs[1].cbor = bad[i].p;
		mix.recs[1].len = bad[i].len;
		err[0] = 0;
		int rc = ledger_append(l, mix.recs, 3, mix.pos, err);
		if (rc == 0)
			fail_msg("batch with bad record %zu appended", i + 1);
		if (ledger_size(l) != size)
			fail_msg("bad record %zu: size went from %llu to %llu", i + 1, (unsigned long long)size,
				 (unsigned long long)ledger_size(l));
		if (!strstr(err, "entry 1"))
			fail_msg("bad record %zu: the error does not name entry 1: %s", i + 1, err);
	}
	/* the chain continues where it was */
	struct ledger_pos p;
	assert_int_equal(ledger_append(l, good.recs, 1, &p, err), 0);
	assert_int_equal(p.seq, size);
	ledger_close(l);

	struct rows rs;
	uint8_t(*leaves)[32];
	assert_int_equal(check_chain(t, &leaves, &rs), size + 1);
	assert_memory_equal(p.leaf, leaves[size], 32);
	for (size_t i = 0; i < rs.n; i++)
		if (memmem(rs.r[i].data, rs.r[i].len, "refused message", 15))
			fail_msg("entry %zu comes from a refused batch", i);
	free(leaves);
	rows_free(&rs);
	for (size_t i = 0; i < nbad; i++)
		buf_free(&bad[i]);
	cv_arena_free(&a);
	batch_free(&mix);
	batch_free(&good);
}

static void test_checkpoint_every_n(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(10);
	struct ledger *l = open_ok(t, &o);
	char err[AS_ERRLEN] = "";
	/* the first append (the key entry) is signed at once: no checkpoint had been made */
	struct checkpoint c = verify_ckpt_file(t);
	assert_int_equal(c.size, 1);
	assert_string_equal(c.origin, ledger_origin(l));
	struct batch one;
	batch_make(&one, 25, "single");
	for (size_t i = 0; i < 25; i++) {
		assert_int_equal(ledger_append(l, &one.recs[i], 1, &one.pos[i], err), 0);
		c = verify_ckpt_file(t);
		uint64_t size = ledger_size(l), want = size >= 21 ? 21 : size >= 11 ? 11 : 1;
		if (c.size != want)
			fail_msg("at size %llu the checkpoint file is for %llu, wanted %llu", (unsigned long long)size,
				 (unsigned long long)c.size, (unsigned long long)want);
	}
	/* explicit checkpoint of the current tree; again is a no-op */
	assert_int_equal(ledger_checkpoint(l, err), 0);
	assert_int_equal(verify_ckpt_file(t).size, 26);
	assert_int_equal(ledger_checkpoint(l, err), 0);
	/* a batch crossing the interval is signed once, after the batch */
	struct batch b16;
	batch_make(&b16, 16, "b16");
	assert_int_equal(ledger_append(l, b16.recs, 16, b16.pos, err), 0);
	assert_int_equal(verify_ckpt_file(t).size, 42);
	struct batch b3;
	batch_make(&b3, 3, "b3");
	assert_int_equal(ledger_append(l, b3.recs, 3, b3.pos, err), 0);
	assert_int_equal(verify_ckpt_file(t).size, 42);
	ledger_close(l); /* the final checkpoint covers 45 */
	c = verify_ckpt_file(t);
	assert_int_equal(c.size, 45);

	struct rows rs, cks;
	uint8_t(*leaves)[32];
	assert_int_equal(check_chain(t, &leaves, &rs), 45);
	uint8_t root[32];
	root_of((const uint8_t(*)[32])leaves, 45, root);
	assert_memory_equal(c.root, root, 32);
	/* every stored checkpoint verifies and carries the root of its size */
	read_db(t->dir, "checkpoints", &cks);
	static const uint64_t want[] = {1, 11, 21, 26, 42, 45};
	assert_int_equal(cks.n, 6);
	struct eckey *k = load_pub(t);
	for (size_t i = 0; i < cks.n; i++) {
		assert_int_equal(cks.r[i].key, want[i]);
		struct checkpoint sc;
		if (ckpt_verify(cks.r[i].data, cks.r[i].len, &k, 1, &sc, err) != 0)
			fail_msg("stored checkpoint %llu: %s", (unsigned long long)want[i], err);
		assert_int_equal(sc.size, want[i]);
		root_of((const uint8_t(*)[32])leaves, want[i], root);
		assert_memory_equal(sc.root, root, 32);
	}
	eckey_free(k);
	free(leaves);
	rows_free(&rs);
	rows_free(&cks);
	batch_free(&one);
	batch_free(&b16);
	batch_free(&b3);
}

static void test_tick_signs_after_interval(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(1000000);
	o.checkpoint_secs = 1;
	uint64_t t0 = now_unix_ms();
	struct ledger *l = open_ok(t, &o);
	uint64_t t_open = now_unix_ms();
	char err[AS_ERRLEN] = "";
	assert_int_equal(verify_ckpt_file(t).size, 1);
	struct batch b;
	batch_make(&b, 2, "tick");
	assert_int_equal(ledger_append(l, b.recs, 2, b.pos, err), 0);
	assert_int_equal(ledger_tick(l, err), 0);
	/* well inside the second: nothing new is signed */
	if (now_unix_ms() - t0 < 800)
		assert_int_equal(verify_ckpt_file(t).size, 1);
	/* past it: tick signs the grown tree */
	while (now_unix_ms() < t_open + 1100)
		usleep(20000);
	assert_int_equal(ledger_tick(l, err), 0);
	assert_int_equal(verify_ckpt_file(t).size, 3);
	ledger_close(l);
	batch_free(&b);
}

static void test_close_reopen_continues(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0);
	char err[AS_ERRLEN] = "";
	struct ledger *l = open_ok(t, &o);
	struct batch b1, b2;
	batch_make(&b1, 5, "first");
	batch_make(&b2, 3, "second");
	assert_int_equal(ledger_append(l, b1.recs, 5, b1.pos, err), 0);
	char origin[CKPT_ORIGIN_MAX + 1];
	snprintf(origin, sizeof origin, "%s", ledger_origin(l));
	ledger_close(l);
	struct buf pub1, pub2;
	assert_int_equal(file_read(t->pub, 16384, &pub1, err), 0);

	l = open_ok(t, &o);
	assert_int_equal(ledger_size(l), 6); /* no second key entry */
	assert_string_equal(ledger_origin(l), origin);
	assert_int_equal(ledger_append(l, b2.recs, 3, b2.pos, err), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(b2.pos[i].seq, 6 + i);
	ledger_close(l);
	assert_int_equal(file_read(t->pub, 16384, &pub2, err), 0);
	assert_int_equal(pub1.len, pub2.len);
	assert_memory_equal(pub1.p, pub2.p, pub1.len); /* the same key */
	buf_free(&pub1);
	buf_free(&pub2);

	struct rows rs;
	uint8_t(*leaves)[32];
	assert_int_equal(check_chain(t, &leaves, &rs), 9); /* prev links across the reopen hold */
	assert_memory_equal(b1.pos[4].leaf, leaves[5], 32);
	assert_memory_equal(b2.pos[0].leaf, leaves[6], 32);
	size_t keys = 0;
	for (size_t i = 0; i < rs.n; i++)
		keys += memmem(rs.r[i].data, rs.r[i].len, "\x64kind\x63key", 9) != NULL;
	assert_int_equal(keys, 1);
	struct checkpoint c = verify_ckpt_file(t);
	assert_int_equal(c.size, 9);
	uint8_t root[32];
	root_of((const uint8_t(*)[32])leaves, 9, root);
	assert_memory_equal(c.root, root, 32);
	free(leaves);
	rows_free(&rs);
	batch_free(&b1);
	batch_free(&b2);
}

/* av_verify_ledger holds for t's ledger under STATE/keys/checkpoint.pub. */
static void verify_ok(const struct t *t, struct av_ledger_report *rep)
{
	const char *keys[] = {t->pub};
	struct av_ledger_opts vo = {.key_paths = keys, .nkeys = 1};
	assert_int_equal(av_verify_ledger(t->dir, &vo, rep), 0);
	if (!rep->ok)
		fail_msg("av_verify_ledger: %s", rep->reason);
}

static void test_av_verify_ledger_ok(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(50);
	char err[AS_ERRLEN] = "";
	struct ledger *l = open_ok(t, &o);
	struct batch b;
	batch_make(&b, 120, "verify");
	assert_int_equal(ledger_append(l, b.recs, 60, b.pos, err), 0);
	assert_int_equal(ledger_append(l, b.recs + 60, 60, b.pos + 60, err), 0);
	ledger_close(l);

	struct rows rs, cks;
	uint8_t(*leaves)[32];
	size_t n = check_chain(t, &leaves, &rs);
	assert_int_equal(n, 121);
	read_db(t->dir, "checkpoints", &cks);
	uint8_t root[32];
	root_of((const uint8_t(*)[32])leaves, n, root);

	struct av_ledger_report rep;
	verify_ok(t, &rep);
	assert_int_equal(rep.entries, n);
	assert_int_equal(rep.head_seq, n - 1);
	assert_memory_equal(rep.head_leaf, leaves[n - 1], 32);
	assert_memory_equal(rep.head_leaf, b.pos[119].leaf, 32);
	assert_memory_equal(rep.root, root, 32);
	assert_int_equal(rep.checkpoints, cks.n + 1); /* the stored ones and the file */
	assert_int_equal(rep.key_from_state, 0);

	/* no key given: the one beside the ledger; and a checkpoint an auditor kept */
	char saved[200];
	snprintf(saved, sizeof saved, "%s/saved-checkpoint", t->state);
	struct buf ck;
	assert_int_equal(file_read(t->ckfile, CKPT_MAX, &ck, err), 0);
	assert_int_equal(file_write_atomic(saved, ck.p, ck.len, 0644, err), 0);
	buf_free(&ck);
	const char *trusted[] = {saved};
	struct av_ledger_opts vo2 = {.trusted_paths = trusted, .ntrusted = 1};
	assert_int_equal(av_verify_ledger(t->dir, &vo2, &rep), 0);
	if (!rep.ok)
		fail_msg("av_verify_ledger with the state key: %s", rep.reason);
	assert_int_equal(rep.key_from_state, 0); /* the saved checkpoint pins the state directory's key */
	assert_int_equal(rep.trusted, 1);
	assert_int_equal(rep.entries, n);
	assert_memory_equal(rep.root, root, 32);
	free(leaves);
	rows_free(&rs);
	rows_free(&cks);
	batch_free(&b);
}

/* Flip one byte of every copy of marker in STATE/ledger/data.mdb; returns how many were found. */
static size_t tamper_file(const struct t *t, const char *marker)
{
	char path[200], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/data.mdb", t->dir);
	struct buf b;
	assert_int_equal(file_read(path, (size_t)256 << 20, &b, err), 0);
	size_t ml = strlen(marker), found = 0;
	for (size_t i = 0; i + ml <= b.len; i++)
		if (memcmp(b.p + i, marker, ml) == 0) {
			b.p[i + ml - 1] ^= 0x01; /* a letter for a letter: still canonical CBOR */
			found++;
		}
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
	assert_int_equal(fclose(f), 0);
	buf_free(&b);
	return found;
}

static void test_open_refuses_altered_last_entry(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0);
	char err[AS_ERRLEN] = "";
	struct ledger *l = open_ok(t, &o);
	struct batch b;
	batch_make(&b, 10, "plain");
	assert_int_equal(ledger_append(l, b.recs, 10, b.pos, err), 0);
	struct buf last;
	rec_request(&last, "LAST-ENTRY-MARKER-q");
	struct ledger_rec r = {last.p, last.len};
	struct ledger_pos p;
	assert_int_equal(ledger_append(l, &r, 1, &p, err), 0);
	assert_int_equal(p.seq, 11);
	ledger_close(l);

	assert_true(tamper_file(t, "LAST-ENTRY-MARKER-q") >= 1);
	l = NULL;
	int rc = ledger_open(t->dir, &o, &l, err);
	if (rc != AS_ECORRUPT) {
		if (rc == 0)
			ledger_close(l);
		fail_msg("ledger_open on an altered last entry returned %d, wanted AS_ECORRUPT", rc);
	}
	assert_null(l);

	/* the verifier blames that entry */
	const char *keys[] = {t->pub};
	struct av_ledger_opts vo = {.key_paths = keys, .nkeys = 1};
	struct av_ledger_report rep;
	assert_int_equal(av_verify_ledger(t->dir, &vo, &rep), 0);
	assert_int_equal(rep.ok, 0);
	assert_int_equal(rep.has_bad_seq, 1);
	assert_int_equal(rep.bad_seq, 11);
	buf_free(&last);
	batch_free(&b);
}

static void test_verify_blames_altered_middle_entry(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0);
	char err[AS_ERRLEN] = "";
	struct ledger *l = open_ok(t, &o);
	struct batch b;
	batch_make(&b, 10, "plain");
	assert_int_equal(ledger_append(l, b.recs, 5, b.pos, err), 0);
	struct buf mid;
	rec_request(&mid, "MIDDLE-ENTRY-MARKER-q");
	struct ledger_rec r = {mid.p, mid.len};
	struct ledger_pos p;
	assert_int_equal(ledger_append(l, &r, 1, &p, err), 0);
	assert_int_equal(p.seq, 6);
	assert_int_equal(ledger_append(l, b.recs + 5, 5, b.pos + 5, err), 0);
	ledger_close(l);

	const char *keys[] = {t->pub};
	struct av_ledger_opts vo = {.key_paths = keys, .nkeys = 1};
	struct av_ledger_report rep;
	assert_int_equal(av_verify_ledger(t->dir, &vo, &rep), 0);
	assert_int_equal(rep.ok, 1);
	assert_true(tamper_file(t, "MIDDLE-ENTRY-MARKER-q") >= 1);
	assert_int_equal(av_verify_ledger(t->dir, &vo, &rep), 0);
	assert_int_equal(rep.ok, 0);
	assert_int_equal(rep.has_bad_seq, 1);
	assert_int_equal(rep.bad_seq, 6);
	buf_free(&mid);
	batch_free(&b);
}

/* Every commit signs its head in its own transaction: after each append the newest
 * stored checkpoint covers the whole tree with its root, and since a head signature
 * replaces the previous head, the stored checkpoints stay the periodic ones plus one. */
static void test_every_commit_signs_its_head(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(1000000);
	o.checkpoint_secs = 100000;
	struct ledger *l = open_ok(t, &o);
	char err[AS_ERRLEN] = "";
	struct eckey *k = load_pub(t);
	struct batch b;
	batch_make(&b, 7, "head");
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(ledger_append(l, &b.recs[i], 1, &b.pos[i], err), 0);
		struct rows cks, rs;
		uint8_t(*leaves)[32];
		read_db(t->dir, "checkpoints", &cks);
		uint64_t n = check_chain(t, &leaves, &rs);
		assert_int_equal(n, ledger_size(l));
		assert_int_equal(cks.n, 2); /* the periodic one at size 1 (the key entry) and the head */
		assert_int_equal(cks.r[0].key, 1);
		assert_int_equal(cks.r[1].key, n);
		struct checkpoint c;
		if (ckpt_verify(cks.r[1].data, cks.r[1].len, &k, 1, &c, err) != 0)
			fail_msg("head checkpoint at %llu: %s", (unsigned long long)n, err);
		uint8_t root[32];
		root_of((const uint8_t(*)[32])leaves, n, root);
		assert_memory_equal(c.root, root, 32);
		/* the checkpoint file stays periodic: it is the one at size 1 */
		assert_int_equal(verify_ckpt_file(t).size, 1);
		rows_free(&cks);
		rows_free(&rs);
		free(leaves);
	}
	/* a close makes the head a periodic checkpoint: nothing is re-signed twice */
	ledger_close(l);
	struct rows cks;
	read_db(t->dir, "checkpoints", &cks);
	assert_int_equal(cks.n, 2);
	assert_int_equal(cks.r[1].key, 8);
	assert_int_equal(verify_ckpt_file(t).size, 8);
	rows_free(&cks);
	eckey_free(k);
	batch_free(&b);
}

/* A demo ledger (assent ledger append) and a gateway's ledger refuse to be opened as
 * each other; LEDGER_EITHER opens both, keeping what each is. */
static void test_demo_and_gateway_ledgers_stay_apart(void **state)
{
	struct t *t = *state;
	struct ledger_opts o = opts_every(0), demo = opts_every(0), either = opts_every(0);
	demo.demo = 1;
	either.demo = LEDGER_EITHER;
	struct ledger *l = open_ok(t, &demo);
	assert_int_equal(strncmp(ledger_origin(l), LEDGER_DEMO_PREFIX, strlen(LEDGER_DEMO_PREFIX)), 0);
	ledger_close(l);
	char err[AS_ERRLEN] = "";
	l = NULL;
	assert_int_equal(ledger_open(t->dir, &o, &l, err), AS_EINVAL);
	assert_non_null(strstr(err, "is a demo ledger"));
	l = open_ok(t, &either);
	assert_int_equal(strncmp(ledger_origin(l), LEDGER_DEMO_PREFIX, strlen(LEDGER_DEMO_PREFIX)), 0);
	ledger_close(l);
	scratch_rm(t->dir);
	l = open_ok(t, &o);
	assert_int_equal(strncmp(ledger_origin(l), "assent/", 7), 0);
	struct batch b;
	batch_make(&b, 1, "gw");
	assert_int_equal(ledger_append(l, b.recs, 1, b.pos, err), 0); /* the origin is stored with a commit */
	batch_free(&b);
	ledger_close(l);
	l = NULL;
	assert_int_equal(ledger_open(t->dir, &demo, &l, err), AS_EINVAL);
	assert_non_null(strstr(err, "is a gateway's ledger"));
}

/* The writer's OpenSSL signer makes signed notes that mbedTLS verifies, always with a
 * low s (s <= n/2), and none that verifies for another body. */
static void test_headsign_low_s_and_verifies(void **state)
{
	(void)state;
	static const uint8_t half[32] = {0x7f, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x7f, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0xff, 0xde, 0x73, 0x7d, 0x56, 0xd3, 0x8b,
					 0xcf, 0x42, 0x79, 0xdc, 0xe5, 0x61, 0x7e, 0x31, 0x92, 0xa8};
	struct eckey *k;
	struct headsign *hs;
	char err[AS_ERRLEN] = "";
	assert_int_equal(eckey_generate(&k), 0);
	assert_int_equal(headsign_open(k, &hs, err), 0);
	struct checkpoint c = {.size = 1};
	snprintf(c.origin, sizeof c.origin, "assent/test");
	struct buf note;
	buf_init(&note, CKPT_MAX);
	for (int i = 0; i < 64; i++) {
		c.size = (uint64_t)i + 1;
		c.root[0] = (uint8_t)i;
		buf_reset(&note);
		assert_int_equal(ckpt_sign_with(k, headsign_sign, hs, &c, &note, err), 0);
		struct checkpoint got;
		if (ckpt_verify(note.p, note.len, &k, 1, &got, err) != 0)
			fail_msg("note %d does not verify: %s", i, err);
		assert_int_equal(got.size, c.size);
		/* a signature of its own: DER SEQUENCE { INTEGER r, INTEGER s } */
		uint8_t der[ECKEY_SIG_MAX];
		size_t dl = 0;
		assert_int_equal(headsign_sign(hs, note.p, 20, der, &dl), 0);
		assert_true(dl > 8 && der[0] == 0x30 && der[2] == 0x02);
		size_t rl = der[3], so = 4 + rl;
		assert_true(so + 2 <= dl && der[so] == 0x02);
		size_t sl = der[so + 1];
		const uint8_t *sv = der + so + 2;
		while (sl > 32 && *sv == 0) {
			sv++;
			sl--;
		}
		assert_true(sl <= 32);
		uint8_t s32[32] = {0};
		memcpy(s32 + 32 - sl, sv, sl);
		if (memcmp(s32, half, 32) > 0)
			fail_msg("signature %d has a high s", i);
		assert_int_equal(eckey_verify(k, note.p, 20, der, dl), 0);
		assert_int_not_equal(eckey_verify(k, note.p, 21, der, dl), 0);
	}
	buf_free(&note);
	headsign_free(hs);
	eckey_free(k);
}

/* ---- an external checkpoint signer (ledger_opts.signer: a PKCS#11 token's key) ---- */

/* Signs as a token's key would for the ledger: the key stays with the caller. */
static int ext_sign(void *k, const void *msg, size_t n, uint8_t *sig, size_t *siglen)
{
	return eckey_sign(k, msg, n, sig, siglen);
}

static int count_ckpt_keys(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	(void)seq;
	static const char pat[] = "\x67purpose\x6a"
				  "checkpoint"; /* canonical CBOR: the key, then its value */
	if (memmem(cbor, len, pat, sizeof pat - 1))
		(*(int *)arg)++;
	return 0;
}

/* With an external signer no checkpoint.key is read or made, checkpoint.pub is its key,
 * its `key` entry is recorded once (when the ledger is new, not at a reopen), the ledger
 * verifies under it; opened without the signer it is refused (no new file key), and a
 * checkpoint.key beside it is refused (one ledger, one key). */
static void test_external_signer(void **state)
{
	struct t *t = *state;
	struct eckey *k;
	assert_int_equal(eckey_generate(&k), 0);
	struct ledger_signer sg = {k, ext_sign, k};
	struct ledger_opts o = opts_every(5);
	o.signer = &sg;
	char err[AS_ERRLEN] = "";
	struct batch b;
	batch_make(&b, 12, "ext");
	for (int round = 0; round < 2; round++) {
		struct ledger *l = open_ok(t, &o);
		assert_int_equal(ledger_append(l, b.recs + 6 * round, 6, b.pos + 6 * round, err), 0);
		int nkeys = 0;
		assert_int_equal(ledger_scan(l, count_ckpt_keys, &nkeys, err), 0);
		assert_int_equal(nkeys, 1);
		ledger_close(l);
	}
	batch_free(&b);
	assert_int_equal(access(t->priv, F_OK), -1);
	struct eckey *pub;
	assert_int_equal(eckey_load_public(t->pub, &pub, err), 0);
	uint8_t x1[32], y1[32], x2[32], y2[32];
	assert_int_equal(eckey_xy(pub, x1, y1), 0);
	assert_int_equal(eckey_xy(k, x2, y2), 0);
	assert_memory_equal(x1, x2, 32);
	assert_memory_equal(y1, y2, 32);
	eckey_free(pub);
	struct av_ledger_report rep;
	verify_ok(t, &rep);
	/* Without the signer no file key is made in its place (it would replace checkpoint.pub). */
	struct ledger *l = NULL;
	struct ledger_opts plain = opts_every(5);
	assert_int_equal(ledger_open(t->dir, &plain, &l, err), AS_EINVAL);
	assert_non_null(strstr(err, "is in a PKCS#11 token"));
	assert_int_equal(access(t->priv, F_OK), -1);
	FILE *f = fopen(t->priv, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(ledger_open(t->dir, &o, &l, err), AS_EEXIST);
	assert_non_null(strstr(err, "checkpoint key is in a PKCS#11 token"));
	eckey_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	    T_(test_open_creates_key_and_key_entry),
	    T_(test_open_uses_keys_dir_and_origin),
	    T_(test_append_batches),
	    T_(test_bad_record_appends_nothing),
	    T_(test_checkpoint_every_n),
	    T_(test_tick_signs_after_interval),
	    T_(test_close_reopen_continues),
	    T_(test_av_verify_ledger_ok),
	    T_(test_open_refuses_altered_last_entry),
	    T_(test_verify_blames_altered_middle_entry),
	    T_(test_every_commit_signs_its_head),
	    T_(test_demo_and_gateway_ledgers_stay_apart),
	    T_(test_headsign_low_s_and_verifies),
	    T_(test_external_signer),
#undef T_
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
