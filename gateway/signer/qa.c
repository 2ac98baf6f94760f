/* QA reports and events (issue 16): what agents, reviewers and operators ask of the call
 * records, forwarded to the recorder as typed fields with the identity the signer measured,
 * and its answers taken back to whoever asked. The signer never reads the recorder's answers
 * (JSON text from a less privileged process): it passes them on as they are. Who may ask
 * what is decided here: agents submit reports and record events; reviewers list, count and
 * read them; admins (an admin token on the web; root or the daemon's own uid on the control
 * socket) move a report's status, delete it, record events and prune. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QA_WAIT_MS 15000

enum { QA_TO_MCP, QA_TO_CTL, QA_TO_WEB };

/* The fields of a question the recorder takes, as the worker's frame carried them (their
 * table in frames.c bounded each). */
static const char *const QA_COPY[] = {"type", "title", "description", "contact", "status", "id", "offset", "limit",
				      "key",  "kind",  "kinds",	      "attrs",	 "older",  "by", "ref"};

static int put_cv(struct cv_arena *a, struct cv *f, const char *k, const struct cv *v)
{
	struct cv *slot = ipc_put(a, f, k);
	if (!slot)
		return -1;
	*slot = *v;
	return 0;
}

static int recorder_ready(const struct signer *s)
{
	const struct worker *w = &s->w[W_REC];
	return s->recs.cfg && s->recs.cfg->mode != REC_OFF && w->fd >= 0 && w->state == S_READY;
}

/* Who asks, as the signer knows them. */
struct qa_who {
	const char *user, *ckind, *client, *session;
};

static void who_of_conn(const struct conn *c, struct qa_who *w, char session[64])
{
	session[0] = 0;
	if (c->http && c->session[0])
		snprintf(session, 64, "%s", c->session);
	else if (!c->http)
		snprintf(session, 64, "stdio:%llu", (unsigned long long)c->id);
	*w = (struct qa_who){c->owner, c->http ? (c->agent[0] ? "key" : "anonymous") : "uid",
			     c->client[0] ? c->client : NULL, session[0] ? session : NULL};
}

static int put_who(struct cv_arena *a, struct cv *f, const struct qa_who *w)
{
	return (w->user && ipc_put_text(a, f, "user", w->user, strlen(w->user))) ||
	       (w->ckind && ipc_put_text(a, f, "ckind", w->ckind, strlen(w->ckind))) ||
	       (w->client && ipc_put_text(a, f, "client", w->client, strlen(w->client))) ||
	       (w->session && ipc_put_text(a, f, "session", w->session, strlen(w->session)));
}

/* An event: kind, key and attributes from f (a worker's frame) or given; never waited on.
 * call: the id of the call it was recorded inside, unless the frame names one itself. */
static int send_event(struct signer *s, const struct cv *body, const struct qa_who *who, const char *kind,
		      const char *key, const char *attrs, const char *call)
{
	struct worker *w = &s->w[W_REC];
	if (!recorder_ready(s) || ipc_pending(&w->ipc) > (4u << 20)) {
		s->recs.dropped++;
		return -1;
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *f = ipc_frame_new(&a, F_REC_EVENT, 12);
	int rc = !f || ipc_put_uint(&a, f, "at", now_ms()) || put_who(&a, f, who) ||
		 ipc_put_text(&a, f, "version", ASSENT_VERSION, strlen(ASSENT_VERSION));
	if (!rc && body) {
		static const char *const keys[] = {"kind", "key", "attrs", "call"};
		for (size_t i = 0; !rc && i < sizeof keys / sizeof *keys; i++)
			if (cv_get(body, keys[i]))
				rc = put_cv(&a, f, keys[i], cv_get(body, keys[i]));
	} else if (!rc) {
		rc = ipc_put_text(&a, f, "kind", kind, strlen(kind)) ||
		     (key && ipc_put_text(&a, f, "key", key, strlen(key))) ||
		     (attrs && ipc_put_text(&a, f, "attrs", attrs, strlen(attrs)));
	}
	if (!rc && call && !(body && cv_get(body, "call")))
		rc = ipc_put_text(&a, f, "call", call, strlen(call));
	char err[AS_ERRLEN];
	rc = rc || ipc_conn_send(&w->ipc, f, -1, err) != 0;
	cv_arena_free(&a);
	if (rc)
		s->recs.dropped++;
	return rc ? -1 : 0;
}

/* assent's own events (rec_event_sink): to the recorder when it is ready, else dropped. */
static void qa_own_event(struct signer *s, const char *kind, const char *key, const char *call, json_t *attrs)
{
	if (!recorder_ready(s)) {
		json_decref(attrs);
		return;
	}
	char *js = attrs ? json_dumps(attrs, JSON_COMPACT) : NULL;
	json_decref(attrs);
	struct qa_who who = {"assent", "assent", NULL, NULL};
	send_event(s, NULL, &who, kind, key, js, call);
	free(js);
}

/* Kind: dotted, 1..128 of [A-Za-z0-9_-] and '.', not starting or ending with '.'. */
static int kind_ok(const struct cv *k)
{
	if (!k || k->t != CV_TEXT || k->n == 0 || k->n > PROTO_EVENT_KIND_MAX || k->s[0] == '.' ||
	    k->s[k->n - 1] == '.')
		return 0;
	for (size_t i = 0; i < k->n; i++) {
		char ch = (char)k->s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      strchr("_-.", ch)))
			return 0;
	}
	return 1;
}

