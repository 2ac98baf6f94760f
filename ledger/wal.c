/* The ledger's write-ahead log (ledger/wal.h): one device sync per durable commit.
 *
 * LMDB syncs twice per commit (its data, then its meta page). With the log, LMDB runs with
 * MDB_NOSYNC and a commit is durable when its record is in DIR/wal and fdatasync'd, which is
 * one sync. Every so often (a second with records, 8 MiB of them, a checkpoint signature, a
 * close) the log is reset: LMDB is synced, and a new log starts whose header holds a copy of
 * LMDB's two meta pages as synced, the "base".
 *
 * Recovery, by the first process to open the ledger after every writer is gone (the ledger
 * directory is flock'ed shared by each process that has it open, exclusively to recover):
 *  - same boot (kill -9): the page cache survived, so LMDB is consistent; the log's records
 *    LMDB has not got (a commit whose record was synced when the process died) are applied;
 *  - another boot (power cut, kernel crash): LMDB's writes since the base may be torn. The
 *    base's pages are intact, because every process that has the ledger open holds a read
 *    transaction on a snapshot no newer than the base, so LMDB reuses none of the base's pages;
 *    its meta pages are written back from the header, and every record is applied on top.
 * Records are applied through the same checks as a cluster's entries (ledger/sync.c): each
 * entry must chain and the checkpoint note each record carries must verify with the ledger's
 * key, so a log written by someone without the key adds nothing.
 *
 * Format (integers big-endian): header "assent-wal 1\n\0\0\0", u32 page size, u32 zero,
 * u64 base txnid, 37 bytes boot id, 16 bytes of SHA-256 over all of it and the two meta pages,
 * then the pages. Then records: u32 length, 16 bytes of SHA-256 of the payload, payload =
 * u64 txnid, u64 first seq, u32 count, u8 periodic, count x (u32 length, entry), u32 length,
 * checkpoint note. A record cut short at the end (the process died while writing it, before
 * its sync) was never answered and is dropped; a damaged record with more after it is refused. */
#define _GNU_SOURCE
#include "ledger/wal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger/merkle.h"
#include "ledger/note.h"

#define WAL_MAGIC "assent-wal 1\n\0\0\0"
#define WAL_MAGIC_LEN 16
#define BOOT_LEN 37
#define HDR_FIXED (WAL_MAGIC_LEN + 4 + 4 + 8 + 8 + BOOT_LEN + 16)
#define HDR_BOOT 40
#define PAGE_MAX 65536
#define WAL_READ_MAX ((size_t)1 << 30)
#define REC_FIXED 29		    /* txnid, epoch, first seq, count, periodic */
#define WAL_SPACE ((size_t)9 << 20) /* a new log file's zeros: a log is reset at 8 MiB */

void (*ledger_wal_hook)(const char *step, const char *dir);
const char *ledger_wal_boot;
size_t ledger_wal_space = WAL_SPACE;

struct wal {
	char dir[4096];
	int dirfd; /* flock'ed: shared while open, exclusive to recover */
	int fd;	   /* DIR/wal, appended to; -1: none yet */
	ino_t ino;
	off_t len;	  /* bytes in the log; records after the header */
	off_t hdr;	  /* the header's length */
	uint64_t records; /* in the log since its reset */
	uint64_t applied; /* by the recovery (wal_pull) */
	/* as read at open (wal_read) */
	uint8_t *buf;
	size_t blen;
	char boot[BOOT_LEN];
	uint32_t psize;
	uint64_t base;
	uint64_t epoch;	   /* random, per log: its records carry it, so a reused file's old ones end it */
	uint64_t last_txn; /* LMDB txnid of this process's last record or reset: another means another
			    * process wrote, and the log's end is looked for again */
};

static uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void hook(struct wal *w, const char *step)
{
	if (ledger_wal_hook)
		ledger_wal_hook(step, w->dir);
}

static void boot_id(char out[BOOT_LEN])
{
	memset(out, 0, BOOT_LEN);
	if (ledger_wal_boot) {
		snprintf(out, BOOT_LEN, "%s", ledger_wal_boot);
		return;
	}
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, out, BOOT_LEN - 1);
		close(fd);
		if (n > 0 && out[n - 1] == '\n')
			out[n - 1] = 0;
	}
}

static int io_fail(char *err, const char *what, const char *path)
{
	return as_fail(err, AS_EIO, "ledger: %s %s: %s", what, path, strerror(errno));
}

static int write_all(int fd, const void *p, size_t n, off_t off)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t k = pwrite(fd, q, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		q += k;
		off += k;
		n -= (size_t)k;
	}
	return 0;
}

