/* /review/mcp in the jailed review worker: a reviewer's (or an admin's) own MCP client,
 * answered in JSON with no MCP session. The tools it lists and the frames its calls
 * become; the JSON-RPC itself is the agent listener's code (gateway/worker/mcp/mcp.c). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/review/webreq.h"
#include "include/assent/version.h"

/* ---- /review/mcp: a reviewer's own MCP client (JSON answers, no MCP session) ---- */

/* The tools a caller of /review/mcp may use, and only those: a reviewer's (decide, and read the
 * QA reports), an admin's (read and manage the reports). me: the signer's answer saying who. */
static json_t *tools_list(const json_t *me)
{
	int admin = json_object_get(me, "admin") != NULL;
	json_t *tools =
	    admin
		? json_array()
		: json_pack("[{s:s,s:s,s:{s:s,s:{s:{s:s,s:i}}}},{s:s,s:s,s:{s:s,s:{s:{s:s},s:{s:s},s:{s:s},s:{s:s,s:i}}"
			    ",s:[s,s]}}]",
			    "name", "list_pending_feedback", "description",
			    "The requests waiting for a decision that you may decide, oldest first, with their full "
			    "context: a page of them, with more and next_offset when more wait (pass offset for the "
			    "next page).",
			    "inputSchema", "type", "object", "properties", "offset", "type", "integer", "minimum", 0,
			    "name", "submit_feedback", "description",
			    "Decide a pending request as yourself: approved true or false, a response (the reason for "
			    "a rejection, the answer to an input), and for a selection the option's number (from 1).",
			    "inputSchema", "type", "object", "properties", "session_id", "type", "string", "approved",
			    "type", "boolean", "response", "type", "string", "selection", "type", "integer", "minimum",
			    1, "required", "session_id", "approved");
	if (web_qa_prefix()[0]) {
		char n[4][64];
		static const char *const names[] = {"list_feedback", "get_feedback_statistics",
						    "update_feedback_status", "delete_feedback"};
		for (size_t i = 0; i < 4; i++)
			snprintf(n[i], sizeof n[i], "%s%s", web_qa_prefix(), names[i]);
		json_array_append_new(
		    tools,
		    json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:[s,s,s,s]},s:{s:s,s:[s,s,s,s]},s:{s:s,s:i},s:{s:s,s:i}}}}",
			      "name", n[0], "description",
			      "QA reports agents filed, newest first: filter by type and status, a page at a time "
			      "(offset, limit). Each has an id for the other tools.",
			      "inputSchema", "type", "object", "properties", "type", "type", "string", "enum", "bug",
			      "feature", "improvement", "question", "status", "type", "string", "enum", "open",
			      "in_progress", "resolved", "closed", "offset", "type", "integer", "minimum", 0, "limit",
			      "type", "integer", "minimum", 1));
		json_array_append_new(tools,
				      json_pack("{s:s,s:s,s:{s:s,s:{}}}", "name", n[1], "description",
						"Counts of the QA reports by type and by status, and how many came "
						"in the last 7 days.",
						"inputSchema", "type", "object", "properties"));
		if (admin) {
			json_array_append_new(
			    tools,
			    json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:i},s:{s:s,s:[s,s,s]}},s:[s,s]}}", "name", n[2],
				      "description",
				      "Move a report one step on: open -> in_progress -> resolved -> closed (no other "
				      "move).",
				      "inputSchema", "type", "object", "properties", "feedback_id", "type", "integer",
				      "minimum", 1, "status", "type", "string", "enum", "in_progress", "resolved",
				      "closed", "required", "feedback_id", "status"));
			json_array_append_new(
			    tools, json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:i}},s:[s]}}", "name", n[3], "description",
					     "Delete a report and its links to the calls behind it.", "inputSchema",
					     "type", "object", "properties", "feedback_id", "type", "integer",
					     "minimum", 1, "required", "feedback_id"));
		}
	}
	return json_pack("{s:o}", "tools", tools);
}

/* A qa_* tool on /review/mcp: F_WEB_QA with the question's fields; 0, -1 answered here, 1 none. */
static int qa_tool_frame(struct wreq *h, const json_t *params, uint32_t *type, json_t *args)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	size_t pl = strlen(web_qa_prefix());
	if (!pl || !name || strncmp(name, web_qa_prefix(), pl))
		return 1;
	static const char *const names[] = {"list_feedback", "get_feedback_statistics", "update_feedback_status",
					    "delete_feedback"};
	static const char *const ops[] = {"list", "stats", "status", "delete"};
	size_t k = 0;
	while (k < 4 && strcmp(name + pl, names[k]))
		k++;
	if (k == 4)
		return 1;
	const json_t *ta = json_object_get(params, "arguments");
	json_object_set_new(args, "op", json_string(ops[k]));
	const char *kk;
	json_t *v;
	json_object_foreach((json_t *)ta, kk, v)
	{
		int text = !strcmp(kk, "type") || !strcmp(kk, "status");
		int num = !strcmp(kk, "offset") || !strcmp(kk, "limit") || !strcmp(kk, "feedback_id");
		if ((!text && !num) || (text && (!json_is_string(v) || json_string_length(v) > 16)) ||
		    (num && (!json_is_integer(v) || json_integer_value(v) < 0))) {
			char why[160];
			snprintf(why, sizeof why, "%s: argument \"%.40s\" is unknown or of the wrong type", name, kk);
			web_rpc_error(h, 200, -32602, why);
			return -1;
		}
		json_object_set(args, !strcmp(kk, "feedback_id") ? "id" : kk, v);
	}
	*type = F_WEB_QA;
	return 0;
}