/* An event's kind and key (f's, kind already well formed) against what the signer knows:
 * PS_OK, or the status of its refusal and why. */
static enum proto_status event_check(struct signer *s, const struct ipc_frame *f, const char *by, int operator,
				     char * why, size_t n)
{
	char kind[PROTO_EVENT_KIND_MAX + 1], key[PROTO_EVENT_KEY_MAX + 1];
	const struct cv *k = cv_get(f->body, "key");
	frame_text(f, "kind", kind, sizeof kind);
	frame_text(f, "key", key, sizeof key);
	if (k && (k->t != CV_TEXT || memchr(k->s, 0, k->n))) {
		snprintf(why, n, "key: text without NUL characters");
		return PS_BAD_REQUEST;
	}
	return (enum proto_status)event_claim(s, by, kind, k ? key : NULL, operator, why, n);
}

static void deliver(struct signer *s, const struct qa_wait *w, enum proto_status st, const char *js, size_t n)
{
	switch (w->to) {
	case QA_TO_MCP:
		send_refusal_text(s, w->conn, w->rid, js, n, st);
		break;
	case QA_TO_CTL:
		ctl_reply_text(s, w->conn, st, js, n);
		break;
	default: {
		struct web_out o = {.status = st, .ctype = "application/json", .text = js, .textn = n};
		web_send(s, w->conn, &o, NULL);
	}
	}
}

static void deliver_error(struct signer *s, const struct qa_wait *w, enum proto_status st, const char *msg)
{
	json_t *j = json_pack("{s:b,s:s}", "ok", 0, "error", msg);
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (js)
		deliver(s, w, st, js, strlen(js));
	free(js);
}

