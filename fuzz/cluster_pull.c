/* Fuzz target: what a replica imports from the cluster's shared ledger (ledger/sync.c), which
 * reads bytes from PostgreSQL: whoever can write the database chooses them. At start a valid
 * shared store is made (replica B appends a few entries through an in-memory sequencer, with a
 * checkpoint key made for the run). Each input edits a copy of that store: its first byte says
 * how many edits, then each edit is (target, offset, xor) or, with the target's top bit set,
 * replaces the target entry or note with the rest of the input. A fresh mirror A then catches up.
 * Properties: an import that is accepted stored exactly the original entries (no edit to an
 * entry survives, whatever it did to the notes' encoding); one refused leaves A's mirror as it
 * was, names why, and releases the lock; nothing crashes or leaks. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cbor.h"
#include "common/util.h"
#include "ledger/ledger.h"
#include "tests/unit/scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NE 6 /* entries in the store: the key entry and five requests */

struct store {
	struct buf e[NE];
	size_t n;
	struct buf note; /* the head checkpoint */
	uint64_t note_size;
	int locked;
};

static struct store orig;
static char root[64];
static int run;

static int s_pull(void *ctx, uint64_t have, int lock, const struct ledger_sync_take *take, void *arg, char *err)
{
	struct store *st = ctx;
	(void)lock;
	st->locked = 1;
	for (size_t i = have; i < st->n; i++)
		if (take->entry(arg, i, st->e[i].p, st->e[i].len, err) != 0) {
			st->locked = 0;
			return AS_ECORRUPT;
		}
	if (st->note_size > have && take->ckpt(arg, st->note_size, st->note.p, st->note.len, 0, err) != 0) {
		st->locked = 0;
		return AS_ECORRUPT;
	}
	return 0;
}

static int s_push(void *ctx, uint64_t from, const struct ledger_rec *ents, const char *const *claims, size_t n,
		  const uint8_t *note, size_t nlen, int periodic, char *err)
{
	struct store *st = ctx;
	(void)claims, (void)periodic, (void)err;
	st->locked = 0;
	for (size_t i = 0; i < n && from + i < NE; i++) {
		buf_reset(&st->e[from + i]);
		if (buf_put(&st->e[from + i], ents[i].cbor, ents[i].len) != 0)
			abort();
	}
	st->n = from + n;
	buf_reset(&st->note);
	if (buf_put(&st->note, note, nlen) != 0)
		abort();
	st->note_size = from + n;
	return 0;
}

static void s_release(void *ctx)
{
	((struct store *)ctx)->locked = 0;
}

static struct ledger *open_at(const char *dir, struct store *st, struct ledger_sync *sync, char *err)
{
	*sync = (struct ledger_sync){.ctx = st, .pull = s_pull, .push = s_push, .release = s_release};
	char keys[128];
	snprintf(keys, sizeof keys, "%s/keys", root);
	struct ledger_opts o = {.keys_dir = keys, .map_size = (size_t)8 << 20, .sync = sync};
	struct ledger *l = NULL;
	return ledger_open(dir, &o, &l, err) == 0 ? l : NULL;
}

