/* Pending approvals as MCP tasks, in both shapes clients speak: the 2025-11-25 core
 * (a client asks with params.task; tasks/get, tasks/result, tasks/list, tasks/cancel)
 * and the 2026-07-28 extension io.modelcontextprotocol/tasks (SEP-2663: the server
 * decides, results are flat and inlined in tasks/get; tasks/result and tasks/list are
 * gone). A task is a request_feedback call made non-blocking; its id is the request's
 * session_id, and whose it is the signer decides (gateway/signer/tasks.c). Pure
 * functions that turn the signer's answers into results. */
#ifndef ASSENT_MCP_TASKS_H
#define ASSENT_MCP_TASKS_H

#include <jansson.h>
#include <stdint.h>

#include "gateway/worker/mcp/mcp.h"

#define MCP_TASKS_EXT "io.modelcontextprotocol/tasks"
#define MCP_TASK_POLL_MS 5000 /* a person decides in minutes: polling every 5 s is plenty */
/* A decided request's answer is kept an hour (gateway/signer/ended.c), so a task lives
 * until its deadline and an hour after: ttl = deadline - created + this. */
#define MCP_TASK_KEEP_MS 3600000

enum mcp_task_era { MCP_TASK_NONE = 0, MCP_TASK_2025, MCP_TASK_2026 };

/* Which task shape a tools/call asks for: MCP_TASK_2025 when params.task is an object
 * (2025-11-25; on a 2026-07-28 request it is tolerated and ignored), MCP_TASK_2026 when
 * the request is a 2026-07-28 one whose client declared the extension (modern 1 and
 * ext_declared 1), else MCP_TASK_NONE. */
enum mcp_task_era mcp_task_wanted(const struct mcp_msg *m, int modern, int ext_declared);

/* The taskId of tasks/get, tasks/result, tasks/cancel, tasks/update params: a string of
 * 1..MCP_SESSION_ID_MAX bytes [A-Za-z0-9._-] (our session ids). AS_EINVAL: -32602. */
int mcp_task_id(const json_t *params, char id[MCP_SESSION_ID_MAX + 1], char *err);

/* The result of a request_feedback call made as a task, from the signer's answer js
 * (its tool result: status pending with a deadline, or a decision made at once by the
 * policy). now_ms: the time of the answer. New reference; *sync set when it is not a task
 * at all (2026 only: a decision made at once is returned as the tool result itself). */
json_t *mcp_task_created(enum mcp_task_era era, const json_t *js, uint64_t now_ms, int *sync);

/* tasks/get (and tasks/cancel, 2025) from the signer's task state st (tasks.c of the
 * signer: {state: working|done|cancelled|unknown, session_id, created_ms, updated_ms,
 * deadline_ms?, result?}). NULL when st says unknown (answer -32602). New reference. */
json_t *mcp_task_get(enum mcp_task_era era, const json_t *st);

/* tasks/list (2025) from {tasks: [state...]}. New reference. */
json_t *mcp_task_list(const json_t *st);

/* The status a task in state st has, as the revision names it: working, completed,
 * failed, cancelled (2025: a denial or a timeout is failed; 2026: a tool that ran and
 * answered is completed, whatever it answered). */
const char *mcp_task_status(enum mcp_task_era era, const json_t *st);

#endif
