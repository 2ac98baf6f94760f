/* The mcp worker's tools (see mcp.h): the catalog assent serves (tools/list, as a
 * prebuilt line or with the gate's tools), tools/call's and the other tools' arguments,
 * and tool results. Split from mcp.c; no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cvjson.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/mcpjson.h"

/* ---- tools ---- */

static const struct {
	const char *name;
	enum mcp_tool t;
} tools[] = {
    {"request_feedback", MCP_TOOL_REQUEST_FEEDBACK},
    {"get_feedback", MCP_TOOL_GET_FEEDBACK},
    {"list_pending_feedback", MCP_TOOL_LIST_PENDING},
    {"submit_feedback", MCP_TOOL_SUBMIT_FEEDBACK},
};

/* The tool definitions, as JSON text with our limits spliced in. clang-format would
 * fold the string pieces into an unreadable column, so it is kept off this block. */
// clang-format off

/* The result of request_feedback and get_feedback. */
#define FEEDBACK_RESULT_SCHEMA                                                                                         \
	"{\"type\":\"object\",\"properties\":{"                                                                        \
	"\"session_id\":{\"type\":\"string\",\"description\":\"Id of the request; pass it to get_feedback.\"},"       \
	"\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"approved\",\"rejected\",\"answered\",\"selected\","  \
	"\"denied\",\"timeout\",\"cancelled\",\"abandoned\"]},"                                                        \
	"\"approved\":{\"type\":\"boolean\",\"description\":\"true only when a reviewer or policy approved: anything " \
	"else means do not proceed.\"},"                                                                               \
	"\"response\":{\"type\":[\"string\",\"null\"],\"description\":\"The reviewer's comment, answer, or the "      \
	"chosen option's text.\"},"                                                                                    \
	"\"selection\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"1-based index of the chosen option.\"},"   \
	"\"timestamp\":{\"type\":\"integer\",\"description\":\"Unix seconds of the decision.\"},"                       \
	"\"deadline\":{\"type\":\"integer\",\"description\":\"Unix seconds when a pending request times out.\"},"       \
	"\"reviewer\":{\"type\":\"string\"},"                                                                          \
	"\"approval_token\":{\"type\":\"string\",\"description\":\"Signed JWT, present when approved; downstream "     \
	"gates check it with assent-verify.\"},"                                                                       \
	"\"error\":{\"type\":\"string\",\"description\":\"Why there is no decision, e.g. timeout.\"},"                 \
	"\"warning\":{\"type\":\"string\",\"description\":\"Why it may never be decided: no reviewer is registered.\"}," \
	"\"review_url\":{\"type\":\"string\",\"description\":\"Where reviewers open this pending request.\"}}," \
	"\"required\":[\"session_id\",\"status\",\"approved\"]}"

#define SUBJECT_SCHEMA                                                                                                 \
	"{\"type\":\"object\",\"properties\":{"                                                                        \
	"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" STR(MCP_NAME_MAX) "},"                           \
	"\"digest\":{\"type\":\"object\",\"properties\":{\"sha256\":{\"type\":\"string\","                             \
	"\"pattern\":\"^[0-9a-f]{64}$\"}},\"required\":[\"sha256\"],\"additionalProperties\":false},"                \
	"\"content\":{\"type\":\"string\",\"contentEncoding\":\"base64\",\"description\":\"The artifact's bytes "     \
	"(at most 1 MiB decoded for all subjects): the gateway computes the digest and the reviewer can see them.\"}},"\
	"\"required\":[\"name\"],\"additionalProperties\":false}"

