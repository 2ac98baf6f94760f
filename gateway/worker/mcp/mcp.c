/* MCP / JSON-RPC 2.0 message layer of the jailed mcp worker (see mcp.h): parsing
 * and classifying untrusted lines, the protocol's own answers, tool argument
 * validation into the canonical action, and every outgoing line. No I/O. */
#include "gateway/worker/mcp/mcp.h"

#include "common/cvjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/sha256.h>

#include "gateway/proto/action.h"
#include "common/cbor.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char mcp_instructions[] =
    "assent is a human-approval gateway. Call request_feedback BEFORE any consequential or irreversible action "
    "(deleting or overwriting data, git push/merge/force, deploys, infrastructure or database changes, payments, "
    "messages to people, changing credentials, permissions or configuration) and proceed only when the result "
    "has \"approved\": true. A rejection, a timeout (\"error\": \"timeout\") or any error means: do not proceed. "
    "Put the exact operation in `context` (the command, diff, SQL or plan) so the reviewer sees what you will do; "
    "when a pipeline will check the approval for an artifact, pass `subject` ({name, digest: {sha256}} or {name, "
    "content: base64}) and `audience`, and hand the returned approval_token to that step. A person may take "
    "minutes: if your client gives up on tool calls after a short time, call request_feedback with \"wait\": "
    "false and then get_feedback with the returned session_id until its status is no longer \"pending\".";

/* ---- small helpers ---- */

/* A bounded, printable-ASCII rendering of untrusted bytes for error messages: at most
 * 40 bytes of the value, others as \xNN, "..." when cut. */
#define QBUF 176
static const char *q(char *dst, const char *s, size_t len)
{
	size_t o = 0, i = 0;
	for (; i < len && i < 40 && o + 5 < QBUF - 4; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			dst[o++] = (char)c;
		else
			o += (size_t)snprintf(dst + o, QBUF - o, "\\x%02x", c);
	}
	if (i < len) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = 0;
	return dst;
}

/* Length of the longest prefix of s[0..n) of at most max bytes that ends on a
 * UTF-8 character boundary (s is valid UTF-8). */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* The code point at s[i] and its length in bytes (text.h: one definition). */
static uint32_t cp_at(const char *s, size_t n, size_t i, size_t *len)
{
	return text_cp((const uint8_t *)s, n, i, len);
}

/* Characters a terminal acts on instead of showing, or that reorder what it shows
 * (text.h: the same set the signer refuses in frames). */
static int cp_hidden(uint32_t cp)
{
	return text_refused_cp(cp);
}

/* A JSON string of s[0..n) cut to max bytes: as is when it is UTF-8, otherwise as
 * printable ASCII (\xNN escapes), so a builder never fails on a bad byte. */
static json_t *safe_string(const char *s, size_t n, size_t max)
{
	if (utf8_valid((const uint8_t *)s, n))
		return json_stringn(s, utf8_cut(s, n, max));
	struct buf b;
	buf_init(&b, max);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int rc = (c >= 0x20 && c < 0x7f) ? buf_putc(&b, c) : buf_printf(&b, "\\x%02x", c);
		if (rc != 0)
			break;
	}
	json_t *j = json_stringn(b.len ? (const char *)b.p : "", b.len);
	buf_free(&b);
	return j;
}

