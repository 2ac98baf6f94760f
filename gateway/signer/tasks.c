/* Tasks: a request an agent collects later (wait false, or an MCP task), seen as a
 * task's state. The mcp worker turns these answers into either revision's task shapes
 * (gateway/worker/mcp/tasks.c); here only what is true of the request: whose it is
 * (the measured owner, never the id's knower), whether it waits, was decided or was
 * cancelled, and when. A task's id is its request's session_id. */
#include "gateway/signer/state.h"

#include <stdio.h>
#include <string.h>

/* The state of one request of owner: pending in the queue, decided (its result kept
 * in the done ring), or unknown to this owner. New reference. */
static json_t *task_state(struct signer *s, const char *sid, const char *owner)
{
	for (size_t i = 0; i < s->ndone; i++) {
		struct done *d = done_at(s, i);
		if (d->result && !strcmp(d->sid, sid) && !strcmp(d->owner, owner))
			return json_pack("{s:s,s:s,s:I,s:I,s:O}", "state", "done", "session_id", sid, "created_ms",
					 (json_int_t)d->created_ms, "updated_ms", (json_int_t)d->at_ms, "result",
					 d->result);
	}
	struct pq_item *it = pq_find(s->q, sid);
	if (it && !it->blocking && !strcmp(((struct req *)it->data)->owner, owner))
		return json_pack("{s:s,s:s,s:I,s:I,s:I}", "state", "working", "session_id", sid, "created_ms",
				 (json_int_t)it->created_ms, "updated_ms", (json_int_t)it->created_ms, "deadline_ms",
				 (json_int_t)shown_deadline_ms(it));
	json_t *g = gate_task_state(s, sid, owner);	       /* a gated call forwarded, not yet returned */
	return g ? g : json_pack("{s:s}", "state", "unknown"); /* someone else's is as unknown as none */
}

/* The cancelled entry is on disk: the request is answered as cancelled for whoever
 * collects it, and the agent that cancelled hears so (its connection and request id
 * were put in the request's place when it left the queue, h_task). */
static void cancel_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (!pos)
		slog("error", "ledger: cancelled entry for %s: %s", o->it.session_id, err);
	struct req *r = o->it.data;
	json_t *ack = json_pack("{s:s,s:s,s:I,s:I}", "state", "cancelled", "session_id", o->it.session_id, "created_ms",
				(json_int_t)o->it.created_ms, "updated_ms", (json_int_t)now_ms());
	send_result(s, r->conn, r->rid, ack, 0);
	json_decref(ack);
	request_log(s, &o->it, r, "cancelled", NULL, pos ? pos->seq : 0);
	struct ending e = {.status = "cancelled", .error = "cancelled"};
	o->it.blocking = 0; /* collected, not sent: the canceller has its answer */
	finish(s, &o->it, &e, ending_json(o->it.session_id, &e));
}

static int task_cancel(struct signer *s, struct conn *c, const char *rid, const char *sid)
{
	if (gate_task_cancel(s, sid, c->owner)) { /* forwarded: its server is told, and it ends unknown */
		json_t *ack = json_pack("{s:s,s:s,s:I,s:I}", "state", "cancelled", "session_id", sid, "created_ms",
					(json_int_t)0, "updated_ms", (json_int_t)now_ms());
		send_result(s, c->id, rid, ack, 0);
		json_decref(ack);
		return 0;
	}
	json_t *st = task_state(s, sid, c->owner);
	if (strcmp(json_string_value(json_object_get(st, "state")), "working") != 0) {
		send_result(s, c->id, rid, st, 0); /* decided already, or not theirs: said as it is */
		json_decref(st);
		return 0;
	}
	json_decref(st);
	struct pq_item out;
	if (pq_remove(s->q, sid, &out) != 0)
		return 0;
	struct req *r = out.data;
	r->conn = c->id; /* the request is leaving the queue: its answer goes to the canceller */
	snprintf(r->rid, sizeof r->rid, "%s", rid);
	struct op *o = append_simple(s, "cancelled", sid, "the agent cancelled the task", cancel_done);
	if (o) {
		o->it = out;
		return 0;
	}
	struct op lost = {.it = out}; /* answered all the same: the caller must not wait for ever */
	cancel_done(s, &lost, NULL, "the entry could not be queued");
	return 0;
}

struct task_list {
	const char *owner;
	json_t *arr;
};

static void list_working(const struct pq_item *it, void *arg)
{
	struct task_list *l = arg;
	if (!it->blocking && !strcmp(((const struct req *)it->data)->owner, l->owner) &&
	    json_array_size(l->arr) < LIST_MAX)
		json_array_append_new(l->arr, json_pack("{s:s,s:s,s:I,s:I}", "state", "working", "session_id",
							it->session_id, "created_ms", (json_int_t)it->created_ms,
							"updated_ms", (json_int_t)it->created_ms));
}

/* The owner's tasks: those still pending, then those decided in the last hour (their
 * status, not their results). At most LIST_MAX of each. */
static json_t *task_list(struct signer *s, const char *owner)
{
	struct task_list l = {owner, json_array()};
	pq_each(s->q, list_working, &l);
	size_t n = 0;
	for (size_t i = s->ndone; i-- > 0 && n < LIST_MAX;) {
		struct done *d = done_at(s, i);
		if (!d->result || strcmp(d->owner, owner))
			continue;
		n++;
		json_array_append_new(l.arr,
				      json_pack("{s:s,s:s,s:I,s:I,s:O?}", "state", "done", "session_id", d->sid,
						"created_ms", (json_int_t)d->created_ms, "updated_ms",
						(json_int_t)d->at_ms, "status", json_object_get(d->result, "status")));
	}
	return json_pack("{s:o}", "tasks", l.arr);
}

int h_task(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	char r[PROTO_RID_MAX + 1], id[MCP_SESSION_ID_MAX + 1] = "";
	frame_text(f, "rid", r, sizeof r);
	uint64_t op = cv_get(f->body, "op")->u;
	if (op < PROTO_TASK_GET) /* the table bounds it above; 0 names no operation */
		return as_fail(err, AS_ECORRUPT, "a task operation 0");
	if (cv_get(f->body, "sid"))
		frame_text(f, "sid", id, sizeof id);
	else if (op != PROTO_TASK_LIST)
		return as_fail(err, AS_ECORRUPT, "a task operation %llu without its task", (unsigned long long)op);
	if (op == PROTO_TASK_CANCEL)
		return task_cancel(s, c, r, id);
	json_t *j = op == PROTO_TASK_LIST ? task_list(s, c->owner) : task_state(s, id, c->owner);
	send_result(s, c->id, r, j, 0);
	json_decref(j);
	return 0;
}
