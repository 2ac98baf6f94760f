/* make bench: call records written per second, SQLite, PostgreSQL and MariaDB side by side: store_write
 * (gateway/recorder/store.h) driven directly, as the recorder drives it, with batches of 512
 * rows (the recorder's largest), rows shaped like those a tools/call through the gate makes in
 * mode meta and in mode full (arguments and result kept), and for scale one row per commit.
 * SQLite: a file in a scratch directory (db.c's settings: WAL, synchronous NORMAL); PostgreSQL:
 * a throwaway server that tests/scripts/pg.sh starts (its settings: fsync off, synchronous_commit
 * off, a unix socket), or the one --pg CONNINFO names; MariaDB: one that tests/scripts/my.sh
 * starts (innodb_flush_log_at_trx_commit 0, a unix socket), or the one --my URL names. None syncs
 * each commit to disk, so the figures compare the clients and schemas, not the disks. Each run
 * ends by counting the rows in the table. Figures only: nothing here passes or fails on time.
 * Usage (from the repository root):
 * build/bench/records_bench [--rows N] [--pg CONNINFO | --no-pg] [--my URL | --no-my] */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/recorder/db.h"
#include "gateway/recorder/store.h"

#define BATCH 512     /* the recorder's BATCH_MAX (gateway/recorder/main.c) */
#define ONE_ROWS 5000 /* rows written one per commit */
#define PG_SH "tests/scripts/pg.sh"
#define MY_SH "tests/scripts/my.sh"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *err)
{
	fprintf(stderr, "records_bench: %s: %s\n", what, err);
	exit(2);
}

/* One batch's rows and the texts they point into, rewritten for each batch (outside the
 * timing) so that every call_id is new. */
struct rows {
	struct rec_call c[BATCH];
	char id[BATCH][24], req[BATCH][24], sess[BATCH][48], ident[BATCH][64];
};

