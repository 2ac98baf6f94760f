/* The mcp worker's task calls: the table of task operations waiting for the signer, and
 * their answers in the shape of the task's revision (tasks.h). */
#define _GNU_SOURCE
#include "gateway/worker/mcp/wmcp.h"

#include <stdio.h>
#include <string.h>

#include "gateway/proto/proto.h"

struct tcall *wm_tcall_add(struct mw *w, uint64_t conn, const char *rid, enum tkind kind, enum mcp_task_era era,
			   const char *sid)
{
	for (size_t i = 0; i < sizeof w->tcalls / sizeof w->tcalls[0]; i++) {
		struct tcall *t = &w->tcalls[i];
		if (t->used)
			continue;
		*t = (struct tcall){.conn = conn, .kind = kind, .era = era, .used = 1};
		snprintf(t->rid, sizeof t->rid, "%s", rid);
		snprintf(t->sid, sizeof t->sid, "%s", sid ? sid : "");
		return t;
	}
	return NULL;
}

/* The task operation an answer for (conn, rid) belongs to, taken off the table; its
 * copy in *out. 0 when none. */
int wm_tcall_take_into(struct mw *w, uint64_t conn, const char *rid, size_t ridn, struct tcall *out)
{
	for (size_t i = 0; i < sizeof w->tcalls / sizeof w->tcalls[0]; i++) {
		struct tcall *t = &w->tcalls[i];
		if (t->used && t->conn == conn && strlen(t->rid) == ridn && !memcmp(t->rid, rid, ridn)) {
			if (out)
				*out = *t;
			t->used = 0;
			return 1;
		}
	}
	return 0;
}

void wm_tcall_take(struct mw *w, uint64_t conn, const char *rid, size_t ridn)
{
	wm_tcall_take_into(w, conn, rid, ridn, NULL);
}

/* The tasks methods: a frame to the signer, answered when it replies (wm_task_answer). */
void wm_task_method(struct mw *w, struct mconn *c, const struct mcp_msg *m, enum mcp_task_era era)
{
	char err[AS_ERRLEN], sid[MCP_SESSION_ID_MAX + 1] = "", rid[PROTO_RID_MAX + 1];
	enum tkind kind = m->m == MCP_M_TASKS_GET      ? T_GET
			  : m->m == MCP_M_TASKS_RESULT ? T_RESULT
			  : m->m == MCP_M_TASKS_LIST   ? T_LIST
			  : m->m == MCP_M_TASKS_CANCEL ? T_CANCEL
						       : T_UPDATE;
	if (kind != T_LIST && mcp_task_id(m->params, sid, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	wm_id_json(&m->id, rid);
	if (!wm_tcall_add(w, c->id, rid, kind, era, sid)) {
		mcp_line_error(&c->out, &m->id, MCP_INTERNAL_ERROR, "too many task calls at once; try again", NULL,
			       NULL);
		return;
	}
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, kind == T_RESULT ? F_COLLECT : F_TASK, 4);
	int rc = !f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid));
	if (kind == T_RESULT) /* blocks until the task is done: asked again while it waits (wm_task_answer) */
		rc = rc || ipc_put_text(a, f, "sid", sid, strlen(sid)) || ipc_put_uint(a, f, "wait", PROTO_WAIT_MAX);
	else
		rc = rc ||
		     ipc_put_uint(a, f, "op",
				  kind == T_LIST     ? PROTO_TASK_LIST
				  : kind == T_CANCEL ? PROTO_TASK_CANCEL
						     : PROTO_TASK_GET) ||
		     (kind != T_LIST && ipc_put_text(a, f, "sid", sid, strlen(sid)));
	if (rc || wm_send_frame(w, f) != 0) {
		wm_tcall_take(w, c->id, rid, strlen(rid));
		mcp_line_error(&c->out, &m->id, MCP_INTERNAL_ERROR, "the gateway could not ask about this task", NULL,
			       NULL);
	}
}

/* The signer's answer to a task operation, in the shape of the task's revision. */
void wm_task_answer(struct mw *w, struct mconn *c, const struct tcall *t, const struct mcp_id *id, const char *js,
		    size_t jsn, int iserr)
{
	json_t *j = json_loadb(js, jsn, 0, NULL), *res = NULL;
	const char *state = json_string_value(json_object_get(j, "state"));
	const char *msg = NULL;
	char why[256]; /* a message of the signer's, kept past j */
	int sync = 0, known = state && strcmp(state, "unknown");
	switch (t->kind) {
	case T_CREATE: /* refused before it was queued: as a blocking call would hear it */
		res = iserr || !j ? mcp_tool_error(json_string_value(json_object_get(j, "error")) ?: "refused")
				  : mcp_task_created(t->era, j, now_unix_ms(), &sync);
		break;
	case T_RESULT:
		if (iserr || !j) {
			msg = "no task of yours has this taskId";
		} else if (!strcmp(json_string_value(json_object_get(j, "status")) ?: "", "pending")) {
			json_decref(j); /* still waiting for a reviewer: keep the call open, ask again */
			struct mcp_msg again = {.kind = MCP_MSG_REQUEST, .id = *id, .m = MCP_M_TASKS_RESULT};
			json_t *p = json_pack("{s:s}", "taskId", t->sid);
			again.params = p;
			wm_task_method(w, c, &again, t->era);
			json_decref(p);
			return;
		} else {
			res = mcp_tool_result(json_incref(j));
			json_t *meta = json_object_get(res, "_meta"); /* a gated call's result has assent's already */
			if (res && !json_is_object(meta))
				json_object_set_new(res, "_meta", meta = json_object());
			if (meta)
				json_object_set_new(meta, "io.modelcontextprotocol/related-task",
						    json_pack("{s:s}", "taskId", t->sid));
		}
		break;
	case T_LIST:
		res = mcp_task_list(j);
		break;
	case T_GET:
		if (!(res = mcp_task_get(t->era, j)))
			msg = "no task of yours has this taskId";
		break;
	case T_CANCEL:
		if (!known)
			msg = "no task of yours has this taskId";
		else if (t->era == MCP_TASK_2026) /* an empty ack, whatever the state: idempotent */
			res = json_object();
		else if (strcmp(state, "cancelled") != 0)
			msg = "the task is already in a terminal status; it cannot be cancelled";
		else
			res = mcp_task_get(t->era, j);
		break;
	case T_UPDATE:
		msg = known ? "this task is waiting for a reviewer, not for input from the client"
			    : "no task of yours has this taskId";
		break;
	case T_INPUT: /* refused (a forged, replayed, altered or foreign state): a protocol error */
		if (iserr || !j) {
			snprintf(why, sizeof why, "%s",
				 json_string_value(json_object_get(j, "error")) ?: "the answer was refused");
			msg = why;
		} else
			res = mcp_tool_result(json_incref(j));
		break;
	}
	json_decref(j);
	if (res && c->modern && !json_object_get(res, "resultType"))
		json_object_set_new(res, "resultType", json_string("complete"));
	if (msg || !res) {
		json_decref(res);
		mcp_line_error(&c->out, id, MCP_INVALID_PARAMS, msg ? msg : "out of memory", NULL, NULL);
	} else {
		mcp_line_result(&c->out, id, res, NULL);
	}
}