static char *dup_n(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

/* The end of jobj's list: a typed null pointer, which is what va_arg reads there. */
#define JEND ((const char *)NULL)

/* An object of the given members, in order: jobj("k1", v1, "k2", v2, JEND). Every
 * value is taken, even when building fails (then NULL): no caller has to work out
 * which references json_pack kept on an error path. A NULL value fails the build. */
static json_t *jobj(const char *key, ...)
{
	va_list ap;
	json_t *o = json_object();
	int ok = o != NULL;
	va_start(ap, key);
	for (const char *k = key; k; k = va_arg(ap, const char *)) {
		json_t *v = va_arg(ap, json_t *);
		if (!ok)
			json_decref(v); /* not reached by a setter: release it here */
		else if (!v || json_object_set_new(o, k, v) != 0)
			ok = 0; /* json_object_set_new releases v when it fails */
	}
	va_end(ap);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A one-element array, taking v even on failure. */
static json_t *jarr1(json_t *v)
{
	json_t *a = v ? json_array() : NULL;
	if (!a || json_array_append_new(a, v) != 0) {
		if (!a)
			json_decref(v);
		json_decref(a);
		return NULL;
	}
	return a;
}

/* ---- ids ---- */

/* 1 when v is a usable id or progress token (string of at most MCP_ID_MAX bytes, or an integer). */
static int id_read(const json_t *v, struct mcp_id *id)
{
	if (json_is_integer(v)) {
		id->t = MCP_ID_INT;
		id->i = json_integer_value(v);
		return 1;
	}
	if (json_is_string(v) && json_string_length(v) <= MCP_ID_MAX) {
		id->t = MCP_ID_STR;
		id->len = json_string_length(v);
		memcpy(id->s, json_string_value(v), id->len);
		id->s[id->len] = 0;
		return 1;
	}
	return 0;
}

json_t *mcp_id_json(const struct mcp_id *id)
{
	if (id && id->t == MCP_ID_INT)
		return json_integer(id->i);
	if (id && id->t == MCP_ID_STR)
		return json_stringn(id->s, id->len);
	return json_null();
}

/* ---- method table ---- */

static const struct {
	const char *name;
	enum mcp_method m;
	enum mcp_kind kind;
} methods[] = {
    {"initialize", MCP_M_INITIALIZE, MCP_MSG_REQUEST},
    {"ping", MCP_M_PING, MCP_MSG_REQUEST},
    {"tools/list", MCP_M_TOOLS_LIST, MCP_MSG_REQUEST},
    {"tools/call", MCP_M_TOOLS_CALL, MCP_MSG_REQUEST},
    {"logging/setLevel", MCP_M_LOGGING_SET_LEVEL, MCP_MSG_REQUEST},
    {"server/discover", MCP_M_DISCOVER, MCP_MSG_REQUEST},
    {"tasks/get", MCP_M_TASKS_GET, MCP_MSG_REQUEST},
    {"tasks/result", MCP_M_TASKS_RESULT, MCP_MSG_REQUEST},
    {"tasks/list", MCP_M_TASKS_LIST, MCP_MSG_REQUEST},
    {"tasks/cancel", MCP_M_TASKS_CANCEL, MCP_MSG_REQUEST},
    {"tasks/update", MCP_M_TASKS_UPDATE, MCP_MSG_REQUEST},
    {"subscriptions/listen", MCP_M_LISTEN, MCP_MSG_REQUEST},
    {"notifications/initialized", MCP_M_INITIALIZED, MCP_MSG_NOTIFICATION},
    {"notifications/cancelled", MCP_M_CANCELLED, MCP_MSG_NOTIFICATION},
    {"notifications/progress", MCP_M_PROGRESS, MCP_MSG_NOTIFICATION},
    {"notifications/roots/list_changed", MCP_M_ROOTS_LIST_CHANGED, MCP_MSG_NOTIFICATION},
    {"notifications/assent/defaults", MCP_M_ASSENT_DEFAULTS, MCP_MSG_NOTIFICATION},
};

enum mcp_method mcp_method_lookup(const char *name, size_t len, enum mcp_kind *kind)
{
	for (size_t i = 0; name && i < sizeof methods / sizeof *methods; i++)
		if (strlen(methods[i].name) == len && memcmp(methods[i].name, name, len) == 0) {
			if (kind)
				*kind = methods[i].kind;
			return methods[i].m;
		}
	if (kind)
		*kind = MCP_MSG_INVALID;
	return MCP_M_UNKNOWN;
}

int mcp_method_known(const char *name, size_t len, enum mcp_kind kind)
{
	enum mcp_kind k;
	return mcp_method_lookup(name, len, &k) != MCP_M_UNKNOWN && k == kind;
}

/* ---- parsing ---- */

/* Consumes the rest of a JSON string whose opening quote was read, through its
 * closing quote; a backslash and the byte after it go together. AS_EINVAL when the
 * string does not end. Only finds the end: jansson judges the string. */
static int json_str_rest(struct rd *r)
{
	uint8_t c;
	while (rd_u8(r, &c) == 0) {
		if (c == '"')
			return 0;
		if (c == '\\' && rd_u8(r, &c) != 0)
			return AS_EINVAL;
	}
	return AS_EINVAL;
}

/* Nesting depth of the raw text, strings skipped, counted before jansson builds
 * anything: 100000 '[' cost one pass, not 2048 nested allocations. */
static int depth_over(const char *s, size_t n)
{
	struct rd r;
	size_t d = 0;
	uint8_t c;
	rd_init(&r, s, n);
	while (rd_u8(&r, &c) == 0) {
		if (c == '"') {
			if (json_str_rest(&r) != 0)
				return 0; /* nothing after an unterminated string counts */
		} else if (c == '[' || c == '{') {
			if (++d > MCP_DEPTH_MAX)
				return 1;
		} else if ((c == ']' || c == '}') && d > 0) {
			d--;
		}
	}
	return 0;
}

static int invalid(struct mcp_msg *out, int code, int rc, char *err, const char *fmt, ...) AS_PRINTF(5, 6);
static int invalid(struct mcp_msg *out, int code, int rc, char *err, const char *fmt, ...)
{
	out->kind = MCP_MSG_INVALID;
	out->code = code;
	out->method = NULL;
	out->method_len = 0;
	out->m = MCP_M_UNKNOWN;
	out->params = out->result = out->error = NULL;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, AS_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int parse_json_error(struct mcp_msg *out, const json_error_t *je, char *err)
{
	char qb[QBUF];
	const char *why = q(qb, je->text, strnlen(je->text, sizeof je->text));
	switch (json_error_code(je)) {
	case json_error_duplicate_key:
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "duplicate key: %s", why);
	case json_error_out_of_memory:
		return invalid(out, MCP_INTERNAL_ERROR, AS_ENOMEM, err, "out of memory");
	default:
		return invalid(out, MCP_PARSE_ERROR, AS_EINVAL, err, "%s at byte %d", why, je->position);
	}
}

int mcp_parse_line(const char *line, size_t len, struct mcp_msg *out, char *err)
{
	memset(out, 0, sizeof *out);
	out->id.t = MCP_ID_NULL;
	out->answer = 1;
	if (len > MCP_LINE_MAX)
		return invalid(out, MCP_INVALID_REQUEST, AS_ETOOBIG, err,
			       "message of %zu bytes is over the limit of %u bytes", len, MCP_LINE_MAX);
	if (!line)
		len = 0; /* an over-long line is classified by its length alone; nothing else without bytes */
	struct rd r;
	rd_init(&r, line, len);
	rd_skip_ws(&r, RD_JSON_WS);
	if (rd_left(&r) == 0) {
		out->answer = 0;
		return invalid(out, MCP_PARSE_ERROR, AS_EINVAL, err, "empty line");
	}
	if (depth_over(line, len))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "nesting deeper than %d levels",
			       MCP_DEPTH_MAX);
	json_error_t je;
	out->root = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!out->root)
		return parse_json_error(out, &je, err);
	const json_t *root = out->root;
	if (json_is_array(root))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
			       "batches are not supported (JSON-RPC batching is not part of MCP since 2025-06-18)");
	if (!json_is_object(root))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "expected a JSON-RPC message object, got %s",
			       json_kind(root));

	const json_t *id = json_object_get(root, "id"), *method = json_object_get(root, "method");
	const json_t *result = json_object_get(root, "result"), *error = json_object_get(root, "error");
	const json_t *ver = json_object_get(root, "jsonrpc"), *params = json_object_get(root, "params");
	/* JSON-RPC never answers a notification or a response, even a malformed one. */
	if ((method && !id) || (!method && (result || error)))
		out->answer = 0;
	int id_ok = id && id_read(id, &out->id);
	if (id && !id_ok && !json_is_null(id)) {
		out->id.t = MCP_ID_NULL;
		if (json_is_string(id))
			return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
				       "id: a string of %zu bytes is over the limit of %d", json_string_length(id),
				       MCP_ID_MAX);
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "id: expected a string or an integer, got %s",
			       json_kind(id));
	}
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0 || json_string_length(ver) != 3)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "jsonrpc: expected \"2.0\", got %s",
			       ver ? json_kind(ver) : "nothing");

	if (!method) {
		if (!result && !error)
			return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "expected method, result or error");
		if (result && error)
			return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
				       "a response has result or error, not both");
		if (!id || (!id_ok && !error))
			return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
				       "a response needs the id of its request");
		const json_t *code = error ? json_object_get(error, "code") : NULL;
		if (error && !json_is_integer(code))
			return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
				       "error: expected an object with an integer code");
		out->kind = MCP_MSG_RESPONSE;
		out->result = result;
		out->error = error;
		return 0;
	}
	if (!json_is_string(method))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "method: expected a string, got %s",
			       json_kind(method));
	if (id && !id_ok)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
			       "id: a request id must be a string or an integer, not null");
	if (result || error)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "a request carries no result or error");
	if (params && !json_is_object(params)) {
		if (json_is_array(params))
			return invalid(out, MCP_INVALID_PARAMS, AS_EINVAL, err,
				       "params: MCP expects an object, got an array");
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "params: expected an object, got %s",
			       json_kind(params));
	}
	out->kind = id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
	out->method = json_string_value(method);
	out->method_len = json_string_length(method);
	enum mcp_kind mk;
	enum mcp_method m = mcp_method_lookup(out->method, out->method_len, &mk);
	out->m = mk == out->kind ? m : MCP_M_UNKNOWN;
	out->params = params;
	if (out->kind == MCP_MSG_REQUEST && params) {
		const json_t *meta = json_object_get(params, "_meta");
		if (meta && !json_is_object(meta))
			return invalid(out, MCP_INVALID_PARAMS, AS_EINVAL, err,
				       "params._meta: expected an object, got %s", json_kind(meta));
		const json_t *pt = meta ? json_object_get(meta, "progressToken") : NULL;
		if (pt && !id_read(pt, &out->progress_token))
			return invalid(
			    out, MCP_INVALID_PARAMS, AS_EINVAL, err,
			    "params._meta.progressToken: expected a string of at most %d bytes or an integer",
			    MCP_ID_MAX);
	}
	return 0;
}

