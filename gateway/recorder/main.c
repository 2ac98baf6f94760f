/* assent-recorder: the confined process that writes the call records (issue 16). Started by
 * the signer (never by hand) as `assent-recorder [--uid N]` with its IPC socket on 3 and the
 * JSON lines' descriptor, if any, on 4 (gateway/proto/workers.h). It reads the records the
 * signer completed, redacts them (prep.c), and writes them in batches to the JSON lines and
 * the database (SQLite or PostgreSQL, store.c). A sink that fails is logged and retried with
 * backoff; meanwhile records wait in memory up to the configured queue, then are dropped and
 * counted. Nothing it does can slow or fail an agent's call: the signer never waits on it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <postgresql/libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/reccfg.h"
#include "gateway/proto/workers.h"
#include "gateway/recorder/confine.h"
#include "gateway/recorder/prep.h"
#include "gateway/recorder/store.h"

#define FD 3
#define BATCH_MAX 512	 /* records per write */
#define FLUSH_MS 200	 /* the longest a record waits for its batch */
#define PRUNE_MS 3600000 /* retention runs at most once an hour, after a write */

struct rec {
	struct rec_cfg cfg;
	char dir[4200];
	struct prep p;
	struct ipc_conn ipc;
	int jsonl; /* -1: none */
	struct db *db;
	struct store *st;
	struct rec_call *q; /* waiting for the database, oldest first */
	size_t nq, qcap;
	uint64_t first_ms, retry_ms, backoff_ms, next_prune_ms, next_stats_ms, last_log_ms;
	uint64_t written, dropped, failed, events, sent_sig;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A failure, logged at most every 10 s (the counters say how many). */
static void fail_log(struct rec *r, const char *what, const char *err)
{
	uint64_t now = now_ms();
	if (now - r->last_log_ms < 10000)
		return;
	r->last_log_ms = now;
	ipc_log(FD, "error", "recorder: %s: %s (%llu records waiting, %llu dropped so far)", what, err,
		(unsigned long long)r->nq, (unsigned long long)r->dropped);
}

static int open_db(struct rec *r, char *err)
{
	if (!strcmp(r->cfg.database, "off"))
		return 0;
	/* SQLite in its own directory is named from there: the recorder's working directory. */
	char rel[sizeof r->cfg.database];
	const char *url = r->cfg.database;
	size_t dl = strlen(r->dir);
	if (dl && !strncmp(url, "sqlite:", 7) && !strncmp(url + 7, r->dir, dl) && url[7 + dl] == '/') {
		snprintf(rel, sizeof rel, "sqlite:%s", url + 8 + dl);
		url = rel;
	}
	if (!r->db && db_open(url, &r->db, err) != 0)
		return AS_EIO;
	json_t *mig = NULL;
	if (!r->st && store_open(r->db, r->cfg.prefix, &r->st, &mig, err) != 0) {
		db_close(r->db);
		r->db = NULL;
		return AS_EIO;
	}
	if (json_array_size(mig)) {
		char *m = json_dumps(mig, JSON_COMPACT);
		ipc_log(FD, "info", "recorder: the records' tables were brought up to date: %s", m ? m : "");
		free(m);
	}
	json_decref(mig);
	return 0;
}

static void jsonl_write(struct rec *r, const struct rec_call *c)
{
	if (r->jsonl < 0)
		return;
	json_t *j = prep_call_json(c);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s)
		return;
	size_t n = strlen(s);
	s[n] = '\n'; /* json_dumps leaves room for its NUL: the newline takes it */
	if (write(r->jsonl, s, n + 1) != (ssize_t)(n + 1))
		fail_log(r, "JSON lines", strerror(errno));
	free(s);
}