/* A JSON-RPC message on /review/mcp goes through the agent listener's own code
 * (gateway/worker/mcp/mcp.c): one parser, one method table, one version negotiation
 * for both listeners, so that they cannot disagree on what a valid message is. */
static void mcp_invalid(struct wreq *h, struct mcp_msg *m, const char *why)
{
	struct buf line;
	buf_init(&line, 1u << 16);
	char err[AS_ERRLEN];
	if (mcp_line_invalid(&line, m, m->answer ? why : "the body is not one JSON-RPC message", err) != 0)
		web_answer_error(h, 400, "not a JSON-RPC message");
	else
		web_answer(h, 400, "application/json", (const char *)line.p, line.len ? line.len - 1 : 0);
	buf_free(&line);
}

/* tools/call: the reviewer's two tools, as signer frames; 0, or -1 when answered here. */
static int mcp_tool_frame(struct wreq *h, const json_t *params, uint32_t *type, json_t *args)
{
	enum mcp_tool tool;
	const json_t *ta;
	char why[AS_ERRLEN] = "";
	int qa = qa_tool_frame(h, params, type, args);
	if (qa <= 0)
		return qa;
	if (mcp_tools_call(params, &tool, &ta, why) != 0 ||
	    (tool != MCP_TOOL_LIST_PENDING && tool != MCP_TOOL_SUBMIT_FEEDBACK)) {
		web_rpc_error(h, 200, -32602, why[0] ? why : "unknown tool (list_pending_feedback, submit_feedback)");
		return -1;
	}
	if (tool == MCP_TOOL_LIST_PENDING) {
		*type = F_WEB_PENDING;
		json_t *off = json_object_get(ta, "offset");
		if (off && (!json_is_integer(off) || json_integer_value(off) < 0 || json_integer_value(off) > 100000)) {
			web_rpc_error(h, 200, -32602, "offset must be a number from 0 to 100000");
			return -1;
		}
		if (off)
			json_object_set(args, "offset", off);
		return 0;
	}
	*type = F_WEB_SUBMIT;
	/* submit_args takes references to the values it keeps (json_object_set), changing nothing. */
	if (!ta || web_submit_args((json_t *)ta, args, why)) {
		web_rpc_error(h, 200, -32602, why[0] ? why : "arguments must be an object");
		return -1;
	}
	return 0;
}

void web_mcp_call(struct wreq *h)
{
	struct mcp_msg m;
	char err[AS_ERRLEN];
	if (mcp_parse_line((const char *)h->body.p, h->body.len, &m, err) != 0) {
		mcp_invalid(h, &m, err);
		mcp_msg_free(&m);
		return;
	}
	/* A notification (or an answer to nothing we asked) is authenticated too, then
	 * answered 202 with no body: rpc_id stays NULL. */
	h->rpc_id = m.kind == MCP_MSG_REQUEST ? mcp_id_json(&m.id) : NULL;
	h->rpc_m = m.m;
	const char *pv = json_string_value(json_object_get(m.params, "protocolVersion"));
	snprintf(h->protocol, sizeof h->protocol, "%s", pv && strlen(pv) < sizeof h->protocol ? pv : "");
	json_t *args = json_object();
	uint32_t type = F_WEB_ME; /* everything is authenticated, even initialize */
	if (m.kind != MCP_MSG_REQUEST || m.m != MCP_M_TOOLS_CALL || mcp_tool_frame(h, m.params, &type, args) == 0) {
		if (type == F_WEB_ME) /* /review/mcp's: an admin may use it too (its QA tools) */
			json_object_set_new(args, "mcp", json_true());
		web_to_signer(h, type, args);
	}
	json_decref(args);
	mcp_msg_free(&m);
}

void web_mcp_reply(struct wreq *h, unsigned status, json_t *j)
{
	if (status == 401 || status == 403) {
		web_rpc_error(h, status, -32001, json_string_value(json_object_get(j, "error")) ?: "refused");
		return;
	}
	if (!h->rpc_id) { /* a notification */
		web_answer(h, 202, "application/json", NULL, 0);
		return;
	}
	json_t *res;
	switch (h->rpc_m) {
	case MCP_M_INITIALIZE:
		res =
		    json_pack("{s:s,s:{s:{}},s:{s:s,s:s},s:s}", "protocolVersion", mcp_negotiate_version(h->protocol),
			      "capabilities", "tools", "serverInfo", "name", "assent-review", "version", ASSENT_VERSION,
			      "instructions", "Reviewer tools of assent: list what waits for you, and decide it.");
		break;
	case MCP_M_TOOLS_LIST:
		res = tools_list(j);
		break;
	case MCP_M_PING:
		res = json_object();
		break;
	case MCP_M_TOOLS_CALL: {
		int iserr = status != 200;
		char *txt = json_dumps(j, JSON_COMPACT);
		res = json_pack("{s:[{s:s,s:s}],s:O,s:b}", "content", "type", "text", "text", txt ? txt : "",
				"structuredContent", j, "isError", iserr);
		free(txt);
		break;
	}
	default:
		web_rpc_error(h, 200, -32601, "method not found");
		return;
	}
	web_answer_json(h, 200, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", h->rpc_id, "result", res));
}