static const char ARGS[] = "{\"text\":\"bench\",\"path\":\"/srv/data/reports/2026/q3/summary.md\",\"limit\":100}";
static const char RESULT[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"bench: 1 match in /srv/data/reports/2026/q3/summary.md, "
    "line 42: quarterly totals by region, revenue and churn, with the previous quarter beside them\"}],"
    "\"isError\":false}";

static void fill(struct rows *r, size_t n, uint64_t first, int full)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = first + i;
		snprintf(r->id[i], sizeof r->id[i], "c%016llx", (unsigned long long)(k * 0x9e3779b97f4a7c15ull));
		snprintf(r->req[i], sizeof r->req[i], "%llu", (unsigned long long)(k % 100000 + 2));
		snprintf(r->sess[i], sizeof r->sess[i], "stdio:%llu", (unsigned long long)(k / 20000 + 1));
		snprintf(r->ident[i], sizeof r->ident[i], "{\"uid\":1000,\"pid\":%llu,\"agent\":null}",
			 (unsigned long long)(4000 + k / 20000));
		r->c[i] = (struct rec_call){
		    .call_id = r->id[i],
		    .tool = (char *)"fs__echo",
		    .upstream = (char *)"fs",
		    .started_ms = 1796000000000LL + (int64_t)k,
		    .duration_ms = 0.25 + (double)(k % 97) / 100.0,
		    .outcome = "ok",
		    .ok = 1,
		    .session_id = r->sess[i],
		    .request_id = r->req[i],
		    .user_sub = (char *)"uid:1000",
		    .caller_kind = (char *)"uid",
		    .client_id = (char *)"gate-bench/1",
		    .identity = r->ident[i],
		    .args_size = full ? (int64_t)strlen(ARGS) : 16,
		    .result_size = full ? (int64_t)strlen(RESULT) : 257,
		    .arguments = full ? (char *)ARGS : NULL,
		    .result = full ? (char *)RESULT : NULL,
		    .decision = (char *)"forwarded",
		    .rule = (char *)"line 1",
		    .ledger_seq = -1,
		    .server_version = (char *)"0.1.0",
		};
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct fig {
	double rate, p50_ms, p99_ms;
	long long counted;
};

static int count_row(void *ctx, const char *const *cols, size_t ncols)
{
	*(long long *)ctx = ncols && cols[0] ? strtoll(cols[0], NULL, 10) : -1;
	return 0;
}

/* Write rows in batches of per_batch into fresh tables (prefix) of url; time store_write only. */
static struct fig run(const char *url, const char *prefix, size_t rows, size_t per_batch, int full)
{
	static struct rows r;
	char err[AS_ERRLEN] = "", sql[128];
	struct db *d = NULL;
	struct store *st = NULL;
	if (db_open(url, &d, err) != 0)
		fail("db_open", err);
	snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %stool_calls, %sevents, %sfeedback, %sfeedback_call_links",
		 prefix, prefix, prefix, prefix);
	if (db_kind(d) != DB_SQLITE && db_script(d, sql, err) != 0)
		fail("dropping an earlier run's tables", err);
	if (store_open(d, prefix, &st, NULL, err) != 0)
		fail("store_open", err);
	size_t nb = (rows + per_batch - 1) / per_batch;
	double *lat = calloc(nb, sizeof *lat), total = 0;
	if (!lat)
		fail("memory", "no room for the batches' timings");
	for (size_t b = 0; b < nb; b++) {
		size_t n = rows - b * per_batch < per_batch ? rows - b * per_batch : per_batch;
		fill(&r, n, (uint64_t)b * per_batch, full);
		double t0 = now_s();
		if (store_write(st, r.c, n, NULL, 0, err) != 0)
			fail("store_write", err);
		lat[b] = now_s() - t0;
		total += lat[b];
	}
	qsort(lat, nb, sizeof *lat, cmp_d);
	struct fig f = {(double)rows / total, lat[nb / 2] * 1e3, lat[nb * 99 / 100 < nb ? nb * 99 / 100 : nb - 1] * 1e3,
			-1};
	free(lat);
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %stool_calls", prefix);
	if (db_query(d, sql, NULL, 0, count_row, &f.counted, err) != 0)
		fail("counting the rows", err);
	store_free(st);
	db_close(d);
	return f;
}

static int backend(const char *name, const char *url, size_t rows)
{
	static const struct {
		const char *label, *prefix;
		int full, one;
	} shapes[] = {
	    {"mode meta, 512 rows per batch", "bm_", 0, 0},
	    {"mode full, 512 rows per batch", "bf_", 1, 0},
	    {"mode meta, 1 row per commit", "b1_", 0, 1},
	};
	int bad = 0;
	printf("%s\n", name);
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		size_t n = shapes[s].one ? (rows < ONE_ROWS ? rows : ONE_ROWS) : rows;
		struct fig f = run(url, shapes[s].prefix, n, shapes[s].one ? 1 : BATCH, shapes[s].full);
		printf("  %-32s %9zu %12.0f %12.3f %12.3f", shapes[s].label, n, f.rate, f.p50_ms, f.p99_ms);
		if (f.counted != (long long)n) {
			printf("   WRONG: the table holds %lld rows", f.counted);
			bad = 1;
		}
		printf("\n");
	}
	return bad;
}

/* Start a throwaway server with sh (pg.sh, my.sh) in dir/sub; the URL it prints into conn. */
static int srv_start(const char *sh, const char *sub, const char *dir, char *conn, size_t n, char *why, size_t wn)
{
	char cmd[600];
	if (access(sh, X_OK) != 0) {
		snprintf(why, wn, "%s not found (run from the repository root)", sh);
		return -1;
	}
	snprintf(cmd, sizeof cmd, "%s start %s/%s 2>%s/srv.err", sh, dir, sub, dir);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(conn, (int)n, p)) {
		if (p)
			pclose(p);
		snprintf(cmd, sizeof cmd, "%s/srv.err", dir);
		FILE *e = fopen(cmd, "r");
		size_t got = e ? fread(why, 1, wn - 1, e) : 0;
		why[got] = 0;
		if (e)
			fclose(e);
		if (!got)
			snprintf(why, wn, "%s start printed no URL", sh);
		why[strcspn(why, "\n")] = 0;
		return -1;
	}
	conn[strcspn(conn, "\n")] = 0;
	return pclose(p) == 0 ? 0 : -1;
}