static void on_call(struct rec *r, const struct cv *body)
{
	char err[AS_ERRLEN];
	struct rec_call c;
	if (prep_call(&r->p, body, &c, err) != 0) {
		ipc_log(FD, "warning", "recorder: %s", err);
		rec_call_free(&c);
		return;
	}
	jsonl_write(r, &c);
	if (!r->st && !r->db && !strcmp(r->cfg.database, "off")) {
		r->written++;
		rec_call_free(&c);
		return;
	}
	if (r->nq >= r->cfg.queue_max) { /* full: dropped and counted, as the seed's queue does */
		r->dropped++;
		rec_call_free(&c);
		return;
	}
	if (r->nq == r->qcap) {
		size_t cap = r->qcap ? 2 * r->qcap : 256;
		struct rec_call *q = realloc(r->q, cap * sizeof *q);
		if (!q) {
			r->dropped++;
			rec_call_free(&c);
			return;
		}
		r->q = q;
		r->qcap = cap;
	}
	if (!r->nq)
		r->first_ms = now_ms();
	r->q[r->nq++] = c;
}

static void flush(struct rec *r, int force)
{
	uint64_t now = now_ms();
	if (!r->nq || (!force && r->nq < BATCH_MAX && now - r->first_ms < FLUSH_MS) || (!force && now < r->retry_ms))
		return;
	char err[AS_ERRLEN];
	while (r->nq) {
		if (!r->st && open_db(r, err) != 0) {
			r->failed++;
			fail_log(r, "the database", err);
			break;
		}
		size_t n = r->nq < BATCH_MAX ? r->nq : BATCH_MAX;
		if (store_write(r->st, r->q, n, NULL, 0, err) != 0) {
			r->failed++;
			fail_log(r, "writing records", err);
			if (db_reconnect(r->db, err) != 0) { /* PostgreSQL went away: try again later */
				store_free(r->st);
				r->st = NULL;
				db_close(r->db);
				r->db = NULL;
			}
			break;
		}
		for (size_t i = 0; i < n; i++)
			rec_call_free(&r->q[i]);
		memmove(r->q, r->q + n, (r->nq - n) * sizeof *r->q);
		r->nq -= n;
		r->written += n;
		r->backoff_ms = 0;
		r->first_ms = now;
	}
	if (r->nq) { /* retried with backoff: 1 s, doubling, at most 30 s */
		r->backoff_ms = r->backoff_ms ? (r->backoff_ms * 2 > 30000 ? 30000 : r->backoff_ms * 2) : 1000;
		r->retry_ms = now + r->backoff_ms;
		return;
	}
	if (r->cfg.retention_s && r->st && now >= r->next_prune_ms) { /* the first write after start prunes */
		int64_t calls = 0, events = 0;
		if (store_prune(r->st, (int64_t)now - (int64_t)r->cfg.retention_s * 1000, &calls, &events, err) != 0)
			ipc_log(FD, "error", "recorder: pruning: %s", err);
		else if (calls || events)
			ipc_log(FD, "info", "recorder: pruned %lld calls and %lld events older than %llu s",
				(long long)calls, (long long)events, (unsigned long long)r->cfg.retention_s);
		r->next_prune_ms = now + PRUNE_MS;
	}
}

static void stats(struct rec *r, int force)
{
	uint64_t now = now_ms(), sig = r->written * 31 + r->dropped * 7 + r->failed * 3 + r->nq + r->events * 11;
	if (!force && (now < r->next_stats_ms || sig == r->sent_sig))
		return;
	r->next_stats_ms = now + 1000;
	r->sent_sig = sig;
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_REC_STATS, 5);
	char err[AS_ERRLEN];
	if (f && !ipc_put_uint(&a, f, "written", r->written) && !ipc_put_uint(&a, f, "dropped", r->dropped) &&
	    !ipc_put_uint(&a, f, "failed", r->failed) && !ipc_put_uint(&a, f, "queued", r->nq) &&
	    !ipc_put_uint(&a, f, "events", r->events) && ipc_send(FD, f, -1, err) == AS_EIO)
		_exit(0);
	cv_arena_free(&a);
}

/* The PostgreSQL server's TCP port, which alone the recorder may connect to; 0 for SQLite, a
 * unix socket, or no database. */
static unsigned pg_port(const char *url)
{
	if (strncmp(url, "postgres", 8))
		return 0;
	const char *ci = !strncmp(url, "postgresql:", 11) && strncmp(url, "postgresql://", 13) ? url + 11 : url;
	char *e = NULL;
	PQconninfoOption *o = PQconninfoParse(ci, &e);
	PQfreemem(e);
	unsigned port = 5432;
	int unix_sock = 0;
	for (PQconninfoOption *x = o; x && x->keyword; x++) {
		if (!strcmp(x->keyword, "port") && x->val && *x->val)
			port = (unsigned)atoi(x->val);
		if (!strcmp(x->keyword, "host") && x->val && x->val[0] == '/')
			unix_sock = 1;
	}
	PQconninfoFree(o);
	return unix_sock ? 0 : port;
}

