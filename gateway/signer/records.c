/* The signer's share of the call records (issue 16): their configuration, checked at start;
 * the recorder's directory and start; each F_CALLREC of the mcp worker completed with what
 * the signer itself measured (who made the call) and decided (its status, rule and ledger
 * sequence number), then queued toward the recorder, or dropped and counted when that queue
 * is full: never waited on. The recorder (gateway/recorder/) holds the database client. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/proto/frames.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes queued toward the recorder beyond which a record is dropped: its socket's queue is
 * the bounded queue (the recorder holds at most queue_max more in memory). */
#define REC_TXQ_BYTES (4u << 20)

/* The "records" section of the upstreams file, when there is one. */
static int section_of(const char *path, json_t **out, char *err)
{
	*out = NULL;
	if (!path)
		return 0;
	struct buf b;
	buf_init(&b, 4u << 20);
	if (file_read(path, 4u << 20, &b, err) != 0) {
		buf_free(&b);
		return AS_EINVAL;
	}
	json_t *root = json_loadb((const char *)b.p, b.len, 0, NULL);
	buf_free(&b);
	*out = json_incref(json_object_get(root, "records"));
	json_decref(root);
	return 0;
}

/* The recorder (worker_kind): a program of its own beside assent-worker, given the JSON
 * lines' descriptor and, before anything else, where records go and how they are redacted. */
static int rec_prepare(struct signer *s, int k, struct spawn *sp)
{
	(void)k;
	struct cv *rf = ipc_frame_new(&sp->a, F_CONFIG, 2);
	if (!rf || records_recorder_cfg(s, &sp->a, rf, &sp->l1) != 0) {
		slog("error", "cannot make the recorder's configuration");
		return -1;
	}
	sp->config = rf;
	sp->owned = 1;
	sp->exe = RECORDER_EXE;
	return 0;
}

static const struct worker_kind rec_kind = {rec_prepare, NULL, NULL, NULL};

