/* assent-recorder: the confined process that writes the call records (issue 16). Started by
 * the signer (never by hand) as `assent-recorder [--uid N]` with its IPC socket on 3 and the
 * JSON lines' descriptor, if any, on 4 (gateway/proto/workers.h). It reads the records the
 * signer completed, redacts them (prep.c), and writes them in batches to the JSON lines and
 * the database (SQLite, PostgreSQL or MySQL / MariaDB, store.c). A sink that fails is logged and retried with
 * backoff; meanwhile records wait in memory up to the configured queue, then are dropped and
 * counted. Nothing it does can slow or fail an agent's call: the signer never waits on it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/reccfg.h"
#include "gateway/proto/workers.h"
#include "gateway/recorder/confine.h"
#include "gateway/recorder/prep.h"
#include "gateway/recorder/store.h"
#include "include/assent/version.h"

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
	struct rec_event *e; /* events, likewise */
	size_t ne, ecap;
	uint64_t first_ms, retry_ms, backoff_ms, next_prune_ms, next_stats_ms, last_log_ms;
	uint64_t written, dropped, failed, events, sent_sig;
};

/* A failure, logged at most every 10 s (the counters say how many). */
static void fail_log(struct rec *r, const char *what, const char *err)
{
	uint64_t now = now_unix_ms();
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

static void flush(struct rec *r, int force);

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
	if (!strcmp(r->cfg.database, "off")) {
		r->written++;
		rec_call_free(&c);
		return;
	}
	if (r->nq + r->ne >= r->cfg.queue_max && now_unix_ms() >= r->retry_ms)
		flush(r, 1);			 /* a database that keeps up: a small queue is written, not dropped */
	if (r->nq + r->ne >= r->cfg.queue_max) { /* full: dropped and counted, as the seed's queue does */
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
	if (!r->nq && !r->ne)
		r->first_ms = now_unix_ms();
	r->q[r->nq++] = c;
}

static void on_event(struct rec *r, const struct cv *body)
{
	char err[AS_ERRLEN];
	struct rec_event e;
	if (prep_event(&r->p, body, &e, err) != 0) {
		ipc_log(FD, "warning", "recorder: %s", err);
		rec_event_free(&e);
		return;
	}
	if (r->jsonl >= 0) {
		json_t *j = prep_event_json(&e);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (s) {
			size_t n = strlen(s);
			s[n] = '\n';
			if (write(r->jsonl, s, n + 1) != (ssize_t)(n + 1))
				fail_log(r, "JSON lines", strerror(errno));
			free(s);
		}
	}
	if (!strcmp(r->cfg.database, "off")) {
		r->events++;
		rec_event_free(&e);
		return;
	}
	if (r->nq + r->ne >= r->cfg.queue_max && now_unix_ms() >= r->retry_ms)
		flush(r, 1);
	if (r->nq + r->ne >= r->cfg.queue_max) { /* the same queue and the same drop-and-count as calls */
		r->dropped++;
		rec_event_free(&e);
		return;
	}
	if (r->ne == r->ecap) {
		size_t cap = r->ecap ? 2 * r->ecap : 64;
		struct rec_event *q = realloc(r->e, cap * sizeof *q);
		if (!q) {
			r->dropped++;
			rec_event_free(&e);
			return;
		}
		r->e = q;
		r->ecap = cap;
	}
	if (!r->nq && !r->ne)
		r->first_ms = now_unix_ms();
	r->e[r->ne++] = e;
}

/* ---- questions about the records (F_REC_QUERY): QA reports, events, pruning ---- */

static void answer(struct rec *r, uint64_t qid, enum proto_status st, json_t *j)
{
	if (st == PS_OK && json_is_object(j) && !json_object_get(j, "ok")) /* the control socket's convention */
		json_object_set_new(j, "ok", json_true());
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (js && strlen(js) > IPC_FRAME_MAX / 2) {
		free(js);
		js = NULL;
		st = PS_BAD_REQUEST;
		j = json_pack("{s:b,s:s}", "ok", 0, "error", "the answer is too large: ask for fewer (limit)");
		js = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_REC_ANSWER, 3);
	char err[AS_ERRLEN];
	if (js && f && !ipc_put_uint(&a, f, "qid", qid) && !ipc_put_uint(&a, f, "status", st) &&
	    !ipc_put_text(&a, f, "json", js, strlen(js)) && ipc_send(FD, f, -1, err) == AS_EIO)
		_exit(0);
	free(js);
	cv_arena_free(&a);
	(void)r;
}

static void answer_error(struct rec *r, uint64_t qid, enum proto_status st, const char *msg)
{
	answer(r, qid, st, json_pack("{s:b,s:s}", "ok", 0, "error", msg));
}

/* A text field as a C string in buf (NULL when absent). */
static const char *field(const struct cv *b, const char *k, char *buf, size_t n)
{
	const struct cv *v = cv_get(b, k);
	if (!v || v->t != CV_TEXT)
		return NULL;
	snprintf(buf, n, "%.*s", (int)v->n, (const char *)v->s);
	return buf;
}

/* submit: a report, redacted, stored and linked to the calls before it. */
static int q_submit(struct rec *r, const struct cv *body, const char *ty, int64_t now, json_t **out, char *err)
{
	char user[128], ckind[PROTO_CKIND_MAX + 1], client[256], session[80];
	int64_t id = 0;
	int rc;
	const struct cv *t = cv_get(body, "title"), *d = cv_get(body, "description"), *c = cv_get(body, "contact");
	char *title = t ? prep_text(&r->p, (const char *)t->s, t->n, PROTO_QA_TITLE_MAX) : NULL;
	char *desc = d ? prep_text(&r->p, (const char *)d->s, d->n, PROTO_QA_DESC_MAX) : NULL;
	char *contact = c ? prep_text(&r->p, (const char *)c->s, c->n, PROTO_QA_CONTACT_MAX) : NULL;
	const char *us = field(body, "user", user, sizeof user), *ck = field(body, "ckind", ckind, sizeof ckind);
	struct store_feedback fb = {ty,
				    title ? title : "",
				    desc ? desc : "",
				    contact,
				    us,
				    ck,
				    field(body, "client", client, sizeof client),
				    field(body, "session", session, sizeof session),
				    now};
	size_t linked = 0;
	rc = store_feedback_add(r->st, &fb, &id, err);
	/* Links: the same session first, then the same principal within the window; an
	 * anonymous caller is nobody in particular, so it links by session alone. */
	if (rc == 0)
		rc = store_link(r->st, id, fb.session_id, ck && !strcmp(ck, "anonymous") ? NULL : us,
				(int64_t)r->cfg.window_s * 1000, now, &linked, err);
	if (rc == 0)
		*out = json_pack("{s:I,s:I}", "feedback_id", (json_int_t)id, "linked_calls", (json_int_t)linked);
	free(title);
	free(desc);
	free(contact);
	return rc;
}

/* events: one key's events, of the kinds asked (all when none). */
static int q_events(struct rec *r, const struct cv *body, json_t **out, char *err)
{
	char key[256];
	int rc;
	const char *kinds[STORE_EVENT_KINDS_MAX];
	char kb[STORE_EVENT_KINDS_MAX][REC_KIND_MAX + 1];
	size_t nk = 0;
	const struct cv *ka = cv_get(body, "kinds");
	for (size_t i = 0; ka && ka->t == CV_ARRAY && i < ka->n && nk < STORE_EVENT_KINDS_MAX; i++)
		if (ka->items[i].t == CV_TEXT && ka->items[i].n <= REC_KIND_MAX) {
			snprintf(kb[nk], sizeof kb[nk], "%.*s", (int)ka->items[i].n, (const char *)ka->items[i].s);
			kinds[nk] = kb[nk];
			nk++;
		}
	const char *k = field(body, "key", key, sizeof key);
	char bb[PROTO_EVENT_BY_MAX + 1];
	const char *by = field(body, "by", bb, sizeof bb);
	json_t *evs = NULL;
	rc = k ? store_events_for(r->st, k, by, kinds, nk, (size_t)frame_get_uint(body, "limit"), &evs, err)
	       : as_fail(err, AS_EINVAL, "key: required");
	if (rc == 0)
		*out = json_pack("{s:s,s:o}", "key", k, "events", evs);
	return rc;
}

/* prune: the calls and events older than asked (or than the retention). */
static int q_prune(struct rec *r, const struct cv *body, int64_t now, json_t **out, char *err)
{
	int rc;
	uint64_t older = frame_get_uint(body, "older");
	if (!older)
		older = r->cfg.retention_s;
	int64_t calls = 0, events = 0;
	rc = older ? store_prune(r->st, now - (int64_t)older * 1000, &calls, &events, err)
		   : as_fail(err, AS_EINVAL, "no retention is configured: say --older-than");
	char tc[64], te[64];
	snprintf(tc, sizeof tc, "%stool_calls", r->cfg.prefix);
	snprintf(te, sizeof te, "%sevents", r->cfg.prefix);
	if (rc == 0)
		*out = json_pack("{s:b,s:{s:I,s:I},s:I}", "ok", 1, "deleted", tc, (json_int_t)calls, te,
				 (json_int_t)events, "older_than_seconds", (json_int_t)older);
	return rc;
}

static void on_query(struct rec *r, const struct cv *body)
{
	uint64_t qid = frame_get_uint(body, "qid");
	char op[PROTO_QA_WORD_MAX + 1] = "", err[AS_ERRLEN];
	field(body, "op", op, sizeof op);
	if (!strcmp(r->cfg.database, "off")) {
		answer_error(r, qid, PS_UNAVAILABLE, "the records have no database (records.database is off)");
		return;
	}
	flush(r, 1); /* records still queued go first: a report links them, a query sees them */
	if (!r->st || r->nq || r->ne) {
		answer_error(r, qid, PS_UNAVAILABLE,
			     "the records database is unavailable now (the daemon's log says why); try again");
		return;
	}
	int64_t now = (int64_t)now_unix_ms();
	int64_t id = (int64_t)frame_get_uint(body, "id");
	char type[PROTO_QA_WORD_MAX + 1], status[PROTO_QA_WORD_MAX + 1], user[128], ckind[PROTO_CKIND_MAX + 1],
	    session[80];
	const char *ty = field(body, "type", type, sizeof type), *stt = field(body, "status", status, sizeof status);
	json_t *out = NULL;
	int rc = 0;
	if (!strcmp(op, "submit")) {
		rc = q_submit(r, body, ty, now, &out, err);
	} else if (!strcmp(op, "link")) { /* an outside report's id: the calls before now, linked to it */
		char ref[STORE_REF_MAX + 1];
		const char *us = field(body, "user", user, sizeof user),
			   *ck = field(body, "ckind", ckind, sizeof ckind), *rf = field(body, "ref", ref, sizeof ref);
		size_t linked = 0;
		rc = store_link_ref(r->st, rf, field(body, "session", session, sizeof session),
				    ck && !strcmp(ck, "anonymous") ? NULL : us, (int64_t)r->cfg.window_s * 1000, now,
				    (size_t)frame_get_uint(body, "limit"), &linked, err);
		if (rc == 0)
			out = json_pack("{s:s,s:I}", "feedback_id", rf, "linked_calls", (json_int_t)linked);
	} else if (!strcmp(op, "list")) {
		rc = store_feedback_list(r->st, ty, stt, (size_t)frame_get_uint(body, "offset"),
					 (size_t)frame_get_uint(body, "limit"), &out, err);
	} else if (!strcmp(op, "stats")) {
		rc = store_feedback_stats(r->st, now, &out, err);
	} else if (!strcmp(op, "status")) {
		rc = stt ? store_feedback_status(r->st, id, stt, now, err)
			 : as_fail(err, AS_EINVAL, "status: required (in_progress, resolved or closed)");
		if (rc == 0)
			out = json_pack("{s:b,s:I,s:s}", "ok", 1, "feedback_id", (json_int_t)id, "status", stt);
	} else if (!strcmp(op, "delete")) {
		rc = store_feedback_delete(r->st, id, err);
		if (rc == 0)
			out = json_pack("{s:b,s:I}", "ok", 1, "deleted", (json_int_t)id);
	} else if (!strcmp(op, "show")) {
		rc = store_feedback_show(r->st, id, &out, err);
	} else if (!strcmp(op, "events")) {
		rc = q_events(r, body, &out, err);
	} else if (!strcmp(op, "prune")) {
		rc = q_prune(r, body, now, &out, err);
	} else {
		rc = as_fail(err, AS_EINVAL, "unknown question \"%s\"", op);
	}
	if (rc != 0) {
		answer_error(r, qid,
			     rc == AS_ENOTFOUND ? PS_NOT_FOUND
			     : rc == AS_EINVAL	? PS_BAD_REQUEST
						: PS_UNAVAILABLE,
			     err);
		json_decref(out);
		return;
	}
	answer(r, qid, PS_OK, out);
}

static void flush(struct rec *r, int force)
{
	uint64_t now = now_unix_ms();
	size_t waiting = r->nq + r->ne;
	if (!waiting || (!force && waiting < BATCH_MAX && now - r->first_ms < FLUSH_MS) ||
	    (!force && now < r->retry_ms))
		return;
	char err[AS_ERRLEN];
	while (r->nq || r->ne) {
		if (!r->st && open_db(r, err) != 0) {
			r->failed++;
			fail_log(r, "the database", err);
			break;
		}
		size_t n = r->nq < BATCH_MAX ? r->nq : BATCH_MAX, m = r->ne < BATCH_MAX ? r->ne : BATCH_MAX;
		int wr = store_write(r->st, r->q, n, r->e, m, err);
		if (wr == AS_EINVAL) { /* the database refused the rows themselves: dropped, as the seed does */
			ipc_log(FD, "error", "recorder: the database refused %zu records and %zu events: %s", n, m,
				err);
			r->dropped += n + m;
		} else if (wr != 0) {
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
		for (size_t i = 0; i < m; i++)
			rec_event_free(&r->e[i]);
		memmove(r->q, r->q + n, (r->nq - n) * sizeof *r->q);
		memmove(r->e, r->e + m, (r->ne - m) * sizeof *r->e);
		r->nq -= n;
		r->ne -= m;
		if (wr == 0) {
			r->written += n;
			r->events += m;
		}
		r->backoff_ms = 0;
		r->first_ms = now;
	}
	if (r->nq || r->ne) { /* retried with backoff: 1 s, doubling, at most 30 s */
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
	uint64_t now = now_unix_ms(),
		 sig = r->written * 31 + r->dropped * 7 + r->failed * 3 + r->nq + r->ne * 5 + r->events * 11;
	if (!force && (now < r->next_stats_ms || sig == r->sent_sig))
		return;
	r->next_stats_ms = now + 1000;
	r->sent_sig = sig;
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_REC_STATS, 5);
	char err[AS_ERRLEN];
	if (f && !ipc_put_uint(&a, f, "written", r->written) && !ipc_put_uint(&a, f, "dropped", r->dropped) &&
	    !ipc_put_uint(&a, f, "failed", r->failed) && !ipc_put_uint(&a, f, "queued", r->nq + r->ne) &&
	    !ipc_put_uint(&a, f, "events", r->events) && ipc_send(FD, f, -1, err) == AS_EIO)
		_exit(0);
	cv_arena_free(&a);
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
		seed = now_unix_ms() * 2654435761u;
	if (prep_init(&r->p, &r->cfg, seed, err) != 0)
		return AS_EINVAL;
	struct confine_opts co = {.dir = !strncmp(r->cfg.database, "sqlite:", 7) && r->dir[0] ? r->dir : NULL,
				  .tcp_port = db_url_tcp_port(r->cfg.database),
				  .net = db_url_net(r->cfg.database),
				  .uid = uid};
	if (confine_enter(&co, err) != 0)
		return AS_EIO;
	return 0;
}

int main(int argc, char **argv)
{
	static struct rec r;
	char err[AS_ERRLEN];
	uint64_t u = 0;
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		puts("assent-recorder " ASSENT_VERSION);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--uid")) {
		if (parse_u64(argv[2], &u) != 0 || u == 0 || u >= (uid_t)-1)
			return 2;
	} else if (argc != 1) {
		fputs("usage: assent-recorder [--uid N]\n       assent-recorder --version\n  started by assentd, never "
		      "by hand: see assentd(8)\n",
		      stderr);
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
	struct cv *hello = frame_hello(&a, "recorder");
	if (!hello || ipc_send(FD, hello, -1, err) != 0)
		return 2;
	/* Opened within the confinement, so that its files are the recorder's own, and after the
	 * hello: the records and queries the signer sends meanwhile wait on the socket, where
	 * before they were dropped while a server took its time (MySQL's first CREATE TABLEs). */
	if (open_db(&r, err) != 0)
		ipc_log(FD, "error", "recorder: the database: %s (retried)", err);
	for (;;) {
		struct pollfd pf = {.fd = FD, .events = POLLIN};
		int timeout = r.nq || r.ne ? FLUSH_MS / 2 : 1000;
		if (heap_idle(poll(&pf, 1, timeout)) < 0 && errno != EINTR)
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
				if (frame_down_check(f.type, f.body, err) != 0) /* its table, before any handler */
					ipc_log(FD, "error", "recorder: a frame from the signer refused: %s", err);
				else if (f.type == F_REC_CALLS) {
					const struct cv *recs = frame_get(f.body, "recs", CV_ARRAY);
					for (size_t i = 0; i < recs->n; i++) /* each a map, checked */
						on_call(&r, &recs->items[i]);
				} else if (f.type == F_REC_CALL) {
					on_call(&r, f.body);
				} else if (f.type == F_REC_EVENT)
					on_event(&r, f.body);
				else if (f.type == F_REC_QUERY)
					on_query(&r, f.body);
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