static const char tools_json[] =
	"{\"tools\":["
	/* request_feedback */
	"{\"name\":\"request_feedback\",\"title\":\"Ask a human before acting\","
	"\"description\":\"Pause and ask a human reviewer for approval, input, a selection or a confirmation before a "
	"consequential action. Proceed only if approved is true. With wait=false it returns at once with a session_id "
	"to pass to get_feedback.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"type\":{\"type\":\"string\",\"enum\":[\"approval\",\"input\",\"selection\",\"confirmation\"],"
	"\"description\":\"approval/confirmation: yes or no; input: free text; selection: one of options.\"},"
	"\"message\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" STR(MCP_MESSAGE_MAX) ","
	"\"description\":\"What the reviewer is asked, specific about the action.\"},"
	"\"context\":{\"type\":[\"object\",\"string\"],\"description\":\"The exact operation: command, diff, SQL, "
	"plan, risk. Secrets are redacted; over 256 KiB it is cut.\"},"
	"\"options\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":"
	STR(MCP_OPTION_MAX) "},\"minItems\":1,\"maxItems\":" STR(MCP_OPTIONS_MAX) ",\"uniqueItems\":true,"
	"\"description\":\"Required for selection (and only for it).\"},"
	"\"default\":{\"type\":\"string\",\"maxLength\":" STR(MCP_DEFAULT_MAX) ",\"description\":\"input: the answer "
	"on an empty reply; selection: one of options. Not allowed for approval or confirmation.\"},"
	"\"timeout_override\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" STR(MCP_TIMEOUT_MAX) ","
	"\"description\":\"Seconds to wait for a decision instead of the server default.\"},"
	"\"subject\":{\"anyOf\":[" SUBJECT_SCHEMA ",{\"type\":\"array\",\"minItems\":1,\"maxItems\":"
	STR(MCP_SUBJECTS_MAX) ",\"items\":" SUBJECT_SCHEMA "}],\"description\":\"The artifact(s) the approval is "
	"bound to; the approval token names their digests.\"},"
	"\"audience\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9._:/-]{1," STR(MCP_AUDIENCE_MAX) "}$\","
	"\"description\":\"Who will check the approval token (its aud), e.g. tf-prod.\"},"
	"\"wait\":{\"type\":\"boolean\",\"default\":true,\"description\":\"false: return at once with the session_id "
	"(status pending) and collect the decision with get_feedback.\"}},"
	"\"required\":[\"type\",\"message\"],\"additionalProperties\":false},"
	"\"outputSchema\":" FEEDBACK_RESULT_SCHEMA ","
	"\"execution\":{\"taskSupport\":\"optional\"}},"
	/* get_feedback */
	"{\"name\":\"get_feedback\",\"title\":\"Collect a decision\","
	"\"description\":\"Collect the decision on a request made with wait=false, waiting up to wait_seconds. Call "
	"again while status is pending.\","
	"\"annotations\":{\"readOnlyHint\":true},"
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"session_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" STR(MCP_SESSION_ID_MAX) "},"
	"\"wait_seconds\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" STR(MCP_WAIT_MAX) ",\"default\":"
	STR(MCP_WAIT_DEFAULT) "}},"
	"\"required\":[\"session_id\"],\"additionalProperties\":false},"
	"\"outputSchema\":" FEEDBACK_RESULT_SCHEMA "},"
	/* list_pending_feedback */
	"{\"name\":\"list_pending_feedback\",\"title\":\"List my pending requests\","
	"\"description\":\"List your own requests that still wait for a decision.\","
	"\"annotations\":{\"readOnlyHint\":true},"
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"requests\":{\"type\":\"array\",\"items\":{"
	"\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
	"\"message\":{\"type\":\"string\"},\"audience\":{\"type\":\"string\"},\"created\":{\"type\":\"integer\"},"
	"\"deadline\":{\"type\":\"integer\"}},\"required\":[\"session_id\",\"type\",\"message\"]}}},"
	"\"required\":[\"requests\"]}},"
	/* submit_feedback */
	"{\"name\":\"submit_feedback\",\"title\":\"Decide a request (reviewers only)\","
	"\"description\":\"Reviewers only: agents are refused. Approve or reject, answer, or select an option of a "
	"pending request.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"session_id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" STR(MCP_SESSION_ID_MAX) "},"
	"\"approved\":{\"type\":\"boolean\"},"
	"\"response\":{\"type\":\"string\",\"maxLength\":" STR(MCP_MESSAGE_MAX) "},"
	"\"selection\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" STR(MCP_OPTIONS_MAX) "}},"
	"\"required\":[\"session_id\"],\"additionalProperties\":false},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	"\"status\":{\"type\":\"string\"},\"approved\":{\"type\":\"boolean\"}},"
	"\"required\":[\"session_id\",\"status\"]}}"
	"]}";

// clang-format on

json_t *mcp_tools_list(void)
{
	return json_loads(tools_json, 0, NULL);
}

int mcp_line_tools_list(struct buf *out, const struct mcp_id *id, char *err)
{
	return mcp_line_tools_list_with(out, id, NULL, 0, err);
}