int records_start(struct signer *s)
{
	char err[AS_ERRLEN];
	json_t *sec = NULL;
	struct rec_cfg *c = calloc(1, sizeof *c);
	if (!c || section_of(s->o->upstreams, &sec, err) != 0 || rec_cfg_load(c, sec, s->o->state, err) != 0) {
		slog("error", "call records: %s", c ? err : "out of memory");
		json_decref(sec);
		free(c);
		return 2;
	}
	json_decref(sec);
	for (size_t i = 0; i < c->npatterns; i++) /* the policy's own guard against costly expressions */
		if (pol_regex_check(c->patterns[i], strlen(c->patterns[i]), err) != 0) {
			slog("error", "call records: redact_patterns[%zu]: %s", i, err);
			free(c);
			return 2;
		}
	for (size_t i = 0; i < c->nkeys || i < c->nprefixes; i++) {
		const char *k[1] = {i < c->nkeys ? c->keys[i] : NULL},
			   *p[1] = {i < c->nprefixes ? c->prefixes[i] : NULL};
		struct redact_rules r = {k, k[0] ? 1 : 0, p, p[0] ? 1 : 0, 0};
		if (redact_rules_check(&r, err) != 0) {
			slog("error", "call records: %s", err);
			free(c);
			return 2;
		}
	}
	s->recs.cfg = c;
	if (insights_start(s) != 0)
		return 2;
	char why[AS_ERRLEN];
	if (c->mode != REC_OFF && recsink_check(c->jsonl, why, sizeof why) != 0) {
		slog("error", "call records: %s", why);
		return 2;
	}
	if (getrandom(&s->recs.ids, sizeof s->recs.ids, 0) != (ssize_t)sizeof s->recs.ids)
		s->recs.ids = now_ms() << 20; /* unique enough for ids: they only join records */
	s->recs.ids >>= 1;		      /* counted up from here, never wrapping in a daemon's life */
	if (!(s->recs.notes = calloc(REC_NOTES, sizeof *s->recs.notes)) ||
	    !(s->recs.qa_waits = calloc(QA_WAITS, sizeof *s->recs.qa_waits))) {
		slog("error", "out of memory");
		return 2;
	}
	if (c->mode == REC_OFF)
		return 0;
	/* The SQLite database lives in a directory of its own, the only one the recorder may
	 * touch (Landlock); STATE/calls.db names it for the seed's `sqlite3 calls.db`. */
	char dir[4200], link[4200];
	snprintf(dir, sizeof dir, "%s/%s", s->o->state, STATE_RECORDS_DIR);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		slog("error", "call records: cannot create %s: %s", dir, strerror(errno));
		return 2;
	}
	snprintf(link, sizeof link, "%s/%s", s->o->state, STATE_RECORDS_DB);
	if (!strncmp(c->database, "sqlite:", 7) && symlink(STATE_RECORDS_DIR "/" STATE_RECORDS_DB, link) != 0 &&
	    errno != EEXIST)
		slog("warning", "call records: cannot link %s: %s", link, strerror(errno));
	if (geteuid() == 0) { /* the recorder's own uid owns its directory and nothing else */
		uid_t u;
		if (jail_worker_uid(getenv("ASSENT_WORKER_UID"), W_REC, &u, err) != 0) {
			slog("error", "%s", err);
			return 2;
		}
		if (chown(dir, u, u) != 0)
			slog("warning", "call records: cannot give %s to uid %u: %s", dir, (unsigned)u,
			     strerror(errno));
		static const char *const files[] = {STATE_RECORDS_DB, STATE_RECORDS_DB "-wal", STATE_RECORDS_DB "-shm",
						    STATE_RECORDS_DB "-journal"};
		for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
			char f[4300];
			snprintf(f, sizeof f, "%s/%s", dir, files[i]);
			if (chown(f, u, u) != 0 && errno != ENOENT)
				slog("warning", "call records: cannot give %s to uid %u: %s", f, (unsigned)u,
				     strerror(errno));
		}
	}
	s->w[W_REC] = (struct worker){.kind = "recorder", .fd = -1};
	worker_kind(s, W_REC, &rec_kind);
	if (spawn_worker(s, W_REC) != 0) {
		slog("error", "cannot start the recorder");
		return 2;
	}
	return 0;
}

int records_worker_cfg(struct signer *s, struct cv_arena *a, struct cv *f)
{
	if (!s->recs.cfg || s->recs.cfg->mode == REC_OFF)
		return 0;
	json_t *j = rec_cfg_json(s->recs.cfg, 0);
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	int rc = !js || ipc_put_text(a, f, "records", js, strlen(js));
	free(js);
	return rc;
}