void mcp_msg_free(struct mcp_msg *m)
{
	if (!m)
		return;
	json_decref(m->root);
	m->root = NULL;
	m->method = NULL;
	m->params = m->result = m->error = NULL;
}

/* ---- initialize ---- */

const char *mcp_negotiate_version(const char *requested)
{
	if (requested && !strcmp(requested, MCP_VERSION_PREVIOUS))
		return MCP_VERSION_PREVIOUS;
	return MCP_VERSION_LATEST;
}

void mcp_copy_declared(char *dst, size_t max, const json_t *s)
{
	size_t n = utf8_cut(json_string_value(s), json_string_length(s), max);
	memcpy(dst, json_string_value(s), n);
	for (size_t i = 0, l; i < n; i += l)
		if (cp_hidden(cp_at(dst, n, i, &l)))
			memset(dst + i, '?', l);
	dst[n] = 0;
}

int mcp_initialize(const json_t *params, const char *server_version, struct mcp_client *client, json_t **result,
		   char *err)
{
	memset(client, 0, sizeof *client);
	*result = NULL;
	const json_t *pv = params ? json_object_get(params, "protocolVersion") : NULL;
	if (!json_is_string(pv))
		return as_fail(err, AS_EINVAL, "initialize: params.protocolVersion: expected a string, got %s",
			       pv ? json_kind(pv) : "nothing");
	const json_t *caps = json_object_get(params, "capabilities"), *ci = json_object_get(params, "clientInfo");
	if (caps && !json_is_object(caps))
		return as_fail(err, AS_EINVAL, "initialize: params.capabilities: expected an object, got %s",
			       json_kind(caps));
	if (ci && !json_is_object(ci))
		return as_fail(err, AS_EINVAL, "initialize: params.clientInfo: expected an object, got %s",
			       json_kind(ci));
	if (ci) {
		const json_t *n = json_object_get(ci, "name"), *v = json_object_get(ci, "version");
		if ((n && !json_is_string(n)) || (v && !json_is_string(v)))
			return as_fail(err, AS_EINVAL,
				       "initialize: params.clientInfo: name and version must be strings");
		if (n)
			mcp_copy_declared(client->name, MCP_NAME_MAX, n);
		if (v)
			mcp_copy_declared(client->client_version, MCP_NAME_MAX, v);
	}
	client->elicitation = caps && json_object_get(caps, "elicitation") != NULL;
	client->roots = caps && json_object_get(caps, "roots") != NULL;
	client->sampling = caps && json_object_get(caps, "sampling") != NULL;
	/* Both revisions we speak are answered as asked; anything else (older, newer, or
	 * the stateless 2026-07-28 asked through initialize) gets our latest, and the
	 * client decides whether it can speak it. */
	client->version = mcp_negotiate_version(json_string_value(pv));
	/* tasks: a request_feedback call may be made a task (params.task), listed and cancelled. */
	*result = json_pack("{s:s, s:{s:{s:b}, s:{}, s:{s:{}, s:{}, s:{s:{s:{}}}}}, s:{s:s, s:s, s:s}, s:s}",
			    "protocolVersion", client->version, "capabilities", "tools", "listChanged", 0, "logging",
			    "tasks", "list", "cancel", "requests", "tools", "call", "serverInfo", "name",
			    MCP_SERVER_NAME, "title", "assent human-approval gateway", "version",
			    server_version ? server_version : "dev", "instructions", mcp_instructions);
	return *result ? 0 : as_fail(err, AS_ENOMEM, "initialize: out of memory");
}

/* ---- logging ---- */

static const char *const log_names[] = {"debug", "info",     "notice", "warning",
					"error", "critical", "alert",  "emergency"};

const char *mcp_log_level_name(enum mcp_log_level l)
{
	return (unsigned)l < sizeof log_names / sizeof *log_names ? log_names[l] : "info";
}

int mcp_log_set_level(const json_t *params, enum mcp_log_level *out, char *err)
{
	const json_t *lv = params ? json_object_get(params, "level") : NULL;
	char qb[QBUF];
	if (!json_is_string(lv))
		return as_fail(err, AS_EINVAL, "logging/setLevel: params.level: expected a string, got %s",
			       lv ? json_kind(lv) : "nothing");
	for (size_t i = 0; i < sizeof log_names / sizeof *log_names; i++)
		if (!strcmp(json_string_value(lv), log_names[i]) && json_string_length(lv) == strlen(log_names[i])) {
			*out = (enum mcp_log_level)i;
			return 0;
		}
	return as_fail(
	    err, AS_EINVAL,
	    "logging/setLevel: params.level: expected debug, info, notice, warning, error, critical, alert or "
	    "emergency, got \"%s\"",
	    q(qb, json_string_value(lv), json_string_length(lv)));
}

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
			       q(qb, json_string_value(name), json_string_length(name)));
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
	if (!rid || !id_read(rid, request_id))
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

/* ---- request_feedback ---- */

static const char *const fb_names[] = {"approval", "input", "selection", "confirmation"};

const char *mcp_fb_type_name(enum mcp_fb_type t)
{
	return (unsigned)t < sizeof fb_names / sizeof *fb_names ? fb_names[t] : "approval";
}

/* Refuse characters a terminal could act on instead of showing: C0 controls (tab and
 * newline excepted when multiline, and \r only before \n), DEL, C1 controls and the
 * bidirectional overrides and isolates ("Trojan Source"). s is valid UTF-8. */
static int check_text(const char *what, const char *s, size_t n, int multiline, char *err)
{
	size_t i;
	uint32_t cp;
	if (text_check(multiline ? TEXT_MULTILINE : TEXT_LINE, s, n, &i, &cp) != 0)
		return as_fail(err, AS_EINVAL,
			       "%s: character U+%04X at byte %zu is not allowed (control and bidirectional "
			       "override characters could hide text from the reviewer)",
			       what, (unsigned)cp, i);
	return 0;
}

