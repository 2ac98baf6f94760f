/* The ends of requests: a request freed, the ring of decided requests their requesters may
 * still collect, the history of decisions, the log line, metrics and events of a request that
 * left the queue, a finished request's answer, cancellations. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gate_req_free(struct gate_req *g)
{
	if (!g)
		return;
	free(g->call);
	free(g->name);
	free(g->token);
	free(g->ustate);
	json_decref(g->input);
	json_decref(g->args);
	free(g);
}

void req_free(struct req *r)
{
	if (!r)
		return;
	json_decref(r->view);
	json_decref(r->subjects);
	for (size_t i = 0; i < 16; i++)
		free(r->content[i]);
	for (size_t i = 0; i < r->noptions; i++)
		free(r->options[i]);
	free(r->options);
	gate_req_free(r->gate);
	free(r);
}

struct done *done_at(struct signer *s, size_t i)
{
	return &s->done[(s->done_head + i) % MAX_DONE];
}

static void remember_done(struct signer *s, const char *sid, uint64_t conn, const char *owner, json_t *result,
			  uint64_t created_ms)
{
	uint64_t now = now_ms();
	/* Drop what expired. */
	while (s->ndone && done_at(s, 0)->until < now) {
		json_decref(done_at(s, 0)->result);
		done_at(s, 0)->result = NULL;
		s->done_head = (s->done_head + 1) % MAX_DONE;
		s->ndone--;
	}
	/* One owner keeps at most DONE_PER_OWNER answers: past it their own oldest gives way
	 * (in its slot: it then outlives its hour a little), so one agent flooding decisions
	 * never pushes another's approval out. Only when the ring is full of many owners'
	 * does the oldest of all go. */
	struct done *d = NULL;
	size_t mine = 0;
	for (size_t i = 0; i < s->ndone; i++) { /* by `until`: a slot reused in place is younger than its place */
		struct done *x = done_at(s, i);
		if (x->result && !strcmp(x->owner, owner) && (mine++, !d || x->until < d->until))
			d = x;
	}
	if (mine >= DONE_PER_OWNER) {
		json_decref(d->result);
	} else {
		if (s->ndone == MAX_DONE) {
			json_decref(done_at(s, 0)->result);
			done_at(s, 0)->result = NULL;
			s->done_head = (s->done_head + 1) % MAX_DONE;
			s->ndone--;
		}
		d = done_at(s, s->ndone++);
	}
	snprintf(d->sid, sizeof d->sid, "%s", sid);
	d->owner_conn = conn;
	snprintf(d->owner, sizeof d->owner, "%s", owner);
	d->result = json_incref(result);
	d->until = now + 3600 * 1000u;
	d->created_ms = created_ms;
	d->at_ms = now;
	/* A get_feedback already waiting for it gets it now. */
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++) {
		struct waiter *w = &s->waiters[i];
		if (w->used && !strcmp(w->sid, sid)) {
			send_result(s, w->conn, w->rid, result, 0);
			w->used = 0;
		}
	}
}

/* One structured JSON line per finished request (stderr, the daemon's log). */