int mcp_line_tools_list_with(struct buf *out, const struct mcp_id *id, const char *extra, size_t extran, char *err)
{
	if (!id || (id->t != MCP_ID_INT && id->t != MCP_ID_STR))
		return as_fail(err, AS_EINVAL, "a result answers a request: it needs the request's id");
	/* tools_json is already compact JSON text in jansson's own layout (the unit test
	 * compares the two byte for byte): splice it rather than parse and print 7 KB per call. */
	json_t *j = mcp_id_json(id);
	char *idtext = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	if (!idtext)
		return as_fail(err, AS_ENOMEM, "out of memory building a message");
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"result\":";
	size_t start = out->len;
	int rc = buf_put(out, pre, sizeof pre - 1);
	if (rc == 0)
		rc = buf_put(out, idtext, strlen(idtext));
	if (rc == 0)
		rc = buf_put(out, mid, sizeof mid - 1);
	/* The upstreams' tools (the gate) go after assent's own: tools_json ends with "]}". */
	if (rc == 0)
		rc = buf_put(out, tools_json, sizeof tools_json - 1 - (extran ? 2 : 0));
	if (rc == 0 && extran)
		rc = buf_putc(out, ',');
	if (rc == 0 && extran)
		rc = buf_put(out, extra, extran);
	if (rc == 0 && extran)
		rc = buf_put(out, "]}", 2);
	if (rc == 0)
		rc = buf_put(out, "}\n", 2);
	free(idtext);
	if (rc != 0) {
		out->len = start;
		return as_fail(err, rc, "tools/list: %s", rc == AS_ETOOBIG ? "over the line limit" : as_strerror(rc));
	}
	return 0;
}

/* A JSON string's body for text that is valid UTF-8 JSON from jansson, escaped as jansson
 * escapes (", \, the short forms, other controls as \u00XX; nothing else). */
static int put_escaped(struct buf *out, const char *s, size_t n)
{
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = NULL;
		char u[8];
		switch (c) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		default:
			if (c < 0x20) {
				snprintf(u, sizeof u, "\\u%04X", c);
				e = u;
			}
		}
		if (!e)
			continue;
		if (buf_put(out, s + run, i - run) || buf_put(out, e, strlen(e)))
			return AS_ETOOBIG;
		run = i + 1;
	}
	return buf_put(out, s + run, n - run);
}

int mcp_line_tool_json(struct buf *out, const struct mcp_id *id, const char *js, size_t jsn, char *err)
{
	if (!id || (id->t != MCP_ID_INT && id->t != MCP_ID_STR))
		return as_fail(err, AS_EINVAL, "a result answers a request: it needs the request's id");
	if (!jsn || js[0] != '{')
		return as_fail(err, AS_EINVAL, "a structured result is a JSON object");
	json_t *j = mcp_id_json(id);
	char *idtext = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	if (!idtext)
		return as_fail(err, AS_ENOMEM, "out of memory building a message");
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":",
			  mid[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"",
			  mid2[] = "\"}],\"structuredContent\":", post[] = ",\"isError\":false}}\n";
	size_t start = out->len;
	int rc = buf_put(out, pre, sizeof pre - 1);
	if (rc == 0)
		rc = buf_put(out, idtext, strlen(idtext));
	if (rc == 0)
		rc = buf_put(out, mid, sizeof mid - 1);
	if (rc == 0)
		rc = put_escaped(out, js, jsn);
	if (rc == 0)
		rc = buf_put(out, mid2, sizeof mid2 - 1);
	if (rc == 0)
		rc = buf_put(out, js, jsn);
	if (rc == 0)
		rc = buf_put(out, post, sizeof post - 1);
	free(idtext);
	if (rc != 0) {
		out->len = start;
		return as_fail(err, rc, "tool result: %s", rc == AS_ETOOBIG ? "over the line limit" : as_strerror(rc));
	}
	return 0;
}

int mcp_tools_call(const json_t *params, enum mcp_tool *tool, const json_t **args, char *err)
{
	char qb[QBUF];
	*tool = MCP_TOOL_UNKNOWN;
	*args = NULL;
	const json_t *name = params ? json_object_get(params, "name") : NULL;
	if (!json_is_string(name))
		return as_fail(err, AS_EINVAL, "tools/call: params.name: expected a string, got %s",
			       name ? json_kind(name) : "nothing");
	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++)
		if (json_string_length(name) == strlen(tools[i].name) &&
		    !strcmp(json_string_value(name), tools[i].name))
			*tool = tools[i].t;
	if (*tool == MCP_TOOL_UNKNOWN)
		return as_fail(err, AS_EINVAL, "Unknown tool: \"%s\"",
			       mcp_q(qb, json_string_value(name), json_string_length(name)));
	const json_t *a = json_object_get(params, "arguments");
	if (a && !json_is_null(a) && !json_is_object(a))
		return as_fail(err, AS_EINVAL, "tools/call: params.arguments: expected an object, got %s",
			       json_kind(a));
	*args = json_is_object(a) ? a : NULL;
	return 0;
}