/* A string argument of min..max bytes. */
static int arg_str(const json_t *v, const char *what, size_t min, size_t max, int multiline, char *err)
{
	if (!json_is_string(v))
		return as_fail(err, AS_EINVAL, "%s: expected a string, got %s", what, json_kind(v));
	size_t n = json_string_length(v);
	if (n < min)
		return as_fail(err, AS_EINVAL, "%s: must not be empty", what);
	if (n > max)
		return as_fail(err, AS_ETOOBIG, "%s: %zu bytes is over the limit of %zu bytes", what, n, max);
	return check_text(what, json_string_value(v), n, multiline, err);
}

/* Nesting of a context value: a string is 0, an object with only scalars 1. */
static int ctx_depth_ok(const json_t *v, int depth)
{
	if (depth > MCP_CONTEXT_DEPTH)
		return 0;
	if (json_is_object(v)) {
		const char *k;
		const json_t *x;
		json_object_foreach((json_t *)v, k, x)
		{
			if ((json_is_object(x) || json_is_array(x)) && !ctx_depth_ok(x, depth + 1))
				return 0;
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			const json_t *x = json_array_get(v, i);
			if ((json_is_object(x) || json_is_array(x)) && !ctx_depth_ok(x, depth + 1))
				return 0;
		}
	}
	return 1;
}

static int is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int check_subject(const json_t *s, const char *label, struct mcp_subject *out, size_t *content_total, char *err)
{
	char what[64], qb[QBUF];
	if (!json_is_object(s))
		return as_fail(err, AS_EINVAL,
			       "%s: expected an object {name, digest: {sha256}} or {name, content}, got %s", label,
			       json_kind(s));
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)s, k, x)
	{
		if (strcmp(k, "name") && strcmp(k, "digest") && strcmp(k, "content"))
			return as_fail(err, AS_EINVAL, "%s: unknown member \"%s\" (expected name, digest, content)",
				       label, q(qb, k, strlen(k)));
	}
	const json_t *name = json_object_get(s, "name"), *dg = json_object_get(s, "digest"),
		     *ct = json_object_get(s, "content");
	snprintf(what, sizeof what, "%s.name", label);
	if (!name)
		return as_fail(err, AS_EINVAL, "%s: required", what);
	GUARD(arg_str(name, what, 1, MCP_NAME_MAX, 0, err));
	out->name_len = json_string_length(name);
	memcpy(out->name, json_string_value(name), out->name_len);
	out->name[out->name_len] = 0;
	if (!dg && !ct)
		return as_fail(err, AS_EINVAL, "%s: expected digest {sha256} or content (base64), got neither", label);
	if (dg) {
		snprintf(what, sizeof what, "%s.digest", label);
		if (!json_is_object(dg))
			return as_fail(err, AS_EINVAL, "%s: expected an object {\"sha256\": hex}, got %s", what,
				       json_kind(dg));
		json_object_foreach((json_t *)dg, k, x)
		{
			if (strcmp(k, "sha256"))
				return as_fail(err, AS_EINVAL, "%s: only sha256 is supported, got \"%s\"", what,
					       q(qb, k, strlen(k)));
		}
		const json_t *h = json_object_get(dg, "sha256");
		snprintf(what, sizeof what, "%s.digest.sha256", label);
		if (!json_is_string(h))
			return as_fail(err, AS_EINVAL, "%s: expected 64 lowercase hex digits, got %s", what,
				       h ? json_kind(h) : "nothing");
		if (!is_hex64(json_string_value(h), json_string_length(h)))
			return as_fail(err, AS_EINVAL,
				       "%s: expected 64 lowercase hex digits, got %zu characters \"%s\"", what,
				       json_string_length(h), q(qb, json_string_value(h), json_string_length(h)));
		memcpy(out->sha256, json_string_value(h), 65);
	}
	if (ct) {
		snprintf(what, sizeof what, "%s.content", label);
		if (!json_is_string(ct))
			return as_fail(err, AS_EINVAL, "%s: expected a base64 string, got %s", what, json_kind(ct));
		const char *b = json_string_value(ct);
		size_t n = json_string_length(ct), m = 0;
		/* Whitespace is dropped (base64 tools wrap lines): one text, one decoding. */
		char *clean = malloc(n + 1);
		if (!clean)
			return as_fail(err, AS_ENOMEM, "%s: out of memory", what);
		for (size_t i = 0; i < n; i++)
			if (b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n')
				clean[m++] = b[i];
		size_t decoded = m / 4 * 3 - (m >= 1 && clean[m - 1] == '=') - (m >= 2 && clean[m - 2] == '=');
		size_t room = MCP_CONTENT_MAX - *content_total;
		if (m % 4 == 0 && decoded > room) {
			free(clean);
			return as_fail(err, AS_ETOOBIG,
				       "%s: %zu bytes decoded is over the limit of %u bytes for all subjects", what,
				       decoded + *content_total, MCP_CONTENT_MAX);
		}
		out->content = malloc(m ? m / 4 * 3 + 3 : 1);
		int rc = out->content ? 0 : AS_ENOMEM;
		if (rc == 0 && m > 0)
			rc = b64_decode(clean, m, out->content, room, &out->content_len);
		free(clean);
		if (rc == AS_ENOMEM)
			return as_fail(err, rc, "%s: out of memory", what);
		if (rc != 0)
			return as_fail(err, AS_EINVAL, "%s: expected standard base64 (RFC 4648, with padding)", what);
		*content_total += out->content_len;
		uint8_t h[32];
		char hex[65];
		mbedtls_sha256_ret(out->content, out->content_len, h, 0);
		hex_encode(h, sizeof h, hex);
		if (dg && strcmp(hex, out->sha256) != 0)
			return as_fail(err, AS_EINVAL,
				       "%s.digest.sha256: does not match the content, whose SHA-256 is %s", label, hex);
		memcpy(out->sha256, hex, sizeof hex);
		out->computed = 1;
	}
	return 0;
}

static int check_subjects(const json_t *v, struct mcp_feedback *f, char *err)
{
	size_t total = 0;
	char label[32];
	if (json_is_array(v)) {
		size_t n = json_array_size(v);
		if (n == 0 || n > MCP_SUBJECTS_MAX)
			return as_fail(err, AS_EINVAL, "subject: expected 1 to %d subjects, got %zu", MCP_SUBJECTS_MAX,
				       n);
		for (size_t i = 0; i < n; i++) {
			snprintf(label, sizeof label, "subject[%zu]", i);
			f->nsubjects = i + 1; /* so that mcp_feedback_free finds any content already decoded */
			GUARD(check_subject(json_array_get(v, i), label, &f->subjects[i], &total, err));
			for (size_t j = 0; j < i; j++)
				if (f->subjects[j].name_len == f->subjects[i].name_len &&
				    !memcmp(f->subjects[j].name, f->subjects[i].name, f->subjects[i].name_len))
					return as_fail(err, AS_EINVAL, "%s.name: duplicate of subject[%zu].name", label,
						       j);
		}
		return 0;
	}
	f->nsubjects = 1;
	return check_subject(v, "subject", &f->subjects[0], &total, err);
}