/* A question (op, the frame's QA fields) for the recorder, answered to `to` later. */
static void ask(struct signer *s, const struct ipc_frame *f, const char *op, int to, uint64_t conn, const char *rid,
		const struct qa_who *who)
{
	struct qa_wait me = {.used = 1, .to = to, .conn = conn, .until = now_ms() + QA_WAIT_MS};
	snprintf(me.rid, sizeof me.rid, "%s", rid ? rid : "");
	if (!recorder_ready(s)) {
		deliver_error(s, &me, PS_UNAVAILABLE,
			      s->recs.cfg && s->recs.cfg->mode == REC_OFF
				  ? "the call records are off (FEEDBACK_INSTRUMENTATION_MODE=off)"
				  : "the recorder is not running now (the daemon's log says why); try again");
		return;
	}
	size_t i = 0;
	while (s->recs.qa_waits && i < QA_WAITS && s->recs.qa_waits[i].used)
		i++;
	if (!s->recs.qa_waits || i == QA_WAITS) {
		deliver_error(s, &me, PS_TOO_MANY, "too many questions about the records at once; try again");
		return;
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *out = ipc_frame_new(&a, F_REC_QUERY, 24);
	me.qid = ++s->recs.qa_next;
	int rc = !out || ipc_put_uint(&a, out, "qid", me.qid) || ipc_put_text(&a, out, "op", op, strlen(op)) ||
		 put_who(&a, out, who);
	for (size_t k = 0; !rc && k < sizeof QA_COPY / sizeof *QA_COPY; k++)
		if (cv_get(f->body, QA_COPY[k]))
			rc = put_cv(&a, out, QA_COPY[k], cv_get(f->body, QA_COPY[k]));
	char err[AS_ERRLEN];
	if (rc || ipc_conn_send(&s->w[W_REC].ipc, out, -1, err) != 0) {
		deliver_error(s, &me, PS_UNAVAILABLE, "the question could not be passed to the recorder");
	} else {
		s->recs.qa_waits[i] = me;
		s->recs.qa_waiting++;
	}
	cv_arena_free(&a);
}

int records_answer(struct signer *s, const struct ipc_frame *f, char *err)
{
	uint64_t qid = cv_get(f->body, "qid")->u;
	const struct cv *js = cv_get(f->body, "json");
	for (size_t i = 0; s->recs.qa_waits && i < QA_WAITS; i++)
		if (s->recs.qa_waits[i].used && s->recs.qa_waits[i].qid == qid) {
			s->recs.qa_waits[i].used = 0;
			s->recs.qa_waiting--;
			deliver(s, &s->recs.qa_waits[i], (enum proto_status)cv_get(f->body, "status")->u,
				(const char *)js->s, js->n);
			return 0;
		}
	(void)err;
	return 0; /* asked by someone who has gone, or given up on: not an attack */
}

int h_rec_answer(void *ctx, struct ipc_frame *f, char *err)
{
	return records_answer(ctx, f, err);
}

void records_tick(struct signer *s)
{
	if (!s->recs.qa_waiting) /* every turn of the loop: nothing to look at, most of the time */
		return;
	uint64_t now = now_ms();
	for (size_t i = 0; s->recs.qa_waits && i < QA_WAITS; i++)
		if (s->recs.qa_waits[i].used && s->recs.qa_waits[i].until <= now) {
			s->recs.qa_waits[i].used = 0;
			s->recs.qa_waiting--;
			deliver_error(s, &s->recs.qa_waits[i], PS_UNAVAILABLE,
				      "the recorder did not answer in time; try again");
		}
}

static void op_of(const struct ipc_frame *f, char op[17])
{
	frame_text(f, "op", op, 17);
}

/* Who may ask each records question, per channel: the one table the three handlers read.
 *
 * A question is one frame type per channel (F_QA, F_CTL_QA, F_WEB_QA) with its command in
 * the "op" field, not one frame type per command (issue 30 asked for the latter). Why: each
 * channel's frame table in gateway/proto/frames.c already bounds every field a question may
 * carry there, whatever the command, and the recorder takes them all as one F_REC_QUERY; ten
 * commands times three channels would be up to 30 frame types whose tables repeat one another.
 * What a frame type would give (an unknown command refused before a handler runs, the
 * permission beside the name) this table gives: each handler looks its command up here first,
 * a command not in it is refused on every channel, and each channel's permission is a column
 * of its row. "event" alone is then handled in the signer (checked and sent, not asked). */
enum qa_perm {
	QA_NO,	  /* not on this channel */
	QA_ANY,	  /* an agent, on its own connection (mcp) */
	QA_READ,  /* a registered reviewer, or an admin */
	QA_ADMIN, /* control socket: root or the daemon's uid; web: an admin */
};
static const struct qa_row {
	const char *op;
	enum qa_perm mcp, ctl, web;
} qa_rows[] = {
    {"submit", QA_ANY, QA_NO, QA_NO},	 {"link", QA_ANY, QA_NO, QA_NO},	{"event", QA_ANY, QA_ADMIN, QA_NO},
    {"list", QA_NO, QA_READ, QA_READ},	 {"stats", QA_NO, QA_READ, QA_READ},	{"show", QA_NO, QA_READ, QA_READ},
    {"events", QA_NO, QA_READ, QA_READ}, {"status", QA_NO, QA_ADMIN, QA_ADMIN}, {"delete", QA_NO, QA_ADMIN, QA_ADMIN},
    {"prune", QA_NO, QA_ADMIN, QA_NO},
};

static const struct qa_row *qa_row(const char *op)
{
	for (size_t i = 0; i < sizeof qa_rows / sizeof *qa_rows; i++)
		if (!strcmp(qa_rows[i].op, op))
			return &qa_rows[i];
	return NULL;
}

/* An agent's question (F_QA): a report, or an event. */
int h_qa(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	char op[17], rid[PROTO_RID_MAX + 1], session[64];
	op_of(f, op);
	frame_text(f, "rid", rid, sizeof rid);
	struct qa_who who;
	who_of_conn(c, &who, session);
	char declared[ACTION_CLIENT_MAX + 1];
	if (!who.client && cv_get(f->body, "client")) { /* stdio: what its client declared, as such */
		frame_text(f, "client", declared, sizeof declared);
		who.client = declared;
	}
	const struct qa_row *row = qa_row(op);
	if (!row || row->mcp != QA_ANY)
		return as_fail(err, AS_ECORRUPT, "F_QA: \"%s\" is not a question an agent may ask", op);
	insights_use(s, "mcp", op, f);
	if (!strcmp(op, "event")) {
		struct qa_wait me = {.to = QA_TO_MCP, .conn = c->id};
		snprintf(me.rid, sizeof me.rid, "%s", rid);
		char why[400];
		if (!kind_ok(cv_get(f->body, "kind"))) {
			deliver_error(
			    s, &me, PS_BAD_REQUEST,
			    "kind: a dotted name of 1 to 128 characters (A-Z a-z 0-9 _ - .), such as llm.call");
			return 0;
		}
		enum proto_status st = event_check(s, f, c->owner, 0, why, sizeof why);
		if (st != PS_OK) {
			slog("warning", "an event from %s refused: %s", c->owner, why);
			deliver_error(s, &me, st, why);
			return 0;
		}
		/* Recorded while one call of its connection waits for its answer: inside that call. */
		int ok = send_event(s, f->body, &who, NULL, NULL, NULL, rec_call_open(s, c->id, rid)) == 0;
		char js[64];
		snprintf(js, sizeof js, "{\"queued\":%s}", ok ? "true" : "false");
		send_result_text(s, c->id, rid, js, strlen(js), 0);
		return 0;
	}
	ask(s, f, op, QA_TO_MCP, c->id, rid, &who);
	return 0;
}

static int ctl_admin(const struct signer *s, const struct conn *c)
{
	return c->uid == 0 || c->uid == s->self_uid;
}

/* An operator's or reviewer's question on the control socket (F_CTL_QA). */
int h_ctl_qa(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_REVIEW, &c, err));
	char op[17];
	op_of(f, op);
	const struct qa_row *row = qa_row(op);
	int admin_op = row && row->ctl == QA_ADMIN, read_op = row && row->ctl == QA_READ;
	reload_registry(s);
	const char *reviewer = registry_reviewer_by_uid(s->reg, c->uid);
	struct qa_wait me = {.to = QA_TO_CTL, .conn = c->id};
	if (!admin_op && !read_op) {
		deliver_error(s, &me, PS_BAD_REQUEST, "unknown records command");
		return 0;
	}
	if (admin_op ? !ctl_admin(s, c) : !reviewer && !ctl_admin(s, c)) {
		char msg[200];
		snprintf(
		    msg, sizeof msg,
		    admin_op
			? "uid %u may not do this: root or the daemon's own uid only"
			: "uid %u is not a registered reviewer (an operator runs: assent reviewer add NAME --uid %u)",
		    (unsigned)c->uid, (unsigned)c->uid);
		deliver_error(s, &me, admin_op ? PS_FORBIDDEN : PS_UNAUTHORIZED, msg);
		return 0;
	}
	char user[96];
	if (reviewer)
		snprintf(user, sizeof user, "reviewer:%s", reviewer);
	else
		snprintf(user, sizeof user, "uid:%u", (unsigned)c->uid);
	struct qa_who who = {user, "uid", NULL, NULL};
	insights_use(s, "control", op, f);
	if (!strcmp(op, "event")) {
		if (!kind_ok(cv_get(f->body, "kind"))) {
			deliver_error(
			    s, &me, PS_BAD_REQUEST,
			    "kind: a dotted name of 1 to 128 characters (A-Z a-z 0-9 _ - .), such as deploy.finished");
			return 0;
		}
		char why[400];
		enum proto_status st = event_check(s, f, user, 1, why, sizeof why);
		if (st != PS_OK) {
			deliver_error(s, &me, st, why);
			return 0;
		}
		int ok = send_event(s, f->body, &who, NULL, NULL, NULL, NULL) == 0;
		ctl_reply(s, c->id, answer_ok(json_pack("{s:b,s:b}", "ok", ok, "queued", ok)));
		return 0;
	}
	ask(s, f, op, QA_TO_CTL, c->id, NULL, &who);
	return 0;
}

/* A web question (F_WEB_QA), its caller already identified by web.c: reviewer or admin. */
void qa_web(struct signer *s, const struct ipc_frame *f, uint64_t hreq, const char *reviewer, const char *admin)
{
	char op[17];
	op_of(f, op);
	struct qa_wait me = {.to = QA_TO_WEB, .conn = hreq};
	const struct qa_row *row = qa_row(op);
	int admin_op = row && row->web == QA_ADMIN, read_op = row && row->web == QA_READ;
	if (!admin_op && !read_op) {
		deliver_error(s, &me, PS_BAD_REQUEST, "unknown records question");
		return;
	}
	if (admin_op && !admin) {
		deliver_error(s, &me, PS_FORBIDDEN,
			      "only an admin may change or delete a report (assent admin add NAME)");
		return;
	}
	char user[96];
	snprintf(user, sizeof user, "%s:%s", admin ? "admin" : "reviewer", admin ? admin : reviewer);
	struct qa_who who = {user, "token", NULL, NULL};
	insights_use(s, "web", op, f);
	ask(s, f, op, QA_TO_WEB, hreq, NULL, &who);
}

void qa_register(struct signer *s)
{
	rec_event_sink(s, qa_own_event);
}