static void sum16(const void *p, size_t n, uint8_t out[16])
{
	uint8_t h[32];
	sha256(p, n, h);
	memcpy(out, h, 16);
}

int wal_open(const char *dir, struct wal **out, int *alone, char *err)
{
	struct wal *w = calloc(1, sizeof *w);
	if (!w)
		return as_fail(err, AS_ENOMEM, "out of memory");
	snprintf(w->dir, sizeof w->dir, "%s", dir);
	w->fd = -1;
	w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->dirfd < 0) {
		free(w);
		return io_fail(err, "cannot open the directory", dir);
	}
	*alone = flock(w->dirfd, LOCK_EX | LOCK_NB) == 0;
	if (!*alone && flock(w->dirfd, LOCK_SH) != 0) {
		int rc = io_fail(err, "cannot lock", dir);
		wal_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int wal_shared(struct wal *w, char *err)
{
	return flock(w->dirfd, LOCK_SH) == 0 ? 0 : io_fail(err, "cannot lock", w->dir);
}

int wal_read(struct wal *w, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/wal", w->dir);
	struct buf b;
	free(w->buf);
	w->buf = NULL;
	w->blen = 0;
	int rc = file_read(path, WAL_READ_MAX, &b, err);
	if (rc == AS_ENOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	w->buf = b.p;
	w->blen = b.len;
	const uint8_t *p = b.p;
	uint8_t s[16];
	if (b.len < HDR_FIXED || memcmp(p, WAL_MAGIC, WAL_MAGIC_LEN) != 0)
		return as_fail(err, AS_ECORRUPT, "ledger %s: its write-ahead log has no header (%zu bytes)", w->dir,
			       b.len);
	w->psize = be32_get(p + 16);
	w->base = be64_get(p + 24);
	w->epoch = be64_get(p + 32);
	memcpy(w->boot, p + HDR_BOOT, BOOT_LEN);
	w->boot[BOOT_LEN - 1] = 0;
	size_t hl = HDR_FIXED + 2 * (size_t)w->psize;
	if (w->psize < 512 || w->psize > PAGE_MAX || b.len < hl)
		return as_fail(err, AS_ECORRUPT, "ledger %s: its write-ahead log's header is cut short", w->dir);
	uint8_t *tmp = malloc(hl);
	if (!tmp)
		return as_fail(err, AS_ENOMEM, "out of memory");
	memcpy(tmp, p, hl);
	memset(tmp + HDR_FIXED - 16, 0, 16);
	sum16(tmp, hl, s);
	free(tmp);
	if (memcmp(s, p + HDR_FIXED - 16, 16) != 0)
		return as_fail(err, AS_ECORRUPT, "ledger %s: its write-ahead log's header is damaged", w->dir);
	w->hdr = (off_t)hl;
	return 0;
}

/* A record of this log (its base) at off, checksum and all: its payload length, else 0. */
static size_t rec_at(const struct wal *w, size_t off)
{
	if (off + 20 + REC_FIXED > w->blen)
		return 0;
	size_t len = be32_get(w->buf + off);
	uint8_t s[16];
	if (len < REC_FIXED + 4 || len > w->blen - off - 20 || be64_get(w->buf + off + 28) != w->epoch)
		return 0;
	sum16(w->buf + off + 20, len, s);
	return memcmp(s, w->buf + off + 4, 16) == 0 ? len : 0;
}

/* The next record's payload, or NULL at the end of the log: zeros, a record of an older log
 * (the file is reused), or one cut short (never synced, never answered). A record of this log
 * further on means the log is damaged, not ended (*bad). */
static const uint8_t *next_rec(const struct wal *w, size_t *off, size_t *n, char *err, int *bad)
{
	*bad = 0;
	size_t len = rec_at(w, *off);
	if (len == 0) {
		for (size_t o = *off + 1; o + 20 + REC_FIXED <= w->blen && !*bad; o++)
			if (rec_at(w, o) && be64_get(w->buf + o + 20) > 0)
				*bad = 1;
		if (*bad)
			as_fail(err, AS_ECORRUPT, "ledger %s: its write-ahead log is damaged at byte %zu", w->dir,
				*off);
		return NULL;
	}
	const uint8_t *p = w->buf + *off + 20;
	*off += 20 + len;
	*n = len;
	return p;
}

/* One record's entries and note, through the checks of ledger/sync.c. */
static int take_rec(const struct wal *w, const uint8_t *p, size_t n, const struct ledger_sync_take *take, void *arg,
		    char *err)
{
	uint64_t from = be64_get(p + 16);
	uint32_t cnt = be32_get(p + 24);
	int periodic = p[28] != 0;
	size_t o = REC_FIXED;
	for (uint32_t i = 0; i < cnt; i++) {
		size_t el = o + 4 <= n ? be32_get(p + o) : (size_t)-1;
		if (el > n - o - 4)
			return as_fail(err, AS_ECORRUPT, "ledger %s: a write-ahead record is malformed", w->dir);
		GUARD(take->entry(arg, from + i, p + o + 4, el, err));
		o += 4 + el;
	}
	size_t nl = o + 4 <= n ? be32_get(p + o) : (size_t)-1;
	if (nl != n - o - 4)
		return as_fail(err, AS_ECORRUPT, "ledger %s: a write-ahead record's note is malformed", w->dir);
	return take->ckpt(arg, from + cnt, p + o + 4, nl, periodic, err);
}

int wal_pull(void *ctx, uint64_t have, int lock, const struct ledger_sync_take *take, void *arg, char *err)
{
	(void)lock;
	struct wal *w = ctx;
	size_t off = (size_t)w->hdr, n = 0, cnt = 0;
	int bad = 0;
	/* A record whose txnid a later record has again was never committed (its process died,
	 * and the next writer's transaction took the same id): the later one superseded it. */
	struct rec {
		const uint8_t *p;
		size_t n;
	} *r = NULL;
	const uint8_t *p;
	while ((p = next_rec(w, &off, &n, err, &bad)) != NULL) {
		struct rec *g = realloc(r, (cnt + 1) * sizeof *r);
		if (!g) {
			free(r);
			return as_fail(err, AS_ENOMEM, "out of memory");
		}
		r = g;
		r[cnt++] = (struct rec){p, n};
	}
	int rc = bad ? AS_ECORRUPT : 0;
	for (size_t i = 0; rc == 0 && i < cnt; i++) {
		uint64_t txn = be64_get(r[i].p), from = be64_get(r[i].p + 16);
		int superseded = 0;
		for (size_t j = i + 1; j < cnt && !superseded; j++)
			superseded = be64_get(r[j].p) == txn;
		if (superseded || from < have)
			continue; /* LMDB has it, or it never was */
		if (from > have) {
			rc = as_fail(err, AS_ECORRUPT,
				     "ledger %s: its write-ahead log continues at entry %llu but the ledger has %llu",
				     w->dir, (unsigned long long)from, (unsigned long long)have);
			break;
		}
		rc = take_rec(w, r[i].p, r[i].n, take, arg, err);
		have += be32_get(r[i].p + 24);
		w->applied++;
	}
	free(r);
	return rc;
}

int wal_restore_base(struct wal *w, int *restored, char *err)
{
	char boot[BOOT_LEN], path[4200];
	*restored = 0;
	boot_id(boot);
	if (!w->hdr || !strcmp(boot, w->boot))
		return 0; /* no log, or the same boot: LMDB is as its last commit left it */
	snprintf(path, sizeof path, "%s/lock.mdb", w->dir);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	if (fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) {
		close(fd);
		return as_fail(err, AS_EIO,
			       "ledger %s: another process (pid %d) has it open while it must be recovered from its "
			       "write-ahead log after a restart of the machine: stop it, then start again",
			       w->dir, (int)fl.l_pid);
	}
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof path, "%s/data.mdb", w->dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t n = 2 * (size_t)w->psize;
	int ok = fd >= 0 && pwrite(fd, w->buf + HDR_FIXED, n, 0) == (ssize_t)n && fdatasync(fd) == 0;
	int rc = ok ? 0 : io_fail(err, "cannot restore the synced meta pages of", path);
	if (fd >= 0)
		close(fd);
	*restored = ok;
	hook(w, "restored");
	return rc;
}

uint64_t wal_base(const struct wal *w)
{
	return w->base;
}
uint64_t wal_applied(const struct wal *w)
{
	return w->applied;
}

/* Where this process appends: the end of the current log. Looked for again when another
 * process reset the log or appended to it (under LMDB's write lock, which the caller holds). */
static int find_end(struct wal *w, MDB_txn *txn, char *err)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/wal", w->dir);
	int moved = w->fd < 0 || stat(path, &st) != 0 || st.st_ino != w->ino;
	if (!moved && mdb_txn_id(txn) == w->last_txn + 1)
		return 0;
	w->hdr = 0;
	GUARD(wal_read(w, err));
	if (!w->hdr)
		return as_fail(err, AS_EIO, "ledger %s: its write-ahead log is gone", w->dir);
	size_t off = (size_t)w->hdr, len;
	while ((len = rec_at(w, off)) != 0)
		off += 20 + len;
	free(w->buf);
	w->buf = NULL;
	w->blen = 0;
	if (moved) {
		if (w->fd >= 0)
			close(w->fd);
		w->fd = open(path, O_WRONLY | O_CLOEXEC);
		if (w->fd < 0 || fstat(w->fd, &st) != 0)
			return io_fail(err, "cannot open its write-ahead log", path);
		w->ino = st.st_ino;
	}
	w->len = (off_t)off;
	return 0;
}

int wal_append(struct wal *w, MDB_txn *txn, MDB_dbi entries, uint64_t from, uint64_t n, const uint8_t *note,
	       size_t nlen, int periodic, char *err)
{
	GUARD(find_end(w, txn, err));
	struct buf b;
	buf_init(&b, WAL_READ_MAX); /* a group commit: up to what a recovery reads */
	uint8_t h[20 + REC_FIXED] = {0}, l4[4];
	be64_put(h + 20, mdb_txn_id(txn));
	be64_put(h + 28, w->epoch);
	be64_put(h + 36, from);
	be32_put(h + 44, (uint32_t)n);
	h[48] = periodic != 0;
	int rc = buf_put(&b, h, sizeof h);
	for (uint64_t i = 0; rc == 0 && i < n; i++) {
		uint8_t k[8];
		be64_put(k, from + i);
		MDB_val key = {8, k}, val;
		if (mdb_get(txn, entries, &key, &val) != 0) {
			buf_free(&b);
			return as_fail(err, AS_EIO, "ledger %s: re-reading entry %llu", w->dir,
				       (unsigned long long)(from + i));
		}
		be32_put(l4, (uint32_t)val.mv_size);
		rc = buf_put(&b, l4, 4);
		if (rc == 0)
			rc = buf_put(&b, val.mv_data, val.mv_size);
	}
	be32_put(l4, (uint32_t)nlen);
	if (rc == 0)
		rc = buf_put(&b, l4, 4);
	if (rc == 0)
		rc = buf_put(&b, note, nlen);
	if (rc != 0) {
		buf_free(&b);
		return as_fail(err, AS_ENOMEM, "out of memory");
	}
	be32_put(b.p, (uint32_t)(b.len - 20));
	sum16(b.p + 20, b.len - 20, b.p + 4);
	hook(w, "log");
	if (ledger_wal_hook) { /* in two writes, so that a test can stop between them (a torn record) */
		rc = write_all(w->fd, b.p, b.len / 2, w->len);
		if (rc == 0)
			hook(w, "log-half");
		if (rc == 0)
			rc = write_all(w->fd, b.p + b.len / 2, b.len - b.len / 2, w->len + (off_t)(b.len / 2));
	} else {
		rc = write_all(w->fd, b.p, b.len, w->len);
	}
	if (rc == 0)
		hook(w, "log-written");
	if (rc == 0 && fdatasync(w->fd) != 0)
		rc = -1;
	if (rc == 0) {
		w->len += (off_t)b.len;
		w->records++;
		w->last_txn = mdb_txn_id(txn);
		hook(w, "log-synced");
	} else {
		rc = io_fail(err, "cannot write its write-ahead log in", w->dir);
		wal_undo(w, w->len);
	}
	buf_free(&b);
	return rc;
}

void wal_undo(struct wal *w, off_t len)
{
	/* The commit after the record failed: it was never answered, so it must not be replayed.
	 * Zeros over its length and checksum end the log where it began. */
	static const uint8_t zero[20];
	if (w->fd >= 0 && write_all(w->fd, zero, sizeof zero, len) == 0 && fdatasync(w->fd) == 0)
		w->len = len;
}

off_t wal_len(const struct wal *w)
{
	return w->len;
}
uint64_t wal_records(const struct wal *w)
{
	return w->records;
}

/* The header of a new log: the meta pages of data.mdb as they are now (after a sync). */
static int header(struct wal *w, MDB_env *env, uint64_t txnid, struct buf *b, char *err)
{
	MDB_stat st;
	char path[4200];
	mdb_env_stat(env, &st);
	size_t ps = st.ms_psize, hl = HDR_FIXED + 2 * ps;
	if (ps < 512 || ps > PAGE_MAX || buf_reserve(b, hl) != 0)
		return as_fail(err, AS_EIO, "ledger %s: page size %zu", w->dir, ps);
	memset(b->p, 0, hl);
	memcpy(b->p, WAL_MAGIC, WAL_MAGIC_LEN);
	be32_put(b->p + 16, (uint32_t)ps);
	be64_put(b->p + 24, txnid);
	if (getrandom(&w->epoch, sizeof w->epoch, 0) != (ssize_t)sizeof w->epoch)
		return io_fail(err, "no random epoch for the write-ahead log of", w->dir);
	be64_put(b->p + 32, w->epoch);
	boot_id((char *)b->p + HDR_BOOT);
	snprintf(path, sizeof path, "%s/data.mdb", w->dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? pread(fd, b->p + HDR_FIXED, 2 * ps, 0) : -1;
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)(2 * ps))
		return io_fail(err, "cannot read the meta pages of", path);
	sum16(b->p, hl, b->p + HDR_FIXED - 16);
	b->len = hl;
	return 0;
}