static int check_options(const json_t *v, struct mcp_feedback *f, char *err)
{
	if (!json_is_array(v))
		return as_fail(err, AS_EINVAL, "options: expected an array of strings, got %s", json_kind(v));
	size_t n = json_array_size(v);
	if (n == 0 || n > MCP_OPTIONS_MAX)
		return as_fail(err, AS_EINVAL, "options: expected 1 to %d options, got %zu", MCP_OPTIONS_MAX, n);
	char what[32];
	for (size_t i = 0; i < n; i++) {
		snprintf(what, sizeof what, "options[%zu]", i);
		const json_t *o = json_array_get(v, i);
		GUARD(arg_str(o, what, 1, MCP_OPTION_MAX, 0, err));
		for (size_t j = 0; j < i; j++)
			if (json_equal(o, json_array_get(v, j)))
				return as_fail(err, AS_EINVAL, "%s: duplicate of options[%zu]", what, j);
	}
	f->options = calloc(n, sizeof *f->options);
	f->option_len = calloc(n, sizeof *f->option_len);
	if (!f->options || !f->option_len)
		return as_fail(err, AS_ENOMEM, "options: out of memory");
	f->noptions = n;
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(v, i);
		f->option_len[i] = json_string_length(o);
		if (!(f->options[i] = dup_n(json_string_value(o), f->option_len[i])))
			return as_fail(err, AS_ENOMEM, "options: out of memory");
	}
	return 0;
}

/* An optional argument; null counts as absent (models often send null for "not given"). */
static const json_t *arg(const json_t *args, const char *name)
{
	const json_t *v = args ? json_object_get(args, name) : NULL;
	return json_is_null(v) ? NULL : v;
}

static const char *const fb_args[] = {"type",	 "message",  "context", "options", "default", "timeout_override",
				      "subject", "audience", "wait"};

int mcp_check_request_feedback(const json_t *args, struct mcp_feedback *out, char *err)
{
	char qb[QBUF];
	memset(out, 0, sizeof *out);
	out->wait = 1;
	int rc = 0;
	if (args && !json_is_object(args))
		return as_fail(err, AS_EINVAL, "arguments: expected an object, got %s", json_kind(args));
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)args, k, x)
	{
		size_t i = 0;
		while (i < sizeof fb_args / sizeof *fb_args && strcmp(k, fb_args[i]))
			i++;
		if (i == sizeof fb_args / sizeof *fb_args)
			return as_fail(err, AS_EINVAL,
				       "unknown argument \"%s\" (expected type, message, context, options, default, "
				       "timeout_override, subject, audience, wait)",
				       q(qb, k, strlen(k)));
	}
	const json_t *type = arg(args, "type"), *msg = arg(args, "message"), *ctx = arg(args, "context"),
		     *opts = arg(args, "options"), *dflt = arg(args, "default"), *tmo = arg(args, "timeout_override"),
		     *subj = arg(args, "subject"), *aud = arg(args, "audience"), *wait = arg(args, "wait");
	if (!type)
		return as_fail(err, AS_EINVAL, "type: required, one of approval, input, selection, confirmation");
	if (!json_is_string(type))
		return as_fail(err, AS_EINVAL, "type: expected one of approval, input, selection, confirmation, got %s",
			       json_kind(type));
	size_t t = 0;
	while (t < 4 &&
	       !(strlen(fb_names[t]) == json_string_length(type) && !strcmp(fb_names[t], json_string_value(type))))
		t++;
	if (t == 4)
		return as_fail(err, AS_EINVAL,
			       "type: expected one of approval, input, selection, confirmation, got \"%s\"",
			       q(qb, json_string_value(type), json_string_length(type)));
	out->type = (enum mcp_fb_type)t;

	if (!msg)
		return as_fail(err, AS_EINVAL, "message: required: what the reviewer is asked");
	GUARD(arg_str(msg, "message", 1, MCP_MESSAGE_MAX, 1, err));

	if (out->type == MCP_FB_SELECTION && !opts)
		return as_fail(err, AS_EINVAL, "options: required for type selection (1 to %d strings)",
			       MCP_OPTIONS_MAX);
	if (out->type != MCP_FB_SELECTION && opts)
		return as_fail(err, AS_EINVAL, "options: only valid with type selection, not %s", fb_names[t]);
	if (dflt) {
		if (out->type == MCP_FB_APPROVAL || out->type == MCP_FB_CONFIRMATION)
			return as_fail(
			    err, AS_EINVAL,
			    "default: only valid with type input or selection (an %s needs an explicit decision)",
			    fb_names[t]);
		GUARD(arg_str(dflt, "default", 0, MCP_DEFAULT_MAX, 1, err));
	}
	if (ctx) {
		if (!json_is_string(ctx) && !json_is_object(ctx))
			return as_fail(err, AS_EINVAL, "context: expected an object or a string, got %s",
				       json_kind(ctx));
		if (!ctx_depth_ok(ctx, json_is_object(ctx) ? 1 : 0))
			return as_fail(err, AS_EINVAL, "context: nested deeper than %d levels", MCP_CONTEXT_DEPTH);
	}
	if (tmo) {
		if (!json_is_integer(tmo))
			return as_fail(err, AS_EINVAL,
				       "timeout_override: expected an integer number of seconds, got %s",
				       json_kind(tmo));
		json_int_t s = json_integer_value(tmo);
		if (s < 1 || s > MCP_TIMEOUT_MAX)
			return as_fail(err, AS_EINVAL, "timeout_override: expected 1 to %d seconds, got %lld",
				       MCP_TIMEOUT_MAX, (long long)s);
		out->timeout = (uint32_t)s;
	}
	if (aud) {
		GUARD(arg_str(aud, "audience", 1, MCP_AUDIENCE_MAX, 0, err));
		const char *a = json_string_value(aud);
		for (size_t i = 0; i < json_string_length(aud); i++) {
			char c = a[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			      c == '_' || c == ':' || c == '/' || c == '-'))
				return as_fail(err, AS_EINVAL, "audience: expected only [A-Za-z0-9._:/-], got \"%s\"",
					       q(qb, a, json_string_length(aud)));
		}
		memcpy(out->audience, a, json_string_length(aud) + 1);
	}
	if (wait) {
		if (!json_is_boolean(wait))
			return as_fail(err, AS_EINVAL, "wait: expected true or false, got %s", json_kind(wait));
		out->wait = json_is_true(wait);
	}
	/* Copies last, after every cheap check; failures from here on free what was made. */
	if (opts)
		rc = check_options(opts, out, err);
	if (rc == 0 && dflt && out->type == MCP_FB_SELECTION) {
		size_t i = 0;
		while (i < out->noptions && !json_equal(dflt, json_array_get(opts, i)))
			i++;
		if (i == out->noptions)
			rc = as_fail(err, AS_EINVAL, "default: must be one of options for type selection, got \"%s\"",
				     q(qb, json_string_value(dflt), json_string_length(dflt)));
	}
	if (rc == 0 && subj)
		rc = check_subjects(subj, out, err);
	if (rc == 0) {
		out->message_len = json_string_length(msg);
		out->message = dup_n(json_string_value(msg), out->message_len);
		out->dflt_len = dflt ? json_string_length(dflt) : 0;
		out->dflt = dflt ? dup_n(json_string_value(dflt), out->dflt_len) : NULL;
		out->context = ctx ? json_deep_copy(ctx) : NULL;
		if (!out->message || (dflt && !out->dflt) || (ctx && !out->context))
			rc = as_fail(err, AS_ENOMEM, "request_feedback: out of memory");
	}
	if (rc != 0)
		mcp_feedback_free(out);
	return rc;
}