void history_summary(char out[HISTORY_MESSAGE_MAX + 1], const char *msg, size_t n)
{
	if (n > HISTORY_MESSAGE_MAX) /* cut on a character boundary: JSON takes whole UTF-8 only */
		for (n = HISTORY_MESSAGE_MAX; n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80; n--)
			;
	memcpy(out, msg, n);
	out[n] = 0;
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

void history_push(struct signer *s, const struct recent *x)
{
	struct recent *slot = &s->recent[s->recent_head];
	free(slot->pd);
	*slot = *x; /* the ring owns x's terms from here */
	s->recent_head = (s->recent_head + 1) % HISTORY_MAX;
	if (s->nrecent < HISTORY_MAX)
		s->nrecent++;
}

void history_free(struct signer *s)
{
	for (size_t i = 0; i < HISTORY_MAX; i++) {
		free(s->recent[i].pd);
		s->recent[i].pd = NULL;
	}
	s->nrecent = s->recent_head = 0;
}

/* A decision into the history ring, over its oldest when full (a ring: no copy per decision). */
static void history_add(struct signer *s, const struct pq_item *it, const struct req *r, const char *outcome,
			const char *reviewer, uint64_t seq)
{
	const char *msg = json_string_value(json_object_get(r->view, "message"));
	char summary[HISTORY_MESSAGE_MAX + 1];
	history_summary(summary, msg ? msg : "", msg ? strlen(msg) : 0);
	struct recent x = {0};
	snprintf(x.sid, sizeof x.sid, "%s", it->session_id);
	snprintf(x.outcome, sizeof x.outcome, "%s", outcome);
	/* No reviewer: the agent cancelled it (or went), the policy decided it at once (allow,
	 * deny), or its deadline passed (an ask). */
	snprintf(x.by, sizeof x.by, "%s",
		 reviewer				? reviewer
		 : !strcmp(outcome, "cancelled")	? "agent"
		 : r->has_pd && r->pd.action != POL_ASK ? "policy"
							: "deadline");
	snprintf(x.message, sizeof x.message, "%s", summary);
	/* named as the card names it: a uid registered as an agent is that agent */
	const char *ag = json_string_value(json_object_get(json_object_get(r->view, "requester"), "agent"));
	if (ag)
		snprintf(x.requester, sizeof x.requester, "agent:%.70s", ag);
	else
		snprintf(x.requester, sizeof x.requester, "%s", r->owner);
	snprintf(x.audience, sizeof x.audience, "%s", r->audience);
	x.seq = seq;
	x.at_ms = now_ms();
	x.at = x.at_ms / 1000;
	x.created_ms = it->created_ms;
	x.rule = r->has_pd ? r->pd.line : 0;
	/* Out of memory for the terms: the entry stays hidden from everyone rather than shown to all. */
	x.restricted = r->has_pd && r->pd.nreviewers;
	if (x.restricted && (x.pd = malloc(sizeof *x.pd)))
		*x.pd = r->pd;
	history_push(s, &x);
}

/* A decision on disk goes into the ring (phase_hook, PH_DECIDED); cancellations too: the
 * page's history and its Outcome filter show them. */
static void history_phase(struct signer *s, enum req_phase ph, const struct phase_ev *e)
{
	(void)ph;
	if (e->seq)
		history_add(s, e->it, e->r, e->outcome, e->reviewer, e->seq);
}

void history_register(struct signer *s)
{
	phase_hook(s, PH_DECIDED, history_phase);
}

const struct recent *history_nth(const struct signer *s, size_t i)
{
	return i < s->nrecent ? &s->recent[(s->recent_head + HISTORY_MAX - 1 - i) % HISTORY_MAX] : NULL;
}

/* A request left the queue: one log line, the metrics, assent's own event, and the decided
 * phase's hooks (the webhooks, the history ring, the reviewers' pages). */
void request_log(struct signer *s, const struct pq_item *it, const struct req *r, const char *outcome,
		 const char *reviewer, uint64_t seq)
{
	const char *msg = json_string_value(json_object_get(r->view, "message"));
	char summary[HISTORY_MESSAGE_MAX + 1];
	history_summary(summary, msg ? msg : "", msg ? strlen(msg) : 0);
	if (!r->remote) /* cluster mode: counted, recorded and logged by the replica that holds it */
		metrics_decided(&s->m, outcome, now_ms() - it->created_ms);
	phase_run(s, PH_DECIDED,
		  &(struct phase_ev){.it = it,
				     .r = r,
				     .outcome = outcome,
				     .seq = seq,
				     .reviewer = reviewer,
				     .by = reviewer    ? reviewer
					   : r->has_pd ? "policy"
						       : NULL});
	if (r->remote)
		return;
	rec_event(s, "approval.decided", it->session_id,
		  json_pack("{s:s,s:s,s:s?,s:I,s:I}", "outcome", outcome, "type", r->type, "by", reviewer, "seq",
			    (json_int_t)seq, "decision_ms", (json_int_t)(now_ms() - it->created_ms)));
	json_t *j = json_pack("{s:I,s:s,s:s,s:s,s:I,s:s,s:s,s:s?,s:I,s:s}", "ts", (json_int_t)now_ms(), "level", "info",
			      "event", "request_finished", "session_id", it->session_id, "timestamp",
			      (json_int_t)(now_ms() / 1000), "type", r->type, "outcome", outcome, "reviewer", reviewer,
			      "latency_ms", (json_int_t)(now_ms() - it->created_ms), "summary", summary);
	char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (line && log_min <= 1) /* a line at info, as FEEDBACK_LOG_LEVEL says */
		fprintf(stderr, "%s\n", line);
	free(line);
	json_decref(j);
}

/* A task's end, told to the connection that made it when it is still there (2025-11-25
 * notifications/tasks/status, which the worker sends where its client can receive it). */
static void task_status(struct signer *s, const struct pq_item *it, const struct req *r, json_t *result)
{
	struct worker *w = &s->w[W_MCP];
	if (w->fd < 0 || !r->collect || strcmp(r->collect, "task") || !conn_get(s, r->conn, W_MCP))
		return;
	json_t *st = json_pack("{s:s,s:s,s:I,s:I,s:O}", "state", "done", "session_id", it->session_id, "created_ms",
			       (json_int_t)it->created_ms, "updated_ms", (json_int_t)now_ms(), "result", result);
	char *js = st ? json_dumps(st, JSON_COMPACT) : NULL;
	json_decref(st);
	struct cv_arena a;
	cv_arena_init(&a, 16);
	if (js && strlen(js) < IPC_FRAME_MAX - 1024)
		worker_send(s, W_MCP, frame_task_status(&a, r->conn, js, strlen(js)));
	free(js);
	cv_arena_free(&a);
}

/* Finish a request: the entry is on disk before anyone hears of it. */
void finish(struct signer *s, struct pq_item *it, const struct ending *e, json_t *result)
{
	struct req *r = it->data;
	if (r->gate && s->gate_finish &&
	    s->gate_finish(s, it, e, result)) /* a gated call: forwarded, or told why not */
		return;
	if (it->blocking) {
		rec_note(s, r->conn, r->rid, e->status, r->has_pd ? r->pd.line : 0, r->seq);
		send_result(s, r->conn, r->rid, result, 0);
	} else
		task_status(s, it, r, result);
	remember_done(s, it->session_id, r->conn, r->owner, result, it->created_ms);
	json_decref(result);
	req_free(r);
}

/* A gated call collected as a task ended (gate.c): its answer is kept for tasks/get and
 * tasks/result, and the connection that made it hears so when it can. Takes result. */
void task_end(struct signer *s, const char *sid, uint64_t conn, const char *owner, uint64_t created_ms, json_t *result)
{
	struct req r = {.conn = conn, .collect = "task"};
	struct pq_item it = {.created_ms = created_ms};
	snprintf(it.session_id, sizeof it.session_id, "%s", sid);
	task_status(s, &it, &r, result);
	remember_done(s, sid, conn, owner, result, created_ms);
	json_decref(result);
}

json_t *result_base(const char *sid, const char *status, int approved)
{
	return json_pack("{s:s,s:s,s:b,s:I}", "session_id", sid, "status", status, "approved", approved, "timestamp",
			 (json_int_t)(now_ms() / 1000));
}

/* The agent's answer to a request that ended as e says (its caller adds what is its own). */
json_t *ending_json(const char *sid, const struct ending *e)
{
	json_t *res = result_base(sid, e->status, e->approved);
	if (e->decided)
		json_object_set_new(res, "response", e->response ? json_string(e->response) : json_null());
	if (e->reviewer)
		json_object_set_new(res, "reviewer", json_string(e->reviewer));
	if (e->error)
		json_object_set_new(res, "error", json_string(e->error));
	if (e->token)
		json_object_set_new(res, "approval_token", json_string(e->token));
	return res;
}

struct collect_ctx {
	uint64_t conn;
	char (*sids)[PQ_SID_LEN + 1];
	size_t n, max;
};

static void collect_blocking(const struct pq_item *x, void *arg)
{
	struct collect_ctx *c = arg;
	const struct req *r = x->data;
	if (x->blocking && r->conn == c->conn && c->n < c->max)
		snprintf(c->sids[c->n++], PQ_SID_LEN + 1, "%s", x->session_id);
}

/* The cancelled entry is on disk (or could not be written): the log line, the metrics,
 * the webhooks and the page's history, with the entry's seq. */
static void cancelled_logged(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (!pos)
		slog("error", "ledger: cancelled entry for %s: %s", o->it.session_id, err);
	request_log(s, &o->it, o->it.data, "cancelled", NULL, pos ? pos->seq : 0);
	req_free(o->it.data);
}

void request_cancelled(struct signer *s, struct pq_item *out, const char *reason)
{
	struct op *o = append_simple(s, "cancelled", out->session_id, reason, cancelled_logged);
	if (o) {
		o->it = *out;
		return;
	}
	request_log(s, out, out->data, "cancelled", NULL, 0);
	req_free(out->data);
}

/* The cancelled entry of a call that still waits on its connection is on disk: the agent
 * hears at once (an error result, or a held gated call's isError), then the log. */
static void cancelled_told(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct req *r = o->it.data;
	if (!pos)
		slog("error", "ledger: cancelled entry for %s: %s", o->it.session_id, err);
	request_log(s, &o->it, r, "cancelled", NULL, pos ? pos->seq : 0);
	struct ending e = {.status = "cancelled", .error = "cancelled: assentd is stopping; ask again once it is back"};
	finish(s, &o->it, &e, ending_json(o->it.session_id, &e));
}

static void collect_waiting(const struct pq_item *x, void *arg)
{
	struct collect_ctx *c = arg;
	if (x->blocking && c->n < c->max)
		snprintf(c->sids[c->n++], PQ_SID_LEN + 1, "%s", x->session_id);
}

size_t cancel_waiting(struct signer *s)
{
	char sids[64][PQ_SID_LEN + 1];
	struct collect_ctx c = {0, sids, 0, 64};
	size_t told = 0;
	do {
		c.n = 0;
		pq_each(s->q, collect_waiting, &c);
		for (size_t i = 0; i < c.n; i++) {
			struct pq_item out;
			if (pq_remove(s->q, sids[i], &out) != 0)
				continue;
			struct op *o = append_simple(s, "cancelled", out.session_id,
						     "the daemon stopped: the caller waited on a connection that went "
						     "with it",
						     cancelled_told);
			if (o)
				o->it = out;
			else
				req_free(out.data);
			told++;
		}
		commit_batch(s);
	} while (c.n == c.max);
	return told;
}

void fail_conn_requests(struct signer *s, uint64_t conn, const char *reason)
{
	/* Blocking requests whose caller went away are cancelled and ledgered as such;
	 * a non-blocking request belongs to its requester and waits for its deadline. */
	char sids[64][PQ_SID_LEN + 1];
	struct collect_ctx c = {conn, sids, 0, 64};
	do {
		c.n = 0;
		pq_each(s->q, collect_blocking, &c);
		for (size_t i = 0; i < c.n; i++) {
			struct pq_item out;
			if (pq_remove(s->q, sids[i], &out) == 0)
				request_cancelled(s, &out, reason);
		}
	} while (c.n == c.max);
	for (size_t i = 0; i < s->nbatch; i++) /* requests not yet on disk: cancelled once they are */
		if (s->batch[i]->it.data && s->batch[i]->it.blocking && s->batch[i]->conn == conn && !s->batch[i]->d)
			s->batch[i]->cancelled = 1;
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++)
		if (s->waiters[i].used && s->waiters[i].conn == conn)
			s->waiters[i].used = 0;
}

void request_refused(struct signer *s, uint64_t conn, struct req *r, const char *why)
{
	char msg[200];
	snprintf(msg, sizeof msg, "the gateway could not record the request%s", cluster_hint(s));
	json_t *j = json_pack("{s:s}", "error", msg);
	slog("error", "request refused: %s", why);
	send_result(s, conn, r->rid, j, 1);
	json_decref(j);
	req_free(r);
}
