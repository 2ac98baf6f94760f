/* make bench: ledger figures, printed next to the reference measured in the same run.
 *  1. durable appends per second with 1, 16 and 256 entries per commit (each commit
 *     signs its tree head), and what that one signature costs alone;
 *  2. `assent-verify ledger` (the real binary, whole process) over N entries of
 *     realistic size, in entries/s and MB/s, next to the floor: mbedTLS doing only
 *     the SHA-256 work verification must do (leaf hashes and RFC 9162 interior nodes).
 * Figures only: nothing here passes or fails on time. BENCH_ENTRIES overrides N. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>
#include <mbedtls/sha256.h>
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "ledger/ledger.h"
#include "common/cbor.h"
#include "common/eckey.h"
#include "ledger/headsign.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/store.h"
#include "verify/consist.h"
#include "common/util.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A request entry shaped like the gateway's: a message, a context, a requester. */
static void make_entry(struct cv_arena *a, uint64_t i, struct buf *out)
{
	char sid[40], msg[160], ctx[200];
	snprintf(sid, sizeof sid, "req-%016llx", (unsigned long long)(i * 2654435761u));
	snprintf(msg, sizeof msg, "Apply terraform plan #%llu to production: 3 to add, 1 to change, 0 to destroy",
		 (unsigned long long)i);
	snprintf(
	    ctx, sizeof ctx,
	    "{\"workspace\":\"prod-eu-west-1\",\"plan\":\"plan-%llu.tfplan\",\"resources\":[\"aws_s3_bucket.logs\","
	    "\"aws_iam_role.ci\"]}",
	    (unsigned long long)i);
	const char *kv[][2] = {{"kind", "request"},
			       {"session_id", sid},
			       {"type", "approval"},
			       {"message", msg},
			       {"context", ctx},
			       {"audience", "tf-prod"},
			       {"requester", "uid:1000 claude-code/2.1"}};
	size_t n = sizeof kv / sizeof kv[0];
	cv_arena_reset(a);
	struct cv *m = cv_map(a, n + 1);
	for (size_t k = 0; k < n; k++) {
		if (cv_set_text(a, &m->items[2 * k], kv[k][0], strlen(kv[k][0])) != 0 ||
		    cv_set_text(a, &m->items[2 * k + 1], kv[k][1], strlen(kv[k][1])) != 0)
			abort();
	}
	if (cv_set_text(a, &m->items[2 * n], "deadline", 8) != 0)
		abort();
	cv_set_uint(&m->items[2 * n + 1], 1796000000000ull + i);
	buf_reset(out);
	if (cbor_encode(m, out, NULL) != 0)
		abort();
}

static void fail(const char *what, const char *err)
{
	fprintf(stderr, "bench: %s: %s\n", what, err);
	exit(2);
}

static double appends_per_sec(const char *root, size_t per_commit, size_t commits)
{
	char dir[512], err[AS_ERRLEN];
	snprintf(dir, sizeof dir, "%s/append-%zu/ledger", root, per_commit);
	struct ledger_opts o = {0};
	struct ledger *l;
	if (ledger_open(dir, &o, &l, err) != 0)
		fail("open", err);
	struct cv_arena a;
	cv_arena_init(&a, 1 << 16);
	struct buf *encs = calloc(per_commit, sizeof *encs);
	struct ledger_rec *recs = calloc(per_commit, sizeof *recs);
	struct ledger_pos *pos = calloc(per_commit, sizeof *pos);
	for (size_t k = 0; k < per_commit; k++) {
		buf_init(&encs[k], 1 << 16);
		make_entry(&a, k, &encs[k]);
		recs[k].cbor = encs[k].p;
		recs[k].len = encs[k].len;
	}
	double t0 = now_s();
	for (size_t c = 0; c < commits; c++)
		if (ledger_append(l, recs, per_commit, pos, err) != 0)
			fail("append", err);
	double dt = now_s() - t0;
	ledger_close(l);
	for (size_t k = 0; k < per_commit; k++)
		buf_free(&encs[k]);
	free(encs);
	free(recs);
	free(pos);
	cv_arena_free(&a);
	return (double)(per_commit * commits) / dt;
}