void mcp_feedback_free(struct mcp_feedback *f)
{
	if (!f)
		return;
	free(f->message);
	free(f->dflt);
	json_decref(f->context);
	for (size_t i = 0; f->options && i < f->noptions; i++)
		free(f->options[i]);
	free(f->options);
	free(f->option_len);
	for (size_t i = 0; i < f->nsubjects && i < MCP_SUBJECTS_MAX; i++)
		free(f->subjects[i].content);
	memset(f, 0, sizeof *f);
}

/* Redact one owned string in place; refuse a result over max. */
static int redact_owned(char **s, size_t *n, size_t max, const char *what, const struct redact_rules *r,
			struct redact_stats *st, char *err)
{
	struct buf b;
	buf_init(&b, max + 1);
	int rc = redact_text(*s, *n, r, &b, st);
	if (rc == 0 && b.len > max)
		rc = AS_ETOOBIG;
	if (rc == 0 && (b.len != *n || memcmp(b.p, *s, *n) != 0)) {
		char *c = dup_n(b.len ? (const char *)b.p : "", b.len);
		if (!c) {
			rc = AS_ENOMEM;
		} else {
			free(*s);
			*s = c;
			*n = b.len;
		}
	}
	buf_free(&b);
	if (rc == AS_ETOOBIG)
		return as_fail(err, rc, "%s: over %zu bytes once secrets are marked", what, max);
	if (rc != 0)
		return as_fail(err, rc, "%s: redaction failed: %s", what, as_strerror(rc));
	return 0;
}

const struct redact_rules mcp_view_rules = {NULL, 0, NULL, 0, 1};

int mcp_feedback_redact(struct mcp_feedback *f, const struct redact_rules *r, size_t context_max, char *err)
{
	GUARD(redact_rules_check(r, err));
	if (context_max == 0)
		context_max = REDACT_CONTEXT_MAX;
	if (context_max < REDACT_BOUND_MIN || context_max > MCP_ACTION_MAX / 2)
		return as_fail(err, AS_EINVAL, "context bound: expected %d to %u bytes, got %zu", REDACT_BOUND_MIN,
			       MCP_ACTION_MAX / 2, context_max);
	if (!f->message)
		return as_fail(err, AS_EINVAL, "request_feedback: nothing to redact");
	GUARD(redact_owned(&f->message, &f->message_len, MCP_MESSAGE_MAX, "message", r, &f->stats, err));
	char what[32];
	for (size_t i = 0; i < f->noptions; i++) {
		snprintf(what, sizeof what, "options[%zu]", i);
		GUARD(redact_owned(&f->options[i], &f->option_len[i], MCP_OPTION_MAX, what, r, &f->stats, err));
	}
	if (f->dflt)
		GUARD(redact_owned(&f->dflt, &f->dflt_len, MCP_DEFAULT_MAX, "default", r, &f->stats, err));
	if (f->context) {
		json_t *before = f->context;
		int rc = redact_json(f->context, r, &f->stats);
		if (rc == 0)
			rc = redact_bound(&f->context, context_max);
		if (rc == 0 && f->context != before) {
			f->truncated = 1;
			rc = redact_json(f->context, r, &f->stats); /* the head, cut anywhere */
		}
		if (rc != 0)
			return as_fail(err, rc, "context: redaction failed: %s", as_strerror(rc));
	}
	f->redacted = 1;
	return 0;
}

/* ---- the canonical action ---- */

static int put_text(struct cv_arena *a, struct cv *kv, const char *key, const char *val, size_t n)
{
	GUARD(cv_set_text(a, &kv[0], key, strlen(key)));
	return cv_set_text(a, &kv[1], val, n);
}

static int build_action(struct cv_arena *a, const struct mcp_feedback *f, struct cv **out, char *err)
{
	size_t n = 2 + (f->context != NULL) + (f->noptions > 0) + (f->dflt != NULL) + (f->nsubjects > 0) +
		   (f->audience[0] != 0);
	struct cv *m = cv_map(a, n);
	if (!m)
		return as_fail(err, AS_ENOMEM, "action: out of memory");
	struct cv *kv = m->items;
	const char *tn = mcp_fb_type_name(f->type);
	GUARD(put_text(a, kv, "type", tn, strlen(tn)));
	kv += 2;
	GUARD(put_text(a, kv, "message", f->message, f->message_len));
	kv += 2;
	if (f->context) {
		GUARD(cv_set_text(a, &kv[0], "context", 7));
		GUARD(cv_from_json_value(a, f->context, &kv[1], 1, 1, err)); /* reals become text */
		kv += 2;
	}
	if (f->noptions) {
		GUARD(cv_set_text(a, &kv[0], "options", 7));
		struct cv *arr = cv_array(a, f->noptions);
		if (!arr)
			return as_fail(err, AS_ENOMEM, "action: out of memory");
		for (size_t i = 0; i < f->noptions; i++)
			GUARD(cv_set_text(a, &arr->items[i], f->options[i], f->option_len[i]));
		kv[1] = *arr;
		kv += 2;
	}
	if (f->dflt) {
		GUARD(put_text(a, kv, "default", f->dflt, f->dflt_len));
		kv += 2;
	}
	if (f->nsubjects) {
		GUARD(cv_set_text(a, &kv[0], "subject", 7));
		struct cv *arr = cv_array(a, f->nsubjects);
		if (!arr)
			return as_fail(err, AS_ENOMEM, "action: out of memory");
		for (size_t i = 0; i < f->nsubjects; i++) {
			const struct mcp_subject *s = &f->subjects[i];
			struct cv *sm = cv_map(a, s->computed ? 4 : 3), *dg = cv_map(a, 1);
			if (!sm || !dg)
				return as_fail(err, AS_ENOMEM, "action: out of memory");
			GUARD(put_text(a, dg->items, "sha256", s->sha256, 64));
			GUARD(put_text(a, sm->items, "name", s->name, s->name_len));
			GUARD(cv_set_text(a, &sm->items[2], "digest", 6));
			sm->items[3] = *dg;
			GUARD(cv_set_text(a, &sm->items[4], "computed", 8));
			sm->items[5].t = s->computed ? CV_TRUE : CV_FALSE;
			if (s->computed) {
				GUARD(cv_set_text(a, &sm->items[6], "size", 4));
				cv_set_uint(&sm->items[7], s->content_len);
			}
			arr->items[i] = *sm;
		}
		kv[1] = *arr;
		kv += 2;
	}
	if (f->audience[0]) {
		GUARD(put_text(a, kv, "audience", f->audience, strlen(f->audience)));
		kv += 2;
	}
	*out = m;
	return 0;
}