int records_recorder_cfg(struct signer *s, struct cv_arena *a, struct cv *f, int *passfd)
{
	*passfd = -1;
	json_t *j = rec_cfg_json(s->recs.cfg, 1);
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/%s", s->o->state, STATE_RECORDS_DIR);
	json_object_set_new(j, "dir", json_string(dir));
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	int rc = !js || ipc_put_text(a, f, "records", js, strlen(js));
	free(js);
	/* JSON lines go to a descriptor the signer opens: the recorder opens no file but its database. */
	if (!rc && !strcmp(s->recs.cfg->jsonl, "stderr"))
		*passfd = fcntl(2, F_DUPFD_CLOEXEC, 3); /* the child's 2 becomes /dev/null before it is moved */
	else if (!rc && s->recs.cfg->jsonl[0] == '|')
		*passfd = recsink_start(s->recs.cfg->jsonl + 1);
	else if (!rc && s->recs.cfg->jsonl[0] &&
		 (*passfd = open(s->recs.cfg->jsonl, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) < 0)
		slog("error", "call records: cannot open %s for JSON lines: %s", s->recs.cfg->jsonl, strerror(errno));
	return rc;
}

/* ---- what the signer decided about a call, kept until its record comes ---- */

static size_t note_slot(uint64_t conn, const char *rid)
{
	uint64_t h = 1469598103934665603ull ^ conn;
	for (const char *p = rid; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return (size_t)(h % REC_NOTES);
}

static void note_put(struct signer *s, uint64_t conn, const char *rid, const char *decision, unsigned rule,
		     uint64_t seq)
{
	if (!s->recs.notes || !s->recs.cfg || s->recs.cfg->mode == REC_OFF)
		return;
	struct rec_note *n = &s->recs.notes[note_slot(conn, rid)];
	if (!n->used || n->conn != conn || strcmp(n->rid, rid)) { /* a newer call takes the slot */
		memset(n, 0, sizeof *n);
		n->used = 1;
		n->conn = conn;
		snprintf(n->rid, sizeof n->rid, "%s", rid);
		snprintf(n->call_id, sizeof n->call_id, "c%016llx", (unsigned long long)s->recs.ids++);
	}
	if (decision) { /* its status: the agent is answered now */
		snprintf(n->decision, sizeof n->decision, "%s", decision);
		n->open = 0;
	}
	if (rule)
		n->rule = rule;
	if (seq)
		n->seq = seq;
}

static void note_waiting(struct signer *s, uint64_t conn, const char *rid)
{
	note_put(s, conn, rid, NULL, 0, 0);
	struct rec_note *n = s->recs.notes ? &s->recs.notes[note_slot(conn, rid)] : NULL;
	if (n && n->used && n->conn == conn && !strcmp(n->rid, rid) && !n->decision[0])
		n->open = 1;
}

static const char *note_call_id(const struct signer *s, uint64_t conn, const char *rid)
{
	const struct rec_note *n = s->recs.notes ? &s->recs.notes[note_slot(conn, rid)] : NULL;
	return n && n->used && n->conn == conn && !strcmp(n->rid, rid) ? n->call_id : NULL;
}

static const struct rec_hooks notes = {note_put, note_waiting, note_call_id};

/* A gated call's dispatch and end, as events in its call record (phase_hook). */
static void rec_phase(struct signer *s, enum req_phase ph, const struct phase_ev *e)
{
	const struct phase_call *c = e->call;
	const char *in = rec_call_id(s, c->conn, c->rid);
	if (ph == PH_DISPATCHED)
		rec_event_in(s, "call.dispatched", e->sid, in,
			     json_pack("{s:s,s:s,s:s,s:I,s:b}", "upstream", c->upstream, "tool", c->tool, "call",
				       c->digest, "rule", (json_int_t)c->rule, "ledgered", 1));
	else
		rec_event_in(s, "call.finished", e->sid, in,
			     json_pack("{s:s,s:s,s:I,s:I,s:b}", "upstream", c->upstream, "tool", c->tool, "duration_ms",
				       (json_int_t)c->duration_ms, "outcome_seq", (json_int_t)e->seq, "error",
				       c->error));
}

void records_register(struct signer *s)
{
	rec_hooks(s, &notes);
	phase_hook(s, PH_DISPATCHED, rec_phase);
	phase_hook(s, PH_ENDED, rec_phase);
}

const char *rec_call_open(const struct signer *s, uint64_t conn, const char *except_rid)
{
	const char *found = NULL;
	for (size_t i = 0; s->recs.notes && i < REC_NOTES; i++) {
		const struct rec_note *n = &s->recs.notes[i];
		if (!n->used || !n->open || n->conn != conn || (except_rid && !strcmp(n->rid, except_rid)))
			continue;
		if (found)
			return NULL; /* two calls in flight: which one it is inside is not known */
		found = n->call_id;
	}
	return found;
}

static int put_cv(struct cv_arena *a, struct cv *f, const char *k, const struct cv *v)
{
	struct cv *slot = ipc_put(a, f, k);
	if (!slot)
		return -1;
	*slot = *v;
	return 0;
}

/* One record of the mcp worker's (body: F_CALLREC's fields, checked) into the recorder's
 * batch: 1 when added, 0 when dropped (its connection ended, or the queue is full), or a
 * negative as_err for a record no worker may send. */
static int rec_item(struct signer *s, const struct cv *body, struct cv_arena *a, struct cv *arr, char *err)
{
	const struct cv *cid = cv_get(body, "conn");
	struct conn *c = conn_get(s, cid->u, W_MCP);
	if (!c) {
		if (conn_ended(s, cid->u))
			return 0; /* a call of a connection that ended meanwhile: its record goes with it */
		return as_fail(err, AS_ECORRUPT, "a call record names connection %llu, which it was never given",
			       (unsigned long long)cid->u);
	}
	const struct cv *r = cv_get(body, "rid");
	char rid[PROTO_RID_MAX + 1];
	snprintf(rid, sizeof rid, "%.*s", (int)r->n, (const char *)r->s);
	struct rec_note *n = s->recs.notes ? &s->recs.notes[note_slot(c->id, rid)] : NULL;
	if (n && (!n->used || n->conn != c->id || strcmp(n->rid, rid)))
		n = NULL;
	struct cv *out = ipc_frame_new(a, F_REC_CALL, body->n + 12); /* an item in a frame's shape */
	int rc = !out;
	for (size_t i = 0; !rc && i < body->n; i++) {
		const struct cv *k = &body->items[2 * i];
		if (cv_text_eq(k, "t") || cv_text_eq(k, "conn") || (c->client[0] && cv_text_eq(k, "client")))
			continue;
		char key[16];
		snprintf(key, sizeof key, "%.*s", (int)(k->n < 15 ? k->n : 15), (const char *)k->s);
		rc = put_cv(a, out, key, k + 1);
	}
	/* Who made it, as the signer measured: never the worker's word. */
	char session[64] = "";
	const char *kind = c->http ? (c->agent[0] ? "key" : "anonymous") : "uid";
	if (c->http && c->session[0])
		snprintf(session, sizeof session, "%s", c->session);
	else if (!c->http)
		snprintf(session, sizeof session, "stdio:%llu", (unsigned long long)c->id);
	const char *agent = !c->http && s->reg ? registry_agent_by_uid(s->reg, c->uid) : NULL;
	char ident[200];
	if (c->http)
		snprintf(ident, sizeof ident, c->agent[0] ? "{\"agent\":\"%s\"}" : "{}", c->agent);
	else if (agent)
		snprintf(ident, sizeof ident, "{\"uid\":%u,\"pid\":%d,\"agent\":\"%s\"}", (unsigned)c->uid, (int)c->pid,
			 agent);
	else
		snprintf(ident, sizeof ident, "{\"uid\":%u,\"pid\":%d}", (unsigned)c->uid, (int)c->pid);
	rc = rc || ipc_put_text(a, out, "user", c->owner, strlen(c->owner)) ||
	     ipc_put_text(a, out, "ckind", kind, strlen(kind)) ||
	     (c->client[0] && ipc_put_text(a, out, "client", c->client, strlen(c->client))) ||
	     (session[0] && ipc_put_text(a, out, "session", session, strlen(session))) ||
	     ipc_put_text(a, out, "identity", ident, strlen(ident)) ||
	     ipc_put_text(a, out, "version", ASSENT_VERSION, strlen(ASSENT_VERSION));
	if (!rc && n) {
		char rule[24];
		snprintf(rule, sizeof rule, "line %u", n->rule);
		rc = ipc_put_text(a, out, "id", n->call_id, strlen(n->call_id)) ||
		     (n->decision[0] && ipc_put_text(a, out, "decision", n->decision, strlen(n->decision))) ||
		     (n->rule && ipc_put_text(a, out, "rule", rule, strlen(rule))) ||
		     (n->seq && ipc_put_uint(a, out, "seq", n->seq));
	}
	if (n)
		n->used = 0;
	if (rc)
		return 0;
	arr->items[arr->n++] = *out;
	return 1;
}

/* F_CALLRECS: a batch of the mcp worker's records, each checked against F_CALLREC's table
 * (a record that breaks it is an attack, as a frame would be), completed, and passed on as one
 * F_REC_CALLS, or dropped and counted when the recorder's queue is full: never waited on. */
int h_callrecs(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	const struct cv *recs = cv_get(f->body, "recs");
	const struct frame_table *tb = frame_table_find(F_CALLREC);
	for (size_t i = 0; i < recs->n; i++) {
		const struct cv *it = &recs->items[i];
		if (it->t != CV_MAP)
			return as_fail(err, AS_ECORRUPT, "IPC F_CALLRECS: record %zu is not a map", i);
		int rc = frame_fields_check(tb, it, err);
		if (rc != 0)
			return rc;
	}
	struct worker *w = &s->w[W_REC];
	if (!s->recs.cfg || s->recs.cfg->mode == REC_OFF || w->fd < 0 || w->state != S_READY ||
	    ipc_pending(&w->ipc) > REC_TXQ_BYTES) {
		s->recs.dropped += recs->n; /* never waited on: the agents' calls are already answered */
		return 0;
	}
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *out = ipc_frame_new(a, F_REC_CALLS, 1), *arr = cv_array(a, recs->n), *slot;
	if (!out || !arr || !(slot = ipc_put(a, out, "recs"))) {
		s->recs.dropped += recs->n;
		return 0;
	}
	arr->n = 0;
	for (size_t i = 0; i < recs->n; i++) {
		int rc = rec_item(s, &recs->items[i], a, arr, err);
		if (rc < 0)
			return rc;
		if (rc == 0)
			s->recs.dropped++;
	}
	*slot = *arr;
	if (!arr->n)
		return 0;
	if (ipc_conn_send(&w->ipc, out, -1, err) != 0) {
		s->recs.dropped += arr->n;
		return 0;
	}
	s->recs.sent += arr->n;
	return 0;
}

int h_rec_stats(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	(void)err;
	s->recs.written = cv_get(f->body, "written")->u;
	s->recs.dropped_rec = cv_get(f->body, "dropped")->u;
	s->recs.failed = cv_get(f->body, "failed")->u;
	s->recs.queued = cv_get(f->body, "queued")->u;
	s->recs.events = cv_get(f->body, "events")->u;
	return 0;
}

int records_metrics(const struct signer *s, struct buf *o)
{
	return buf_printf(o,
			  "# HELP assent_records_total Call records by where they went.\n"
			  "# TYPE assent_records_total counter\n"
			  "assent_records_total{to=\"recorder\"} %llu\nassent_records_total{to=\"written\"} %llu\n"
			  "# HELP assent_records_dropped_total Call records and events dropped: their queue was full "
			  "(signer), or the recorder's memory was (recorder).\n"
			  "# TYPE assent_records_dropped_total counter\n"
			  "assent_records_dropped_total{where=\"signer\"} %llu\n"
			  "assent_records_dropped_total{where=\"recorder\"} %llu\n"
			  "# HELP assent_records_sink_failures_total Writes to a sink that failed (retried).\n"
			  "# TYPE assent_records_sink_failures_total counter\n"
			  "assent_records_sink_failures_total %llu\n"
			  "# HELP assent_records_queued Records held by the recorder, not yet written.\n"
			  "# TYPE assent_records_queued gauge\n"
			  "assent_records_queued %llu\n"
			  "# HELP assent_events_total Events written.\n# TYPE assent_events_total counter\n"
			  "assent_events_total %llu\n",
			  (unsigned long long)s->recs.sent, (unsigned long long)s->recs.written,
			  (unsigned long long)s->recs.dropped, (unsigned long long)s->recs.dropped_rec,
			  (unsigned long long)s->recs.failed, (unsigned long long)s->recs.queued,
			  (unsigned long long)s->recs.events);
}