/* The server sh starts in dir/sub (or the one given) benched under label; 1 when this started it. */
static int server_backend(const char *sh, const char *sub, const char *given, int skip, const char *name,
			  const char *label, const char *dir, size_t rows, int *bad)
{
	char conn[700] = "", why[300] = "";
	int started = 0;
	if (!given && !skip) {
		started = srv_start(sh, sub, dir, conn, sizeof conn, why, sizeof why) == 0;
		given = started ? conn : NULL;
	}
	if (given)
		*bad |= backend(label, given, rows);
	else
		printf("%s: SKIP: %s\n", name, skip ? "its --no- option" : why);
	return started;
}

int main(int argc, char **argv)
{
	size_t rows = 100000;
	const char *pg = NULL, *my = NULL;
	int no_pg = 0, no_my = 0;
	for (int i = 1; i < argc; i++) {
		uint64_t v;
		if (!strcmp(argv[i], "--rows") && i + 1 < argc && parse_u64(argv[i + 1], &v) == 0 && v > 0 &&
		    v <= 10000000) {
			rows = (size_t)v;
			i++;
		} else if (!strcmp(argv[i], "--pg") && i + 1 < argc) {
			pg = argv[++i];
		} else if (!strcmp(argv[i], "--no-pg")) {
			no_pg = 1;
		} else if (!strcmp(argv[i], "--my") && i + 1 < argc) {
			my = argv[++i];
		} else if (!strcmp(argv[i], "--no-my")) {
			no_my = 1;
		} else {
			fprintf(stderr,
				"usage: records_bench [--rows N (1..10000000)] [--pg CONNINFO | --no-pg] [--my URL | "
				"--no-my]: "
				"unexpected %s\n",
				argv[i]);
			return 2;
		}
	}
	char dir[] = "/tmp/assent-recbench.XXXXXX", url[600];
	if (!mkdtemp(dir))
		fail("mkdtemp", strerror(errno));
	chmod(dir, 0711); /* pg.sh's cluster owner (as root: postgres) must reach dir/pg */
	printf("== call records written per second (store_write as the recorder calls it; %zu rows per shape, "
	       "%d per commit for one row per commit) ==\n",
	       rows, rows < ONE_ROWS ? (int)rows : ONE_ROWS);
	printf("%-34s %9s %12s %12s %12s\n", "", "rows", "rows/s", "p50 ms", "p99 ms");
	printf("%-34s %9s %12s %12s %12s\n", "", "", "", "per commit", "per commit");
	snprintf(url, sizeof url, "sqlite:%s/calls.db", dir);
	int bad = backend("SQLite (WAL, synchronous NORMAL: no fsync per commit)", url, rows);
	int started = server_backend(PG_SH, "pg", pg, no_pg, "PostgreSQL",
				     "PostgreSQL 15 over a unix socket (pg.sh: fsync off, synchronous_commit off)", dir,
				     rows, &bad);
	int my_started =
	    server_backend(MY_SH, "my", my, no_my, "MariaDB",
			   "MariaDB 10.11 over a unix socket (my.sh: no flush per commit)", dir, rows, &bad);
	const char *stop[2][2] = {{started ? PG_SH : NULL, "pg"}, {my_started ? MY_SH : NULL, "my"}};
	for (int i = 0; i < 2; i++) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "%s stop %s/%s >/dev/null 2>&1", stop[i][0], dir, stop[i][1]);
		if (stop[i][0] && system(cmd) != 0)
			fprintf(stderr, "records_bench: %s stop %s/%s failed\n", stop[i][0], dir, stop[i][1]);
	}
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "records_bench: could not remove %s\n", dir);
	return bad ? 1 : 0;
}