/* The cost of the head signature each commit makes: the ledger's key in OpenSSL. */
static double head_sign_us(const char *root)
{
	char path[512], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/append-1/keys/checkpoint.key", root);
	struct eckey *k;
	struct headsign *hs;
	if (eckey_load_private(path, &k, err) != 0 || headsign_open(k, &hs, err) != 0)
		fail("checkpoint key", err);
	struct checkpoint c = {.size = 1};
	snprintf(c.origin, sizeof c.origin, "assent/bench");
	struct buf note;
	buf_init(&note, CKPT_MAX);
	enum { SIGNS = 2000 };
	double t0 = now_s();
	for (uint64_t i = 0; i < SIGNS; i++) {
		c.size = i + 1;
		c.root[0] = (uint8_t)i;
		buf_reset(&note);
		if (ckpt_sign_with(k, headsign_sign, hs, &c, &note, err) != 0)
			fail("sign", err);
	}
	double dt = now_s() - t0;
	buf_free(&note);
	headsign_free(hs);
	eckey_free(k);
	return dt / SIGNS * 1e6;
}

/* A witness's consistency proof over the big ledger: made as GET /checkpoint/consistency
 * and the witnesses' sender make it (from the ledger's tiles, ledger/tiles.h: a tile per
 * 1,024 leaves and the leaves at the edges; before tiles, every leaf up to the new size was
 * read and hashed: 180 ms at 100,000 entries, 2.9 s at 1,000,000), then checked. Best of 3. */
