/* Fuzz target: the ledger's write-ahead log (ledger/wal.c), which a recovery reads from disk
 * and applies to LMDB. At start a ledger is made, its LMDB file copied at the log's base, then
 * five requests appended (each a record in the log, each signed by the checkpoint key made for
 * the run), and the log's bytes kept. Each input edits a copy of those bytes: its first byte
 * says how many edits and whether the recovery runs as after a restart of the machine (the
 * base's meta pages put back from the header); each edit is (offset, xor), or with the top
 * bit of its first byte set, the rest of the input written at that offset. LMDB's file is put
 * back at the base, the edited log beside it, and the ledger opened.
 * Properties: an open that succeeds holds a prefix of the five requests, each byte for byte
 * what was appended (an edited entry never gets in: each record's note is signed); one that
 * fails says why; nothing crashes or leaks. */
#define _GNU_SOURCE
#include <fcntl.h>
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

#define NR 5

static char root[64], dir[128];
static struct buf base_mdb, log_bytes, ents[NR + 1]; /* ents[0]: the key entry */
static uint64_t base_size;

static int file_put(const char *name, const uint8_t *p, size_t n)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd >= 0 && write(fd, p, n) == (ssize_t)n;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

static void grab(const char *name, struct buf *b)
{
	char path[256], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (file_read(path, (size_t)64 << 20, b, err) != 0) {
		fprintf(stderr, "wal: setup: %s\n", err);
		abort();
	}
}

static int keep_entry(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	(void)arg;
	if (seq > NR)
		return AS_EINVAL;
	buf_reset(&ents[seq]);
	return buf_put(&ents[seq], cbor, len);
}

/* The log's bytes as the last append left them (the hook runs as its record is synced). */
static void on_step(const char *step, const char *d)
{
	(void)d;
	if (!strcmp(step, "log-synced")) {
		buf_free(&log_bytes);
		grab("wal", &log_bytes);
	}
}

static void make_ledger(void)
{
	char err[AS_ERRLEN];
	snprintf(root, sizeof root, "/tmp/assent-fuzz-wal.%d", (int)getpid());
	mkdir(root, 0700);
	snprintf(dir, sizeof dir, "%s/ledger", root);
	struct ledger_opts o = {.map_size = (size_t)8 << 20};
	struct ledger *l = NULL;
	ledger_wal_space = 16384; /* the log's zeros: enough for the five records */
	if (ledger_open(dir, &o, &l, err) != 0) {
		fprintf(stderr, "wal: setup: %s\n", err);
		abort();
	}
	base_size = ledger_size(l);
	grab("data.mdb", &base_mdb); /* the open reset the log: LMDB is at its base */
	ledger_wal_hook = on_step;
	for (int i = 1; i <= NR; i++) {
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *m = cv_map(&a, 4);
		char sid[32];
		snprintf(sid, sizeof sid, "req-%d", i);
		if (cv_set_text(&a, &m->items[0], "kind", 4) || cv_set_text(&a, &m->items[1], "request", 7) ||
		    cv_set_text(&a, &m->items[2], "type", 4) || cv_set_text(&a, &m->items[3], "approval", 8) ||
		    cv_set_text(&a, &m->items[4], "message", 7) || cv_set_text(&a, &m->items[5], "rm -rf", 6) ||
		    cv_set_text(&a, &m->items[6], "session_id", 10) || cv_set_text(&a, &m->items[7], sid, strlen(sid)))
			abort();
		struct buf enc;
		buf_init(&enc, 4096);
		struct ledger_pos pos;
		if (cbor_encode(m, &enc, err) != 0)
			abort();
		struct ledger_rec r = {enc.p, enc.len};
		if (ledger_append(l, &r, 1, &pos, err) != 0) {
			fprintf(stderr, "wal: setup: %s\n", err);
			abort();
		}
		buf_free(&enc);
		cv_arena_free(&a);
	}
	ledger_wal_hook = NULL;
	for (int i = 0; i <= NR; i++)
		buf_init(&ents[i], 1 << 16);
	if (ledger_scan(l, keep_entry, NULL, err) != 0 || base_size != 1 || !log_bytes.len)
		abort();
	ledger_close(l);
}

static void cleanup(void)
{
	scratch_rm(root);
	buf_free(&base_mdb);
	buf_free(&log_bytes);
	for (int i = 0; i <= NR; i++)
		buf_free(&ents[i]);
}

static void edit(uint8_t *p, size_t n, const uint8_t *d, size_t dn)
{
	size_t k = dn ? (d[0] & 7) : 0, at = 1;
	for (size_t i = 0; i < k && at + 3 <= dn; i++, at += 3) {
		size_t off = ((size_t)(d[at] & 0x7f) << 8 | d[at + 1]) * 7 % n;
		if (d[at] & 0x80) { /* the rest of the input, from off */
			size_t m = dn - at - 2 < n - off ? dn - at - 2 : n - off;
			memcpy(p + off, d + at + 2, m);
			return;
		}
		p[off] ^= d[at + 2];
	}
}

struct cmp {
	uint64_t n;
	int bad;
};

static int same_entry(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	struct cmp *c = arg;
	c->n++;
	if (seq > NR || len != ents[seq].len || memcmp(cbor, ents[seq].p, len) != 0)
		c->bad = 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		make_ledger();
		atexit(cleanup);
		ready = 1;
	}
	uint8_t *w = malloc(log_bytes.len);
	if (!w)
		return 0;
	memcpy(w, log_bytes.p, log_bytes.len);
	edit(w, log_bytes.len, data, size);
	if (file_put("data.mdb", base_mdb.p, base_mdb.len) != 0 || file_put("wal", w, log_bytes.len) != 0)
		abort();
	free(w);
	ledger_wal_boot = size && (data[0] & 0x80) ? "another boot" : NULL;
	char err[AS_ERRLEN] = "";
	struct ledger_opts o = {.map_size = (size_t)8 << 20};
	struct ledger *l = NULL;
	int rc = ledger_open(dir, &o, &l, err);
	ledger_wal_boot = NULL;
	if (rc != 0) {
		if (!strstr(err, "write-ahead log") && !strstr(err, "ledger")) {
			fprintf(stderr, "wal: refused without naming why: %s\n", err);
			abort();
		}
		return 0;
	}
	struct cmp c = {0};
	if (ledger_scan(l, same_entry, &c, err) != 0 || c.bad || c.n < base_size || c.n > NR + 1) {
		fprintf(stderr, "wal: the ledger after recovery is not a prefix of what was appended (%llu entries)\n",
			(unsigned long long)c.n);
		abort();
	}
	ledger_close(l);
	return 0;
}