static int setup(struct rec *r, uid_t uid, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, 1u << 16);
	struct ipc_frame f;
	int rc = ipc_config(&r->ipc, FD, &a, &f, err);
	const struct cv *v = rc ? NULL : cv_get(f.body, "records");
	json_t *j = v && v->t == CV_TEXT ? json_loadb((const char *)v->s, v->n, 0, NULL) : NULL;
	if (!rc && !j)
		rc = as_fail(err, AS_ECORRUPT, "its configuration has no records");
	if (!rc)
		rc = rec_cfg_from_json(&r->cfg, j, err);
	snprintf(r->dir, sizeof r->dir, "%s", json_string_value(json_object_get(j, "dir")) ?: "");
	json_decref(j);
	if (!rc)
		ipc_frame_close_fds(&f);
	cv_arena_free(&a);
	if (rc)
		return rc;
	r->jsonl = r->cfg.jsonl[0] && fcntl(RECORDER_JSONL_FD, F_GETFD) >= 0 ? RECORDER_JSONL_FD : -1;
	uint64_t seed;
	if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
		seed = now_ms() * 2654435761u;
	if (prep_init(&r->p, &r->cfg, seed, err) != 0)
		return AS_EINVAL;
	struct confine_opts co = {.dir = !strncmp(r->cfg.database, "sqlite:", 7) && r->dir[0] ? r->dir : NULL,
				  .tcp_port = pg_port(r->cfg.database),
				  .uid = uid};
	if (confine_enter(&co, err) != 0)
		return AS_EIO;
	/* Opened within the confinement, so that its files are the recorder's own. */
	if (open_db(r, err) != 0)
		ipc_log(FD, "error", "recorder: the database: %s (retried)", err);
	return 0;
}

int main(int argc, char **argv)
{
	static struct rec r;
	char err[AS_ERRLEN];
	uint64_t u = 0;
	if (argc == 3 && !strcmp(argv[1], "--uid")) {
		if (parse_u64(argv[2], &u) != 0 || u == 0 || u >= (uid_t)-1)
			return 2;
	} else if (argc != 1) {
		fputs("usage: assent-recorder [--uid N]\n  started by assentd, never by hand: see assentd(1)\n", stderr);
		return 2;
	}
	if (ipc_conn_init(&r.ipc, FD, err) != 0)
		return 2;
	if (setup(&r, (uid_t)u, err) != 0) {
		ipc_log(FD, "error", "recorder: %s", err);
		return 2;
	}
	struct cv_arena a;
	cv_arena_init(&a, 1u << 20);
	struct cv *hello = ipc_frame_new(&a, F_HELLO, 1);
	if (!hello || ipc_put_text(&a, hello, "kind", "recorder", 8) != 0 || ipc_send(FD, hello, -1, err) != 0)
		return 2;
	for (;;) {
		struct pollfd pf = {.fd = FD, .events = POLLIN};
		int timeout = r.nq ? FLUSH_MS / 2 : 1000;
		if (poll(&pf, 1, timeout) < 0 && errno != EINTR)
			return 2;
		int eof = 0;
		if (pf.revents) {
			int rd = ipc_read(&r.ipc, err);
			if (rd == AS_ECORRUPT)
				return 2;
			eof = rd == AS_EIO;
			for (;;) {
				cv_arena_reset(&a);
				struct ipc_frame f;
				int g = ipc_next(&r.ipc, &a, &f, err);
				if (g != 0) {
					eof = eof || g == AS_EIO || g == AS_ECORRUPT;
					break;
				}
				if (f.type == F_REC_CALL)
					on_call(&r, f.body);
				ipc_frame_close_fds(&f);
			}
		}
		flush(&r, eof);
		if (eof) { /* the signer is stopping: what could be written is */
			if (r.nq)
				ipc_log(FD, "warning", "recorder: stopping with %zu records not written", r.nq);
			return 0;
		}
		stats(&r, 0);
	}
}
