/* Task shapes of both revisions, from the signer's answers (tasks.h). */
#include "gateway/worker/mcp/tasks.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

enum mcp_task_era mcp_task_wanted(const struct mcp_msg *m, int modern, int ext_declared)
{
	if (modern) /* the extension is server-directed: a v1 `task` hint is tolerated, not needed */
		return ext_declared ? MCP_TASK_2026 : MCP_TASK_NONE;
	const json_t *t = m->params ? json_object_get(m->params, "task") : NULL;
	return json_is_object(t) ? MCP_TASK_2025 : MCP_TASK_NONE;
}

int mcp_task_id(const json_t *params, char id[MCP_SESSION_ID_MAX + 1], char *err)
{
	const json_t *v = params ? json_object_get(params, "taskId") : NULL;
	size_t n = json_string_length(v);
	if (!json_is_string(v) || n == 0 || n > MCP_SESSION_ID_MAX ||
	    strspn(json_string_value(v), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n)
		return as_fail(err, AS_EINVAL, "params.taskId: expected the id of a task of yours");
	memcpy(id, json_string_value(v), n + 1);
	return 0;
}

/* ISO 8601 in UTC with milliseconds, as the revisions' createdAt and lastUpdatedAt. */
static json_t *iso(uint64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char b[40], out[48];
	if (!gmtime_r(&t, &tm) || !strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm))
		return json_string("1970-01-01T00:00:00.000Z");
	snprintf(out, sizeof out, "%s.%03uZ", b, (unsigned)(ms % 1000));
	return json_string(out);
}

static uint64_t num(const json_t *st, const char *k)
{
	const json_t *v = json_object_get(st, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

const char *mcp_task_status(enum mcp_task_era era, const json_t *st)
{
	const char *state = json_string_value(json_object_get(st, "state"));
	if (!state || !strcmp(state, "working"))
		return "working";
	if (!strcmp(state, "cancelled"))
		return "cancelled";
	const json_t *res = json_object_get(st, "result");
	const char *s = json_string_value(json_object_get(res, "status"));
	if (!s)
		s = json_string_value(json_object_get(st, "status")); /* a list item: its status only */
	if (s && !strcmp(s, "cancelled"))
		return "cancelled";
	if (s && !strcmp(s, "pending"))
		return "working";
	/* A denial or a timeout: the 2025 task failed; a 2026 task's tool ran and answered. */
	if (era == MCP_TASK_2025 && s && (!strcmp(s, "denied") || !strcmp(s, "timeout")))
		return "failed";
	return "completed";
}

/* The members every task has, in either revision's names. */
static json_t *task_base(enum mcp_task_era era, const char *id, const char *status, uint64_t created, uint64_t updated,
			 uint64_t until)
{
	json_int_t ttl = until > created ? (json_int_t)(until - created) : 0;
	json_t *t = json_pack("{s:s,s:s,s:o,s:o}", "taskId", id, "status", status, "createdAt", iso(created),
			      "lastUpdatedAt", iso(updated ? updated : created));
	if (!t)
		return NULL;
	json_object_set_new(t, era == MCP_TASK_2025 ? "ttl" : "ttlMs", json_integer(ttl));
	json_object_set_new(t, era == MCP_TASK_2025 ? "pollInterval" : "pollIntervalMs",
			    json_integer(MCP_TASK_POLL_MS));
	if (!strcmp(status, "working"))
		json_object_set_new(t, "statusMessage", json_string("waiting for a reviewer's decision"));
	return t;
}

json_t *mcp_task_created(enum mcp_task_era era, const json_t *js, uint64_t now_ms, int *sync)
{
	*sync = 0;
	const char *sid = json_string_value(json_object_get(js, "session_id"));
	const char *st = json_string_value(json_object_get(js, "status"));
	if (!sid || !st)
		return NULL;
	int pending = !strcmp(st, "pending");
	if (!pending && era == MCP_TASK_2026) { /* decided at once (the policy): no task needed */
		*sync = 1;
		return mcp_tool_result(json_deep_copy(js));
	}
	uint64_t deadline = num(js, "deadline") * 1000;
	json_t *state = json_pack("{s:s,s:O}", "state", pending ? "working" : "done", "result", js);
	json_t *t = task_base(era, sid, mcp_task_status(era, state), now_ms, now_ms,
			      (pending && deadline > now_ms ? deadline : now_ms) + MCP_TASK_KEEP_MS);
	json_decref(state);
	if (!t || era == MCP_TASK_2026) {
		if (t)
			json_object_set_new(t, "resultType", json_string("task"));
		return t;
	}
	return json_pack("{s:o}", "task", t);
}

json_t *mcp_task_get(enum mcp_task_era era, const json_t *st)
{
	const char *state = json_string_value(json_object_get(st, "state"));
	const char *sid = json_string_value(json_object_get(st, "session_id"));
	if (!state || !sid || !strcmp(state, "unknown"))
		return NULL;
	uint64_t created = num(st, "created_ms"), updated = num(st, "updated_ms"), deadline = num(st, "deadline_ms");
	uint64_t until = (!strcmp(state, "working") ? deadline : updated) + MCP_TASK_KEEP_MS;
	const char *status = mcp_task_status(era, st);
	json_t *t = task_base(era, sid, status, created, updated, until);
	const json_t *res = json_object_get(st, "result");
	if (t && era == MCP_TASK_2026) {
		json_object_set_new(t, "resultType", json_string("complete"));
		json_t *r = res && !strcmp(status, "completed") ? mcp_tool_result(json_deep_copy(res)) : NULL;
		/* DetailedTask: the result inlined, a result of this revision like any other
		 * (@modelcontextprotocol/ext-tasks refuses one without its resultType) */
		if (r && !json_object_get(r, "resultType"))
			json_object_set_new(r, "resultType", json_string("complete"));
		if (r)
			json_object_set_new(t, "result", r);
	}
	return t;
}

json_t *mcp_task_list(const json_t *st)
{
	json_t *arr = json_array();
	size_t i;
	const json_t *x;
	json_array_foreach(json_object_get(st, "tasks"), i, x)
	{
		json_t *t = mcp_task_get(MCP_TASK_2025, x);
		if (t)
			json_array_append_new(arr, t);
	}
	return json_pack("{s:o}", "tasks", arr);
}