int mcp_feedback_action(const struct mcp_feedback *f, struct buf *out, char *err)
{
	if (!f->redacted || !f->message)
		return as_fail(err, AS_EINVAL, "action: request not redacted (call mcp_feedback_redact first)");
	struct cv_arena a;
	struct cv *m = NULL;
	/* Every context item came from at most MCP_ACTION_MAX / 2 bytes of JSON. */
	cv_arena_init(&a, MCP_ACTION_MAX + 4096);
	size_t start = out->len;
	if (err)
		err[0] = 0;
	int rc = build_action(&a, f, &m, err);
	if (rc == AS_ENOMEM && err && !err[0])
		as_fail(err, rc, "action: out of memory");
	if (rc == 0) /* the signer's own check (action.c): what it would refuse is never sent */
		rc = action_check(m, err);
	if (rc == 0)
		rc = cbor_encode(m, out, err);
	if (rc != 0)
		out->len = start;
	cv_arena_free(&a);
	return rc;
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
				       q(qb, k, strlen(k)));
	}
	const json_t *sid = args ? json_object_get(args, "session_id") : NULL;
	const json_t *w = args ? json_object_get(args, "wait_seconds") : NULL;
	if (!sid || json_is_null(sid))
		return as_fail(err, AS_EINVAL, "session_id: required: the session_id request_feedback returned");
	GUARD(arg_str(sid, "session_id", 1, MCP_SESSION_ID_MAX, 0, err));
	const char *s = json_string_value(sid);
	for (size_t i = 0; i < json_string_length(sid); i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return as_fail(err, AS_EINVAL, "session_id: expected only [A-Za-z0-9._-], got \"%s\"",
				       q(qb, s, json_string_length(sid)));
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
			       q(qb, k, strlen(k)));
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
	json_t *block = jobj("type", json_string("text"), "text", t, JEND);
	return jobj("content", jarr1(block), "structuredContent", structured, "isError", json_false(), JEND);
}

json_t *mcp_tool_error(const char *msg)
{
	json_t *t = safe_string(msg ? msg : "error", msg ? strlen(msg) : 5, MCP_MESSAGE_MAX);
	json_t *block = jobj("type", json_string("text"), "text", t, JEND);
	return jobj("content", jarr1(block), "isError", json_true(), JEND);
}

/* ---- outgoing lines ---- */

struct sink {
	struct buf *b;
	int rc;
};

static int sink_cb(const char *p, size_t size, void *data)
{
	struct sink *s = data;
	s->rc = buf_put(s->b, p, size);
	return s->rc == 0 ? 0 : -1;
}

/* Serialise msg (stolen) as one line. */
static int emit(struct buf *out, json_t *msg, char *err)
{
	if (!msg)
		return as_fail(err, AS_ENOMEM, "out of memory building a message");
	size_t start = out->len;
	struct sink s = {out, 0};
	int rc = json_dump_callback(msg, sink_cb, &s, JSON_COMPACT) == 0 ? 0 : (s.rc ? s.rc : AS_ENOMEM);
	if (rc == 0)
		rc = buf_putc(out, '\n');
	json_decref(msg);
	if (rc != 0) {
		out->len = start;
		if (rc == AS_ETOOBIG)
			return as_fail(err, rc, "message over the limit of %zu bytes", out->max);
		return as_fail(err, rc, "cannot build message: %s", as_strerror(rc));
	}
	return 0;
}

int mcp_line_result(struct buf *out, const struct mcp_id *id, json_t *result, char *err)
{
	if (!id || (id->t != MCP_ID_INT && id->t != MCP_ID_STR) || !result) {
		json_decref(result);
		return as_fail(err, AS_EINVAL, "a result answers a request: it needs the request's id");
	}
	return emit(out, jobj("jsonrpc", json_string("2.0"), "id", mcp_id_json(id), "result", result, JEND), err);
}

static const char *code_phrase(int code)
{
	switch (code) {
	case MCP_PARSE_ERROR:
		return "Parse error";
	case MCP_INVALID_REQUEST:
		return "Invalid Request";
	case MCP_METHOD_NOT_FOUND:
		return "Method not found";
	case MCP_INVALID_PARAMS:
		return "Invalid params";
	case MCP_INTERNAL_ERROR:
		return "Internal error";
	}
	return "Server error";
}

int mcp_line_error(struct buf *out, const struct mcp_id *id, int code, const char *message, json_t *data, char *err)
{
	if (!message)
		message = code_phrase(code);
	json_t *e = jobj("code", json_integer(code), "message", safe_string(message, strlen(message), 1024), JEND);
	if (e && data && json_object_set_new(e, "data", data) != 0) {
		json_decref(e);
		e = NULL;
	} else if (!e) {
		json_decref(data);
	}
	if (!e)
		return as_fail(err, AS_ENOMEM, "out of memory building an error");
	return emit(out, jobj("jsonrpc", json_string("2.0"), "id", mcp_id_json(id), "error", e, JEND), err);
}

/* ---- the id of a line too long to parse ---- */

/* Consumes the JSON string at the cursor. */
static int peek_str(struct rd *r)
{
	GUARD(rd_expect(r, "\""));
	return json_str_rest(r);
}

/* Consumes the value at the cursor, up to the ',' or the closing brace that ends it
 * (a string or a nested value ends on its own); AS_EINVAL when it does not end. */
static int peek_value(struct rd *r)
{
	int depth = 0;
	uint8_t c;
	while (rd_peek(r, &c) == 0) {
		if (c == '"') {
			GUARD(peek_str(r));
			if (depth == 0)
				return 0;
			continue;
		}
		if (depth == 0 && (c == '}' || c == ']' || c == ','))
			return 0; /* a scalar ended by its object, or by the next member */
		GUARD(rd_u8(r, &c));
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return 0;
	}
	return AS_EINVAL;
}