/* The file the next log is written in: the log before last, reused (its records carry another
 * epoch), or a new one of zeros, so that a record overwrites allocated space and its fdatasync
 * has no file size to write (about a third faster here than appending). */
static int spare(const char *path, char *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return io_fail(err, "cannot open", path);
	}
	static const uint8_t zero[65536];
	for (off_t o = st.st_size; o < (off_t)ledger_wal_space; o += (off_t)sizeof zero)
		if (write_all(fd, zero, sizeof zero, o) != 0) {
			close(fd);
			return io_fail(err, "cannot write", path);
		}
	return fd;
}

int wal_reset(struct wal *w, MDB_env *env, MDB_txn **pin, char *err)
{
	char path[4200], tmp[4200], prev[4200];
	snprintf(path, sizeof path, "%s/wal", w->dir);
	snprintf(tmp, sizeof tmp, "%s/wal.spare", w->dir);
	snprintf(prev, sizeof prev, "%s/wal.prev", w->dir);
	hook(w, "reset");
	int m = mdb_env_sync(env, 1);
	if (m != 0)
		return as_fail(err, AS_EIO, "ledger %s: sync: %s", w->dir, mdb_strerror(m));
	hook(w, "synced");
	MDB_txn *np = NULL;
	if ((m = mdb_txn_begin(env, NULL, MDB_RDONLY, &np)) != 0)
		return as_fail(err, AS_EIO, "ledger %s: pinning the synced snapshot: %s", w->dir, mdb_strerror(m));
	struct buf b;
	buf_init(&b, 2 * PAGE_MAX + HDR_FIXED);
	int rc = header(w, env, mdb_txn_id(np), &b, err);
	int fd = rc == 0 ? spare(tmp, err) : -1;
	struct stat st;
	rc = fd < 0 ? (rc ? rc : fd) : 0;
	if (rc == 0 && (write_all(fd, b.p, b.len, 0) != 0 || write_all(fd, (const uint8_t[20]){0}, 20, (off_t)b.len) ||
			fdatasync(fd) != 0))
		rc = io_fail(err, "cannot write", tmp);
	if (rc == 0)
		hook(w, "new-log");
	/* The current log becomes the next spare; "wal" names a whole log at every instant. */
	(void)unlink(prev);
	int linked = link(path, prev) == 0;
	if (rc == 0 && (rename(tmp, path) != 0 || fsync(w->dirfd) != 0 || fstat(fd, &st) != 0))
		rc = io_fail(err, "cannot put in place", path);
	if (linked && rename(prev, tmp) != 0)
		(void)unlink(prev);
	if (rc != 0) {
		if (fd >= 0)
			close(fd);
		mdb_txn_abort(np);
		buf_free(&b);
		return rc;
	}
	hook(w, "renamed");
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fd;
	w->ino = st.st_ino;
	w->len = (off_t)b.len;
	w->records = 0;
	w->last_txn = mdb_txn_id(np);
	if (*pin)
		mdb_txn_abort(*pin);
	*pin = np; /* LMDB reuses none of this snapshot's pages while it is held */
	buf_free(&b);
	return 0;
}

int wal_remove_if_alone(struct wal *w)
{
	if (flock(w->dirfd, LOCK_EX | LOCK_NB) != 0)
		return 0;
	char path[4200];
	snprintf(path, sizeof path, "%s/wal", w->dir);
	char sp[4200];
	snprintf(sp, sizeof sp, "%s/wal.spare", w->dir);
	/* Kept as the next log's file: the next process's first reset writes no zeros. */
	int gone = rename(path, sp) == 0;
	(void)fsync(w->dirfd);
	return gone;
}

void wal_free(struct wal *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->dirfd >= 0)
		close(w->dirfd); /* and the flock with it */
	free(w->buf);
	free(w);
}