static void make_store(void)
{
	char err[AS_ERRLEN], dir[128];
	snprintf(root, sizeof root, "/tmp/assent-fuzz-cluster.%d", (int)getpid());
	mkdir(root, 0700);
	snprintf(dir, sizeof dir, "%s/b", root);
	for (size_t i = 0; i < NE; i++)
		buf_init(&orig.e[i], 1 << 16);
	buf_init(&orig.note, 8192);
	struct ledger_sync sync;
	struct ledger *b = open_at(dir, &orig, &sync, err);
	for (size_t i = 1; b && i < NE; i++) {
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *m = cv_map(&a, 4);
		char sid[32], msg[32];
		snprintf(sid, sizeof sid, "req-%zu", i);
		snprintf(msg, sizeof msg, "message %zu", i);
		const char *kv[4][2] = {
		    {"kind", "request"}, {"session_id", sid}, {"type", "approval"}, {"message", msg}};
		for (int k = 0; k < 4; k++)
			if (cv_set_text(&a, &m->items[2 * k], kv[k][0], strlen(kv[k][0])) ||
			    cv_set_text(&a, &m->items[2 * k + 1], kv[k][1], strlen(kv[k][1])))
				abort();
		struct buf enc;
		buf_init(&enc, 4096);
		struct ledger_pos pos;
		struct ledger_rec r;
		if (cbor_encode(m, &enc, err) != 0)
			abort();
		r = (struct ledger_rec){enc.p, enc.len};
		if (ledger_append(b, &r, 1, &pos, err) != 0) {
			fprintf(stderr, "cluster_pull: setup: %s\n", err);
			abort();
		}
		buf_free(&enc);
		cv_arena_free(&a);
	}
	if (!b || orig.n != NE) {
		fprintf(stderr, "cluster_pull: setup failed: %s\n", err);
		abort();
	}
	ledger_close(b);
}

static void rm_tree(const char *d)
{
	scratch_rm(d);
}

static void cleanup(void)
{
	rm_tree(root);
}

static void copy_store(struct store *dst)
{
	memset(dst, 0, sizeof *dst);
	for (size_t i = 0; i < NE; i++) {
		buf_init(&dst->e[i], 1 << 16);
		if (buf_put(&dst->e[i], orig.e[i].p, orig.e[i].len) != 0)
			abort();
	}
	buf_init(&dst->note, 8192);
	if (buf_put(&dst->note, orig.note.p, orig.note.len) != 0)
		abort();
	dst->n = orig.n;
	dst->note_size = orig.note_size;
}

static void free_store(struct store *st)
{
	for (size_t i = 0; i < NE; i++)
		buf_free(&st->e[i]);
	buf_free(&st->note);
}

/* The edits: target t % (NE + 1) (NE: the note); (t & 0x80): replace it with the rest. */
static void edit(struct store *st, const uint8_t *d, size_t n)
{
	if (n == 0)
		return;
	size_t k = d[0] % 8, at = 1;
	for (size_t i = 0; i < k && at + 4 <= n; i++, at += 4) {
		uint8_t t = d[at];
		struct buf *b = t % (NE + 1) == NE ? &st->note : &st->e[t % (NE + 1)];
		if (t & 0x80) {
			buf_reset(b);
			if (buf_put(b, d + at + 1, n - at - 1) != 0)
				abort();
			return;
		}
		size_t off = ((size_t)d[at + 1] << 8 | d[at + 2]);
		if (b->len)
			b->p[off % b->len] ^= d[at + 3];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		make_store();
		atexit(cleanup);
		ready = 1;
	}
	struct store st;
	copy_store(&st);
	edit(&st, data, size);
	char dir[128], err[AS_ERRLEN];
	snprintf(dir, sizeof dir, "%s/a%d", root, run++);
	memset(err, 0, sizeof err);
	struct ledger_sync sync;
	struct ledger *a = open_at(dir, &st, &sync, err);
	if (st.locked) {
		fprintf(stderr, "cluster_pull: the lock was not released\n");
		abort();
	}
	if (!a && !err[0]) {
		fprintf(stderr, "cluster_pull: refused without a reason\n");
		abort();
	}
	if (a) { /* accepted: exactly the original entries, whatever the edits did */
		if (ledger_size(a) != NE) {
			fprintf(stderr, "cluster_pull: accepted %llu entries of %d\n",
				(unsigned long long)ledger_size(a), NE);
			abort();
		}
		ledger_close(a);
		for (size_t i = 0; i < NE; i++)
			if (st.e[i].len != orig.e[i].len || memcmp(st.e[i].p, orig.e[i].p, orig.e[i].len) != 0) {
				fprintf(stderr, "cluster_pull: an edited entry %zu was imported\n", i);
				abort();
			}
	}
	rm_tree(dir);
	free_store(&st);
	return 0;
}