int mcp_cancelled(const json_t *params, struct mcp_id *request_id, char reason[MCP_REASON_MAX + 1], char *err)
{
	memset(request_id, 0, sizeof *request_id);
	reason[0] = 0;
	const json_t *rid = params ? json_object_get(params, "requestId") : NULL;
	if (!rid || !mcp_id_read(rid, request_id))
		return as_fail(err, AS_EINVAL,
			       "notifications/cancelled: params.requestId: expected a string or an integer");
	const json_t *r = json_object_get(params, "reason");
	if (r && !json_is_null(r) && !json_is_string(r))
		return as_fail(err, AS_EINVAL, "notifications/cancelled: params.reason: expected a string, got %s",
			       json_kind(r));
	if (json_is_string(r))
		mcp_copy_declared(reason, MCP_REASON_MAX, r);
	return 0;
}

int mcp_defaults(const json_t *params, uint32_t *timeout, char *err)
{
	*timeout = 0;
	const json_t *t = params ? json_object_get(params, "timeoutSeconds") : NULL;
	if (!json_is_integer(t))
		return as_fail(err, AS_EINVAL,
			       "notifications/assent/defaults: timeoutSeconds: expected an integer, got %s",
			       t ? json_kind(t) : "nothing");
	json_int_t v = json_integer_value(t);
	if (v < 1 || v > MCP_TIMEOUT_MAX)
		return as_fail(err, AS_EINVAL,
			       "notifications/assent/defaults: timeoutSeconds: expected 1 to %d, got %lld",
			       MCP_TIMEOUT_MAX, (long long)v);
	*timeout = (uint32_t)v;
	return 0;
}

/* ---- other tools' arguments ---- */

int mcp_check_get_feedback(const json_t *args, char session_id[MCP_SESSION_ID_MAX + 1], uint32_t *wait_seconds,
			   char *err)
{
	char qb[QBUF];
	session_id[0] = 0;
	*wait_seconds = MCP_WAIT_DEFAULT;
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)args, k, x)
	{
		if (strcmp(k, "session_id") && strcmp(k, "wait_seconds"))
			return as_fail(err, AS_EINVAL, "unknown argument \"%s\" (expected session_id, wait_seconds)",
				       mcp_q(qb, k, strlen(k)));
	}
	const json_t *sid = args ? json_object_get(args, "session_id") : NULL;
	const json_t *w = args ? json_object_get(args, "wait_seconds") : NULL;
	if (!sid || json_is_null(sid))
		return as_fail(err, AS_EINVAL, "session_id: required: the session_id request_feedback returned");
	GUARD(mcp_arg_str(sid, "session_id", 1, MCP_SESSION_ID_MAX, 0, err));
	const char *s = json_string_value(sid);
	for (size_t i = 0; i < json_string_length(sid); i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return as_fail(err, AS_EINVAL, "session_id: expected only [A-Za-z0-9._-], got \"%s\"",
				       mcp_q(qb, s, json_string_length(sid)));
	if (w && !json_is_null(w)) {
		if (!json_is_integer(w))
			return as_fail(err, AS_EINVAL, "wait_seconds: expected an integer, got %s", json_kind(w));
		json_int_t v = json_integer_value(w);
		if (v < 0 || v > MCP_WAIT_MAX)
			return as_fail(err, AS_EINVAL, "wait_seconds: expected 0 to %d, got %lld", MCP_WAIT_MAX,
				       (long long)v);
		*wait_seconds = (uint32_t)v;
	}
	memcpy(session_id, s, json_string_length(sid) + 1);
	return 0;
}

int mcp_check_list_pending(const json_t *args, char *err)
{
	char qb[QBUF];
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)args, k, x)
	{
		(void)x;
		return as_fail(err, AS_EINVAL, "unknown argument \"%s\" (list_pending_feedback takes none)",
			       mcp_q(qb, k, strlen(k)));
	}
	return 0;
}

/* ---- tool results ---- */

json_t *mcp_tool_result(json_t *structured)
{
	if (!structured)
		return NULL;
	/* a gated call's answer kept for its task: the upstream's own result, as it is */
	json_t *cr = json_object_get(structured, "io.assent/call_result");
	if (json_is_object(cr)) {
		json_incref(cr);
		json_decref(structured);
		return cr;
	}
	char *text = json_dumps(structured, JSON_COMPACT);
	json_t *t = text ? json_string(text) : NULL;
	free(text);
	json_t *block = mcp_jobj("type", json_string("text"), "text", t, JEND);
	return mcp_jobj("content", mcp_jarr1(block), "structuredContent", structured, "isError", json_false(), JEND);
}

json_t *mcp_tool_error(const char *msg)
{
	json_t *t = mcp_safe_string(msg ? msg : "error", msg ? strlen(msg) : 5, MCP_MESSAGE_MAX);
	json_t *block = mcp_jobj("type", json_string("text"), "text", t, JEND);
	return mcp_jobj("content", mcp_jarr1(block), "isError", json_true(), JEND);
}