/* The bytes from mark's cursor to now's, as a reader (mark: a copy of now, taken earlier). */
static struct rd peek_span(struct rd mark, const struct rd *now)
{
	mark.len = now->off;
	return mark;
}

/* The unread bytes of val as a JSON id. */
static int peek_decode(struct rd val, struct mcp_id *id)
{
	size_t n = rd_left(&val);
	const uint8_t *p;
	json_t *v = n > 0 && n <= 2 * MCP_ID_MAX + 8 && rd_take(&val, n, &p) == 0
			? json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL)
			: NULL;
	int ok = v && id_read(v, id);
	json_decref(v);
	return ok;
}

static int peek_head(const char *s, size_t n, struct mcp_id *id)
{
	struct rd r, mark, key;
	rd_init(&r, s, n);
	rd_skip_ws(&r, RD_JSON_WS);
	if (rd_expect(&r, "{") != 0)
		return 0;
	for (;;) {
		rd_skip_ws(&r, RD_JSON_WS);
		mark = r;
		if (peek_str(&r) != 0)
			return 0;
		key = peek_span(mark, &r);
		rd_skip_ws(&r, RD_JSON_WS);
		if (rd_expect(&r, ":") != 0)
			return 0;
		rd_skip_ws(&r, RD_JSON_WS);
		mark = r;
		if (peek_value(&r) != 0)
			return 0;
		if (rd_cmp(&key, "\"id\"") == 0)
			return peek_decode(peek_span(mark, &r), id);
		rd_skip_ws(&r, RD_JSON_WS);
		if (rd_expect(&r, ",") != 0)
			return 0;
	}
}

/* Whether the quote at s[q] is escaped (an odd run of backslashes before it). */
static int peek_escaped(const char *s, size_t q)
{
	size_t k = 0;
	while (q > k && s[q - k - 1] == '\\')
		k++;
	return k % 2;
}

/* From the end: '}', the value, ':', "id"; read backwards with the reader's end. */
static int peek_tail(const char *s, size_t n, struct mcp_id *id)
{
	struct rd r, val;
	rd_init(&r, s, n);
	rd_trim_end(&r, RD_JSON_WS);
	if (rd_expect_end(&r, "}") != 0)
		return 0;
	rd_trim_end(&r, RD_JSON_WS);
	val = r; /* the value ends here; where it starts is found next */
	size_t b = r.len;
	if (b > 0 && s[b - 1] == '"' && !peek_escaped(s, b - 1)) {
		/* A string: back to its opening quote, the first one not escaped. */
		for (b -= 1; b > 0 && !(s[b - 1] == '"' && !peek_escaped(s, b - 1)); b--)
			;
		if (b == 0)
			return 0;
		r.len = b - 1;
	} else {
		rd_trim_end(&r, "-0123456789");
	}
	val.off = r.len;
	rd_trim_end(&r, RD_JSON_WS);
	if (rd_expect_end(&r, ":") != 0)
		return 0;
	rd_trim_end(&r, RD_JSON_WS);
	if (rd_expect_end(&r, "\"id\"") != 0 || peek_escaped(s, r.len))
		return 0;
	return peek_decode(val, id);
}

int mcp_peek_id(const char *head, size_t hn, const char *tail, size_t tn, struct mcp_id *id)
{
	if (head && hn > MCP_PEEK_HEAD)
		hn = MCP_PEEK_HEAD;
	if (tail && tn > MCP_PEEK_TAIL) {
		tail += tn - MCP_PEEK_TAIL;
		tn = MCP_PEEK_TAIL;
	}
	return (head && peek_head(head, hn, id)) || (tail && peek_tail(tail, tn, id));
}

int mcp_line_invalid(struct buf *out, const struct mcp_msg *m, const char *detail, char *err)
{
	char msg[AS_ERRLEN + 32];
	snprintf(msg, sizeof msg, "%s: %s", code_phrase(m->code), detail && detail[0] ? detail : "invalid message");
	return mcp_line_error(out, &m->id, m->code ? m->code : MCP_INVALID_REQUEST, msg, NULL, err);
}

static json_t *number(double d)
{
	if (d == floor(d) && fabs(d) < 9007199254740992.0)
		return json_integer((json_int_t)d);
	return json_real(d);
}

int mcp_line_progress(struct buf *out, const struct mcp_id *token, double progress, double total, const char *message,
		      char *err)
{
	if (!token || (token->t != MCP_ID_INT && token->t != MCP_ID_STR))
		return as_fail(err, AS_EINVAL, "progress: needs the request's progress token");
	if (!isfinite(progress) || progress < 0 || !isfinite(total))
		return as_fail(err, AS_EINVAL, "progress: values must be finite and not negative");
	json_t *p = jobj("progressToken", mcp_id_json(token), "progress", number(progress), JEND);
	if (p && total >= 0 && json_object_set_new(p, "total", number(total)) != 0) {
		json_decref(p);
		p = NULL;
	}
	if (p && message && json_object_set_new(p, "message", safe_string(message, strlen(message), 1024)) != 0) {
		json_decref(p);
		p = NULL;
	}
	if (!p)
		return as_fail(err, AS_ENOMEM, "out of memory building a progress notification");
	return emit(
	    out,
	    jobj("jsonrpc", json_string("2.0"), "method", json_string("notifications/progress"), "params", p, JEND),
	    err);
}

int mcp_line_notification(struct buf *out, const char *method, json_t *params, char *err)
{
	if (!method || !json_is_object(params)) {
		json_decref(params);
		return as_fail(err, AS_EINVAL, "a notification needs a method and object params");
	}
	return emit(out, jobj("jsonrpc", json_string("2.0"), "method", json_string(method), "params", params, JEND),
		    err);
}

int mcp_line_log(struct buf *out, enum mcp_log_level level, const char *logger, json_t *data, char *err)
{
	if (!data || (unsigned)level > MCP_LOG_EMERGENCY) {
		json_decref(data);
		return as_fail(err, AS_EINVAL, "log: needs a level and data");
	}
	json_t *p = jobj("level", json_string(log_names[level]), JEND);
	if (p && logger && json_object_set_new(p, "logger", safe_string(logger, strlen(logger), MCP_NAME_MAX)) != 0) {
		json_decref(p);
		p = NULL;
	}
	if (!p || json_object_set_new(p, "data", data) != 0) {
		if (!p)
			json_decref(data);
		json_decref(p);
		return as_fail(err, AS_ENOMEM, "out of memory building a log notification");
	}
	return emit(
	    out, jobj("jsonrpc", json_string("2.0"), "method", json_string("notifications/message"), "params", p, JEND),
	    err);
}