static void consistency_cost(const char *dir, uint64_t size)
{
	char err[AS_ERRLEN];
	double make_best = 1e9;
	struct buf out;
	buf_init(&out, CONSIST_TEXT_MAX);
	for (int r = 0; r < 3; r++) {
		buf_free(&out);
		buf_init(&out, CONSIST_TEXT_MAX);
		double t0 = now_s();
		if (consist_make(dir, size / 2 + 1, size, &out, err) != 0)
			fail("consistency proof", err);
		double t = now_s() - t0;
		if (t < make_best)
			make_best = t;
	}
	uint8_t path[MERKLE_MAX_CONSISTENCY][32];
	size_t np;
	if (consist_parse(out.p, out.len, path, &np, err) != 0)
		fail("consistency proof text", err);
	/* the check alone, on the parsed path (the roots do not matter for the cost) */
	uint8_t r1[32] = {0}, r2[32] = {0};
	enum { RUNS = 10000 };
	double t0 = now_s();
	int held = 0;
	for (int i = 0; i < RUNS; i++)
		held += merkle_verify_consistency(size / 2 + 1, size, r1, r2, (const uint8_t(*)[32])path, np) == 0;
	double ver = (now_s() - t0) / RUNS;
	printf("== a witness's consistency proof, size %llu to %llu (%zu hashes) ==\n",
	       (unsigned long long)(size / 2 + 1), (unsigned long long)size, np);
	printf("made from the ledger (GET /checkpoint/consistency): %.1f ms; checked: %.1f us%s\n", make_best * 1e3,
	       ver * 1e6, held ? " (held with zero roots?)" : "");
	buf_free(&out);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The disk's own floor in the bench's directory: ops/s and p50 of `per` (1 or 2) writes of 512
 * bytes each followed by fdatasync, appending to a file (its size changes) or overwriting one
 * written beforehand (as the ledger's write-ahead log does); two files for two. */
static double sync_floor(const char *root, int per, int overwrite, double *p50_ms)
{
	enum { N = 2000 };
	static double lat[N];
	char path[2][600];
	int fd[2];
	uint8_t blk[512];
	memset(blk, 'x', sizeof blk);
	for (int k = 0; k < per; k++) {
		snprintf(path[k], sizeof path[k], "%s/floor-%d", root, k);
		fd[k] = open(path[k], O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd[k] < 0)
			fail("sync floor", path[k]);
		if (overwrite) {
			for (int i = 0; i < N; i++)
				if (write(fd[k], blk, sizeof blk) != (ssize_t)sizeof blk)
					fail("sync floor", "write");
			if (fsync(fd[k]) != 0 || lseek(fd[k], 0, SEEK_SET) != 0)
				fail("sync floor", "fsync");
		}
	}
	double t0 = now_s();
	for (int i = 0; i < N; i++) {
		double a = now_s();
		for (int k = 0; k < per; k++)
			if (write(fd[k], blk, sizeof blk) != (ssize_t)sizeof blk || fdatasync(fd[k]) != 0)
				fail("sync floor", "write");
		lat[i] = now_s() - a;
	}
	double dt = now_s() - t0;
	for (int k = 0; k < per; k++) {
		close(fd[k]);
		unlink(path[k]);
	}
	qsort(lat, N, sizeof *lat, cmp_d);
	*p50_ms = lat[N / 2] * 1e3;
	return N / dt;
}

int main(void)
{
	uint64_t n = 1000000;
	const char *e = getenv("BENCH_ENTRIES");
	if (e && parse_u64(e, &n) != 0)
		fail("BENCH_ENTRIES", e);
	char root[] = "/tmp/assent-bench.XXXXXX";
	if (!mkdtemp(root))
		fail("mkdtemp", "cannot create a scratch directory");
	char err[AS_ERRLEN], dir[512], cmd[2048];

	double p1, p1o, p2;
	double f1 = sync_floor(root, 1, 0, &p1), f1o = sync_floor(root, 1, 1, &p1o), f2 = sync_floor(root, 2, 0, &p2);
	printf("== the disk's sync floor here (512-byte writes, each followed by fdatasync) ==\n");
	printf("%-44s %10.0f /s   p50 %.3f ms\n", "one write+fdatasync per op, appending", f1, p1);
	printf("%-44s %10.0f /s   p50 %.3f ms\n", "one write+fdatasync per op, overwriting", f1o, p1o);
	printf("%-44s %10.0f /s   p50 %.3f ms\n\n", "two write+fdatasync per op (LMDB's own way)", f2, p2);
	printf("== ledger appends (durable: one write-ahead record, fdatasync'd, per commit) ==\n");
	printf("%-28s %14s\n", "entries per commit", "entries/s");
	size_t shapes[][2] = {{1, 2000}, {16, 500}, {256, 100}};
	for (size_t s = 0; s < 3; s++)
		printf("%-28zu %14.0f\n", shapes[s][0], appends_per_sec(root, shapes[s][0], shapes[s][1]));
	printf("(the floor above: one sync per commit; NOTES.md reference before the write-ahead log: ~3,200 "
	       "LMDB commits/s, two syncs each; 100 per commit ~195,000/s)\n");
	printf("each commit signs its tree head (one signature per group commit): %.0f us per signature\n\n",
	       head_sign_us(root));

	/* A large ledger written in big batches. */
	snprintf(dir, sizeof dir, "%s/big/ledger", root);
	struct ledger_opts o = {0};
	struct ledger *l;
	if (ledger_open(dir, &o, &l, err) != 0)
		fail("open", err);
	struct cv_arena a;
	cv_arena_init(&a, 1 << 16);
	enum { B = 1024 };
	static struct buf encs[B];
	static struct ledger_rec recs[B];
	static struct ledger_pos pos[B];
	for (size_t k = 0; k < B; k++)
		buf_init(&encs[k], 1 << 16);
	double t0 = now_s();
	for (uint64_t i = 1; i < n; i += B) { /* entry 0 is the key entry */
		size_t m = n - i < B ? (size_t)(n - i) : B;
		for (size_t k = 0; k < m; k++) {
			make_entry(&a, i + k, &encs[k]);
			recs[k].cbor = encs[k].p;
			recs[k].len = encs[k].len;
		}
		if (ledger_append(l, recs, m, pos, err) != 0)
			fail("append", err);
	}
	double build_s = now_s() - t0;
	ledger_close(l);

	/* Read every entry into memory, outside any timing, for the floor. */
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ent, ck;
	int nolock;
	if (store_open_ro(dir, &env, &txn, &ent, &ck, &nolock, err) != 0)
		fail("open ro", err);
	MDB_cursor *cur;
	MDB_val k, v;
	mdb_cursor_open(txn, ent, &cur);
	size_t total = 0, count = 0;
	struct buf all;
	buf_init(&all, (size_t)1 << 34);
	size_t *lens = malloc(n * sizeof *lens);
	for (int g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0 && count < n;
	     g = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (buf_put(&all, v.mv_data, v.mv_size) != 0)
			abort();
		lens[count++] = v.mv_size;
		total += v.mv_size;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	printf("== assent-verify ledger over %zu entries (avg %.0f bytes, %.1f MB; written in %.1f s) ==\n", count,
	       (double)total / (double)count, (double)total / 1e6, build_s);

	/* Floor: only the SHA-256 work (OpenSSL's libcrypto, as the verifier hashes), best of 3;
	 * and mbedTLS's software SHA-256 over the same bytes, which the verifier used before. */
	double floor_best = 1e9, mbed_best = 1e9, raw_best = 1e9;
	for (int r = 0; r < 6; r++) {
		uint8_t leaf[32];
		size_t off = 0;
		double f0 = now_s();
		for (size_t i = 0; i < count; i++) {
			if (r & 1)
				SHA256(all.p + off, lens[i], leaf);
			else
				mbedtls_sha256_ret(all.p + off, lens[i], leaf, 0);
			off += lens[i];
		}
		double fs = now_s() - f0, *best = r & 1 ? &raw_best : &mbed_best;
		if (fs < *best)
			*best = fs;
	}
	uint8_t root_floor[32];
	for (int r = 0; r < 3; r++) {
		struct merkle mk;
		merkle_init(&mk);
		uint8_t leaf[32];
		size_t off = 0;
		double f0 = now_s();
		for (size_t i = 0; i < count; i++) {
			merkle_leaf_hash(all.p + off, lens[i], leaf);
			merkle_append(&mk, leaf);
			off += lens[i];
		}
		merkle_root(&mk, root_floor);
		double fs = now_s() - f0;
		if (fs < floor_best)
			floor_best = fs;
	}
	buf_free(&all);
	free(lens);

	/* The real binary, whole process, best of 3. */
	char exe[1024];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0; /* build/bench */
	snprintf(cmd, sizeof cmd, "%s/../assent-verify ledger %s --key %s/big/keys/checkpoint.pub >/dev/null", exe, dir,
		 root);
	double ver_best = 1e9;
	for (int r = 0; r < 3; r++) {
		double v0 = now_s();
		int st = system(cmd);
		double vs = now_s() - v0;
		if (st != 0)
			fail("assent-verify", "did not report the ledger intact");
		if (vs < ver_best)
			ver_best = vs;
	}
	double fr = (double)count / floor_best, vr = (double)count / ver_best;
	printf("%-44s %12s %10s\n", "", "entries/s", "MB/s");
	printf("%-44s %12.0f %10.1f\n", "floor: OpenSSL SHA-256 (leaves + nodes)", fr,
	       (double)total / floor_best / 1e6);
	printf("%-44s %12.0f %10.1f\n", "OpenSSL SHA-256 of each entry alone", (double)count / raw_best,
	       (double)total / raw_best / 1e6);
	printf("%-44s %12.0f %10.1f\n", "mbedTLS SHA-256 of each entry, for scale", (double)count / mbed_best,
	       (double)total / mbed_best / 1e6);
	printf("%-44s %12.0f %10.1f\n", "assent-verify ledger (whole process)", vr, (double)total / ver_best / 1e6);
	printf("verification rate = %.0f%% of OpenSSL's SHA-256 of the entries alone, %.0f%% of the tree's "
	       "hashing (goal: 70%% or more)\n",
	       100.0 * vr * raw_best / (double)count, 100.0 * vr / fr);

	consistency_cost(dir, count);

	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: could not remove %s\n", root);
	return 0;
}
